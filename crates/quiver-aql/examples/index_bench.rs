//! Persistent-index benchmark, in process (query service over quiver-core, no HTTP): the same
//! FILTER/SORT queries over one collection with the index used and with `-use-indexes`
//! (forcing a full scan), run alternately so both sides see the same machine load; plus the
//! cost of building the index and of rebuilding it at start-up.
//!
//! `cargo run --release -p quiver-aql --example index_bench -- [DOCS] [REPEATS]`
//! (defaults 1000000 and 5).

use std::sync::Arc;
use std::time::{Duration, Instant};

use quiver_aql::{CursorRequest, QueryService};
use quiver_core::{CollectionSpec, Core, CoreOptions, InsertOptions};
use serde_json::{json, Value};

fn run(service: &QueryService, query: &str, rules: &[&str]) -> (usize, Duration) {
    let start = Instant::now();
    let reply = service
        .create_cursor(
            "_system",
            CursorRequest {
                rules: rules.iter().map(|r| r.to_string()).collect(),
                ..CursorRequest::new(query)
            },
        )
        .expect("query runs");
    let n = reply.rows.len();
    (n, start.elapsed())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let docs: usize = args
        .get(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let repeats: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let dir = tempfile::tempdir().expect("tempdir");
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).expect("open"));
    let db = core.database("_system").expect("system database");
    let coll = db
        .create_collection(CollectionSpec::new("docs"))
        .expect("collection");
    let t = Instant::now();
    let mut batch: Vec<Value> = Vec::with_capacity(10_000);
    for i in 0..docs {
        // `v` is distinct, `g` has 1,000 groups; keys are unrelated to either.
        batch.push(json!({"_key": format!("k{}", (i * 7919) % docs), "v": i, "g": i % 1000, "s": format!("name{i}")}));
        if batch.len() == 10_000 || i + 1 == docs {
            coll.insert_many(std::mem::take(&mut batch), &InsertOptions::new())
                .expect("insert")
                .wait()
                .expect("durable");
        }
    }
    println!(
        "loaded {docs} documents in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    coll.create_index(&json!({"type": "persistent", "fields": ["v"], "name": "by_v"}))
        .expect("index v");
    println!(
        "index on v (distinct) built in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    coll.create_index(&json!({"type": "persistent", "fields": ["g"], "name": "by_g"}))
        .expect("index g");
    println!(
        "index on g (1,000 values) built in {:.2} s",
        t.elapsed().as_secs_f64()
    );

    let service = QueryService::over_core(core.clone());
    let mid = docs / 2;
    let queries = [
        format!("FOR d IN docs FILTER d.v == {mid} RETURN d"),
        format!(
            "FOR d IN docs FILTER d.v >= {mid} && d.v < {} RETURN d",
            mid + 100
        ),
        "FOR d IN docs FILTER d.g == 7 RETURN d._key".to_string(),
        "FOR d IN docs SORT d.v DESC LIMIT 10 RETURN d.v".to_string(),
    ];
    println!("\n| query | with index (median) | full scan (median) | speed-up |");
    println!("|---|---|---|---|");
    for q in &queries {
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for _ in 0..repeats {
            let (a, ta) = run(&service, q, &[]);
            let (b, tb) = run(&service, q, &["-use-indexes", "-use-index-for-sort"]);
            assert_eq!(a, b, "same answer with and without the index: {q}");
            with.push(ta);
            without.push(tb);
        }
        let (w, wo) = (median(with), median(without));
        println!(
            "| `{q}` | {:.3} ms | {:.1} ms | {:.0}x |",
            w.as_secs_f64() * 1e3,
            wo.as_secs_f64() * 1e3,
            wo.as_secs_f64() / w.as_secs_f64()
        );
    }
    drop(service);
    drop(coll);
    drop(db);
    core.shutdown().expect("shutdown");
    drop(core);
    let t = Instant::now();
    let core = Core::open(dir.path(), CoreOptions::default()).expect("reopen");
    let opened = t.elapsed();
    let coll = core
        .database("_system")
        .and_then(|db| db.collection("docs"))
        .expect("collection");
    assert!(coll.wait_for_indexes(Duration::from_secs(600)));
    println!(
        "\nrestart: open {:.2} s; both indexes rebuilt in the background {:.2} s after start",
        opened.as_secs_f64(),
        t.elapsed().as_secs_f64()
    );
}
