//! The write set of a transaction: the read-your-own-writes overlay of staged document
//! versions over an engine snapshot, and the unique-index claims of those versions. Explicit
//! transactions and auto-commit writes (one-operation transactions) stage into it alike; the
//! document rules that fill it are in `document_rules.rs`, its commit in `commit.rs`.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use bytes::Bytes;
use indexmap::map::Entry;
use indexmap::Equivalent;
use quiver_errors::{Error, ErrorCode, Result};
use quiver_storage::{CollectionId, Snapshot, WriteBatch};
use quiver_types::Revision;
use serde_json::{Map, Value};

use crate::collection::Collection;
use crate::indexes::edge::VertexHints;
use crate::staged_version::{EdgeEnds, StagedEntries, StagedEntry};

/// A borrowed `(collection, key)` for looking up [`StagedEntries`] without building the
/// owned key: hashes exactly as the tuple `(CollectionId, String)` does.
struct StagedKey<'a>(CollectionId, &'a str);

impl Hash for StagedKey<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
        self.1.hash(state);
    }
}

impl Equivalent<(CollectionId, String)> for StagedKey<'_> {
    fn equivalent(&self, key: &(CollectionId, String)) -> bool {
        self.0 == key.0 && self.1 == key.1
    }
}

/// Writes staged over a snapshot.
pub(crate) struct Staging {
    pub snapshot: Snapshot,
    pub entries: StagedEntries,
    /// Collections written, to lock at commit.
    pub written: HashMap<CollectionId, Arc<Collection>>,
    pub bytes: usize,
    pub max_bytes: usize,
    /// The batch waits for stable storage (requested by the transaction or by one of its
    /// operations; the engine adds the written collections' `waitForSync` at commit).
    pub sync: bool,
    /// Staging calls so far (each operation that changed the write set adds one).
    pub operations: u64,
    /// The collections an explicit transaction declared for writing (None: any, for an
    /// auto-commit write, whose collection is the one it locked).
    pub writable: Option<HashSet<CollectionId>>,
    /// The caller holds the writer lock of the (single) collection written, and `snapshot`
    /// was taken under it.
    pub locked: bool,
    /// Unique-index values claimed by staged documents: (collection, index id, value) → key.
    pub unique_claims: HashMap<(CollectionId, u64, String), String>,
    /// Vertex ids of the edge ends about to be staged into one edge collection, looked up
    /// before its writer lock (`auto_commit.rs`), for the edge index at commit.
    pub vertex_hints: Option<(CollectionId, VertexHints)>,
}

impl Staging {
    pub fn new(snapshot: Snapshot, max_bytes: usize) -> Staging {
        Staging {
            snapshot,
            entries: StagedEntries::default(),
            written: HashMap::new(),
            bytes: 0,
            max_bytes,
            sync: false,
            operations: 0,
            writable: None,
            locked: false,
            unique_claims: HashMap::new(),
            vertex_hints: None,
        }
    }

    /// Whether `cid` may be written here.
    pub fn may_write(&self, cid: CollectionId) -> bool {
        self.writable.as_ref().is_none_or(|ids| ids.contains(&cid))
    }

    /// Error 1652 unless `coll` may be written here (1203 once it is dropped).
    pub fn check_write(&self, coll: &Collection) -> Result<()> {
        coll.check_usable()?;
        if self.may_write(coll.id()) {
            return Ok(());
        }
        Err(Error::with_message(
            ErrorCode::TransactionUnregisteredCollection,
            format!(
                "collection '{}' not registered for write in transaction",
                coll.name()
            ),
        ))
    }

    /// The current state of a document: staged writes first, then the snapshot.
    pub fn lookup(&self, cid: CollectionId, key: &str) -> Result<Option<(Revision, Bytes)>> {
        if let Some(entry) = self.entries.get(&StagedKey(cid, key)) {
            return Ok(entry.current.clone());
        }
        Ok(self
            .snapshot
            .get(cid, key)?
            .map(|stored| (stored.rev, stored.body)))
    }

    /// The current revision of a document (staged writes first), without reading its body.
    pub fn lookup_rev(&self, cid: CollectionId, key: &str) -> Result<Option<Revision>> {
        if let Some(entry) = self.entries.get(&StagedKey(cid, key)) {
            return Ok(entry.current.as_ref().map(|(rev, _)| *rev));
        }
        self.snapshot.revision(cid, key)
    }

    /// Stages the new state of a document. `seen` is the revision the caller just looked up
    /// through [`Staging::lookup`] / [`Staging::lookup_rev`]; for a document not staged before
    /// that came from the snapshot, so it is recorded as the prior state without a second
    /// index lookup.
    // Each argument is a distinct piece of the staged version; grouping them would only move
    // the same list into a struct literal at every call site.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn stage(
        &mut self,
        coll: &Arc<Collection>,
        key: &str,
        current: Option<(Revision, Bytes)>,
        removal_rev: Revision,
        seen: Option<Revision>,
        edge: Option<EdgeEnds>,
        unique: Vec<(u64, String)>,
    ) -> Result<()> {
        let size = key.len() + 32 + current.as_ref().map_or(0, |(_, body)| body.len());
        if self.bytes + size > self.max_bytes {
            return Err(transaction_too_large());
        }
        self.bytes += size;
        self.operations += 1;
        let cid = coll.id();
        self.written.entry(cid).or_insert_with(|| Arc::clone(coll));
        for (index_id, value) in &unique {
            self.unique_claims
                .insert((cid, *index_id, value.clone()), key.to_string());
        }
        match self.entries.entry((cid, key.to_string())) {
            Entry::Occupied(mut staged) => {
                let entry = staged.get_mut();
                entry.current = current;
                entry.removal_rev = removal_rev;
                entry.edge = edge;
                entry.unique = unique;
            }
            Entry::Vacant(slot) => {
                slot.insert(StagedEntry {
                    prior: seen,
                    current,
                    removal_rev,
                    edge,
                    unique,
                });
            }
        }
        Ok(())
    }

    /// The engine batch for everything staged: one put per surviving document, one removal
    /// per document that existed in the base snapshot and is gone now.
    pub fn to_batch(&self) -> WriteBatch {
        let mut batch = WriteBatch::new();
        for ((cid, key), entry) in &self.entries {
            match &entry.current {
                Some((rev, body)) => batch.put(*cid, key, *rev, body.clone()),
                None if entry.prior.is_some() => batch.remove(*cid, key, entry.removal_rev),
                None => {}
            }
        }
        batch.set_sync(self.sync);
        batch
    }

    /// Whether anything is staged.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The change of the number of documents of `cid` relative to the snapshot.
    pub fn count_delta(&self, cid: CollectionId) -> i64 {
        self.entries
            .iter()
            .filter(|((c, _), _)| *c == cid)
            .map(|(_, e)| e.current.is_some() as i64 - e.prior.is_some() as i64)
            .sum()
    }
}

/// Tells the unique indexes of the written collections about a committed staging
/// area. Called with the writer locks of those collections held, after the engine accepted
/// the batch.
pub(crate) fn record_indexes(
    entries: &StagedEntries,
    coll_of: impl Fn(CollectionId) -> Option<Arc<Collection>>,
) {
    for ((cid, key), entry) in entries {
        let Some(coll) = coll_of(*cid) else { continue };
        let rev = entry.current.as_ref().map(|(rev, _)| *rev);
        for index in coll.unique_indexes().iter() {
            let values: Vec<String> = entry
                .unique
                .iter()
                .filter(|(id, _)| *id == index.def.id)
                .map(|(_, v)| v.clone())
                .collect();
            index.record(key, rev, &values, entry.prior.is_some());
        }
    }
}

/// Checks the unique indexes of `coll` for the new version `doc` of `key` against what the
/// staging area sees (its snapshot plus staged documents); returns the values to claim.
/// Error 1210 naming the conflicting key.
pub(crate) fn check_unique(
    st: &Staging,
    coll: &Collection,
    key: &str,
    doc: &Map<String, Value>,
) -> Result<Vec<(u64, String)>> {
    let indexes = coll.unique_indexes();
    if indexes.is_empty() {
        return Ok(Vec::new());
    }
    let cid = coll.id();
    let mut claims = Vec::new();
    for index in indexes.iter() {
        if index.needs_build() {
            if st.locked {
                index.ensure_built(cid, &st.snapshot)?;
            } else {
                let _writers = coll.write_lock.lock();
                index.ensure_built(cid, &coll.engine().snapshot())?;
            }
        }
        for value in index.values(doc) {
            if let Some(other) = st.unique_claims.get(&(cid, index.def.id, value.clone())) {
                let still_claimed = other != key
                    && st.entries.get(&(cid, other.clone())).is_some_and(|e| {
                        e.unique
                            .iter()
                            .any(|(id, v)| *id == index.def.id && *v == value)
                    });
                if still_claimed {
                    return Err(index_violation(index, other));
                }
            }
            let conflict = index.conflict(&value, key, |other, rev| {
                if !st.entries.is_empty() && st.entries.contains_key(&(cid, other.to_string())) {
                    // The staged version decides (checked through the claims above).
                    return Ok(false);
                }
                Ok(st.snapshot.revision(cid, other)? == Some(rev))
            })?;
            if let Some(err) = conflict {
                return Err(err);
            }
            claims.push((index.def.id, value));
        }
    }
    Ok(claims)
}

fn index_violation(index: &crate::indexes::unique::UniqueIndex, other: &str) -> Error {
    index.conflict_error(other)
}

pub(crate) fn transaction_too_large() -> Error {
    Error::with_message(
        ErrorCode::ResourceLimit,
        "aborting transaction because maximal transaction size limit is exceeded",
    )
}
