//! Adversarial review: scenarios in which the engine currently loses or resurrects data, or
//! silently accepts a damaged file. Each test FAILS against the current engine; they run only
//! with `QUIVER_REVIEW_FAILING=1` so that CI stays green until the bug is fixed. When a fix
//! lands, the test should pass with the variable set; then drop the gate.

mod review_util;

use std::fs;

use bytes::Bytes;
use quiver_storage::format;
use quiver_storage::{Engine, WriteBatch};
use review_util::*;

fn gated() -> bool {
    std::env::var("QUIVER_REVIEW_FAILING").is_err()
}
/// BUG (medium; introduced by the point-in-time WAL recovery that fixes the page-hole bug
/// above): a damaged spot in a WAL segment is judged a power-loss hole unless a *later*
/// marker claims the damaged range was durable. The claim is only carried by markers written
/// after an fdatasync, so the last synced batches never vouch for what precedes them: here
/// a sync write (acknowledged after an fdatasync that also flushed the damaged page, so the
/// damage cannot be a power-loss hole) lands in the next segment with no claim, the damage
/// is taken for an unsynced hole, and recovery moves the later segment aside
/// (`*.wal.dropped`, since 8399e60; deleted before) — the acknowledged sync write is gone with
/// only a log warning. Fix: let sync batches vouch for what precedes them (e.g. a flag bit
/// "this batch waited for fdatasync": an intact sync batch after a hole means refuse), or
/// record the durable point when an fdatasync completes; refuse when in doubt.
#[test]
fn review_known_bug_damage_before_a_synced_write_is_taken_for_a_power_loss_hole() {
    if gated() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let a;
    {
        let e = Engine::open(
            dir.path(),
            quiver_storage::EngineOptions {
                sync_interval: std::time::Duration::from_secs(3600),
                ..opts()
            },
        )
        .unwrap();
        let db = new_db(&e);
        a = new_col(&e, db);
        for i in 0..12 {
            put(&e, a, &format!("n{i:02}"), &"z".repeat(900));
        }
        // Does not fit into the rest of the 16 KiB segment: goes to the next one.
        let mut b = WriteBatch::new();
        b.put(a, "synced", e.hlc().next(), Bytes::from(vec![b's'; 6000]));
        b.set_sync(true);
        e.commit(b).unwrap().wait().unwrap(); // fdatasync of both segments, acknowledged
        e.shutdown().unwrap();
    }
    let segs = files_with(&dir.path().join("wal"), &|n| n.ends_with(".wal"));
    let with_data: Vec<_> = segs
        .iter()
        .filter(|s| !format::scan(&fs::read(s).unwrap()).markers.is_empty())
        .cloned()
        .collect();
    assert_eq!(
        with_data.len(),
        2,
        "expected the sync write in a second segment"
    );
    // Media damage inside the first segment (its pages were flushed by the fdatasync).
    let mut image = fs::read(&with_data[0]).unwrap();
    image[4096..8192].fill(0);
    fs::write(&with_data[0], &image).unwrap();
    match Engine::open(dir.path(), opts()) {
        Err(e) => assert_eq!(e.code, quiver_errors::ErrorCode::CorruptedDatafile),
        Ok(e) => assert!(
            get(&e, a, "synced").is_some(),
            "a sync-acknowledged write was dropped (its WAL segment moved aside) without any error"
        ),
    }
}

/// BUG (medium): the journal twin of the WAL page-hole bug. The collector appends a run of
/// markers to a journal with one pwrite and then fdatasyncs it; a power loss in between
/// can leave a hole (a later page reached the disk, an earlier one did not). At the next
/// start the journal shows "corruption in the middle" and the collection refuses to open
/// (error 1000, salvage needed), although every marker behind the hole is still in the WAL
/// (the segment is deleted only after the journal sync; `collectedTick` was not advanced).
/// Fix: in a journal, an invalid spot followed only by markers with ticks above the
/// MANIFEST's `collectedTick` is an unsynced tail: cut the journal there (seal it) and let
/// the WAL replay the rest.
#[test]
fn review_known_bug_power_loss_during_collection_leaves_journal_unopenable() {
    if gated() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let faults = std::sync::Arc::new(Faults::default());
    let e = Engine::open(
        dir.path(),
        quiver_storage::EngineOptions {
            journal_size_default: 64 * 1024,
            wal_logfile_size: 64 * 1024,
            ..faulty(&faults)
        },
    )
    .unwrap();
    let db = new_db(&e);
    let a = new_col(&e, db);
    put(&e, a, "first", "collected and synced");
    e.collect().unwrap();
    let mut model = std::collections::BTreeMap::new();
    for i in 0..16 {
        let body = format!("{i}:{}", "j".repeat(900));
        put(&e, a, &format!("n{i:02}"), &body);
        model.insert(format!("n{i:02}"), body);
    }
    // The collector's pwrite reaches the page cache, then the power fails before the
    // journal's fdatasync completes (simulated: the sync fails, then the machine "crashes").
    faults.arm(quiver_storage::FailPoint::JournalSync, 1);
    assert!(e.collect().is_err());
    let crashed = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), crashed.path());
    drop(e);
    let journal = files_with(crashed.path(), &|n| n.starts_with("journal-"))
        .pop()
        .expect("a journal");
    let mut image = fs::read(&journal).unwrap();
    let scan = format::scan(&image);
    assert!(scan.valid_end > 3 * 4096, "the unsynced run spans pages");
    // One page of the unsynced run never reached the disk.
    image[4096..8192].fill(0);
    fs::write(&journal, &image).unwrap();
    let e = open(crashed.path());
    assert!(
        col_status(&e, a).is_ok(),
        "only an unsynced journal tail was damaged: {:?}",
        col_status(&e, a)
    );
    assert_eq!(get(&e, a, "first").as_deref(), Some("collected and synced"));
    for (k, v) in &model {
        assert_eq!(get(&e, a, k).as_ref(), Some(v), "{k}");
    }
}

/// BUG (high): compaction silently drops live documents that it cannot find in a damaged
/// input. Restart trusts hint files (documented: damage is found "when the document is read
/// or compacted"), but `compact_group` only refuses inputs whose scan ends `Corrupt`; a
/// datafile that lost its tail (`TornTail`/`Clean` without a matching footer) is copied up
/// to the damage, the index entries of the missing documents are never repointed, the
/// input is unlisted and deleted — the documents are gone (reads fail, and after a restart
/// they have vanished without any error). Fix: in compaction, require a sealed input with a
/// matching footer (as recovery now does) and check that every referenced location was
/// found in the input before swapping; otherwise fail with error 1000.
#[test]
fn review_known_bug_compaction_of_a_truncated_datafile_loses_live_documents() {
    if gated() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (db, a, model);
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
    let f = fs::OpenOptions::new().write(true).open(victim).unwrap();
    f.set_len((last.offset + last.len / 2) as u64).unwrap();
    drop(f);
    {
        let e = open(dir.path());
        let _ = e.compact(a); // may fail: that is the point
        remove(&e, a, "d000"); // something to make the next compaction run
        let _ = e.compact(a);
        e.shutdown().unwrap();
    }
    let e = open(dir.path());
    let mut expected = model.clone();
    expected.remove("d000");
    let status = col_status(&e, a);
    if status.is_ok() {
        let mut missing = Vec::new();
        for (k, v) in &expected {
            match e.snapshot().get(a, k) {
                Ok(Some(d)) if d.body == v.as_bytes() => {}
                _ => missing.push(k.clone()),
            }
        }
        assert!(
            missing.is_empty(),
            "documents lost by compacting a damaged datafile, no error anywhere: {missing:?}"
        );
    }
}
