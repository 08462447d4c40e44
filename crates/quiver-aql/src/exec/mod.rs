//! The executor: a pull-based pipeline of operators, one per plan node. Rows are vectors of
//! variable slots. Non-blocking nodes (loops, calculations, filters, limits, writes) stream
//! rows one at a time so a streaming cursor holds only the rows of its current batch;
//! blocking nodes (SORT, COLLECT, WINDOW) buffer, charge the query's memory budget and fail
//! with ArangoDB's resource-limit error when it is exceeded.
//!
//! This file builds the operator chain of a plan ([`build`]) and runs it ([`Execution`]); the
//! operators live one family per file: `enumerate` (singleton, collection scan, primary-index
//! lookup, list loop), `index` and `geo` (secondary-index scans), `calculation` (calculation
//! and filter), `subquery`, `sort`, `limit`, `collect`, `window`, `returning`, `modify` and
//! `graph`; `context` holds what they share while running ([`ExecCtx`]). Expressions are
//! evaluated by [`crate::expr::eval`].

mod calculation;
mod collect;
mod context;
mod enumerate;
mod geo;
mod graph;
mod index;
mod inverted;
mod limit;
mod mdi;
mod modify;
mod returning;
mod sort;
mod subquery;
mod vector;
mod view;
mod window;

use std::collections::{HashSet, VecDeque};
use std::time::Instant;

use quiver_errors::Result;
use serde_json::Value;

use crate::expr::Slot;
use crate::plan::{NodeKind, Plan, QueryPlan};
use crate::value::Warning;

use calculation::{CalcOp, FilterOp};
use collect::{count_by_attribute_pattern, CollectOp, CountByAttributeOp};
pub use context::{ExecCtx, Limits, NodeStats, Stats, DEFAULT_MEMORY_CAP};
use enumerate::{IndexOp, ListItems, ListOp, NoResultsOp, ScanOp, SingletonOp};
use limit::LimitOp;
use modify::ModifyOp;
use returning::ReturnOp;
use sort::SortOp;
pub use subquery::run_subplan;
use subquery::SubqueryOp;
use window::WindowOp;

pub type Row = Vec<Value>;

/// One node's runtime form.
pub trait Operator: Send {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>>;
}

type Op = Box<dyn Operator>;

/// Builds the operator chain of `plan`, starting from `seed` (the outer row of a subquery or
/// an all-null row).
pub fn build(plan: &Plan, seed: Row, profile: bool) -> Op {
    let mut op: Op = Box::new(SingletonOp {
        row: Some(seed.clone()),
    });
    // Nodes folded into the operator before them.
    let mut skip = 0;
    // Whether every node so far was a singleton (the input is the seed row only).
    let mut at_start = true;
    for (i, node) in plan.nodes.iter().enumerate() {
        if skip > 0 {
            skip -= 1;
            continue;
        }
        let first = std::mem::replace(&mut at_start, false);
        let next: Op = match &node.kind {
            NodeKind::Singleton => {
                at_start = first;
                continue;
            }
            NodeKind::EnumerateCollection {
                out,
                collection,
                projections,
                ..
            } => match count_by_attribute_pattern(&plan.nodes[i..]) {
                // Profiling reports every node's own counts, so it keeps the nodes apart.
                Some((attribute, group, count)) if first && !profile => {
                    skip = 2;
                    Box::new(CountByAttributeOp {
                        input: op,
                        collection: collection.clone(),
                        attribute,
                        group,
                        count,
                        output: None,
                    })
                }
                _ => Box::new(ScanOp {
                    input: op,
                    out: *out,
                    collection: collection.clone(),
                    projections: projections.clone(),
                    row: None,
                    iter: None,
                }),
            },
            NodeKind::IndexScan(scan) if scan.inverted.is_some() => {
                Box::new(inverted::InvertedScanOp::new(op, (**scan).clone()))
            }
            NodeKind::IndexScan(scan) if scan.mdi.is_some() => {
                Box::new(mdi::MdiScanOp::new(op, (**scan).clone()))
            }
            NodeKind::IndexScan(scan) if scan.geo.is_some() => {
                Box::new(geo::GeoScanOp::new(op, (**scan).clone()))
            }
            NodeKind::IndexScan(scan) => Box::new(index::IndexScanOp::new(op, (**scan).clone())),
            NodeKind::EnumerateNearVectors(near) => {
                Box::new(vector::NearVectorsOp::new(op, (**near).clone()))
            }
            NodeKind::Index {
                out,
                collection,
                lookup,
                multi,
            } => Box::new(IndexOp {
                input: op,
                out: *out,
                collection: collection.clone(),
                lookup: lookup.clone(),
                multi: *multi,
                row: None,
                pending: VecDeque::new(),
            }),
            NodeKind::EnumerateList { out, input } => Box::new(ListOp {
                input: op,
                out: *out,
                source: input.clone(),
                row: None,
                items: ListItems::None,
            }),
            NodeKind::Calculation { out, expr } => Box::new(CalcOp {
                input: op,
                out: *out,
                expr: expr.clone(),
            }),
            NodeKind::Subquery { out, plan } => Box::new(SubqueryOp {
                input: op,
                out: *out,
                plan: plan.clone(),
                profile,
            }),
            NodeKind::Filter { input } => Box::new(FilterOp {
                input: op,
                slot: *input,
            }),
            NodeKind::Sort { keys, limit } => Box::new(SortOp {
                input: op,
                keys: keys.clone(),
                limit: *limit,
                sorted: None,
                charged: 0,
            }),
            NodeKind::Limit {
                offset,
                count,
                full_count,
            } => Box::new(LimitOp {
                input: op,
                offset: *offset,
                count: *count,
                full_count: *full_count,
                seen: 0,
                returned: 0,
            }),
            NodeKind::Collect {
                groups,
                aggregates,
                into,
                count,
                ..
            } => Box::new(CollectOp {
                input: op,
                groups: groups.clone(),
                aggregates: aggregates.clone(),
                into: into.clone(),
                count: *count,
                template: seed.clone(),
                output: None,
            }),
            NodeKind::Window {
                range_input,
                preceding,
                following,
                aggregates,
            } => Box::new(WindowOp {
                input: op,
                range_input: *range_input,
                preceding: *preceding,
                following: *following,
                aggregates: aggregates.clone(),
                output: None,
            }),
            NodeKind::Return { input, distinct } => Box::new(ReturnOp {
                input: op,
                slot: *input,
                seen: if *distinct {
                    Some(HashSet::new())
                } else {
                    None
                },
            }),
            NodeKind::Modify(spec) => Box::new(ModifyOp {
                input: op,
                spec: spec.clone(),
            }),
            NodeKind::Graph(g) => Box::new(graph::GraphOp::new(op, g)),
            NodeKind::EnumerateView(v) => Box::new(view::ViewOp::new(op, (**v).clone())),
            NodeKind::Materialize { var } => Box::new(view::MaterializeOp {
                input: op,
                var: *var,
            }),
            NodeKind::NoResults => Box::new(NoResultsOp),
        };
        op = if profile {
            Box::new(ProfiledOp {
                id: node.id,
                inner: next,
            })
        } else {
            next
        };
        // Pulling a row recurses through the whole pipeline; every few nodes, check the
        // stack (long pipelines and nested subqueries).
        if node.id % 16 == 0 {
            op = Box::new(StackCheckOp { inner: op });
        }
    }
    op
}

struct StackCheckOp {
    inner: Op,
}

impl Operator for StackCheckOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        crate::deep(|| self.inner.next(ctx))
    }
}

/// Dropping the pipeline recurses through it as pulling does (each operator owns its input):
/// a pipeline of 20,000 nodes overflowed the stack when it was dropped.
impl Drop for StackCheckOp {
    fn drop(&mut self) {
        let inner = std::mem::replace(&mut self.inner, Box::new(NoResultsOp));
        crate::deep(move || drop(inner));
    }
}

struct ProfiledOp {
    id: usize,
    inner: Op,
}

impl Operator for ProfiledOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        let start = Instant::now();
        let r = self.inner.next(ctx);
        let s = ctx.stats.nodes.entry(self.id).or_default();
        s.calls += 1;
        s.runtime += start.elapsed();
        if matches!(r, Ok(Some(_))) {
            s.items += 1;
        }
        r
    }
}

/// A running query: the operator pipeline and its context. Values are pulled one at a time;
/// `finish` commits the query's writes.
pub struct Execution {
    root: Op,
    result_slot: Option<Slot>,
    pub ctx: ExecCtx,
    done: bool,
}

impl Execution {
    pub fn new(plan: &QueryPlan, ctx: ExecCtx) -> Execution {
        let seed = vec![Value::Null; plan.vars.len()];
        let result_slot = match plan.root.nodes.last().map(|n| &n.kind) {
            Some(NodeKind::Return { input, .. }) => Some(*input),
            _ => None,
        };
        let root = build(&plan.root, seed, ctx.profile);
        Execution {
            root,
            result_slot,
            ctx,
            done: false,
        }
    }

    /// The next result value, None when exhausted.
    pub fn next_value(&mut self) -> Result<Option<Value>> {
        if self.done {
            return Ok(None);
        }
        self.ctx.check_now()?;
        loop {
            match self.root.next(&mut self.ctx)? {
                Some(row) => {
                    if let Some(s) = self.result_slot {
                        return Ok(Some(row.into_iter().nth(s).unwrap_or(Value::Null)));
                    }
                }
                None => {
                    self.done = true;
                    return Ok(None);
                }
            }
        }
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Commits the writes (all-or-nothing) and returns the final context for statistics.
    pub fn finish(self) -> Result<(Stats, Vec<Warning>)> {
        let ExecCtx {
            txn, stats, env, ..
        } = self.ctx;
        txn.commit()?;
        Ok((stats, env.warnings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::{OptimizeOptions, RuleSelection};
    use crate::source::DataSource;
    use serde_json::Map;

    fn planned(query: &str) -> crate::plan::QueryPlan {
        let source = crate::source::memory::MemorySource::new();
        source
            .create_collection("_system", "c", false, Vec::new())
            .unwrap();
        source
            .create_collection("_system", "e", true, Vec::new())
            .unwrap();
        let txn = source.begin("_system", &[]).unwrap();
        let ast = crate::parser::parse(query).unwrap();
        let limits = crate::limits::Limits::unlimited();
        let mut plan = crate::plan::build(&ast, &Map::new(), &*txn, &limits).unwrap();
        crate::optimizer::optimize(
            &mut plan,
            &OptimizeOptions {
                rules: RuleSelection::from_options(&[]),
                full_count: false,
                indexes: Default::default(),
                limits,
            },
        )
        .unwrap();
        plan
    }

    #[test]
    fn only_vertices_returned_as_they_are_pass_through_as_stored_text() {
        let t = "FOR v IN 1..2 OUTBOUND 'c/a' e";
        let raw = [
            format!("{t} RETURN v"),
            format!("{t} LIMIT 2 RETURN v"),
            format!("{t} OPTIONS {{bfs: true}} FILTER 1 == 1 RETURN v"),
            "FOR v, e IN 1..2 OUTBOUND 'c/a' e FILTER e.w > 1 RETURN v".to_string(),
            "FOR v IN OUTBOUND SHORTEST_PATH 'c/a' TO 'c/b' e RETURN v".to_string(),
        ];
        for q in &raw {
            assert!(planned(q).raw_result(), "{q}");
        }
        let parsed = [
            format!("{t} RETURN v._key"),
            format!("{t} RETURN DISTINCT v"),
            format!("{t} FILTER v.x == 1 RETURN v"),
            format!("{t} SORT v.x RETURN v"),
            format!("{t} LET s = (RETURN v.x) RETURN v"),
            format!("{t} RETURN [v]"),
            format!("LET r = ({t} RETURN v) RETURN r"),
            "FOR x IN c FOR v IN 1..2 OUTBOUND x e RETURN x".to_string(),
        ];
        for q in &parsed {
            assert!(!planned(q).raw_result(), "{q}");
        }
    }

    #[test]
    fn count_by_attribute_pattern_matches_only_the_plain_shape() {
        let cases = [
            (
                "FOR d IN c COLLECT a = d.x WITH COUNT INTO n RETURN {a, n}",
                Some("x"),
            ),
            (
                "FOR d IN c COLLECT a = d.x.y WITH COUNT INTO n RETURN n",
                None,
            ),
            ("FOR d IN c COLLECT a = d.x INTO g RETURN g", None),
            (
                "FOR d IN c COLLECT a = d.x, b = d.y WITH COUNT INTO n RETURN n",
                None,
            ),
            (
                "FOR d IN c FILTER d.y == 1 COLLECT a = d.x WITH COUNT INTO n RETURN n",
                None,
            ),
            (
                "FOR d IN c COLLECT a = d.x AGGREGATE m = MAX(d.y) RETURN m",
                None,
            ),
            ("FOR d IN c COLLECT a = d.x RETURN a", None),
            (
                "FOR d IN c COLLECT a = LOWER(d.x) WITH COUNT INTO n RETURN n",
                None,
            ),
        ];
        for (query, want) in cases {
            let plan = planned(query);
            let nodes = &plan.root.nodes;
            let scan = nodes
                .iter()
                .position(|n| matches!(n.kind, NodeKind::EnumerateCollection { .. }))
                .unwrap_or_else(|| panic!("no scan in {query}"));
            let got = count_by_attribute_pattern(&nodes[scan..]).map(|(a, ..)| a);
            assert_eq!(got.as_deref(), want, "{query}");
        }
    }
}
