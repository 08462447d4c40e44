//! Snapshot isolation and non-blocking reads: a paused scan blocks nobody and keeps its
//! view; readers never see half a batch while the collector and compactor move files.

mod harness;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use bytes::Bytes;
use harness::*;
use quiver_storage::{CompactionOptions, Engine, EngineOptions, WriteBatch};

/// A scan paused in the middle holds no lock: another thread commits, collects and
/// compacts meanwhile (a watchdog fails the test instead of hanging), and the scan then
/// finishes with exactly the snapshot's contents and bodies.
#[test]
fn paused_scan_blocks_nobody_and_keeps_its_view() {
    let dir = tempfile::tempdir().unwrap();
    let e = open(dir.path());
    let db = new_db(&e);
    let a = new_col(&e, db);
    let model = fill(&e, a, 300, 100);
    e.collect().unwrap();
    let snap = e.snapshot();
    let mut iter = snap.scan(a).unwrap();
    let mut seen = BTreeMap::new();
    for _ in 0..10 {
        let (k, d) = iter.next().unwrap().unwrap();
        seen.insert(k, String::from_utf8(d.body.to_vec()).unwrap());
    }
    let (tx, rx) = mpsc::channel();
    let writer = {
        let e = e.clone();
        std::thread::spawn(move || {
            for i in 0..300 {
                let key = format!("d{i:03}");
                if i % 3 == 0 {
                    remove(&e, a, &key);
                } else {
                    put(&e, a, &key, "overwritten");
                }
            }
            put(&e, a, "new", "added after the snapshot");
            e.compact(a).unwrap();
            tx.send(()).unwrap();
        })
    };
    rx.recv_timeout(Duration::from_secs(8))
        .expect("writers/compaction blocked by a paused scan");
    writer.join().unwrap();
    for item in iter {
        let (k, d) = item.unwrap();
        assert!(seen
            .insert(k, String::from_utf8(d.body.to_vec()).unwrap())
            .is_none());
    }
    assert_eq!(seen, model);
    assert_eq!(snap.count(a).unwrap(), 300);
    assert_eq!(snap.get(a, "new").unwrap(), None);
    assert_eq!(
        snap.get(a, "d000").unwrap().map(|d| d.body),
        Some(Bytes::from(model["d000"].clone()))
    );
    let now = contents(&e, a);
    assert_eq!(now.len(), 201);
}

fn busy_options() -> EngineOptions {
    EngineOptions {
        background_collector: true,
        wal_logfile_size: 8 * 1024,
        journal_size_default: 4 * 1024,
        min_journal_size: quiver_storage::JOURNAL_SIZE_FLOOR,
        compaction: CompactionOptions {
            background: true,
            db_sleep_time: Duration::from_millis(5),
            min_interval: Duration::from_millis(5),
            dead_size_threshold: 512,
            dead_size_percent_threshold: 0.05,
            ..CompactionOptions::default()
        },
        ..opts()
    }
}

/// Writers commit batches spanning two collections (same keys and bodies in both, plus
/// removals); readers never see the collections disagree, while the background collector
/// and compactor move the data around. The final state survives a restart.
#[test]
fn readers_never_see_half_a_batch_while_files_move() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(dir.path(), busy_options()).unwrap();
    let db = new_db(&e);
    let a = new_col(&e, db);
    let b = new_col(&e, db);
    // The amount of work is fixed by counts (batches written, snapshots checked), not by
    // wall-clock time, so a loaded machine makes the test slower, never weaker. The deadline
    // only turns a hang into a failure.
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writer = {
        let e = e.clone();
        let stop = stop.clone();
        let written = written.clone();
        std::thread::spawn(move || {
            let mut gen = 0u64;
            while !stop.load(Ordering::Acquire) {
                gen += 1;
                let mut batch = WriteBatch::new();
                for j in 0..4u64 {
                    let key = format!("k{}", (gen * 3 + j) % 40);
                    if (gen + j) % 5 == 0 {
                        batch.remove(a, &key, e.hlc().next());
                        batch.remove(b, &key, e.hlc().next());
                    } else {
                        let body = Bytes::from(format!("{gen}:{}", "p".repeat(60)));
                        batch.put(a, &key, e.hlc().next(), body.clone());
                        batch.put(b, &key, e.hlc().next(), body);
                    }
                }
                batch.set_sync(gen % 7 == 0);
                e.commit(batch).unwrap().wait().unwrap();
                written.store(gen, Ordering::Release);
            }
            gen
        })
    };
    let mut checks = 0;
    let deadline = Instant::now() + Duration::from_secs(300);
    while checks < 30 || written.load(Ordering::Acquire) < 400 {
        assert!(
            Instant::now() < deadline,
            "no progress: {checks} checks, {} batches",
            written.load(Ordering::Acquire)
        );
        let snap = e.snapshot();
        let read = |cid| {
            let mut m = BTreeMap::new();
            for item in snap.scan(cid).unwrap() {
                let (k, d) = item.unwrap();
                m.insert(k, d.body);
            }
            m
        };
        let (ma, mb) = (read(a), read(b));
        assert_eq!(ma, mb, "snapshot {} saw half a batch", snap.tick());
        assert_eq!(snap.count(a).unwrap(), ma.len() as u64);
        assert_eq!(snap.count(b).unwrap(), mb.len() as u64);
        checks += 1;
    }
    stop.store(true, Ordering::Release);
    let gens = writer.join().unwrap();
    assert!(gens >= 400, "{gens} batches");
    let (fa, fb) = (contents(&e, a), contents(&e, b));
    assert_eq!(fa, fb);
    e.shutdown().unwrap();
    drop(e);
    let e = open(dir.path());
    assert_eq!(contents(&e, a), fa);
    assert_eq!(contents(&e, b), fb);
}
