//! Queries that parse are planned and run (bounded by maxRuntime and memoryLimit) over a
//! small in-memory collection; any outcome but a panic is fine.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use quiver_aql::source::memory::MemorySource;
use quiver_aql::{CursorRequest, QueryService};
use serde_json::json;

fn service() -> &'static QueryService {
    static SERVICE: OnceLock<QueryService> = OnceLock::new();
    SERVICE.get_or_init(|| {
        let source = Arc::new(MemorySource::new());
        let docs = vec![json!({"_key": "a", "x": 1}), json!({"_key": "b", "x": [1, "2", null]})];
        source.create_collection("_system", "c", false, docs).expect("seed collection");
        QueryService::new(source)
    })
}

fuzz_target!(|data: &[u8]| {
    if let Ok(query) = std::str::from_utf8(data) {
        if quiver_aql::parser::parse(query).is_ok() {
            let request = CursorRequest {
                memory_limit: 1_000_000,
                max_runtime: 0.2,
                ..CursorRequest::new(query)
            };
            let _ = service().create_cursor("_system", request);
        }
    }
});
