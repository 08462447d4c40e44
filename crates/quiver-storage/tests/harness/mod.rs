//! Helpers of the crash, fault-injection and recovery tests: tiny files with background
//! threads off, a directory copy as a simulated kill -9, fault hooks, a model of
//! acknowledged writes. Kept apart from tests/common on purpose: these tests pin their own
//! setup.
#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use quiver_storage::{
    CollectionOptions, CompactionOptions, Engine, EngineOptions, FailPoint, IoHooks, WriteBatch,
};

/// Tiny files, background threads off: the test decides when collection and compaction run.
pub fn opts() -> EngineOptions {
    EngineOptions {
        journal_size_default: 8 * 1024,
        min_journal_size: quiver_storage::JOURNAL_SIZE_FLOOR,
        sync_interval: Duration::from_millis(5),
        wal_logfile_size: 16 * 1024,
        ignore_datafile_errors: false,
        compaction: CompactionOptions {
            background: false,
            ..CompactionOptions::default()
        },
        background_collector: false,
        io_hooks: None,
        ..EngineOptions::default()
    }
}

pub fn salvage_opts() -> EngineOptions {
    EngineOptions {
        ignore_datafile_errors: true,
        ..opts()
    }
}

pub fn open(dir: &Path) -> Engine {
    Engine::open(dir, opts()).expect("open")
}

pub fn new_db(engine: &Engine) -> u64 {
    engine
        .create_database(serde_json::json!({"name": "harness"}))
        .unwrap()
}

pub fn new_col(engine: &Engine, db: u64) -> u64 {
    engine
        .create_collection(db, CollectionOptions::default(), serde_json::json!({}))
        .unwrap()
}

pub fn put(engine: &Engine, cid: u64, key: &str, body: &str) {
    let mut b = WriteBatch::new();
    b.put(cid, key, engine.hlc().next(), Bytes::from(body.to_string()));
    engine.commit(b).unwrap().wait().unwrap();
}

pub fn remove(engine: &Engine, cid: u64, key: &str) {
    let mut b = WriteBatch::new();
    b.remove(cid, key, engine.hlc().next());
    engine.commit(b).unwrap().wait().unwrap();
}

pub fn get(engine: &Engine, cid: u64, key: &str) -> Option<String> {
    engine
        .snapshot()
        .get(cid, key)
        .unwrap()
        .map(|d| String::from_utf8(d.body.to_vec()).unwrap())
}

/// Everything a fresh snapshot sees, checked against `count`.
pub fn contents(engine: &Engine, cid: u64) -> BTreeMap<String, String> {
    let snap = engine.snapshot();
    let mut out = BTreeMap::new();
    for item in snap.scan(cid).unwrap() {
        let (k, d) = item.unwrap();
        assert!(out
            .insert(k, String::from_utf8(d.body.to_vec()).unwrap())
            .is_none());
    }
    assert_eq!(snap.count(cid).unwrap(), out.len() as u64, "count vs scan");
    out
}

pub fn col_status(engine: &Engine, cid: u64) -> Result<(), quiver_errors::Error> {
    for db in engine.catalog() {
        for c in db.collections {
            if c.id == cid {
                return c.status;
            }
        }
    }
    panic!("collection {cid} not in the catalog");
}

pub fn col_dir(dir: &Path, db: u64, cid: u64) -> PathBuf {
    dir.join(format!("db-{db}")).join(format!("col-{cid}"))
}

/// A copy of a live engine's directory is what a kill -9 at this moment leaves behind (every
/// acknowledged byte is in the page cache, which the copy reads).
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != "LOCK" {
            match fs::copy(entry.path(), &target) {
                // Unlinked since it was listed: a file is deleted when its last reader drops
                // it, which may be the syncer thread, after its data is durable elsewhere; a
                // kill -9 a moment later would not have found it either.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                copied => {
                    copied.unwrap();
                }
            }
        }
    }
}

pub fn files_with(dir: &Path, pred: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir(dir) else {
        return out;
    };
    for entry in rd {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            out.extend(files_with(&entry.path(), pred));
        } else if pred(&entry.file_name().to_string_lossy()) {
            out.push(entry.path());
        }
    }
    out.sort();
    out
}

/// Fault injection: a point fails `remaining` more times (`usize::MAX` = until disarmed).
#[derive(Default)]
pub struct Faults {
    armed: Mutex<HashMap<FailPoint, usize>>,
    /// Short writes: the next `times` writes at a point write `cut` bytes, then fail.
    short: Mutex<HashMap<FailPoint, (usize, usize)>>,
    pub hits: Mutex<Vec<FailPoint>>,
}

impl Faults {
    pub fn arm(&self, p: FailPoint, times: usize) {
        self.armed.lock().insert(p, times);
    }
    /// The next `times` writes at `p` write only their first `cut` bytes, then fail.
    pub fn arm_short(&self, p: FailPoint, cut: usize, times: usize) {
        self.short.lock().insert(p, (cut, times));
    }
    pub fn disarm_all(&self) {
        self.armed.lock().clear();
        self.short.lock().clear();
    }
}

impl IoHooks for Faults {
    fn check(&self, point: FailPoint) -> std::io::Result<()> {
        let mut armed = self.armed.lock();
        if let Some(n) = armed.get_mut(&point) {
            if *n > 0 {
                *n = n.saturating_sub(1);
                self.hits.lock().push(point);
                return Err(std::io::Error::from_raw_os_error(5)); // EIO
            }
        }
        Ok(())
    }
    fn short_write(&self, point: FailPoint) -> Option<usize> {
        let mut short = self.short.lock();
        let (cut, times) = short.get_mut(&point)?;
        if *times == 0 {
            return None;
        }
        *times -= 1;
        self.hits.lock().push(point);
        Some(*cut)
    }
}

pub fn faulty(faults: &Arc<Faults>) -> EngineOptions {
    EngineOptions {
        io_hooks: Some(faults.clone() as Arc<dyn IoHooks>),
        ..opts()
    }
}

/// Fills a collection with `n` documents of ~`size` bytes (keys d000..).
pub fn fill(engine: &Engine, cid: u64, n: usize, size: usize) -> BTreeMap<String, String> {
    let mut model = BTreeMap::new();
    for i in 0..n {
        let key = format!("d{i:03}");
        let body = format!("{i}:{}", "x".repeat(size));
        put(engine, cid, &key, &body);
        model.insert(key, body);
    }
    model
}

/// Models a power loss that also lost `wal/durable-tick` (it is written without fsync):
/// then nothing vouches for the WAL's unsynced tail, which these tests damage. Had the
/// record survived, it would name a tick before the damage (it is only written after the
/// fdatasync it describes); tests that keep it expect the damage to be reported.
pub fn lose_durable_record(dir: &Path) {
    let _ = std::fs::remove_file(dir.join("wal").join("durable-tick"));
}
