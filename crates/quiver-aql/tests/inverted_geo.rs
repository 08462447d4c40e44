//! Geo functions through an inverted index: `FOR d IN coll OPTIONS {indexHint: "inv",
//! forceIndexHint: true} FILTER GEO_…(d.field, …)` on a field the index holds with a
//! `geojson` or `geopoint` analyzer finds what the full scan finds (random points, lines and
//! polygons, some near the pole and across the antimeridian); the same conditions in SEARCH
//! over a search-alias view of the index too; explain shows the IndexNode and no filter left;
//! a field without a geo analyzer does not serve them (error 1577 when forced); `TOKENS()`
//! with a geo analyzer lists the cell tokens of the value.

mod support;

use std::sync::Arc;

use quiver_aql::source::core::CoreSource;
use quiver_aql::QueryService;
use quiver_core::{CollectionSpec, Core, CoreOptions, InsertOptions};
use serde_json::{json, Value};
use support::geo_places::{quad, wrap, Lcg};
use support::CursorJson;

fn run(service: &QueryService, query: &str) -> Result<Vec<Value>, quiver_errors::Error> {
    let (_, reply) = service.create_cursor_json(
        "_system",
        support::cursor(&json!({"query": query, "batchSize": 10000})),
    )?;
    Ok(reply["result"].as_array().cloned().unwrap_or_default())
}

fn keys(service: &QueryService, query: &str) -> Vec<String> {
    let mut keys: Vec<String> = run(service, query)
        .unwrap_or_else(|e| panic!("{query}: {}", e.message))
        .into_iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    keys.sort();
    keys
}

/// `places` with 400 shapes (`shape`: points, polygons, lines; `pair`: `[lat, lng]`), the
/// inverted indexes `inv` (shape with `geo_json`, pair with `geo_pair`, and `name`) and
/// `plain` (shape with `identity`), and the search-alias view `alias` of `inv`.
fn populate(core: &Core, rng: &mut Lcg) {
    let db = core.database("_system").unwrap();
    for definition in [
        json!({"name": "geo_json", "type": "geojson", "properties": {}}),
        json!({"name": "geo_pair", "type": "geopoint", "properties": {}}),
    ] {
        quiver_core::analyzers::create(
            &db,
            &definition,
            quiver_types::NamingConvention::Traditional,
        )
        .unwrap()
        .wait()
        .unwrap();
    }
    let places = db.create_collection(CollectionSpec::new("places")).unwrap();
    for i in 0..400 {
        let (lat, lng) = rng.place();
        let shape = match i % 4 {
            0 | 1 => json!({"type": "Point", "coordinates": [lng, lat]}),
            2 => quad(lat, lng, rng.range(0.05, 1.5)),
            _ => json!({"type": "LineString", "coordinates": [
                [lng, lat],
                [wrap(lng + rng.range(-1.0, 1.0)), (lat + rng.range(-1.0, 1.0)).clamp(-89.0, 89.0)]
            ]}),
        };
        places
            .insert(
                json!({"_key": format!("p{i}"), "shape": shape, "pair": [lat, lng],
                       "name": format!("n{}", i % 5)}),
                &InsertOptions::default(),
            )
            .unwrap()
            .wait()
            .unwrap();
    }
    places
        .create_index(&json!({"type": "inverted", "name": "inv", "fields": [
            {"name": "shape", "analyzer": "geo_json"},
            {"name": "pair", "analyzer": "geo_pair"},
            "name"]}))
        .unwrap();
    places
        .create_index(&json!({"type": "inverted", "name": "plain", "fields": ["shape"]}))
        .unwrap();
    db.create_view(
        "alias",
        "search-alias",
        &json!({"indexes": [{"collection": "places", "index": "inv"}]}),
    )
    .unwrap();
}

fn open(dir: &std::path::Path) -> (Arc<Core>, QueryService) {
    let core = Arc::new(Core::open(dir, CoreOptions::default()).unwrap());
    let service = QueryService::new(Arc::new(CoreSource::new(Arc::clone(&core))));
    (core, service)
}

const HINT: &str = "OPTIONS {indexHint: 'inv', forceIndexHint: true, waitForSync: true}";

#[test]
fn geo_filters_through_the_index_find_what_the_full_scan_finds() {
    let dir = tempfile::tempdir().unwrap();
    let (core, service) = open(dir.path());
    let mut rng = Lcg(7);
    populate(&core, &mut rng);
    // `pair` is [lat, lng]; the full scan reads it as GeoJSON [lng, lat] after swapping.
    let pair_point = "[d.pair[1], d.pair[0]]";
    let mut matched = 0;
    for round in 0..12 {
        let (lat, lng) = rng.place();
        let origin = format!("[{lng}, {lat}]");
        let radius = [20_000.0, 150_000.0, 600_000.0, 2_500_000.0][round % 4];
        let low = radius * rng.range(0.1, 0.7);
        let region = quad(lat, lng, rng.range(0.5, 4.0)).to_string();
        let cases = [
            (
                format!("GEO_DISTANCE(d.shape, {origin}) <= {radius}"),
                format!("GEO_DISTANCE(d.shape, {origin}) <= {radius}"),
            ),
            (
                format!("GEO_DISTANCE({origin}, d.shape) > {low}"),
                format!("GEO_DISTANCE({origin}, d.shape) > {low}"),
            ),
            (
                format!("{radius} > GEO_DISTANCE(d.shape, {origin})"),
                format!("{radius} > GEO_DISTANCE(d.shape, {origin})"),
            ),
            (
                format!("GEO_IN_RANGE(d.shape, {origin}, {low}, {radius}, false, true)"),
                format!("GEO_IN_RANGE(d.shape, {origin}, {low}, {radius}, false, true)"),
            ),
            (
                format!("GEO_CONTAINS({region}, d.shape)"),
                format!("GEO_CONTAINS({region}, d.shape)"),
            ),
            (
                format!("GEO_INTERSECTS({region}, d.shape)"),
                format!("GEO_INTERSECTS({region}, d.shape)"),
            ),
            (
                format!("GEO_INTERSECTS(d.shape, {region}) AND d.name == 'n1'"),
                format!("GEO_INTERSECTS(d.shape, {region}) AND d.name == 'n1'"),
            ),
            (
                format!(
                    "GEO_INTERSECTS(d.shape, {region}) OR NOT (GEO_DISTANCE(d.shape, {origin}) < {low})"
                ),
                format!(
                    "GEO_INTERSECTS(d.shape, {region}) OR NOT (GEO_DISTANCE(d.shape, {origin}) < {low})"
                ),
            ),
            (
                format!("ANALYZER(GEO_DISTANCE(d.shape, {origin}) < {radius}, 'geo_json')"),
                format!("GEO_DISTANCE(d.shape, {origin}) < {radius}"),
            ),
            (
                format!("GEO_DISTANCE(d.pair, {origin}) < {radius}"),
                format!("GEO_DISTANCE({pair_point}, {origin}) < {radius}"),
            ),
            (
                format!("GEO_IN_RANGE(d.pair, {origin}, {low}, {radius})"),
                format!("GEO_IN_RANGE({pair_point}, {origin}, {low}, {radius})"),
            ),
            (
                format!("GEO_CONTAINS({region}, d.pair)"),
                format!("GEO_CONTAINS({region}, {pair_point})"),
            ),
        ];
        for (indexed, scanned) in &cases {
            let want = keys(
                &service,
                &format!("FOR d IN places FILTER {scanned} RETURN d._key"),
            );
            let got = keys(
                &service,
                &format!("FOR d IN places {HINT} FILTER {indexed} RETURN d._key"),
            );
            assert_eq!(got, want, "FILTER {indexed} through the index");
            // The same condition in SEARCH over the search-alias view (no ANALYZER():
            // each field takes its analyzer from the index).
            let searched = keys(
                &service,
                &format!(
                    "FOR d IN alias SEARCH {indexed} OPTIONS {{waitForSync: true}} RETURN d._key"
                ),
            );
            assert_eq!(
                searched, want,
                "SEARCH {indexed} over the search-alias view"
            );
            matched += want.len();
        }
    }
    assert!(matched > 500, "too few matches ({matched}) to compare");
}

#[test]
fn explain_shows_the_index_and_no_filter_left() {
    let dir = tempfile::tempdir().unwrap();
    let (core, service) = open(dir.path());
    populate(&core, &mut Lcg(11));
    let explain = service
        .explain(
            "_system",
            &support::explain(&json!({"query": format!(
                "FOR d IN places {HINT} FILTER GEO_DISTANCE(d.shape, @p) < 100000 \
                 AND GEO_CONTAINS(@r, d.pair) RETURN d._key"),
                "bindVars": {"p": [8, 48], "r": quad(48.0, 8.0, 2.0)}})),
        )
        .unwrap();
    let nodes = explain.plan["nodes"].as_array().unwrap();
    let index_node = nodes
        .iter()
        .find(|n| n["type"] == "IndexNode")
        .unwrap_or_else(|| panic!("no IndexNode: {}", explain.plan));
    assert_eq!(index_node["indexes"][0]["type"], "inverted");
    assert_eq!(index_node["indexes"][0]["name"], "inv");
    assert!(
        !nodes.iter().any(|n| n["type"] == "FilterNode"),
        "{}",
        explain.plan
    );
    // GEO_DISTANCE with an ellipsoid has no index form: it stays in the filter.
    let explain = service
        .explain(
            "_system",
            &support::explain(&json!({"query":
                "FOR d IN places OPTIONS {indexHint: 'inv'} \
                 FILTER GEO_DISTANCE(d.shape, [8, 48], 'wgs84') < 100000 RETURN d._key"})),
        )
        .unwrap();
    assert!(explain.plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n["type"] != "IndexNode"));
}

#[test]
fn a_field_without_a_geo_analyzer_does_not_serve_geo_functions() {
    let dir = tempfile::tempdir().unwrap();
    let (core, service) = open(dir.path());
    populate(&core, &mut Lcg(5));
    let query = "FOR d IN places OPTIONS {indexHint: 'plain', forceIndexHint: true} \
                 FILTER GEO_DISTANCE(d.shape, [8, 48]) < 300000 RETURN d._key";
    let err = run(&service, query).expect_err("forced hint on an identity field");
    assert_eq!(err.code.number(), 1577, "{}", err.message);
    // Not forced: a full scan with the same answer.
    let got = keys(&service, &query.replace(", forceIndexHint: true", ""));
    let want = keys(
        &service,
        "FOR d IN places FILTER GEO_DISTANCE(d.shape, [8, 48]) < 300000 RETURN d._key",
    );
    assert!(!want.is_empty());
    assert_eq!(got, want);
    // Naming another analyzer than the field's does not serve either.
    let err = run(
        &service,
        &format!(
            "FOR d IN places {HINT} \
             FILTER ANALYZER(GEO_DISTANCE(d.shape, [8, 48]) < 300000, 'geo_pair') RETURN d._key"
        ),
    )
    .expect_err("another analyzer");
    assert_eq!(err.code.number(), 1577, "{}", err.message);
}

#[test]
fn tokens_of_geo_values_are_the_cells_the_index_uses() {
    let dir = tempfile::tempdir().unwrap();
    let (core, service) = open(dir.path());
    populate(&core, &mut Lcg(3));
    let one = |query: &str| run(&service, query).unwrap().remove(0);
    let point = one("RETURN TOKENS({type: 'Point', coordinates: [8.5, 48.2]}, 'geo_json')");
    let tokens: Vec<&str> = point
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    // A point: its one cell at maxLevel 23 (covering) and that cell's holders from minLevel 4
    // up ("holds part of a shape"), the finest included.
    assert_eq!(tokens.iter().filter(|t| t.starts_with('c')).count(), 1);
    assert_eq!(tokens.iter().filter(|t| t.starts_with('a')).count(), 20);
    assert!(tokens.iter().any(|t| t.starts_with("c17/")), "{tokens:?}");
    // `[lng, lat]` for geojson and `[lat, lng]` for geopoint give the same cells.
    assert_eq!(one("RETURN TOKENS([8.5, 48.2], 'geo_json')"), point);
    assert_eq!(one("RETURN TOKENS([48.2, 8.5], 'geo_pair')"), point);
    // Arrays it does not read as a shape are read element by element; text and invalid
    // coordinates give nothing.
    assert_eq!(
        one("RETURN TOKENS([[8.5, 48.2], 'x'], 'geo_json')"),
        json!([point, []])
    );
    assert_eq!(one("RETURN TOKENS('POINT(1 2)', 'geo_json')"), json!([]));
    assert_eq!(
        one("RETURN TOKENS([100, 200], 'geo_pair')"),
        json!([[], []])
    );
    // A polygon: several covering cells, each also among the "holds part" tokens.
    let polygon = one(&format!(
        "RETURN TOKENS({}, 'geo_json')",
        quad(10.0, 20.0, 1.0)
    ));
    let polygon: Vec<&str> = polygon
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let covering: Vec<&&str> = polygon.iter().filter(|t| t.starts_with('c')).collect();
    assert!(covering.len() > 1 && covering.len() <= 20, "{polygon:?}");
    for cell in covering {
        assert!(
            polygon.contains(&format!("a{}", &cell[1..]).as_str()),
            "{cell}"
        );
    }
}
