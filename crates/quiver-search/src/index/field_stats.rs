//! The scorers' statistics of a field (attribute path under one analyzer), per segment: each
//! document's token count in the field (the number its field-length term `l␟…␟<tokens>` holds) and
//! the number and total length of the live documents having it. A segment's postings never
//! change and its deletions only grow, so (segment, number of deleted documents, field)
//! identifies one state: the statistics are computed once per state and kept while that state
//! is searched, and a scored query reads only the postings of its own terms.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use quiver_errors::{Error, ErrorCode, Result};
use tantivy::index::SegmentId;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, DocSet, Searcher, SegmentReader, TERMINATED};

use super::encode;

/// Entries kept at most (segments × scored fields); beyond, the cache starts over.
const MAX_ENTRIES: usize = 1024;

/// One field's statistics in one segment.
#[derive(Debug, Default)]
pub(super) struct SegmentFieldStats {
    /// Token count in the field by document id; 0 for documents without the field and for
    /// deleted documents.
    pub lengths: Vec<u32>,
    /// Live documents with at least one token in the field.
    pub docs_with_field: u64,
    /// Tokens of the field summed over those documents.
    pub total_length: u64,
}

type Key = (SegmentId, DocId, String);

/// The per-segment statistics of the fields scored so far.
#[derive(Default)]
pub(super) struct FieldStatsCache {
    entries: Mutex<HashMap<Key, Arc<SegmentFieldStats>>>,
}

impl FieldStatsCache {
    /// Drops the entries of segments (or deletion states) `searcher` no longer has.
    pub fn retain_searched(&self, searcher: &Searcher) {
        let current: HashSet<(SegmentId, DocId)> = searcher
            .segment_readers()
            .iter()
            .map(|s| (s.segment_id(), s.num_deleted_docs()))
            .collect();
        self.entries
            .lock()
            .retain(|(segment, deleted, _), _| current.contains(&(*segment, *deleted)));
    }

    /// The statistics of the field whose length terms start with `length_prefix` in
    /// `segment`.
    pub fn segment(
        &self,
        segment: &SegmentReader,
        terms: Field,
        length_prefix: &str,
    ) -> Result<Arc<SegmentFieldStats>> {
        let key = (
            segment.segment_id(),
            segment.num_deleted_docs(),
            length_prefix.to_string(),
        );
        if let Some(found) = self.entries.lock().get(&key) {
            return Ok(Arc::clone(found));
        }
        let stats = Arc::new(compute(segment, terms, length_prefix)?);
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(key, Arc::clone(&stats));
        Ok(stats)
    }
}

fn read_error(err: impl std::fmt::Display) -> Error {
    Error::with_message(
        ErrorCode::Internal,
        format!("view index: reading field lengths: {err}"),
    )
}

fn compute(
    segment: &SegmentReader,
    terms: Field,
    length_prefix: &str,
) -> Result<SegmentFieldStats> {
    let mut stats = SegmentFieldStats::default();
    let inverted = segment.inverted_index(terms).map_err(read_error)?;
    let alive = segment.alive_bitset();
    // One length term per document with the field (`l␟path␟analyzer␟<tokens>`): a few
    // distinct lengths, each with the documents of that length.
    let mut stream = inverted
        .terms()
        .range()
        .ge(length_prefix.as_bytes())
        .into_stream()
        .map_err(read_error)?;
    while stream.advance() {
        let Ok(key) = std::str::from_utf8(stream.key()) else {
            break;
        };
        if !key.starts_with(length_prefix) {
            break;
        }
        let Some(length) = encode::length_of(key, length_prefix) else {
            continue;
        };
        if stats.lengths.is_empty() {
            stats.lengths = vec![0; segment.max_doc() as usize];
        }
        let mut postings = inverted
            .read_postings_from_terminfo(stream.value(), IndexRecordOption::Basic)
            .map_err(read_error)?;
        let mut doc = postings.doc();
        while doc != TERMINATED {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                stats.lengths[doc as usize] = length;
                stats.docs_with_field += 1;
                stats.total_length += u64::from(length);
            }
            doc = postings.advance();
        }
    }
    Ok(stats)
}
