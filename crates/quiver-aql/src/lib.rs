//! quiver-aql: ArangoDB's query language AQL — lexer, parser, planner with optimizer, a
//! streaming executor — and the JSON-in/JSON-out cursor and query-management service the HTTP
//! layer calls (`POST /_api/cursor`, `/_api/explain`, `/_api/query/...`).
//!
//! The function library and value semantics live in [`value`] and [`functions`]; data access
//! goes through the narrow [`source::DataSource`] trait so the engine can be unit-tested over an
//! in-memory store ([`source::memory`]) and run in production over quiver-core.

pub mod functions;
pub mod value;

pub mod ast;
pub mod exec;
pub mod explain;
pub mod lexer;
pub mod optimizer;
pub mod parser;
pub mod plan;
pub mod service;
pub mod source;

pub use service::{QueryService, ServiceReply};
pub use source::DataSource;

/// AQL values are plain JSON values (with preserved object key order).
pub type Value = serde_json::Value;
