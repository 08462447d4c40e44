//! quiver-storage: QuiverDB's log-structured storage engine.
//!
//! One group-committed write-ahead log for all collections sits in front of per-collection
//! journals and datafiles (see docs/design/storage.md and docs/storage-format.md). The engine
//! stores opaque byte bodies addressed by key with a revision; it knows nothing about JSON.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use quiver_errors::{Error, ErrorCode, Result};
use quiver_types::{Hlc, Revision};

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
}

/// Startup options of the engine.
#[derive(Clone)]
pub struct EngineOptions {
    /// `--database.maximal-journal-size`: default journal size in bytes (32 MiB).
    pub journal_size_default: u64,
    /// `--wal.sync-interval`: background fdatasync interval for non-sync writes (100 ms).
    pub sync_interval: Duration,
    /// `--wal.logfile-size`: WAL segment size in bytes (32 MiB).
    pub wal_logfile_size: u64,
    /// `--database.ignore-datafile-errors`: open collections with corrupt datafiles, keeping
    /// every intact marker (salvage mode).
    pub ignore_datafile_errors: bool,
    /// `--compaction.*`.
    pub compaction: CompactionOptions,
    /// Whether the collector moves sealed WAL segments into journals in a background thread
    /// (tests switch it off and call [`Engine::collect`] explicitly).
    pub background_collector: bool,
    /// Fault injection (tests only); `None` in production.
    pub io_hooks: Option<Arc<dyn IoHooks>>,
}

impl Default for EngineOptions {
    fn default() -> EngineOptions {
        EngineOptions {
            journal_size_default: 32 * 1024 * 1024,
            sync_interval: Duration::from_millis(100),
            wal_logfile_size: 32 * 1024 * 1024,
            ignore_datafile_errors: false,
            compaction: CompactionOptions::default(),
            background_collector: true,
            io_hooks: None,
        }
    }
}

impl fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineOptions")
            .field("journal_size_default", &self.journal_size_default)
            .field("sync_interval", &self.sync_interval)
            .field("wal_logfile_size", &self.wal_logfile_size)
            .field("ignore_datafile_errors", &self.ignore_datafile_errors)
            .field("compaction", &self.compaction)
            .field("background_collector", &self.background_collector)
            .field("io_hooks", &self.io_hooks.is_some())
            .finish()
    }
}

/// Storage options of one collection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionOptions {
    /// Journal size in bytes; `None` = engine default. Affects new journals only.
    pub journal_size: Option<u64>,
    /// Every write to this collection waits for stable storage.
    pub wait_for_sync: bool,
    /// Whether the compactor may rewrite this collection's datafiles.
    pub do_compact: bool,
}

impl Default for CollectionOptions {
    fn default() -> CollectionOptions {
        CollectionOptions {
            journal_size: None,
            wait_for_sync: false,
            do_compact: true,
        }
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

#[allow(dead_code)] // read by the engine implementation that follows
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
#[derive(Debug)]
pub struct CommitTicket {
    /// The batch's commit tick.
    pub tick: u64,
}

impl CommitTicket {
    /// Blocks until the batch is as durable as requested.
    pub fn wait(self) -> Result<()> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Waits without blocking an async worker thread.
    pub async fn wait_async(self) -> Result<()> {
        Err(Error::new(ErrorCode::NotImplemented))
    }
}

/// A consistent read view: sees every batch committed before it was taken and nothing after.
#[derive(Clone, Debug)]
pub struct Snapshot {
    tick: u64,
}

impl Snapshot {
    /// The document `key` of collection `cid` as of this snapshot.
    pub fn get(&self, _cid: CollectionId, _key: &str) -> Result<Option<StoredDocument>> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Whether `key` exists in this snapshot (without reading the body).
    pub fn contains(&self, _cid: CollectionId, _key: &str) -> Result<bool> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// The revision of `key` in this snapshot (without reading the body).
    pub fn revision(&self, _cid: CollectionId, _key: &str) -> Result<Option<Revision>> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Number of documents alive in this snapshot.
    pub fn count(&self, _cid: CollectionId) -> Result<u64> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// All documents alive in this snapshot, in no particular order, in bounded chunks.
    pub fn scan(
        &self,
        _cid: CollectionId,
    ) -> Result<impl Iterator<Item = Result<(String, StoredDocument)>>> {
        Err::<std::iter::Empty<Result<(String, StoredDocument)>>, _>(Error::new(
            ErrorCode::NotImplemented,
        ))
    }

    /// The snapshot's tick.
    pub fn tick(&self) -> u64 {
        self.tick
    }
}

/// The storage engine. Cheap to clone; all clones share one engine.
#[derive(Clone)]
pub struct Engine {
    hlc: Arc<Hlc>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

impl Engine {
    /// Opens (or creates) the engine in `dir` and recovers it.
    pub fn open(_dir: &Path, _options: EngineOptions) -> Result<Engine> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Everything the engine holds, as recovered.
    pub fn catalog(&self) -> Vec<DatabaseEntry> {
        Vec::new()
    }

    /// Creates a database.
    pub fn create_database(&self, _meta: serde_json::Value) -> Result<DatabaseId> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Replaces a database's metadata.
    pub fn update_database(&self, _db: DatabaseId, _meta: serde_json::Value) -> Result<()> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Drops a database and all its collections.
    pub fn drop_database(&self, _db: DatabaseId) -> Result<()> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Creates a collection in database `db`.
    pub fn create_collection(
        &self,
        _db: DatabaseId,
        _options: CollectionOptions,
        _meta: serde_json::Value,
    ) -> Result<CollectionId> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Replaces a collection's options and metadata.
    pub fn update_collection(
        &self,
        _cid: CollectionId,
        _options: CollectionOptions,
        _meta: serde_json::Value,
    ) -> Result<()> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// The current options of a collection.
    pub fn collection_options(&self, _cid: CollectionId) -> Result<CollectionOptions> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Drops a collection and its files.
    pub fn drop_collection(&self, _cid: CollectionId) -> Result<()> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Removes every document of a collection atomically.
    pub fn truncate(&self, _cid: CollectionId, _sync: bool) -> Result<CommitTicket> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Commits a batch atomically; visible to every snapshot taken after return.
    pub fn commit(&self, _batch: WriteBatch) -> Result<CommitTicket> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// A read view of everything committed so far.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot { tick: 0 }
    }

    /// The clock that hands out revisions.
    pub fn hlc(&self) -> &Hlc {
        &self.hlc
    }

    /// Figures of one collection.
    pub fn figures(&self, _cid: CollectionId) -> Result<Figures> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Compacts a collection now.
    pub fn compact(&self, _cid: CollectionId) -> Result<CompactionReport> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Moves every committed WAL record into the collections' journals now.
    pub fn collect(&self) -> Result<()> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Makes everything committed so far durable.
    pub fn sync(&self) -> Result<()> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// Syncs, stops background threads and closes files.
    pub fn shutdown(&self) -> Result<()> {
        Err(Error::new(ErrorCode::NotImplemented))
    }
}
