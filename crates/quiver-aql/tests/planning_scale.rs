//! Preparing a query (parse, plan, optimize) costs time linear, or nearly, in its size, and
//! `maxRuntime` and the kill flag bound it like execution.

mod support;

use support::CursorJson;

use std::sync::Arc;
use std::time::{Duration, Instant};

use quiver_aql::source::memory::MemorySource;
use quiver_aql::QueryService;
use serde_json::json;

fn service() -> QueryService {
    QueryService::new(Arc::new(MemorySource::new()))
}

/// Runs `query` and returns how long it took, failing on any error.
fn run(s: &QueryService, query: &str) -> Duration {
    let started = Instant::now();
    let (_, reply) = s
        .create_cursor_json("_system", support::cursor(&json!({"query": query})))
        .unwrap_or_else(|e| panic!("{}", e.message));
    assert_eq!(reply["error"], false);
    started.elapsed()
}

/// A chain of `n` dependent `LET`s, returning the last.
fn let_chain(n: usize) -> String {
    let mut q = String::from("LET v0 = 0 ");
    for i in 1..n {
        q.push_str(&format!("LET v{i} = v{} + 1 ", i - 1));
    }
    q.push_str(&format!("RETURN v{}", n - 1));
    q
}

/// `n` `LET`s of which only the last is used, each reading the one before: removing the
/// unused ones one pass at a time would take n passes.
fn unused_chain(n: usize) -> String {
    let mut q = String::from("FOR i IN 1..2 LET v0 = i ");
    for i in 1..n {
        q.push_str(&format!("LET v{i} = v{} + 1 ", i - 1));
    }
    q.push_str("RETURN i");
    q
}

/// `n` constant `LET`s inside a loop: each may move up above the loop.
fn constants_in_loop(n: usize) -> String {
    let mut q = String::from("FOR i IN 1..2 ");
    for i in 0..n {
        q.push_str(&format!("LET v{i} = {i} "));
    }
    q.push_str(&format!("RETURN [i, v{}]", n - 1));
    q
}

#[test]
fn many_statements_plan_in_near_linear_time() {
    let s = service();
    // 20,000 statements took 23 s to plan when each rule scanned every later node for each
    // node; the bound is loose for a debug build on a loaded machine.
    for (name, query) in [
        ("chain", let_chain(20_000)),
        ("unused chain", unused_chain(20_000)),
        ("constants in a loop", constants_in_loop(20_000)),
    ] {
        let took = run(&s, &query);
        assert!(took < Duration::from_secs(15), "{name}: {took:?}");
    }
}

#[test]
fn results_of_long_chains_are_right() {
    let s = service();
    let (_, reply) = s
        .create_cursor_json(
            "_system",
            support::cursor(&json!({"query": let_chain(500)})),
        )
        .unwrap();
    assert_eq!(reply["result"], json!([499]));
    let (_, reply) = s
        .create_cursor_json(
            "_system",
            support::cursor(&json!({"query": unused_chain(500)})),
        )
        .unwrap();
    assert_eq!(reply["result"], json!([1, 2]));
    let (_, reply) = s
        .create_cursor_json(
            "_system",
            support::cursor(&json!({"query": constants_in_loop(500)})),
        )
        .unwrap();
    assert_eq!(reply["result"], json!([[1, 499], [2, 499]]));
}

#[test]
fn max_runtime_covers_parsing_and_planning() {
    let s = service();
    let query = let_chain(20_000);
    let started = Instant::now();
    let err = s
        .create_cursor_json(
            "_system",
            support::cursor(&json!({"query": query, "options": {"maxRuntime": 0.000001}})),
        )
        .unwrap_err();
    assert_eq!(err.number(), 1500, "{}", err.message);
    assert_eq!(err.message, "query killed");
    assert!(started.elapsed() < Duration::from_secs(15));
}
