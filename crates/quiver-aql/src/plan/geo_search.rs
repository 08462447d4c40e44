//! What a geo `IndexNode` answers (rule `geo-index-optimizer`, see `geo_select`): the
//! distance, bounds and shape filters it replaced, evaluated by `exec/geo.rs` on every
//! candidate.

use crate::expr::CExpr;

/// Where the reference point of a distance comes from.
#[derive(Clone, Debug)]
pub enum GeoOrigin {
    /// `DISTANCE(…, lat, lng)`: latitude and longitude in degrees.
    LatLng(CExpr, CExpr),
    /// `GEO_DISTANCE(shape, …)`: a GeoJSON shape or `[lng, lat]`, measured from its centroid.
    Shape(CExpr),
}

/// What a geo `IndexNode` answers.
#[derive(Clone, Debug)]
pub struct GeoSearch {
    /// The distance expression it replaced (over the loop variable, in metres) and its
    /// reference point.
    pub distance: Option<(CExpr, GeoOrigin)>,
    /// Output in ascending distance (a SORT was replaced).
    pub sort: bool,
    /// Bounds (value, inclusive) on the distance.
    pub lower: Option<(CExpr, bool)>,
    pub upper: Option<(CExpr, bool)>,
    /// `GEO_CONTAINS` / `GEO_INTERSECTS` conjuncts, each checked on every candidate.
    pub shape_filters: Vec<CExpr>,
    /// The shape whose bounding rectangle bounds the candidates (the first shape filter's).
    pub region: Option<CExpr>,
}

impl GeoSearch {
    /// Every expression the node evaluates, for variable-usage analysis.
    pub fn expressions(&self) -> Vec<&CExpr> {
        let mut out = Vec::new();
        if let Some((d, origin)) = &self.distance {
            out.push(d);
            match origin {
                GeoOrigin::LatLng(a, b) => {
                    out.push(a);
                    out.push(b);
                }
                GeoOrigin::Shape(s) => out.push(s),
            }
        }
        for (e, _) in self.lower.iter().chain(self.upper.iter()) {
            out.push(e);
        }
        out.extend(self.shape_filters.iter());
        out.extend(self.region.iter());
        out
    }
}
