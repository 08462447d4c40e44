//! `FOR d IN view SEARCH …` over a search-alias view of inverted indexes: the same conditions
//! over an arangosearch view with the analyzer named (`ANALYZER()`) give the same documents
//! and the same scores, the FILTER over the collection gives the same documents, and the
//! index survives a restart (rebuilt from the collection) and goes with its collection.

mod support;

use support::CursorJson;

use std::sync::Arc;

use quiver_aql::source::core::CoreSource;
use quiver_aql::QueryService;
use quiver_core::{CollectionSpec, Core, CoreOptions, InsertOptions};
use serde_json::{json, Value};

const TEXTS: [&str; 6] = [
    "the quick brown fox",
    "quick quick quick",
    "a brown dog",
    "lazy dogs and lazy foxes",
    "nothing here",
    "brown",
];

fn open(dir: &std::path::Path) -> (Arc<Core>, QueryService) {
    let core = Arc::new(Core::open(dir, CoreOptions::default()).unwrap());
    let service = QueryService::new(Arc::new(CoreSource::new(Arc::clone(&core))));
    (core, service)
}

/// Collection `docs` with an inverted index (text with text_en, numbers, arrays, a nested
/// attribute), the alias view `alias` over it and the arangosearch view `plain` indexing the
/// same fields.
fn populate(core: &Core) {
    let db = core.database("_system").unwrap();
    let docs = db.create_collection(CollectionSpec::new("docs")).unwrap();
    let more = db.create_collection(CollectionSpec::new("more")).unwrap();
    for (i, text) in TEXTS.iter().enumerate() {
        let doc = json!({"_key": format!("k{i}"), "text": text, "n": i,
            "tags": if i % 3 == 0 { json!(["a", "b"]) } else { json!(["c"]) },
            "sub": {"x": i * 10}});
        docs.insert(doc, &InsertOptions::default())
            .unwrap()
            .wait()
            .unwrap();
    }
    more.insert(
        json!({"_key": "m", "text": "quick foxes", "n": 100}),
        &InsertOptions::default(),
    )
    .unwrap()
    .wait()
    .unwrap();
    let fields = json!([{"name": "text", "analyzer": "text_en"}, "n", "tags[*]", "sub.x"]);
    docs.create_index(&json!({"type": "inverted", "name": "inv", "fields": fields}))
        .unwrap();
    more.create_index(&json!({"type": "inverted", "name": "inv", "fields": fields}))
        .unwrap();
    db.create_view(
        "alias",
        "search-alias",
        &json!({"indexes": [{"collection": "docs", "index": "inv"},
                            {"collection": "more", "index": "inv"}]}),
    )
    .unwrap();
    let link = json!({"fields": {"text": {"analyzers": ["text_en"]}, "n": {}, "tags": {},
                                 "sub": {"fields": {"x": {}}}}});
    db.create_view(
        "plain",
        "arangosearch",
        &json!({"links": {"docs": link, "more": link}}),
    )
    .unwrap();
}

fn run(service: &QueryService, query: &str) -> Vec<Value> {
    let (_, reply) = service
        .create_cursor_json(
            "_system",
            support::cursor(&json!({"query": query, "batchSize": 1000})),
        )
        .unwrap_or_else(|e| panic!("{query}: {}", e.message));
    reply["result"].as_array().cloned().unwrap_or_default()
}

fn keys(service: &QueryService, query: &str) -> Vec<String> {
    let mut keys: Vec<String> = run(service, query)
        .into_iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    keys.sort();
    keys
}

/// (SEARCH over the alias view, the same over the arangosearch view with the analyzer named,
/// the FILTER over `docs` meaning the same)
const CASES: [(&str, &str, &str); 10] = [
    (
        "d.text == 'quick'",
        "ANALYZER(d.text == 'quick', 'text_en')",
        "CONTAINS(d.text, 'quick')",
    ),
    (
        "d.text IN ['fox', 'dog']",
        "ANALYZER(d.text IN ['fox', 'dog'], 'text_en')",
        "d.n IN [0, 2, 3]",
    ),
    (
        "PHRASE(d.text, 'quick brown')",
        "PHRASE(d.text, 'quick brown', 'text_en')",
        "CONTAINS(d.text, 'quick brown')",
    ),
    (
        "STARTS_WITH(d.text, 'laz')",
        "ANALYZER(STARTS_WITH(d.text, 'laz'), 'text_en')",
        "STARTS_WITH(d.text, 'lazy')",
    ),
    (
        "LEVENSHTEIN_MATCH(d.text, 'quack', 1)",
        "ANALYZER(LEVENSHTEIN_MATCH(d.text, 'quack', 1), 'text_en')",
        "CONTAINS(d.text, 'quick')",
    ),
    (
        "d.n >= 2 AND d.n < 5",
        "d.n >= 2 AND d.n < 5",
        "d.n >= 2 AND d.n < 5",
    ),
    ("d.tags == 'a'", "d.tags == 'a'", "'a' IN d.tags"),
    ("d.sub.x == 30", "d.sub.x == 30", "d.sub.x == 30"),
    (
        "d.text == 'brown' OR d.n == 1",
        "ANALYZER(d.text == 'brown', 'text_en') OR d.n == 1",
        "CONTAINS(d.text, 'brown') OR d.n == 1",
    ),
    (
        "NOT (d.text == 'brown')",
        "NOT ANALYZER(d.text == 'brown', 'text_en')",
        "NOT CONTAINS(d.text, 'brown')",
    ),
];

#[test]
fn alias_view_search_matches_the_arangosearch_view_and_the_filter() {
    let dir = tempfile::tempdir().unwrap();
    let (core, service) = open(dir.path());
    populate(&core);
    let docs_only = "OPTIONS {waitForSync: true, collections: ['docs']}";
    for (alias, plain, filter) in CASES {
        let got = keys(
            &service,
            &format!("FOR d IN alias SEARCH {alias} {docs_only} RETURN d._key"),
        );
        let view = keys(
            &service,
            &format!("FOR d IN plain SEARCH {plain} {docs_only} RETURN d._key"),
        );
        let want = keys(
            &service,
            &format!("FOR d IN docs FILTER {filter} RETURN d._key"),
        );
        assert_eq!(got, want, "alias SEARCH {alias} against FILTER {filter}");
        assert_eq!(
            got, view,
            "alias SEARCH {alias} against the arangosearch view"
        );
    }
    // Both collections: the other collection's document is found too.
    let both = keys(
        &service,
        "FOR d IN alias SEARCH d.text == 'fox' OPTIONS {waitForSync: true} RETURN d._key",
    );
    assert_eq!(both, ["k0", "k3", "m"]);
}

#[test]
fn scores_equal_the_arangosearch_view_scores() {
    let dir = tempfile::tempdir().unwrap();
    let (core, service) = open(dir.path());
    populate(&core);
    // Scores count the documents of the index: an arangosearch view of `docs` alone.
    let link = json!({"fields": {"text": {"analyzers": ["text_en"]}}});
    core.database("_system")
        .unwrap()
        .create_view(
            "docs_only",
            "arangosearch",
            &json!({"links": {"docs": link}}),
        )
        .unwrap();
    let alias = run(
        &service,
        "FOR d IN alias SEARCH d.text == 'quick' OR d.text == 'brown' \
         OPTIONS {waitForSync: true, collections: ['docs']} \
         SORT BM25(d) DESC, d._key RETURN [d._key, BM25(d), TFIDF(d, true)]",
    );
    let plain = run(
        &service,
        "FOR d IN docs_only SEARCH ANALYZER(d.text == 'quick' OR d.text == 'brown', 'text_en') \
         OPTIONS {waitForSync: true} \
         SORT BM25(d) DESC, d._key RETURN [d._key, BM25(d), TFIDF(d, true)]",
    );
    assert_eq!(alias.len(), 4, "{alias:?}");
    assert_eq!(alias, plain);
    let scores: Vec<f64> = alias.iter().map(|r| r[1].as_f64().unwrap()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]) && scores[0] > 0.0,
        "{scores:?}"
    );
}

#[test]
fn writes_restart_and_drops_reach_the_alias_view() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (core, service) = open(dir.path());
        populate(&core);
        let db = core.database("_system").unwrap();
        let docs = db.collection("docs").unwrap();
        docs.insert(
            json!({"_key": "new", "text": "a quick hare"}),
            &InsertOptions::default(),
        )
        .unwrap()
        .wait()
        .unwrap();
        let found = keys(
            &service,
            "FOR d IN alias SEARCH d.text == 'quick' OPTIONS {waitForSync: true} RETURN d._key",
        );
        assert_eq!(found, ["k0", "k1", "m", "new"]);
        core.shutdown().unwrap();
    }
    // Reopened: the index is rebuilt from the collection, the view refers to it again.
    let (core, service) = open(dir.path());
    let db = core.database("_system").unwrap();
    let found = keys(
        &service,
        "FOR d IN alias SEARCH d.text == 'quick' OPTIONS {waitForSync: true} RETURN d._key",
    );
    assert_eq!(found, ["k0", "k1", "m", "new"]);
    let props = db.view_properties(&db.view("alias").unwrap());
    assert_eq!(
        props["indexes"],
        json!([{"collection": "docs", "index": "inv"}, {"collection": "more", "index": "inv"}])
    );
    // The collection's drop takes its index out of the view.
    db.drop_collection("more", false).unwrap();
    let found = keys(
        &service,
        "FOR d IN alias SEARCH d.text == 'quick' OPTIONS {waitForSync: true} RETURN d._key",
    );
    assert_eq!(found, ["k0", "k1", "new"]);
    let props = db.view_properties(&db.view("alias").unwrap());
    assert_eq!(
        props["indexes"],
        json!([{"collection": "docs", "index": "inv"}])
    );
    // Dropping the index empties the view.
    db.collection("docs").unwrap().drop_index("inv").unwrap();
    let found = keys(
        &service,
        "FOR d IN alias SEARCH d.text == 'quick' OPTIONS {waitForSync: true} RETURN d._key",
    );
    assert!(found.is_empty(), "{found:?}");
}
