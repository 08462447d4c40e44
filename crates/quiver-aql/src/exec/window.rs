//! `WindowNode`: row-based and range-based frames (durations included) with aggregates.

use quiver_errors::Result;
use serde_json::Value;

use super::collect::aggregate_value;
use super::context::row_size;
use super::{ExecCtx, Op, Operator, Row};
use crate::expr::Slot;
use crate::plan::{Aggregate, Bound};
use crate::value::{self};

/// A timestamp in milliseconds moved by a duration with calendar months (the end of a
/// duration-based WINDOW frame); NaN when the result leaves the date range, so that the
/// frame holds just the rows with the current row's own value.
pub(super) fn shift_timestamp(ms: f64, months: i64, millis: i64) -> f64 {
    if !ms.is_finite() {
        return f64::NAN;
    }
    let whole = ms.trunc();
    crate::functions::add_calendar(whole as i64, months, millis)
        .map_or(f64::NAN, |shifted| shifted as f64 + (ms - whole))
}

pub(super) struct WindowOp {
    pub(super) input: Op,
    pub(super) range_input: Option<Slot>,
    pub(super) preceding: Bound,
    pub(super) following: Bound,
    pub(super) aggregates: Vec<Aggregate>,
    pub(super) output: Option<std::vec::IntoIter<Row>>,
}

impl WindowOp {
    fn run(&mut self, ctx: &mut ExecCtx) -> Result<Vec<Row>> {
        let mut rows = Vec::new();
        let mut charged = 0;
        while let Some(row) = self.input.next(ctx)? {
            ctx.check()?;
            let size = row_size(&row);
            charged += size;
            ctx.charge(size)?;
            rows.push(row);
        }
        let n = rows.len();
        let mut results: Vec<Vec<Value>> = Vec::with_capacity(n);
        for i in 0..n {
            ctx.check()?;
            let (lo, hi) = match self.range_input {
                None => {
                    let lo = match self.preceding {
                        Bound::Unbounded => 0,
                        Bound::Rows(p) => i.saturating_sub(p as usize),
                        // The planner accepts durations for range frames only.
                        Bound::Duration { .. } => i,
                    };
                    let hi = match self.following {
                        Bound::Unbounded => n.saturating_sub(1),
                        Bound::Rows(f) => (i + f as usize).min(n.saturating_sub(1)),
                        Bound::Duration { .. } => i,
                    };
                    (lo, hi)
                }
                Some(slot) => {
                    let v = value::to_number(&rows[i][slot]);
                    let lower = match self.preceding {
                        Bound::Unbounded => f64::NEG_INFINITY,
                        Bound::Rows(p) => v - p,
                        Bound::Duration { months, millis } => shift_timestamp(v, -months, -millis),
                    };
                    let upper = match self.following {
                        Bound::Unbounded => f64::INFINITY,
                        Bound::Rows(f) => v + f,
                        Bound::Duration { months, millis } => shift_timestamp(v, months, millis),
                    };
                    let in_range = |r: &Row| {
                        let x = value::to_number(&r[slot]);
                        x >= lower && x <= upper
                    };
                    let mut lo = i;
                    while lo > 0 && in_range(&rows[lo - 1]) {
                        lo -= 1;
                    }
                    let mut hi = i;
                    while hi + 1 < n && in_range(&rows[hi + 1]) {
                        hi += 1;
                    }
                    (lo, hi)
                }
            };
            let mut values = Vec::with_capacity(self.aggregates.len());
            for a in &self.aggregates {
                let inputs: Vec<Value> = match a.input {
                    Some(s) => rows[lo..=hi].iter().map(|r| r[s].clone()).collect(),
                    None => Vec::new(),
                };
                values.push(aggregate_value(
                    &a.function,
                    inputs,
                    (hi + 1 - lo) as u64,
                    ctx,
                )?);
            }
            results.push(values);
        }
        for (row, values) in rows.iter_mut().zip(results) {
            for (a, v) in self.aggregates.iter().zip(values) {
                row[a.out] = v;
            }
        }
        ctx.release(charged);
        Ok(rows)
    }
}

impl Operator for WindowOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        if self.output.is_none() {
            let rows = self.run(ctx)?;
            self.output = Some(rows.into_iter());
        }
        Ok(self.output.as_mut().and_then(Iterator::next))
    }
}
