//! Typed service requests from the JSON bodies the tests are written in (the bodies a driver
//! would send). Strict on purpose: every member must be one the mapping knows, with the JSON
//! type the HTTP layer documents, so a test cannot pass an option that is silently dropped.
//! The server's own body reading, with its error answers, is tested in quiver-server.
//! The answers come back as the JSON bodies the server writes (`batch_json.rs`).
#![allow(dead_code)] // each test crate uses some of these

mod batch_json;
pub mod geo_places;

pub use batch_json::CursorJson;
use quiver_aql::{CursorRequest, ExplainRequest, PropertiesUpdate};
use serde_json::{Map, Value};

fn members(body: &Value) -> &Map<String, Value> {
    body.as_object()
        .unwrap_or_else(|| panic!("request body must be an object: {body}"))
}

fn text(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("expected a string, got {v}"))
        .to_string()
}

fn flag(v: &Value) -> bool {
    v.as_bool()
        .unwrap_or_else(|| panic!("expected a boolean, got {v}"))
}

fn number(v: &Value) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("expected a number, got {v}"))
}

fn binds(v: &Value) -> Map<String, Value> {
    v.as_object()
        .unwrap_or_else(|| panic!("bindVars must be an object: {v}"))
        .clone()
}

fn rules(v: &Value) -> Vec<String> {
    let rules = &members(v)["rules"];
    rules
        .as_array()
        .unwrap_or_else(|| panic!("optimizer.rules must be an array: {rules}"))
        .iter()
        .map(text)
        .collect()
}

/// `POST /_api/cursor` body → [`CursorRequest`].
pub fn cursor(body: &Value) -> CursorRequest {
    let m = members(body);
    let mut req = CursorRequest::new(text(&m["query"]));
    for (k, v) in m {
        match k.as_str() {
            "query" => {}
            "bindVars" => req.bind_vars = binds(v),
            "batchSize" => req.batch_size = number(v) as usize,
            "count" => req.count = flag(v),
            "ttl" => req.ttl = number(v),
            "memoryLimit" => req.memory_limit = number(v) as u64,
            "options" => {
                for (k, v) in members(v) {
                    match k.as_str() {
                        "fullCount" => req.full_count = flag(v),
                        "stream" => req.stream = flag(v),
                        "profile" => {
                            req.profile = match v {
                                Value::Bool(b) => u8::from(*b),
                                _ => number(v) as u8,
                            }
                        }
                        "maxRuntime" => req.max_runtime = number(v),
                        "memoryLimit" => req.memory_limit = number(v) as u64,
                        "optimizer" => req.rules = rules(v),
                        "failOnWarning" => req.fail_on_warning = flag(v),
                        "maxWarningCount" => req.max_warning_count = number(v) as usize,
                        "allowRetry" => req.allow_retry = flag(v),
                        other => panic!("cursor option '{other}' is not mapped"),
                    }
                }
            }
            other => panic!("cursor body member '{other}' is not mapped"),
        }
    }
    req
}

/// `POST /_api/explain` body → [`ExplainRequest`].
pub fn explain(body: &Value) -> ExplainRequest {
    let m = members(body);
    let mut req = ExplainRequest {
        query: text(&m["query"]),
        bind_vars: Map::new(),
        rules: Vec::new(),
        all_plans: false,
        profile: 0,
        use_plan_cache: false,
    };
    for (k, v) in m {
        match k.as_str() {
            "query" => {}
            "bindVars" => req.bind_vars = binds(v),
            "options" => {
                for (k, v) in members(v) {
                    match k.as_str() {
                        "optimizer" => req.rules = rules(v),
                        "allPlans" => req.all_plans = flag(v),
                        "profile" => req.profile = v.as_u64().unwrap_or(0).min(2) as u8,
                        "fullCount" => {} // not an explain option; golden cases share options
                        other => panic!("explain option '{other}' is not mapped"),
                    }
                }
            }
            other => panic!("explain body member '{other}' is not mapped"),
        }
    }
    req
}

/// `PUT /_api/query/properties` body → [`PropertiesUpdate`].
pub fn properties(body: &Value) -> PropertiesUpdate {
    let mut update = PropertiesUpdate::default();
    for (k, v) in members(body) {
        match k.as_str() {
            "enabled" => update.enabled = Some(flag(v)),
            "trackSlowQueries" => update.track_slow_queries = Some(flag(v)),
            "trackBindVars" => update.track_bind_vars = Some(flag(v)),
            "maxSlowQueries" => update.max_slow_queries = Some(number(v) as u64),
            "slowQueryThreshold" => update.slow_query_threshold = Some(number(v)),
            "slowStreamingQueryThreshold" => {
                update.slow_streaming_query_threshold = Some(number(v))
            }
            "maxQueryStringLength" => update.max_query_string_length = Some(number(v) as u64),
            other => panic!("query property '{other}' is not mapped"),
        }
    }
    update
}
