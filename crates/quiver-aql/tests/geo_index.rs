//! Geo and fulltext queries over quiver-core with real index definitions: NEAR, WITHIN,
//! WITHIN_RECTANGLE, FULLTEXT and the geo index optimizer, each checked against a brute-force
//! answer computed here over random data.

mod support;

use support::CursorJson;

use std::sync::Arc;

use quiver_aql::QueryService;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

struct Fixture {
    service: QueryService,
    _dir: tempfile::TempDir,
    core: Arc<quiver_core::Core>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut options = quiver_core::CoreOptions::default();
    options.engine.journal_size_default = 1024 * 1024;
    let core = Arc::new(quiver_core::Core::open(dir.path(), options).unwrap());
    Fixture {
        service: QueryService::over_core(core.clone()),
        _dir: dir,
        core,
    }
}

impl Fixture {
    fn collection(&self, name: &str, docs: &[Value]) -> Arc<quiver_core::Collection> {
        let db = self.core.database("_system").unwrap();
        let spec = quiver_core::CollectionSpec::from_json(&json!({"name": name})).unwrap();
        let coll = db.create_collection(spec).unwrap();
        for doc in docs {
            coll.insert(doc.clone(), &quiver_core::InsertOptions::new())
                .and_then(|c| c.wait())
                .unwrap();
        }
        coll
    }

    fn query(&self, aql: &str, bind: Value) -> Result<Vec<Value>, u32> {
        match self.service.create_cursor_json(
            "_system",
            support::cursor(&json!({"query": aql, "bindVars": bind, "batchSize": 100000})),
        ) {
            Ok((_, reply)) => Ok(reply["result"].as_array().cloned().unwrap_or_default()),
            Err(e) => Err(e.number()),
        }
    }
}

/// Reference distance, written independently of quiver_core::geo.
fn haversine(lat1: f64, lng1: f64, lat2: f64, lng2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let a = ((p2 - p1) / 2.0).sin().powi(2)
        + p1.cos() * p2.cos() * ((lng2 - lng1).to_radians() / 2.0).sin().powi(2);
    2.0 * 6_371_000.0 * a.sqrt().asin()
}

fn random_points(rng: &mut StdRng, n: usize) -> Vec<(String, f64, f64)> {
    (0..n)
        .map(|i| {
            // Clustered around Europe plus some anywhere, to hit poles and the antimeridian.
            let (lat, lng) = if i % 4 == 0 {
                (rng.gen_range(-90.0..=90.0), rng.gen_range(-180.0..=180.0))
            } else {
                (rng.gen_range(40.0..60.0), rng.gen_range(-10.0..30.0))
            };
            (format!("p{i}"), lat, lng)
        })
        .collect()
}

fn keys(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .map(|r| r["_key"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Runs NEAR, WITHIN and WITHIN_RECTANGLE around random centres and compares each answer
/// with the brute-force one over `points`.
fn check_against_brute_force(f: &Fixture, rng: &mut StdRng, points: &[(String, f64, f64)]) {
    for _ in 0..10 {
        let (lat, lng) = (rng.gen_range(-80.0..80.0), rng.gen_range(-180.0..180.0));
        let mut expected: Vec<(f64, String)> = points
            .iter()
            .map(|(k, plat, plng)| (haversine(lat, lng, *plat, *plng), k.clone()))
            .collect();
        expected.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));

        let near = f
            .query(
                "RETURN NEAR(places, @lat, @lng, 7, 'dist')",
                json!({"lat": lat, "lng": lng}),
            )
            .unwrap();
        let near = near[0].as_array().unwrap();
        let want: Vec<String> = expected.iter().take(7).map(|e| e.1.clone()).collect();
        assert_eq!(keys(near), want);
        for (row, (d, _)) in near.iter().zip(&expected) {
            assert!((row["dist"].as_f64().unwrap() - d).abs() < 1e-6);
        }

        let radius = rng.gen_range(10_000.0..2_000_000.0);
        let within = f
            .query(
                "RETURN WITHIN(places, @lat, @lng, @r)",
                json!({"lat": lat, "lng": lng, "r": radius}),
            )
            .unwrap();
        let want: Vec<String> = expected
            .iter()
            .filter(|e| e.0 <= radius)
            .map(|e| e.1.clone())
            .collect();
        assert_eq!(keys(within[0].as_array().unwrap()), want);

        let (lat2, lng2) = (
            lat + rng.gen_range(1.0..20.0),
            lng + rng.gen_range(1.0..40.0),
        );
        let rect = f
            .query(
                "FOR d IN WITHIN_RECTANGLE(places, @a, @b, @c, @d) SORT d._key RETURN d",
                json!({"a": lat, "b": lng, "c": lat2, "d": lng2}),
            )
            .unwrap();
        let mut want: Vec<String> = points
            .iter()
            .filter(|(_, plat, plng)| {
                *plat >= lat && *plat <= lat2 && *plng >= lng && *plng <= lng2
            })
            .map(|p| p.0.clone())
            .collect();
        want.sort();
        assert_eq!(keys(&rect), want);
    }
}

#[test]
fn near_within_and_rectangle_match_brute_force() {
    let f = fixture();
    let mut rng = StdRng::seed_from_u64(11);
    let mut points = random_points(&mut rng, 400);
    let doc = |(k, lat, lng): &(String, f64, f64)| json!({"_key": k, "lat": lat, "lng": lng});
    let docs: Vec<Value> = points
        .iter()
        .take(300)
        .map(doc)
        .chain([
            json!({"_key": "nolocation"}),
            json!({"_key": "bad", "lat": "x", "lng": 1}),
        ])
        .collect();
    let coll = f.collection("places", &docs);
    assert_eq!(f.query("RETURN NEAR(places, 0, 0)", json!({})), Err(1570));
    // Built from existing documents...
    coll.create_index(&json!({"type": "geo", "fields": ["lat", "lng"]}))
        .unwrap();
    // ...and maintained on later inserts, moves and removals.
    for p in &points[300..] {
        coll.insert(doc(p), &quiver_core::InsertOptions::new())
            .and_then(|c| c.wait())
            .unwrap();
    }
    check_against_brute_force(&f, &mut rng, &points);
    for i in 0..40 {
        let p = &mut points[i * 7];
        p.1 = rng.gen_range(-90.0..90.0);
        p.2 = rng.gen_range(-180.0..180.0);
        f.query(
            "UPDATE @k WITH {lat: @lat, lng: @lng} IN places",
            json!({"k": p.0, "lat": p.1, "lng": p.2}),
        )
        .unwrap();
    }
    let removed: Vec<String> = points
        .iter()
        .skip(3)
        .step_by(9)
        .map(|p| p.0.clone())
        .collect();
    f.query(
        "FOR k IN @keys REMOVE k IN places",
        json!({"keys": removed}),
    )
    .unwrap();
    points.retain(|p| !removed.contains(&p.0));
    check_against_brute_force(&f, &mut rng, &points);
    // A query that writes sees its own staged documents through the index.
    let r = f
        .query(
            "INSERT {_key: 'fresh', lat: 1.5, lng: 1.5} INTO places LET n = NEAR(places, 1.5, 1.5, 1) RETURN n[0]._key",
            json!({}),
        )
        .unwrap();
    assert_eq!(r, vec![json!("fresh")]);
}

#[test]
fn near_with_a_single_array_field_reads_lat_lng_order() {
    let f = fixture();
    let coll = f.collection(
        "spots",
        &[
            json!({"_key": "a", "loc": [10.0, 20.0]}),
            json!({"_key": "b", "loc": [50.0, 20.0]}),
            json!({"_key": "c", "geo": {"type": "Point", "coordinates": [20.0, 10.0]}}),
        ],
    );
    coll.create_index(&json!({"type": "geo", "fields": ["loc"]}))
        .unwrap();
    let r = f.query("RETURN NEAR(spots, 10, 20, 1)", json!({})).unwrap();
    assert_eq!(keys(r[0].as_array().unwrap()), vec!["a"]);

    let coll = f.collection(
        "shapes",
        &[
            json!({"_key": "a", "geo": [20.0, 10.0]}),
            json!({"_key": "b", "geo": {"type": "Point", "coordinates": [20.0, 50.0]}}),
        ],
    );
    coll.create_index(&json!({"type": "geo", "fields": ["geo"], "geoJson": true}))
        .unwrap();
    let r = f
        .query("RETURN NEAR(shapes, 50, 20, 1)", json!({}))
        .unwrap();
    assert_eq!(keys(r[0].as_array().unwrap()), vec!["b"]);
}

#[test]
fn fulltext_needs_its_index_and_matches() {
    let f = fixture();
    let coll = f.collection(
        "texts",
        &[
            json!({"_key": "1", "t": "Apple banana cherry"}),
            json!({"_key": "2", "t": "banana bread"}),
            json!({"_key": "3", "t": ["cherry pie", "with apples"]}),
            json!({"_key": "4", "other": "banana"}),
        ],
    );
    assert_eq!(
        f.query("RETURN FULLTEXT(texts, 't', 'banana')", json!({})),
        Err(1571)
    );
    coll.create_index(&json!({"type": "fulltext", "fields": ["t"], "minLength": 3}))
        .unwrap();
    assert_eq!(
        f.query("RETURN FULLTEXT(texts, 'other', 'banana')", json!({})),
        Err(1571)
    );
    for (q, want) in [
        ("banana", vec!["1", "2"]),
        ("banana,|cherry", vec!["1", "2", "3"]),
        ("prefix:app", vec!["1", "3"]),
        ("banana,-bread", vec!["1"]),
    ] {
        let r = f
            .query(
                "FOR d IN FULLTEXT(texts, 't', @q) SORT d._key RETURN d",
                json!({"q": q}),
            )
            .unwrap();
        assert_eq!(keys(&r), want, "{q}");
    }
    let limited = f
        .query(
            "RETURN LENGTH(FULLTEXT(texts, 't', 'banana', 1))",
            json!({}),
        )
        .unwrap();
    assert_eq!(limited, vec![json!(1)]);
}

impl Fixture {
    fn query_with(&self, aql: &str, bind: Value, rules: &[&str]) -> Vec<Value> {
        let (_, reply) = self
            .service
            .create_cursor_json(
                "_system",
                support::cursor(&json!({"query": aql, "bindVars": bind, "batchSize": 100000,
                       "options": {"optimizer": {"rules": rules}}})),
            )
            .unwrap_or_else(|e| panic!("{aql}: {e:?}"));
        reply["result"].as_array().cloned().unwrap_or_default()
    }

    /// (node types, names of the indexes of IndexNodes, rules) of the query's plan.
    fn plan(&self, aql: &str, bind: Value) -> (Vec<String>, Vec<String>, Vec<String>) {
        let reply = self
            .service
            .explain(
                "_system",
                &support::explain(&json!({"query": aql, "bindVars": bind})),
            )
            .unwrap();
        let plan = &reply.plan;
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect()
        };
        let nodes: Vec<String> = plan["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["type"].as_str().unwrap().to_string())
            .collect();
        let indexes: Vec<String> = plan["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|n| n["type"] == "IndexNode")
            .map(|n| n["indexes"][0]["name"].as_str().unwrap().to_string())
            .collect();
        (nodes, indexes, strings(&plan["rules"]))
    }

    /// The query with and without the rule: equal results, and the index used when `uses`.
    fn same_with_index(&self, aql: &str, bind: Value, uses: bool) -> Vec<Value> {
        // The cases share one parameter set; AQL rejects parameters a query does not use.
        let bind: serde_json::Map<String, Value> = bind
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| {
                aql.match_indices(&format!("@{k}")).any(|(at, m)| {
                    !aql[at + m.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
                })
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let bind = Value::Object(bind);
        let with = self.query_with(aql, bind.clone(), &[]);
        let without = self.query_with(aql, bind.clone(), &["-geo-index-optimizer"]);
        assert_eq!(with, without, "{aql} {bind}");
        let (nodes, _, rules) = self.plan(aql, bind.clone());
        assert_eq!(
            rules.iter().any(|r| r == "geo-index-optimizer"),
            uses,
            "{aql} {bind}: {nodes:?} {rules:?}"
        );
        with
    }
}

#[test]
fn geo_index_optimizer_matches_full_scans() {
    let f = fixture();
    let mut rng = StdRng::seed_from_u64(29);
    let points = random_points(&mut rng, 600);
    let docs: Vec<Value> = points
        .iter()
        .map(|(k, lat, lng)| json!({"_key": k, "lat": lat, "lng": lng, "geo": [lng, lat], "n": k.len()}))
        .collect();
    let coll = f.collection("pts", &docs);
    coll.create_index(&json!({"type": "geo", "fields": ["lat", "lng"], "name": "latlng"}))
        .unwrap();
    coll.create_index(&json!({"type": "geo", "fields": ["geo"], "geoJson": true, "name": "gj"}))
        .unwrap();
    assert!(coll.wait_for_indexes(std::time::Duration::from_secs(30)));
    for round in 0..12 {
        let (lat, lng) = (rng.gen_range(-85.0..85.0), rng.gen_range(-180.0..180.0));
        let r = rng.gen_range(10_000.0..3_000_000.0);
        let bind = json!({"lat": lat, "lng": lng, "r": r, "lo": r / 3.0, "pt": [lng, lat], "n": 1 + round * 3});
        // Sorted by distance with a LIMIT: the nearest n, streamed in rings.
        let near = f.same_with_index(
            "FOR d IN pts SORT DISTANCE(d.lat, d.lng, @lat, @lng) LIMIT @n RETURN d._key",
            bind.clone(),
            true,
        );
        let mut expected: Vec<(f64, String)> = points
            .iter()
            .map(|(k, plat, plng)| (haversine(lat, lng, *plat, *plng), k.clone()))
            .collect();
        expected.sort_by(|a, b| a.0.total_cmp(&b.0));
        let want: Vec<Value> = expected
            .iter()
            .take(1 + round * 3)
            .map(|e| json!(e.1))
            .collect();
        assert_eq!(near, want);
        f.same_with_index(
            "FOR d IN pts SORT DISTANCE(@lat, @lng, d.lat, d.lng) ASC LIMIT 2, @n RETURN [d._key, DISTANCE(@lat, @lng, d.lat, d.lng)]",
            bind.clone(),
            true,
        );
        f.same_with_index(
            "FOR d IN pts SORT GEO_DISTANCE(@pt, d.geo) LIMIT @n RETURN d._key",
            bind.clone(),
            true,
        );
        f.same_with_index(
            "FOR d IN pts SORT GEO_DISTANCE([d.lng, d.lat], @pt) LIMIT @n RETURN d._key",
            bind.clone(),
            true,
        );
        // Ranges, one and two bounds, then sorted within the range.
        let within = f.same_with_index(
            "FOR d IN pts FILTER DISTANCE(d.lat, d.lng, @lat, @lng) <= @r SORT d._key RETURN d._key",
            bind.clone(),
            true,
        );
        let want: Vec<&String> = {
            let mut w: Vec<&String> = expected.iter().filter(|e| e.0 <= r).map(|e| &e.1).collect();
            w.sort();
            w
        };
        assert_eq!(within.len(), want.len());
        f.same_with_index(
            "FOR d IN pts FILTER GEO_DISTANCE(@pt, d.geo) < @r && GEO_DISTANCE(@pt, d.geo) >= @lo SORT d._key RETURN d._key",
            bind.clone(),
            true,
        );
        f.same_with_index(
            "FOR d IN pts FILTER @lo < DISTANCE(d.lat, d.lng, @lat, @lng) FILTER @r > DISTANCE(d.lat, d.lng, @lat, @lng) && d.n > 2 SORT DISTANCE(d.lat, d.lng, @lat, @lng) LIMIT 50 RETURN d._key",
            bind.clone(),
            true,
        );
        // Polygons: containment and intersection.
        let (dlat, dlng) = (rng.gen_range(1.0..25.0), rng.gen_range(1.0..40.0));
        let poly = json!({"type": "Polygon", "coordinates": [[
            [lng, lat], [lng + dlng, lat], [lng + dlng, (lat + dlat).min(89.0)], [lng, (lat + dlat).min(89.0)], [lng, lat]
        ]]});
        let bind = json!({"poly": poly});
        f.same_with_index(
            "FOR d IN pts FILTER GEO_CONTAINS(@poly, d.geo) SORT d._key RETURN d._key",
            bind.clone(),
            true,
        );
        f.same_with_index(
            "FOR d IN pts FILTER GEO_INTERSECTS(d.geo, @poly) SORT d._key RETURN d._key",
            bind.clone(),
            true,
        );
    }
    // Not served: no LIMIT, descending order, the loop's own attributes as reference, a
    // lower bound alone, an ellipsoid.
    for (q, uses) in [
        ("FOR d IN pts SORT DISTANCE(d.lat, d.lng, 1, 2) RETURN d._key", false),
        ("FOR d IN pts SORT DISTANCE(d.lat, d.lng, 1, 2) DESC LIMIT 5 RETURN d._key", false),
        ("FOR d IN pts SORT DISTANCE(d.lat, d.lng, d.lng, 2) LIMIT 5 RETURN d._key", false),
        ("FOR d IN pts SORT DISTANCE(d.lng, d.lat, 1, 2) LIMIT 5 RETURN d._key", false),
        ("FOR d IN pts FILTER DISTANCE(d.lat, d.lng, 1, 2) > 100000 SORT d._key LIMIT 5 RETURN d._key", false),
        ("FOR d IN pts SORT GEO_DISTANCE([2, 1], d.geo, 'wgs84') LIMIT 5 RETURN d._key", false),
        ("FOR d IN pts SORT GEO_DISTANCE([2, 1], d.geo, 'sphere') LIMIT 5 RETURN d._key", true),
    ] {
        f.same_with_index(q, json!({}), uses);
    }
    // An outer loop's variable is a valid reference point: one search per outer row.
    f.same_with_index(
        "FOR p IN [[10, 50], [-70, -20]] FOR d IN pts SORT DISTANCE(d.lat, d.lng, p[1], p[0]) LIMIT 3 RETURN [p, d._key]",
        json!({}),
        true,
    );
    // Streaming: the nearest three around a dense area read a small part of the index.
    let (_, reply) = f
        .service
        .create_cursor_json(
            "_system", support::cursor(&json!({"query": "FOR d IN pts SORT DISTANCE(d.lat, d.lng, 50, 10) LIMIT 3 RETURN d._key"})))
        .unwrap();
    let scanned = reply["extra"]["stats"]["scannedIndex"].as_u64().unwrap();
    assert!(scanned > 0 && scanned < 150, "{scanned} of 600 read");
    let (nodes, indexes, _) = f.plan(
        "FOR d IN pts FILTER GEO_DISTANCE([1, 2], d.geo) < 1000 RETURN d",
        json!({}),
    );
    assert_eq!(nodes, ["SingletonNode", "IndexNode", "ReturnNode"]);
    assert_eq!(indexes, ["gj"]);
}

#[test]
fn geo_index_optimizer_over_shapes_and_writes() {
    let f = fixture();
    let mut rng = StdRng::seed_from_u64(5);
    let mut docs = Vec::new();
    for i in 0..200 {
        let (lat, lng): (f64, f64) = (rng.gen_range(-60.0..60.0), rng.gen_range(-170.0..170.0));
        let geo = match i % 4 {
            0 => json!({"type": "Point", "coordinates": [lng, lat]}),
            1 => json!({"type": "LineString", "coordinates": [[lng, lat], [lng + 3.0, lat + 1.0]]}),
            2 => {
                json!({"type": "Polygon", "coordinates": [[[lng, lat], [lng + 2.0, lat], [lng + 2.0, lat + 2.0], [lng, lat + 2.0], [lng, lat]]]})
            }
            _ => {
                json!({"type": "MultiPoint", "coordinates": [[lng, lat], [(lng + 60.0).min(179.0), lat]]})
            }
        };
        docs.push(json!({"_key": format!("s{i}"), "geo": geo}));
    }
    // Every document has a valid shape: one without would sort first (null distance) in a
    // full scan but is not in the index, which ArangoDB's index scan skips as well.
    let coll = f.collection("shapes", &docs);
    coll.create_index(&json!({"type": "geo", "fields": ["geo"], "geoJson": true}))
        .unwrap();
    assert!(coll.wait_for_indexes(std::time::Duration::from_secs(30)));
    let check = |f: &Fixture, rng: &mut StdRng| {
        for _ in 0..8 {
            let (lat, lng) = (rng.gen_range(-60.0..60.0), rng.gen_range(-170.0..170.0));
            let bind = json!({"pt": [lng, lat], "r": rng.gen_range(50_000.0..2_000_000.0),
                "box": {"type": "Polygon", "coordinates": [[[lng, lat], [lng + 10.0, lat], [lng + 10.0, lat + 10.0], [lng, lat + 10.0], [lng, lat]]]}});
            f.same_with_index(
                "FOR d IN shapes SORT GEO_DISTANCE(@pt, d.geo) LIMIT 15 RETURN d._key",
                bind.clone(),
                true,
            );
            f.same_with_index(
                "FOR d IN shapes FILTER GEO_DISTANCE(@pt, d.geo) <= @r SORT d._key RETURN d._key",
                bind.clone(),
                true,
            );
            f.same_with_index(
                "FOR d IN shapes FILTER GEO_INTERSECTS(@box, d.geo) SORT d._key RETURN d._key",
                bind.clone(),
                true,
            );
            f.same_with_index(
                "FOR d IN shapes FILTER GEO_CONTAINS(@box, d.geo) SORT d._key RETURN d._key",
                bind.clone(),
                true,
            );
        }
    };
    check(&f, &mut rng);
    // Moves and removals are followed.
    for i in (0..200).step_by(5) {
        let (lat, lng): (f64, f64) = (rng.gen_range(-60.0..60.0), rng.gen_range(-170.0..170.0));
        f.query(
            "UPDATE @k WITH {geo: @g} IN shapes",
            json!({"k": format!("s{i}"), "g": [lng, lat]}),
        )
        .unwrap();
    }
    f.query(
        "FOR i IN 0..20 REMOVE CONCAT('s', i * 7) IN shapes",
        json!({}),
    )
    .unwrap();
    check(&f, &mut rng);
}
