//! Single-thread cost of the HTTP fast paths through the core: insert of a small parsed
//! document (non-sync) and get_raw by key.
//!
//! `cargo run --release -p quiver-core --example core_bench -- [N]` (default N = 100000).

use std::time::Instant;

use quiver_core::{
    CollectionSpec, CollectionType, Core, CoreOptions, DocumentReader, EdgeDirection, EdgeHits,
    InsertOptions,
};
use serde_json::json;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let core = Core::open(dir.path(), CoreOptions::default()).expect("open");
    let db = core.database("_system").expect("_system");
    let coll = db
        .create_collection(CollectionSpec::new("bench"))
        .expect("create");
    let opts = InsertOptions::new();

    let start = Instant::now();
    let mut keys = Vec::with_capacity(n);
    for i in 0..n {
        let doc = json!({"value": i, "name": "some text of a typical length"});
        let done = coll
            .insert(doc, &opts)
            .expect("insert")
            .wait()
            .expect("durable");
        keys.push(done.key);
    }
    let insert = start.elapsed();

    let start = Instant::now();
    let mut bytes = 0usize;
    for key in &keys {
        let (_, raw) = coll.get_raw(key, None).expect("get");
        bytes += raw.len();
    }
    let get = start.elapsed();

    let per = |d: std::time::Duration| d.as_secs_f64() * 1e6 / n as f64;
    println!(
        "n={n} insert: {:.2} us/op ({:.0} ops/s)  get_raw: {:.2} us/op ({:.0} ops/s)  ({bytes} bytes read)",
        per(insert),
        n as f64 / insert.as_secs_f64(),
        per(get),
        n as f64 / get.as_secs_f64(),
    );
    // Edge index: n/10 vertices with 10 outbound edges each, all inserted in batches of 1000.
    let mut spec = CollectionSpec::new("links");
    spec.collection_type = CollectionType::Edge;
    let edges = db.create_collection(spec).expect("create edges");
    let vertices = (n / 10).max(1);
    let docs: Vec<_> = (0..vertices * 10)
        .map(|i| json!({"_from": format!("v/{}", i / 10), "_to": format!("v/{}", (i * 7919) % vertices)}))
        .collect();
    for chunk in docs.chunks(1000) {
        edges
            .insert_many(chunk.to_vec(), &opts)
            .expect("insert edges")
            .wait()
            .expect("durable");
    }
    let view = db.read_view();
    let mut hits = EdgeHits::new();
    let start = Instant::now();
    let mut found = 0usize;
    for v in 0..vertices {
        hits.clear();
        view.edges(
            &edges,
            &format!("v/{v}"),
            EdgeDirection::Outbound,
            &mut hits,
        )
        .expect("edges");
        found += hits.len();
    }
    let lookup = start.elapsed();
    println!(
        "edge lookups: {:.2} us per vertex (10 edges each, {found} edges found)",
        lookup.as_secs_f64() * 1e6 / vertices as f64
    );
    let stats = edges
        .edge_index_stats()
        .expect("index")
        .expect("edge collection");
    println!(
        "edge index: {} entries, {} vertices, {:.1} bytes per edge",
        stats.entries,
        stats.vertices,
        stats.memory_bytes as f64 / stats.entries.max(1) as f64
    );
    core.shutdown().expect("shutdown");
}
