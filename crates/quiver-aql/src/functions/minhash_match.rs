//! `MINHASH_MATCH(attribute, target, threshold = 1, analyzer)` outside SEARCH: whether the
//! MinHash signature (the tokens of the `minhash` analyzer `analyzer`) of `attribute` holds at
//! least `ceil(threshold · n)` (at least one) of the distinct tokens of the target's signature
//! of `n` tokens — the same rule the view index applies inside SEARCH
//! (`quiver_search::index::SearchQuery::MinHashMatch`), so FILTER and SEARCH agree.

use std::collections::HashSet;

use quiver_errors::Result;
use serde_json::Value;

use super::similarity_args::{similarity_args, SimilarityArgs};
use super::{reading, FunctionContext, FunctionDef};

pub(super) const FUNCTIONS: &[FunctionDef] = &[reading("MINHASH_MATCH", 3, 4, minhash_match)];

/// The threshold when none is given (as inside SEARCH): every signature token.
const DEFAULT_THRESHOLD: f64 = 1.0;

fn minhash_match(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let SimilarityArgs {
        threshold,
        analyzer,
        strings,
    } = similarity_args(ctx, "MINHASH_MATCH", args, DEFAULT_THRESHOLD)?;
    let Some((attribute, target)) = strings else {
        return Ok(Value::Bool(false));
    };
    let target_tokens = analyzer.try_tokens(target)?;
    let signature = target_tokens.len();
    let wanted: HashSet<String> = target_tokens.into_iter().map(|t| t.term).collect();
    if wanted.is_empty() {
        return Ok(Value::Bool(false));
    }
    let held: HashSet<String> = analyzer
        .try_tokens(attribute)?
        .into_iter()
        .map(|t| t.term)
        .filter(|t| wanted.contains(t))
        .collect();
    let needed = ((signature as f64 * threshold).ceil() as usize).clamp(1, wanted.len());
    Ok(Value::Bool(held.len() >= needed))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::{error, ok};

    #[test]
    fn identity_signatures_match_equal_strings_only() {
        // identity: the signature is the string itself.
        assert_eq!(
            ok(
                "MINHASH_MATCH",
                vec![json!("abc"), json!("abc"), json!("identity")]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "MINHASH_MATCH",
                vec![json!("abc"), json!("abd"), json!(0.5), json!("identity")]
            ),
            json!(false)
        );
        assert_eq!(
            ok(
                "MINHASH_MATCH",
                vec![json!(1), json!("1"), json!("identity")]
            ),
            json!(false)
        );
    }

    #[test]
    fn bad_arguments_fail() {
        assert_eq!(
            error("MINHASH_MATCH", vec![json!("a"), json!("a"), json!("nope")]),
            10
        );
        assert_eq!(
            error(
                "MINHASH_MATCH",
                vec![json!("a"), json!("a"), json!(0), json!("identity")]
            ),
            10
        );
        assert_eq!(
            error("MINHASH_MATCH", vec![json!("a"), json!("a"), json!(1)]),
            10
        );
    }
}
