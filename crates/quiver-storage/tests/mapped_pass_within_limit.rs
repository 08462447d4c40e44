//! Full passes keep their mapped datafile pages within `EngineOptions::mapped_memory_limit`
//! themselves: the storage-order scan releases each file once it moved past it; point reads
//! and the key-order and key-range scans, counted together, release the maps every few reads
//! above the limit. No maintenance thread runs here (background work off), so nothing else
//! releases anything. Under the limit the pages stay mapped. Its own test binary: the figure
//! is the whole process's.

mod harness;

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use harness::*;
use quiver_storage::{resident_file_bytes, Engine, EngineOptions, WriteBatch};

const DOCUMENTS: usize = 40_000;
const DOCUMENT_BYTES: usize = 1_000;
const DATA_BYTES: u64 = (DOCUMENTS * DOCUMENT_BYTES) as u64;

/// An engine with the documents moved into 1 MiB datafiles (about 40 of them).
fn filled(dir: &std::path::Path, limit: Option<u64>) -> (Engine, u64) {
    let options = EngineOptions {
        journal_size_default: 1 << 20,
        wal_logfile_size: 4 << 20,
        mapped_memory_limit: limit,
        ..opts()
    };
    let engine = Engine::open(dir, options).unwrap();
    let db = new_db(&engine);
    let cid = new_col(&engine, db);
    let pad = "x".repeat(DOCUMENT_BYTES);
    for chunk in (0..DOCUMENTS).collect::<Vec<_>>().chunks(500) {
        let mut batch = WriteBatch::new();
        for i in chunk {
            let body = format!("{{\"i\":{i},\"pad\":\"{pad}\"}}");
            batch.put(
                cid,
                &format!("d{i:05}"),
                engine.hlc().next(),
                Bytes::from(body),
            );
        }
        engine.commit(batch).unwrap().wait().unwrap();
    }
    engine.collect().unwrap();
    (engine, cid)
}

/// The highest file-backed resident set seen while `pass` runs (it calls the sampler as it
/// goes) and right after it.
fn peak_during(pass: impl FnOnce(&(dyn Fn() + Sync))) -> u64 {
    let peak = AtomicU64::new(0);
    let sample = || {
        peak.fetch_max(resident_file_bytes().unwrap(), Ordering::Relaxed);
    };
    pass(&sample);
    sample();
    peak.into_inner()
}

/// Every document once, in storage order (one thread); samples every 200 documents.
fn ordered(engine: &Engine, cid: u64, sample: &(dyn Fn() + Sync)) {
    let snap = engine.snapshot();
    let mut scan = snap.ordered_scan(cid).unwrap();
    let mut keys = BTreeSet::new();
    while let Some(doc) = scan.next_raw() {
        let doc = doc.unwrap();
        assert!(doc.body.starts_with(b"{\"i\":"), "{}", doc.key);
        assert!(keys.insert(doc.key.to_string()), "{} twice", doc.key);
        if keys.len() % 200 == 0 {
            sample();
        }
    }
    assert_eq!(keys.len(), DOCUMENTS);
}

/// Every document once, in storage order on two threads.
fn ordered_parallel(engine: &Engine, cid: u64, sample: &(dyn Fn() + Sync)) {
    let parts = engine
        .snapshot()
        .ordered_scan(cid)
        .unwrap()
        .for_each_parallel(
            2,
            || 0usize,
            |n, _| {
                *n += 1;
                if *n % 200 == 0 {
                    sample();
                }
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(parts.iter().sum::<usize>(), DOCUMENTS);
}

/// Every document once, in key order (the index's shard order).
fn key_order(engine: &Engine, cid: u64, sample: &(dyn Fn() + Sync)) {
    let mut n = 0;
    for item in engine.snapshot().scan(cid).unwrap() {
        item.unwrap();
        n += 1;
        if n % 200 == 0 {
            sample();
        }
    }
    assert_eq!(n, DOCUMENTS);
}

/// Every document once, through a key range covering all keys.
fn key_range(engine: &Engine, cid: u64, sample: &(dyn Fn() + Sync)) {
    let mut n = 0;
    let range = (Bound::Unbounded, Bound::Unbounded);
    for item in engine.snapshot().key_range(cid, range, false).unwrap() {
        item.unwrap();
        n += 1;
        if n % 200 == 0 {
            sample();
        }
    }
    assert_eq!(n, DOCUMENTS);
}

/// Every document once by key, in a scattered order (point reads, as requests make them).
fn point_reads(engine: &Engine, cid: u64, sample: &(dyn Fn() + Sync)) {
    let snap = engine.snapshot();
    // 7919 is prime and does not divide DOCUMENTS: i * 7919 % DOCUMENTS visits every key.
    for i in 0..DOCUMENTS {
        let key = format!("d{:05}", i * 7919 % DOCUMENTS);
        let doc = snap.get(cid, &key).unwrap().unwrap();
        assert!(doc.body.starts_with(b"{\"i\":"), "{key}");
        if i % 200 == 0 {
            sample();
        }
    }
}

#[test]
fn passes_over_the_limit_release_what_they_moved_past_and_keep_it_under_the_limit() {
    // Without a limit, and under a limit, every pass leaves what it read mapped (the control:
    // the measurement sees the pages a pass maps; a second pass finds them mapped still).
    for limit in [None, Some(u64::MAX / 2)] {
        let dir = tempfile::tempdir().unwrap();
        let (engine, cid) = filled(dir.path(), limit);
        let before = resident_file_bytes().unwrap();
        let first = peak_during(|s| ordered(&engine, cid, s));
        let second = peak_during(|s| key_order(&engine, cid, s));
        let after = resident_file_bytes().unwrap();
        assert!(
            first >= before + DATA_BYTES / 2 && after >= before + DATA_BYTES / 2,
            "limit {limit:?}: reading {DATA_BYTES} bytes left the resident file pages at {before} -> {first} -> {second} -> {after}"
        );
        engine.shutdown().unwrap();
    }

    // A limit below what the process maps anyway: every pass holds about one datafile
    // (1 MiB) above what was resident before the first, never the collection.
    let dir = tempfile::tempdir().unwrap();
    let (engine, cid) = filled(dir.path(), Some(1));
    let before = resident_file_bytes().unwrap();
    let bound = DATA_BYTES / 4;
    type Pass = fn(&Engine, u64, &(dyn Fn() + Sync));
    let passes: [(&str, Pass); 5] = [
        ("storage order", ordered),
        ("storage order, two threads", ordered_parallel),
        ("key order", key_order),
        ("key range", key_range),
        ("point reads", point_reads),
    ];
    for round in 0..2 {
        for (name, pass) in passes {
            let peak = peak_during(|s| pass(&engine, cid, s));
            assert!(
                peak < before + bound,
                "{name} (round {round}): the resident file pages went from {before} to {peak} while reading {DATA_BYTES} bytes over a limit of 1 byte"
            );
        }
    }
    engine.shutdown().unwrap();
}
