//! `MINHASH_MATCH()` outside SEARCH (in FILTER and RETURN): it computes both MinHash
//! signatures with the analyzer and matches as SEARCH does, so a FILTER over the collection,
//! a SEARCH over a view of it and a FILTER through an inverted index find the same documents.

mod support;

use support::CursorJson;

use std::sync::Arc;

use quiver_aql::source::core::CoreSource;
use quiver_aql::QueryService;
use quiver_core::{CollectionSpec, Core, CoreOptions, InsertOptions};
use serde_json::{json, Value};

const CORPUS: [&str; 6] = [
    "the quick brown fox jumps over the lazy dog",
    "the fox jumps over the crazy dog",
    "a quick brown dog jumps over the lazy fox",
    "lorem ipsum dolor sit amet",
    "the quick brown fox",
    "quick brown fox jumps over lazy dogs and cats",
];

fn run(service: &QueryService, query: &str) -> Result<Vec<Value>, quiver_errors::Error> {
    let (_, reply) = service.create_cursor_json(
        "_system",
        support::cursor(&json!({"query": query, "batchSize": 1000})),
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
fn filter_search_and_inverted_index_agree() {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let db = core.database("_system").unwrap();
    quiver_core::analyzers::create(
        &db,
        &json!({"name": "mh", "type": "minhash", "features": [],
            "properties": {"numHashes": 20, "analyzer": {"type": "segmentation",
                "properties": {"break": "alpha", "case": "lower"}}}}),
        quiver_types::NamingConvention::Traditional,
    )
    .unwrap()
    .wait()
    .unwrap();
    let texts = db.create_collection(CollectionSpec::new("texts")).unwrap();
    for (i, text) in CORPUS.iter().enumerate() {
        texts
            .insert(
                json!({"_key": format!("t{i}"), "text": text}),
                &InsertOptions::default(),
            )
            .unwrap()
            .wait()
            .unwrap();
    }
    db.create_view(
        "mhview",
        "arangosearch",
        &json!({"links": {"texts": {"fields": {"text": {"analyzers": ["mh"]}}}}}),
    )
    .unwrap();
    texts
        .create_index(&json!({"type": "inverted", "name": "inv",
            "fields": [{"name": "text", "analyzer": "mh"}]}))
        .unwrap();
    let service = QueryService::new(Arc::new(CoreSource::new(Arc::clone(&core))));
    let mut matched = 0;
    for target in [
        "the quick brown fox jumps over the lazy dog",
        "lorem ipsum",
        "quick fox",
    ] {
        for threshold in [0.1, 0.3, 0.5, 0.8, 1.0] {
            let filter = keys(
                &service,
                &format!(
                    "FOR d IN texts FILTER MINHASH_MATCH(d.text, '{target}', {threshold}, 'mh') \
                     RETURN d._key"
                ),
            );
            let search = keys(
                &service,
                &format!(
                    "FOR d IN mhview SEARCH MINHASH_MATCH(d.text, '{target}', {threshold}, 'mh') \
                     OPTIONS {{waitForSync: true}} RETURN d._key"
                ),
            );
            let inverted = keys(
                &service,
                &format!(
                    "FOR d IN texts OPTIONS {{indexHint: 'inv', forceIndexHint: true, waitForSync: true}} \
                     FILTER MINHASH_MATCH(d.text, '{target}', {threshold}, 'mh') RETURN d._key"
                ),
            );
            assert_eq!(filter, search, "{target} {threshold}");
            assert_eq!(filter, inverted, "{target} {threshold}");
            matched += filter.len();
        }
    }
    assert!(matched > 10, "{matched}");
    // RETURN with constant strings; the default threshold is 1: the same word set has the
    // same signature, disjoint word sets share no signature token.
    let same = run(
        &service,
        "RETURN [MINHASH_MATCH('lorem ipsum', 'ipsum lorem', 'mh'), \
                 MINHASH_MATCH('lorem ipsum', 'quick fox', 0.1, 'mh')]",
    )
    .unwrap();
    assert_eq!(same, vec![json!([true, false])]);
    // Partial overlap, against the signatures TOKENS() gives.
    for threshold in [0.1, 0.3, 0.6] {
        let got = run(
            &service,
            &format!(
                "LET a = TOKENS('lorem ipsum', 'mh') LET t = TOKENS('lorem dolor', 'mh') \
                 RETURN [MINHASH_MATCH('lorem ipsum', 'lorem dolor', {threshold}, 'mh'), \
                 LENGTH(INTERSECTION(a, t)) >= MAX([1, CEIL({threshold} * LENGTH(t))])]"
            ),
        )
        .unwrap();
        assert_eq!(got[0][0], got[0][1], "threshold {threshold}");
    }
    // An unknown analyzer and a threshold outside (0, 1] are 400/10.
    for query in [
        "RETURN MINHASH_MATCH('a', 'a', 'nope')",
        "RETURN MINHASH_MATCH('a', 'a', 1.5, 'mh')",
    ] {
        let err = run(&service, query).expect_err(query);
        assert_eq!(err.code.number(), 10, "{query}: {}", err.message);
    }
}
