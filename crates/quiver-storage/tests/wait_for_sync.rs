//! waitForSync acknowledgements: an acknowledged sync write was fdatasynced, a failed
//! fdatasync reaches every waiter, concurrent sync writers lose nothing at a crash.

mod harness;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use harness::*;
use quiver_storage::{CollectionOptions, Engine, EngineOptions, FailPoint, WriteBatch};

/// The background syncer never runs on its own here: any fdatasync seen was requested by a
/// sync writer.
fn lazy_sync(faults: &Arc<Faults>) -> EngineOptions {
    EngineOptions {
        sync_interval: Duration::from_secs(3600),
        ..faulty(faults)
    }
}

fn batch(e: &Engine, cid: u64, key: &str, sync: bool) -> WriteBatch {
    let mut b = WriteBatch::new();
    b.put(cid, key, e.hlc().next(), Bytes::from(key.to_string()));
    b.set_sync(sync);
    b
}

/// A sync acknowledgement (blocking and async) comes after an fdatasync of the WAL; a
/// collection's waitForSync makes every write to it a sync write; an injected fdatasync
/// failure reaches both kinds of waiter.
#[test]
fn sync_acknowledgement_implies_fdatasync_and_failures_reach_every_waiter() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(Faults::default());
    let e = Engine::open(dir.path(), lazy_sync(&faults)).unwrap();
    let db = new_db(&e);
    let a = new_col(&e, db);
    let s = e
        .create_collection(
            db,
            CollectionOptions {
                wait_for_sync: true,
                ..CollectionOptions::default()
            },
            serde_json::json!({}),
        )
        .unwrap();

    let t = e.commit(batch(&e, a, "nosync", false)).unwrap();
    assert!(!t.needs_sync());
    let before = e.stats().wal_syncs;
    t.wait().unwrap();
    assert_eq!(
        e.stats().wal_syncs,
        before,
        "a non-sync write waited for fdatasync"
    );

    let t = e.commit(batch(&e, a, "sync", true)).unwrap();
    assert!(t.needs_sync());
    t.wait().unwrap();
    let after_blocking = e.stats().wal_syncs;
    assert!(
        after_blocking > before,
        "sync write acknowledged without fdatasync"
    );

    let t = e.commit(batch(&e, s, "collection-sync", false)).unwrap();
    assert!(t.needs_sync(), "collection waitForSync ignored");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(t.wait_async()).unwrap();
    assert!(e.stats().wal_syncs > after_blocking);

    faults.arm(FailPoint::WalSync, usize::MAX);
    let t1 = e.commit(batch(&e, a, "f1", true)).unwrap();
    let t2 = e.commit(batch(&e, s, "f2", false)).unwrap();
    let blocking = std::thread::spawn(move || t1.wait());
    let r2 =
        rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), t2.wait_async()).await });
    assert!(matches!(r2, Ok(Err(_))), "async waiter not failed: {r2:?}");
    assert!(
        blocking.join().unwrap().is_err(),
        "blocking waiter not failed"
    );
}

/// Concurrent sync writers (two collections, multi-document batches); a kill -9 in the
/// middle (directory copy; the collector is off so that the copy sees one consistent WAL)
/// keeps every batch acknowledged before the crash, whole, and each writer's survivors are a
/// prefix of its sequence.
#[test]
fn concurrent_sync_writers_lose_nothing_acknowledged_at_a_crash() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let e = open(dir.path());
    let db = new_db(&e);
    let a = new_col(&e, db);
    let b = new_col(&e, db);
    // Progress, not wall-clock time, decides when the "crash" happens: a loaded machine only
    // makes the test slower. The deadline merely turns a hang into a failure.
    let stop = Arc::new(AtomicBool::new(false));
    let done: Arc<Vec<AtomicUsize>> = Arc::new((0..6).map(|_| AtomicUsize::new(0)).collect());
    let writers: Vec<_> = (0..6)
        .map(|w| {
            let e = e.clone();
            let done = done.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Acquire) {
                    let key = format!("w{w}-{i}");
                    let mut batch = WriteBatch::new();
                    batch.put(a, &key, e.hlc().next(), Bytes::from(key.clone()));
                    batch.put(b, &key, e.hlc().next(), Bytes::from(key.clone()));
                    batch.set_sync(true);
                    e.commit(batch).unwrap().wait().unwrap();
                    i += 1;
                    done[w].store(i, Ordering::Release);
                }
            })
        })
        .collect();
    // Every writer has had several acknowledged batches (so the crash copy is taken while
    // all of them are mid-stream).
    let deadline = Instant::now() + Duration::from_secs(120);
    while done.iter().any(|d| d.load(Ordering::Acquire) < 3) {
        assert!(
            Instant::now() < deadline,
            "writers made no progress in 120 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let must_have: Vec<usize> = done.iter().map(|d| d.load(Ordering::Acquire)).collect();
    let crashed = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), crashed.path());
    stop.store(true, Ordering::Release);
    for w in writers {
        w.join().unwrap();
    }
    let e2 = open(crashed.path());
    let (ca, cb): (BTreeMap<_, _>, BTreeMap<_, _>) = (contents(&e2, a), contents(&e2, b));
    assert_eq!(ca, cb, "a batch survived the crash in one collection only");
    for (w, &must) in must_have.iter().enumerate() {
        let mut n = 0;
        while ca.contains_key(&format!("w{w}-{n}")) {
            n += 1;
        }
        let present = ca
            .keys()
            .filter(|k| k.starts_with(&format!("w{w}-")))
            .count();
        assert_eq!(present, n, "writer {w}: survivors are not a prefix");
        assert!(
            n >= must,
            "writer {w}: {n} survived, {must} were acknowledged"
        );
    }
}
