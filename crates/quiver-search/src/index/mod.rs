//! The full-text index of an ArangoSearch view, on tantivy: how a link maps documents to terms
//! (`link.rs`, `document.rs`, `encode.rs`) and how the terms reach tantivy
//! (`term_stream.rs`), SEARCH conditions with their values known (`query.rs`,
//! `ngram_similarity.rs`, `phrase_positions.rs`, nested search in `nested.rs`, geo functions in
//! `geo_query.rs`; the fields' analyzers of an inverted index in
//! `field_analyzers.rs`), the offsets of matches (`offsets.rs`), the scorers
//! (`scoring.rs`, with their per-segment field statistics in `field_stats.rs`), the best k
//! matches by score (`top_scores.rs`), the primary sort and stored values kept per document
//! (`stored_columns.rs`) and the index itself (`view_index.rs`, collecting
//! matches with `matched_docs.rs`; merges chosen by ArangoDB's tier policy in `tier_merge.rs`).
//! docs/design/search.md ("Views and the index") explains the mapping.

mod document;
mod encode;
mod field_analyzers;
mod field_stats;
mod geo_query;
mod link;
mod matched_docs;
mod nested;
mod ngram_similarity;
mod offsets;
mod phrase_positions;
mod prefix_query;
mod query;
mod scoring;
mod stored_columns;
mod term_stream;
mod tier_merge;
mod top_scores;
mod view_index;

pub use document::{
    document_terms, geo_cell_tokens, typed_token_terms, AnalyzerSource, IdentityOnly, TermAt,
    VALUE_POSITION_GAP,
};
pub use field_analyzers::analyzer_at;
pub use geo_query::GeoFilter;
pub use link::{FieldDefinition, LinkDefinition, Resolved, MAX_FIELD_DEPTH};
pub use nested::NestedQuery;
pub use ngram_similarity::{longest_common_subsequence, NgramSimilarityQuery};
pub use offsets::{offset_info, OffsetRule, DEFAULT_MAX_OFFSETS};
pub use phrase_positions::{
    edit_distance, like_matches, LikeItem, PositionalPhraseQuery, TermMatcher,
};
pub use query::{
    ElementCount, ExistsKind, PhrasePart, PhraseToken, ScoredTerm, SearchQuery, SearchValue,
};
pub use scoring::{FieldStats, Scorer};
pub use stored_columns::{value_at, StoredColumns};
pub use tier_merge::TierOptions;
pub use top_scores::ScoreOrder;
pub use view_index::{Consolidation, Hit, IndexState, Opened, SortedRead, ViewIndex, INDEX_FORMAT};

#[cfg(test)]
mod geo_tests;
#[cfg(test)]
mod tests;
