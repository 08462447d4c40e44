//! Geometry on the sphere for the AQL geo functions and the geo index: GeoJSON parsing and
//! validation, containment, intersection, equality, centroids, distances and areas.
//!
//! ArangoDB interprets GeoJSON with S2 semantics: coordinates are points on the unit sphere,
//! lines and polygon edges are great-circle arcs (not straight lines in longitude/latitude),
//! and a polygon's interior lies to the left of its outer ring. The `geo` crate is planar, so
//! its answers differ from ArangoDB's for anything but tiny shapes; the handful of spherical
//! predicates ArangoDB needs is the product here and is written out below (with unit vectors
//! and orientation determinants, as S2 does). Distances and areas on the WGS84 ellipsoid come
//! from `geographiclib-rs`.

use geographiclib_rs::{Geodesic, InverseGeodesic, PolygonArea, Winding};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

/// ArangoDB's Earth radius for spherical distances and areas (volumetric mean, meters).
pub const EARTH_RADIUS_M: f64 = 6_371_000.0;

/// Edges tested against each other when validating a polygon; beyond this the
/// self-intersection check is skipped so validation stays bounded (about 0.1 s of work).
const MAX_VALIDATION_PAIRS: usize = 4_000_000;

/// Angles below this (radians, about 0.6 mm on Earth) count as equal positions.
const EPS: f64 = 1e-13;

/// A point on the unit sphere.
pub type Vec3 = [f64; 3];

fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: Vec3, b: Vec3) -> Vec3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn add(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

fn scale(a: Vec3, s: f64) -> Vec3 {
    [a[0] * s, a[1] * s, a[2] * s]
}

fn norm(a: Vec3) -> f64 {
    dot(a, a).sqrt()
}

fn normalize(a: Vec3) -> Vec3 {
    let n = norm(a);
    if n == 0.0 {
        a
    } else {
        scale(a, 1.0 / n)
    }
}

/// The angle between two unit vectors (radians), stable for tiny and near-antipodal angles.
pub fn angle(a: Vec3, b: Vec3) -> f64 {
    norm(cross(a, b)).atan2(dot(a, b))
}

/// Unit vector of a latitude/longitude in degrees.
pub fn to_vec(lat: f64, lng: f64) -> Vec3 {
    let (phi, lambda) = (lat.to_radians(), lng.to_radians());
    [
        phi.cos() * lambda.cos(),
        phi.cos() * lambda.sin(),
        phi.sin(),
    ]
}

/// Latitude and longitude (degrees) of a vector.
pub fn to_lat_lng(v: Vec3) -> (f64, f64) {
    let lat = v[2].atan2((v[0] * v[0] + v[1] * v[1]).sqrt()).to_degrees();
    let lng = v[1].atan2(v[0]).to_degrees();
    (lat, lng)
}

/// Sign of the orientation of the triangle a, b, c: +1 counter-clockwise seen from outside.
fn sign(a: Vec3, b: Vec3, c: Vec3) -> i32 {
    let d = dot(cross(a, b), c);
    if d > 1e-15 {
        1
    } else if d < -1e-15 {
        -1
    } else {
        0
    }
}

/// Whether the arcs ab and cd cross at a point interior to both (S2's CrossingSign > 0). The
/// four orientation tests together also rule out the antipodal "crossing" of two arcs lying
/// on opposite hemispheres.
fn arcs_cross(a: Vec3, b: Vec3, c: Vec3, d: Vec3) -> bool {
    let acb = -sign(a, b, c);
    if acb == 0 {
        return false;
    }
    let bda = sign(a, b, d);
    if bda != acb {
        return false;
    }
    let cbd = -sign(c, d, b);
    if cbd != acb {
        return false;
    }
    sign(c, d, a) == acb
}

/// Angular distance from p to the arc ab.
fn distance_to_arc(p: Vec3, a: Vec3, b: Vec3) -> f64 {
    let n = cross(a, b);
    let nn = norm(n);
    if nn > 1e-15 {
        // The closest point of the great circle lies within the arc when p projects between
        // a and b.
        let n = scale(n, 1.0 / nn);
        if dot(cross(a, p), n) > 0.0 && dot(cross(p, b), n) > 0.0 {
            return (dot(p, n).abs()).asin();
        }
    }
    angle(p, a).min(angle(p, b))
}

/// Coordinates of rings or lines as (lat, lng) pairs.
type Rings = Vec<Vec<(f64, f64)>>;

/// A closed ring on the sphere (the closing vertex is not repeated) with its interior.
#[derive(Clone, Debug)]
pub struct Loop {
    pub vertices: Vec<Vec3>,
    /// A point just left of the first edge, which is inside by construction.
    reference: Vec3,
    reference_inside: bool,
}

impl Loop {
    /// A loop whose interior lies to the left of its edges.
    fn new(vertices: Vec<Vec3>) -> Loop {
        let a = vertices[0];
        let b = vertices[1 % vertices.len()];
        let mid = normalize(add(a, b));
        let left = normalize(cross(a, b));
        let reference = normalize(add(mid, scale(left, 1e-9)));
        Loop {
            vertices,
            reference,
            reference_inside: true,
        }
    }

    fn edges(&self) -> impl Iterator<Item = (Vec3, Vec3)> + '_ {
        let n = self.vertices.len();
        (0..n).map(move |i| (self.vertices[i], self.vertices[(i + 1) % n]))
    }

    /// Sum of the turning angles at the vertices (left turns positive). By Gauss–Bonnet the
    /// area to the left of the loop is 2π minus this.
    fn turning(&self) -> f64 {
        let n = self.vertices.len();
        let mut total = 0.0;
        for i in 0..n {
            let prev = self.vertices[(i + n - 1) % n];
            let v = self.vertices[i];
            let next = self.vertices[(i + 1) % n];
            let t_in = cross(normalize(cross(prev, v)), v);
            let t_out = cross(normalize(cross(v, next)), v);
            total += dot(v, cross(t_in, t_out)).atan2(dot(t_in, t_out));
        }
        total
    }

    /// Area of the interior on the unit sphere (steradians).
    pub fn area(&self) -> f64 {
        (2.0 * std::f64::consts::PI - self.turning()).clamp(0.0, 4.0 * std::f64::consts::PI)
    }

    fn invert(&mut self) {
        self.vertices.reverse();
        *self = Loop::new(std::mem::take(&mut self.vertices));
    }

    /// Parity of the edge crossings along a path of arcs; None when the path touches a
    /// vertex (where crossings of the two edges meeting there would be ambiguous).
    fn crossings_along(&self, path: &[Vec3]) -> Option<bool> {
        let mut odd = false;
        for w in path.windows(2) {
            if angle(w[0], w[1]) > 3.0 || self.vertices.iter().any(|&v| on_arc(v, w[0], w[1])) {
                return None;
            }
            for (a, b) in self.edges() {
                if arcs_cross(w[0], w[1], a, b) {
                    odd = !odd;
                }
            }
        }
        Some(odd)
    }

    /// Whether p is inside: the reference point's side, flipped at each crossing of a path
    /// from the reference point to p (direct, or through a detour point when the direct arc
    /// is degenerate).
    pub fn contains(&self, p: Vec3) -> bool {
        let r = self.reference;
        if let Some(odd) = self.crossings_along(&[r, p]) {
            return self.reference_inside ^ odd;
        }
        for k in 0..8 {
            let axis = [
                [0.0, 0.0, 1.0],
                [1.0, 0.0, 0.0],
                [0.0, 1.0, 0.0],
                [0.6, -0.48, 0.64],
            ][k % 4];
            let mut m = normalize(cross(add(r, p), axis));
            if k >= 4 {
                m = scale(m, -1.0);
            }
            if norm(m) < 0.5 {
                continue;
            }
            if let Some(odd) = self.crossings_along(&[r, m, p]) {
                return self.reference_inside ^ odd;
            }
        }
        false
    }

    fn centroid_sum(&self) -> Vec3 {
        // Fan of signed triangles from vertex 0: each contributes its area times the
        // direction of its centroid, which sums to the loop's area-weighted centroid.
        let v0 = self.vertices[0];
        let mut sum = [0.0; 3];
        for i in 1..self.vertices.len().saturating_sub(1) {
            let (b, c) = (self.vertices[i], self.vertices[i + 1]);
            let area = triangle_signed_area(v0, b, c);
            sum = add(sum, scale(normalize(add(add(v0, b), c)), area));
        }
        // For a loop enclosing more than a hemisphere the signed fan is the negated moment of
        // the small side, which is the moment of the interior (the whole sphere's is zero).
        sum
    }
}

fn on_arc(v: Vec3, a: Vec3, b: Vec3) -> bool {
    distance_to_arc(v, a, b) < 1e-12
}

/// Signed area of a small spherical triangle (L'Huilier via the Eriksson formula).
fn triangle_signed_area(a: Vec3, b: Vec3, c: Vec3) -> f64 {
    let det = dot(a, cross(b, c));
    let denom = 1.0 + dot(a, b) + dot(b, c) + dot(c, a);
    2.0 * det.atan2(denom)
}

/// What a GeoJSON value (or coordinate pair) describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeKind {
    Point,
    MultiPoint,
    LineString,
    MultiLineString,
    Polygon,
    MultiPolygon,
}

/// A parsed geometry.
#[derive(Clone, Debug)]
pub struct Shape {
    pub kind: ShapeKind,
    /// Point and MultiPoint positions.
    pub points: Vec<Vec3>,
    /// LineString and MultiLineString vertices.
    pub lines: Vec<Vec<Vec3>>,
    /// Polygon rings of all polygons; a point is inside when an odd number contain it.
    pub loops: Vec<Loop>,
    /// The original coordinates as (lat, lng) rings/lines/points, for equality and WGS84.
    pub coords: Rings,
}

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message.into())
}

/// A `[lng, lat]` position (GeoJSON order) → (lat, lng), validated.
fn position(v: &Value) -> Result<(f64, f64)> {
    let pair = v
        .as_array()
        .filter(|a| a.len() >= 2)
        .ok_or_else(|| bad("Invalid GeoJSON coordinate, must be an array of two numbers"))?;
    let (Some(lng), Some(lat)) = (pair[0].as_f64(), pair[1].as_f64()) else {
        return Err(bad(
            "Invalid GeoJSON coordinate, must be an array of two numbers",
        ));
    };
    check_lat_lng(lat, lng)?;
    Ok((lat, lng))
}

/// Rejects coordinates off the globe.
pub fn check_lat_lng(lat: f64, lng: f64) -> Result<()> {
    if !lat.is_finite() || !lng.is_finite() || lat.abs() > 90.0 || lng.abs() > 180.0 {
        return Err(bad(format!(
            "Invalid coordinate, latitude {lat} or longitude {lng} out of range"
        )));
    }
    Ok(())
}

fn positions(v: &Value, what: &str) -> Result<Vec<(f64, f64)>> {
    v.as_array()
        .ok_or_else(|| {
            bad(format!(
                "Invalid GeoJSON {what}, coordinates must be an array"
            ))
        })?
        .iter()
        .map(position)
        .collect()
}

fn dedup(coords: &[(f64, f64)]) -> Vec<Vec3> {
    let mut out: Vec<Vec3> = Vec::with_capacity(coords.len());
    for &(lat, lng) in coords {
        let v = to_vec(lat, lng);
        if out.last().is_none_or(|&last| angle(last, v) > EPS) {
            out.push(v);
        }
    }
    out
}

fn ring(coords: &[(f64, f64)]) -> Result<Loop> {
    if coords.len() < 4 {
        return Err(bad(
            "Invalid loop in polygon, must have at least 3 distinct vertices",
        ));
    }
    if coords.first() != coords.last() {
        return Err(bad(
            "Invalid loop in polygon, first and last vertex must be equal",
        ));
    }
    let mut vertices = dedup(&coords[..coords.len() - 1]);
    while vertices.len() > 1 && angle(vertices[0], vertices[vertices.len() - 1]) <= EPS {
        vertices.pop();
    }
    if vertices.len() < 3 {
        return Err(bad(
            "Invalid loop in polygon, must have at least 3 distinct vertices",
        ));
    }
    for i in 0..vertices.len() {
        for j in i + 1..vertices.len() {
            if angle(vertices[i], vertices[j]) <= EPS {
                return Err(bad("Invalid loop in polygon, duplicate vertex"));
            }
        }
        if vertices.len() > 3000 {
            break;
        }
    }
    Ok(Loop::new(vertices))
}

fn check_no_crossings(loops: &[Loop]) -> Result<()> {
    let edges: Vec<(Vec3, Vec3)> = loops.iter().flat_map(|l| l.edges()).collect();
    if edges.len().saturating_mul(edges.len()) / 2 > MAX_VALIDATION_PAIRS {
        return Ok(());
    }
    for i in 0..edges.len() {
        for j in i + 1..edges.len() {
            let (a, b) = edges[i];
            let (c, d) = edges[j];
            if arcs_cross(a, b, c, d) {
                return Err(bad("Invalid polygon, edges cross each other"));
            }
        }
    }
    Ok(())
}

/// The rings of one GeoJSON polygon: the outer ring keeps its orientation (interior to the
/// left, ArangoDB 3.10+), holes are turned so that their interior is their smaller side
/// (ArangoDB inverts holes with the wrong orientation).
fn polygon_loops(rings: &Value, legacy: bool) -> Result<(Vec<Loop>, Rings)> {
    let rings = rings
        .as_array()
        .filter(|r| !r.is_empty())
        .ok_or_else(|| bad("Invalid GeoJSON Polygon, must contain at least one ring"))?;
    let mut loops = Vec::with_capacity(rings.len());
    let mut coords = Vec::with_capacity(rings.len());
    for (i, r) in rings.iter().enumerate() {
        let c = positions(r, "Polygon")?;
        let mut l = ring(&c)?;
        if (i > 0 || legacy) && l.area() > 2.0 * std::f64::consts::PI {
            l.invert();
        }
        loops.push(l);
        coords.push(c);
    }
    Ok((loops, coords))
}

impl Shape {
    /// Parses a GeoJSON geometry object, or a `[lng, lat]` pair as a point. Invalid input is
    /// error 10 with a message naming the problem (ArangoDB's functions turn it into a
    /// warning and `null`).
    pub fn parse(value: &Value) -> Result<Shape> {
        Shape::parse_with(value, false)
    }

    /// Like [`Shape::parse`]; `legacy` takes the smaller region as a ring's interior, the
    /// pre-3.10 rule (`legacyPolygons` indexes, `IS_IN_POLYGON`).
    pub fn parse_with(value: &Value, legacy: bool) -> Result<Shape> {
        if let Value::Array(_) = value {
            let (lat, lng) = position(value)?;
            return Ok(Shape::point(lat, lng));
        }
        let object = value
            .as_object()
            .ok_or_else(|| bad("Invalid GeoJSON Geometry Object."))?;
        let kind = object
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("Invalid GeoJSON Geometry Object, 'type' missing"))?;
        let coordinates = object
            .get("coordinates")
            .ok_or_else(|| bad("Invalid GeoJSON Geometry Object, 'coordinates' missing"))?;
        let mut shape = Shape {
            kind: ShapeKind::Point,
            points: Vec::new(),
            lines: Vec::new(),
            loops: Vec::new(),
            coords: Vec::new(),
        };
        match kind.to_ascii_lowercase().as_str() {
            "point" => {
                let (lat, lng) = position(coordinates)?;
                return Ok(Shape::point(lat, lng));
            }
            "multipoint" => {
                let c = positions(coordinates, "MultiPoint")?;
                if c.is_empty() {
                    return Err(bad("Invalid MultiPoint, must contain at least one point"));
                }
                shape.kind = ShapeKind::MultiPoint;
                shape.points = c.iter().map(|&(lat, lng)| to_vec(lat, lng)).collect();
                shape.coords.push(c);
            }
            "linestring" => {
                let c = positions(coordinates, "LineString")?;
                let line = dedup(&c);
                if line.len() < 2 {
                    return Err(bad(
                        "Invalid LineString, must contain at least 2 distinct points",
                    ));
                }
                shape.kind = ShapeKind::LineString;
                shape.lines.push(line);
                shape.coords.push(c);
            }
            "multilinestring" => {
                let lines = coordinates
                    .as_array()
                    .filter(|l| !l.is_empty())
                    .ok_or_else(|| bad("Invalid MultiLinestring, must contain lines"))?;
                shape.kind = ShapeKind::MultiLineString;
                for l in lines {
                    let c = positions(l, "MultiLineString")?;
                    let line = dedup(&c);
                    if line.len() < 2 {
                        return Err(bad(
                            "Invalid MultiLinestring, each line needs 2 distinct points",
                        ));
                    }
                    shape.lines.push(line);
                    shape.coords.push(c);
                }
            }
            "polygon" => {
                let (loops, coords) = polygon_loops(coordinates, legacy)?;
                check_no_crossings(&loops)?;
                shape.kind = ShapeKind::Polygon;
                shape.loops = loops;
                shape.coords = coords;
            }
            "multipolygon" => {
                let polygons = coordinates
                    .as_array()
                    .filter(|p| !p.is_empty())
                    .ok_or_else(|| bad("Invalid MultiPolygon, must contain polygons"))?;
                shape.kind = ShapeKind::MultiPolygon;
                for p in polygons {
                    let (loops, coords) = polygon_loops(p, legacy)?;
                    shape.loops.extend(loops);
                    shape.coords.extend(coords);
                }
                check_no_crossings(&shape.loops)?;
            }
            _ => {
                return Err(bad(format!(
                    "Invalid GeoJSON Geometry Object, type '{kind}'"
                )))
            }
        }
        Ok(shape)
    }

    pub fn point(lat: f64, lng: f64) -> Shape {
        Shape {
            kind: ShapeKind::Point,
            points: vec![to_vec(lat, lng)],
            lines: Vec::new(),
            loops: Vec::new(),
            coords: vec![vec![(lat, lng)]],
        }
    }

    pub fn is_area(&self) -> bool {
        matches!(self.kind, ShapeKind::Polygon | ShapeKind::MultiPolygon)
    }

    fn region_contains(&self, p: Vec3) -> bool {
        self.loops.iter().filter(|l| l.contains(p)).count() % 2 == 1
    }

    /// Every vertex and point of the shape.
    fn vertices(&self) -> impl Iterator<Item = Vec3> + '_ {
        self.points
            .iter()
            .copied()
            .chain(self.lines.iter().flatten().copied())
            .chain(self.loops.iter().flat_map(|l| l.vertices.iter().copied()))
    }

    /// Every edge (lines and rings).
    fn edges(&self) -> Vec<(Vec3, Vec3)> {
        let mut out: Vec<(Vec3, Vec3)> = self
            .lines
            .iter()
            .flat_map(|l| l.windows(2).map(|w| (w[0], w[1])))
            .collect();
        out.extend(self.loops.iter().flat_map(|l| l.edges()));
        out
    }

    /// Whether the point p lies in the shape: inside a polygon, on a line, or equal to a
    /// point.
    pub fn contains_point(&self, p: Vec3) -> bool {
        if self.is_area() {
            return self.region_contains(p);
        }
        self.points.iter().any(|&q| angle(p, q) <= 1e-12)
            || self
                .lines
                .iter()
                .any(|l| l.windows(2).any(|w| on_arc(p, w[0], w[1])))
    }

    /// Whether `other` lies entirely within this shape (GEO_CONTAINS).
    pub fn contains(&self, other: &Shape) -> bool {
        if !self.is_area() {
            // Containment in points and lines is only defined point-wise.
            return other.loops.is_empty() && other.vertices().all(|v| self.contains_point(v));
        }
        if !other.vertices().all(|v| self.region_contains(v)) {
            return false;
        }
        let mine = self.edges();
        let theirs = other.edges();
        if theirs
            .iter()
            .any(|&(a, b)| mine.iter().any(|&(c, d)| arcs_cross(a, b, c, d)))
        {
            return false;
        }
        // A hole of this polygon inside the other shape would be uncovered.
        !(other.is_area() && self.vertices().any(|v| other.region_contains(v)))
    }

    /// Whether the two shapes share at least one point (GEO_INTERSECTS).
    pub fn intersects(&self, other: &Shape) -> bool {
        if other.vertices().any(|v| self.contains_point(v))
            || self.vertices().any(|v| other.contains_point(v))
        {
            return true;
        }
        let mine = self.edges();
        let theirs = other.edges();
        theirs
            .iter()
            .any(|&(a, b)| mine.iter().any(|&(c, d)| arcs_cross(a, b, c, d)))
    }

    /// Same type and the same coordinates (GEO_EQUALS).
    pub fn equals(&self, other: &Shape) -> bool {
        if self.kind != other.kind || self.coords.len() != other.coords.len() {
            return false;
        }
        self.coords.iter().zip(&other.coords).all(|(a, b)| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(p, q)| angle(to_vec(p.0, p.1), to_vec(q.0, q.1)) <= 1e-12)
        })
    }

    /// The centroid on the unit sphere: of the points, of the lines weighted by length, of
    /// the area weighted by area.
    pub fn centroid(&self) -> Vec3 {
        let mut sum = [0.0; 3];
        match self.kind {
            ShapeKind::Point | ShapeKind::MultiPoint => {
                for &p in &self.points {
                    sum = add(sum, p);
                }
            }
            ShapeKind::LineString | ShapeKind::MultiLineString => {
                for line in &self.lines {
                    for w in line.windows(2) {
                        let len = angle(w[0], w[1]);
                        sum = add(sum, scale(normalize(add(w[0], w[1])), len));
                    }
                }
            }
            ShapeKind::Polygon | ShapeKind::MultiPolygon => {
                for l in &self.loops {
                    let c = l.centroid_sum();
                    // Nested rings alternate between adding and removing area.
                    let depth = self
                        .loops
                        .iter()
                        .filter(|o| !std::ptr::eq(*o, l) && o.contains(l.reference))
                        .count();
                    sum = if depth % 2 == 0 {
                        add(sum, c)
                    } else {
                        add(sum, scale(c, -1.0))
                    };
                }
            }
        }
        if norm(sum) < 1e-300 {
            // Degenerate (antipodal points): fall back to the first vertex.
            return self.vertices().next().unwrap_or([1.0, 0.0, 0.0]);
        }
        normalize(sum)
    }

    /// Area in square meters: on the sphere of [`EARTH_RADIUS_M`], or on the WGS84
    /// ellipsoid. Points and lines have none.
    pub fn area(&self, wgs84: bool) -> f64 {
        if !self.is_area() {
            return 0.0;
        }
        let mut total = 0.0;
        for (i, l) in self.loops.iter().enumerate() {
            let depth = self
                .loops
                .iter()
                .enumerate()
                .filter(|(j, o)| *j != i && o.contains(l.reference))
                .count();
            let a = if wgs84 {
                wgs84_ring_area(&self.coords[i], l.area() > 2.0 * std::f64::consts::PI)
            } else {
                l.area() * EARTH_RADIUS_M * EARTH_RADIUS_M
            };
            total += if depth % 2 == 0 { a } else { -a };
        }
        total.abs()
    }
}

fn wgs84_ring_area(coords: &[(f64, f64)], big: bool) -> f64 {
    let geod = Geodesic::wgs84();
    let mut pa = PolygonArea::new(&geod, Winding::CounterClockwise);
    for &(lat, lng) in &coords[..coords.len().saturating_sub(1)] {
        pa.add_point(lat, lng);
    }
    let (_, area, _) = pa.compute(false);
    let area = area.abs();
    let total = 4.0 * std::f64::consts::PI * authalic_radius_sq();
    let small = area.min(total - area);
    if big {
        total - small
    } else {
        small
    }
}

/// Square of the WGS84 authalic radius (the sphere with the ellipsoid's surface area).
fn authalic_radius_sq() -> f64 {
    let a: f64 = 6_378_137.0;
    let f: f64 = 1.0 / 298.257_223_563;
    let e2 = f * (2.0 - f);
    let e = e2.sqrt();
    a * a / 2.0 * (1.0 + (1.0 - e2) / e * e.atanh())
}

/// Great-circle distance in meters between two (lat, lng) pairs, by the haversine formula
/// (AQL `DISTANCE`).
pub fn haversine(lat1: f64, lng1: f64, lat2: f64, lng2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = p2 - p1;
    let dl = (lng2 - lng1).to_radians();
    let h = (dp / 2.0).sin().powi(2) + p1.cos() * p2.cos() * (dl / 2.0).sin().powi(2);
    2.0 * EARTH_RADIUS_M * h.sqrt().min(1.0).asin()
}

/// Distance in meters between two points given as unit vectors, on the sphere or on WGS84.
pub fn distance(a: Vec3, b: Vec3, wgs84: bool) -> f64 {
    if wgs84 {
        let (lat1, lng1) = to_lat_lng(a);
        let (lat2, lng2) = to_lat_lng(b);
        let d: f64 = Geodesic::wgs84().inverse(lat1, lng1, lat2, lng2);
        d
    } else {
        angle(a, b) * EARTH_RADIUS_M
    }
}

/// A GeoJSON object for the given kind and coordinates (the constructor functions).
pub fn geojson(kind: &str, coordinates: Value) -> Value {
    json!({"type": kind, "coordinates": coordinates})
}

/// A latitude/longitude rectangle (degrees); `lng_lo > lng_hi` wraps across the antimeridian.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    pub lat_lo: f64,
    pub lat_hi: f64,
    pub lng_lo: f64,
    pub lng_hi: f64,
}

impl Rect {
    pub const WORLD: Rect = Rect {
        lat_lo: -90.0,
        lat_hi: 90.0,
        lng_lo: -180.0,
        lng_hi: 180.0,
    };

    pub fn contains(&self, lat: f64, lng: f64) -> bool {
        let lng_ok = if self.lng_lo <= self.lng_hi {
            lng >= self.lng_lo && lng <= self.lng_hi
        } else {
            lng >= self.lng_lo || lng <= self.lng_hi
        };
        lat >= self.lat_lo && lat <= self.lat_hi && lng_ok
    }

    /// The bounding rectangle of the spherical cap of `radius` radians around (lat, lng):
    /// latitudes widen by the radius; longitudes by the largest longitude offset a point of
    /// the cap can have, and to the whole circle when the cap reaches a pole.
    pub fn around_cap(lat: f64, lng: f64, radius: f64) -> Rect {
        let r = radius.to_degrees();
        let lat_lo = lat - r;
        let lat_hi = lat + r;
        if lat_lo <= -90.0 || lat_hi >= 90.0 || radius >= std::f64::consts::FRAC_PI_2 {
            return Rect {
                lat_lo: lat_lo.max(-90.0),
                lat_hi: lat_hi.min(90.0),
                lng_lo: -180.0,
                lng_hi: 180.0,
            };
        }
        let d_lng = (radius.sin() / lat.to_radians().cos())
            .min(1.0)
            .asin()
            .to_degrees();
        let mut lng_lo = lng - d_lng;
        let mut lng_hi = lng + d_lng;
        if lng_hi - lng_lo >= 360.0 {
            lng_lo = -180.0;
            lng_hi = 180.0;
        } else {
            if lng_lo < -180.0 {
                lng_lo += 360.0;
            }
            if lng_hi > 180.0 {
                lng_hi -= 360.0;
            }
        }
        Rect {
            lat_lo,
            lat_hi,
            lng_lo,
            lng_hi,
        }
    }

    /// A rectangle covering every point of `shape` (edges bulge towards the poles, so
    /// latitudes are widened by each edge's maximal excursion).
    pub fn bounding(shape: &Shape) -> Rect {
        if shape.is_area() {
            // Conservative: an area may enclose a pole or wrap around; test the poles.
            let north = shape.region_contains([0.0, 0.0, 1.0]);
            let south = shape.region_contains([0.0, 0.0, -1.0]);
            if north || south {
                let mut r = Rect::of_vertices(shape);
                if north {
                    r.lat_hi = 90.0;
                }
                if south {
                    r.lat_lo = -90.0;
                }
                r.lng_lo = -180.0;
                r.lng_hi = 180.0;
                return r;
            }
        }
        Rect::of_vertices(shape)
    }

    fn of_vertices(shape: &Shape) -> Rect {
        let mut lat_lo = 90.0f64;
        let mut lat_hi = -90.0f64;
        let mut lngs: Vec<f64> = Vec::new();
        for v in shape.vertices() {
            let (lat, lng) = to_lat_lng(v);
            lat_lo = lat_lo.min(lat);
            lat_hi = lat_hi.max(lat);
            lngs.push(lng);
        }
        for (a, b) in shape.edges() {
            // A great-circle arc bulges towards a pole: its extreme latitudes may lie inside
            // the arc rather than at the vertices.
            let n = normalize(cross(a, b));
            let peak = normalize(add([0.0, 0.0, 1.0], scale(n, -n[2])));
            for p in [peak, scale(peak, -1.0)] {
                if norm(p) > 0.5 && on_arc(p, a, b) {
                    let (lat, _) = to_lat_lng(p);
                    lat_lo = lat_lo.min(lat);
                    lat_hi = lat_hi.max(lat);
                }
            }
        }
        // Longitudes: the smallest arc of the circle holding all of them.
        lngs.sort_by(f64::total_cmp);
        let mut best = (
            lngs[0],
            lngs[lngs.len() - 1],
            lngs[lngs.len() - 1] - lngs[0],
        );
        for w in lngs.windows(2) {
            let gap = w[1] - w[0];
            if 360.0 - gap < best.2 {
                best = (w[1], w[0], 360.0 - gap);
            }
        }
        // Edges can stray past their vertices' longitudes only when they span more than
        // 180 degrees, which the validation's distinct-vertex rule leaves possible; add a
        // margin proportional to the latitude excursion.
        let margin = 1e-9;
        let (mut lng_lo, mut lng_hi) = (best.0 - margin, best.1 + margin);
        if best.2 >= 180.0 {
            lng_lo = -180.0;
            lng_hi = 180.0;
        }
        if lng_lo < -180.0 {
            lng_lo += 360.0;
        }
        if lng_hi > 180.0 {
            lng_hi -= 360.0;
        }
        Rect {
            lat_lo: (lat_lo - 1e-9).max(-90.0),
            lat_hi: (lat_hi + 1e-9).min(90.0),
            lng_lo,
            lng_hi,
        }
    }
}

/// The value at a dotted attribute path (`a.b.c`) of a document.
pub fn attribute<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = doc;
    for part in path.split('.') {
        current = current.as_object()?.get(part)?;
    }
    Some(current)
}

/// How a geo index reads a document, from its definition's `fields` and `geoJson`.
#[derive(Clone, Debug, PartialEq)]
pub enum GeoFields {
    /// One attribute holding `[lat, lng]` (`geoJson: false`) or GeoJSON / `[lng, lat]`.
    One { path: String, geo_json: bool },
    /// Two attributes: latitude and longitude.
    Two { lat: String, lng: String },
}

impl GeoFields {
    /// From an index description (`fields`, `geoJson`); None for a malformed one.
    pub fn from_definition(index: &Value) -> Option<GeoFields> {
        let fields: Vec<&str> = index
            .get("fields")?
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let geo_json = index
            .get("geoJson")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        match fields.as_slice() {
            [one] => Some(GeoFields::One {
                path: (*one).to_string(),
                geo_json,
            }),
            [lat, lng] => Some(GeoFields::Two {
                lat: (*lat).to_string(),
                lng: (*lng).to_string(),
            }),
            _ => None,
        }
    }

    /// The shape a document contributes, None when its attributes are missing or invalid
    /// (geo indexes are sparse: such documents are simply not indexed).
    pub fn shape(&self, doc: &Value, legacy: bool) -> Option<Shape> {
        match self {
            GeoFields::Two { lat, lng } => {
                let lat = attribute(doc, lat)?.as_f64()?;
                let lng = attribute(doc, lng)?.as_f64()?;
                check_lat_lng(lat, lng).ok()?;
                Some(Shape::point(lat, lng))
            }
            GeoFields::One { path, geo_json } => {
                let value = attribute(doc, path)?;
                if *geo_json {
                    Shape::parse_with(value, legacy).ok()
                } else {
                    let pair = value.as_array().filter(|a| a.len() == 2)?;
                    let (lat, lng) = (pair[0].as_f64()?, pair[1].as_f64()?);
                    check_lat_lng(lat, lng).ok()?;
                    Some(Shape::point(lat, lng))
                }
            }
        }
    }

    /// The point of a document for distance queries: the position, or a shape's centroid.
    pub fn point(&self, doc: &Value) -> Option<(f64, f64)> {
        let shape = self.shape(doc, false)?;
        if shape.kind == ShapeKind::Point {
            return shape.coords.first()?.first().copied();
        }
        Some(to_lat_lng(shape.centroid()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn poly(coords: Value) -> Shape {
        Shape::parse(&json!({"type": "Polygon", "coordinates": coords})).unwrap()
    }

    #[test]
    fn haversine_matches_the_documented_example() {
        let d = haversine(52.5163, 13.3777, 50.9322, 6.94);
        assert!((d - 476_918.896_883_809_65).abs() < 1.0, "{d}");
    }

    #[test]
    fn polygon_interior_is_left_of_the_outer_ring() {
        let ccw = poly(json!([[[4, 54], [4, 47], [16, 47], [16, 54], [4, 54]]]));
        assert!(ccw.contains_point(to_vec(50.0, 10.0)));
        assert!(!ccw.contains_point(to_vec(90.0, 0.0)));
        // Geodesic edges: the southern edge bulges north of 47 degrees.
        assert!(!ccw.contains_point(to_vec(47.0, 10.0)));
        assert!(ccw.contains_point(to_vec(54.0, 10.0)));
        let cw = poly(json!([[[4, 54], [16, 54], [16, 47], [4, 47], [4, 54]]]));
        assert!(!cw.contains_point(to_vec(50.0, 10.0)));
        assert!(cw.contains_point(to_vec(90.0, 0.0)));
        assert!(cw.area(false) > ccw.area(false) * 10.0);
    }

    #[test]
    fn holes_and_validation() {
        let with_hole = poly(json!([
            [
                [100.0, 0.0],
                [101.0, 0.0],
                [101.0, 1.0],
                [100.0, 1.0],
                [100.0, 0.0]
            ],
            [
                [100.8, 0.8],
                [100.8, 0.2],
                [100.2, 0.2],
                [100.2, 0.8],
                [100.8, 0.8]
            ]
        ]));
        assert!(!with_hole.contains_point(to_vec(0.5, 100.5)));
        assert!(with_hole.contains_point(to_vec(0.1, 100.5)));
        let full = poly(json!([[
            [100.0, 0.0],
            [101.0, 0.0],
            [101.0, 1.0],
            [100.0, 1.0],
            [100.0, 0.0]
        ]]));
        assert!(
            (full.area(false) - with_hole.area(false) - 0.36 * 111_195.0f64.powi(2)).abs() < 3e8
        );
        for bad_coords in [
            json!([]),
            json!([[[0, 0], [1, 1], [0, 0]]]),
            json!([[[0, 0], [1, 0], [1, 1], [0, 1]]]),
            json!([[[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]]]),
            json!([[[0, 0], [1, 0], [1, 200], [0, 0]]]),
        ] {
            assert!(
                Shape::parse(&json!({"type": "Polygon", "coordinates": bad_coords})).is_err(),
                "{bad_coords}"
            );
        }
    }

    #[test]
    fn areas_on_sphere_and_ellipsoid() {
        // One degree square at the equator: about 12,364 km² on the 6371 km sphere.
        let square = poly(json!([[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]));
        let sphere = square.area(false);
        let expected = 1f64.to_radians() * (1f64.to_radians().sin()) * EARTH_RADIUS_M.powi(2);
        assert!(
            (sphere / expected - 1.0).abs() < 1e-3,
            "{sphere} vs {expected}"
        );
        let wgs = square.area(true);
        assert!((wgs / 12_308_778_361.0 - 1.0).abs() < 2e-3, "{wgs}");
    }

    #[test]
    fn contains_and_intersects() {
        let square = poly(json!([[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]));
        let inner = poly(json!([[[1, 1], [2, 1], [2, 2], [1, 2], [1, 1]]]));
        let crossing = poly(json!([[[5, 5], [15, 5], [15, 6], [5, 6], [5, 5]]]));
        let outside = Shape::parse(&json!([20, 20])).unwrap();
        assert!(square.contains(&inner));
        assert!(!inner.contains(&square));
        assert!(!square.contains(&crossing));
        assert!(square.intersects(&crossing) && crossing.intersects(&square));
        assert!(!square.intersects(&outside));
        let line = Shape::parse(&json!({"type": "LineString", "coordinates": [[-5, 5], [15, 5]]}))
            .unwrap();
        assert!(square.intersects(&line) && !square.contains(&line));
        assert!(Shape::parse(&json!([5, 5])).unwrap().intersects(&square));
        let p = Shape::parse(&json!({"type": "Point", "coordinates": [5, 5]})).unwrap();
        assert!(p.equals(&Shape::parse(&json!([5, 5])).unwrap()));
        assert!(!p.equals(&Shape::parse(&json!([5, 6])).unwrap()));
    }

    #[test]
    fn centroids() {
        let square = poly(json!([[[0, 0], [2, 0], [2, 2], [0, 2], [0, 0]]]));
        let (lat, lng) = to_lat_lng(square.centroid());
        assert!(
            (lat - 1.0).abs() < 1e-3 && (lng - 1.0).abs() < 1e-3,
            "{lat} {lng}"
        );
        let line =
            Shape::parse(&json!({"type": "LineString", "coordinates": [[0, 0], [10, 0]]})).unwrap();
        let (lat, lng) = to_lat_lng(line.centroid());
        assert!(lat.abs() < 1e-9 && (lng - 5.0).abs() < 1e-9);
    }

    #[test]
    fn cap_rectangles_hold_the_cap() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..2000 {
            let (lat, lng) = (rng.gen_range(-89.0..89.0), rng.gen_range(-180.0..180.0));
            let radius: f64 = rng.gen_range(0.0001..1.0);
            let rect = Rect::around_cap(lat, lng, radius);
            let (plat, plng) = (rng.gen_range(-90.0..90.0), rng.gen_range(-180.0..180.0));
            if angle(to_vec(lat, lng), to_vec(plat, plng)) <= radius {
                assert!(
                    rect.contains(plat, plng),
                    "{lat} {lng} {radius} {plat} {plng}"
                );
            }
        }
    }
}
