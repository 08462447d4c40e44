//! The storage engine: [`Engine`], the public handle, over [`Inner`], the state every part
//! of the engine shares. Each concept has its own file, all of them `impl Inner` blocks or
//! free functions over it:
//!
//! | file | owns |
//! |---|---|
//! | `backup.rs` | an online, consistent copy of the directory |
//! | `open.rs` | opening a directory: lock, catalog, recovery, ticks, threads |
//! | `catalog.rs` | databases and collections (`catalog.json`), DDL |
//! | `collection.rs` | one collection's state: options, primary index, count history, file set |
//! | `commit.rs` | the write path: `commit`, `commit_insert` (insert_new), truncate, throttling |
//! | `wal.rs` | WAL segments: rotation, spares, the append under the WAL mutex |
//! | `syncer.rs` | group commit: the syncer thread, durable tick, sync waiters |
//! | `snapshot.rs` | snapshots, the horizon, reads and key-order scans |
//! | `collector.rs` | moving sealed WAL segments into collection journals |
//! | `journal.rs` | journals and datafiles: MANIFEST, creation, sealing, hint files |
//! | `compactor.rs` | rewriting datafiles with dead markers |
//! | `compaction_plan.rs` | the pure planner and marker selection of the compactor |
//! | `recovery.rs` | reopening one collection's files at startup |
//! | `wal_recovery.rs` | replaying the WAL at startup (holes, salvage, point-in-time) |
//! | `figures.rs` | figures and `verify` |
//! | `file_table.rs` | open files by the 32-bit slot index locations name |
//! | `maintenance.rs` | the background thread: spare segments, collector, index GC, compactor |
//! | `scratch.rs` | reusable buffers of the collector and the hint writer |
//!
//! Invariants shared by all of them (asserted where they are established):
//! * ticks come from one counter ([`next_tick`], [`Inner::take_ticks`]); every tick is
//!   handed out once and they only grow;
//! * the visible tick never goes back and never passes the last tick handed out
//!   ([`Inner::publish_visible`]);
//! * the durable tick only grows, and the syncer only makes durable the WAL's written tick,
//!   a tick handed out.
//!
//! Lock order: WAL mutex → snapshot registry / index shard / count history (each briefly);
//! a collection's compaction lock → its file-set mutex → the WAL mutex (briefly) or the
//! file table.

mod backup;
mod catalog;
mod collection;
mod collector;
mod commit;
mod compaction_plan;
mod compactor;
mod counters;
mod damage_report;
mod disk_reserve;
mod durable_record;
mod existence_epoch;
mod figures;
mod file_table;
mod journal;
mod key_range;
mod maintenance;
mod mapped_budget;
mod open;
mod ordered_scan;
mod recovery;
mod salvage_report;
mod scratch;
mod snapshot;
mod syncer;
mod wal;
mod wal_recovery;

pub(crate) use collection::Collection;
pub use compaction_plan::{plan, FileStat};
pub use key_range::KeyRangeIter;
pub use mapped_budget::resident_file_bytes;
pub(crate) use open::open;
pub use ordered_scan::{OrderedScan, RawDocument, MAX_SCAN_THREADS};
pub use snapshot::ScanIter;
pub(crate) use snapshot::{snapshot, SnapshotState};

use crate::files::DataFile;
use crate::{
    CollectionId, CollectionOptions, CommitTicket, CompactionReport, DatabaseEntry, DatabaseId,
    EngineOptions, EngineStats, Figures, Snapshot, VerifyReport, WriteBatch,
};
use parking_lot::{Condvar, Mutex, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use quiver_types::{Hlc, Revision};
use std::collections::BTreeMap;
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use catalog::Catalog;
use collector::CollectorScratch;
use journal::HintScratch;
use syncer::SyncState;
use wal::WalState;

/// The storage engine. Cheap to clone; all clones share one engine.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

impl Engine {
    /// Opens (or creates) the engine in `dir` and recovers it.
    pub fn open(dir: &Path, options: EngineOptions) -> Result<Engine> {
        Ok(Engine {
            inner: open(dir, options)?,
        })
    }

    /// Writes a consistent copy of the engine's files into `target` (hard links of sealed
    /// datafiles, copies of the rest) while writers go on; an engine opened on `target`
    /// holds exactly the batches committed up to the returned tick.
    pub fn backup_to(&self, target: &Path) -> Result<u64> {
        self.inner.backup_to(target)
    }

    /// Everything the engine holds, as recovered: databases with their collections.
    /// Collections whose files are corrupt are listed with their error as status.
    pub fn catalog(&self) -> Vec<DatabaseEntry> {
        self.inner.catalog_entries()
    }

    /// Creates a database (durable when this returns).
    pub fn create_database(&self, meta: serde_json::Value) -> Result<DatabaseId> {
        self.inner.create_database(meta)
    }

    /// Replaces a database's metadata.
    pub fn update_database(&self, db: DatabaseId, meta: serde_json::Value) -> Result<()> {
        self.inner.update_database(db, meta)
    }

    /// Drops a database and all its collections.
    pub fn drop_database(&self, db: DatabaseId) -> Result<()> {
        self.inner.drop_database(db)
    }

    /// Creates a collection in database `db` (durable when this returns).
    pub fn create_collection(
        &self,
        db: DatabaseId,
        options: CollectionOptions,
        meta: serde_json::Value,
    ) -> Result<CollectionId> {
        self.inner.create_collection(db, options, meta)
    }

    /// Checks a collection's storage options against the engine's bounds (`journalSize`
    /// within `EngineOptions::min_journal_size..=`[`crate::JOURNAL_SIZE_MAX`]): error 10
    /// naming the bound, exactly as [`Engine::create_collection`] and
    /// [`Engine::update_collection`] would refuse them.
    pub fn validate_collection_options(&self, options: &CollectionOptions) -> Result<()> {
        options.validate(self.inner.options.min_journal_size)
    }

    /// Replaces a collection's options and metadata (a new journal size applies to the next
    /// journal).
    pub fn update_collection(
        &self,
        cid: CollectionId,
        options: CollectionOptions,
        meta: serde_json::Value,
    ) -> Result<()> {
        self.inner.update_collection(cid, options, meta)
    }

    /// The current options of a collection.
    pub fn collection_options(&self, cid: CollectionId) -> Result<CollectionOptions> {
        self.inner.collection_options(cid)
    }

    /// Drops a collection and its files.
    pub fn drop_collection(&self, cid: CollectionId) -> Result<()> {
        self.inner.drop_collection(cid)
    }

    /// Removes every document of a collection atomically: one truncate marker in the WAL,
    /// applied to the index in O(1) (snapshots taken before still see the old documents).
    pub fn truncate(&self, cid: CollectionId, sync: bool) -> Result<CommitTicket> {
        self.inner.truncate(cid, sync)
    }

    /// Commits one document put for a key that must not be alive: `Ok(None)`, writing
    /// nothing, if `key` exists in `cid` at the newest state. The existence check and the
    /// index install are one descent under the WAL mutex, which is what makes this cheaper
    /// than [`Engine::latest_revision`] followed by [`Engine::commit`]. As with those, the
    /// caller keeps other writers of `cid` that decide on a read of the key (the core's
    /// collection writer lock) out while it runs.
    pub fn insert_new(
        &self,
        cid: CollectionId,
        key: &str,
        rev: Revision,
        body: &[u8],
        sync: bool,
    ) -> Result<Option<CommitTicket>> {
        self.inner.commit_insert(cid, key, rev, body, sync)
    }

    /// Commits a batch atomically; visible to every snapshot taken after return.
    pub fn commit(&self, batch: WriteBatch) -> Result<CommitTicket> {
        self.inner.commit(batch)
    }

    /// A read view of everything committed so far.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            state: Arc::new(snapshot(&self.inner)),
        }
    }

    /// The revision of `key` in the newest committed state (None: absent), without the cost
    /// of a snapshot. The answer can be stale as soon as it is returned unless the caller keeps
    /// every other writer of `cid` out, as the core's collection writer lock does for its
    /// "does this key exist now" decision.
    pub fn latest_revision(&self, cid: CollectionId, key: &str) -> Result<Option<Revision>> {
        self.inner.latest_revision(cid, key)
    }

    /// The clock that hands out revisions.
    pub fn hlc(&self) -> &Hlc {
        &self.inner.hlc
    }

    /// Figures of one collection.
    pub fn figures(&self, cid: CollectionId) -> Result<Figures> {
        self.inner.figures_of(cid)
    }

    /// Compacts a collection now: moves its WAL data into datafiles, then rewrites every
    /// datafile holding dead markers.
    pub fn compact(&self, cid: CollectionId) -> Result<CompactionReport> {
        self.inner.compact(cid)
    }

    /// Reads every datafile and the journal of a collection and checks every marker and
    /// footer (restart trusts hint files and does not read datafiles; this is the operator's
    /// full check). Error 1000 names the file and offset of the first problem.
    pub fn verify(&self, cid: CollectionId) -> Result<VerifyReport> {
        self.inner.verify(cid)
    }

    /// Moves every committed WAL record into the collections' journals now.
    pub fn collect(&self) -> Result<()> {
        self.inner.collect_all()
    }

    /// Makes everything committed so far durable.
    pub fn sync(&self) -> Result<()> {
        self.inner.sync_all()
    }

    /// Engine-wide counters.
    pub fn stats(&self) -> EngineStats {
        let mut stats = EngineStats {
            commits: self
                .inner
                .commits
                .load(std::sync::atomic::Ordering::Relaxed),
            wal_syncs: self
                .inner
                .wal_syncs
                .load(std::sync::atomic::Ordering::Relaxed),
            wal_segments_pending: self
                .inner
                .pending_segments
                .load(std::sync::atomic::Ordering::Relaxed)
                as u64,
            disk_reserve_bytes: self.inner.reserve.size(),
            disk_reserve_held: self.inner.reserve.is_held(),
            disk_reserve_releases: self.inner.reserve.releases(),
            ..EngineStats::default()
        };
        self.inner.counters.fill(&mut stats);
        stats
    }

    /// The oldest tick any live snapshot reads at (the newest visible tick when none is
    /// held). Versions superseded at or below it are invisible to every present and future
    /// snapshot, which is what lets secondary indexes drop their entries.
    pub fn horizon(&self) -> u64 {
        self.inner.horizon()
    }

    /// The tick of the newest visible commit.
    pub fn last_tick(&self) -> u64 {
        self.inner.visible_tick()
    }

    /// Syncs, stops background threads and releases the directory lock.
    pub fn shutdown(&self) -> Result<()> {
        self.inner.shutdown()
    }
}

/// Largest WAL segment size (a larger `--wal.logfile-size` is clamped to it), 1 GiB.
const MAX_FILE_SIZE: u64 = 1 << 30;

struct Background {
    stop: AtomicBool,
    wake: Mutex<bool>,
    cv: Condvar,
    /// Set by a drop or truncate: the next maintenance round collects the WAL's current
    /// segment too, so that the space its dropped markers hold is freed at once.
    collect_active: AtomicBool,
}

/// The state every part of the engine shares; each file of this module implements one
/// concept on it.
pub(crate) struct Inner {
    dir: PathBuf,
    options: EngineOptions,
    pub hlc: Hlc,
    tick: AtomicU64,
    visible: AtomicU64,
    catalog: RwLock<Arc<Catalog>>,
    ddl: Mutex<()>,
    /// Open files by slot (`file_table.rs`): what index locations name.
    files: file_table::FileTable,
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
    /// Reads through datafile maps, counted against `--storage.mapped-memory-limit`.
    mapped_reads: mapped_budget::MappedReads,
    bg: Arc<Background>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    lock_file: Mutex<Option<File>>,
    pub wal_syncs: AtomicU64,
    pub commits: AtomicU64,
    /// Activity counters for monitoring.
    counters: counters::EngineCounters,
    /// Mirror of `SyncState::durable` readable without the sync mutex (commit path).
    durable_tick: AtomicU64,
    /// Mirror of `WalState::sealed.len()` for the throttle check before the WAL mutex.
    pending_segments: AtomicUsize,
    /// Throttled writers wait on this; the collector notifies it per collected segment.
    throttle: Mutex<()>,
    throttle_cv: Condvar,
    /// `wal/durable-tick`, rewritten by the syncer after every group commit
    /// (`durable_record.rs`): `None` until the first one, `Some(None)` once it could not be
    /// opened or written (not retried).
    durable_record: Mutex<Option<Option<File>>>,
    /// What startup salvaged or found lost (`--database.ignore-datafile-errors`); written
    /// into the salvage report at the end of `open`.
    salvage_notes: Mutex<Vec<String>>,
    /// Damaged locations already logged (`damage_report.rs`).
    damage_logged: Mutex<damage_report::LoggedDamage>,
    /// Space held back for drops, truncates and the collector on a full disk.
    reserve: disk_reserve::DiskReserve,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.bg.stop.store(true, Ordering::Release);
        self.bg.cv.notify_all();
    }
}

/// One tick (a file id, database or collection id): the next value of the counter that also
/// hands out marker ticks ([`Inner::take_ticks`]), so no id is ever handed out twice.
fn next_tick(inner: &Inner) -> u64 {
    let before = inner.tick.fetch_add(1, Ordering::AcqRel);
    assert!(before < u64::MAX, "tick counter exhausted");
    before + 1
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

impl Inner {
    /// Refuses writes after shutdown, or after a failed WAL fdatasync poisoned the engine.
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

    /// Stops accepting writes (until restart) after `err`, and wakes every sync waiter so it
    /// fails with it.
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

    /// The open file in `slot` of the file table (`None` once it was dropped from it).
    pub(crate) fn file(&self, slot: u32) -> Option<Arc<DataFile>> {
        self.files.get(slot)
    }

    /// Syncs the WAL, stops the background threads and releases the directory lock.
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
}
