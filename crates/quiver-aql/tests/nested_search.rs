//! Nested search (`d.dims[? … FILTER …]` over `nested` fields) through an arangosearch view
//! and a search-alias view of an inverted index, each condition against the same condition
//! as a FILTER over the collection (the question mark operator evaluated per document), on
//! random documents with arrays of objects holding arrays of objects.

mod support;

use std::sync::Arc;

use quiver_aql::source::core::CoreSource;
use quiver_aql::QueryService;
use quiver_core::{CollectionSpec, Core, CoreOptions, InsertOptions};
use quiver_errors::ErrorCode;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use support::CursorJson;

struct Fixture {
    service: QueryService,
    _core: Arc<Core>,
    _dir: tempfile::TempDir,
}

/// 400 documents: `dims` (missing in some) holds 0–4 objects with `a` (sometimes missing),
/// `b`, `s` and `m`, an array of 0–3 objects with `c` and `t`.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let db = core.database("_system").unwrap();
    let docs = db.create_collection(CollectionSpec::new("docs")).unwrap();
    let mut rng = StdRng::seed_from_u64(17);
    let words = ["x", "y", "z", "yes"];
    let tags = ["p", "q"];
    for i in 0..400 {
        let mut doc = json!({"_key": format!("k{i}"), "n": i});
        if rng.gen_range(0..10) > 0 {
            let dims: Vec<Value> = (0..rng.gen_range(0..5))
                .map(|_| {
                    let m: Vec<Value> = (0..rng.gen_range(0..4))
                        .map(|_| {
                            json!({"c": rng.gen_range(0..3),
                                   "t": tags[rng.gen_range(0..tags.len())]})
                        })
                        .collect();
                    let mut dim = json!({"b": rng.gen_range(0..5),
                        "s": words[rng.gen_range(0..words.len())], "m": m});
                    if rng.gen_bool(0.8) {
                        dim["a"] = json!(rng.gen_range(0..3));
                    }
                    dim
                })
                .collect();
            doc["dims"] = Value::Array(dims);
        }
        docs.insert(doc, &InsertOptions::default())
            .unwrap()
            .wait()
            .unwrap();
    }
    db.create_view(
        "v",
        "arangosearch",
        &json!({"links": {"docs": {"fields": {"n": {}, "dims": {"nested": {
            "a": {}, "b": {}, "s": {}, "m": {"nested": {"c": {}, "t": {}}}}}}}}}),
    )
    .unwrap();
    docs.create_index(&json!({"type": "inverted", "name": "inv", "fields": [
        "n",
        {"name": "dims", "nested": ["a", "b", "s",
            {"name": "m", "nested": ["c", "t"]}]}]}))
        .unwrap();
    db.create_view(
        "alias",
        "search-alias",
        &json!({"indexes": [{"collection": "docs", "index": "inv"}]}),
    )
    .unwrap();
    Fixture {
        service: QueryService::new(Arc::new(CoreSource::new(Arc::clone(&core)))),
        _core: core,
        _dir: dir,
    }
}

impl Fixture {
    fn run(&self, query: &str) -> Result<Vec<Value>, quiver_errors::Error> {
        let (_, reply) = self.service.create_cursor_json(
            "_system",
            support::cursor(&json!({"query": query, "batchSize": 1000})),
        )?;
        Ok(reply["result"].as_array().cloned().unwrap_or_default())
    }

    fn keys(&self, query: &str) -> Vec<String> {
        let mut keys: Vec<String> = self
            .run(query)
            .unwrap_or_else(|e| panic!("{query}: {}", e.message))
            .into_iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        keys.sort();
        keys
    }
}

/// Conditions that mean the same in SEARCH and in FILTER over these documents.
const CASES: [&str; 16] = [
    "d.dims[? FILTER CURRENT.a == 1 AND CURRENT.b > 2]",
    "d.dims[? ANY FILTER CURRENT.a == 1 AND CURRENT.s == 'x']",
    "d.dims[? ALL FILTER CURRENT.b >= 1]",
    "d.dims[? NONE FILTER CURRENT.s == 'x']",
    "d.dims[? AT LEAST (2) FILTER CURRENT.b > 1]",
    "d.dims[? AT LEAST (1 + 1) FILTER CURRENT.a != 1]",
    "d.dims[? 2 FILTER CURRENT.s IN ['x', 'y']]",
    "d.dims[? 1..2 FILTER CURRENT.a != 1 OR CURRENT.b == 0]",
    "d.dims[? 0 FILTER CURRENT.b == 4]",
    "d.dims[? FILTER CURRENT.s == 'z' AND CURRENT.m[? FILTER CURRENT.c == 1 AND CURRENT.t == 'p']]",
    "d.dims[? FILTER CURRENT.b < 3 AND CURRENT.m[? ALL FILTER CURRENT.c > 0]]",
    "d.dims[? AT LEAST (2) FILTER CURRENT.m[? 2 FILTER CURRENT.t == 'q']]",
    "d.n < 200 AND d.dims[? FILTER CURRENT.a == 2 AND NOT (CURRENT.s == 'x')]",
    "d.dims[? FILTER STARTS_WITH(CURRENT.s, 'y') AND CURRENT.b IN 1..3]",
    "d.dims[? FILTER CURRENT.s LIKE 'y%' AND CURRENT.m[? NONE FILTER CURRENT.c == 2]] OR d.n == 7",
    "d.dims[? FILTER CURRENT.a == 0] AND d.dims[? FILTER CURRENT.a == 2]",
];

#[test]
fn nested_search_matches_the_question_mark_filter() {
    let f = fixture();
    for view in ["v", "alias"] {
        for case in CASES {
            let filter = f.keys(&format!(
                "FOR d IN docs FILTER {case} SORT d._key RETURN d._key"
            ));
            let search = f.keys(&format!(
                "FOR d IN {view} SEARCH {case} OPTIONS {{waitForSync: true}} RETURN d._key"
            ));
            assert_eq!(search, filter, "{view}: {case}");
            // Every condition tells documents apart.
            assert!(
                !filter.is_empty() && filter.len() < 400,
                "{case}: {}",
                filter.len()
            );
        }
    }
    // Some conditions match many documents, some few: the comparison is not vacuous.
    let any = f.keys(&format!("FOR d IN docs FILTER {} RETURN d._key", CASES[0]));
    assert!(any.len() > 20 && any.len() < 300, "{}", any.len());
}

#[test]
fn boost_analyzer_and_scores() {
    let f = fixture();
    let sync = "OPTIONS {waitForSync: true}";
    let plain = f.keys(&format!(
        "FOR d IN v SEARCH d.dims[? FILTER CURRENT.s == 'x'] {sync} RETURN d._key"
    ));
    let analyzed = f.keys(&format!(
        "FOR d IN v SEARCH ANALYZER(BOOST(d.dims[? FILTER CURRENT.s == 'x'], 2), 'identity') \
         {sync} RETURN d._key"
    ));
    assert_eq!(plain, analyzed);
    // Scores: matches of a string term of the elements score above zero, boosts multiply.
    let scores = f
        .run(&format!(
            "FOR d IN v SEARCH d.dims[? FILTER CURRENT.s == 'x'] {sync} \
             RETURN [BM25(d), TFIDF(d)]"
        ))
        .unwrap();
    assert_eq!(scores.len(), plain.len());
    assert!(scores
        .iter()
        .all(|s| s[0].as_f64().unwrap() > 0.0 && s[1].as_f64().unwrap() > 0.0));
    let boosted = f
        .run(&format!(
            "FOR d IN v SEARCH BOOST(d.dims[? FILTER CURRENT.s == 'x'], 3) {sync} \
             SORT d._key RETURN TFIDF(d)"
        ))
        .unwrap();
    let unboosted = f
        .run(&format!(
            "FOR d IN v SEARCH d.dims[? FILTER CURRENT.s == 'x'] {sync} \
             SORT d._key RETURN TFIDF(d)"
        ))
        .unwrap();
    for (b, u) in boosted.iter().zip(&unboosted) {
        let (b, u) = (b.as_f64().unwrap(), u.as_f64().unwrap());
        assert!((b - 3.0 * u).abs() < 1e-9, "{b} {u}");
    }
}

#[test]
fn nested_fields_are_not_plain_attributes() {
    let f = fixture();
    let sync = "OPTIONS {waitForSync: true}";
    // The elements' attributes are only reachable through the question mark operator.
    assert!(f
        .keys(&format!(
            "FOR d IN v SEARCH d.dims.s == 'x' {sync} RETURN d._key"
        ))
        .is_empty());
    // A condition inside the operator on something else than the element is refused.
    let err = f
        .run(&format!(
            "FOR d IN v SEARCH d.dims[? FILTER d.n == 1] {sync} RETURN d._key"
        ))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::QueryParse, "{}", err.message);
    let err = f
        .run(&format!(
            "FOR d IN v SEARCH d.dims[? FILTER PHRASE(CURRENT.s, 'x')] {sync} RETURN d._key"
        ))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::NotImplemented, "{}", err.message);
}
