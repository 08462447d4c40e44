//! Fulltext semantics of ArangoDB's (deprecated but still used) fulltext index: how a
//! document's attribute becomes a set of words, how a `FULLTEXT()` query string is parsed, and
//! the maintained word index that answers such queries (kept per `maintained.rs`).
//!
//! Words are maximal runs of letters and digits, lower-cased, NFC-normalized, at least
//! `minLength` characters and cut to 40 characters. A string attribute is indexed; for an array
//! or object the string values directly inside it are indexed (ArangoDB goes one level deep).

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use quiver_errors::{Error, ErrorCode, Result};
use quiver_types::Revision;
use serde_json::{Map, Value};

use crate::indexes::definition::IndexDef;
use crate::indexes::structure::IndexStructure;
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

/// A document version named in the index: its key and the revision whose words are filed.
type Entry = (Arc<str>, Revision);

/// The maintained fulltext index (see `maintained.rs` for the snapshot protocol): an ordered
/// word map (so a `prefix:` term is one range walk) from each word to the document versions
/// containing it, plus the set of indexed versions (the universe an exclusion-first query
/// starts from). Only documents whose attribute yields at least one word are indexed, as in
/// ArangoDB.
pub(crate) struct FulltextIndex {
    attribute: String,
    min_length: usize,
    words: BTreeMap<String, HashSet<Entry>>,
    documents: HashSet<Entry>,
}

/// The words `doc` files under `attribute` (a dotted path) in an index of `min_length`.
pub fn document_words(
    doc: &Map<String, Value>,
    attribute: &str,
    min_length: usize,
) -> BTreeSet<String> {
    let (top, rest) = match attribute.split_once('.') {
        Some((top, rest)) => (top, Some(rest)),
        None => (attribute, None),
    };
    let Some(value) = doc.get(top) else {
        return BTreeSet::new();
    };
    let value = match rest {
        Some(path) => match crate::geo::attribute(value, path) {
            Some(v) => v,
            None => return BTreeSet::new(),
        },
        None => value,
    };
    words(value, min_length)
}

impl FulltextIndex {
    pub fn new(def: &IndexDef) -> FulltextIndex {
        let min_length = def
            .extra
            .get("minLength")
            .and_then(Value::as_u64)
            .unwrap_or(2);
        FulltextIndex {
            attribute: def.fields.first().cloned().unwrap_or_default(),
            min_length: (min_length as usize).max(1),
            words: BTreeMap::new(),
            documents: HashSet::new(),
        }
    }

    fn term_keys(&self, term: &Term, out: &mut HashSet<Arc<str>>) {
        if term.prefix {
            for (w, entries) in self.words.range(term.word.clone()..) {
                if !w.starts_with(&term.word) {
                    break;
                }
                out.extend(entries.iter().map(|(k, _)| Arc::clone(k)));
            }
        } else if let Some(entries) = self.words.get(&term.word) {
            out.extend(entries.iter().map(|(k, _)| Arc::clone(k)));
        }
    }

    /// Keys of a superset of the documents (of any version filed here) that can match
    /// `query`: conjunctions intersect, disjunctions unite, and exclusions are left to the
    /// caller's exact re-check (subtracting a superset could drop a real match). An
    /// exclusion-first query starts from every indexed document.
    pub fn candidates(&self, query: &Query) -> HashSet<Arc<str>> {
        let mut result: HashSet<Arc<str>> = HashSet::new();
        for (i, term) in query.terms.iter().enumerate() {
            match (i, term.op) {
                (0, Op::Not) => {
                    result = self.documents.iter().map(|(k, _)| Arc::clone(k)).collect();
                }
                (_, Op::Not) => {}
                (0, _) | (_, Op::Or) => self.term_keys(term, &mut result),
                (_, Op::And) => {
                    let mut keys = HashSet::new();
                    self.term_keys(term, &mut keys);
                    result.retain(|k| keys.contains(k));
                }
            }
        }
        result
    }
}

impl IndexStructure for FulltextIndex {
    fn insert(&mut self, key: &Arc<str>, rev: Revision, doc: &Map<String, Value>) {
        let words = document_words(doc, &self.attribute, self.min_length);
        if words.is_empty() {
            return;
        }
        for w in words {
            self.words
                .entry(w)
                .or_default()
                .insert((Arc::clone(key), rev));
        }
        self.documents.insert((Arc::clone(key), rev));
    }

    fn remove(&mut self, key: &str, rev: Revision, doc: &Map<String, Value>) {
        let entry: Entry = (Arc::from(key), rev);
        if !self.documents.remove(&entry) {
            return;
        }
        for w in document_words(doc, &self.attribute, self.min_length) {
            if let Some(entries) = self.words.get_mut(&w) {
                entries.remove(&entry);
                if entries.is_empty() {
                    self.words.remove(&w);
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.documents.len()
    }

    fn selectivity(&self) -> Option<f64> {
        None
    }

    fn fresh(&self) -> Box<dyn IndexStructure> {
        Box::new(FulltextIndex {
            attribute: self.attribute.clone(),
            min_length: self.min_length,
            words: BTreeMap::new(),
            documents: HashSet::new(),
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
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

    fn index(min_length: u64) -> FulltextIndex {
        let def = IndexDef::parse(
            &json!({"type": "fulltext", "fields": ["body.text"], "minLength": min_length}),
            7,
        )
        .unwrap();
        FulltextIndex::new(&def)
    }

    fn doc(text: Value) -> Map<String, Value> {
        json!({"body": {"text": text}})
            .as_object()
            .cloned()
            .unwrap()
    }

    #[test]
    fn candidates_cover_every_match_and_the_scan_agrees() {
        let docs = [
            ("1", json!("apple banana cherry")),
            ("2", json!("banana bread")),
            ("3", json!("cherry pie with apples")),
            ("4", json!("nothing here")),
            ("5", json!(17)),
        ];
        let mut ix = index(2);
        for (k, v) in &docs {
            ix.insert(&Arc::from(*k), Revision(1), &doc(v.clone()));
        }
        // Document 5 has no words: not indexed, so not in any exclusion-first result.
        assert_eq!(ix.len(), 4);
        for (q, expected) in [
            ("banana", vec!["1", "2"]),
            ("banana,cherry", vec!["1"]),
            ("banana,|cherry", vec!["1", "2", "3"]),
            ("banana,-bread", vec!["1"]),
            ("prefix:app", vec!["1", "3"]),
            ("complete:apple", vec!["1"]),
            ("PREFIX:CHE,-pie", vec!["1"]),
            ("-banana", vec!["3", "4"]),
            ("-banana,|bread", vec!["2", "3", "4"]),
        ] {
            let query = Query::parse(q).unwrap();
            let candidates = ix.candidates(&query);
            let mut exact: Vec<&str> = docs
                .iter()
                .filter(|(k, v)| {
                    let words = document_words(&doc(v.clone()), "body.text", 2);
                    let hit = !words.is_empty() && query.matches(&words);
                    assert!(!hit || candidates.contains(*k), "{q}: {k} not a candidate");
                    hit
                })
                .map(|(k, _)| *k)
                .collect();
            exact.sort();
            assert_eq!(exact, expected, "{q}");
        }
        // Conjunctions narrow the candidates, they are not the whole collection.
        assert_eq!(
            ix.candidates(&Query::parse("banana,cherry").unwrap()).len(),
            1
        );
    }

    #[test]
    fn versions_are_filed_and_removed_separately() {
        let mut ix = index(3);
        let key: Arc<str> = Arc::from("k");
        ix.insert(&key, Revision(1), &doc(json!("old words")));
        ix.insert(&key, Revision(2), &doc(json!("new text")));
        let q = |ix: &FulltextIndex, s: &str| ix.candidates(&Query::parse(s).unwrap()).len();
        assert_eq!((q(&ix, "old"), q(&ix, "new")), (1, 1));
        ix.remove("k", Revision(1), &doc(json!("old words")));
        assert_eq!((q(&ix, "old"), q(&ix, "new")), (0, 1));
        // Removing a version that was never filed changes nothing.
        ix.remove("k", Revision(9), &doc(json!("new text")));
        assert_eq!(q(&ix, "new"), 1);
        ix.remove("k", Revision(2), &doc(json!("new text")));
        assert_eq!(ix.len(), 0);
        assert!(ix.words.is_empty());
        // minLength 3: "ab" is not a word of this index.
        ix.insert(&key, Revision(3), &doc(json!("ab abc")));
        assert_eq!((q(&ix, "ab"), q(&ix, "abc")), (0, 1));
    }
}
