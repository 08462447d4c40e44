//! Handler tests (no socket): a traversal whose vertices the query only returns passes the
//! stored documents into the response without parsing them (`Produce::Raw`); the answers
//! must be the same as for a query that looks inside every vertex, in every batch, on a
//! retried batch and for missing vertices.

use std::sync::Arc;

use http::Method;
use quiver_core::{Core, CoreOptions};
use quiver_server::{handle, Request, ServerConfig, ServerState};
use serde_json::{json, Value};

fn server() -> (Arc<ServerState>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        // These tests exercise cursors, not authentication (tests/access.rs does).
        auth: quiver_server::auth::AuthConfig::disabled(),
        ..ServerConfig::default()
    };
    (ServerState::new(config, core).unwrap(), dir)
}

fn call(state: &ServerState, method: Method, target: &str, body: Value) -> (u16, Value) {
    let req = Request::build(method, target).with_body(serde_json::to_vec(&body).unwrap());
    let r = handle(state, req).settle_blocking();
    let status = r.status.as_u16();
    (
        status,
        r.body_json().unwrap_or_else(|| panic!("not JSON: {r:?}")),
    )
}

/// All rows of a query, following the cursor batch by batch.
fn rows(state: &ServerState, query: &str, batch_size: u64) -> (Vec<Value>, Value) {
    let (code, mut page) = call(
        state,
        Method::POST,
        "/_api/cursor",
        json!({"query": query, "batchSize": batch_size}),
    );
    assert_eq!(code, 201, "{page}");
    let mut out = Vec::new();
    for _ in 0..1000 {
        out.extend(page["result"].as_array().unwrap().iter().cloned());
        if page["hasMore"] != json!(true) {
            return (out, page["extra"].clone());
        }
        let id = page["id"].as_str().unwrap().to_string();
        let (code, next) = call(
            state,
            Method::POST,
            &format!("/_api/cursor/{id}"),
            json!({}),
        );
        assert_eq!(code, 200, "{next}");
        page = next;
    }
    panic!("cursor did not end");
}

fn setup(state: &ServerState) {
    for (name, kind) in [("v", 2), ("e", 3)] {
        let (code, body) = call(
            state,
            Method::POST,
            "/_api/collection",
            json!({"name": name, "type": kind}),
        );
        assert_eq!(code, 200, "{body}");
    }
    let docs: Vec<Value> = (0..30)
        .map(|i| {
            json!({"_key": format!("k{i}"), "n": i, "s": "ünï \"q\" \\ /", "f": 1.5,
                   "a": [i, null, true, {"x": [i]}], "o": {"deep": {"er": i}}})
        })
        .collect();
    let (code, body) = call(state, Method::POST, "/_api/document/v", json!(docs));
    assert_eq!(code, 202, "{body}");
    // A chain with fan-out, and one edge to a vertex that does not exist.
    let mut edges: Vec<Value> = (0..29)
        .map(|i| json!({"_from": format!("v/k{}", i / 2), "_to": format!("v/k{}", i + 1)}))
        .collect();
    edges.push(json!({"_from": "v/k0", "_to": "v/missing"}));
    let (code, body) = call(state, Method::POST, "/_api/document/e", json!(edges));
    assert_eq!(code, 202, "{body}");
}

#[test]
fn returned_vertices_pass_through_unchanged_in_every_batch() {
    let (state, _dir) = server();
    setup(&state);
    let raw =
        "FOR v IN 1..4 OUTBOUND 'v/k0' e OPTIONS {bfs: true, uniqueVertices: 'global'} RETURN v";
    // MERGE reads every attribute: the vertices are parsed, so this is the reference.
    let parsed = "FOR v IN 1..4 OUTBOUND 'v/k0' e OPTIONS {bfs: true, uniqueVertices: 'global'} RETURN v == null ? null : MERGE(v, {})";
    for batch_size in [1, 7, 1000] {
        let (got, extra) = rows(&state, raw, batch_size);
        let (want, _) = rows(&state, parsed, batch_size);
        assert_eq!(got, want, "batch size {batch_size}");
        assert!(got.len() >= 29, "{}", got.len());
        assert!(got.iter().any(Value::is_null), "the missing vertex is null");
        assert!(got
            .iter()
            .filter(|v| v.is_object())
            .all(|v| v["_id"].is_string()));
        let warnings = extra["warnings"].as_array().unwrap();
        assert!(
            warnings.iter().any(|w| w["code"] == json!(1202)),
            "{warnings:?}"
        );
    }
    // A vertex the query looks at is a value as before.
    let (names, _) = rows(
        &state,
        "FOR v IN 1..1 OUTBOUND 'v/k0' e FILTER v != null RETURN [v.n, v]",
        1000,
    );
    assert!(names.iter().all(|p| p[1]["n"] == p[0]));
}

#[test]
fn a_retried_batch_and_a_streaming_cursor_pass_through_the_same_documents() {
    let (state, _dir) = server();
    setup(&state);
    let q = "FOR v IN 1..4 OUTBOUND 'v/k0' e OPTIONS {bfs: true} FILTER v != null LIMIT 3 RETURN v";
    let (code, first) = call(
        &state,
        Method::POST,
        "/_api/cursor",
        json!({"query": q, "batchSize": 2, "options": {"allowRetry": true, "stream": true}}),
    );
    assert_eq!(code, 201, "{first}");
    assert_eq!(first["result"].as_array().unwrap().len(), 2);
    assert_eq!(first["result"][0]["n"], json!(1), "{first}");
    let id = first["id"].as_str().unwrap();
    let (code, second) = call(
        &state,
        Method::POST,
        &format!("/_api/cursor/{id}/2"),
        json!({}),
    );
    assert_eq!(code, 200, "{second}");
    let (code, again) = call(
        &state,
        Method::POST,
        &format!("/_api/cursor/{id}/2"),
        json!({}),
    );
    assert_eq!(code, 200, "{again}");
    assert_eq!(second["result"], again["result"]);
    assert_eq!(second["result"].as_array().unwrap().len(), 1);
    assert!(second["result"][0]["o"]["deep"]["er"].is_u64(), "{second}");
}
