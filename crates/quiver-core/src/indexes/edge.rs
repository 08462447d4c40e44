//! The edge index of an edge collection: `_from` → edges and `_to` → edges, in memory, kept
//! current on every commit from the collection's creation on (as ArangoDB's edge index is)
//! and rebuilt in the background at startup (contents are not persisted).
//!
//! # Layout (why it is small)
//! One [`Table`] per collection: vertex ids are interned once per distinct vertex (a `u32`
//! each), every edge version is one fixed 16-byte [`Slot`] (endpoints as vertex numbers,
//! the key as its number when it is a plain decimal number below 2^31 or else a reference
//! to a key word — a range of one shared key arena or a larger number —, and the commit tick
//! as a 30-bit offset from the table's tick base, see [`Table::set_created`]; no revision),
//! and each vertex keeps two `Vec<u32>` of slot numbers, in revision order. No
//! allocation per edge; about 31 bytes per edge for both directions with generated keys
//! (`docs/benchmarks/tools.md`, "Memory").
//!
//! # Visibility without primary-index probes
//! A slot records the tick of the commit that created it, and (in a side map, since few slots
//! ever get one) the tick of the commit that superseded it. A reader at snapshot tick `t` sees
//! a slot iff `created <= t < superseded`; no per-edge lookup in the primary index. Only slots
//! whose commit is in flight (inserted before the engine publishes the batch, so a reader can
//! never miss an edge, but with the tick not known yet) are decided by the caller's exact
//! check (the snapshot holds that key at that revision: the revisions of slots whose creating
//! or superseding commit is in flight are kept aside, [`Table::revs`]); in the short window of
//! a truncate the ticks pick the version and the caller says whether its snapshot still holds
//! the key. Hits carry no revision (nothing needs it: the lists are in write order).
//!
//! Superseded slots are garbage; they are unlinked once the engine's horizon (its oldest live
//! snapshot) has passed the tick that superseded them, and the key arena is compacted when
//! dead bytes dominate. A truncate retires the whole table (kept, tagged with its tick, for
//! older snapshots) and starts an empty one.
//!
//! # Vertex existence marks
//! Each interned vertex carries a mark: 0, or the existence epoch of its collection under
//! which a reader found the vertex document alive (`quiver_storage::Snapshot::existence_epoch`,
//! docs/design/core.md "Vertex existence marks"). Hits carry the other end's mark, so a
//! traversal that needs only `v._id` knows the vertex exists, without a primary-index probe,
//! when the mark is the epoch of its own snapshot.
//!
//! # Startup build
//! The collection registers its index before it is published, takes a snapshot, and a
//! background thread fills the table from that snapshot in chunks (skimming `_from`/`_to`
//! only). Commits meanwhile go into the same table; a commit that supersedes a version the
//! scan has not reached yet leaves a note that the build applies when it is done. Readers
//! wait until the build is done instead of building their own copy.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hashbrown::HashTable;
use parking_lot::{Condvar, Mutex, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use quiver_storage::{CollectionId, Snapshot};
use quiver_types::Revision;
use serde::Deserialize;

use crate::staged_version::{EdgeEnds, StagedEntry};

/// Edge documents scanned per write-lock acquisition while building.
const BUILD_CHUNK: usize = 4096;
/// Vertices whose lists are put in revision order per write-lock acquisition after a build.
const SORT_CHUNK: usize = 8192;
/// How long a reader waits for a startup build before giving up (a build of 30 million edges
/// takes well under a minute; this only bounds a wait that can otherwise not end).
const BUILD_WAIT: Duration = Duration::from_secs(1800);
/// Dead key bytes tolerated before the key arena is compacted (small in tests so that the
/// compaction runs).
const COMPACT_MIN_DEAD: usize = if cfg!(test) { 16 } else { 1 << 20 };

/// `created` of a slot whose commit is in flight; also the superseding tick of a slot whose
/// superseding commit is in flight.
const PENDING: u64 = u64::MAX;
/// A key word holds a decimal number (bits 16..64) instead of a range of the key arena.
const FLAG_NUMBER: u64 = 4;
/// [`Slot::key`] is the index of a key word in [`Table::key_words`] (bits 0..31) instead of
/// the key's decimal value.
const KEY_WORD: u32 = 1 << 31;
/// [`Slot::state`]: the slot is free (on the free list).
const STATE_FREE: u32 = 1 << 31;
/// [`Slot::state`]: a commit superseded this version (its tick in [`Table::superseded`]).
const STATE_SUPERSEDED: u32 = 1 << 30;
/// [`Slot::state`]'s bits for the creation tick: its offset from [`Table::tick_base`], or one
/// of the two codes below.
const TICK_MASK: u32 = STATE_SUPERSEDED - 1;
/// The creating commit is in flight.
const TICK_PENDING: u32 = TICK_MASK;
/// The creation tick does not fit as an offset: it is in [`Table::far_ticks`].
const TICK_FAR: u32 = TICK_MASK - 1;
/// The tick base is set this far below the first tick recorded, so that slots of a startup
/// build (created at its snapshot's tick) added after the first commits still fit.
const TICK_SLACK: u64 = 1 << 28;
/// The tick base moves up to the horizon once the horizon is this far past it (an O(slots)
/// pass: once per 2^29 ticks), so that new ticks keep fitting in [`TICK_MASK`].
const REBASE_AFTER: u64 = 1 << 29;
/// Digits of the longest decimal key kept as a number: below 2^48.
const NUMBER_DIGITS: usize = 14;
const MAX_KEY_OFFSET: usize = 1 << 48;

/// Which end of an edge a lookup starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeDirection {
    /// Edges whose `_from` is the vertex (the result's `other` is `_to`).
    Outbound,
    /// Edges whose `_to` is the vertex (the result's `other` is `_from`).
    Inbound,
}

/// One edge found for a vertex, borrowed from an [`EdgeHits`] buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeHit<'a> {
    /// The edge document's key.
    pub key: &'a str,
    /// The vertex at the other end (`_to` for outbound, `_from` for inbound).
    pub other: &'a str,
    /// The existence mark of `other` (0: none): the existence epoch of its collection under
    /// which a reader found it alive (see [`EdgeIndex::mark_vertex_alive`]).
    pub other_mark: u64,
    /// Where `other` lives in the index, so that marking it needs no lookup by name.
    pub other_slot: VertexSlot,
}

/// Where a vertex lives in an edge index's table: its number, valid while the table's vertex
/// epoch is the one recorded (see [`EdgeIndex::mark_vertex_alive`]). The default names no
/// vertex.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VertexSlot {
    number: u32,
    /// The table's vertex epoch when the number was read (0: none; epochs start at 1).
    epoch: u64,
}

/// Source of [`Table::vertex_epoch`] values: one process-wide counter, so that no two tables
/// of any edge index ever share one and a [`VertexSlot`] never names a vertex of another.
static VERTEX_EPOCHS: AtomicU64 = AtomicU64::new(1);

fn fresh_vertex_epoch() -> u64 {
    VERTEX_EPOCHS.fetch_add(1, Ordering::Relaxed)
}

#[derive(Clone, Copy, Debug)]
struct HitSpan {
    start: usize,
    key_len: usize,
    other_len: usize,
    /// What [`EdgeHits::sort_by_rev_from`] orders by: the revision of an edge pushed with one
    /// (a transaction's staged version), 0 for an edge found in the index (its lists are in
    /// write order already and precede the staged versions, whose revisions are newer).
    rev: Revision,
    other_mark: u64,
    other_slot: VertexSlot,
}

/// Edges found by lookups, in one reusable text buffer: once it has grown, a lookup
/// allocates nothing per edge.
#[derive(Clone, Debug, Default)]
pub struct EdgeHits {
    text: String,
    spans: Vec<HitSpan>,
}

impl EdgeHits {
    /// An empty buffer.
    pub fn new() -> EdgeHits {
        EdgeHits::default()
    }

    /// Number of edges held.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// Whether no edge is held.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Forgets every edge, keeping the buffers.
    pub fn clear(&mut self) {
        self.text.clear();
        self.spans.clear();
    }

    /// Appends an edge of revision `rev` (the order key of [`EdgeHits::sort_by_rev_from`]).
    pub fn push(&mut self, key: &str, rev: Revision, other: &str) {
        self.push_span(key, rev, other, 0, VertexSlot::default());
    }

    /// Appends an edge found in the index, whose other end has the existence mark
    /// `other_mark` and lives in `other_slot`.
    fn push_indexed(&mut self, key: &str, other: &str, other_mark: u64, other_slot: VertexSlot) {
        self.push_span(key, Revision(0), other, other_mark, other_slot);
    }

    fn push_span(
        &mut self,
        key: &str,
        rev: Revision,
        other: &str,
        other_mark: u64,
        other_slot: VertexSlot,
    ) {
        let start = self.text.len();
        self.text.push_str(key);
        self.text.push_str(other);
        self.spans.push(HitSpan {
            start,
            key_len: key.len(),
            other_len: other.len(),
            rev,
            other_mark,
            other_slot,
        });
    }

    fn view(&self, span: &HitSpan) -> EdgeHit<'_> {
        let key_end = span.start + span.key_len;
        EdgeHit {
            key: &self.text[span.start..key_end],
            other: &self.text[key_end..key_end + span.other_len],
            other_mark: span.other_mark,
            other_slot: span.other_slot,
        }
    }

    /// The edge at `index`.
    pub fn get(&self, index: usize) -> Option<EdgeHit<'_>> {
        self.spans.get(index).map(|s| self.view(s))
    }

    /// The edges in order.
    pub fn iter(&self) -> impl Iterator<Item = EdgeHit<'_>> + '_ {
        self.spans.iter().map(|s| self.view(s))
    }

    /// Keeps, among the edges from position `from` on, those `keep` accepts (order kept; the
    /// text of dropped edges stays until the next `clear`).
    pub fn retain_from(&mut self, from: usize, mut keep: impl FnMut(EdgeHit<'_>) -> bool) {
        let text = &self.text;
        let mut index = 0;
        self.spans.retain(|span| {
            let i = index;
            index += 1;
            if i < from {
                return true;
            }
            let key_end = span.start + span.key_len;
            keep(EdgeHit {
                key: &text[span.start..key_end],
                other: &text[key_end..key_end + span.other_len],
                other_mark: span.other_mark,
                other_slot: span.other_slot,
            })
        });
    }

    /// Puts the edges from position `from` on in write order, which is ArangoDB's edge index
    /// order: the index's edges as found (its lists are in write order), then the edges pushed
    /// with a revision in revision order; stable, and linear when already sorted.
    pub fn sort_by_rev_from(&mut self, from: usize) {
        if let Some(tail) = self.spans.get_mut(from..) {
            if !tail.is_sorted_by_key(|s| s.rev) {
                tail.sort_by_key(|s| s.rev);
            }
        }
    }
}

/// A string borrowed from the input unless it had to be unescaped (serde's own `Cow` inside
/// an `Option` always copies, which would be an allocation per edge in a build).
struct SkimmedStr<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for SkimmedStr<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Visit<'a> {
            type Value = SkimmedStr<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Self::Value, E> {
                Ok(SkimmedStr(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Self::Value, E> {
                Ok(SkimmedStr(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(Visit(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
struct Ends<'a> {
    #[serde(rename = "_from", borrow)]
    from: Option<SkimmedStr<'a>>,
    #[serde(rename = "_to", borrow)]
    to: Option<SkimmedStr<'a>>,
}

/// `_from` and `_to` of a stored edge body, borrowed from it unless escaped; every other
/// attribute is skipped without being built.
pub(crate) fn skim_ends(body: &[u8]) -> Option<(Cow<'_, str>, Cow<'_, str>)> {
    let ends: Ends = serde_json::from_slice(body).ok()?;
    Some((ends.from?.0, ends.to?.0))
}

/// One version of one edge: 16 bytes. Its revision is not held: readers see a committed
/// version by its ticks, and the revision is needed only while a commit that creates or
/// supersedes the version is in flight ([`Table::revs`]) and to order the lists after a
/// startup build ([`Table::build_revs`]).
#[derive(Clone, Copy, Debug)]
struct Slot {
    from: u32,
    to: u32,
    /// The key's decimal value when it is a plain number below 2^31 ([`key_number`]: the
    /// autoincrement and traditional generators' keys of any collection below two billion
    /// documents); otherwise [`KEY_WORD`] and the index of its key word in
    /// [`Table::key_words`].
    key: u32,
    /// [`STATE_FREE`], [`STATE_SUPERSEDED`], and the creation tick's code ([`TICK_MASK`]).
    state: u32,
}

// The layout this file is about: no revision, a 32-bit key and a 32-bit tick.
const _: () = assert!(std::mem::size_of::<Slot>() == 16);

impl Slot {
    fn is_free(&self) -> bool {
        self.state & STATE_FREE != 0
    }

    /// The index of the slot's key word, if its key is not held in the slot.
    fn key_word(&self) -> Option<usize> {
        (self.key & KEY_WORD != 0).then_some((self.key & !KEY_WORD) as usize)
    }
}

/// The key bytes a key word refers to in the key arena (empty for a number).
fn word_range(word: u64) -> std::ops::Range<usize> {
    if word & FLAG_NUMBER != 0 {
        return 0..0;
    }
    let start = (word >> 16) as usize;
    start..start + ((word >> 8) & 0xff) as usize
}

/// The value of a key that is kept as a number in its slot: decimal digits without a leading
/// zero (or `0` alone), at most [`NUMBER_DIGITS`] of them, so that printing the number gives
/// the key back. ArangoDB's traditional and autoincrement generators make such keys.
fn key_number(key: &str) -> Option<u64> {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > NUMBER_DIGITS || (b[0] == b'0' && b.len() > 1) {
        return None;
    }
    b.iter().try_fold(0u64, |n, &d| {
        d.is_ascii_digit().then(|| n * 10 + u64::from(d - b'0'))
    })
}

/// A slot's key as text: borrowed from the key arena, or printed from its number.
enum SlotKey<'a> {
    Arena(&'a str),
    Number(itoa::Buffer, u64),
}

impl SlotKey<'_> {
    fn as_str(&mut self) -> &str {
        match self {
            SlotKey::Arena(s) => s,
            SlotKey::Number(buf, n) => buf.format(*n),
        }
    }
}

/// Appends a slot to a vertex's list, growing it by half (at least 4) when full: a doubling
/// `Vec` leaves about a third of the lists' memory unused at Pokec's ~19 edges per vertex,
/// this about a sixth, for a few more (amortized constant) copies.
fn push_to_list(list: &mut Vec<u32>, id: u32) {
    if list.len() == list.capacity() {
        list.reserve_exact((list.len() / 2).max(4));
    }
    list.push(id);
}

/// Items per chunk of a [`Chunked`] table: 1.5 MiB chunks of slots.
const SLOT_CHUNK: usize = 1 << 16;
/// Bytes per chunk of [`KeyArena`].
const KEY_CHUNK: usize = 1 << 20;

/// A table (the slots, the key words) in fixed-size chunks: growing it never copies the
/// table nor leaves a doubled allocation half empty (at 30 million edges a doubling `Vec`
/// wastes up to a third of the slot memory and needs twice it while reallocating).
struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, slot: T) -> u32 {
        if self.chunks.last().is_none_or(|c| c.len() == SLOT_CHUNK) {
            self.chunks.push(Vec::new());
        }
        if let Some(chunk) = self.chunks.last_mut() {
            chunk.push(slot);
        }
        self.len += 1;
        u32::try_from(self.len - 1).expect("callers keep a chunked table below 2^32 entries")
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.chunks.iter_mut().flatten()
    }

    fn get(&self, id: u32) -> Option<&T> {
        let id = id as usize;
        self.chunks.get(id / SLOT_CHUNK)?.get(id % SLOT_CHUNK)
    }

    fn bytes(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum::<usize>() * std::mem::size_of::<T>()
    }
}

impl<T: Copy + Default> Chunked<T> {
    /// Sets item `id`, filling the table with defaults up to it.
    fn set(&mut self, id: u32, value: T) {
        while self.len <= id as usize {
            self.push(T::default());
        }
        self[id] = value;
    }
}

impl<T> std::ops::Index<u32> for Chunked<T> {
    type Output = T;
    fn index(&self, id: u32) -> &T {
        let id = id as usize;
        &self.chunks[id / SLOT_CHUNK][id % SLOT_CHUNK]
    }
}

impl<T> std::ops::IndexMut<u32> for Chunked<T> {
    fn index_mut(&mut self, id: u32) -> &mut T {
        let id = id as usize;
        &mut self.chunks[id / SLOT_CHUNK][id % SLOT_CHUNK]
    }
}

/// Edge keys back to back, in chunks of [`KEY_CHUNK`] bytes (a key never straddles two), for
/// the same reason as [`Chunked`]. Offsets are global: chunk × `KEY_CHUNK` + position.
#[derive(Default)]
struct KeyArena {
    chunks: Vec<String>,
    bytes: usize,
}

impl KeyArena {
    fn push(&mut self, key: &str) -> usize {
        let fits = self
            .chunks
            .last()
            .is_some_and(|c| c.len() + key.len() <= KEY_CHUNK);
        if !fits {
            self.chunks.push(String::new());
        }
        let index = self.chunks.len() - 1;
        let chunk = &mut self.chunks[index];
        let offset = index * KEY_CHUNK + chunk.len();
        chunk.push_str(key);
        self.bytes += key.len();
        offset
    }

    fn get(&self, range: std::ops::Range<usize>) -> &str {
        let chunk = range.start / KEY_CHUNK;
        let start = range.start % KEY_CHUNK;
        self.chunks
            .get(chunk)
            .and_then(|c| c.get(start..start + range.len()))
            .unwrap_or("")
    }

    /// Bytes stored (live and dead keys).
    fn len(&self) -> usize {
        self.bytes
    }

    fn capacity(&self) -> usize {
        self.chunks.iter().map(String::capacity).sum()
    }
}

#[derive(Debug, Default)]
struct Vertex {
    name: Box<str>,
    out: Vec<u32>,
    inbound: Vec<u32>,
}

/// Whether a reader sees a slot.
enum Seen {
    Yes,
    No,
    /// Ask the reader's snapshot (a commit or truncate is in flight).
    Check,
}

/// The entries of one collection (between two truncates).
struct Table {
    slots: Chunked<Slot>,
    free_slots: Vec<u32>,
    /// The keys not held in their slots ([`Slot::key`]): a key arena offset (bits 16..64)
    /// and length (bits 8..16), or with [`FLAG_NUMBER`] a decimal value (bits 16..64).
    key_words: Chunked<u64>,
    /// Edge keys (legal keys are at most 254 bytes of ASCII).
    keys: KeyArena,
    /// Bytes of the key arena and of the key words no live slot refers to.
    dead_key_bytes: usize,
    /// What creation tick 0 of a slot's [`TICK_MASK`] bits stands for (None until the first
    /// tick is recorded).
    tick_base: Option<u64>,
    /// Creation ticks that do not fit as an offset from the base ([`TICK_FAR`]).
    far_ticks: HashMap<u32, u64>,
    /// Entries of `far_ticks` after the last rebase.
    far_after_rebase: usize,
    vertices: Vec<Vertex>,
    /// Per vertex (same numbers as `vertices`): its existence mark, 0 when none.
    marks: Vec<AtomicU64>,
    free_vertices: Vec<u32>,
    by_name: HashTable<u32>,
    hasher: hashbrown::DefaultHashBuilder,
    /// The vertices of the last edge added, `_from` and `_to`: edges usually arrive grouped
    /// by one end (an import sorted by `_from`), and comparing the name with the last one
    /// saves the hash lookup, whose probes miss the cache. Checked by name, so a stale id
    /// (its vertex reclaimed, the name emptied or replaced) never matches a wrong vertex.
    recent: [Option<u32>; 2],
    /// Tick of the commit that superseded a slot ([`PENDING`] while in flight).
    superseded: HashMap<u32, u64>,
    /// The revision of every slot whose creating or superseding commit is in flight, for the
    /// exact check ([`Seen::Check`]) and to find the version such a commit refers to.
    revs: HashMap<u32, u64>,
    /// While a startup build runs: the revision of every slot added (by slot number), to put
    /// the lists in revision order when the scan is done ([`EdgeIndex::finish_build`]).
    build_revs: Option<Chunked<u64>>,
    /// Superseded slots in commit order, to unlink once the horizon passes their tick.
    garbage: VecDeque<(u64, u32)>,
    live_slots: usize,
    /// Changes whenever a vertex id may stop naming the vertex it named (a vertex reclaimed,
    /// the table replaced by a truncate): [`VertexHints`] taken at another epoch are ignored.
    vertex_epoch: u64,
}

impl Table {
    fn new() -> Table {
        Table {
            slots: Chunked::default(),
            free_slots: Vec::new(),
            key_words: Chunked::default(),
            keys: KeyArena::default(),
            dead_key_bytes: 0,
            tick_base: None,
            far_ticks: HashMap::new(),
            far_after_rebase: 0,
            vertices: Vec::new(),
            marks: Vec::new(),
            free_vertices: Vec::new(),
            by_name: HashTable::new(),
            hasher: hashbrown::DefaultHashBuilder::default(),
            recent: [None; 2],
            superseded: HashMap::new(),
            revs: HashMap::new(),
            build_revs: None,
            garbage: VecDeque::new(),
            live_slots: 0,
            vertex_epoch: fresh_vertex_epoch(),
        }
    }

    fn vertex_id(&self, name: &str) -> Option<u32> {
        let hash = self.hasher.hash_one(name);
        self.by_name
            .find(hash, |&id| &*self.vertices[id as usize].name == name)
            .copied()
    }

    /// The vertex of `name`, created if new; `end` (0 for `_from`, 1 for `_to`) selects the
    /// [`Table::recent`] entry tried first.
    fn intern(&mut self, name: &str, end: usize) -> Result<u32> {
        if let Some(id) = self.recent[end] {
            if self
                .vertices
                .get(id as usize)
                .is_some_and(|v| &*v.name == name)
            {
                return Ok(id);
            }
        }
        let id = self.intern_looked_up(name)?;
        self.recent[end] = Some(id);
        Ok(id)
    }

    fn intern_looked_up(&mut self, name: &str) -> Result<u32> {
        if let Some(id) = self.vertex_id(name) {
            return Ok(id);
        }
        let id = match self.free_vertices.pop() {
            Some(id) => {
                self.vertices[id as usize].name = name.into();
                // The number now names another vertex: what was known of the old one is not
                // known of this one.
                *self.marks[id as usize].get_mut() = 0;
                id
            }
            None => {
                let id = u32::try_from(self.vertices.len()).map_err(|_| full("vertices"))?;
                self.vertices.push(Vertex {
                    name: name.into(),
                    ..Vertex::default()
                });
                self.marks.push(AtomicU64::new(0));
                id
            }
        };
        let Table {
            by_name,
            vertices,
            hasher,
            ..
        } = self;
        by_name.insert_unique(hasher.hash_one(name), id, |&v| {
            hasher.hash_one(&*vertices[v as usize].name)
        });
        Ok(id)
    }

    fn key(&self, slot: &Slot) -> SlotKey<'_> {
        match slot.key_word().map(|i| self.key_words[i as u32]) {
            None => SlotKey::Number(itoa::Buffer::new(), u64::from(slot.key)),
            Some(word) if word & FLAG_NUMBER != 0 => {
                SlotKey::Number(itoa::Buffer::new(), word >> 16)
            }
            Some(word) => SlotKey::Arena(self.keys.get(word_range(word))),
        }
    }

    /// Whether `slot`'s key is `key`.
    fn key_is(&self, slot: &Slot, key: &str) -> bool {
        match slot.key_word().map(|i| self.key_words[i as u32]) {
            None => key_number(key) == Some(u64::from(slot.key)),
            Some(word) if word & FLAG_NUMBER != 0 => key_number(key) == Some(word >> 16),
            Some(word) => self.keys.get(word_range(word)) == key,
        }
    }

    /// The tick of the commit that created slot `id` ([`PENDING`] while it is in flight).
    fn created(&self, id: u32, slot: &Slot) -> u64 {
        match slot.state & TICK_MASK {
            TICK_PENDING => PENDING,
            // Always present; a missing one would be decided by the exact check.
            TICK_FAR => self.far_ticks.get(&id).copied().unwrap_or(PENDING),
            offset => self.tick_base.unwrap_or(0) + u64::from(offset),
        }
    }

    /// Records `tick` ([`PENDING`]: in flight) as the creation tick of slot `id`: as its
    /// offset from the table's tick base when it fits in [`TICK_MASK`]'s 30 bits (the base is
    /// set [`TICK_SLACK`] below the first tick and follows the horizon, [`Table::collect`]),
    /// otherwise in [`Table::far_ticks`].
    fn set_created(&mut self, id: u32, tick: u64) {
        let code = if tick == PENDING {
            TICK_PENDING
        } else {
            let base = *self
                .tick_base
                .get_or_insert(tick.saturating_sub(TICK_SLACK));
            match tick.checked_sub(base) {
                Some(offset) if offset < u64::from(TICK_FAR) => offset as u32,
                _ => TICK_FAR,
            }
        };
        let old = self.slots[id].state & TICK_MASK;
        if old == TICK_FAR {
            self.far_ticks.remove(&id);
        }
        if code == TICK_FAR {
            self.far_ticks.insert(id, tick);
        }
        let slot = &mut self.slots[id];
        slot.state = slot.state & !TICK_MASK | code;
        self.forget_rev(id);
    }

    /// Drops the revision of slot `id` from [`Table::revs`] unless a commit that creates or
    /// supersedes it is still in flight.
    fn forget_rev(&mut self, id: u32) {
        let creating = self.slots[id].state & TICK_MASK == TICK_PENDING;
        let superseding = self.superseded.get(&id) == Some(&PENDING);
        if !creating && !superseding {
            self.revs.remove(&id);
        }
    }

    /// Moves the tick base to `horizon`: a creation tick at or below it becomes the base
    /// itself (every reader of this table is at or past the horizon, so it sees such a slot
    /// either way; a truncate starts a new table), the others become offsets from it, and far
    /// ticks that now fit move back into their slots.
    fn rebase_ticks(&mut self, horizon: u64) {
        let old_base = self.tick_base.unwrap_or(0);
        let far = std::mem::take(&mut self.far_ticks);
        self.tick_base = Some(horizon);
        let mut id = 0u32;
        for slot in self.slots.iter_mut() {
            let code = slot.state & TICK_MASK;
            if !slot.is_free() && code != TICK_PENDING {
                let tick = match code {
                    TICK_FAR => far.get(&id).copied(),
                    offset => Some(old_base + u64::from(offset)),
                };
                let new = match tick {
                    None => TICK_PENDING,
                    Some(tick) if tick <= horizon => 0,
                    Some(tick) if tick - horizon < u64::from(TICK_FAR) => (tick - horizon) as u32,
                    Some(tick) => {
                        self.far_ticks.insert(id, tick);
                        TICK_FAR
                    }
                };
                slot.state = slot.state & !TICK_MASK | new;
            }
            id = id.wrapping_add(1);
        }
        self.far_after_rebase = self.far_ticks.len();
    }

    /// Adds an edge version; `hint` holds the ends' vertex ids when they were looked up
    /// before the writer lock and are still valid ([`VertexHints`]).
    fn add(
        &mut self,
        key: &str,
        rev: Revision,
        from: &str,
        to: &str,
        created: u64,
        hint: [Option<u32>; 2],
    ) -> Result<u32> {
        if key.len() > 0xff {
            return Err(Error::with_message(
                ErrorCode::DocumentKeyBad,
                "illegal document key: keys are 1 to 254 bytes",
            ));
        }
        if (self.keys.chunks.len() + 1) * KEY_CHUNK >= MAX_KEY_OFFSET
            || self.key_words.len() >= KEY_WORD as usize
        {
            return Err(full("edge keys"));
        }
        if self.free_slots.is_empty() && self.slots.len() >= u32::MAX as usize {
            return Err(full("edges"));
        }
        let f = match hint[0] {
            Some(id) => id,
            None => self.intern(from, 0)?,
        };
        let t = match hint[1] {
            Some(id) => id,
            None => self.intern(to, 1)?,
        };
        let key = match key_number(key) {
            Some(n) if n < u64::from(KEY_WORD) => n as u32,
            number => {
                let word = match number {
                    Some(n) => n << 16 | FLAG_NUMBER,
                    None => (self.keys.push(key) as u64) << 16 | (key.len() as u64) << 8,
                };
                self.key_words.push(word) | KEY_WORD
            }
        };
        let slot = Slot {
            from: f,
            to: t,
            key,
            state: TICK_PENDING,
        };
        let id = match self.free_slots.pop() {
            Some(id) => {
                self.slots[id] = slot;
                id
            }
            None => self.slots.push(slot),
        };
        if let Some(revs) = &mut self.build_revs {
            revs.set(id, rev.0);
        }
        if created == PENDING {
            self.revs.insert(id, rev.0);
        } else {
            self.set_created(id, created);
        }
        push_to_list(&mut self.vertices[f as usize].out, id);
        push_to_list(&mut self.vertices[t as usize].inbound, id);
        self.live_slots += 1;
        Ok(id)
    }

    /// The slot of version `rev` of edge `key` whose `_from` is `from`: the slot holding that
    /// revision in [`Table::revs`] if one does, else among the committed versions of the key
    /// that no commit superseded the newest (`oldest` false) or the oldest by creation tick.
    /// Normally one such version exists (the key's current one); two exist while a startup
    /// build runs, when the scan adds the version of its snapshot after a commit added a newer
    /// one: that newer one is the current version, the older one is what the supersessions
    /// the scan had not reached yet refer to ([`EdgeIndex::finish_build`]). Ticks are not
    /// rebased while a build runs, so creation ticks order those versions.
    fn find(&self, from: &str, key: &str, rev: Revision, oldest: bool) -> Option<u32> {
        let v = self.vertex_id(from)?;
        let mut committed: Option<(u64, u32)> = None;
        for &id in self.vertices[v as usize].out.iter().rev() {
            let slot = &self.slots[id];
            if slot.is_free() || !self.key_is(slot, key) {
                continue;
            }
            if let Some(&known) = self.revs.get(&id) {
                if known == rev.0 {
                    return Some(id);
                }
                continue;
            }
            if slot.state & STATE_SUPERSEDED != 0 {
                continue;
            }
            let created = self.created(id, slot);
            let better = committed.is_none_or(|(best, _)| {
                if oldest {
                    created < best
                } else {
                    created > best
                }
            });
            if better {
                committed = Some((created, id));
            }
        }
        committed.map(|(_, id)| id)
    }

    /// Marks slot `id`, of revision `rev`, superseded by a commit in flight.
    fn supersede_in_flight(&mut self, id: u32, rev: Revision) {
        self.revs.insert(id, rev.0);
        self.mark_superseded(id, PENDING);
    }

    fn mark_superseded(&mut self, id: u32, tick: u64) {
        self.slots[id].state |= STATE_SUPERSEDED;
        self.superseded.insert(id, tick);
        if tick != PENDING {
            self.garbage.push_back((tick, id));
            self.forget_rev(id);
        }
    }

    fn unmark_superseded(&mut self, id: u32) {
        self.slots[id].state &= !STATE_SUPERSEDED;
        self.superseded.remove(&id);
        self.forget_rev(id);
    }

    /// Removes a slot from everything (garbage past the horizon, or a failed commit's).
    fn unlink(&mut self, id: u32) {
        let slot = self.slots[id];
        if slot.is_free() {
            return;
        }
        for (v, outbound) in [(slot.from, true), (slot.to, false)] {
            let vertex = &mut self.vertices[v as usize];
            let list = if outbound {
                &mut vertex.out
            } else {
                &mut vertex.inbound
            };
            if let Some(pos) = list.iter().rposition(|&s| s == id) {
                list.remove(pos);
            }
        }
        self.reclaim_vertex(slot.from);
        if slot.to != slot.from {
            self.reclaim_vertex(slot.to);
        }
        if let Some(i) = slot.key_word() {
            let word = self.key_words[i as u32];
            self.dead_key_bytes += word_range(word).len() + std::mem::size_of::<u64>();
        }
        if slot.state & TICK_MASK == TICK_FAR {
            self.far_ticks.remove(&id);
        }
        self.slots[id].state = STATE_FREE;
        self.superseded.remove(&id);
        self.revs.remove(&id);
        self.free_slots.push(id);
        self.live_slots -= 1;
    }

    fn reclaim_vertex(&mut self, v: u32) {
        let vertex = &mut self.vertices[v as usize];
        if !vertex.out.is_empty() || !vertex.inbound.is_empty() || vertex.name.is_empty() {
            return;
        }
        let name = std::mem::take(&mut vertex.name);
        self.vertex_epoch = fresh_vertex_epoch();
        vertex.out = Vec::new();
        vertex.inbound = Vec::new();
        let hash = self.hasher.hash_one(&*name);
        if let Ok(entry) = self.by_name.find_entry(hash, |&id| id == v) {
            entry.remove();
        }
        self.free_vertices.push(v);
    }

    /// Unlinks garbage no snapshot at or after `horizon` can see.
    fn collect(&mut self, horizon: u64) {
        while let Some(&(tick, id)) = self.garbage.front() {
            if tick > horizon {
                break;
            }
            self.garbage.pop_front();
            if self.superseded.get(&id) == Some(&tick) {
                self.unlink(id);
            }
        }
        let stored_key_bytes = self.keys.len() + self.key_words.len() * std::mem::size_of::<u64>();
        if self.dead_key_bytes > COMPACT_MIN_DEAD && self.dead_key_bytes * 2 > stored_key_bytes {
            self.compact_keys();
        }
        if let Some(base) = self.tick_base {
            let due = horizon >= base.saturating_add(REBASE_AFTER)
                || (horizon > base && self.far_ticks.len() > self.far_after_rebase * 2 + 1024);
            if due {
                self.rebase_ticks(horizon);
            }
        }
        if self.free_slots.len() > 1024 && self.free_slots.len() * 2 > self.slots.len() {
            self.free_slots.shrink_to_fit();
        }
    }

    /// Rewrites the key arena and the key words with the live slots' keys only.
    fn compact_keys(&mut self) {
        let mut keys = KeyArena::default();
        let mut words: Chunked<u64> = Chunked::default();
        for slot in self.slots.iter_mut() {
            if slot.is_free() {
                continue;
            }
            let Some(i) = slot.key_word() else {
                continue;
            };
            let word = self.key_words[i as u32];
            let word = if word & FLAG_NUMBER != 0 {
                word
            } else {
                let range = word_range(word);
                let offset = keys.push(self.keys.get(range.clone())) as u64;
                offset << 16 | (range.len() as u64) << 8
            };
            slot.key = words.push(word) | KEY_WORD;
        }
        self.keys = keys;
        self.key_words = words;
        self.dead_key_bytes = 0;
    }

    fn seen(&self, id: u32, slot: &Slot, tick: u64) -> Seen {
        let created = self.created(id, slot);
        if created == PENDING {
            return Seen::Check;
        }
        if created > tick {
            return Seen::No;
        }
        if slot.state & STATE_SUPERSEDED != 0 {
            return match self.superseded.get(&id) {
                Some(&PENDING) | None => Seen::Check,
                Some(&gone) if tick < gone => Seen::Yes,
                Some(_) => Seen::No,
            };
        }
        Seen::Yes
    }

    fn lookup(
        &self,
        vertex: &str,
        direction: EdgeDirection,
        tick: u64,
        exact: bool,
        out: &mut EdgeHits,
        check: &mut dyn FnMut(&str, Option<Revision>) -> Result<bool>,
    ) -> Result<()> {
        let Some(v) = self.vertex_id(vertex) else {
            return Ok(());
        };
        let vertex = &self.vertices[v as usize];
        let list = match direction {
            EdgeDirection::Outbound => &vertex.out,
            EdgeDirection::Inbound => &vertex.inbound,
        };
        for &id in list {
            let slot = &self.slots[id];
            let mut key = self.key(slot);
            let key = key.as_str();
            let visible = match self.seen(id, slot, tick) {
                Seen::No => false,
                // A truncate in flight: the version the ticks select is seen unless the
                // reader's snapshot holds the truncate (then it holds no key of this table:
                // the truncate holds the collection's writer lock until the table is retired).
                Seen::Yes if exact => check(key, None)?,
                Seen::Yes => true,
                Seen::Check => check(key, self.revs.get(&id).copied().map(Revision))?,
            };
            if visible {
                let other = match direction {
                    EdgeDirection::Outbound => slot.to,
                    EdgeDirection::Inbound => slot.from,
                };
                let mark = self.marks[other as usize].load(Ordering::Relaxed);
                let slot = VertexSlot {
                    number: other,
                    epoch: self.vertex_epoch,
                };
                out.push_indexed(key, &self.vertices[other as usize].name, mark, slot);
            }
        }
        Ok(())
    }

    fn memory_bytes(&self) -> usize {
        let lists: usize = self
            .vertices
            .iter()
            .map(|v| v.name.len() + (v.out.capacity() + v.inbound.capacity()) * 4)
            .sum();
        self.slots.bytes()
            + self.free_slots.capacity() * 4
            + self.key_words.bytes()
            + self.keys.capacity()
            + self.vertices.capacity() * std::mem::size_of::<Vertex>()
            + self.marks.capacity() * 8
            + self.free_vertices.capacity() * 4
            + self.by_name.capacity() * 5
            + self.superseded.capacity() * 13
            + self.revs.capacity() * 13
            + self.build_revs.as_ref().map_or(0, Chunked::bytes)
            + self.far_ticks.capacity() * 13
            + self.garbage.capacity() * 16
            + lists
    }
}

fn full(what: &str) -> Error {
    Error::with_message(
        ErrorCode::ResourceLimit,
        format!("the edge index cannot hold more {what}"),
    )
}

/// A supersession the startup build could not apply yet (the scan had not reached the
/// version): applied when the scan is done.
struct Missed {
    from: Box<str>,
    key: Box<str>,
    rev: Revision,
    tick: u64,
}

struct State {
    current: Table,
    /// Tables replaced by truncates, with the truncate's tick, oldest first: a snapshot older
    /// than that tick reads the first of them newer than itself.
    retired: Vec<(u64, Table)>,
    /// A truncate is in flight: the current table's entries are decided by the exact check.
    truncating: bool,
    building: bool,
    missed: Vec<Missed>,
}

impl State {
    /// The table a snapshot at `tick` reads, and whether it must check every entry.
    fn table_for(&self, tick: u64) -> (&Table, bool) {
        match self.retired.iter().find(|(gone, _)| tick < *gone) {
            Some((_, table)) => (table, false),
            None => (&self.current, self.truncating),
        }
    }
}

#[derive(Clone, Debug)]
enum Readiness {
    Building,
    Ready,
    Failed(Error),
}

/// Figures of an edge index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EdgeIndexStats {
    /// Edge versions held (live and superseded-but-not-yet-collected).
    pub entries: usize,
    /// Distinct vertices referenced.
    pub vertices: usize,
    /// Bytes held by the structure (capacities, not counting allocator overhead).
    pub memory_bytes: usize,
}

/// What a commit changed in one edge collection's index before the engine saw it.
#[derive(Default)]
pub(crate) struct Prepared {
    added: Vec<u32>,
    superseded: Vec<u32>,
    missed: Vec<(Box<str>, Box<str>, Revision)>,
}

/// One staged change of an edge collection, as the index needs it.
pub(crate) struct EdgeChange<'a> {
    pub key: &'a str,
    /// The new version: revision, `_from`, `_to`.
    pub new: Option<(Revision, &'a str, &'a str)>,
    /// The superseded version: revision and `_from`.
    pub prior: Option<(Revision, Cow<'a, str>)>,
}

/// Vertex ids of a batch's edge ends, looked up under the index's read lock before the
/// collection's writer lock ([`EdgeIndex::resolve`]), so that the locked part of a commit
/// appends to the vertices' lists without probing the name table (whose probes, for random
/// vertices, miss the cache). Valid while the table's vertex epoch is the one recorded: ids
/// are only ever renamed by a reclaim or a truncate, both of which change it. The hints are in
/// the batch's order and are matched to its changes by the address of the ends' text: each
/// hint keeps its ends alive, so no other name can have that address meanwhile.
#[derive(Default)]
pub(crate) struct VertexHints {
    epoch: u64,
    ends: Vec<(EdgeEnds, [Option<u32>; 2])>,
    /// The next hint to match.
    cursor: Cell<usize>,
}

/// Hints further ahead than this are not looked for (items refused before staging leave
/// their hints unmatched; a batch whose order differs from the hints' just goes without).
const HINT_LOOKAHEAD: usize = 8;

impl VertexHints {
    /// The ids looked up for the ends `from`, `to` if they are the text of a hinted edge at
    /// or shortly after the cursor, which then moves past it.
    fn next(&self, from: &str, to: &str) -> [Option<u32>; 2] {
        let same = |a: &Arc<str>, b: &str| std::ptr::eq(&**a, b);
        let cursor = self.cursor.get();
        let mut ahead = self.ends.iter().skip(cursor).take(HINT_LOOKAHEAD);
        match ahead
            .position(|((f, t), _)| same(f, from) && same(t, to))
            .map(|i| cursor + i)
        {
            Some(at) => {
                self.cursor.set(at + 1);
                self.ends[at].1
            }
            None => [None, None],
        }
    }
}

pub(crate) struct EdgeIndex {
    state: RwLock<State>,
    readiness: Mutex<Readiness>,
    ready_cv: Condvar,
}

impl std::fmt::Debug for EdgeIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeIndex")
            .field("readiness", &*self.readiness.lock())
            .finish_non_exhaustive()
    }
}

impl EdgeIndex {
    /// An empty index; `building` when a startup build will fill it.
    pub fn new(building: bool) -> EdgeIndex {
        EdgeIndex {
            state: RwLock::new(State {
                current: Table {
                    build_revs: building.then(Chunked::default),
                    ..Table::new()
                },
                retired: Vec::new(),
                truncating: false,
                building,
                missed: Vec::new(),
            }),
            readiness: Mutex::new(if building {
                Readiness::Building
            } else {
                Readiness::Ready
            }),
            ready_cv: Condvar::new(),
        }
    }

    /// Waits (bounded) until the startup build is done.
    pub fn wait_ready(&self) -> Result<()> {
        let deadline = Instant::now() + BUILD_WAIT;
        let mut readiness = self.readiness.lock();
        loop {
            match &*readiness {
                Readiness::Ready => return Ok(()),
                Readiness::Failed(err) => return Err(err.clone()),
                Readiness::Building => {
                    if self
                        .ready_cv
                        .wait_until(&mut readiness, deadline)
                        .timed_out()
                    {
                        return Err(Error::with_message(
                            ErrorCode::LockTimeout,
                            "the edge index is still being built",
                        ));
                    }
                }
            }
        }
    }

    fn set_readiness(&self, readiness: Readiness) {
        *self.readiness.lock() = readiness;
        self.ready_cv.notify_all();
    }

    /// Fills the index from `snapshot` (taken after the index was registered for commits),
    /// then marks it ready. Never holds the collection's writer lock.
    pub fn build(&self, cid: CollectionId, snapshot: &Snapshot) -> Result<()> {
        let result = self.scan_into(cid, snapshot);
        match &result {
            Ok(()) => {
                self.finish_build();
                self.set_readiness(Readiness::Ready);
            }
            Err(err) => {
                tracing::warn!("building the edge index of collection {cid} failed: {err}");
                self.set_readiness(Readiness::Failed(err.clone()));
            }
        }
        result
    }

    /// Reads the collection in file order (sequential reads of the maps instead of a random
    /// walk in key order) on up to all cores: the scan and the skim of `_from`/`_to` run in
    /// parallel, each thread adding its chunks under the table's write lock. Arrival order
    /// does not matter: `finish_build` puts every list into revision order afterwards (and
    /// file order is nearly revision order already, so little is left to sort).
    fn scan_into(&self, cid: CollectionId, snapshot: &Snapshot) -> Result<()> {
        let created = snapshot.tick();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let started = std::time::Instant::now();
        let chunks = snapshot.ordered_scan(cid)?.for_each_parallel(
            threads,
            || (BuildChunk::default(), 0usize),
            |(chunk, added), doc| {
                if let Some((from, to)) = skim_ends(doc.body) {
                    chunk.push(doc.key, doc.rev, &from, &to);
                }
                if chunk.len() >= BUILD_CHUNK {
                    *added += chunk.len();
                    self.insert_chunk(chunk, created)?;
                }
                Ok(())
            },
        )?;
        let mut edges = 0;
        for (mut chunk, added) in chunks {
            edges += added + chunk.len();
            self.insert_chunk(&mut chunk, created)?;
        }
        tracing::info!(
            "edge index of collection {cid}: {edges} edges read in {:.2} s",
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }

    fn insert_chunk(&self, chunk: &mut BuildChunk, created: u64) -> Result<()> {
        let mut state = self.state.write();
        for (key, rev, from, to) in chunk.iter() {
            state
                .current
                .add(key, rev, from, to, created, [None, None])?;
        }
        drop(state);
        chunk.clear();
        Ok(())
    }

    /// After the scan: every list into revision order (the scan went in key order), then
    /// the supersessions that arrived before the scan reached their version.
    fn finish_build(&self) {
        let mut start = 0;
        loop {
            let mut state = self.state.write();
            let table = &mut state.current;
            let end = (start + SORT_CHUNK).min(table.vertices.len());
            let revs = table.build_revs.as_ref();
            // Every slot added while building has its revision recorded.
            let rev = |id: u32| revs.and_then(|r| r.get(id)).copied().unwrap_or(0);
            for vertex in &mut table.vertices[start..end] {
                for list in [&mut vertex.out, &mut vertex.inbound] {
                    if !list.is_sorted_by_key(|&id| rev(id)) {
                        list.sort_by_key(|&id| rev(id));
                    }
                    list.shrink_to_fit();
                }
            }
            if end >= table.vertices.len() {
                break;
            }
            start = end;
        }
        let mut state = self.state.write();
        let missed = std::mem::take(&mut state.missed);
        for m in missed {
            // The version the scan added from its snapshot: older than any a commit added.
            if let Some(id) = state.current.find(&m.from, &m.key, m.rev, true) {
                if m.tick == PENDING {
                    state.current.supersede_in_flight(id, m.rev);
                } else {
                    state.current.mark_superseded(id, m.tick);
                }
            }
        }
        state.current.build_revs = None;
        state.building = false;
    }

    /// Appends the edges of `vertex` a reader at snapshot `tick` sees to `out`. `check` must
    /// tell whether the reader's snapshot holds key at revision (asked for entries whose
    /// creating or superseding commit is in flight), or with no revision whether it holds key
    /// at all (asked while a truncate is in flight, for the version the ticks select).
    pub fn lookup(
        &self,
        vertex: &str,
        direction: EdgeDirection,
        tick: u64,
        out: &mut EdgeHits,
        check: &mut dyn FnMut(&str, Option<Revision>) -> Result<bool>,
    ) -> Result<()> {
        self.wait_ready()?;
        let state = self.state.read();
        let (table, exact) = state.table_for(tick);
        table.lookup(vertex, direction, tick, exact, out, check)
    }

    /// Marks vertex `vertex` as alive under `epoch`, the existence epoch of its collection
    /// for a snapshot in which the vertex document was found (see
    /// `quiver_storage::Snapshot::existence_epoch`): a later lookup whose reader gets the same
    /// epoch for that collection may take the vertex as alive without probing its primary
    /// index. `slot` (from the hit that reached the vertex, or the default) spares the
    /// lookup by name while the table's vertex numbers still name the vertices they named
    /// then. Nothing happens if no edge of this index touches `vertex`.
    pub fn mark_vertex_alive(&self, vertex: &str, slot: VertexSlot, epoch: u64) {
        let state = self.state.read();
        let table = &state.current;
        // Epochs are unique to a table and change whenever a number may come to name another
        // vertex: an equal epoch means the number still names `vertex`.
        let v = if slot.epoch != 0 && slot.epoch == table.vertex_epoch {
            debug_assert_eq!(&*table.vertices[slot.number as usize].name, vertex);
            Some(slot.number)
        } else {
            table.vertex_id(vertex)
        };
        if let Some(mark) = v.and_then(|v| table.marks.get(v as usize)) {
            mark.store(epoch, Ordering::Relaxed);
        }
    }

    /// How many entries `vertex` has in `direction` (superseded and in-flight ones
    /// included), or None while the startup build runs: a cheap estimate of a lookup's size.
    pub fn degree_hint(&self, vertex: &str, direction: EdgeDirection) -> Option<usize> {
        if !matches!(*self.readiness.lock(), Readiness::Ready) {
            return None;
        }
        let state = self.state.read();
        let table = &state.current;
        let v = table.vertex_id(vertex)?;
        let vertex = &table.vertices[v as usize];
        Some(match direction {
            EdgeDirection::Outbound => vertex.out.len(),
            EdgeDirection::Inbound => vertex.inbound.len(),
        })
    }

    /// Looks up the vertex ids of edge ends about to be inserted (`_from`, `_to` of each),
    /// under the index's read lock, for [`EdgeIndex::prepare`] under the collection's writer
    /// lock. Ends not interned yet get no hint (they are interned under the writer lock, so a
    /// refused insert leaves no vertex behind).
    pub fn resolve<'a>(&self, ends: impl IntoIterator<Item = &'a EdgeEnds>) -> VertexHints {
        let ends = ends.into_iter();
        let mut hints = VertexHints {
            ends: Vec::with_capacity(ends.size_hint().0),
            ..VertexHints::default()
        };
        let state = self.state.read();
        let table = &state.current;
        hints.epoch = table.vertex_epoch;
        // Edges usually come grouped by one end: the previous edge's id is tried first.
        let mut recent: [Option<(&str, u32)>; 2] = [None, None];
        for pair in ends {
            let mut ids = [None, None];
            for (end, name) in [&*pair.0, &*pair.1].into_iter().enumerate() {
                ids[end] = match recent[end] {
                    Some((last, id)) if last == name => Some(id),
                    _ => table.vertex_id(name),
                };
                if let Some(id) = ids[end] {
                    recent[end] = Some((name, id));
                }
            }
            hints.ends.push((pair.clone(), ids));
        }
        hints
    }

    /// Enters a batch's changes before the engine commit (the collection's writer lock held):
    /// new versions as in flight, superseded ones as superseded-in-flight.
    /// `hints` ([`EdgeIndex::resolve`]) spare the name-table probes of the ends they hold.
    pub fn prepare(
        &self,
        changes: &[EdgeChange<'_>],
        mut hints: Option<&VertexHints>,
    ) -> Result<Prepared> {
        let mut prepared = Prepared::default();
        let mut state = self.state.write();
        if hints
            .as_ref()
            .is_some_and(|h| h.epoch != state.current.vertex_epoch)
        {
            hints = None;
        }
        for change in changes {
            if let Some((rev, from)) = &change.prior {
                match state.current.find(from, change.key, *rev, false) {
                    Some(id) => {
                        state.current.supersede_in_flight(id, *rev);
                        prepared.superseded.push(id);
                    }
                    None if state.building => {
                        state.missed.push(Missed {
                            from: (**from).into(),
                            key: change.key.into(),
                            rev: *rev,
                            tick: PENDING,
                        });
                        prepared
                            .missed
                            .push(((**from).into(), change.key.into(), *rev));
                    }
                    None => {}
                }
            }
            if let Some((rev, from, to)) = change.new {
                let hint = match hints {
                    Some(h) => h.next(from, to),
                    None => [None, None],
                };
                match state.current.add(change.key, rev, from, to, PENDING, hint) {
                    Ok(id) => prepared.added.push(id),
                    Err(err) => {
                        drop(state);
                        self.failed(prepared);
                        return Err(err);
                    }
                }
            }
        }
        Ok(prepared)
    }

    /// The batch was committed at `tick`: stamps its entries, then collects garbage up to
    /// the engine's `horizon`.
    pub fn committed(&self, prepared: Prepared, tick: u64, horizon: u64) {
        let mut state = self.state.write();
        for id in prepared.added {
            state.current.set_created(id, tick);
        }
        for id in prepared.superseded {
            state.current.mark_superseded(id, tick);
        }
        for (from, key, rev) in prepared.missed {
            if state.building {
                if let Some(m) = state
                    .missed
                    .iter_mut()
                    .find(|m| m.rev == rev && m.key == key)
                {
                    m.tick = tick;
                }
            } else if let Some(id) = state.current.find(&from, &key, rev, false) {
                // The build finished in between and marked it in flight.
                state.current.mark_superseded(id, tick);
            }
        }
        Self::collect_locked(&mut state, horizon);
    }

    /// The engine refused the batch: no snapshot ever saw it.
    pub fn failed(&self, prepared: Prepared) {
        let mut state = self.state.write();
        for id in prepared.added.into_iter().rev() {
            state.current.unlink(id);
        }
        for id in prepared.superseded {
            state.current.unmark_superseded(id);
        }
        for (from, key, rev) in prepared.missed {
            if state.building {
                state.missed.retain(|m| !(m.rev == rev && m.key == key));
            } else if let Some(id) = state.current.find(&from, &key, rev, false) {
                state.current.unmark_superseded(id);
            }
        }
    }

    fn collect_locked(state: &mut State, horizon: u64) {
        if state.building {
            // A late scan chunk could still add a slot a queued supersession refers to.
            return;
        }
        state.retired.retain(|(tick, _)| *tick > horizon);
        state.current.collect(horizon);
    }

    /// Drops garbage no snapshot at or after `horizon` can see (commits do this as they go;
    /// the figures do it before counting).
    pub fn collect(&self, horizon: u64) {
        Self::collect_locked(&mut self.state.write(), horizon);
    }

    /// A truncate is about to be committed (writer lock held, build done): until
    /// [`EdgeIndex::end_truncate`] readers check every entry.
    pub fn begin_truncate(&self) {
        self.state.write().truncating = true;
    }

    /// The truncate was committed at `tick` (Some) or failed (None).
    pub fn end_truncate(&self, tick: Option<u64>, horizon: u64) {
        let mut state = self.state.write();
        state.truncating = false;
        if let Some(tick) = tick {
            let mut fresh = Table::new();
            // Ids of the old table name nothing in the new one.
            fresh.vertex_epoch = fresh_vertex_epoch();
            let old = std::mem::replace(&mut state.current, fresh);
            state.retired.push((tick, old));
        }
        Self::collect_locked(&mut state, horizon);
    }

    /// Entries, vertices and bytes held.
    pub fn stats(&self) -> EdgeIndexStats {
        let state = self.state.read();
        let tables = std::iter::once(&state.current).chain(state.retired.iter().map(|(_, t)| t));
        let mut stats = EdgeIndexStats::default();
        for table in tables {
            stats.entries += table.live_slots;
            stats.vertices += table.by_name.len();
            stats.memory_bytes += table.memory_bytes();
        }
        stats
    }
}

/// Edge ends of one build chunk in one text buffer (no allocation per edge).
#[derive(Default)]
struct BuildChunk {
    text: String,
    items: Vec<(usize, usize, usize, usize, Revision)>,
}

impl BuildChunk {
    fn push(&mut self, key: &str, rev: Revision, from: &str, to: &str) {
        let start = self.text.len();
        self.text.push_str(key);
        self.text.push_str(from);
        self.text.push_str(to);
        self.items
            .push((start, key.len(), from.len(), to.len(), rev));
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    fn clear(&mut self) {
        self.text.clear();
        self.items.clear();
    }

    fn iter(&self) -> impl Iterator<Item = (&str, Revision, &str, &str)> + '_ {
        self.items.iter().map(|&(start, k, f, t, rev)| {
            let text = &self.text[start..start + k + f + t];
            (&text[..k], rev, &text[k..k + f], &text[k + f..])
        })
    }
}

/// The edge index changes of a commit, across the written edge collections.
#[derive(Default)]
pub(crate) struct PendingEdges {
    parts: Vec<(Arc<EdgeIndex>, Prepared)>,
}

/// Enters every staged edge version into the written collections' edge indexes (writer
/// locks held, before the engine commit). `snapshot` holds the prior versions; `hints` the
/// vertex ids of one collection's new ends, looked up before the locks.
pub(crate) fn before_commit(
    entries: &crate::staged_version::StagedEntries,
    snapshot: &Snapshot,
    index_of: impl Fn(CollectionId) -> Option<Arc<EdgeIndex>>,
    hints: Option<&(CollectionId, VertexHints)>,
) -> Result<PendingEdges> {
    let mut by_collection: HashMap<CollectionId, Vec<(&str, &StagedEntry)>> = HashMap::new();
    for ((cid, key), entry) in entries {
        by_collection
            .entry(*cid)
            .or_default()
            .push((key.as_str(), entry));
    }
    let mut pending = PendingEdges::default();
    for (cid, staged) in by_collection {
        let Some(index) = index_of(cid) else { continue };
        let mut bodies = Vec::new();
        for (key, entry) in &staged {
            if let Some(prior) = entry.prior {
                if let Some(old) = snapshot.get(cid, key)? {
                    if old.rev == prior {
                        bodies.push((*key, prior, old.body));
                    }
                }
            }
        }
        let mut priors: HashMap<&str, (Revision, Cow<'_, str>)> = HashMap::new();
        for (key, rev, body) in &bodies {
            if let Some((from, _)) = skim_ends(body) {
                priors.insert(key, (*rev, from));
            }
        }
        let changes: Vec<EdgeChange<'_>> = staged
            .iter()
            .map(|(key, entry)| EdgeChange {
                key,
                new: match (&entry.current, &entry.edge) {
                    (Some((rev, _)), Some((from, to))) => Some((*rev, &**from, &**to)),
                    _ => None,
                },
                prior: priors.remove(key),
            })
            .collect();
        let hints = hints.filter(|(of, _)| *of == cid).map(|(_, h)| h);
        match index.prepare(&changes, hints) {
            Ok(prepared) => pending.parts.push((Arc::clone(&index), prepared)),
            Err(err) => {
                pending.failed();
                return Err(err);
            }
        }
    }
    Ok(pending)
}

impl PendingEdges {
    /// The batch was committed at `tick`.
    pub fn committed(self, tick: u64, horizon: u64) {
        for (index, prepared) in self.parts {
            index.committed(prepared, tick, horizon);
        }
    }

    /// The commit failed.
    pub fn failed(self) {
        for (index, prepared) in self.parts {
            index.failed(prepared);
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
        let (from, to) = skim_ends(body).unwrap();
        assert_eq!((&*from, &*to), ("a/1", "b/2"));
        assert!(matches!(from, Cow::Borrowed(_)));
        assert!(skim_ends(br#"{"_key":"e"}"#).is_none());
        assert!(skim_ends(b"not json").is_none());
    }

    fn keys(ix: &EdgeIndex, vertex: &str, dir: EdgeDirection, tick: u64) -> Vec<String> {
        let mut out = EdgeHits::new();
        ix.lookup(vertex, dir, tick, &mut out, &mut |_, _| {
            panic!("no entry is in flight")
        })
        .unwrap();
        out.iter()
            .map(|h| format!("{}>{}", h.key, h.other))
            .collect()
    }

    fn change<'a>(
        key: &'a str,
        new: Option<(u64, &'a str, &'a str)>,
        prior: Option<(u64, &'a str)>,
    ) -> EdgeChange<'a> {
        EdgeChange {
            key,
            new: new.map(|(r, f, t)| (Revision(r), f, t)),
            prior: prior.map(|(r, f)| (Revision(r), Cow::Borrowed(f))),
        }
    }

    #[test]
    fn ticks_decide_visibility_and_garbage_waits_for_the_horizon() {
        let ix = EdgeIndex::new(false);
        let p = ix
            .prepare(&[change("e1", Some((1, "v/a", "v/b")), None)], None)
            .unwrap();
        // In flight: the reader's snapshot decides.
        let mut out = EdgeHits::new();
        let mut asked = 0;
        ix.lookup("v/a", EdgeDirection::Outbound, 5, &mut out, &mut |k, r| {
            asked += 1;
            Ok(k == "e1" && r == Some(Revision(1)))
        })
        .unwrap();
        assert_eq!((asked, out.len()), (1, 1));
        ix.committed(p, 10, 0);
        assert!(keys(&ix, "v/a", EdgeDirection::Outbound, 9).is_empty());
        assert_eq!(keys(&ix, "v/a", EdgeDirection::Outbound, 10), ["e1>v/b"]);
        assert_eq!(keys(&ix, "v/b", EdgeDirection::Inbound, 10), ["e1>v/a"]);
        // Re-point e1 at tick 20.
        let p = ix
            .prepare(
                &[change("e1", Some((2, "v/a", "v/c")), Some((1, "v/a")))],
                None,
            )
            .unwrap();
        ix.committed(p, 20, 10);
        assert_eq!(keys(&ix, "v/a", EdgeDirection::Outbound, 15), ["e1>v/b"]);
        assert_eq!(keys(&ix, "v/a", EdgeDirection::Outbound, 20), ["e1>v/c"]);
        assert_eq!(ix.stats().entries, 2);
        ix.collect(19);
        assert_eq!(ix.stats().entries, 2);
        ix.collect(20);
        assert_eq!(ix.stats().entries, 1);
        // v/b has no edges left: its name is reclaimed.
        assert_eq!(ix.stats().vertices, 2);
        assert!(keys(&ix, "v/b", EdgeDirection::Inbound, 30).is_empty());
        // A failed commit leaves nothing behind.
        let p = ix
            .prepare(
                &[
                    change("e2", Some((3, "v/a", "v/d")), None),
                    change("e1", None, Some((2, "v/a"))),
                ],
                None,
            )
            .unwrap();
        ix.failed(p);
        assert_eq!(keys(&ix, "v/a", EdgeDirection::Outbound, 40), ["e1>v/c"]);
        assert_eq!(ix.stats().entries, 1);
    }

    #[test]
    fn truncate_retires_the_table_for_older_snapshots() {
        let ix = EdgeIndex::new(false);
        let p = ix
            .prepare(&[change("e1", Some((1, "v/a", "v/b")), None)], None)
            .unwrap();
        ix.committed(p, 10, 0);
        ix.begin_truncate();
        let mut out = EdgeHits::new();
        ix.lookup("v/a", EdgeDirection::Outbound, 50, &mut out, &mut |_, _| {
            Ok(false)
        })
        .unwrap();
        assert!(out.is_empty(), "during the truncate the snapshot decides");
        ix.end_truncate(Some(20), 10);
        assert_eq!(keys(&ix, "v/a", EdgeDirection::Outbound, 19), ["e1>v/b"]);
        assert!(keys(&ix, "v/a", EdgeDirection::Outbound, 20).is_empty());
        ix.collect(20);
        assert!(keys(&ix, "v/a", EdgeDirection::Outbound, 19).is_empty());
        assert_eq!(ix.stats().entries, 0);
    }

    #[test]
    fn vertex_hints_hold_until_an_id_may_name_another_vertex() {
        let ix = EdgeIndex::new(false);
        let p = ix
            .prepare(&[change("e1", Some((1, "v/a", "v/b")), None)], None)
            .unwrap();
        ix.committed(p, 10, 0);
        let ends: EdgeEnds = (Arc::from("v/a"), Arc::from("v/b"));
        let new = |key, rev, hints: &VertexHints| {
            let changes = [EdgeChange {
                key,
                new: Some((Revision(rev), &*ends.0, &*ends.1)),
                prior: None,
            }];
            ix.prepare(&changes, Some(hints)).unwrap()
        };
        let hints = ix.resolve([&ends]);
        assert_eq!(hints.ends[0].1, [Some(0), Some(1)]);
        assert_eq!(
            hints.next("v/a", "v/b"),
            [None, None],
            "matched by the hinted text only"
        );
        ix.committed(new("e2", 2, &hints), 11, 0);
        assert_eq!(
            keys(&ix, "v/a", EdgeDirection::Outbound, 11),
            ["e1>v/b", "e2>v/b"]
        );

        // Both vertices are reclaimed and their ids reused by others: the hints taken before
        // are stale and must not attach the edge to the new owners of the ids.
        let stale = ix.resolve([&ends]);
        let p = ix
            .prepare(
                &[
                    change("e1", None, Some((1, "v/a"))),
                    change("e2", None, Some((2, "v/a"))),
                ],
                None,
            )
            .unwrap();
        ix.committed(p, 12, 12);
        assert_eq!(ix.stats().vertices, 0);
        let p = ix
            .prepare(&[change("e3", Some((3, "v/c", "v/d")), None)], None)
            .unwrap();
        ix.committed(p, 13, 13);
        ix.committed(new("e4", 4, &stale), 14, 14);
        assert_eq!(keys(&ix, "v/c", EdgeDirection::Outbound, 14), ["e3>v/d"]);
        assert_eq!(keys(&ix, "v/a", EdgeDirection::Outbound, 14), ["e4>v/b"]);
        assert_eq!(keys(&ix, "v/b", EdgeDirection::Inbound, 14), ["e4>v/a"]);

        // A truncate replaces the table: hints of the old one are stale too.
        let stale = ix.resolve([&ends]);
        ix.begin_truncate();
        ix.end_truncate(Some(20), 20);
        let p = ix
            .prepare(&[change("e5", Some((5, "v/x", "v/y")), None)], None)
            .unwrap();
        ix.committed(p, 21, 21);
        ix.committed(new("e6", 6, &stale), 22, 22);
        assert_eq!(keys(&ix, "v/x", EdgeDirection::Outbound, 22), ["e5>v/y"]);
        assert_eq!(keys(&ix, "v/a", EdgeDirection::Outbound, 22), ["e6>v/b"]);
        assert_eq!(ix.stats().vertices, 4);
    }

    #[test]
    fn supersessions_that_overtake_the_build_are_applied_after_it() {
        let ix = EdgeIndex::new(true);
        // A writer removes e1 (and then re-adds it elsewhere) before the scan reached it.
        let p = ix
            .prepare(
                &[change("e1", Some((5, "v/a", "v/z")), Some((1, "v/a")))],
                None,
            )
            .unwrap();
        ix.committed(p, 20, 0);
        let p = ix
            .prepare(&[change("e2", None, Some((2, "v/a")))], None)
            .unwrap();
        // The scan (snapshot at tick 10) inserts the old versions while e2's commit is in
        // flight.
        let mut chunk = BuildChunk::default();
        chunk.push("e1", Revision(1), "v/a", "v/b");
        chunk.push("e2", Revision(2), "v/a", "v/c");
        chunk.push("e3", Revision(3), "v/a", "v/d");
        ix.insert_chunk(&mut chunk, 10).unwrap();
        ix.finish_build();
        ix.set_readiness(Readiness::Ready);
        ix.committed(p, 30, 0);
        assert_eq!(
            keys(&ix, "v/a", EdgeDirection::Outbound, 10),
            ["e1>v/b", "e2>v/c", "e3>v/d"],
            "lists are in revision order after the build"
        );
        assert_eq!(
            keys(&ix, "v/a", EdgeDirection::Outbound, 25),
            ["e2>v/c", "e3>v/d", "e1>v/z"]
        );
        assert_eq!(
            keys(&ix, "v/a", EdgeDirection::Outbound, 30),
            ["e3>v/d", "e1>v/z"]
        );
        ix.collect(30);
        assert_eq!(ix.stats().entries, 2);
    }

    /// Slots hold no revision: the exact check gets the revision of a version whose creating
    /// or superseding commit is in flight, and during a truncate only the question whether the
    /// snapshot still holds the key of the version the ticks select.
    #[test]
    fn the_exact_check_gets_revisions_only_of_versions_in_flight() {
        let ix = EdgeIndex::new(false);
        let p = ix
            .prepare(&[change("e1", Some((1, "v/a", "v/b")), None)], None)
            .unwrap();
        ix.committed(p, 10, 0);
        let p = ix
            .prepare(
                &[change("e1", Some((2, "v/a", "v/c")), Some((1, "v/a")))],
                None,
            )
            .unwrap();
        // Both versions are in flight: the old one's supersession, the new one's creation.
        let mut asked = Vec::new();
        let mut out = EdgeHits::new();
        ix.lookup("v/a", EdgeDirection::Outbound, 15, &mut out, &mut |k, r| {
            asked.push((k.to_string(), r));
            Ok(r == Some(Revision(1)))
        })
        .unwrap();
        assert_eq!(
            asked,
            [
                ("e1".to_string(), Some(Revision(1))),
                ("e1".to_string(), Some(Revision(2)))
            ]
        );
        assert_eq!(out.iter().map(|h| h.other).collect::<Vec<_>>(), ["v/b"]);
        ix.committed(p, 20, 0);
        assert!(ix.state.read().current.revs.is_empty());
        // A truncate in flight: ticks pick the version, the snapshot says whether it holds
        // the key at all.
        ix.begin_truncate();
        for (tick, holds, want) in [
            (15, true, vec!["v/b"]),
            (25, true, vec!["v/c"]),
            (25, false, vec![]),
            (5, true, vec![]),
        ] {
            let mut asked = Vec::new();
            let mut out = EdgeHits::new();
            ix.lookup(
                "v/a",
                EdgeDirection::Outbound,
                tick,
                &mut out,
                &mut |k, r| {
                    asked.push((k.to_string(), r));
                    Ok(holds)
                },
            )
            .unwrap();
            assert_eq!(out.iter().map(|h| h.other).collect::<Vec<_>>(), want);
            assert!(asked.iter().all(|(k, r)| k == "e1" && r.is_none()));
        }
        ix.end_truncate(Some(30), 0);
        assert_eq!(keys(&ix, "v/a", EdgeDirection::Outbound, 25), ["e1>v/c"]);
    }

    /// While a build runs, a key can have two versions no commit superseded yet: the one the
    /// scan added from its snapshot (older) and the one a commit added. A commit that
    /// supersedes the key's current version finds the newer one; the supersession the scan
    /// had not reached finds the older one.
    #[test]
    fn a_build_tells_the_versions_of_a_key_apart_by_their_ticks() {
        let ix = EdgeIndex::new(true);
        let p = ix
            .prepare(
                &[change("e1", Some((5, "v/a", "v/z")), Some((1, "v/a")))],
                None,
            )
            .unwrap();
        ix.committed(p, 20, 0);
        let mut chunk = BuildChunk::default();
        chunk.push("e1", Revision(1), "v/a", "v/b");
        ix.insert_chunk(&mut chunk, 10).unwrap();
        // Supersedes the version of tick 20 (revision 5), not the scanned one.
        let p = ix
            .prepare(
                &[change("e1", Some((7, "v/a", "v/y")), Some((5, "v/a")))],
                None,
            )
            .unwrap();
        ix.committed(p, 30, 0);
        ix.finish_build();
        ix.set_readiness(Readiness::Ready);
        assert_eq!(keys(&ix, "v/a", EdgeDirection::Outbound, 10), ["e1>v/b"]);
        assert_eq!(keys(&ix, "v/a", EdgeDirection::Outbound, 25), ["e1>v/z"]);
        assert_eq!(keys(&ix, "v/a", EdgeDirection::Outbound, 30), ["e1>v/y"]);
        let state = ix.state.read();
        assert!(state.current.build_revs.is_none() && state.current.revs.is_empty());
    }

    #[test]
    fn key_arena_is_compacted_when_dead_bytes_dominate() {
        let ix = EdgeIndex::new(false);
        for i in 0..40u64 {
            let key = format!("edge-{i}");
            let prior = (i > 0).then_some((i, "v/a"));
            let p = ix
                .prepare(&[change(&key, Some((i + 1, "v/a", "v/b")), None)], None)
                .unwrap();
            ix.committed(p, 10 + i * 2, 0);
            if let Some((rev, from)) = prior {
                let old = format!("edge-{}", i - 1);
                let p = ix
                    .prepare(&[change(&old, None, Some((rev, from)))], None)
                    .unwrap();
                ix.committed(p, 11 + i * 2, 11 + i * 2);
            }
        }
        assert_eq!(
            keys(&ix, "v/a", EdgeDirection::Outbound, 1000),
            ["edge-39>v/b"]
        );
        let state = ix.state.read();
        assert!(state.current.keys.len() < 40, "arena compacted");
        assert_eq!(state.current.live_slots, 1);
    }

    #[test]
    fn slots_and_keys_cross_chunk_boundaries() {
        let mut table = Table::new();
        let n = SLOT_CHUNK + 10;
        // Keys of 200 bytes: about 5,000 fill a key chunk, so keys spill over many chunks.
        let key = |i: usize| format!("{i:0>200}");
        for i in 0..n {
            let to = format!("v/{}", i % 7);
            table
                .add(
                    &key(i),
                    Revision(i as u64 + 1),
                    "v/hub",
                    &to,
                    0,
                    [None, None],
                )
                .unwrap();
        }
        assert_eq!(table.slots.len(), n);
        assert_eq!(table.slots.chunks.len(), 2);
        assert!(table.keys.chunks.len() > n * 200 / KEY_CHUNK);
        for i in [0, 5_242, 5_243, SLOT_CHUNK - 1, SLOT_CHUNK, n - 1] {
            let id = table
                .find("v/hub", &key(i), Revision(i as u64 + 1), false)
                .unwrap();
            assert_eq!(id as usize, i);
            assert_eq!(table.key(&table.slots[id]).as_str(), key(i));
        }
        let mut out = EdgeHits::new();
        table
            .lookup(
                "v/3",
                EdgeDirection::Inbound,
                1,
                false,
                &mut out,
                &mut |_, _| Ok(false),
            )
            .unwrap();
        assert_eq!(out.len(), (0..n).filter(|i| i % 7 == 3).count());
        assert_eq!(out.get(0).unwrap().key, key(3));
    }

    /// Decimal keys live in their slots, not the key arena, and read back as the same text;
    /// keys that would not print back the same (leading zero, too long, not digits) stay in
    /// the arena.
    #[test]
    fn decimal_keys_are_kept_in_their_slots() {
        assert_eq!(key_number("0"), Some(0));
        assert_eq!(key_number("12345678901234"), Some(12_345_678_901_234));
        for text in ["", "01", "123456789012345", "12a", "-1", "+1", "1.5"] {
            assert_eq!(key_number(text), None, "{text:?}");
        }
        let mut table = Table::new();
        let keys = [
            "0",
            "7",
            "30622564",
            "12345678901234",
            "01",
            "123456789012345",
            "edge-1",
        ];
        for (i, key) in keys.iter().enumerate() {
            table
                .add(key, Revision(i as u64 + 1), "v/a", "v/b", 0, [None, None])
                .unwrap();
        }
        assert_eq!(
            table.keys.len(),
            "01".len() + "123456789012345".len() + "edge-1".len(),
            "only the keys that are not plain numbers take arena bytes"
        );
        for (i, key) in keys.iter().enumerate() {
            let id = table
                .find("v/a", key, Revision(i as u64 + 1), false)
                .unwrap();
            assert_eq!(table.key(&table.slots[id]).as_str(), *key);
            // A number's other spellings do not match it.
            assert_eq!(
                table.find("v/a", &format!("0{key}"), Revision(i as u64 + 1), false),
                None
            );
        }
        let mut out = EdgeHits::new();
        table
            .lookup(
                "v/b",
                EdgeDirection::Inbound,
                1,
                false,
                &mut out,
                &mut |_, _| Ok(false),
            )
            .unwrap();
        let found: Vec<&str> = out.iter().map(|h| h.key).collect();
        assert_eq!(found, keys);
        // Unlinking a numbered slot leaves no dead arena bytes behind.
        let id = table.find("v/a", "30622564", Revision(3), false).unwrap();
        table.unlink(id);
        assert_eq!(table.dead_key_bytes, 0);
        assert_eq!(table.find("v/a", "30622564", Revision(3), false), None);
    }

    /// Creation ticks are kept as 30-bit offsets from the table's tick base, with far ticks
    /// (below the base, or past the offsets' reach) in a side map and the base moving up to
    /// the horizon; keys as numbers in the slot or through key words. Against a plain map of
    /// slot → (key, created tick) as the reference: every slot's key reads back, and every
    /// reader at or past the horizon sees exactly the slots created at or before its tick.
    #[test]
    fn slot_ticks_and_keys_agree_with_a_plain_map() {
        struct Rng(u64);
        impl Rng {
            fn below(&mut self, n: u64) -> u64 {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0 % n
            }
        }
        let mut rng = Rng(0x9e37_79b9);
        let mut table = Table::new();
        let mut model: HashMap<u32, (String, u64, u64)> = HashMap::new();
        let mut horizon = 0u64;
        let mut newest = 5u64 << 40;
        for step in 0..20_000u64 {
            match rng.below(10) {
                0..=6 => {
                    let key = match rng.below(4) {
                        0 => rng.below(1 << 31).to_string(),
                        1 => (rng.below(1 << 40) + (1 << 31)).to_string(),
                        2 => format!("k{}", rng.below(1 << 20)),
                        _ => format!("0{}", rng.below(100)),
                    };
                    // Mostly recent ticks, some far behind (a startup build's snapshot) and
                    // some jumps far ahead (past the offsets' 2^30).
                    let tick = match rng.below(20) {
                        0 => newest.saturating_sub(rng.below(1 << 31)).max(horizon + 1),
                        1 => {
                            newest += rng.below(1 << 31);
                            newest
                        }
                        2 => PENDING,
                        _ => {
                            newest += rng.below(1000);
                            newest
                        }
                    };
                    let id = table
                        .add(&key, Revision(step + 1), "v/a", "v/b", tick, [None, None])
                        .unwrap();
                    model.insert(id, (key, tick, step + 1));
                }
                7 => {
                    if let Some((&id, &(_, tick, _))) = model.iter().next() {
                        if tick == PENDING {
                            newest += 1;
                            table.set_created(id, newest);
                            model.get_mut(&id).unwrap().1 = newest;
                        } else {
                            table.unlink(id);
                            model.remove(&id);
                        }
                    }
                }
                8 => {
                    // The horizon only moves up (the oldest live snapshot's tick).
                    horizon = horizon.max(newest.saturating_sub(rng.below(1 << 30)));
                    table.collect(horizon);
                }
                _ => {
                    if rng.below(20) == 0 {
                        table.compact_keys();
                    }
                }
            }
            if step % 1000 == 999 {
                assert_eq!(
                    table.revs.len(),
                    model.values().filter(|m| m.1 == PENDING).count()
                );
                for (&id, (key, created, rev)) in &model {
                    let slot = table.slots[id];
                    assert_eq!(table.key(&slot).as_str(), key, "{step}");
                    // A revision is held exactly while the creating commit is in flight.
                    let held = (*created == PENDING).then_some(rev);
                    assert_eq!(table.revs.get(&id), held, "{step} {id}");
                    assert!(table.key_is(&slot, key));
                    for reader in [
                        horizon,
                        horizon + 1,
                        newest,
                        *created,
                        created.wrapping_sub(1),
                    ] {
                        if reader < horizon || reader == PENDING {
                            continue;
                        }
                        let seen = table.seen(id, &slot, reader);
                        match seen {
                            Seen::Check => assert_eq!(*created, PENDING, "{step}"),
                            Seen::Yes => assert!(*created <= reader, "{step} {id}"),
                            Seen::No => assert!(*created > reader, "{step} {id}"),
                        }
                    }
                }
            }
        }
        assert!(
            table.tick_base.is_some_and(|b| b > 5 << 40),
            "the base followed the horizon"
        );
        assert!(table.key_words.len() > 0 && table.keys.len() > 0);
    }

    #[test]
    fn hits_buffer_filters_and_sorts() {
        let mut hits = EdgeHits::new();
        hits.push("b", Revision(2), "v/1");
        hits.push("a", Revision(3), "v/2");
        hits.push("c", Revision(1), "v/3");
        hits.sort_by_rev_from(1);
        let keys: Vec<&str> = hits.iter().map(|h| h.key).collect();
        assert_eq!(keys, ["b", "c", "a"]);
        hits.retain_from(1, |h| h.other != "v/3");
        let keys: Vec<&str> = hits.iter().map(|h| h.key).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(hits.get(1).unwrap().other, "v/2");
    }
}
