//! The in-memory primary index: key → short version chain of file locations.
//!
//! Sharded ordered maps ([`BlockMap`]: keys back to back in blocks, no allocation per key): a
//! writer locks one shard for one key; a scan walks a shard in bounded chunks under its read
//! lock, so a long scan blocks a writer for at most one chunk. Each entry keeps the versions
//! that some live snapshot may still need, tagged with commit ticks; a snapshot reads the
//! newest version whose tick is not above its own.

use std::collections::HashMap;
use std::ops::Bound;

use crate::block_map::{BlockMap, OwnedKey, Then};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::RwLock;

/// Where a marker lives. `slot == 0` means "removed" (a tombstone version).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Loc {
    /// The file's slot in the engine's file table (`engine/file_table.rs`): a number this
    /// process gave the file, not its 64-bit fid on disk.
    pub slot: u32,
    pub offset: u32,
    pub len: u32,
}

impl Loc {
    pub const REMOVED: Loc = Loc {
        slot: 0,
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
        self.loc.slot == 0
    }
}

/// A key's versions as a caller sees them: the newest in `head`, older ones (oldest first)
/// in `older`, which [`PrimaryIndex::for_each_chunked`] hands out for the entry at hand.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeyVersions<'a> {
    pub head: Version,
    older: &'a [Version],
}

impl KeyVersions<'_> {
    /// Versions older than the head, oldest first.
    pub fn older(&self) -> &[Version] {
        self.older
    }
}

/// Bit of [`Entry::len`] set when the key has older versions in its shard's
/// [`Shard::older`] map (a marker is at most a journal's size, 2^30 bytes, so the bit is free).
const HAS_OLDER: u32 = 1 << 31;

/// [`Entry::tick`] of a head whose commit tick does not fit 32 bits: the tick is in the
/// shard's [`Shard::far_ticks`] map under the entry's key. Ticks count markers, files and ids
/// from the data directory's creation on, so every tick below 2^32 - 1 is held in the entry.
const FAR_TICK: u32 = u32::MAX;

/// Head ticks at or above [`FAR_TICK`], by key (only keys whose entry says [`FAR_TICK`]).
type FarTicks = HashMap<OwnedKey, u64>;

/// A key's newest version as its block holds it: 24 bytes at 4-byte alignment (the
/// [`Version`] it unpacks to is 32 with a 64-bit tick, and a pointer to older
/// versions made the entry 40). The commit tick is held in 32 bits, a larger one in the
/// shard's side map ([`FAR_TICK`]); the rare older versions live in the shard's other side
/// map, flagged by [`HAS_OLDER`] (docs/benchmarks/tools.md, "Import memory").
#[derive(Clone, Copy, Debug)]
#[repr(C, packed(4))]
pub(crate) struct Entry {
    /// The head's commit tick, or [`FAR_TICK`].
    tick: u32,
    rev: u64,
    /// The file's slot ([`Loc::slot`]).
    slot: u32,
    offset: u32,
    /// The marker's length, and [`HAS_OLDER`].
    len: u32,
}

impl Entry {
    /// The entry of `key` whose newest version is `head` (a far tick goes into `far`).
    fn new(far: &mut FarTicks, key: &str, head: Version) -> Entry {
        let mut e = Entry {
            tick: 0,
            rev: 0,
            slot: 0,
            offset: 0,
            len: 0,
        };
        e.set_head(far, key, head);
        e
    }

    /// The newest version of `key`, whose entry this is.
    pub fn head(&self, far: &FarTicks, key: &str) -> Version {
        Version {
            tick: self.head_tick(far, key),
            rev: self.rev,
            loc: Loc {
                slot: self.slot,
                offset: self.offset,
                len: self.len & !HAS_OLDER,
            },
        }
    }

    /// Replaces the newest version of `key`, keeping the flag for older ones.
    fn set_head(&mut self, far: &mut FarTicks, key: &str, v: Version) {
        // A marker is at most 2^30 bytes. The file is named by its 32-bit slot, not its fid.
        assert!(v.loc.len < HAS_OLDER, "markers are below 2 GiB");
        match u32::try_from(v.tick) {
            Ok(tick) if tick != FAR_TICK => {
                if self.tick == FAR_TICK {
                    far.remove(key);
                }
                self.tick = tick;
            }
            _ => {
                far.insert(OwnedKey::from(key), v.tick);
                self.tick = FAR_TICK;
            }
        }
        self.rev = v.rev;
        self.slot = v.loc.slot;
        self.offset = v.loc.offset;
        self.len = v.loc.len | (self.len & HAS_OLDER);
    }

    fn has_older(&self) -> bool {
        self.len & HAS_OLDER != 0
    }

    fn head_tick(&self, far: &FarTicks, key: &str) -> u64 {
        if self.tick == FAR_TICK {
            // Every entry that says FAR_TICK has its tick in the map (set_head, and
            // `forget_far` only when the entry goes).
            far.get(key)
                .copied()
                .expect("a far tick is in the side map")
        } else {
            u64::from(self.tick)
        }
    }

    /// Drops what the side map holds for `key`, whose entry is leaving the index.
    fn forget_far(&self, far: &mut FarTicks, key: &str) {
        if self.tick == FAR_TICK {
            far.remove(key);
        }
    }

    fn head_removed(&self) -> bool {
        self.slot == 0
    }
}

/// The version of `head` and `older` (oldest first) visible at `tick`.
fn visible_of(head: Version, older: &[Version], tick: u64) -> Option<Version> {
    if head.tick <= tick {
        return Some(head);
    }
    let visible = older.partition_point(|v| v.tick <= tick);
    visible.checked_sub(1).map(|i| older[i])
}

/// Drops versions no snapshot at or above `horizon` can see: those superseded at or below it,
/// and those at or below `floor`, the truncate in effect at the horizon. Returns whether
/// nothing is left.
fn prune_below(head: Version, older: &mut Vec<Version>, horizon: u64, floor: u64) -> bool {
    prune(head, older, horizon);
    if head.tick <= floor {
        return true;
    }
    let dead = older.partition_point(|v| v.tick <= floor);
    older.drain(..dead);
    false
}

/// Drops versions no snapshot at or above `horizon` can see.
fn prune(head: Version, older: &mut Vec<Version>, horizon: u64) {
    if head.tick <= horizon {
        older.clear();
    } else {
        // Keep the newest version at or below the horizon and everything newer.
        let at_or_below = older.partition_point(|v| v.tick <= horizon);
        if at_or_below > 1 {
            older.drain(..at_or_below - 1);
        }
    }
}

/// One shard: its keys' entries in blocks (each key's bytes in its block's arena, no allocation
/// per key, and keys that arrive in order fill every block: docs/benchmarks/storage.md,
/// "Memory per stored document"), and the older versions of the few keys that have
/// any (a version superseded while a snapshot may still read it, until GC drops it).
#[derive(Default)]
struct Shard {
    map: BlockMap<Entry>,
    older: HashMap<OwnedKey, Vec<Version>>,
    /// The head ticks of the entries that say [`FAR_TICK`] (none before the data directory's
    /// tick counter passes 2^32 - 1).
    far_ticks: FarTicks,
}

/// The older versions of `key`, whose entry is `e`.
fn older_of<'a>(older: &'a HashMap<OwnedKey, Vec<Version>>, key: &str, e: &Entry) -> &'a [Version] {
    if e.has_older() {
        older.get(key).map_or(&[], Vec::as_slice)
    } else {
        &[]
    }
}

/// Runs `f` on the head and older versions of `key` (entry `e`), then stores them back: the
/// older ones in the side map when any are left, the flag set accordingly.
fn with_chain<R>(
    older: &mut HashMap<OwnedKey, Vec<Version>>,
    far: &mut FarTicks,
    key: &str,
    e: &mut Entry,
    f: impl FnOnce(&mut Version, &mut Vec<Version>) -> R,
) -> R {
    let mut chain = if e.has_older() {
        older.remove(key).unwrap_or_default()
    } else {
        Vec::new()
    };
    let mut head = e.head(far, key);
    let result = f(&mut head, &mut chain);
    e.set_head(far, key, head);
    if chain.is_empty() {
        e.len &= !HAS_OLDER;
    } else {
        e.len |= HAS_OLDER;
        older.insert(OwnedKey::from(key), chain);
    }
    result
}

const SHARDS: usize = 16;
/// The garbage bound after a truncate: every entry may be dead. Far below `u64::MAX`, so that
/// the increments of later installs cannot wrap it around to "nothing to collect".
const ALL_STALE: u64 = 1 << 62;
/// Entries a scan copies per shard lock acquisition.
pub(crate) const SCAN_CHUNK: usize = 256;

/// Visible (key, version) pairs of a chunk and the last key examined (`None` = shard done).
pub(crate) type VisibleChunk = (Vec<(Box<str>, Version)>, Option<Box<str>>);

/// The primary index of one collection.
pub(crate) struct PrimaryIndex {
    shards: Vec<RwLock<Shard>>,
    /// Ticks of truncates some snapshot may still read across, ascending: a snapshot at
    /// tick S sees no version at or below the newest of them that is not above S. Pruned to
    /// the newest at or below the horizon plus everything above it.
    truncates: RwLock<Vec<u64>>,
    /// The newest truncate tick (0 = never truncated): the lock-free fast path, since a
    /// snapshot at or above it needs nothing else.
    last_truncate: AtomicU64,
    /// An upper bound on the entries a GC pass could shrink or drop (older versions,
    /// tombstones, versions under a truncate): 0 means a pass would find nothing, so the
    /// compactor's periodic check skips its walk over every key of an insert-only collection.
    stale: AtomicU64,
    /// Set (for good) once a key outside [`binary_ordered_key`]'s alphabet was installed:
    /// from then on the byte order of this index's keys may differ from AQL's string order.
    mixed_order: AtomicBool,
}

/// Whether `key` uses only characters on which byte order and AQL's string order (the
/// collation of `quiver_types::compare_strings`) agree: `-`, digits and lower-case ASCII
/// letters (ranked `-` < digits < letters in both). Two such keys compare the same either way,
/// which is what lets a key range be read from the primary index in byte order.
pub fn binary_ordered_key(key: &str) -> bool {
    key.bytes()
        .all(|b| b == b'-' || b.is_ascii_digit() || b.is_ascii_lowercase())
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
            shards: (0..SHARDS).map(|_| RwLock::new(Shard::default())).collect(),
            truncates: RwLock::new(Vec::new()),
            last_truncate: AtomicU64::new(0),
            stale: AtomicU64::new(0),
            mixed_order: AtomicBool::new(false),
        }
    }

    fn note_key(&self, key: &str) {
        if !binary_ordered_key(key) && !self.mixed_order.load(Ordering::Relaxed) {
            self.mixed_order.store(true, Ordering::Release);
        }
    }

    /// Whether every key ever installed here is [`binary_ordered_key`] (so byte order is AQL
    /// order for all of them). Sticky: a removed key does not clear it.
    pub fn binary_ordered(&self) -> bool {
        !self.mixed_order.load(Ordering::Acquire)
    }

    /// The truncate tick in effect for a snapshot at `tick`: versions at or below it are
    /// gone for that snapshot.
    pub fn floor(&self, tick: u64) -> u64 {
        let last = self.last_truncate.load(Ordering::Acquire);
        if last <= tick {
            return last;
        }
        let list = self.truncates.read();
        let at_or_below = list.partition_point(|t| *t <= tick);
        at_or_below.checked_sub(1).map(|i| list[i]).unwrap_or(0)
    }

    /// The newest truncate tick (0 if none).
    pub fn last_truncate(&self) -> u64 {
        self.last_truncate.load(Ordering::Acquire)
    }

    /// Records a truncate at `tick` (above every version installed so far): from a snapshot
    /// at `tick` on, every existing version is gone. O(1) in the collection size; the dead
    /// entries are dropped by later GC passes.
    pub fn truncate(&self, tick: u64, horizon: u64) {
        let mut list = self.truncates.write();
        if list.last().is_none_or(|t| *t < tick) {
            list.push(tick);
        }
        // Only the newest truncate at or below the horizon matters to any snapshot left.
        let at_or_below = list.partition_point(|t| *t <= horizon);
        if at_or_below > 1 {
            list.drain(..at_or_below - 1);
        }
        // Published after the list, so that a reader that sees the new tick finds it there.
        self.last_truncate.fetch_max(tick, Ordering::AcqRel);
        self.stale.store(ALL_STALE, Ordering::Release);
    }

    /// Recovery: a truncate marker at `tick` was found (in any order; no snapshot exists
    /// yet, so only the newest counts).
    pub fn note_truncate(&self, tick: u64) {
        let mut list = self.truncates.write();
        if list.last().is_none_or(|t| *t < tick) {
            *list = vec![tick];
        }
        self.last_truncate.fetch_max(tick, Ordering::AcqRel);
        self.stale.store(ALL_STALE, Ordering::Release);
    }

    pub fn shard_count(&self) -> usize {
        SHARDS
    }

    /// The version of `key` visible at `tick`, if the key exists there.
    pub fn get(&self, key: &str, tick: u64) -> Option<Version> {
        let floor = self.floor(tick);
        let shard = self.shards[shard_of(key)].read();
        let e = shard.map.get(key)?;
        let v = visible_of(
            e.head(&shard.far_ticks, key),
            older_of(&shard.older, key, e),
            tick,
        )?;
        (!v.is_removed() && v.tick > floor).then_some(v)
    }

    /// Installs a new newest version; returns whether the key was alive before.
    pub fn install(&self, key: &str, version: Version, horizon: u64) -> bool {
        self.note_key(key);
        // Installs run under the WAL mutex, after every truncate below their tick.
        let last_truncate = self.last_truncate();
        let floor = self.floor(horizon);
        let mut shard = self.shards[shard_of(key)].write();
        let Shard {
            map,
            older,
            far_ticks,
        } = &mut *shard;
        // One search, for a new key (the common case) as for an existing one.
        map.upsert(key, |entry| match entry {
            Some(entry) => {
                let (was_alive, gone) = self.push_onto(
                    (older, far_ticks),
                    key,
                    entry,
                    version,
                    horizon,
                    floor,
                    last_truncate,
                );
                (was_alive, if gone { Then::Remove } else { Then::Keep })
            }
            // Removing a key nobody has: nothing to store.
            None if version.is_removed() => (false, Then::Keep),
            None => (false, Then::Insert(Entry::new(far_ticks, key, version))),
        })
    }

    /// [`PrimaryIndex::install`] of a live version for a key that must not be alive, with the
    /// existence check in the same search: if `key` is alive, returns `Ok(false)` and does
    /// not call `write`. Otherwise calls `write` with the key's shard locked (so no other
    /// install of the key gets in between) and installs the version it returns: `write`
    /// writes the marker that version points at. Runs under the WAL mutex, like `install`.
    pub fn install_new<E>(
        &self,
        key: &str,
        horizon: u64,
        write: impl FnOnce() -> std::result::Result<Version, E>,
    ) -> std::result::Result<bool, E> {
        self.note_key(key);
        let last_truncate = self.last_truncate();
        let floor = self.floor(horizon);
        let mut shard = self.shards[shard_of(key)].write();
        let Shard {
            map,
            older,
            far_ticks,
        } = &mut *shard;
        map.upsert(key, |entry| match entry {
            Some(entry) => {
                if !entry.head_removed() && entry.head_tick(far_ticks, key) > last_truncate {
                    return (Ok(false), Then::Keep);
                }
                match write() {
                    Ok(version) => {
                        // A live head: the entry cannot be gone afterwards.
                        self.push_onto(
                            (older, far_ticks),
                            key,
                            entry,
                            version,
                            horizon,
                            floor,
                            last_truncate,
                        );
                        (Ok(true), Then::Keep)
                    }
                    Err(e) => (Err(e), Then::Keep),
                }
            }
            None => match write() {
                Ok(version) => (Ok(true), Then::Insert(Entry::new(far_ticks, key, version))),
                Err(e) => (Err(e), Then::Keep),
            },
        })
    }

    /// Pushes `version` onto an existing entry and prunes it: returns whether the key was
    /// alive before, and whether the entry is now empty (a lone tombstone nobody can see) and
    /// must be removed.
    #[allow(clippy::too_many_arguments)]
    fn push_onto(
        &self,
        (older, far): (&mut HashMap<OwnedKey, Vec<Version>>, &mut FarTicks),
        key: &str,
        entry: &mut Entry,
        version: Version,
        horizon: u64,
        floor: u64,
        last_truncate: u64,
    ) -> (bool, bool) {
        let was_alive = !entry.head_removed() && entry.head_tick(far, key) > last_truncate;
        let (gone, stale) = with_chain(older, far, key, entry, |head, chain| {
            chain.push(std::mem::replace(head, version));
            prune_below(*head, chain, horizon, floor);
            let gone = head.is_removed() && chain.is_empty();
            (gone, head.is_removed() || !chain.is_empty())
        });
        if gone {
            // The entry goes: no chain or tick may stay behind in the side maps.
            older.remove(key);
            entry.forget_far(far, key);
        } else if stale {
            self.stale.fetch_add(1, Ordering::Relaxed);
        }
        (was_alive, gone)
    }

    /// Recovery: the tick of the newest version of `key` found so far (removals included).
    pub fn newest_tick(&self, key: &str) -> Option<u64> {
        let shard = self.shards[shard_of(key)].read();
        shard
            .map
            .get(key)
            .map(|e| e.head_tick(&shard.far_ticks, key))
    }

    /// Recovery: keeps the version with the highest tick for each key.
    pub fn recover(&self, key: &str, version: Version) {
        self.note_key(key);
        if version.tick <= self.last_truncate() {
            // Dead already: a truncate found earlier covers it (any later find is newer).
            return;
        }
        let mut shard = self.shards[shard_of(key)].write();
        if version.is_removed() {
            self.stale.fetch_add(1, Ordering::Relaxed);
        }
        let Shard { map, far_ticks, .. } = &mut *shard;
        // One search for the common case at restart (a key seen for the first time).
        map.upsert(key, |entry| match entry {
            Some(entry) => {
                if version.tick > entry.head_tick(far_ticks, key) {
                    entry.set_head(far_ticks, key, version);
                }
                ((), Then::Keep)
            }
            None => ((), Then::Insert(Entry::new(far_ticks, key, version))),
        });
    }

    /// Moves every version located at `from` to `to` (collector and compactor); returns
    /// whether any version pointed there.
    /// The shard `key` lives in (for [`PrimaryIndex::repoint_in_shard`]).
    pub fn shard_of(key: &str) -> usize {
        shard_of(key)
    }

    /// [`PrimaryIndex::repoint`] for many keys of one shard (`shard_of` of every key must be
    /// `shard`) under one acquisition of its write lock: the collector moves ~200,000 versions
    /// per WAL segment, and a lock round trip per key cost as much as the lookups. Callers pass
    /// bounded runs (a writer of the shard waits for one run).
    ///
    /// Keys that follow each other within one block are found by a binary search in that
    /// block instead of a new search from the root: with increasing keys (ArangoDB's
    /// traditional and autoincrement generators) a WAL segment's documents are a contiguous
    /// stretch of each shard.
    pub fn repoint_in_shard<'a>(
        &self,
        shard: usize,
        moves: impl Iterator<Item = (&'a str, Loc, Loc)>,
    ) {
        let mut guard = self.shards[shard % SHARDS].write();
        let Shard {
            map,
            older,
            far_ticks,
        } = &mut *guard;
        map.update_each(
            moves.map(|(key, from, to)| {
                debug_assert_eq!(shard_of(key), shard);
                (key, (from, to))
            }),
            |key, entry, (from, to)| {
                repoint_versions((older, far_ticks), key, entry, from, to);
            },
        );
    }

    pub fn repoint(&self, key: &str, from: Loc, to: Loc) -> bool {
        let mut shard = self.shards[shard_of(key)].write();
        let Shard {
            map,
            older,
            far_ticks,
        } = &mut *shard;
        map.get_mut(key)
            .is_some_and(|entry| repoint_versions((older, far_ticks), key, entry, from, to))
    }

    /// Rebuilds every shard into full blocks. Keys installed in order fill their blocks
    /// already; random keys (and recovery, which meets each shard's keys in the order of the
    /// files) leave blocks split in halves. Holds each shard's write lock for the rebuild of
    /// that shard, so it is meant for recovery, before any reader or writer exists.
    pub fn repack(&self) {
        // Sequential on purpose: rebuilt on two threads (the shards are independent) it took
        // longer and more CPU, and the new blocks came from other threads' heaps, so the
        // memory freed here could not be reused or returned.
        for shard in &self.shards {
            shard.write().map.repack();
        }
    }

    /// Heap bytes of the shards' blocks and block maps and of the older versions kept beside
    /// them. Each shard is read-locked for one walk over its blocks (a block holds up to 64
    /// entries) and its older versions.
    pub fn memory_bytes(&self) -> u64 {
        self.shards
            .iter()
            .map(|shard| {
                let shard = shard.read();
                let chains: usize = shard
                    .older
                    .iter()
                    .map(|(k, v)| {
                        let key_heap = if k.is_heap_allocated() { k.len() } else { 0 };
                        key_heap + v.capacity() * std::mem::size_of::<Version>()
                    })
                    .sum();
                // The side maps' slots (key, value, a control byte) by their capacity.
                let slots =
                    shard.older.capacity() * (std::mem::size_of::<(OwnedKey, Vec<Version>)>() + 1);
                let far: usize = shard
                    .far_ticks
                    .keys()
                    .map(|k| if k.is_heap_allocated() { k.len() } else { 0 })
                    .sum::<usize>()
                    + shard.far_ticks.capacity() * (std::mem::size_of::<(OwnedKey, u64)>() + 1);
                (shard.map.heap_bytes() + chains + slots + far) as u64
            })
            .sum()
    }

    /// Whether a [`PrimaryIndex::gc`] pass could find anything to drop.
    pub fn may_hold_garbage(&self) -> bool {
        self.stale.load(Ordering::Acquire) > 0
    }

    /// Removes tombstones and versions nobody can see any more; returns the number of live
    /// keys (newest versions). Holds each shard's lock for one chunk at a time.
    pub fn gc(&self, horizon: u64) -> u64 {
        let mut alive = 0;
        // Taken before the walk: an install during the pass adds to the counter again, and
        // what the pass has to leave for a later one (visible to some snapshot) is added back.
        self.stale.store(0, Ordering::Release);
        let mut left = 0u64;
        let last_truncate = self.last_truncate();
        let floor = self.floor(horizon);
        for shard in &self.shards {
            let mut from: Option<OwnedKey> = None;
            loop {
                // Only the chunk's last key is copied (the resume point): copying every key
                // made a pass over a collection of millions of documents cost as many
                // allocations, ~5 % of the server's CPU under a sustained insert load, where
                // the compactor ran this pass every `min_interval`.
                let mut guard = shard.write();
                let Shard {
                    map,
                    older,
                    far_ticks,
                } = &mut *guard;
                let last = map.retain_chunk(from.as_deref(), SCAN_CHUNK * 4, |k, e| {
                    let head = e.head(far_ticks, k);
                    let (gone, has_older) = if e.has_older() {
                        with_chain(older, far_ticks, k, e, |head, chain| {
                            (prune_below(*head, chain, horizon, floor), !chain.is_empty())
                        })
                    } else {
                        (head.tick <= floor, false)
                    };
                    if gone || (head.is_removed() && head.tick <= horizon) {
                        if e.has_older() {
                            older.remove(k);
                        }
                        e.forget_far(far_ticks, k);
                        return false;
                    }
                    if !head.is_removed() {
                        alive += 1;
                    }
                    if head.is_removed() || has_older || head.tick <= last_truncate {
                        left += 1;
                    }
                    true
                });
                drop(guard);
                match last {
                    Some(k) => from = Some(k),
                    None => break,
                }
            }
        }
        if left > 0 {
            self.stale.fetch_add(left, Ordering::AcqRel);
        }
        alive
    }

    /// Calls `f` for every entry, chunk by chunk: `f` runs under a shard's read lock for at
    /// most one chunk of entries, then the lock is released (writers get in between chunks).
    pub fn for_each_chunked(&self, mut f: impl FnMut(&str, KeyVersions<'_>)) {
        for shard in &self.shards {
            let mut from: Option<Box<str>> = None;
            loop {
                let guard = shard.read();
                let lower = match &from {
                    Some(k) => Bound::Excluded(&**k),
                    None => Bound::Unbounded,
                };
                let mut last: Option<&str> = None;
                for (k, e) in guard.map.iter_from(lower).take(SCAN_CHUNK * 4) {
                    f(
                        k,
                        KeyVersions {
                            head: e.head(&guard.far_ticks, k),
                            older: older_of(&guard.older, k, e),
                        },
                    );
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
        let floor = self.floor(tick);
        let guard = self.shards[shard].read();
        let lower = match after {
            Some(k) => Bound::Excluded(k),
            None => Bound::Unbounded,
        };
        let mut out = Vec::with_capacity(limit.min(guard.map.len()));
        // The resume key is cloned once per chunk, not once per entry (scans are hot).
        let mut last = None;
        for (k, e) in guard.map.iter_from(lower).take(limit) {
            last = Some(k);
            if let Some(v) = visible_of(
                e.head(&guard.far_ticks, k),
                older_of(&guard.older, k, e),
                tick,
            ) {
                if !v.is_removed() && v.tick > floor {
                    out.push((Box::from(k), v));
                }
            }
        }
        (out, last.map(Box::from))
    }

    /// Calls `f` with the location of every live document visible at `tick` among up to
    /// `limit` keys of `shard` after `after`, under the shard's read lock (so a location seen
    /// in `f` cannot be repointed by the collector or compactor until `f` returns). Returns the
    /// last key examined (`None` = shard done); no other key is copied, which is what makes
    /// this cheaper than [`PrimaryIndex::visible_chunk`] for scans that do not need keys.
    pub fn visible_locs(
        &self,
        shard: usize,
        after: Option<&str>,
        tick: u64,
        limit: usize,
        mut f: impl FnMut(Loc),
    ) -> Option<Box<str>> {
        let floor = self.floor(tick);
        let guard = self.shards[shard].read();
        let lower = match after {
            Some(k) => Bound::Excluded(k),
            None => Bound::Unbounded,
        };
        let mut last = None;
        for (k, e) in guard.map.iter_from(lower).take(limit) {
            last = Some(k);
            if let Some(v) = visible_of(
                e.head(&guard.far_ticks, k),
                older_of(&guard.older, k, e),
                tick,
            ) {
                if !v.is_removed() && v.tick > floor {
                    f(v.loc);
                }
            }
        }
        last.map(Box::from)
    }
}

impl PrimaryIndex {
    /// Up to `limit` keys of `shard` within `(lower, upper)`, ascending (descending when
    /// `reverse`), with their version visible at `tick`; and the last key examined (`None` =
    /// the range is exhausted in this shard). The next chunk continues after (before) it.
    pub fn visible_range(
        &self,
        shard: usize,
        (lower, upper): (Bound<&str>, Bound<&str>),
        reverse: bool,
        tick: u64,
        limit: usize,
    ) -> VisibleChunk {
        let floor = self.floor(tick);
        let guard = self.shards[shard].read();
        let mut out = Vec::new();
        let mut last = None;
        let mut examined = 0;
        let chains = &guard.older;
        let far_ticks = &guard.far_ticks;
        let mut keep_visible = |k: &str, e: &Entry| {
            if let Some(v) = visible_of(e.head(far_ticks, k), older_of(chains, k, e), tick) {
                if !v.is_removed() && v.tick > floor {
                    out.push((Box::from(k), v));
                }
            }
        };
        let empty = match (lower, upper) {
            (Bound::Included(a), Bound::Included(b)) => a > b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
            | (Bound::Excluded(a), Bound::Included(b)) => a >= b,
            _ => false,
        };
        if empty {
            return (out, None);
        }
        let above_lower = |k: &str| match lower {
            Bound::Included(l) => k >= l,
            Bound::Excluded(l) => k > l,
            Bound::Unbounded => true,
        };
        let below_upper = |k: &str| match upper {
            Bound::Included(u) => k <= u,
            Bound::Excluded(u) => k < u,
            Bound::Unbounded => true,
        };
        if reverse {
            for (k, e) in guard
                .map
                .iter_back_from(upper)
                .take_while(|(k, _)| above_lower(k))
                .take(limit)
            {
                keep_visible(k, e);
                last = Some(k);
                examined += 1;
            }
        } else {
            for (k, e) in guard
                .map
                .iter_from(lower)
                .take_while(|(k, _)| below_upper(k))
                .take(limit)
            {
                keep_visible(k, e);
                last = Some(k);
                examined += 1;
            }
        }
        if examined < limit {
            return (out, None);
        }
        (out, last.map(Box::from))
    }
}

/// Moves every version of `key` (entry `e`) located at `from` to `to`; returns whether any was.
fn repoint_versions(
    (older, far): (&mut HashMap<OwnedKey, Vec<Version>>, &mut FarTicks),
    key: &str,
    e: &mut Entry,
    from: Loc,
    to: Loc,
) -> bool {
    let mut hit = false;
    let mut head = e.head(far, key);
    if head.loc == from {
        head.loc = to;
        e.set_head(far, key, head);
        hit = true;
    }
    if e.has_older() {
        if let Some(chain) = older.get_mut(key) {
            for v in chain.iter_mut().filter(|v| v.loc == from) {
                v.loc = to;
                hit = true;
            }
        }
    }
    hit
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry a block holds per key: 32-bit tick, revision, 32-bit file slot, offset,
    /// length (with the older-versions flag), at 4-byte alignment; a tick that does not fit
    /// 32 bits (or is the far code itself) round-trips through the shard's side map, which
    /// holds exactly the keys of far entries.
    #[test]
    fn an_entry_is_24_bytes_and_far_ticks_round_trip() {
        assert_eq!(std::mem::size_of::<Entry>(), 24);
        assert_eq!(std::mem::align_of::<Entry>(), 4);
        let v = Version {
            tick: 7,
            rev: 1 << 60,
            loc: Loc {
                slot: u32::MAX,
                offset: u32::MAX,
                len: (1 << 30) + 7,
            },
        };
        let mut far = FarTicks::new();
        let key = "ключ-\u{1F600}";
        let mut e = Entry::new(&mut far, key, v);
        assert_eq!(e.head(&far, key), v);
        assert!(far.is_empty());
        e.len |= HAS_OLDER;
        assert_eq!(e.head(&far, key), v, "the flag is not part of the length");
        // The widest tick held in the entry, the far code itself, the first tick past 32
        // bits and the largest: each reads back, and only far ones use the side map.
        for (tick, is_far) in [
            (u64::from(u32::MAX) - 1, false),
            (u64::from(u32::MAX), true),
            (1 << 32, true),
            (u64::MAX - 1, true),
            (0, false),
            (u64::MAX, true),
            (3, false),
        ] {
            e.set_head(&mut far, key, Version { tick, ..v });
            assert_eq!(e.head(&far, key), Version { tick, ..v }, "{tick}");
            assert_eq!(e.head_tick(&far, key), tick);
            assert_eq!(far.len(), usize::from(is_far), "{tick}");
            assert!(e.has_older(), "replacing the head keeps the flag");
        }
        e.set_head(&mut far, key, Version { tick: 1 << 40, ..v });
        e.forget_far(&mut far, key);
        assert!(far.is_empty(), "a leaving entry takes its far tick along");
    }

    /// Asserts that each shard's far-tick map holds exactly the keys whose entry says
    /// [`FAR_TICK`].
    fn check_far_ticks(idx: &PrimaryIndex) {
        for shard in &idx.shards {
            let shard = shard.read();
            let far_entries: Vec<String> = shard
                .map
                .iter_from(Bound::Unbounded)
                .filter(|(_, e)| e.tick == FAR_TICK)
                .map(|(k, _)| k.to_string())
                .collect();
            assert_eq!(far_entries.len(), shard.far_ticks.len());
            for k in &far_entries {
                assert!(shard.far_ticks.contains_key(k.as_str()), "{k}");
            }
        }
    }

    /// Random installs (new keys, replacements, removals), garbage collections and
    /// repoints against a model that keeps every version: the same visible version for every
    /// key at every tick a live snapshot may read, with commit ticks that start below
    /// 2^32 - 1 and cross it (held in the entry, then in the side map, then replaced by
    /// near ones through recovery), and keys of every shape (shared or no shared prefix,
    /// unicode, the longest legal key).
    #[test]
    fn behaves_like_a_model_across_the_32_bit_tick_boundary() {
        struct Rng(u64);
        impl Rng {
            fn below(&mut self, n: u64) -> u64 {
                self.0 ^= self.0 >> 12;
                self.0 ^= self.0 << 25;
                self.0 ^= self.0 >> 27;
                self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
            }
        }
        let keys: Vec<String> = (0..40u32)
            .map(|i| match i % 5 {
                0 => format!("{}", 1_000_000 + i),
                1 => format!("P{i}"),
                2 => format!("é{i}ü\u{1F600}"),
                3 => format!("{}{i:03}", "k".repeat(251)),
                _ => format!("{}-{i}", char::from(b'a' + (i % 26) as u8)),
            })
            .collect();
        assert!(keys.iter().all(|k| k.len() <= 254));
        for (seed, start) in [(1u64, 1u64), (2, u64::from(u32::MAX) - 300), (3, 1 << 40)] {
            let mut rng = Rng(seed);
            let idx = PrimaryIndex::new();
            let mut model: HashMap<String, Vec<Version>> = HashMap::new();
            let mut tick = start;
            let mut horizon = start - 1;
            for step in 0..3_000u64 {
                let key = &keys[rng.below(keys.len() as u64) as usize];
                match rng.below(10) {
                    0..=5 => {
                        tick += 1 + rng.below(3);
                        let slot = if rng.below(4) == 0 {
                            0
                        } else {
                            1 + rng.below(9) as u32
                        };
                        let version = Version {
                            tick,
                            rev: tick * 3,
                            loc: if slot == 0 {
                                Loc::REMOVED
                            } else {
                                Loc {
                                    slot,
                                    offset: step as u32,
                                    len: 100,
                                }
                            },
                        };
                        let chain = model.entry(key.clone()).or_default();
                        let alive = chain.last().is_some_and(|v| !v.is_removed());
                        assert_eq!(idx.install(key, version, horizon), alive, "{seed}/{step}");
                        chain.push(version);
                    }
                    6 => {
                        horizon = (horizon + rng.below(8)).min(tick);
                        idx.gc(horizon);
                    }
                    7 => {
                        let from = Loc {
                            slot: 1 + rng.below(9) as u32,
                            offset: rng.below(step + 1) as u32,
                            len: 100,
                        };
                        let to = Loc {
                            slot: 10 + rng.below(5) as u32,
                            ..from
                        };
                        idx.repoint(key, from, to);
                        for v in model.get_mut(key).into_iter().flatten() {
                            if v.loc == from {
                                v.loc = to;
                            }
                        }
                    }
                    _ => {
                        if rng.below(30) == 0 {
                            idx.repack();
                        }
                    }
                }
                if step % 50 == 0 {
                    check_far_ticks(&idx);
                    for k in &keys {
                        let chain = model.get(k).map_or(&[][..], Vec::as_slice);
                        for t in [horizon, horizon + 1, (horizon + tick) / 2, tick, u64::MAX] {
                            let want = chain
                                .iter()
                                .rev()
                                .find(|v| v.tick <= t)
                                .filter(|v| !v.is_removed())
                                .copied();
                            assert_eq!(idx.get(k, t), want, "{seed}/{step} {k} at {t}");
                        }
                        let newest = idx.newest_tick(k);
                        if let Some(n) = newest {
                            assert_eq!(Some(n), chain.last().map(|v| v.tick), "{k}");
                        }
                    }
                }
            }
            // Everything collected: only the live heads stay, far ticks of the rest are gone.
            let alive = model
                .values()
                .filter(|c| c.last().is_some_and(|v| !v.is_removed()))
                .count();
            assert_eq!(idx.gc(u64::MAX), alive as u64);
            check_far_ticks(&idx);
            // Recovery meets versions in any order and keeps the highest tick: a far head
            // replaced by a farther one, a near one never replaces a far one.
            let rec = PrimaryIndex::new();
            for (i, k) in keys.iter().enumerate() {
                for t in [start + i as u64, 1 << 33, 5] {
                    rec.recover(
                        k,
                        Version {
                            tick: t,
                            rev: t,
                            loc: Loc {
                                slot: 1,
                                offset: 0,
                                len: 1,
                            },
                        },
                    );
                }
                let want = (start + i as u64).max(1 << 33);
                assert_eq!(rec.newest_tick(k), Some(want), "{k}");
            }
            check_far_ticks(&rec);
        }
    }

    #[test]
    fn memory_estimate_counts_every_entry_and_chain_across_chunks() {
        let idx = PrimaryIndex::new();
        let estimate = |idx: &PrimaryIndex| idx.memory_bytes();
        // More entries than one chunk per shard, keys in order (so blocks are full).
        let n = SHARDS * SCAN_CHUNK * 4 * 2;
        for i in 0..n {
            idx.install(&format!("key{i:06}"), v(1, 1), 0);
        }
        // Per entry: the entry, a 4-byte key reference, the 9 key bytes, and a share of a
        // block's fence and header.
        let floor = (n * (std::mem::size_of::<Entry>() + 4 + 9)) as u64;
        let base = estimate(&idx);
        assert!(base >= floor, "{base} < {floor}");
        assert!(base < floor + (n as u64) * 8, "{base}: blocks are full");
        // A second version kept for a snapshot (horizon 1) adds a chain.
        idx.install("key000000", v(2, 1), 1);
        assert!(estimate(&idx) > base + std::mem::size_of::<Version>() as u64);
    }

    /// Short keys and keys longer than a fence's inline bytes: the same results for a new key,
    /// a replacement, a removal and a removal nobody can see.
    #[test]
    fn long_and_short_keys_install_alike() {
        for key in ["short", "a-key-well-beyond-the-twenty-four-inline-bytes"] {
            let idx = PrimaryIndex::new();
            assert!(!idx.install(key, v(1, 1), 0), "{key}: new");
            assert!(idx.install(key, v(2, 1), 1), "{key}: replaced");
            assert_eq!(idx.get(key, 1), Some(v(1, 1)), "{key}: kept for tick 1");
            assert!(idx.install(key, v(3, 0), 1), "{key}: removed");
            assert_eq!(idx.get(key, 3), None);
            assert_eq!(idx.get(key, 2), Some(v(2, 1)));
            // Removing a key nobody has: nothing is stored.
            assert!(!idx.install("other", v(4, 0), 3));
            let mut keys = Vec::new();
            idx.for_each_chunked(|k, _| keys.push(k.to_string()));
            assert_eq!(keys, vec![key.to_string()], "{key}");
            // Horizon 3: the tombstone and everything under it go.
            assert_eq!(idx.gc(3), 0);
            assert!(!idx.install(key, v(5, 1), 3), "{key}: new again");
            assert_eq!(idx.get(key, 5), Some(v(5, 1)));
        }
    }

    /// A repack keeps every entry, version chain and the order, and the index keeps working.
    #[test]
    fn repack_keeps_entries_chains_and_order() {
        let idx = PrimaryIndex::new();
        for i in 0..5_000u64 {
            idx.install(&format!("{i:08}"), v(i + 1, 1), 0);
        }
        // A chain kept for a snapshot at tick 3, and a tombstone kept for it.
        idx.install("00000001", v(6_000, 2), 3);
        idx.install("00000002", v(6_001, 0), 3);
        let before = {
            let mut all = Vec::new();
            idx.for_each_chunked(|k, e| all.push((k.to_string(), e.head, e.older().to_vec())));
            all
        };
        idx.repack();
        let mut after = Vec::new();
        idx.for_each_chunked(|k, e| after.push((k.to_string(), e.head, e.older().to_vec())));
        assert_eq!(after, before);
        assert_eq!(idx.get("00000001", 3), Some(v(2, 1)));
        assert_eq!(idx.get("00000001", 6_000), Some(v(6_000, 2)));
        assert_eq!(idx.get("00000002", 6_001), None);
        assert!(idx
            .install_new("00000002", 3, || Ok::<_, ()>(v(6_002, 3)))
            .unwrap());
        assert!(!idx
            .install_new("00004999", 3, || Ok::<_, ()>(v(6_003, 3)))
            .unwrap());
        idx.install("zzz", v(6_004, 3), 3);
        assert_eq!(idx.get("zzz", 6_004), Some(v(6_004, 3)));
    }

    /// `install_new` installs over nothing, a tombstone or a truncated version, and refuses
    /// (without calling `write`) a live key; a failing `write` installs nothing.
    #[test]
    fn install_new_checks_liveness_in_the_same_descent() {
        let idx = PrimaryIndex::new();
        let ok = |tick| Ok::<_, ()>(v(tick, 1));
        assert_eq!(idx.install_new("a", 0, || ok(1)), Ok(true));
        assert_eq!(idx.get("a", 1), Some(v(1, 1)));
        assert_eq!(
            idx.install_new("a", 1, || -> Result<Version, ()> { panic!("key is alive") }),
            Ok(false)
        );
        // A failing write leaves the index as it was.
        assert_eq!(
            idx.install_new("b", 1, || Err::<Version, _>("disk")),
            Err("disk")
        );
        assert_eq!(idx.get("b", 9), None);
        // Removed, with the tombstone kept for a snapshot at tick 2: free again.
        idx.install("a", v(3, 0), 2);
        assert_eq!(idx.install_new("a", 2, || ok(4)), Ok(true));
        assert_eq!(idx.get("a", 4), Some(v(4, 1)));
        assert_eq!(
            idx.get("a", 2),
            Some(v(1, 1)),
            "the snapshot still sees the first"
        );
        // Truncated: free again.
        idx.truncate(5, 4);
        assert_eq!(idx.install_new("a", 5, || ok(6)), Ok(true));
        assert_eq!(idx.get("a", 6), Some(v(6, 1)));
    }

    /// Batched repoints move exactly the versions at their `from` location, whether the
    /// keys are adjacent in the shard (stepping) or not (a new search), skip keys that are
    /// gone, and leave other versions of the same keys alone.
    #[test]
    fn repoint_in_shard_moves_exactly_the_named_versions() {
        let idx = PrimaryIndex::new();
        let keys: Vec<String> = (0..400).map(|i| format!("{}", 1_000 + i)).collect();
        for k in &keys {
            idx.install(k, v(1, 1), 0);
            // A newer version at another location, kept for a snapshot at tick 1.
            idx.install(k, v(2, 2), 1);
        }
        let shard = PrimaryIndex::shard_of(&keys[0]);
        let in_shard: Vec<&String> = keys
            .iter()
            .filter(|k| PrimaryIndex::shard_of(k) == shard)
            .collect();
        assert!(in_shard.len() > 10);
        let to = Loc {
            slot: 9,
            offset: 64,
            len: 30,
        };
        // Every other key of the shard (never adjacent after the first), then a run of
        // adjacent ones, plus a key that does not exist.
        let mut moves: Vec<&str> = in_shard.iter().step_by(2).map(|k| k.as_str()).collect();
        let missing = (0..)
            .map(|i| format!("0-missing-{i}"))
            .find(|k| PrimaryIndex::shard_of(k) == shard)
            .unwrap();
        moves.push(&missing);
        let tail: Vec<&str> = in_shard
            .iter()
            .skip(1)
            .step_by(2)
            .map(|k| k.as_str())
            .collect();
        idx.repoint_in_shard(shard, moves.iter().map(|k| (*k, v(1, 1).loc, to)));
        idx.repoint_in_shard(shard, tail.iter().map(|k| (*k, v(1, 1).loc, to)));
        for k in &keys {
            let old = idx.get(k, 1).unwrap();
            let new = idx.get(k, 2).unwrap();
            assert_eq!(new.loc, v(2, 2).loc, "{k}: the newer version moved");
            if PrimaryIndex::shard_of(k) == shard {
                assert_eq!(old.loc, to, "{k}");
            } else {
                assert_eq!(old.loc, v(1, 1).loc, "{k}: other shards untouched");
            }
        }
        assert_eq!(idx.get(&missing, 2), None);
    }

    fn v(tick: u64, slot: u32) -> Version {
        Version {
            tick,
            rev: tick,
            loc: Loc {
                slot,
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
            slot: 9,
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
        assert_eq!(idx.get("k", u64::MAX).unwrap().loc.slot, 1);
        idx.recover("k", v(6, 0));
        assert_eq!(idx.get("k", u64::MAX), None);
        assert_eq!(idx.gc(u64::MAX), 0);
    }

    #[test]
    fn truncate_hides_older_versions_from_later_snapshots_only() {
        let idx = PrimaryIndex::new();
        idx.install("a", v(10, 1), 9);
        idx.install("b", v(11, 1), 10);
        // Truncate at 12 while a snapshot at 11 is alive (horizon 11).
        idx.truncate(12, 11);
        assert_eq!(idx.floor(11), 0);
        assert_eq!(idx.floor(12), 12);
        assert_eq!(idx.get("a", 11).unwrap().tick, 10);
        assert_eq!(idx.get("a", 12), None);
        // A write after the truncate: the key was not alive before it.
        assert!(!idx.install("a", v(13, 1), 11));
        assert_eq!(idx.get("a", 13).unwrap().tick, 13);
        assert_eq!(idx.get("a", 12), None);
        assert_eq!(idx.get("a", 11).unwrap().tick, 10);
        let visible = |tick| {
            let mut n = 0;
            for shard in 0..idx.shard_count() {
                n += idx.visible_chunk(shard, None, tick, 100).0.len();
            }
            n
        };
        assert_eq!(visible(11), 2);
        assert_eq!(visible(12), 0);
        assert_eq!(visible(13), 1);
        // The old snapshot stays intact through a GC at its horizon...
        assert_eq!(idx.gc(11), 2);
        assert_eq!(idx.get("b", 11).unwrap().tick, 11);
        // ...and once it is gone, GC drops every truncated version and entry.
        assert_eq!(idx.gc(13), 1);
        assert_eq!(idx.get("b", 11), None);
        let mut entries = 0;
        idx.for_each_chunked(|_, e| {
            entries += 1;
            assert!(e.older().is_empty());
        });
        assert_eq!(entries, 1);
    }

    #[test]
    fn garbage_is_reported_until_a_pass_can_drop_it() {
        let idx = PrimaryIndex::new();
        // Inserts, and replaces no snapshot can see behind (horizon at the new tick), leave
        // nothing for a pass.
        idx.install("a", v(1, 1), 1);
        idx.install("b", v(2, 1), 2);
        idx.install("a", v(3, 1), 3);
        assert!(!idx.may_hold_garbage());
        // A replace under a snapshot at 3 keeps the older version.
        idx.install("b", v(4, 1), 3);
        assert!(idx.may_hold_garbage());
        // A pass at the same horizon must keep it, so the index still reports it...
        idx.gc(3);
        assert!(idx.may_hold_garbage());
        assert_eq!(idx.get("b", 3).unwrap().tick, 2);
        // ...and one after the snapshot is gone drops it.
        idx.gc(4);
        assert!(!idx.may_hold_garbage());
        // A removal under a snapshot leaves a tombstone.
        idx.install("a", v(5, 0), 4);
        assert!(idx.may_hold_garbage());
        idx.gc(5);
        assert!(!idx.may_hold_garbage());
        assert_eq!(idx.get("a", 5), None);
        // A truncate makes every entry garbage once no snapshot predates it; later installs
        // that add garbage must not wrap the bound around to "nothing".
        idx.truncate(6, 5);
        assert!(idx.may_hold_garbage());
        idx.install("c", v(7, 1), 5);
        idx.install("c", v(8, 0), 5);
        assert!(idx.may_hold_garbage());
        idx.gc(5);
        assert!(idx.may_hold_garbage(), "a snapshot at 5 still sees b");
        assert_eq!(idx.gc(8), 0);
        assert!(!idx.may_hold_garbage());
        // Recovery may find tombstones.
        let idx = PrimaryIndex::new();
        idx.recover("k", v(1, 1));
        assert!(!idx.may_hold_garbage());
        idx.recover("k", v(2, 0));
        assert!(idx.may_hold_garbage());
        idx.gc(u64::MAX);
        assert!(!idx.may_hold_garbage());
    }

    #[test]
    fn truncate_list_keeps_only_what_snapshots_can_need() {
        let idx = PrimaryIndex::new();
        idx.truncate(5, 4);
        idx.truncate(8, 6);
        idx.truncate(12, 7);
        // Horizon 7: the truncate at 5 matters to the snapshot at 7, 8 and 12 above it.
        assert_eq!(idx.floor(7), 5);
        assert_eq!(idx.floor(9), 8);
        assert_eq!(idx.floor(100), 12);
        idx.truncate(20, 15);
        assert_eq!(*idx.truncates.read(), vec![12, 20]);
        assert_eq!(idx.floor(15), 12);
    }

    #[test]
    fn recovery_drops_what_a_truncate_covers_whatever_the_order() {
        let idx = PrimaryIndex::new();
        idx.recover("old", v(3, 1));
        idx.note_truncate(5);
        idx.recover("older", v(2, 1));
        idx.recover("new", v(7, 1));
        idx.note_truncate(4);
        assert_eq!(idx.last_truncate(), 5);
        assert_eq!(idx.gc(u64::MAX), 1);
        assert_eq!(idx.get("old", u64::MAX), None);
        assert_eq!(idx.get("older", u64::MAX), None);
        assert_eq!(idx.get("new", u64::MAX).unwrap().tick, 7);
    }

    #[test]
    fn long_chains_stay_oldest_first_and_resolve_every_tick() {
        // Under a pinned snapshot every update keeps the previous version. The chain must
        // grow at its end (the previous head appended, never inserted at the front, which
        // made hot-key updates quadratic) and stay sorted, which `visible` binary-searches.
        let idx = PrimaryIndex::new();
        let n = 20_000u64;
        for tick in 1..=n {
            idx.install("hot", v(tick, 1), 0);
            if tick > 1 {
                let shard = idx.shards[shard_of("hot")].read();
                let e = shard.map.get("hot").unwrap();
                assert_eq!(e.head_tick(&shard.far_ticks, "hot"), tick);
                let older = older_of(&shard.older, "hot", e);
                assert_eq!(older.last().map(|v| v.tick), Some(tick - 1));
            }
        }
        let shard = idx.shards[shard_of("hot")].read();
        let older = older_of(&shard.older, "hot", shard.map.get("hot").unwrap());
        assert_eq!(older.len() as u64, n - 1);
        assert!(older.windows(2).all(|w| w[0].tick < w[1].tick));
        drop(shard);
        for tick in (1..=n).step_by(997) {
            assert_eq!(idx.get("hot", tick).unwrap().tick, tick);
        }
        assert_eq!(idx.get("hot", 0), None);
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
