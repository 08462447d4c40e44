//! Reads the bodies of the AQL endpoints into the query service's typed requests, with
//! ArangoDB's errors for bad input: `POST /_api/cursor` (query, `bindVars`, `batchSize`,
//! `ttl`, `count`, `memoryLimit`, `cache` and `options`), `POST /_api/explain`,
//! `POST /_api/query`, `PUT /_api/query/properties` and `PUT /_api/query-cache/properties`.

use quiver_aql::results_cache::{CacheMode, CacheUpdate};
use quiver_aql::{CursorRequest, ExplainRequest, PropertiesUpdate};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{Map, Value};

/// Batch size limit so a client cannot ask for one unbounded batch of a streaming query.
const MAX_BATCH_SIZE: u64 = 1_000_000;

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message)
}

fn as_bool(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => s == "true" || s == "1",
        _ => false,
    }
}

fn as_f64(v: Option<&Value>) -> Option<f64> {
    match v {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    }
}

/// The query text of a cursor, explain or parse body: 1502 when missing or empty, 600 for a
/// body that is not an object (or an empty one).
pub fn query_text(body: &Value) -> Result<String> {
    let Value::Object(obj) = body else {
        if body.is_null() {
            return Err(Error::with_message(ErrorCode::QueryEmpty, "query is empty"));
        }
        return Err(Error::new(ErrorCode::HttpCorruptedJson));
    };
    match obj.get("query") {
        None if obj.is_empty() => Err(Error::new(ErrorCode::HttpCorruptedJson)),
        None | Some(Value::Null) => {
            Err(Error::with_message(ErrorCode::QueryEmpty, "query is empty"))
        }
        Some(Value::String(s)) if s.is_empty() => {
            Err(Error::with_message(ErrorCode::QueryEmpty, "query is empty"))
        }
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(Error::with_message(
            ErrorCode::QueryEmpty,
            "expecting non-empty string for 'query'",
        )),
    }
}

fn bind_vars_of(body: &Value) -> Result<Map<String, Value>> {
    match body.get("bindVars") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(Error::with_message(
            ErrorCode::QueryBindParametersInvalid,
            "invalid structure of bind parameters",
        )),
    }
}

fn rules_of(options: Option<&Value>) -> Vec<String> {
    options
        .and_then(|o| o.get("optimizer"))
        .and_then(|o| o.get("rules"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `profile`: `true` is level 1, a number its level (at most 2), anything else 0.
fn profile_level(v: Option<&Value>) -> u8 {
    match v {
        Some(Value::Bool(true)) => 1,
        Some(Value::Number(n)) => n.as_u64().unwrap_or(0).min(2) as u8,
        _ => 0,
    }
}

/// `POST /_api/cursor`: the query, bind parameters and options of the body.
pub fn cursor_request(body: &Value) -> Result<CursorRequest> {
    let query = query_text(body)?;
    let bind_vars = bind_vars_of(body)?;
    let options = body.get("options");
    let opt = |name: &str| options.and_then(|o| o.get(name)).or_else(|| body.get(name));
    let batch_size = match body.get("batchSize") {
        None | Some(Value::Null) => CursorRequest::DEFAULT_BATCH_SIZE,
        Some(v) => match as_f64(Some(v)) {
            Some(f) if f >= 1.0 => (f as u64).min(MAX_BATCH_SIZE) as usize,
            _ => return Err(bad("expecting non-zero value for 'batchSize'")),
        },
    };
    let ttl = match as_f64(body.get("ttl")) {
        Some(t) if t > 0.0 => t.min(86_400.0 * 30.0),
        _ => CursorRequest::DEFAULT_TTL,
    };
    let profile = profile_level(opt("profile"));
    Ok(CursorRequest {
        query,
        bind_vars,
        count: as_bool(body.get("count")),
        batch_size,
        ttl,
        memory_limit: as_f64(body.get("memoryLimit"))
            .or_else(|| as_f64(opt("memoryLimit")))
            .unwrap_or(0.0)
            .max(0.0) as u64,
        full_count: as_bool(opt("fullCount")),
        stream: as_bool(opt("stream")),
        profile,
        max_runtime: as_f64(opt("maxRuntime")).unwrap_or(0.0).max(0.0),
        rules: rules_of(options),
        fail_on_warning: as_bool(opt("failOnWarning")),
        max_warning_count: as_f64(opt("maxWarningCount"))
            .map_or(CursorRequest::DEFAULT_MAX_WARNING_COUNT, |f| {
                f.max(0.0) as usize
            })
            .min(100_000),
        allow_retry: as_bool(opt("allowRetry")),
        cache: cache_option(body, options),
        use_plan_cache: as_bool(opt("usePlanCache")),
        access: None,
        user: None,
        handoff: None,
    })
}

/// `cache`, as ArangoDB reads it: a boolean `options.cache`, else the top-level `cache`
/// (where anything but a boolean means false); `None` when neither is given.
fn cache_option(body: &Value, options: Option<&Value>) -> Option<bool> {
    if let Some(Value::Bool(b)) = options.and_then(|o| o.get("cache")) {
        return Some(*b);
    }
    body.get("cache").map(|v| v.as_bool().unwrap_or(false))
}

/// `PUT /_api/query-cache/properties`: members of the wrong type are ignored and an unknown
/// mode is `off`, as in ArangoDB; a limit that is not positive is refused.
pub fn results_cache_update(body: &Value) -> Result<CacheUpdate> {
    let Value::Object(m) = body else {
        return Err(Error::with_message(
            ErrorCode::HttpBadParameter,
            "expecting a JSON-Object body",
        ));
    };
    let limit = |name: &str| -> Result<Option<u64>> {
        match m.get(name).and_then(Value::as_f64) {
            None => Ok(None),
            Some(v) if v >= 1.0 => Ok(Some(v.min(u64::MAX as f64) as u64)),
            Some(_) => Err(bad(format!("invalid value for {name}"))),
        }
    };
    Ok(CacheUpdate {
        mode: m.get("mode").and_then(Value::as_str).map(CacheMode::parse),
        max_results: limit("maxResults")?,
        max_results_size: limit("maxResultsSize")?,
        max_entry_size: limit("maxEntrySize")?,
        include_system: m.get("includeSystem").and_then(Value::as_bool),
    })
}

/// `POST /_api/explain`: the query, bind parameters, `optimizer.rules` and `allPlans`.
pub fn explain_request(body: &Value) -> Result<ExplainRequest> {
    let query = query_text(body)?;
    let bind_vars = bind_vars_of(body)?;
    let options = body.get("options");
    Ok(ExplainRequest {
        query,
        bind_vars,
        rules: rules_of(options),
        all_plans: as_bool(options.and_then(|o| o.get("allPlans"))),
        profile: profile_level(options.and_then(|o| o.get("profile"))),
        use_plan_cache: as_bool(options.and_then(|o| o.get("usePlanCache"))),
    })
}

/// `PUT /_api/query/properties`, read as ArangoDB reads it: 400 for a body that is not an
/// object; a member of the wrong type (`null` among them, which the Go driver sends for every
/// member it was not given) is ignored like an unknown one. The flags take booleans,
/// `maxSlowQueries` and `maxQueryStringLength` non-negative integers, the thresholds numbers
/// (a negative threshold means 0: every query is slow).
pub fn properties_update(body: &Value) -> Result<PropertiesUpdate> {
    let Value::Object(m) = body else {
        return Err(Error::with_message(
            ErrorCode::HttpBadParameter,
            "expecting a JSON object as body",
        ));
    };
    let flag = |k: &str| m.get(k).and_then(Value::as_bool);
    let count = |k: &str| m.get(k).and_then(Value::as_u64);
    let seconds = |k: &str| m.get(k).and_then(Value::as_f64).map(|f| f.max(0.0));
    Ok(PropertiesUpdate {
        enabled: flag("enabled"),
        track_slow_queries: flag("trackSlowQueries"),
        track_bind_vars: flag("trackBindVars"),
        max_slow_queries: count("maxSlowQueries"),
        slow_query_threshold: seconds("slowQueryThreshold"),
        slow_streaming_query_threshold: seconds("slowStreamingQueryThreshold"),
        max_query_string_length: count("maxQueryStringLength"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error(body: Value) -> (ErrorCode, String) {
        let e = cursor_request(&body).unwrap_err();
        (e.code, e.message)
    }

    #[test]
    fn cursor_body_errors() {
        let empty = (ErrorCode::QueryEmpty, "query is empty".to_string());
        assert_eq!(error(Value::Null), empty);
        assert_eq!(error(json!({"query": ""})), empty);
        assert_eq!(error(json!({"query": null})), empty);
        assert_eq!(error(json!({"count": true})), empty);
        assert_eq!(
            error(json!({"query": 5})),
            (
                ErrorCode::QueryEmpty,
                "expecting non-empty string for 'query'".to_string()
            )
        );
        assert_eq!(error(json!({})).0, ErrorCode::HttpCorruptedJson);
        assert_eq!(error(json!([1])).0, ErrorCode::HttpCorruptedJson);
        for batch in [json!(0), json!(0.5), json!(-3), json!("x"), json!(true)] {
            assert_eq!(
                error(json!({"query": "RETURN 1", "batchSize": batch})),
                (
                    ErrorCode::BadParameter,
                    "expecting non-zero value for 'batchSize'".to_string()
                )
            );
        }
        assert_eq!(
            error(json!({"query": "RETURN 1", "bindVars": [1]})),
            (
                ErrorCode::QueryBindParametersInvalid,
                "invalid structure of bind parameters".to_string()
            )
        );
        // The query is checked first.
        assert_eq!(error(json!({"query": "", "batchSize": 0})), empty);
    }

    #[test]
    fn cursor_defaults_and_bounds() {
        let r = cursor_request(&json!({"query": "RETURN 1", "bindVars": null})).unwrap();
        assert_eq!(r.query, "RETURN 1");
        assert!(r.bind_vars.is_empty());
        assert_eq!(r.batch_size, CursorRequest::DEFAULT_BATCH_SIZE);
        assert_eq!(r.ttl, CursorRequest::DEFAULT_TTL);
        assert_eq!(
            r.max_warning_count,
            CursorRequest::DEFAULT_MAX_WARNING_COUNT
        );
        assert_eq!(
            (r.count, r.stream, r.full_count, r.profile),
            (false, false, false, 0)
        );
        assert_eq!((r.memory_limit, r.max_runtime), (0, 0.0));
        let r = cursor_request(&json!({
            "query": "RETURN @x",
            "bindVars": {"x": 1},
            "batchSize": 5e9,
            "ttl": 1e12,
            "count": "true",
            "options": {"profile": 7, "maxWarningCount": 1e9, "maxRuntime": -2}
        }))
        .unwrap();
        assert_eq!(r.bind_vars["x"], 1);
        assert_eq!(r.batch_size, MAX_BATCH_SIZE as usize);
        assert_eq!(r.ttl, 86_400.0 * 30.0);
        assert!(r.count);
        assert_eq!(r.profile, 2);
        assert_eq!(r.max_warning_count, 100_000);
        assert_eq!(r.max_runtime, 0.0);
        let r = cursor_request(&json!({"query": "RETURN 1", "ttl": -1, "batchSize": "7"})).unwrap();
        assert_eq!((r.ttl, r.batch_size), (CursorRequest::DEFAULT_TTL, 7));
    }

    #[test]
    fn cursor_options_inside_options_or_top_level() {
        let r = cursor_request(&json!({
            "query": "RETURN 1",
            "memoryLimit": 100,
            "options": {"fullCount": true, "stream": 1, "profile": true, "memoryLimit": 5,
                        "maxRuntime": 2.5, "failOnWarning": true, "allowRetry": true,
                        "optimizer": {"rules": ["-all", "+use-indexes", 3]}}
        }))
        .unwrap();
        assert!(r.full_count && r.stream && r.fail_on_warning && r.allow_retry);
        assert_eq!(r.profile, 1);
        // The top-level memoryLimit wins over the option.
        assert_eq!(r.memory_limit, 100);
        assert_eq!(r.max_runtime, 2.5);
        assert_eq!(r.rules, vec!["-all", "+use-indexes"]);
        let r = cursor_request(
            &json!({"query": "RETURN 1", "stream": true, "fullCount": true,
                                        "options": {"memoryLimit": 5}}),
        )
        .unwrap();
        assert!(r.stream && r.full_count);
        assert_eq!(r.memory_limit, 5);
    }

    #[test]
    fn explain_and_parse_bodies() {
        let r = explain_request(&json!({"query": "RETURN @a", "bindVars": {"a": 1},
            "options": {"allPlans": true, "optimizer": {"rules": ["-all"]}}}))
        .unwrap();
        assert_eq!((r.query.as_str(), r.all_plans), ("RETURN @a", true));
        assert_eq!(r.rules, vec!["-all"]);
        assert_eq!(r.bind_vars["a"], 1);
        assert!(
            !explain_request(&json!({"query": "RETURN 1"}))
                .unwrap()
                .all_plans
        );
        assert_eq!(
            explain_request(&json!({"query": "RETURN 1", "bindVars": 1}))
                .unwrap_err()
                .code,
            ErrorCode::QueryBindParametersInvalid
        );
        assert_eq!(query_text(&json!({"query": "FOR"})).unwrap(), "FOR");
        assert_eq!(
            query_text(&Value::Null).unwrap_err().code,
            ErrorCode::QueryEmpty
        );
    }

    #[test]
    fn properties_bodies() {
        let u = properties_update(&json!({"enabled": false, "maxSlowQueries": 3,
            "slowQueryThreshold": 0.5, "trackBindVars": true, "other": "ignored"}))
        .unwrap();
        assert_eq!(
            u,
            PropertiesUpdate {
                enabled: Some(false),
                track_bind_vars: Some(true),
                max_slow_queries: Some(3),
                slow_query_threshold: Some(0.5),
                ..PropertiesUpdate::default()
            }
        );
        // Members of the wrong type are ignored, as ArangoDB ignores them: null (what the Go
        // driver sends for members it was not given), strings, fractions or negative counts.
        let u = properties_update(&json!({"enabled": null, "trackSlowQueries": 1,
            "maxSlowQueries": "x", "maxQueryStringLength": 4.5, "slowQueryThreshold": "fast",
            "slowStreamingQueryThreshold": 2}))
        .unwrap();
        assert_eq!(
            u,
            PropertiesUpdate {
                slow_streaming_query_threshold: Some(2.0),
                ..PropertiesUpdate::default()
            }
        );
        assert_eq!(
            properties_update(&json!({"maxSlowQueries": -1})).unwrap(),
            PropertiesUpdate::default()
        );
        let e = properties_update(&json!([1])).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                ErrorCode::HttpBadParameter,
                "expecting a JSON object as body"
            )
        );
        // A negative threshold is 0, as ArangoDB reads it.
        let update = properties_update(&json!({"slowQueryThreshold": -1})).unwrap();
        assert_eq!(update.slow_query_threshold, Some(0.0));
    }
}
