//! quiver-storage: QuiverDB's log-structured storage engine.
//!
//! One group-committed write-ahead log for all collections sits in front of per-collection
//! journals and datafiles (see docs/design/storage.md and docs/storage-format.md). The engine
//! stores opaque byte bodies addressed by key with a revision; it knows nothing about JSON.

mod block_map;
mod collection_options;
mod engine;
mod files;
pub mod format;
mod index;

pub use collection_options::{
    check_journal_size, CollectionOptions, JOURNAL_SIZE_FLOOR, JOURNAL_SIZE_MAX, JOURNAL_SIZE_MIN,
};
pub use engine::{plan, resident_file_bytes, Engine, FileStat, KeyRangeIter, ScanIter};
pub use engine::{OrderedScan, RawDocument, MAX_SCAN_THREADS};
pub use index::binary_ordered_key;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use quiver_errors::{Error, Result};
use quiver_types::Revision;

/// A database's numeric id (assigned by the engine, never reused).
pub type DatabaseId = u64;
/// A collection's numeric id (assigned by the engine, never reused).
pub type CollectionId = u64;

/// Thresholds of the background compactor (`--compaction.*`, ArangoDB 3.x names).
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionOptions {
    /// Whether the background compactor thread runs at all (explicit `compact` always works).
    pub background: bool,
    /// `--compaction.db-sleep-time`: pause between two compactor passes.
    pub db_sleep_time: Duration,
    /// `--compaction.min-interval`: minimum time between two compactions of one collection.
    pub min_interval: Duration,
    /// `--compaction.min-small-data-file-size`: datafiles smaller than this are merged with
    /// their neighbours even if they hold no dead data.
    pub min_small_data_file_size: u64,
    /// `--compaction.dead-size-threshold`: dead bytes that make a datafile a candidate.
    pub dead_size_threshold: u64,
    /// `--compaction.dead-size-percent-threshold`: dead share (0..1) that makes a datafile a
    /// candidate.
    pub dead_size_percent_threshold: f64,
    /// `--compaction.dead-documents-threshold`: dead markers that make a datafile a candidate.
    pub dead_documents_threshold: u64,
    /// `--compaction.max-files`: most datafiles merged into one compaction result.
    pub max_files: usize,
    /// `--compaction.max-result-file-size`: largest compaction result in bytes.
    pub max_result_file_size: u64,
    /// `--compaction.max-file-size-factor`: result cap as a multiple of the journal size.
    pub max_file_size_factor: u64,
}

impl Default for CompactionOptions {
    fn default() -> CompactionOptions {
        CompactionOptions {
            background: true,
            db_sleep_time: Duration::from_secs(1),
            min_interval: Duration::from_secs(10),
            min_small_data_file_size: 128 * 1024,
            dead_size_threshold: 128 * 1024,
            dead_size_percent_threshold: 0.1,
            dead_documents_threshold: 16_384,
            max_files: 3,
            max_result_file_size: 128 * 1024 * 1024,
            max_file_size_factor: 3,
        }
    }
}

/// Named points at which file I/O can be made to fail in tests (see [`IoHooks`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailPoint {
    /// Creating (and preallocating) a new WAL segment.
    WalCreate,
    /// Appending a batch to the WAL.
    WalWrite,
    /// fdatasync of the WAL.
    WalSync,
    /// Creating (and preallocating) a collection journal.
    JournalCreate,
    /// Appending collected markers to a collection journal.
    JournalWrite,
    /// fdatasync of a collection journal.
    JournalSync,
    /// Sealing a journal into a datafile (footer, rename, hint file).
    Seal,
    /// Writing a compaction result file.
    CompactionWrite,
    /// Publishing a compaction result (the MANIFEST swap).
    CompactionSwap,
    /// Rewriting a MANIFEST or the catalog.
    MetaWrite,
}

/// The engine's I/O boundary for fault injection: called before every I/O step at a named
/// point; returning an error makes that step fail exactly like the operating system would.
pub trait IoHooks: Send + Sync {
    /// Fails the step at `point` by returning an error.
    fn check(&self, point: FailPoint) -> std::io::Result<()>;

    /// The free space the engine sees on its file system, in bytes (`None`: ask the file
    /// system). Tests model a nearly full disk with it.
    fn free_space(&self) -> Option<u64> {
        None
    }

    /// Makes the write at `point` a short write: only this many bytes of it reach the file
    /// before it fails with EIO, as a write cut off by a full disk or a failing device would
    /// leave it (`None`: the write is whole). Asked after [`IoHooks::check`] passed.
    fn short_write(&self, _point: FailPoint) -> Option<usize> {
        None
    }
}

/// Startup options of the engine.
#[derive(Clone)]
pub struct EngineOptions {
    /// `--database.maximal-journal-size`: default journal size in bytes (32 MiB); within
    /// `min_journal_size..=`[`JOURNAL_SIZE_MAX`], or `open` fails.
    pub journal_size_default: u64,
    /// Lower bound of every journal size, `journalSize` and the default: ArangoDB's
    /// [`JOURNAL_SIZE_MIN`] (1 MiB). Tests of the engine lower it (not below
    /// [`JOURNAL_SIZE_FLOOR`]) to seal journals after a few documents.
    pub min_journal_size: u64,
    /// `--wal.sync-interval`: background fdatasync interval for non-sync writes (100 ms).
    pub sync_interval: Duration,
    /// `--wal.logfile-size`: WAL segment size in bytes (32 MiB).
    pub wal_logfile_size: u64,
    /// `--database.ignore-datafile-errors`: open collections with corrupt datafiles, keeping
    /// every intact marker (salvage mode).
    pub ignore_datafile_errors: bool,
    /// Whether `open` proves every sealed datafile that has a hint file intact (one
    /// sequential CRC pass per file, in parallel) before trusting the hint: a damaged one is
    /// then scanned instead, which reports the damage (error 1000) or salvages it. On by
    /// default; docs/benchmarks/reliability.md has its cost.
    pub verify_datafiles_on_open: bool,
    /// `--compaction.*`.
    pub compaction: CompactionOptions,
    /// Whether the collector moves sealed WAL segments into journals in a background thread
    /// (tests switch it off and call [`Engine::collect`] explicitly).
    pub background_collector: bool,
    /// Fault injection (tests only); `None` in production.
    pub io_hooks: Option<Arc<dyn IoHooks>>,
    /// `--wal.throttle-when-pending`: back-pressure when the collector lags. A write that
    /// would start a new WAL segment while this many sealed segments still wait for the
    /// collector waits until the collector catches up (`0` = never throttle). Counted in
    /// segments, not in operations as in ArangoDB: the WAL's disk use is what it bounds
    /// (at most about this many segments plus one per concurrent writer). Applies only
    /// with `background_collector` (otherwise nothing would drain the WAL).
    pub wal_throttle_when_pending: usize,
    /// `--wal.throttle-wait`: how long a throttled write waits before it fails with error
    /// 1236 "write-throttling timeout" (15 s).
    pub wal_throttle_wait: Duration,
    /// Group commit: longest time the syncer waits, before an fdatasync, for as many sync
    /// writers as the previous fdatasync released to come back (0.8 ms; benchmarks vary it,
    /// see docs/benchmarks/storage.md). A lone writer never waits.
    pub group_commit_gather: Duration,
    /// `--database.disk-reserve`: bytes held back in the data directory's `RESERVE` file for
    /// drops, truncates, the collector and the compactor when the disk fills up
    /// (`engine/disk_reserve.rs`). `None`: a 32nd of the file system, between 1 MiB and the
    /// smaller of 64 MiB and two WAL segments; `Some(0)`: no reserve.
    pub disk_reserve: Option<u64>,
    /// `--storage.mapped-memory-limit`: when the file-backed part of the process's resident
    /// set passes this many bytes, the maintenance thread drops the datafiles' mapped pages
    /// (they stay in the kernel's page cache; `engine/mapped_budget.rs`). `None`: no limit.
    pub mapped_memory_limit: Option<u64>,
}

impl Default for EngineOptions {
    fn default() -> EngineOptions {
        EngineOptions {
            journal_size_default: 32 * 1024 * 1024,
            min_journal_size: JOURNAL_SIZE_MIN,
            sync_interval: Duration::from_millis(100),
            wal_logfile_size: 32 * 1024 * 1024,
            ignore_datafile_errors: false,
            verify_datafiles_on_open: true,
            compaction: CompactionOptions::default(),
            background_collector: true,
            io_hooks: None,
            wal_throttle_when_pending: 8,
            wal_throttle_wait: Duration::from_secs(15),
            group_commit_gather: Duration::from_micros(800),
            disk_reserve: None,
            mapped_memory_limit: None,
        }
    }
}

impl fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineOptions")
            .field("journal_size_default", &self.journal_size_default)
            .field("min_journal_size", &self.min_journal_size)
            .field("sync_interval", &self.sync_interval)
            .field("wal_logfile_size", &self.wal_logfile_size)
            .field("ignore_datafile_errors", &self.ignore_datafile_errors)
            .field("verify_datafiles_on_open", &self.verify_datafiles_on_open)
            .field("compaction", &self.compaction)
            .field("background_collector", &self.background_collector)
            .field("io_hooks", &self.io_hooks.is_some())
            .field("wal_throttle_when_pending", &self.wal_throttle_when_pending)
            .field("wal_throttle_wait", &self.wal_throttle_wait)
            .field("group_commit_gather", &self.group_commit_gather)
            .field("disk_reserve", &self.disk_reserve)
            .field("mapped_memory_limit", &self.mapped_memory_limit)
            .finish()
    }
}

/// A database as recovered from disk.
#[derive(Clone, Debug)]
pub struct DatabaseEntry {
    /// Engine id.
    pub id: DatabaseId,
    /// The core's opaque metadata.
    pub meta: serde_json::Value,
    /// Its collections.
    pub collections: Vec<CollectionEntry>,
}

/// A collection as recovered from disk.
#[derive(Clone, Debug)]
pub struct CollectionEntry {
    /// Engine id.
    pub id: CollectionId,
    /// Storage options.
    pub options: CollectionOptions,
    /// The core's opaque metadata.
    pub meta: serde_json::Value,
    /// `Err` when the collection's files are corrupt (it is then not readable or writable).
    pub status: Result<(), Error>,
}

/// One document version as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredDocument {
    /// Its revision.
    pub rev: Revision,
    /// Its body (opaque bytes).
    pub body: Bytes,
}

/// What an explicit compaction did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionReport {
    /// Datafiles that were rewritten.
    pub files_compacted: usize,
    /// Result files written.
    pub files_written: usize,
    /// Bytes of dead markers dropped.
    pub bytes_reclaimed: u64,
    /// Markers copied into the result.
    pub markers_kept: u64,
    /// Markers dropped.
    pub markers_dropped: u64,
}

/// What [`Engine::verify`] checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Files read.
    pub files: usize,
    /// Data markers checked.
    pub markers: u64,
    /// Bytes of marker data checked.
    pub bytes: u64,
}

/// Upper bounds (seconds) of the buckets of [`EngineStats::fsync_buckets`]: 100 µs doubling
/// up to about 1.6 s, then `+Inf`.
pub const FSYNC_SECONDS_BUCKETS: [f64; 15] = [
    0.0001, 0.0002, 0.0004, 0.0008, 0.0016, 0.0032, 0.0064, 0.0128, 0.0256, 0.0512, 0.1024, 0.2048,
    0.4096, 0.8192, 1.6384,
];

/// Engine-wide counters since open (for tests, benchmarks and metrics).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineStats {
    /// Batches committed.
    pub commits: u64,
    /// fdatasync calls on WAL segments.
    pub wal_syncs: u64,
    /// Bytes of markers appended to the WAL.
    pub wal_bytes: u64,
    /// WAL segments started.
    pub wal_segments_started: u64,
    /// WAL segments sealed.
    pub wal_segments_sealed: u64,
    /// Sealed WAL segments collected into journals.
    pub wal_segments_collected: u64,
    /// Sealed WAL segments waiting for the collector now.
    pub wal_segments_pending: u64,
    /// Writers that had to wait for the write-throttle.
    pub wal_throttled: u64,
    /// Group-commit rounds that ran fdatasync.
    pub group_commit_rounds: u64,
    /// Writers that waited for a group commit.
    pub group_commit_waits: u64,
    /// Group-commit rounds per fdatasync duration: one count per bucket of
    /// [`FSYNC_SECONDS_BUCKETS`] plus the `+Inf` bucket (not cumulative).
    pub fsync_buckets: Vec<u64>,
    /// Group-commit rounds timed.
    pub fsync_count: u64,
    /// Their total fdatasync time in seconds.
    pub fsync_seconds: f64,
    /// Compaction passes that rewrote datafiles.
    pub compaction_runs: u64,
    /// Datafiles compacted.
    pub compaction_files: u64,
    /// Bytes the compactor reclaimed.
    pub compaction_bytes_reclaimed: u64,
    /// Markers whose checksum failed when read at run time (point reads, scans, compaction,
    /// verify); each read answered error 1000.
    pub checksum_failures: u64,
    /// Size of the disk reserve (`RESERVE`), 0 when there is none.
    pub disk_reserve_bytes: u64,
    /// Whether the disk reserve is in place (false after a full disk released it).
    pub disk_reserve_held: bool,
    /// Times the disk reserve was released since startup.
    pub disk_reserve_releases: u64,
}

/// Count and total size of one kind of file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileFigures {
    /// Number of files.
    pub count: u64,
    /// Their total size on disk in bytes.
    pub file_size: u64,
}

/// ArangoDB-style figures of one collection.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// Live documents.
    pub alive_count: u64,
    /// Bytes of live document markers.
    pub alive_size: u64,
    /// Dead (superseded or removed) document markers still on disk.
    pub dead_count: u64,
    /// Bytes of dead markers.
    pub dead_size: u64,
    /// Removal markers on disk.
    pub dead_deletion: u64,
    /// Sealed datafiles.
    pub datafiles: FileFigures,
    /// Journals.
    pub journals: FileFigures,
    /// Compaction result files currently being written.
    pub compactors: FileFigures,
    /// Markers of this collection still only in the WAL.
    pub uncollected_logfile_entries: u64,
    /// Memory used by the primary index, estimated.
    pub index_memory: u64,
    /// The highest tick of any marker of this collection.
    pub last_tick: u64,
    /// The journal size in effect.
    pub journal_size: u64,
    /// Compaction state, e.g. "compacted 2 datafiles" or "no compaction needed".
    pub compaction_status: String,
}

#[derive(Clone, Debug)]
enum BatchOp {
    Put {
        cid: CollectionId,
        key: String,
        rev: Revision,
        body: Bytes,
    },
    Remove {
        cid: CollectionId,
        key: String,
        rev: Revision,
    },
    /// Only ever alone in a batch (built by `Engine::truncate`): its marker's tick is then
    /// the batch's commit tick, which the index uses as the truncate's floor.
    Truncate { cid: CollectionId, rev: Revision },
}

/// A set of document writes committed atomically (all or nothing, visible at once).
#[derive(Clone, Debug, Default)]
pub struct WriteBatch {
    ops: Vec<BatchOp>,
    sync: bool,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Inserts or overwrites `key` in collection `cid`.
    pub fn put(&mut self, cid: CollectionId, key: &str, rev: Revision, body: Bytes) {
        self.ops.push(BatchOp::Put {
            cid,
            key: key.to_string(),
            rev,
            body,
        });
    }

    /// Removes `key`; `rev` is the revision of the removal.
    pub fn remove(&mut self, cid: CollectionId, key: &str, rev: Revision) {
        self.ops.push(BatchOp::Remove {
            cid,
            key: key.to_string(),
            rev,
        });
    }

    /// Requests stable storage before the ticket completes.
    pub fn set_sync(&mut self, sync: bool) {
        self.sync = sync;
    }

    /// Whether the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }
}

/// Durability handle of a committed batch.
pub struct CommitTicket {
    /// The batch's commit tick.
    pub tick: u64,
    sync: bool,
    inner: Option<Arc<engine::Inner>>,
    /// WAL pages to make writable once the committer has released its locks, which is when
    /// it drops the ticket (see `files::AppendMap::write_at`).
    populate_ahead: Option<files::PopulateAhead>,
}

impl fmt::Debug for CommitTicket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommitTicket")
            .field("tick", &self.tick)
            .field("sync", &self.sync)
            .finish()
    }
}

impl CommitTicket {
    /// Whether completing this ticket waits for stable storage.
    pub fn needs_sync(&self) -> bool {
        self.sync
    }

    /// Blocks until the batch is as durable as requested: returns at once for non-sync
    /// batches (they reached the OS before `commit` returned), after the group fdatasync that
    /// covers the batch otherwise.
    pub fn wait(self) -> Result<()> {
        let (tick, inner) = self.release();
        match inner {
            Some(inner) => inner.wait_durable(tick),
            None => Ok(()),
        }
    }

    /// Like [`CommitTicket::wait`], without blocking an async worker thread.
    pub async fn wait_async(self) -> Result<()> {
        let (tick, inner) = self.release();
        match inner {
            Some(inner) => inner.wait_durable_async(tick).await,
            None => Ok(()),
        }
    }

    /// Runs the deferred WAL work now, before any wait for durability (the next writers need
    /// those pages, not this writer's fsync); returns the tick and, if this ticket waits for
    /// stable storage, the engine to wait on.
    fn release(self) -> (u64, Option<Arc<engine::Inner>>) {
        drop(self.populate_ahead);
        (self.tick, self.inner.filter(|_| self.sync))
    }
}

/// A consistent read view: sees every batch committed before it was taken and nothing after.
/// Holding it keeps the versions (and files) it needs alive; it never blocks writers.
#[derive(Clone)]
pub struct Snapshot {
    state: Arc<engine::SnapshotState>,
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("tick", &self.tick())
            .finish()
    }
}

impl Snapshot {
    /// The document `key` of collection `cid` as of this snapshot.
    pub fn get(&self, cid: CollectionId, key: &str) -> Result<Option<StoredDocument>> {
        self.state.get(cid, key)
    }

    /// Whether `key` exists in this snapshot (without reading the body).
    pub fn contains(&self, cid: CollectionId, key: &str) -> Result<bool> {
        Ok(self.state.revision(cid, key)?.is_some())
    }

    /// The revision of `key` in this snapshot (without reading the body).
    pub fn revision(&self, cid: CollectionId, key: &str) -> Result<Option<Revision>> {
        self.state.revision(cid, key)
    }

    /// The revision of `key` in this snapshot and the tick of the marker that wrote that
    /// version (without reading the body). Ticks grow with the commit order: a version
    /// written by a batch committed after a batch with commit tick `t` has a tick above `t`,
    /// before and after a restart (recovery keeps each marker's own tick, which lies between
    /// the previous batch's commit tick and its own batch's).
    pub fn revision_and_tick(
        &self,
        cid: CollectionId,
        key: &str,
    ) -> Result<Option<(Revision, u64)>> {
        self.state.revision_and_tick(cid, key)
    }

    /// The existence epoch of collection `cid` if it describes the keys alive in this
    /// snapshot: a number that changes whenever a commit inserts a new key into the collection,
    /// removes one or truncates it (never when an alive key gets a new version), unique across
    /// collections and changes. None when a change newer than this snapshot exists. Two
    /// snapshots that get the same epoch see the same keys alive in `cid`, so a reader may
    /// remember "key k is alive under epoch e" and trust it in any snapshot that gets `e`.
    pub fn existence_epoch(&self, cid: CollectionId) -> Result<Option<u64>> {
        self.state.existence_epoch(cid)
    }

    /// Number of documents alive in this snapshot.
    pub fn count(&self, cid: CollectionId) -> Result<u64> {
        self.state.count(cid)
    }

    /// All documents alive in this snapshot, in no particular order, in bounded chunks: the
    /// index is walked 256 keys per lock acquisition, bodies are read outside any lock.
    pub fn scan(
        &self,
        cid: CollectionId,
    ) -> Result<impl Iterator<Item = Result<(String, StoredDocument)>>> {
        self.state.scan(cid)
    }

    /// The documents alive in this snapshot whose version was written after the batch with
    /// commit tick `after` (see [`Snapshot::revision_and_tick`]), like [`Snapshot::scan`];
    /// the other documents are skipped in the primary index without being read.
    pub fn scan_written_after(
        &self,
        cid: CollectionId,
        after: u64,
    ) -> Result<impl Iterator<Item = Result<(String, StoredDocument)>>> {
        self.state.scan_written_after(cid, after)
    }

    /// All documents alive in this snapshot in storage order (file by file, front to back),
    /// for consumers that need no key order: much cheaper per document than [`Snapshot::scan`]
    /// on large collections. Memory is bounded (locations are collected in windows); see
    /// the `engine::ordered_scan` module notes for consistency and checksum handling.
    pub fn ordered_scan(&self, cid: CollectionId) -> Result<OrderedScan> {
        self.state.ordered_scan(cid)
    }

    /// The documents alive in this snapshot whose keys lie within `bounds`, in byte order of
    /// the keys (descending when `reverse`), read lazily from the primary index: stopping
    /// after `n` documents costs about `n` reads (the `engine::key_range` module notes).
    pub fn key_range(
        &self,
        cid: CollectionId,
        bounds: (std::ops::Bound<String>, std::ops::Bound<String>),
        reverse: bool,
    ) -> Result<KeyRangeIter> {
        self.state.key_range(cid, bounds, reverse)
    }

    /// Whether every key collection `cid` ever held is [`binary_ordered_key`], so that byte
    /// order (that of [`Snapshot::key_range`]) is AQL's string order among its keys.
    pub fn keys_binary_ordered(&self, cid: CollectionId) -> Result<bool> {
        self.state.keys_binary_ordered(cid)
    }

    /// The snapshot's tick.
    pub fn tick(&self) -> u64 {
        self.state.tick()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_are_send_and_sync() {
        send_sync::<Engine>();
        send_sync::<Snapshot>();
        send_sync::<CommitTicket>();
        send_sync::<WriteBatch>();
    }

    #[test]
    fn write_batch_counts_operations() {
        let mut b = WriteBatch::new();
        assert!(b.is_empty());
        b.put(1, "a", Revision(1), Bytes::from_static(b"x"));
        b.remove(1, "b", Revision(2));
        b.set_sync(true);
        assert_eq!(b.len(), 2);
        assert!(!b.is_empty());
        assert!(b.sync);
    }
}
