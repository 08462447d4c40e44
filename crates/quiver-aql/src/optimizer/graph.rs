//! Rule `optimize-traversals` (ArangoDB's name): filters on a traversal's path variable move
//! into the traversal, where a failing path is also not extended, and vertices, edges and
//! paths the rest of the query never reads are not built (a vertex read only through `_id`
//! or `_key` is not fetched).

use std::collections::{BTreeSet, HashSet};

use serde_json::Value;

use super::{nodes_use_only_attributes, reads_after};
use crate::ast::{GraphKind, Quantifier};
use crate::expr::{CExpr, Slot};
use crate::index_select::{conjuncts, rebuild_and};
use crate::plan::{NodeKind, PathCondition, Plan, Produce};

/// How a path condition depends on the path: `Some(k)` when its value is fixed once the
/// path has `k` edges (it reads only `p.vertices[i]` with `i <= k` and `p.edges[i]` with
/// `i < k`, or it is an `ALL`/`NONE` comparison over every vertex or edge, which stays false
/// once false). `None`: not pushable.
fn fixed_from(e: &CExpr, p: Slot) -> Option<usize> {
    if let CExpr::ArrayCompare(Quantifier::All | Quantifier::None, _, lhs, rhs) = e {
        if let CExpr::Expansion {
            input,
            depth: 1,
            filter: None,
            limit: None,
            ..
        } = &**lhs
        {
            if path_list(input, p).is_some() && !rhs.vars().contains(&p) {
                return Some(0);
            }
        }
    }
    let mut max = 0usize;
    if prefix_only(e, p, &mut max) {
        Some(max)
    } else {
        None
    }
}

/// `p.vertices` → Some(0), `p.edges` → Some(1) (the offset from index to path length).
fn path_list(e: &CExpr, p: Slot) -> Option<usize> {
    match e {
        CExpr::Attribute(base, name) if matches!(**base, CExpr::Var(s) if s == p) => {
            match name.as_str() {
                "vertices" => Some(0),
                "edges" => Some(1),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether every use of `p` in `e` is `p.vertices[N]` / `p.edges[N]` with a constant
/// non-negative N; records the path length from which all of them are fixed.
fn prefix_only(e: &CExpr, p: Slot, max: &mut usize) -> bool {
    if let CExpr::Index(base, index) = e {
        if let (Some(offset), CExpr::Const(Value::Number(n))) = (path_list(base, p), &**index) {
            if let Some(i) = n.as_u64() {
                *max = (*max).max(i as usize + offset);
                return true;
            }
        }
    }
    match e {
        CExpr::Var(s) => *s != p,
        _ => e.all_children(|c| prefix_only(c, p, max)),
    }
}

/// Moves path filters directly following traversal `i` into it. Returns whether anything
/// moved.
fn push_filters(plan: &mut Plan, i: usize) -> bool {
    let NodeKind::Graph(g) = &plan.nodes[i].kind else {
        return false;
    };
    let (Some(p), GraphKind::Traversal) = (g.path_out, g.kind) else {
        return false;
    };
    let own: HashSet<Slot> = [g.vertex_out, g.edge_out, g.prune_out]
        .into_iter()
        .flatten()
        .collect();
    let mut changed = false;
    let mut later_writes: HashSet<Slot> = HashSet::new();
    let mut j = i + 1;
    while j < plan.nodes.len() {
        match &plan.nodes[j].kind {
            NodeKind::Calculation { out, expr } if expr.is_deterministic() => {
                later_writes.insert(*out);
                j += 1;
                continue;
            }
            NodeKind::Filter { input } => {
                let input = *input;
                let Some(ci) = (i + 1..j).find(|&c| {
                    matches!(&plan.nodes[c].kind, NodeKind::Calculation { out, .. } if *out == input)
                }) else {
                    j += 1;
                    continue;
                };
                // The calculation must feed only this filter.
                let used_elsewhere = plan.nodes[i + 1..]
                    .iter()
                    .enumerate()
                    .any(|(k, n)| i + 1 + k != j && n.kind.reads().contains(&input));
                let NodeKind::Calculation { expr, .. } = &plan.nodes[ci].kind else {
                    j += 1;
                    continue;
                };
                if used_elsewhere {
                    j += 1;
                    continue;
                }
                let mut parts = Vec::new();
                conjuncts(expr, &mut parts);
                let mut keep = Vec::new();
                let mut pushed = Vec::new();
                for c in parts {
                    let vars = c.vars();
                    let independent = vars.contains(&p)
                        && c.is_deterministic()
                        && vars
                            .iter()
                            .all(|s| !own.contains(s) && !later_writes.contains(s));
                    match fixed_from(&c, p).filter(|_| independent) {
                        Some(k) => pushed.push(PathCondition {
                            expr: c,
                            fixed_from: k,
                        }),
                        None => keep.push(c),
                    }
                }
                if pushed.is_empty() {
                    j += 1;
                    continue;
                }
                changed = true;
                let all_pushed = keep.is_empty();
                if let NodeKind::Calculation { expr, .. } = &mut plan.nodes[ci].kind {
                    *expr = rebuild_and(keep);
                }
                if let NodeKind::Graph(g) = &mut plan.nodes[i].kind {
                    g.conditions.extend(pushed);
                }
                if all_pushed {
                    // Filter and calculation go; ci < j.
                    plan.nodes.remove(j);
                    plan.nodes.remove(ci);
                    j -= 1;
                } else {
                    j += 1;
                }
            }
            _ => break,
        }
    }
    changed
}

/// Decides what the traversal produces for each of its variables.
fn produce_modes(plan: &mut Plan, i: usize) -> bool {
    let NodeKind::Graph(g) = &plan.nodes[i].kind else {
        return false;
    };
    let after = reads_after(plan, i + 1);
    let (vertex_out, current_mode) = (g.vertex_out, g.vertex_mode);
    let vertex_mode = match vertex_out {
        // The reads were already rewritten to the bare id (the rule ran before).
        Some(_) if current_mode == Produce::Id => Produce::Id,
        Some(v) if after.contains(&v) => {
            let mut names = BTreeSet::new();
            if nodes_use_only_attributes(&plan.nodes[i + 1..], v, &mut names)
                && names.iter().all(|n| n == "_id" || n == "_key")
            {
                if names.len() == 1
                    && read_only_in_calculations(plan, i, v)
                    && names.contains("_id")
                {
                    for n in &mut plan.nodes[i + 1..] {
                        if let NodeKind::Calculation { expr, .. } = &mut n.kind {
                            id_reads_to_var(expr, v);
                        }
                    }
                    Produce::Id
                } else {
                    Produce::IdOnly
                }
            } else {
                Produce::Full
            }
        }
        _ => Produce::Skip,
    };
    let NodeKind::Graph(g) = &plan.nodes[i].kind else {
        return false;
    };
    let mode = |slot: Option<Slot>| match slot {
        Some(s) if after.contains(&s) => Produce::Full,
        _ => Produce::Skip,
    };
    let edge_mode = mode(g.edge_out);
    let path_mode = mode(g.path_out);
    let NodeKind::Graph(g) = &mut plan.nodes[i].kind else {
        return false;
    };
    let changed = (g.vertex_mode, g.edge_mode, g.path_mode) != (vertex_mode, edge_mode, path_mode);
    g.vertex_mode = vertex_mode;
    g.edge_mode = edge_mode;
    g.path_mode = path_mode;
    changed
}

/// Whether every node after the graph node `i` that reads `slot` is a calculation of the
/// same pipeline (no subquery, index lookup, loop bound or modification reads it), so that
/// rewriting those calculations reaches every read.
fn read_only_in_calculations(plan: &Plan, i: usize, slot: Slot) -> bool {
    plan.nodes[i + 1..]
        .iter()
        .all(|n| matches!(n.kind, NodeKind::Calculation { .. }) || !n.kind.reads().contains(&slot))
}

/// Replaces `slot._id` and `slot["_id"]` by `slot` (whose value becomes the id string).
fn id_reads_to_var(e: &mut CExpr, slot: Slot) {
    let is_id_read = match e {
        CExpr::Attribute(base, name) => {
            matches!(**base, CExpr::Var(s) if s == slot) && name == "_id"
        }
        CExpr::Index(base, key) => {
            matches!(**base, CExpr::Var(s) if s == slot)
                && matches!(&**key, CExpr::Const(Value::String(k)) if k == "_id")
        }
        _ => false,
    };
    if is_id_read {
        *e = CExpr::Var(slot);
    } else {
        e.for_each_child_mut(&mut |c| id_reads_to_var(c, slot));
    }
}

pub(super) fn optimize_traversals(plan: &mut Plan, _: &super::OptimizeOptions) -> bool {
    let mut changed = false;
    let mut i = 1;
    while i < plan.nodes.len() {
        if matches!(plan.nodes[i].kind, NodeKind::Graph(_)) {
            changed |= push_filters(plan, i);
            changed |= produce_modes(plan, i);
        }
        i += 1;
    }
    changed
}

/// Lets the query's traversal hand its vertices to the response as their stored JSON text
/// ([`Produce::Raw`]) when the final `RETURN` of the top-level pipeline returns the vertex
/// variable as it is (no `DISTINCT`) and no node in between reads it: the documents are then
/// neither parsed nor serialized again, as ArangoDB passes VelocyPack through. Only the
/// top-level pipeline qualifies — a subquery's results are values its parent works with.
pub(super) fn pass_stored_vertices(plan: &mut Plan) -> bool {
    let last = plan.nodes.len().saturating_sub(1);
    let Some(NodeKind::Return { input, distinct }) = plan.nodes.last().map(|n| &n.kind) else {
        return false;
    };
    if *distinct {
        return false;
    }
    let slot = *input;
    let Some(gi) = plan.nodes[..last]
        .iter()
        .position(|n| matches!(&n.kind, NodeKind::Graph(g) if g.vertex_out == Some(slot)))
    else {
        return false;
    };
    if plan.nodes[gi + 1..last]
        .iter()
        .any(|n| n.kind.reads().contains(&slot))
    {
        return false;
    }
    let NodeKind::Graph(g) = &mut plan.nodes[gi].kind else {
        return false;
    };
    if g.vertex_mode != Produce::Full {
        return false;
    }
    g.vertex_mode = Produce::Raw;
    true
}
