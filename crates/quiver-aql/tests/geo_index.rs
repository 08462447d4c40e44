//! Geo and fulltext queries over quiver-core with real index definitions: NEAR, WITHIN,
//! WITHIN_RECTANGLE, FULLTEXT and the geo index optimizer, each checked against a brute-force
//! answer computed here over random data.

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
        match self.service.create_cursor(
            "_system",
            json!({"query": aql, "bindVars": bind, "batchSize": 100000}),
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
