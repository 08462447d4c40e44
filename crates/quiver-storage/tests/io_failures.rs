//! Durability under I/O failures: a failure at any named I/O point loses nothing
//! acknowledged, a failed WAL fdatasync is never swallowed, a failed WAL write leaves no
//! trace and moves the next commit to a fresh segment, a torn WAL keeps batches whole.

mod harness;

use std::collections::BTreeMap;
use std::fs;
use std::sync::Arc;

use bytes::Bytes;
use harness::*;
use quiver_storage::format;
use quiver_storage::{Engine, FailPoint, WriteBatch};

type Model = BTreeMap<String, String>;

/// Overwrites, removals and re-inserts so that datafiles hold dead versions and tombstones.
fn churn(e: &Engine, cid: u64, model: &mut Model, round: usize) {
    for i in 0..12 {
        let key = format!("d{:03}", (i * 5 + round) % 20);
        match (i + round) % 4 {
            0 => {
                remove(e, cid, &key);
                model.remove(&key);
            }
            _ => {
                let body = format!("r{round}-{i}:{}", "y".repeat(300 + i * 20));
                put(e, cid, &key, &body);
                model.insert(key, body);
            }
        }
    }
}

/// A failure at any named I/O point of collection, sealing or compaction, followed by a
/// kill -9 (directory copy) — or by a retry without the fault and then a kill -9 — never loses
/// an acknowledged write and never brings a removed document back (no snapshot is held here;
/// see compaction_safety.rs for the snapshot case).
#[test]
fn failure_at_every_maintenance_point_then_crash_keeps_exactly_the_model() {
    let points = [
        FailPoint::JournalCreate,
        FailPoint::JournalWrite,
        FailPoint::JournalSync,
        FailPoint::Seal,
        FailPoint::CompactionWrite,
        FailPoint::CompactionSwap,
        FailPoint::MetaWrite,
    ];
    for point in points {
        let dir = tempfile::tempdir().unwrap();
        let faults = Arc::new(Faults::default());
        let e = Engine::open(dir.path(), faulty(&faults)).unwrap();
        let db = new_db(&e);
        let a = new_col(&e, db);
        let mut model = fill(&e, a, 20, 400);
        churn(&e, a, &mut model, 0);
        e.compact(a).unwrap();
        churn(&e, a, &mut model, 1);
        faults.arm(point, 1);
        let failed = e.compact(a).is_err();
        assert_eq!(contents(&e, a), model, "{point:?}: live view after failure");
        // Crash right after the failure.
        let crashed = tempfile::tempdir().unwrap();
        copy_dir(dir.path(), crashed.path());
        {
            let e2 = open(crashed.path());
            assert!(col_status(&e2, a).is_ok(), "{point:?}");
            assert_eq!(
                contents(&e2, a),
                model,
                "{point:?}: after crash (failed={failed})"
            );
            // And the recovered engine keeps working.
            churn(&e2, a, &mut model.clone(), 2);
            e2.compact(a).unwrap();
        }
        // Retry without the fault, more churn, crash again.
        faults.disarm_all();
        churn(&e, a, &mut model, 3);
        e.compact(a).unwrap();
        let crashed = tempfile::tempdir().unwrap();
        copy_dir(dir.path(), crashed.path());
        drop(e);
        let e3 = open(crashed.path());
        assert_eq!(contents(&e3, a), model, "{point:?}: after retry and crash");
    }
}

/// A short write (a prefix of the bytes reaches the file, then EIO) at every positioned write
/// of collection, compaction and metadata, cut at several lengths, followed by a kill -9 or by
/// a retry: the live view, the crashed copy and the retried engine all hold exactly the model.
#[test]
fn short_writes_at_every_write_point_keep_exactly_the_model() {
    let points = [
        FailPoint::JournalWrite,
        FailPoint::CompactionWrite,
        FailPoint::MetaWrite,
    ];
    for point in points {
        for cut in [0, 1, 7, 64, 333, 4000] {
            let dir = tempfile::tempdir().unwrap();
            let faults = Arc::new(Faults::default());
            let e = Engine::open(dir.path(), faulty(&faults)).unwrap();
            let db = new_db(&e);
            let a = new_col(&e, db);
            let mut model = fill(&e, a, 20, 400);
            churn(&e, a, &mut model, 0);
            e.compact(a).unwrap();
            churn(&e, a, &mut model, 1);
            faults.arm_short(point, cut, 1);
            let failed = e.compact(a).is_err();
            assert!(
                failed && faults.hits.lock().contains(&point),
                "{point:?}/{cut}: the short write was not reached or not reported"
            );
            assert_eq!(
                contents(&e, a),
                model,
                "{point:?}/{cut}: live view after failure"
            );
            let crashed = tempfile::tempdir().unwrap();
            copy_dir(dir.path(), crashed.path());
            {
                let e2 = open(crashed.path());
                assert!(col_status(&e2, a).is_ok(), "{point:?}/{cut}");
                assert_eq!(contents(&e2, a), model, "{point:?}/{cut}: after crash");
                e2.verify(a).unwrap();
            }
            faults.disarm_all();
            churn(&e, a, &mut model, 2);
            e.compact(a).unwrap();
            assert_eq!(contents(&e, a), model, "{point:?}/{cut}: after retry");
            let crashed = tempfile::tempdir().unwrap();
            copy_dir(dir.path(), crashed.path());
            drop(e);
            let e3 = open(crashed.path());
            assert_eq!(
                contents(&e3, a),
                model,
                "{point:?}/{cut}: after retry and crash"
            );
            e3.verify(a).unwrap();
        }
    }
}

/// A failed fdatasync of the WAL fails the waiting sync writer and every later write (the
/// kernel may have dropped the pages: never report success after that), reads keep working,
/// and a restart recovers every write acknowledged before the failure and accepts writes.
#[test]
fn wal_fdatasync_failure_is_never_swallowed() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(Faults::default());
    let (db, a);
    {
        let e = Engine::open(dir.path(), faulty(&faults)).unwrap();
        db = new_db(&e);
        a = new_col(&e, db);
        put(&e, a, "acked", "before the failure");
        e.sync().unwrap();
        faults.arm(FailPoint::WalSync, usize::MAX);
        let mut b = WriteBatch::new();
        b.put(
            a,
            "sync",
            e.hlc().next(),
            Bytes::from_static(b"wants durability"),
        );
        b.set_sync(true);
        let ticket = e.commit(b).unwrap();
        assert!(ticket.needs_sync());
        assert!(ticket.wait().is_err(), "fdatasync error swallowed");
        let mut b = WriteBatch::new();
        b.put(a, "later", e.hlc().next(), Bytes::from_static(b"x"));
        assert!(
            e.commit(b).is_err(),
            "writes accepted after a failed fdatasync"
        );
        assert!(e.sync().is_err());
        assert_eq!(get(&e, a, "acked").as_deref(), Some("before the failure"));
        let _ = e.shutdown();
    }
    let e = open(dir.path());
    assert_eq!(get(&e, a, "acked").as_deref(), Some("before the failure"));
    assert_eq!(get(&e, a, "later"), None);
    put(&e, a, "after restart", "ok");
    assert_eq!(get(&e, a, "after restart").as_deref(), Some("ok"));
}

/// A multi-collection batch whose WAL write fails is invisible everywhere, now and after a
/// restart, and the next batch goes through.
#[test]
fn failed_wal_write_leaves_no_trace_of_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(Faults::default());
    let (a, b);
    {
        let e = Engine::open(dir.path(), faulty(&faults)).unwrap();
        let db = new_db(&e);
        a = new_col(&e, db);
        b = new_col(&e, db);
        put(&e, a, "base", "1");
        faults.arm(FailPoint::WalWrite, 1);
        let mut batch = WriteBatch::new();
        batch.put(a, "x", e.hlc().next(), Bytes::from_static(b"ax"));
        batch.put(b, "x", e.hlc().next(), Bytes::from_static(b"bx"));
        batch.remove(a, "base", e.hlc().next());
        assert!(e.commit(batch).is_err());
        assert_eq!(get(&e, a, "x"), None);
        assert_eq!(get(&e, b, "x"), None);
        assert_eq!(get(&e, a, "base").as_deref(), Some("1"));
        put(&e, b, "y", "after");
        e.collect().unwrap();
        e.shutdown().unwrap();
    }
    let e = open(dir.path());
    assert_eq!(get(&e, a, "x"), None);
    assert_eq!(get(&e, b, "x"), None);
    assert_eq!(get(&e, a, "base").as_deref(), Some("1"));
    assert_eq!(get(&e, b, "y").as_deref(), Some("after"));
}

/// After a failed WAL append (fail point), the failed batch is invisible and the next commit
/// goes to a fresh segment: the one that failed is never appended to again (it could hold a
/// partial batch). Holds for the mapped append path exactly as for `pwrite`; also checks that
/// what the map stored is what a restart reads back.
#[test]
fn failed_wal_write_moves_the_next_commit_to_a_fresh_segment() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(Faults::default());
    let a;
    {
        let e = Engine::open(dir.path(), faulty(&faults)).unwrap();
        let db = new_db(&e);
        a = new_col(&e, db);
        put(&e, a, "before-failure", "1");
        faults.arm(FailPoint::WalWrite, 1);
        let mut batch = WriteBatch::new();
        batch.put(a, "failed-write", e.hlc().next(), Bytes::from_static(b"2"));
        assert!(e.commit(batch).is_err());
        assert_eq!(get(&e, a, "failed-write"), None);
        put(&e, a, "after-failure", "3");
        assert_eq!(get(&e, a, "after-failure").as_deref(), Some("3"));
        // No collection: both batches stay in the WAL for the check below.
        e.shutdown().unwrap();
    }
    let holding = |needle: &[u8]| -> Vec<std::path::PathBuf> {
        files_with(&dir.path().join("wal"), &|name| name.ends_with(".wal"))
            .into_iter()
            .filter(|p| {
                fs::read(p)
                    .unwrap()
                    .windows(needle.len())
                    .any(|w| w == needle)
            })
            .collect()
    };
    let before = holding(b"before-failure");
    let after = holding(b"after-failure");
    assert_eq!(before.len(), 1, "{before:?}");
    assert_eq!(after.len(), 1, "{after:?}");
    assert_ne!(
        before, after,
        "the commit after a failed append reused the segment"
    );
    assert!(holding(b"failed-write").is_empty());
    let e = open(dir.path());
    assert_eq!(get(&e, a, "before-failure").as_deref(), Some("1"));
    assert_eq!(get(&e, a, "after-failure").as_deref(), Some("3"));
    assert_eq!(get(&e, a, "failed-write"), None);
}

/// Cutting the WAL at every 8-byte offset inside the last batches: after reopening, each
/// multi-collection batch is present in both collections or in neither, and what survives
/// is a prefix of the acknowledged batches.
#[test]
fn torn_wal_keeps_multi_collection_batches_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b);
    let mut states: Vec<(Model, Model)> = vec![(Model::new(), Model::new())];
    {
        let e = open(dir.path());
        let db = new_db(&e);
        a = new_col(&e, db);
        b = new_col(&e, db);
        let (mut ma, mut mb) = (Model::new(), Model::new());
        for i in 0..6 {
            let mut batch = WriteBatch::new();
            for j in 0..3 {
                let key = format!("k{}", (i + j) % 4);
                let body = format!("{i}.{j}");
                batch.put(a, &key, e.hlc().next(), Bytes::from(body.clone()));
                batch.put(b, &key, e.hlc().next(), Bytes::from(body.clone()));
                ma.insert(key.clone(), body.clone());
                mb.insert(key, body);
            }
            e.commit(batch).unwrap();
            states.push((ma.clone(), mb.clone()));
        }
        e.shutdown().unwrap();
    }
    let segs = files_with(&dir.path().join("wal"), &|n| n.ends_with(".wal"));
    let seg = segs
        .iter()
        .find(|s| !format::scan(&fs::read(s).unwrap()).markers.is_empty())
        .expect("a segment with data")
        .clone();
    let image = fs::read(&seg).unwrap();
    let scan = format::scan(&image);
    let first = scan.markers[scan.markers.len() - 12].offset; // last two batches
    let end = scan.valid_end;
    let mut cut = first;
    while cut <= end {
        let work = tempfile::tempdir().unwrap();
        copy_dir(dir.path(), work.path());
        let target = work.path().join("wal").join(seg.file_name().unwrap());
        let mut torn = image.clone();
        torn[cut..].fill(0);
        fs::write(&target, &torn).unwrap();
        lose_durable_record(work.path());
        let e = open(work.path());
        let got = (contents(&e, a), contents(&e, b));
        assert!(
            states.contains(&got),
            "cut at {cut}: state is not a prefix of whole batches: {got:?}"
        );
        assert!(
            got == states[4] || got == states[5] || got == states[6],
            "cut at {cut}: lost batches before the cut"
        );
        cut += 8;
    }
}
