//! A query's memory budget (`memoryLimit`) covers constants computed at plan time and the
//! results a non-streaming cursor accumulates: exceeding it fails the query with 32, early,
//! instead of growing the process.

mod support;

use std::sync::Arc;

use quiver_aql::source::memory::MemorySource;
use quiver_aql::QueryService;
use serde_json::json;

fn service() -> QueryService {
    QueryService::new(Arc::new(MemorySource::new()))
}

#[test]
fn constants_folded_at_plan_time_are_charged() {
    let s = service();
    let query = "LET a = RANGE(1, 1e7) LET b = RANGE(1, 1e7) LET c = RANGE(1, 1e7) \
                 RETURN LENGTH(a) + LENGTH(b) + LENGTH(c)";
    let err = s
        .create_cursor(
            "_system",
            support::cursor(&json!({"query": query, "memoryLimit": 1_000_000})),
        )
        .unwrap_err();
    assert_eq!(err.number(), 32, "{}", err.message);
    // Each constant fits alone; together they do not.
    let query = "LET a = RANGE(1, 20000) LET b = RANGE(1, 20000) LET c = RANGE(1, 20000) \
                 RETURN LENGTH(a) + LENGTH(b) + LENGTH(c)";
    let err = s
        .create_cursor(
            "_system",
            support::cursor(&json!({"query": query, "memoryLimit": 700_000})),
        )
        .unwrap_err();
    assert_eq!(err.number(), 32, "{}", err.message);
    // Under the limit the same query runs.
    let (_, reply) = s
        .create_cursor(
            "_system",
            support::cursor(&json!({"query": query, "memoryLimit": 10_000_000})),
        )
        .unwrap();
    assert_eq!(reply["result"], json!([60000]));
}

#[test]
fn accumulated_results_stop_at_the_limit() {
    let s = service();
    let err = s
        .create_cursor(
            "_system",
            support::cursor(&json!({
                "query": "FOR a IN 1..1e5 FOR b IN 1..1e5 RETURN [a, b]",
                "memoryLimit": 1_000_000,
            })),
        )
        .unwrap_err();
    assert_eq!(err.number(), 32, "{}", err.message);
}
