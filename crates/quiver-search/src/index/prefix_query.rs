//! Documents holding a term that starts with a prefix (`STARTS_WITH`): the segment's terms
//! read as one range of its dictionary, their documents gathered in a bit set. Tantivy's
//! regex query (`prefix.*`) did the same through an automaton: it compiled the regex into a
//! DFA for every query and tested every block of the dictionary against it, about two thirds
//! of a prefix query's server time (docs/benchmarks/search.md, "The first ten hits").

use tantivy::query::{ConstScorer, EnableScoring, Explanation, Query, Scorer, Weight};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocId, Score, SegmentReader};

use super::ngram_similarity::SortedDocs;

/// Matches every document with a term of `field` that starts with `prefix` (an encoded term
/// prefix, `encode::string_term`).
#[derive(Clone, Debug)]
pub struct PrefixQuery {
    field: Field,
    prefix: String,
}

impl PrefixQuery {
    pub fn new(field: Field, prefix: String) -> PrefixQuery {
        PrefixQuery { field, prefix }
    }

    /// The segment's matching documents, ascending (deleted ones included: the collector
    /// skips those).
    fn matching_docs(&self, reader: &SegmentReader) -> tantivy::Result<Vec<DocId>> {
        let inverted = reader.inverted_index(self.field)?;
        let mut stream = inverted
            .terms()
            .range()
            .ge(self.prefix.as_bytes())
            .into_stream()?;
        // One bit per document of the segment.
        let max_doc = reader.max_doc() as usize;
        let mut words = vec![0u64; max_doc.div_ceil(64)];
        let mut any = false;
        while stream.advance() {
            if !stream.key().starts_with(self.prefix.as_bytes()) {
                break;
            }
            let mut postings = inverted
                .read_block_postings_from_terminfo(stream.value(), IndexRecordOption::Basic)?;
            loop {
                let docs = postings.docs();
                if docs.is_empty() {
                    break;
                }
                for &doc in docs {
                    let doc = doc as usize;
                    assert!(doc < max_doc, "a posting past the segment's last document");
                    words[doc / 64] |= 1 << (doc % 64);
                }
                any = true;
                postings.advance();
            }
        }
        if !any {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for (i, &word) in words.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                out.push((i * 64) as DocId + bits.trailing_zeros());
                bits &= bits - 1;
            }
        }
        Ok(out)
    }
}

impl Query for PrefixQuery {
    fn weight(&self, _scoring: EnableScoring<'_>) -> tantivy::Result<Box<dyn Weight>> {
        Ok(Box::new(self.clone()))
    }
}

impl Weight for PrefixQuery {
    fn scorer(&self, reader: &SegmentReader, boost: Score) -> tantivy::Result<Box<dyn Scorer>> {
        let docs = self.matching_docs(reader)?;
        Ok(Box::new(ConstScorer::new(SortedDocs::new(docs), boost)))
    }

    fn explain(&self, reader: &SegmentReader, doc: DocId) -> tantivy::Result<Explanation> {
        if self.matching_docs(reader)?.binary_search(&doc).is_ok() {
            Ok(Explanation::new("PrefixQuery", 1.0))
        } else {
            Err(tantivy::TantivyError::InvalidArgument(format!(
                "document {doc} does not match"
            )))
        }
    }
}
