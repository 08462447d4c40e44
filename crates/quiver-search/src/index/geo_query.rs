//! Geo `SEARCH` functions over a field indexed by a geo analyzer: the cell terms of a covering
//! of the query region select candidates (`encode.rs`: a shape is found through any cell of
//! its covering or any cell holding one), and each candidate's stored shape is checked exactly
//! on the sphere, as the AQL functions compute it (`quiver_geo`).

use std::sync::Arc;

use quiver_errors::{Error, ErrorCode, Result};
use quiver_geo::cells::Covering;
use quiver_geo::{angle, to_lat_lng, Shape, Vec3, EARTH_RADIUS_M};
use serde_json::Value;
use tantivy::query::{
    BooleanQuery, ConstScorer, EmptyQuery, EnableScoring, Explanation, Occur, Query, Scorer,
    TermQuery, Weight,
};
use tantivy::schema::{Field, IndexRecordOption, Value as _};
use tantivy::{DocId, DocSet, Score, SegmentReader, TantivyDocument, Term, TERMINATED};

use super::encode;
use super::ngram_similarity::SortedDocs;
use crate::analyzer::GeoAnalyzer;

/// The stored field holding each document's geo values (`view_index.rs`).
pub(crate) const GEO_FIELD: &str = "geo";

/// What a geo condition asks of the field's shape.
#[derive(Clone, Debug, PartialEq)]
pub enum GeoFilter {
    /// `GEO_DISTANCE()` compared with numbers, `GEO_IN_RANGE()`: the distance in meters on
    /// the sphere between the centroids of `origin` (GeoJSON or `[lng, lat]`) and the
    /// field's shape lies within the bounds (inclusive when the flag is set).
    Distance {
        origin: Value,
        lower: Option<(f64, bool)>,
        upper: Option<(f64, bool)>,
    },
    /// `GEO_CONTAINS(region, field)`: the region (a polygon) contains the field's shape.
    RegionContains(Value),
    /// `GEO_CONTAINS(field, region)`: the field's shape (a polygon) contains the region.
    ContainsRegion(Value),
    /// `GEO_INTERSECTS()`: the two share a point.
    Intersects(Value),
}

/// The exact test of one stored shape.
type Check = Arc<dyn Fn(&Shape) -> bool + Send + Sync>;

fn bad_geojson(function: &str, err: Error) -> Error {
    Error::with_message(
        ErrorCode::BadParameter,
        format!("{function}: the query geometry is invalid: {}", err.message),
    )
}

/// The tantivy query of `filter` on `path` under the geo analyzer `analyzer`.
pub(crate) fn geo_query(
    field: Field,
    path: &str,
    analyzer: &str,
    geo: &GeoAnalyzer,
    filter: &GeoFilter,
) -> Result<Box<dyn Query>> {
    let legacy = geo.legacy();
    let any_value = || encode::analyzer_term(path, analyzer);
    let (covering, check): (Option<Covering>, Check) = match filter {
        GeoFilter::Distance {
            origin,
            lower,
            upper,
        } => {
            let origin = Shape::parse_with(origin, legacy)
                .map_err(|e| bad_geojson("GEO_DISTANCE()", e))?
                .centroid();
            if let (Some((lo, lo_in)), Some((hi, hi_in))) = (lower, upper) {
                if lo > hi || (lo == hi && !(*lo_in && *hi_in)) {
                    return Ok(Box::new(EmptyQuery));
                }
            }
            let covering = match upper {
                Some((hi, inclusive)) if *hi < 0.0 || (*hi == 0.0 && !inclusive) => {
                    return Ok(Box::new(EmptyQuery));
                }
                // Widened a little so that a point at exactly the bound is inside the cells.
                Some((hi, _)) => {
                    let (lat, lng) = to_lat_lng(origin);
                    Some(
                        geo.cover
                            .cover_cap(lat, lng, hi / EARTH_RADIUS_M * (1.0 + 1e-9) + 1e-12),
                    )
                }
                None => None,
            };
            let (lower, upper) = (*lower, *upper);
            (
                covering,
                Arc::new(move |shape: &Shape| {
                    distance_within(origin, shape.centroid(), lower, upper)
                }),
            )
        }
        GeoFilter::RegionContains(region)
        | GeoFilter::ContainsRegion(region)
        | GeoFilter::Intersects(region) => {
            let function = match filter {
                GeoFilter::Intersects(_) => "GEO_INTERSECTS()",
                _ => "GEO_CONTAINS()",
            };
            let region = Shape::parse_with(region, legacy).map_err(|e| bad_geojson(function, e))?;
            let covering = geo.cover.cover_shape(&region);
            let check: Check = match filter {
                GeoFilter::RegionContains(_) => {
                    if !region.is_area() {
                        // As GEO_CONTAINS(): only polygons contain anything.
                        return Ok(Box::new(EmptyQuery));
                    }
                    Arc::new(move |shape: &Shape| region.contains(shape))
                }
                GeoFilter::ContainsRegion(_) => {
                    Arc::new(move |shape: &Shape| shape.is_area() && shape.contains(&region))
                }
                _ => Arc::new(move |shape: &Shape| shape.intersects(&region)),
            };
            (Some(covering), check)
        }
    };
    let term = |text: &str| -> (Occur, Box<dyn Query>) {
        (
            Occur::Should,
            Box::new(TermQuery::new(
                Term::from_field_text(field, text),
                IndexRecordOption::Basic,
            )),
        )
    };
    let mut terms = match covering {
        None | Some(Covering::World) => vec![any_value()],
        Some(Covering::Cells(cells)) => {
            let mut terms = vec![encode::geo_world_term(path, analyzer)];
            for cell in cells {
                // Shapes with a covering cell inside this one ...
                terms.push(encode::geo_cell_term(path, analyzer, &cell, false));
                // ... and shapes covered by this cell or one holding it.
                for holder in geo.cover.ancestors(cell) {
                    terms.push(encode::geo_cell_term(path, analyzer, &holder, true));
                }
            }
            terms
        }
    };
    terms.sort_unstable();
    terms.dedup();
    let candidates = BooleanQuery::new(terms.iter().map(|t| term(t)).collect());
    Ok(Box::new(GeoCheckQuery {
        candidates: Arc::new(candidates),
        stored_prefix: encode::geo_stored_prefix(path, analyzer),
        check,
    }))
}

/// Whether the distance between two points (unit vectors) lies within the bounds, in meters
/// on the sphere (as `GEO_DISTANCE()` and `GEO_IN_RANGE()` compute it).
fn distance_within(
    a: Vec3,
    b: Vec3,
    lower: Option<(f64, bool)>,
    upper: Option<(f64, bool)>,
) -> bool {
    let d = angle(a, b) * EARTH_RADIUS_M;
    let above = match lower {
        Some((lo, true)) => d >= lo,
        Some((lo, false)) => d > lo,
        None => true,
    };
    let below = match upper {
        Some((hi, true)) => d <= hi,
        Some((hi, false)) => d < hi,
        None => true,
    };
    above && below
}

/// The candidates of a covering, kept when one of the document's stored shapes of the field
/// passes the check.
#[derive(Clone)]
struct GeoCheckQuery {
    candidates: Arc<BooleanQuery>,
    stored_prefix: String,
    check: Check,
}

impl std::fmt::Debug for GeoCheckQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeoCheckQuery")
            .field("candidates", &self.candidates)
            .field("stored_prefix", &self.stored_prefix)
            .finish_non_exhaustive()
    }
}

impl Query for GeoCheckQuery {
    fn weight(&self, scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        let candidates = self
            .candidates
            .weight(EnableScoring::disabled_from_schema(scoring.schema()))?;
        Ok(Box::new(GeoCheckWeight {
            candidates,
            stored_prefix: self.stored_prefix.clone(),
            check: self.check.clone(),
        }))
    }
}

struct GeoCheckWeight {
    candidates: Box<dyn Weight>,
    stored_prefix: String,
    check: Check,
}

impl GeoCheckWeight {
    fn matching_docs(&self, reader: &SegmentReader) -> tantivy::Result<Vec<DocId>> {
        let mut candidates = self.candidates.scorer(reader, 1.0)?;
        let Ok(field) = reader.schema().get_field(GEO_FIELD) else {
            return Ok(Vec::new());
        };
        let store = reader.get_store_reader(16)?;
        let alive = reader.alive_bitset();
        let mut out = Vec::new();
        let mut doc = candidates.doc();
        while doc != TERMINATED {
            if alive.is_none_or(|bits| bits.is_alive(doc)) {
                let stored: TantivyDocument = store.get(doc)?;
                let matched = stored
                    .get_all(field)
                    .filter_map(|v| v.as_str())
                    .filter_map(|s| s.strip_prefix(self.stored_prefix.as_str()))
                    .any(|s| self.stored_matches(s));
                if matched {
                    out.push(doc);
                }
            }
            doc = candidates.advance();
        }
        Ok(out)
    }

    /// `0|1␟<GeoJSON>`: the legacy flag and the shape.
    fn stored_matches(&self, stored: &str) -> bool {
        let Some((legacy, json)) = stored.split_once(encode::SEP) else {
            return false;
        };
        let Ok(value) = serde_json::from_str::<Value>(json) else {
            return false;
        };
        Shape::parse_with(&value, legacy == "1").is_ok_and(|shape| (self.check)(&shape))
    }
}

impl Weight for GeoCheckWeight {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let docs = self.matching_docs(reader)?;
        Ok(Box::new(ConstScorer::new(SortedDocs::new(docs), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        if self.matching_docs(reader)?.binary_search(&doc).is_ok() {
            Ok(Explanation::new("GeoCheckQuery", 1.0))
        } else {
            Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )))
        }
    }
}
