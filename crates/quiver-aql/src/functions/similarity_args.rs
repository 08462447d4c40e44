//! The arguments `NGRAM_MATCH` and `MINHASH_MATCH` share outside SEARCH:
//! `(attribute, target, threshold = default, analyzer)`. The threshold must be a number in
//! (0, 1] and the analyzer a string naming an analyzer the query's database reaches; any other
//! shape is error 10 naming the function. Attribute and target are compared only when both are
//! strings (anything else does not match).

use std::sync::Arc;

use quiver_core::analyzers::Analyzer;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use super::tokens::analyzer_of;
use super::FunctionContext;

/// The checked arguments of one call.
pub(super) struct SimilarityArgs<'a> {
    pub threshold: f64,
    pub analyzer: Arc<Analyzer>,
    /// `(attribute, target)` when both are strings; `None` means "no match".
    pub strings: Option<(&'a str, &'a str)>,
}

/// Checks `args` of `function`, whose threshold defaults to `default_threshold`.
pub(super) fn similarity_args<'a>(
    ctx: &FunctionContext<'_>,
    function: &str,
    args: &'a [Value],
    default_threshold: f64,
) -> Result<SimilarityArgs<'a>> {
    let bad = |message: &str| {
        Error::with_message(
            ErrorCode::BadParameter,
            format!("'{function}' AQL function: {message}"),
        )
    };
    let (threshold, analyzer) = match args {
        [_, _, analyzer] => (default_threshold, analyzer),
        [_, _, threshold, analyzer] => (
            threshold
                .as_f64()
                .ok_or_else(|| bad("'threshold' expected to be a number"))?,
            analyzer,
        ),
        _ => return Err(bad("invalid number of arguments")),
    };
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(bad("'threshold' must be a number in (0, 1]"));
    }
    let Value::String(name) = analyzer else {
        return Err(bad("'analyzer' expected to be a string"));
    };
    let analyzer = analyzer_of(ctx, function, name)?;
    let strings = match (&args[0], &args[1]) {
        (Value::String(attribute), Value::String(target)) => {
            Some((attribute.as_str(), target.as_str()))
        }
        _ => None,
    };
    Ok(SimilarityArgs {
        threshold,
        analyzer,
        strings,
    })
}
