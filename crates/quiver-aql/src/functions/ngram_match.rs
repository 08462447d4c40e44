//! `NGRAM_MATCH(attribute, target, threshold = 0.7, analyzer)` outside SEARCH: whether the
//! longest common subsequence of the n-grams (tokens of `analyzer`) of `attribute` and
//! `target` covers at least `ceil(threshold · n)` of the target's `n` n-grams — the same rule
//! the view index applies inside SEARCH (`quiver_search::index::NgramSimilarityQuery`).

use std::collections::HashMap;

use quiver_errors::Result;
use quiver_search::index::longest_common_subsequence;
use serde_json::Value;

use super::similarity_args::{similarity_args, SimilarityArgs};
use super::{reading, FunctionContext, FunctionDef};

pub(super) const FUNCTIONS: &[FunctionDef] = &[reading("NGRAM_MATCH", 3, 4, ngram_match)];

/// ArangoDB's threshold when none is given.
const DEFAULT_THRESHOLD: f64 = 0.7;

fn ngram_match(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let SimilarityArgs {
        threshold,
        analyzer,
        strings,
    } = similarity_args(ctx, "NGRAM_MATCH", args, DEFAULT_THRESHOLD)?;
    let Some((attribute, target)) = strings else {
        return Ok(Value::Bool(false));
    };
    let target_grams = analyzer.try_tokens(target)?;
    if target_grams.is_empty() {
        return Ok(Value::Bool(false));
    }
    let mut numbers: HashMap<String, usize> = HashMap::new();
    let target_seq: Vec<usize> = target_grams
        .into_iter()
        .map(|t| {
            let next = numbers.len();
            *numbers.entry(t.term).or_insert(next)
        })
        .collect();
    // n-grams of the attribute the target lacks cannot be part of a common subsequence.
    let attribute_seq: Vec<usize> = analyzer
        .try_tokens(attribute)?
        .into_iter()
        .filter_map(|t| numbers.get(&t.term).copied())
        .collect();
    let needed = ((target_seq.len() as f64 * threshold).ceil() as usize).clamp(1, target_seq.len());
    Ok(Value::Bool(
        longest_common_subsequence(&target_seq, &attribute_seq) >= needed,
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::{error, ok};

    #[test]
    fn threshold_of_the_longest_common_subsequence() {
        // identity: one n-gram per string, so only equal strings match.
        assert_eq!(
            ok(
                "NGRAM_MATCH",
                vec![json!("abc"), json!("abc"), json!("identity")]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "NGRAM_MATCH",
                vec![json!("abc"), json!("abd"), json!("identity")]
            ),
            json!(false)
        );
        assert_eq!(
            ok("NGRAM_MATCH", vec![json!(1), json!("1"), json!("identity")]),
            json!(false)
        );
    }

    #[test]
    fn bad_arguments_fail() {
        assert_eq!(
            error("NGRAM_MATCH", vec![json!("a"), json!("a"), json!("nope")]),
            10
        );
        assert_eq!(
            error(
                "NGRAM_MATCH",
                vec![json!("a"), json!("a"), json!(1.5), json!("identity")]
            ),
            10
        );
        assert_eq!(
            error("NGRAM_MATCH", vec![json!("a"), json!("a"), json!(1)]),
            10
        );
    }
}
