//! quiver-core: ArangoDB's databases, collections and document semantics over the storage
//! engine.
//!
//! # Shape
//! - [`Core`] owns every database of one data directory ([`Core::open`], [`Core::shutdown`]).
//!   Share it as `Arc<Core>`.
//! - [`Database`] (`core.database(name)`, 1228 if unknown) owns collections: create, get by
//!   name or numeric id (1203), list, rename, drop; [`Database::read_view`] and
//!   [`Database::begin_transaction`].
//! - [`Collection`] (`db.collection(name)`) describes itself ([`Collection::properties`],
//!   [`Collection::basic_info`]: the JSON objects of the HTTP API), counts, figures, checksums,
//!   truncates, compacts, and runs single and multi-document operations. Handles survive
//!   renames; after a drop every call fails with 1203.
//! - Writes go through [`DocumentWriter`]: [`DocumentWriter::AutoCommit`] (each call a
//!   transaction of its own, committed at once; `Collection::insert`/`replace`/… are this) or
//!   [`DocumentWriter::Transaction`] (staged in an explicit transaction;
//!   `Transaction::insert`/… are this). Every write takes a [`WriteOptions`].
//! - Writes return [`Committed`]: already visible to readers; `wait()` / `wait_async()`
//!   confirms durability (stable storage when [`Committed::synced`], which is also how the HTTP
//!   layer picks 201 vs 202).
//! - [`Transaction`] groups many writes on several collections into one atomic engine batch
//!   with read-your-own-writes; [`ReadView`] is a consistent snapshot for queries. Both
//!   implement [`DocumentReader`]. [`Core::stream_transactions`] keeps stream transactions
//!   (ids, idle timeout, status) for `/_api/transaction`.
//! - Edge collections keep an in-memory edge index (`_from`/`_to` → edges), reachable through
//!   [`DocumentReader::edges`] (key, revision and other vertex, snapshot-correct) and
//!   [`Collection::edges`] (documents, for `/_api/edges`).
//! - Index definitions (`Collection::indexes`, `index`, `create_index`, `drop_index`) with
//!   enforcement of unique persistent indexes on every write path; ttl indexes expire
//!   documents in a background thread ([`CoreOptions::ttl_frequency`]).
//! - Analyzers ([`analyzers`]): custom analyzers in each database's `_analyzers` collection in
//!   ArangoDB's format, resolved by name (`name`, `::name`, `db::name`, built-ins) to
//!   ready-to-run `quiver_search::Analyzer`s.
//! - Named graphs ([`graphs`]): definitions in each database's `_graphs` collection in
//!   ArangoDB's format, their validation, and vertex removal with its edges in one transaction.
//!
//! # Errors
//! Everything returns `quiver_errors::Result`; error numbers are ArangoDB's (see each
//! function). Revision conflicts are 412/1200 and carry `_id`, `_key`, `_rev` of the stored
//! document in `Error::extra`.
//!
//! # Fast paths
//! Documents are stored as JSON text beginning `{"_key":…,"_rev":…`; [`Collection::get_raw`]
//! returns response-ready bytes with `_id` spliced in, without parsing, and
//! [`ReadView::scan_raw`] does the same for a whole collection in storage order (the
//! replication dump). Inserts serialize the caller's parsed body once.
//!
//! # Schemas
//! A collection `schema` (JSON Schema draft-4 `rule`, `level` none/new/moderate/strict,
//! `message`) is compiled when set (1621 if invalid) and enforced on inserts, replaces and
//! updates (1620 with the configured message); system attributes are ignored.
//!
//! # Computed values
//! `computedValues` are validated, stored and reported; they are applied to writes once an
//! evaluator for their AQL expressions is registered with
//! [`Core::set_computed_values_evaluator`] (the AQL engine sits above this crate).

mod analyzer_store;
pub mod analyzer_usage;
pub mod analyzers;
mod auto_commit;
mod catalog;
mod catalog_version;
mod collection;
mod commit;
mod computed;
mod data_version;
mod database;
mod document;
mod document_rules;
mod document_writer;
/// Geometry on the sphere lives in its own crate (`quiver-geo`), shared with the search layer.
pub use quiver_geo as geo;
pub mod graphs;
mod indexes;
mod key_range;
mod keygen;
mod lookup;
mod options;
mod raw_scan;
mod schema;
mod search_alias;
mod search_priority;
mod staged_version;
mod staging;
mod streams;
mod ttl;
mod txn;
mod txn_stats;
pub mod vector;
mod view_analyzers;
mod view_feed;
mod view_host;
mod view_links;
mod view_record;
mod views;

pub use catalog::{Core, CoreOptions};
pub use collection::{Collection, CollectionSpec, CollectionType, IndexInfo};
pub use computed::ComputedValuesEvaluator;
pub use database::{Database, SYSTEM_COLLECTIONS, SYSTEM_DATABASE, SYSTEM_DATABASE_COLLECTIONS};
pub use document::{revision_matches, EncodedDocument};
pub use document_rules::version_keeps_stored;
pub use document_writer::DocumentWriter;
pub use indexes::definition::{EDGE_INDEX_ID, PRIMARY_INDEX_ID};
pub use indexes::edge::{EdgeDirection, EdgeHit, EdgeHits, EdgeIndexStats, VertexSlot};
pub use indexes::persistent::{lookup_documents, selectivity_of, IndexRange};
pub use indexes::{fulltext, mdi as mdi_index, vector as vector_index};
pub use keygen::{KeyGeneratorType, KeyOptions};
pub use options::{
    Committed, InsertOptions, ModifyOptions, OpResult, OverwriteMode, RemoveOptions, WriteKind,
    WriteOptions,
};
pub use raw_scan::RawScan;
pub use schema::validate_with_schema;
pub use search_priority::DEFAULT_SEARCH_NICE;
pub use streams::{StreamStatus, StreamTransactions, MAX_RUNNING_STREAM_TRANSACTIONS};
pub use txn::{DocumentIter, DocumentReader, ReadView, Transaction, TransactionOptions};
pub use txn_stats::{transaction_counts, TransactionCounts};
pub use views::{View, ARANGOSEARCH};

pub use quiver_storage::{
    CollectionId, CompactionReport, DatabaseId, EngineOptions, EngineStats, FSYNC_SECONDS_BUCKETS,
};
pub use quiver_types::{NamingConvention, Revision};

/// Settings shared by every database and collection of one core.
pub(crate) struct Settings {
    pub naming: quiver_types::NamingConvention,
    pub max_transaction_size: usize,
    pub default_journal_size: u64,
    pub evaluator: parking_lot::RwLock<Option<std::sync::Arc<dyn ComputedValuesEvaluator>>>,
    pub analyzer_usage:
        parking_lot::RwLock<Option<std::sync::Arc<dyn analyzer_usage::AnalyzerUsage>>>,
    /// Where vector indexes keep their trained quantizers (`indexes/vector.rs`), one directory
    /// per collection id.
    pub vector_directory: std::path::PathBuf,
    /// The catalog version ([`Core::catalog_version`]), shared by the core, its databases and
    /// their collections.
    pub catalog_version: std::sync::atomic::AtomicU64,
    /// Where inverted indexes keep their full-text indexes (`indexes/inverted.rs`), one
    /// directory per collection id.
    pub inverted_directory: std::path::PathBuf,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("naming", &self.naming)
            .field("max_transaction_size", &self.max_transaction_size)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod index_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod vector_index_tests;
