//! Deterministic random places and polygons for the geo search tests.

use serde_json::{json, Value};

/// A deterministic generator (64-bit LCG) so failures reproduce.
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }

    /// Clustered places (three centres, one at the antimeridian, one near the pole) and some
    /// spread over the globe.
    pub fn place(&mut self) -> (f64, f64) {
        let centres = [(48.0, 8.0), (-20.0, 179.0), (87.0, -30.0)];
        if self.next() < 0.75 {
            let (lat, lng) = centres[(self.next() * 3.0) as usize % 3];
            (
                (lat + self.range(-2.5, 2.5)).clamp(-89.5, 89.5),
                wrap(lng + self.range(-3.0, 3.0)),
            )
        } else {
            (self.range(-85.0, 85.0), self.range(-180.0, 180.0))
        }
    }
}

pub fn wrap(lng: f64) -> f64 {
    if lng > 180.0 {
        lng - 360.0
    } else if lng < -180.0 {
        lng + 360.0
    } else {
        lng
    }
}

/// A counter-clockwise quadrilateral of `size` degrees around (lat, lng).
pub fn quad(lat: f64, lng: f64, size: f64) -> Value {
    let (s, n) = ((lat - size).max(-89.0), (lat + size).min(89.0));
    let (w, e) = (wrap(lng - size), wrap(lng + size));
    json!({"type": "Polygon", "coordinates": [[[w, s], [e, s], [e, n], [w, n], [w, s]]]})
}
