//! `FOR d IN coll OPTIONS {indexHint: "inv", forceIndexHint: true} FILTER …` through an
//! inverted index: on varied documents every condition the index serves finds what the full
//! scan finds, explain shows the IndexNode with the inverted index and no filter left for the
//! served conjuncts, unserved conjuncts stay in the filter, and a forced hint the index cannot
//! serve is error 1577.

mod support;

use support::CursorJson;

use std::sync::Arc;

use quiver_aql::source::core::CoreSource;
use quiver_aql::QueryService;
use quiver_core::{CollectionSpec, Core, CoreOptions, InsertOptions};
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

const NAMES: [&str; 8] = [
    "apple", "apples", "pear", "peach", "banana", "grape", "plum", "aple",
];
const WORDS: [&str; 6] = ["red", "fox", "blue", "dog", "green", "cat"];

/// `docs` with 300 documents of varied shape: `s` a name or missing, `n` an integer, a
/// fraction or missing, `t` a few words or missing, `g` (a bigram field) a name or missing,
/// `other` never indexed; the inverted index `inv` over s, n, t (text_en) and g (bigram).
fn populate(core: &Core) {
    let db = core.database("_system").unwrap();
    quiver_core::analyzers::create(
        &db,
        &json!({"name": "bigram", "type": "ngram", "features": ["frequency", "position"],
            "properties": {"min": 2, "max": 2, "preserveOriginal": false, "streamType": "utf8"}}),
        quiver_types::NamingConvention::Traditional,
    )
    .unwrap()
    .wait()
    .unwrap();
    let docs = db.create_collection(CollectionSpec::new("docs")).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(17);
    for i in 0..300 {
        let mut doc = Map::new();
        doc.insert("_key".into(), json!(format!("k{i}")));
        if rng.gen_bool(0.85) {
            doc.insert("s".into(), json!(NAMES[rng.gen_range(0..NAMES.len())]));
        }
        match rng.gen_range(0..4) {
            0 => {}
            1 => {
                doc.insert("n".into(), json!(rng.gen_range(0..100) as f64 / 10.0));
            }
            _ => {
                doc.insert("n".into(), json!(rng.gen_range(0..10)));
            }
        }
        if rng.gen_bool(0.8) {
            let len = rng.gen_range(1..5);
            let words: Vec<&str> = (0..len)
                .map(|_| WORDS[rng.gen_range(0..WORDS.len())])
                .collect();
            doc.insert("t".into(), json!(words.join(" ")));
        }
        if rng.gen_bool(0.8) {
            doc.insert("g".into(), json!(NAMES[rng.gen_range(0..NAMES.len())]));
        }
        doc.insert("other".into(), json!(i % 7));
        docs.insert(Value::Object(doc), &InsertOptions::default())
            .unwrap()
            .wait()
            .unwrap();
    }
    docs.create_index(&json!({"type": "inverted", "name": "inv", "fields": [
        "s", "n", {"name": "t", "analyzer": "text_en"}, {"name": "g", "analyzer": "bigram"}]}))
        .unwrap();
}

fn open(dir: &std::path::Path) -> (Arc<Core>, QueryService) {
    let core = Arc::new(Core::open(dir, CoreOptions::default()).unwrap());
    let service = QueryService::new(Arc::new(CoreSource::new(Arc::clone(&core))));
    (core, service)
}

fn try_run(service: &QueryService, query: &str) -> Result<Vec<Value>, quiver_errors::Error> {
    let (_, reply) = service.create_cursor_json(
        "_system",
        support::cursor(&json!({"query": query, "batchSize": 10000})),
    )?;
    Ok(reply["result"].as_array().cloned().unwrap_or_default())
}

fn sorted(service: &QueryService, query: &str) -> Vec<String> {
    let mut out: Vec<String> = try_run(service, query)
        .unwrap_or_else(|e| panic!("{query}: {}", e.message))
        .into_iter()
        .map(|v| v.to_string())
        .collect();
    out.sort();
    out
}

const HINT: &str = "OPTIONS {indexHint: 'inv', forceIndexHint: true, waitForSync: true}";

/// (condition through the index, the same condition for the full scan)
const CASES: [(&str, &str); 18] = [
    ("d.s == 'apple'", "d.s == 'apple'"),
    ("d.s != 'apple'", "d.s != 'apple'"),
    ("d.s IN ['apple', 'pear']", "d.s IN ['apple', 'pear']"),
    (
        "d.s NOT IN ['apple', 'pear']",
        "d.s NOT IN ['apple', 'pear']",
    ),
    ("d.n > 3 AND d.n <= 7", "d.n > 3 AND d.n <= 7"),
    ("d.n >= 2.5", "d.n >= 2.5"),
    ("3 < d.n", "3 < d.n"),
    (
        "IN_RANGE(d.n, 2, 6, true, false)",
        "IN_RANGE(d.n, 2, 6, true, false)",
    ),
    ("STARTS_WITH(d.s, 'ap')", "STARTS_WITH(d.s, 'ap')"),
    ("LIKE(d.s, '%an%')", "LIKE(d.s, '%an%')"),
    ("d.s NOT LIKE '%a%'", "d.s NOT LIKE '%a%'"),
    (
        "LEVENSHTEIN_MATCH(d.s, 'aple', 1, true, 0)",
        "LEVENSHTEIN_MATCH(d.s, 'aple', 1, true, 0)",
    ),
    (
        "NGRAM_MATCH(d.g, 'apples', 0.6, 'bigram')",
        "NGRAM_MATCH(d.g, 'apples', 0.6, 'bigram')",
    ),
    ("EXISTS(d.s)", "HAS(d, 's')"),
    (
        "PHRASE(d.t, 'red fox')",
        "CONTAINS(CONCAT(' ', d.t, ' '), ' red fox ')",
    ),
    (
        "(d.s == 'apple' OR d.n > 7) AND NOT STARTS_WITH(d.s, 'p')",
        "(d.s == 'apple' OR d.n > 7) AND NOT STARTS_WITH(d.s, 'p')",
    ),
    (
        "['plum', 'grape'] ANY == d.s",
        "['plum', 'grape'] ANY == d.s",
    ),
    (
        "d.s == 'banana' AND d.other == 3",
        "d.s == 'banana' AND d.other == 3",
    ),
];

#[test]
fn filters_through_the_index_find_what_the_full_scan_finds() {
    let dir = tempfile::tempdir().unwrap();
    let (core, service) = open(dir.path());
    populate(&core);
    for (indexed, scanned) in CASES {
        let got = sorted(
            &service,
            &format!("FOR d IN docs {HINT} FILTER {indexed} RETURN d._key"),
        );
        let want = sorted(
            &service,
            &format!("FOR d IN docs FILTER {scanned} RETURN d._key"),
        );
        assert!(!want.is_empty(), "{scanned} finds nothing: a weak case");
        assert_eq!(got, want, "FILTER {indexed} through the index");
    }
    // Operands from an outer loop and bind parameters, evaluated per row.
    let got = sorted(
        &service,
        &format!(
            "FOR v IN ['apple', 'pear', 'plum'] FOR d IN docs {HINT} \
             FILTER d.s == v AND d.n >= 2 RETURN [v, d._key]"
        ),
    );
    let want = sorted(
        &service,
        "FOR v IN ['apple', 'pear', 'plum'] FOR d IN docs \
         FILTER d.s == v AND d.n >= 2 RETURN [v, d._key]",
    );
    assert!(!want.is_empty());
    assert_eq!(got, want);
}

#[test]
fn explain_shows_the_inverted_index_and_what_stays_in_the_filter() {
    let dir = tempfile::tempdir().unwrap();
    let (core, service) = open(dir.path());
    populate(&core);
    let explain = service
        .explain(
            "_system",
            &support::explain(&json!({"query": format!(
                "FOR d IN docs {HINT} FILTER d.s == @s AND LENGTH(d.s) == 5 RETURN d"),
                "bindVars": {"s": "apple"}})),
        )
        .unwrap();
    let nodes = explain.plan["nodes"].as_array().unwrap();
    let index_node = nodes
        .iter()
        .find(|n| n["type"] == "IndexNode")
        .unwrap_or_else(|| panic!("no IndexNode: {}", explain.plan));
    assert_eq!(index_node["indexes"][0]["type"], "inverted");
    assert_eq!(index_node["indexes"][0]["name"], "inv");
    assert_eq!(index_node["waitForSync"], true);
    assert!(!nodes.iter().any(|n| n["type"] == "EnumerateCollectionNode"));
    // LENGTH() is no index condition: one filter is left for it.
    assert_eq!(
        nodes.iter().filter(|n| n["type"] == "FilterNode").count(),
        1
    );
    let rows = sorted(
        &service,
        &format!("FOR d IN docs {HINT} FILTER d.s == 'apple' AND LENGTH(d.s) == 5 RETURN d._key"),
    );
    let want = sorted(
        &service,
        "FOR d IN docs FILTER d.s == 'apple' AND LENGTH(d.s) == 5 RETURN d._key",
    );
    assert_eq!(rows, want);
    // Without the hint the inverted index is never used.
    let plain = service
        .explain(
            "_system",
            &support::explain(&json!({"query": "FOR d IN docs FILTER d.s == 'apple' RETURN d"})),
        )
        .unwrap();
    assert!(plain.plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|n| n["type"] != "IndexNode"));
}

#[test]
fn a_forced_hint_the_index_cannot_serve_is_error_1577() {
    let dir = tempfile::tempdir().unwrap();
    let (core, service) = open(dir.path());
    populate(&core);
    for filter in [
        // Not an index condition.
        "LENGTH(d.s) == 5",
        // An attribute the index does not hold.
        "d.other == 3",
        // An operand depending on the document.
        "d.s == d.g",
    ] {
        let err = try_run(
            &service,
            &format!("FOR d IN docs {HINT} FILTER {filter} RETURN d"),
        )
        .expect_err(filter);
        assert_eq!(err.code.number(), 1577, "{filter}: {}", err.message);
    }
    // Not forced: the query runs as a full scan.
    let got = sorted(
        &service,
        "FOR d IN docs OPTIONS {indexHint: 'inv'} FILTER d.other == 3 RETURN d._key",
    );
    let want = sorted(&service, "FOR d IN docs FILTER d.other == 3 RETURN d._key");
    assert_eq!(got, want);
}

#[test]
fn wait_for_sync_sees_the_latest_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (core, service) = open(dir.path());
    populate(&core);
    let docs = core
        .database("_system")
        .unwrap()
        .collection("docs")
        .unwrap();
    docs.insert(
        json!({"_key": "fresh", "s": "kiwi"}),
        &InsertOptions::default(),
    )
    .unwrap()
    .wait()
    .unwrap();
    let got = sorted(
        &service,
        &format!("FOR d IN docs {HINT} FILTER d.s == 'kiwi' RETURN d._key"),
    );
    assert_eq!(got, ["\"fresh\""]);
}
