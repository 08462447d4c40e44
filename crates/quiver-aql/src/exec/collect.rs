//! `CollectNode`: grouping, `AGGREGATE`, `INTO`, `KEEP` and `WITH COUNT INTO`, plus the fused
//! count-per-value over a whole collection that the data source answers in one pass.

use std::cmp::Ordering;
use std::collections::HashMap;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{Map, Value};

use super::context::{check_limits, memory_error, memory_limit};
use super::{ExecCtx, Op, Operator, Row};
use crate::expr::Slot;
use crate::functions::{self, FunctionContext};
use crate::plan::{Aggregate, IntoKind, NodeKind};
use crate::value::{self, estimate_size, ValueKey};

/// Recognizes `FOR d IN coll COLLECT g = d.attr WITH COUNT INTO n` at the start of `nodes`
/// (a collection scan, the calculation of one top-level attribute of its documents, and a
/// COLLECT grouping by it that only counts): returns the attribute and the group and count
/// slots. Neither `d` nor the calculation is visible after such a COLLECT, so the three nodes
/// can run as one.
pub(super) fn count_by_attribute_pattern(
    nodes: &[crate::plan::Node],
) -> Option<(String, Slot, Slot)> {
    let [scan, calc, collect, ..] = nodes else {
        return None;
    };
    let NodeKind::EnumerateCollection { out: doc, .. } = &scan.kind else {
        return None;
    };
    let NodeKind::Calculation {
        out: value,
        expr: crate::expr::CExpr::Attribute(base, attribute),
    } = &calc.kind
    else {
        return None;
    };
    if !matches!(**base, crate::expr::CExpr::Var(s) if s == *doc) {
        return None;
    }
    let NodeKind::Collect {
        groups,
        aggregates,
        into: None,
        count: Some(count),
        ..
    } = &collect.kind
    else {
        return None;
    };
    match groups.as_slice() {
        [(group, input)] if input == value && aggregates.is_empty() => {
            Some((attribute.clone(), *group, *count))
        }
        _ => None,
    }
}

/// The count-per-value COLLECT over a whole collection (see [`count_by_attribute_pattern`]),
/// counted by the data source in one pass without a row per document. Output as
/// [`CollectOp`] gives it: one row per group, sorted by the group value.
pub(super) struct CountByAttributeOp {
    pub(super) input: Op,
    pub(super) collection: String,
    pub(super) attribute: String,
    pub(super) group: Slot,
    pub(super) count: Slot,
    pub(super) output: Option<std::vec::IntoIter<Row>>,
}

impl CountByAttributeOp {
    fn run(&mut self, ctx: &mut ExecCtx) -> Result<Vec<Row>> {
        let mut groups: HashMap<ValueKey, u64> = HashMap::new();
        let mut template = None;
        while let Some(row) = self.input.next(ctx)? {
            ctx.check_now()?;
            let limits = ctx.limits.clone();
            let budget = memory_limit(&limits).saturating_sub(ctx.memory);
            let check = move |held: u64| -> Result<()> {
                check_limits(&limits)?;
                if held > budget {
                    return Err(memory_error(memory_limit(&limits)));
                }
                Ok(())
            };
            let counts = ctx
                .txn
                .count_by_attribute(&self.collection, &self.attribute, &check)?;
            for (v, n) in counts {
                ctx.stats.scanned_full += n;
                *groups.entry(ValueKey(v)).or_insert(0) += n;
            }
            template.get_or_insert(row);
        }
        let Some(template) = template else {
            return Ok(Vec::new());
        };
        let mut groups: Vec<(Value, u64)> = groups.into_iter().map(|(k, n)| (k.0, n)).collect();
        let size: u64 = groups.iter().map(|(v, _)| estimate_size(v) * 2 + 64).sum();
        ctx.charge(size)?;
        groups.sort_by(|a, b| value::compare(&a.0, &b.0));
        let rows = groups
            .into_iter()
            .map(|(v, n)| {
                let mut row = template.clone();
                row[self.group] = v;
                row[self.count] = Value::from(n);
                row
            })
            .collect();
        ctx.release(size);
        Ok(rows)
    }
}

impl Operator for CountByAttributeOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        if self.output.is_none() {
            let rows = self.run(ctx)?;
            self.output = Some(rows.into_iter());
        }
        Ok(self.output.as_mut().and_then(Iterator::next))
    }
}

/// Applies an aggregate function to the collected inputs of one group.
pub(super) fn aggregate_value(
    function: &str,
    values: Vec<Value>,
    count: u64,
    ctx: &mut ExecCtx,
) -> Result<Value> {
    match function {
        "LENGTH" | "COUNT" => Ok(Value::from(count)),
        "PUSH" => Ok(Value::Array(values)),
        _ => {
            let name = match function {
                "AVG" => "AVERAGE",
                "VARIANCE" => "VARIANCE_POPULATION",
                "STDDEV" => "STDDEV_POPULATION",
                "COUNT_UNIQUE" => "COUNT_DISTINCT",
                other => other,
            };
            let Some(def) = functions::lookup(name) else {
                return Err(Error::with_message(
                    ErrorCode::QueryInvalidAggregateExpression,
                    format!("AQL: aggregate function '{function}' is not available"),
                ));
            };
            let mut fctx = FunctionContext::new();
            let r = def.invoke(&mut fctx, &[Value::Array(values)])?;
            for w in fctx.take_warnings() {
                ctx.warn(w)?;
            }
            Ok(r)
        }
    }
}

pub(super) struct Group {
    pub(super) key: Vec<Value>,
    pub(super) agg_inputs: Vec<Vec<Value>>,
    pub(super) into: Vec<Value>,
    pub(super) count: u64,
}

pub(super) struct CollectOp {
    pub(super) input: Op,
    pub(super) groups: Vec<(Slot, Slot)>,
    pub(super) aggregates: Vec<Aggregate>,
    pub(super) into: Option<(Slot, IntoKind)>,
    pub(super) count: Option<Slot>,
    pub(super) template: Row,
    pub(super) output: Option<std::vec::IntoIter<Row>>,
}

impl CollectOp {
    fn run(&mut self, ctx: &mut ExecCtx) -> Result<Vec<Row>> {
        let mut index: HashMap<Vec<ValueKey>, usize> = HashMap::new();
        let mut groups: Vec<Group> = Vec::new();
        let keep_agg_values: Vec<bool> = self
            .aggregates
            .iter()
            .map(|a| !matches!(a.function.as_str(), "LENGTH" | "COUNT"))
            .collect();
        let mut first_row = true;
        let mut charged = 0u64;
        while let Some(row) = self.input.next(ctx)? {
            ctx.check()?;
            // Variables declared before the first loop stay visible after COLLECT; they
            // are the same in every input row, so take them from the first one.
            if first_row {
                self.template.clone_from(&row);
                first_row = false;
            }
            // One clone of the group values per row; the group's own copy is made only
            // when a new group starts (most rows hit an existing group).
            let hkey: Vec<ValueKey> = self
                .groups
                .iter()
                .map(|(_, input)| ValueKey(row[*input].clone()))
                .collect();
            let gi = match index.get(&hkey) {
                Some(i) => *i,
                None => {
                    let key: Vec<Value> = hkey.iter().map(|k| k.0.clone()).collect();
                    let size: u64 = key.iter().map(estimate_size).sum::<u64>() * 2 + 64;
                    charged += size;
                    ctx.charge(size)?;
                    groups.push(Group {
                        key,
                        agg_inputs: vec![Vec::new(); self.aggregates.len()],
                        into: Vec::new(),
                        count: 0,
                    });
                    index.insert(hkey, groups.len() - 1);
                    groups.len() - 1
                }
            };
            let g = &mut groups[gi];
            g.count += 1;
            for (i, a) in self.aggregates.iter().enumerate() {
                if keep_agg_values[i] {
                    let v = a.input.map_or(Value::Null, |s| row[s].clone());
                    let size = estimate_size(&v);
                    charged += size;
                    ctx.charge(size)?;
                    g.agg_inputs[i].push(v);
                }
            }
            if let Some((_, kind)) = &self.into {
                let v = match kind {
                    IntoKind::Expr(s) => row[*s].clone(),
                    IntoKind::Vars(vars) => {
                        let mut m = Map::new();
                        for (name, slot) in vars {
                            m.insert(name.clone(), row[*slot].clone());
                        }
                        Value::Object(m)
                    }
                };
                let size = estimate_size(&v);
                charged += size;
                ctx.charge(size)?;
                g.into.push(v);
            }
        }
        // Without group variables there is exactly one group, even for empty input.
        if self.groups.is_empty() && groups.is_empty() {
            groups.push(Group {
                key: Vec::new(),
                agg_inputs: vec![Vec::new(); self.aggregates.len()],
                into: Vec::new(),
                count: 0,
            });
        }
        // The "sorted" method's output order (the "hash" method is followed by a SORT in
        // ArangoDB, which gives the same order).
        groups.sort_by(|a, b| {
            for (x, y) in a.key.iter().zip(&b.key) {
                let o = value::compare(x, y);
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
        let mut out = Vec::with_capacity(groups.len());
        for g in groups {
            let mut row = self.template.clone();
            for ((slot, _), v) in self.groups.iter().zip(g.key) {
                row[*slot] = v;
            }
            for (a, values) in self.aggregates.iter().zip(g.agg_inputs) {
                let values: Vec<Value> = if a.input.is_some() {
                    values
                } else {
                    Vec::new()
                };
                row[a.out] = aggregate_value(&a.function, values, g.count, ctx)?;
            }
            if let Some((slot, _)) = &self.into {
                row[*slot] = Value::Array(g.into);
            }
            if let Some(slot) = self.count {
                row[slot] = Value::from(g.count);
            }
            out.push(row);
        }
        ctx.release(charged);
        Ok(out)
    }
}

impl Operator for CollectOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        if self.output.is_none() {
            let rows = self.run(ctx)?;
            self.output = Some(rows.into_iter());
        }
        Ok(self.output.as_mut().and_then(Iterator::next))
    }
}
