//! Geo functions (docs: aql/functions/geo.md) and `FULLTEXT` (aql/functions/fulltext.md).
//!
//! The geometry lives in `quiver_core::geo` (shared with the geo index). Invalid GeoJSON is
//! a warning (error 10, with the parser's reason) and a `null` result, as in ArangoDB; the
//! index functions `NEAR`, `WITHIN`, `WITHIN_RECTANGLE` and `FULLTEXT` fail with 1570/1571 when
//! the collection has no suitable index.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use quiver_core::fulltext;
use quiver_core::geo::{self, GeoFields, Rect, Shape};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use super::{arg, def, reading, FunctionContext, FunctionDef};
use crate::source::DocIter;

pub(crate) const FUNCTIONS: &[FunctionDef] = &[
    def("DISTANCE", 4, 4, distance),
    def("GEO_DISTANCE", 2, 3, geo_distance),
    def("GEO_CONTAINS", 2, 2, geo_contains),
    def("GEO_INTERSECTS", 2, 2, geo_intersects),
    def("GEO_EQUALS", 2, 2, geo_equals),
    def("GEO_IN_RANGE", 4, 6, geo_in_range),
    def("GEO_AREA", 1, 2, geo_area),
    def("GEO_POINT", 2, 2, geo_point),
    def("GEO_MULTIPOINT", 1, 1, geo_multipoint),
    def("GEO_LINESTRING", 1, 1, geo_linestring),
    def("GEO_MULTILINESTRING", 1, 1, geo_multilinestring),
    def("GEO_POLYGON", 1, 1, geo_polygon),
    def("GEO_MULTIPOLYGON", 1, 1, geo_multipolygon),
    def("IS_IN_POLYGON", 2, 3, is_in_polygon),
    reading("NEAR", 3, 5, near).with_collection_args(&[0]),
    reading("WITHIN", 4, 5, within).with_collection_args(&[0]),
    reading("WITHIN_RECTANGLE", 5, 5, within_rectangle).with_collection_args(&[0]),
    reading("FULLTEXT", 3, 4, fulltext_fn).with_collection_args(&[0]),
];

/// Parses a GeoJSON argument; on failure registers the parser's reason and yields None.
fn shape_arg(ctx: &mut FunctionContext<'_>, value: &Value) -> Option<Shape> {
    match Shape::parse(value) {
        Ok(shape) => Some(shape),
        Err(e) => {
            ctx.warn_null(e.code, &e.message);
            None
        }
    }
}

/// `"sphere"` (default) or `"wgs84"`; anything else is a warning.
fn ellipsoid_arg(ctx: &mut FunctionContext<'_>, value: &Value) -> Option<bool> {
    match value {
        Value::Null => Some(false),
        Value::String(s) if s == "sphere" => Some(false),
        Value::String(s) if s == "wgs84" => Some(true),
        _ => {
            ctx.warn_null(
                ErrorCode::BadParameter,
                "invalid ellipsoid, supported are \"sphere\" and \"wgs84\"",
            );
            None
        }
    }
}

fn distance(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let mut n = [0.0; 4];
    for (i, slot) in n.iter_mut().enumerate() {
        match arg(args, i).as_f64() {
            Some(x) => *slot = x,
            None => return Ok(ctx.invalid_argument()),
        }
    }
    Ok(json!(geo::haversine(n[0], n[1], n[2], n[3])))
}

fn geo_distance(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(wgs84) = ellipsoid_arg(ctx, arg(args, 2)) else {
        return Ok(Value::Null);
    };
    let (Some(a), Some(b)) = (shape_arg(ctx, arg(args, 0)), shape_arg(ctx, arg(args, 1))) else {
        return Ok(Value::Null);
    };
    Ok(json!(geo::distance(a.centroid(), b.centroid(), wgs84)))
}

fn geo_in_range(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let (Some(low), Some(high)) = (arg(args, 2).as_f64(), arg(args, 3).as_f64()) else {
        return Ok(ctx.invalid_argument());
    };
    let flag = |v: &Value| match v {
        Value::Null => Some(true),
        Value::Bool(b) => Some(*b),
        _ => None,
    };
    let (Some(include_low), Some(include_high)) = (flag(arg(args, 4)), flag(arg(args, 5))) else {
        return Ok(ctx.invalid_argument());
    };
    let (Some(a), Some(b)) = (shape_arg(ctx, arg(args, 0)), shape_arg(ctx, arg(args, 1))) else {
        return Ok(Value::Null);
    };
    let d = geo::distance(a.centroid(), b.centroid(), false);
    let above = if include_low { d >= low } else { d > low };
    let below = if include_high { d <= high } else { d < high };
    Ok(Value::Bool(above && below))
}

fn geo_contains(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let (Some(a), Some(b)) = (shape_arg(ctx, arg(args, 0)), shape_arg(ctx, arg(args, 1))) else {
        return Ok(Value::Null);
    };
    if !a.is_area() {
        return Ok(ctx.warn_null(
            ErrorCode::BadParameter,
            "Only Polygon and MultiPolygon types are valid as first argument",
        ));
    }
    Ok(Value::Bool(a.contains(&b)))
}

fn geo_intersects(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let (Some(a), Some(b)) = (shape_arg(ctx, arg(args, 0)), shape_arg(ctx, arg(args, 1))) else {
        return Ok(Value::Null);
    };
    Ok(Value::Bool(a.intersects(&b)))
}

fn geo_equals(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let (Some(a), Some(b)) = (shape_arg(ctx, arg(args, 0)), shape_arg(ctx, arg(args, 1))) else {
        return Ok(Value::Null);
    };
    Ok(Value::Bool(a.equals(&b)))
}

fn geo_area(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(wgs84) = ellipsoid_arg(ctx, arg(args, 1)) else {
        return Ok(Value::Null);
    };
    let Some(shape) = shape_arg(ctx, arg(args, 0)) else {
        return Ok(Value::Null);
    };
    Ok(json!(shape.area(wgs84)))
}

fn geo_point(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let (Some(lng), Some(lat)) = (arg(args, 0).as_f64(), arg(args, 1).as_f64()) else {
        return Ok(ctx.invalid_argument());
    };
    Ok(geo::geojson("Point", json!([lng, lat])))
}

/// Whether `v` is an array of at least `min` `[number, number]` positions.
fn is_positions(v: &Value, min: usize) -> bool {
    v.as_array().is_some_and(|items| {
        items.len() >= min
            && items.iter().all(|p| {
                p.as_array()
                    .is_some_and(|p| p.len() >= 2 && p.iter().all(Value::is_number))
            })
    })
}

fn geo_multipoint(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    constructor(ctx, arg(args, 0), "MultiPoint", |v| is_positions(v, 2))
}

fn geo_linestring(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    constructor(ctx, arg(args, 0), "LineString", |v| is_positions(v, 2))
}

fn geo_multilinestring(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    constructor(ctx, arg(args, 0), "MultiLineString", |v| {
        v.as_array()
            .is_some_and(|lines| !lines.is_empty() && lines.iter().all(|l| is_positions(l, 2)))
    })
}

/// Builds a GeoJSON object of `kind` after a shape check and a full parse (so that what is
/// returned is valid GeoJSON), warning and returning null otherwise.
fn constructor(
    ctx: &mut FunctionContext<'_>,
    coordinates: &Value,
    kind: &str,
    shape_ok: impl Fn(&Value) -> bool,
) -> Result<Value> {
    if !coordinates.is_array() {
        return Ok(ctx.invalid_argument());
    }
    if !shape_ok(coordinates) {
        return Ok(ctx.warn_null(
            ErrorCode::BadParameter,
            &format!("invalid coordinates for a {kind}"),
        ));
    }
    let object = geo::geojson(kind, coordinates.clone());
    match Shape::parse(&object) {
        Ok(_) => Ok(object),
        Err(e) => Ok(ctx.warn_null(e.code, &e.message)),
    }
}

fn geo_polygon(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let points = arg(args, 0);
    // A plain ring is accepted as well as a list of rings.
    let coordinates = if is_positions(points, 1) {
        json!([points])
    } else {
        points.clone()
    };
    constructor(ctx, &coordinates, "Polygon", |v| {
        v.as_array()
            .is_some_and(|rings| !rings.is_empty() && rings.iter().all(|r| is_positions(r, 4)))
    })
}

fn geo_multipolygon(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    constructor(ctx, arg(args, 0), "MultiPolygon", |v| {
        v.as_array().is_some_and(|polygons| {
            polygons.len() >= 2
                && polygons.iter().all(|p| {
                    p.as_array().is_some_and(|rings| {
                        !rings.is_empty() && rings.iter().all(|r| is_positions(r, 4))
                    })
                })
        })
    })
}

/// The pre-GeoJSON point-in-polygon test: `[lat, lng]` pairs (or `[lng, lat]` with
/// `useLonLat`), open or closed ring, interior = the smaller region.
fn is_in_polygon(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let polygon = arg(args, 0);
    if !is_positions(polygon, 3) {
        return Ok(ctx.invalid_argument());
    }
    let (lat, lng, lon_lat) = match (arg(args, 1), arg(args, 2)) {
        (Value::Array(pair), flag) if pair.len() == 2 => {
            let lon_lat = match flag {
                Value::Null => false,
                Value::Bool(b) => *b,
                _ => return Ok(ctx.invalid_argument()),
            };
            let (Some(x), Some(y)) = (pair[0].as_f64(), pair[1].as_f64()) else {
                return Ok(ctx.invalid_argument());
            };
            if lon_lat {
                (y, x, true)
            } else {
                (x, y, false)
            }
        }
        (a, b) => match (a.as_f64(), b.as_f64()) {
            (Some(lat), Some(lng)) => (lat, lng, false),
            _ => return Ok(ctx.invalid_argument()),
        },
    };
    let mut ring: Vec<Value> = polygon
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|p| {
                    let (x, y) = (p[0].as_f64().unwrap_or(0.0), p[1].as_f64().unwrap_or(0.0));
                    if lon_lat {
                        json!([x, y])
                    } else {
                        json!([y, x])
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    if ring.first() != ring.last() {
        ring.push(ring[0].clone());
    }
    if geo::check_lat_lng(lat, lng).is_err() {
        return Ok(ctx.invalid_argument());
    }
    match Shape::parse_with(&geo::geojson("Polygon", json!([ring])), true) {
        Ok(shape) => Ok(Value::Bool(shape.contains_point(geo::to_vec(lat, lng)))),
        Err(e) => Ok(ctx.warn_null(e.code, &e.message)),
    }
}

fn collection_arg(ctx: &mut FunctionContext<'_>, value: &Value) -> Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        _ => Err(Error::with_message(
            ErrorCode::QueryFunctionArgumentTypeMismatch,
            format!(
                "invalid argument type in call to function '{}()'",
                ctx.function_name()
            ),
        )),
    }
}

/// The first geo index of `collection` (its numeric id and how it reads documents), or 1570.
fn geo_index(ctx: &FunctionContext<'_>, collection: &str) -> Result<(Option<u64>, GeoFields)> {
    let data = ctx.data()?;
    data.indexes(collection)?
        .iter()
        .filter(|i| {
            matches!(
                i.get("type").and_then(Value::as_str),
                Some("geo" | "geo1" | "geo2")
            )
        })
        .find_map(|i| {
            let id = i
                .get("id")
                .and_then(Value::as_str)
                .and_then(|h| h.rsplit('/').next())
                .and_then(|n| n.parse().ok());
            GeoFields::from_definition(i).map(|f| (id, f))
        })
        .ok_or_else(|| {
            Error::with_message(
                ErrorCode::QueryGeoIndexMissing,
                format!("no suitable geo index found for geo restriction on '{collection}'"),
            )
        })
}

/// Candidates for `rect` through the geo index when the source can use it, else every
/// document of the collection.
fn geo_candidates(
    ctx: &FunctionContext<'_>,
    collection: &str,
    index: Option<u64>,
    rect: &Rect,
) -> Result<DocIter> {
    let data = ctx.data()?;
    if let Some(id) = index {
        if let Some(docs) = data.geo_lookup(collection, id, rect)? {
            return Ok(Box::new(docs.into_iter().map(Ok)));
        }
    }
    data.scan(collection)
}

/// A document with its distance, ordered by distance (then key) for the top-k heap.
struct ByDistance(f64, String, Value);

impl PartialEq for ByDistance {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for ByDistance {}
impl PartialOrd for ByDistance {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ByDistance {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0
            .total_cmp(&other.0)
            .then_with(|| self.1.cmp(&other.1))
    }
}

/// The documents with an indexed point, their distance to (lat, lng), kept when
/// `keep(distance)`, closest first, at most `limit`.
fn by_distance(
    ctx: &FunctionContext<'_>,
    docs: DocIter,
    fields: &GeoFields,
    lat: f64,
    lng: f64,
    limit: usize,
    keep: impl Fn(f64) -> bool,
) -> Result<Vec<ByDistance>> {
    // A max-heap of the best `limit` so far: memory stays bounded by the limit.
    let mut heap: BinaryHeap<ByDistance> = BinaryHeap::new();
    for doc in docs {
        if ctx.is_killed() {
            return Err(Error::new(ErrorCode::QueryKilled));
        }
        let doc = doc?;
        let Some((dlat, dlng)) = fields.point(&doc) else {
            continue;
        };
        let d = geo::haversine(lat, lng, dlat, dlng);
        if !keep(d) {
            continue;
        }
        let key = doc
            .get("_key")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let entry = ByDistance(d, key, doc);
        if heap.len() < limit {
            heap.push(entry);
        } else if heap.peek().is_some_and(|worst| entry < *worst) {
            heap.pop();
            heap.push(entry);
        }
    }
    Ok(heap.into_sorted_vec())
}

/// The `limit` documents closest to (lat, lng). Through the index: caps of growing radius
/// until one holds `limit` documents — every document within the cap's radius is among the
/// candidates, so once `limit` of them lie within it, nothing outside can be closer.
fn nearest(
    ctx: &FunctionContext<'_>,
    collection: &str,
    index: Option<u64>,
    fields: &GeoFields,
    (lat, lng): (f64, f64),
    limit: usize,
) -> Result<Vec<ByDistance>> {
    let data = ctx.data()?;
    if let Some(id) = index {
        let mut radius = 1_000.0 / geo::EARTH_RADIUS_M;
        // At most ~12 rounds: the radius quadruples up to half the globe.
        loop {
            let rect = Rect::around_cap(lat, lng, radius);
            let Some(docs) = data.geo_lookup(collection, id, &rect)? else {
                break;
            };
            let bound = radius * geo::EARTH_RADIUS_M;
            let whole = radius >= std::f64::consts::PI;
            let found = by_distance(
                ctx,
                Box::new(docs.into_iter().map(Ok)),
                fields,
                lat,
                lng,
                limit,
                |d| whole || d <= bound,
            )?;
            if found.len() >= limit || whole {
                return Ok(found);
            }
            radius = (radius * 4.0).min(std::f64::consts::PI);
        }
    }
    by_distance(ctx, data.scan(collection)?, fields, lat, lng, limit, |_| {
        true
    })
}

fn with_distance(found: Vec<ByDistance>, name: &Value) -> Value {
    Value::Array(
        found
            .into_iter()
            .map(|ByDistance(d, _, mut doc)| {
                if let (Value::String(attr), Value::Object(map)) = (name, &mut doc) {
                    map.insert(attr.clone(), json!(d));
                }
                doc
            })
            .collect(),
    )
}

fn near(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let collection = collection_arg(ctx, arg(args, 0))?;
    let (index, fields) = geo_index(ctx, &collection)?;
    let (Some(lat), Some(lng)) = (arg(args, 1).as_f64(), arg(args, 2).as_f64()) else {
        return Ok(ctx.invalid_argument());
    };
    let limit = match arg(args, 3) {
        Value::Null => 100,
        v => match v.as_f64() {
            Some(n) if n >= 0.0 => n.min(1e9) as usize,
            _ => return Ok(ctx.invalid_argument()),
        },
    };
    let found = nearest(ctx, &collection, index, &fields, (lat, lng), limit)?;
    Ok(with_distance(found, arg(args, 4)))
}

fn within(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let collection = collection_arg(ctx, arg(args, 0))?;
    let (index, fields) = geo_index(ctx, &collection)?;
    let (Some(lat), Some(lng), Some(radius)) = (
        arg(args, 1).as_f64(),
        arg(args, 2).as_f64(),
        arg(args, 3).as_f64(),
    ) else {
        return Ok(ctx.invalid_argument());
    };
    let rect = Rect::around_cap(lat, lng, (radius.max(0.0) / geo::EARTH_RADIUS_M).min(4.0));
    let docs = geo_candidates(ctx, &collection, index, &rect)?;
    let found = by_distance(ctx, docs, &fields, lat, lng, usize::MAX, |d| d <= radius)?;
    Ok(with_distance(found, arg(args, 4)))
}

fn within_rectangle(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let collection = collection_arg(ctx, arg(args, 0))?;
    let (index, fields) = geo_index(ctx, &collection)?;
    let mut n = [0.0; 4];
    for (i, slot) in n.iter_mut().enumerate() {
        match arg(args, i + 1).as_f64() {
            Some(x) => *slot = x,
            None => return Ok(ctx.invalid_argument()),
        }
    }
    let rect = Rect {
        lat_lo: n[0].min(n[2]),
        lat_hi: n[0].max(n[2]),
        lng_lo: n[1],
        lng_hi: n[3],
    };
    let mut out = Vec::new();
    for doc in geo_candidates(ctx, &collection, index, &rect)? {
        if ctx.is_killed() {
            return Err(Error::new(ErrorCode::QueryKilled));
        }
        let doc = doc?;
        if let Some((lat, lng)) = fields.point(&doc) {
            if rect.contains(lat, lng) {
                out.push(doc);
            }
        }
    }
    Ok(Value::Array(out))
}

fn fulltext_fn(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let collection = collection_arg(ctx, arg(args, 0))?;
    let (Value::String(attribute), Value::String(query)) = (arg(args, 1), arg(args, 2)) else {
        return Ok(ctx.invalid_argument());
    };
    let limit = match arg(args, 3) {
        Value::Null => 0,
        v => match v.as_f64() {
            Some(n) if n >= 0.0 => n.min(1e9) as usize,
            _ => return Ok(ctx.invalid_argument()),
        },
    };
    let data = ctx.data()?;
    let (index, min_length) = data
        .indexes(&collection)?
        .iter()
        .find(|i| {
            i.get("type").and_then(Value::as_str) == Some("fulltext")
                && i.get("fields") == Some(&json!([attribute]))
        })
        .map(|i| {
            let id: Option<u64> = i
                .get("id")
                .and_then(Value::as_str)
                .and_then(|h| h.rsplit('/').next())
                .and_then(|n| n.parse().ok());
            let min_length = i.get("minLength").and_then(Value::as_u64).unwrap_or(2);
            (id, (min_length as usize).max(1))
        })
        .ok_or_else(|| {
            Error::with_message(
                ErrorCode::QueryFulltextIndexMissing,
                format!("no suitable fulltext index found for fulltext query on '{collection}'"),
            )
        })?;
    let query = fulltext::Query::parse(query)?;
    // The index narrows the documents to candidates; a source that cannot use it yet (still
    // building, or no index structures at all) hands out the whole collection. Either way
    // each document is re-checked here, so both paths give the same answer.
    let docs: DocIter = match index {
        Some(id) => match data.fulltext_lookup(&collection, id, &query)? {
            Some(docs) => Box::new(docs.into_iter().map(Ok)),
            None => data.scan(&collection)?,
        },
        None => data.scan(&collection)?,
    };
    let mut out = Vec::new();
    for doc in docs {
        if ctx.is_killed() {
            return Err(Error::new(ErrorCode::QueryKilled));
        }
        let doc = doc?;
        let Some(value) = geo::attribute(&doc, attribute) else {
            continue;
        };
        // A document whose attribute yields no word is not in the index (ArangoDB indexes
        // only textual values), so even an exclusion-first query does not return it.
        let words = fulltext::words(value, min_length);
        if !words.is_empty() && query.matches(&words) {
            out.push(doc);
            if limit > 0 && out.len() >= limit {
                break;
            }
        }
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use serde_json::json;

    fn close(v: &serde_json::Value, expected: f64, tolerance: f64) {
        let x = v.as_f64().unwrap_or_else(|| panic!("{v} is not a number"));
        assert!((x - expected).abs() <= tolerance, "{x} vs {expected}");
    }

    #[test]
    fn distances() {
        close(
            &ok(
                "DISTANCE",
                vec![json!(52.5163), json!(13.3777), json!(50.9322), json!(6.94)],
            ),
            476_918.896_883_809_65,
            0.01,
        );
        invalid("DISTANCE", vec![json!("a"), json!(1), json!(2), json!(3)]);
        let berlin = json!([13.3777, 52.5163]);
        let cologne = json!({"type": "Point", "coordinates": [6.94, 50.9322]});
        close(
            &ok("GEO_DISTANCE", vec![berlin.clone(), cologne.clone()]),
            476_918.9,
            1.0,
        );
        let wgs = ok(
            "GEO_DISTANCE",
            vec![berlin.clone(), cologne.clone(), json!("wgs84")],
        );
        close(&wgs, 477_400.0, 1500.0);
        warns(
            "GEO_DISTANCE",
            vec![berlin.clone(), cologne.clone(), json!("mars")],
            10,
        );
        warns(
            "GEO_DISTANCE",
            vec![berlin.clone(), json!({"type": "Point"})],
            10,
        );
        assert_eq!(
            ok(
                "GEO_IN_RANGE",
                vec![
                    berlin.clone(),
                    cologne.clone(),
                    json!(400_000),
                    json!(500_000)
                ]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "GEO_IN_RANGE",
                vec![berlin.clone(), cologne.clone(), json!(0), json!(400_000)]
            ),
            json!(false)
        );
        assert_eq!(
            ok(
                "GEO_IN_RANGE",
                vec![
                    berlin.clone(),
                    berlin.clone(),
                    json!(0),
                    json!(1),
                    json!(false)
                ]
            ),
            json!(false)
        );
        invalid(
            "GEO_IN_RANGE",
            vec![berlin.clone(), cologne, json!("x"), json!(1)],
        );
    }

    #[test]
    fn constructors() {
        assert_eq!(
            ok("GEO_POINT", vec![json!(1.0), json!(2.0)]),
            json!({"type": "Point", "coordinates": [1.0, 2.0]})
        );
        invalid("GEO_POINT", vec![json!("1"), json!(2)]);
        assert_eq!(
            ok("GEO_MULTIPOINT", vec![json!([[35, 10], [45, 45]])])["type"],
            "MultiPoint"
        );
        warns("GEO_MULTIPOINT", vec![json!([[35, 10]])], 10);
        assert_eq!(
            ok("GEO_LINESTRING", vec![json!([[35, 10], [45, 45]])])["type"],
            "LineString"
        );
        assert_eq!(
            ok(
                "GEO_MULTILINESTRING",
                vec![json!([
                    [[100.0, 0.0], [101.0, 1.0]],
                    [[102.0, 2.0], [101.0, 2.3]]
                ])]
            )["type"],
            "MultiLineString"
        );
        let p = ok(
            "GEO_POLYGON",
            vec![json!([[0.0, 0.0], [7.5, 2.5], [0.0, 5.0], [0.0, 0.0]])],
        );
        assert_eq!(
            p,
            json!({"type": "Polygon", "coordinates": [[[0.0, 0.0], [7.5, 2.5], [0.0, 5.0], [0.0, 0.0]]]})
        );
        warns("GEO_POLYGON", vec![json!([[0, 0], [1, 1], [0, 0]])], 10);
        warns(
            "GEO_POLYGON",
            vec![json!([[0, 0], [2, 2], [2, 0], [0, 2], [0, 0]])],
            10,
        );
        invalid("GEO_POLYGON", vec![json!("x")]);
        let mp = ok(
            "GEO_MULTIPOLYGON",
            vec![json!([
                [[[40, 40], [20, 45], [45, 30], [40, 40]]],
                [
                    [[20, 35], [10, 30], [10, 10], [30, 5], [45, 20], [20, 35]],
                    [[30, 20], [20, 15], [20, 25], [30, 20]]
                ]
            ])],
        );
        assert_eq!(mp["type"], "MultiPolygon");
        warns(
            "GEO_MULTIPOLYGON",
            vec![json!([[[[40, 40], [20, 45], [45, 30], [40, 40]]]])],
            10,
        );
    }

    #[test]
    fn predicates_and_area() {
        let square = json!({"type": "Polygon", "coordinates": [[[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]]]});
        assert_eq!(
            ok("GEO_CONTAINS", vec![square.clone(), json!([5, 5])]),
            json!(true)
        );
        assert_eq!(
            ok("GEO_CONTAINS", vec![square.clone(), json!([15, 5])]),
            json!(false)
        );
        warns("GEO_CONTAINS", vec![json!([5, 5]), square.clone()], 10);
        assert_eq!(
            ok(
                "GEO_INTERSECTS",
                vec![
                    square.clone(),
                    json!({"type": "LineString", "coordinates": [[-1, 5], [11, 5]]})
                ]
            ),
            json!(true)
        );
        assert_eq!(
            ok("GEO_EQUALS", vec![square.clone(), square.clone()]),
            json!(true)
        );
        assert_eq!(
            ok("GEO_EQUALS", vec![square.clone(), json!([1, 1])]),
            json!(false)
        );
        close(&ok("GEO_AREA", vec![square.clone()]), 1.2364e12, 0.01e12);
        close(&ok("GEO_AREA", vec![json!([1, 1])]), 0.0, 0.0);
        warns("GEO_AREA", vec![square, json!(1)], 10);
        assert_eq!(
            ok(
                "IS_IN_POLYGON",
                vec![
                    json!([[0, 0], [0, 10], [10, 10], [10, 0]]),
                    json!(4),
                    json!(7)
                ]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "IS_IN_POLYGON",
                vec![json!([[0, 0], [0, 10], [10, 10], [10, 0]]), json!([4, 7])]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "IS_IN_POLYGON",
                vec![
                    json!([[0, 0], [10, 0], [10, 10], [0, 10]]),
                    json!([7, 4]),
                    json!(true)
                ]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "IS_IN_POLYGON",
                vec![
                    json!([[0, 0], [0, 10], [10, 10], [10, 0]]),
                    json!(40),
                    json!(7)
                ]
            ),
            json!(false)
        );
        invalid("IS_IN_POLYGON", vec![json!("x"), json!(4), json!(7)]);
    }

    #[test]
    fn index_functions_need_data() {
        assert_eq!(error("NEAR", vec![json!("c"), json!(1), json!(2)]), 1583);
        assert_eq!(
            error("FULLTEXT", vec![json!("c"), json!("a"), json!("x")]),
            1583
        );
    }
}
