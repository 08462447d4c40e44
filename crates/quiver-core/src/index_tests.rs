//! Persistent index maintenance over a real engine: lookups against brute-force scans under
//! inserts, updates, replaces, removes, transactions (committed, aborted, read-your-own-writes),
//! truncate, restarts and concurrent builds.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::*;

fn options() -> CoreOptions {
    let mut options = CoreOptions::default();
    options.engine.sync_interval = Duration::from_millis(10);
    options.engine.journal_size_default = 1024 * 1024;
    options
}

fn setup() -> (tempfile::TempDir, Core, Arc<Database>) {
    let dir = tempfile::tempdir().unwrap();
    let core = Core::open(dir.path(), options()).unwrap();
    let db = core.database(SYSTEM_DATABASE).unwrap();
    (dir, core, db)
}

fn create(db: &Database, name: &str) -> Arc<Collection> {
    db.create_collection(CollectionSpec::from_json(&json!({ "name": name })).unwrap())
        .unwrap()
}

fn insert(coll: &Arc<Collection>, doc: Value) {
    coll.insert(doc, &InsertOptions::new())
        .unwrap()
        .wait()
        .unwrap();
}

fn index_id(coll: &Collection, body: Value) -> u64 {
    let (desc, _) = coll.create_index(&body).unwrap();
    desc["id"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn keys(iter: DocumentIter) -> Vec<String> {
    iter.map(|d| d.unwrap()["_key"].as_str().unwrap().to_string())
        .collect()
}

fn range(lower: Option<(Value, bool)>, upper: Option<(Value, bool)>) -> IndexRange {
    IndexRange {
        eq: Vec::new(),
        lower,
        upper,
    }
}

#[test]
fn lookups_ranges_order_and_estimates() {
    let (_dir, _core, db) = setup();
    let coll = create(&db, "people");
    for (k, age, city) in [
        ("a", json!(30), "x"),
        ("b", json!(20), "y"),
        ("c", json!(30), "y"),
        ("d", json!(null), "x"),
        ("e", json!(40), "x"),
        ("g", json!(30.0), "x"),
    ] {
        insert(&coll, json!({"_key": k, "age": age, "city": city}));
    }
    insert(&coll, json!({"_key": "f", "city": "z"}));
    let id = index_id(
        &coll,
        json!({"type": "skiplist", "fields": ["age", "city"]}),
    );
    let view = db.read_view();
    let eq = view
        .index_lookup(&coll, id, vec![IndexRange::equal(vec![json!(30)])], false)
        .unwrap();
    assert_eq!(keys(eq), ["a", "g", "c"]);
    let full = view
        .index_lookup(&coll, id, vec![IndexRange::all()], false)
        .unwrap();
    // Missing and null both index as null, before every number.
    assert_eq!(keys(full), ["d", "f", "b", "a", "g", "c", "e"]);
    let desc = view
        .index_lookup(
            &coll,
            id,
            vec![range(Some((json!(20), false)), Some((json!(40), false)))],
            true,
        )
        .unwrap();
    assert_eq!(keys(desc), ["c", "g", "a"]);
    let two = view
        .index_lookup(
            &coll,
            id,
            vec![IndexRange {
                eq: vec![json!(30)],
                lower: Some((json!("y"), true)),
                upper: None,
            }],
            false,
        )
        .unwrap();
    assert_eq!(keys(two), ["c"]);
    let listed = coll.index(&id.to_string()).unwrap();
    assert_eq!(listed["type"], "skiplist");
    // Seven documents, six distinct (age, city) pairs (30 and 30.0 are equal).
    let estimate = listed["selectivityEstimate"].as_f64().unwrap();
    assert!((estimate - 6.0 / 7.0).abs() < 1e-3, "{estimate}");
    let info = coll.query_indexes();
    assert!(info[0].ready && info[0].entries == 7);
    assert_eq!(
        view.index_lookup(&coll, 99, vec![IndexRange::all()], false)
            .unwrap_err()
            .code,
        quiver_errors::ErrorCode::IndexNotFound
    );
}

#[test]
fn readers_keep_their_snapshot_and_garbage_goes_away() {
    let (_dir, _core, db) = setup();
    let coll = create(&db, "c");
    let id = index_id(&coll, json!({"type": "persistent", "fields": ["v"]}));
    insert(&coll, json!({"_key": "k", "v": 1}));
    let old = db.read_view();
    coll.update("k", json!({"v": 2}), &ModifyOptions::new())
        .unwrap()
        .wait()
        .unwrap();
    let new = db.read_view();
    let at = |view: &ReadView, v: i64| {
        keys(
            view.index_lookup(&coll, id, vec![IndexRange::equal(vec![json!(v)])], false)
                .unwrap(),
        )
    };
    assert_eq!(at(&old, 1), ["k"]);
    assert!(at(&old, 2).is_empty());
    assert_eq!(at(&new, 2), ["k"]);
    assert!(at(&new, 1).is_empty());
    drop(old);
    drop(new);
    // The next commit collects what no snapshot can see any more.
    coll.remove("k", &RemoveOptions::new())
        .unwrap()
        .wait()
        .unwrap();
    insert(&coll, json!({"_key": "z", "v": 3}));
    assert_eq!(coll.query_indexes()[0].entries, 1);
    assert!(at(&db.read_view(), 2).is_empty());
}

#[test]
fn transactions_read_their_own_writes_and_abort_cleanly() {
    let (_dir, _core, db) = setup();
    let coll = create(&db, "t");
    let id = index_id(&coll, json!({"type": "persistent", "fields": ["tags[*]"]}));
    insert(&coll, json!({"_key": "a", "tags": ["red", "blue"]}));
    insert(&coll, json!({"_key": "b", "tags": ["red"]}));
    let lookup = |r: &dyn DocumentReader, v: &str| {
        keys(
            r.index_lookup(&coll, id, vec![IndexRange::equal(vec![json!(v)])], false)
                .unwrap(),
        )
    };
    let mut trx = db
        .begin_transaction(TransactionOptions::writing(&["t"]))
        .unwrap();
    trx.insert(
        &coll,
        json!({"_key": "c", "tags": ["red", "red"]}),
        &InsertOptions::new(),
    )
    .unwrap();
    trx.update(
        &coll,
        Some("a"),
        json!({"tags": ["green"]}),
        &ModifyOptions::new(),
    )
    .unwrap();
    assert_eq!(lookup(&trx, "red"), ["b", "c"]);
    assert_eq!(lookup(&trx, "green"), ["a"]);
    // Two ranges: each document once, ranges in the order given.
    let both = keys(
        trx.index_lookup(
            &coll,
            id,
            vec![
                IndexRange::equal(vec![json!("red")]),
                IndexRange::equal(vec![json!("green")]),
            ],
            false,
        )
        .unwrap(),
    );
    assert_eq!(both, ["b", "c", "a"]);
    assert_eq!(lookup(&db.read_view(), "red"), ["a", "b"]);
    trx.abort();
    assert_eq!(lookup(&db.read_view(), "red"), ["a", "b"]);
    assert!(lookup(&db.read_view(), "green").is_empty());
    let mut trx = db
        .begin_transaction(TransactionOptions::writing(&["t"]))
        .unwrap();
    trx.remove(&coll, &json!("b"), &RemoveOptions::new())
        .unwrap();
    trx.commit().unwrap().wait().unwrap();
    assert_eq!(lookup(&db.read_view(), "red"), ["a"]);
}

#[test]
fn truncate_restart_and_sparse() {
    let (dir, core, db) = setup();
    let coll = create(&db, "s");
    let id = index_id(
        &coll,
        json!({"type": "persistent", "fields": ["v"], "sparse": true, "name": "sv"}),
    );
    insert(&coll, json!({"_key": "a", "v": 1}));
    insert(&coll, json!({"_key": "b"}));
    insert(&coll, json!({"_key": "c", "v": null}));
    let all = |r: &dyn DocumentReader| {
        keys(
            r.index_lookup(&coll, id, vec![IndexRange::all()], false)
                .unwrap(),
        )
    };
    assert_eq!(all(&db.read_view()), ["a"]);
    let before = db.read_view();
    coll.truncate(false).unwrap().wait().unwrap();
    assert_eq!(all(&before), ["a"]);
    assert!(all(&db.read_view()).is_empty());
    drop(before);
    insert(&coll, json!({"_key": "d", "v": 5}));
    insert(&coll, json!({"_key": "e", "v": 4}));
    drop(coll);
    drop(db);
    core.shutdown().unwrap();
    drop(core);
    let core = Core::open(dir.path(), options()).unwrap();
    let db = core.database(SYSTEM_DATABASE).unwrap();
    let coll = db.collection("s").unwrap();
    assert!(coll.wait_for_indexes(Duration::from_secs(30)));
    let view = db.read_view();
    let found = keys(
        view.index_lookup(&coll, id, vec![IndexRange::all()], false)
            .unwrap(),
    );
    assert_eq!(found, ["e", "d"]);
    assert_eq!(coll.index("sv").unwrap()["sparse"], true);
}

#[test]
fn building_alongside_writers_misses_nothing() {
    let (_dir, _core, db) = setup();
    let coll = create(&db, "big");
    let docs: Vec<Value> = (0..3000).map(|i| json!({"v": i % 97, "i": i})).collect();
    coll.insert_many(docs, &InsertOptions::new())
        .unwrap()
        .wait()
        .unwrap();
    let writer = {
        let coll = Arc::clone(&coll);
        std::thread::spawn(move || {
            for i in 0..300 {
                insert(&coll, json!({"v": i % 97, "late": true}));
            }
        })
    };
    let id = index_id(&coll, json!({"type": "persistent", "fields": ["v"]}));
    writer.join().unwrap();
    let view = db.read_view();
    for v in [0, 5, 96] {
        let mut by_index = keys(
            view.index_lookup(&coll, id, vec![IndexRange::equal(vec![json!(v)])], false)
                .unwrap(),
        );
        let mut by_scan: Vec<String> = view
            .scan(&coll)
            .unwrap()
            .map(|d| d.unwrap())
            .filter(|d| d["v"] == json!(v))
            .map(|d| d["_key"].as_str().unwrap().to_string())
            .collect();
        by_index.sort();
        by_scan.sort();
        assert_eq!(by_index, by_scan, "v = {v}");
    }
}

mod model {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Debug)]
    enum Op {
        Insert(u8, i64),
        Update(u8, i64),
        Replace(u8, Option<i64>),
        Remove(u8),
        Trx(Vec<(u8, Option<i64>)>, bool),
        Truncate,
        Check(i64, i64, bool),
    }

    fn op() -> impl Strategy<Value = Op> {
        let key = 0u8..12;
        let val = -4i64..4;
        prop_oneof![
            4 => (key.clone(), val.clone()).prop_map(|(k, v)| Op::Insert(k, v)),
            3 => (key.clone(), val.clone()).prop_map(|(k, v)| Op::Update(k, v)),
            2 => (key.clone(), proptest::option::of(val.clone())).prop_map(|(k, v)| Op::Replace(k, v)),
            2 => key.clone().prop_map(Op::Remove),
            2 => (proptest::collection::vec((key, proptest::option::of(val.clone())), 1..4), any::<bool>())
                .prop_map(|(w, c)| Op::Trx(w, c)),
            1 => Just(Op::Truncate),
            3 => (val.clone(), val, any::<bool>()).prop_map(|(a, b, r)| Op::Check(a, b, r)),
        ]
    }

    /// The index's answer for `lo <= v <= hi` equals a filtered, sorted scan.
    fn check(db: &Arc<Database>, coll: &Arc<Collection>, id: u64, lo: i64, hi: i64, rev: bool) {
        let view = db.read_view();
        let r = range(Some((json!(lo), true)), Some((json!(hi), true)));
        let got: Vec<(i64, String)> = view
            .index_lookup(coll, id, vec![r], rev)
            .unwrap()
            .map(|d| {
                let d = d.unwrap();
                (
                    d["v"].as_i64().unwrap(),
                    d["_key"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let mut want: Vec<(i64, String)> = view
            .scan(coll)
            .unwrap()
            .map(|d| d.unwrap())
            .filter_map(|d| {
                let v = d["v"].as_i64()?;
                (lo..=hi)
                    .contains(&v)
                    .then(|| (v, d["_key"].as_str().unwrap().to_string()))
            })
            .collect();
        want.sort();
        if rev {
            want.reverse();
        }
        assert_eq!(got, want);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
        #[test]
        fn index_matches_a_scan(ops in proptest::collection::vec(op(), 1..40)) {
            let (_dir, _core, db) = setup();
            let coll = create(&db, "m");
            let id = index_id(&coll, json!({"type": "persistent", "fields": ["v"]}));
            let doc = |k: u8, v: Option<i64>| match v {
                Some(v) => json!({"_key": format!("k{k}"), "v": v}),
                None => json!({"_key": format!("k{k}")}),
            };
            for op in ops {
                match op {
                    Op::Insert(k, v) => {
                        let _ = coll.insert(doc(k, Some(v)), &InsertOptions::new());
                    }
                    Op::Update(k, v) => {
                        let _ = coll.update(&format!("k{k}"), json!({"v": v}), &ModifyOptions::new());
                    }
                    Op::Replace(k, v) => {
                        let _ = coll.replace(&format!("k{k}"), doc(k, v), &ModifyOptions::new());
                    }
                    Op::Remove(k) => {
                        let _ = coll.remove(&format!("k{k}"), &RemoveOptions::new());
                    }
                    Op::Trx(writes, commit) => {
                        let mut trx = db.begin_transaction(TransactionOptions::writing(&["m"])).unwrap();
                        for (k, v) in writes {
                            let mut opts = InsertOptions::new();
                            opts.overwrite_mode = OverwriteMode::Replace;
                            match v {
                                Some(_) => { let _ = trx.insert(&coll, doc(k, v), &opts); }
                                None => { let _ = trx.remove(&coll, &json!(format!("k{k}")), &RemoveOptions::new()); }
                            }
                        }
                        // Inside the transaction the index reads its own writes.
                        let got = keys(trx.index_lookup(&coll, id, vec![IndexRange::all()], false).unwrap()).len();
                        let want = trx.scan(&coll).unwrap().count();
                        prop_assert_eq!(got, want);
                        if commit { let _ = trx.commit(); } else { trx.abort(); }
                    }
                    Op::Truncate => {
                        coll.truncate(false).unwrap().wait().unwrap();
                    }
                    Op::Check(a, b, rev) => check(&db, &coll, id, a.min(b), a.max(b), rev),
                }
            }
            check(&db, &coll, id, -10, 10, false);
        }
    }
}

/// Keys of the documents the fulltext lookup names that really match `query` (the lookup
/// returns candidates; the AQL function re-checks them the same way).
fn fulltext_matches(
    r: &dyn DocumentReader,
    coll: &Collection,
    id: u64,
    query: &str,
) -> Vec<String> {
    let query = crate::indexes::fulltext::Query::parse(query).unwrap();
    let mut out: Vec<String> = r
        .fulltext_lookup(coll, id, &query)
        .unwrap()
        .into_iter()
        .filter(|d| {
            let words = crate::indexes::fulltext::words(&d["text"], 3);
            !words.is_empty() && query.matches(&words)
        })
        .map(|d| d["_key"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

#[test]
fn fulltext_index_follows_snapshots_transactions_truncate_and_restart() {
    let (dir, core, db) = setup();
    let coll = create(&db, "texts");
    insert(&coll, json!({"_key": "a", "text": "Quick brown fox"}));
    let id = index_id(
        &coll,
        json!({"type": "fulltext", "fields": ["text"], "minLength": 3, "name": "ft"}),
    );
    assert!(coll.wait_for_indexes(Duration::from_secs(30)));
    insert(&coll, json!({"_key": "b", "text": "brown bread"}));
    insert(&coll, json!({"_key": "c", "text": 42}));
    let view = db.read_view();
    assert_eq!(fulltext_matches(&view, &coll, id, "brown"), ["a", "b"]);
    assert_eq!(fulltext_matches(&view, &coll, id, "prefix:bro,-fox"), ["b"]);
    // "c" has no words: an exclusion-first query does not return it.
    assert_eq!(fulltext_matches(&view, &coll, id, "-fox"), ["b"]);
    let before = db.read_view();
    coll.update(
        "a",
        json!({"text": "slow green turtle"}),
        &ModifyOptions::new(),
    )
    .unwrap()
    .wait()
    .unwrap();
    coll.remove("b", &RemoveOptions::new())
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(fulltext_matches(&before, &coll, id, "brown"), ["a", "b"]);
    let now = db.read_view();
    assert!(fulltext_matches(&now, &coll, id, "brown").is_empty());
    assert_eq!(fulltext_matches(&now, &coll, id, "turtle"), ["a"]);
    // A transaction sees its own staged writes through the index.
    let mut trx = db
        .begin_transaction(TransactionOptions::writing(&["texts"]))
        .unwrap();
    trx.insert(
        &coll,
        json!({"_key": "d", "text": "green tea"}),
        &InsertOptions::new(),
    )
    .unwrap();
    assert_eq!(fulltext_matches(&trx, &coll, id, "green"), ["a", "d"]);
    trx.abort();
    assert_eq!(fulltext_matches(&db.read_view(), &coll, id, "green"), ["a"]);
    drop((before, now, view));
    // Entries of superseded versions are collected once no snapshot needs them.
    insert(&coll, json!({"_key": "e", "text": "brown owl"}));
    assert_eq!(coll.query_indexes()[0].entries, 2);
    let old = db.read_view();
    coll.truncate(false).unwrap().wait().unwrap();
    assert_eq!(fulltext_matches(&old, &coll, id, "brown"), ["e"]);
    assert!(fulltext_matches(&db.read_view(), &coll, id, "brown").is_empty());
    drop(old);
    insert(&coll, json!({"_key": "f", "text": "Brown Sugar"}));
    drop(coll);
    drop(db);
    core.shutdown().unwrap();
    drop(core);
    let core = Core::open(dir.path(), options()).unwrap();
    let db = core.database(SYSTEM_DATABASE).unwrap();
    let coll = db.collection("texts").unwrap();
    assert!(coll.wait_for_indexes(Duration::from_secs(30)));
    assert_eq!(fulltext_matches(&db.read_view(), &coll, id, "sugar"), ["f"]);
    assert_eq!(coll.query_indexes()[0].entries, 1);
    assert_eq!(coll.index("ft").unwrap()["minLength"], 3);
}

#[test]
fn covering_lookups_build_documents_from_entries_and_stored_values() {
    let (_dir, _core, db) = setup();
    let coll = create(&db, "cov");
    for (k, age, city) in [("a", 30, "x"), ("b", 20, "y"), ("c", 30, "z")] {
        insert(
            &coll,
            json!({"_key": k, "age": age, "city": city, "big": "not needed"}),
        );
    }
    let id = index_id(
        &coll,
        json!({"type": "persistent", "fields": ["age"], "storedValues": ["city"]}),
    );
    let tags = index_id(&coll, json!({"type": "persistent", "fields": ["tags[*]"]}));
    let attrs = |names: &[&str]| -> Vec<String> { names.iter().map(|s| s.to_string()).collect() };
    let covered = |r: &dyn DocumentReader, names: &[&str]| -> Option<Vec<Value>> {
        r.index_lookup_covering(
            &coll,
            id,
            vec![IndexRange::equal(vec![json!(30)])],
            false,
            &attrs(names),
        )
        .unwrap()
        .map(|iter| iter.map(|d| d.unwrap()).collect())
    };
    let view = db.read_view();
    assert_eq!(
        covered(&view, &["_id", "_key", "age", "city"]).unwrap(),
        vec![
            json!({"_id": "cov/a", "_key": "a", "age": 30, "city": "x"}),
            json!({"_id": "cov/c", "_key": "c", "age": 30, "city": "z"}),
        ]
    );
    // Not covered: an attribute outside the index, or an expanded index.
    assert!(covered(&view, &["big"]).is_none());
    assert!(view
        .index_lookup_covering(
            &coll,
            tags,
            vec![IndexRange::all()],
            false,
            &attrs(&["_key"])
        )
        .unwrap()
        .is_none());
    // Snapshots: the old view keeps the old stored value, the new one sees the update.
    coll.update("a", json!({"city": "w"}), &ModifyOptions::new())
        .unwrap()
        .wait()
        .unwrap();
    coll.update("c", json!({"age": 31}), &ModifyOptions::new())
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(
        covered(&view, &["_key", "city"]).unwrap(),
        vec![
            json!({"_key": "a", "city": "x"}),
            json!({"_key": "c", "city": "z"})
        ]
    );
    let now = db.read_view();
    assert_eq!(
        covered(&now, &["_key", "city"]).unwrap(),
        vec![json!({"_key": "a", "city": "w"})]
    );
    // A transaction with staged writes in the collection reads documents instead.
    let mut trx = db
        .begin_transaction(TransactionOptions::writing(&["cov"]))
        .unwrap();
    assert!(covered(&trx, &["_key"]).is_some());
    trx.insert(
        &coll,
        json!({"_key": "d", "age": 30}),
        &InsertOptions::new(),
    )
    .unwrap();
    assert!(covered(&trx, &["_key"]).is_none());
    trx.abort();
}
