//! Compaction never loses or resurrects data: removals survive while an older version of
//! their key may come back, damaged inputs are refused before the swap.

mod harness;

use std::fs;

use harness::*;
use quiver_storage::format::{self};
use quiver_storage::WriteBatch;

/// Compaction of a group that starts at the oldest datafile keeps a removal marker while
/// the result keeps an older version of its key (a live snapshot pins it): without the
/// removal, "highest tick wins" would bring the removed document back at the next restart.
#[test]
fn compaction_keeps_a_removal_while_a_snapshot_pins_an_older_version() {
    let dir = tempfile::tempdir().unwrap();
    {
        let e = open(dir.path());
        let db = new_db(&e);
        let a = new_col(&e, db);
        put(&e, a, "keep", "kept");
        put(&e, a, "gone", "removed later");
        let reader = e.snapshot(); // a long-running query
        remove(&e, a, "gone");
        e.compact(a).unwrap();
        // The old reader still sees its version; new readers do not.
        assert!(reader.get(a, "gone").unwrap().is_some());
        assert_eq!(get(&e, a, "gone"), None);
        drop(reader);
        e.shutdown().unwrap();
    }
    let e = open(dir.path());
    let a = e.catalog()[0].collections[0].id;
    assert_eq!(
        get(&e, a, "gone"),
        None,
        "a document removed (and acknowledged) before the restart is alive again"
    );
    assert_eq!(get(&e, a, "keep").as_deref(), Some("kept"));
}

/// A WAL segment retained because another collection failed to open is replayed at every
/// start; markers at or below a collection's collected tick (MANIFEST) are skipped, so a
/// document removed and compacted away does not come back from that segment.
#[test]
fn compaction_keeps_removals_while_a_retained_wal_segment_holds_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let (db, a, b);
    {
        let e = open(dir.path());
        db = new_db(&e);
        a = new_col(&e, db);
        b = new_col(&e, db);
        put(&e, a, "k", "doc of A");
        put(&e, b, "x", "doc of B");
        e.shutdown().unwrap();
    }
    // Collection B's MANIFEST is damaged: B fails to open, the rest opens.
    fs::write(col_dir(dir.path(), db, b).join("MANIFEST"), b"{ damaged").unwrap();
    {
        let e = open(dir.path());
        assert!(col_status(&e, b).is_err());
        assert_eq!(get(&e, a, "k").as_deref(), Some("doc of A"));
        e.collect().unwrap(); // the segment is retained for B
        remove(&e, a, "k");
        e.compact(a).unwrap();
        assert_eq!(get(&e, a, "k"), None);
        e.shutdown().unwrap();
    }
    let e = open(dir.path());
    assert_eq!(
        get(&e, a, "k"),
        None,
        "removed document of a healthy collection resurrected from a retained WAL segment"
    );
}

/// Compaction requires each input to be sealed with a matching footer and every referenced
/// location to be found in the inputs before the swap; otherwise it fails with error 1000
/// and changes nothing. Restart trusts hint files, so compaction is where a datafile that
/// lost its tail must be caught before it is replaced.
#[test]
fn compaction_refuses_a_damaged_input_instead_of_losing_live_documents() {
    compact_damaged_datafile(false);
    compact_damaged_datafile(true);
}

fn compact_damaged_datafile(zero_tail: bool) {
    let dir = tempfile::tempdir().unwrap();
    let (db, a, model);
    let mut expected_d000_removed = true;
    {
        let e = open(dir.path());
        db = new_db(&e);
        a = new_col(&e, db);
        model = fill(&e, a, 24, 900);
        e.compact(a).unwrap();
        e.shutdown().unwrap();
    }
    // The first datafile loses its tail; its hint file is intact, so restart trusts it.
    let cdir = col_dir(dir.path(), db, a);
    let datafiles = files_with(&cdir, &|n| n.starts_with("datafile-") && n.ends_with(".db"));
    let victim = &datafiles[0];
    let image = fs::read(victim).unwrap();
    let last = *format::scan(&image).markers.last().unwrap();
    let cut = last.offset + last.len / 2;
    if zero_tail {
        // Same length, so a hint that only checks coverage still trusts the file.
        let mut damaged = image.clone();
        damaged[cut..].fill(0);
        fs::write(victim, &damaged).unwrap();
    } else {
        let f = fs::OpenOptions::new().write(true).open(victim).unwrap();
        f.set_len(cut as u64).unwrap();
        drop(f);
    }
    {
        let e = open(dir.path());
        let _ = e.compact(a); // may fail: that is the point
                              // Something to make the next compaction run (may be refused if the damage is seen).
        let mut b = WriteBatch::new();
        b.remove(a, "d000", e.hlc().next());
        let removed = e.commit(b).and_then(|t| t.wait()).is_ok();
        let _ = e.compact(a);
        if !removed {
            expected_d000_removed = false;
        }
        e.shutdown().unwrap();
    }
    let e = open(dir.path());
    let mut expected = model.clone();
    if expected_d000_removed {
        expected.remove("d000");
    }
    let status = col_status(&e, a);
    if status.is_ok() {
        let mut missing = Vec::new();
        for (k, v) in &expected {
            match e.snapshot().get(a, k) {
                Ok(Some(d)) if d.body == v.as_bytes() => {}
                // Reported damage (error 1000 on read) is acceptable, silence is not.
                Err(err) if err.code == quiver_errors::ErrorCode::CorruptedDatafile => {}
                _ => missing.push(k.clone()),
            }
        }
        assert!(
            missing.is_empty(),
            "documents lost by compacting a damaged datafile (zero_tail={zero_tail}), no error anywhere: {missing:?}"
        );
    }
}
