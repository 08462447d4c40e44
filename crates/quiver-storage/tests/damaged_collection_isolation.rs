//! A damaged collection is isolated: the others open and work, batches touching it fail
//! whole, and its data in the WAL survives until salvage.

mod harness;

use std::fs;

use bytes::Bytes;
use harness::*;
use quiver_storage::format;
use quiver_storage::{Engine, WriteBatch};

/// A collection whose datafile is damaged in the middle reports it; the other collection
/// opens and works; a batch touching both is refused as a whole; reads of the damaged one
/// fail clearly; dropping it works and the WAL data of the healthy one survives restarts.
#[test]
fn damaged_collection_is_isolated_and_batches_touching_it_fail_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (db, a, b);
    {
        let e = open(dir.path());
        db = new_db(&e);
        a = new_col(&e, db);
        b = new_col(&e, db);
        fill(&e, b, 20, 900);
        e.compact(b).unwrap();
        put(&e, a, "healthy", "yes");
        e.shutdown().unwrap();
    }
    let cdir = col_dir(dir.path(), db, b);
    let datafiles = files_with(&cdir, &|n| n.starts_with("datafile-") && n.ends_with(".db"));
    let victim = datafiles[0].clone();
    let _ = fs::remove_file(victim.with_extension("hint"));
    let mut image = fs::read(&victim).unwrap();
    let m = format::scan(&image).markers[1];
    image[m.offset + 30] ^= 1;
    fs::write(&victim, &image).unwrap();

    let e = open(dir.path());
    let err = col_status(&e, b).unwrap_err();
    assert_eq!(
        err.code,
        quiver_errors::ErrorCode::CorruptedDatafile,
        "{err:?}"
    );
    assert!(col_status(&e, a).is_ok());
    assert_eq!(get(&e, a, "healthy").as_deref(), Some("yes"));
    assert!(e.snapshot().get(b, "d000").is_err());
    assert!(e.snapshot().scan(b).is_err());
    let mut batch = WriteBatch::new();
    batch.put(a, "both", e.hlc().next(), Bytes::from_static(b"a"));
    batch.put(b, "both", e.hlc().next(), Bytes::from_static(b"b"));
    assert!(e.commit(batch).is_err());
    assert_eq!(get(&e, a, "both"), None);
    put(&e, a, "after", "works");
    e.collect().unwrap();
    e.drop_collection(b).unwrap();
    e.shutdown().unwrap();
    drop(e);
    let e = open(dir.path());
    assert_eq!(get(&e, a, "healthy").as_deref(), Some("yes"));
    assert_eq!(get(&e, a, "after").as_deref(), Some("works"));
    assert_eq!(get(&e, a, "both"), None);
    assert_eq!(e.catalog()[0].collections.len(), 1);
}

/// WAL data of a collection that cannot open is kept across restarts (the segment is
/// retained), is not lost while the healthy collections keep being collected and
/// compacted, and comes back when the operator salvages; after a salvage-mode compaction
/// the collection opens normally again.
#[test]
fn wal_data_of_a_damaged_collection_survives_until_salvage() {
    let dir = tempfile::tempdir().unwrap();
    let (db, a, b);
    {
        let e = open(dir.path());
        db = new_db(&e);
        a = new_col(&e, db);
        b = new_col(&e, db);
        fill(&e, b, 20, 900);
        e.compact(b).unwrap();
        put(&e, b, "late", "only in the WAL");
        put(&e, a, "k", "a1");
        e.shutdown().unwrap();
    }
    let cdir = col_dir(dir.path(), db, b);
    let datafiles = files_with(&cdir, &|n| n.starts_with("datafile-") && n.ends_with(".db"));
    let victim = datafiles[0].clone();
    let _ = fs::remove_file(victim.with_extension("hint"));
    let mut image = fs::read(&victim).unwrap();
    let m = format::scan(&image).markers[1];
    image[m.offset + 30] ^= 1;
    fs::write(&victim, &image).unwrap();

    for round in 0..2 {
        let e = open(dir.path());
        assert!(col_status(&e, b).is_err());
        e.collect().unwrap();
        put(&e, a, "k", &format!("a-round{round}"));
        remove(&e, a, "k");
        put(&e, a, "k", &format!("a-final{round}"));
        e.compact(a).unwrap();
        e.shutdown().unwrap();
    }
    {
        let e = Engine::open(dir.path(), salvage_opts()).unwrap();
        assert!(col_status(&e, b).is_ok());
        assert_eq!(get(&e, b, "late").as_deref(), Some("only in the WAL"));
        assert_eq!(contents(&e, b).len(), 20, "19 intact + late");
        assert_eq!(get(&e, a, "k").as_deref(), Some("a-final1"));
        e.compact(b).unwrap();
        e.shutdown().unwrap();
    }
    let e = open(dir.path());
    assert!(col_status(&e, b).is_ok(), "{:?}", col_status(&e, b));
    assert_eq!(get(&e, b, "late").as_deref(), Some("only in the WAL"));
    assert_eq!(contents(&e, b).len(), 20);
    assert_eq!(get(&e, a, "k").as_deref(), Some("a-final1"));
}
