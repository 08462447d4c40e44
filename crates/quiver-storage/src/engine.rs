//! The engine: catalog, WAL with group commit, snapshots, recovery, collector, compactor.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use quiver_types::{Hlc, Revision};
use serde_json::{json, Value};

use crate::files::{self, AppendMap, DataFile};
use crate::format::{self, FileKind, Footer, MarkerType, ScanEnd, FLAG_COMMIT, FLAG_SYNC};
use crate::index::{Loc, PrimaryIndex, Version, SCAN_CHUNK};
use crate::{
    BatchOp, CollectionEntry, CollectionOptions, CompactionOptions, CompactionReport,
    DatabaseEntry, EngineOptions, FailPoint, Figures, StoredDocument, WriteBatch,
};

/// Smallest journal the engine creates (ArangoDB's minimum is 1 MiB; tests go lower).
const MIN_JOURNAL_SIZE: u64 = 4096;
/// Largest configured WAL segment or journal size (larger settings are clamped), 1 GiB.
const MAX_FILE_SIZE: u64 = 1 << 30;
/// Largest encoded write batch (all its markers), 1 GiB.
const MAX_BATCH_BYTES: usize = 1 << 30;

pub(crate) struct FileStats {
    pub docs: u64,
    pub doc_bytes: u64,
    pub removes: u64,
    pub size: u64,
    pub kind: StatKind,
    /// Highest tick of any data marker in the file: a file wholly below a durable truncate
    /// is dropped by compaction without being read.
    pub max_tick: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatKind {
    Datafile,
    Journal,
}

struct Journal {
    file: Arc<DataFile>,
    offset: u64,
    size: u64,
    count: u64,
    max_tick: u64,
    crc_acc: u32,
}

/// A journal's counters at the start of a collection pass.
struct JournalState {
    fid: u64,
    offset: u64,
    count: u64,
    max_tick: u64,
    crc_acc: u32,
    stats: Option<(u64, u64, u64)>,
}

/// Forgets everything appended to the current journal since `start` (see the caller).
fn rewind_journal(cf: &mut ColFiles, start: &Option<JournalState>) {
    let Some(j) = cf.journal.as_mut() else {
        return;
    };
    let fid = j.file.fid;
    match start {
        Some(st) if st.fid == fid => {
            j.offset = st.offset;
            j.count = st.count;
            j.max_tick = st.max_tick;
            j.crc_acc = st.crc_acc;
            if let Some(s) = cf.stats.get_mut(&fid) {
                (s.docs, s.doc_bytes, s.removes) = st.stats.unwrap_or_default();
            }
        }
        _ => {
            // The journal was created during this pass: nothing in it counts.
            j.offset = format::padded(format::FILE_HEADER_LEN) as u64;
            j.count = 0;
            j.max_tick = 0;
            j.crc_acc = 0;
            if let Some(s) = cf.stats.get_mut(&fid) {
                (s.docs, s.doc_bytes, s.removes) = (0, 0, 0);
            }
        }
    }
}

/// Markers prepared for a journal but not yet written: byte ranges of the WAL segment's
/// image, written by [`Inner::flush_journal`] straight from the image (no staging copy; with
/// one collection written, a whole segment is one range and one `pwrite`).
#[derive(Default)]
struct Pending {
    /// Ranges of the image, in journal order; adjacent ranges are merged.
    runs: Vec<std::ops::Range<usize>>,
    /// Total bytes in `runs`.
    len: u64,
    count: u64,
    max_tick: u64,
    crcs: Vec<u8>,
    docs: u64,
    doc_bytes: u64,
    removes: u64,
}

/// Buffers one collector pass needs per WAL segment, kept from segment to segment: with
/// ~200,000 markers per 32 MiB segment, fresh vectors meant fresh (kernel-zeroed) memory per
/// segment, which profiled as the collector's largest item (`clear_page_erms`, ~16 % of its
/// samples). Retained size is bounded by the largest segment collected (~12 MiB for 32 MiB of
/// ~150-byte markers).
#[derive(Default)]
struct CollectorScratch {
    /// The segment's markers (scan result).
    found: Vec<format::Found>,
    /// `(collection id, index into found)` of every committed marker, grouped by collection.
    keyed: Vec<(u64, u32)>,
    /// `(index shard, WAL location, journal location)` of every document moved.
    moved: Vec<(usize, Loc, Loc)>,
}

/// Buffers of the hint-file writer, reused across files (see [`CollectorScratch`]).
#[derive(Default)]
struct HintScratch {
    found: Vec<format::Found>,
    encoded: Vec<u8>,
}

/// Scratch vectors above this many entries are dropped after use instead of kept: a segment
/// sized for one huge batch must not pin its buffers for the life of the process (the
/// default 32 MiB segment needs ~250,000).
const SCRATCH_KEEP: usize = 1 << 20;

/// Presizes scratch vectors for a file of `bytes` at one entry per 128 bytes (a ~150-byte
/// document marker each in a typical insert load), so that even the first segment of a process
/// does not regrow them step by step (each step a copy into fresh, kernel-zeroed pages).
/// Reserved but untouched capacity costs address space only.
fn presize<T>(v: &mut Vec<T>, bytes: usize) {
    let want = (bytes / 128).min(SCRATCH_KEEP);
    v.reserve(want.saturating_sub(v.len()));
}

/// Keeps `v` (emptied) for the next use unless it grew beyond [`SCRATCH_KEEP`] entries.
fn recycle<T>(v: &mut Vec<T>) {
    v.clear();
    if v.capacity() > SCRATCH_KEEP {
        *v = Vec::new();
    }
}

/// How many versions the collector repoints per acquisition of a shard's write lock: long
/// enough to amortize the lock, short enough that a writer of the shard waits microseconds.
const REPOINT_RUN: usize = 64;

#[derive(Default)]
struct ColFiles {
    journal: Option<Journal>,
    /// Sealed datafiles in tick order (the MANIFEST order).
    datafiles: Vec<Arc<DataFile>>,
    stats: HashMap<u64, FileStats>,
}

pub(crate) struct Collection {
    pub id: u64,
    pub db: u64,
    options: RwLock<CollectionOptions>,
    meta: RwLock<Value>,
    status: std::result::Result<(), Error>,
    index: PrimaryIndex,
    /// (tick, count) history; the back is the newest.
    counts: Mutex<VecDeque<(u64, u64)>>,
    last_tick: AtomicU64,
    uncollected: AtomicU64,
    /// Superseded versions and tombstones installed since the last GC pass.
    garbage: AtomicU64,
    /// Size of the compaction result being written, 0 if none.
    compacting: AtomicU64,
    /// Highest tick of this collection's markers that are durable in its journals (persisted
    /// in the MANIFEST): WAL markers at or below it are skipped at recovery and collection.
    collected_tick: AtomicU64,
    /// Tick of the newest truncate of this collection that is durable in its listed files
    /// (journal or datafiles): compaction drops what it covers, and drops files that lie
    /// wholly below it without reading them.
    truncate_durable: AtomicU64,
    dropped: AtomicBool,
    /// Something changed that can give the compactor work: a version died (replaced,
    /// removed, truncated), a journal became a datafile, a truncate became durable. Fresh
    /// inserts alone do not set it, so an insert-only collection costs the periodic check
    /// nothing (the check walks every key).
    dirty: AtomicBool,
    files: Mutex<ColFiles>,
    compact_lock: Mutex<Option<Instant>>,
    compaction_status: Mutex<String>,
    dir: PathBuf,
}

impl Pending {
    fn push(&mut self, range: std::ops::Range<usize>) {
        self.len += range.len() as u64;
        match self.runs.last_mut() {
            Some(last) if last.end == range.start => last.end = range.end,
            _ => self.runs.push(range),
        }
    }
}

impl Collection {
    pub(crate) fn count_at(&self, tick: u64) -> u64 {
        let counts = self.counts.lock();
        // Sorted by tick: binary search, the history can be long under an old snapshot.
        let at_or_below = counts.partition_point(|(t, _)| *t <= tick);
        at_or_below.checked_sub(1).map(|i| counts[i].1).unwrap_or(0)
    }

    fn push_count(&self, tick: u64, count: u64, horizon: u64) {
        let mut counts = self.counts.lock();
        counts.push_back((tick, count));
        while counts.len() > 1 && counts[1].0 <= horizon {
            counts.pop_front();
        }
    }

    /// A commit at `tick` changed the live count by `delta`; `died`: some version died.
    /// Under the WAL mutex.
    fn note_commit(&self, tick: u64, delta: i64, died: bool, horizon: u64) {
        let count = (self.latest_count() as i64 + delta).max(0) as u64;
        self.push_count(tick, count, horizon);
        self.last_tick.store(tick, Ordering::Release);
        if died {
            self.dirty.store(true, Ordering::Release);
        }
    }

    fn latest_count(&self) -> u64 {
        self.counts.lock().back().map(|(_, c)| *c).unwrap_or(0)
    }

    pub(crate) fn primary(&self) -> &PrimaryIndex {
        &self.index
    }

    /// Ids of the sealed datafiles (immutable from now on; the journal is not among them).
    pub(crate) fn sealed_fids(&self) -> HashSet<u64> {
        self.files.lock().datafiles.iter().map(|f| f.fid).collect()
    }

    pub(crate) fn usable(&self) -> Result<()> {
        if self.dropped.load(Ordering::Acquire) {
            return Err(Error::new(ErrorCode::DataSourceNotFound));
        }
        self.status.clone()
    }

    fn journal_size(&self, default: u64) -> u64 {
        self.options
            .read()
            .journal_size
            .unwrap_or(default)
            .clamp(MIN_JOURNAL_SIZE, MAX_FILE_SIZE)
    }
}

#[derive(Clone, Default)]
pub(crate) struct Catalog {
    databases: BTreeMap<u64, Value>,
    collections: BTreeMap<u64, Arc<Collection>>,
}

struct WalState {
    segment: Option<Arc<DataFile>>,
    /// Writable map of `segment` that commits append through (`None`: `pwrite`, for a file
    /// whose blocks could not be reserved or mapped; see [`AppendMap`]).
    map: Option<AppendMap>,
    offset: u64,
    size: u64,
    broken: bool,
    /// Sealed segments not yet collected, oldest first.
    sealed: Vec<Arc<DataFile>>,
    /// Segments with writes not yet fdatasynced (besides the current one).
    unsynced: Vec<Arc<DataFile>>,
    /// Collected segments kept because a corrupt collection has data in them.
    retained: Vec<Arc<DataFile>>,
    /// A preallocated empty segment, its size and its prefaulted append map, for the next
    /// rotation.
    spare: Option<(Arc<DataFile>, u64, Option<AppendMap>)>,
    written_tick: u64,
}

#[derive(Default)]
struct SyncState {
    durable: u64,
    requested: u64,
    /// Sync writers currently waiting (blocking or async).
    waiters: usize,
    /// How many waiters the previous fdatasync released; the syncer waits (briefly) for that
    /// many to come back before the next fdatasync, so one fdatasync covers the whole group.
    last_group: usize,
}

struct Background {
    stop: AtomicBool,
    wake: Mutex<bool>,
    cv: Condvar,
}

pub(crate) struct Inner {
    dir: PathBuf,
    options: EngineOptions,
    pub hlc: Hlc,
    tick: AtomicU64,
    visible: AtomicU64,
    catalog: RwLock<Arc<Catalog>>,
    ddl: Mutex<()>,
    files: RwLock<HashMap<u64, Arc<DataFile>>>,
    wal: Mutex<WalState>,
    sync: Mutex<SyncState>,
    /// Sync waiters wait on this (notified after every fdatasync).
    sync_cv: Condvar,
    /// The syncer waits on this (notified by sync requests).
    syncer_cv: Condvar,
    durable_tx: tokio::sync::watch::Sender<(u64, bool)>,
    snapshots: Mutex<BTreeMap<u64, usize>>,
    poisoned: RwLock<Option<Error>>,
    closed: AtomicBool,
    /// Serializes collector passes; holds the buffers they reuse.
    collect_lock: Mutex<CollectorScratch>,
    /// Buffers reused by every hint-file write (seal, compaction, recovery).
    hint_scratch: Mutex<HintScratch>,
    bg: Arc<Background>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    lock_file: Mutex<Option<File>>,
    pub wal_syncs: AtomicU64,
    pub commits: AtomicU64,
    /// Mirror of `SyncState::durable` readable without the sync mutex (commit path).
    durable_tick: AtomicU64,
    /// Mirror of `WalState::sealed.len()` for the throttle check before the WAL mutex.
    pending_segments: AtomicUsize,
    /// Throttled writers wait on this; the collector notifies it per collected segment.
    throttle: Mutex<()>,
    throttle_cv: Condvar,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.bg.stop.store(true, Ordering::Release);
        self.bg.cv.notify_all();
    }
}

fn next_tick(inner: &Inner) -> u64 {
    inner.tick.fetch_add(1, Ordering::AcqRel) + 1
}

fn wal_dir(dir: &Path) -> PathBuf {
    dir.join("wal")
}

fn col_dir(dir: &Path, db: u64, cid: u64) -> PathBuf {
    dir.join(format!("db-{db}")).join(format!("col-{cid}"))
}

fn journal_path(dir: &Path, fid: u64) -> PathBuf {
    dir.join(format!("journal-{fid}.db"))
}

fn datafile_path(dir: &Path, fid: u64) -> PathBuf {
    dir.join(format!("datafile-{fid}.db"))
}

fn hint_path(dir: &Path, fid: u64) -> PathBuf {
    dir.join(format!("datafile-{fid}.hint"))
}

fn corrupt(what: String) -> Error {
    Error::with_message(ErrorCode::CorruptedDatafile, what)
}

fn options_json(o: &CollectionOptions) -> Value {
    json!({"journalSize": o.journal_size, "waitForSync": o.wait_for_sync, "doCompact": o.do_compact})
}

fn options_from_json(v: &Value) -> CollectionOptions {
    CollectionOptions {
        journal_size: v.get("journalSize").and_then(Value::as_u64),
        wait_for_sync: v
            .get("waitForSync")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        do_compact: v.get("doCompact").and_then(Value::as_bool).unwrap_or(true),
    }
}

impl Inner {
    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::with_message(
                ErrorCode::Shutdown,
                "storage engine is shut down",
            ));
        }
        if let Some(e) = self.poisoned.read().as_ref() {
            return Err(e.clone());
        }
        Ok(())
    }

    fn poison(&self, err: Error) {
        tracing::error!("storage engine stops accepting writes: {}", err);
        let mut p = self.poisoned.write();
        if p.is_none() {
            *p = Some(Error::with_message(
                err.code,
                format!(
                    "{} (the engine accepts no more writes until restart)",
                    err.message
                ),
            ));
        }
        drop(p);
        let _s = self.sync.lock();
        self.sync_cv.notify_all();
        self.syncer_cv.notify_all();
        self.durable_tx.send_modify(|v| v.1 = true);
    }

    pub(crate) fn file(&self, fid: u64) -> Option<Arc<DataFile>> {
        self.files.read().get(&fid).cloned()
    }

    pub(crate) fn horizon(&self) -> u64 {
        let snaps = self.snapshots.lock();
        snaps
            .keys()
            .next()
            .copied()
            .unwrap_or_else(|| self.visible.load(Ordering::Acquire))
    }

    fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().clone()
    }

    fn persist_catalog(&self, cat: &Catalog) -> Result<()> {
        let dbs: Vec<Value> = cat
            .databases
            .iter()
            .map(|(id, meta)| json!({"id": id, "meta": meta}))
            .collect();
        let cols: Vec<Value> = cat
            .collections
            .values()
            .map(|c| {
                json!({"id": c.id, "db": c.db, "options": options_json(&c.options.read()), "meta": *c.meta.read()})
            })
            .collect();
        let doc = json!({
            "version": format::FORMAT_VERSION,
            "engine": "quiver-mmfiles",
            "tick": self.tick.load(Ordering::Acquire),
            "databases": dbs,
            "collections": cols,
        });
        let bytes = serde_json::to_vec_pretty(&doc)
            .map_err(|e| Error::with_message(ErrorCode::Internal, e.to_string()))?;
        files::atomic_write(
            &self.dir.join("catalog.json"),
            &bytes,
            &self.options.io_hooks,
            FailPoint::MetaWrite,
        )
        .map_err(|e| files::io_error(e, "writing catalog.json"))
    }

    fn write_manifest(&self, col: &Collection, cf: &ColFiles) -> Result<()> {
        let doc = json!({
            "version": format::FORMAT_VERSION,
            "datafiles": cf.datafiles.iter().map(|f| f.fid).collect::<Vec<_>>(),
            "journal": cf.journal.as_ref().map(|j| j.file.fid),
            "collectedTick": col.collected_tick.load(Ordering::Acquire),
            "tick": self.tick.load(Ordering::Acquire),
        });
        let bytes = serde_json::to_vec(&doc)
            .map_err(|e| Error::with_message(ErrorCode::Internal, e.to_string()))?;
        files::atomic_write(
            &col.dir.join("MANIFEST"),
            &bytes,
            &self.options.io_hooks,
            FailPoint::MetaWrite,
        )
        .map_err(|e| files::io_error(e, "writing MANIFEST"))
    }

    // ---------------------------------------------------------------- WAL

    /// Seals the current segment (no footer needed: collection reads committed batches).
    /// Returns its append map, for the caller to drop *after* releasing the WAL mutex
    /// (unmapping 32 MiB of populated pages is not free).
    #[must_use]
    fn seal_segment(&self, wal: &mut WalState) -> Option<AppendMap> {
        let map = wal.map.take();
        if let Some(seg) = wal.segment.take() {
            wal.sealed.push(seg.clone());
            self.pending_segments
                .store(wal.sealed.len(), Ordering::Release);
            wal.unsynced.push(seg);
            *self.bg.wake.lock() = true;
            self.bg.cv.notify_all();
        }
        wal.offset = 0;
        wal.size = 0;
        wal.broken = false;
        map
    }

    fn new_segment(&self, wal: &mut WalState, need: u64) -> Result<()> {
        let header_len = format::padded(format::FILE_HEADER_LEN) as u64;
        if let Some((spare, size, map)) = wal.spare.take() {
            if header_len + need <= size {
                wal.segment = Some(spare);
                wal.map = map;
                wal.offset = header_len;
                wal.size = size;
                wal.broken = false;
                return Ok(());
            }
            // Too small for this batch: keep it for the next rotation.
            wal.spare = Some((spare, size, map));
        }
        let size = self.segment_size(need);
        // Inline (under the WAL mutex), like the spares prepared in the background: only
        // reserve the space (see prepare_spare_segment).
        let seg = self.create_segment(size, false)?;
        // Not prefaulted: that would hold the WAL mutex for the whole segment's page faults;
        // the committers take them one page at a time instead.
        wal.map = seg.append_map(false);
        wal.segment = Some(seg);
        wal.offset = header_len;
        wal.size = size;
        wal.broken = false;
        Ok(())
    }

    fn segment_size(&self, need: u64) -> u64 {
        // Locations are 32-bit offsets: no file may reach 4 GiB (batches are capped at 1 GiB).
        self.options
            .wal_logfile_size
            .min(MAX_FILE_SIZE)
            .max(format::FILE_HEADER_LEN as u64 + need + 4096)
            .max(MIN_JOURNAL_SIZE)
    }

    fn create_segment(&self, size: u64, zero_fill: bool) -> Result<Arc<DataFile>> {
        let fid = next_tick(self);
        let path = wal_dir(&self.dir).join(format!("{fid:020}.wal"));
        let header = files::header(FileKind::Wal, fid, 0, size);
        let seg = DataFile::create_with(
            &path,
            &header,
            fid,
            &self.options.io_hooks,
            FailPoint::WalCreate,
            zero_fill,
        )
        .map_err(|e| files::io_error(e, "creating WAL segment"))?;
        self.files.write().insert(fid, seg.clone());
        Ok(seg)
    }

    /// Prepares the next WAL segment ahead of time (maintenance thread), so that a rotation
    /// under the WAL mutex does not wait for fallocate and fsyncs.
    fn prepare_spare_segment(&self) -> Result<()> {
        {
            let wal = self.wal.lock();
            let half_full = wal.segment.is_some() && wal.offset * 2 >= wal.size;
            if wal.spare.is_some() || !half_full {
                return Ok(());
            }
        }
        let size = self.segment_size(0);
        // Reserved (fallocate), not zero-filled: measured side by side (docs/benchmarks/http.md),
        // appends into unwritten extents cost the committer about half the kernel time of
        // appends into zero-written blocks (whose pages, once evicted under memory pressure,
        // must even be read back from disk inside the WAL mutex), the 32 MiB of zeros cost the
        // maintenance thread ~4 % of an insert load, and waitForSync writers were not slower.
        let seg = self.create_segment(size, false)?;
        let map = seg.append_map(true);
        let mut wal = self.wal.lock();
        if wal.spare.is_none() {
            wal.spare = Some((seg, size, map));
        } else {
            drop(map);
            drop(wal);
            self.files.write().remove(&seg.fid);
            seg.delete_when_unused(Vec::new());
        }
        Ok(())
    }

    pub(crate) fn commit(self: &Arc<Self>, batch: WriteBatch) -> Result<crate::CommitTicket> {
        self.check_open()?;
        if batch.ops.is_empty() {
            return Ok(crate::CommitTicket {
                tick: self.visible.load(Ordering::Acquire),
                sync: false,
                inner: None,
                populate_ahead: None,
            });
        }
        let cat = self.catalog();
        let mut cols: Vec<Arc<Collection>> = Vec::with_capacity(batch.ops.len());
        let mut sync = batch.sync;
        let mut db = None;
        for op in &batch.ops {
            let (cid, key) = match op {
                BatchOp::Put { cid, key, .. } | BatchOp::Remove { cid, key, .. } => {
                    (*cid, key.as_str())
                }
                BatchOp::Truncate { cid, .. } if batch.ops.len() == 1 => (*cid, "-"),
                BatchOp::Truncate { .. } => {
                    return Err(Error::with_message(
                        ErrorCode::Internal,
                        "a truncate must be alone in its write batch",
                    ))
                }
            };
            check_key(key)?;
            let col = match cols.last() {
                Some(c) if c.id == cid => c.clone(),
                _ => cat
                    .collections
                    .get(&cid)
                    .cloned()
                    .ok_or_else(|| Error::new(ErrorCode::DataSourceNotFound))?,
            };
            col.usable()?;
            if *db.get_or_insert(col.db) != col.db {
                return Err(Error::with_message(
                    ErrorCode::BadParameter,
                    "a write batch may only span collections of one database",
                ));
            }
            sync |= col.options.read().wait_for_sync;
            cols.push(col);
        }
        // Encode outside the WAL lock; ticks and CRCs are filled in under it.
        let mut buf = Vec::with_capacity(
            batch
                .ops
                .iter()
                .map(|op| match op {
                    BatchOp::Put { key, body, .. } => 48 + key.len() + body.len(),
                    BatchOp::Remove { key, .. } => 48 + key.len(),
                    BatchOp::Truncate { .. } => format::padded(format::TRUNCATE_LEN),
                })
                .sum(),
        );
        let mut spans = Vec::with_capacity(batch.ops.len());
        for op in &batch.ops {
            let start = buf.len();
            let (kind, len) = match op {
                BatchOp::Put {
                    cid,
                    key,
                    rev,
                    body,
                } => {
                    check_body_len(body.len())?;
                    (
                        MarkerType::Document,
                        format::encode_data(&mut buf, MarkerType::Document, *cid, rev.0, key, body),
                    )
                }
                BatchOp::Remove { cid, key, rev } => (
                    MarkerType::Remove,
                    format::encode_data(&mut buf, MarkerType::Remove, *cid, rev.0, key, &[]),
                ),
                BatchOp::Truncate { cid, rev } => (
                    MarkerType::Truncate,
                    format::encode_truncate(&mut buf, *cid, rev.0),
                ),
            };
            spans.push((start, len, kind));
        }

        check_batch_len(buf.len())?;
        self.throttle_writers()?;
        let mut wal = self.wal.lock();
        self.check_open()?;
        let appended = self.append_locked(&mut wal, &mut buf, &spans, sync)?;
        let Appended {
            fid,
            base,
            commit_tick,
            ..
        } = appended;
        let horizon = self.horizon();
        // Per collection: the change of the live count, and whether some version died (which
        // is what can give the compactor work).
        let mut touched: Vec<(Arc<Collection>, i64, bool)> = Vec::new();
        for (i, op) in batch.ops.iter().enumerate() {
            let col = &cols[i];
            let (start, len, _) = spans[i];
            let (key, version) = match op {
                BatchOp::Truncate { .. } => {
                    // Everything installed so far has a lower tick: one floor in the index
                    // instead of a removal per document. The dropped versions are garbage
                    // for the GC pass.
                    let alive = col.latest_count();
                    col.index.truncate(commit_tick, horizon);
                    col.garbage.fetch_add(alive, Ordering::Relaxed);
                    col.uncollected.fetch_add(1, Ordering::Relaxed);
                    match touched.iter_mut().find(|(c, _, _)| c.id == col.id) {
                        Some((_, d, died)) => {
                            *d -= alive as i64;
                            *died = true;
                        }
                        None => touched.push((col.clone(), -(alive as i64), true)),
                    }
                    continue;
                }
                BatchOp::Put { key, rev, .. } => (
                    key,
                    Version {
                        tick: commit_tick,
                        rev: rev.0,
                        loc: Loc {
                            fid,
                            offset: (base + start as u64) as u32,
                            len: len as u32,
                        },
                    },
                ),
                BatchOp::Remove { key, rev, .. } => (
                    key,
                    Version {
                        tick: commit_tick,
                        rev: rev.0,
                        loc: Loc::REMOVED,
                    },
                ),
            };
            let was_alive = col.index.install(key, version, horizon);
            if was_alive {
                // The previous version (or the new tombstone) is garbage for the GC pass.
                col.garbage.fetch_add(1, Ordering::Relaxed);
            }
            let delta = match (was_alive, version.is_removed()) {
                (false, false) => 1,
                (true, true) => -1,
                _ => 0,
            };
            let died = was_alive || version.is_removed();
            match touched.iter_mut().find(|(c, _, _)| c.id == col.id) {
                Some((_, d, any)) => {
                    *d += delta;
                    *any |= died;
                }
                None => touched.push((col.clone(), delta, died)),
            }
            col.uncollected.fetch_add(1, Ordering::Relaxed);
        }
        for (col, delta, died) in &touched {
            col.note_commit(commit_tick, *delta, *died, horizon);
        }
        Ok(self.publish(wal, appended, sync))
    }

    /// [`Inner::commit`] of one insert (the engine's side of a plain single-document insert)
    /// that fails, writing nothing, if the key is alive: the existence check is part of the
    /// index install's descent instead of a lookup of its own. `Ok(None)`: the key exists.
    pub(crate) fn commit_insert(
        self: &Arc<Self>,
        cid: u64,
        key: &str,
        rev: Revision,
        body: &[u8],
        sync: bool,
    ) -> Result<Option<crate::CommitTicket>> {
        self.check_open()?;
        check_key(key)?;
        let col = self.collection(cid)?;
        col.usable()?;
        let sync = sync || col.options.read().wait_for_sync;
        // Reported only if the key is not alive, so that a duplicate still answers 1210 first.
        let mut buf = Vec::new();
        let mut len = 0;
        let mut too_large = check_body_len(body.len()).err();
        if too_large.is_none() {
            buf.reserve_exact(48 + key.len() + body.len());
            len = format::encode_data(&mut buf, MarkerType::Document, cid, rev.0, key, body);
            too_large = check_batch_len(buf.len()).err();
        }
        self.throttle_writers()?;
        let mut wal = self.wal.lock();
        self.check_open()?;
        // Rotated before the key's shard is locked: a new segment may mean creating and
        // syncing a file, and the shard's readers must not wait for that.
        let retired = if too_large.is_none() {
            self.make_room(&mut wal, buf.len() as u64)?
        } else {
            None
        };
        let horizon = self.horizon();
        let mut appended = None;
        let installed = col.index.install_new(key, horizon, || {
            if let Some(err) = too_large.take() {
                return Err(err);
            }
            let a =
                self.append_locked(&mut wal, &mut buf, &[(0, len, MarkerType::Document)], sync)?;
            let version = Version {
                tick: a.commit_tick,
                rev: rev.0,
                loc: Loc {
                    fid: a.fid,
                    offset: a.base as u32,
                    len: len as u32,
                },
            };
            appended = Some(a);
            Ok::<_, Error>(version)
        });
        let appended = match (installed, appended) {
            (Ok(true), Some(appended)) => appended,
            (result, _) => {
                drop(wal);
                drop(retired);
                return result.and(Ok(None));
            }
        };
        col.uncollected.fetch_add(1, Ordering::Relaxed);
        col.note_commit(appended.commit_tick, 1, false, horizon);
        let ticket = self.publish(wal, appended, sync);
        drop(retired);
        Ok(Some(ticket))
    }

    /// Makes room for `need` bytes in the current WAL segment: seals it and starts the next
    /// one (the spare if it fits) when they do not fit or the segment is broken. Returns the
    /// sealed segment's map, for the caller to drop after releasing the WAL mutex.
    fn make_room(&self, wal: &mut WalState, need: u64) -> Result<Option<AppendMap>> {
        if !(wal.broken || wal.segment.is_none() || wal.offset + need > wal.size) {
            return Ok(None);
        }
        let retired = match wal.segment.is_some() {
            true => self.seal_segment(wal),
            false => None,
        };
        self.new_segment(wal, need)?;
        // Let the maintenance thread prepare the next segment right away.
        *self.bg.wake.lock() = true;
        self.bg.cv.notify_all();
        Ok(retired)
    }

    /// Appends a batch's encoded markers (`spans` of `buf`: start, length, kind) to the WAL,
    /// rotating to a new segment if they do not fit: takes their ticks, fills in ticks, flags
    /// and CRCs, and writes them. Under the WAL mutex.
    fn append_locked(
        &self,
        wal: &mut WalState,
        buf: &mut [u8],
        spans: &[(usize, usize, MarkerType)],
        sync: bool,
    ) -> Result<Appended> {
        let need = buf.len() as u64;
        let retired = self.make_room(wal, need)?;
        let n = spans.len() as u64;
        let durable = self.durable_tick.load(Ordering::Acquire);
        let first = self.tick.fetch_add(n, Ordering::AcqRel) + 1;
        let commit_tick = first + n - 1;
        for (i, (start, len, kind)) in spans.iter().enumerate() {
            let flags = match (i + 1 == spans.len(), sync) {
                (false, _) => 0,
                (true, false) => FLAG_COMMIT,
                (true, true) => FLAG_COMMIT | FLAG_SYNC,
            };
            format::finish_wal_marker(
                &mut buf[*start..*start + *len],
                *kind,
                flags,
                first + i as u64,
                durable,
            );
        }
        let seg = wal
            .segment
            .clone()
            .ok_or_else(|| Error::new(ErrorCode::Internal))?;
        let base = wal.offset;
        let write =
            files::check(&self.options.io_hooks, FailPoint::WalWrite).and_then(|_| {
                match wal.map.as_mut() {
                    Some(map) => map.write_at(buf, base),
                    None => std::os::unix::fs::FileExt::write_all_at(&seg.file, buf, base)
                        .map(|()| None),
                }
            });
        let populate_ahead = match write {
            Ok(ahead) => ahead,
            Err(e) => {
                // The segment may hold a partial batch without its commit flag; never append
                // after it (recovery ignores uncommitted markers at a segment's end).
                wal.broken = true;
                return Err(files::io_error(e, "writing the write-ahead log"));
            }
        };
        wal.offset += need;
        wal.written_tick = commit_tick;
        Ok(Appended {
            fid: seg.fid,
            base,
            commit_tick,
            retired,
            populate_ahead,
        })
    }

    /// Makes an appended and installed batch visible, releases the WAL mutex, and hands out
    /// its ticket.
    fn publish(
        self: &Arc<Self>,
        wal: MutexGuard<'_, WalState>,
        appended: Appended,
        sync: bool,
    ) -> crate::CommitTicket {
        self.visible.store(appended.commit_tick, Ordering::Release);
        drop(wal);
        // Unmapped outside the mutex (32 MiB of populated pages).
        drop(appended.retired);
        self.commits.fetch_add(1, Ordering::Relaxed);
        crate::CommitTicket {
            tick: appended.commit_tick,
            sync,
            inner: Some(self.clone()),
            populate_ahead: appended.populate_ahead,
        }
    }

    /// Back-pressure: while the collector lags by `wal_throttle_when_pending` sealed segments,
    /// a writer waits (outside every engine lock) for it to catch up, at most
    /// `wal_throttle_wait`, then fails with error 1236. Without it the WAL would grow without
    /// bound whenever writers outpace the collector (or the collector keeps failing).
    fn throttle_writers(&self) -> Result<()> {
        let limit = self.options.wal_throttle_when_pending;
        if limit == 0 || !self.options.background_collector {
            return Ok(());
        }
        if self.pending_segments.load(Ordering::Acquire) < limit {
            return Ok(());
        }
        let deadline = Instant::now() + self.options.wal_throttle_wait;
        let mut guard = self.throttle.lock();
        loop {
            self.check_open()?;
            if self.pending_segments.load(Ordering::Acquire) < limit {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::with_message(
                    ErrorCode::WriteThrottleTimeout,
                    format!(
                        "write-throttling timeout: {} WAL segments wait for the collector \
                         (--wal.throttle-when-pending {limit})",
                        self.pending_segments.load(Ordering::Acquire)
                    ),
                ));
            }
            *self.bg.wake.lock() = true;
            self.bg.cv.notify_all();
            // Bounded slices: a notification lost to a race costs at most one slice.
            let slice = (deadline - now).min(Duration::from_millis(50));
            self.throttle_cv.wait_for(&mut guard, slice);
        }
    }

    /// Blocks until `tick` is on stable storage.
    pub(crate) fn wait_durable(&self, tick: u64) -> Result<()> {
        let mut s = self.sync.lock();
        if s.durable >= tick {
            return Ok(());
        }
        s.waiters += 1;
        let result = loop {
            if let Some(e) = self.poisoned.read().as_ref() {
                break Err(e.clone());
            }
            if s.durable >= tick {
                break Ok(());
            }
            if self.bg.stop.load(Ordering::Acquire) && self.closed.load(Ordering::Acquire) {
                break Err(Error::new(ErrorCode::Shutdown));
            }
            if s.requested < tick {
                s.requested = tick;
            }
            self.bg_wake();
            self.sync_cv.wait_for(&mut s, Duration::from_millis(50));
        };
        s.waiters -= 1;
        result
    }

    pub(crate) fn request_sync(&self, tick: u64) {
        let mut s = self.sync.lock();
        if s.requested < tick {
            s.requested = tick;
        }
        drop(s);
        self.syncer_cv.notify_one();
    }

    pub(crate) async fn wait_durable_async(&self, tick: u64) -> Result<()> {
        let mut rx = self.durable_tx.subscribe();
        struct Waiting<'a>(&'a Inner);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.sync.lock().waiters -= 1;
            }
        }
        self.sync.lock().waiters += 1;
        let _waiting = Waiting(self);
        self.request_sync(tick);
        let _ = rx.wait_for(|(d, failed)| *d >= tick || *failed).await;
        if let Some(e) = self.poisoned.read().as_ref() {
            return Err(e.clone());
        }
        if self.sync.lock().durable >= tick {
            Ok(())
        } else {
            Err(Error::new(ErrorCode::Shutdown))
        }
    }

    fn bg_wake(&self) {
        self.syncer_cv.notify_one();
    }

    /// One round of the syncer: fdatasync every segment with unsynced writes.
    fn sync_round(&self) -> Result<bool> {
        let (target, segs) = {
            let mut wal = self.wal.lock();
            let mut segs: Vec<Arc<DataFile>> = std::mem::take(&mut wal.unsynced);
            if let Some(s) = &wal.segment {
                segs.push(s.clone());
            }
            (wal.written_tick, segs)
        };
        if target <= self.sync.lock().durable {
            return Ok(false);
        }
        for seg in &segs {
            let r = files::check(&self.options.io_hooks, FailPoint::WalSync)
                .and_then(|_| seg.file.sync_data());
            if let Err(e) = r {
                let err = files::io_error(e, "fdatasync of the write-ahead log");
                // After a failed fdatasync the kernel may have dropped the dirty pages: never
                // retry and pretend success (fsyncgate); stop accepting writes instead.
                self.poison(err.clone());
                return Err(err);
            }
            self.wal_syncs.fetch_add(1, Ordering::Relaxed);
        }
        let mut s = self.sync.lock();
        if target > s.durable {
            s.durable = target;
            self.durable_tick.store(target, Ordering::Release);
        }
        drop(s);
        self.sync_cv.notify_all();
        self.durable_tx.send_modify(|v| v.0 = v.0.max(target));
        Ok(true)
    }

    // ---------------------------------------------------------------- reads

    fn read_marker(&self, loc: Loc) -> Result<Option<Bytes>> {
        let Some(file) = self.file(loc.fid) else {
            return Ok(None);
        };
        // Memory-mapped reads cost no syscall and no copy; `pread` stays as the fallback
        // for a file that could not be mapped.
        if let Some(bytes) = file.mapped_range(loc.offset as u64, loc.len as usize) {
            return Ok(Some(bytes));
        }
        let mut buf = vec![0u8; loc.len as usize];
        std::os::unix::fs::FileExt::read_exact_at(&file.file, &mut buf, loc.offset as u64)
            .map_err(|e| files::io_error(e, "reading a document"))?;
        Ok(Some(Bytes::from(buf)))
    }

    fn read_version(
        &self,
        col: &Collection,
        key: &str,
        tick: u64,
    ) -> Result<Option<StoredDocument>> {
        // A location can move (collector, compactor) between looking it up and reading the
        // file; the old file then is gone from the table and the lookup is simply repeated.
        for _ in 0..64 {
            let Some(v) = col.index.get(key, tick) else {
                return Ok(None);
            };
            if let Some(doc) = self.read_at(col, v)? {
                return Ok(Some(doc));
            }
            std::thread::yield_now();
        }
        Err(Error::with_message(
            ErrorCode::Internal,
            "document location kept moving",
        ))
    }

    fn read_at(&self, col: &Collection, v: Version) -> Result<Option<StoredDocument>> {
        let Some(buf) = self.read_marker(v.loc)? else {
            return Ok(None);
        };
        let bad = |why: &str| {
            corrupt(format!(
                "collection {}: marker at file {} offset {} is {why}",
                col.id, v.loc.fid, v.loc.offset
            ))
        };
        let m = format::decode(&buf).map_err(|_| bad("damaged (checksum mismatch)"))?;
        let body = format::data_body(&m).map_err(|_| bad("malformed"))?;
        let off = body.doc_offset;
        let len = m.len;
        let rev = body.rev;
        let bytes = buf.slice(off..len);
        Ok(Some(StoredDocument {
            rev: Revision(rev),
            body: bytes,
        }))
    }

    // ---------------------------------------------------------------- collector

    /// Moves committed markers of sealed WAL segments into collection journals.
    fn collect(&self, include_active: bool) -> Result<()> {
        let mut scratch = self.collect_lock.lock();
        let mut retired = None;
        let segments = {
            let mut wal = self.wal.lock();
            if include_active {
                let has_data = wal.segment.is_some()
                    && wal.offset > format::padded(format::FILE_HEADER_LEN) as u64;
                if has_data {
                    retired = self.seal_segment(&mut wal);
                }
            }
            wal.sealed.clone()
        };
        drop(retired);
        for seg in segments {
            if self.bg.stop.load(Ordering::Acquire) {
                // Shutting down: the rest stays in the WAL and is collected after restart.
                break;
            }
            // Long collection passes must not starve the writers of prepared segments.
            if let Err(e) = self.prepare_spare_segment() {
                tracing::warn!("preparing the next WAL segment: {}", e);
            }
            let retain = self.collect_segment(&seg, &mut scratch)?;
            let mut wal = self.wal.lock();
            wal.sealed.retain(|s| s.fid != seg.fid);
            self.pending_segments
                .store(wal.sealed.len(), Ordering::Release);
            drop(self.throttle.lock());
            self.throttle_cv.notify_all();
            if retain {
                // It holds data of a collection that failed to open: keep the segment for
                // the next start (possibly in salvage mode) instead of losing that data.
                wal.retained.push(seg);
                continue;
            }
            drop(wal);
            self.files.write().remove(&seg.fid);
            seg.delete_when_unused(Vec::new());
        }
        Ok(())
    }

    /// Returns whether the segment must be kept (it holds data of a corrupt collection).
    fn collect_segment(&self, seg: &Arc<DataFile>, scratch: &mut CollectorScratch) -> Result<bool> {
        let mut retain = false;
        let image = seg
            .image()
            .map_err(|e| files::io_error(e, "reading a WAL segment"))?;
        // A segment with damage followed by intact markers got this far only because
        // recovery salvaged it (or it was damaged since): copy every intact batch, as the
        // replay did, so that nothing the index holds is lost when the segment is unlinked.
        presize(&mut scratch.found, image.len());
        presize(&mut scratch.keyed, image.len());
        presize(&mut scratch.moved, image.len());
        let scan = format::scan_into(&image, std::mem::take(&mut scratch.found));
        let salvage = scan.end == ScanEnd::Corrupt;
        let found = if salvage {
            tracing::error!(
                "WAL segment {} is damaged: collecting every intact batch",
                seg.fid
            );
            committed_of(format::salvage(&image), true)
        } else {
            // The committed markers of a clean scan are its prefix up to the last COMMIT
            // (what `committed_of` would copy into a new vector).
            let mut markers = scan.markers;
            let end = markers
                .iter()
                .rposition(|m| m.flags & FLAG_COMMIT != 0)
                .map_or(0, |i| i + 1);
            markers.truncate(end);
            markers
        };
        // Every marker in `found` passed its CRC check in the scan (or salvage) above: the
        // decodes below skip it (it was three more CRC passes over the segment).
        let decode = |offset: usize| format::decode_trusted(&image[offset..]);
        let keyed = &mut scratch.keyed;
        keyed.clear();
        for (i, p) in found.iter().enumerate() {
            let Ok(marker) = decode(p.offset) else {
                continue;
            };
            let Some((cid, _)) = format::marker_owner(&marker) else {
                continue;
            };
            keyed.push((cid, i as u32));
        }
        // Grouped by collection, log order within each (pairs are unique, so the unstable
        // sort is deterministic); one collection written, the usual case, needs no sort.
        if keyed.windows(2).any(|w| w[0].0 != w[1].0) {
            keyed.sort_unstable();
        }
        let cat = self.catalog();
        let mut group_start = 0;
        while group_start < keyed.len() {
            let cid = keyed[group_start].0;
            let group_end = group_start
                + keyed[group_start..]
                    .iter()
                    .position(|(c, _)| *c != cid)
                    .unwrap_or(keyed.len() - group_start);
            let group = &keyed[group_start..group_end];
            group_start = group_end;
            let Some(col) = cat.collections.get(&cid) else {
                continue;
            };
            if col.status.is_err() {
                retain = true;
                continue;
            }
            if col.dropped.load(Ordering::Acquire) {
                continue;
            }
            // Excludes compaction of this collection until the index points at the copies:
            // a journal sealed here must not be compacted while its markers still look
            // unreferenced (the index would then be repointed into a deleted file).
            let _no_compaction = col.compact_lock.lock();
            let mut cf = col.files.lock();
            let collected = col.collected_tick.load(Ordering::Acquire);
            let markers = || {
                group
                    .iter()
                    .map(|(_, i)| &found[*i as usize])
                    .filter(move |m| m.tick > collected)
            };
            if markers().next().is_none() {
                continue;
            }
            let start_state = cf.journal.as_ref().map(|j| JournalState {
                fid: j.file.fid,
                offset: j.offset,
                count: j.count,
                max_tick: j.max_tick,
                crc_acc: j.crc_acc,
                stats: cf
                    .stats
                    .get(&j.file.fid)
                    .map(|st| (st.docs, st.doc_bytes, st.removes)),
            });
            let moved = &mut scratch.moved;
            moved.clear();
            // Bytes and counters are applied to the journal only after they were written, so
            // a failed write leaves the journal exactly as it was (no gap, no lost offset).
            let mut pend = Pending::default();
            let mut truncate_tick = 0u64;
            let mut max_tick = 0u64;
            let mut n = 0u64;
            for m in markers() {
                let bytes = &image[m.offset..m.offset + format::padded(m.len)];
                let need = bytes.len() as u64;
                let fits = cf.journal.as_ref().is_some_and(|j| {
                    j.offset + pend.len + need + format::FOOTER_LEN as u64 <= j.size
                });
                if !fits {
                    self.flush_journal(&mut cf, &mut pend, &image)?;
                    if cf.journal.is_some() {
                        // The MANIFEST rewrite of create_journal lists the sealed file too:
                        // one rewrite (two fsyncs) per journal switch instead of two.
                        self.seal_journal_unlisted(col, &mut cf)?;
                    }
                    self.create_journal(col, &mut cf, need)?;
                }
                let Some(j) = cf.journal.as_ref() else {
                    return Err(Error::new(ErrorCode::Internal));
                };
                let new_loc = Loc {
                    fid: j.file.fid,
                    offset: (j.offset + pend.len) as u32,
                    len: m.len as u32,
                };
                pend.push(m.offset..m.offset + bytes.len());
                pend.count += 1;
                pend.max_tick = pend.max_tick.max(m.tick);
                pend.crcs.extend_from_slice(&m.crc.to_le_bytes());
                max_tick = max_tick.max(m.tick);
                n += 1;
                if m.kind == MarkerType::Truncate {
                    truncate_tick = truncate_tick.max(m.tick);
                } else if m.kind == MarkerType::Document {
                    let marker = decode(m.offset).map_err(|_| corrupt("WAL marker".into()))?;
                    let body =
                        format::data_body(&marker).map_err(|_| corrupt("WAL marker".into()))?;
                    pend.docs += 1;
                    pend.doc_bytes += m.len as u64;
                    moved.push((
                        PrimaryIndex::shard_of(body.key),
                        Loc {
                            fid: seg.fid,
                            offset: m.offset as u32,
                            len: m.len as u32,
                        },
                        new_loc,
                    ));
                } else {
                    pend.removes += 1;
                }
            }
            self.flush_journal(&mut cf, &mut pend, &image)?;
            if let Some(j) = &cf.journal {
                let synced = files::check(&self.options.io_hooks, FailPoint::JournalSync)
                    .and_then(|_| j.file.file.sync_data());
                if let Err(e) = synced {
                    // After a failed fdatasync the written pages may be gone: forget them, so
                    // that the retry rewrites the same range instead of appending behind a
                    // possible hole (the WAL segment stays until a retry succeeds).
                    rewind_journal(&mut cf, &start_state);
                    return Err(files::io_error(e, "fdatasync of a journal"));
                }
            }
            let previous = col.collected_tick.load(Ordering::Acquire);
            if max_tick > previous {
                col.collected_tick.store(max_tick, Ordering::Release);
                // Persisted so that a restart does not replay (and collect again) what is
                // already in the journals: WAL segments retained for another collection are
                // replayed at every start.
                if let Err(e) = self.write_manifest(col, &cf) {
                    // Not recorded: the retry collects these markers again (duplicates are
                    // dead copies with the same ticks, harmless).
                    col.collected_tick.store(previous, Ordering::Release);
                    return Err(e);
                }
            }
            // Durable in the journal and listed: compaction may now drop what it covers.
            if col
                .truncate_durable
                .fetch_max(truncate_tick, Ordering::AcqRel)
                < truncate_tick
            {
                col.dirty.store(true, Ordering::Release);
            }
            drop(cf);
            // Shard by shard, a bounded run per lock acquisition; each version is found by
            // its WAL location, so the order of the moves does not matter for correctness.
            // Within a shard in log order: the keys are read back from the segment image
            // front to back, and increasing keys stay adjacent in the index.
            moved.sort_unstable_by_key(|(shard, from, _)| (*shard, from.offset));
            for run in moved.chunk_by(|a, b| a.0 == b.0) {
                for part in run.chunks(REPOINT_RUN) {
                    col.index.repoint_in_shard(
                        part[0].0,
                        part.iter().filter_map(|(_, from, to)| {
                            let marker = decode(from.offset as usize).ok()?;
                            Some((format::data_body(&marker).ok()?.key, *from, *to))
                        }),
                    );
                }
            }
            let _ = col
                .uncollected
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                    Some(u.saturating_sub(n))
                });
        }
        scratch.found = found;
        recycle(&mut scratch.found);
        recycle(&mut scratch.keyed);
        recycle(&mut scratch.moved);
        Ok(retain)
    }

    /// Writes the pending markers (ranges of `image`) at the journal's end and applies their
    /// counters. A single range is written straight from the image; several (collections
    /// interleaved in the WAL) are gathered first, so that a journal run is still one `pwrite`.
    fn flush_journal(&self, cf: &mut ColFiles, pend: &mut Pending, image: &[u8]) -> Result<()> {
        if pend.runs.is_empty() {
            return Ok(());
        }
        let Some(j) = cf.journal.as_mut() else {
            return Err(Error::new(ErrorCode::Internal));
        };
        let gathered;
        let bytes: &[u8] = match pend.runs.as_slice() {
            [one] => &image[one.clone()],
            runs => {
                let mut buf = Vec::with_capacity(pend.len as usize);
                for run in runs {
                    buf.extend_from_slice(&image[run.clone()]);
                }
                gathered = buf;
                &gathered
            }
        };
        files::check(&self.options.io_hooks, FailPoint::JournalWrite)
            .and_then(|_| std::os::unix::fs::FileExt::write_all_at(&j.file.file, bytes, j.offset))
            .map_err(|e| files::io_error(e, "writing a journal"))?;
        j.offset += pend.len;
        j.count += pend.count;
        j.max_tick = j.max_tick.max(pend.max_tick);
        j.crc_acc = crc32c::crc32c_append(j.crc_acc, &pend.crcs);
        let fid = j.file.fid;
        let st = cf.stats.entry(fid).or_insert(FileStats {
            docs: 0,
            doc_bytes: 0,
            removes: 0,
            size: 0,
            kind: StatKind::Journal,
            max_tick: 0,
        });
        st.max_tick = st.max_tick.max(pend.max_tick);
        st.docs += pend.docs;
        st.doc_bytes += pend.doc_bytes;
        st.removes += pend.removes;
        *pend = Pending::default();
        Ok(())
    }

    fn create_journal(&self, col: &Collection, cf: &mut ColFiles, need: u64) -> Result<()> {
        let base = col.journal_size(self.options.journal_size_default);
        let min = (format::padded(format::FILE_HEADER_LEN) + format::FOOTER_LEN) as u64 + need;
        let size = base.max(min.div_ceil(4096) * 4096);
        let fid = next_tick(self);
        std::fs::create_dir_all(&col.dir)
            .map_err(|e| files::io_error(e, "creating a collection directory"))?;
        let path = journal_path(&col.dir, fid);
        let header = files::header(FileKind::Journal, fid, col.id, size);
        let file = DataFile::create(
            &path,
            &header,
            fid,
            &self.options.io_hooks,
            FailPoint::JournalCreate,
        )
        .map_err(|e| files::io_error(e, "creating a journal"))?;
        cf.journal = Some(Journal {
            file: file.clone(),
            offset: format::padded(format::FILE_HEADER_LEN) as u64,
            size,
            count: 0,
            max_tick: 0,
            crc_acc: 0,
        });
        if let Err(e) = self.write_manifest(col, cf) {
            cf.journal = None;
            file.delete_when_unused(Vec::new());
            return Err(e);
        }
        cf.stats.insert(
            fid,
            FileStats {
                docs: 0,
                doc_bytes: 0,
                removes: 0,
                size,
                kind: StatKind::Journal,
                max_tick: 0,
            },
        );
        self.files.write().insert(fid, file);
        Ok(())
    }

    /// Footer, fdatasync, rename to datafile, hint file, MANIFEST. Idempotent on retry.
    fn seal_journal(&self, col: &Collection, cf: &mut ColFiles) -> Result<()> {
        let Some(journal) = self.seal_journal_unlisted(col, cf)? else {
            return Ok(());
        };
        let file = cf.datafiles.last().cloned();
        if let Err(e) = self.write_manifest(col, cf) {
            // Undo in memory so that a retry repeats the whole (idempotent) seal.
            cf.datafiles.pop();
            if let (Some(file), Some(st)) = (&file, cf.stats.get_mut(&journal.file.fid)) {
                st.kind = StatKind::Journal;
                st.size = file.len();
            }
            cf.journal = Some(journal);
            return Err(e);
        }
        Ok(())
    }

    /// The seal without the MANIFEST rewrite: the caller rewrites it next. Until then the
    /// MANIFEST still names the file as the journal; a crash in between is the case recovery
    /// already handles ("a sealed journal whose MANIFEST edit was lost": it finds the file
    /// under either name, sees the footer and lists it as a datafile). Returns the journal
    /// state it replaced, for an undo.
    ///
    /// Ordering argument for the fsyncs left out: the footer and data are fdatasynced before
    /// anything can name the file a datafile; the rename needs no directory fsync of its own
    /// because the MANIFEST rewrite that follows fsyncs the same directory, and recovery
    /// opens a listed fid under either name; the hint file is a validated cache (CRC, length)
    /// that recovery replaces by a scan when a power loss tore or lost it.
    fn seal_journal_unlisted(
        &self,
        col: &Collection,
        cf: &mut ColFiles,
    ) -> Result<Option<Journal>> {
        let Some(j) = cf.journal.as_ref() else {
            return Ok(None);
        };
        let footer = format::footer(
            &Footer {
                count: j.count,
                max_tick: j.max_tick,
                crc_of_crcs: j.crc_acc,
            },
            j.max_tick,
        );
        let file = j.file.clone();
        let offset = j.offset;
        let io = |e| files::io_error(e, "sealing a journal");
        files::check(&self.options.io_hooks, FailPoint::Seal).map_err(io)?;
        std::os::unix::fs::FileExt::write_all_at(&file.file, &footer, offset).map_err(io)?;
        file.file.sync_data().map_err(io)?;
        file.rename_unsynced(&datafile_path(&col.dir, file.fid))
            .map_err(io)?;
        self.write_hint(col, &file)?;
        let journal = cf.journal.take();
        cf.datafiles.push(file.clone());
        // A new datafile may be small enough to merge, or hold versions that died while it
        // was a journal.
        col.dirty.store(true, Ordering::Release);
        if let Some(st) = cf.stats.get_mut(&file.fid) {
            st.kind = StatKind::Datafile;
            st.size = file.len();
        }
        Ok(journal)
    }

    fn write_hint(&self, col: &Collection, file: &DataFile) -> Result<()> {
        let image = file
            .image()
            .map_err(|e| files::io_error(e, "reading a datafile for its hint file"))?;
        let mut scratch = self.hint_scratch.lock();
        let HintScratch { found, encoded } = &mut *scratch;
        presize(found, image.len());
        // ~36 bytes per entry, one entry per ~150 bytes of markers.
        encoded.reserve((image.len() / 4).min(SCRATCH_KEEP * 40));
        let scan = format::scan_into(&image, std::mem::take(found));
        files::encode_hints_into(encoded, file.fid, hint_entries(&image, &scan.markers));
        *found = scan.markers;
        recycle(found);
        let path = hint_path(&col.dir, file.fid);
        let written =
            files::replace_unsynced(&path, encoded, &self.options.io_hooks, FailPoint::Seal)
                .map_err(|e| files::io_error(e, "writing a hint file"));
        // Bytes, not entries: ~40 per entry.
        if encoded.capacity() > SCRATCH_KEEP * 40 {
            *encoded = Vec::new();
        }
        written
    }

    // ---------------------------------------------------------------- compaction

    fn file_stats_view(&self, col: &Collection) -> Vec<FileStat> {
        let cf = col.files.lock();
        let datafiles: Vec<(u64, u64)> = cf
            .datafiles
            .iter()
            .map(|f| (f.fid, cf.stats.get(&f.fid).map(|s| s.size).unwrap_or(0)))
            .collect();
        let totals: HashMap<u64, (u64, u64, u64)> = cf
            .stats
            .iter()
            .map(|(fid, s)| (*fid, (s.docs, s.doc_bytes, s.removes)))
            .collect();
        drop(cf);
        let mut alive: HashMap<u64, (u64, u64)> = HashMap::new();
        let visible = self.visible.load(Ordering::Acquire);
        let floor = col.index.floor(visible);
        col.index.for_each_chunked(|_, e| {
            if e.head.tick <= visible && e.head.tick > floor && !e.head.is_removed() {
                let a = alive.entry(e.head.loc.fid).or_default();
                a.0 += 1;
                a.1 += e.head.loc.len as u64;
            }
        });
        datafiles
            .into_iter()
            .map(|(fid, size)| {
                let (docs, bytes, removes) = totals.get(&fid).copied().unwrap_or_default();
                let (alive_count, alive_bytes) = alive.get(&fid).copied().unwrap_or_default();
                FileStat {
                    fid,
                    file_size: size,
                    alive_count,
                    alive_bytes,
                    dead_count: docs.saturating_sub(alive_count),
                    dead_bytes: bytes.saturating_sub(alive_bytes),
                    removes,
                }
            })
            .collect()
    }

    fn compact_collection(&self, col: &Arc<Collection>, force: bool) -> Result<CompactionReport> {
        col.usable()?;
        let mut last = col.compact_lock.lock();
        let mut report = CompactionReport::default();
        let journal_size = col.journal_size(self.options.journal_size_default);
        // Each round merges one group; bounded by the number of datafiles.
        let rounds = col.files.lock().datafiles.len();
        if rounds == 0 {
            *col.compaction_status.lock() = "no datafiles to compact".to_string();
            return Ok(report);
        }
        // Datafiles wholly below a durable truncate go first, all at once and unread.
        // The pass walks every key: skipped when no key has anything it could drop, which is
        // the compactor's periodic check of a collection that only gets inserts.
        if col.index.may_hold_garbage() {
            col.index.gc(self.horizon());
        }
        let truncated: Vec<u64> = {
            let floor = col.truncate_durable.load(Ordering::Acquire);
            let cf = col.files.lock();
            cf.datafiles
                .iter()
                .filter(|f| cf.stats.get(&f.fid).is_some_and(|st| st.max_tick < floor))
                .map(|f| f.fid)
                .collect()
        };
        if !truncated.is_empty() {
            let r = self.compact_group(col, &truncated)?;
            report.files_compacted += r.files_compacted;
            report.files_written += r.files_written;
            report.bytes_reclaimed += r.bytes_reclaimed;
            report.markers_kept += r.markers_kept;
            report.markers_dropped += r.markers_dropped;
        }
        for _ in 0..rounds {
            // Versions no snapshot can see any more must not keep their markers alive.
            if col.index.may_hold_garbage() {
                col.index.gc(self.horizon());
            }
            let stats = self.file_stats_view(col);
            let groups = plan(&stats, &self.options.compaction, journal_size, force);
            let Some(group) = groups.into_iter().next() else {
                break;
            };
            let r = self.compact_group(col, &group)?;
            report.files_compacted += r.files_compacted;
            report.files_written += r.files_written;
            report.bytes_reclaimed += r.bytes_reclaimed;
            report.markers_kept += r.markers_kept;
            report.markers_dropped += r.markers_dropped;
        }
        *last = Some(Instant::now());
        *col.compaction_status.lock() = if report.files_compacted > 0 {
            format!(
                "compacted {} datafile(s), reclaimed {} bytes",
                report.files_compacted, report.bytes_reclaimed
            )
        } else {
            "no compaction needed".to_string()
        };
        Ok(report)
    }

    fn compact_group(&self, col: &Arc<Collection>, group: &[u64]) -> Result<CompactionReport> {
        let mut report = CompactionReport::default();
        let (inputs, keep_tombstones) = {
            let cf = col.files.lock();
            let inputs: Vec<Arc<DataFile>> = cf
                .datafiles
                .iter()
                .filter(|f| group.contains(&f.fid))
                .cloned()
                .collect();
            // A removal must survive while an older file may still hold the removed key, and
            // while a WAL segment that will be replayed at the next start (retained for a
            // collection that failed to open, or not yet collected) may hold one.
            let first_pos = cf
                .datafiles
                .iter()
                .position(|f| group.contains(&f.fid))
                .unwrap_or(0);
            let wal_has_old_data = {
                let wal = self.wal.lock();
                !wal.retained.is_empty() || !wal.sealed.is_empty()
            };
            (inputs, first_pos > 0 || wal_has_old_data)
        };
        if inputs.len() != group.len() {
            return Ok(report);
        }
        let input_fids: HashSet<u64> = group.iter().copied().collect();
        let mut referenced: HashSet<(u64, u32)> = HashSet::new();
        col.index.for_each_chunked(|_, e| {
            for v in std::iter::once(&e.head).chain(e.older().iter()) {
                if input_fids.contains(&v.loc.fid) {
                    referenced.insert((v.loc.fid, v.loc.offset));
                }
            }
        });
        let truncate_floor = col.truncate_durable.load(Ordering::Acquire);
        let wholly_truncated = referenced.is_empty() && {
            let cf = col.files.lock();
            group.iter().all(|fid| {
                cf.stats
                    .get(fid)
                    .is_some_and(|st| st.max_tick < truncate_floor)
            })
        };
        let fid = next_tick(self);
        let mut out = Vec::new();
        let mut moved: Vec<(String, Loc, Loc)> = Vec::new();
        let header_len = format::padded(format::FILE_HEADER_LEN);
        let mut count = 0u64;
        let mut max_tick = 0u64;
        let mut crc_acc = 0u32;
        let mut found_refs = 0usize;
        let mut stats = FileStats {
            docs: 0,
            doc_bytes: 0,
            removes: 0,
            size: 0,
            kind: StatKind::Datafile,
            max_tick: 0,
        };
        let mut images: Vec<(Vec<u8>, Vec<format::Found>)> = Vec::with_capacity(inputs.len());
        for input in &inputs {
            if wholly_truncated {
                // Nothing in it can be needed: no snapshot references it, and every marker
                // is below a truncate that is durable in a later file. Dropped unread.
                report.markers_dropped += col
                    .files
                    .lock()
                    .stats
                    .get(&input.fid)
                    .map(|st| st.docs + st.removes)
                    .unwrap_or(0);
                report.bytes_reclaimed += input.len();
                images.push((Vec::new(), Vec::new()));
                continue;
            }
            let image = input
                .read_all()
                .map_err(|e| files::io_error(e, "reading a datafile for compaction"))?;
            let found = match self.options.ignore_datafile_errors {
                true => format::salvage(&image),
                false => {
                    let scan = format::scan(&image);
                    // Hint files were trusted at startup: this is where a damaged datafile
                    // (a lost tail included) must be caught before it is replaced.
                    if scan.end != ScanEnd::Sealed || !footer_ok(&scan) {
                        return Err(corrupt(format!(
                            "collection {}: datafile {} is damaged at offset {} (compaction \
                             refused; start with --database.ignore-datafile-errors to salvage)",
                            col.id,
                            input.fid,
                            scan.bad_offset.unwrap_or(scan.valid_end)
                        )));
                    }
                    scan.markers
                }
            };
            images.push((image, found));
        }
        // Which removals to keep is decided from the same `referenced` set that decides which
        // documents are kept, never from the live index: a snapshot released and a GC pass
        // during this copy would otherwise drop the removal of a document version copied
        // while the snapshot still pinned it, and that version would come back at restart.
        let referenced_ref = &referenced;
        let keep = select_markers(
            inputs
                .iter()
                .zip(&images)
                .flat_map(|(input, (image, found))| {
                    found.iter().map(move |m| MarkerInfo {
                        kind: m.kind,
                        tick: m.tick,
                        key: marker_key(&image[m.offset..]),
                        referenced: referenced_ref.contains(&(input.fid, m.offset as u32)),
                    })
                }),
            keep_tombstones,
            truncate_floor,
        );
        let mut keep = keep.into_iter();
        for (input, (image, found)) in inputs.iter().zip(&images) {
            for m in found.iter().copied() {
                let bytes = &image[m.offset..m.offset + format::padded(m.len)];
                if !keep.next().unwrap_or(true) {
                    report.markers_dropped += 1;
                    report.bytes_reclaimed += bytes.len() as u64;
                    continue;
                }
                let new_off = header_len + out.len();
                out.extend_from_slice(bytes);
                count += 1;
                max_tick = max_tick.max(m.tick);
                crc_acc = crc32c::crc32c_append(crc_acc, &m.crc.to_le_bytes());
                report.markers_kept += 1;
                if m.kind == MarkerType::Truncate {
                    // Counted neither as a document nor as a removal.
                } else if m.kind == MarkerType::Document {
                    found_refs += 1;
                    stats.docs += 1;
                    stats.doc_bytes += m.len as u64;
                    let marker =
                        format::decode(bytes).map_err(|_| corrupt("datafile marker".into()))?;
                    let body = format::data_body(&marker)
                        .map_err(|_| corrupt("datafile marker".into()))?;
                    moved.push((
                        body.key.to_string(),
                        Loc {
                            fid: input.fid,
                            offset: m.offset as u32,
                            len: m.len as u32,
                        },
                        Loc {
                            fid,
                            offset: new_off as u32,
                            len: m.len as u32,
                        },
                    ));
                } else {
                    stats.removes += 1;
                }
            }
        }
        if found_refs < referenced.len() {
            // Some document the index points to is not (intact) in the inputs: replacing them
            // would lose it. Leave everything as it is and report.
            return Err(corrupt(format!(
                "collection {}: {} referenced document(s) not found intact in datafiles {:?}; \
                 compaction refused",
                col.id,
                referenced.len() - found_refs,
                group
            )));
        }
        let io = |e| files::io_error(e, "writing a compaction file");
        let mut result: Option<Arc<DataFile>> = None;
        if count > 0 {
            let size = (header_len + out.len() + format::FOOTER_LEN) as u64;
            let tmp = col.dir.join(format!("compaction-{fid}.db"));
            col.compacting.store(size, Ordering::Release);
            let _compacting = ResetOnDrop(&col.compacting);
            let header = files::header(FileKind::Compaction, fid, col.id, size);
            let file = DataFile::create(
                &tmp,
                &header,
                fid,
                &self.options.io_hooks,
                FailPoint::CompactionWrite,
            )
            .map_err(io)?;
            out.extend_from_slice(&format::footer(
                &Footer {
                    count,
                    max_tick,
                    crc_of_crcs: crc_acc,
                },
                max_tick,
            ));
            let written = files::check(&self.options.io_hooks, FailPoint::CompactionWrite)
                .and_then(|_| {
                    std::os::unix::fs::FileExt::write_all_at(&file.file, &out, header_len as u64)
                })
                .and_then(|_| file.file.sync_data())
                .and_then(|_| file.rename(&datafile_path(&col.dir, fid)));
            if let Err(e) = written {
                file.delete_when_unused(Vec::new());
                return Err(io(e));
            }
            if let Err(e) = self.write_hint(col, &file) {
                file.delete_when_unused(vec![hint_path(&col.dir, fid)]);
                return Err(e);
            }
            stats.size = file.len();
            stats.max_tick = max_tick;
            result = Some(file);
        }
        // The swap: one MANIFEST rewrite makes the result live and the inputs garbage.
        {
            let mut cf = col.files.lock();
            let before = cf.datafiles.clone();
            let pos = cf
                .datafiles
                .iter()
                .position(|f| input_fids.contains(&f.fid))
                .unwrap_or(0);
            cf.datafiles.retain(|f| !input_fids.contains(&f.fid));
            if let Some(r) = &result {
                cf.datafiles.insert(pos, r.clone());
            }
            let swapped = files::check(&self.options.io_hooks, FailPoint::CompactionSwap)
                .map_err(|e| files::io_error(e, "compaction swap"))
                .and_then(|_| self.write_manifest(col, &cf));
            if let Err(e) = swapped {
                cf.datafiles = before;
                if let Some(r) = &result {
                    r.delete_when_unused(vec![hint_path(&col.dir, r.fid)]);
                }
                return Err(e);
            }
            if let Some(r) = &result {
                cf.stats.insert(r.fid, stats);
                self.files.write().insert(r.fid, r.clone());
            }
            for f in &inputs {
                cf.stats.remove(&f.fid);
            }
        }
        for (key, from, to) in moved {
            col.index.repoint(&key, from, to);
        }
        let mut table = self.files.write();
        for f in &inputs {
            table.remove(&f.fid);
            f.delete_when_unused(vec![hint_path(&col.dir, f.fid)]);
        }
        drop(table);
        report.files_compacted = inputs.len();
        report.files_written = usize::from(result.is_some());
        Ok(report)
    }

    fn figures(&self, col: &Collection) -> Figures {
        let visible = self.visible.load(Ordering::Acquire);
        let floor = col.index.floor(visible);
        let mut f = Figures::default();
        let mut alive_in_files: HashMap<u64, (u64, u64)> = HashMap::new();
        let mut index_memory = 0u64;
        // One chunked pass for counts and memory: no shard is read-locked for longer than a
        // chunk (writers of that shard wait at most that long).
        col.index.for_each_chunked(|k, e| {
            index_memory += crate::index::entry_memory(k, e);
            if e.head.tick <= visible && e.head.tick > floor && !e.head.is_removed() {
                f.alive_count += 1;
                f.alive_size += e.head.loc.len as u64;
                let a = alive_in_files.entry(e.head.loc.fid).or_default();
                a.0 += 1;
                a.1 += e.head.loc.len as u64;
            }
        });
        let cf = col.files.lock();
        for (fid, s) in &cf.stats {
            let (ac, ab) = alive_in_files.get(fid).copied().unwrap_or_default();
            f.dead_count += s.docs.saturating_sub(ac);
            f.dead_size += s.doc_bytes.saturating_sub(ab);
            f.dead_deletion += s.removes;
            let slot = match s.kind {
                StatKind::Datafile => &mut f.datafiles,
                StatKind::Journal => &mut f.journals,
            };
            slot.count += 1;
            slot.file_size += s.size;
        }
        drop(cf);
        let compacting = col.compacting.load(Ordering::Acquire);
        if compacting > 0 {
            f.compactors = crate::FileFigures {
                count: 1,
                file_size: compacting,
            };
        }
        f.uncollected_logfile_entries = col.uncollected.load(Ordering::Acquire);
        f.index_memory = index_memory;
        f.last_tick = col.last_tick.load(Ordering::Acquire);
        f.journal_size = col.journal_size(self.options.journal_size_default);
        f.compaction_status = col.compaction_status.lock().clone();
        f
    }
}

/// Zeroes a gauge when a scope ends, however it ends.
struct ResetOnDrop<'a>(&'a AtomicU64);

impl Drop for ResetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

/// Whether a sealed file's footer matches its markers (count and CRC of their CRCs).
fn footer_ok(scan: &format::Scan) -> bool {
    let Some(footer) = scan.footer else {
        return false;
    };
    let crcs: Vec<u8> = scan
        .markers
        .iter()
        .flat_map(|m| m.crc.to_le_bytes())
        .collect();
    footer.count == scan.markers.len() as u64 && footer.crc_of_crcs == crc32c::crc32c(&crcs)
}

/// The key of a data marker at the start of `marker` (`None` if it does not decode).
fn marker_key(marker: &[u8]) -> Option<String> {
    let m = format::decode(marker).ok()?;
    Some(format::data_body(&m).ok()?.key.to_string())
}

/// What compaction needs to know about one marker of its inputs (in file order).
struct MarkerInfo {
    kind: MarkerType,
    tick: u64,
    key: Option<String>,
    /// Some version in the index (any snapshot's) points at this document marker.
    referenced: bool,
}

/// Decides which markers of a compaction group survive: referenced documents, removals
/// that `keep_all_removals` protects (an older file or a WAL segment may hold the key) or
/// that delete an older document version this result keeps, and the truncate marker at
/// `truncate_floor`, the newest durable truncate. Removals and truncates below that floor
/// are dropped: the truncate, which stays in a listed file, already covers what they
/// delete.
fn select_markers(
    markers: impl Iterator<Item = MarkerInfo>,
    keep_all_removals: bool,
    truncate_floor: u64,
) -> Vec<bool> {
    let markers: Vec<MarkerInfo> = markers.collect();
    let mut oldest_kept: HashMap<&str, u64> = HashMap::new();
    for m in &markers {
        if let (MarkerType::Document, true, Some(key)) = (m.kind, m.referenced, &m.key) {
            let t = oldest_kept.entry(key.as_str()).or_insert(m.tick);
            *t = (*t).min(m.tick);
        }
    }
    markers
        .iter()
        .map(|m| match m.kind {
            MarkerType::Document => m.referenced,
            // Not yet known to be durable elsewhere (or the newest): kept.
            MarkerType::Truncate => m.tick >= truncate_floor,
            _ if m.tick < truncate_floor => false,
            _ => {
                keep_all_removals
                    || match &m.key {
                        Some(key) => oldest_kept.get(key.as_str()).is_some_and(|t| *t < m.tick),
                        // Undecodable here means it was decoded before; keep it to be safe.
                        None => true,
                    }
            }
        })
        .collect()
}

/// A marker's index entry: `(kind, key, tick, rev, offset, len)`.
type MarkerEntry<'a> = (MarkerType, &'a str, u64, u64, u32, u32);

/// The index entry of the decoded marker `m`: a document or removal, or a truncate, whose
/// key is empty (it applies to the whole collection); `None` for other markers.
fn marker_entry<'a>(m: &format::Found, marker: &format::Marker<'a>) -> Option<MarkerEntry<'a>> {
    let (key, rev) = match format::truncate_body(marker) {
        Ok(t) => ("", t.rev),
        Err(_) => {
            let body = format::data_body(marker).ok()?;
            (body.key, body.rev)
        }
    };
    Some((m.kind, key, m.tick, rev, m.offset as u32, m.len as u32))
}

/// The hint entries of a file's markers, as [`files::encode_hints_into`] takes them.
/// `markers` come from a scan of `image`, which verified their CRCs: decoded again here
/// without that check.
fn hint_entries<'a>(
    image: &'a [u8],
    markers: &'a [format::Found],
) -> impl Iterator<Item = MarkerEntry<'a>> + 'a {
    markers.iter().filter_map(move |m| {
        let marker = format::decode_trusted(&image[m.offset..]).ok()?;
        marker_entry(m, &marker)
    })
}

/// Per-datafile statistics the compaction planner decides on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileStat {
    /// File id.
    pub fid: u64,
    /// Size on disk.
    pub file_size: u64,
    /// Live documents in the file.
    pub alive_count: u64,
    /// Bytes of live document markers.
    pub alive_bytes: u64,
    /// Dead document markers.
    pub dead_count: u64,
    /// Bytes of dead document markers.
    pub dead_bytes: u64,
    /// Removal markers.
    pub removes: u64,
}

/// The compaction planner: which contiguous groups of datafiles (in MANIFEST order) to
/// rewrite. Pure, so that the thresholds are unit-tested without files.
///
/// A file is a candidate when its dead bytes reach `dead_size_threshold`, or its dead share
/// reaches `dead_size_percent_threshold`, or its dead markers reach
/// `dead_documents_threshold`, or it is smaller than `min_small_data_file_size` and has a
/// neighbour to merge with. `force` (explicit compaction) makes every file with any dead
/// marker or removal a candidate. A group starts at a candidate and extends over following
/// files while it stays within `max_files` and the result size cap
/// (`min(max_result_file_size, journal_size * max_file_size_factor)`).
pub fn plan(
    files: &[FileStat],
    options: &CompactionOptions,
    journal_size: u64,
    force: bool,
) -> Vec<Vec<u64>> {
    // Never above 2 GiB: a result must stay addressable with 32-bit offsets.
    let cap = options
        .max_result_file_size
        .min(journal_size.saturating_mul(options.max_file_size_factor.max(1)))
        .min(1 << 31);
    let is_candidate = |f: &FileStat| {
        let dead_share = if f.alive_bytes + f.dead_bytes == 0 {
            0.0
        } else {
            f.dead_bytes as f64 / (f.alive_bytes + f.dead_bytes) as f64
        };
        (f.dead_bytes > 0
            && (f.dead_bytes >= options.dead_size_threshold
                || dead_share >= options.dead_size_percent_threshold
                || f.dead_count >= options.dead_documents_threshold))
            || (force && (f.dead_count > 0 || f.removes > 0))
            || (f.file_size < options.min_small_data_file_size && files.len() > 1)
    };
    let mut groups = Vec::new();
    let mut i = 0;
    while i < files.len() {
        if !is_candidate(&files[i]) {
            i += 1;
            continue;
        }
        let mut group = vec![files[i].fid];
        let mut size = files[i].alive_bytes;
        let mut j = i + 1;
        while j < files.len()
            && group.len() < options.max_files.max(1)
            && size + files[j].alive_bytes <= cap
            && (is_candidate(&files[j]) || files[j].file_size < options.min_small_data_file_size)
        {
            size += files[j].alive_bytes;
            group.push(files[j].fid);
            j += 1;
        }
        // A lone small file without dead data gains nothing from a rewrite.
        let lone_small_clean = group.len() == 1
            && files[i].dead_count == 0
            && files[i].removes == 0
            && files[i].dead_bytes == 0;
        if !lone_small_clean {
            groups.push(group);
        }
        i = j;
    }
    groups
}

// -------------------------------------------------------------------- recovery

struct Recovered {
    max_tick: u64,
    max_rev: u64,
}

fn observe(r: &mut Recovered, tick: u64, rev: u64) {
    r.max_tick = r.max_tick.max(tick);
    r.max_rev = r.max_rev.max(rev);
}

fn fid_from_name(name: &str) -> Option<(String, u64)> {
    let (stem, ext) = name.rsplit_once('.')?;
    let (kind, fid) = stem.rsplit_once('-')?;
    Some((format!("{kind}.{ext}"), fid.parse().ok()?))
}

fn recover_collection(
    inner: &Inner,
    col: &mut Collection,
    rec: &mut Recovered,
) -> std::result::Result<(), Error> {
    let dir = col.dir.clone();
    let manifest: Value = match std::fs::read(dir.join("MANIFEST")) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            Error::with_message(
                ErrorCode::CorruptedCollection,
                format!("collection {}: unreadable MANIFEST: {e}", col.id),
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Every collection gets its MANIFEST before the catalog lists it: a missing one
            // (or a missing directory) is damage, never "empty". Files are not touched.
            return Err(Error::with_message(
                ErrorCode::CorruptedCollection,
                format!(
                    "collection {}: {} is missing",
                    col.id,
                    dir.join("MANIFEST").display()
                ),
            ));
        }
        Err(e) => return Err(files::io_error(e, "reading MANIFEST")),
    };
    let listed: Vec<u64> = manifest["datafiles"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let journal_fid = manifest["journal"].as_u64();
    col.collected_tick.store(
        manifest["collectedTick"].as_u64().unwrap_or(0),
        Ordering::Release,
    );
    rec.max_tick = rec.max_tick.max(manifest["tick"].as_u64().unwrap_or(0));
    let mut keep: HashSet<u64> = listed.iter().copied().collect();
    keep.extend(journal_fid);
    // Files the MANIFEST does not list are leftovers of an interrupted compaction or journal
    // creation: they hold nothing that is not also elsewhere.
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for entry in rd.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name == "MANIFEST" {
                continue;
            }
            match fid_from_name(&name) {
                Some((_, fid)) if keep.contains(&fid) => {
                    rec.max_tick = rec.max_tick.max(fid);
                }
                _ => {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }
    let mut cf = ColFiles::default();
    let open_any = |fid: u64| -> Option<Arc<DataFile>> {
        let d = datafile_path(&dir, fid);
        let j = journal_path(&dir, fid);
        let path = if d.exists() { d } else { j };
        DataFile::open(fid, &path).ok()
    };
    let mut preloaded = preload_hints(&col.index, &dir, &listed);
    let mut all: Vec<(u64, bool)> = listed.iter().map(|f| (*f, false)).collect();
    all.extend(journal_fid.map(|f| (f, true)));
    for (fid, is_journal) in all {
        let Some(file) = open_any(fid) else {
            return Err(Error::with_message(
                ErrorCode::CorruptedCollection,
                format!(
                    "collection {}: datafile {fid} listed in MANIFEST is missing",
                    col.id
                ),
            ));
        };
        if let Some(loaded) = preloaded.remove(&fid) {
            observe(rec, loaded.max_tick, loaded.max_rev);
            col.last_tick.fetch_max(loaded.max_tick, Ordering::AcqRel);
            col.truncate_durable
                .fetch_max(loaded.truncate_tick, Ordering::AcqRel);
            inner.files.write().insert(fid, file.clone());
            cf.stats.insert(fid, loaded.stats);
            cf.datafiles.push(file);
            continue;
        }
        let mut stats = FileStats {
            docs: 0,
            doc_bytes: 0,
            removes: 0,
            size: file.len(),
            kind: StatKind::Datafile,
            max_tick: 0,
        };
        let last_tick = &col.last_tick;
        let truncate_durable = &col.truncate_durable;
        let mut apply = |kind: MarkerType, key: &str, tick: u64, rev: u64, off: u32, len: u32| {
            observe(rec, tick, rev);
            last_tick.fetch_max(tick, Ordering::Relaxed);
            stats.max_tick = stats.max_tick.max(tick);
            if kind == MarkerType::Truncate {
                col.index.note_truncate(tick);
                truncate_durable.fetch_max(tick, Ordering::AcqRel);
                return;
            }
            let loc = if kind == MarkerType::Document {
                stats.docs += 1;
                stats.doc_bytes += len as u64;
                Loc {
                    fid,
                    offset: off,
                    len,
                }
            } else {
                stats.removes += 1;
                Loc::REMOVED
            };
            col.index.recover(key, Version { tick, rev, loc });
        };
        let image = file
            .read_all()
            .map_err(|e| files::io_error(e, "reading a datafile"))?;
        let mut scan = format::scan(&image);
        if is_journal && scan.end == ScanEnd::Corrupt {
            // Journal ticks grow along the file. Damage that starts after the last collected
            // (synced) tick and is followed only by uncollected markers is an unsynced tail
            // (power loss during a collector pass): everything from there on is still in the
            // WAL, so the journal is cut at the damage instead of being reported.
            let collected = col.collected_tick.load(Ordering::Acquire);
            let bad = scan.bad_offset.unwrap_or(scan.valid_end);
            let before = scan.markers.last().map(|m| m.tick).unwrap_or(0);
            let tail_uncollected = format::salvage(&image)
                .iter()
                .filter(|m| m.offset > bad)
                .all(|m| m.tick > collected);
            if before >= collected && tail_uncollected {
                scan.end = ScanEnd::TornTail;
            }
        }
        // A sealed datafile was fdatasynced with its footer before it was listed: anything
        // but a footer that matches its markers means damage (a lost tail included).
        let sealed_ok = scan.end == ScanEnd::Sealed && footer_ok(&scan);
        let damaged_datafile = !is_journal && !sealed_ok;
        let damaged_journal = is_journal && scan.end == ScanEnd::Sealed && !footer_ok(&scan);
        if (damaged_datafile || damaged_journal) && scan.end != ScanEnd::Corrupt {
            scan.end = ScanEnd::Corrupt;
            scan.bad_offset = Some(scan.valid_end);
        }
        let salvaged = scan.end == ScanEnd::Corrupt;
        let markers = match scan.end {
            ScanEnd::Corrupt if !inner.options.ignore_datafile_errors => {
                return Err(Error::with_message(
                    ErrorCode::CorruptedDatafile,
                    format!(
                        "collection {}: {} {fid} is corrupt at offset {} (start with \
                         --database.ignore-datafile-errors to salvage the intact markers)",
                        col.id,
                        if is_journal { "journal" } else { "datafile" },
                        scan.bad_offset.unwrap_or(0)
                    ),
                ));
            }
            ScanEnd::Corrupt => {
                tracing::warn!(
                    "collection {}: salvaging intact markers of corrupt file {fid}",
                    col.id
                );
                format::salvage(&image)
            }
            _ => scan.markers.clone(),
        };
        for m in &markers {
            let Ok(marker) = format::decode(&image[m.offset..]) else {
                continue;
            };
            if let Some((kind, key, tick, rev, offset, len)) = marker_entry(m, &marker) {
                apply(kind, key, tick, rev, offset, len);
            }
        }
        inner.files.write().insert(fid, file.clone());
        let reusable = is_journal && scan.end == ScanEnd::Clean && !salvaged;
        if reusable {
            let size = file.len();
            let crc_acc = markers.iter().fold(0u32, |acc, m| {
                crc32c::crc32c_append(acc, &m.crc.to_le_bytes())
            });
            stats.kind = StatKind::Journal;
            cf.stats.insert(fid, stats);
            cf.journal = Some(Journal {
                file,
                offset: scan.valid_end as u64,
                size,
                count: markers.len() as u64,
                max_tick: markers.iter().map(|m| m.tick).max().unwrap_or(0),
                crc_acc,
            });
        } else if is_journal && scan.end != ScanEnd::Sealed && !salvaged {
            // A torn tail: seal the journal right after its last intact marker, so nothing is
            // ever appended behind garbage.
            let count = markers.len() as u64;
            let max_tick = markers.iter().map(|m| m.tick).max().unwrap_or(0);
            let crc_acc = markers.iter().fold(0u32, |acc, m| {
                crc32c::crc32c_append(acc, &m.crc.to_le_bytes())
            });
            let end = markers
                .last()
                .map(|m| m.offset + format::padded(m.len))
                .unwrap_or(format::padded(format::FILE_HEADER_LEN));
            cf.journal = Some(Journal {
                file,
                offset: end as u64,
                size: 0,
                count,
                max_tick,
                crc_acc,
            });
            cf.stats.insert(fid, stats);
            inner.seal_journal(col, &mut cf)?;
        } else {
            // A sealed journal whose MANIFEST edit was lost, or a datafile without a hint.
            if is_journal {
                file.rename(&datafile_path(&dir, fid))
                    .map_err(|e| files::io_error(e, "renaming a sealed journal"))?;
            }
            // No hint for a salvaged file: a hint would make the next normal start trust it
            // and silently skip the damage; without one the damage is reported again until
            // compaction (in salvage mode) rewrites the intact markers into a fresh file.
            if !salvaged && inner.write_hint(col, &file).is_err() {
                tracing::warn!("collection {}: could not rewrite hint file {fid}", col.id);
            }
            cf.stats.insert(fid, stats);
            cf.datafiles.push(file);
        }
    }
    let now_listed: Vec<u64> = cf.datafiles.iter().map(|f| f.fid).collect();
    let now_journal = cf.journal.as_ref().map(|j| j.file.fid);
    if now_listed != listed || now_journal != journal_fid || !dir.join("MANIFEST").exists() {
        inner.write_manifest(col, &cf)?;
    }
    col.files = Mutex::new(cf);
    Ok(())
}

struct Preloaded {
    stats: FileStats,
    max_tick: u64,
    max_rev: u64,
    /// Tick of the newest truncate marker in the file (0 if none).
    truncate_tick: u64,
}

/// Loads the hint files of sealed datafiles into the index, several files in parallel (the
/// index shards take concurrent inserts; "highest tick wins" makes the order irrelevant).
/// Files without a valid hint are left to the caller, which scans them.
fn preload_hints(index: &PrimaryIndex, dir: &Path, fids: &[u64]) -> HashMap<u64, Preloaded> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = Mutex::new(HashMap::new());
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(fids.len())
        .max(1);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&fid) = fids.get(i) else {
                    break;
                };
                let Ok(buf) = std::fs::read(hint_path(dir, fid)) else {
                    continue;
                };
                let mut p = Preloaded {
                    stats: FileStats {
                        docs: 0,
                        doc_bytes: 0,
                        removes: 0,
                        size: std::fs::metadata(datafile_path(dir, fid))
                            .map(|m| m.len())
                            .unwrap_or(0),
                        kind: StatKind::Datafile,
                        max_tick: 0,
                    },
                    max_tick: 0,
                    max_rev: 0,
                    truncate_tick: 0,
                };
                // A hint is only as good as its datafile: one that lost its tail (footer or
                // markers) must be scanned, which reports the damage.
                let mut needed = 0u64;
                let parsed = files::for_each_hint(fid, &buf, |_, _, _, _, offset, len| {
                    needed = needed.max(offset as u64 + len as u64);
                });
                let footer_end = format::padded(needed as usize) + format::FOOTER_LEN;
                if parsed.is_none() || p.stats.size < footer_end as u64 {
                    continue;
                }
                let ok = files::for_each_hint(fid, &buf, |kind, key, tick, rev, offset, len| {
                    p.max_tick = p.max_tick.max(tick);
                    p.max_rev = p.max_rev.max(rev);
                    if kind == MarkerType::Truncate {
                        p.truncate_tick = p.truncate_tick.max(tick);
                        index.note_truncate(tick);
                        return;
                    }
                    let loc = if kind == MarkerType::Document {
                        p.stats.docs += 1;
                        p.stats.doc_bytes += len as u64;
                        Loc { fid, offset, len }
                    } else {
                        p.stats.removes += 1;
                        Loc::REMOVED
                    };
                    index.recover(key, Version { tick, rev, loc });
                });
                if ok.is_some() {
                    p.stats.max_tick = p.max_tick;
                    results.lock().insert(fid, p);
                }
            });
        }
    });
    results.into_inner()
}

fn recover_wal(inner: &Inner, cat: &Catalog, rec: &mut Recovered) -> Result<Vec<Arc<DataFile>>> {
    let dir = wal_dir(&inner.dir);
    std::fs::create_dir_all(&dir).map_err(|e| files::io_error(e, "creating wal directory"))?;
    let mut segs: Vec<(u64, PathBuf)> = std::fs::read_dir(&dir)
        .map_err(|e| files::io_error(e, "listing wal directory"))?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let fid = name.strip_suffix(".wal")?.parse::<u64>().ok()?;
            Some((fid, e.path()))
        })
        .collect();
    segs.sort();
    // Point-in-time recovery: a damaged spot inside a segment followed by intact markers is a
    // power-loss hole in the unsynced tail (pages reach the disk in any order) unless a later
    // marker claims that the damaged range had been made durable — then it is damage to
    // synced data and startup refuses (unless salvaging).
    let infos = par_map(segs.len(), |i| inspect_segment(segs[i].0, &segs[i].1));
    let mut infos: Vec<SegInfo> = infos.into_iter().collect::<Result<_>>()?;
    let mut keep = segs.len();
    let mut salvaging = None;
    if let Some(k) = infos.iter().position(|s| s.hole.is_some()) {
        let (bad_offset, before) = infos[k].hole.unwrap_or_default();
        let evidence =
            infos[k].tail_claim > before || infos[k + 1..].iter().any(|s| s.max_claim > before);
        // An intact sync batch behind the damage and no claim: if that batch was
        // acknowledged, the fdatasync that acknowledged it flushed the damaged range too (media
        // damage to synced data); if the power failed during that fdatasync, it is a hole.
        // Nothing on disk tells the two apart, and guessing "hole" could drop an acknowledged
        // write, so recovery refuses and lets the operator salvage.
        let sync_behind = infos[k].tail_sync || infos[k + 1..].iter().any(|s| s.has_sync);
        if evidence || sync_behind {
            if !inner.options.ignore_datafile_errors {
                let why = if evidence {
                    "in data that was already synced"
                } else {
                    "followed by a waitForSync batch that may have been acknowledged (media \
                     damage, or a power loss during its fdatasync: the files cannot tell)"
                };
                return Err(Error::with_message(
                    ErrorCode::CorruptedDatafile,
                    format!(
                        "WAL segment {} is damaged at offset {bad_offset} {why}; start with \
                         --database.ignore-datafile-errors to keep every intact batch (what \
                         the damaged bytes held is lost)",
                        segs[k].1.display()
                    ),
                ));
            }
            tracing::error!(
                "WAL segment {} is damaged at offset {bad_offset}: salvaging every intact \
                 batch; the damaged range is lost",
                segs[k].1.display()
            );
            salvaging = Some(k);
        } else {
            tracing::warn!(
                "WAL segment {} has a hole at offset {bad_offset} in its unsynced tail (power \
                 loss): recovering up to tick {before}, dropping {} later segment(s)",
                segs[k].1.display(),
                segs.len() - k - 1
            );
            keep = k + 1;
            // Moved aside, not deleted: an operator can still inspect them.
            for (_, path) in &segs[keep..] {
                let _ = std::fs::rename(path, path.with_extension("wal.dropped"));
            }
            // The damaged segment keeps its intact prefix; its tail is saved next to it and
            // zeroed, so that the next start does not find the same hole again and judge the
            // newer segments written after this recovery against it.
            let path = &segs[k].1;
            let cut = (|| -> std::io::Result<()> {
                let image = std::fs::read(path)?;
                if bad_offset < image.len() {
                    std::fs::write(
                        path.with_extension("wal.dropped-tail"),
                        &image[bad_offset..],
                    )?;
                    let file = std::fs::OpenOptions::new().write(true).open(path)?;
                    std::os::unix::fs::FileExt::write_all_at(
                        &file,
                        &vec![0u8; image.len() - bad_offset],
                        bad_offset as u64,
                    )?;
                    file.sync_all()?;
                }
                Ok(())
            })();
            cut.map_err(|e| files::io_error(e, "cutting a damaged WAL segment"))?;
            let _ = files::sync_dir(&dir);
            infos.truncate(keep);
        }
    }
    let segs = &segs[..keep];
    // Segments are independent (a batch never spans two) and "highest tick wins" makes the
    // order irrelevant, so they are replayed in parallel.
    let results = par_map(segs.len(), |i| {
        replay_segment(cat, segs[i].0, &segs[i].1, salvaging == Some(i))
    });
    let mut out = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        let (file, max_tick, max_rev) = r?;
        observe(rec, max_tick.max(segs[i].0), max_rev);
        inner.files.write().insert(file.fid, file.clone());
        out.push(file);
    }
    Ok(out)
}

/// What recovery needs to know about a WAL segment before replaying it.
struct SegInfo {
    /// A damaged spot followed by intact markers: (offset, tick of the last marker before).
    hole: Option<(usize, u64)>,
    /// Highest durability claim of the intact markers before the hole (or of all).
    max_claim: u64,
    /// Highest durability claim of intact markers after the hole.
    tail_claim: u64,
    /// Some intact marker of the segment's intact prefix ends a sync batch.
    has_sync: bool,
    /// Some intact marker after the hole ends a sync batch.
    tail_sync: bool,
}

fn inspect_segment(fid: u64, path: &Path) -> Result<SegInfo> {
    let image = std::fs::read(path).map_err(|e| files::io_error(e, "reading WAL"))?;
    let scan = format::scan(&image);
    let claims = |ms: &[format::Found]| {
        ms.iter()
            .filter_map(|m| format::durable_claim(&image[m.offset..]))
            .max()
            .unwrap_or(0)
    };
    let mut info = SegInfo {
        hole: None,
        max_claim: claims(&scan.markers),
        tail_claim: 0,
        has_sync: scan
            .markers
            .iter()
            .any(|m| m.flags & FLAG_COMMIT != 0 && m.flags & FLAG_SYNC != 0),
        tail_sync: false,
    };
    if scan.end == ScanEnd::Corrupt {
        let bad = scan.bad_offset.unwrap_or(scan.valid_end);
        let before = scan.markers.last().map(|m| m.tick).unwrap_or(fid);
        info.hole = Some((bad, before));
        info.tail_claim = format::max_claim_from(&image, bad + 1);
        info.tail_sync = format::sync_commit_from(&image, bad + 1);
    }
    Ok(info)
}

/// Runs `f(0..n)` on up to one thread per core and returns the results in order.
fn par_map<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..n).map(|_| None).collect());
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1)
        .min(n)
        .max(1);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = f(i);
                results.lock()[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .into_iter()
        .map(|r| r.expect("every index was processed"))
        .collect()
}

/// A replayed WAL segment with the highest tick and revision found in it.
type Replayed = (Arc<DataFile>, u64, u64);

/// Replays one WAL segment into the index: its intact prefix, or with `salvage` every intact
/// complete batch anywhere in it.
fn replay_segment(cat: &Catalog, fid: u64, path: &Path, salvage: bool) -> Result<Replayed> {
    let file = DataFile::open(fid, path).map_err(|e| files::io_error(e, "opening WAL"))?;
    let image = file
        .read_all()
        .map_err(|e| files::io_error(e, "reading WAL"))?;
    // recover_wal decided above that anything behind a damaged spot is either an unsynced
    // tail (prefix only) or to be salvaged.
    let (mut max_tick, mut max_rev) = (0u64, 0u64);
    for p in committed_markers(&image, salvage) {
        let Ok(marker) = format::decode(&image[p.offset..]) else {
            continue;
        };
        let Some((cid, rev)) = format::marker_owner(&marker) else {
            continue;
        };
        max_tick = max_tick.max(p.tick);
        max_rev = max_rev.max(rev);
        let Some(col) = cat.collections.get(&cid) else {
            continue;
        };
        if col.status.is_err() || p.tick <= col.collected_tick.load(Ordering::Acquire) {
            continue;
        }
        col.uncollected.fetch_add(1, Ordering::Relaxed);
        col.last_tick.fetch_max(p.tick, Ordering::AcqRel);
        let Ok(body) = format::data_body(&marker) else {
            // A truncate (marker_owner accepted it): not durable in the journals yet, so
            // compaction must not rely on it until the collector copied it.
            col.index.note_truncate(p.tick);
            continue;
        };
        let loc = if p.kind == MarkerType::Document {
            Loc {
                fid,
                offset: p.offset as u32,
                len: p.len as u32,
            }
        } else {
            Loc::REMOVED
        };
        col.index.recover(
            body.key,
            Version {
                tick: p.tick,
                rev: body.rev,
                loc,
            },
        );
    }
    Ok((file, max_tick, max_rev))
}

/// The markers of complete batches in a WAL segment image, in log order: those of its
/// intact prefix, or with `salvage` those of every intact batch anywhere in it.
fn committed_markers(image: &[u8], salvage: bool) -> Vec<format::Found> {
    let markers = if salvage {
        format::salvage(image)
    } else {
        format::scan(image).markers
    };
    committed_of(markers, salvage)
}

/// The markers of complete (committed) batches among `markers`, a segment's scan (`salvage`:
/// found by [`format::salvage`], possibly with gaps).
fn committed_of(markers: Vec<format::Found>, salvage: bool) -> Vec<format::Found> {
    let mut out = Vec::with_capacity(markers.len());
    let mut pending: Vec<format::Found> = Vec::new();
    // After a gap (damaged bytes) the markers up to the next COMMIT belong to a batch whose
    // head is lost: applying them would apply part of a batch.
    let mut expect = format::padded(format::FILE_HEADER_LEN);
    let mut headless = false;
    for m in markers {
        if salvage && m.offset != expect {
            pending.clear();
            headless = true;
        }
        expect = m.offset + format::padded(m.len);
        pending.push(m);
        if m.flags & FLAG_COMMIT == 0 {
            continue;
        }
        if std::mem::take(&mut headless) {
            pending.clear();
        } else {
            out.append(&mut pending);
        }
    }
    out
}

pub(crate) fn open(dir: &Path, options: EngineOptions) -> Result<Arc<Inner>> {
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::with_message(
            ErrorCode::CannotCreateDirectory,
            format!("cannot create {}: {e}", dir.display()),
        )
    })?;
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("LOCK"))
        .map_err(|e| files::io_error(e, "opening LOCK"))?;
    if !files::try_lock_exclusive(&lock) {
        return Err(Error::with_message(
            ErrorCode::DataDirectoryLocked,
            format!(
                "database directory {} is locked by another process",
                dir.display()
            ),
        ));
    }
    let (durable_tx, _) = tokio::sync::watch::channel((0u64, false));
    let inner = Inner {
        dir: dir.to_path_buf(),
        options,
        hlc: Hlc::new(),
        tick: AtomicU64::new(0),
        visible: AtomicU64::new(0),
        catalog: RwLock::new(Arc::new(Catalog::default())),
        ddl: Mutex::new(()),
        files: RwLock::new(HashMap::new()),
        wal: Mutex::new(WalState {
            segment: None,
            map: None,
            offset: 0,
            size: 0,
            broken: false,
            sealed: Vec::new(),
            unsynced: Vec::new(),
            retained: Vec::new(),
            spare: None,
            written_tick: 0,
        }),
        sync: Mutex::new(SyncState::default()),
        sync_cv: Condvar::new(),
        syncer_cv: Condvar::new(),
        durable_tx,
        snapshots: Mutex::new(BTreeMap::new()),
        poisoned: RwLock::new(None),
        closed: AtomicBool::new(false),
        collect_lock: Mutex::new(CollectorScratch::default()),
        hint_scratch: Mutex::new(HintScratch::default()),
        bg: Arc::new(Background {
            stop: AtomicBool::new(false),
            wake: Mutex::new(false),
            cv: Condvar::new(),
        }),
        threads: Mutex::new(Vec::new()),
        lock_file: Mutex::new(Some(lock)),
        wal_syncs: AtomicU64::new(0),
        commits: AtomicU64::new(0),
        durable_tick: AtomicU64::new(0),
        pending_segments: AtomicUsize::new(0),
        throttle: Mutex::new(()),
        throttle_cv: Condvar::new(),
    };
    let mut rec = Recovered {
        max_tick: 0,
        max_rev: 0,
    };
    // Catalog.
    let mut cat = Catalog::default();
    let mut fresh = false;
    match std::fs::read(dir.join("catalog.json")) {
        Ok(bytes) => {
            let doc: Value = serde_json::from_slice(&bytes).map_err(|e| {
                Error::with_message(
                    ErrorCode::IllegalParameterFile,
                    format!("catalog.json is unreadable: {e}"),
                )
            })?;
            if doc["version"].as_u64() != Some(format::FORMAT_VERSION as u64) {
                return Err(Error::with_message(
                    ErrorCode::IllegalParameterFile,
                    format!(
                        "catalog.json has format version {}, this build reads {}",
                        doc["version"],
                        format::FORMAT_VERSION
                    ),
                ));
            }
            rec.max_tick = doc["tick"].as_u64().unwrap_or(0);
            for d in doc["databases"].as_array().into_iter().flatten() {
                if let Some(id) = d["id"].as_u64() {
                    cat.databases.insert(id, d["meta"].clone());
                }
            }
            for c in doc["collections"].as_array().into_iter().flatten() {
                let (Some(id), Some(db)) = (c["id"].as_u64(), c["db"].as_u64()) else {
                    continue;
                };
                let mut col = new_collection(
                    dir,
                    id,
                    db,
                    options_from_json(&c["options"]),
                    c["meta"].clone(),
                );
                if let Err(e) = recover_collection(&inner, &mut col, &mut rec) {
                    tracing::error!("collection {id} cannot be opened: {}", e);
                    col.status = Err(e);
                    col.index = PrimaryIndex::new();
                }
                cat.collections.insert(id, Arc::new(col));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let has_data = std::fs::read_dir(dir)
                .map(|rd| {
                    rd.flatten()
                        .any(|e| e.file_name().to_string_lossy().starts_with("db-"))
                })
                .unwrap_or(false);
            if has_data {
                return Err(Error::with_message(
                    ErrorCode::IllegalParameterFile,
                    format!(
                        "{} holds collection data but no catalog.json; refusing to start",
                        dir.display()
                    ),
                ));
            }
            fresh = true;
        }
        Err(e) => return Err(files::io_error(e, "reading catalog.json")),
    }
    // Leftover directories of dropped collections / databases.
    if let Ok(rd) = std::fs::read_dir(dir) {
        for entry in rd.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            let Some(db) = name.strip_prefix("db-").and_then(|s| s.parse::<u64>().ok()) else {
                continue;
            };
            if !cat.databases.contains_key(&db) {
                let _ = std::fs::remove_dir_all(entry.path());
                continue;
            }
            if let Ok(cols) = std::fs::read_dir(entry.path()) {
                for c in cols.flatten() {
                    let cname = c.file_name().to_string_lossy().to_string();
                    let cid = cname
                        .strip_prefix("col-")
                        .and_then(|s| s.parse::<u64>().ok());
                    if cid.is_none_or(|cid| !cat.collections.contains_key(&cid)) {
                        let _ = std::fs::remove_dir_all(c.path());
                    }
                }
            }
        }
    }
    let sealed = recover_wal(&inner, &cat, &mut rec)?;
    // What was recovered may have come from the page cache after a kill -9: make it durable
    // before calling it durable (new markers' claims vouch for it).
    for seg in &sealed {
        seg.file
            .sync_data()
            .map_err(|e| files::io_error(e, "fdatasync of a recovered WAL segment"))?;
    }
    let tick = rec.max_tick;
    inner.tick.store(tick, Ordering::Release);
    inner.visible.store(tick, Ordering::Release);
    inner.hlc.observe(Revision(rec.max_rev));
    for col in cat.collections.values() {
        let count = col.index.gc(u64::MAX);
        col.index.repack();
        col.counts.lock().push_back((0, count));
    }
    {
        let mut wal = inner.wal.lock();
        wal.sealed = sealed;
        inner
            .pending_segments
            .store(wal.sealed.len(), Ordering::Release);
        wal.written_tick = tick;
    }
    inner.sync.lock().durable = tick;
    inner.durable_tick.store(tick, Ordering::Release);
    inner.durable_tx.send_modify(|v| v.0 = tick);
    *inner.catalog.write() = Arc::new(cat);
    let inner = Arc::new(inner);
    if fresh {
        inner.persist_catalog(&inner.catalog())?;
    }
    start_threads(&inner)?;
    Ok(inner)
}

fn new_collection(
    dir: &Path,
    id: u64,
    db: u64,
    options: CollectionOptions,
    meta: Value,
) -> Collection {
    Collection {
        id,
        db,
        options: RwLock::new(options),
        meta: RwLock::new(meta),
        status: Ok(()),
        index: PrimaryIndex::new(),
        counts: Mutex::new(VecDeque::new()),
        last_tick: AtomicU64::new(0),
        uncollected: AtomicU64::new(0),
        garbage: AtomicU64::new(0),
        compacting: AtomicU64::new(0),
        collected_tick: AtomicU64::new(0),
        truncate_durable: AtomicU64::new(0),
        dropped: AtomicBool::new(false),
        dirty: AtomicBool::new(true),
        files: Mutex::new(ColFiles::default()),
        compact_lock: Mutex::new(None),
        compaction_status: Mutex::new("no compaction run yet".into()),
        dir: col_dir(dir, db, id),
    }
}

fn start_threads(inner: &Arc<Inner>) -> Result<()> {
    let spawn_error = |e: std::io::Error| {
        Error::with_message(
            ErrorCode::ResourceLimit,
            format!("cannot start a storage engine thread: {e}"),
        )
    };
    let mut threads = inner.threads.lock();
    let weak = Arc::downgrade(inner);
    let bg = inner.bg.clone();
    let interval = inner.options.sync_interval.max(Duration::from_millis(1));
    threads.push(
        std::thread::Builder::new()
            .name("quiver-wal-sync".into())
            .spawn(move || syncer_loop(weak, bg, interval))
            .map_err(spawn_error)?,
    );
    if inner.options.background_collector || inner.options.compaction.background {
        let weak = Arc::downgrade(inner);
        let bg = inner.bg.clone();
        threads.push(
            std::thread::Builder::new()
                .name("quiver-collector".into())
                .spawn(move || maintenance_loop(weak, bg))
                .map_err(spawn_error)?,
        );
    }
    Ok(())
}

fn syncer_loop(weak: Weak<Inner>, bg: Arc<Background>, interval: Duration) {
    let mut last = Instant::now();
    loop {
        if bg.stop.load(Ordering::Acquire) {
            return;
        }
        let Some(inner) = weak.upgrade() else {
            return;
        };
        {
            let mut s = inner.sync.lock();
            let due = last + interval;
            if s.requested <= s.durable {
                let now = Instant::now();
                if now < due {
                    let wait = (due - now).min(Duration::from_millis(100));
                    inner.syncer_cv.wait_for(&mut s, wait);
                }
            }
            let requested = s.requested > s.durable;
            if requested {
                // Group commit: let the writers released by the previous fdatasync commit
                // their next batch and join this one (bounded wait; a lone writer never waits).
                let deadline = Instant::now() + inner.options.group_commit_gather;
                while s.waiters < s.last_group && !bg.stop.load(Ordering::Acquire) {
                    if inner.syncer_cv.wait_until(&mut s, deadline).timed_out() {
                        break;
                    }
                }
                s.last_group = s.waiters;
            }
            drop(s);
            if !requested && Instant::now() < due {
                continue;
            }
        }
        last = Instant::now();
        if inner.poisoned.read().is_some() {
            drop(inner);
            std::thread::sleep(interval);
            continue;
        }
        let _ = inner.sync_round();
    }
}

fn maintenance_loop(weak: Weak<Inner>, bg: Arc<Background>) {
    let mut last_compaction = Instant::now();
    loop {
        {
            let mut woken = bg.wake.lock();
            if !*woken {
                bg.cv.wait_for(&mut woken, Duration::from_millis(200));
            }
            *woken = false;
        }
        if bg.stop.load(Ordering::Acquire) {
            return;
        }
        let Some(inner) = weak.upgrade() else {
            return;
        };
        if inner.closed.load(Ordering::Acquire) {
            return;
        }
        if let Err(e) = inner.prepare_spare_segment() {
            tracing::warn!("preparing the next WAL segment: {}", e);
        }
        if inner.options.background_collector && !inner.wal.lock().sealed.is_empty() {
            if let Err(e) = inner.collect(false) {
                tracing::warn!("collector: {}", e);
            }
        }
        // Index GC (old versions, tombstones) whenever enough garbage piled up, whether or
        // not the collection is compacted.
        for col in inner.catalog().collections.values() {
            let garbage = col.garbage.load(Ordering::Relaxed);
            if garbage > 1000 && garbage > col.latest_count() / 8 {
                col.garbage.store(0, Ordering::Relaxed);
                col.index.gc(inner.horizon());
            }
        }
        let copt = &inner.options.compaction;
        if copt.background && last_compaction.elapsed() >= copt.db_sleep_time {
            last_compaction = Instant::now();
            let cat = inner.catalog();
            for col in cat.collections.values() {
                if bg.stop.load(Ordering::Acquire) {
                    return;
                }
                if col.usable().is_err() || !col.options.read().do_compact {
                    continue;
                }
                if !col.dirty.swap(false, Ordering::AcqRel) {
                    continue;
                }
                let recent = col
                    .compact_lock
                    .lock()
                    .is_some_and(|t| t.elapsed() < copt.min_interval);
                if recent {
                    col.dirty.store(true, Ordering::Release);
                    continue;
                }
                if let Err(e) = inner.compact_collection(col, false) {
                    tracing::warn!("compactor: collection {}: {}", col.id, e);
                }
            }
        }
    }
}

// -------------------------------------------------------------------- public glue

pub(crate) struct SnapshotGuard {
    inner: Arc<Inner>,
    tick: u64,
}

impl Drop for SnapshotGuard {
    fn drop(&mut self) {
        let mut snaps = self.inner.snapshots.lock();
        if let Some(n) = snaps.get_mut(&self.tick) {
            *n -= 1;
            if *n == 0 {
                snaps.remove(&self.tick);
            }
        }
    }
}

pub(crate) struct SnapshotState {
    pub guard: SnapshotGuard,
    pub catalog: Arc<Catalog>,
}

impl SnapshotState {
    pub fn tick(&self) -> u64 {
        self.guard.tick
    }

    fn collection(&self, cid: u64) -> Result<&Arc<Collection>> {
        let col = self
            .catalog
            .collections
            .get(&cid)
            .ok_or_else(|| Error::new(ErrorCode::DataSourceNotFound))?;
        col.usable()?;
        Ok(col)
    }

    pub fn get(&self, cid: u64, key: &str) -> Result<Option<StoredDocument>> {
        let col = self.collection(cid)?;
        self.guard.inner.read_version(col, key, self.tick())
    }

    pub fn revision(&self, cid: u64, key: &str) -> Result<Option<Revision>> {
        let col = self.collection(cid)?;
        Ok(col.index.get(key, self.tick()).map(|v| Revision(v.rev)))
    }

    pub fn count(&self, cid: u64) -> Result<u64> {
        let col = self.collection(cid)?;
        Ok(col.count_at(self.tick()))
    }

    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.guard.inner
    }

    pub fn ordered_scan(self: &Arc<Self>, cid: u64) -> Result<crate::scan::OrderedScan> {
        let col = self.collection(cid)?.clone();
        Ok(crate::scan::OrderedScan::new(self.clone(), col))
    }

    pub fn scan(self: &Arc<Self>, cid: u64) -> Result<ScanIter> {
        let col = self.collection(cid)?.clone();
        Ok(ScanIter {
            snap: self.clone(),
            col,
            shard: 0,
            after: None,
            buffer: VecDeque::new(),
            done: false,
        })
    }
}

pub(crate) fn snapshot(inner: &Arc<Inner>) -> SnapshotState {
    let catalog = inner.catalog();
    let mut snaps = inner.snapshots.lock();
    let tick = inner.visible.load(Ordering::Acquire);
    *snaps.entry(tick).or_insert(0) += 1;
    drop(snaps);
    SnapshotState {
        guard: SnapshotGuard {
            inner: inner.clone(),
            tick,
        },
        catalog,
    }
}

/// Iterator over a snapshot's documents, fetched in chunks of [`SCAN_CHUNK`] keys.
pub struct ScanIter {
    snap: Arc<SnapshotState>,
    col: Arc<Collection>,
    shard: usize,
    after: Option<Box<str>>,
    buffer: VecDeque<(Box<str>, Version)>,
    done: bool,
}

impl Iterator for ScanIter {
    type Item = Result<(String, StoredDocument)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((key, v)) = self.buffer.pop_front() {
                let inner = &self.snap.guard.inner;
                let doc = match inner.read_at(&self.col, v) {
                    Ok(Some(doc)) => Ok(Some(doc)),
                    Ok(None) => inner.read_version(&self.col, &key, self.snap.tick()),
                    Err(e) => Err(e),
                };
                return match doc {
                    Ok(Some(doc)) => Some(Ok((key.into_string(), doc))),
                    Ok(None) => continue,
                    Err(e) => Some(Err(e)),
                };
            }
            if self.done {
                return None;
            }
            if self.shard >= self.col.index.shard_count() {
                self.done = true;
                return None;
            }
            let (items, last) = self.col.index.visible_chunk(
                self.shard,
                self.after.as_deref(),
                self.snap.tick(),
                SCAN_CHUNK,
            );
            self.buffer.extend(items);
            match last {
                Some(k) => self.after = Some(k),
                None => {
                    self.shard += 1;
                    self.after = None;
                }
            }
        }
    }
}

// DDL and the rest of the engine surface.

impl Inner {
    pub(crate) fn catalog_entries(&self) -> Vec<DatabaseEntry> {
        let cat = self.catalog();
        cat.databases
            .iter()
            .map(|(id, meta)| DatabaseEntry {
                id: *id,
                meta: meta.clone(),
                collections: cat
                    .collections
                    .values()
                    .filter(|c| c.db == *id)
                    .map(|c| CollectionEntry {
                        id: c.id,
                        options: c.options.read().clone(),
                        meta: c.meta.read().clone(),
                        status: c.status.clone(),
                    })
                    .collect(),
            })
            .collect()
    }

    fn ddl_update(&self, f: impl FnOnce(&mut Catalog) -> Result<()>) -> Result<()> {
        self.check_open()?;
        let _g = self.ddl.lock();
        let mut next = (*self.catalog()).clone();
        f(&mut next)?;
        self.persist_catalog(&next)?;
        *self.catalog.write() = Arc::new(next);
        Ok(())
    }

    pub(crate) fn create_database(&self, meta: Value) -> Result<u64> {
        let id = next_tick(self);
        self.ddl_update(|cat| {
            cat.databases.insert(id, meta);
            Ok(())
        })?;
        Ok(id)
    }

    pub(crate) fn update_database(&self, db: u64, meta: Value) -> Result<()> {
        self.ddl_update(|cat| match cat.databases.get_mut(&db) {
            Some(m) => {
                *m = meta;
                Ok(())
            }
            None => Err(Error::new(ErrorCode::DatabaseNotFound)),
        })
    }

    pub(crate) fn drop_database(&self, db: u64) -> Result<()> {
        let mut dropped = Vec::new();
        self.ddl_update(|cat| {
            if cat.databases.remove(&db).is_none() {
                return Err(Error::new(ErrorCode::DatabaseNotFound));
            }
            let ids: Vec<u64> = cat
                .collections
                .values()
                .filter(|c| c.db == db)
                .map(|c| c.id)
                .collect();
            for id in ids {
                if let Some(c) = cat.collections.remove(&id) {
                    dropped.push(c);
                }
            }
            Ok(())
        })?;
        for c in dropped {
            self.release_collection(&c);
        }
        let _ = std::fs::remove_dir_all(self.dir.join(format!("db-{db}")));
        Ok(())
    }

    fn release_collection(&self, col: &Collection) {
        col.dropped.store(true, Ordering::Release);
        let cf = col.files.lock();
        let mut table = self.files.write();
        for f in cf
            .datafiles
            .iter()
            .chain(cf.journal.iter().map(|j| &j.file))
        {
            table.remove(&f.fid);
        }
        drop(table);
        drop(cf);
        let _ = std::fs::remove_dir_all(&col.dir);
    }

    pub(crate) fn create_collection(
        &self,
        db: u64,
        options: CollectionOptions,
        meta: Value,
    ) -> Result<u64> {
        validate_options(&options)?;
        let id = next_tick(self);
        let dir = self.dir.clone();
        self.ddl_update(|cat| {
            if !cat.databases.contains_key(&db) {
                return Err(Error::new(ErrorCode::DatabaseNotFound));
            }
            let col = new_collection(&dir, id, db, options, meta);
            col.counts.lock().push_back((0, 0));
            std::fs::create_dir_all(&col.dir)
                .map_err(|e| files::io_error(e, "creating a collection directory"))?;
            // The MANIFEST exists before the catalog lists the collection, so that a missing
            // one always means damage.
            self.write_manifest(&col, &ColFiles::default())?;
            cat.collections.insert(id, Arc::new(col));
            Ok(())
        })?;
        Ok(id)
    }

    pub(crate) fn collection(&self, cid: u64) -> Result<Arc<Collection>> {
        // Under the read lock rather than through a clone of the catalog's `Arc`: this is on
        // every single insert, and that reference count is shared by all cores.
        self.catalog
            .read()
            .collections
            .get(&cid)
            .cloned()
            .ok_or_else(|| Error::new(ErrorCode::DataSourceNotFound))
    }

    pub(crate) fn collection_options(&self, cid: u64) -> Result<CollectionOptions> {
        Ok(self.collection(cid)?.options.read().clone())
    }

    pub(crate) fn update_collection(
        &self,
        cid: u64,
        options: CollectionOptions,
        meta: Value,
    ) -> Result<()> {
        self.check_open()?;
        validate_options(&options)?;
        let col = self.collection(cid)?;
        let _g = self.ddl.lock();
        let old = (col.options.read().clone(), col.meta.read().clone());
        *col.options.write() = options;
        *col.meta.write() = meta;
        if let Err(e) = self.persist_catalog(&self.catalog()) {
            *col.options.write() = old.0;
            *col.meta.write() = old.1;
            return Err(e);
        }
        Ok(())
    }

    pub(crate) fn drop_collection(&self, cid: u64) -> Result<()> {
        let mut dropped = None;
        self.ddl_update(|cat| {
            dropped = cat.collections.remove(&cid);
            match dropped {
                Some(_) => Ok(()),
                None => Err(Error::new(ErrorCode::DataSourceNotFound)),
            }
        })?;
        if let Some(c) = dropped {
            self.release_collection(&c);
        }
        Ok(())
    }

    pub(crate) fn truncate(self: &Arc<Self>, cid: u64, sync: bool) -> Result<crate::CommitTicket> {
        let col = self.collection(cid)?;
        col.usable()?;
        if col.latest_count() == 0 {
            // Nothing alive: no marker needed (readers of older snapshots keep their view).
            let tick = self.visible.load(Ordering::Acquire);
            let need = sync || col.options.read().wait_for_sync;
            return Ok(crate::CommitTicket {
                tick,
                sync: need,
                inner: Some(self.clone()),
                populate_ahead: None,
            });
        }
        // One marker, whatever the collection's size: the WAL mutex is held for one small
        // write, and the index applies it in O(1) (see PrimaryIndex::truncate).
        let mut batch = WriteBatch::new();
        batch.set_sync(sync);
        batch.ops.push(BatchOp::Truncate {
            cid,
            rev: self.hlc.next(),
        });
        self.commit(batch)
    }

    pub(crate) fn figures_of(&self, cid: u64) -> Result<Figures> {
        let col = self.collection(cid)?;
        col.usable()?;
        Ok(self.figures(&col))
    }

    pub(crate) fn compact(&self, cid: u64) -> Result<CompactionReport> {
        self.check_open()?;
        let col = self.collection(cid)?;
        // Data still in the WAL or the journal is moved into datafiles first, so an explicit
        // compaction sees everything.
        self.collect(true)?;
        {
            let mut cf = col.files.lock();
            if cf.journal.as_ref().is_some_and(|j| j.count > 0) {
                self.seal_journal(&col, &mut cf)?;
            }
        }
        self.compact_collection(&col, true)
    }

    /// Reads every datafile and the journal of a collection and checks every marker (CRC,
    /// layout) and every footer (marker count, CRC of CRCs).
    pub(crate) fn verify(&self, cid: u64) -> Result<crate::VerifyReport> {
        let col = self.collection(cid)?;
        col.usable()?;
        // The journal is read only up to the end of what the collector has finished writing
        // (taken under the files lock): bytes behind it may be a pwrite in progress, which a
        // scan would take for a torn marker and report as damage that is not there.
        let (datafiles, journal, journal_end) = {
            let cf = col.files.lock();
            (
                cf.datafiles.clone(),
                cf.journal.as_ref().map(|j| j.file.clone()),
                cf.journal.as_ref().map(|j| j.offset).unwrap_or(0),
            )
        };
        let mut report = crate::VerifyReport::default();
        let bad = |fid: u64, what: String| corrupt(format!("collection {cid}: file {fid}: {what}"));
        for (file, sealed) in datafiles
            .iter()
            .map(|f| (f, true))
            .chain(journal.iter().map(|f| (f, false)))
        {
            let mut image = file
                .read_all()
                .map_err(|e| files::io_error(e, "reading a datafile"))?;
            if !sealed {
                image.truncate(journal_end as usize);
            }
            let scan = format::scan(&image);
            match (scan.end, sealed) {
                (ScanEnd::Corrupt, _) | (ScanEnd::TornTail, _) => {
                    return Err(bad(
                        file.fid,
                        format!("damaged marker at offset {}", scan.bad_offset.unwrap_or(0)),
                    ))
                }
                (ScanEnd::Clean, true) => {
                    return Err(bad(file.fid, "sealed datafile without footer".into()))
                }
                _ => {}
            }
            if let Some(footer) = scan.footer {
                let crcs: Vec<u8> = scan
                    .markers
                    .iter()
                    .flat_map(|m| m.crc.to_le_bytes())
                    .collect();
                if footer.count != scan.markers.len() as u64
                    || footer.crc_of_crcs != crc32c::crc32c(&crcs)
                {
                    return Err(bad(file.fid, "footer does not match the markers".into()));
                }
            }
            report.files += 1;
            report.markers += scan.markers.len() as u64;
            report.bytes += scan.valid_end as u64;
        }
        Ok(report)
    }

    pub(crate) fn collect_all(&self) -> Result<()> {
        self.check_open()?;
        self.collect(true)
    }

    pub(crate) fn sync_all(&self) -> Result<()> {
        self.check_open()?;
        let tick = self.wal.lock().written_tick;
        self.wait_durable(tick)
    }

    pub(crate) fn shutdown(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        let result = if self.poisoned.read().is_none() {
            self.sync_round().map(|_| ())
        } else {
            Ok(())
        };
        self.closed.store(true, Ordering::Release);
        self.bg.stop.store(true, Ordering::Release);
        {
            let mut w = self.bg.wake.lock();
            *w = true;
        }
        self.bg.cv.notify_all();
        self.sync_cv.notify_all();
        self.syncer_cv.notify_all();
        let threads: Vec<JoinHandle<()>> = std::mem::take(&mut *self.threads.lock());
        let me = std::thread::current().id();
        for t in threads {
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
        self.lock_file.lock().take();
        result
    }

    pub(crate) fn visible_tick(&self) -> u64 {
        self.visible.load(Ordering::Acquire)
    }

    /// The revision of `key` in the newest visible state, without registering a snapshot.
    /// The newest version of a key is never garbage, so no snapshot is needed to keep it.
    pub(crate) fn latest_revision(&self, cid: u64, key: &str) -> Result<Option<Revision>> {
        let cat = self.catalog();
        let col = cat
            .collections
            .get(&cid)
            .ok_or_else(|| Error::new(ErrorCode::DataSourceNotFound))?;
        col.usable()?;
        let tick = self.visible.load(Ordering::Acquire);
        Ok(col.index.get(key, tick).map(|v| Revision(v.rev)))
    }
}

/// What [`Inner::append_locked`] wrote, and where.
struct Appended {
    fid: u64,
    /// Offset of the first marker in the segment.
    base: u64,
    commit_tick: u64,
    /// The map of a segment sealed to make room, for the caller to drop after releasing the
    /// WAL mutex.
    retired: Option<AppendMap>,
    populate_ahead: Option<files::PopulateAhead>,
}

/// A document body must fit in one marker.
fn check_body_len(len: usize) -> Result<()> {
    if len > format::MAX_MARKER_LEN - 400 {
        return Err(Error::new(ErrorCode::DocumentTooLarge));
    }
    Ok(())
}

/// Locations are 32-bit offsets: an encoded batch must fit in one segment below 4 GiB.
fn check_batch_len(len: usize) -> Result<()> {
    if len > MAX_BATCH_BYTES {
        return Err(Error::with_message(
            ErrorCode::ResourceLimit,
            format!("write batch of {len} bytes exceeds the limit of {MAX_BATCH_BYTES} bytes"),
        ));
    }
    Ok(())
}

/// The engine's own limit on keys (the core checks ArangoDB's key rules before).
fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > format::MAX_KEY_LEN {
        return Err(Error::with_message(
            ErrorCode::DocumentKeyBad,
            "illegal document key: keys are 1 to 254 bytes",
        ));
    }
    Ok(())
}

fn validate_options(o: &CollectionOptions) -> Result<()> {
    if let Some(size) = o.journal_size {
        if !(MIN_JOURNAL_SIZE..=(1 << 31)).contains(&size) {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("journalSize must be between {MIN_JOURNAL_SIZE} bytes and 2 GiB"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(fid: u64, alive: u64, dead: u64, removes: u64) -> FileStat {
        FileStat {
            fid,
            file_size: alive + dead + removes * 48 + 200,
            alive_count: alive / 100,
            alive_bytes: alive,
            dead_count: dead / 100,
            dead_bytes: dead,
            removes,
        }
    }

    fn opts() -> CompactionOptions {
        CompactionOptions {
            min_small_data_file_size: 0,
            ..CompactionOptions::default()
        }
    }

    fn info(kind: MarkerType, tick: u64, key: &str, referenced: bool) -> MarkerInfo {
        MarkerInfo {
            kind,
            tick,
            key: Some(key.to_string()),
            referenced,
        }
    }

    /// The tombstone-vs-GC race of an explicit `compact()`: a snapshot pinned the old
    /// version of `k` when the referenced set was taken, then it was released and a GC pass
    /// dropped `k` from the index before the removal marker was reached. The decision must
    /// follow what is copied, not the index at that later moment.
    #[test]
    fn pending_merges_adjacent_ranges_only() {
        let mut p = Pending::default();
        p.push(64..128);
        p.push(128..200);
        p.push(256..300);
        p.push(300..310);
        assert_eq!(p.runs, vec![64..200, 256..310]);
        assert_eq!(p.len, 136 + 54);
    }

    #[test]
    fn removal_survives_when_an_older_version_of_its_key_is_kept() {
        let keep = select_markers(
            [
                info(MarkerType::Document, 5, "k", true),
                info(MarkerType::Document, 6, "other", false),
                info(MarkerType::Remove, 7, "k", false),
                info(MarkerType::Remove, 8, "other", false),
            ]
            .into_iter(),
            false,
            0,
        );
        assert_eq!(keep, [true, false, true, false]);
    }

    #[test]
    fn a_durable_truncate_drops_older_removals_and_truncates_but_keeps_itself() {
        let keep = select_markers(
            [
                info(MarkerType::Document, 3, "k", true),
                info(MarkerType::Remove, 4, "k", false),
                info(MarkerType::Truncate, 5, "", false),
                info(MarkerType::Truncate, 8, "", false),
                info(MarkerType::Remove, 9, "k", false),
                info(MarkerType::Truncate, 10, "", false),
            ]
            .into_iter(),
            true,
            8,
        );
        // The document is referenced (an old snapshot); the removal at 4 and the truncate
        // at 5 are covered by the durable truncate at 8; what is at or above 8 stays.
        assert_eq!(keep, [true, false, false, true, true, true]);
    }

    #[test]
    fn removal_is_dropped_when_only_newer_versions_are_kept_and_kept_when_protected() {
        let markers = || {
            [
                info(MarkerType::Document, 3, "k", false),
                info(MarkerType::Remove, 4, "k", false),
                info(MarkerType::Document, 9, "k", true),
            ]
            .into_iter()
        };
        assert_eq!(select_markers(markers(), false, 0), [false, false, true]);
        assert_eq!(select_markers(markers(), true, 0), [false, true, true]);
        let undecodable = MarkerInfo {
            key: None,
            ..info(MarkerType::Remove, 4, "", false)
        };
        assert_eq!(select_markers([undecodable].into_iter(), false, 0), [true]);
    }

    #[test]
    fn plan_picks_files_over_thresholds_only() {
        let mb = 1 << 20;
        // 5 % dead, below every threshold: nothing to do.
        let files = vec![stat(1, 19 * mb / 10, mb / 10, 0), stat(2, 2 * mb, 0, 0)];
        let o = CompactionOptions {
            dead_size_threshold: 4 * mb,
            ..opts()
        };
        assert!(plan(&files, &o, 32 * mb, false).is_empty());
        // Dead share of 50 % passes the percent threshold.
        let files = vec![stat(1, mb, mb, 0), stat(2, 2 * mb, 0, 0)];
        assert_eq!(plan(&files, &o, 32 * mb, false), vec![vec![1]]);
        // Absolute dead size passes even with a small share.
        let files = vec![stat(1, 100 * mb, 5 * mb, 0)];
        assert_eq!(plan(&files, &o, 32 * mb, false), vec![vec![1]]);
        // Explicit compaction takes any dead data and removals.
        let files = vec![
            stat(1, 2 * mb, 100, 0),
            stat(2, 2 * mb, 0, 3),
            stat(3, mb, 0, 0),
        ];
        assert_eq!(plan(&files, &o, 32 * mb, true), vec![vec![1, 2]]);
        assert!(plan(&files, &o, 32 * mb, false).is_empty());
    }

    #[test]
    fn plan_respects_max_files_and_result_cap() {
        let mb = 1 << 20;
        let files: Vec<FileStat> = (1..=7).map(|f| stat(f, mb, mb, 0)).collect();
        let o = CompactionOptions {
            max_files: 3,
            ..opts()
        };
        assert_eq!(
            plan(&files, &o, 32 * mb, false),
            vec![vec![1, 2, 3], vec![4, 5, 6], vec![7]]
        );
        // Result cap = journal size x factor = 2 MiB: one file of 1 MiB alive each, two fit.
        let o = CompactionOptions {
            max_file_size_factor: 2,
            ..o
        };
        assert_eq!(
            plan(&files[..4], &o, mb, false),
            vec![vec![1, 2], vec![3, 4]]
        );
    }

    #[test]
    fn plan_merges_small_files_but_not_a_lone_clean_one() {
        let o = CompactionOptions {
            min_small_data_file_size: 128 * 1024,
            ..CompactionOptions::default()
        };
        let small = |fid| stat(fid, 10_000, 0, 0);
        assert_eq!(
            plan(&[small(1), small(2), small(3)], &o, 32 << 20, false),
            vec![vec![1, 2, 3]]
        );
        assert!(plan(&[small(1)], &o, 32 << 20, false).is_empty());
        let big_clean = stat(9, 10 << 20, 0, 0);
        assert!(plan(&[big_clean.clone(), small(10)], &o, 32 << 20, false).is_empty());
    }
}
