//! quiver-aql: ArangoDB's query language AQL — lexer, parser, planner with optimizer, a
//! streaming executor — and the cursor and query-management service the HTTP layer calls
//! (`POST /_api/cursor`, `/_api/explain`, `/_api/query/...`) with typed requests; it answers
//! with ArangoDB's JSON response bodies.
//!
//! The function library and value semantics live in [`value`] and [`functions`]; data access
//! goes through the narrow [`source::DataSource`] trait so the engine can be unit-tested over an
//! in-memory store ([`source::memory`]) and run in production over quiver-core.

pub mod functions;
pub mod value;

pub mod ast;
pub mod exec;
pub mod explain;
pub mod expr;
pub mod geo_select;
pub mod handoff;
pub mod held;
pub mod index_select;
pub mod inverted_select;
pub mod lexer;
pub mod limits;
pub mod mdi_select;
pub mod optimizer;
pub mod parser;
pub mod plan;
pub mod plan_cache;
pub mod plan_template;
pub mod query_extra;
pub mod restricted;
pub mod results_cache;
pub mod run_history;
pub mod service;
pub mod source;
pub mod vector_select;

pub use service::{CursorRequest, ExplainRequest, PropertiesUpdate, QueryService};
pub use source::DataSource;

/// Runs `f`, first moving to a fresh stack segment when the current one is nearly used up.
/// The parser, planner, evaluator and executor recurse as deep as the query nests; this keeps
/// deep (but within-limit) queries from overflowing small thread stacks, in debug builds too.
#[inline]
pub(crate) fn deep<R>(f: impl FnOnce() -> R) -> R {
    const RED_ZONE: usize = 256 * 1024;
    const SEGMENT: usize = 4 * 1024 * 1024;
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}

/// AQL values are plain JSON values (with preserved object key order).
pub type Value = serde_json::Value;
