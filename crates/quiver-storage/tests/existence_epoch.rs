//! `Snapshot::existence_epoch`: changes exactly when a commit changes which keys are alive,
//! is None for a snapshot older than the newest such change, and is never shared by two
//! collections or two opens.

mod common;

use common::*;
use quiver_storage::{CollectionOptions, WriteBatch};

#[test]
fn the_epoch_follows_changes_of_the_alive_keys() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (db, cid) = setup(&engine);
    let epoch = |s: &quiver_storage::Snapshot| s.existence_epoch(cid).unwrap();

    let empty = engine.snapshot();
    let e0 = epoch(&empty).expect("a new collection has an epoch");

    put(&engine, cid, "a", "1");
    let one = engine.snapshot();
    let e1 = epoch(&one).unwrap();
    assert_ne!(e1, e0, "an insert changes the epoch");
    assert_eq!(
        epoch(&empty),
        None,
        "a snapshot from before the insert gets none"
    );

    // A new version of an alive key, and the removal of a missing one, change nothing.
    put(&engine, cid, "a", "2");
    remove(&engine, cid, "nope");
    assert_eq!(epoch(&engine.snapshot()), Some(e1));
    assert_eq!(
        epoch(&one),
        Some(e1),
        "the older snapshot sees the same keys alive"
    );

    // The single-insert path.
    let rev = engine.hlc().next();
    engine
        .insert_new(cid, "b", rev, b"{}", false)
        .unwrap()
        .unwrap()
        .wait()
        .unwrap();
    let two = engine.snapshot();
    let e2 = epoch(&two).unwrap();
    assert_ne!(e2, e1);
    assert_eq!(epoch(&one), None);
    // A refused single insert (the key is alive) changes nothing.
    let rev = engine.hlc().next();
    assert!(engine
        .insert_new(cid, "b", rev, b"{}", false)
        .unwrap()
        .is_none());
    assert_eq!(epoch(&engine.snapshot()), Some(e2));

    remove(&engine, cid, "a");
    let e3 = epoch(&engine.snapshot()).unwrap();
    assert_ne!(e3, e2);
    assert_eq!(epoch(&two), None);

    engine.truncate(cid, false).unwrap().wait().unwrap();
    let e4 = epoch(&engine.snapshot()).unwrap();
    assert_ne!(e4, e3, "a truncate changes the epoch");
    // A truncate of an empty collection writes nothing and changes nothing.
    engine.truncate(cid, false).unwrap().wait().unwrap();
    assert_eq!(epoch(&engine.snapshot()), Some(e4));

    // A write to another collection leaves this one's epoch alone; the epochs differ.
    let other = engine
        .create_collection(db, CollectionOptions::default(), serde_json::json!({}))
        .unwrap();
    let mut batch = WriteBatch::new();
    batch.put(
        other,
        "x",
        engine.hlc().next(),
        bytes::Bytes::from_static(b"{}"),
    );
    engine.commit(batch).unwrap().wait().unwrap();
    let now = engine.snapshot();
    assert_eq!(epoch(&now), Some(e4));
    let e_other = now.existence_epoch(other).unwrap().unwrap();
    assert!(![e0, e1, e2, e3, e4].contains(&e_other));

    // Reopened: a fresh epoch, unlike any before.
    engine.shutdown().unwrap();
    drop(engine);
    let engine = open(dir.path());
    let e5 = engine.snapshot().existence_epoch(cid).unwrap().unwrap();
    assert!(![e0, e1, e2, e3, e4, e_other].contains(&e5));
    engine.shutdown().unwrap();
}
