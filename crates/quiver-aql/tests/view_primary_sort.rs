//! A view's `primarySort` and `storedValues` (and an inverted index's, through a search-alias
//! view) used by the optimizer: a SORT the primary sort satisfies goes and the loop reads in
//! that order (`handle-arangosearch-views`), attributes the index keeps are read from it
//! (`no-document-materialization-arangosearch`), and documents are read after the LIMIT only
//! (`late-document-materialization-arangosearch`); a collection loop through an inverted
//! index (`indexHint`) drops a SORT its primary sort serves (`use-index-for-sort`). Each
//! query is compared with its
//! unoptimized form (the SORT keys through `NOOPT()`, which no rule looks through, or the
//! rule switched off) over random documents whose sort attribute is missing, null, boolean,
//! numeric, string, array or object, with many ties, over several index segments, with
//! documents removed that the arangosearch view has not caught up with.

mod support;

use support::CursorJson;

use std::sync::Arc;

use quiver_aql::source::core::CoreSource;
use quiver_aql::QueryService;
use quiver_core::{CollectionSpec, Core, CoreOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

const WORDS: [&str; 4] = ["brown", "drum", "lamp", "pink"];

struct Fixture {
    service: QueryService,
    _core: Arc<Core>,
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn reply(&self, query: &str, binds: &Value, rules: &[&str]) -> Value {
        let body = json!({"query": query, "bindVars": binds, "batchSize": 100000,
            "options": {"optimizer": {"rules": rules}}});
        self.service
            .create_cursor_json("_system", support::cursor(&body))
            .unwrap_or_else(|e| panic!("{query} {binds}: {}", e.message))
            .1
    }

    fn run(&self, query: &str, binds: &Value, rules: &[&str]) -> Vec<Value> {
        self.reply(query, binds, rules)["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The explained plan: its nodes and the rules applied.
    fn plan(&self, query: &str, binds: &Value) -> Value {
        self.service
            .explain(
                "_system",
                &support::explain(&json!({"query": query, "bindVars": binds})),
            )
            .unwrap_or_else(|e| panic!("{query}: {}", e.message))
            .plan
    }
}

fn node_types(plan: &Value) -> Vec<String> {
    plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["type"].as_str().unwrap().to_string())
        .collect()
}

fn view_node(plan: &Value) -> Value {
    plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["type"] == "EnumerateViewNode")
        .cloned()
        .unwrap()
}

fn rules(plan: &Value) -> Vec<String> {
    plan["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap().to_string())
        .collect()
}

/// A value of the sort attribute: missing (None) or of any type, from few values (ties).
fn random_value(rng: &mut StdRng) -> Option<Value> {
    Some(match rng.gen_range(0..11) {
        0 => return None,
        1 => Value::Null,
        2 => json!(rng.gen_bool(0.5)),
        3 | 4 => json!(rng.gen_range(-3..4)),
        5 => json!(rng.gen_range(-3..4) as f64 + 0.5),
        6 | 7 => json!(["a", "B", "b", "ab", ""][rng.gen_range(0..5)]),
        8 => json!([rng.gen_range(0..2), "x"]),
        9 => json!([]),
        _ => json!({"x": rng.gen_range(0..2)}),
    })
}

fn random_doc(rng: &mut StdRng, key: String) -> Value {
    let n = rng.gen_range(1..=3);
    let text: Vec<&str> = (0..n)
        .map(|_| WORDS[rng.gen_range(0..WORDS.len())])
        .collect();
    let mut doc =
        json!({"_key": key, "t": text.join(" "), "s": format!("s{}", rng.gen_range(0..30))});
    if let Some(a) = random_value(rng) {
        doc["a"] = a;
    }
    if let Some(b) = random_value(rng) {
        doc["b"] = b;
    }
    if rng.gen_bool(0.8) {
        doc["c"] = json!({"d": rng.gen_range(0..5)});
    }
    doc
}

/// Collections `docs` and `more`; view `v` (primary sort `a` asc, `b` desc; stored values
/// `s` and `c`) linking both; inverted indexes with the same primary sort and stored values
/// on both, in the search-alias view `alias`. 450 documents in three batches (three
/// segments), then every fifth document of `docs` removed without `v` catching up.
fn fixture(seed: u64) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let db = core.database("_system").unwrap();
    let docs = db.create_collection(CollectionSpec::new("docs")).unwrap();
    let more = db.create_collection(CollectionSpec::new("more")).unwrap();
    let link = json!({"fields": {"t": {"analyzers": ["text_en"]}}});
    db.create_view(
        "v",
        "arangosearch",
        &json!({"commitIntervalMsec": 3_600_000, "consolidationIntervalMsec": 0,
            "primarySort": [{"field": "a", "asc": true}, {"field": "b", "direction": "desc"}],
            "storedValues": [{"fields": ["s"]}, {"fields": ["c"], "compression": "none"}],
            "links": {"docs": link, "more": link}}),
    )
    .unwrap();
    for coll in [&docs, &more] {
        coll.create_index(&json!({"type": "inverted", "name": "inv",
            "fields": [{"name": "t", "analyzer": "text_en"}],
            "primarySort": {"fields": [{"field": "a", "direction": "asc"},
                                       {"field": "b", "direction": "desc"}]},
            "storedValues": [{"fields": ["s"]}, {"fields": ["c"]}]}))
            .unwrap();
    }
    db.create_view(
        "alias",
        "search-alias",
        &json!({"indexes": [{"collection": "docs", "index": "inv"},
                            {"collection": "more", "index": "inv"}]}),
    )
    .unwrap();
    let f = Fixture {
        service: QueryService::new(Arc::new(CoreSource::new(Arc::clone(&core)))),
        _core: core,
        _dir: dir,
    };
    let mut rng = StdRng::seed_from_u64(seed);
    for batch in 0..3 {
        for coll in ["docs", "more"] {
            let list: Vec<Value> = (0..75)
                .map(|i| random_doc(&mut rng, format!("k{}", batch * 75 + i)))
                .collect();
            f.run(
                &format!("FOR d IN @docs INSERT d INTO {coll}"),
                &json!({"docs": list}),
                &[],
            );
        }
        for view in ["v", "alias"] {
            f.run(
                &format!("FOR d IN {view} SEARCH true OPTIONS {{waitForSync: true}} COLLECT WITH COUNT INTO n RETURN n"),
                &json!({}),
                &[],
            );
        }
    }
    let gone: Vec<String> = (0..225).step_by(5).map(|i| format!("k{i}")).collect();
    f.run(
        "FOR k IN @keys REMOVE k IN docs",
        &json!({"keys": gone}),
        &[],
    );
    f
}

/// A random SEARCH condition over `t` (for `v` with its analyzer; the alias view's index
/// field has it), or `true`.
fn random_search(rng: &mut StdRng, view: &str) -> String {
    let words: Vec<&str> = (0..rng.gen_range(1..=2))
        .map(|_| WORDS[rng.gen_range(0..WORDS.len())])
        .collect();
    let words = serde_json::to_string(&words).unwrap();
    match (rng.gen_range(0..4), view) {
        (0, _) => "true".to_string(),
        (_, "v") => format!("ANALYZER(d.t IN {words}, 'text_en')"),
        _ => format!("d.t IN {words}"),
    }
}

fn random_limit(rng: &mut StdRng) -> String {
    match rng.gen_range(0..4) {
        0 => String::new(),
        _ => format!(
            "LIMIT {}, {}",
            rng.gen_range(0..30),
            [0, 1, 5, 20, 500][rng.gen_range(0..5)]
        ),
    }
}

/// The sort key of a `SORT` clause of the test below, as an array expression.
fn sort_key_of(sort: &str) -> &'static str {
    match sort {
        "SORT d.a" | "LET x = d.a SORT x" | "SORT d.a DESC" => "[d.a]",
        "SORT d.a ASC, d.b DESC" | "SORT d.a DESC, d.b ASC" | "SORT d.a, d.b" => "[d.a, d.b]",
        "SORT d.b DESC" => "[d.b]",
        "SORT d.c.d" => "[d.c.d]",
        other => panic!("no sort key for {other}"),
    }
}

/// Rows `[key, sort key, …]` of two runs of one sorted query: the same sort keys row by row,
/// and the same rows within each run of equal sort keys that the window (OFFSET, LIMIT) holds
/// whole. A run the window cuts (the first and last, when the query has a LIMIT) may hold
/// different tied rows.
fn assert_same_sorted_rows(got: &[Value], want: &[Value], query: &str) {
    let windowed = query.contains("LIMIT");
    let keys = |rows: &[Value]| rows.iter().map(|r| r[1].clone()).collect::<Vec<_>>();
    assert_eq!(keys(got), keys(want), "sort keys of {query}");
    let mut start = 0;
    while start < got.len() {
        let end = (start..got.len())
            .find(|&i| got[i][1] != got[start][1])
            .unwrap_or(got.len());
        if !windowed || (start > 0 && end < got.len()) {
            let sorted = |rows: &[Value]| {
                let mut rows = rows.iter().map(|r| r.to_string()).collect::<Vec<_>>();
                rows.sort();
                rows
            };
            assert_eq!(
                sorted(&got[start..end]),
                sorted(&want[start..end]),
                "rows tied on {} in {query}",
                got[start][1]
            );
        }
        start = end;
    }
}

#[test]
fn a_sort_the_primary_sort_satisfies_goes_and_rows_stay_the_same() {
    let f = fixture(5);
    let mut rng = StdRng::seed_from_u64(8);
    let mut compared = 0;
    for view in ["v", "alias"] {
        // (SORT, its unoptimized form, whether the primary sort satisfies it)
        let sorts = [
            ("SORT d.a", "SORT NOOPT(d.a)", true),
            (
                "SORT d.a ASC, d.b DESC",
                "SORT NOOPT(d.a), NOOPT(d.b) DESC",
                true,
            ),
            ("LET x = d.a SORT x", "SORT NOOPT(d.a)", true),
            ("SORT d.a DESC", "SORT NOOPT(d.a) DESC", false),
            (
                "SORT d.a DESC, d.b ASC",
                "SORT NOOPT(d.a) DESC, NOOPT(d.b)",
                false,
            ),
            ("SORT d.a, d.b", "SORT NOOPT(d.a), NOOPT(d.b)", false),
            ("SORT d.b DESC", "SORT NOOPT(d.b) DESC", false),
            ("SORT d.c.d", "SORT NOOPT(d.c.d)", false),
        ];
        for (sort, reference, satisfied) in sorts {
            for _ in 0..8 {
                let search = random_search(&mut rng, view);
                let limit = random_limit(&mut rng);
                // The sort key is returned after the key: rows that tie on it come in no
                // defined order (ArangoDB's neither), so they are compared as sets.
                let key = sort_key_of(sort);
                let query = format!(
                    "FOR d IN {view} SEARCH {search} {sort} {limit} RETURN [d._key, {key}, d.a, d.b]"
                );
                let plain = format!(
                    "FOR d IN {view} SEARCH {search} {reference} {limit} RETURN [d._key, {key}, d.a, d.b]"
                );
                let plan = f.plan(&query, &json!({}));
                assert!(rules(&plan).contains(&"handle-arangosearch-views".into()));
                let node = view_node(&plan);
                assert_eq!(
                    !node_types(&plan).contains(&"SortNode".to_string()),
                    satisfied,
                    "{query}"
                );
                if satisfied {
                    assert_eq!(
                        node["primarySort"],
                        json!([{"field": "a", "asc": true},
                        {"field": "b", "asc": false}])
                    );
                    let buckets = if sort.contains("d.b") { 2 } else { 1 };
                    assert_eq!(node["primarySortBuckets"], json!(buckets), "{query}");
                } else {
                    assert!(node.get("primarySort").is_none(), "{query}");
                }
                let got = f.run(&query, &json!({}), &[]);
                assert_same_sorted_rows(&got, &f.run(&plain, &json!({}), &[]), &query);
                compared += got.len();
            }
        }
    }
    assert!(compared > 2000, "too few rows compared: {compared}");

    // Not the first loop: the SORT orders the rows of every outer iteration together.
    let query = "FOR w IN ['lamp', 'drum'] FOR d IN v SEARCH ANALYZER(d.t == w, 'text_en') \
                 SORT d.a LIMIT 30 RETURN [w, d._key]";
    assert!(node_types(&f.plan(query, &json!({}))).contains(&"SortNode".to_string()));
}

#[test]
fn stored_values_answer_without_documents() {
    let f = fixture(6);
    let mut rng = StdRng::seed_from_u64(2);
    const RULE: &str = "no-document-materialization-arangosearch";
    for view in ["v", "alias"] {
        for _ in 0..10 {
            let search = random_search(&mut rng, view);
            let query = format!(
                "FOR d IN {view} SEARCH {search} SORT d.a RETURN {{k: d._key, id: d._id, a: d.a, b: d.b, s: d.s, c: d.c}}"
            );
            let plan = f.plan(&query, &json!({}));
            assert!(rules(&plan).contains(&RULE.to_string()), "{query}");
            let node = view_node(&plan);
            assert_eq!(node["noMaterialization"], json!(true));
            let fields: Vec<&str> = node["viewValuesVars"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|column| match column.get("viewStoredValuesVars") {
                    Some(list) => list.as_array().unwrap().iter().collect::<Vec<_>>(),
                    None => vec![column],
                })
                .map(|v| v["field"].as_str().unwrap())
                .collect();
            assert_eq!(fields, ["a", "b", "s", "c"], "{query}");
            assert_eq!(
                f.run(&query, &json!({}), &[]),
                f.run(&query, &json!({}), &[&format!("-{RULE}")]),
                "{query}"
            );
        }
    }
    // An attribute the index does not keep: the documents are read.
    let query = "FOR d IN v SEARCH true RETURN [d.s, d.t]";
    assert_eq!(
        view_node(&f.plan(query, &json!({})))["noMaterialization"],
        json!(false)
    );
}

#[test]
fn documents_are_read_after_the_limit_only() {
    let f = fixture(7);
    let mut rng = StdRng::seed_from_u64(3);
    const RULE: &str = "late-document-materialization-arangosearch";
    for view in ["v", "alias"] {
        let sorts = [
            "SORT d.s DESC, d.c",
            "SORT d.a ASC, d.b DESC",
            "SORT BM25(d) DESC",
            "FILTER d.s != 's3' SORT d.b",
        ];
        for sort in sorts {
            for _ in 0..6 {
                let search = random_search(&mut rng, view);
                let (offset, count) = (rng.gen_range(0..20), rng.gen_range(0..15));
                let query = format!(
                    "FOR d IN {view} SEARCH {search} {sort} LIMIT {offset}, {count} RETURN d"
                );
                let plan = f.plan(&query, &json!({}));
                assert!(rules(&plan).contains(&RULE.to_string()), "{query}");
                let types = node_types(&plan);
                let limit = types.iter().position(|t| t == "LimitNode").unwrap();
                assert_eq!(types[limit + 1], "MaterializeNode", "{query}");
                assert!(view_node(&plan).get("outNmDocId").is_some());
                let late = f.reply(&query, &json!({}), &[]);
                let full = f.reply(&query, &json!({}), &[&format!("-{RULE}")]);
                assert_eq!(late["result"], full["result"], "{query}");
                // Documents read: one per row kept (besides the view's existence checks).
                let rows = late["result"].as_array().unwrap().len() as u64;
                let full_lookups = full["extra"]["stats"]["documentLookups"].as_u64().unwrap();
                let late_lookups = late["extra"]["stats"]["documentLookups"].as_u64().unwrap();
                assert!(late_lookups <= full_lookups + rows, "{query}");
            }
        }
    }
    // An attribute the index does not keep before the LIMIT: no late materialization.
    let query = "FOR d IN v SEARCH true SORT d.t LIMIT 3 RETURN d";
    assert!(!rules(&f.plan(query, &json!({}))).contains(&RULE.to_string()));
}

#[test]
fn an_inverted_index_loop_reads_in_its_primary_sort() {
    let f = fixture(9);
    let mut rng = StdRng::seed_from_u64(5);
    // (SORT, its unoptimized form, whether the index's primary sort serves it alone)
    let sorts = [
        ("SORT d.a", "SORT NOOPT(d.a)", true),
        ("SORT d.a ASC", "SORT NOOPT(d.a)", true),
        ("SORT d.a DESC", "SORT NOOPT(d.a) DESC", false),
        // Mixed directions, as declared: not through the index alone.
        (
            "SORT d.a, d.b DESC",
            "SORT NOOPT(d.a), NOOPT(d.b) DESC",
            false,
        ),
        ("SORT d.b DESC", "SORT NOOPT(d.b) DESC", false),
    ];
    let mut compared = 0;
    for (sort, reference, satisfied) in sorts {
        for _ in 0..8 {
            let words: Vec<&str> = (0..rng.gen_range(1..=2))
                .map(|_| WORDS[rng.gen_range(0..WORDS.len())])
                .collect();
            let words = serde_json::to_string(&words).unwrap();
            let limit = random_limit(&mut rng);
            let head = format!(
                "FOR d IN docs OPTIONS {{indexHint: 'inv', forceIndexHint: true, waitForSync: true}} \
                 FILTER d.t IN {words}"
            );
            let query = format!("{head} {sort} {limit} RETURN [d._key, d.a, d.b]");
            let plain = format!("{head} {reference} {limit} RETURN [d._key, d.a, d.b]");
            let plan = f.plan(&query, &json!({}));
            assert_eq!(
                !node_types(&plan).contains(&"SortNode".to_string()),
                satisfied,
                "{query}"
            );
            assert_eq!(
                rules(&plan).contains(&"use-index-for-sort".to_string()),
                satisfied,
                "{query}"
            );
            let got = f.run(&query, &json!({}), &[]);
            assert_eq!(got, f.run(&plain, &json!({}), &[]), "{query}");
            compared += got.len();
        }
    }
    assert!(compared > 300, "too few rows compared: {compared}");
}
