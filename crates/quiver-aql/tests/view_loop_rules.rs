//! The optimizer's rules for view loops answer exactly what the general path answers: each
//! query runs with the rules and with them switched off (`optimizer.rules: ["-…"]`), on random
//! texts over a small vocabulary (so that many documents tie on their scores), spread over
//! several index segments, with documents removed from the collection that the view has not
//! caught up with yet (the index still finds them; the rows must skip them).

mod support;

use support::CursorJson;

use std::sync::Arc;

use quiver_aql::source::core::CoreSource;
use quiver_aql::QueryService;
use quiver_core::{CollectionSpec, Core, CoreOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// Words `text_en` leaves as they are (so `d.text IN [...]` finds them unanalyzed).
const WORDS: [&str; 6] = ["brown", "cloud", "drum", "fjord", "lamp", "pink"];

struct Fixture {
    service: QueryService,
    _core: Arc<Core>,
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn run(&self, query: &str, binds: &Value, rules: &[&str]) -> Vec<Value> {
        let body = json!({"query": query, "bindVars": binds, "batchSize": 100000,
            "options": {"optimizer": {"rules": rules}}});
        let (_, reply) = self
            .service
            .create_cursor_json("_system", support::cursor(&body))
            .unwrap_or_else(|e| panic!("{query} {binds}: {}", e.message));
        reply["result"].as_array().cloned().unwrap_or_default()
    }

    /// The result and `documentLookups` of a query.
    fn run_with_lookups(&self, query: &str, binds: &Value, rules: &[&str]) -> (Vec<Value>, u64) {
        let body = json!({"query": query, "bindVars": binds, "batchSize": 100000,
            "options": {"optimizer": {"rules": rules}}});
        let (_, reply) = self
            .service
            .create_cursor_json("_system", support::cursor(&body))
            .unwrap_or_else(|e| panic!("{query} {binds}: {}", e.message));
        let lookups = reply["extra"]["stats"]["documentLookups"]
            .as_u64()
            .unwrap_or_else(|| panic!("no documentLookups in {}", reply["extra"]));
        (
            reply["result"].as_array().cloned().unwrap_or_default(),
            lookups,
        )
    }

    /// Checks that `query` (with a LIMIT of `count`) takes the constrained sort and gives
    /// the rows it gives without it; returns how many rows were compared.
    fn check_constrained_sort(&self, query: &str, binds: &Value, count: usize) -> usize {
        assert!(
            self.rules_fired(query, binds)
                .contains(&"arangosearch-constrained-sort".to_string()),
            "{query}"
        );
        let fast = self.run(query, binds, &[]);
        let full = self.run(query, binds, &["-arangosearch-constrained-sort"]);
        assert_eq!(fast, full, "{query} {binds}");
        assert!(fast.len() <= count);
        fast.len()
    }

    fn rules_fired(&self, query: &str, binds: &Value) -> Vec<String> {
        let plan = self
            .service
            .explain(
                "_system",
                &support::explain(&json!({"query": query, "bindVars": binds})),
            )
            .unwrap_or_else(|e| panic!("{query}: {}", e.message));
        plan.plan["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_string())
            .collect()
    }
}

/// One to three random words, an offset below 40 and a LIMIT count for a constrained sort.
fn random_limit(rng: &mut StdRng) -> (Vec<&'static str>, usize, usize) {
    let words = (0..rng.gen_range(1..=3))
        .map(|_| WORDS[rng.gen_range(0..WORDS.len())])
        .collect();
    let offset = rng.gen_range(0..40);
    let count = [0, 1, 3, 10, 50, 400][rng.gen_range(0..6)];
    (words, offset, count)
}

/// 600 documents of 1–6 random words, written in three batches each made searchable (three
/// segments at least), then every fifth document removed without the view catching up.
fn fixture(seed: u64) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let db = core.database("_system").unwrap();
    db.create_collection(CollectionSpec::new("docs")).unwrap();
    db.create_view(
        "v",
        "arangosearch",
        &json!({"commitIntervalMsec": 3_600_000, "consolidationIntervalMsec": 0,
            "links": {"docs": {"fields": {"text": {"analyzers": ["text_en"]}}}}}),
    )
    .unwrap();
    let f = Fixture {
        service: QueryService::new(Arc::new(CoreSource::new(Arc::clone(&core)))),
        _core: core,
        _dir: dir,
    };
    let mut rng = StdRng::seed_from_u64(seed);
    for batch in 0..3 {
        let docs: Vec<Value> = (0..200)
            .map(|i| {
                let n = rng.gen_range(1..=6);
                let text: Vec<&str> = (0..n)
                    .map(|_| WORDS[rng.gen_range(0..WORDS.len())])
                    .collect();
                json!({"_key": format!("k{}", batch * 200 + i), "text": text.join(" ")})
            })
            .collect();
        f.run(
            "FOR d IN @docs INSERT d INTO docs",
            &json!({"docs": docs}),
            &[],
        );
        // Commits the view: the next batch goes to another segment.
        f.run(
            "FOR d IN v SEARCH true OPTIONS {waitForSync: true} COLLECT WITH COUNT INTO n RETURN n",
            &json!({}),
            &[],
        );
    }
    let gone: Vec<String> = (0..600).step_by(5).map(|i| format!("k{i}")).collect();
    f.run(
        "FOR k IN @keys REMOVE k IN docs",
        &json!({"keys": gone}),
        &[],
    );
    f
}

#[test]
fn constrained_sort_gives_the_rows_of_the_full_sort() {
    let f = fixture(17);
    let mut rng = StdRng::seed_from_u64(4);
    let sorts = [
        "SORT BM25(d) DESC",
        "SORT BM25(d)",
        "SORT TFIDF(d) DESC",
        "SORT TFIDF(d, true) ASC, BM25(d) DESC",
        "SORT BM25(d, 1.2, 0) DESC, TFIDF(d, true) DESC",
        "LET s = BM25(d) LET c = 1 SORT s DESC",
    ];
    let mut checked = 0;
    for sort in sorts {
        for _ in 0..12 {
            let (words, offset, count) = random_limit(&mut rng);
            let query = format!(
                "FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en') {sort} \
                 LIMIT @offset, @count RETURN [d._key, BM25(d), TFIDF(d, true)]"
            );
            let binds = json!({"words": words, "offset": offset, "count": count});
            checked += f.check_constrained_sort(&query, &binds, count);
        }
    }
    assert!(checked > 500, "too few rows compared: {checked}");

    // Inside an outer loop the rows of every iteration are sorted together.
    let query = "FOR w IN @words FOR d IN v SEARCH ANALYZER(d.text == w, 'text_en') \
                 SORT BM25(d) DESC LIMIT 2, 7 RETURN [w, d._key, BM25(d)]";
    let binds = json!({"words": WORDS});
    assert_eq!(
        f.run(query, &binds, &[]),
        f.run(query, &binds, &["-arangosearch-constrained-sort"])
    );
}

#[test]
fn constrained_sort_only_where_rows_cannot_change() {
    let f = fixture(3);
    let binds = json!({"words": ["lamp"]});
    for query in [
        // A filter between the loop and the SORT may drop rows.
        "FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en') FILTER d._key != 'k1' \
         SORT BM25(d) DESC LIMIT 3 RETURN d._key",
        // A sort key that is not a score.
        "FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en') SORT BM25(d) DESC, d._key \
         LIMIT 3 RETURN d._key",
        // No LIMIT.
        "FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en') SORT BM25(d) DESC \
         RETURN d._key",
    ] {
        assert!(
            !f.rules_fired(query, &binds)
                .contains(&"arangosearch-constrained-sort".to_string()),
            "{query}"
        );
        assert_eq!(
            f.run(query, &binds, &[]),
            f.run(query, &binds, &["-arangosearch-constrained-sort"])
        );
    }
}

const NO_MATERIALIZATION: &str = "no-document-materialization-arangosearch";

#[test]
fn unread_documents_are_not_read_and_counts_stay_exact() {
    let f = fixture(11);
    let count = "FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en') \
                 COLLECT WITH COUNT INTO n RETURN n";
    let queries = [
        count,
        "RETURN LENGTH(FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en') RETURN 1)",
        "FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en') RETURN [d._key, d._id]",
        "FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en') RETURN BM25(d)",
        "FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en') SORT TFIDF(d) LIMIT 5 \
         RETURN d._key",
    ];
    let mut rng = StdRng::seed_from_u64(9);
    for _ in 0..10 {
        let words: Vec<&str> = (0..rng.gen_range(1..=2))
            .map(|_| WORDS[rng.gen_range(0..WORDS.len())])
            .collect();
        let binds = json!({"words": words});
        for query in queries {
            assert!(
                f.rules_fired(query, &binds)
                    .contains(&NO_MATERIALIZATION.to_string()),
                "{query}"
            );
            // The view still holds the removed documents: every hit is checked.
            assert_eq!(
                f.run(query, &binds, &[]),
                f.run(query, &binds, &[&format!("-{NO_MATERIALIZATION}")]),
                "{query} {binds}"
            );
        }
        let (lagging, lookups) = f.run_with_lookups(count, &binds, &[]);
        assert!(
            lookups > 0,
            "a view behind its collection is checked per hit"
        );
        let full = f.run(count, &binds, &["-all"]);
        assert_eq!(lagging, full);
    }
    // Once the view caught up, the index counts alone, and counts the same.
    let synced = "FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en') \
                  OPTIONS {waitForSync: true} COLLECT WITH COUNT INTO n RETURN n";
    for words in [vec!["lamp"], vec!["brown", "drum"], WORDS.to_vec()] {
        let binds = json!({"words": words});
        let (n, lookups) = f.run_with_lookups(synced, &binds, &[]);
        assert_eq!(lookups, 0, "{words:?}");
        assert_eq!(
            n,
            f.run(synced, &binds, &[&format!("-{NO_MATERIALIZATION}")])
        );
        assert!(n[0].as_u64().unwrap() > 0);
    }
    // A later write is counted once the view has it.
    let words = json!({"words": ["lamp"]});
    let before = f.run(count, &words, &[])[0].as_u64().unwrap();
    f.run(
        "INSERT {_key: 'late', text: 'lamp'} INTO docs",
        &json!({}),
        &[],
    );
    let after = f.run(synced, &words, &[])[0].as_u64().unwrap();
    assert_eq!(after, before + 1);
    // Inside a transaction that writes, its own writes are not in the view.
    let writing = f.run(
        "FOR d IN v SEARCH ANALYZER(d.text == 'lamp', 'text_en') COLLECT WITH COUNT INTO n \
         INSERT {_key: 'counted', n} INTO docs RETURN n",
        &json!({}),
        &[],
    );
    assert_eq!(writing, vec![json!(after)]);
}

#[test]
fn documents_are_read_when_anything_else_of_them_is() {
    let f = fixture(5);
    let binds = json!({"words": ["pink"]});
    for query in [
        "FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en') RETURN d",
        "FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en') RETURN d.text",
        "FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en') \
         RETURN OFFSET_INFO(d, ['text'])",
    ] {
        assert!(
            !f.rules_fired(query, &binds)
                .contains(&NO_MATERIALIZATION.to_string()),
            "{query}"
        );
    }
}

/// Two collections with an inverted index on `text` each, and `a` with a second inverted index
/// on `tag`; `alias` is a search-alias view of the two `text` indexes, `both` of all three (so
/// a document of `a` can be found through two of its indexes). 600 documents of 1–6 random
/// words spread over both collections in three batches, each made searchable; then every
/// fifth document removed without the indexes catching up.
fn alias_fixture(seed: u64) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let db = core.database("_system").unwrap();
    for name in ["a", "b"] {
        let c = db.create_collection(CollectionSpec::new(name)).unwrap();
        c.create_index(&json!({"type": "inverted", "name": "words",
            "fields": [{"name": "text", "analyzer": "text_en"}]}))
            .unwrap();
    }
    db.collection("a")
        .unwrap()
        .create_index(&json!({"type": "inverted", "name": "tags", "fields": ["tag"]}))
        .unwrap();
    db.create_view(
        "alias",
        "search-alias",
        &json!({"indexes": [{"collection": "a", "index": "words"},
                            {"collection": "b", "index": "words"}]}),
    )
    .unwrap();
    db.create_view(
        "both",
        "search-alias",
        &json!({"indexes": [{"collection": "a", "index": "words"},
                            {"collection": "a", "index": "tags"},
                            {"collection": "b", "index": "words"}]}),
    )
    .unwrap();
    let f = Fixture {
        service: QueryService::new(Arc::new(CoreSource::new(Arc::clone(&core)))),
        _core: core,
        _dir: dir,
    };
    let mut rng = StdRng::seed_from_u64(seed);
    let mut gone = Vec::new();
    for batch in 0..3 {
        for collection in ["a", "b"] {
            let docs: Vec<Value> = (0..100)
                .map(|i| {
                    let n = rng.gen_range(1..=6);
                    let text: Vec<&str> = (0..n)
                        .map(|_| WORDS[rng.gen_range(0..WORDS.len())])
                        .collect();
                    let key = format!("{collection}{}", batch * 100 + i);
                    if i % 5 == 0 {
                        gone.push((collection, key.clone()));
                    }
                    json!({"_key": key, "text": text.join(" "), "tag": WORDS[i % WORDS.len()]})
                })
                .collect();
            f.run(
                &format!("FOR d IN @docs INSERT d INTO {collection}"),
                &json!({"docs": docs}),
                &[],
            );
        }
        // Commits the indexes: the next batch goes to other segments.
        f.run(
            "FOR d IN both SEARCH true OPTIONS {waitForSync: true} COLLECT WITH COUNT INTO n RETURN n",
            &json!({}),
            &[],
        );
    }
    for (collection, key) in gone {
        f.run(
            &format!("REMOVE @key IN {collection}"),
            &json!({"key": key}),
            &[],
        );
    }
    f
}

#[test]
fn constrained_sort_through_a_search_alias_view_gives_the_rows_of_the_full_sort() {
    let f = alias_fixture(23);
    let mut rng = StdRng::seed_from_u64(9);
    let sorts = [
        "SORT BM25(d) DESC",
        "SORT BM25(d)",
        "SORT TFIDF(d, true) ASC, BM25(d) DESC",
    ];
    let conditions = [
        ("alias", "ANALYZER(d.text IN @words, 'text_en')"),
        ("both", "ANALYZER(d.text IN @words, 'text_en')"),
        (
            "both",
            "ANALYZER(d.text IN @words, 'text_en') OR d.tag IN @words",
        ),
    ];
    let mut checked = 0;
    for (view, condition) in conditions {
        for sort in sorts {
            for _ in 0..6 {
                let (words, offset, count) = random_limit(&mut rng);
                let query = format!(
                    "FOR d IN {view} SEARCH {condition} {sort} \
                     LIMIT @offset, @count RETURN [d._id, BM25(d), TFIDF(d, true)]"
                );
                let binds = json!({"words": words, "offset": offset, "count": count});
                checked += f.check_constrained_sort(&query, &binds, count);
            }
        }
    }
    assert!(checked > 300, "too few rows compared: {checked}");
}

#[test]
fn a_limit_after_a_view_loop_reads_only_its_first_rows() {
    let f = fixture(23);
    let mut rng = StdRng::seed_from_u64(9);
    let search = "FOR d IN v SEARCH ANALYZER(d.text IN @words, 'text_en')";
    let mut cut = 0;
    for _ in 0..40 {
        let (words, offset, count) = random_limit(&mut rng);
        let binds = json!({"words": words});
        let limited = json!({"words": words, "offset": offset, "count": count});
        for ret in ["d._key", "d", "[d._key, LENGTH(d.text)]"] {
            let (all, all_lookups) =
                f.run_with_lookups(&format!("{search} RETURN {ret}"), &binds, &[]);
            // Hits whose documents are gone (every fifth was removed) are looked up too.
            let gone = all_lookups - all.len() as u64;
            let expected: Vec<Value> = all.iter().skip(offset).take(count).cloned().collect();
            let (rows, lookups) = f.run_with_lookups(
                &format!("{search} LET r = {ret} LIMIT @offset, @count RETURN r"),
                &limited,
                &[],
            );
            assert_eq!(rows, expected, "{ret} {limited}");
            // Only the hits up to the LIMIT's end were looked up in the collection.
            assert!(
                lookups <= (offset + count) as u64 + gone,
                "{ret} {limited}: {lookups} lookups, {gone} gone"
            );
            if (offset + count) < all.len() {
                assert!(lookups < all_lookups, "{ret} {limited}: not cut");
                cut += 1;
            }
        }
        // `head` with the LIMIT gives the rows `head` gives without it, cut to the LIMIT.
        let same_rows = |head: &str, ret: &str| {
            let all = f.run(&format!("{head} RETURN {ret}"), &binds, &[]);
            let rows = f.run(
                &format!("{head} LIMIT @offset, @count RETURN {ret}"),
                &limited,
                &[],
            );
            let expected: Vec<Value> = all.iter().skip(offset).take(count).cloned().collect();
            assert_eq!(rows, expected, "{head} {limited}");
        };
        // Inside an outer loop every iteration is cut alike, and the rows stay the same.
        same_rows(
            "FOR w IN @words FOR d IN v SEARCH ANALYZER(d.text == w, 'text_en')",
            "[w, d._key]",
        );
        // A FILTER between the loop and the LIMIT drops rows: no cut, the same rows.
        same_rows(&format!("{search} FILTER d._key >= 'k3'"), "d._key");
    }
    assert!(cut > 20, "too few queries were cut: {cut}");
    // With fullCount the LIMIT must see every row: no cut.
    let body = json!({"query": format!("{search} LIMIT 2 RETURN d._key"),
        "bindVars": {"words": ["brown"]}, "options": {"fullCount": true}});
    let (_, reply) = f
        .service
        .create_cursor_json("_system", support::cursor(&body))
        .unwrap();
    let all = f.run(
        &format!("{search} RETURN d._key"),
        &json!({"words": ["brown"]}),
        &[],
    );
    assert!(all.len() > 2);
    assert_eq!(reply["extra"]["stats"]["fullCount"], json!(all.len()));
    assert_eq!(reply["result"].as_array().unwrap().len(), 2);
}
