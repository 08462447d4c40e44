//! `SortNode`: a stable sort by slots in AQL's type order, bounded to a top-k with a limit
//! (rule `sort-limit`).

use std::cmp::Ordering;

use quiver_errors::Result;

use super::context::row_size;
use super::{ExecCtx, Op, Operator, Row};
use crate::expr::Slot;
use crate::value::{self};

pub(super) fn compare_rows(a: &Row, b: &Row, keys: &[(Slot, bool)]) -> Ordering {
    for (slot, asc) in keys {
        let o = value::compare(&a[*slot], &b[*slot]);
        if o != Ordering::Equal {
            return if *asc { o } else { o.reverse() };
        }
    }
    Ordering::Equal
}

pub(super) struct SortOp {
    pub(super) input: Op,
    pub(super) keys: Vec<(Slot, bool)>,
    /// Top-k (the sort-limit rule): keep only this many rows.
    pub(super) limit: Option<u64>,
    pub(super) sorted: Option<std::vec::IntoIter<Row>>,
    pub(super) charged: u64,
}

impl Operator for SortOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        if self.sorted.is_none() {
            let mut rows: Vec<Row> = Vec::new();
            let keys = self.keys.clone();
            let cap = self.limit.map(|l| l.min(1 << 24) as usize);
            while let Some(row) = self.input.next(ctx)? {
                ctx.check()?;
                let size = row_size(&row);
                self.charged += size;
                ctx.charge(size)?;
                rows.push(row);
                if let Some(k) = cap {
                    // Bounded top-k: sort and cut whenever the buffer doubles; stable sort
                    // keeps the earliest of equal rows, like a full sort would.
                    if rows.len() >= 2 * k.max(1) {
                        rows.sort_by(|a, b| compare_rows(a, b, &keys));
                        let dropped: u64 = rows[k..].iter().map(row_size).sum();
                        rows.truncate(k);
                        self.charged -= dropped;
                        ctx.release(dropped);
                    }
                }
            }
            rows.sort_by(|a, b| compare_rows(a, b, &keys));
            if let Some(k) = cap {
                rows.truncate(k);
            }
            self.sorted = Some(rows.into_iter());
        }
        let next = self.sorted.as_mut().and_then(Iterator::next);
        if next.is_none() {
            ctx.release(self.charged);
            self.charged = 0;
        }
        Ok(next)
    }
}
