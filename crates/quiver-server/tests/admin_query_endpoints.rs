//! Served endpoints of the inventory (docs/api-coverage.md) that no other handler test
//! covers: server availability and mode, echo, engine statistics, count recalculation, the
//! cursor batch retry, and the AQL query tracking routes (properties, current, slow, kill,
//! rules).

use std::sync::Arc;

use http::Method;
use quiver_core::{Core, CoreOptions};
use quiver_server::{handle, Request, Response, ServerConfig, ServerState};
use serde_json::{json, Value};

struct Fixture {
    state: Arc<ServerState>,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        auth: quiver_server::auth::AuthConfig::disabled(),
        async_workers: 1,
        ..ServerConfig::default()
    };
    Fixture {
        state: ServerState::new(config, core).unwrap(),
        _dir: dir,
    }
}

impl Fixture {
    fn call(&self, method: Method, target: &str, body: Option<Value>) -> Response {
        let mut req = Request::build(method, target);
        if let Some(b) = body {
            req = req.with_body(serde_json::to_vec(&b).unwrap());
        }
        handle(&self.state, req).settle_blocking()
    }

    #[track_caller]
    fn ok(&self, method: Method, target: &str, body: Option<Value>, status: u16) -> Value {
        let r = self.call(method, target, body);
        assert_eq!(r.status.as_u16(), status, "{r:?}");
        r.body_json().unwrap_or(Value::Null)
    }
}

#[track_caller]
fn assert_error(r: &Response, status: u16, num: u64) {
    assert_eq!(r.status.as_u16(), status, "{r:?}");
    let b = r.body_json().unwrap();
    assert_eq!(b["error"], true);
    assert_eq!(b["errorNum"], num, "{b}");
}

#[test]
fn server_availability_mode_echo_and_engine_statistics() {
    let f = fixture();
    let v = f.ok(Method::GET, "/_admin/server/availability", None, 200);
    assert_eq!(v["mode"], "default");
    assert_eq!(v["writeOpsEnabled"], true);
    let v = f.ok(Method::GET, "/_admin/server/mode", None, 200);
    assert_eq!(v["mode"], "default");
    let v = f.ok(
        Method::PUT,
        "/_admin/server/mode",
        Some(json!({"mode": "default"})),
        200,
    );
    assert_eq!(v["mode"], "default");
    // Read-only mode is not available yet (docs/api-coverage.md), and says so.
    let r = f.call(
        Method::PUT,
        "/_admin/server/mode",
        Some(json!({"mode": "readonly"})),
    );
    assert_error(&r, 501, 9);
    let r = f.call(Method::PUT, "/_admin/server/mode", Some(json!({"mode": 1})));
    assert_error(&r, 400, 400);

    let r = f.call(Method::POST, "/_admin/echo?a=1", Some(json!({"x": [1]})));
    assert_eq!(r.status.as_u16(), 200);
    let v = r.body_json().unwrap();
    assert_eq!(v["requestType"], "POST");
    assert_eq!(v["requestBody"], json!({"x": [1]}));
    assert_eq!(v["parameters"], json!({"a": "1"}));
    assert_eq!(v["database"], "_system");

    let v = f.ok(Method::GET, "/_api/engine/stats", None, 200);
    assert!(v.is_object(), "{v}");
    let r = f.call(Method::POST, "/_api/engine/stats", None);
    assert_error(&r, 405, 405);
}

#[test]
fn recalculate_count_reports_the_documents() {
    let f = fixture();
    f.ok(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "c"})),
        200,
    );
    f.ok(
        Method::POST,
        "/_api/document/c",
        Some(json!([{"_key": "a"}, {"_key": "b"}])),
        202,
    );
    let v = f.ok(
        Method::PUT,
        "/_api/collection/c/recalculateCount",
        None,
        200,
    );
    assert_eq!(v["result"], true);
    assert_eq!(v["count"], 2);
    let r = f.call(Method::PUT, "/_api/collection/nope/recalculateCount", None);
    assert_error(&r, 404, 1203);
}

#[test]
fn a_cursor_batch_is_fetched_again_with_allow_retry() {
    let f = fixture();
    let first = f.ok(
        Method::POST,
        "/_api/cursor",
        Some(json!({"query": "FOR i IN 1..3 RETURN i", "batchSize": 1,
                    "options": {"allowRetry": true}})),
        201,
    );
    assert_eq!(first["result"], json!([1]));
    // ArangoDB sends the number 2; QuiverDB still sends "2" (docs/api-coverage.md lists the
    // difference). Either way it names the next batch.
    let next = &first["nextBatchId"];
    assert!(next == &json!(2) || next == &json!("2"), "{first}");
    let id = first["id"].as_str().unwrap().to_string();
    let second = f.ok(Method::POST, &format!("/_api/cursor/{id}/2"), None, 200);
    assert_eq!(second["result"], json!([2]));
    let again = f.ok(Method::POST, &format!("/_api/cursor/{id}/2"), None, 200);
    assert_eq!(again["result"], json!([2]));
    // The last batch names no cursor; it can still be fetched again.
    let last = f.ok(Method::POST, &format!("/_api/cursor/{id}/3"), None, 200);
    assert_eq!(last["result"], json!([3]));
    assert_eq!(last["hasMore"], false);
    assert!(last.get("id").is_none(), "{last}");
    let last_again = f.ok(Method::POST, &format!("/_api/cursor/{id}/3"), None, 200);
    assert_eq!(last_again["result"], json!([3]));
    // A first batch that holds everything creates no cursor, allowRetry or not.
    for options in [
        json!({"allowRetry": true}),
        json!({"allowRetry": true, "stream": true}),
    ] {
        let whole = f.ok(
            Method::POST,
            "/_api/cursor",
            Some(
                json!({"query": "FOR i IN 1..3 RETURN i", "batchSize": 3, "count": true,
                        "options": options}),
            ),
            201,
        );
        assert_eq!(whole["hasMore"], false, "{whole}");
        assert!(whole.get("id").is_none(), "{whole}");
        assert!(whole.get("nextBatchId").is_none(), "{whole}");
    }
    // Skipping a batch is refused.
    let r = f.call(Method::POST, &format!("/_api/cursor/{id}/5"), None);
    assert_eq!(r.status.as_u16(), 400, "{r:?}");
    // Without allowRetry the delivered batch is gone.
    let plain = f.ok(
        Method::POST,
        "/_api/cursor",
        Some(json!({"query": "FOR i IN 1..3 RETURN i", "batchSize": 1})),
        201,
    );
    let id = plain["id"].as_str().unwrap().to_string();
    f.ok(Method::POST, &format!("/_api/cursor/{id}/2"), None, 200);
    let r = f.call(Method::POST, &format!("/_api/cursor/{id}/2"), None);
    assert_eq!(r.status.as_u16(), 400, "{r:?}");
}

#[test]
fn query_tracking_properties_slow_list_current_kill_and_rules() {
    let f = fixture();
    let v = f.ok(
        Method::PUT,
        "/_api/query/properties",
        Some(
            json!({"slowQueryThreshold": 0, "slowStreamingQueryThreshold": 0,
                    "maxSlowQueries": 5}),
        ),
        200,
    );
    assert_eq!(v["slowQueryThreshold"], 0.0);
    assert_eq!(v["maxSlowQueries"], 5);
    let r = f.call(
        Method::PUT,
        "/_api/query/properties",
        Some(json!({"slowQueryThreshold": "fast"})),
    );
    assert_eq!(r.status.as_u16(), 400, "{r:?}");
    let v = f.ok(Method::GET, "/_api/query/properties", None, 200);
    assert_eq!(v["maxSlowQueries"], 5);

    f.ok(
        Method::POST,
        "/_api/cursor",
        Some(json!({"query": "FOR i IN 1..10 RETURN i"})),
        201,
    );
    let slow = f.ok(Method::GET, "/_api/query/slow", None, 200);
    let slow = slow.as_array().unwrap();
    assert!(
        slow.iter()
            .any(|q| q["query"] == "FOR i IN 1..10 RETURN i" && q["state"] == "finished"),
        "{slow:?}"
    );
    f.ok(Method::DELETE, "/_api/query/slow", None, 200);
    assert_eq!(f.ok(Method::GET, "/_api/query/slow", None, 200), json!([]));

    // Nothing runs between requests.
    assert_eq!(
        f.ok(Method::GET, "/_api/query/current", None, 200),
        json!([])
    );
    let r = f.call(Method::DELETE, "/_api/query/12345", None);
    assert_error(&r, 404, 1591);

    let rules = f.ok(Method::GET, "/_api/query/rules", None, 200);
    let names: Vec<&str> = rules
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"use-indexes"), "{names:?}");
    assert!(rules[0]["flags"]["canBeDisabled"].is_boolean());
}

#[test]
fn index_types_mdi_and_inverted_are_created_and_vector_is_refused() {
    let f = fixture();
    f.ok(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "c"})),
        200,
    );
    let v = f.ok(
        Method::POST,
        "/_api/index?collection=c",
        Some(json!({"type": "mdi", "fields": ["x", "y"], "fieldValueTypes": "double"})),
        201,
    );
    assert_eq!(v["type"], "mdi");
    assert_eq!(v["isNewlyCreated"], true);
    let v = f.ok(
        Method::POST,
        "/_api/index?collection=c",
        Some(json!({"type": "inverted", "fields": ["a"]})),
        201,
    );
    assert_eq!(v["type"], "inverted");
    // Vector indexes are not available (docs/api-coverage.md).
    let r = f.call(
        Method::POST,
        "/_api/index?collection=c",
        Some(json!({"type": "vector", "fields": ["v"],
                    "params": {"metric": "cosine", "dimension": 2, "nLists": 1}})),
    );
    assert_eq!(r.status.as_u16(), 400, "{r:?}");
    assert_eq!(r.body_json().unwrap()["error"], true);
}
