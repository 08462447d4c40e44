//! `OFFSET_INFO(doc, paths)`: where in a document's strings the SEARCH condition matched, as
//! byte offsets and lengths. The offsets are not stored in the index: the string at each asked
//! path is analyzed again by each analyzer the condition names for it (only analyzers with the
//! `offset` feature give offsets), and its tokens are checked against the condition's terms,
//! patterns, ranges, phrases and n-grams (not below `NOT`). Analysis is deterministic, so this
//! gives the offsets an index would have stored, at the cost of analyzing the asked strings
//! once per result document.

use std::ops::Bound;

use quiver_errors::Result;
use serde_json::{json, Value};

use super::document::AnalyzerSource;
use super::encode;
use super::phrase_positions::TermMatcher;
use super::query::{phrase_positions, SearchQuery, SearchValue};
use crate::analyzer::Token;

/// ArangoDB's default number of offsets per path.
pub const DEFAULT_MAX_OFFSETS: usize = 10;

/// One path `OFFSET_INFO` asks for, with its caps.
#[derive(Clone, Debug, PartialEq)]
pub struct OffsetRule {
    /// `a.b`, `a[1].b`.
    pub path: String,
    pub max_offsets: usize,
    pub term_limit: usize,
    pub phrase_limit: usize,
    pub ngram_limit: usize,
}

impl OffsetRule {
    /// `path` with ArangoDB's default caps.
    pub fn new(path: &str) -> OffsetRule {
        OffsetRule {
            path: path.to_string(),
            max_offsets: DEFAULT_MAX_OFFSETS,
            term_limit: u32::MAX as usize,
            phrase_limit: u32::MAX as usize,
            ngram_limit: u32::MAX as usize,
        }
    }
}

/// What kind of match an offset comes from (each kind has its own cap).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Term,
    Phrase,
    Ngram,
}

/// One matching part of the condition for one (path, analyzer).
struct Part {
    /// The path as the condition names it (`tags`, `a.b`, `tags[1]`).
    path: String,
    analyzer: String,
    kind: Kind,
    /// One position for terms, patterns and n-grams; several (offset, terms) for a phrase.
    positions: Vec<(i64, TermMatcher)>,
}

/// One step of a path.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// `a.b[1].c` as steps; None for a malformed path.
fn parse_path(path: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    for piece in path.split('.') {
        let (name, mut rest) = match piece.find('[') {
            Some(i) => (&piece[..i], &piece[i..]),
            None => (piece, ""),
        };
        if name.is_empty() {
            return None;
        }
        steps.push(Step::Key(name.to_string()));
        while let Some(inner) = rest.strip_prefix('[') {
            let close = inner.find(']')?;
            steps.push(Step::Index(inner[..close].parse().ok()?));
            rest = &inner[close + 1..];
        }
        if !rest.is_empty() {
            return None;
        }
    }
    Some(steps)
}

/// A path without array indexes (`a[1].b` → `a.b`): array elements are indexed under the
/// array's path unless the link tracks list positions.
fn without_indexes(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut depth = 0;
    for c in path.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            c if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

/// The string parts of `query` (not below NOT) as matchers.
fn collect_parts(
    query: &SearchQuery,
    analyzers: &dyn AnalyzerSource,
    out: &mut Vec<Part>,
) -> Result<()> {
    let single = |path: &str, analyzer: &str, kind: Kind, matcher: TermMatcher| Part {
        path: path.to_string(),
        analyzer: analyzer.to_string(),
        kind,
        positions: vec![(0, matcher)],
    };
    let full = |path: &str, analyzer: &str, s: &str| encode::string_term(path, analyzer, s);
    match query {
        SearchQuery::Term {
            path,
            analyzer,
            value: SearchValue::String(s),
        } => out.push(single(
            path,
            analyzer,
            Kind::Term,
            TermMatcher::Exact(vec![full(path, analyzer, s)]),
        )),
        SearchQuery::Range {
            path,
            analyzer,
            lower,
            upper,
        } => {
            let bound = |b: &Option<(SearchValue, bool)>| -> Option<Bound<String>> {
                match b {
                    None => Some(Bound::Unbounded),
                    Some((SearchValue::String(s), true)) => {
                        Some(Bound::Included(full(path, analyzer, s)))
                    }
                    Some((SearchValue::String(s), false)) => {
                        Some(Bound::Excluded(full(path, analyzer, s)))
                    }
                    Some(_) => None,
                }
            };
            if let (Some(lower), Some(upper)) = (bound(lower), bound(upper)) {
                out.push(single(
                    path,
                    analyzer,
                    Kind::Term,
                    TermMatcher::Range {
                        prefix: encode::string_prefix(path, analyzer),
                        lower,
                        upper,
                    },
                ));
            }
        }
        SearchQuery::Phrase {
            path,
            analyzer,
            parts,
        } => {
            let positions = phrase_positions(path, analyzer, parts, analyzers)?;
            if !positions.is_empty() {
                out.push(Part {
                    path: path.clone(),
                    analyzer: analyzer.clone(),
                    kind: Kind::Phrase,
                    positions,
                });
            }
        }
        SearchQuery::Prefix {
            path,
            analyzer,
            prefix,
        } => out.push(single(
            path,
            analyzer,
            Kind::Term,
            TermMatcher::Prefix(full(path, analyzer, prefix)),
        )),
        SearchQuery::Like {
            path,
            analyzer,
            pattern,
        } => out.push(single(
            path,
            analyzer,
            Kind::Term,
            TermMatcher::like(&encode::string_prefix(path, analyzer), pattern),
        )),
        SearchQuery::Levenshtein {
            path,
            analyzer,
            target,
            distance,
            transpositions,
            prefix,
            ..
        } => out.push(single(
            path,
            analyzer,
            Kind::Term,
            TermMatcher::Levenshtein {
                prefix: full(path, analyzer, prefix),
                target: target.chars().collect(),
                distance: *distance,
                transpositions: *transpositions,
                max_terms: 0,
            },
        )),
        SearchQuery::NgramMatch {
            path,
            analyzer,
            target,
            ..
        } => {
            let grams = analyzers
                .tokens(analyzer, target)
                .unwrap_or_default()
                .into_iter()
                .map(|(t, _)| full(path, analyzer, &t))
                .collect();
            out.push(single(
                path,
                analyzer,
                Kind::Ngram,
                TermMatcher::Exact(grams),
            ));
        }
        SearchQuery::And(list) | SearchQuery::Or(list) | SearchQuery::MinMatch(list, _) => {
            for q in list {
                collect_parts(q, analyzers, out)?;
            }
        }
        SearchQuery::Boost(inner, _) => collect_parts(inner, analyzers, out)?,
        _ => {}
    }
    Ok(())
}

/// The (start, length, kind) of every match of `part` in one string's tokens.
fn part_offsets(part: &Part, tokens: &[Token], out: &mut Vec<(usize, usize, Kind)>) {
    let encoded: Vec<String> = tokens
        .iter()
        .map(|t| encode::string_term(&part.path, &part.analyzer, &t.term))
        .collect();
    let (first_offset, first) = &part.positions[0];
    for (i, token) in tokens.iter().enumerate() {
        if !first.accepts(&encoded[i]) {
            continue;
        }
        let (mut start, mut end) = (token.start, token.end);
        let all = part.positions[1..].iter().all(|(offset, matcher)| {
            let want = token.position as i64 + offset - first_offset;
            let found = tokens
                .iter()
                .zip(&encoded)
                .find(|(t, e)| t.position as i64 == want && matcher.accepts(e));
            if let Some((t, _)) = found {
                start = start.min(t.start);
                end = end.max(t.end);
            }
            found.is_some()
        });
        if all {
            out.push((start as usize, (end - start) as usize, part.kind));
        }
    }
}

/// `OFFSET_INFO(doc, rules)` for a document `query` matched: per asked path whose string
/// has matches, `{name: [steps], offsets: [[start, length], …]}` (byte offsets, ascending,
/// capped per rule). A path naming an array yields one entry per string element.
pub fn offset_info(
    query: &SearchQuery,
    doc: &Value,
    rules: &[OffsetRule],
    analyzers: &dyn AnalyzerSource,
) -> Result<Value> {
    let mut parts = Vec::new();
    collect_parts(query, analyzers, &mut parts)?;
    let mut out = Vec::new();
    for rule in rules {
        let Some(steps) = parse_path(&rule.path) else {
            continue;
        };
        let mut value = doc;
        for step in &steps {
            let next = match (step, value) {
                (Step::Key(k), Value::Object(map)) => map.get(k),
                (Step::Index(i), Value::Array(items)) => items.get(*i),
                _ => None,
            };
            let Some(next) = next else {
                value = &Value::Null;
                break;
            };
            value = next;
        }
        let mut strings: Vec<(Vec<Step>, &str)> = Vec::new();
        match value {
            Value::String(s) => strings.push((steps.clone(), s)),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let Value::String(s) = item {
                        let mut name = steps.clone();
                        name.push(Step::Index(i));
                        strings.push((name, s));
                    }
                }
            }
            _ => {}
        }
        for (name, text) in strings {
            let plain = without_indexes(&rule.path);
            let mut found: Vec<(usize, usize, Kind)> = Vec::new();
            for part in parts.iter().filter(|p| without_indexes(&p.path) == plain) {
                let Some(tokens) = analyzers.offset_tokens(&part.analyzer, text) else {
                    continue;
                };
                part_offsets(part, &tokens, &mut found);
            }
            found.sort_by_key(|f| (f.0, f.1));
            found.dedup_by_key(|f| (f.0, f.1));
            let (mut terms, mut phrases, mut ngrams) = (0, 0, 0);
            let mut offsets = Vec::new();
            for (start, length, kind) in found {
                if offsets.len() >= rule.max_offsets {
                    break;
                }
                let (count, limit) = match kind {
                    Kind::Term => (&mut terms, rule.term_limit),
                    Kind::Phrase => (&mut phrases, rule.phrase_limit),
                    Kind::Ngram => (&mut ngrams, rule.ngram_limit),
                };
                if *count >= limit {
                    continue;
                }
                *count += 1;
                offsets.push(json!([start, length]));
            }
            if offsets.is_empty() {
                continue;
            }
            let name: Vec<Value> = name
                .into_iter()
                .map(|s| match s {
                    Step::Key(k) => json!(k),
                    Step::Index(i) => json!(i),
                })
                .collect();
            out.push(json!({"name": name, "offsets": offsets}));
        }
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_into_steps() {
        assert_eq!(
            parse_path("a[1].b"),
            Some(vec![
                Step::Key("a".into()),
                Step::Index(1),
                Step::Key("b".into())
            ])
        );
        assert_eq!(parse_path("a..b"), None);
        assert_eq!(parse_path("a[x]"), None);
        assert_eq!(without_indexes("a[1].b[22]"), "a.b");
    }
}
