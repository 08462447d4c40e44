//! Geo functions in SEARCH (`GEO_DISTANCE`, `GEO_IN_RANGE`, `GEO_CONTAINS`,
//! `GEO_INTERSECTS` with a `geojson` or `geopoint` analyzer) against the same conditions as
//! FILTER over a full scan of the collection: a few hundred random points, lines and polygons
//! (some near the pole and across the antimeridian), and the results must be equal.

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

#[test]
fn search_geo_functions_equal_filter_over_a_full_scan() {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let db = core.database("_system").unwrap();
    for definition in [
        json!({"name": "geo_json", "type": "geojson", "properties": {}}),
        json!({"name": "geo_pair", "type": "geopoint", "properties": {}}),
        json!({"name": "geo_fine", "type": "geojson",
               "properties": {"options": {"maxCells": 8, "minLevel": 2, "maxLevel": 26}}}),
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
    let mut rng = Lcg(42);
    for i in 0..400 {
        let (lat, lng) = rng.place();
        let shape = match i % 4 {
            0 | 1 => json!({"type": "Point", "coordinates": [lng, lat]}),
            2 => quad(lat, lng, rng.range(0.05, 1.5)),
            _ => json!({"type": "LineString", "coordinates": [
                [lng, lat], [wrap(lng + rng.range(-1.0, 1.0)), (lat + rng.range(-1.0, 1.0)).clamp(-89.0, 89.0)]
            ]}),
        };
        places
            .insert(
                json!({"_key": format!("p{i}"), "shape": shape, "pair": [lat, lng]}),
                &InsertOptions::default(),
            )
            .unwrap()
            .wait()
            .unwrap();
    }
    db.create_view(
        "geoview",
        "arangosearch",
        &json!({"links": {"places": {"fields": {
            "shape": {"analyzers": ["geo_json", "geo_fine"]},
            "pair": {"analyzers": ["geo_pair"]}
        }}}}),
    )
    .unwrap();
    let service = QueryService::new(Arc::new(CoreSource::new(Arc::clone(&core))));
    // `pair` is [lat, lng]; FILTER reads it as GeoJSON [lng, lat] after swapping.
    let pair_point = "[d.pair[1], d.pair[0]]";
    let mut matched = 0;
    for round in 0..16 {
        let (lat, lng) = rng.place();
        let origin = format!("[{lng}, {lat}]");
        let radius = [20_000.0, 150_000.0, 600_000.0, 2_500_000.0][round % 4];
        let low = radius * rng.range(0.1, 0.7);
        let region = quad(lat, lng, rng.range(0.5, 4.0)).to_string();
        for analyzer in ["geo_json", "geo_fine"] {
            let conditions = [
                format!("GEO_DISTANCE(d.shape, {origin}) <= {radius}"),
                format!("GEO_DISTANCE({origin}, d.shape) > {low}"),
                format!("{radius} > GEO_DISTANCE(d.shape, {origin})"),
                format!("GEO_IN_RANGE(d.shape, {origin}, {low}, {radius}, false, true)"),
                format!("GEO_CONTAINS({region}, d.shape)"),
                format!("GEO_INTERSECTS({region}, d.shape)"),
                format!("GEO_CONTAINS(d.shape, {origin})"),
                format!(
                    "GEO_INTERSECTS(d.shape, {region}) AND NOT (GEO_DISTANCE(d.shape, {origin}) < {low})"
                ),
            ];
            for condition in &conditions {
                let filter = keys(
                    &service,
                    &format!("FOR d IN places FILTER {condition} RETURN d._key"),
                );
                let search = keys(
                    &service,
                    &format!(
                        "FOR d IN geoview SEARCH ANALYZER({condition}, '{analyzer}') \
                         OPTIONS {{waitForSync: true}} RETURN d._key"
                    ),
                );
                assert_eq!(filter, search, "{analyzer}: {condition}");
                matched += filter.len();
            }
        }
        for (search_condition, filter_condition) in [
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
        ] {
            let filter = keys(
                &service,
                &format!("FOR d IN places FILTER {filter_condition} RETURN d._key"),
            );
            let search = keys(
                &service,
                &format!(
                    "FOR d IN geoview SEARCH ANALYZER({search_condition}, 'geo_pair') \
                     OPTIONS {{waitForSync: true}} RETURN d._key"
                ),
            );
            assert_eq!(filter, search, "geo_pair: {search_condition}");
            matched += filter.len();
        }
    }
    assert!(
        matched > 2000,
        "the conditions select documents ({matched})"
    );

    // A geo function on a field without a geo analyzer (identity by default) is 400/10, as
    // is an invalid query geometry.
    for query in [
        "FOR d IN geoview SEARCH GEO_DISTANCE(d.shape, [0, 0]) < 10 RETURN d",
        "FOR d IN geoview SEARCH ANALYZER(GEO_INTERSECTS(d.shape, {type: 'Polygon', \
         coordinates: [[[0, 0]]]}), 'geo_json') RETURN d",
    ] {
        let err = run(&service, query).expect_err(query);
        assert_eq!(err.code.number(), 10, "{query}: {}", err.message);
    }
}
