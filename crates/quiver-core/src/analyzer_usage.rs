//! The question the analyzer catalog asks before it drops an analyzer: which views (or
//! inverted indexes) of a database use it. The views code answers it by registering an
//! [`AnalyzerUsage`] with [`crate::Core::set_analyzer_usage`]; without one, no analyzer is in
//! use.

/// Who uses an analyzer.
pub trait AnalyzerUsage: Send + Sync {
    /// The names of the views and indexes that use the analyzer `analyzer` (its normalized
    /// name, `db::name`), looked up in every database that can reach it (`_system`
    /// analyzers are reachable from every database). Empty when unused.
    fn users_of(&self, analyzer: &str) -> Vec<String>;
}
