//! Key-order range scans of the primary index: a snapshot's documents whose keys lie in a
//! range, in byte order of the keys (ascending or descending), read lazily.
//!
//! Keys are hashed over the index shards, each an ordered map, so the scan merges the shards:
//! every shard has a cursor with a small buffer of visible `(key, version)` pairs copied
//! under its read lock (first 16, growing to `SCAN_CHUNK`), and each step emits the
//! smallest (largest) buffered head. A consumer that stops after `n` documents (AQL's LIMIT)
//! has read about `n` documents plus one buffer per shard, not the collection.
//!
//! Consistency is that of [`super::ScanIter`]: versions are taken at the snapshot's tick,
//! which the snapshot pins, so chunks copied at different times still show one state.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

use quiver_errors::Result;

use super::collection::Collection;
use super::SnapshotState;
use crate::index::{Version, SCAN_CHUNK};
use crate::StoredDocument;

/// Entries a shard cursor copies on its first refill; doubled on each later one.
const FIRST_CHUNK: usize = 16;

struct ShardCursor {
    buffer: VecDeque<(Box<str>, Version)>,
    /// The last key examined (the next refill continues past it).
    resume: Option<Box<str>>,
    chunk: usize,
    done: bool,
}

/// Iterator over the documents of one collection in a key range (see the module notes).
pub struct KeyRangeIter {
    snap: Arc<SnapshotState>,
    col: Arc<Collection>,
    lower: Bound<String>,
    upper: Bound<String>,
    reverse: bool,
    shards: Vec<ShardCursor>,
    /// The key emitted last: the merge never goes back (checked, it is the scan's promise).
    last: Option<Box<str>>,
}

impl KeyRangeIter {
    pub(super) fn new(
        snap: Arc<SnapshotState>,
        col: Arc<Collection>,
        (lower, upper): (Bound<String>, Bound<String>),
        reverse: bool,
    ) -> KeyRangeIter {
        let shards = (0..col.index.shard_count())
            .map(|_| ShardCursor {
                buffer: VecDeque::new(),
                resume: None,
                chunk: FIRST_CHUNK,
                done: false,
            })
            .collect();
        KeyRangeIter {
            snap,
            col,
            lower,
            upper,
            reverse,
            shards,
            last: None,
        }
    }

    /// Fills the buffer of shard `s` if it is empty and the shard has more in range.
    fn refill(&mut self, s: usize) {
        let tick = self.snap.tick();
        let cursor = &mut self.shards[s];
        // Bounded: each round either buffers something, or advances past `chunk` keys none
        // of which is visible, or finishes the shard.
        while cursor.buffer.is_empty() && !cursor.done {
            let (mut lower, mut upper) = (as_ref(&self.lower), as_ref(&self.upper));
            if let Some(k) = cursor.resume.as_deref() {
                if self.reverse {
                    upper = Bound::Excluded(k);
                } else {
                    lower = Bound::Excluded(k);
                }
            }
            let (items, last) =
                self.col
                    .index
                    .visible_range(s, (lower, upper), self.reverse, tick, cursor.chunk);
            cursor.buffer.extend(items);
            cursor.chunk = (cursor.chunk * 2).min(SCAN_CHUNK);
            match last {
                Some(k) => cursor.resume = Some(k),
                None => cursor.done = true,
            }
        }
    }
}

fn as_ref(b: &Bound<String>) -> Bound<&str> {
    match b {
        Bound::Included(s) => Bound::Included(s.as_str()),
        Bound::Excluded(s) => Bound::Excluded(s.as_str()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Iterator for KeyRangeIter {
    type Item = Result<(String, StoredDocument)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let mut best: Option<usize> = None;
            for s in 0..self.shards.len() {
                self.refill(s);
                let Some((key, _)) = self.shards[s].buffer.front() else {
                    continue;
                };
                let better = match best {
                    None => true,
                    Some(b) => {
                        let other = &self.shards[b].buffer[0].0;
                        if self.reverse {
                            key > other
                        } else {
                            key < other
                        }
                    }
                };
                if better {
                    best = Some(s);
                }
            }
            let (key, version) = self.shards[best?].buffer.pop_front()?;
            if let Some(prev) = &self.last {
                assert!(
                    if self.reverse {
                        key < *prev
                    } else {
                        key > *prev
                    },
                    "key range scan out of order"
                );
            }
            let inner = self.snap.inner();
            let doc = match inner.read_at(&self.col, version) {
                Ok(Some(doc)) => Ok(Some(doc)),
                Ok(None) => inner.read_version(&self.col, &key, self.snap.tick()),
                Err(e) => Err(e),
            };
            self.last = Some(key.clone());
            return match doc {
                Ok(Some(doc)) => Some(Ok((key.into_string(), doc))),
                Ok(None) => continue,
                Err(e) => Some(Err(e)),
            };
        }
    }
}
