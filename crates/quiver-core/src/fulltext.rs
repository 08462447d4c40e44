//! Fulltext semantics of ArangoDB's (deprecated but still used) fulltext index: how a
//! document's attribute becomes a set of words, how a `FULLTEXT()` query string is parsed, and
//! an in-memory word index answering such queries.
//!
//! Words are maximal runs of letters and digits, lower-cased, NFC-normalized, at least
//! `minLength` characters and cut to 40 characters. A string attribute is indexed; for an array
//! or object the string values directly inside it are indexed (ArangoDB goes one level deep).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

/// ArangoDB cuts longer words to this many characters.
pub const MAX_WORD_LENGTH: usize = 40;

/// Words of one document counted at most (bounds the index work per write).
const MAX_WORDS_PER_DOCUMENT: usize = 100_000;

/// Query terms accepted in one `FULLTEXT()` call.
const MAX_QUERY_TERMS: usize = 32;

fn words_of(text: &str, min_length: usize, out: &mut BTreeSet<String>) {
    let normalized: String = text.nfc().collect();
    for word in normalized.split(|c: char| !c.is_alphanumeric()) {
        if out.len() >= MAX_WORDS_PER_DOCUMENT {
            return;
        }
        let count = word.chars().count();
        if count == 0 || count < min_length {
            continue;
        }
        let lower: String = word
            .chars()
            .flat_map(char::to_lowercase)
            .take(MAX_WORD_LENGTH)
            .collect();
        out.insert(lower);
    }
}

/// The words an attribute value contributes to a fulltext index.
pub fn words(value: &Value, min_length: usize) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    match value {
        Value::String(s) => words_of(s, min_length, &mut out),
        Value::Array(items) => {
            for item in items {
                if let Value::String(s) = item {
                    words_of(s, min_length, &mut out);
                }
            }
        }
        Value::Object(map) => {
            for item in map.values() {
                if let Value::String(s) = item {
                    words_of(s, min_length, &mut out);
                }
            }
        }
        _ => {}
    }
    out
}

/// How a term combines with the result so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    And,
    Or,
    Not,
}

/// One comma-separated term of a fulltext query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub op: Op,
    pub word: String,
    pub prefix: bool,
}

/// A parsed `FULLTEXT()` query: terms applied left to right.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    pub terms: Vec<Term>,
}

impl Query {
    /// Parses `"word,+word,|prefix:wo,-complete:word"`. Error 10 (ArangoDB's "invalid value
    /// for fulltext query") when no term remains.
    pub fn parse(text: &str) -> Result<Query> {
        let mut terms = Vec::new();
        for raw in text.split(',') {
            let mut part = raw.trim();
            if part.is_empty() {
                continue;
            }
            let op = match part.as_bytes()[0] {
                b'+' => Op::And,
                b'|' => Op::Or,
                b'-' => Op::Not,
                _ => Op::And,
            };
            if matches!(part.as_bytes()[0], b'+' | b'|' | b'-') {
                part = part[1..].trim_start();
            }
            let mut prefix = false;
            let lower = part.to_lowercase();
            if let Some(rest) = lower.strip_prefix("prefix:") {
                prefix = true;
                part = &part[part.len() - rest.len()..];
            } else if let Some(rest) = lower.strip_prefix("complete:") {
                part = &part[part.len() - rest.len()..];
            }
            // A term like "foo-bar" names its first word, as ArangoDB's tokenizer stops there.
            let Some(word) = part
                .nfc()
                .collect::<String>()
                .split(|c: char| !c.is_alphanumeric())
                .find(|w| !w.is_empty())
                .map(|w| {
                    w.chars()
                        .flat_map(char::to_lowercase)
                        .take(MAX_WORD_LENGTH)
                        .collect::<String>()
                })
            else {
                continue;
            };
            if terms.len() >= MAX_QUERY_TERMS {
                return Err(Error::with_message(
                    ErrorCode::BadParameter,
                    format!("fulltext query has more than {MAX_QUERY_TERMS} terms"),
                ));
            }
            terms.push(Term { op, word, prefix });
        }
        if terms.is_empty() {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                "invalid value for fulltext query",
            ));
        }
        Ok(Query { terms })
    }

    fn term_matches(term: &Term, words: &BTreeSet<String>) -> bool {
        if term.prefix {
            words
                .range(term.word.clone()..)
                .next()
                .is_some_and(|w| w.starts_with(&term.word))
        } else {
            words.contains(&term.word)
        }
    }

    /// Whether a document with these words matches.
    pub fn matches(&self, words: &BTreeSet<String>) -> bool {
        let mut result = false;
        for (i, term) in self.terms.iter().enumerate() {
            let hit = Query::term_matches(term, words);
            result = match (i, term.op) {
                (0, Op::Not) => !hit,
                (0, _) => hit,
                (_, Op::And) => result && hit,
                (_, Op::Or) => result || hit,
                (_, Op::Not) => result && !hit,
            };
        }
        result
    }
}

/// A word → documents index (documents named by key). Keys are re-checked by the caller
/// against its snapshot, so the index only needs to be a superset of the current matches.
#[derive(Debug, Default)]
pub struct FulltextIndex {
    pub min_length: usize,
    words: BTreeMap<String, HashSet<String>>,
    documents: std::collections::HashMap<String, BTreeSet<String>>,
}

impl FulltextIndex {
    pub fn new(min_length: usize) -> FulltextIndex {
        FulltextIndex {
            min_length: min_length.max(1),
            ..FulltextIndex::default()
        }
    }

    /// Indexes (or re-indexes) a document's attribute value.
    pub fn insert(&mut self, key: &str, value: &Value) {
        self.remove(key);
        let words = words(value, self.min_length);
        if words.is_empty() {
            return;
        }
        for w in &words {
            self.words
                .entry(w.clone())
                .or_default()
                .insert(key.to_string());
        }
        self.documents.insert(key.to_string(), words);
    }

    pub fn remove(&mut self, key: &str) {
        if let Some(words) = self.documents.remove(key) {
            for w in words {
                if let Some(keys) = self.words.get_mut(&w) {
                    keys.remove(key);
                    if keys.is_empty() {
                        self.words.remove(&w);
                    }
                }
            }
        }
    }

    fn term_keys(&self, term: &Term) -> HashSet<String> {
        if term.prefix {
            let mut out = HashSet::new();
            for (w, keys) in self.words.range(term.word.clone()..) {
                if !w.starts_with(&term.word) {
                    break;
                }
                out.extend(keys.iter().cloned());
            }
            out
        } else {
            self.words.get(&term.word).cloned().unwrap_or_default()
        }
    }

    /// Keys of the documents matching `query`, in key order, at most `limit` (0 = all).
    pub fn query(&self, query: &Query, limit: usize) -> Vec<String> {
        let mut result: HashSet<String> = HashSet::new();
        for (i, term) in query.terms.iter().enumerate() {
            let keys = self.term_keys(term);
            result = match (i, term.op) {
                (0, Op::Not) => self
                    .documents
                    .keys()
                    .filter(|k| !keys.contains(*k))
                    .cloned()
                    .collect(),
                (0, _) => keys,
                (_, Op::And) => result.intersection(&keys).cloned().collect(),
                (_, Op::Or) => result.union(&keys).cloned().collect(),
                (_, Op::Not) => result.difference(&keys).cloned().collect(),
            };
        }
        let mut out: Vec<String> = result.into_iter().collect();
        out.sort();
        if limit > 0 {
            out.truncate(limit);
        }
        out
    }

    pub fn len(&self) -> usize {
        self.documents.len()
    }

    pub fn is_empty(&self) -> bool {
        self.documents.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tokenizing() {
        let w = words(&json!("The quick brown Fox, the lazy DOG; Äpfel-Öl x"), 2);
        let expected: BTreeSet<String> =
            ["the", "quick", "brown", "fox", "lazy", "dog", "äpfel", "öl"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        assert_eq!(w, expected);
        assert_eq!(words(&json!(["ab cd", 5, "ef"]), 2).len(), 3);
        assert_eq!(words(&json!({"a": "hello", "b": ["nested"]}), 2).len(), 1);
        assert!(words(&json!(42), 1).is_empty());
        let long = "a".repeat(60);
        assert_eq!(words(&json!(long), 2).iter().next().unwrap().len(), 40);
    }

    #[test]
    fn queries_match_like_the_index() {
        let docs = [
            ("1", json!("apple banana cherry")),
            ("2", json!("banana bread")),
            ("3", json!("cherry pie with apples")),
            ("4", json!("nothing here")),
        ];
        let mut index = FulltextIndex::new(2);
        for (k, v) in &docs {
            index.insert(k, v);
        }
        for (q, expected) in [
            ("banana", vec!["1", "2"]),
            ("banana,cherry", vec!["1"]),
            ("banana,|cherry", vec!["1", "2", "3"]),
            ("banana,-bread", vec!["1"]),
            ("prefix:app", vec!["1", "3"]),
            ("complete:apple", vec!["1"]),
            ("PREFIX:CHE,-pie", vec!["1"]),
            ("-banana", vec!["3", "4"]),
        ] {
            let query = Query::parse(q).unwrap();
            assert_eq!(index.query(&query, 0), expected, "{q}");
            let scanned: Vec<&str> = docs
                .iter()
                .filter(|(_, v)| query.matches(&words(v, 2)))
                .map(|(k, _)| *k)
                .collect();
            assert_eq!(scanned, expected, "{q} by scan");
        }
        assert_eq!(index.query(&Query::parse("banana").unwrap(), 1), vec!["1"]);
        index.insert("2", &json!("rye"));
        assert_eq!(index.query(&Query::parse("banana").unwrap(), 0), vec!["1"]);
        index.remove("1");
        assert!(index.query(&Query::parse("banana").unwrap(), 0).is_empty());
        assert_eq!(index.len(), 3);
        assert!(Query::parse(" , ,").is_err());
    }
}
