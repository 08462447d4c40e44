//! `aql`: a restricted AQL query run for each input, `@param` bound to it; the query's
//! results are the tokens.
//!
//! The AQL engine sits above this crate, so it registers itself as the
//! [`AqlAnalyzerRuntime`] ([`set_aql_runtime`], once per process, before any analyzer is
//! built); without one the type is refused (501/9), as in a process that has no AQL. The
//! runtime checks ArangoDB's restrictions when the analyzer is built (no collections or
//! views, no `DOCUMENT()`, no traversals, no functions that use analyzers or data, no
//! user-defined functions) and runs the query for every input.
//!
//! `returnType` converts every result as AQL's `TO_STRING()`, `TO_NUMBER()` or `TO_BOOL()`
//! would; number and bool tokens travel as their canonical text and are indexed as numbers
//! and booleans ([`ReturnType`]).

use std::sync::{Arc, OnceLock};

use quiver_errors::Result;
use serde_json::{json, Value};

use super::props::{bool_or, choice, object, required_string, unsigned};
use super::{Built, Rejection, ReturnType, Token, TokenStream};

/// The largest `memoryLimit` (ArangoDB: 32 MiB).
const MEMORY_LIMIT_MAX: u64 = 32 * 1024 * 1024;
/// The default `memoryLimit` (1 MiB).
const MEMORY_LIMIT_DEFAULT: u64 = 1024 * 1024;
/// The largest `batchSize`.
const BATCH_SIZE_MAX: u64 = 1000;

/// What runs the queries of `aql` analyzers (the AQL engine).
pub trait AqlAnalyzerRuntime: Send + Sync {
    /// Checks that `query` may run inside an analyzer: whether it uses `@param`, or the
    /// reason it may not run.
    fn check(&self, query: &str) -> std::result::Result<bool, String>;

    /// Runs `query` with `@param` bound to `param` (`None`: a query that does not use it)
    /// under `memory_limit` bytes: its results in order, `None` for `null`, every other
    /// result converted to `return_type` as AQL's `TO_STRING()`, `TO_NUMBER()` or `TO_BOOL()`
    /// gives it and spelled as [`ReturnType`] spells tokens.
    fn run(
        &self,
        query: &str,
        param: Option<&str>,
        memory_limit: u64,
        return_type: ReturnType,
    ) -> Result<Vec<Option<String>>>;
}

static RUNTIME: OnceLock<Arc<dyn AqlAnalyzerRuntime>> = OnceLock::new();

/// Registers the process's AQL runtime for `aql` analyzers; a second registration is
/// ignored (the runtime holds no per-database state, so the first serves every caller).
pub fn set_aql_runtime(runtime: Arc<dyn AqlAnalyzerRuntime>) {
    let _ = RUNTIME.set(runtime);
}

/// Whether `aql` analyzers can be built in this process.
pub(crate) fn runtime_registered() -> bool {
    RUNTIME.get().is_some()
}

struct Aql {
    runtime: Arc<dyn AqlAnalyzerRuntime>,
    query: String,
    /// Whether the query uses `@param`.
    binds_param: bool,
    collapse_positions: bool,
    keep_null: bool,
    memory_limit: u64,
    return_type: ReturnType,
}

impl std::fmt::Debug for Aql {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Aql").field("query", &self.query).finish()
    }
}

impl TokenStream for Aql {
    /// Without `strict` (indexing) a query that fails gives no tokens, as ArangoDB indexes
    /// nothing for such a value; `TOKENS()` (strict) reports the error.
    fn analyze(&self, input: &str, strict: bool, out: &mut Vec<Token>) -> Result<()> {
        let param = self.binds_param.then_some(input);
        let results =
            match self
                .runtime
                .run(&self.query, param, self.memory_limit, self.return_type)
            {
                Ok(results) => results,
                Err(e) if strict => return Err(e),
                Err(_) => return Ok(()),
            };
        let mut position = 0;
        for result in results {
            let term = match result {
                Some(term) => term,
                // `keepNull`: null is taken as the empty string, converted to the return type.
                None if self.keep_null => match self.return_type {
                    ReturnType::String => String::new(),
                    ReturnType::Number => ReturnType::text_of_number(0.0),
                    ReturnType::Bool => "false".to_string(),
                },
                None => continue,
            };
            out.push(Token::new(term, position, 0, input.len()));
            if !self.collapse_positions {
                position += 1;
            }
        }
        Ok(())
    }

    fn return_type(&self) -> ReturnType {
        self.return_type
    }
}

/// `{"queryString": string (required), "collapsePositions": false, "keepNull": true,
/// "batchSize": 1..=1000 (1), "memoryLimit": 1..=32 MiB (1 MiB), "returnType": "string" |
/// "number" | "bool" ("string")}`.
pub(crate) fn build(properties: &Value) -> Result<Built, Rejection> {
    let runtime = RUNTIME
        .get()
        .cloned()
        .ok_or_else(|| "no AQL runtime in this process".to_string())?;
    let props = object(properties);
    let query = required_string(props, "queryString")?;
    if query.trim().is_empty() {
        return Err("'queryString' must not be empty".to_string());
    }
    let collapse_positions = bool_or(props, "collapsePositions", false)?;
    let keep_null = bool_or(props, "keepNull", true)?;
    let batch_size = unsigned(props, "batchSize", Some(1), BATCH_SIZE_MAX)?;
    if batch_size == 0 {
        return Err(format!(
            "'batchSize' must be between 1 and {BATCH_SIZE_MAX}"
        ));
    }
    let memory_limit = unsigned(
        props,
        "memoryLimit",
        Some(MEMORY_LIMIT_DEFAULT),
        MEMORY_LIMIT_MAX,
    )?;
    if memory_limit == 0 {
        return Err(format!(
            "'memoryLimit' must be between 1 and {MEMORY_LIMIT_MAX}"
        ));
    }
    let return_type = choice(props, "returnType", &["string", "number", "bool"], "string")?;
    let return_type = ReturnType::from_name(return_type)
        .ok_or_else(|| format!("unknown 'returnType' '{return_type}'"))?;
    let binds_param = runtime.check(query)?;
    Ok(Built {
        stream: Box::new(Aql {
            runtime,
            query: query.to_string(),
            binds_param,
            collapse_positions,
            keep_null,
            memory_limit,
            return_type,
        }),
        properties: json!({
            "queryString": query,
            "collapsePositions": collapse_positions,
            "keepNull": keep_null,
            "batchSize": batch_size,
            "memoryLimit": memory_limit,
            "returnType": return_type.name(),
        }),
    })
}
