//! Rules for view loops (`FOR d IN view SEARCH …`), so the index does the work the rows would
//! otherwise do: `handle-arangosearch-views` reads in the view's primary sort order when a
//! `SORT` asks for it (and drops the SORT); `arangosearch-constrained-sort` hands a `SORT` by
//! the loop's scorers with a `LIMIT` to the index, which scores every match and keeps only the
//! best offset+count; `no-document-materialization-arangosearch` stops reading documents
//! nothing reads, or whose attributes read the index keeps (primary sort and stored values);
//! `late-document-materialization-arangosearch` reads documents only for the rows a `LIMIT`
//! after a `SORT` keeps.

use std::collections::{BTreeSet, HashMap};

use crate::expr::{CExpr, Slot};
use crate::plan::{
    Materialize, Node, NodeKind, Plan, PrimarySortRead, ScorersSort, ViewNode, ViewValue,
};
use quiver_search::index::{ScoreOrder, StoredColumns};

/// Ids of MaterializeNodes: the view loop's id plus this (planned node ids stay far below).
const MATERIALIZE_NODE_ID: usize = 1 << 20;

/// The attribute path (dotted) `e` reads of variable `slot`: `slot.a.b`, `slot["a"]`.
fn attribute_path(e: &CExpr, slot: Slot) -> Option<String> {
    match e {
        CExpr::Attribute(base, name) => match &**base {
            CExpr::Var(s) if *s == slot => Some(name.clone()),
            inner => Some(format!("{}.{name}", attribute_path(inner, slot)?)),
        },
        CExpr::Index(base, key) => {
            let CExpr::Const(serde_json::Value::String(name)) = &**key else {
                return None;
            };
            attribute_path(&CExpr::Attribute(base.clone(), name.clone()), slot)
        }
        _ => None,
    }
}

/// Rule `handle-arangosearch-views` (always on, as in ArangoDB; it fires for every plan with a
/// view loop). A view loop that is the first loop of its pipeline, followed (after
/// calculations of attribute paths of its variable, copies and constants only) by a `SORT`
/// whose keys are those paths, in the view's primary sort order with its directions, for a
/// prefix of its fields (`SORT d.a DESC` for `[a desc, b asc]`; not reversed, not another
/// order) reads in that order: the SORT goes, and its bound (offset + count of the LIMIT
/// after it, rule `sort-limit`) stops the read early. As the first loop its rows are the
/// pipeline's, so the SORT over them is exactly the loop's order; ties keep the index order.
pub(super) fn primary_sort(plan: &mut Plan) -> bool {
    let mut seen_view = false;
    let mut i = 1;
    while i < plan.nodes.len() {
        let NodeKind::EnumerateView(view) = &plan.nodes[i].kind else {
            i += 1;
            continue;
        };
        seen_view = true;
        if !first_loop(plan, i)
            || view.primary_sort.is_some()
            || view.scorers_sort.is_some()
            || view.columns.sort.is_empty()
        {
            i += 1;
            continue;
        }
        let mut path_of: HashMap<Slot, String> = HashMap::new();
        let mut found = None;
        let mut j = i + 1;
        while let Some(node) = plan.nodes.get(j) {
            match &node.kind {
                NodeKind::Calculation { out, expr } => {
                    if let Some(path) = attribute_path(expr, view.out) {
                        path_of.insert(*out, path);
                    } else if let CExpr::Var(source) = expr {
                        if let Some(path) = path_of.get(source).cloned() {
                            path_of.insert(*out, path);
                        }
                    } else if !matches!(expr, CExpr::Const(_)) {
                        break;
                    }
                }
                NodeKind::Sort { keys, limit } => {
                    let matches = !keys.is_empty()
                        && keys.len() <= view.columns.sort.len()
                        && keys
                            .iter()
                            .zip(&view.columns.sort)
                            .all(|((slot, asc), (p, a))| path_of.get(slot) == Some(p) && asc == a);
                    if matches {
                        found = Some((
                            j,
                            PrimarySortRead {
                                buckets: keys.len(),
                                limit: *limit,
                            },
                        ));
                    }
                    break;
                }
                _ => break,
            }
            j += 1;
        }
        if let Some((sort_at, read)) = found {
            plan.nodes.remove(sort_at);
            if let NodeKind::EnumerateView(view) = &mut plan.nodes[i].kind {
                view.primary_sort = Some(read);
            }
        }
        i += 1;
    }
    seen_view
}

/// Part of rule `handle-arangosearch-views`: a view loop read in the index's order (no
/// primary sort and no constrained sort in use) followed, after calculations only, by a
/// `LIMIT o, n` reads only the first o+n rows of each input row (not called for a query with
/// `fullCount`, whose last LIMIT must see every row): the LIMIT
/// never asks for more, and a calculation cannot drop or add a row. Exact inside an outer
/// loop too, where every iteration's rows are cut alike (a row among the LIMIT's first o+n
/// is among its own iteration's first o+n). Without it the index would read the identity of
/// every match (a `LIMIT 10` over 10,000 matches read 10,000).
pub(super) fn limited_read(plan: &mut Plan) -> bool {
    let mut changed = false;
    for i in 1..plan.nodes.len() {
        let NodeKind::EnumerateView(view) = &plan.nodes[i].kind else {
            continue;
        };
        if view.primary_sort.is_some() || view.scorers_sort.is_some() || view.first.is_some() {
            continue;
        }
        let limit = plan.nodes[i + 1..]
            .iter()
            .find(|n| !matches!(n.kind, NodeKind::Calculation { .. }))
            .and_then(|n| match n.kind {
                NodeKind::Limit {
                    offset,
                    count,
                    full_count: false,
                } => Some(offset.saturating_add(count)),
                _ => None,
            });
        if let (Some(limit), NodeKind::EnumerateView(view)) = (limit, &mut plan.nodes[i].kind) {
            view.first = Some(limit);
            changed = true;
        }
    }
    changed
}

/// Whether node `i` is the first loop of its pipeline: the rows before it are at most one.
fn first_loop(plan: &Plan, i: usize) -> bool {
    plan.nodes[..i].iter().all(|n| {
        matches!(
            n.kind,
            NodeKind::Singleton
                | NodeKind::Calculation { .. }
                | NodeKind::Subquery { .. }
                | NodeKind::Filter { .. }
        )
    })
}

/// Part of rule `use-index-for-sort`: a collection loop through an inverted index
/// (`indexHint`) that is the first loop of its pipeline, followed (after calculations and
/// filters) by a `SORT` whose keys are attribute paths of its variable forming a prefix of the
/// index's `primarySort`, each in its declared direction and all in one direction (ArangoDB
/// does not serve mixed directions through an index alone): the SORT goes and the index gives
/// the documents in that order ("reverse" when descending, as ArangoDB reports it). A LIMIT
/// right after the SORT (offset + count; not with `fullCount`) stops the read early when no
/// filter stands between.
pub(super) fn inverted_primary_sort(plan: &mut Plan, full_count: bool) -> bool {
    let mut changed = false;
    for i in 1..plan.nodes.len() {
        let NodeKind::IndexScan(scan) = &plan.nodes[i].kind else {
            continue;
        };
        let Some(search) = &scan.inverted else {
            continue;
        };
        if search.sorted.is_some() || !first_loop(plan, i) {
            continue;
        }
        let null = serde_json::Value::Null;
        let columns = StoredColumns::from_definitions(
            scan.index.description.get("primarySort").unwrap_or(&null),
            &null,
        );
        if columns.sort.is_empty() {
            continue;
        }
        let mut path_of: HashMap<Slot, String> = HashMap::new();
        // Conditions the index serves leave `true` behind until the filters are cleaned up.
        let mut always_true: BTreeSet<Slot> = BTreeSet::new();
        let mut filtered = false;
        let mut found = None;
        for (j, node) in plan.nodes.iter().enumerate().skip(i + 1) {
            match &node.kind {
                NodeKind::Filter { input } if always_true.contains(input) => {}
                NodeKind::Calculation {
                    out,
                    expr: CExpr::Const(serde_json::Value::Bool(true)),
                } => {
                    always_true.insert(*out);
                }
                NodeKind::Calculation { out, expr } => {
                    if let Some(path) = attribute_path(expr, scan.out) {
                        path_of.insert(*out, path);
                    } else if let CExpr::Var(source) = expr {
                        if let Some(path) = path_of.get(source).cloned() {
                            path_of.insert(*out, path);
                        }
                    }
                }
                NodeKind::Filter { .. } => filtered = true,
                NodeKind::Sort { keys, limit } => {
                    let matches = !keys.is_empty()
                        && keys.len() <= columns.sort.len()
                        && keys.iter().all(|(_, asc)| *asc == keys[0].1)
                        && keys
                            .iter()
                            .zip(&columns.sort)
                            .all(|((slot, asc), (p, a))| path_of.get(slot) == Some(p) && asc == a);
                    if matches {
                        let following = match plan.nodes.get(j + 1).map(|n| &n.kind) {
                            Some(NodeKind::Limit { offset, count, .. })
                                if !full_count && *count != u64::MAX =>
                            {
                                Some(offset.saturating_add(*count))
                            }
                            _ => None,
                        };
                        let read = PrimarySortRead {
                            buckets: keys.len(),
                            limit: if filtered { None } else { limit.or(following) },
                        };
                        found = Some((j, read, !keys[0].1));
                    }
                    break;
                }
                _ => break,
            }
        }
        let Some((sort_at, read, descending)) = found else {
            continue;
        };
        plan.nodes.remove(sort_at);
        if let NodeKind::IndexScan(scan) = &mut plan.nodes[i].kind {
            scan.sorted = true;
            scan.reverse = descending;
            if let Some(search) = &mut scan.inverted {
                search.sorted = Some(read);
            }
        }
        changed = true;
        // The plan is shorter now; one inverted loop per pipeline is the first loop.
        break;
    }
    changed
}

/// The attributes `names` (top-level, read from a view loop's variable) as taken from the
/// index: `_key` and `_id` from the identity, others from a primary sort or stored field of
/// that exact name; None when one is not kept.
fn covered_values(columns: &StoredColumns, names: &BTreeSet<String>) -> Option<Vec<ViewValue>> {
    let paths = columns.value_paths();
    names
        .iter()
        .map(|name| {
            let position = if name == "_key" || name == "_id" {
                None
            } else {
                Some(paths.iter().position(|p| p == name)?)
            };
            Some(ViewValue {
                name: name.clone(),
                position,
            })
        })
        .collect()
}

/// Whether a view loop's rows can carry `values`: a constrained sort by scores gives hits
/// without the index's values, so there only the identity can be taken.
fn values_allowed(view: &ViewNode, values: &[ViewValue]) -> bool {
    view.scorers_sort.is_none() || values.iter().all(|v| v.position.is_none())
}

/// Rule `late-document-materialization-arangosearch`: a view loop followed by a `SORT` (or
/// reading in its primary sort order) and a `LIMIT`, where nothing before the LIMIT reads the
/// loop's variable but through attributes the index keeps (or `_key`/`_id`) and only
/// calculations, filters and the SORT stand between: the loop's rows carry those attributes
/// with `_key` and `_id`, and a MaterializeNode right after the LIMIT reads the documents of
/// the rows left.
pub(super) fn late_materialization(plan: &mut Plan) -> bool {
    let mut changed = false;
    let mut i = 1;
    while i < plan.nodes.len() {
        let NodeKind::EnumerateView(view) = &plan.nodes[i].kind else {
            i += 1;
            continue;
        };
        if view.materialize != Materialize::Document || !view.offset_infos.is_empty() {
            i += 1;
            continue;
        }
        let mut sorted = view.primary_sort.is_some();
        let mut limit_at = None;
        for (j, node) in plan.nodes.iter().enumerate().skip(i + 1) {
            match &node.kind {
                NodeKind::Calculation { .. } | NodeKind::Filter { .. } => {}
                NodeKind::Sort { .. } => sorted = true,
                NodeKind::Limit { .. } => {
                    limit_at = Some(j);
                    break;
                }
                _ => break,
            }
        }
        let Some(limit_at) = limit_at.filter(|_| sorted) else {
            i += 1;
            continue;
        };
        let mut names = BTreeSet::new();
        if !super::nodes_use_only_attributes(&plan.nodes[i + 1..limit_at], view.out, &mut names) {
            i += 1;
            continue;
        }
        let Some(values) = covered_values(&view.columns, &names) else {
            i += 1;
            continue;
        };
        if !values_allowed(view, &values) {
            i += 1;
            continue;
        }
        let (out, id) = (view.out, plan.nodes[i].id + MATERIALIZE_NODE_ID);
        if let NodeKind::EnumerateView(view) = &mut plan.nodes[i].kind {
            view.materialize = Materialize::Late(values);
        }
        plan.nodes.insert(
            limit_at + 1,
            Node {
                id,
                kind: NodeKind::Materialize { var: out },
            },
        );
        changed = true;
        i += 1;
    }
    changed
}

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
/// just those; one read only through attributes the index keeps (primary sort and stored
/// fields of those names, with `_key` and `_id`) gets them from the index. Either way the
/// query's snapshot is still asked whether it holds each document, so the rows are the same.
/// Not with `OFFSET_INFO`, which analyzes the document.
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
            match covered_values(&view.columns, &names) {
                Some(values) if values_allowed(view, &values) => Materialize::Values(values),
                _ => continue,
            }
        };
        if let NodeKind::EnumerateView(view) = &mut plan.nodes[i].kind {
            view.materialize = materialize;
            changed = true;
        }
    }
    changed
}
