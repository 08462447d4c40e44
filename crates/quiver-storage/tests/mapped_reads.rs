//! Document bodies are slices of read-only file maps. They must stay valid and unchanged when
//! the collector moves markers out of a WAL segment (which is then unlinked) and when the
//! compactor replaces datafiles, both for bodies already handed out and for scans that are
//! in progress across such swaps. Each runs twice: reading through the maps (no mapped-memory
//! limit), and with a limit of one byte, above which the reads soon copy documents with
//! `pread` instead (`engine/mapped_budget.rs`).

mod common;

use std::collections::BTreeMap;

use bytes::Bytes;
use common::*;

fn body(i: usize, round: usize) -> String {
    format!(
        "{{\"i\":{i},\"round\":{round},\"pad\":\"{}\"}}",
        "x".repeat(i % 50)
    )
}

/// An engine with `mapped_memory_limit` set to `limit`.
fn open_limited(dir: &std::path::Path, limit: Option<u64>) -> quiver_storage::Engine {
    let options = quiver_storage::EngineOptions {
        mapped_memory_limit: limit,
        ..small_options()
    };
    quiver_storage::Engine::open(dir, options).expect("open")
}

#[test]
fn bodies_outlive_collection_and_compaction() {
    bodies_outlive_collection_and_compaction_with(None);
}

#[test]
fn copied_bodies_outlive_collection_and_compaction() {
    bodies_outlive_collection_and_compaction_with(Some(1));
}

fn bodies_outlive_collection_and_compaction_with(limit: Option<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_limited(dir.path(), limit);
    let (_, cid) = setup(&engine);
    for i in 0..300 {
        put(&engine, cid, &format!("k{i}"), &body(i, 0));
    }
    // Held bodies point into the WAL segment.
    let snap = engine.snapshot();
    let held: Vec<(String, Bytes)> = snap
        .scan(cid)
        .unwrap()
        .map(|r| {
            let (k, d) = r.unwrap();
            (k, d.body)
        })
        .collect();
    assert_eq!(held.len(), 300);
    // Rewrite half the documents, collect the WAL (its segments are unlinked once unread) and
    // compact (datafiles replaced); the held slices and the old snapshot must not change.
    for i in (0..300).step_by(2) {
        put(&engine, cid, &format!("k{i}"), &body(i, 1));
    }
    engine.collect().unwrap();
    engine.compact(cid).unwrap();
    for (k, b) in &held {
        let i: usize = k[1..].parse().unwrap();
        assert_eq!(&b[..], body(i, 0).as_bytes(), "held body of {k}");
    }
    let old: BTreeMap<String, Bytes> = snap
        .scan(cid)
        .unwrap()
        .map(|r| {
            let (k, d) = r.unwrap();
            (k, d.body)
        })
        .collect();
    for (k, b) in &old {
        let i: usize = k[1..].parse().unwrap();
        assert_eq!(&b[..], body(i, 0).as_bytes(), "old snapshot {k}");
    }
    drop(snap);
    drop(held);
    drop(old);
    let now = contents(&engine, cid);
    for i in 0..300 {
        let round = usize::from(i % 2 == 0);
        assert_eq!(now[&format!("k{i}")], body(i, round));
    }
    engine.shutdown().unwrap();
}

#[test]
fn scan_in_progress_survives_file_swaps() {
    scan_in_progress_survives_file_swaps_with(None);
}

#[test]
fn copying_scan_in_progress_survives_file_swaps() {
    scan_in_progress_survives_file_swaps_with(Some(1));
}

fn scan_in_progress_survives_file_swaps_with(limit: Option<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let engine = open_limited(dir.path(), limit);
    let (_, cid) = setup(&engine);
    for i in 0..2000 {
        put(&engine, cid, &format!("k{i:04}"), &body(i, 0));
    }
    let snap = engine.snapshot();
    let mut scan = snap.scan(cid).unwrap();
    let mut seen = BTreeMap::new();
    for (n, item) in scan.by_ref().enumerate() {
        let (k, d) = item.unwrap();
        seen.insert(k, d.body);
        if n == 100 {
            break;
        }
    }
    // Between chunks of the scan: overwrite everything, collect and compact twice.
    for round in 1..3 {
        for i in 0..2000 {
            put(&engine, cid, &format!("k{i:04}"), &body(i, round));
        }
        engine.collect().unwrap();
        engine.compact(cid).unwrap();
    }
    for item in scan {
        let (k, d) = item.unwrap();
        seen.insert(k, d.body);
    }
    assert_eq!(seen.len(), 2000);
    for (k, b) in &seen {
        let i: usize = k[1..].parse().unwrap();
        assert_eq!(&b[..], body(i, 0).as_bytes(), "{k}");
    }
    drop(snap);
    // Reopened from datafiles and hint files, the newest round is read through fresh maps.
    engine.shutdown().unwrap();
    drop(engine);
    let engine = open_limited(dir.path(), limit);
    let now = contents(&engine, cid);
    assert_eq!(now.len(), 2000);
    for i in 0..2000 {
        assert_eq!(now[&format!("k{i:04}")], body(i, 2));
    }
    engine.shutdown().unwrap();
}
