//! One collection's in-memory state: options, status, the MVCC primary index, the
//! `(tick, count)` history that answers `count()` per snapshot, and its file set (journal,
//! sealed datafiles, per-file statistics).
//!
//! Invariants: the count history is ordered by tick (entries are pushed under the WAL mutex
//! with the batch's commit tick); the datafiles are in tick (MANIFEST) order.

use crate::files::DataFile;
use crate::index::PrimaryIndex;
use crate::{CollectionOptions, JOURNAL_SIZE_FLOOR, JOURNAL_SIZE_MAX};
use parking_lot::{Mutex, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::col_dir;
use super::existence_epoch::ExistenceEpoch;

pub(crate) struct Collection {
    pub id: u64,
    pub db: u64,
    pub(super) options: RwLock<CollectionOptions>,
    pub(super) meta: RwLock<Value>,
    pub(super) status: std::result::Result<(), Error>,
    pub(super) index: PrimaryIndex,
    /// (tick, count) history; the back is the newest.
    pub(super) counts: Mutex<VecDeque<(u64, u64)>>,
    pub(super) last_tick: AtomicU64,
    pub(super) uncollected: AtomicU64,
    /// Superseded versions and tombstones installed since the last GC pass.
    pub(super) garbage: AtomicU64,
    /// Size of the compaction result being written, 0 if none.
    pub(super) compacting: AtomicU64,
    /// Highest tick of this collection's markers that are durable in its journals (persisted
    /// in the MANIFEST): WAL markers at or below it are skipped at recovery and collection.
    pub(super) collected_tick: AtomicU64,
    /// Tick of the newest truncate of this collection that is durable in its listed files
    /// (journal or datafiles): compaction drops what it covers, and drops files that lie
    /// wholly below it without reading them.
    pub(super) truncate_durable: AtomicU64,
    pub(super) dropped: AtomicBool,
    /// Something changed that can give the compactor work: a version died (replaced,
    /// removed, truncated), a journal became a datafile, a truncate became durable. Fresh
    /// inserts alone do not set it, so an insert-only collection costs the periodic check
    /// nothing (the check walks every key).
    pub(super) dirty: AtomicBool,
    /// Changes whenever a commit changes which keys are alive.
    pub(super) existence: ExistenceEpoch,
    pub(super) files: Mutex<ColFiles>,
    pub(super) compact_lock: Mutex<Option<Instant>>,
    pub(super) compaction_status: Mutex<String>,
    pub(super) dir: PathBuf,
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
        assert!(
            counts.back().is_none_or(|(last, _)| *last <= tick),
            "count history pushed out of tick order at {tick}"
        );
        counts.push_back((tick, count));
        while counts.len() > 1 && counts[1].0 <= horizon {
            counts.pop_front();
        }
    }

    /// A commit at `tick` changed the live count by `delta`; `died`: some version died.
    /// Under the WAL mutex.
    pub(super) fn note_commit(&self, tick: u64, delta: i64, died: bool, horizon: u64) {
        let count = (self.latest_count() as i64 + delta).max(0) as u64;
        self.push_count(tick, count, horizon);
        self.last_tick.store(tick, Ordering::Release);
        if died {
            self.dirty.store(true, Ordering::Release);
        }
    }

    pub(super) fn latest_count(&self) -> u64 {
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

    /// The journal size in effect: the collection's `journalSize`, else the engine's
    /// default (both validated on the way in: `CollectionOptions::validate`, `open`).
    pub(super) fn journal_size(&self, default: u64) -> u64 {
        let size = self.options.read().journal_size.unwrap_or(default);
        assert!(
            (JOURNAL_SIZE_FLOOR..=JOURNAL_SIZE_MAX).contains(&size),
            "journal size {size} escaped validation"
        );
        size
    }
}

pub(super) fn new_collection(
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
        existence: ExistenceEpoch::new(),
        files: Mutex::new(ColFiles::default()),
        compact_lock: Mutex::new(None),
        compaction_status: Mutex::new("no compaction run yet".into()),
        dir: col_dir(dir, db, id),
    }
}

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

pub(super) struct Journal {
    pub(super) file: Arc<DataFile>,
    pub(super) offset: u64,
    pub(super) size: u64,
    pub(super) count: u64,
    pub(super) max_tick: u64,
    pub(super) crc_acc: u32,
}

#[derive(Default)]
pub(super) struct ColFiles {
    pub(super) journal: Option<Journal>,
    /// Sealed datafiles in tick order (the MANIFEST order).
    pub(super) datafiles: Vec<Arc<DataFile>>,
    pub(super) stats: HashMap<u64, FileStats>,
    /// Datafiles a compaction swapped out whose files may still exist (they are unlinked once
    /// unread). The MANIFEST lists them as retired, so that startup deletes them after a
    /// kill -9 instead of judging them: an input whose removed documents the compaction dropped
    /// together with the removals would otherwise look like the only copy of those documents.
    pub(super) retired: Vec<u64>,
}
