//! A tantivy collector of the documents a query matches, per segment in document order
//! (tantivy's `DocSetCollector` hashes every match into a set, which a search over many
//! matches pays for twice).

use tantivy::collector::{Collector, SegmentCollector};
use tantivy::{DocId, Score, SegmentOrdinal, SegmentReader};

/// Collects the matching documents: the fruit holds one list per segment, indexed by the
/// segment's ordinal, each in ascending document order.
pub(super) struct MatchedDocs;

pub(super) struct SegmentMatches {
    segment: SegmentOrdinal,
    docs: Vec<DocId>,
}

impl Collector for MatchedDocs {
    type Fruit = Vec<Vec<DocId>>;
    type Child = SegmentMatches;

    fn for_segment(
        &self,
        segment: SegmentOrdinal,
        _reader: &SegmentReader,
    ) -> tantivy::Result<SegmentMatches> {
        Ok(SegmentMatches {
            segment,
            docs: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(
        &self,
        fruits: Vec<(SegmentOrdinal, Vec<DocId>)>,
    ) -> tantivy::Result<Vec<Vec<DocId>>> {
        let segments = fruits
            .iter()
            .map(|(s, _)| *s as usize + 1)
            .max()
            .unwrap_or(0);
        let mut out = vec![Vec::new(); segments];
        for (segment, mut docs) in fruits {
            if !docs.is_sorted() {
                docs.sort_unstable();
                docs.dedup();
            }
            out[segment as usize] = docs;
        }
        Ok(out)
    }
}

impl SegmentCollector for SegmentMatches {
    type Fruit = (SegmentOrdinal, Vec<DocId>);

    fn collect(&mut self, doc: DocId, _score: Score) {
        self.docs.push(doc);
    }

    fn harvest(self) -> (SegmentOrdinal, Vec<DocId>) {
        (self.segment, self.docs)
    }
}
