//! The edge index of an edge collection: `_from` → edges and `_to` → edges, in memory.
//!
//! Entries are `(edge key, revision, other vertex)` and are only ever added: a document version
//! is indexed when it is committed, and an entry is valid for a reader exactly when the
//! reader's snapshot holds that key at that revision (one primary-index lookup, no body read).
//! That makes the index correct for every snapshot at once (old readers still find the versions
//! they see, new readers the new ones) without version chains of its own. Superseded entries
//! are garbage; when they outnumber the live ones the index is dropped and rebuilt lazily from
//! a fresh snapshot (a reader older than that rebuild may then miss edges that were removed or
//! re-pointed since it started — the one documented imprecision).
//!
//! The index is built lazily on first use by scanning a snapshot. The snapshot is taken while
//! the collection's writer lock is held and recording is switched on at the same moment, so
//! every commit is either in the scanned snapshot or recorded afterwards, never both.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use quiver_errors::Result;
use quiver_storage::{CollectionId, Snapshot};
use quiver_types::Revision;
use serde::Deserialize;

const SHARDS: usize = 16;

/// Garbage entries tolerated before a rebuild is considered (small in tests so that the
/// rebuild path runs).
const REBUILD_MIN_GARBAGE: usize = if cfg!(test) { 8 } else { 10_000 };

/// Which end of an edge a lookup starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeDirection {
    /// Edges whose `_from` is the vertex (the result's `other` is `_to`).
    Outbound,
    /// Edges whose `_to` is the vertex (the result's `other` is `_from`).
    Inbound,
}

/// One edge found for a vertex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeHit {
    /// The edge document's key.
    pub key: Arc<str>,
    /// The edge document's revision (as seen by the reader).
    pub rev: Revision,
    /// The vertex at the other end (`_to` for outbound, `_from` for inbound).
    pub other: Arc<str>,
}

/// The endpoints of an edge document.
pub(crate) type EdgeEnds = (Arc<str>, Arc<str>);

type Shard = RwLock<HashMap<Arc<str>, Vec<EdgeHit>>>;

pub(crate) struct EdgeIndex {
    from: Vec<Shard>,
    to: Vec<Shard>,
    hasher: std::collections::hash_map::RandomState,
    /// Commits are recorded (set under the collection's writer lock when a build starts).
    recording: AtomicBool,
    /// The initial scan has finished.
    ready: AtomicBool,
    /// Lookups hold it shared; a build or rebuild holds it exclusively, so no lookup ever sees
    /// a half-built index.
    generation: RwLock<()>,
    entries: AtomicUsize,
    superseded: AtomicUsize,
}

impl std::fmt::Debug for EdgeIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeIndex")
            .field("ready", &self.ready.load(Ordering::Relaxed))
            .field("entries", &self.entries.load(Ordering::Relaxed))
            .finish()
    }
}

#[derive(Deserialize)]
struct Ends<'a> {
    #[serde(rename = "_from", borrow)]
    from: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "_to", borrow)]
    to: Option<std::borrow::Cow<'a, str>>,
}

/// `_from` and `_to` of a stored edge body, without building a full JSON value.
pub(crate) fn ends_of(body: &[u8]) -> Option<EdgeEnds> {
    let ends: Ends = serde_json::from_slice(body).ok()?;
    Some((Arc::from(&*ends.from?), Arc::from(&*ends.to?)))
}

impl EdgeIndex {
    pub fn new() -> EdgeIndex {
        let shards = || (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect();
        EdgeIndex {
            from: shards(),
            to: shards(),
            hasher: std::collections::hash_map::RandomState::new(),
            recording: AtomicBool::new(false),
            ready: AtomicBool::new(false),
            generation: RwLock::new(()),
            entries: AtomicUsize::new(0),
            superseded: AtomicUsize::new(0),
        }
    }

    fn shard<'a>(&self, shards: &'a [Shard], vertex: &str) -> &'a Shard {
        &shards[(self.hasher.hash_one(vertex) as usize) % SHARDS]
    }

    fn add(&self, key: &Arc<str>, rev: Revision, ends: &EdgeEnds) {
        let (from, to) = ends;
        self.shard(&self.from, from)
            .write()
            .entry(Arc::clone(from))
            .or_default()
            .push(EdgeHit {
                key: Arc::clone(key),
                rev,
                other: Arc::clone(to),
            });
        self.shard(&self.to, to)
            .write()
            .entry(Arc::clone(to))
            .or_default()
            .push(EdgeHit {
                key: Arc::clone(key),
                rev,
                other: Arc::clone(from),
            });
        self.entries.fetch_add(1, Ordering::Relaxed);
    }

    /// Records a committed document version. Must be called with the collection's writer lock
    /// held, after the engine accepted the batch. `replaced` tells whether an older version (or
    /// a removal) made an indexed entry garbage.
    pub fn record(&self, key: &str, current: Option<(Revision, &EdgeEnds)>, replaced: bool) {
        if !self.recording.load(Ordering::Acquire) {
            return;
        }
        if replaced {
            self.superseded.fetch_add(1, Ordering::Relaxed);
        }
        if let Some((rev, ends)) = current {
            self.add(&Arc::from(key), rev, ends);
        }
    }

    /// Notes that every entry became garbage (truncate).
    pub fn truncated(&self) {
        self.superseded
            .store(self.entries.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// Whether garbage dominates so much that a rebuild pays off.
    fn needs_rebuild(&self) -> bool {
        let superseded = self.superseded.load(Ordering::Relaxed);
        let entries = self.entries.load(Ordering::Relaxed);
        superseded > REBUILD_MIN_GARBAGE && superseded * 2 > entries
    }

    fn usable(&self) -> bool {
        self.ready.load(Ordering::Acquire) && !self.needs_rebuild()
    }

    /// Appends the candidate entries for `vertex` to `out` (the valid ones are those whose
    /// revision the reader's snapshot holds). Builds the index from a snapshot on first use and
    /// after garbage came to dominate. `lock_writers` must take the collection's writer lock,
    /// run the given closure and take a fresh snapshot while still holding it.
    pub fn lookup(
        &self,
        cid: CollectionId,
        vertex: &str,
        direction: EdgeDirection,
        out: &mut Vec<EdgeHit>,
        lock_writers: impl FnOnce(&dyn Fn()) -> Snapshot,
    ) -> Result<()> {
        {
            let _shared = self.generation.read();
            if self.usable() {
                self.candidates(vertex, direction, out);
                return Ok(());
            }
        }
        {
            let _exclusive = self.generation.write();
            if !self.usable() {
                let snapshot = lock_writers(&|| {
                    // Under the writer lock: commits from here on are recorded, and the
                    // snapshot taken right after holds everything committed before.
                    for shard in self.from.iter().chain(&self.to) {
                        shard.write().clear();
                    }
                    self.entries.store(0, Ordering::Relaxed);
                    self.superseded.store(0, Ordering::Relaxed);
                    self.ready.store(false, Ordering::Release);
                    self.recording.store(true, Ordering::Release);
                });
                for item in snapshot.scan(cid)? {
                    let (key, doc) = item?;
                    if let Some(ends) = ends_of(&doc.body) {
                        self.add(&Arc::from(key.as_str()), doc.rev, &ends);
                    }
                }
                self.ready.store(true, Ordering::Release);
            }
        }
        let _shared = self.generation.read();
        self.candidates(vertex, direction, out);
        Ok(())
    }

    fn candidates(&self, vertex: &str, direction: EdgeDirection, out: &mut Vec<EdgeHit>) {
        let shards = match direction {
            EdgeDirection::Outbound => &self.from,
            EdgeDirection::Inbound => &self.to,
        };
        if let Some(hits) = self.shard(shards, vertex).read().get(vertex) {
            out.extend(hits.iter().cloned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_are_extracted_without_full_parse() {
        let body =
            br#"{"_key":"e","_rev":"x","_from":"a/1","big":{"nested":[1,2,3]},"_to":"b\/2"}"#;
        let (from, to) = ends_of(body).unwrap();
        assert_eq!((&*from, &*to), ("a/1", "b/2"));
        assert!(ends_of(br#"{"_key":"e"}"#).is_none());
        assert!(ends_of(b"not json").is_none());
    }
}
