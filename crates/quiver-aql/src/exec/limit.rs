//! `LimitNode`: offset and count, counting on for `fullCount`.

use quiver_errors::Result;

use super::{ExecCtx, Op, Operator, Row};

pub(super) struct LimitOp {
    pub(super) input: Op,
    pub(super) offset: u64,
    pub(super) count: u64,
    pub(super) full_count: bool,
    pub(super) seen: u64,
    pub(super) returned: u64,
}

impl Operator for LimitOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        while self.seen < self.offset {
            if self.input.next(ctx)?.is_none() {
                self.report(ctx);
                return Ok(None);
            }
            self.seen += 1;
        }
        if self.returned < self.count {
            if let Some(row) = self.input.next(ctx)? {
                self.seen += 1;
                self.returned += 1;
                return Ok(Some(row));
            }
            self.report(ctx);
            return Ok(None);
        }
        if self.full_count {
            while self.input.next(ctx)?.is_some() {
                self.seen += 1;
                ctx.check()?;
            }
            self.report(ctx);
            self.full_count = false;
        }
        Ok(None)
    }
}

impl LimitOp {
    fn report(&mut self, ctx: &mut ExecCtx) {
        if self.full_count {
            ctx.stats.full_count = Some(self.seen);
            self.full_count = false;
        }
    }
}
