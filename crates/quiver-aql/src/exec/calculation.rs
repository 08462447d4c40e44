//! `CalculationNode` (an expression into a slot) and `FilterNode` (drops rows whose slot is
//! falsy).

use quiver_errors::Result;

use super::{ExecCtx, Op, Operator, Row};
use crate::expr::Slot;
use crate::value::{self};

pub(super) struct CalcOp {
    pub(super) input: Op,
    pub(super) out: Slot,
    pub(super) expr: crate::expr::CExpr,
}

impl Operator for CalcOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        let Some(mut row) = self.input.next(ctx)? else {
            return Ok(None);
        };
        row[self.out] = ctx.eval(&self.expr, &row)?;
        Ok(Some(row))
    }
}

pub(super) struct FilterOp {
    pub(super) input: Op,
    pub(super) slot: Slot,
}

impl Operator for FilterOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            if value::to_bool(&row[self.slot]) {
                return Ok(Some(row));
            }
            ctx.stats.filtered += 1;
            ctx.check()?;
        }
    }
}
