//! Nested search (`d.dims[? quantifier FILTER …]` over a `nested` field) as a tantivy query.
//!
//! Tantivy has no block join, so the objects of a nested field's array are not documents of
//! their own: they stay in their document, and each owns a range of positions
//! (`encode::ELEMENT_STRIDE`). Every term of an element's attributes sits in the element's
//! range, and every element leaves one `o␟dims[?]` term at its first position (`document.rs`).
//! A condition over elements is then answered per document on element numbers
//! (`position / ELEMENT_STRIDE`): a leaf gives the elements holding one of its terms, `AND`,
//! `OR`, `NOT` and `MIN_MATCH` combine element sets (`NOT` within the document's elements),
//! and the quantifier compares the number of matching elements with its bounds (`ALL`: with
//! the number of elements). Elements are numbered depth first, an element's own nested
//! elements right after it, so the parent of an inner element is the last outer element
//! numbered before it.

use std::collections::{BTreeSet, HashMap};
use std::ops::Bound;

use quiver_errors::{Error, ErrorCode, Result};
use tantivy::postings::Postings;
use tantivy::query::{ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED};

use super::encode;
use super::ngram_similarity::SortedDocs;
use super::phrase_positions::TermMatcher;
use super::query::{value_term, ElementCount, ExistsKind, SearchQuery, SearchValue};

/// A condition over the elements of one nested field.
#[derive(Clone, Debug)]
enum ElementCond {
    All,
    Nothing,
    /// The elements holding a term the matcher (by index) accepts.
    Leaf(usize),
    And(Vec<ElementCond>),
    Or(Vec<ElementCond>),
    Not(Box<ElementCond>),
    MinMatch(Vec<ElementCond>, usize),
    /// The elements whose own elements of a nested field match as counted.
    Nested(Box<Level>),
}

/// `path[? count FILTER cond]`: `path` is the element path (`dims[?]`).
#[derive(Clone, Debug)]
struct Level {
    path: String,
    count: ElementCount,
    cond: ElementCond,
}

/// The documents whose elements of a nested field match a condition as often as the
/// quantifier asks.
#[derive(Clone, Debug)]
pub struct NestedQuery {
    field: Field,
    top: Level,
    leaves: Vec<TermMatcher>,
}

impl ElementCount {
    /// Whether `matched` of `total` elements satisfy this count.
    pub fn holds(&self, matched: usize, total: usize) -> bool {
        match *self {
            ElementCount::All => matched == total,
            ElementCount::Between { min, max } => {
                matched >= min && max.is_none_or(|m| matched <= m)
            }
        }
    }
}

fn not_in_element(path: &str, element: &str) -> Error {
    Error::with_message(
        ErrorCode::QueryParse,
        format!(
            "AQL: unsupported SEARCH condition: '{path}' is not an attribute of the nested \
             elements '{element}' (while parsing)"
        ),
    )
}

fn unsupported(what: &str) -> Error {
    Error::with_message(
        ErrorCode::NotImplemented,
        format!("{what} is not supported inside a nested search condition"),
    )
}

impl NestedQuery {
    /// The query for `path[? count FILTER cond]` (element path `path`, such as `dims[?]`).
    /// Errors: a condition on an attribute outside the elements (1501), and PHRASE,
    /// NGRAM_MATCH and MINHASH_MATCH on element attributes (9).
    pub fn new(
        field: Field,
        path: &str,
        count: ElementCount,
        cond: &SearchQuery,
    ) -> Result<NestedQuery> {
        let mut leaves = Vec::new();
        let cond = element_cond(cond, path, &mut leaves)?;
        Ok(NestedQuery {
            field,
            top: Level {
                path: path.to_string(),
                count,
                cond,
            },
            leaves,
        })
    }
}

fn element_cond(
    query: &SearchQuery,
    element: &str,
    leaves: &mut Vec<TermMatcher>,
) -> Result<ElementCond> {
    let check = |path: &str| -> Result<()> {
        match path.strip_prefix(element) {
            Some(rest) if rest.starts_with('.') => Ok(()),
            _ => Err(not_in_element(path, element)),
        }
    };
    let mut leaf = |matcher: TermMatcher| {
        leaves.push(matcher);
        ElementCond::Leaf(leaves.len() - 1)
    };
    Ok(match query {
        SearchQuery::All => ElementCond::All,
        SearchQuery::Nothing => ElementCond::Nothing,
        SearchQuery::Term {
            path,
            analyzer,
            value,
        } => {
            check(path)?;
            leaf(TermMatcher::Exact(vec![value_term(path, analyzer, value)]))
        }
        SearchQuery::Range {
            path,
            analyzer,
            lower,
            upper,
        } => {
            check(path)?;
            match range_matcher(path, analyzer, lower, upper) {
                Some(m) => leaf(m),
                None => ElementCond::Nothing,
            }
        }
        SearchQuery::Exists { path, kind } => {
            check(path)?;
            leaf(TermMatcher::Exact(vec![match kind {
                ExistsKind::Any => encode::exists_term(path),
                ExistsKind::Type(t) => encode::type_term(path, t),
                ExistsKind::Analyzer(a) => encode::analyzer_term(path, a),
            }]))
        }
        SearchQuery::Prefix {
            path,
            analyzer,
            prefix,
        } => {
            check(path)?;
            leaf(TermMatcher::Prefix(encode::string_term(
                path, analyzer, prefix,
            )))
        }
        SearchQuery::Like {
            path,
            analyzer,
            pattern,
        } => {
            check(path)?;
            leaf(TermMatcher::like(
                &encode::string_prefix(path, analyzer),
                pattern,
            ))
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
            check(path)?;
            leaf(TermMatcher::Levenshtein {
                prefix: encode::string_term(path, analyzer, prefix),
                target: target.chars().collect(),
                distance: *distance,
                transpositions: *transpositions,
                max_terms: *max_terms,
            })
        }
        SearchQuery::Phrase { .. } => return Err(unsupported("PHRASE()")),
        SearchQuery::NgramMatch { .. } => return Err(unsupported("NGRAM_MATCH()")),
        SearchQuery::MinHashMatch { .. } => return Err(unsupported("MINHASH_MATCH()")),
        SearchQuery::Geo { .. } => return Err(unsupported("geo functions")),
        SearchQuery::And(list) => ElementCond::And(
            list.iter()
                .map(|q| element_cond(q, element, leaves))
                .collect::<Result<_>>()?,
        ),
        SearchQuery::Or(list) => ElementCond::Or(
            list.iter()
                .map(|q| element_cond(q, element, leaves))
                .collect::<Result<_>>()?,
        ),
        SearchQuery::MinMatch(list, min) => ElementCond::MinMatch(
            list.iter()
                .map(|q| element_cond(q, element, leaves))
                .collect::<Result<_>>()?,
            *min,
        ),
        SearchQuery::Not(inner) => {
            ElementCond::Not(Box::new(element_cond(inner, element, leaves)?))
        }
        SearchQuery::Boost(inner, _) => element_cond(inner, element, leaves)?,
        SearchQuery::Nested { path, count, cond } => {
            check(path)?;
            ElementCond::Nested(Box::new(Level {
                path: path.clone(),
                count: *count,
                cond: element_cond(cond, path, leaves)?,
            }))
        }
    })
}

/// The terms a range accepts (both bounds of one type, as `SearchQuery::to_tantivy`); None
/// when it accepts nothing.
fn range_matcher(
    path: &str,
    analyzer: &str,
    lower: &Option<(SearchValue, bool)>,
    upper: &Option<(SearchValue, bool)>,
) -> Option<TermMatcher> {
    let numeric = match lower.as_ref().or(upper.as_ref()).map(|b| &b.0)? {
        SearchValue::Number(_) => true,
        SearchValue::String(_) => false,
        _ => return None,
    };
    let prefix = if numeric {
        encode::number_prefix(path)
    } else {
        encode::string_prefix(path, analyzer)
    };
    let bound = |b: &Option<(SearchValue, bool)>| -> Option<Bound<String>> {
        Some(match b {
            None => Bound::Unbounded,
            Some((v, inclusive)) => {
                let term = match (v, numeric) {
                    (SearchValue::Number(_), true) | (SearchValue::String(_), false) => {
                        value_term(path, analyzer, v)
                    }
                    _ => return None,
                };
                if *inclusive {
                    Bound::Included(term)
                } else {
                    Bound::Excluded(term)
                }
            }
        })
    };
    Some(TermMatcher::Range {
        prefix,
        lower: bound(lower)?,
        upper: bound(upper)?,
    })
}

/// Per document, the sorted element numbers some term was found at.
type ElementsByDoc = HashMap<DocId, Vec<u32>>;

/// What one segment holds for a query: the elements of each leaf and of each nested field.
struct SegmentElements {
    leaves: Vec<ElementsByDoc>,
    fields: HashMap<String, ElementsByDoc>,
}

impl SegmentElements {
    fn field(&self, path: &str, doc: DocId) -> &[u32] {
        self.fields
            .get(path)
            .and_then(|m| m.get(&doc))
            .map_or(&[], Vec::as_slice)
    }

    /// The elements of `universe` (sorted) for which `cond` holds in `doc`.
    fn eval(&self, cond: &ElementCond, doc: DocId, universe: &[u32]) -> Vec<u32> {
        match cond {
            ElementCond::All => universe.to_vec(),
            ElementCond::Nothing => Vec::new(),
            ElementCond::Leaf(i) => {
                let found = self.leaves[*i].get(&doc).map_or(&[][..], Vec::as_slice);
                universe
                    .iter()
                    .copied()
                    .filter(|e| found.binary_search(e).is_ok())
                    .collect()
            }
            ElementCond::And(list) => {
                // Each part sees the whole universe (a nested part finds parents in it).
                let mut out = universe.to_vec();
                for c in list {
                    if out.is_empty() {
                        break;
                    }
                    let here = self.eval(c, doc, universe);
                    out.retain(|e| here.binary_search(e).is_ok());
                }
                out
            }
            ElementCond::Or(list) => {
                let mut out = BTreeSet::new();
                for c in list {
                    out.extend(self.eval(c, doc, universe));
                }
                out.into_iter().collect()
            }
            ElementCond::Not(inner) => {
                let no = self.eval(inner, doc, universe);
                universe
                    .iter()
                    .copied()
                    .filter(|e| no.binary_search(e).is_err())
                    .collect()
            }
            ElementCond::MinMatch(list, min) => {
                let mut hits: HashMap<u32, usize> = HashMap::new();
                for c in list {
                    for e in self.eval(c, doc, universe) {
                        *hits.entry(e).or_default() += 1;
                    }
                }
                universe
                    .iter()
                    .copied()
                    .filter(|e| hits.get(e).copied().unwrap_or(0) >= *min)
                    .collect()
            }
            ElementCond::Nested(level) => {
                let inner = self.field(&level.path, doc);
                let matched = self.eval(&level.cond, doc, inner);
                // Per outer element (by its index in `universe`): inner elements, matches.
                let mut totals = vec![(0usize, 0usize); universe.len()];
                let parent = |e: u32| universe.partition_point(|u| *u < e).checked_sub(1);
                for e in inner {
                    if let Some(p) = parent(*e) {
                        totals[p].0 += 1;
                    }
                }
                for e in &matched {
                    if let Some(p) = parent(*e) {
                        totals[p].1 += 1;
                    }
                }
                universe
                    .iter()
                    .zip(&totals)
                    .filter(|(_, (total, hit))| level.count.holds(*hit, *total))
                    .map(|(e, _)| *e)
                    .collect()
            }
        }
    }
}

/// Every nested field path a level reads, itself included.
fn level_paths<'a>(level: &'a Level, out: &mut Vec<&'a str>) {
    fn walk<'a>(cond: &'a ElementCond, out: &mut Vec<&'a str>) {
        match cond {
            ElementCond::And(list) | ElementCond::Or(list) | ElementCond::MinMatch(list, _) => {
                list.iter().for_each(|c| walk(c, out))
            }
            ElementCond::Not(inner) => walk(inner, out),
            ElementCond::Nested(level) => level_paths(level, out),
            _ => {}
        }
    }
    out.push(&level.path);
    walk(&level.cond, out);
}

impl NestedQuery {
    /// Per document, the element numbers of the terms `matcher` accepts in this segment.
    fn elements(
        &self,
        inverted: &tantivy::InvertedIndexReader,
        matcher: &TermMatcher,
    ) -> tantivy::Result<ElementsByDoc> {
        let mut out: ElementsByDoc = HashMap::new();
        let mut positions = Vec::new();
        for info in matcher.expand(inverted.terms())? {
            let mut postings = inverted
                .read_postings_from_terminfo(&info, IndexRecordOption::WithFreqsAndPositions)?;
            let mut doc = postings.doc();
            while doc != TERMINATED {
                positions.clear();
                postings.positions(&mut positions);
                out.entry(doc)
                    .or_default()
                    .extend(positions.iter().map(|p| p / encode::ELEMENT_STRIDE));
                doc = postings.advance();
            }
        }
        for list in out.values_mut() {
            list.sort_unstable();
            list.dedup();
        }
        Ok(out)
    }

    /// The segment's matching documents, ascending (deleted ones included: the collector
    /// skips those).
    fn matching_docs(&self, reader: &SegmentReader) -> tantivy::Result<Vec<DocId>> {
        let inverted = reader.inverted_index(self.field)?;
        let mut leaves = Vec::with_capacity(self.leaves.len());
        for matcher in &self.leaves {
            leaves.push(self.elements(&inverted, matcher)?);
        }
        let mut paths = Vec::new();
        level_paths(&self.top, &mut paths);
        let mut fields = HashMap::new();
        for path in paths {
            let matcher = TermMatcher::Exact(vec![encode::element_term(path)]);
            fields.insert(path.to_string(), self.elements(&inverted, &matcher)?);
        }
        let found = SegmentElements { leaves, fields };
        // Documents without elements match when the count accepts none.
        let candidates: Vec<DocId> = if self.top.count.holds(0, 0) {
            (0..reader.max_doc()).collect()
        } else {
            let mut docs: Vec<DocId> = found
                .fields
                .get(&self.top.path)
                .map(|m| m.keys().copied().collect())
                .unwrap_or_default();
            docs.sort_unstable();
            docs
        };
        let mut out = Vec::new();
        for doc in candidates {
            let universe = found.field(&self.top.path, doc);
            let matched = found.eval(&self.top.cond, doc, universe);
            if self.top.count.holds(matched.len(), universe.len()) {
                out.push(doc);
            }
        }
        Ok(out)
    }
}

impl Query for NestedQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for NestedQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let docs = self.matching_docs(reader)?;
        Ok(Box::new(ConstScorer::new(SortedDocs::new(docs), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        if self.matching_docs(reader)?.binary_search(&doc).is_ok() {
            Ok(Explanation::new("NestedQuery", 1.0))
        } else {
            Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert!(ElementCount::All.holds(0, 0));
        assert!(!ElementCount::All.holds(1, 2));
        let between = ElementCount::Between {
            min: 1,
            max: Some(2),
        };
        assert!(!between.holds(0, 3) && between.holds(2, 3) && !between.holds(3, 3));
    }
}
