//! The in-memory primary index: key → short version chain of file locations.
//!
//! Sharded ordered maps: a writer locks one shard for one key; a scan walks a shard in bounded
//! chunks under its read lock, so a long scan blocks a writer for at most one chunk. Each
//! entry keeps the versions that some live snapshot may still need, tagged with commit ticks;
//! a snapshot reads the newest version whose tick is not above its own.

use std::collections::BTreeMap;
use std::ops::Bound;

use parking_lot::RwLock;

/// Where a marker lives. `fid == 0` means "removed" (a tombstone version).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Loc {
    pub fid: u64,
    pub offset: u32,
    pub len: u32,
}

impl Loc {
    pub const REMOVED: Loc = Loc {
        fid: 0,
        offset: 0,
        len: 0,
    };
}

/// One version of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Version {
    pub tick: u64,
    pub rev: u64,
    pub loc: Loc,
}

impl Version {
    pub fn is_removed(&self) -> bool {
        self.loc.fid == 0
    }
}

/// A key's versions: the newest in `head`, older ones in `older`, oldest first (sorted by
/// tick, so that appending and looking up are cheap even for long chains under a long-lived
/// snapshot).
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub head: Version,
    /// Boxed so that the common case (a single version) costs one pointer instead of a
    /// 24-byte empty Vec in every entry of a 10-million-key index.
    #[allow(clippy::box_collection)]
    older: Option<Box<Vec<Version>>>,
}

impl Entry {
    fn visible(&self, tick: u64) -> Option<&Version> {
        if self.head.tick <= tick {
            return Some(&self.head);
        }
        let older = self.older();
        let visible = older.partition_point(|v| v.tick <= tick);
        visible.checked_sub(1).map(|i| &older[i])
    }

    /// Versions older than the head, oldest first.
    pub fn older(&self) -> &[Version] {
        self.older.as_deref().map(|v| v.as_slice()).unwrap_or(&[])
    }

    fn new(head: Version) -> Entry {
        Entry { head, older: None }
    }

    fn push(&mut self, version: Version) {
        let old = std::mem::replace(&mut self.head, version);
        self.older.get_or_insert_with(Default::default).push(old);
    }

    /// Drops versions no snapshot at or above `horizon` can see.
    fn prune(&mut self, horizon: u64) {
        if self.head.tick <= horizon {
            self.older = None;
        } else if let Some(older) = self.older.as_mut() {
            // Keep the newest version at or below the horizon and everything newer.
            let at_or_below = older.partition_point(|v| v.tick <= horizon);
            if at_or_below > 1 {
                older.drain(..at_or_below - 1);
            }
        }
    }

    fn versions_mut(&mut self) -> impl Iterator<Item = &mut Version> {
        std::iter::once(&mut self.head).chain(self.older.iter_mut().flat_map(|v| v.iter_mut()))
    }
}

const SHARDS: usize = 16;
/// Entries a scan copies per shard lock acquisition.
pub(crate) const SCAN_CHUNK: usize = 256;

type Shard = BTreeMap<Box<str>, Entry>;

/// Visible (key, version) pairs of a chunk and the last key examined (`None` = shard done).
pub(crate) type VisibleChunk = (Vec<(Box<str>, Version)>, Option<Box<str>>);

/// The primary index of one collection.
pub(crate) struct PrimaryIndex {
    shards: Vec<RwLock<Shard>>,
}

fn shard_of(key: &str) -> usize {
    // FNV-1a: cheap and good enough to spread keys over a handful of shards.
    let mut h: u32 = 0x811c_9dc5;
    for &b in key.as_bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    (h as usize) % SHARDS
}

impl PrimaryIndex {
    pub fn new() -> PrimaryIndex {
        PrimaryIndex {
            shards: (0..SHARDS).map(|_| RwLock::new(BTreeMap::new())).collect(),
        }
    }

    pub fn shard_count(&self) -> usize {
        SHARDS
    }

    /// The version of `key` visible at `tick`, if the key exists there.
    pub fn get(&self, key: &str, tick: u64) -> Option<Version> {
        let shard = self.shards[shard_of(key)].read();
        let v = shard.get(key)?.visible(tick)?;
        (!v.is_removed()).then_some(*v)
    }

    /// Installs a new newest version; returns whether the key was alive before.
    pub fn install(&self, key: &str, version: Version, horizon: u64) -> bool {
        let mut shard = self.shards[shard_of(key)].write();
        match shard.get_mut(key) {
            Some(entry) => {
                let was_alive = !entry.head.is_removed();
                entry.push(version);
                entry.prune(horizon);
                if entry.head.is_removed() && entry.older().is_empty() {
                    shard.remove(key);
                }
                was_alive
            }
            None => {
                if !version.is_removed() {
                    shard.insert(key.into(), Entry::new(version));
                }
                false
            }
        }
    }

    /// Recovery: keeps the version with the highest tick for each key.
    pub fn recover(&self, key: &str, version: Version) {
        let mut shard = self.shards[shard_of(key)].write();
        match shard.get_mut(key) {
            Some(entry) => {
                if version.tick > entry.head.tick {
                    entry.head = version;
                }
            }
            None => {
                shard.insert(key.into(), Entry::new(version));
            }
        }
    }

    /// Moves every version located at `from` to `to` (collector and compactor); returns
    /// whether any version pointed there.
    pub fn repoint(&self, key: &str, from: Loc, to: Loc) -> bool {
        let mut shard = self.shards[shard_of(key)].write();
        let mut hit = false;
        if let Some(entry) = shard.get_mut(key) {
            for v in entry.versions_mut() {
                if v.loc == from {
                    v.loc = to;
                    hit = true;
                }
            }
        }
        hit
    }

    /// Removes tombstones and versions nobody can see any more; returns the number of live
    /// keys (newest versions). Holds each shard's lock for one chunk at a time.
    pub fn gc(&self, horizon: u64) -> u64 {
        let mut alive = 0;
        for shard in &self.shards {
            let mut from: Option<Box<str>> = None;
            loop {
                let mut guard = shard.write();
                let lower = match &from {
                    Some(k) => Bound::Excluded(k.clone()),
                    None => Bound::Unbounded,
                };
                let mut dead = Vec::new();
                let mut last = None;
                for (k, e) in guard
                    .range_mut::<Box<str>, _>((lower, Bound::Unbounded))
                    .take(SCAN_CHUNK * 4)
                {
                    e.prune(horizon);
                    if e.head.is_removed() && e.head.tick <= horizon {
                        dead.push(k.clone());
                    } else if !e.head.is_removed() {
                        alive += 1;
                    }
                    last = Some(k.clone());
                }
                for k in dead {
                    guard.remove(&k);
                }
                match last {
                    Some(k) => from = Some(k),
                    None => break,
                }
            }
        }
        alive
    }

    /// Calls `f` for every entry, chunk by chunk: `f` runs under a shard's read lock for at
    /// most one chunk of entries, then the lock is released (writers get in between chunks).
    pub fn for_each_chunked(&self, mut f: impl FnMut(&str, &Entry)) {
        for shard in &self.shards {
            let mut from: Option<Box<str>> = None;
            loop {
                let guard = shard.read();
                let lower = match &from {
                    Some(k) => Bound::Excluded(&**k),
                    None => Bound::Unbounded,
                };
                let mut last: Option<&str> = None;
                for (k, e) in guard
                    .range::<str, _>((lower, Bound::Unbounded))
                    .take(SCAN_CHUNK * 4)
                {
                    f(k, e);
                    last = Some(k);
                }
                match last {
                    Some(k) => from = Some(k.into()),
                    None => break,
                }
            }
        }
    }

    /// Up to `limit` keys of `shard` after `after` with their version visible at `tick`.
    pub fn visible_chunk(
        &self,
        shard: usize,
        after: Option<&str>,
        tick: u64,
        limit: usize,
    ) -> VisibleChunk {
        let guard = self.shards[shard].read();
        let lower = match after {
            Some(k) => Bound::Excluded(k),
            None => Bound::Unbounded,
        };
        let mut out = Vec::with_capacity(limit.min(guard.len()));
        // The resume key is cloned once per chunk, not once per entry (scans are hot).
        let mut last = None;
        for (k, e) in guard.range::<str, _>((lower, Bound::Unbounded)).take(limit) {
            last = Some(k);
            if let Some(v) = e.visible(tick) {
                if !v.is_removed() {
                    out.push((k.clone(), *v));
                }
            }
        }
        (out, last.cloned())
    }
}

/// Estimated bytes of one entry: key, map slot and node share, version chain.
pub(crate) fn entry_memory(key: &str, e: &Entry) -> u64 {
    let mut total = (key.len() + std::mem::size_of::<Entry>() + 48) as u64;
    if let Some(older) = &e.older {
        total += (24 + older.capacity() * std::mem::size_of::<Version>()) as u64;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_estimate_counts_every_entry_and_chain_across_chunks() {
        let idx = PrimaryIndex::new();
        let estimate = |idx: &PrimaryIndex| {
            let mut total = 0u64;
            idx.for_each_chunked(|k, e| total += entry_memory(k, e));
            total
        };
        // More entries than one chunk per shard.
        let n = SHARDS * SCAN_CHUNK * 4 * 2;
        for i in 0..n {
            idx.install(&format!("key{i:06}"), v(1, 1), 0);
        }
        let base = (n * (9 + std::mem::size_of::<Entry>() + 48)) as u64;
        assert_eq!(estimate(&idx), base);
        // A second version kept for a snapshot (horizon 1) adds a chain.
        idx.install("key000000", v(2, 1), 1);
        assert!(estimate(&idx) > base + std::mem::size_of::<Version>() as u64);
    }

    fn v(tick: u64, fid: u64) -> Version {
        Version {
            tick,
            rev: tick,
            loc: Loc {
                fid,
                offset: 8,
                len: 30,
            },
        }
    }

    #[test]
    fn snapshots_see_their_version_and_pruning_respects_horizon() {
        let idx = PrimaryIndex::new();
        assert!(!idx.install("a", v(10, 1), 9));
        assert!(idx.install("a", v(20, 1), 10));
        assert_eq!(idx.get("a", 15).unwrap().tick, 10);
        assert_eq!(idx.get("a", 25).unwrap().tick, 20);
        assert_eq!(idx.get("a", 5), None);
        // Removal visible only to later snapshots.
        assert!(idx.install("a", v(30, 0), 10));
        assert_eq!(idx.get("a", 29).unwrap().tick, 20);
        assert_eq!(idx.get("a", 30), None);
        // Horizon 30: older versions go, the tombstone entry is collected.
        assert_eq!(idx.gc(30), 0);
        assert_eq!(idx.get("a", 25), None);
    }

    #[test]
    fn repoint_moves_every_matching_version() {
        let idx = PrimaryIndex::new();
        idx.install("k", v(1, 7), 0);
        idx.install("k", v(2, 7), 0);
        let to = Loc {
            fid: 9,
            offset: 16,
            len: 30,
        };
        assert!(idx.repoint("k", v(1, 7).loc, to));
        assert_eq!(idx.get("k", 2).unwrap().loc, to);
        assert_eq!(idx.get("k", 1).unwrap().loc, to);
        assert!(!idx.repoint("missing", to, to));
    }

    #[test]
    fn recovery_keeps_highest_tick() {
        let idx = PrimaryIndex::new();
        idx.recover("k", v(5, 1));
        idx.recover("k", v(3, 2));
        assert_eq!(idx.get("k", u64::MAX).unwrap().loc.fid, 1);
        idx.recover("k", v(6, 0));
        assert_eq!(idx.get("k", u64::MAX), None);
        assert_eq!(idx.gc(u64::MAX), 0);
    }

    #[test]
    fn chunks_cover_all_keys_once() {
        let idx = PrimaryIndex::new();
        for i in 0..2000 {
            idx.install(&format!("k{i}"), v(1, 1), 0);
        }
        let mut seen = 0;
        for shard in 0..idx.shard_count() {
            let mut after: Option<Box<str>> = None;
            loop {
                let (items, last) = idx.visible_chunk(shard, after.as_deref(), 1, 100);
                seen += items.len();
                match last {
                    Some(k) => after = Some(k),
                    None => break,
                }
            }
        }
        assert_eq!(seen, 2000);
    }
}
