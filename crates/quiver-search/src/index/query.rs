//! A SEARCH expression with its values known (the AQL engine evaluates the operands per row),
//! and its translation into tantivy queries over the encoded terms (`encode.rs`).

use std::ops::Bound;

use quiver_errors::{Error, ErrorCode, Result};
use tantivy::query::{
    AllQuery, BooleanQuery, EmptyQuery, FuzzyTermQuery, Occur, PhraseQuery, Query, RangeQuery,
    RegexQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::Term;

use super::document::AnalyzerSource;
use super::encode;
use super::geo_query::{geo_query, GeoFilter};
use super::nested::NestedQuery;
use super::ngram_similarity::NgramSimilarityQuery;
use super::phrase_positions::{PositionalPhraseQuery, TermMatcher};
use super::prefix_query::PrefixQuery;

/// A scalar a SEARCH condition compares with.
#[derive(Clone, Debug, PartialEq)]
pub enum SearchValue {
    String(String),
    Number(f64),
    Bool(bool),
    Null,
}

/// What `EXISTS(path, …)` asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum ExistsKind {
    /// Any indexed value.
    Any,
    /// A value of this type: `string`, `number`, `bool`, `null`.
    Type(String),
    /// A string indexed by this analyzer.
    Analyzer(String),
}

/// One part of a PHRASE: `skip` positions left out before it (negative: back), then `token`.
#[derive(Clone, Debug, PartialEq)]
pub struct PhrasePart {
    pub skip: i64,
    pub token: PhraseToken,
}

/// What a part of a PHRASE matches. `Text` is analyzed into consecutive tokens; every other
/// kind is one position whose terms are given as indexed (ArangoDB's object tokens), except
/// `AnalyzedTerms` (an array inside the array form), whose strings are analyzed.
#[derive(Clone, Debug, PartialEq)]
pub enum PhraseToken {
    Text(String),
    /// `{TERM: t}` (one term) and `{TERMS: [..]}`: any of these terms.
    Terms(Vec<String>),
    /// `[..]` inside the array form: any token of these strings.
    AnalyzedTerms(Vec<String>),
    /// `{STARTS_WITH: p}`.
    StartsWith(String),
    /// `{WILDCARD: pattern}` (LIKE syntax).
    Wildcard(String),
    /// `{LEVENSHTEIN_MATCH: [target, distance, transpositions, maxTerms, prefix]}`; a term
    /// matches when it starts with `prefix` and the rest is within `distance` of `target`;
    /// `max_terms` (0: all) keeps the closest terms.
    Levenshtein {
        target: String,
        distance: u8,
        transpositions: bool,
        max_terms: usize,
        prefix: String,
    },
    /// `{IN_RANGE: [low, high, includeLow, includeHigh]}` over strings.
    InRange {
        low: String,
        high: String,
        include_low: bool,
        include_high: bool,
    },
}

/// A SEARCH condition over one view. Paths are attribute paths as indexed (`a.b`, `a[1]`);
/// `analyzer` is the analyzer in force (`identity` by default).
#[derive(Clone, Debug, PartialEq)]
pub enum SearchQuery {
    All,
    Nothing,
    Term {
        path: String,
        analyzer: String,
        value: SearchValue,
    },
    /// Both bounds of one type (numbers, or strings of `analyzer`); None = unbounded.
    Range {
        path: String,
        analyzer: String,
        lower: Option<(SearchValue, bool)>,
        upper: Option<(SearchValue, bool)>,
    },
    Exists {
        path: String,
        kind: ExistsKind,
    },
    Phrase {
        path: String,
        analyzer: String,
        parts: Vec<PhrasePart>,
    },
    Prefix {
        path: String,
        analyzer: String,
        prefix: String,
    },
    Like {
        path: String,
        analyzer: String,
        pattern: String,
    },
    /// `LEVENSHTEIN_MATCH()`: terms starting with `prefix` whose rest is within `distance`
    /// of `target`; `max_terms` (0: all) keeps the closest terms.
    Levenshtein {
        path: String,
        analyzer: String,
        target: String,
        distance: u8,
        transpositions: bool,
        max_terms: usize,
        prefix: String,
    },
    /// `NGRAM_MATCH()`: the longest common subsequence of `target`'s n-grams (tokens of
    /// `analyzer`) and the field's reaches `threshold` (0..=1) of the target's n-grams.
    NgramMatch {
        path: String,
        analyzer: String,
        target: String,
        threshold: f64,
    },
    /// `MINHASH_MATCH()`: at least `threshold` (0..=1) of the MinHash signature tokens of
    /// `target` (tokens of the `minhash` analyzer `analyzer`) are tokens of the field.
    MinHashMatch {
        path: String,
        analyzer: String,
        target: String,
        threshold: f64,
    },
    /// A geo function (`GEO_DISTANCE`, `GEO_IN_RANGE`, `GEO_CONTAINS`, `GEO_INTERSECTS`) on a
    /// field indexed by the geo analyzer `analyzer`.
    Geo {
        path: String,
        analyzer: String,
        filter: GeoFilter,
    },
    And(Vec<SearchQuery>),
    Or(Vec<SearchQuery>),
    Not(Box<SearchQuery>),
    /// At least `min` of the conditions hold.
    MinMatch(Vec<SearchQuery>, usize),
    Boost(Box<SearchQuery>, f64),
    /// `field[? count FILTER cond]` over a `nested` field: `path` is the field's element
    /// path (`dims[?]`), `cond` compares the elements' attributes (`dims[?].type`) and must
    /// hold for `count` elements (`nested.rs`).
    Nested {
        path: String,
        count: ElementCount,
        cond: Box<SearchQuery>,
    },
}

/// How many elements of a nested field must match (`[? ANY|ALL|NONE|AT LEAST (n)|n|n..m`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ElementCount {
    /// Every element (true without elements).
    All,
    /// From `min` to `max` (None: no upper bound) elements; `ANY` is 1.., `NONE` 0..=0.
    Between { min: usize, max: Option<usize> },
}

/// A term whose matches add to the score, with the boost in force.
#[derive(Clone, Debug, PartialEq)]
pub struct ScoredTerm {
    pub path: String,
    pub analyzer: String,
    pub term: String,
    pub boost: f64,
}

impl SearchQuery {
    /// The analyzed-string and value terms whose matches are scored (not below NOT).
    pub fn scored_terms(&self, analyzers: &dyn AnalyzerSource) -> Vec<ScoredTerm> {
        let mut out = Vec::new();
        self.collect_scored(1.0, analyzers, &mut out);
        out
    }

    fn collect_scored(
        &self,
        boost: f64,
        analyzers: &dyn AnalyzerSource,
        out: &mut Vec<ScoredTerm>,
    ) {
        match self {
            SearchQuery::Term {
                path,
                analyzer,
                value: SearchValue::String(s),
            } => out.push(ScoredTerm {
                path: path.clone(),
                analyzer: analyzer.clone(),
                term: s.clone(),
                boost,
            }),
            SearchQuery::Phrase {
                path,
                analyzer,
                parts,
            } => {
                for part in parts {
                    let terms: Vec<String> = match &part.token {
                        PhraseToken::Text(text) => analyzers
                            .tokens(analyzer, text)
                            .unwrap_or_default()
                            .into_iter()
                            .map(|(token, _)| token)
                            .collect(),
                        PhraseToken::Terms(terms) => terms.clone(),
                        PhraseToken::AnalyzedTerms(texts) => texts
                            .iter()
                            .flat_map(|t| analyzers.tokens(analyzer, t).unwrap_or_default())
                            .map(|(token, _)| token)
                            .collect(),
                        // Patterns, prefixes, ranges and fuzzy terms match without scoring.
                        _ => Vec::new(),
                    };
                    for term in terms {
                        out.push(ScoredTerm {
                            path: path.clone(),
                            analyzer: analyzer.clone(),
                            term,
                            boost,
                        });
                    }
                }
            }
            SearchQuery::And(list) | SearchQuery::Or(list) | SearchQuery::MinMatch(list, _) => list
                .iter()
                .for_each(|q| q.collect_scored(boost, analyzers, out)),
            SearchQuery::Boost(inner, b) => inner.collect_scored(boost * b, analyzers, out),
            // NONE matches where its condition does not: like NOT, it adds nothing.
            SearchQuery::Nested { count, cond, .. }
                if *count
                    != (ElementCount::Between {
                        min: 0,
                        max: Some(0),
                    }) =>
            {
                cond.collect_scored(boost, analyzers, out)
            }
            _ => {}
        }
    }

    /// The tantivy query over the view's term field. Errors: 10 for an unknown analyzer in
    /// PHRASE, a LIKE pattern the engine cannot run, or a range over mixed types.
    pub fn to_tantivy(
        &self,
        field: Field,
        analyzers: &dyn AnalyzerSource,
    ) -> Result<Box<dyn Query>> {
        let term = |text: &str| Term::from_field_text(field, text);
        let term_query = |text: &str| -> Box<dyn Query> {
            Box::new(TermQuery::new(term(text), IndexRecordOption::Basic))
        };
        Ok(match self {
            SearchQuery::All => Box::new(AllQuery),
            SearchQuery::Nothing => Box::new(EmptyQuery),
            SearchQuery::Term {
                path,
                analyzer,
                value,
            } => term_query(&value_term(path, analyzer, value)),
            SearchQuery::Range {
                path,
                analyzer,
                lower,
                upper,
            } => {
                let numeric = match lower.as_ref().or(upper.as_ref()).map(|b| &b.0) {
                    Some(SearchValue::Number(_)) => true,
                    Some(SearchValue::String(_)) => false,
                    // Ranges over booleans or null, or without any bound, match nothing.
                    _ => return Ok(Box::new(EmptyQuery)),
                };
                let prefix = if numeric {
                    encode::number_prefix(path)
                } else {
                    encode::string_prefix(path, analyzer)
                };
                let encode_bound = |v: &SearchValue| match (v, numeric) {
                    (SearchValue::Number(n), true) => Some(encode::number_term(path, *n)),
                    (SearchValue::String(s), false) => Some(encode::string_term(path, analyzer, s)),
                    _ => None,
                };
                let bound =
                    |b: &Option<(SearchValue, bool)>, open_end: String| -> Option<Bound<Term>> {
                        Some(match b {
                            None => Bound::Excluded(term(&open_end)),
                            Some((v, inclusive)) => {
                                let t = term(&encode_bound(v)?);
                                if *inclusive {
                                    Bound::Included(t)
                                } else {
                                    Bound::Excluded(t)
                                }
                            }
                        })
                    };
                // The prefix itself sorts before every term of the kind; the prefix with its
                // last separator raised by one sorts after them all.
                let mut past = prefix.clone();
                past.pop();
                past.push(char::from_u32(encode::SEP as u32 + 1).unwrap_or(encode::SEP));
                let (Some(lo), Some(hi)) = (bound(lower, prefix), bound(upper, past)) else {
                    return Ok(Box::new(EmptyQuery));
                };
                Box::new(RangeQuery::new(lo, hi))
            }
            SearchQuery::Exists { path, kind } => term_query(&match kind {
                ExistsKind::Any => encode::exists_term(path),
                ExistsKind::Type(t) => encode::type_term(path, t),
                ExistsKind::Analyzer(a) => encode::analyzer_term(path, a),
            }),
            SearchQuery::Phrase {
                path,
                analyzer,
                parts,
            } => phrase_query(field, path, analyzer, parts, analyzers)?,
            SearchQuery::Prefix {
                path,
                analyzer,
                prefix,
            } => Box::new(PrefixQuery::new(
                field,
                encode::string_term(path, analyzer, prefix),
            )),
            SearchQuery::Like {
                path,
                analyzer,
                pattern,
            } => {
                let pattern = format!(
                    "{}{}",
                    regex_escape(&encode::string_prefix(path, analyzer)),
                    like_to_regex(pattern)
                );
                regex_query(&pattern, field)?
            }
            SearchQuery::Levenshtein {
                path,
                analyzer,
                target,
                distance,
                transpositions,
                max_terms,
                prefix,
            } => {
                if *distance == 0 {
                    term_query(&encode::string_term(
                        path,
                        analyzer,
                        &format!("{prefix}{target}"),
                    ))
                } else if *max_terms == 0 && prefix.is_empty() && *distance <= 2 {
                    // The prefix is the same in every term of the field, so edits fall on
                    // the value. (Tantivy's automata stop at distance 2.)
                    Box::new(FuzzyTermQuery::new(
                        term(&encode::string_term(path, analyzer, target)),
                        *distance,
                        *transpositions,
                    ))
                } else {
                    // maxTerms, a prefix and distances past 2 need the matching terms
                    // themselves: one position of the positional phrase query.
                    let matcher = TermMatcher::Levenshtein {
                        prefix: encode::string_term(path, analyzer, prefix),
                        target: target.chars().collect(),
                        distance: *distance,
                        transpositions: *transpositions,
                        max_terms: *max_terms,
                    };
                    Box::new(PositionalPhraseQuery::new(field, vec![(0, matcher)]))
                }
            }
            SearchQuery::NgramMatch {
                path,
                analyzer,
                target,
                threshold,
            } => {
                let tokens = analyzers.tokens(analyzer, target).ok_or_else(|| {
                    Error::with_message(
                        ErrorCode::BadParameter,
                        format!("analyzer '{analyzer}' not found"),
                    )
                })?;
                let terms: Vec<String> = tokens
                    .into_iter()
                    .map(|(token, _)| encode::string_term(path, analyzer, &token))
                    .collect();
                if terms.is_empty() {
                    return Ok(Box::new(EmptyQuery));
                }
                // ArangoSearch: at least ceil(n · threshold) n-grams, and at least one.
                let min_match = (terms.len() as f64 * threshold).ceil() as usize;
                Box::new(NgramSimilarityQuery::new(field, terms, min_match))
            }
            SearchQuery::MinHashMatch {
                path,
                analyzer,
                target,
                threshold,
            } => {
                let tokens = analyzers.tokens(analyzer, target).ok_or_else(|| {
                    Error::with_message(
                        ErrorCode::BadParameter,
                        format!("analyzer '{analyzer}' not found"),
                    )
                })?;
                let mut terms: Vec<String> = tokens
                    .into_iter()
                    .map(|(token, _)| encode::string_term(path, analyzer, &token))
                    .collect();
                let signature = terms.len();
                terms.sort_unstable();
                terms.dedup();
                if terms.is_empty() {
                    return Ok(Box::new(EmptyQuery));
                }
                // At least ceil(threshold · signature size) tokens, and at least one.
                let min = ((signature as f64 * threshold).ceil() as usize).clamp(1, terms.len());
                let clauses = terms
                    .iter()
                    .map(|t| (Occur::Should, term_query(t)))
                    .collect();
                Box::new(BooleanQuery::with_minimum_required_clauses(clauses, min))
            }
            SearchQuery::Geo {
                path,
                analyzer,
                filter,
            } => {
                let geo = analyzers.geo(analyzer).ok_or_else(|| {
                    Error::with_message(
                        ErrorCode::BadParameter,
                        format!(
                            "geo functions need a field indexed by a 'geojson' or 'geopoint' \
                             analyzer; '{analyzer}' is not one (use ANALYZER())"
                        ),
                    )
                })?;
                geo_query(field, path, analyzer, &geo, filter)?
            }
            SearchQuery::And(list) => {
                let mut clauses = Vec::with_capacity(list.len());
                for q in list {
                    clauses.push((Occur::Must, q.to_tantivy(field, analyzers)?));
                }
                if clauses.is_empty() {
                    return Ok(Box::new(AllQuery));
                }
                Box::new(BooleanQuery::new(clauses))
            }
            SearchQuery::Or(list) => {
                let mut clauses = Vec::with_capacity(list.len());
                for q in list {
                    clauses.push((Occur::Should, q.to_tantivy(field, analyzers)?));
                }
                if clauses.is_empty() {
                    return Ok(Box::new(EmptyQuery));
                }
                Box::new(BooleanQuery::new(clauses))
            }
            SearchQuery::Not(inner) => Box::new(BooleanQuery::new(vec![
                (Occur::Must, Box::new(AllQuery) as Box<dyn Query>),
                (Occur::MustNot, inner.to_tantivy(field, analyzers)?),
            ])),
            SearchQuery::MinMatch(list, min) => {
                if *min == 0 {
                    return Ok(Box::new(AllQuery));
                }
                if *min > list.len() {
                    return Ok(Box::new(EmptyQuery));
                }
                let mut clauses = Vec::with_capacity(list.len());
                for q in list {
                    clauses.push((Occur::Should, q.to_tantivy(field, analyzers)?));
                }
                Box::new(BooleanQuery::with_minimum_required_clauses(clauses, *min))
            }
            SearchQuery::Boost(inner, _) => inner.to_tantivy(field, analyzers)?,
            SearchQuery::Nested { path, count, cond } => {
                Box::new(NestedQuery::new(field, path, *count, cond)?)
            }
        })
    }
}

/// A PHRASE: tantivy's phrase query when every position is one exact term in increasing
/// order, otherwise the positional phrase query of `phrase_positions.rs`.
fn phrase_query(
    field: Field,
    path: &str,
    analyzer: &str,
    parts: &[PhrasePart],
    analyzers: &dyn AnalyzerSource,
) -> Result<Box<dyn Query>> {
    let positions = phrase_positions(path, analyzer, parts, analyzers)?;
    if positions.is_empty() {
        return Ok(Box::new(EmptyQuery));
    }
    let increasing = positions.windows(2).all(|w| w[0].0 < w[1].0);
    let exact: Option<Vec<(usize, Term)>> = positions
        .iter()
        .map(|(offset, matcher)| match matcher {
            TermMatcher::Exact(terms) if terms.len() == 1 => Some((
                (offset - positions[0].0) as usize,
                Term::from_field_text(field, &terms[0]),
            )),
            _ => None,
        })
        .collect();
    Ok(match exact {
        Some(mut terms) if increasing => match terms.len() {
            1 => Box::new(TermQuery::new(terms.remove(0).1, IndexRecordOption::Basic)),
            _ => Box::new(PhraseQuery::new_with_offset(terms)),
        },
        _ => Box::new(PositionalPhraseQuery::new(field, positions)),
    })
}

/// The positions of a PHRASE: (offset, the encoded terms accepted there), in part order.
pub(crate) fn phrase_positions(
    path: &str,
    analyzer: &str,
    parts: &[PhrasePart],
    analyzers: &dyn AnalyzerSource,
) -> Result<Vec<(i64, TermMatcher)>> {
    let analyze = |text: &str| {
        analyzers.tokens(analyzer, text).ok_or_else(|| {
            Error::with_message(
                ErrorCode::BadParameter,
                format!("analyzer '{analyzer}' not found"),
            )
        })
    };
    let full = |token: &str| encode::string_term(path, analyzer, token);
    let prefix = encode::string_prefix(path, analyzer);
    let mut positions: Vec<(i64, TermMatcher)> = Vec::new();
    let mut cursor = 0i64;
    for part in parts {
        cursor = cursor.saturating_add(part.skip);
        match &part.token {
            PhraseToken::Text(text) => {
                let tokens = analyze(text)?;
                let span = tokens.iter().map(|t| t.1).max().map_or(0, |m| m + 1);
                for (token, position) in tokens {
                    positions.push((
                        cursor + position as i64,
                        TermMatcher::Exact(vec![full(&token)]),
                    ));
                }
                cursor = cursor.saturating_add(span as i64);
            }
            token => {
                let matcher = match token {
                    PhraseToken::Terms(terms) => {
                        TermMatcher::Exact(terms.iter().map(|t| full(t)).collect())
                    }
                    PhraseToken::AnalyzedTerms(texts) => {
                        let mut terms = Vec::new();
                        for text in texts {
                            terms.extend(analyze(text)?.into_iter().map(|(t, _)| full(&t)));
                        }
                        TermMatcher::Exact(terms)
                    }
                    PhraseToken::StartsWith(p) => TermMatcher::Prefix(full(p)),
                    PhraseToken::Wildcard(pattern) => TermMatcher::like(&prefix, pattern),
                    PhraseToken::Levenshtein {
                        target,
                        distance,
                        transpositions,
                        max_terms,
                        prefix: start,
                    } => TermMatcher::Levenshtein {
                        prefix: full(start),
                        target: target.chars().collect(),
                        distance: *distance,
                        transpositions: *transpositions,
                        max_terms: *max_terms,
                    },
                    PhraseToken::InRange {
                        low,
                        high,
                        include_low,
                        include_high,
                    } => TermMatcher::Range {
                        prefix: prefix.clone(),
                        lower: if *include_low {
                            Bound::Included(full(low))
                        } else {
                            Bound::Excluded(full(low))
                        },
                        upper: if *include_high {
                            Bound::Included(full(high))
                        } else {
                            Bound::Excluded(full(high))
                        },
                    },
                    PhraseToken::Text(_) => unreachable!("handled above"),
                };
                positions.push((cursor, matcher));
                cursor = cursor.saturating_add(1);
            }
        }
    }
    Ok(positions)
}

/// The term a `path == value` condition looks up.
pub(crate) fn value_term(path: &str, analyzer: &str, value: &SearchValue) -> String {
    match value {
        SearchValue::String(s) => encode::string_term(path, analyzer, s),
        SearchValue::Number(n) => encode::number_term(path, *n),
        SearchValue::Bool(b) => encode::bool_term(path, *b),
        SearchValue::Null => encode::null_term(path),
    }
}

fn regex_query(pattern: &str, field: Field) -> Result<Box<dyn Query>> {
    RegexQuery::from_pattern(pattern, field)
        .map(|q| Box::new(q) as Box<dyn Query>)
        .map_err(|e| Error::with_message(ErrorCode::BadParameter, format!("invalid pattern: {e}")))
}

/// Escapes regex metacharacters (and the control character that separates term parts).
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for c in text.chars() {
        // regex-syntax accepts an escape before any ASCII punctuation except `<` and `>`.
        if c.is_ascii_punctuation() && c != '<' && c != '>' {
            out.push('\\');
            out.push(c);
        } else if c.is_control() {
            out.push_str(&format!("\\x{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// AQL LIKE (`%` any run, `_` one character, `\` escapes) as a regex over a whole term.
fn like_to_regex(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n) => out.push_str(&regex_escape(&n.to_string())),
                None => out.push_str("\\\\"),
            },
            '%' => out.push_str(".*"),
            '_' => out.push('.'),
            c => out.push_str(&regex_escape(&c.to_string())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns_become_anchored_regexes() {
        assert_eq!(like_to_regex("a%b_c"), "a.*b.c");
        assert_eq!(like_to_regex("100\\%"), "100\\%");
        assert_eq!(like_to_regex("a.b"), "a\\.b");
    }
}
