mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use common::*;
use quiver_errors::ErrorCode;
use quiver_storage::{CollectionOptions, Engine, WriteBatch};

#[test]
fn crud_survives_reopen_and_catalog_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (db, cid) = setup(&engine);
    let mut model = BTreeMap::new();
    for i in 0..200 {
        let body = format!("{{\"i\":{i}}}");
        put(&engine, cid, &format!("k{i}"), &body);
        model.insert(format!("k{i}"), body);
    }
    for i in (0..200).step_by(3) {
        remove(&engine, cid, &format!("k{i}"));
        model.remove(&format!("k{i}"));
    }
    put(&engine, cid, "k1", "replaced");
    model.insert("k1".into(), "replaced".into());
    assert_eq!(contents(&engine, cid), model);
    let rev = engine.snapshot().revision(cid, "k1").unwrap().unwrap();
    engine.shutdown().unwrap();
    drop(engine);

    let engine = open(dir.path());
    let cat = engine.catalog();
    assert_eq!(cat.len(), 1);
    assert_eq!(cat[0].id, db);
    assert_eq!(cat[0].meta["name"], "test");
    assert_eq!(cat[0].collections[0].id, cid);
    assert!(cat[0].collections[0].status.is_ok());
    assert_eq!(contents(&engine, cid), model);
    assert_eq!(engine.snapshot().revision(cid, "k1").unwrap(), Some(rev));
    assert!(engine.hlc().next() > rev, "recovery observes revisions");

    // Collected into journals, sealed into datafiles, reopened from hint files.
    engine.collect().unwrap();
    let f = engine.figures(cid).unwrap();
    assert_eq!(f.uncollected_logfile_entries, 0);
    assert!(
        f.datafiles.count > 0,
        "8 KiB journals must have rotated: {f:?}"
    );
    assert_eq!(f.alive_count, model.len() as u64);
    assert_eq!(contents(&engine, cid), model);
    engine.shutdown().unwrap();
    drop(engine);
    let engine = open(dir.path());
    assert_eq!(contents(&engine, cid), model);
    engine.shutdown().unwrap();
}

#[test]
fn snapshots_never_see_half_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (db, a) = setup(&engine);
    let b = engine
        .create_collection(db, CollectionOptions::default(), serde_json::json!({}))
        .unwrap();
    put(&engine, a, "x", "1");
    let before = engine.snapshot();
    let mut batch = WriteBatch::new();
    batch.put(a, "x", engine.hlc().next(), Bytes::from_static(b"2"));
    batch.put(a, "y", engine.hlc().next(), Bytes::from_static(b"3"));
    batch.put(b, "z", engine.hlc().next(), Bytes::from_static(b"4"));
    let ticket = engine.commit(batch).unwrap();
    ticket.wait().unwrap();
    let after = engine.snapshot();
    assert_eq!(&before.get(a, "x").unwrap().unwrap().body[..], b"1");
    assert_eq!(before.get(a, "y").unwrap(), None);
    assert_eq!(before.get(b, "z").unwrap(), None);
    assert_eq!(before.count(a).unwrap(), 1);
    assert_eq!(after.count(a).unwrap(), 2);
    assert_eq!(&after.get(a, "x").unwrap().unwrap().body[..], b"2");
    assert_eq!(&after.get(b, "z").unwrap().unwrap().body[..], b"4");
    // Old snapshot stays stable across collection and compaction.
    remove(&engine, a, "x");
    engine.compact(a).unwrap();
    assert_eq!(&before.get(a, "x").unwrap().unwrap().body[..], b"1");
    assert_eq!(&after.get(a, "x").unwrap().unwrap().body[..], b"2");
    assert_eq!(engine.snapshot().get(a, "x").unwrap(), None);
    engine.shutdown().unwrap();
}

#[test]
fn batches_across_databases_and_unknown_collections_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (_, a) = setup(&engine);
    let (_, other) = setup(&engine);
    let mut batch = WriteBatch::new();
    batch.put(a, "x", engine.hlc().next(), Bytes::from_static(b"1"));
    batch.put(other, "x", engine.hlc().next(), Bytes::from_static(b"1"));
    assert_eq!(
        engine.commit(batch).unwrap_err().code,
        ErrorCode::BadParameter
    );
    let mut batch = WriteBatch::new();
    batch.put(999_999, "x", engine.hlc().next(), Bytes::from_static(b"1"));
    assert_eq!(
        engine.commit(batch).unwrap_err().code,
        ErrorCode::DataSourceNotFound
    );
    let mut batch = WriteBatch::new();
    batch.put(a, &"k".repeat(255), engine.hlc().next(), Bytes::new());
    assert_eq!(
        engine.commit(batch).unwrap_err().code,
        ErrorCode::DocumentKeyBad
    );
    assert!(contents(&engine, a).is_empty());
    assert!(engine.commit(WriteBatch::new()).unwrap().wait().is_ok());
    engine.shutdown().unwrap();
}

#[test]
fn ddl_drop_truncate_and_options() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (db, cid) = setup(&engine);
    for i in 0..50 {
        put(&engine, cid, &format!("k{i}"), "v");
    }
    engine.truncate(cid, true).unwrap().wait().unwrap();
    assert_eq!(engine.snapshot().count(cid).unwrap(), 0);
    let opts = CollectionOptions {
        journal_size: Some(64 * 1024),
        wait_for_sync: true,
        do_compact: false,
    };
    engine
        .update_collection(cid, opts.clone(), serde_json::json!({"name": "renamed"}))
        .unwrap();
    let bad = CollectionOptions {
        journal_size: Some(10),
        ..opts.clone()
    };
    assert_eq!(
        engine
            .update_collection(cid, bad, serde_json::json!({}))
            .unwrap_err()
            .code,
        ErrorCode::BadParameter
    );
    let c2 = engine
        .create_collection(
            db,
            CollectionOptions::default(),
            serde_json::json!({"name": "gone"}),
        )
        .unwrap();
    put(&engine, c2, "a", "b");
    engine.drop_collection(c2).unwrap();
    assert_eq!(
        engine.snapshot().get(c2, "a").unwrap_err().code,
        ErrorCode::DataSourceNotFound
    );
    assert_eq!(
        engine.drop_collection(c2).unwrap_err().code,
        ErrorCode::DataSourceNotFound
    );
    let db2 = engine
        .create_database(serde_json::json!({"name": "d2"}))
        .unwrap();
    let c3 = engine
        .create_collection(db2, CollectionOptions::default(), serde_json::json!({}))
        .unwrap();
    put(&engine, c3, "a", "b");
    engine.shutdown().unwrap();
    drop(engine);

    let engine = open(dir.path());
    assert_eq!(engine.collection_options(cid).unwrap(), opts);
    assert_eq!(engine.snapshot().count(cid).unwrap(), 0);
    assert_eq!(engine.catalog().len(), 2);
    engine.drop_database(db2).unwrap();
    assert_eq!(engine.catalog().len(), 1);
    assert_eq!(engine.catalog()[0].collections.len(), 1);
    assert_eq!(engine.catalog()[0].collections[0].meta["name"], "renamed");
    engine.shutdown().unwrap();
    drop(engine);
    let engine = open(dir.path());
    assert_eq!(engine.catalog().len(), 1);
    assert!(!dir.path().join(format!("db-{db2}")).exists());
    engine.shutdown().unwrap();
}

#[test]
fn directory_lock_prevents_second_engine() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let err = Engine::open(dir.path(), small_options()).unwrap_err();
    assert_eq!(err.code, ErrorCode::DataDirectoryLocked);
    engine.shutdown().unwrap();
    let again = open(dir.path());
    again.shutdown().unwrap();
}

#[test]
fn concurrent_sync_writers_share_fsyncs() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (_, cid) = setup(&engine);
    let threads = 16;
    let per = 20;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                for i in 0..per {
                    let mut b = WriteBatch::new();
                    b.put(
                        cid,
                        &format!("t{t}-{i}"),
                        engine.hlc().next(),
                        Bytes::from_static(b"{}"),
                    );
                    b.set_sync(true);
                    engine.commit(b).unwrap().wait().unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(
        engine.snapshot().count(cid).unwrap(),
        (threads * per) as u64
    );
    let syncs = engine.stats().wal_syncs;
    assert!(
        syncs < (threads * per) as u64,
        "{syncs} fdatasyncs for {} sync commits: group commit must share them",
        threads * per
    );
    engine.shutdown().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_waiters_complete() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (_, cid) = setup(&engine);
    let mut tasks = Vec::new();
    for t in 0..32 {
        let engine = engine.clone();
        tasks.push(tokio::spawn(async move {
            let mut b = WriteBatch::new();
            b.put(
                cid,
                &format!("a{t}"),
                engine.hlc().next(),
                Bytes::from_static(b"1"),
            );
            b.set_sync(true);
            engine.commit(b).unwrap().wait_async().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(engine.snapshot().count(cid).unwrap(), 32);
    engine.shutdown().unwrap();
}

#[test]
fn documents_larger_than_the_journal_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (_, cid) = setup(&engine);
    let big = "x".repeat(100 * 1024);
    put(&engine, cid, "big", &big);
    put(&engine, cid, "small", "s");
    engine.collect().unwrap();
    engine.compact(cid).unwrap();
    assert_eq!(contents(&engine, cid)["big"], big);
    engine.shutdown().unwrap();
    drop(engine);
    let engine = open(dir.path());
    assert_eq!(contents(&engine, cid)["big"], big);
    engine.shutdown().unwrap();
}

#[test]
fn compaction_reclaims_dead_space_and_keeps_live_data() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (_, cid) = setup(&engine);
    let mut model = BTreeMap::new();
    for round in 0..5 {
        for i in 0..60 {
            let body = format!(
                "{{\"round\":{round},\"i\":{i},\"pad\":\"{}\"}}",
                "p".repeat(40)
            );
            put(&engine, cid, &format!("k{i}"), &body);
            model.insert(format!("k{i}"), body);
        }
    }
    for i in 0..30 {
        remove(&engine, cid, &format!("k{i}"));
        model.remove(&format!("k{i}"));
    }
    engine.collect().unwrap();
    let before = engine.figures(cid).unwrap();
    assert!(before.dead_count > 0, "{before:?}");
    let report = engine.compact(cid).unwrap();
    assert!(report.files_compacted > 0, "{report:?}");
    let after = engine.figures(cid).unwrap();
    assert_eq!(after.dead_count, 0, "{after:?}");
    assert_eq!(after.alive_count, 30);
    assert!(after.datafiles.file_size < before.datafiles.file_size);
    assert_eq!(contents(&engine, cid), model);
    let report = engine.verify(cid).unwrap();
    assert!(report.markers >= 30, "{report:?}");
    engine.shutdown().unwrap();
    drop(engine);
    let engine = open(dir.path());
    assert_eq!(contents(&engine, cid), model);
    engine.shutdown().unwrap();
}

/// Small segments and journals, a syncer every 5 ms and a compactor that checks every
/// millisecond and compacts at 1 % dead data: the background threads work all the time.
fn busy_background_options() -> quiver_storage::EngineOptions {
    use quiver_storage::{CompactionOptions, EngineOptions};
    use std::time::Duration;
    EngineOptions {
        journal_size_default: 8 * 1024,
        min_journal_size: quiver_storage::JOURNAL_SIZE_FLOOR,
        wal_logfile_size: 8 * 1024,
        sync_interval: Duration::from_millis(5),
        compaction: CompactionOptions {
            db_sleep_time: Duration::from_millis(1),
            min_interval: Duration::from_millis(0),
            dead_size_percent_threshold: 0.01,
            ..CompactionOptions::default()
        },
        ..EngineOptions::default()
    }
}

/// The background compactor skips its periodic check (a walk over every key) while a
/// collection only gets fresh inserts, and still reclaims what replaces and removals leave.
#[test]
fn background_compactor_checks_after_deaths_not_after_fresh_inserts() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), busy_background_options()).unwrap();
    let (_, cid) = setup(&engine);
    let body = |round: u32| format!("{{\"round\":{round},\"pad\":\"{}\"}}", "p".repeat(60));
    let wait_for = |what: &str, done: &dyn Fn(&quiver_storage::Figures) -> bool| {
        let start = Instant::now();
        loop {
            let f = engine.figures(cid).unwrap();
            if done(&f) {
                return f;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "{what}: {f:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    for i in 0..400 {
        put(&engine, cid, &format!("k{i:04}"), &body(0));
    }
    engine.collect().unwrap();
    // The sealed datafiles are checked once (they are new); with nothing dead in them the
    // check finds nothing, and fresh inserts after it do not call for another.
    let f = wait_for("first check", &|f| !f.compaction_status.is_empty());
    assert_eq!(f.dead_count, 0, "{f:?}");
    for i in 400..420 {
        put(&engine, cid, &format!("k{i:04}"), &body(0));
    }
    std::thread::sleep(Duration::from_millis(50));
    let f = engine.figures(cid).unwrap();
    assert_eq!(f.dead_count, 0, "{f:?}");
    // Replacing every document leaves the datafiles dead; the compactor reclaims them.
    for i in 0..420 {
        put(&engine, cid, &format!("k{i:04}"), &body(1));
    }
    engine.collect().unwrap();
    let f = wait_for("compaction after replaces", &|f| {
        f.compaction_status.starts_with("compacted") && f.dead_count == 0
    });
    assert_eq!(f.alive_count, 420, "{f:?}");
    // So are removals.
    for i in 0..200 {
        remove(&engine, cid, &format!("k{i:04}"));
    }
    engine.collect().unwrap();
    let f = wait_for("compaction after removals", &|f| {
        f.dead_count == 0 && f.alive_count == 220
    });
    assert_eq!(contents(&engine, cid).len(), 220, "{f:?}");
    engine.shutdown().unwrap();
}

#[test]
fn readers_run_during_collection_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (_, cid) = setup(&engine);
    for i in 0..300 {
        put(&engine, cid, &format!("k{i}"), &format!("v{i}"));
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let engine = engine.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut rounds = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || rounds == 0 {
                let snap = engine.snapshot();
                let mut n = 0;
                for item in snap.scan(cid).unwrap() {
                    item.unwrap();
                    n += 1;
                }
                assert!(n >= 150, "saw {n}");
                for i in 150..300 {
                    let d = snap.get(cid, &format!("k{i}")).unwrap().unwrap();
                    assert_eq!(&d.body[..], format!("v{i}").as_bytes());
                }
                rounds += 1;
            }
        })
    };
    for round in 0..3 {
        for i in 0..150 {
            put(&engine, cid, &format!("k{i}"), &format!("r{round}"));
        }
        engine.collect().unwrap();
        engine.compact(cid).unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    reader.join().unwrap();
    engine.shutdown().unwrap();
}

#[test]
fn background_collector_and_compactor_race_with_writers() {
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    let options = busy_background_options();
    let engine = Engine::open(dir.path(), options.clone()).unwrap();
    let (_, cid) = setup(&engine);
    let mut model = BTreeMap::new();
    let start = Instant::now();
    // A fixed amount of work (not a time budget): on a loaded machine the test gets slower,
    // not weaker. ~1 MB through 8 KiB segments and journals; the WAL back-pressure
    // (wal_throttle_when_pending) keeps the background collector within a few segments.
    let mut i = 0u64;
    while i < 5000 {
        let key = format!("k{}", i % 97);
        if i % 11 == 0 {
            remove(&engine, cid, &key);
            model.remove(&key);
        } else {
            let body = format!(
                "{{\"i\":{i},\"pad\":\"{}\"}}",
                "q".repeat((i % 200) as usize)
            );
            put(&engine, cid, &key, &body);
            model.insert(key, body);
        }
        if i % 500 == 0 {
            assert_eq!(contents(&engine, cid), model, "at op {i}");
        }
        i += 1;
    }
    eprintln!("writes done after {:?}, {i} ops", start.elapsed());
    assert_eq!(contents(&engine, cid), model);
    let f = engine.figures(cid).unwrap();
    assert!(
        f.datafiles.count > 0,
        "the collector must have sealed datafiles: {f:?}"
    );
    eprintln!("figures after {:?}: {f:?}", start.elapsed());
    engine.shutdown().unwrap();
    drop(engine);
    eprintln!("shutdown after {:?}", start.elapsed());
    let engine = Engine::open(dir.path(), options).unwrap();
    eprintln!("reopen after {:?}", start.elapsed());
    assert_eq!(contents(&engine, cid), model);
    engine.shutdown().unwrap();
}

/// The collector writes each collection's markers straight from the segment's image; when
/// collections alternate in the WAL a journal run is gathered from many ranges. Both shapes
/// (one long range, many short ones), across journal rotations and a restart from the
/// journals and datafiles alone, must keep every document.
#[test]
fn collector_copies_interleaved_and_contiguous_runs() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (db, a) = setup(&engine);
    let b = engine
        .create_collection(db, CollectionOptions::default(), serde_json::json!({}))
        .unwrap();
    let mut model_a = BTreeMap::new();
    let mut model_b = BTreeMap::new();
    // Contiguous: a run of `a` only.
    for i in 0..150 {
        let body = format!("{{\"a\":{i},\"pad\":\"{}\"}}", "x".repeat(i % 40));
        put(&engine, a, &format!("a{i}"), &body);
        model_a.insert(format!("a{i}"), body);
    }
    // Interleaved: a, b, a, b, ...
    for i in 0..300 {
        let (cid, model, key) = if i % 2 == 0 {
            (a, &mut model_a, format!("i{i}"))
        } else {
            (b, &mut model_b, format!("i{i}"))
        };
        let body = format!("{{\"i\":{i}}}");
        put(&engine, cid, &key, &body);
        model.insert(key, body);
    }
    engine.collect().unwrap();
    for cid in [a, b] {
        let f = engine.figures(cid).unwrap();
        assert_eq!(f.uncollected_logfile_entries, 0, "{f:?}");
    }
    assert!(engine.figures(a).unwrap().datafiles.count > 0);
    assert_eq!(contents(&engine, a), model_a);
    assert_eq!(contents(&engine, b), model_b);
    engine.shutdown().unwrap();
    drop(engine);
    let engine = open(dir.path());
    assert_eq!(contents(&engine, a), model_a);
    assert_eq!(contents(&engine, b), model_b);
    engine.shutdown().unwrap();
}
