//! Secondary indexes kept in memory and maintained on every commit: the registry of index
//! types ([`structure_for`], one arm per type) and the snapshot-correct maintenance protocol
//! every type shares ([`MaintainedIndex`]).
//!
//! # Protocol
//! An index structure holds entries tagged with the document key and revision they came
//! from. A reader keeps an entry only when its snapshot holds that key at exactly that
//! revision (one primary-index probe, the same rule as the edge index), so one structure
//! serves every snapshot at once, and a stream transaction adds its own staged documents.
//!
//! - **Before** a batch is committed (writer locks held), the new versions' entries are
//!   inserted. Until the engine publishes the batch no snapshot holds those revisions, so the
//!   entries are invisible; from the moment it does, they are already there — a reader never
//!   sees a document its index misses. If the commit fails they are removed again.
//! - **After** the commit (tick `T`), the versions it superseded (updates, replaces, removes)
//!   are queued as garbage tagged with `T`. Snapshots older than `T` still need them, so they
//!   are removed only once the engine's horizon (its oldest live snapshot) reaches `T`.
//! - **Truncate** retires the whole structure (kept, tagged with the truncate tick, for older
//!   snapshots) and starts an empty one.
//! - **Building** (index creation, and every start-up: contents are not persisted) registers
//!   the index first, so commits record into it from then on, takes a snapshot, and scans that
//!   snapshot without holding the writer lock; writers are never blocked. Garbage collection
//!   waits until the scan is done, so an entry the scan adds late is still collected. The
//!   index serves queries only once it is ready.
//!
//! Adding a type (geo, fulltext) means implementing [`IndexStructure`] and adding an arm to
//! [`structure_for`]; the protocol above comes for free, and a query reaches the structure
//! through [`MaintainedIndex::read`] and `as_any` downcasting.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};
use quiver_errors::Result;
use quiver_storage::{CollectionId, Snapshot};
use quiver_types::Revision;
use serde_json::{Map, Value};

use crate::indexes::definition::IndexDef;
use crate::indexes::persistent::SortedIndex;
use crate::indexes::structure::IndexStructure;
use crate::indexes::vector::{BuildContext, VectorIndex};

/// Documents scanned per write-lock acquisition while building.
const BUILD_CHUNK: usize = 512;

/// The registry: the structure that maintains an index of this definition, or None for types
/// that are definitions only (ttl works by scanning; inverted indexes are not queried).
/// `place` is where a vector index keeps its quantizer.
pub(crate) fn structure_for(
    def: &IndexDef,
    place: &BuildContext,
) -> Option<Box<dyn IndexStructure>> {
    match def.kind.as_str() {
        "persistent" | "hash" | "skiplist" => Some(Box::new(SortedIndex::new(def))),
        "geo" | "geo1" | "geo2" => Some(Box::new(crate::indexes::geo::GeoIndex::new(def))),
        "fulltext" => Some(Box::new(crate::indexes::fulltext::FulltextIndex::new(def))),
        "vector" => Some(Box::new(VectorIndex::new(def, place.clone())?)),
        "mdi" | "mdi-prefixed" | "zkd" => Some(Box::new(crate::indexes::mdi::MdiIndex::new(
            def,
            !place.existing,
        ))),
        _ => None,
    }
}

struct Garbage {
    tick: u64,
    key: Arc<str>,
    rev: Revision,
    body: Bytes,
}

struct State {
    current: Box<dyn IndexStructure>,
    /// Structures replaced by a truncate, with its tick: older snapshots still read them.
    retired: Vec<(u64, Box<dyn IndexStructure>)>,
    garbage: VecDeque<Garbage>,
}

/// One maintained index of a collection.
pub(crate) struct MaintainedIndex {
    pub def: IndexDef,
    state: RwLock<State>,
    ready: Mutex<bool>,
    ready_cv: Condvar,
}

impl std::fmt::Debug for MaintainedIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MaintainedIndex")
            .field("name", &self.def.name)
            .finish_non_exhaustive()
    }
}

fn parse(body: &[u8]) -> Option<Map<String, Value>> {
    serde_json::from_slice(body).ok()
}

impl MaintainedIndex {
    /// A not-yet-built index for `def`, or None when the type keeps no structure.
    pub fn new(def: &IndexDef, place: &BuildContext) -> Option<MaintainedIndex> {
        let current = structure_for(def, place)?;
        Some(MaintainedIndex {
            def: def.clone(),
            state: RwLock::new(State {
                current,
                retired: Vec::new(),
                garbage: VecDeque::new(),
            }),
            ready: Mutex::new(false),
            ready_cv: Condvar::new(),
        })
    }

    /// Whether the build finished (queries may use the index).
    pub fn is_ready(&self) -> bool {
        *self.ready.lock()
    }

    /// Waits until the build finished, at most `timeout`; returns readiness.
    pub fn wait_ready(&self, timeout: std::time::Duration) -> bool {
        let mut ready = self.ready.lock();
        if !*ready {
            self.ready_cv.wait_for(&mut ready, timeout);
        }
        *ready
    }

    /// Fills the index from `snapshot` (which must have been taken after the index was
    /// registered for commit recording), then marks it ready. Never holds the writer lock.
    pub fn build(&self, cid: CollectionId, snapshot: &Snapshot) -> Result<()> {
        let mut chunk: Vec<(Arc<str>, Revision, Map<String, Value>)> =
            Vec::with_capacity(BUILD_CHUNK);
        let flush = |chunk: &mut Vec<(Arc<str>, Revision, Map<String, Value>)>| {
            let mut state = self.state.write();
            for (key, rev, doc) in chunk.drain(..) {
                state.current.insert(&key, rev, &doc);
            }
        };
        for item in snapshot.scan(cid)? {
            let (key, doc) = item?;
            if let Some(map) = parse(&doc.body) {
                chunk.push((Arc::from(key.as_str()), doc.rev, map));
            }
            if chunk.len() >= BUILD_CHUNK {
                flush(&mut chunk);
            }
        }
        flush(&mut chunk);
        let job = self.state.read().current.completion(&self.def.name);
        if let Some(job) = job {
            let done = job()?;
            self.state.write().current.complete(done);
        }
        *self.ready.lock() = true;
        self.ready_cv.notify_all();
        Ok(())
    }

    /// Read access to the current structure and the retired ones (with their ticks).
    pub fn read<R>(
        &self,
        f: impl FnOnce(&dyn IndexStructure, &[(u64, Box<dyn IndexStructure>)]) -> R,
    ) -> R {
        let state = self.state.read();
        f(&*state.current, &state.retired)
    }

    /// The selectivity estimate (1 for types without one).
    pub fn selectivity(&self) -> f64 {
        if self.def.unique {
            return 1.0;
        }
        self.state.read().current.selectivity().unwrap_or(1.0)
    }

    fn insert(&self, key: &Arc<str>, rev: Revision, doc: &Map<String, Value>) {
        self.state.write().current.insert(key, rev, doc);
    }

    fn remove_now(&self, key: &str, rev: Revision, doc: &Map<String, Value>) {
        self.state.write().current.remove(key, rev, doc);
    }

    fn supersede(&self, tick: u64, key: Arc<str>, rev: Revision, body: Bytes) {
        self.state.write().garbage.push_back(Garbage {
            tick,
            key,
            rev,
            body,
        });
    }

    /// Drops garbage no snapshot at or after `horizon` can see.
    pub fn collect(&self, horizon: u64) {
        if !self.is_ready() {
            return;
        }
        let mut state = self.state.write();
        state.retired.retain(|(tick, _)| *tick > horizon);
        while state.garbage.front().is_some_and(|g| g.tick <= horizon) {
            let Some(g) = state.garbage.pop_front() else {
                break;
            };
            if let Some(doc) = parse(&g.body) {
                state.current.remove(&g.key, g.rev, &doc);
            }
        }
    }

    /// Every entry became invisible at `tick` (truncate, under the writer lock).
    pub fn truncate(&self, tick: u64) {
        let mut state = self.state.write();
        let fresh = state.current.fresh();
        let old = std::mem::replace(&mut state.current, fresh);
        state.garbage.clear();
        state.retired.push((tick, old));
    }
}

/// An entry inserted ahead of a commit (to take back if the commit fails).
type Inserted = (
    Arc<MaintainedIndex>,
    Arc<str>,
    Revision,
    Arc<Map<String, Value>>,
);

/// Entries inserted ahead of a commit, and the versions it will supersede.
#[derive(Default)]
pub(crate) struct PendingCommit {
    inserted: Vec<Inserted>,
    superseded: Vec<(Arc<MaintainedIndex>, Arc<str>, Revision, Bytes)>,
    indexes: Vec<Arc<MaintainedIndex>>,
}

/// Inserts the entries of every staged version into the written collections' indexes
/// (writer locks held, before the engine commit). `snapshot` holds the prior versions;
/// `indexes_of` gives a written collection's maintained indexes.
pub(crate) fn before_commit(
    entries: &crate::staged_version::StagedEntries,
    snapshot: &Snapshot,
    indexes_of: impl Fn(CollectionId) -> Option<Arc<Vec<Arc<MaintainedIndex>>>>,
) -> Result<PendingCommit> {
    let mut pending = PendingCommit::default();
    let mut by_collection: HashMap<CollectionId, Arc<Vec<Arc<MaintainedIndex>>>> = HashMap::new();
    for ((cid, key), entry) in entries {
        let indexes = match by_collection.get(cid) {
            Some(list) => Arc::clone(list),
            None => {
                let list = indexes_of(*cid).unwrap_or_default();
                for ix in list.iter() {
                    pending.indexes.push(Arc::clone(ix));
                }
                by_collection.insert(*cid, Arc::clone(&list));
                list
            }
        };
        if indexes.is_empty() {
            continue;
        }
        let key: Arc<str> = Arc::from(key.as_str());
        if let Some((rev, body)) = &entry.current {
            if let Some(doc) = parse(body) {
                let doc = Arc::new(doc);
                for ix in indexes.iter() {
                    ix.insert(&key, *rev, &doc);
                    pending.inserted.push((
                        Arc::clone(ix),
                        Arc::clone(&key),
                        *rev,
                        Arc::clone(&doc),
                    ));
                }
            }
        }
        if let Some(prior) = entry.prior {
            if let Some(old) = snapshot.get(*cid, &key)? {
                if old.rev == prior {
                    for ix in indexes.iter() {
                        pending.superseded.push((
                            Arc::clone(ix),
                            Arc::clone(&key),
                            prior,
                            old.body.clone(),
                        ));
                    }
                }
            }
        }
    }
    Ok(pending)
}

impl PendingCommit {
    /// The batch was committed at `tick`: queue what it superseded, then collect garbage up
    /// to the engine's `horizon`.
    pub fn committed(self, tick: u64, horizon: u64) {
        for (ix, key, rev, body) in self.superseded {
            ix.supersede(tick, key, rev, body);
        }
        for ix in &self.indexes {
            ix.collect(horizon);
        }
    }

    /// The commit failed: no snapshot ever saw the new versions.
    pub fn failed(self) {
        for (ix, key, rev, doc) in self.inserted {
            ix.remove_now(&key, rev, &doc);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn no_files() -> BuildContext {
        BuildContext {
            path: None,
            existing: false,
        }
    }

    #[test]
    fn registry_covers_the_persistent_family_only() {
        for (kind, maintained) in [
            ("persistent", true),
            ("hash", true),
            ("skiplist", true),
            ("ttl", false),
            ("mdi", true),
            ("fulltext", true),
            ("geo", true),
        ] {
            let mut body = json!({"type": kind, "fields": ["a"], "expireAfter": 1, "fieldValueTypes": "double"});
            if kind == "mdi" {
                body["fields"] = json!(["a", "b"]);
            }
            let def = IndexDef::parse(&body, 2).unwrap();
            assert_eq!(
                MaintainedIndex::new(&def, &no_files()).is_some(),
                maintained,
                "{kind}"
            );
        }
    }

    #[test]
    fn garbage_waits_for_the_horizon_and_the_build() {
        let def = IndexDef::parse(&json!({"type": "persistent", "fields": ["a"]}), 2).unwrap();
        let ix = MaintainedIndex::new(&def, &no_files()).unwrap();
        let doc = json!({"a": 1});
        let body = Bytes::from(doc.to_string());
        ix.insert(&Arc::from("k"), Revision(1), doc.as_object().unwrap());
        ix.supersede(10, Arc::from("k"), Revision(1), body);
        let len = || ix.read(|cur, _| cur.len());
        // Not built yet: nothing is collected.
        ix.collect(100);
        assert_eq!(len(), 1);
        *ix.ready.lock() = true;
        ix.collect(9);
        assert_eq!(len(), 1);
        ix.collect(10);
        assert_eq!(len(), 0);
        ix.insert(&Arc::from("k"), Revision(2), doc.as_object().unwrap());
        ix.truncate(20);
        assert_eq!(len(), 0);
        assert_eq!(ix.read(|_, retired| retired.len()), 1);
        ix.collect(20);
        assert_eq!(ix.read(|_, retired| retired.len()), 0);
    }
}
