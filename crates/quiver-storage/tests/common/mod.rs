#![allow(dead_code)]

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use quiver_storage::{
    CollectionOptions, CompactionOptions, Engine, EngineOptions, FailPoint, IoHooks, WriteBatch,
};

/// Small files so that tests rotate, collect and compact after a few operations; background
/// threads off so that tests decide when collection and compaction happen.
pub fn small_options() -> EngineOptions {
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

pub fn open(dir: &Path) -> Engine {
    Engine::open(dir, small_options()).expect("open")
}

pub fn setup(engine: &Engine) -> (u64, u64) {
    let db = engine
        .create_database(serde_json::json!({"name": "test"}))
        .unwrap();
    let cid = engine
        .create_collection(
            db,
            CollectionOptions::default(),
            serde_json::json!({"name": "c"}),
        )
        .unwrap();
    (db, cid)
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

pub fn contents(engine: &Engine, cid: u64) -> BTreeMap<String, String> {
    let snap = engine.snapshot();
    let mut out = BTreeMap::new();
    for item in snap.scan(cid).unwrap() {
        let (k, d) = item.unwrap();
        assert!(out
            .insert(k, String::from_utf8(d.body.to_vec()).unwrap())
            .is_none());
    }
    assert_eq!(snap.count(cid).unwrap(), out.len() as u64);
    for (k, v) in &out {
        let d = snap.get(cid, k).unwrap().unwrap();
        assert_eq!(&d.body[..], v.as_bytes());
    }
    out
}

/// Fault injection: every armed point fails with the given OS error until disarmed.
#[derive(Default)]
pub struct Faults {
    armed: Mutex<HashSet<FailPoint>>,
    errno: Mutex<i32>,
    pub hits: Mutex<Vec<FailPoint>>,
}

impl Faults {
    pub fn arm(&self, p: FailPoint, errno: i32) {
        self.armed.lock().insert(p);
        *self.errno.lock() = errno;
    }
    pub fn disarm_all(&self) {
        self.armed.lock().clear();
    }
}

impl IoHooks for Faults {
    fn check(&self, point: FailPoint) -> std::io::Result<()> {
        if self.armed.lock().contains(&point) {
            self.hits.lock().push(point);
            return Err(std::io::Error::from_raw_os_error(*self.errno.lock()));
        }
        Ok(())
    }
}

pub fn with_faults(faults: &Arc<Faults>) -> EngineOptions {
    EngineOptions {
        io_hooks: Some(faults.clone() as Arc<dyn IoHooks>),
        ..small_options()
    }
}

/// Models a power loss that also lost `wal/durable-tick` (it is written without fsync):
/// then nothing vouches for the WAL's unsynced tail, which these tests damage. Had the
/// record survived, it would name a tick before the damage (it is only written after the
/// fdatasync it describes); tests that keep it expect the damage to be reported.
pub fn lose_durable_record(dir: &Path) {
    let _ = std::fs::remove_file(dir.join("wal").join("durable-tick"));
}
