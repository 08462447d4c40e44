//! `SubqueryNode`: runs the subquery's own pipeline per input row, seeded with that row.

use std::sync::Arc;

use quiver_errors::Result;
use serde_json::Value;

use super::{build, ExecCtx, Op, Operator, Row};
use crate::expr::Slot;
use crate::plan::{NodeKind, Plan};
use crate::value::estimate_size;

/// Runs a whole (sub)plan for one seed row and returns its result values.
pub fn run_subplan(plan: &Plan, seed: Row, profile: bool, ctx: &mut ExecCtx) -> Result<Vec<Value>> {
    let result_slot = match plan.nodes.last().map(|n| &n.kind) {
        Some(NodeKind::Return { input, .. }) => Some(*input),
        _ => None,
    };
    let mut op = crate::deep(|| build(plan, seed, profile));
    let mut out = Vec::new();
    let mut charged = 0;
    while let Some(row) = op.next(ctx)? {
        if let Some(s) = result_slot {
            let v = row.into_iter().nth(s).unwrap_or(Value::Null);
            let size = estimate_size(&v);
            charged += size;
            ctx.charge(size)?;
            out.push(v);
        }
    }
    ctx.release(charged);
    Ok(out)
}

pub(super) struct SubqueryOp {
    pub(super) input: Op,
    pub(super) out: Slot,
    pub(super) plan: Arc<Plan>,
    pub(super) profile: bool,
}

impl Operator for SubqueryOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        let Some(mut row) = self.input.next(ctx)? else {
            return Ok(None);
        };
        let values = run_subplan(&self.plan, row.clone(), self.profile, ctx)?;
        row[self.out] = Value::Array(values);
        Ok(Some(row))
    }
}
