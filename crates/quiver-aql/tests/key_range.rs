//! `_key` ranges and `SORT d._key` through the primary index: an `IndexNode` on the primary
//! index (rules `use-indexes`, `use-index-for-sort`) that answers exactly what the full scan
//! with filter and sort answers, on random keys, in and out of a stream transaction.

mod support;

use support::CursorJson;

use std::sync::Arc;

use parking_lot::Mutex;

use quiver_aql::QueryService;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

fn setup() -> (tempfile::TempDir, Arc<quiver_core::Core>, QueryService) {
    let dir = tempfile::tempdir().unwrap();
    let mut options = quiver_core::CoreOptions::default();
    options.engine.journal_size_default = 1024 * 1024;
    let core = Arc::new(quiver_core::Core::open(dir.path(), options).unwrap());
    let service = QueryService::over_core(core.clone());
    (dir, core, service)
}

const FULL_SCAN: &[&str] = &["-use-indexes", "-use-index-for-sort"];

fn run(service: &QueryService, aql: &str, binds: &Value, rules: &[&str]) -> Vec<Value> {
    let body = json!({"query": aql, "bindVars": binds, "batchSize": 100000,
        "options": {"optimizer": {"rules": rules}}});
    let (_, reply) = service
        .create_cursor_json("_system", support::cursor(&body))
        .unwrap_or_else(|e| panic!("{aql} {binds}: {e:?}"));
    reply["result"].as_array().cloned().unwrap()
}

fn plan(service: &QueryService, aql: &str, binds: &Value) -> Value {
    let reply = service
        .explain(
            "_system",
            &support::explain(&json!({"query": aql, "bindVars": binds})),
        )
        .unwrap();
    reply.plan.clone()
}

fn node_types(plan: &Value) -> Vec<String> {
    plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["type"].as_str().unwrap().to_string())
        .collect()
}

/// Keys from the key generators' alphabet (byte order = AQL order) or, when `mixed`, from all
/// of ArangoDB's key characters (upper case and punctuation order differently).
fn random_key(rng: &mut rand::rngs::StdRng, mixed: bool) -> String {
    const PLAIN: &[u8] = b"0123456789abcdefxyz-";
    const MIXED: &[u8] = b"0129abzABZ_-:.@()+,=;$!*'%";
    let alphabet = if mixed { MIXED } else { PLAIN };
    let len = rng.gen_range(1..=24);
    (0..len)
        .map(|_| alphabet[rng.gen_range(0..alphabet.len())] as char)
        .collect()
}

fn fill(core: &quiver_core::Core, name: &str, mixed: bool, seed: u64) -> Vec<String> {
    let db = core.database("_system").unwrap();
    let spec = quiver_core::CollectionSpec::from_json(&json!({"name": name})).unwrap();
    let coll = db.create_collection(spec).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut keys = Vec::new();
    for i in 0..400 {
        let key = random_key(&mut rng, mixed);
        let doc = json!({"_key": key, "n": i % 13});
        if coll
            .insert(doc, &quiver_core::InsertOptions::new())
            .and_then(|c| c.wait())
            .is_ok()
        {
            keys.push(key);
        }
    }
    assert!(keys.len() > 300, "most random keys are distinct");
    keys
}

const QUERIES: &[&str] = &[
    "FOR d IN @@c FILTER d._key > @a SORT d._key LIMIT @n RETURN d",
    "FOR d IN @@c FILTER d._key >= @a SORT d._key LIMIT 3, @n RETURN d._key",
    "FOR d IN @@c FILTER d._key < @a SORT d._key DESC LIMIT @n RETURN d",
    "FOR d IN @@c FILTER d._key <= @a SORT d._key DESC LIMIT 2, @n RETURN d._id",
    "FOR d IN @@c FILTER d._key == @a SORT d._key RETURN d",
    "FOR d IN @@c FILTER d._key > @a && d._key <= @b SORT d._key RETURN d._key",
    "FOR d IN @@c FILTER d._key >= @a FILTER d.n < 7 SORT d._key LIMIT @n RETURN [d._key, d.n]",
    "FOR d IN @@c FILTER @a < d._key && d.n != 3 SORT d._key DESC LIMIT @n RETURN d._key",
    "FOR d IN @@c SORT d._key LIMIT @n RETURN d._key",
    "FOR d IN @@c SORT d._key DESC LIMIT 5, @n RETURN d._key",
];

fn bind(q: &str, c: &str, a: &Value, b: &Value, n: u64) -> Value {
    let mut binds = json!({"@c": c});
    if q.contains("@a") {
        binds["a"] = a.clone();
    }
    if q.contains("@b") {
        binds["b"] = b.clone();
    }
    if q.contains("@n") {
        binds["n"] = json!(n);
    }
    binds
}

fn compare_plans(service: &QueryService, c: &str, keys: &[String], seed: u64) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let probes = ["", "é", "zzzz", "0", "Ab", "日本", "a-b", "~"];
    for round in 0..30 {
        let pick = |rng: &mut rand::rngs::StdRng| -> Value {
            match rng.gen_range(0..4) {
                0 => json!(probes[rng.gen_range(0..probes.len())]),
                1 => json!(random_key(rng, round % 2 == 0)),
                _ => json!(keys[rng.gen_range(0..keys.len())]),
            }
        };
        let (a, b) = (pick(&mut rng), pick(&mut rng));
        let n = rng.gen_range(1..60);
        for q in QUERIES {
            let binds = bind(q, c, &a, &b, n);
            let types = node_types(&plan(service, q, &binds));
            assert!(types.contains(&"IndexNode".to_string()), "{q}: {types:?}");
            // An equality is a primary lookup of at most one document; its SORT stays.
            if !q.contains("==") {
                assert!(!types.contains(&"SortNode".to_string()), "{q}: {types:?}");
            }
            let indexed = run(service, q, &binds, &[]);
            let scanned = run(service, q, &binds, FULL_SCAN);
            assert_eq!(indexed, scanned, "{q} {binds}");
        }
    }
}

#[test]
fn key_ranges_answer_as_the_full_scan_does_on_generator_like_keys() {
    let (_dir, core, service) = setup();
    let keys = fill(&core, "plain", false, 11);
    compare_plans(&service, "plain", &keys, 12);
}

#[test]
fn key_ranges_answer_as_the_full_scan_does_on_mixed_case_and_punctuation_keys() {
    let (_dir, core, service) = setup();
    let keys = fill(&core, "mixed", true, 21);
    compare_plans(&service, "mixed", &keys, 22);
}

#[test]
fn explain_shows_the_primary_index_and_no_sort() {
    let (_dir, core, service) = setup();
    fill(&core, "pages", false, 31);
    for (q, reverse) in [
        (
            "FOR d IN pages FILTER d._key > 'k' SORT d._key LIMIT 10 RETURN d",
            false,
        ),
        (
            "FOR d IN pages FILTER d._key <= 'k' SORT d._key DESC LIMIT 10 RETURN d",
            true,
        ),
    ] {
        let plan = plan(&service, q, &json!({}));
        assert_eq!(
            node_types(&plan),
            ["SingletonNode", "IndexNode", "LimitNode", "ReturnNode"],
            "{q}"
        );
        let node = &plan["nodes"][1];
        assert_eq!(node["indexes"][0]["type"], "primary");
        assert_eq!(node["indexes"][0]["fields"], json!(["_key"]));
        assert_eq!(node["reverse"], reverse);
        assert_eq!(node["sorted"], true);
        let rules = plan["rules"].as_array().unwrap();
        for rule in [
            "use-indexes",
            "use-index-for-sort",
            "remove-filter-covered-by-index",
        ] {
            assert!(rules.contains(&json!(rule)), "{q}: {rules:?}");
        }
    }
}

/// A stream transaction's own inserts and removals are part of its key ranges.
#[test]
fn a_transaction_sees_its_own_writes_in_key_ranges() {
    let (_dir, core, service) = setup();
    let keys = fill(&core, "stream", false, 41);
    let db = core.database("_system").unwrap();
    let trx = db
        .begin_transaction(quiver_core::TransactionOptions::writing(&["stream"]))
        .unwrap();
    let back: quiver_aql::source::core::LeaseReturn = Arc::new(Mutex::new(None));
    let mut trx = Some(trx);
    let mut in_trx = |aql: &str, binds: Value, rules: &[&str]| -> Vec<Value> {
        let lent = quiver_aql::source::core::leased(trx.take().unwrap(), Arc::clone(&back));
        let body = json!({"query": aql, "bindVars": binds, "batchSize": 100000,
            "options": {"optimizer": {"rules": rules}}});
        let (_, reply) = service
            .create_cursor_in_json("_system", support::cursor(&body), lent)
            .unwrap_or_else(|e| panic!("{aql}: {e:?}"));
        trx = back.lock().take();
        reply["result"].as_array().cloned().unwrap()
    };
    let removed: Vec<&String> = keys.iter().step_by(3).collect();
    in_trx(
        "FOR k IN @ks REMOVE k IN stream",
        json!({"ks": removed}),
        &[],
    );
    in_trx(
        "FOR i IN 0..49 INSERT {_key: CONCAT('m', i, '-new'), n: i} INTO stream",
        json!({}),
        &[],
    );
    let outside = run(
        &service,
        "FOR d IN stream FILTER d._key > 'm' SORT d._key LIMIT 5 RETURN d._key",
        &json!({}),
        &[],
    );
    assert!(outside
        .iter()
        .all(|k| !k.as_str().unwrap().ends_with("-new")));
    for q in QUERIES {
        for a in ["m", "m3", "", "c"] {
            let binds = bind(q, "stream", &json!(a), &json!("m4"), 20);
            let indexed = in_trx(q, binds.clone(), &[]);
            let scanned = in_trx(q, binds.clone(), FULL_SCAN);
            assert_eq!(indexed, scanned, "{q} {binds}");
        }
    }
    let seen = in_trx(
        "FOR d IN stream FILTER d._key > 'm' SORT d._key LIMIT 3 RETURN d._key",
        json!({}),
        &[],
    );
    assert_eq!(seen, [json!("m0-new"), json!("m1-new"), json!("m10-new")]);
}
