//! `EngineOptions::mapped_memory_limit`: above the limit, the maintenance thread releases the
//! datafiles' mapped pages, so a pass over the data does not stay in the process's resident
//! set; without a limit it does. Its own test binary: the figure is the whole process's.

mod harness;

use std::time::{Duration, Instant};

use harness::*;
use quiver_storage::{resident_file_bytes, Engine, EngineOptions};

const DOCUMENTS: usize = 8_000;
const DOCUMENT_BYTES: usize = 2_000;
const DATA_BYTES: u64 = (DOCUMENTS * DOCUMENT_BYTES) as u64;

/// Writes the documents, moves them into datafiles, drops what writing left mapped, reads
/// every document once; returns the engine, the collection and the file-backed resident bytes
/// before and right after the read.
fn read_everything(dir: &std::path::Path, limit: Option<u64>) -> (Engine, u64, u64, u64) {
    let options = EngineOptions {
        journal_size_default: 4 << 20,
        wal_logfile_size: 4 << 20,
        background_collector: true,
        mapped_memory_limit: limit,
        ..opts()
    };
    let engine = Engine::open(dir, options).unwrap();
    let db = new_db(&engine);
    let cid = new_col(&engine, db);
    let model = fill(&engine, cid, DOCUMENTS, DOCUMENT_BYTES);
    engine.collect().unwrap();
    let before = resident_file_bytes().unwrap();
    let read = contents(&engine, cid);
    assert_eq!(read, model);
    let after = resident_file_bytes().unwrap();
    (engine, cid, before, after)
}

#[test]
fn mapped_pages_above_the_limit_are_released() {
    // Without a limit the pass stays resident.
    let dir = tempfile::tempdir().unwrap();
    let (engine, _, before, after) = read_everything(dir.path(), None);
    assert!(
        after >= before + DATA_BYTES / 2,
        "reading {DATA_BYTES} bytes through the maps raised the resident file pages only from {before} to {after}"
    );
    std::thread::sleep(Duration::from_millis(1500));
    let later = resident_file_bytes().unwrap();
    assert!(
        later >= before + DATA_BYTES / 2,
        "without a limit the mapped pages went away: {before} -> {after} -> {later}"
    );
    engine.shutdown().unwrap();
    drop(engine);

    // With a limit below what is mapped, the maintenance thread releases them (it looks at
    // most once a second).
    let dir = tempfile::tempdir().unwrap();
    let (engine, cid, before, _) = read_everything(dir.path(), Some(1));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = resident_file_bytes().unwrap();
        if now < before + DATA_BYTES / 4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the mapped pages were not released: {now} bytes resident, {before} before the read"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The data is still read correctly afterwards (the pages fault back in).
    let read = contents(&engine, cid);
    assert_eq!(read.len(), DOCUMENTS);
    engine.shutdown().unwrap();
}
