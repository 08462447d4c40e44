//! A query's memory budget (`memoryLimit`) covers constants computed at plan time and the
//! results a non-streaming cursor accumulates: exceeding it fails the query with 32, early,
//! instead of growing the process.

mod support;

use support::CursorJson;

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
        .create_cursor_json(
            "_system",
            support::cursor(&json!({"query": query, "memoryLimit": 1_000_000})),
        )
        .unwrap_err();
    assert_eq!(err.number(), 32, "{}", err.message);
    // Each constant fits alone; together they do not.
    let query = "LET a = RANGE(1, 20000) LET b = RANGE(1, 20000) LET c = RANGE(1, 20000) \
                 RETURN LENGTH(a) + LENGTH(b) + LENGTH(c)";
    let err = s
        .create_cursor_json(
            "_system",
            support::cursor(&json!({"query": query, "memoryLimit": 700_000})),
        )
        .unwrap_err();
    assert_eq!(err.number(), 32, "{}", err.message);
    // Under the limit the same query runs.
    let (_, reply) = s
        .create_cursor_json(
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
        .create_cursor_json(
            "_system",
            support::cursor(&json!({
                "query": "FOR a IN 1..1e5 FOR b IN 1..1e5 RETURN [a, b]",
                "memoryLimit": 1_000_000,
            })),
        )
        .unwrap_err();
    assert_eq!(err.number(), 32, "{}", err.message);
}

#[test]
fn the_server_default_applies_to_queries_without_their_own_limit() {
    let s = service();
    s.set_memory_limits(500_000, 0);
    let query = json!({"query": "FOR i IN 1..100000 RETURN i"});
    let err = s
        .create_cursor_json("_system", support::cursor(&query))
        .unwrap_err();
    assert_eq!(err.number(), 32, "{}", err.message);
    // A query's own memoryLimit may be higher than the server's default.
    let query = json!({"query": "FOR i IN 1..100000 RETURN i", "memoryLimit": 10_000_000});
    let (_, reply) = s
        .create_cursor_json("_system", support::cursor(&query))
        .unwrap();
    assert_eq!(reply["extra"]["stats"]["scannedFull"], 0);
}

#[test]
fn all_queries_together_stay_under_the_global_limit() {
    let s = service();
    s.set_memory_limits(0, 1_000_000);
    // A streaming cursor holds its share while it is open.
    let streaming = json!({"query": "FOR i IN 1..20000 SORT i DESC RETURN i",
                           "batchSize": 1, "options": {"stream": true}});
    let (_, first) = s
        .create_cursor_json("_system", support::cursor(&streaming))
        .unwrap();
    assert_eq!(first["hasMore"], true);
    let held = s.memory_in_use();
    assert!(held > 0, "an open streaming cursor holds no memory");
    let big = json!({"query": "FOR i IN 1..100000 RETURN i"});
    let err = s
        .create_cursor_json("_system", support::cursor(&big))
        .unwrap_err();
    assert_eq!(err.number(), 32, "{}", err.message);
    assert!(err.message.contains("global"), "{}", err.message);
    // A failed query gives its share back.
    assert_eq!(s.memory_in_use(), held);
}

#[test]
fn the_global_memory_figure_moves_while_a_query_runs() {
    let s = service();
    assert_eq!(s.figures().running_memory, 0);
    let streaming = json!({"query": "FOR i IN 1..20000 SORT i DESC RETURN i",
                           "batchSize": 1, "options": {"stream": true}});
    let (_, first) = s
        .create_cursor_json("_system", support::cursor(&streaming))
        .unwrap();
    let held = s.figures().running_memory;
    assert!(
        held > 20000,
        "a sorted stream of 20000 numbers holds {held} bytes"
    );
    assert_eq!(held, s.memory_in_use());
    let id = first["id"].as_str().unwrap().to_string();
    s.delete_cursor_json("_system", &id).unwrap();
    assert_eq!(s.figures().running_memory, 0);
}

#[test]
fn rows_a_cursor_keeps_count_against_the_global_limit_until_given_back() {
    let s = service();
    // 16 estimated bytes per number: the big query below needs 3.2 MB alone.
    s.set_memory_limits(0, 3_500_000);
    // A finished query whose cursor keeps 49,990 rows: the rows stay counted.
    let kept = json!({"query": "FOR i IN 1..50000 RETURN i", "batchSize": 10});
    let (_, first) = s
        .create_cursor_json("_system", support::cursor(&kept))
        .unwrap();
    assert_eq!(first["hasMore"], true);
    let held = s.memory_in_use();
    assert!(
        held > 49_990,
        "a cursor keeping 49,990 rows holds {held} bytes"
    );
    assert_eq!(held, s.cursor_holdings(None).1);
    // Another query that would fit alone does not fit beside the kept rows.
    let big = json!({"query": "FOR i IN 1..200000 RETURN i", "batchSize": 10});
    let alone = s.memory_in_use();
    let err = s
        .create_cursor_json("_system", support::cursor(&big))
        .unwrap_err();
    assert_eq!(err.number(), 32, "{}", err.message);
    assert!(err.message.contains("global"), "{}", err.message);
    assert_eq!(s.memory_in_use(), alone);
    // Reading a batch gives its rows back; deleting the cursor gives back the rest.
    let id = first["id"].as_str().unwrap().to_string();
    s.next_batch_json("_system", &id, None).unwrap();
    let after_batch = s.memory_in_use();
    assert!(
        after_batch < held,
        "{after_batch} after a batch, {held} before"
    );
    s.delete_cursor_json("_system", &id).unwrap();
    assert_eq!(s.memory_in_use(), 0);
    let (_, reply) = s
        .create_cursor_json("_system", support::cursor(&big))
        .unwrap();
    assert_eq!(reply["hasMore"], true);
}
