//! The interface every in-memory secondary index type implements ([`IndexStructure`]): what
//! the maintenance protocol of `maintained.rs` calls to file and drop the entries of one
//! document version, and the optional post-build job ([`Completion`]) a type may need before
//! it serves queries. The types (`persistent.rs`, `geo.rs`, `fulltext.rs`, `mdi.rs`,
//! `vector.rs`) sit above this module and below the dispatch in `maintained.rs`.

use std::any::Any;
use std::sync::Arc;

use quiver_errors::Result;
use quiver_types::Revision;
use serde_json::{Map, Value};

/// One index type's in-memory structure.
pub(crate) trait IndexStructure: Send + Sync + Any {
    /// Adds the entries of version `rev` of document `key`.
    fn insert(&mut self, key: &Arc<str>, rev: Revision, doc: &Map<String, Value>);
    /// Removes the entries of version `rev` of `key` (`doc` is that version's body).
    fn remove(&mut self, key: &str, rev: Revision, doc: &Map<String, Value>);
    /// Number of entries.
    fn len(&self) -> usize;
    /// Share of distinct indexed values among the entries (1 = all distinct), for index
    /// types that keep an estimate.
    fn selectivity(&self) -> Option<f64>;
    /// An empty structure of the same kind and definition.
    fn fresh(&self) -> Box<dyn IndexStructure>;
    fn as_any(&self) -> &dyn Any;
    /// Work the structure needs after its build scan and before it may serve queries (a
    /// vector index's quantizer, loaded or trained over what the scan filed), or None. The
    /// job runs without the index lock while commits go on recording; its result goes to
    /// [`IndexStructure::complete`]. An error fails the build (and the index creation).
    fn completion(&self, name: &str) -> Option<Completion> {
        let _ = name;
        None
    }
    /// Applies what [`IndexStructure::completion`]'s job produced.
    fn complete(&mut self, done: Box<dyn Any + Send>) {
        let _ = done;
    }
}

/// A structure's post-build job (see [`IndexStructure::completion`]).
pub(crate) type Completion = Box<dyn FnOnce() -> Result<Box<dyn Any + Send>> + Send>;
