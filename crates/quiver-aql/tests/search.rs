//! `FOR d IN view SEARCH …` over quiver-core: every SEARCH condition against the FILTER that
//! means the same over the linked collection (the brute-force reference), scorer order, the
//! options, explain and errors.

mod support;

use std::sync::Arc;

use quiver_aql::source::core::CoreSource;
use quiver_aql::QueryService;
use quiver_core::{CollectionSpec, Core, CoreOptions, InsertOptions};
use quiver_errors::ErrorCode;
use serde_json::{json, Value};

struct Fixture {
    service: QueryService,
    _core: Arc<Core>,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let db = core.database("_system").unwrap();
    let docs = db.create_collection(CollectionSpec::new("docs")).unwrap();
    let more = db.create_collection(CollectionSpec::new("more")).unwrap();
    let texts = [
        "the quick brown fox",
        "quick quick quick",
        "a brown dog",
        "lazy dogs and lazy foxes",
        "nothing here",
        "brown",
    ];
    for (i, text) in texts.iter().enumerate() {
        let doc = json!({"_key": format!("k{i}"), "text": text, "n": i, "even": i % 2 == 0,
            "tags": if i % 3 == 0 { json!(["a", "b"]) } else { json!(["c"]) },
            "sub": {"x": i * 10}});
        docs.insert(doc, &InsertOptions::default())
            .unwrap()
            .wait()
            .unwrap();
    }
    more.insert(
        json!({"_key": "m", "text": "quick", "n": 100}),
        &InsertOptions::default(),
    )
    .unwrap()
    .wait()
    .unwrap();
    db.create_view(
        "v",
        "arangosearch",
        &json!({"links": {
            "docs": {"includeAllFields": true, "fields": {"text": {"analyzers": ["text_en", "identity"]}}},
            "more": {"fields": {"text": {"analyzers": ["text_en"]}, "n": {}}}
        }}),
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
        let (_, reply) = self.service.create_cursor(
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

#[test]
fn search_conditions_match_their_filters() {
    let f = fixture();
    let sync = "OPTIONS {waitForSync: true, collections: ['docs']}";
    // (SEARCH condition, the FILTER condition meaning the same over the collection)
    let cases = [
        ("d.n == 2", "d.n == 2"),
        ("d.n != 2", "d.n != 2"),
        ("d.n < 2", "d.n < 2"),
        ("d.n >= 4", "d.n >= 4"),
        ("d.n IN [1, 3, 9]", "d.n IN [1, 3, 9]"),
        ("d.n IN 2..4", "d.n >= 2 AND d.n <= 4"),
        ("IN_RANGE(d.n, 1, 4, false, true)", "d.n > 1 AND d.n <= 4"),
        ("d.even == true", "d.even == true"),
        ("d.tags == 'a'", "'a' IN d.tags"),
        ("d.sub.x == 30", "d.sub.x == 30"),
        ("d.text == 'brown'", "d.text == 'brown'"),
        ("d.n > 1 AND NOT (d.n == 3)", "d.n > 1 AND d.n != 3"),
        ("d.n == 0 OR d.n == 5", "d.n IN [0, 5]"),
        (
            "MIN_MATCH(d.n == 1, d.even == false, d.tags == 'c', 2)",
            "((d.n == 1 ? 1 : 0) + (d.even == false ? 1 : 0) + ('c' IN d.tags ? 1 : 0)) >= 2",
        ),
        ("EXISTS(d.sub.x)", "true"),
        ("EXISTS(d.text, 'analyzer', 'text_en')", "true"),
        ("EXISTS(d.n, 'numeric')", "true"),
        ("EXISTS(d.n, 'string')", "false"),
        (
            "ANALYZER(d.text == 'quick', 'text_en')",
            "CONTAINS(d.text, 'quick')",
        ),
        (
            "ANALYZER(d.text IN ['fox', 'dog'], 'text_en')",
            "d.n IN [0, 2, 3]",
        ),
        (
            "PHRASE(d.text, 'quick brown', 'text_en')",
            "CONTAINS(d.text, 'quick brown')",
        ),
        ("PHRASE(d.text, 'quick', 1, 'fox', 'text_en')", "d.n == 0"),
        (
            "ANALYZER(PHRASE(d.text, ['lazy', 0, 'dog']), 'text_en')",
            "d.n == 3",
        ),
        (
            "ANALYZER(STARTS_WITH(d.text, 'laz'), 'text_en')",
            "STARTS_WITH(d.text, 'lazy')",
        ),
        ("LIKE(d.text, '%brown%')", "LIKE(d.text, '%brown%')"),
        ("d.text LIKE 'a%'", "d.text LIKE 'a%'"),
        (
            "ANALYZER(LEVENSHTEIN_MATCH(d.text, 'quack', 1), 'text_en')",
            "CONTAINS(d.text, 'quick')",
        ),
        ("BOOST(d.n == 1, 2)", "d.n == 1"),
        ("true", "true"),
        ("1 == 2", "false"),
    ];
    for (search, filter) in cases {
        let got = f.keys(&format!("FOR d IN v SEARCH {search} {sync} RETURN d._key"));
        let want = f.keys(&format!("FOR d IN docs FILTER {filter} RETURN d._key"));
        assert_eq!(got, want, "SEARCH {search}");
    }
    // Operands may read outer variables.
    let nested = f.run(&format!(
        "FOR x IN [1, 4] RETURN (FOR d IN v SEARCH d.n == x {sync} RETURN d._key)"
    ));
    assert_eq!(nested.unwrap(), vec![json!(["k1"]), json!(["k4"])]);
}

#[test]
fn scorers_order_results() {
    let f = fixture();
    let rows = f
        .run(
            "FOR d IN v SEARCH ANALYZER(d.text == 'quick' OR d.text == 'fox', 'text_en') \
             OPTIONS {waitForSync: true} SORT BM25(d) DESC, d._key RETURN [d._key, BM25(d), TFIDF(d, true)]",
        )
        .unwrap();
    let keys: Vec<&str> = rows.iter().map(|r| r[0].as_str().unwrap()).collect();
    assert_eq!(keys.len(), 4, "{rows:?}");
    let scores: Vec<f64> = rows.iter().map(|r| r[1].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert!(rows.iter().all(|r| r[2].as_f64().unwrap() > 0.0));
    // Collections restrict the view; the other collection's document is found alone.
    let only_more = f.keys(
        "FOR d IN v SEARCH ANALYZER(d.text == 'quick', 'text_en') \
         OPTIONS {waitForSync: true, collections: ['more']} RETURN d._key",
    );
    assert_eq!(only_more, ["m"]);
    // COLLECT over SEARCH results like any FOR.
    let counted = f
        .run("FOR d IN v SEARCH d.n < 100 OPTIONS {waitForSync: true} COLLECT e = d.even WITH COUNT INTO c SORT e RETURN [e, c]")
        .unwrap();
    assert_eq!(counted, vec![json!([false, 3]), json!([true, 3])]);
}

#[test]
fn errors_and_explain() {
    let f = fixture();
    let err = f
        .run("FOR d IN nosuch SEARCH d.a == 1 RETURN d")
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::DataSourceNotFound);
    let err = f.run("FOR d IN docs SEARCH d.a == 1 RETURN d").unwrap_err();
    assert_eq!(err.code, ErrorCode::QueryParse);
    let err = f.run("FOR d IN v SEARCH d.a == d.b RETURN d").unwrap_err();
    assert_eq!(err.code, ErrorCode::QueryParse);
    let err = f.run("FOR d IN docs RETURN BM25(d)").unwrap_err();
    assert_eq!(err.code, ErrorCode::BadParameter);
    let (_, plan) = f
        .service
        .explain(
            "_system",
            &support::explain(
                &json!({"query": "FOR d IN v SEARCH d.n == 1 SORT BM25(d) RETURN d"}),
            ),
        )
        .unwrap();
    let types: Vec<&str> = plan["plan"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["type"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"EnumerateViewNode"), "{types:?}");
}
