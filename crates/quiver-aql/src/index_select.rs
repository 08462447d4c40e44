//! Secondary-index selection (rules `use-indexes`, `remove-filter-covered-by-index`,
//! `use-index-for-sort`): turns `FOR d IN c FILTER … SORT …` into an `IndexNode` over a
//! persistent index when one serves the filter (equality and `IN` on a prefix of the index
//! fields, then a range on the next one; `x IN d.tags` for `tags[*]` fields) or the sort.
//!
//! Candidates are costed from the collection size and each index's selectivity estimate
//! (entries per distinct value); the cheapest wins, an index that also delivers the SORT order
//! getting the sort's cost as a bonus. Sparse indexes are only used when the conditions on all
//! their fields exclude null (constants known at plan time), since they leave such documents
//! out. `indexHint` / `forceIndexHint` in `FOR … OPTIONS` restrict the choice.
//!
//! The primary index takes part as one more candidate ([`primary_index`]: unique, one field
//! `_key`), so `_key` ranges and `SORT d._key` (ascending or descending) become an
//! `IndexNode` over it; the data source answers its lookups in AQL order (quiver-core's
//! `key_range.rs`). Equality and `IN` on `_key`/`_id` are taken earlier by the optimizer's
//! `PrimaryIndex` candidate.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::ast::BinOp;
use crate::expr::{CExpr, Slot};
use crate::plan::{EqCond, IndexHint, IndexScan, NodeKind, Plan};
use crate::source::IndexMeta;

/// The indexes and sizes of the collections a query reads, fetched when it is planned.
#[derive(Clone, Debug, Default)]
pub struct IndexCatalog {
    /// Collection name → (document count, usable indexes).
    pub collections: HashMap<String, (u64, Vec<IndexMeta>)>,
    /// Loop variable slot → its `indexHint` options.
    pub hints: HashMap<Slot, IndexHint>,
    /// The analyzers named by the inverted indexes above (as their definitions name them)
    /// that are `geojson` or `geopoint` analyzers: fields with these serve geo functions.
    pub geo_analyzers: HashSet<String>,
}

/// The primary index as an index-selection candidate (id 0, as ArangoDB numbers it).
pub fn primary_index() -> IndexMeta {
    IndexMeta {
        id: quiver_core::PRIMARY_INDEX_ID,
        name: "primary".to_string(),
        kind: "primary".to_string(),
        fields: vec!["_key".to_string()],
        unique: true,
        sparse: false,
        selectivity: 1.0,
        description: serde_json::json!({
            "id": "0", "type": "primary", "name": "primary", "fields": ["_key"],
            "unique": true, "sparse": false, "selectivityEstimate": 1
        }),
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Cmp {
    Eq(CExpr),
    In(CExpr),
    /// `value IN doc.path` (served by a `path[*]` field).
    Contains(CExpr),
    Lower(CExpr, bool),
    Upper(CExpr, bool),
}

#[derive(Clone, Debug)]
struct Cond {
    calc: usize,
    part: usize,
    path: String,
    cmp: Cmp,
    expr: CExpr,
}

/// `doc.a.b` → "a.b" when the chain starts at `var`.
pub fn attribute_path(e: &CExpr, var: Slot) -> Option<String> {
    match e {
        CExpr::Attribute(base, name) => match &**base {
            CExpr::Var(s) if *s == var => Some(name.clone()),
            other => attribute_path(other, var).map(|p| format!("{p}.{name}")),
        },
        _ => None,
    }
}

pub(crate) fn classify(
    e: &CExpr,
    var: Slot,
    available: &dyn Fn(&CExpr) -> bool,
) -> Option<(String, Cmp)> {
    let CExpr::Binary(op, a, b) = e else {
        return None;
    };
    let (pa, pb) = (attribute_path(a, var), attribute_path(b, var));
    let flipped = |op: BinOp| match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Le => BinOp::Ge,
        BinOp::Gt => BinOp::Lt,
        BinOp::Ge => BinOp::Le,
        other => other,
    };
    let (path, op, value) = match (pa, pb) {
        (Some(p), None) if available(b) => (p, *op, (**b).clone()),
        (None, Some(p)) if available(a) => {
            if *op == BinOp::In {
                return Some((p, Cmp::Contains((**a).clone())));
            }
            (p, flipped(*op), (**a).clone())
        }
        _ => return None,
    };
    let cmp = match op {
        BinOp::Eq => Cmp::Eq(value),
        BinOp::In => Cmp::In(value),
        BinOp::Gt => Cmp::Lower(value, false),
        BinOp::Ge => Cmp::Lower(value, true),
        BinOp::Lt => Cmp::Upper(value, false),
        BinOp::Le => Cmp::Upper(value, true),
        _ => return None,
    };
    Some((path, cmp))
}

/// The operands of a chain of `&&` (the expression itself when it is no `&&`).
pub(crate) fn conjuncts(e: &CExpr, out: &mut Vec<CExpr>) {
    match e {
        CExpr::Binary(BinOp::And, a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        other => out.push(other.clone()),
    }
}

/// `a && b && …` of `parts`; `true` when none is left.
pub(crate) fn rebuild_and(parts: Vec<CExpr>) -> CExpr {
    let mut iter = parts.into_iter();
    let Some(mut e) = iter.next() else {
        return CExpr::Const(Value::Bool(true));
    };
    for p in iter {
        e = CExpr::Binary(BinOp::And, Box::new(e), Box::new(p));
    }
    e
}

/// One conjunct of a filter condition in the stretch after a collection loop.
pub(crate) struct Conjunct {
    /// The calculation node computing the filter's condition.
    pub calc: usize,
    /// The conjunct's position in that condition.
    pub part: usize,
    pub expr: CExpr,
}

/// What the index rules look at after the collection loop at node `i`: the stretch of
/// calculations and filters right after it (ending before node `end`), the conjuncts of those
/// filters whose condition nothing else reads (so conjuncts may be removed), and the slots
/// written from the loop on (an expression reading one is not available to an index lookup).
pub(crate) struct FilterStretch {
    pub end: usize,
    pub conjuncts: Vec<Conjunct>,
    pub later: HashSet<Slot>,
}

pub(crate) fn filter_stretch(plan: &Plan, i: usize) -> FilterStretch {
    let mut later: HashSet<Slot> = HashSet::new();
    for n in &plan.nodes[i..] {
        later.extend(n.kind.writes());
    }
    let mut end = i + 1;
    while end < plan.nodes.len()
        && matches!(
            plan.nodes[end].kind,
            NodeKind::Calculation { .. } | NodeKind::Filter { .. }
        )
    {
        end += 1;
    }
    let mut out = Vec::new();
    for j in i + 1..end {
        let NodeKind::Filter { input } = plan.nodes[j].kind else {
            continue;
        };
        let Some(ci) = (i + 1..j).find(
            |&c| matches!(&plan.nodes[c].kind, NodeKind::Calculation { out, .. } if *out == input),
        ) else {
            continue;
        };
        // A filter value that something else also reads cannot lose its conjuncts.
        let other_readers = plan
            .nodes
            .iter()
            .enumerate()
            .filter(|(k, n)| *k != j && n.kind.reads().contains(&input))
            .count();
        if other_readers > 0 {
            continue;
        }
        let NodeKind::Calculation { expr, .. } = &plan.nodes[ci].kind else {
            continue;
        };
        let mut parts = Vec::new();
        conjuncts(expr, &mut parts);
        for (part, expr) in parts.into_iter().enumerate() {
            out.push(Conjunct {
                calc: ci,
                part,
                expr,
            });
        }
    }
    FilterStretch {
        end,
        conjuncts: out,
        later,
    }
}

/// Removes the conjuncts at `(calculation node, position)` from their calculations (an index
/// answers them). Returns whether any was removed.
pub(crate) fn remove_conjuncts(
    plan: &mut Plan,
    served: impl IntoIterator<Item = (usize, usize)>,
) -> bool {
    let mut by_calc: HashMap<usize, HashSet<usize>> = HashMap::new();
    for (calc, part) in served {
        by_calc.entry(calc).or_default().insert(part);
    }
    let removed = !by_calc.is_empty();
    for (ci, parts_used) in by_calc {
        if let NodeKind::Calculation { expr, .. } = &mut plan.nodes[ci].kind {
            let mut parts = Vec::new();
            conjuncts(expr, &mut parts);
            let rest: Vec<CExpr> = parts
                .into_iter()
                .enumerate()
                .filter(|(pi, _)| !parts_used.contains(pi))
                .map(|(_, p)| p)
                .collect();
            *expr = rebuild_and(rest);
        }
    }
    removed
}

struct Match {
    eq: Vec<(EqCond, usize)>,
    /// Whether each eq field holds a single value (not an IN list).
    single: Vec<bool>,
    lower: Option<(CExpr, bool, usize)>,
    upper: Option<(CExpr, bool, usize)>,
}

impl Match {
    fn used(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self.eq.iter().map(|e| e.1).collect();
        v.extend(self.lower.iter().map(|l| l.2));
        v.extend(self.upper.iter().map(|u| u.2));
        v
    }
}

fn non_null_const(e: &CExpr) -> bool {
    matches!(e, CExpr::Const(v) if !v.is_null())
}

fn match_index(ix: &IndexMeta, conds: &[Cond]) -> Option<Match> {
    let mut m = Match {
        eq: Vec::new(),
        single: Vec::new(),
        lower: None,
        upper: None,
    };
    let mut sparse_ok = true;
    let mut covered_fields = 0;
    for field in &ix.fields {
        if let Some(base) = field.strip_suffix("[*]") {
            if base.contains("[*]") {
                break;
            }
            let Some((i, c)) = conds
                .iter()
                .enumerate()
                .find(|(_, c)| c.path == base && matches!(c.cmp, Cmp::Contains(_)))
            else {
                break;
            };
            let Cmp::Contains(v) = &c.cmp else { break };
            sparse_ok &= non_null_const(v);
            m.eq.push((EqCond::Eq(v.clone()), i));
            m.single.push(true);
            covered_fields += 1;
            continue;
        }
        if field.contains("[*]") {
            break;
        }
        let on_field = |want: fn(&Cmp) -> bool| {
            conds
                .iter()
                .enumerate()
                .find(|(_, c)| &c.path == field && want(&c.cmp))
        };
        if let Some((i, c)) = on_field(|c| matches!(c, Cmp::Eq(_))) {
            let Cmp::Eq(v) = &c.cmp else { break };
            sparse_ok &= non_null_const(v);
            m.eq.push((EqCond::Eq(v.clone()), i));
            m.single.push(true);
            covered_fields += 1;
            continue;
        }
        if let Some((i, c)) = on_field(|c| matches!(c, Cmp::In(_))) {
            let Cmp::In(v) = &c.cmp else { break };
            sparse_ok &=
                matches!(v, CExpr::Const(Value::Array(a)) if a.iter().all(|x| !x.is_null()));
            m.eq.push((EqCond::In(v.clone()), i));
            m.single.push(false);
            covered_fields += 1;
            continue;
        }
        if let Some((i, c)) = on_field(|c| matches!(c, Cmp::Lower(..))) {
            if let Cmp::Lower(v, incl) = &c.cmp {
                m.lower = Some((v.clone(), *incl, i));
            }
        }
        if let Some((i, c)) = on_field(|c| matches!(c, Cmp::Upper(..))) {
            if let Cmp::Upper(v, incl) = &c.cmp {
                m.upper = Some((v.clone(), *incl, i));
            }
        }
        if m.lower.is_some() || m.upper.is_some() {
            covered_fields += 1;
            // Null is the smallest value: only a lower bound can exclude it.
            sparse_ok &= match &m.lower {
                Some((CExpr::Const(v), incl, _)) => !*incl || !v.is_null(),
                _ => false,
            };
        }
        break;
    }
    if m.eq.is_empty() && m.lower.is_none() && m.upper.is_none() {
        return None;
    }
    if ix.sparse && (!sparse_ok || covered_fields < ix.fields.len()) {
        return None;
    }
    Some(m)
}

/// Documents per lookup and number of lookups, from the selectivity estimate.
fn estimate(ix: &IndexMeta, m: &Match, count: u64) -> f64 {
    let n = (count as f64).max(1.0);
    let distinct = (ix.selectivity * n).max(1.0);
    let k = m.eq.len() as f64;
    let fields = ix.fields.len() as f64;
    let mut items = if m.eq.is_empty() {
        n
    } else if m.eq.len() == ix.fields.len() {
        if ix.unique {
            1.0
        } else {
            n / distinct
        }
    } else {
        n / distinct.powf(k / fields)
    };
    match (&m.lower, &m.upper) {
        (Some(_), Some(_)) => items *= 0.25,
        (Some(_), None) | (None, Some(_)) => items *= 0.5,
        _ => {}
    }
    let lookups: f64 =
        m.eq.iter()
            .map(|(c, _)| match c {
                EqCond::In(CExpr::Const(Value::Array(a))) => a.len().max(1) as f64,
                EqCond::In(_) => 10.0,
                EqCond::Eq(_) => 1.0,
            })
            .product();
    (items * lookups).max(if ix.unique && m.eq.len() == ix.fields.len() {
        lookups
    } else {
        0.0
    })
}

/// Whether walking `ix` (with the equality fields of `m`) yields `sort` order; returns the
/// direction (true = descending).
fn serves_sort(ix: &IndexMeta, m: Option<&Match>, sort: &[(String, bool)]) -> Option<bool> {
    if sort.is_empty() || ix.fields.iter().any(|f| f.contains("[*]")) {
        return None;
    }
    let ascending = sort[0].1;
    if sort.iter().any(|s| s.1 != ascending) {
        return None;
    }
    let single = |i: usize| m.is_some_and(|m| m.single.get(i).copied().unwrap_or(false));
    let mut j = 0;
    for (i, field) in ix.fields.iter().enumerate() {
        if j == sort.len() {
            break;
        }
        if sort[j].0 == *field {
            j += 1;
        } else if single(i) {
            continue;
        } else {
            return None;
        }
    }
    (j == sort.len()).then_some(!ascending)
}

/// Returns (an index replaced a scan, filter conditions were covered, a sort was removed).
pub fn use_secondary_indexes(plan: &mut Plan, catalog: &IndexCatalog) -> (bool, bool, bool) {
    let (mut changed, mut covered, mut sorted) = (false, false, false);
    let mut i = 1;
    while i < plan.nodes.len() {
        let NodeKind::EnumerateCollection {
            out: var,
            collection,
            ..
        } = plan.nodes[i].kind.clone()
        else {
            i += 1;
            continue;
        };
        let Some((count, indexes)) = catalog.collections.get(&collection) else {
            i += 1;
            continue;
        };
        let hint = catalog.hints.get(&var);
        let FilterStretch {
            end,
            conjuncts: parts,
            later,
        } = filter_stretch(plan, i);
        let available = |e: &CExpr| e.is_deterministic() && e.vars().is_disjoint(&later);
        let conds: Vec<Cond> = parts
            .into_iter()
            .filter_map(|p| {
                let (path, cmp) = classify(&p.expr, var, &available)?;
                Some(Cond {
                    calc: p.calc,
                    part: p.part,
                    path,
                    cmp,
                    expr: p.expr,
                })
            })
            .collect();
        // A SORT right after the stretch, over attributes of the loop variable.
        // Only a loop with no loop before it produces rows in its own order: behind an outer
        // loop, a SORT orders the rows of all its iterations together.
        let outermost = plan.nodes[..i]
            .iter()
            .all(|n| matches!(n.kind, NodeKind::Singleton | NodeKind::Calculation { .. }));
        let sort_at = (outermost && end < plan.nodes.len())
            .then(|| match &plan.nodes[end].kind {
                NodeKind::Sort { keys, .. } => {
                    let mut out = Vec::new();
                    for (slot, asc) in keys {
                        let calc = (i + 1..end).find_map(|c| match &plan.nodes[c].kind {
                            NodeKind::Calculation { out, expr } if out == slot => Some(expr),
                            _ => None,
                        })?;
                        out.push((attribute_path(calc, var)?, *asc));
                    }
                    Some(out)
                }
                _ => None,
            })
            .flatten();
        let sort_cost = {
            let n = (*count as f64).max(2.0);
            n * n.log2()
        };
        let mut best: Option<(f64, &IndexMeta, Option<Match>, Option<bool>)> = None;
        for ix in indexes {
            // Geo, fulltext and ttl indexes have no value order to look up in.
            if !matches!(
                ix.kind.as_str(),
                "persistent" | "hash" | "skiplist" | "primary"
            ) {
                continue;
            }
            if let Some(h) = hint {
                if h.force && !h.names.contains(&ix.name) {
                    continue;
                }
            }
            let m = match_index(ix, &conds);
            let order = sort_at
                .as_deref()
                .and_then(|s| serves_sort(ix, m.as_ref(), s));
            let mut cost = match &m {
                Some(m) => estimate(ix, m, *count),
                // Only the sort: a full walk of a non-sparse index instead of scan + sort.
                // The primary index's walk for a sort alone is left to a geo index, which
                // `geo-index-optimizer` (after this rule) may use for the filter.
                None if ix.kind == "primary"
                    && indexes.iter().any(|g| g.kind.starts_with("geo")) =>
                {
                    continue
                }
                // The primary index's walk for a sort alone: only when no index serves the
                // filter (it then costs what the scan and sort it replaces cost).
                None if order.is_some() && ix.kind == "primary" => 1e300,
                None if order.is_some() && !ix.sparse => *count as f64,
                None => continue,
            };
            if order.is_some() {
                cost -= sort_cost;
            }
            // A hinted index wins over unhinted ones, earlier hints over later ones.
            if let Some(h) = hint {
                if let Some(pos) = h.names.iter().position(|n| *n == ix.name) {
                    cost = -1e18 + pos as f64;
                }
            }
            // Ties: a unique index, then the one serving more conditions, then the older.
            let rank = |cost: f64, ix: &IndexMeta, m: &Option<Match>| {
                (
                    cost,
                    !ix.unique,
                    usize::MAX - m.as_ref().map_or(0, |m| m.used().len()),
                    ix.id,
                )
            };
            let better = match &best {
                None => true,
                Some((c, b, bm, _)) => {
                    rank(cost, ix, &m).partial_cmp(&rank(*c, b, bm))
                        == Some(std::cmp::Ordering::Less)
                }
            };
            if better {
                best = Some((cost, ix, m, order));
            }
        }
        let Some((_, ix, m, order)) = best else {
            i += 1;
            continue;
        };
        let used = m.as_ref().map(Match::used).unwrap_or_default();
        let mut scan = IndexScan {
            out: var,
            collection: collection.clone(),
            index: ix.clone(),
            eq: Vec::new(),
            lower: None,
            upper: None,
            reverse: order.unwrap_or(false),
            sorted: order.is_some(),
            condition: used.iter().map(|&u| conds[u].expr.clone()).collect(),
            estimated_items: 0.0,
            projections: None,
            geo: None,
            mdi: None,
            inverted: None,
        };
        if let Some(m) = &m {
            scan.estimated_items = estimate(ix, m, *count);
            scan.eq = m.eq.iter().map(|e| e.0.clone()).collect();
            scan.lower = m.lower.as_ref().map(|l| (l.0.clone(), l.1));
            scan.upper = m.upper.as_ref().map(|u| (u.0.clone(), u.1));
        } else {
            scan.estimated_items = *count as f64;
        }
        // Remove the covered conjuncts from their calculations.
        if remove_conjuncts(plan, used.iter().map(|&u| (conds[u].calc, conds[u].part))) {
            covered = true;
        }
        plan.nodes[i].kind = NodeKind::IndexScan(Box::new(scan));
        changed = true;
        if order.is_some() {
            plan.nodes.remove(end);
            sorted = true;
        }
        i += 1;
    }
    (changed, covered, sorted)
}

/// Whether a persistent index (by its description: non-expanded `fields`, `storedValues`)
/// can produce documents holding just the top-level attributes `names`.
pub fn covers(index: &IndexMeta, names: &std::collections::BTreeSet<String>) -> bool {
    // The primary index holds no values to build documents from (its lookups read them).
    if index.kind == "primary" || index.fields.iter().any(|f| f.contains("[*]")) {
        return false;
    }
    let stored: Vec<&str> = index
        .description
        .get("storedValues")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    names.iter().all(|n| {
        n == "_key" || n == "_id" || index.fields.contains(n) || stored.contains(&n.as_str())
    })
}

/// Error 1577 when a loop with `forceIndexHint` did not end up using one of its hinted
/// indexes.
pub fn check_forced_hints(plan: &crate::plan::QueryPlan) -> quiver_errors::Result<()> {
    fn uses(plan: &Plan, slot: Slot, names: &[String]) -> Option<bool> {
        for n in &plan.nodes {
            match &n.kind {
                NodeKind::IndexScan(scan) if scan.out == slot => {
                    return Some(names.contains(&scan.index.name))
                }
                NodeKind::EnumerateCollection { out, .. } | NodeKind::Index { out, .. }
                    if *out == slot =>
                {
                    return Some(
                        names.iter().any(|n| n == "primary")
                            && matches!(n.kind, NodeKind::Index { .. }),
                    )
                }
                NodeKind::Subquery { plan: sub, .. } => {
                    if let Some(found) = uses(sub, slot, names) {
                        return Some(found);
                    }
                }
                _ => {}
            }
        }
        None
    }
    for (slot, hint) in &plan.index_hints {
        if hint.force && uses(&plan.root, *slot, &hint.names) == Some(false) {
            return Err(quiver_errors::Error::with_message(
                quiver_errors::ErrorCode::QueryForcedIndexHintUnusable,
                format!(
                    "could not use index hint to serve query; {}",
                    serde_json::json!({"forced": true, "hint": hint.names, "lookahead": 1, "type": "simple"})
                ),
            ));
        }
    }
    Ok(())
}
