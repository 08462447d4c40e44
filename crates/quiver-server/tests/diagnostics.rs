//! The diagnostics endpoints through the dispatcher: `/_admin/support-info`,
//! `/_admin/deployment/id`, `/_admin/crashes*`, `/_admin/activities`,
//! `/_admin/server/api-calls`, `/_admin/server/aql-queries`, `/_admin/usage-metrics`,
//! `/_admin/options-public` and `/_admin/log/structured`.

use std::path::Path;
use std::sync::Arc;

use http::Method;
use quiver_core::{Core, CoreOptions};
use quiver_server::state::StartupOptions;
use quiver_server::{handle, Request, Response, ServerConfig, ServerState};
use serde_json::{json, Value};

fn state_over(dir: &Path, config: ServerConfig) -> Arc<ServerState> {
    let core = Arc::new(Core::open(dir, CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.to_path_buf(),
        async_workers: 1,
        auth: quiver_server::auth::AuthConfig::disabled(),
        ..config
    };
    ServerState::new(config, core).unwrap()
}

fn call(state: &ServerState, method: Method, target: &str, body: Option<Value>) -> Response {
    let mut req = Request::build(method, target);
    if let Some(b) = body {
        req = req.with_body(serde_json::to_vec(&b).unwrap());
    }
    handle(state, req).settle_blocking()
}

#[track_caller]
fn ok(state: &ServerState, method: Method, target: &str, body: Option<Value>) -> Value {
    let r = call(state, method, target, body);
    assert!(r.status.is_success(), "{r:?}");
    r.body_json().unwrap_or(Value::Null)
}

#[track_caller]
fn error(state: &ServerState, method: Method, target: &str, status: u16, num: u64) {
    let r = call(state, method, target, None);
    assert_eq!(r.status.as_u16(), status, "{r:?}");
    let body = r.body_json().unwrap();
    assert_eq!(body["errorNum"], num, "{body}");
    assert_eq!(body["error"], true);
}

#[test]
fn deployment_id_is_a_uuid_kept_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let first = {
        let state = state_over(dir.path(), ServerConfig::default());
        let a = ok(&state, Method::GET, "/_admin/deployment/id", None);
        let b = ok(&state, Method::GET, "/_admin/deployment/id", None);
        assert_eq!(a, b);
        error(&state, Method::POST, "/_admin/deployment/id", 405, 405);
        state.shutdown();
        let core = state.core.clone();
        drop(state);
        core.shutdown().unwrap();
        a["id"].as_str().unwrap().to_string()
    };
    uuid::Uuid::parse_str(&first).expect("a UUID");
    let state = state_over(dir.path(), ServerConfig::default());
    assert_eq!(
        ok(&state, Method::GET, "/_admin/deployment/id", None)["id"],
        first
    );
}

#[test]
fn support_info_describes_the_single_server_from_system_only() {
    let dir = tempfile::tempdir().unwrap();
    let state = state_over(dir.path(), ServerConfig::default());
    let info = ok(
        &state,
        Method::GET,
        "/_db/_system/_admin/support-info",
        None,
    );
    assert_eq!(info["deployment"]["type"], "single");
    assert_eq!(info["host"]["role"], "SINGLE");
    assert!(info["host"]["numberOfCores"]["value"].as_u64().unwrap() > 0);
    assert!(info["host"]["physicalMemory"]["value"].as_u64().unwrap() > 0);
    assert!(info["date"].as_str().unwrap().ends_with('Z'));
    ok(
        &state,
        Method::POST,
        "/_api/database",
        Some(json!({"name": "db1"})),
    );
    error(
        &state,
        Method::GET,
        "/_db/db1/_admin/support-info",
        403,
        1230,
    );
}

#[test]
fn no_crash_dumps_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let state = state_over(dir.path(), ServerConfig::default());
    let list = ok(&state, Method::GET, "/_admin/crashes", None);
    assert_eq!(list["result"], json!([]));
    assert_eq!(list["error"], false);
    let id = "8c1f0ad0-0000-4000-8000-000000000000";
    error(
        &state,
        Method::GET,
        &format!("/_admin/crashes/{id}"),
        404,
        404,
    );
    error(
        &state,
        Method::DELETE,
        &format!("/_admin/crashes/{id}"),
        404,
        404,
    );
    error(&state, Method::DELETE, "/_admin/crashes", 405, 405);
}

#[test]
fn activities_show_the_asking_request_and_running_queries() {
    let dir = tempfile::tempdir().unwrap();
    let state = state_over(dir.path(), ServerConfig::default());
    let query = "FOR i IN 1..1000 SORT i DESC RETURN i";
    let cursor = ok(
        &state,
        Method::POST,
        "/_api/cursor",
        Some(json!({"query": query, "batchSize": 1, "options": {"stream": true}})),
    );
    assert_eq!(cursor["hasMore"], true);
    let v = ok(&state, Method::GET, "/_admin/activities", None);
    let list = v["activities"].as_array().unwrap();
    assert_eq!(list[0]["type"], "RestHandler");
    assert_eq!(list[0]["metadata"]["url"], "/_admin/activities");
    assert!(
        list.iter()
            .any(|a| a["type"] == "AQLQuery" && a["metadata"]["query"] == query),
        "{v}"
    );
    let id = cursor["id"].as_str().unwrap();
    ok(&state, Method::DELETE, &format!("/_api/cursor/{id}"), None);
    let v = ok(&state, Method::GET, "/_admin/activities", None);
    assert!(!v["activities"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["type"] == "AQLQuery"));
}

#[test]
fn recent_api_calls_and_queries_are_recorded_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let state = state_over(dir.path(), ServerConfig::default());
    ok(
        &state,
        Method::POST,
        "/_api/database",
        Some(json!({"name": "db1"})),
    );
    ok(&state, Method::GET, "/_db/db1/_api/version", None);
    ok(
        &state,
        Method::POST,
        "/_db/db1/_api/cursor",
        Some(json!({"query": "RETURN @x", "bindVars": {"x": 7}})),
    );
    let calls = ok(&state, Method::GET, "/_admin/server/api-calls", None);
    let calls = calls["result"]["calls"].as_array().unwrap().clone();
    assert_eq!(calls[0]["path"], "/_admin/server/api-calls");
    assert_eq!(calls[0]["database"], "_system");
    assert_eq!(calls[1]["path"], "/_api/cursor");
    assert_eq!(calls[1]["requestType"], "POST");
    assert_eq!(calls[2]["path"], "/_api/version");
    assert_eq!(calls[2]["database"], "db1");
    assert!(calls[2]["timeStamp"].as_str().unwrap().ends_with('Z'));
    let queries = ok(&state, Method::GET, "/_admin/server/aql-queries", None);
    let queries = queries["result"]["queries"].as_array().unwrap().clone();
    assert_eq!(queries[0]["query"], "RETURN @x");
    assert_eq!(queries[0]["bindVars"], json!({"x": 7}));
    assert_eq!(queries[0]["database"], "db1");
    error(&state, Method::PUT, "/_admin/server/aql-queries", 405, 405);
}

#[test]
fn usage_metrics_are_an_empty_prometheus_page() {
    let dir = tempfile::tempdir().unwrap();
    let state = state_over(dir.path(), ServerConfig::default());
    let r = call(&state, Method::GET, "/_admin/usage-metrics", None);
    assert_eq!(r.status.as_u16(), 200);
    assert!(r.content_type.as_ref().is_some_and(|ct| ct
        .to_str()
        .unwrap()
        .starts_with("text/plain; version=0.0.4")));
    assert!(r.body.is_empty());
    // As ArangoDB: another method is 400 with error 405.
    error(&state, Method::POST, "/_admin/usage-metrics", 400, 405);
}

#[test]
fn public_options_are_the_curated_few() {
    let dir = tempfile::tempdir().unwrap();
    let options = StartupOptions::new([
        (
            "database.extended-names".to_string(),
            json!(false),
            json!({"section": "database"}),
        ),
        (
            "server.session-timeout".to_string(),
            json!(3600.0),
            json!({"section": "server"}),
        ),
        (
            "server.endpoint".to_string(),
            json!(["tcp://127.0.0.1:8529"]),
            json!({"section": "server"}),
        ),
    ]);
    let state = state_over(
        dir.path(),
        ServerConfig {
            startup_options: Arc::new(options),
            ..ServerConfig::default()
        },
    );
    let v = ok(
        &state,
        Method::GET,
        "/_db/_system/_admin/options-public",
        None,
    );
    assert_eq!(
        v,
        json!({"database.extended-names": false, "server.session-timeout": 3600.0})
    );
}

#[test]
fn structured_log_parameters_are_read_and_set() {
    let dir = tempfile::tempdir().unwrap();
    let state = state_over(dir.path(), ServerConfig::default());
    // As ArangoDB: only the parameters that are on are listed.
    assert_eq!(
        ok(&state, Method::GET, "/_admin/log/structured", None),
        json!({})
    );
    let v = ok(
        &state,
        Method::PUT,
        "/_admin/log/structured",
        Some(json!({"database": true, "url": true})),
    );
    assert_eq!(v, json!({"database": true, "url": true}));
    // Values that are not booleans and unknown names are ignored, as ArangoDB ignores them.
    let v = ok(
        &state,
        Method::PUT,
        "/_admin/log/structured",
        Some(json!({"username": "yes", "other": true, "database": false})),
    );
    assert_eq!(v, json!({"url": true}));
    let r = call(
        &state,
        Method::PUT,
        "/_admin/log/structured",
        Some(json!([true])),
    );
    assert_eq!(r.status.as_u16(), 400, "{r:?}");
    assert_eq!(r.body_json().unwrap()["errorNum"], 400);
    error(&state, Method::DELETE, "/_admin/log/structured", 405, 405);
    assert_eq!(
        ok(&state, Method::GET, "/_admin/log/structured", None)["url"],
        true
    );
}
