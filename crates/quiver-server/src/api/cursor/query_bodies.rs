//! The JSON bodies of the AQL endpoints besides the cursor's, written from the query
//! service's typed results: `/_api/explain` ([`ExplainResult`]), `/_api/query` (parse,
//! [`ParseResult`]), `/_api/query/properties` ([`QueryProperties`]), `/_api/query/rules`,
//! `/_api/query-plan-cache` ([`PlanEntry`]),
//! `/_api/query-cache/properties` and the bare acknowledgement of a clear or kill. The
//! envelope members (`error`, `code`) and ArangoDB's member order are decided here.

use quiver_aql::plan_cache::PlanEntry;
use quiver_aql::results_cache::CacheProperties;
use quiver_aql::service::{ExplainResult, ParseResult, QueryProperties};
use quiver_aql::value::number;
use serde_json::{json, Map, Value};

/// `{"error": false, "code": 200}`: a clear or kill that succeeded.
pub(super) fn acknowledged() -> Value {
    json!({"error": false, "code": 200})
}

/// `POST /_api/explain`.
pub(super) fn explain_body(explained: ExplainResult) -> Value {
    let s = &explained.stats;
    let mut stats = json!({
        "rulesExecuted": s.rules_executed,
        "rulesSkipped": s.rules_skipped,
        "plansCreated": s.plans_created,
        "peakMemoryUsage": 0,
        "executionTime": s.execution_time,
    });
    if let Some(rules) = &s.rule_seconds {
        stats["rules"] = Value::Object(
            rules
                .iter()
                .map(|(name, secs)| (name.clone(), json!(secs)))
                .collect(),
        );
    }
    let mut out = json!({"warnings": [], "stats": stats, "error": false, "code": 200});
    if let Some(key) = explained.plan_cache_key {
        out["planCacheKey"] = json!(key.to_string());
    }
    if explained.all_plans {
        out["plans"] = json!([explained.plan]);
    } else {
        out["plan"] = explained.plan;
        out["cacheable"] = json!(explained.cacheable);
    }
    out
}

/// `POST /_api/query`.
pub(super) fn parse_body(parsed: ParseResult) -> Value {
    json!({
        "error": false,
        "code": 200,
        "parsed": true,
        "collections": parsed.collections,
        "bindVars": parsed.bind_vars,
        "ast": parsed.ast,
    })
}

/// `GET` and `PUT /_api/query/properties`.
pub(super) fn properties_body(p: &QueryProperties) -> Value {
    json!({
        "error": false,
        "code": 200,
        "enabled": p.enabled,
        "trackSlowQueries": p.track_slow_queries,
        "trackBindVars": p.track_bind_vars,
        "maxSlowQueries": p.max_slow_queries,
        "slowQueryThreshold": number(p.slow_query_threshold),
        "slowStreamingQueryThreshold": number(p.slow_streaming_query_threshold),
        "maxQueryStringLength": p.max_query_string_length,
    })
}

/// `GET /_api/query/rules`: every rule with ArangoDB's flags for a rule that can be
/// disabled.
pub(super) fn rules_body(rules: &[&str]) -> Value {
    rules
        .iter()
        .map(|r| {
            json!({"name": r, "flags": {"hidden": false, "clusterOnly": false, "canBeDisabled": true,
                "canCreateAdditionalPlans": false, "disabledByDefault": false, "enterpriseOnly": false}})
        })
        .collect()
}

/// `GET` and `PUT /_api/query-cache/properties`.
pub(super) fn results_cache_properties_body(p: &CacheProperties) -> Value {
    p.json()
}

/// `GET /_api/query-plan-cache`: one object per cached plan, with only its collection bind
/// parameters (as ArangoDB lists them).
pub(super) fn plan_cache_body(entries: &[PlanEntry]) -> Value {
    entries
        .iter()
        .map(|e| {
            let binds: Map<String, Value> = serde_json::from_str::<Map<String, Value>>(&e.binds)
                .unwrap_or_default()
                .into_iter()
                .filter(|(name, _)| name.starts_with('@'))
                .collect();
            json!({
                "hash": e.hash.to_string(),
                "query": e.query,
                "queryHash": e.query_hash,
                "bindVars": binds,
                "fullCount": e.full_count,
                "dataSources": e.data_sources,
                "created": e.created,
                "hits": e.hits,
                "memoryUsage": e.memory,
            })
        })
        .collect()
}
