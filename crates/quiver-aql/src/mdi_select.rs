//! Multi-dimensional indexes in rule `use-indexes`: a collection loop the persistent-index
//! selection left alone, whose FILTER bounds attributes an `mdi` / `mdi-prefixed` / `zkd`
//! index covers, reads that index instead of the whole collection. As in ArangoDB 3.12:
//!
//! - conjuncts `d.field OP value` (either side) with OP one of `==`, `<`, `<=`, `>`, `>=` and
//!   a value not depending on the loop (constant, bind parameter, outer variable);
//! - at least one bounded dimension, and `==` on every prefix field of an mdi-prefixed index;
//! - the served conjuncts leave the filter: the index answers exactly (the operator turns the
//!   bounds into a box with AQL's order, so `d.x < "a"` bounds nothing, `d.x > "a"` is empty);
//! - a sparse index leaves out documents whose dimensions are missing or null, which an upper
//!   bound alone would match: it is used only when every bounded dimension has a constant
//!   numeric lower bound (or `==`), and its prefix values are constant and not null;
//! - an mdi index never serves a SORT. Among several fitting indexes, the one answering the
//!   most conjuncts wins (then the most bounded dimensions, then creation order).

use crate::expr::CExpr;
use crate::index_select::{classify, filter_stretch, remove_conjuncts, Cmp, IndexCatalog};
use crate::plan::{DimBounds, IndexScan, MdiSearch, NodeKind, Plan};
use crate::source::IndexMeta;
use serde_json::Value;

fn is_mdi(kind: &str) -> bool {
    matches!(kind, "mdi" | "mdi-prefixed" | "zkd")
}

fn prefix_fields(ix: &IndexMeta) -> Vec<String> {
    ix.description
        .get("prefixFields")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// How index `ix` would serve the classified conjuncts: its search, the conjuncts used and
/// the number of bounded dimensions; None when it cannot.
fn fit(ix: &IndexMeta, conds: &[Option<(String, Cmp)>]) -> Option<(MdiSearch, Vec<usize>, usize)> {
    let prefix_fields = prefix_fields(ix);
    let mut used = Vec::new();
    let mut prefix = Vec::with_capacity(prefix_fields.len());
    for field in &prefix_fields {
        let (k, value) = conds.iter().enumerate().find_map(|(k, c)| match c {
            Some((path, Cmp::Eq(v))) if path == field => Some((k, v.clone())),
            _ => None,
        })?;
        if ix.sparse && !matches!(&value, CExpr::Const(v) if !v.is_null()) {
            return None;
        }
        used.push(k);
        prefix.push(value);
    }
    let mut dims = vec![DimBounds::default(); ix.fields.len()];
    for (k, c) in conds.iter().enumerate() {
        let Some((path, cmp)) = c else { continue };
        let Some(d) = ix.fields.iter().position(|f| f == path) else {
            continue;
        };
        if used.contains(&k) {
            continue;
        }
        match cmp {
            Cmp::Eq(v) => {
                dims[d].lower.push((v.clone(), true));
                dims[d].upper.push((v.clone(), true));
            }
            Cmp::Lower(v, inclusive) => dims[d].lower.push((v.clone(), *inclusive)),
            Cmp::Upper(v, inclusive) => dims[d].upper.push((v.clone(), *inclusive)),
            Cmp::In(_) | Cmp::Contains(_) => continue,
        }
        used.push(k);
    }
    let bounded = dims
        .iter()
        .filter(|d| !d.lower.is_empty() || !d.upper.is_empty())
        .count();
    if bounded == 0 {
        return None;
    }
    if ix.sparse {
        // Every bounded dimension must exclude missing and null values by a numeric constant.
        let numeric_lower = |d: &DimBounds| {
            d.lower
                .iter()
                .any(|(e, _)| matches!(e, CExpr::Const(Value::Number(_))))
        };
        if dims
            .iter()
            .any(|d| (!d.lower.is_empty() || !d.upper.is_empty()) && !numeric_lower(d))
        {
            return None;
        }
    }
    Some((
        MdiSearch {
            prefix,
            dims,
            fields: ix.fields.clone(),
            prefix_fields,
            sparse: ix.sparse,
        },
        used,
        bounded,
    ))
}

/// Applies mdi indexes to the collection loops of `plan` no other index took; returns
/// whether one changed and whether conjuncts were removed from filters.
pub fn use_mdi_indexes(plan: &mut Plan, catalog: &IndexCatalog) -> (bool, bool) {
    let (mut changed, mut covered) = (false, false);
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
        let candidates: Vec<&IndexMeta> = indexes
            .iter()
            .filter(|ix| is_mdi(&ix.kind))
            .filter(|ix| hint.is_none_or(|h| !h.force || h.names.contains(&ix.name)))
            .collect();
        if candidates.is_empty() {
            i += 1;
            continue;
        }
        let stretch = filter_stretch(plan, i);
        let later = stretch.later.clone();
        let available = |e: &CExpr| e.is_deterministic() && e.vars().is_disjoint(&later);
        let conds: Vec<Option<(String, Cmp)>> = stretch
            .conjuncts
            .iter()
            .map(|c| classify(&c.expr, var, &available))
            .collect();
        let mut best: Option<(&IndexMeta, MdiSearch, Vec<usize>, usize)> = None;
        for ix in candidates {
            if let Some((search, used, bounded)) = fit(ix, &conds) {
                // The index answering the most conjuncts (prefix equalities included).
                if best
                    .as_ref()
                    .is_none_or(|b| (used.len(), bounded) > (b.2.len(), b.3))
                {
                    best = Some((ix, search, used, bounded));
                }
            }
        }
        let Some((ix, search, used, bounded)) = best else {
            i += 1;
            continue;
        };
        // A unique index with every dimension fixed holds one document; otherwise each
        // bounded dimension is taken to keep a third.
        let all_fixed = search
            .dims
            .iter()
            .all(|d| d.lower.iter().any(|l| l.1) && d.upper.iter().any(|u| u.1));
        let estimated_items = if ix.unique && all_fixed {
            1.0
        } else {
            (*count as f64 * (1.0f64 / 3.0).powi(bounded as i32)).max(1.0)
        };
        let scan = IndexScan {
            out: var,
            collection: collection.clone(),
            index: ix.clone(),
            eq: Vec::new(),
            lower: None,
            upper: None,
            reverse: false,
            sorted: false,
            condition: used
                .iter()
                .map(|&u| stretch.conjuncts[u].expr.clone())
                .collect(),
            estimated_items,
            projections: None,
            geo: None,
            mdi: Some(Box::new(search)),
            inverted: None,
        };
        if remove_conjuncts(
            plan,
            used.iter()
                .map(|&u| (stretch.conjuncts[u].calc, stretch.conjuncts[u].part)),
        ) {
            covered = true;
        }
        plan.nodes[i].kind = NodeKind::IndexScan(Box::new(scan));
        changed = true;
        i += 1;
    }
    (changed, covered)
}
