//! Geo analyzers in the index against brute force: cell terms of shapes, and geo searches over
//! random points, lines and polygons (near the poles and across the antimeridian too) giving
//! exactly the documents the spherical predicates of `quiver_geo` select.

use std::collections::BTreeSet;

use quiver_geo::{angle, Shape, EARTH_RADIUS_M};
use serde_json::{json, Value};

use super::document::geo_index_terms;
use super::*;
use crate::analyzer::GeoAnalyzer;

/// `geo_json` (geojson, shape), `geo_centroid` (geojson, centroid), `geo_pt` (geopoint with
/// `lat`/`lng` attributes), all with the default options, and `identity`.
struct GeoAnalyzers;

impl AnalyzerSource for GeoAnalyzers {
    fn tokens(&self, analyzer: &str, input: &str) -> Option<Vec<(String, u32)>> {
        (analyzer == "identity").then(|| vec![(input.to_string(), 0)])
    }

    fn geo(&self, analyzer: &str) -> Option<GeoAnalyzer> {
        match analyzer {
            "geo_json" => GeoAnalyzer::from_properties("geojson", &json!({})),
            "geo_centroid" => GeoAnalyzer::from_properties("geojson", &json!({"type": "centroid"})),
            "geo_pt" => GeoAnalyzer::from_properties(
                "geopoint",
                &json!({"latitude": ["lat"], "longitude": ["lng"]}),
            ),
            _ => None,
        }
    }
}

/// A distance bound: meters, inclusive.
type Bound = Option<(f64, bool)>;

/// A small deterministic generator (64-bit LCG), so failures reproduce.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
}

fn wrap(lng: f64) -> f64 {
    if lng > 180.0 {
        lng - 360.0
    } else if lng < -180.0 {
        lng + 360.0
    } else {
        lng
    }
}

/// A counter-clockwise quadrilateral of about `size` degrees around (lat, lng).
fn quad(lat: f64, lng: f64, size: f64) -> Value {
    let lat_lo = (lat - size).max(-89.0);
    let lat_hi = (lat + size).min(89.0);
    let (w, e) = (wrap(lng - size), wrap(lng + size));
    json!({"type": "Polygon", "coordinates": [[
        [w, lat_lo], [e, lat_lo], [e, lat_hi], [w, lat_hi], [w, lat_lo]
    ]]})
}

/// Random places: clustered near a few centres (Europe, the antimeridian, the north pole)
/// and spread over the globe.
fn place(rng: &mut Lcg) -> (f64, f64) {
    let centres = [(50.0, 10.0), (-10.0, 179.5), (88.5, 0.0), (0.0, 0.0)];
    if rng.next() < 0.7 {
        let (lat, lng) = centres[(rng.next() * centres.len() as f64) as usize % centres.len()];
        (
            (lat + rng.range(-3.0, 3.0)).clamp(-89.9, 89.9),
            wrap(lng + rng.range(-4.0, 4.0)),
        )
    } else {
        (rng.range(-89.0, 89.0), rng.range(-180.0, 180.0))
    }
}

fn documents(n: usize) -> Vec<Value> {
    let mut rng = Lcg(20_240_611);
    (0..n)
        .map(|i| {
            let (lat, lng) = place(&mut rng);
            let geometry = match i % 5 {
                0 | 1 => json!({"type": "Point", "coordinates": [lng, lat]}),
                2 => json!([lng, lat]),
                3 => quad(lat, lng, rng.range(0.05, 2.0)),
                _ => {
                    let (lat2, lng2) = (
                        (lat + rng.range(-1.0, 1.0)).clamp(-89.9, 89.9),
                        wrap(lng + rng.range(-1.0, 1.0)),
                    );
                    json!({"type": "LineString", "coordinates": [[lng, lat], [lng2, lat2]]})
                }
            };
            json!({"_key": format!("k{i}"), "geo": geometry, "pos": {"lat": lat, "lng": lng}})
        })
        .collect()
}

fn link() -> LinkDefinition {
    LinkDefinition::from_json(&json!({
        "fields": {
            "geo": {"analyzers": ["geo_json", "geo_centroid", "identity"]},
            "pos": {"analyzers": ["geo_pt"]}
        }
    }))
    .unwrap()
}

fn build(dir: &std::path::Path, docs: &[Value]) -> ViewIndex {
    let (index, _) = ViewIndex::open(dir).unwrap();
    for doc in docs {
        let key = doc["_key"].as_str().unwrap();
        let terms = document_terms(doc, &link(), &GeoAnalyzers);
        index.put(1, key, 1, terms, doc).unwrap();
    }
    index.commit("geo").unwrap();
    index
}

fn found(index: &ViewIndex, query: &SearchQuery) -> BTreeSet<String> {
    index
        .search(query, None, &[], &GeoAnalyzers)
        .unwrap()
        .into_iter()
        .map(|h| h.key)
        .collect()
}

/// The shape an analyzer reads from a document (None: not indexed).
fn shape_of(doc: &Value, analyzer: &str) -> Option<Shape> {
    let geo = GeoAnalyzers.geo(analyzer)?;
    let value = if analyzer == "geo_pt" {
        &doc["pos"]
    } else {
        &doc["geo"]
    };
    geo.shape(value)
}

fn expected(docs: &[Value], analyzer: &str, test: impl Fn(&Shape) -> bool) -> BTreeSet<String> {
    docs.iter()
        .filter(|d| shape_of(d, analyzer).is_some_and(|s| test(&s)))
        .map(|d| d["_key"].as_str().unwrap().to_string())
        .collect()
}

fn geo(analyzer: &str, filter: GeoFilter) -> SearchQuery {
    let path = if analyzer == "geo_pt" { "pos" } else { "geo" };
    SearchQuery::Geo {
        path: path.into(),
        analyzer: analyzer.into(),
        filter,
    }
}

#[test]
fn a_point_is_one_covering_cell_and_its_holders() {
    let geo = GeoAnalyzers.geo("geo_json").unwrap();
    let shape = Shape::parse(&json!([13.4, 52.5])).unwrap();
    let terms = geo_index_terms("geo", "geo_json", &geo, &shape);
    // Levels 4..=23 of "holds" terms and the covering cell at level 23.
    assert_eq!(terms.len(), 21, "{terms:?}");
    let covering: Vec<&String> = terms.iter().filter(|t| t.contains("\u{1f}c")).collect();
    assert_eq!(covering.len(), 1);
    assert!(covering[0].ends_with(&quiver_geo::cells::Cell::of_point(23, 52.5, 13.4).key()));
    // A polygon around a pole spans every longitude: at the minimum level 4 it takes one row
    // of 32 cells, more than maxCells (20), which the minimum level wins over (as in S2).
    let cap = Shape::parse(&json!({"type": "Polygon", "coordinates": [[
        [0, 80], [120, 80], [-120, 80], [0, 80]
    ]]}))
    .unwrap();
    let terms = geo_index_terms("geo", "geo_json", &geo, &cap);
    let covering = terms.iter().filter(|t| t.contains("\u{1f}c")).count();
    assert_eq!(covering, 32);
    // A huge shape with a fine minimum level is the world term.
    let fine =
        GeoAnalyzer::from_properties("geojson", &json!({"options": {"minLevel": 12}})).unwrap();
    assert_eq!(
        geo_index_terms("geo", "g", &fine, &cap),
        vec![super::encode::geo_world_term("geo", "g")]
    );
}

#[test]
fn geo_searches_match_brute_force() {
    let docs = documents(400);
    let dir = tempfile::tempdir().unwrap();
    let index = build(dir.path(), &docs);
    let mut rng = Lcg(7);
    let mut checked = 0;
    for round in 0..24 {
        let (lat, lng) = place(&mut rng);
        let origin = json!([lng, lat]);
        let centre = quiver_geo::to_vec(lat, lng);
        let radius = [5_000.0, 80_000.0, 400_000.0, 3_000_000.0][round % 4];
        let low = radius * rng.range(0.0, 0.8);
        for analyzer in ["geo_json", "geo_centroid", "geo_pt"] {
            let cases: Vec<(Bound, Bound)> = vec![
                (None, Some((radius, true))),
                (Some((low, false)), Some((radius, false))),
                (Some((radius, true)), None),
            ];
            for (lower, upper) in cases {
                let query = geo(
                    analyzer,
                    GeoFilter::Distance {
                        origin: origin.clone(),
                        lower,
                        upper,
                    },
                );
                let want = expected(&docs, analyzer, |s| {
                    let d = angle(centre, s.centroid()) * EARTH_RADIUS_M;
                    lower.is_none_or(|(lo, inc)| if inc { d >= lo } else { d > lo })
                        && upper.is_none_or(|(hi, inc)| if inc { d <= hi } else { d < hi })
                });
                assert_eq!(
                    found(&index, &query),
                    want,
                    "{analyzer} {origin} {lower:?} {upper:?}"
                );
                checked += want.len();
            }
            let region = quad(lat, lng, rng.range(0.5, 6.0));
            let region_shape = Shape::parse(&region).unwrap();
            let contains = geo(analyzer, GeoFilter::RegionContains(region.clone()));
            let want = expected(&docs, analyzer, |s| region_shape.contains(s));
            assert_eq!(
                found(&index, &contains),
                want,
                "{analyzer} contains {region}"
            );
            checked += want.len();
            let intersects = geo(analyzer, GeoFilter::Intersects(region.clone()));
            let want = expected(&docs, analyzer, |s| s.intersects(&region_shape));
            assert_eq!(
                found(&index, &intersects),
                want,
                "{analyzer} intersects {region}"
            );
            checked += want.len();
            let point = Shape::parse(&origin).unwrap();
            let contains_point = geo(analyzer, GeoFilter::ContainsRegion(origin.clone()));
            let want = expected(&docs, analyzer, |s| s.is_area() && s.contains(&point));
            assert_eq!(
                found(&index, &contains_point),
                want,
                "{analyzer} contains {origin}"
            );
        }
    }
    assert!(checked > 1000, "the queries select documents ({checked})");
}

#[test]
fn geo_functions_need_a_geo_analyzer() {
    let dir = tempfile::tempdir().unwrap();
    let index = build(dir.path(), &documents(10));
    let query = geo("identity", GeoFilter::Intersects(json!([0, 0])));
    let query = match query {
        SearchQuery::Geo { filter, .. } => SearchQuery::Geo {
            path: "geo".into(),
            analyzer: "identity".into(),
            filter,
        },
        other => other,
    };
    let err = index.search(&query, None, &[], &GeoAnalyzers).unwrap_err();
    assert_eq!(err.code, quiver_errors::ErrorCode::BadParameter);
    let bad = geo(
        "geo_json",
        GeoFilter::Intersects(json!({"type": "Polygon", "coordinates": [[[0, 0]]]})),
    );
    let err = index.search(&bad, None, &[], &GeoAnalyzers).unwrap_err();
    assert_eq!(err.code, quiver_errors::ErrorCode::BadParameter);
}
