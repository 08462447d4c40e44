//! `TOKENS(input, analyzer)`: the tokens an analyzer makes of `input` (ArangoDB's analyzer
//! functions). Strings give an array of terms; arrays are processed element by element, at
//! any depth, each element giving its own array; other primitives are converted with
//! `TO_STRING` first (`null` is the empty string); objects are an invalid argument (warning
//! 1542, `null`). The analyzer defaults to `identity`; an unknown analyzer, or one the
//! query's database cannot reach, is error 10.
//!
//! A `geojson` or `geopoint` analyzer reads objects and arrays as geo values: a value it
//! reads as a shape gives the cell tokens the index files the shape under
//! (`quiver_search::index::geo_cell_tokens`: QuiverDB's own grid cells, not ArangoDB's S2
//! cell tokens), an array it does not read gives one array per element, anything else `[]`
//! (the analyzer indexes nothing for it).
//!
//! An analyzer that makes numbers or booleans (an `aql` analyzer's `returnType`) gives, as
//! ArangoDB's does, one array per token holding what the index files the value under
//! (`quiver_search::index::typed_token_terms`: a number's 16 hexadecimal digits, `1` or `0`;
//! ArangoDB reports its own index encoding, base64).

use std::sync::Arc;

use quiver_core::analyzers::Analyzer;
use quiver_errors::{Error, ErrorCode, Result};
use quiver_search::analyzer::{GeoAnalyzer, ReturnType};
use quiver_search::index::{geo_cell_tokens, typed_token_terms};
use serde_json::Value;

use super::{reading, FunctionContext, FunctionDef};
use crate::value::to_string;

pub(super) const FUNCTIONS: &[FunctionDef] = &[reading("TOKENS", 1, 2, tokens)];

/// The deepest array nesting `TOKENS` follows (deeper input is an invalid argument).
const NESTING_MAX: usize = 64;

/// Analyzer `name` as the query's database sees it; 400/10 naming `function` if unknown.
pub(super) fn analyzer_of(
    ctx: &FunctionContext<'_>,
    function: &str,
    name: &str,
) -> Result<Arc<Analyzer>> {
    let found = match ctx.data {
        Some(data) => data.analyzer(name),
        None => quiver_core::analyzers::builtin(name),
    };
    found.map_err(|_| {
        Error::with_message(
            ErrorCode::BadParameter,
            format!("'{function}' AQL function: Unable to load requested analyzer '{name}'"),
        )
    })
}

/// The tokens of one value; `None` for an object (or nesting past [`NESTING_MAX`]).
fn analyze(analyzer: &Analyzer, value: &Value, depth: usize) -> Result<Option<Value>> {
    match value {
        Value::Object(_) => Ok(None),
        Value::Array(items) => {
            if depth >= NESTING_MAX {
                return Ok(None);
            }
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match analyze(analyzer, item, depth + 1)? {
                    Some(tokens) => out.push(tokens),
                    None => return Ok(None),
                }
            }
            Ok(Some(Value::Array(out)))
        }
        Value::String(text) => Ok(Some(terms(analyzer, text)?)),
        Value::Null => Ok(Some(terms(analyzer, "")?)),
        other => Ok(Some(terms(analyzer, &to_string(other))?)),
    }
}

/// The tokens of one value under a geo analyzer.
fn geo_tokens(geo: &GeoAnalyzer, value: &Value, depth: usize) -> Value {
    let strings =
        |tokens: Vec<String>| Value::Array(tokens.into_iter().map(Value::String).collect());
    if matches!(value, Value::Object(_) | Value::Array(_)) {
        if let Some(shape) = geo.shape(value) {
            return strings(geo_cell_tokens(geo, &shape));
        }
    }
    match value {
        Value::Array(items) if depth < NESTING_MAX => Value::Array(
            items
                .iter()
                .map(|item| geo_tokens(geo, item, depth + 1))
                .collect(),
        ),
        _ => Value::Array(Vec::new()),
    }
}

fn terms(analyzer: &Analyzer, text: &str) -> Result<Value> {
    let tokens = analyzer.try_tokens(text)?.into_iter();
    Ok(Value::Array(match analyzer.return_type() {
        ReturnType::String => tokens.map(|t| Value::String(t.term)).collect(),
        typed => tokens
            .map(|t| {
                Value::Array(
                    typed_token_terms(typed, &t.term)
                        .into_iter()
                        .map(Value::String)
                        .collect(),
                )
            })
            .collect(),
    }))
}

fn tokens(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let name = match args.get(1) {
        None => "identity",
        Some(Value::String(name)) => name.as_str(),
        Some(_) => {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                "'TOKENS' AQL function: 'analyzer' expected to be a string",
            ))
        }
    };
    let analyzer = analyzer_of(ctx, "TOKENS", name)?;
    if let Some(geo) = analyzer.geo() {
        return Ok(geo_tokens(&geo, &args[0], 0));
    }
    match analyze(&analyzer, &args[0], 0)? {
        Some(tokens) => Ok(tokens),
        None => Ok(ctx.invalid_argument()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::{error, invalid, ok};

    #[test]
    fn strings_and_arrays() {
        assert_eq!(
            ok(
                "TOKENS",
                vec![json!("Crazy fast NoSQL-database!"), json!("text_en")]
            ),
            json!(["crazi", "fast", "nosql", "databas"])
        );
        assert_eq!(
            ok("TOKENS", vec![json!(["a b", ["c"]]), json!("text_en")]),
            json!([["a", "b"], [["c"]]])
        );
        assert_eq!(ok("TOKENS", vec![json!("A b")]), json!(["A b"]));
        assert_eq!(
            ok("TOKENS", vec![json!(12), json!("identity")]),
            json!(["12"])
        );
        invalid("TOKENS", vec![json!({"a": 1}), json!("identity")]);
    }

    #[test]
    fn unknown_analyzers_fail() {
        assert_eq!(error("TOKENS", vec![json!("a"), json!("nope")]), 10);
        assert_eq!(error("TOKENS", vec![json!("a"), json!(1)]), 10);
    }
}
