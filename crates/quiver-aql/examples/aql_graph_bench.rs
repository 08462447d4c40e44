//! In-process timing of the benchmark's graph queries (neighbors, neighbors2, shortest path,
//! a hard path) through the query service over quiver-core, no HTTP. Builds a random
//! power-law-ish graph first.
//!
//! `cargo run --release -p quiver-aql --example aql_graph_bench -- <vertices> <avg out-degree> <queries>`

use std::sync::Arc;
use std::time::Instant;

use quiver_aql::{CursorRequest, QueryService};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let n = args.first().copied().unwrap_or(20_000);
    let degree = args.get(1).copied().unwrap_or(19);
    let queries = args.get(2).copied().unwrap_or(200);
    let dir = tempfile::tempdir().expect("tempdir");
    let core = Arc::new(
        quiver_core::Core::open(dir.path(), quiver_core::CoreOptions::default()).expect("core"),
    );
    let db = core.database("_system").expect("db");
    let spec = |name: &str, t: u8| {
        quiver_core::CollectionSpec::from_json(&json!({"name": name, "type": t})).expect("spec")
    };
    let profiles = db.create_collection(spec("profiles", 2)).expect("profiles");
    let relations = db
        .create_collection(spec("relations", 3))
        .expect("relations");
    let mut rng = StdRng::seed_from_u64(42);
    let started = Instant::now();
    let options = quiver_core::InsertOptions::new();
    for i in 0..n {
        let _ = profiles
            .insert(
                json!({"_key": format!("P{i}"), "age": i % 90, "name": format!("person {i}")}),
                &options,
            )
            .expect("insert");
    }
    // Targets are skewed towards low ids (power-law in-degree); the last vertex gets no
    // incoming edges (the hard path's target).
    let mut edges = 0usize;
    for i in 0..n {
        let d = rng.gen_range(0..=2 * degree);
        for _ in 0..d {
            let x: f64 = rng.gen();
            let to = ((x * x * (n - 1) as f64) as usize).min(n - 2);
            let _ = relations
                .insert(
                    json!({"_from": format!("profiles/P{i}"), "_to": format!("profiles/P{to}")}),
                    &options,
                )
                .expect("insert");
            edges += 1;
        }
    }
    eprintln!(
        "loaded {n} vertices, {edges} edges in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let service = QueryService::over_core(core.clone());
    let run = |q: &str, bind: serde_json::Value| -> (f64, usize) {
        let t = Instant::now();
        let r = service
            .create_cursor(
                "_system",
                CursorRequest {
                    bind_vars: bind.as_object().cloned().unwrap_or_default(),
                    batch_size: 1_000_000,
                    ..CursorRequest::new(q)
                },
            )
            .expect("query");
        (t.elapsed().as_secs_f64() * 1e3, r.rows.len())
    };
    // Warm the edge index.
    run(
        "FOR v IN OUTBOUND 'profiles/P0' relations RETURN v._id",
        json!({}),
    );
    let table: &[(&str, &str)] = &[
        ("neighbors", "FOR v IN OUTBOUND @key relations OPTIONS {bfs: true, uniqueVertices: 'global'} RETURN v._id"),
        ("neighbors (full documents)", "FOR v IN OUTBOUND @key relations OPTIONS {bfs: true, uniqueVertices: 'global'} RETURN v"),
        ("neighbors2", "FOR v IN 1..2 OUTBOUND @key relations OPTIONS {bfs: true, uniqueVertices: 'global'} RETURN v._id"),
        ("neighbors2data", "FOR v IN 1..2 OUTBOUND @key relations OPTIONS {bfs: true, uniqueVertices: 'global'} RETURN v"),
        ("shortest", "FOR v IN OUTBOUND SHORTEST_PATH @key TO @to relations RETURN v._id"),
        ("shortest (documents)", "FOR v IN OUTBOUND SHORTEST_PATH @key TO @to relations RETURN v"),
    ];
    println!("| query | queries | median ms | mean ms | mean rows |");
    println!("|---|---|---|---|---|");
    for (name, q) in table {
        let mut rng = StdRng::seed_from_u64(7);
        let count = if name.starts_with("neighbors2") {
            queries / 4
        } else {
            queries
        };
        let mut times = Vec::new();
        let mut rows = 0;
        for _ in 0..count.max(1) {
            let from = rng.gen_range(0..n);
            let to = rng.gen_range(0..n - 1);
            let bind = if q.contains("@to") {
                json!({"key": format!("profiles/P{from}"), "to": format!("profiles/P{to}")})
            } else {
                json!({"key": format!("profiles/P{from}")})
            };
            let (ms, r) = run(q, bind);
            times.push(ms);
            rows += r;
        }
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        println!(
            "| {name} | {} | {:.3} | {:.3} | {:.1} |",
            times.len(),
            median(times),
            mean,
            rows as f64 / count.max(1) as f64
        );
    }
    let (ms, rows) = run(
        "FOR v IN OUTBOUND SHORTEST_PATH @from TO @to relations RETURN v._id",
        json!({"from": "profiles/P1", "to": format!("profiles/P{}", n - 1)}),
    );
    println!("| hard path (target without incoming edges) | 1 | {ms:.3} | {ms:.3} | {rows} |");
}
