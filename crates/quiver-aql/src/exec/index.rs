//! The operator of a secondary-index `IndexNode`: per input row, evaluates the lookup values,
//! turns them into index ranges (the cartesian product of the `IN` lists, sorted by AQL's
//! order and deduplicated, so a multi-value lookup still yields index order) and streams the
//! documents the data source finds in them.

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use super::{ExecCtx, Op, Operator, Row};
use crate::plan::{EqCond, IndexScan};
use crate::source::{DocIter, IndexRange};
use crate::value::compare;

/// The most ranges one lookup may expand to (product of the `IN` list lengths).
const MAX_RANGES: usize = 100_000;

pub(super) struct IndexScanOp {
    pub input: Op,
    pub scan: IndexScan,
    pub row: Option<Row>,
    pub iter: Option<DocIter>,
}

impl IndexScanOp {
    pub fn new(input: Op, scan: IndexScan) -> IndexScanOp {
        IndexScanOp {
            input,
            scan,
            row: None,
            iter: None,
        }
    }

    fn ranges(&self, ctx: &mut ExecCtx, row: &Row) -> Result<Vec<IndexRange>> {
        let mut prefixes: Vec<Vec<Value>> = vec![Vec::new()];
        for cond in &self.scan.eq {
            let values = match cond {
                EqCond::Eq(e) => vec![ctx.eval(e, row)?],
                EqCond::In(e) => match ctx.eval(e, row)? {
                    Value::Array(items) => {
                        let mut items = items;
                        items.sort_by(compare);
                        items.dedup_by(|a, b| compare(a, b).is_eq());
                        items
                    }
                    // `x IN non-array` is false for every document.
                    _ => return Ok(Vec::new()),
                },
            };
            if values.is_empty() {
                return Ok(Vec::new());
            }
            if prefixes.len().saturating_mul(values.len()) > MAX_RANGES {
                return Err(Error::with_message(
                    ErrorCode::ResourceLimit,
                    "index lookup expands to too many value combinations",
                ));
            }
            let mut next = Vec::with_capacity(prefixes.len() * values.len());
            for p in &prefixes {
                for v in &values {
                    let mut q = p.clone();
                    q.push(v.clone());
                    next.push(q);
                }
            }
            prefixes = next;
        }
        let lower = match &self.scan.lower {
            Some((e, incl)) => Some((ctx.eval(e, row)?, *incl)),
            None => None,
        };
        let upper = match &self.scan.upper {
            Some((e, incl)) => Some((ctx.eval(e, row)?, *incl)),
            None => None,
        };
        if self.scan.reverse {
            prefixes.reverse();
        }
        Ok(prefixes
            .into_iter()
            .map(|eq| IndexRange {
                eq,
                lower: lower.clone(),
                upper: upper.clone(),
            })
            .collect())
    }
}

impl Operator for IndexScanOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let (Some(row), Some(iter)) = (&self.row, &mut self.iter) {
                if let Some(doc) = iter.next() {
                    let doc = doc?;
                    ctx.check()?;
                    ctx.stats.scanned_index += 1;
                    let mut r = row.clone();
                    r[self.scan.out] = doc;
                    return Ok(Some(r));
                }
            }
            match self.input.next(ctx)? {
                Some(row) => {
                    let ranges = self.ranges(ctx, &row)?;
                    let covered = match (&self.scan.projections, ranges.is_empty()) {
                        (Some(attrs), false) => ctx.txn.index_lookup_covering(
                            &self.scan.collection,
                            self.scan.index.id,
                            ranges.clone(),
                            self.scan.reverse,
                            attrs,
                        )?,
                        _ => None,
                    };
                    self.iter = Some(if ranges.is_empty() {
                        Box::new(std::iter::empty())
                    } else if let Some(iter) = covered {
                        iter
                    } else {
                        ctx.txn.index_lookup(
                            &self.scan.collection,
                            self.scan.index.id,
                            ranges,
                            self.scan.reverse,
                        )?
                    });
                    self.row = Some(row);
                }
                None => return Ok(None),
            }
        }
    }
}
