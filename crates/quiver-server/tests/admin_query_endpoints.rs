//! Served endpoints of the inventory (docs/api-coverage.md) that no other handler test
//! covers: server availability and mode, echo, engine statistics, count recalculation, the
//! cursor batch retry, the AQL query tracking routes (properties, current, slow, kill,
//! rules), the query plan cache listing, the simple-query API, compaction and shutdown.

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
    // A member of the wrong type is ignored (ArangoDB reads only members of the right type).
    let v = f.ok(
        Method::PUT,
        "/_api/query/properties",
        Some(json!({"slowQueryThreshold": "fast", "maxSlowQueries": null})),
        200,
    );
    assert_eq!(
        (
            v["slowQueryThreshold"].as_f64(),
            v["maxSlowQueries"].as_u64()
        ),
        (Some(0.0), Some(5))
    );
    let v = f.ok(Method::GET, "/_api/query/properties", None, 200);
    assert_eq!(v["maxSlowQueries"], 5);
    let r = f.call(Method::PUT, "/_api/query/properties", Some(json!([1])));
    assert_eq!(r.status.as_u16(), 400, "{r:?}");
    assert_eq!(r.body_json().unwrap()["errorNum"], 400);

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
fn index_types_mdi_inverted_and_vector_are_created() {
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
    // A vector index trains on the collection's vectors: none there is error 9 (ArangoDB's
    // answer; tests/http/vector_index.txt has the rest).
    let r = f.call(
        Method::POST,
        "/_api/index?collection=c",
        Some(json!({"type": "vector", "fields": ["v"],
                    "params": {"metric": "cosine", "dimension": 2, "nLists": 1}})),
    );
    assert_eq!(r.status.as_u16(), 501, "{r:?}");
    assert_eq!(r.body_json().unwrap()["errorNum"], 9);
}

fn keys_of(rows: &Value) -> Vec<String> {
    let mut keys: Vec<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["_key"].as_str().unwrap().to_string())
        .collect();
    keys.sort();
    keys
}

#[test]
fn simple_queries_read_and_remove_through_aql() {
    let f = fixture();
    f.ok(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "s"})),
        200,
    );
    let docs: Vec<Value> = (0..5)
        .map(|i| json!({"_key": format!("k{i}"), "n": i, "sub": {"even": i % 2 == 0}}))
        .collect();
    f.ok(
        Method::POST,
        "/_api/document/s",
        Some(Value::Array(docs)),
        202,
    );

    // all: a cursor with the count, honouring skip/limit and batchSize.
    let all = f.ok(
        Method::PUT,
        "/_api/simple/all",
        Some(json!({"collection": "s", "batchSize": 2})),
        201,
    );
    assert_eq!(all["count"], 5);
    assert_eq!(all["result"].as_array().unwrap().len(), 2);
    assert_eq!(all["hasMore"], true);
    let limited = f.ok(
        Method::PUT,
        "/_api/simple/all",
        Some(json!({"collection": "s", "skip": 1, "limit": 3})),
        201,
    );
    assert_eq!(limited["result"].as_array().unwrap().len(), 3);

    // all-keys: paths by default, keys or ids on request.
    let paths = f.ok(
        Method::PUT,
        "/_api/simple/all-keys",
        Some(json!({"collection": "s"})),
        201,
    );
    assert!(paths["result"]
        .as_array()
        .unwrap()
        .contains(&json!("/_db/_system/_api/document/s/k3")));
    let keys = f.ok(
        Method::PUT,
        "/_api/simple/all-keys",
        Some(json!({"collection": "s", "type": "key"})),
        201,
    );
    let mut keys: Vec<String> = serde_json::from_value(keys["result"].clone()).unwrap();
    keys.sort();
    assert_eq!(keys, ["k0", "k1", "k2", "k3", "k4"]);

    // by-example: dotted paths reach into sub-objects.
    let even = f.ok(
        Method::PUT,
        "/_api/simple/by-example",
        Some(json!({"collection": "s", "example": {"sub.even": true}})),
        201,
    );
    assert_eq!(even["count"], 3);
    assert_eq!(keys_of(&even["result"]), ["k0", "k2", "k4"]);
    let r = f.call(
        Method::PUT,
        "/_api/simple/by-example",
        Some(json!({"collection": "s", "example": [1]})),
    );
    assert_error(&r, 400, 10);

    // lookup-by-keys: existing documents only, keys or ids.
    let found = f.ok(
        Method::PUT,
        "/_api/simple/lookup-by-keys",
        Some(json!({"collection": "s", "keys": ["k1", "s/k2", "nope"]})),
        200,
    );
    assert_eq!(keys_of(&found["documents"]), ["k1", "k2"]);
    let r = f.call(
        Method::PUT,
        "/_api/simple/lookup-by-keys",
        Some(json!({"collection": "s", "keys": "k1"})),
    );
    assert_error(&r, 400, 17);
    let r = f.call(
        Method::PUT,
        "/_api/simple/lookup-by-keys",
        Some(json!({"keys": []})),
    );
    assert_error(&r, 400, 17);

    // remove-by-keys: counts removed and ignored; old documents on request.
    let removed = f.ok(
        Method::PUT,
        "/_api/simple/remove-by-keys",
        Some(json!({"collection": "s", "keys": ["k0", "k1", "missing"]})),
        200,
    );
    assert_eq!(removed["removed"], 2, "{removed}");
    assert_eq!(removed["ignored"], 1, "{removed}");
    assert!(removed.get("old").is_none());
    let removed = f.ok(
        Method::PUT,
        "/_api/simple/remove-by-keys",
        Some(json!({"collection": "s", "keys": ["k2"], "options": {"silent": false}})),
        200,
    );
    assert_eq!(removed["old"][0]["_key"], "k2");
    let count = f.ok(Method::GET, "/_api/collection/s/count", None, 200);
    assert_eq!(count["count"], 2);

    // Only PUT; unknown operations are unknown paths; a missing collection is 1203.
    let r = f.call(Method::GET, "/_api/simple/all", None);
    assert_error(&r, 405, 405);
    let r = f.call(Method::PUT, "/_api/simple/near", Some(json!({})));
    assert_error(&r, 404, 404);
    let r = f.call(
        Method::PUT,
        "/_api/simple/all",
        Some(json!({"collection": "none"})),
    );
    assert_error(&r, 404, 1203);
}

#[test]
fn plan_cache_lists_and_clears_the_plans_of_a_database() {
    let f = fixture();
    f.ok(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "p"})),
        200,
    );
    let query = "FOR d IN @@c FILTER d.x == @v RETURN d";
    for _ in 0..3 {
        f.ok(
            Method::POST,
            "/_api/cursor",
            Some(json!({"query": query, "bindVars": {"@c": "p", "v": 1}})),
            201,
        );
    }
    let list = f.ok(Method::GET, "/_api/query-plan-cache", None, 200);
    let entry = list
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["query"] == query)
        .unwrap_or_else(|| panic!("{list}"))
        .clone();
    assert_eq!(entry["bindVars"], json!({"@c": "p"}));
    assert_eq!(entry["dataSources"], json!(["p"]));
    assert_eq!(entry["fullCount"], false);
    assert!(entry["hits"].as_u64().unwrap() >= 2, "{entry}");
    assert!(entry["memoryUsage"].as_u64().unwrap() >= query.len() as u64);
    assert!(entry["hash"].is_string() && entry["queryHash"].is_u64());
    assert!(entry["created"].as_str().unwrap().ends_with('Z'));
    // Another database lists its own plans only.
    f.ok(
        Method::POST,
        "/_api/database",
        Some(json!({"name": "other"})),
        201,
    );
    let other = f.ok(Method::GET, "/_db/other/_api/query-plan-cache", None, 200);
    assert!(other
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["query"] != query));

    let cleared = f.ok(Method::DELETE, "/_api/query-plan-cache", None, 200);
    assert_eq!(cleared, json!({"error": false, "code": 200}));
    assert_eq!(
        f.ok(Method::GET, "/_api/query-plan-cache", None, 200),
        json!([])
    );
    let r = f.call(Method::POST, "/_api/query-plan-cache", None);
    assert_error(&r, 405, 405);
}

#[test]
fn compact_rewrites_every_collection_and_shutdown_is_requested() {
    let f = fixture();
    f.ok(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "c"})),
        200,
    );
    let docs: Vec<Value> = (0..50).map(|i| json!({"_key": format!("d{i}")})).collect();
    f.ok(
        Method::POST,
        "/_api/document/c",
        Some(Value::Array(docs)),
        202,
    );
    f.ok(
        Method::POST,
        "/_api/cursor",
        Some(json!({"query": "FOR d IN c FILTER d._key != 'd0' REMOVE d IN c"})),
        201,
    );
    let done = f.ok(
        Method::PUT,
        "/_admin/compact?changeLevel=true",
        Some(json!({"compactBottomMostLevel": true})),
        200,
    );
    assert_eq!(done, json!({}));
    // The removed documents' markers are gone from the datafiles; the live one stays.
    let figures = f.ok(Method::GET, "/_api/collection/c/figures", None, 200);
    assert_eq!(figures["figures"]["dead"]["count"], 0, "{figures}");
    assert_eq!(figures["figures"]["alive"]["count"], 1, "{figures}");
    let count = f.ok(Method::GET, "/_api/collection/c/count", None, 200);
    assert_eq!(count["count"], 1);
    f.ok(Method::GET, "/_api/document/c/d0", None, 200);
    assert_error(&f.call(Method::GET, "/_admin/compact", None), 405, 405);
    assert_error(
        &f.call(Method::PUT, "/_admin/compact", Some(json!([1]))),
        400,
        10,
    );

    // GET is the Coordinators' soft shutdown progress: 405 on a single server.
    assert_error(&f.call(Method::GET, "/_admin/shutdown", None), 405, 405);
    assert!(!f.state.stop.is_requested());
    let r = f.ok(Method::DELETE, "/_admin/shutdown?soft=true", None, 200);
    assert_eq!(r, json!("OK"));
    assert!(f.state.stop.is_requested());
}

/// Every request as root with basic authentication (empty password), authentication on.
fn call_as_root(
    state: &Arc<ServerState>,
    method: Method,
    target: &str,
    body: Option<Value>,
) -> Response {
    let mut req = Request::build(method, target).with_header("authorization", "Basic cm9vdDo=");
    if let Some(b) = body {
        req = req.with_body(serde_json::to_vec(&b).unwrap());
    }
    handle(state, req).settle_blocking()
}

#[test]
fn read_only_mode_refuses_writes_of_users_and_lets_reads_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        async_workers: 1,
        ..ServerConfig::default()
    };
    let state = ServerState::new(config, core).unwrap();
    let call = |method: Method, target: &str, body: Option<Value>| {
        call_as_root(&state, method, target, body)
    };
    let status = |r: &Response| r.status.as_u16();
    assert_eq!(
        status(&call(
            Method::POST,
            "/_api/collection",
            Some(json!({"name": "ro"}))
        )),
        200
    );
    assert_eq!(
        status(&call(
            Method::POST,
            "/_api/document/ro",
            Some(json!({"_key": "a"}))
        )),
        202
    );

    let r = call(
        Method::PUT,
        "/_admin/server/mode",
        Some(json!({"mode": "readonly"})),
    );
    assert_eq!(r.body_json().unwrap()["mode"], "readonly", "{r:?}");
    assert_eq!(
        call(Method::GET, "/_admin/server/mode", None)
            .body_json()
            .unwrap()["mode"],
        "readonly"
    );
    let availability = call(Method::GET, "/_admin/server/availability", None)
        .body_json()
        .unwrap();
    assert_eq!(availability["writeOpsEnabled"], false);

    // Document writes: 1004.
    assert_error(
        &call(
            Method::POST,
            "/_api/document/ro",
            Some(json!({"_key": "b"})),
        ),
        403,
        1004,
    );
    assert_error(
        &call(Method::DELETE, "/_api/document/ro/a", None),
        403,
        1004,
    );
    assert_error(
        &call(Method::PUT, "/_api/collection/ro/truncate", None),
        403,
        1004,
    );
    assert_error(
        &call(
            Method::POST,
            "/_api/cursor",
            Some(json!({"query": "INSERT {} INTO ro"})),
        ),
        403,
        1004,
    );
    assert_error(
        &call(
            Method::PUT,
            "/_api/simple/remove-by-keys",
            Some(json!({"collection": "ro", "keys": ["a"]})),
        ),
        403,
        1004,
    );
    assert_error(
        &call(
            Method::POST,
            "/_api/cursor",
            Some(json!({"query": "INSERT {} INTO @@c", "bindVars": {"@c": "ro"}})),
        ),
        403,
        1004,
    );
    // Databases and collections: 11.
    assert_error(
        &call(
            Method::POST,
            "/_api/collection",
            Some(json!({"name": "new"})),
        ),
        403,
        11,
    );
    assert_error(&call(Method::DELETE, "/_api/collection/ro", None), 403, 11);
    assert_error(
        &call(
            Method::POST,
            "/_api/database",
            Some(json!({"name": "newdb"})),
        ),
        403,
        11,
    );
    // Reads go on.
    assert_eq!(status(&call(Method::GET, "/_api/document/ro/a", None)), 200);
    let read = call(
        Method::POST,
        "/_api/cursor",
        Some(json!({"query": "FOR d IN ro RETURN d._key"})),
    );
    assert_eq!(
        read.body_json().unwrap()["result"],
        json!(["a"]),
        "{read:?}"
    );

    // The administrator switches back; writes work again.
    let r = call(
        Method::PUT,
        "/_admin/server/mode",
        Some(json!({"mode": "default"})),
    );
    assert_eq!(r.body_json().unwrap()["mode"], "default");
    assert_eq!(
        status(&call(
            Method::POST,
            "/_api/document/ro",
            Some(json!({"_key": "b"}))
        )),
        202
    );
    assert_eq!(
        status(&call(
            Method::POST,
            "/_api/collection",
            Some(json!({"name": "new"}))
        )),
        200
    );
}

/// With authentication off, read-only mode limits every caller, as ArangoDB's internal
/// read-only context does: writes fail, reads and switching the mode back go on.
#[test]
fn read_only_mode_with_authentication_off_limits_every_caller() {
    let f = fixture();
    f.ok(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "ro"})),
        200,
    );
    f.ok(
        Method::POST,
        "/_api/document/ro",
        Some(json!({"_key": "a"})),
        202,
    );
    f.ok(
        Method::PUT,
        "/_admin/server/mode",
        Some(json!({"mode": "readonly"})),
        200,
    );
    assert_error(
        &f.call(
            Method::POST,
            "/_api/document/ro",
            Some(json!({"_key": "b"})),
        ),
        403,
        1004,
    );
    assert_error(
        &f.call(
            Method::POST,
            "/_api/cursor",
            Some(json!({"query": "INSERT {_key: 'c'} INTO ro"})),
        ),
        403,
        1004,
    );
    assert_error(
        &f.call(
            Method::POST,
            "/_api/collection",
            Some(json!({"name": "zz"})),
        ),
        403,
        11,
    );
    assert_error(
        &f.call(Method::POST, "/_api/database", Some(json!({"name": "zz"}))),
        403,
        11,
    );
    f.ok(Method::GET, "/_api/document/ro/a", None, 200);
    let read = f.ok(
        Method::POST,
        "/_api/cursor",
        Some(json!({"query": "FOR d IN ro RETURN d._key"})),
        201,
    );
    assert_eq!(read["result"], json!(["a"]));
    f.ok(
        Method::PUT,
        "/_admin/server/mode",
        Some(json!({"mode": "default"})),
        200,
    );
    f.ok(
        Method::POST,
        "/_api/document/ro",
        Some(json!({"_key": "b"})),
        202,
    );
}

/// `maxQueryStringLength` is kept within ArangoDB's bounds (64 bytes to 8 MiB), and the query
/// lists cut longer queries to it at a character boundary, marked with `...`;
/// `maxSlowQueries` is at most 16384 and a negative threshold means 0.
#[test]
fn query_tracking_bounds_its_properties_and_cuts_long_queries() {
    let f = fixture();
    let props = f.ok(
        Method::PUT,
        "/_api/query/properties",
        Some(
            json!({"maxQueryStringLength": 1, "maxSlowQueries": 100_000, "slowQueryThreshold": -1}),
        ),
        200,
    );
    assert_eq!(props["maxQueryStringLength"], 64);
    assert_eq!(props["maxSlowQueries"], 16_384);
    assert_eq!(props["slowQueryThreshold"], 0);
    let props = f.ok(
        Method::PUT,
        "/_api/query/properties",
        Some(json!({"maxQueryStringLength": 1e12})),
        200,
    );
    assert_eq!(props["maxQueryStringLength"], 8 * 1024 * 1024);
    f.ok(
        Method::PUT,
        "/_api/query/properties",
        Some(json!({"maxQueryStringLength": 64})),
        200,
    );
    let query = format!("RETURN LENGTH('{}')", "ä".repeat(100));
    f.ok(
        Method::POST,
        "/_api/cursor",
        Some(json!({ "query": query })),
        201,
    );
    let slow = f.ok(Method::GET, "/_api/query/slow", None, 200);
    let shown = slow[0]["query"].as_str().unwrap();
    assert!(shown.ends_with("..."), "{shown}");
    let kept = shown.trim_end_matches("...");
    assert!(kept.len() <= 64 && query.starts_with(kept), "{shown}");
}

/// Profile level 2 reports the seconds spent in each optimizer rule that ran (`stats.rules`,
/// in explain and in a cursor's `extra.stats`), and explain counts the rules that ran.
#[test]
fn profile_two_times_the_optimizer_rules() {
    let f = fixture();
    f.ok(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "p"})),
        200,
    );
    let query = "FOR d IN p FILTER d._key == 'a' SORT d.x RETURN d";
    let plain = f.ok(
        Method::POST,
        "/_api/explain",
        Some(json!({"query": query})),
        200,
    );
    assert!(plain["stats"].get("rules").is_none(), "{plain}");
    let executed = plain["stats"]["rulesExecuted"].as_u64().unwrap();
    let skipped = plain["stats"]["rulesSkipped"].as_u64().unwrap();
    assert!(executed > 0);
    let disabled = f.ok(
        Method::POST,
        "/_api/explain",
        Some(json!({"query": query, "options": {"optimizer": {"rules": ["-all"]}}})),
        200,
    );
    assert_eq!(disabled["stats"]["rulesExecuted"], 0);
    assert_eq!(disabled["stats"]["rulesSkipped"], executed + skipped);

    let profiled = f.ok(
        Method::POST,
        "/_api/explain",
        Some(json!({"query": query, "options": {"profile": 2}})),
        200,
    );
    let rules = profiled["stats"]["rules"].as_object().expect("stats.rules");
    assert_eq!(rules.len() as u64, executed);
    assert!(rules.contains_key("use-indexes"), "{rules:?}");
    assert!(rules.values().all(|s| s.as_f64().is_some_and(|s| s >= 0.0)));

    let cursor = f.ok(
        Method::POST,
        "/_api/cursor",
        Some(json!({"query": query, "options": {"profile": 2}})),
        201,
    );
    assert!(
        cursor["extra"]["stats"]["rules"]["use-indexes"].is_number(),
        "{cursor}"
    );
    assert!(cursor["extra"]["stats"]["nodes"].is_array());
}

/// `usePlanCache`: a query whose plan came from the plan cache says `planCacheKey` (the
/// entry's hash in `/_api/query-plan-cache`); queries ArangoDB would not cache a plan of are
/// refused with 1584 when they ask.
#[test]
fn use_plan_cache_reports_the_key_and_refuses_ineligible_queries() {
    let f = fixture();
    f.ok(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "pc"})),
        200,
    );
    let body = json!({
        "query": "FOR d IN pc FILTER d.v == @v RETURN d",
        "bindVars": {"v": 1},
        "options": {"usePlanCache": true},
    });
    let first = f.ok(Method::POST, "/_api/cursor", Some(body.clone()), 201);
    assert!(first.get("planCacheKey").is_none(), "{first}");
    let second = f.ok(Method::POST, "/_api/cursor", Some(body.clone()), 201);
    let key = second["planCacheKey"]
        .as_str()
        .expect("planCacheKey")
        .to_string();
    let listed = f.ok(Method::GET, "/_api/query-plan-cache", None, 200);
    assert!(
        listed.as_array().unwrap().iter().any(|e| e["hash"] == key),
        "{listed}"
    );
    let explained = f.ok(Method::POST, "/_api/explain", Some(body), 200);
    assert_eq!(explained["planCacheKey"], key);
    // Without the option the cache is used all the same, but not reported.
    let plain = f.ok(
        Method::POST,
        "/_api/cursor",
        Some(json!({"query": "FOR d IN pc FILTER d.v == @v RETURN d", "bindVars": {"v": 1}})),
        201,
    );
    assert!(plain.get("planCacheKey").is_none());

    assert_error(
        &f.call(
            Method::POST,
            "/_api/cursor",
            Some(json!({"query": "FOR d IN pc RETURN d",
                "options": {"usePlanCache": true, "optimizer": {"rules": ["-all"]}}})),
        ),
        400,
        1584,
    );
    assert_error(
        &f.call(
            Method::POST,
            "/_api/cursor",
            Some(
                json!({"query": "UPSERT {_key: 'a'} INSERT {_key: 'a'} UPDATE {} IN pc",
                "options": {"usePlanCache": true}}),
            ),
        ),
        400,
        1584,
    );
    assert_error(
        &f.call(
            Method::POST,
            "/_api/explain",
            Some(json!({"query": "FOR d IN pc RETURN d",
                "options": {"usePlanCache": true, "allPlans": true}})),
        ),
        400,
        1584,
    );
}

/// Each database has its own query properties and slow-query list (ArangoDB keeps a query list
/// per database): a change in one leaves another at the defaults, and a database dropped and
/// created again starts afresh. Listed queries name the user who ran them.
#[test]
fn query_properties_and_slow_queries_are_per_database_and_name_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        async_workers: 1,
        ..ServerConfig::default()
    };
    let state = ServerState::new(config, core).unwrap();
    let call = |method: Method, target: &str, body: Option<Value>| {
        call_as_root(&state, method, target, body)
    };
    let ok = |method: Method, target: &str, body: Option<Value>, status: u16| {
        let r = call(method, target, body);
        assert_eq!(r.status.as_u16(), status, "{r:?}");
        r.body_json().unwrap()
    };
    for name in ["a", "b"] {
        ok(
            Method::POST,
            "/_api/database",
            Some(json!({"name": name})),
            201,
        );
    }
    let defaults = ok(Method::GET, "/_db/b/_api/query/properties", None, 200);
    assert_eq!(defaults["slowQueryThreshold"], 10);
    // The Go driver sends null for every member it was not given: those stay as they are.
    let changed = ok(
        Method::PUT,
        "/_db/a/_api/query/properties",
        Some(
            json!({"slowQueryThreshold": 0, "maxSlowQueries": 2, "enabled": null,
                    "trackBindVars": null, "slowStreamingQueryThreshold": null}),
        ),
        200,
    );
    assert_eq!(changed["slowQueryThreshold"], 0);
    assert_eq!(changed["maxSlowQueries"], 2);
    assert_eq!(changed["enabled"], true);
    assert_eq!(changed["slowStreamingQueryThreshold"], 10);
    assert_eq!(
        ok(Method::GET, "/_db/b/_api/query/properties", None, 200),
        defaults
    );

    for db in ["a", "b"] {
        ok(
            Method::POST,
            &format!("/_db/{db}/_api/cursor"),
            Some(json!({"query": "RETURN 1"})),
            201,
        );
    }
    let slow = ok(Method::GET, "/_db/a/_api/query/slow", None, 200);
    assert_eq!(slow.as_array().unwrap().len(), 1, "{slow}");
    assert_eq!(slow[0]["user"], "root");
    assert_eq!(slow[0]["database"], "a");
    assert_eq!(
        ok(Method::GET, "/_db/b/_api/query/slow", None, 200),
        json!([])
    );

    ok(Method::DELETE, "/_api/database/a", None, 200);
    ok(
        Method::POST,
        "/_api/database",
        Some(json!({"name": "a"})),
        201,
    );
    assert_eq!(
        ok(Method::GET, "/_db/a/_api/query/properties", None, 200),
        defaults
    );
    assert_eq!(
        ok(Method::GET, "/_db/a/_api/query/slow", None, 200),
        json!([])
    );
}
