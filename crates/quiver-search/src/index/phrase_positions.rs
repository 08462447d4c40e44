//! A PHRASE whose positions are sets of terms (ArangoDB's object tokens `TERMS`,
//! `STARTS_WITH`, `WILDCARD`, `LEVENSHTEIN_MATCH`, `IN_RANGE`, or offsets that are not
//! increasing) as a tantivy query. Per segment every position is expanded to the terms of the
//! dictionary it matches, their positional postings are read, and a document matches when
//! some start position `p` has, for every phrase position `i`, a matching term at
//! `p + offset_i`. Tantivy's own phrase query takes one exact term per position only.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use tantivy::postings::{Postings, TermInfo};
use tantivy::query::{ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Score, SegmentReader, TERMINATED};

use super::ngram_similarity::SortedDocs;

/// Most dictionary terms one phrase position may expand to in a segment; past it the search
/// fails rather than reading an unbounded number of postings.
pub const MAX_EXPANSIONS: usize = 65_536;

/// Which (encoded) terms of the dictionary one phrase position accepts.
#[derive(Clone, Debug, PartialEq)]
pub enum TermMatcher {
    /// Any of these terms.
    Exact(Vec<String>),
    /// Terms starting with this.
    Prefix(String),
    /// Terms starting with `start` whose text after `field` matches a LIKE pattern.
    Like {
        field: String,
        start: String,
        pattern: Vec<LikeItem>,
    },
    /// Terms starting with `prefix` whose rest is within `distance` edits of `target`
    /// (Damerau-Levenshtein with `transpositions`); `max_terms` (0: all) keeps the closest.
    Levenshtein {
        prefix: String,
        target: Vec<char>,
        distance: u8,
        transpositions: bool,
        max_terms: usize,
    },
    /// Terms starting with `prefix` between the bounds.
    Range {
        prefix: String,
        lower: Bound<String>,
        upper: Bound<String>,
    },
}

/// One element of a LIKE pattern.
#[derive(Clone, Debug, PartialEq)]
pub enum LikeItem {
    Char(char),
    /// `_`
    One,
    /// `%`
    Any,
}

impl TermMatcher {
    /// A LIKE pattern (`%`, `_`, `\` escapes) over the terms of `field` (a string prefix);
    /// its leading literal characters narrow the dictionary scan.
    pub fn like(field: &str, pattern: &str) -> TermMatcher {
        let mut items = Vec::new();
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            items.push(match c {
                '\\' => LikeItem::Char(chars.next().unwrap_or('\\')),
                '%' => LikeItem::Any,
                '_' => LikeItem::One,
                c => LikeItem::Char(c),
            });
        }
        let mut start = field.to_string();
        for item in &items {
            match item {
                LikeItem::Char(c) => start.push(*c),
                _ => break,
            }
        }
        TermMatcher::Like {
            field: field.to_string(),
            start,
            pattern: items,
        }
    }

    /// Whether this position accepts the encoded term `term` (`max_terms` aside).
    pub fn accepts(&self, term: &str) -> bool {
        match self {
            TermMatcher::Exact(terms) => terms.iter().any(|t| t == term),
            TermMatcher::Prefix(prefix) => term.starts_with(prefix.as_str()),
            TermMatcher::Like {
                field,
                start,
                pattern,
            } => term.starts_with(start.as_str()) && like_matches(pattern, &term[field.len()..]),
            TermMatcher::Levenshtein {
                prefix,
                target,
                distance,
                transpositions,
                ..
            } => term.strip_prefix(prefix.as_str()).is_some_and(|rest| {
                let rest: Vec<char> = rest.chars().collect();
                edit_distance(target, &rest, *transpositions, *distance as usize).is_some()
            }),
            TermMatcher::Range {
                prefix,
                lower,
                upper,
            } => {
                term.starts_with(prefix.as_str())
                    && match lower {
                        Bound::Included(l) => term >= l.as_str(),
                        Bound::Excluded(l) => term > l.as_str(),
                        Bound::Unbounded => true,
                    }
                    && match upper {
                        Bound::Included(u) => term <= u.as_str(),
                        Bound::Excluded(u) => term < u.as_str(),
                        Bound::Unbounded => true,
                    }
            }
        }
    }

    /// The terms of the segment's dictionary this position accepts.
    pub(crate) fn expand(
        &self,
        dictionary: &tantivy::termdict::TermDictionary,
    ) -> tantivy::Result<Vec<TermInfo>> {
        let too_many = || {
            tantivy::TantivyError::InvalidArgument(format!(
                "a PHRASE position matches more than {MAX_EXPANSIONS} terms"
            ))
        };
        // Terms from `start` on while they start with `within`, filtered by `keep`.
        let scan = |start: &str,
                    within: &str,
                    keep: &mut dyn FnMut(&str) -> bool,
                    out: &mut Vec<(String, TermInfo)>|
         -> tantivy::Result<()> {
            let mut stream = dictionary.range().ge(start.as_bytes()).into_stream()?;
            while stream.advance() {
                let Ok(key) = std::str::from_utf8(stream.key()) else {
                    continue;
                };
                if !key.starts_with(within) {
                    break;
                }
                if keep(key) {
                    if out.len() >= MAX_EXPANSIONS {
                        return Err(too_many());
                    }
                    out.push((key.to_string(), stream.value().clone()));
                }
            }
            Ok(())
        };
        let mut found: Vec<(String, TermInfo)> = Vec::new();
        match self {
            TermMatcher::Exact(terms) => {
                for term in terms {
                    if let Some(info) = dictionary.get(term.as_bytes())? {
                        found.push((term.clone(), info));
                    }
                }
            }
            TermMatcher::Prefix(prefix) => scan(prefix, prefix, &mut |_| true, &mut found)?,
            TermMatcher::Like {
                field,
                start,
                pattern,
            } => scan(
                start,
                start,
                &mut |key| like_matches(pattern, &key[field.len()..]),
                &mut found,
            )?,
            TermMatcher::Levenshtein {
                prefix,
                target,
                distance,
                transpositions,
                max_terms,
            } => {
                let mut scored: Vec<(usize, String, TermInfo)> = Vec::new();
                let mut stream = dictionary.range().ge(prefix.as_bytes()).into_stream()?;
                while stream.advance() {
                    let Ok(key) = std::str::from_utf8(stream.key()) else {
                        continue;
                    };
                    if !key.starts_with(prefix.as_str()) {
                        break;
                    }
                    let rest: Vec<char> = key[prefix.len()..].chars().collect();
                    if let Some(d) =
                        edit_distance(target, &rest, *transpositions, *distance as usize)
                    {
                        if scored.len() >= MAX_EXPANSIONS {
                            return Err(too_many());
                        }
                        scored.push((d, key.to_string(), stream.value().clone()));
                    }
                }
                scored.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
                if *max_terms > 0 {
                    scored.truncate(*max_terms);
                }
                found.extend(scored.into_iter().map(|(_, k, i)| (k, i)));
            }
            TermMatcher::Range {
                prefix,
                lower,
                upper,
            } => {
                let start = match lower {
                    Bound::Included(s) | Bound::Excluded(s) => s.as_str(),
                    Bound::Unbounded => prefix.as_str(),
                };
                scan(
                    start,
                    prefix,
                    &mut |key| {
                        let above = match lower {
                            Bound::Included(l) => key >= l.as_str(),
                            Bound::Excluded(l) => key > l.as_str(),
                            Bound::Unbounded => true,
                        };
                        let below = match upper {
                            Bound::Included(u) => key <= u.as_str(),
                            Bound::Excluded(u) => key < u.as_str(),
                            Bound::Unbounded => true,
                        };
                        above && below
                    },
                    &mut found,
                )?
            }
        }
        Ok(found.into_iter().map(|(_, info)| info).collect())
    }
}

/// Documents holding a term of every position at the position's offset from a common start.
#[derive(Clone, Debug)]
pub struct PositionalPhraseQuery {
    field: Field,
    positions: Vec<(i64, TermMatcher)>,
}

impl PositionalPhraseQuery {
    /// `positions`: (offset, terms accepted there); offsets may repeat or decrease.
    pub fn new(field: Field, positions: Vec<(i64, TermMatcher)>) -> PositionalPhraseQuery {
        PositionalPhraseQuery { field, positions }
    }

    /// The segment's matching documents, ascending (deleted ones included: the collector
    /// skips those).
    fn matching_docs(&self, reader: &SegmentReader) -> tantivy::Result<Vec<DocId>> {
        if self.positions.is_empty() {
            return Ok(Vec::new());
        }
        let inverted = reader.inverted_index(self.field)?;
        // Per phrase position: document → sorted positions of accepted terms. Positions
        // are read in order, each only for documents every earlier one matched.
        let mut candidates: Option<BTreeMap<DocId, Vec<Vec<u32>>>> = None;
        let mut buffer = Vec::new();
        for (index, (_, matcher)) in self.positions.iter().enumerate() {
            let infos = matcher.expand(inverted.terms())?;
            let mut here: HashMap<DocId, Vec<u32>> = HashMap::new();
            for info in infos {
                let mut postings = inverted
                    .read_postings_from_terminfo(&info, IndexRecordOption::WithFreqsAndPositions)?;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    let wanted = candidates.as_ref().is_none_or(|c| c.contains_key(&doc));
                    if wanted {
                        buffer.clear();
                        postings.positions(&mut buffer);
                        here.entry(doc).or_default().extend_from_slice(&buffer);
                    }
                    doc = postings.advance();
                }
            }
            let next = match candidates.take() {
                None => here
                    .into_iter()
                    .map(|(doc, mut list)| {
                        list.sort_unstable();
                        list.dedup();
                        (doc, vec![list])
                    })
                    .collect(),
                Some(mut previous) => {
                    previous.retain(|doc, lists| match here.remove(doc) {
                        Some(mut list) => {
                            list.sort_unstable();
                            list.dedup();
                            lists.push(list);
                            true
                        }
                        None => false,
                    });
                    previous
                }
            };
            if next.is_empty() {
                return Ok(Vec::new());
            }
            debug_assert!(next.values().all(|l| l.len() == index + 1));
            candidates = Some(next);
        }
        let offsets: Vec<i64> = self.positions.iter().map(|(o, _)| *o).collect();
        Ok(candidates
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, lists)| phrase_at_some_start(&offsets, lists))
            .map(|(doc, _)| doc)
            .collect())
    }
}

/// Whether some start `p` has `p + offsets[i] - offsets[0]` in `lists[i]` for every `i`
/// (each list sorted).
pub fn phrase_at_some_start(offsets: &[i64], lists: &[Vec<u32>]) -> bool {
    let Some(first) = lists.first() else {
        return false;
    };
    first.iter().any(|&p| {
        offsets.iter().zip(lists).skip(1).all(|(offset, list)| {
            let at = p as i64 + offset - offsets[0];
            at >= 0 && u32::try_from(at).is_ok_and(|at| list.binary_search(&at).is_ok())
        })
    })
}

impl Query for PositionalPhraseQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for PositionalPhraseQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let docs = self.matching_docs(reader)?;
        Ok(Box::new(ConstScorer::new(SortedDocs::new(docs), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        if self.matching_docs(reader)?.binary_search(&doc).is_ok() {
            Ok(Explanation::new("PositionalPhraseQuery", 1.0))
        } else {
            Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )))
        }
    }
}

/// Whether `text` matches a LIKE pattern as a whole (dynamic programming over the pattern:
/// O(|pattern| · |text|)).
pub fn like_matches(pattern: &[LikeItem], text: &str) -> bool {
    let text: Vec<char> = text.chars().collect();
    // reach[j]: the pattern so far can consume exactly the first j characters.
    let mut reach = vec![false; text.len() + 1];
    reach[0] = true;
    for item in pattern {
        let mut next = vec![false; text.len() + 1];
        match item {
            LikeItem::Any => {
                let mut any = false;
                for j in 0..=text.len() {
                    any |= reach[j];
                    next[j] = any;
                }
            }
            LikeItem::One => {
                next[1..].copy_from_slice(&reach[..text.len()]);
            }
            LikeItem::Char(c) => {
                for j in 0..text.len() {
                    next[j + 1] = reach[j] && text[j] == *c;
                }
            }
        }
        reach = next;
    }
    reach[text.len()]
}

/// The (Damerau-)Levenshtein distance of `a` and `b` (optimal string alignment with
/// `transpositions`) when it is at most `max`, None beyond.
pub fn edit_distance(a: &[char], b: &[char], transpositions: bool, max: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let width = b.len() + 1;
    let mut before: Vec<usize> = vec![0; width];
    let mut previous: Vec<usize> = (0..width).collect();
    let mut current = vec![0; width];
    for i in 1..=a.len() {
        current[0] = i;
        let mut row_min = current[0];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut value = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if transpositions && i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                value = value.min(before[j - 2] + 1);
            }
            current[j] = value;
            row_min = row_min.min(value);
        }
        if row_min > max {
            return None;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    let distance = previous[b.len()];
    (distance <= max).then_some(distance)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn like(pattern: &str, text: &str) -> bool {
        let TermMatcher::Like { pattern, .. } = TermMatcher::like("", pattern) else {
            unreachable!()
        };
        like_matches(&pattern, text)
    }

    #[test]
    fn like_patterns() {
        assert!(like("b%o_n", "brown"));
        assert!(like("b%o_n", "boon"));
        assert!(!like("b%o_n", "brow"));
        assert!(like("%", ""));
        assert!(!like("_", ""));
        assert!(like("a\\%", "a%"));
        assert!(!like("a\\%", "ab"));
        let TermMatcher::Like { start, .. } = TermMatcher::like("f:", "ab%c") else {
            unreachable!()
        };
        assert_eq!(start, "f:ab");
    }

    /// Every edit distance up to 3 against a brute-force recursive definition.
    #[test]
    fn edit_distances_against_brute_force() {
        fn reference(a: &[char], b: &[char], t: bool) -> usize {
            if a.is_empty() || b.is_empty() {
                return a.len().max(b.len());
            }
            let (i, j) = (a.len(), b.len());
            let mut best = (reference(&a[..i - 1], b, t) + 1)
                .min(reference(a, &b[..j - 1], t) + 1)
                .min(reference(&a[..i - 1], &b[..j - 1], t) + usize::from(a[i - 1] != b[j - 1]));
            if t && i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(reference(&a[..i - 2], &b[..j - 2], t) + 1);
            }
            best
        }
        let words = [
            "", "a", "ab", "ba", "abc", "acb", "fox", "foks", "fx", "kitten", "sitting",
        ];
        for a in words {
            for b in words {
                let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
                for t in [false, true] {
                    let want = reference(&a, &b, t);
                    for max in 0..4 {
                        let got = edit_distance(&a, &b, t, max);
                        assert_eq!(got, (want <= max).then_some(want), "{a:?} {b:?} {t} {max}");
                    }
                }
            }
        }
    }

    #[test]
    fn starts_must_line_up() {
        let lists = vec![vec![1, 5], vec![3, 7], vec![6]];
        assert!(phrase_at_some_start(&[0, 2, 1], &lists));
        assert!(!phrase_at_some_start(&[0, 2, 2], &lists));
        assert!(!phrase_at_some_start(&[0], &[]));
    }
}
