//! Restricted AQL: queries that read no data, run where a query has no database of its own.
//! ArangoDB runs the queries of `aql` analyzers this way: no collections, views or graphs,
//! no data modification, no `DOCUMENT()`, no functions that use analyzers or data, no
//! user-defined functions, and only the bind parameter `@param`.
//!
//! [`RestrictedAql`] checks such a query ([`check_analyzer_query`]) and runs it through a
//! [`QueryService`] over an empty in-memory source, so a query that slipped past the check
//! still finds no data. It is the search crate's [`AqlAnalyzerRuntime`] and the core's
//! [`ComputedValuesEvaluator`] (the same rules with `@doc` as the one bind parameter).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::RwLock;
use quiver_core::ComputedValuesEvaluator;
use quiver_errors::{Error, ErrorCode, Result};
use quiver_search::analyzer::{AqlAnalyzerRuntime, ReturnType};
use serde_json::{Map, Value};

use crate::ast::{Expr, Op, Query};
use crate::service::{CursorRequest, QueryService};
use crate::source::memory::MemorySource;

/// Functions an analyzer's query may not call: they use analyzers, views, data or the
/// server (ArangoDB's list: no analyzers, no data access, only functions a DB-Server could
/// run).
const FORBIDDEN_FUNCTIONS: &[&str] = &[
    "ANALYZER",
    "BOOST",
    "BM25",
    "TFIDF",
    "TOKENS",
    "PHRASE",
    "NGRAM_MATCH",
    "LEVENSHTEIN_MATCH",
    "MIN_MATCH",
    "MINHASH_MATCH",
    "EXISTS",
    "IN_RANGE",
    "LIKE_MATCH",
    "OFFSET_INFO",
    "GEO_IN_RANGE",
    "DOCUMENT",
    "COLLECTIONS",
    "COLLECTION_COUNT",
    "COUNT_DISTINCT_COLLECTION",
    "CURRENT_USER",
    "CURRENT_DATABASE",
    "VERSION",
    "FULLTEXT",
    "NEAR",
    "WITHIN",
    "WITHIN_RECTANGLE",
    "SCHEMA_GET",
    "SCHEMA_VALIDATE",
    "CALL",
    "APPLY",
    "V8",
    "SLEEP",
    "FAIL",
    "ASSERT",
    "WARN",
];

/// The one bind parameter an analyzer's query may use.
pub const ANALYZER_PARAMETER: &str = "param";

/// Whether `query` uses `@param` (`Ok`), or why it may not run inside an `aql` analyzer.
pub fn check_analyzer_query(query: &str) -> std::result::Result<bool, String> {
    check_restricted(query, ANALYZER_PARAMETER)
}

/// Whether `query` uses `@parameter` (`Ok`), or why it may not run as a restricted query
/// whose one bind parameter is `parameter`.
fn check_restricted(query: &str, parameter: &str) -> std::result::Result<bool, String> {
    let ast = crate::parser::parse(query).map_err(|e| format!("invalid query: {}", e.message))?;
    check_parsed(&ast, parameter)
}

/// [`check_restricted`] of a parsed query.
fn check_parsed(ast: &Query, parameter: &str) -> std::result::Result<bool, String> {
    let mut declared = HashSet::new();
    declare(ast, &mut declared);
    check_query(
        ast,
        &Scope {
            declared,
            parameter,
        },
    )?;
    Ok(crate::plan::bind_parameter_names(ast)
        .iter()
        .any(|n| n == parameter))
}

/// Whether a computed value's `expression` uses `@doc` (`Ok`), or why it may not run:
/// ArangoDB allows one `RETURN` operation and nothing else (no `FOR`, `LET` or subquery;
/// inline expressions such as `@doc.values[* FILTER CURRENT > 42]` serve instead), under the
/// rules of every restricted query.
pub fn check_computed_value(expression: &str) -> std::result::Result<bool, String> {
    let ast = crate::parser::parse(expression)
        .map_err(|e| format!("invalid expression: {}", e.message))?;
    let single_return =
        matches!(ast.ops.as_slice(), [Op::Return { expr, .. }] if !has_subquery(expr));
    if !single_return || !ast.with.is_empty() {
        return Err(
            "the expression must be a single RETURN operation without subqueries".to_string(),
        );
    }
    check_parsed(&ast, COMPUTED_VALUE_PARAMETER)
}

fn has_subquery(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |e| found |= matches!(e, Expr::Subquery(_)));
    found
}

/// What a restricted query may name: the variables it declares and its one bind parameter.
struct Scope<'a> {
    declared: HashSet<String>,
    parameter: &'a str,
}

/// Every variable name the query declares anywhere (a name used and not declared is a
/// collection or view).
fn declare(q: &Query, out: &mut HashSet<String>) {
    for op in &q.ops {
        match op {
            Op::For { var, .. } => {
                out.insert(var.clone());
            }
            Op::Let { var, .. } => {
                out.insert(var.clone());
            }
            Op::Collect(c) => {
                out.extend(c.groups.iter().map(|(v, _)| v.clone()));
                out.extend(c.aggregates.iter().map(|(v, _)| v.clone()));
                out.extend(c.into.iter().map(|(v, _)| v.clone()));
                out.extend(c.count_into.iter().cloned());
            }
            Op::Window { aggregates, .. } => {
                out.extend(aggregates.iter().map(|(v, _)| v.clone()));
            }
            _ => {}
        }
        op.for_each_expr(&mut |e| declare_in(e, out));
    }
}

fn declare_in(e: &Expr, out: &mut HashSet<String>) {
    e.walk(&mut |e| {
        if let Expr::Subquery(q) = e {
            declare(q, out);
        }
    });
}

fn check_query(q: &Query, scope: &Scope<'_>) -> std::result::Result<(), String> {
    if !q.with.is_empty() {
        return Err("collections may not be used".to_string());
    }
    for op in &q.ops {
        match op {
            Op::Traversal(_) => return Err("graph traversals may not be used".to_string()),
            Op::Modify(_) => return Err("data modification may not be used".to_string()),
            Op::For {
                search: Some(_), ..
            } => return Err("views may not be used".to_string()),
            _ => {}
        }
        let mut failure = None;
        op.for_each_expr(&mut |e| {
            if failure.is_none() {
                failure = check_expr(e, scope).err();
            }
        });
        if let Some(reason) = failure {
            return Err(reason);
        }
    }
    Ok(())
}

fn check_expr(e: &Expr, scope: &Scope<'_>) -> std::result::Result<(), String> {
    let mut failure = None;
    e.walk(&mut |e| {
        if failure.is_some() {
            return;
        }
        failure = match e {
            Expr::Name(n) if !scope.declared.contains(n) => {
                Some(format!("collections and views may not be used ('{n}')"))
            }
            Expr::BindCollection(n) => Some(format!("collections may not be used ('@@{n}')")),
            Expr::Bind(n) if n != scope.parameter => Some(format!(
                "only the bind parameter '@{}' may be used, not '@{n}'",
                scope.parameter
            )),
            Expr::Call(name, _) if name.contains("::") => {
                Some(format!("user-defined functions may not be used ('{name}')"))
            }
            Expr::Call(name, _)
                if FORBIDDEN_FUNCTIONS.contains(&name.to_ascii_uppercase().as_str()) =>
            {
                Some(format!(
                    "function '{}' may not be used",
                    name.to_ascii_uppercase()
                ))
            }
            Expr::Subquery(q) => check_query(q, scope).err(),
            _ => None,
        };
    });
    failure.map_or(Ok(()), Err)
}

/// Makes `aql` analyzers available in this process ([`quiver_search::analyzer::set_aql_runtime`]).
pub fn serve_aql_analyzers() {
    quiver_search::analyzer::set_aql_runtime(Arc::new(RestrictedAql::new()));
}

/// The bind parameter of a computed value's expression.
pub const COMPUTED_VALUE_PARAMETER: &str = "doc";

/// Expressions whose check is remembered before the memory is cleared.
const CHECKED_MAX: usize = 1024;

/// Runs restricted queries over an empty in-memory source.
pub struct RestrictedAql {
    service: QueryService,
    /// Computed-value expressions already checked, with the outcome (whether it uses `@doc`).
    checked: RwLock<HashMap<String, std::result::Result<bool, String>>>,
}

impl Default for RestrictedAql {
    fn default() -> Self {
        RestrictedAql::new()
    }
}

impl RestrictedAql {
    pub fn new() -> RestrictedAql {
        RestrictedAql {
            service: QueryService::new(Arc::new(MemorySource::new())),
            checked: RwLock::new(HashMap::new()),
        }
    }

    /// Runs `query` with `binds` under `memory_limit` bytes; all its results. With
    /// `fail_on_warning` a warning (division by zero, a bad argument) is an error.
    pub fn run(
        &self,
        query: &str,
        binds: Map<String, Value>,
        memory_limit: u64,
        fail_on_warning: bool,
    ) -> Result<Vec<Value>> {
        let mut req = CursorRequest::new(query.to_string());
        req.bind_vars = binds;
        req.memory_limit = memory_limit;
        req.fail_on_warning = fail_on_warning;
        req.batch_size = usize::MAX;
        let batch = self.service.create_cursor("_system", req)?;
        if batch.has_more {
            return Err(Error::with_message(
                ErrorCode::ResourceLimit,
                "a restricted query returned more results than one batch holds",
            ));
        }
        if batch.raw_rows {
            return batch
                .rows
                .iter()
                .map(|row| match row {
                    Value::String(text) => serde_json::from_str(text).map_err(|e| {
                        Error::with_message(ErrorCode::Internal, format!("result row: {e}"))
                    }),
                    other => Ok(other.clone()),
                })
                .collect();
        }
        Ok(batch.rows)
    }
}

impl ComputedValuesEvaluator for RestrictedAql {
    fn check(&self, expression: &str) -> std::result::Result<(), String> {
        check_computed_value(expression).map(|_| ())
    }

    /// ArangoDB's rules for the expression: a restricted query whose one bind parameter is
    /// `@doc`; its first result (null when it returns none).
    fn evaluate(&self, expression: &str, doc: &Value) -> Result<Value> {
        let known = self.checked.read().get(expression).cloned();
        let checked = known.unwrap_or_else(|| {
            let outcome = check_computed_value(expression);
            let mut checked = self.checked.write();
            if checked.len() >= CHECKED_MAX {
                checked.clear();
            }
            checked.insert(expression.to_string(), outcome.clone());
            outcome
        });
        let uses_doc = checked.map_err(|reason| {
            Error::with_message(
                ErrorCode::BadParameter,
                format!("invalid computed value expression: {reason}"),
            )
        })?;
        let mut binds = Map::new();
        if uses_doc {
            binds.insert(COMPUTED_VALUE_PARAMETER.to_string(), doc.clone());
        }
        // A warning is an error here: the core turns it into null unless the computed value
        // says failOnWarning, which is ArangoDB's rule.
        let rows = self.run(expression, binds, COMPUTED_VALUE_MEMORY, true)?;
        Ok(rows.into_iter().next().unwrap_or(Value::Null))
    }
}

/// The memory a computed value's expression may use.
const COMPUTED_VALUE_MEMORY: u64 = 32 * 1024 * 1024;

impl AqlAnalyzerRuntime for RestrictedAql {
    fn check(&self, query: &str) -> std::result::Result<bool, String> {
        check_analyzer_query(query)
    }

    fn run(
        &self,
        query: &str,
        param: Option<&str>,
        memory_limit: u64,
        return_type: ReturnType,
    ) -> Result<Vec<Option<String>>> {
        let mut binds = Map::new();
        if let Some(param) = param {
            binds.insert(
                ANALYZER_PARAMETER.to_string(),
                Value::String(param.to_string()),
            );
        }
        let rows = RestrictedAql::run(self, query, binds, memory_limit, false)?;
        let token = |v: &Value| match return_type {
            ReturnType::String => crate::value::to_string(v),
            ReturnType::Number => ReturnType::text_of_number(crate::value::to_number(v)),
            ReturnType::Bool => crate::value::to_bool(v).to_string(),
        };
        Ok(rows
            .iter()
            .map(|v| (!v.is_null()).then(|| token(v)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_that_read_data_or_use_analyzers_are_refused() {
        for ok in [
            "RETURN SOUNDEX(@param)",
            "RETURN LOWER(LEFT(@param, 5)) == 'inter' ? CONCAT(@param, 'ism') : CONCAT('inter', @param)",
            "FOR d IN SPLIT(@param, '-') RETURN d",
            "FILTER LOWER(LEFT(@param, 2)) != 'ir' RETURN @param",
            "LET x = (FOR c IN TO_ARRAY(@param) COLLECT g = c WITH COUNT INTO n RETURN [g, n]) RETURN x",
            "RETURN 1",
        ] {
            assert_eq!(check_analyzer_query(ok), Ok(ok.contains("@param")), "{ok}");
        }
        for (bad, why) in [
            ("FOR d IN coll RETURN d", "collections"),
            ("RETURN LENGTH(coll)", "collections"),
            ("FOR d IN @@c RETURN d", "collections"),
            ("RETURN DOCUMENT('c/1')", "DOCUMENT"),
            ("RETURN TOKENS(@param, 'text_en')", "TOKENS"),
            ("RETURN @other", "'@other'"),
            ("RETURN my::fn(@param)", "user-defined"),
            ("INSERT {a: @param} INTO coll", "modification"),
            ("FOR v IN 1..2 OUTBOUND 'a/1' edges RETURN v", "traversals"),
            ("RETURN (FOR d IN coll RETURN d)", "collections"),
            ("RETURN", "invalid query"),
        ] {
            let reason = check_analyzer_query(bad).expect_err(bad);
            assert!(reason.contains(why), "{bad}: {reason}");
        }
    }

    #[test]
    fn computed_values_are_one_return_over_the_document() {
        let aql = RestrictedAql::new();
        let doc = serde_json::json!({"first": "Ada", "last": "Lovelace", "values": [40, 43, 50]});
        let eval = |e: &str| ComputedValuesEvaluator::evaluate(&aql, e, &doc);
        assert_eq!(
            eval("RETURN CONCAT(@doc.first, ' ', @doc.last)").unwrap(),
            "Ada Lovelace"
        );
        assert_eq!(
            eval("RETURN @doc.values[* FILTER CURRENT > 42 RETURN CURRENT * 2]").unwrap(),
            serde_json::json!([86, 100])
        );
        assert_eq!(eval("RETURN 7").unwrap(), 7, "a constant needs no @doc");
        for bad in [
            "FOR v IN @doc.values RETURN v",
            "LET x = 1 RETURN x",
            "RETURN (FOR v IN @doc.values RETURN v)",
            "RETURN DOCUMENT('c/1')",
            "RETURN VERSION()",
            "RETURN @param",
            "RETURN LENGTH(somecollection)",
        ] {
            let err = eval(bad).expect_err(bad);
            assert_eq!(err.code, ErrorCode::BadParameter, "{bad}");
        }
    }

    #[test]
    fn results_come_back_as_strings_and_nulls() {
        let aql = RestrictedAql::new();
        let run = |q: &str, p: &str| {
            let uses = check_analyzer_query(q).unwrap();
            AqlAnalyzerRuntime::run(&aql, q, uses.then_some(p), 1 << 20, ReturnType::String)
                .unwrap()
        };
        assert_eq!(
            run("RETURN SOUNDEX(@param)", "ArangoDB"),
            vec![Some("A652".to_string())]
        );
        assert_eq!(
            run("FOR d IN SPLIT(@param, '-') RETURN d", "A-B-C"),
            ["A", "B", "C"].map(|s| Some(s.to_string())).to_vec()
        );
        assert_eq!(
            run("RETURN [null, 1.5, true, {a: 1}]", "x")[0],
            Some("[null,1.5,true,{\"a\":1}]".to_string())
        );
        assert_eq!(
            run("FOR v IN [null, 2] RETURN v", "x"),
            vec![None, Some("2".to_string())]
        );
        assert!(run("FILTER @param != 'x' RETURN 1", "x").is_empty());
        // The memory limit holds.
        assert!(AqlAnalyzerRuntime::run(
            &aql,
            "RETURN RANGE(1, 100000)",
            None,
            1024,
            ReturnType::String
        )
        .is_err());
    }

    #[test]
    fn results_convert_as_to_number_and_to_bool() {
        let aql = RestrictedAql::new();
        let run = |q: &str, t: ReturnType| {
            AqlAnalyzerRuntime::run(&aql, q, None, 1 << 20, t)
                .unwrap()
                .into_iter()
                .map(|v| v.unwrap_or_else(|| "<null>".to_string()))
                .collect::<Vec<_>>()
        };
        let all =
            "FOR v IN ['12', ' 1.5 ', 'x', '', true, false, 3, [], [7], [1, 2], {}, null] RETURN v";
        assert_eq!(
            run(all, ReturnType::Number),
            ["12", "1.5", "0", "0", "1", "0", "3", "0", "7", "0", "0", "<null>"]
        );
        assert_eq!(
            run(all, ReturnType::Bool),
            [
                "true", "true", "true", "false", "true", "false", "true", "true", "true", "true",
                "true", "<null>"
            ]
        );
        assert_eq!(run("RETURN -0", ReturnType::Number), ["0"]);
        assert_eq!(
            run("RETURN 0.1 + 0.2", ReturnType::Number),
            ["0.30000000000000004"]
        );
    }
}
