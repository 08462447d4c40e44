//! Rule `use-vector-index` (ArangoDB's name): a collection loop whose documents are sorted by
//! an `APPROX_NEAR_*` call against a vector index and then limited becomes an
//! `EnumerateNearVectorNode` ([`NearVectors`]). Recognised, as in ArangoDB 3.12:
//!
//! ```text
//! FOR d IN coll
//!   [LET …]* [FILTER cond] [LET …]*
//!   SORT APPROX_NEAR_<METRIC>(d.field, q [, { nProbe }]) <DESC for cosine and
//!                                                        innerProduct, ASC for l2>
//!   LIMIT [offset,] n          -- n > 0, right after the SORT
//! ```
//!
//! or the same with `LET s = APPROX_NEAR_…(…) … SORT s`; the two vector arguments may be
//! swapped. The index must be a vector index over `d.field` with the function's metric; the
//! query point and options must not depend on the loop. One FILTER over the document (and
//! values known before the loop) is pushed into the node and checked on every candidate; a
//! filter on the similarity itself, or a second FILTER, leaves the loop alone. The SORT and the
//! call's calculation go (the node writes the call's variable); the LIMIT stays.
//!
//! A query that does not match keeps its `APPROX_NEAR_*` call, which then fails with 1554
//! when evaluated, as in ArangoDB.

use std::collections::HashSet;

use quiver_core::vector::Metric;
use quiver_core::vector_index::VectorParams;

use crate::expr::{CExpr, Slot};
use crate::index_select::{attribute_path, IndexCatalog};
use crate::plan::{NearVectors, NodeKind, Plan};
use crate::source::IndexMeta;

/// The `APPROX_NEAR_*` call computing `slot` in nodes `from..to`: its node, metric and
/// arguments.
fn distance_call(
    plan: &Plan,
    from: usize,
    to: usize,
    slot: Slot,
) -> Option<(usize, Metric, &[CExpr])> {
    (from..to).find_map(|c| match &plan.nodes[c].kind {
        NodeKind::Calculation {
            out,
            expr: CExpr::Call(def, args),
        } if *out == slot => Some((c, Metric::of_function(def.name)?, args.as_slice())),
        _ => None,
    })
}

/// Applies the rule to every collection loop of `plan`; true when one changed.
pub fn use_vector_indexes(plan: &mut Plan, catalog: &IndexCatalog) -> bool {
    let mut changed = false;
    let mut i = 1;
    while i < plan.nodes.len() {
        if let Some(rewrite) = match_loop(plan, catalog, i) {
            rewrite.apply(plan, i);
            changed = true;
        }
        i += 1;
    }
    changed
}

/// A matched loop: the node that replaces it and the nodes it absorbs.
struct Rewrite {
    near: NearVectors,
    remove: Vec<usize>,
}

impl Rewrite {
    fn apply(self, plan: &mut Plan, at: usize) {
        plan.nodes[at].kind = NodeKind::EnumerateNearVectors(Box::new(self.near));
        let mut remove = self.remove;
        remove.sort_unstable();
        remove.dedup();
        for r in remove.into_iter().rev() {
            assert!(r > at, "only nodes after the loop are absorbed");
            plan.nodes.remove(r);
        }
    }
}

fn match_loop(plan: &Plan, catalog: &IndexCatalog, i: usize) -> Option<Rewrite> {
    let NodeKind::EnumerateCollection {
        out: var,
        collection,
        ..
    } = &plan.nodes[i].kind
    else {
        return None;
    };
    let var = *var;
    let (_, indexes) = catalog.collections.get(collection)?;
    let hint = catalog.hints.get(&var);
    let candidates: Vec<&IndexMeta> = indexes
        .iter()
        .filter(|ix| ix.kind == "vector")
        .filter(|ix| hint.is_none_or(|h| !h.force || h.names.contains(&ix.name)))
        .collect();
    if candidates.is_empty() {
        return None;
    }
    // LETs and at most one FILTER, then `SORT x LIMIT o, n`.
    let mut end = i + 1;
    let mut filters = Vec::new();
    while let Some(node) = plan.nodes.get(end) {
        match node.kind {
            NodeKind::Calculation { .. } => {}
            NodeKind::Filter { input } => filters.push((end, input)),
            _ => break,
        }
        end += 1;
    }
    if filters.len() > 1 {
        return None;
    }
    let (NodeKind::Sort { keys, .. }, NodeKind::Limit { offset, count, .. }) =
        (&plan.nodes.get(end)?.kind, &plan.nodes.get(end + 1)?.kind)
    else {
        return None;
    };
    if keys.len() != 1 || *count == 0 {
        return None;
    }
    let (sort_slot, ascending) = keys[0];
    let (calc, metric, args) = distance_call(plan, i + 1, end, sort_slot)?;
    if ascending == metric.descending() || !(2..=3).contains(&args.len()) {
        return None;
    }
    // Slots written by the loop and the nodes up to the SORT: what the query point, the
    // options and a pushed filter must not read (the document aside, for the filter).
    let mut inner: HashSet<Slot> = HashSet::new();
    for node in &plan.nodes[i..end] {
        inner.extend(node.kind.writes());
    }
    let outside = |e: &CExpr| e.is_deterministic() && e.vars().is_disjoint(&inner);
    let (field, query) = match (attribute_path(&args[0], var), attribute_path(&args[1], var)) {
        (Some(f), _) if outside(&args[1]) => (f, args[1].clone()),
        (_, Some(f)) if outside(&args[0]) => (f, args[0].clone()),
        _ => return None,
    };
    let options = args.get(2).cloned();
    if options.as_ref().is_some_and(|o| !outside(o)) {
        return None;
    }
    let index = candidates.into_iter().find(|ix| {
        ix.fields.first() == Some(&field)
            && VectorParams::from_description(&ix.description).is_some_and(|p| p.metric == metric)
    })?;
    let params = VectorParams::from_description(&index.description)?;
    let mut remove = vec![calc, end];
    let mut filter = None;
    if let Some(&(filter_node, input)) = filters.first() {
        // The filter's condition, from its calculation in the stretch.
        let (cond_node, cond) = (i + 1..filter_node).find_map(|c| match &plan.nodes[c].kind {
            NodeKind::Calculation { out, expr } if *out == input => Some((c, expr.clone())),
            _ => None,
        })?;
        let mut reads = cond.vars();
        reads.remove(&var);
        if !cond.is_deterministic() || !reads.is_disjoint(&inner) {
            return None;
        }
        // Nothing else may read the condition's variable.
        let read_elsewhere = plan
            .nodes
            .iter()
            .enumerate()
            .any(|(n, node)| n != filter_node && node.kind.reads().contains(&input));
        if read_elsewhere {
            return None;
        }
        filter = Some(cond);
        remove.push(filter_node);
        remove.push(cond_node);
    }
    Some(Rewrite {
        near: NearVectors {
            out: var,
            distance_out: sort_slot,
            collection: collection.clone(),
            index: index.clone(),
            params,
            query,
            options,
            filter,
            offset: *offset,
            limit: *count,
        },
        remove,
    })
}
