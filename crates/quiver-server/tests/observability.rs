//! The observability endpoints through the dispatcher: the metrics page (`/_admin/metrics`,
//! `/v2`), `/_admin/statistics` and its description, the log API (`/_admin/log/entries`,
//! `/_admin/log`, `/_admin/log/level`), `/_admin/options*` and
//! `/_admin/database/target-version`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use http::Method;
use quiver_core::{Core, CoreOptions};
use quiver_server::log::{LogControl, LogLevel, TopicLevels};
use quiver_server::state::StartupOptions;
use quiver_server::{handle, Request, Response, ServerConfig, ServerState};
use serde_json::{json, Value};

struct Fixture {
    state: Arc<ServerState>,
    _dir: tempfile::TempDir,
}

fn fixture_with(config: ServerConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        async_workers: 1,
        ..config
    };
    Fixture {
        state: ServerState::new(config, core).unwrap(),
        _dir: dir,
    }
}

fn fixture() -> Fixture {
    fixture_with(ServerConfig {
        auth: quiver_server::auth::AuthConfig::disabled(),
        ..ServerConfig::default()
    })
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
    fn ok(&self, method: Method, target: &str, body: Option<Value>) -> Value {
        let r = self.call(method, target, body);
        assert_eq!(r.status.as_u16(), 200, "{r:?}");
        r.body_json().unwrap_or(Value::Null)
    }

    fn metrics(&self, target: &str) -> String {
        let r = self.call(Method::GET, target, None);
        assert_eq!(r.status.as_u16(), 200, "{r:?}");
        assert!(r.content_type.as_ref().is_some_and(|ct| ct
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")));
        String::from_utf8(r.body.to_vec()).unwrap()
    }
}

/// The samples of a page by series name (with labels), after checking that every metric
/// has one HELP and one TYPE line before its samples.
fn samples(page: &str) -> BTreeMap<String, f64> {
    let mut typed: BTreeMap<String, String> = BTreeMap::new();
    let mut helped = BTreeSet::new();
    let mut out = BTreeMap::new();
    for line in page.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().unwrap();
            assert!(helped.insert(name.to_string()), "HELP twice for {name}");
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(helped.contains(name), "TYPE before HELP for {name}");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            assert!(typed.insert(name.into(), kind.into()).is_none());
        } else {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let family = series.split('{').next().unwrap();
            let base = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| {
                    family
                        .strip_suffix(s)
                        .filter(|b| typed.get(*b).is_some_and(|k| k == "histogram"))
                })
                .unwrap_or(family);
            assert!(typed.contains_key(base), "sample without TYPE: {line}");
            let value = if value == "+Inf" {
                f64::INFINITY
            } else {
                value.parse().unwrap()
            };
            out.insert(series.to_string(), value);
        }
    }
    out
}

#[test]
fn metrics_page_is_well_formed_and_counts_queries_and_transactions() {
    let f = fixture();
    let before = samples(&f.metrics("/_admin/metrics/v2"));
    for name in [
        "arangodb_http_request_statistics_total_requests_total",
        "arangodb_client_connection_statistics_request_time_count",
        "arangodb_aql_query_time_bucket{le=\"+Inf\"}",
        "arangodb_process_statistics_resident_set_size",
        "arangodb_server_statistics_cpu_cores",
        "quiver_group_commit_fsync_time_count",
        "quiver_index_memory_bytes",
    ] {
        assert!(before.contains_key(name), "{name} missing");
    }
    f.ok(Method::POST, "/_api/collection", Some(json!({"name": "c"})));
    let r = f.call(
        Method::POST,
        "/_api/cursor",
        Some(json!({"query": "FOR i IN 1..3 INSERT {i} INTO c"})),
    );
    assert_eq!(r.status.as_u16(), 201, "{r:?}");
    let r = f.call(
        Method::POST,
        "/_api/document/c?waitForSync=true",
        Some(json!([{"a": 1}, {"a": 2}])),
    );
    assert_eq!(r.status.as_u16(), 201, "{r:?}");
    let after = samples(&f.metrics("/_admin/metrics"));
    let grew = |name: &str| after[name] > before[name];
    assert!(grew("arangodb_aql_all_query_total"));
    assert!(grew("arangodb_aql_query_time_count"));
    assert!(grew("arangodb_transactions_started_total"));
    assert!(grew("arangodb_transactions_committed_total"));
    assert!(grew("quiver_wal_bytes_written_total"));
    assert!(grew("quiver_group_commit_batches_total"));
    assert!(grew("quiver_group_commit_waits_total"));
    assert!(grew("quiver_index_memory_bytes"));
    assert_eq!(
        after["arangodb_aql_query_time_count"],
        after["arangodb_aql_query_time_bucket{le=\"+Inf\"}"]
    );
    // Turned off, the API is not there (as ArangoDB with --server.export-metrics-api false).
    let off = fixture_with(ServerConfig {
        auth: quiver_server::auth::AuthConfig::disabled(),
        export_metrics_api: false,
        ..ServerConfig::default()
    });
    assert_eq!(
        off.call(Method::GET, "/_admin/metrics", None)
            .status
            .as_u16(),
        404
    );
    assert_eq!(
        f.call(Method::POST, "/_admin/metrics", None)
            .status
            .as_u16(),
        405
    );
}

#[test]
fn statistics_and_description_have_arangodb_groups() {
    let f = fixture();
    let s = f.ok(Method::GET, "/_admin/statistics", None);
    assert_eq!(s["enabled"], true);
    for group in ["system", "client", "http", "server"] {
        assert!(s[group].is_object(), "{group} missing: {s}");
    }
    assert!(s["system"]["residentSize"].as_u64().unwrap() > 0);
    let request_time = &s["client"]["requestTime"];
    let d = f.ok(Method::GET, "/_admin/statistics-description", None);
    let cuts = d["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["identifier"] == "requestTime")
        .unwrap()["cuts"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(request_time["counts"].as_array().unwrap().len(), cuts + 1);
    let groups: Vec<&str> = d["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["group"].as_str().unwrap())
        .collect();
    assert_eq!(groups, ["system", "client", "http", "server"]);
    // Every figure the description names is in the statistics.
    for figure in d["figures"].as_array().unwrap() {
        let (g, id) = (
            figure["group"].as_str().unwrap(),
            figure["identifier"].as_str().unwrap(),
        );
        assert!(!s[g][id].is_null(), "{g}.{id} described but missing");
    }
    let v = f.ok(Method::GET, "/_admin/database/target-version", None);
    assert_eq!(v["version"], "31204");
}

#[test]
fn log_levels_change_at_run_time_and_entries_are_filtered() {
    let f = fixture();
    let levels = f.ok(Method::GET, "/_admin/log/level", None);
    assert_eq!(levels["general"], "INFO");
    assert_eq!(levels["requests"], "INFO");
    let changed = f.ok(
        Method::PUT,
        "/_admin/log/level",
        Some(json!({"requests": "debug", "nosuchtopic": "trace"})),
    );
    assert_eq!(changed["requests"], "DEBUG");
    assert!(changed.get("nosuchtopic").is_none());
    assert_eq!(
        f.ok(Method::PUT, "/_admin/log/level", Some(json!("warning")))["general"],
        "WARNING"
    );
    assert_eq!(
        f.ok(
            Method::PUT,
            "/_admin/log/level",
            Some(json!({"all": "error"}))
        )["aql"],
        "ERROR"
    );
    let bad = f.call(
        Method::PUT,
        "/_admin/log/level",
        Some(json!({"aql": "loud"})),
    );
    assert_eq!(bad.status.as_u16(), 400);
    assert_eq!(bad.body_json().unwrap()["errorNum"], 400);
    let with = f.ok(Method::GET, "/_admin/log/level?withAppenders=true", None);
    assert_eq!(with["global"]["aql"], "ERROR");
    assert_eq!(
        f.ok(Method::DELETE, "/_admin/log/level", None)["aql"],
        "INFO"
    );

    let ring = f.state.config.log.ring();
    ring.push("general", LogLevel::Info, "first message".into());
    ring.push("queries", LogLevel::Warning, "slow query: 'FOR x'".into());
    ring.push("requests", LogLevel::Debug, "[1] GET /".into());
    let all = f.ok(Method::GET, "/_admin/log/entries", None);
    // Up to info by default: the debug entry is left out.
    assert_eq!(all["total"], 2);
    assert_eq!(all["messages"][0]["message"], "first message");
    assert_eq!(all["messages"][1]["level"], "WARNING");
    assert_eq!(all["messages"][1]["topic"], "queries");
    let debug = f.ok(
        Method::GET,
        "/_admin/log/entries?upto=4&sort=desc&size=1",
        None,
    );
    assert_eq!(debug["total"], 3);
    assert_eq!(debug["messages"].as_array().unwrap().len(), 1);
    assert_eq!(debug["messages"][0]["level"], "DEBUG");
    let found = f.ok(
        Method::GET,
        "/_admin/log/entries?level=warning&search=SLOW",
        None,
    );
    assert_eq!(found["total"], 1);
    let paged = f.ok(
        Method::GET,
        "/_admin/log/entries?upto=trace&start=2&offset=1",
        None,
    );
    assert_eq!(paged["total"], 2);
    assert_eq!(paged["messages"][0]["id"], 3);
    let legacy = f.ok(Method::GET, "/_admin/log?upto=warning", None);
    assert_eq!(legacy["totalAmount"], 1);
    assert_eq!(legacy["level"][0], 2);
    assert_eq!(
        f.call(Method::GET, "/_admin/log/entries?upto=loud", None)
            .status
            .as_u16(),
        400
    );
    assert_eq!(
        f.call(Method::GET, "/_admin/log/entries?upto=1&level=info", None)
            .status
            .as_u16(),
        400
    );
}

#[test]
fn options_need_a_superuser_and_leave_out_secrets() {
    let options = StartupOptions::new([
        (
            "server.endpoint".to_string(),
            json!(["tcp://127.0.0.1:8529"]),
            json!({"section": "server"}),
        ),
        (
            "server.jwt-secret".to_string(),
            json!("hush"),
            json!({"section": "server"}),
        ),
    ]);
    let f = fixture_with(ServerConfig {
        auth: quiver_server::auth::AuthConfig::disabled(),
        startup_options: Arc::new(options),
        log: Arc::new(LogControl::detached(TopicLevels::all(LogLevel::Warning))),
        ..ServerConfig::default()
    });
    let v = f.ok(Method::GET, "/_admin/options", None);
    assert_eq!(v["server.endpoint"][0], "tcp://127.0.0.1:8529");
    assert!(v.get("server.jwt-secret").is_none());
    let d = f.ok(Method::GET, "/_admin/options-description", None);
    assert_eq!(d["server.endpoint"]["section"], "server");
    assert!(d.get("server.jwt-secret").is_none());
    assert_eq!(
        f.ok(Method::GET, "/_admin/log/level", None)["general"],
        "WARNING"
    );
    // With authentication on, root's password is not enough: a superuser JWT is.
    let authed = fixture_with(ServerConfig::default());
    let r = handle(
        &authed.state,
        Request::build(Method::GET, "/_admin/options")
            .with_header("authorization", "Basic cm9vdDo="),
    );
    assert_eq!(r.status.as_u16(), 403, "{r:?}");
}
