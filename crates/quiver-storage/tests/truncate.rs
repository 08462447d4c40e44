//! The truncate marker: one WAL marker per truncate, O(1) in the index, honoured by
//! snapshots, recovery (WAL, journals, hint files), the collector and compaction.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use common::*;
use quiver_storage::format::{self, MarkerType};
use quiver_storage::{Engine, EngineOptions};

fn files_named(dir: &Path, pred: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if pred(&e.file_name().to_string_lossy()) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Marker kinds of every data marker in the files matching `pred`.
fn marker_kinds(dir: &Path, pred: &dyn Fn(&str) -> bool) -> Vec<MarkerType> {
    files_named(dir, pred)
        .iter()
        .flat_map(|p| {
            let image = fs::read(p).unwrap();
            format::scan(&image)
                .markers
                .iter()
                .map(|m| m.kind)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn fill(engine: &Engine, cid: u64, prefix: &str, n: usize) -> BTreeMap<String, String> {
    let mut model = BTreeMap::new();
    for i in 0..n {
        let key = format!("{prefix}{i}");
        let body = format!("{{\"i\":{i},\"pad\":\"{}\"}}", "x".repeat(100));
        put(engine, cid, &key, &body);
        model.insert(key, body);
    }
    model
}

#[test]
fn truncate_writes_one_marker_and_old_snapshots_keep_their_view() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(
        dir.path(),
        EngineOptions {
            wal_logfile_size: 1 << 20,
            ..small_options()
        },
    )
    .unwrap();
    let (_, cid) = setup(&engine);
    let before = fill(&engine, cid, "a", 300);
    let old = engine.snapshot();
    let ticket = engine.truncate(cid, true).unwrap();
    assert!(ticket.needs_sync());
    ticket.wait().unwrap();

    // The WAL holds the 300 documents and exactly one more marker: the truncate.
    let kinds = marker_kinds(dir.path(), &|n| n.ends_with(".wal"));
    assert_eq!(kinds.len(), 301);
    assert_eq!(kinds.last(), Some(&MarkerType::Truncate));
    assert!(!kinds.contains(&MarkerType::Remove));

    // The snapshot taken before still reads everything, by scan, get and count.
    assert_eq!(old.count(cid).unwrap(), 300);
    let mut seen = BTreeMap::new();
    for item in old.scan(cid).unwrap() {
        let (k, d) = item.unwrap();
        seen.insert(k, String::from_utf8(d.body.to_vec()).unwrap());
    }
    assert_eq!(seen, before);
    assert!(old.get(cid, "a7").unwrap().is_some());
    // New snapshots see nothing; writes after the truncate count from zero.
    assert!(contents(&engine, cid).is_empty());
    assert_eq!(engine.figures(cid).unwrap().alive_count, 0);
    let after = fill(&engine, cid, "a", 5);
    assert_eq!(contents(&engine, cid), after);
    assert_eq!(old.count(cid).unwrap(), 300);
    assert_eq!(
        old.get(cid, "a3").unwrap().unwrap().body,
        before["a3"].as_bytes()
    );
    // Collection and compaction while the old snapshot lives do not change its view.
    engine.collect().unwrap();
    engine.compact(cid).unwrap();
    assert_eq!(old.count(cid).unwrap(), 300);
    assert_eq!(old.scan(cid).unwrap().count(), 300);
    assert_eq!(contents(&engine, cid), after);
    drop(old);
    engine.shutdown().unwrap();
    drop(engine);

    // Restart: from the journals/datafiles (hint files) the truncate still applies.
    let engine = open(dir.path());
    assert_eq!(contents(&engine, cid), after);
    engine.shutdown().unwrap();
}

#[test]
fn truncate_survives_restart_from_the_wal_and_from_journals() {
    for collect in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        let (_, cid) = setup(&engine);
        fill(&engine, cid, "old", 50);
        engine.collect().unwrap();
        fill(&engine, cid, "mid", 20);
        engine.truncate(cid, false).unwrap().wait().unwrap();
        let after = fill(&engine, cid, "new", 7);
        // A key written before and after the truncate.
        put(&engine, cid, "old3", "again");
        let mut after = after;
        after.insert("old3".into(), "again".into());
        if collect {
            engine.collect().unwrap();
        }
        engine.shutdown().unwrap();
        drop(engine);
        let engine = open(dir.path());
        assert_eq!(contents(&engine, cid), after, "collect {collect}");
        assert_eq!(engine.figures(cid).unwrap().alive_count, 8);
        // And once more, after the (re)collection of what was replayed.
        engine.collect().unwrap();
        engine.shutdown().unwrap();
        drop(engine);
        let engine = open(dir.path());
        assert_eq!(
            contents(&engine, cid),
            after,
            "collect {collect}, second restart"
        );
        engine.shutdown().unwrap();
    }
}

#[test]
fn compaction_drops_whole_files_below_a_durable_truncate() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (_, cid) = setup(&engine);
    // Many sealed datafiles (8 KiB journals, ~150-byte documents).
    fill(&engine, cid, "k", 600);
    engine.collect().unwrap();
    let before = engine.figures(cid).unwrap();
    assert!(before.datafiles.count >= 5, "{before:?}");
    engine.truncate(cid, false).unwrap().wait().unwrap();
    let after = fill(&engine, cid, "n", 3);
    // Damage in the oldest datafile: compaction would refuse to copy from it, but a file
    // wholly below a durable truncate is dropped without being read.
    engine.collect().unwrap();
    let oldest = files_named(dir.path(), &|n| {
        n.starts_with("datafile-") && n.ends_with(".db")
    })
    .into_iter()
    .next()
    .unwrap();
    let mut image = fs::read(&oldest).unwrap();
    image[200] ^= 0x40;
    fs::write(&oldest, &image).unwrap();
    let report = engine.compact(cid).unwrap();
    assert!(!oldest.exists());
    let f = engine.figures(cid).unwrap();
    assert_eq!(f.alive_count, 3);
    assert_eq!(f.dead_count, 0, "{f:?}");
    assert_eq!(f.dead_deletion, 0, "{f:?}");
    assert!(
        report.files_compacted >= before.datafiles.count as usize,
        "{report:?}"
    );
    // What is left on disk: the three new documents and the truncate marker, no removals.
    let kinds = marker_kinds(dir.path(), &|n| n.ends_with(".db"));
    let docs = kinds.iter().filter(|k| **k == MarkerType::Document).count();
    assert_eq!(docs, 3, "{kinds:?}");
    assert!(kinds.contains(&MarkerType::Truncate));
    assert!(!kinds.contains(&MarkerType::Remove));
    engine.verify(cid).unwrap();
    engine.shutdown().unwrap();
    drop(engine);
    let engine = open(dir.path());
    assert_eq!(contents(&engine, cid), after);
    // A second truncate makes the first marker redundant: compaction keeps only the newest.
    engine.truncate(cid, false).unwrap().wait().unwrap();
    engine.compact(cid).unwrap();
    let kinds = marker_kinds(dir.path(), &|n| n.ends_with(".db"));
    assert_eq!(kinds, vec![MarkerType::Truncate], "{kinds:?}");
    assert!(contents(&engine, cid).is_empty());
    engine.shutdown().unwrap();
    drop(engine);
    let engine = open(dir.path());
    assert!(contents(&engine, cid).is_empty());
    engine.shutdown().unwrap();
}

#[test]
fn truncate_of_one_collection_leaves_the_others_alone() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (db, a) = setup(&engine);
    let b = engine
        .create_collection(
            db,
            quiver_storage::CollectionOptions::default(),
            serde_json::json!({}),
        )
        .unwrap();
    fill(&engine, a, "x", 40);
    let keep = fill(&engine, b, "x", 40);
    engine.truncate(a, false).unwrap().wait().unwrap();
    // Truncating an empty collection writes nothing and is no error.
    let ticks = engine.last_tick();
    engine.truncate(a, false).unwrap().wait().unwrap();
    assert_eq!(engine.last_tick(), ticks);
    engine.compact(a).unwrap();
    engine.compact(b).unwrap();
    assert!(contents(&engine, a).is_empty());
    assert_eq!(contents(&engine, b), keep);
    engine.shutdown().unwrap();
    drop(engine);
    let engine = open(dir.path());
    assert!(contents(&engine, a).is_empty());
    assert_eq!(contents(&engine, b), keep);
    engine.shutdown().unwrap();
}
