//! What `POST /_api/explain` and `POST /_api/query` (parse) find out about a query, as plain
//! data: the HTTP layer writes it as the response body, with the envelope (`error`, `code`)
//! and the member order ArangoDB uses.

use serde_json::Value;

/// The plan of an explained query and how it was made.
#[derive(Clone, Debug)]
pub struct ExplainResult {
    /// The plan as JSON (ArangoDB's plan description).
    pub plan: Value,
    /// `allPlans` was asked for: the plan is listed as the only one of `plans`.
    pub all_plans: bool,
    /// Whether the query's results may be kept in the query results cache.
    pub cacheable: bool,
    /// The plan cache entry's key when `usePlanCache` was asked for and the plan came from
    /// (or went into) the plan cache.
    pub plan_cache_key: Option<u64>,
    pub stats: ExplainStats,
}

/// The optimizer's figures of an explained query.
#[derive(Clone, Debug)]
pub struct ExplainStats {
    pub rules_executed: usize,
    pub rules_skipped: usize,
    pub plans_created: usize,
    /// Seconds spent, never 0.
    pub execution_time: f64,
    /// Seconds each optimizer rule took, in the order they ran (with profile level 2).
    pub rule_seconds: Option<Vec<(String, f64)>>,
}

/// A query parsed without running it.
#[derive(Clone, Debug)]
pub struct ParseResult {
    /// The collections the query names.
    pub collections: Vec<String>,
    /// The names of its bind parameters.
    pub bind_vars: Vec<String>,
    /// Its abstract syntax tree as JSON.
    pub ast: Value,
}
