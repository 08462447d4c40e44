//! A data directory whose tick counter passes 2^32: file ids (WAL segments, journals,
//! compaction results) are ticks, so from then on every new file's fid is above 32 bits. The
//! in-memory index names files by a 32-bit slot of this process, not by fid: inserts, updates,
//! removes, WAL rotations, journal seals, collector passes and compactions keep working
//! across the boundary, and a restart reads everything back.
//!
//! The counter is started near 2^32 through `catalog.json`'s `tick`, the high-water mark that
//! `open` starts the counter from (docs/storage-format.md), as a directory that already
//! handed out that many ticks would have it.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{contents, open, put, remove, setup};
use quiver_storage::Engine;

const BOUNDARY: u64 = 1 << 32;

/// Raises `catalog.json`'s tick high-water mark to `tick` (the engine is shut down).
fn set_catalog_tick(dir: &Path, tick: u64) {
    let path = dir.join("catalog.json");
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert!(doc["tick"].as_u64().unwrap() < tick);
    doc["tick"] = tick.into();
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
}

/// The fids of the directory's files (WAL segments, journals, datafiles), from their names.
fn fids_on_disk(dir: &Path) -> Vec<u64> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            let digits = name
                .trim_end_matches(".wal")
                .trim_end_matches(".db")
                .trim_start_matches("journal-")
                .trim_start_matches("datafile-");
            if let Ok(fid) = digits.parse::<u64>() {
                out.push(fid);
            }
        }
    }
    out
}

/// Reads every document through a point read, a key-order scan and a storage-order scan.
fn check(engine: &Engine, cid: u64, model: &BTreeMap<String, String>) {
    assert_eq!(&contents(engine, cid), model);
    let snap = engine.snapshot();
    let mut scan = snap.ordered_scan(cid).unwrap();
    let mut seen = BTreeMap::new();
    while let Some(doc) = scan.next_raw() {
        let doc = doc.unwrap();
        let body = String::from_utf8(doc.body.to_vec()).unwrap();
        assert!(seen.insert(doc.key.to_string(), body).is_none());
    }
    assert_eq!(&seen, model);
}

/// `rounds` rounds of inserts, updates and removes with collector passes, journal seals (small
/// journals), WAL rotations (small segments) and compactions between them.
fn churn(
    engine: &Engine,
    cid: u64,
    model: &mut BTreeMap<String, String>,
    round0: u64,
    rounds: u64,
) {
    for round in round0..round0 + rounds {
        for i in 0..12u64 {
            let key = format!("k{:03}", (round * 7 + i * 13) % 60);
            let body = format!(
                "{{\"round\":{round},\"i\":{i},\"pad\":\"{}\"}}",
                "x".repeat(300)
            );
            if (round + i) % 5 == 4 {
                remove(engine, cid, &key);
                model.remove(&key);
            } else {
                put(engine, cid, &key, &body);
                model.insert(key, body);
            }
        }
        if round % 2 == 1 {
            engine.collect().unwrap();
        }
        if round % 4 == 3 {
            engine.compact(cid).unwrap();
        }
        check(engine, cid, model);
    }
}

#[test]
fn files_created_past_tick_2_pow_32_are_written_read_collected_compacted_and_reopened() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let engine = open(dir);
    let (_, cid) = setup(&engine);
    let mut model = BTreeMap::new();
    churn(&engine, cid, &mut model, 0, 4);
    engine.shutdown().unwrap();
    drop(engine);

    // Some hundred operations before the boundary: the first rounds create files below it,
    // the later ones above it, with documents of both kinds of file alive at once.
    set_catalog_tick(dir, BOUNDARY - 300);
    let engine = open(dir);
    assert!(engine.last_tick() >= BOUNDARY - 300);
    check(&engine, cid, &model);
    churn(&engine, cid, &mut model, 4, 40);
    assert!(
        engine.last_tick() > BOUNDARY + 100,
        "the churn crossed the boundary: {}",
        engine.last_tick()
    );
    let fids = fids_on_disk(dir);
    assert!(
        fids.iter().any(|f| *f > BOUNDARY),
        "files were created past 2^32: {fids:?}"
    );
    let f = engine.figures(cid).unwrap();
    assert_eq!(f.alive_count, model.len() as u64);
    assert!(f.datafiles.count > 0, "journals were sealed");
    // Uncollected WAL markers past the boundary are replayed at restart.
    churn(&engine, cid, &mut model, 44, 1);
    engine.shutdown().unwrap();
    drop(engine);

    let engine = open(dir);
    check(&engine, cid, &model);
    assert_eq!(engine.figures(cid).unwrap().alive_count, model.len() as u64);
    churn(&engine, cid, &mut model, 45, 8);
    engine.collect().unwrap();
    let report = engine.compact(cid).unwrap();
    check(&engine, cid, &model);
    engine.verify(cid).unwrap();
    engine.shutdown().unwrap();
    drop(engine);

    let engine = open(dir);
    check(&engine, cid, &model);
    engine.verify(cid).unwrap();
    assert!(
        fids_on_disk(dir).iter().all(|f| *f > BOUNDARY - 300),
        "compaction and collection replaced every file from before the boundary \
         (last compaction: {report:?})"
    );
    engine.shutdown().unwrap();
}
