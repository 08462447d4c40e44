//! What the HTTP layer hands the query service after reading a request body: typed options,
//! already validated (the body parsing and its error messages are the server's, in
//! `quiver-server/src/api/aql_request.rs`).

use serde_json::{Map, Value};

/// Options of one `POST /_api/cursor`.
#[derive(Clone, Debug)]
pub struct CursorRequest {
    /// The query text (non-empty).
    pub query: String,
    pub bind_vars: Map<String, Value>,
    /// Report the number of results (`count`).
    pub count: bool,
    /// Values per batch, at least 1.
    pub batch_size: usize,
    /// Seconds a cursor lives after its last use.
    pub ttl: f64,
    /// Bytes the query may hold (0: the default cap).
    pub memory_limit: u64,
    pub full_count: bool,
    pub stream: bool,
    /// 0 off, 1 timings and plan, 2 also per-node counters.
    pub profile: u8,
    /// Seconds before the query is killed (0: no limit).
    pub max_runtime: f64,
    /// `optimizer.rules`: `-all`, `+all`, `-name`, `+name`.
    pub rules: Vec<String>,
    pub fail_on_warning: bool,
    pub max_warning_count: usize,
    pub allow_retry: bool,
    /// `cache`: whether the query results cache is asked for (`None`: as the cache's mode
    /// says).
    pub cache: Option<bool>,
    /// `usePlanCache`: the query must be eligible for the plan cache (error 1584 otherwise)
    /// and says `planCacheKey` when its plan came from it.
    pub use_plan_cache: bool,
    /// Checked before every collection the query reads or writes while it runs (the
    /// caller's rights); `None`: no check (the superuser, authentication off).
    pub access: Option<crate::source::checked::CollectionAccess>,
    /// The user asking (`None`: the superuser, or authentication is off): a cursor left
    /// open counts against this user's caps as well as the server's ([`crate::held`]).
    pub user: Option<String>,
    /// Set when the caller runs the query on a thread it shares (see [`crate::handoff`]):
    /// run once the query has taken longer than expected.
    pub handoff: Option<std::sync::Arc<crate::handoff::Handoff>>,
}

impl CursorRequest {
    pub const DEFAULT_BATCH_SIZE: usize = 1000;
    pub const DEFAULT_TTL: f64 = 30.0;
    pub const DEFAULT_MAX_WARNING_COUNT: usize = 10;

    /// A request for `query` with ArangoDB's defaults for every option.
    pub fn new(query: impl Into<String>) -> CursorRequest {
        CursorRequest {
            query: query.into(),
            bind_vars: Map::new(),
            count: false,
            batch_size: Self::DEFAULT_BATCH_SIZE,
            ttl: Self::DEFAULT_TTL,
            memory_limit: 0,
            full_count: false,
            stream: false,
            profile: 0,
            max_runtime: 0.0,
            rules: Vec::new(),
            fail_on_warning: false,
            max_warning_count: Self::DEFAULT_MAX_WARNING_COUNT,
            allow_retry: false,
            cache: None,
            use_plan_cache: false,
            access: None,
            user: None,
            handoff: None,
        }
    }
}

/// Options of one `POST /_api/explain`.
#[derive(Clone, Debug)]
pub struct ExplainRequest {
    pub query: String,
    pub bind_vars: Map<String, Value>,
    pub rules: Vec<String>,
    /// Answer `plans: [plan]` instead of `plan` (`options.allPlans`).
    pub all_plans: bool,
    /// `options.profile`: at 2, `stats.rules` gives the seconds spent in each optimizer rule.
    pub profile: u8,
    /// `options.usePlanCache` (see [`CursorRequest::use_plan_cache`]).
    pub use_plan_cache: bool,
}

/// The members of a `PUT /_api/query/properties` body; `None` leaves a property as it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PropertiesUpdate {
    pub enabled: Option<bool>,
    pub track_slow_queries: Option<bool>,
    pub track_bind_vars: Option<bool>,
    pub max_slow_queries: Option<u64>,
    /// Seconds.
    pub slow_query_threshold: Option<f64>,
    /// Seconds.
    pub slow_streaming_query_threshold: Option<f64>,
    pub max_query_string_length: Option<u64>,
}
