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

/// A small disk reporting `free` bytes whose next `meta_failures` catalog or MANIFEST writes
/// fail with ENOSPC: the state of a disk that just filled up, until the reserve is released.
#[derive(Default)]
struct FullDisk {
    free: AtomicU64,
    meta_failures: std::sync::atomic::AtomicUsize,
}

impl IoHooks for FullDisk {
    fn check(&self, point: FailPoint) -> std::io::Result<()> {
        let failing = point == FailPoint::MetaWrite
            && self
                .meta_failures
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok();
        match failing {
            true => Err(std::io::Error::from_raw_os_error(28)), // ENOSPC
            false => Ok(()),
        }
    }
    fn free_space(&self) -> Option<u64> {
        Some(self.free.load(Ordering::Relaxed))
    }
}

#[test]
fn a_drop_on_a_full_disk_releases_the_reserve_and_ordinary_writes_leave_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(FullDisk::default());
    disk.free.store(1 << 30, Ordering::Relaxed);
    let options = EngineOptions {
        wal_logfile_size: 64 * 1024,
        disk_reserve: Some(256 * 1024),
        io_hooks: Some(disk.clone()),
        ..opts()
    };
    let e = Engine::open(dir.path(), options.clone()).unwrap();
    assert!(dir.path().join("RESERVE").exists());
    assert!(e.stats().disk_reserve_held);
    let db = new_db(&e);
    let (a, b) = (new_col(&e, db), new_col(&e, db));
    put(&e, a, "kept", "before the disk filled up");
    put(&e, b, "gone", "dropped below");

    // The disk fills up: the catalog write of the drop fails once, the reserve is released
    // and the drop goes through.
    disk.free.store(300 * 1024, Ordering::Relaxed);
    disk.meta_failures.store(1, Ordering::Relaxed);
    e.drop_collection(b).unwrap();
    let stats = e.stats();
    assert!(!stats.disk_reserve_held);
    assert_eq!(stats.disk_reserve_releases, 1);
    assert!(!dir.path().join("RESERVE").exists());

    // Ordinary writes that need a new WAL segment leave the released reserve alone: 300 KiB
    // free minus the 256 KiB reserve cannot hold a 70 KiB document.
    let big = "b".repeat(70 * 1024);
    let mut batch = quiver_storage::WriteBatch::new();
    batch.put(a, "big", e.hlc().next(), bytes::Bytes::from(big.clone()));
    let Err(refused) = e.commit(batch) else {
        panic!("the write must be refused");
    };
    assert_eq!(refused.code, quiver_errors::ErrorCode::FileSystemFull);
    assert!(
        refused.message.contains("disk reserve"),
        "{}",
        refused.message
    );
    // A truncate frees space: it may use the reserve.
    e.truncate(a, true).unwrap().wait().unwrap();
    assert!(contents(&e, a).is_empty());
    // Space is back: the next write succeeds, and a restart takes the reserve again.
    disk.free.store(1 << 30, Ordering::Relaxed);
    put(&e, a, "big", &big);
    e.shutdown().unwrap();
    drop(e);
    let e = Engine::open(dir.path(), options).unwrap();
    assert!(e.stats().disk_reserve_held);
    assert!(dir.path().join("RESERVE").exists());
    assert_eq!(get(&e, a, "big").as_deref(), Some(big.as_str()));
}
