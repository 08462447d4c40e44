//! A nearly full disk: WAL segments and journals shrink to half the free space (never below
//! what a write needs) instead of failing with 1104 while space is left.

mod harness;

use std::fs;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use harness::*;
use quiver_storage::{Engine, EngineOptions, FailPoint, IoHooks};

/// Reports a settable amount of free space; fails nothing.
#[derive(Default)]
struct SmallDisk {
    free: AtomicU64,
}

impl IoHooks for SmallDisk {
    fn check(&self, _point: FailPoint) -> std::io::Result<()> {
        Ok(())
    }
    fn free_space(&self) -> Option<u64> {
        Some(self.free.load(Ordering::Relaxed))
    }
}

fn wal_sizes(dir: &std::path::Path) -> Vec<u64> {
    files_with(&dir.join("wal"), &|n| n.ends_with(".wal"))
        .iter()
        .map(|p| fs::metadata(p).unwrap().len())
        .collect()
}

#[test]
fn segments_and_journals_shrink_to_the_space_left_and_writes_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(SmallDisk::default());
    disk.free.store(1 << 40, Ordering::Relaxed);
    let options = EngineOptions {
        wal_logfile_size: 1024 * 1024,
        journal_size_default: 1024 * 1024,
        io_hooks: Some(disk.clone()),
        ..opts()
    };
    let e = Engine::open(dir.path(), options).unwrap();
    let db = new_db(&e);
    let a = new_col(&e, db);
    put(&e, a, "first", "plenty of space");
    assert!(wal_sizes(dir.path()).iter().all(|&s| s == 1024 * 1024));
    // 100 KiB left: new segments are at most 50 KiB, and writes keep succeeding.
    disk.free.store(100 * 1024, Ordering::Relaxed);
    e.collect().unwrap();
    let mut model = fill(&e, a, 40, 900);
    model.insert("first".into(), "plenty of space".into());
    let small: Vec<u64> = wal_sizes(dir.path())
        .into_iter()
        .filter(|&s| s < 1024 * 1024)
        .collect();
    assert!(!small.is_empty(), "no segment was sized to the space left");
    assert!(small.iter().all(|&s| s <= 50 * 1024), "{small:?}");
    e.collect().unwrap();
    let journals = files_with(&dir.path().join(format!("db-{db}")), &|n| {
        n.starts_with("journal-") || n.starts_with("datafile-") && n.ends_with(".db")
    });
    assert!(journals
        .iter()
        .all(|p| fs::metadata(p).unwrap().len() <= 50 * 1024));
    // A document larger than half the free space still gets a file that holds it.
    let big = "b".repeat(80 * 1024);
    put(&e, a, "big", &big);
    model.insert("big".into(), big);
    assert_eq!(contents(&e, a), model);
    e.shutdown().unwrap();
    drop(e);
    let e = open(dir.path());
    assert_eq!(contents(&e, a), model);
}
