//! `ReturnNode`: the result value of each row, `DISTINCT` with AQL equality.

use std::collections::HashSet;

use quiver_errors::Result;

use super::{ExecCtx, Op, Operator, Row};
use crate::expr::Slot;
use crate::value::{estimate_size, ValueKey};

pub(super) struct ReturnOp {
    pub(super) input: Op,
    pub(super) slot: Slot,
    pub(super) seen: Option<HashSet<ValueKey>>,
}

impl Operator for ReturnOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            match &mut self.seen {
                None => return Ok(Some(row)),
                Some(seen) => {
                    if seen.insert(ValueKey(row[self.slot].clone())) {
                        ctx.charge(estimate_size(&row[self.slot]))?;
                        return Ok(Some(row));
                    }
                }
            }
        }
    }
}
