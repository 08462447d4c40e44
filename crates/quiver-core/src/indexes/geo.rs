//! The geo index structure: documents' shapes filed in cells of a multi-level
//! latitude/longitude grid, answering "which documents may lie in this rectangle".
//!
//! Why this design rather than S2's cube-face Hilbert cells: the queries the index serves
//! (a distance cap, a polygon, a rectangle) are all turned into latitude/longitude rectangles
//! with [`Rect::around_cap`] / [`Rect::bounding`], which already account for the
//! poles and the antimeridian, and candidates are always re-checked exactly against the
//! document, so the cells only need to be a cheap conservative filter. An equirectangular
//! grid gives that with integer arithmetic and ordered keys (a row of cells is one
//! `BTreeMap` range), at the price of cells that narrow towards the poles, which only makes
//! polar cells hold fewer points.
//!
//! Points go into the finest level. A larger shape goes into the finest level at which its
//! bounding rectangle spans at most a few cells, in each of them, so a query visits every
//! level but only the cells under its own rectangle. Entries carry the document's key and
//! revision, per the maintenance protocol of `maintained.rs`.

use std::any::Any;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use quiver_types::Revision;
use serde_json::{Map, Value};

use crate::geo::cells::{cells_of_rect, col_of, col_ranges, row_of};
use crate::geo::{GeoFields, Rect, Shape, ShapeKind};
use crate::indexes::definition::IndexDef;
use crate::indexes::structure::IndexStructure;

/// Finest level: cells of 180/2^14 degrees (about 1.2 km of latitude).
const MAX_LEVEL: u32 = 14;

/// Cells one shape is filed under, at most (bounds the work per write).
const MAX_CELLS_PER_SHAPE: u64 = 16;

/// Row ranges visited per level before a query falls back to walking the whole level.
const MAX_ROWS_PER_LEVEL: u64 = 4096;

fn cell_id(level: u32, row: u64, col: u64) -> u64 {
    (u64::from(level) << 56) | (row << 28) | col
}

/// One geo index's cells.
pub(crate) struct GeoIndex {
    fields: Option<GeoFields>,
    legacy: bool,
    cells: BTreeMap<u64, Vec<(Arc<str>, Revision)>>,
    /// Entries per level, so queries skip empty levels.
    per_level: [usize; MAX_LEVEL as usize + 1],
    entries: usize,
}

impl GeoIndex {
    pub fn new(def: &IndexDef) -> GeoIndex {
        let mut description = serde_json::json!({"fields": def.fields});
        if let Some(v) = def.extra.get("geoJson") {
            description["geoJson"] = v.clone();
        }
        GeoIndex {
            fields: GeoFields::from_definition(&description),
            legacy: def
                .extra
                .get("legacyPolygons")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            cells: BTreeMap::new(),
            per_level: [0; MAX_LEVEL as usize + 1],
            entries: 0,
        }
    }

    fn shape(&self, doc: &Map<String, Value>) -> Option<Shape> {
        // GeoFields reads from a Value; the top-level map is borrowed through a cheap
        // one-attribute wrapper instead of cloning the document.
        let fields = self.fields.as_ref()?;
        let mut wrapper = Map::new();
        let tops: Vec<&str> = match fields {
            GeoFields::One { path, .. } => vec![path.split('.').next().unwrap_or(path)],
            GeoFields::Two { lat, lng } => vec![
                lat.split('.').next().unwrap_or(lat),
                lng.split('.').next().unwrap_or(lng),
            ],
        };
        for top in tops {
            if let Some(v) = doc.get(top) {
                wrapper.insert(top.to_string(), v.clone());
            }
        }
        fields.shape(&Value::Object(wrapper), self.legacy)
    }

    /// The cells a shape is filed under.
    fn cells_for(shape: &Shape) -> Vec<u64> {
        if shape.kind == ShapeKind::Point {
            let (lat, lng) = shape.coords[0][0];
            return vec![cell_id(
                MAX_LEVEL,
                row_of(MAX_LEVEL, lat),
                col_of(MAX_LEVEL, lng),
            )];
        }
        let rect = Rect::bounding(shape);
        let level = (0..=MAX_LEVEL)
            .rev()
            .find(|&l| cells_of_rect(l, &rect) <= MAX_CELLS_PER_SHAPE)
            .unwrap_or(0);
        let mut out = Vec::new();
        for row in row_of(level, rect.lat_lo)..=row_of(level, rect.lat_hi) {
            for (a, b) in col_ranges(level, &rect) {
                for col in a..=b {
                    out.push(cell_id(level, row, col));
                }
            }
        }
        // Distance queries (`GEO_DISTANCE`, sorted-by-distance scans) measure to a shape's
        // centroid, which can lie outside its bounding rectangle (points on one parallel
        // average to a point nearer the pole): filing the centroid's cell too keeps every
        // distance cap's candidates a superset.
        let (lat, lng) = crate::geo::to_lat_lng(shape.centroid());
        if lat.is_finite() && lng.is_finite() {
            let id = cell_id(MAX_LEVEL, row_of(MAX_LEVEL, lat), col_of(MAX_LEVEL, lng));
            if !out.contains(&id) {
                out.push(id);
            }
        }
        out
    }

    /// Key and revision of every entry whose cell meets `rect` (a superset of the documents
    /// whose shape meets it; callers re-check), each once.
    pub fn candidates(&self, rect: &Rect) -> Vec<(Arc<str>, Revision)> {
        let mut seen: HashSet<(Arc<str>, Revision)> = HashSet::new();
        let mut out = Vec::new();
        let mut take = |entries: &Vec<(Arc<str>, Revision)>| {
            for e in entries {
                if seen.insert(e.clone()) {
                    out.push(e.clone());
                }
            }
        };
        for level in 0..=MAX_LEVEL {
            if self.per_level[level as usize] == 0 {
                continue;
            }
            let (r_lo, r_hi) = (row_of(level, rect.lat_lo), row_of(level, rect.lat_hi));
            if r_hi - r_lo + 1 > MAX_ROWS_PER_LEVEL {
                let lo = cell_id(level, 0, 0);
                let hi = cell_id(level + 1, 0, 0);
                for (&id, entries) in self.cells.range(lo..hi) {
                    let row = (id >> 28) & ((1 << 28) - 1);
                    if row >= r_lo && row <= r_hi {
                        take(entries);
                    }
                }
                continue;
            }
            for row in r_lo..=r_hi {
                for (a, b) in col_ranges(level, rect) {
                    for (_, entries) in self
                        .cells
                        .range(cell_id(level, row, a)..=cell_id(level, row, b))
                    {
                        take(entries);
                    }
                }
            }
        }
        out
    }
}

impl IndexStructure for GeoIndex {
    fn insert(&mut self, key: &Arc<str>, rev: Revision, doc: &Map<String, Value>) {
        let Some(shape) = self.shape(doc) else {
            return;
        };
        for id in GeoIndex::cells_for(&shape) {
            self.cells
                .entry(id)
                .or_default()
                .push((Arc::clone(key), rev));
            self.per_level[(id >> 56) as usize] += 1;
            self.entries += 1;
        }
    }

    fn remove(&mut self, key: &str, rev: Revision, doc: &Map<String, Value>) {
        let Some(shape) = self.shape(doc) else {
            return;
        };
        for id in GeoIndex::cells_for(&shape) {
            if let Some(entries) = self.cells.get_mut(&id) {
                if let Some(pos) = entries.iter().position(|(k, r)| &**k == key && *r == rev) {
                    entries.swap_remove(pos);
                    self.per_level[(id >> 56) as usize] -= 1;
                    self.entries -= 1;
                }
                if entries.is_empty() {
                    self.cells.remove(&id);
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.entries
    }

    fn selectivity(&self) -> Option<f64> {
        None
    }

    fn fresh(&self) -> Box<dyn IndexStructure> {
        Box::new(GeoIndex {
            fields: self.fields.clone(),
            legacy: self.legacy,
            cells: BTreeMap::new(),
            per_level: [0; MAX_LEVEL as usize + 1],
            entries: 0,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::{angle, to_vec};
    use rand::{Rng, SeedableRng};
    use serde_json::json;

    fn def(body: Value) -> IndexDef {
        IndexDef::parse(&body, 5).unwrap()
    }

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    fn rev(n: u64) -> Revision {
        Revision(n)
    }

    #[test]
    fn cap_queries_find_every_point_inside() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let mut index = GeoIndex::new(&def(json!({"type": "geo", "fields": ["lat", "lng"]})));
        let mut points = Vec::new();
        for i in 0..3000 {
            let (lat, lng): (f64, f64) = if i % 3 == 0 {
                (rng.gen_range(-90.0..=90.0), rng.gen_range(-180.0..=180.0))
            } else {
                (rng.gen_range(45.0..55.0), rng.gen_range(170.0..=180.0))
            };
            let key: Arc<str> = format!("k{i}").into();
            index.insert(&key, rev(1), &map(json!({"lat": lat, "lng": lng})));
            points.push((key, lat, lng));
        }
        index.insert(&"none".into(), rev(1), &map(json!({"lat": "x"})));
        assert_eq!(index.len(), points.len());
        for _ in 0..200 {
            let (lat, lng) = (rng.gen_range(-90.0..=90.0), rng.gen_range(-180.0..=180.0));
            let radius = rng.gen_range(0.0001..0.5);
            let rect = Rect::around_cap(lat, lng, radius);
            let found: HashSet<Arc<str>> = index
                .candidates(&rect)
                .into_iter()
                .map(|(k, _)| k)
                .collect();
            let centre = to_vec(lat, lng);
            for (key, plat, plng) in &points {
                if angle(centre, to_vec(*plat, *plng)) <= radius {
                    assert!(found.contains(key), "{key} missed for {lat} {lng} {radius}");
                }
            }
            // A filter, not a scan: small caps see few candidates.
            if radius < 0.001 {
                assert!(found.len() < points.len() / 10, "{}", found.len());
            }
        }
    }

    #[test]
    fn shapes_and_removal() {
        let mut index = GeoIndex::new(&def(
            json!({"type": "geo", "fields": ["geo"], "geoJson": true}),
        ));
        let poly = json!({"geo": {"type": "Polygon", "coordinates": [[[10, 10], [20, 10], [20, 20], [10, 20], [10, 10]]]}});
        let dateline = json!({"geo": {"type": "LineString", "coordinates": [[179, 0], [-179, 1]]}});
        let point = json!({"geo": [5.0, 5.0]});
        index.insert(&"poly".into(), rev(1), &map(poly.clone()));
        index.insert(&"line".into(), rev(1), &map(dateline.clone()));
        index.insert(&"point".into(), rev(2), &map(point.clone()));
        let keys = |index: &GeoIndex, r: Rect| -> Vec<String> {
            let mut k: Vec<String> = index
                .candidates(&r)
                .into_iter()
                .map(|(k, _)| k.to_string())
                .collect();
            k.sort();
            k
        };
        let small = |lat: f64, lng: f64| Rect::around_cap(lat, lng, 0.0001);
        assert_eq!(keys(&index, small(15.0, 15.0)), vec!["poly"]);
        assert_eq!(keys(&index, small(0.5, 180.0)), vec!["line"]);
        assert_eq!(keys(&index, small(0.5, -179.5)), vec!["line"]);
        assert_eq!(keys(&index, small(5.0, 5.0)), vec!["point"]);
        assert!(keys(&index, small(-40.0, 60.0)).is_empty());
        assert_eq!(keys(&index, Rect::WORLD).len(), 3);
        index.remove("poly", rev(1), &map(poly));
        index.remove("point", rev(1), &map(point.clone()));
        assert_eq!(keys(&index, Rect::WORLD), vec!["line", "point"]);
        index.remove("point", rev(2), &map(point));
        index.remove("line", rev(1), &map(dateline));
        assert_eq!(index.len(), 0);
        assert!(index.cells.is_empty());
        // Points on one parallel: their centroid lies poleward of every vertex, and a small
        // cap around it still finds the shape.
        let ring =
            json!({"geo": {"type": "MultiPoint", "coordinates": [[0, 60], [60, 60], [120, 60]]}});
        index.insert(&"ring".into(), rev(3), &map(ring.clone()));
        let shape = crate::geo::Shape::parse(&ring["geo"]).unwrap();
        let (clat, clng) = crate::geo::to_lat_lng(shape.centroid());
        assert!(clat > 61.0, "{clat}");
        assert_eq!(keys(&index, small(clat, clng)), vec!["ring"]);
        index.remove("ring", rev(3), &map(ring));
        assert_eq!(index.len(), 0);
        assert!(index.cells.is_empty());
    }
}
