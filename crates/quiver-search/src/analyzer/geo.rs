//! `geojson` and `geopoint`: definitions are validated and normalized as ArangoDB does. They
//! take a JSON value rather than text (a GeoJSON geometry or `[lng, lat]`; a `[lat, lng]` pair
//! or an object with latitude and longitude attributes) and index the cells of the grid of
//! `quiver_geo::cells` that cover its shape ([`GeoAnalyzer`]); from text they produce nothing.

use quiver_errors::Result;
use quiver_geo::cells::CoverOptions;
use quiver_geo::{check_lat_lng, to_lat_lng, Shape, ShapeKind};
use serde_json::{json, Map, Value};

use super::props::{bool_or, choice, object, string_array, unsigned};
use super::{Built, Rejection, Token, TokenStream};

/// The finest cell level (S2's and the grid's).
const S2_LEVEL_MAX: u64 = quiver_geo::cells::MAX_LEVEL as u64;

#[derive(Debug)]
struct Geo;

impl TokenStream for Geo {
    fn analyze(&self, _input: &str, _strict: bool, _out: &mut Vec<Token>) -> Result<()> {
        Ok(())
    }
}

/// The `options` object of geo analyzers: `maxCells` 20, `minLevel` 4, `maxLevel` 23.
fn options(props: &Map<String, Value>) -> Result<Value, Rejection> {
    let options = match props.get("options") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(options)) => options.clone(),
        Some(_) => return Err("'options' must be an object".to_string()),
    };
    let max_cells = unsigned(&options, "maxCells", Some(20), u64::from(i32::MAX as u32))?;
    let min_level = unsigned(&options, "minLevel", Some(4), S2_LEVEL_MAX)?;
    let max_level = unsigned(&options, "maxLevel", Some(23), S2_LEVEL_MAX)?;
    if max_cells == 0 {
        return Err("'options.maxCells' must be at least 1".to_string());
    }
    if min_level > max_level {
        return Err("'options.minLevel' must not be greater than 'options.maxLevel'".into());
    }
    Ok(json!({ "maxCells": max_cells, "minLevel": min_level, "maxLevel": max_level }))
}

/// `{"type": "shape"|"centroid"|"point" = "shape", "options": {…}, "legacy": false}`.
pub(crate) fn build_geojson(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let kind = choice(props, "type", &["shape", "centroid", "point"], "shape")?;
    let options = options(props)?;
    let legacy = bool_or(props, "legacy", false)?;
    Ok(Built {
        properties: json!({ "type": kind, "options": options, "legacy": legacy }),
        stream: Box::new(Geo),
    })
}

/// `{"latitude": [path], "longitude": [path], "options": {…}}` (both paths or neither).
pub(crate) fn build_geopoint(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let latitude = string_array(props, "latitude", true)?;
    let longitude = string_array(props, "longitude", true)?;
    if latitude.is_empty() != longitude.is_empty() {
        return Err("'latitude' and 'longitude' must be given together".to_string());
    }
    let options = options(props)?;
    Ok(Built {
        properties: json!({ "latitude": latitude, "longitude": longitude, "options": options }),
        stream: Box::new(Geo),
    })
}

/// What a `geojson` analyzer keeps of a geometry (its `type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeoJsonKind {
    /// The whole shape.
    Shape,
    /// Only its centroid.
    Centroid,
    /// Only Point geometries; other shapes are not indexed.
    Point,
}

/// How a geo analyzer reads a value.
#[derive(Clone, Debug, PartialEq)]
pub enum GeoInput {
    /// `geojson`: a GeoJSON geometry, or `[lng, lat]`; `legacy` takes the smaller region as
    /// a polygon's interior.
    Json { kind: GeoJsonKind, legacy: bool },
    /// `geopoint`: `[lat, lng]`, or an object with the numbers at these attribute paths.
    Point {
        latitude: Vec<String>,
        longitude: Vec<String>,
    },
}

/// A geo analyzer's configuration, read from its normalized properties.
#[derive(Clone, Debug, PartialEq)]
pub struct GeoAnalyzer {
    pub input: GeoInput,
    pub cover: CoverOptions,
}

fn path_value<'a>(value: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter()
        .try_fold(value, |v, name| v.as_object()?.get(name))
}

impl GeoAnalyzer {
    /// From a `geojson` or `geopoint` analyzer's type and normalized properties.
    pub fn from_properties(kind: &str, properties: &Value) -> Option<GeoAnalyzer> {
        if kind != "geojson" && kind != "geopoint" {
            return None;
        }
        let options = properties.get("options");
        let number = |name: &str, default: u64| {
            options
                .and_then(|o| o.get(name))
                .and_then(Value::as_u64)
                .unwrap_or(default)
        };
        let defaults = CoverOptions::default();
        let cover = CoverOptions {
            max_cells: number("maxCells", defaults.max_cells),
            min_level: number("minLevel", u64::from(defaults.min_level)).min(S2_LEVEL_MAX) as u32,
            max_level: number("maxLevel", u64::from(defaults.max_level)).min(S2_LEVEL_MAX) as u32,
        };
        let strings = |name: &str| -> Vec<String> {
            properties
                .get(name)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let input = match kind {
            "geojson" => GeoInput::Json {
                kind: match properties.get("type").and_then(Value::as_str) {
                    Some("centroid") => GeoJsonKind::Centroid,
                    Some("point") => GeoJsonKind::Point,
                    _ => GeoJsonKind::Shape,
                },
                legacy: properties
                    .get("legacy")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            },
            "geopoint" => GeoInput::Point {
                latitude: strings("latitude"),
                longitude: strings("longitude"),
            },
            _ => return None,
        };
        Some(GeoAnalyzer { input, cover })
    }

    /// Whether polygons are read with the pre-3.10 rule (the smaller region is the interior).
    pub fn legacy(&self) -> bool {
        matches!(self.input, GeoInput::Json { legacy: true, .. })
    }

    /// The shape this analyzer indexes for `value`, None when it indexes nothing (not a
    /// geometry it reads, invalid coordinates, or a non-point under `type: "point"`).
    pub fn shape(&self, value: &Value) -> Option<Shape> {
        match &self.input {
            GeoInput::Json { kind, legacy } => {
                if !matches!(value, Value::Object(_) | Value::Array(_)) {
                    return None;
                }
                let shape = Shape::parse_with(value, *legacy).ok()?;
                match kind {
                    GeoJsonKind::Shape => Some(shape),
                    GeoJsonKind::Point => (shape.kind == ShapeKind::Point).then_some(shape),
                    GeoJsonKind::Centroid => {
                        let (lat, lng) = to_lat_lng(shape.centroid());
                        Some(Shape::point(lat, lng))
                    }
                }
            }
            GeoInput::Point {
                latitude,
                longitude,
            } => {
                let (lat, lng) = if latitude.is_empty() {
                    let pair = value.as_array().filter(|a| a.len() == 2)?;
                    (pair[0].as_f64()?, pair[1].as_f64()?)
                } else {
                    (
                        path_value(value, latitude)?.as_f64()?,
                        path_value(value, longitude)?.as_f64()?,
                    )
                };
                check_lat_lng(lat, lng).ok()?;
                Some(Shape::point(lat, lng))
            }
        }
    }
}
