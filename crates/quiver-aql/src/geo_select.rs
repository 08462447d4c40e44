//! Rule `geo-index-optimizer` (ArangoDB's name): a collection loop whose documents are sorted by
//! their distance to a reference point and then limited, or filtered by a distance range or by
//! `GEO_CONTAINS` / `GEO_INTERSECTS` against a shape, reads a geo index instead of the whole
//! collection. Recognised, for an index whose fields the expressions name:
//!
//! - `SORT DISTANCE(d.lat, d.lng, lat, lng) [ASC] LIMIT …` (the arguments may come in either
//!   pair order), `SORT GEO_DISTANCE(point, d.geo) LIMIT …` (`[d.lng, d.lat]` for a two-field
//!   index; no ellipsoid or `"sphere"`);
//! - `FILTER <distance> <[=] r` (with an optional `>[=]` lower bound on the same distance);
//! - `FILTER GEO_CONTAINS(shape, d.geo)`, `FILTER GEO_INTERSECTS(shape, d.geo)` (either order).
//!
//! The reference point, radius and shape must not depend on the loop itself (a constant, a
//! bind parameter or an outer variable). The served conjuncts leave the filter and the SORT
//! goes: the index operator evaluates the very expressions it replaced on every candidate, so
//! its answer is the filter's, and streams sorted output in rings of growing radius so that
//! `LIMIT 10` reads ten documents' worth of index, not the collection.
//!
//! As in ArangoDB, documents the index does not hold (no valid coordinates) are never
//! produced by an index scan, while a full scan would give them a `null` distance.

use quiver_core::geo::GeoFields;
use serde_json::Value;

use crate::ast::BinOp;
use crate::expr::{CExpr, Slot};
use crate::index_select::{
    attribute_path, filter_stretch, remove_conjuncts, FilterStretch, IndexCatalog,
};
use crate::plan::{GeoOrigin, GeoSearch, IndexScan, NodeKind, Plan};
use crate::source::IndexMeta;

/// A geo index and how it reads documents.
struct GeoView<'a> {
    meta: &'a IndexMeta,
    fields: GeoFields,
    legacy: bool,
}

fn call<'e>(e: &'e CExpr, name: &str) -> Option<&'e [CExpr]> {
    match e {
        CExpr::Call(def, args) if def.name == name => Some(args),
        _ => None,
    }
}

/// `d.path[n]` → n.
fn element(e: &CExpr, var: Slot, path: &str) -> Option<u64> {
    let CExpr::Index(base, idx) = e else {
        return None;
    };
    if attribute_path(base, var).as_deref() != Some(path) {
        return None;
    }
    match &**idx {
        CExpr::Const(Value::Number(n)) => n.as_u64(),
        _ => None,
    }
}

impl GeoView<'_> {
    /// Whether (a, b) are the document's latitude and longitude as this index reads them.
    fn lat_lng(&self, var: Slot, a: &CExpr, b: &CExpr) -> bool {
        match &self.fields {
            GeoFields::Two { lat, lng } => {
                attribute_path(a, var).as_deref() == Some(lat.as_str())
                    && attribute_path(b, var).as_deref() == Some(lng.as_str())
            }
            GeoFields::One { path, geo_json } => {
                // `[lat, lng]` without geoJson, `[lng, lat]` with it.
                let (ia, ib) = if *geo_json { (1, 0) } else { (0, 1) };
                element(a, var, path) == Some(ia) && element(b, var, path) == Some(ib)
            }
        }
    }

    /// Whether `e` is the document's shape as GeoJSON (what GEO_* functions take).
    fn shape(&self, var: Slot, e: &CExpr) -> bool {
        match &self.fields {
            GeoFields::One {
                path,
                geo_json: true,
            } => !self.legacy && attribute_path(e, var).as_deref() == Some(path.as_str()),
            GeoFields::Two { lat, lng } => matches!(e, CExpr::Array(items)
                if items.len() == 2
                    && attribute_path(&items[0], var).as_deref() == Some(lng.as_str())
                    && attribute_path(&items[1], var).as_deref() == Some(lat.as_str())),
            GeoFields::One { .. } => false,
        }
    }

    /// The reference point when `e` is a distance between the document and it.
    fn distance(
        &self,
        var: Slot,
        e: &CExpr,
        available: &dyn Fn(&CExpr) -> bool,
    ) -> Option<GeoOrigin> {
        if let Some(args) = call(e, "DISTANCE") {
            if args.len() != 4 {
                return None;
            }
            if self.lat_lng(var, &args[0], &args[1]) && available(&args[2]) && available(&args[3]) {
                return Some(GeoOrigin::LatLng(args[2].clone(), args[3].clone()));
            }
            if self.lat_lng(var, &args[2], &args[3]) && available(&args[0]) && available(&args[1]) {
                return Some(GeoOrigin::LatLng(args[0].clone(), args[1].clone()));
            }
            return None;
        }
        let args = call(e, "GEO_DISTANCE")?;
        // The index's cells are spherical; an ellipsoid distance is left to a full scan.
        let sphere = match args.get(2) {
            None | Some(CExpr::Const(Value::Null)) => true,
            Some(CExpr::Const(Value::String(s))) => s == "sphere",
            Some(_) => false,
        };
        if !sphere || args.len() < 2 {
            return None;
        }
        if self.shape(var, &args[1]) && available(&args[0]) {
            return Some(GeoOrigin::Shape(args[0].clone()));
        }
        if self.shape(var, &args[0]) && available(&args[1]) {
            return Some(GeoOrigin::Shape(args[1].clone()));
        }
        None
    }

    /// The region shape when `e` is a containment or intersection test of the document.
    fn region(&self, var: Slot, e: &CExpr, available: &dyn Fn(&CExpr) -> bool) -> Option<CExpr> {
        if let Some(args) = call(e, "GEO_CONTAINS") {
            if args.len() == 2 && self.shape(var, &args[1]) && available(&args[0]) {
                return Some(args[0].clone());
            }
            return None;
        }
        let args = call(e, "GEO_INTERSECTS")?;
        if args.len() != 2 {
            return None;
        }
        if self.shape(var, &args[1]) && available(&args[0]) {
            return Some(args[0].clone());
        }
        if self.shape(var, &args[0]) && available(&args[1]) {
            return Some(args[1].clone());
        }
        None
    }
}

/// Expressions compared structurally. `CExpr` has no `PartialEq` (it holds function
/// pointers); its derived `Debug` text names every node, slot and constant, which is exactly
/// the identity needed here.
fn same(a: &CExpr, b: &CExpr) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

/// One filter conjunct the index may serve.
enum Served {
    Bound(Box<BoundOn>),
    Shape(CExpr),
}

/// `distance <op> value`.
struct BoundOn {
    distance: CExpr,
    origin: GeoOrigin,
    lower: bool,
    value: CExpr,
    inclusive: bool,
}

fn classify(
    view: &GeoView<'_>,
    var: Slot,
    e: &CExpr,
    available: &dyn Fn(&CExpr) -> bool,
) -> Option<Served> {
    if let Some(region) = view.region(var, e, available) {
        return Some(Served::Shape(region));
    }
    let CExpr::Binary(op, a, b) = e else {
        return None;
    };
    let (distance, origin, value, op) = if let Some(origin) = view.distance(var, a, available) {
        if !available(b) {
            return None;
        }
        ((**a).clone(), origin, (**b).clone(), *op)
    } else {
        let origin = view.distance(var, b, available)?;
        if !available(a) {
            return None;
        }
        let flipped = match op {
            BinOp::Lt => BinOp::Gt,
            BinOp::Le => BinOp::Ge,
            BinOp::Gt => BinOp::Lt,
            BinOp::Ge => BinOp::Le,
            _ => return None,
        };
        ((**b).clone(), origin, (**a).clone(), flipped)
    };
    let (lower, inclusive) = match op {
        BinOp::Lt => (false, false),
        BinOp::Le => (false, true),
        BinOp::Gt => (true, false),
        BinOp::Ge => (true, true),
        _ => return None,
    };
    Some(Served::Bound(Box::new(BoundOn {
        distance,
        origin,
        lower,
        value,
        inclusive,
    })))
}

/// Applies the rule to every collection loop of `plan`; true when one changed.
pub fn use_geo_indexes(plan: &mut Plan, catalog: &IndexCatalog) -> bool {
    let mut changed = false;
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
        let views: Vec<GeoView<'_>> = indexes
            .iter()
            .filter(|ix| matches!(ix.kind.as_str(), "geo" | "geo1" | "geo2"))
            .filter(|ix| hint.is_none_or(|h| !h.force || h.names.contains(&ix.name)))
            .filter_map(|ix| {
                Some(GeoView {
                    meta: ix,
                    fields: GeoFields::from_definition(&ix.description)?,
                    legacy: ix
                        .description
                        .get("legacyPolygons")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                })
            })
            .collect();
        if views.is_empty() {
            i += 1;
            continue;
        }
        let FilterStretch {
            end,
            conjuncts: parts,
            later,
        } = filter_stretch(plan, i);
        let available = |e: &CExpr| e.is_deterministic() && e.vars().is_disjoint(&later);
        // `SORT <distance> ASC` right after the stretch, followed by a LIMIT.
        let sort_expr = match (plan.nodes.get(end), plan.nodes.get(end + 1)) {
            (Some(sort), Some(limit)) => match (&sort.kind, &limit.kind) {
                (NodeKind::Sort { keys, .. }, NodeKind::Limit { .. })
                    if keys.len() == 1 && keys[0].1 =>
                {
                    (i + 1..end).find_map(|c| match &plan.nodes[c].kind {
                        NodeKind::Calculation { out, expr } if *out == keys[0].0 => {
                            Some(expr.clone())
                        }
                        _ => None,
                    })
                }
                _ => None,
            },
            _ => None,
        };
        let mut chosen: Option<(&IndexMeta, GeoSearch, Vec<usize>)> = None;
        for view in &views {
            let served: Vec<Option<Served>> = parts
                .iter()
                .map(|p| classify(view, var, &p.expr, &available))
                .collect();
            let sort = sort_expr
                .as_ref()
                .and_then(|e| view.distance(var, e, &available).map(|o| (e.clone(), o)));
            // The distance the search is about: the sorted one, else one with an upper bound.
            let distance = sort.clone().or_else(|| {
                served.iter().find_map(|s| match s {
                    Some(Served::Bound(b)) if !b.lower => {
                        Some((b.distance.clone(), b.origin.clone()))
                    }
                    _ => None,
                })
            });
            let mut search = GeoSearch {
                distance: None,
                sort: sort.is_some(),
                lower: None,
                upper: None,
                shape_filters: Vec::new(),
                region: None,
            };
            let mut used = Vec::new();
            for (k, s) in served.iter().enumerate() {
                match s {
                    Some(Served::Bound(b)) => {
                        let BoundOn {
                            distance: d,
                            lower,
                            value,
                            inclusive,
                            ..
                        } = &**b;
                        let Some((dist, _)) = &distance else { continue };
                        if !same(d, dist) {
                            continue;
                        }
                        let slot = if *lower {
                            &mut search.lower
                        } else {
                            &mut search.upper
                        };
                        // A second bound of the same kind stays in the filter.
                        if slot.is_none() {
                            *slot = Some((value.clone(), *inclusive));
                            used.push(k);
                        }
                    }
                    Some(Served::Shape(region)) => {
                        search.shape_filters.push(parts[k].expr.clone());
                        if search.region.is_none() {
                            search.region = Some(region.clone());
                        }
                        used.push(k);
                    }
                    None => {}
                }
            }
            search.distance = distance;
            if search.sort || search.upper.is_some() || search.region.is_some() {
                chosen = Some((view.meta, search, used));
                break;
            }
        }
        let Some((meta, search, used)) = chosen else {
            i += 1;
            continue;
        };
        let sorted = search.sort;
        let estimated_items = if sorted || search.region.is_none() && search.upper.is_none() {
            *count as f64
        } else {
            (*count as f64 * 0.1).max(1.0)
        };
        let scan = IndexScan {
            out: var,
            collection: collection.clone(),
            index: meta.clone(),
            eq: Vec::new(),
            lower: None,
            upper: None,
            reverse: false,
            sorted,
            condition: used.iter().map(|&u| parts[u].expr.clone()).collect(),
            estimated_items,
            projections: None,
            geo: Some(Box::new(search)),
            mdi: None,
            inverted: None,
        };
        remove_conjuncts(plan, used.iter().map(|&u| (parts[u].calc, parts[u].part)));
        plan.nodes[i].kind = NodeKind::IndexScan(Box::new(scan));
        if sorted {
            plan.nodes.remove(end);
        }
        changed = true;
        i += 1;
    }
    changed
}
