//! Opening the engine: takes the directory lock, reads `catalog.json`, recovers every
//! collection's files and the WAL, sets the tick counter, the visible and the durable tick
//! to the highest tick found, and starts the background threads.
//!
//! Invariant: nothing on disk carries a tick above the counter once `open` returns (the
//! counter starts at the highest tick, fid or id seen), and the clock has observed the
//! highest revision.

use crate::files;
use crate::format;
use crate::index::PrimaryIndex;
use crate::{
    check_journal_size, EngineOptions, JOURNAL_SIZE_FLOOR, JOURNAL_SIZE_MAX, JOURNAL_SIZE_MIN,
};
use parking_lot::{Condvar, Mutex, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use quiver_types::{Hlc, Revision};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use super::catalog::{options_from_json, Catalog};
use super::collection::new_collection;
use super::collector::CollectorScratch;
use super::disk_reserve::DiskReserve;
use super::journal::HintScratch;
use super::maintenance::start_threads;
use super::mapped_budget::MappedReads;
use super::recovery::{judge_unlisted, recover_collection, Recovered};
use super::syncer::SyncState;
use super::wal::WalState;
use super::wal_recovery::recover_wal;
use super::{Background, Inner};

pub(crate) fn open(dir: &Path, options: EngineOptions) -> Result<Arc<Inner>> {
    check_options(&options)?;
    let lock = lock_directory(dir)?;
    let inner = new_inner(dir, options, lock);
    let mut rec = Recovered {
        max_tick: 0,
        max_rev: 0,
    };
    let (mut cat, fresh, unlisted) = load_catalog(&inner, &mut rec)?;
    remove_leftover_directories(dir, &cat);
    let sealed = recover_wal(&inner, &cat, &mut rec)?;
    judge_unlisted_files(&inner, &mut cat, unlisted);
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
    inner.write_salvage_report();
    start_threads(&inner)?;
    Ok(inner)
}

/// The engine-wide bounds of journal sizes (`--database.maximal-journal-size` must lie
/// within them, as in ArangoDB, where a smaller one stops the server at startup).
fn check_options(options: &EngineOptions) -> Result<()> {
    let min = options.min_journal_size;
    if !(JOURNAL_SIZE_FLOOR..=JOURNAL_SIZE_MIN).contains(&min) {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            format!(
                "the smallest journal size must be between {JOURNAL_SIZE_FLOOR} and \
                 {JOURNAL_SIZE_MIN} bytes, not {min}"
            ),
        ));
    }
    let size = options.journal_size_default;
    check_journal_size(size, min).map_err(|e| {
        Error::with_message(
            e.code,
            format!(
                "--database.maximal-journal-size {size} is outside {min}..={JOURNAL_SIZE_MAX} \
                 bytes"
            ),
        )
    })
}

/// Creates the directory and takes its `LOCK` (error 1019 when another process holds it).
fn lock_directory(dir: &Path) -> Result<File> {
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
    Ok(lock)
}

/// The engine's state before recovery: empty catalog, no WAL segment, every tick 0.
fn new_inner(dir: &Path, options: EngineOptions, lock: File) -> Inner {
    let (durable_tx, _) = tokio::sync::watch::channel((0u64, false));
    // Before recovery: on a full disk it gives its space back first.
    let reserve = DiskReserve::open(
        dir,
        options.disk_reserve,
        options.wal_logfile_size,
        &options.io_hooks,
    );
    let mapped_reads = MappedReads::new(options.mapped_memory_limit);
    Inner {
        dir: dir.to_path_buf(),
        options,
        hlc: Hlc::new(),
        tick: AtomicU64::new(0),
        visible: AtomicU64::new(0),
        catalog: RwLock::new(Arc::new(Catalog::default())),
        ddl: Mutex::new(()),
        files: super::file_table::FileTable::new(),
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
            written_fid: 0,
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
        mapped_reads,
        bg: Arc::new(Background {
            stop: AtomicBool::new(false),
            wake: Mutex::new(false),
            cv: Condvar::new(),
            collect_active: AtomicBool::new(false),
        }),
        threads: Mutex::new(Vec::new()),
        lock_file: Mutex::new(Some(lock)),
        wal_syncs: AtomicU64::new(0),
        commits: AtomicU64::new(0),
        counters: super::counters::EngineCounters::new(),
        durable_tick: AtomicU64::new(0),
        pending_segments: AtomicUsize::new(0),
        throttle: Mutex::new(()),
        throttle_cv: Condvar::new(),
        durable_record: Mutex::new(None),
        salvage_notes: Mutex::new(Vec::new()),
        damage_logged: Mutex::new(Default::default()),
        reserve,
    }
}

/// The journals and datafiles each collection's MANIFEST does not list.
type Unlisted = Vec<(u64, Vec<PathBuf>)>;

/// Judges every collection's unlisted files once the WAL is replayed (see
/// [`judge_unlisted`]); a collection whose files hold documents found nowhere else fails
/// with that error as its status.
fn judge_unlisted_files(inner: &Inner, cat: &mut Catalog, unlisted: Unlisted) {
    for (id, files) in unlisted {
        let Some(col) = cat.collections.get_mut(&id) else {
            continue;
        };
        let col = Arc::get_mut(col).expect("no collection handle is shared before startup ends");
        if col.status.is_err() {
            continue;
        }
        if let Err(e) = judge_unlisted(inner, col, &files) {
            tracing::error!("collection {id} cannot be opened: {}", e);
            col.status = Err(e);
            col.index = PrimaryIndex::new();
        }
    }
}

/// Reads `catalog.json` and recovers every collection it lists (a collection that fails to
/// open keeps its error as status). Returns the catalog, whether the directory is new (no
/// catalog and no collection data), and the files the collections' MANIFESTs do not list.
fn load_catalog(inner: &Inner, rec: &mut Recovered) -> Result<(Catalog, bool, Unlisted)> {
    let dir = inner.dir.as_path();
    let mut cat = Catalog::default();
    let mut fresh = false;
    let mut unlisted = Unlisted::new();
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
                    options_from_json(&c["options"], id, inner.options.min_journal_size),
                    c["meta"].clone(),
                );
                match recover_collection(inner, &mut col, rec) {
                    Ok(files) if !files.is_empty() => unlisted.push((id, files)),
                    Ok(_) => {}
                    Err(e) => {
                        tracing::error!("collection {id} cannot be opened: {}", e);
                        col.status = Err(e);
                        col.index = PrimaryIndex::new();
                    }
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
    Ok((cat, fresh, unlisted))
}

/// Removes the directories of dropped databases and collections (an interrupted drop).
fn remove_leftover_directories(dir: &Path, cat: &Catalog) {
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
}
