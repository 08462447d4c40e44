//! State that must hold across restarts and handles: ticks never go back, retained WAL
//! segments are collected once, a shut-down handle changes nothing, long version chains
//! serve every snapshot.

mod harness;

use std::fs;

use harness::*;

/// The tick counter never goes backwards across a restart, even when compaction dropped the
/// newest markers (a removed document with its removal): every MANIFEST records the tick
/// high-water mark, so no tick handed out (and reported by `last_tick`) is issued again.
#[test]
fn ticks_never_go_backwards_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let before;
    {
        let e = open(dir.path());
        let db = new_db(&e);
        let a = new_col(&e, db);
        put(&e, a, "k", "v");
        remove(&e, a, "k");
        e.compact(a).unwrap();
        before = e.last_tick();
        e.shutdown().unwrap();
    }
    let e = open(dir.path());
    assert!(
        e.last_tick() >= before,
        "last tick {} after restart, {} before",
        e.last_tick(),
        before
    );
}

/// A WAL segment retained because another collection cannot open is not collected again
/// into a healthy collection's journal at every start (the collected tick in its MANIFEST
/// says what is already there), so its disk use and dead count do not grow per restart.
#[test]
fn a_retained_wal_segment_is_collected_once_per_collection() {
    let dir = tempfile::tempdir().unwrap();
    let (db, a, b);
    {
        let e = open(dir.path());
        db = new_db(&e);
        a = new_col(&e, db);
        b = new_col(&e, db);
        for i in 0..5 {
            put(&e, a, &format!("k{i}"), "doc of A");
        }
        put(&e, b, "x", "doc of B");
        e.shutdown().unwrap();
    }
    fs::write(col_dir(dir.path(), db, b).join("MANIFEST"), b"{ damaged").unwrap();
    let mut dead = Vec::new();
    for _ in 0..3 {
        let e = open(dir.path());
        assert!(col_status(&e, b).is_err());
        e.collect().unwrap();
        dead.push(e.figures(a).unwrap().dead_count);
        e.shutdown().unwrap();
    }
    assert_eq!(
        dead,
        vec![0, 0, 0],
        "dead copies of A's documents pile up with every restart"
    );
}

/// After `shutdown()` (which releases the directory lock) every mutating call of a handle
/// fails: an old handle must not rewrite catalog.json or run the collector and compactor in
/// a directory another engine may have opened meanwhile.
#[test]
fn a_handle_never_touches_the_directory_after_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let old = open(dir.path());
    let db = new_db(&old);
    let a = new_col(&old, db);
    put(&old, a, "k", "v");
    old.shutdown().unwrap();
    let new = open(dir.path());
    let b = new_col(&new, db);
    put(&new, b, "kb", "vb");
    let late_update = old.update_collection(
        a,
        quiver_storage::CollectionOptions::default(),
        serde_json::json!({"late": true}),
    );
    let late_compact = old.compact(a);
    new.shutdown().unwrap();
    drop(new);
    let again = open(dir.path());
    let cols: Vec<u64> = again.catalog()[0]
        .collections
        .iter()
        .map(|c| c.id)
        .collect();
    assert!(
        cols.contains(&b),
        "a collection created by the new engine vanished (late update: {:?}, late compact: {:?})",
        late_update.is_ok(),
        late_compact.is_ok()
    );
    assert!(
        late_update.is_err(),
        "update_collection accepted after shutdown"
    );
    assert!(late_compact.is_err(), "compact accepted after shutdown");
}

/// While snapshots are open, updates of one key build a long version chain (kept oldest
/// first, searched by tick) and a long count history (binary-searched): every snapshot
/// along a 20,000-version chain still reads its own version and count. The speed of that
/// layout is a benchmark matter; the unit test
/// `index::tests::long_chains_stay_oldest_first_and_resolve_every_tick` checks the layout.
#[test]
fn every_snapshot_along_a_long_version_chain_reads_its_own_version() {
    let dir = tempfile::tempdir().unwrap();
    let e = open(dir.path());
    let db = new_db(&e);
    let a = new_col(&e, db);
    put(&e, a, "hot", "0");
    let long_query = e.snapshot(); // a long-running query pins every version from here on
    let mut pinned = Vec::new();
    for next in 1..=20_000usize {
        put(&e, a, "hot", &next.to_string());
        if next % 2_500 == 0 {
            pinned.push((next, e.snapshot()));
        }
    }
    assert_eq!(
        long_query.get(a, "hot").unwrap().map(|d| d.body),
        Some(bytes::Bytes::from_static(b"0"))
    );
    for (version, snap) in &pinned {
        let body = snap.get(a, "hot").unwrap().unwrap().body;
        assert_eq!(&body[..], version.to_string().as_bytes());
        assert_eq!(snap.count(a).unwrap(), 1);
    }
    assert_eq!(long_query.count(a).unwrap(), 1);
}
