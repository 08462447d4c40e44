//! `FOR d IN view SEARCH …` over quiver-core: every SEARCH condition against the FILTER that
//! means the same over the linked collection (the brute-force reference), scorer order, the
//! options, explain and errors.

mod support;

use support::CursorJson;

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
        // Object tokens are not analyzed: text_en indexes `lazy` as `lazi` and `dogs` as `dog`.
        (
            "PHRASE(d.text, {STARTS_WITH: ['qui']}, 0, {WILDCARD: 'b%o_n'}, 0, {LEVENSHTEIN_MATCH: ['foks', 2]}, 'text_en')",
            "d.n == 0",
        ),
        (
            "PHRASE(d.text, [{TERMS: ['lazi', 'brown']}, {TERM: 'dog'}], 'text_en')",
            "d.n IN [2, 3]",
        ),
        (
            "PHRASE(d.text, [{TERM: ['dogs']}], 'text_en')",
            "false",
        ),
        (
            "PHRASE(d.text, ['a', ['Brown', 'Lazy'], 'dogs'], 'text_en')",
            "d.n == 2",
        ),
        (
            "PHRASE(d.text, {IN_RANGE: ['a', 'c', true, false]}, 0, 'dog', 'text_en')",
            "d.n == 2",
        ),
        (
            "PHRASE(d.text, 'lazy', 0, {LEVENSHTEIN_MATCH: ['ix', 1, false, 64, 'f']}, 'text_en')",
            "d.n == 3",
        ),
        (
            "PHRASE(d.text, 'the', 1, [], 0, 'brown', 'text_en')",
            "d.n == 0",
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
        (
            "ANALYZER(LEVENSHTEIN_MATCH(d.text, 'ick', 1, false, 64, 'qu'), 'text_en')",
            "CONTAINS(d.text, 'quick')",
        ),
        (
            "ANALYZER(LEVENSHTEIN_MATCH(d.text, 'oxx', 1, false, 64, 'f'), 'text_en')",
            "CONTAINS(d.text, 'fox')",
        ),
        (
            "LEVENSHTEIN_MATCH(d.text, 'brown', 2, true, 1)",
            "d.text == 'brown'",
        ),
        ("[1, 3, 9] ANY == d.n", "d.n IN [1, 3, 9]"),
        ("[1, 3] ANY IN d.n", "d.n IN [1, 3]"),
        ("['a', 'b'] ALL == d.tags", "'a' IN d.tags AND 'b' IN d.tags"),
        ("[1, 3] NONE == d.n", "d.n NOT IN [1, 3]"),
        ("[2, 4] ALL > d.n", "d.n < 2"),
        ("[2, 4] ANY <= d.n", "d.n >= 2"),
        ("[] ANY == d.n", "false"),
        ("[] ALL == d.n", "true"),
        (
            "ANALYZER(TOKENS('lazy brown fox', 'text_en') AT LEAST (2) == d.text, 'text_en')",
            "d.n IN [0, 3]",
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
    for bad in [
        "{NOSUCH: 'a'}",
        "{TERM: 'a', TERMS: ['b']}",
        "{TERM: 1}",
        "{LEVENSHTEIN_MATCH: ['a', 5]}",
        "{IN_RANGE: ['a', 1, true, true]}",
        "true",
        "1.5",
    ] {
        let err = f
            .run(&format!(
                "FOR d IN v SEARCH PHRASE(d.text, {bad}, 'text_en') RETURN d"
            ))
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::BadParameter, "{bad}");
    }
    let plan = f
        .service
        .explain(
            "_system",
            &support::explain(
                &json!({"query": "FOR d IN v SEARCH d.n == 1 SORT BM25(d) RETURN d"}),
            ),
        )
        .unwrap();
    let types: Vec<&str> = plan.plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["type"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"EnumerateViewNode"), "{types:?}");
}

/// The longest common subsequence of `a` and `b`, by plain recursion over suffixes with a
/// memo (the reference the index's row-wise table is compared with).
fn reference_lcs(a: &[String], b: &[String]) -> usize {
    fn go(
        a: &[String],
        b: &[String],
        i: usize,
        j: usize,
        memo: &mut std::collections::HashMap<(usize, usize), usize>,
    ) -> usize {
        if i == a.len() || j == b.len() {
            return 0;
        }
        if let Some(v) = memo.get(&(i, j)) {
            return *v;
        }
        let v = if a[i] == b[j] {
            1 + go(a, b, i + 1, j + 1, memo)
        } else {
            go(a, b, i + 1, j, memo).max(go(a, b, i, j + 1, memo))
        };
        memo.insert((i, j), v);
        v
    }
    go(a, b, 0, 0, &mut std::collections::HashMap::new())
}

/// `NGRAM_MATCH()` inside SEARCH (through the index's positional postings), as a FILTER
/// outside SEARCH, and a brute-force reference over the analyzer's tokens agree on which
/// documents match, for several targets and thresholds; the analyzer comes from the fourth
/// argument or from `ANALYZER()`.
#[test]
fn ngram_match_agrees_with_a_brute_force_reference() {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
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
    let words = db.create_collection(CollectionSpec::new("words")).unwrap();
    let texts = [
        "quick",
        "quack",
        "quirk",
        "kciuq",
        "quickly",
        "thick",
        "qu",
        "",
        "q",
        "uiqck",
        "quiqui",
        "abracadabra",
        "cadabra",
        "abraham",
    ];
    for (i, text) in texts.iter().enumerate() {
        words
            .insert(
                json!({"_key": format!("w{i}"), "text": text}),
                &InsertOptions::default(),
            )
            .unwrap()
            .wait()
            .unwrap();
    }
    db.create_view(
        "grams",
        "arangosearch",
        &json!({"links": {"words": {"fields": {"text": {"analyzers": ["bigram"]}}}}}),
    )
    .unwrap();
    let f = Fixture {
        service: QueryService::new(Arc::new(CoreSource::new(Arc::clone(&core)))),
        _core: core,
        _dir: dir,
    };
    let tokens = |text: &str| -> Vec<String> {
        let out = f
            .run(&format!("RETURN TOKENS({}, 'bigram')", json!(text)))
            .unwrap();
        serde_json::from_value(out[0].clone()).unwrap()
    };
    let mut checked = 0;
    for target in ["quick", "quiqk", "abra", "cadabra", "kcuq", "q"] {
        let target_grams = tokens(target);
        for threshold in [0.1, 0.5, 0.7, 1.0] {
            let mut expected: Vec<String> = Vec::new();
            if !target_grams.is_empty() {
                let needed = ((target_grams.len() as f64 * threshold).ceil() as usize).max(1);
                for (i, text) in texts.iter().enumerate() {
                    if reference_lcs(&target_grams, &tokens(text)) >= needed {
                        expected.push(format!("w{i}"));
                    }
                }
            }
            expected.sort();
            let t = json!(target);
            let searched = f.keys(&format!(
                "FOR d IN grams SEARCH NGRAM_MATCH(d.text, {t}, {threshold}, 'bigram') \
                 OPTIONS {{waitForSync: true}} RETURN d._key"
            ));
            assert_eq!(searched, expected, "SEARCH {target} {threshold}");
            let in_context = f.keys(&format!(
                "FOR d IN grams SEARCH ANALYZER(NGRAM_MATCH(d.text, {t}, {threshold}), 'bigram') \
                 OPTIONS {{waitForSync: true}} RETURN d._key"
            ));
            assert_eq!(in_context, expected, "ANALYZER() {target} {threshold}");
            let filtered = f.keys(&format!(
                "FOR d IN words FILTER NGRAM_MATCH(d.text, {t}, {threshold}, 'bigram') \
                 RETURN d._key"
            ));
            assert_eq!(filtered, expected, "FILTER {target} {threshold}");
            checked += expected.len();
        }
    }
    assert!(
        checked > 20,
        "the corpus matches too little to test ({checked})"
    );
    // The default threshold is 0.7: "quick" has 4 bigrams, 3 are needed.
    assert_eq!(
        f.keys(
            "FOR d IN grams SEARCH NGRAM_MATCH(d.text, 'quick', 'bigram') \
             OPTIONS {waitForSync: true} RETURN d._key"
        ),
        f.keys(
            "FOR d IN grams SEARCH NGRAM_MATCH(d.text, 'quick', 0.7, 'bigram') \
             OPTIONS {waitForSync: true} RETURN d._key"
        )
    );
    for bad in ["0", "1.5", "'x'"] {
        let err = f
            .run(&format!(
                "FOR d IN grams SEARCH NGRAM_MATCH(d.text, 'quick', {bad}, 'bigram') \
                 OPTIONS {{waitForSync: true}} RETURN d._key"
            ))
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::BadParameter, "{bad}: {}", err.message);
    }
}

/// OFFSET_INFO over a view whose link uses an analyzer with the `offset` feature: the
/// documentation's food example (terms, a phrase with skipped tokens, a prefix), byte
/// offsets and lengths of every match, named by path; caps and errors.
#[test]
fn offset_info_reports_the_matches() {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let db = core.database("_system").unwrap();
    quiver_core::analyzers::create(
        &db,
        &json!({"name": "text_en_offset", "type": "text",
            "features": ["frequency", "position", "offset"],
            "properties": {"locale": "en", "stopwords": []}}),
        quiver_types::NamingConvention::Traditional,
    )
    .unwrap()
    .wait()
    .unwrap();
    let food = db.create_collection(CollectionSpec::new("food")).unwrap();
    let texts = [
        ("avocado", "The avocado is a medium-sized, evergreen tree, native to the Americas."),
        ("carrot", "The carrot is a root vegetable, typically orange in color, native to Europe and Southwestern Asia."),
        ("chili", "Chili peppers are varieties of the berry-fruit of plants from the genus Capsicum, cultivated for their pungency."),
        ("tomato", "The tomato is the edible berry of the tomato plant."),
    ];
    for (key, en) in texts {
        food.insert(
            json!({"_key": key, "description": {"en": en}}),
            &InsertOptions::default(),
        )
        .unwrap()
        .wait()
        .unwrap();
    }
    db.create_view(
        "food_view",
        "arangosearch",
        &json!({"links": {"food": {"fields": {"description": {"fields": {"en":
            {"analyzers": ["text_en_offset", "text_en"]}}}}}}}),
    )
    .unwrap();
    let f = Fixture {
        service: QueryService::new(Arc::new(CoreSource::new(Arc::clone(&core)))),
        _core: core,
        _dir: dir,
    };
    let query = "FOR doc IN food_view SEARCH ANALYZER(
            doc.description.en IN TOKENS('avocado tomato', 'text_en_offset') OR
            PHRASE(doc.description.en, 'cultivated', 2, 'pungency') OR
            STARTS_WITH(doc.description.en, 'cap'), 'text_en_offset')
          OPTIONS {waitForSync: true}
          SORT doc._key
          FOR info IN OFFSET_INFO(doc, ['description.en'])
            RETURN [doc._key, info.name, info.offsets[* RETURN [CURRENT,
              SUBSTRING_BYTES(VALUE(doc, info.name), CURRENT[0], CURRENT[1])]]]";
    let rows = f.run(query).unwrap();
    assert_eq!(
        rows,
        vec![
            json!(["avocado", ["description", "en"], [[[4, 7], "avocado"]]]),
            json!([
                "chili",
                ["description", "en"],
                [
                    [[72, 8], "Capsicum"],
                    [[82, 29], "cultivated for their pungency"]
                ]
            ]),
            json!([
                "tomato",
                ["description", "en"],
                [[[4, 6], "tomato"], [[38, 6], "tomato"]]
            ]),
        ]
    );
    // maxOffsets caps; a path the condition does not name, or an analyzer without the
    // offset feature (text_en), gives nothing.
    let capped = f
        .run("FOR doc IN food_view SEARCH ANALYZER(doc.description.en == 'tomato', 'text_en_offset')
              RETURN OFFSET_INFO(doc, [{name: 'description.en', options: {maxOffsets: 1}}, 'name'])")
        .unwrap();
    assert_eq!(
        capped,
        vec![json!([{"name": ["description", "en"], "offsets": [[4, 6]]}])]
    );
    let plain = f
        .run(
            "FOR doc IN food_view SEARCH ANALYZER(doc.description.en == 'tomato', 'text_en')
              RETURN OFFSET_INFO(doc, 'description.en')",
        )
        .unwrap();
    assert_eq!(plain, vec![json!([])]);
    let err = f
        .run("FOR d IN food RETURN OFFSET_INFO(d, 'x')")
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::BadParameter);
    let err = f
        .run("FOR d IN food_view RETURN OFFSET_INFO(d, 1)")
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::BadParameter);
}

/// MINHASH_MATCH with a `minhash` analyzer: the documents whose signature shares at least
/// ceil(threshold · n) of the target's n signature tokens, as the FILTER over TOKENS() counts
/// them (the brute-force reference), for several targets and thresholds.
#[test]
fn minhash_match_agrees_with_the_signatures() {
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
    let corpus = [
        "the quick brown fox jumps over the lazy dog",
        "the fox jumps over the crazy dog",
        "a quick brown dog jumps over the lazy fox",
        "lorem ipsum dolor sit amet",
        "the quick brown fox",
        "quick brown fox jumps over lazy dogs and cats",
    ];
    for (i, text) in corpus.iter().enumerate() {
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
    let f = Fixture {
        service: QueryService::new(Arc::new(CoreSource::new(Arc::clone(&core)))),
        _core: core,
        _dir: dir,
    };
    let mut matched = 0;
    for target in [
        "the quick brown fox jumps over the lazy dog",
        "lorem ipsum",
        "quick fox",
    ] {
        for threshold in [0.1, 0.3, 0.5, 0.8, 1.0] {
            let got = f.keys(&format!(
                "FOR d IN mhview SEARCH MINHASH_MATCH(d.text, '{target}', {threshold}, 'mh')
                 OPTIONS {{waitForSync: true}} RETURN d._key"
            ));
            let want = f.keys(&format!(
                "LET t = TOKENS('{target}', 'mh') FOR d IN texts
                 FILTER LENGTH(INTERSECTION(TOKENS(d.text, 'mh'), t)) >= MAX([1, CEIL({threshold} * LENGTH(t))])
                 RETURN d._key"
            ));
            assert_eq!(got, want, "{target} {threshold}");
            matched += got.len();
        }
    }
    assert!(matched > 10, "{matched}");
    // The whole text matches itself at threshold 1 (the default).
    assert_eq!(
        f.keys("FOR d IN mhview SEARCH MINHASH_MATCH(d.text, 'lorem ipsum dolor sit amet', 'mh') OPTIONS {waitForSync: true} RETURN d._key"),
        vec!["t3".to_string()]
    );
    let err = f
        .run("FOR d IN mhview SEARCH MINHASH_MATCH(d.text, 'x', 1.5, 'mh') RETURN d")
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::BadParameter);
}
