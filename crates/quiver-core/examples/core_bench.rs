//! Single-thread cost of the HTTP fast paths through the core: insert of a small parsed
//! document (non-sync) and get_raw by key.
//!
//! `cargo run --release -p quiver-core --example core_bench -- [N]` (default N = 100000).

use std::time::Instant;

use quiver_core::{CollectionSpec, Core, CoreOptions, InsertOptions};
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
    core.shutdown().expect("shutdown");
}
