//! ArangoSearch's building blocks, free of documents, collections and HTTP: analyzers (text in,
//! token streams out) and the full-text index a view keeps (built on tantivy). The core owns
//! the catalog of analyzers and views and feeds views from committed writes; AQL compiles
//! `SEARCH` expressions onto the index's queries.

pub mod analyzer;
pub mod index;

pub use analyzer::{Analyzer, AnalyzerDefinition, Feature, Token};
