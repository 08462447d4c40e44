//! In-process cursor benchmark: the seed's query table run sequentially through the query
//! service over quiver-core (no HTTP), plus a COLLECT ... WITH COUNT aggregation over many
//! documents. Measures the engine's share of a cursor round trip.
//!
//! `cargo run --release -p quiver-aql --example cursor_bench -- [ITERATION_SCALE] [AGG_DOCS]`
//! (defaults 1.0 and 1000000), optionally a substring selecting the queries to run.

use std::sync::Arc;
use std::time::Instant;

use quiver_aql::{CursorRequest, QueryService};
use quiver_core::{CollectionSpec, Core, CoreOptions, InsertOptions};
use serde_json::{json, Value};

fn run(service: &QueryService, db: &str, query: &str) -> usize {
    let mut batch = service
        .create_cursor(db, CursorRequest::new(query))
        .expect("query runs");
    let mut n = batch.rows.len();
    while batch.has_more {
        let id = batch.id.clone().expect("cursor id");
        let next = batch.next_batch_id.map(|b| b.to_string());
        batch = service
            .next_batch(db, &id, next.as_deref())
            .expect("next batch");
        n += batch.rows.len();
    }
    // Serialization is part of every real round trip.
    std::hint::black_box(
        serde_json::to_vec(&batch.rows)
            .map(|v| v.len())
            .unwrap_or(0),
    );
    n
}

fn fill(core: &Core, name: &str, count: usize) {
    let db = core.database("_system").expect("system database");
    let coll = db
        .create_collection(CollectionSpec::new(name))
        .expect("collection");
    let mut batch: Vec<Value> = Vec::with_capacity(1000);
    for i in 0..count {
        batch.push(json!({"_key": format!("k{i}"), "a": i, "b": format!("value{i}"), "c": i % 7, "d": true, "e": [i, i + 1]}));
        if batch.len() == 1000 || i + 1 == count {
            let docs = std::mem::take(&mut batch);
            for d in docs {
                let _ = coll.insert(d, &InsertOptions::new()).expect("insert");
            }
        }
    }
}

/// CPU time of the calling thread in µs (queries run on it): on the shared, overloaded
/// machine wall time mostly measures waiting for a core.
fn thread_cpu_us() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(f64::NAN, |ns| ns / 1e3)
}

/// CPU time of the whole process (all threads) in ms, from /proc (10 ms ticks).
fn process_cpu_ms() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the command name (which may contain spaces) in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => (user + system) * 10.0,
        _ => f64::NAN,
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scale: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1.0);
    let agg_docs: usize = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let only: Option<&str> = args.get(3).map(String::as_str);
    let dir = tempfile::tempdir().expect("tempdir");
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).expect("core"));
    fill(&core, "docs", 10_000);
    let service = QueryService::over_core(core.clone());
    let table: [(&str, usize); 8] = [
        ("RETURN 1", 10_000),
        (
            "RETURN { one: 'test', two: 'another-value', three: [ 1, 2, 3 ] }",
            10_000,
        ),
        ("FOR i IN 1..10 RETURN i", 10_000),
        ("FOR i IN 1..1000 RETURN i", 1_000),
        ("FOR i IN 1..10000 RETURN i", 200),
        ("FOR i IN docs LIMIT 1 RETURN i", 10_000),
        ("FOR i IN docs RETURN i", 50),
        ("FOR i IN docs RETURN i._key", 100),
    ];
    println!("| query | runs | total s | per query µs | CPU per query µs |");
    println!("|---|---|---|---|---|");
    for (query, runs) in table {
        if only.is_some_and(|o| !query.contains(o)) {
            continue;
        }
        let runs = ((runs as f64) * scale).max(1.0) as usize;
        run(&service, "_system", query);
        let start = Instant::now();
        let cpu = thread_cpu_us();
        for _ in 0..runs {
            run(&service, "_system", query);
        }
        let cpu = thread_cpu_us() - cpu;
        let total = start.elapsed().as_secs_f64();
        println!(
            "| `{query}` | {runs} | {total:.3} | {:.1} | {:.1} |",
            total * 1e6 / runs as f64,
            cpu / runs as f64
        );
    }
    if agg_docs > 0 {
        let t = Instant::now();
        fill(&core, "agg", agg_docs);
        println!(
            "\nloaded {agg_docs} documents in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        // The aggregation figure: one warmup, then the median of five runs, wall and
        // CPU of the whole process (the grouped count runs on several threads).
        let q = "FOR d IN agg COLLECT c = d.c WITH COUNT INTO n RETURN {c, n}";
        let mut groups = run(&service, "_system", q);
        let (mut walls, mut cpus) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let (start, cpu) = (Instant::now(), process_cpu_ms());
            groups = run(&service, "_system", q);
            walls.push(start.elapsed().as_secs_f64() * 1e3);
            cpus.push(process_cpu_ms() - cpu);
        }
        println!(
            "`{q}`: {groups} groups, median of 5: {:.1} ms wall, {:.0} ms CPU",
            median(&mut walls),
            median(&mut cpus)
        );
        let q = "FOR d IN agg COLLECT WITH COUNT INTO n RETURN n";
        let start = Instant::now();
        run(&service, "_system", q);
        println!("`{q}`: {:.3} s", start.elapsed().as_secs_f64());
    }
}
