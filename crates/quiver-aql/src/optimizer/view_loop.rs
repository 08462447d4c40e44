//! Rules for view loops (`FOR d IN view SEARCH …`), so the index does the work the rows would
//! otherwise do: `arangosearch-constrained-sort` hands a `SORT` by the loop's scorers with a
//! `LIMIT` to the index, which scores every match and keeps only the best offset+count;
//! `no-document-materialization-arangosearch` stops reading documents nothing reads.

use std::collections::{BTreeSet, HashMap};

use crate::expr::{CExpr, Slot};
use crate::plan::{Materialize, NodeKind, Plan, ScorersSort};
use quiver_search::index::ScoreOrder;

/// `FOR d IN view SEARCH … [LET x = <scorer>]… SORT <scorer> [ASC|DESC], … LIMIT o, n` (the
/// SORT bounded to o+n by rule `sort-limit`, so not with `fullCount`): the view node produces
/// only the first o+n rows of that order. Between the loop and the SORT only calculations that
/// copy a variable or a constant may stand (nothing that could drop a row, fail or depend on
/// the rows' number); every sort key must be one of the loop's scores. The SORT and LIMIT stay:
/// they sort the few rows again, which changes nothing, and cut as before.
pub(super) fn constrained_sort(plan: &mut Plan) -> bool {
    let mut changed = false;
    for i in 1..plan.nodes.len() {
        let NodeKind::EnumerateView(view) = &plan.nodes[i].kind else {
            continue;
        };
        if view.scorers_sort.is_some() || view.scorers.is_empty() {
            continue;
        }
        // Each variable holding a score, with the index of its scorer.
        let mut score_of: HashMap<Slot, usize> = view
            .scorers
            .iter()
            .enumerate()
            .map(|(index, (_, slot))| (*slot, index))
            .collect();
        let mut j = i + 1;
        let mut found = None;
        while let Some(node) = plan.nodes.get(j) {
            match &node.kind {
                NodeKind::Calculation {
                    out,
                    expr: CExpr::Var(source),
                } => {
                    if let Some(index) = score_of.get(source).copied() {
                        score_of.insert(*out, index);
                    }
                }
                NodeKind::Calculation {
                    expr: CExpr::Const(_),
                    ..
                } => {}
                NodeKind::Sort {
                    keys,
                    limit: Some(limit),
                } => {
                    let order: Option<Vec<(usize, bool)>> = keys
                        .iter()
                        .map(|(slot, asc)| score_of.get(slot).map(|index| (*index, *asc)))
                        .collect();
                    found = order.map(|keys| ScorersSort {
                        order: ScoreOrder { keys },
                        limit: *limit,
                    });
                    break;
                }
                _ => break,
            }
            j += 1;
        }
        if let Some(sort) = found {
            if let NodeKind::EnumerateView(view) = &mut plan.nodes[i].kind {
                view.scorers_sort = Some(sort);
                changed = true;
            }
        }
    }
    changed
}

/// A view loop whose variable the rest of the pipeline never reads (`COLLECT WITH COUNT`,
/// `RETURN 1`, only scores) reads no document; one read only through `_key` and `_id` gets
/// just those. Either way the query's snapshot is still asked whether it holds each document,
/// so the rows are the same. Not with `OFFSET_INFO`, which analyzes the document.
pub(super) fn no_materialization(plan: &mut Plan) -> bool {
    let mut changed = false;
    for i in 1..plan.nodes.len() {
        let NodeKind::EnumerateView(view) = &plan.nodes[i].kind else {
            continue;
        };
        if view.materialize != Materialize::Document || !view.offset_infos.is_empty() {
            continue;
        }
        let mut names = BTreeSet::new();
        if !super::nodes_use_only_attributes(&plan.nodes[i + 1..], view.out, &mut names) {
            continue;
        }
        let materialize = if names.is_empty() {
            Materialize::Nothing
        } else if names.iter().all(|n| n == "_key" || n == "_id") {
            Materialize::Identity
        } else {
            continue;
        };
        if let NodeKind::EnumerateView(view) = &mut plan.nodes[i].kind {
            view.materialize = materialize;
            changed = true;
        }
    }
    changed
}
