//! `NGRAM_MATCH()` as a tantivy query: a document matches when the longest common
//! subsequence of the target's n-grams (in target order) and the document's n-grams of the
//! field (in position order) is at least `min_match` long — ArangoSearch's n-gram similarity.
//! Tantivy has no such query (its phrase query wants every term, at fixed offsets), so the
//! matching is written here over tantivy's positional postings.

use std::collections::{BTreeMap, HashMap};

use tantivy::postings::Postings;
use tantivy::query::{ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SegmentReader, Term, TERMINATED};

/// Most target n-grams compared (a longer target is cut, keeping the check bounded).
pub const MAX_TARGET_NGRAMS: usize = 4096;

/// Documents whose n-gram sequence shares a common subsequence of at least `min_match`
/// n-grams with `terms` (encoded n-gram terms of one field, in target order).
#[derive(Clone, Debug)]
pub struct NgramSimilarityQuery {
    field: Field,
    terms: Vec<String>,
    min_match: usize,
}

impl NgramSimilarityQuery {
    /// `min_match` is clamped to `1..=terms.len()`.
    pub fn new(field: Field, mut terms: Vec<String>, min_match: usize) -> NgramSimilarityQuery {
        terms.truncate(MAX_TARGET_NGRAMS);
        let min_match = min_match.clamp(1, terms.len().max(1));
        NgramSimilarityQuery {
            field,
            terms,
            min_match,
        }
    }
}

impl Query for NgramSimilarityQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for NgramSimilarityQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let docs = self.matching_docs(reader)?;
        Ok(Box::new(ConstScorer::new(SortedDocs::new(docs), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        if self.matching_docs(reader)?.binary_search(&doc).is_ok() {
            Ok(Explanation::new("NgramSimilarityQuery", 1.0))
        } else {
            Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )))
        }
    }
}

impl NgramSimilarityQuery {
    /// The segment's documents (ascending, deleted ones included: the collector skips those)
    /// whose longest common n-gram subsequence with the target reaches `min_match`.
    fn matching_docs(&self, reader: &SegmentReader) -> tantivy::Result<Vec<DocId>> {
        if self.terms.is_empty() {
            return Ok(Vec::new());
        }
        // Each distinct n-gram once; the target as a sequence of distinct-n-gram numbers.
        let mut distinct: HashMap<&str, usize> = HashMap::new();
        let target: Vec<usize> = self
            .terms
            .iter()
            .map(|t| {
                let next = distinct.len();
                *distinct.entry(t.as_str()).or_insert(next)
            })
            .collect();
        let inverted = reader.inverted_index(self.field)?;
        // Per document: (position, distinct n-gram number) of every occurrence.
        let mut occurrences: BTreeMap<DocId, Vec<(u32, usize)>> = BTreeMap::new();
        let mut positions = Vec::new();
        for (text, number) in &distinct {
            let term = Term::from_field_text(self.field, text);
            let Some(mut postings) =
                inverted.read_postings(&term, IndexRecordOption::WithFreqsAndPositions)?
            else {
                continue;
            };
            let mut doc = postings.doc();
            while doc != TERMINATED {
                positions.clear();
                postings.positions(&mut positions);
                let list = occurrences.entry(doc).or_default();
                list.extend(positions.iter().map(|p| (*p, *number)));
                doc = postings.advance();
            }
        }
        let mut out = Vec::new();
        for (doc, mut list) in occurrences {
            if list.len() < self.min_match {
                continue;
            }
            list.sort_unstable();
            let sequence: Vec<usize> = list.into_iter().map(|(_, n)| n).collect();
            if longest_common_subsequence(&target, &sequence) >= self.min_match {
                out.push(doc);
            }
        }
        Ok(out)
    }
}

/// Ascending document ids as a tantivy `DocSet` (tantivy's own is for its tests only).
pub(crate) struct SortedDocs {
    docs: Vec<DocId>,
    cursor: usize,
}

impl SortedDocs {
    pub(crate) fn new(docs: Vec<DocId>) -> SortedDocs {
        SortedDocs { docs, cursor: 0 }
    }
}

impl DocSet for SortedDocs {
    fn advance(&mut self) -> DocId {
        self.cursor = (self.cursor + 1).min(self.docs.len());
        self.doc()
    }

    fn doc(&self) -> DocId {
        self.docs.get(self.cursor).copied().unwrap_or(TERMINATED)
    }

    fn size_hint(&self) -> u32 {
        (self.docs.len() - self.cursor) as u32
    }
}

/// The length of the longest common subsequence of `a` and `b` (one row of the classic
/// table at a time: O(|a|·|b|) time, O(|a|) space).
pub fn longest_common_subsequence(a: &[usize], b: &[usize]) -> usize {
    let mut row = vec![0usize; a.len() + 1];
    for y in b {
        let mut diagonal = 0;
        for (i, x) in a.iter().enumerate() {
            let above = row[i + 1];
            row[i + 1] = if x == y {
                diagonal + 1
            } else {
                above.max(row[i])
            };
            diagonal = above;
        }
    }
    let best = row[a.len()];
    debug_assert!(best <= a.len().min(b.len()));
    best
}

#[cfg(test)]
mod tests {
    use super::longest_common_subsequence as lcs;

    #[test]
    fn common_subsequences() {
        assert_eq!(lcs(&[0, 1, 2, 3], &[0, 1, 2, 3]), 4);
        assert_eq!(lcs(&[0, 1, 2, 3], &[3, 2, 1, 0]), 1);
        assert_eq!(lcs(&[0, 1, 2, 3], &[0, 9, 2, 9, 3]), 3);
        assert_eq!(lcs(&[0, 1, 0], &[0, 0]), 2);
        assert_eq!(lcs(&[], &[1, 2]), 0);
    }
}
