//! One staged document version: what a write set holds per touched document, and what the
//! index hooks around a commit (edge index, secondary indexes, unique indexes) read from it.
//! Plain data, below every module that writes or indexes documents.

use std::sync::Arc;

use bytes::Bytes;
use indexmap::IndexMap;
use quiver_storage::CollectionId;
use quiver_types::Revision;

/// The endpoints of an edge document.
pub(crate) type EdgeEnds = (Arc<str>, Arc<str>);

/// One touched document: its state in the base snapshot and its staged state.
#[derive(Clone, Debug)]
pub(crate) struct StagedEntry {
    /// Revision in the base snapshot (None: did not exist). Checked again at commit time by
    /// transactions to detect write-write conflicts.
    pub prior: Option<Revision>,
    /// The staged state: Some = stored body, None = removed.
    pub current: Option<(Revision, Bytes)>,
    /// Revision of the removal marker when `current` is None.
    pub removal_rev: Revision,
    /// `_from`/`_to` of the staged version (edge collections only).
    pub edge: Option<EdgeEnds>,
    /// Values of the staged version in the collection's unique indexes: (index id, value).
    pub unique: Vec<(u64, String)>,
}

/// The staged versions by collection and key, in the order they were first staged: a batch
/// reaches the engine, the primary and the edge index in the order of its operations (an
/// import's edges grouped by `_from` as in the input, its ascending generated keys in order),
/// which keeps those structures' working set small.
pub(crate) type StagedEntries =
    IndexMap<(CollectionId, String), StagedEntry, hashbrown::DefaultHashBuilder>;
