//! One keyset page (`FILTER d._key > @after SORT d._key LIMIT 100`) over a collection of N
//! documents (default 1,000,000), timed with the primary-index plan and with the full-scan
//! plan (rules `-use-indexes`, `-use-index-for-sort`). Usage:
//! `cargo run -p quiver-aql --example keyset_page [-- N]` (docs/benchmarks/cursor.md).

use std::sync::Arc;
use std::time::Instant;

use quiver_aql::{CursorRequest, QueryService};
use serde_json::{json, Value};

fn page(service: &QueryService, rules: &[&str]) -> (f64, Vec<Value>) {
    let mut req = CursorRequest::new(
        "FOR d IN pages FILTER d._key > @after SORT d._key LIMIT 100 RETURN d".to_string(),
    );
    req.bind_vars.insert("after".into(), json!("500000"));
    req.batch_size = 1000;
    req.rules = rules.iter().map(|r| r.to_string()).collect();
    let t = Instant::now();
    let reply = service.create_cursor("_system", req).expect("page query");
    let secs = t.elapsed().as_secs_f64();
    (secs, reply.rows)
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("temporary directory");
    let core = Arc::new(
        quiver_core::Core::open(dir.path(), quiver_core::CoreOptions::default()).expect("open"),
    );
    let service = QueryService::over_core(core.clone());
    let db = core.database("_system").expect("_system");
    let spec = quiver_core::CollectionSpec::from_json(&json!({"name": "pages"})).expect("spec");
    db.create_collection(spec).expect("create");
    let t = Instant::now();
    let mut from = 0;
    while from < n {
        let to = (from + 100_000).min(n);
        let mut req = CursorRequest::new(format!(
            "FOR i IN {from}..{} INSERT {{_key: TO_STRING(i), v: i}} INTO pages",
            to - 1
        ));
        req.batch_size = 1;
        service.create_cursor("_system", req).expect("load");
        from = to;
    }
    println!("loaded {n} documents in {:.1} s", t.elapsed().as_secs_f64());
    for _ in 0..2 {
        let (indexed, a) = page(&service, &[]);
        let (scanned, b) = page(&service, &["-use-indexes", "-use-index-for-sort"]);
        assert_eq!(a, b, "both plans give the same page");
        assert_eq!(a.len(), 100);
        println!(
            "one page of 100: primary index {:.4} s, full scan + sort {:.3} s",
            indexed, scanned
        );
    }
}
