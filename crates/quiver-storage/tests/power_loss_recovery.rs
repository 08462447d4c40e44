//! Recovery after a power loss: unsynced WAL and journal tails are cut point-in-time,
//! damage that an acknowledged fdatasync covered refuses startup, salvage keeps whole batches.

mod harness;

use std::fs;

use bytes::Bytes;
use harness::*;
use quiver_storage::format::{self, MarkerType, FLAG_COMMIT};
use quiver_storage::{Engine, WriteBatch};

/// A torn WAL tail stays a torn tail when the torn document's bytes contain a well-formed
/// marker: the probe for intact markers behind the damage starts after the torn marker's
/// announced length, and only a later complete batch makes damage "in the middle". The
/// engine stores opaque bytes, so a body may look like anything.
#[test]
fn a_torn_wal_tail_whose_body_looks_like_a_marker_is_still_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let a;
    {
        let e = open(dir.path());
        let db = new_db(&e);
        a = new_col(&e, db);
        put(&e, a, "before", "acknowledged and synced");
        e.sync().unwrap();
        // Key "e": the document bytes start 42 bytes into the marker; 6 filler bytes align
        // the embedded marker to 8.
        let embedded = format::data_marker(MarkerType::Document, FLAG_COMMIT, 1, a, 1, "z", b"zz");
        let mut body = vec![b'-'; 6];
        body.extend_from_slice(&embedded);
        body.extend_from_slice(&[b'y'; 2000]);
        let mut batch = WriteBatch::new();
        batch.put(a, "e", e.hlc().next(), Bytes::from(body));
        e.commit(batch).unwrap();
        e.shutdown().unwrap();
    }
    // Power loss tore the last write: only its first part reached the disk.
    let segs = files_with(&dir.path().join("wal"), &|n| n.ends_with(".wal"));
    let mut torn = false;
    for seg in segs {
        let image = fs::read(&seg).unwrap();
        let scan = format::scan(&image);
        if let Some(last) = scan.markers.last() {
            if last.len > 2000 {
                let cut = last.offset + 48 + 8 + 200;
                let mut image = image.clone();
                image[cut..].fill(0);
                fs::write(&seg, &image).unwrap();
                torn = true;
            }
        }
    }
    assert!(torn, "did not find the large marker in the WAL");
    lose_durable_record(dir.path());
    let e =
        Engine::open(dir.path(), opts()).expect("a torn tail of the WAL must not refuse startup");
    assert_eq!(
        get(&e, a, "before").as_deref(),
        Some("acknowledged and synced")
    );
    assert_eq!(get(&e, a, "e"), None);
}

/// A power loss can leave a hole in the unsynced part of the WAL (pages reach the disk in
/// any order). With no later marker vouching that the range was durable, recovery is
/// point-in-time: the intact prefix is used and startup succeeds; only the last
/// `--wal.sync-interval` of non-sync writes may be lost.
#[test]
fn an_unsynced_wal_page_hole_recovers_point_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let a;
    {
        let e = open(dir.path());
        let db = new_db(&e);
        a = new_col(&e, db);
        put(&e, a, "synced", "durable before the power loss");
        e.sync().unwrap();
        for i in 0..14 {
            // Non-sync writes: acknowledged, allowed to be lost on power failure.
            put(&e, a, &format!("n{i}"), &"z".repeat(900));
        }
        e.shutdown().unwrap();
    }
    let segs = files_with(&dir.path().join("wal"), &|n| n.ends_with(".wal"));
    let mut holed = false;
    for seg in segs {
        let mut image = fs::read(&seg).unwrap();
        if format::scan(&image).valid_end > 3 * 4096 {
            // Page 1 (bytes 4096..8192) never reached the disk; pages 2.. did.
            image[4096..8192].fill(0);
            fs::write(&seg, &image).unwrap();
            holed = true;
        }
    }
    assert!(holed, "expected one WAL segment longer than three pages");
    lose_durable_record(dir.path());
    let e = Engine::open(dir.path(), opts())
        .expect("a power loss in the unsynced WAL tail must not refuse startup");
    assert_eq!(
        get(&e, a, "synced").as_deref(),
        Some("durable before the power loss")
    );
}

/// A power loss between the collector's journal append and its fdatasync can leave a hole
/// in the journal. Damage followed only by markers above the MANIFEST's collected tick is
/// an unsynced tail: the journal is cut there and the WAL (deleted only after the journal
/// sync) replays the rest, so the collection opens with every acknowledged write.
#[test]
fn a_power_loss_during_collection_cuts_the_journal_and_replays_the_wal() {
    let dir = tempfile::tempdir().unwrap();
    let faults = std::sync::Arc::new(Faults::default());
    let e = Engine::open(
        dir.path(),
        quiver_storage::EngineOptions {
            journal_size_default: 64 * 1024,
            min_journal_size: quiver_storage::JOURNAL_SIZE_FLOOR,
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

/// A damaged spot in a WAL segment followed by an intact waitForSync batch is not taken for
/// a power-loss hole: that batch's fdatasync flushed the damaged page too, so startup
/// refuses (error 1000) and salvage keeps the acknowledged batch (its COMMIT marker carries
/// `FLAG_SYNC`, because nothing written later vouches for the newest sync batches).
#[test]
fn damage_before_a_synced_write_refuses_startup_and_salvage_keeps_it() {
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
    // With the durable-tick record the damage is "in data that was already synced"; without
    // it (lost), the waitForSync batch behind the damage must still make startup refuse.
    lose_durable_record(dir.path());
    let Err(err) = Engine::open(dir.path(), opts()) else {
        panic!("damage before a sync-acknowledged write must be reported");
    };
    assert_eq!(err.code, quiver_errors::ErrorCode::CorruptedDatafile);
    assert!(
        err.to_string().contains("waitForSync"),
        "the error says why: {err}"
    );
    // Nothing was moved aside by the refused start.
    assert!(files_with(&dir.path().join("wal"), &|n| n.contains("dropped")).is_empty());
    let e = Engine::open(
        dir.path(),
        quiver_storage::EngineOptions {
            ignore_datafile_errors: true,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(get(&e, a, "synced").map(|s| s.len()), Some(6000));
    // Markers before the damage survive, and so do intact ones after it in the same segment.
    assert!(get(&e, a, "n00").is_some());
    assert!(get(&e, a, "n11").is_some());
}

/// The same-segment variant: non-sync batches, a hole, then an intact sync batch in the
/// same segment. Salvage keeps every intact complete batch; a batch whose head lies in the
/// damaged range is not applied in part.
#[test]
fn damage_before_a_sync_batch_in_the_same_segment_refuses_and_salvage_keeps_whole_batches() {
    let dir = tempfile::tempdir().unwrap();
    let a;
    {
        let e = Engine::open(
            dir.path(),
            quiver_storage::EngineOptions {
                sync_interval: std::time::Duration::from_secs(3600),
                wal_logfile_size: 256 * 1024,
                ..opts()
            },
        )
        .unwrap();
        let db = new_db(&e);
        a = new_col(&e, db);
        for i in 0..8 {
            // Two-marker batches of ~1 KiB each.
            let mut b = WriteBatch::new();
            b.put(
                a,
                &format!("p{i}"),
                e.hlc().next(),
                Bytes::from("x".repeat(500)),
            );
            b.put(
                a,
                &format!("q{i}"),
                e.hlc().next(),
                Bytes::from("y".repeat(500)),
            );
            e.commit(b).unwrap().wait().unwrap();
        }
        let mut b = WriteBatch::new();
        b.put(a, "synced", e.hlc().next(), Bytes::from("s"));
        b.set_sync(true);
        e.commit(b).unwrap().wait().unwrap();
        e.shutdown().unwrap();
    }
    let seg = files_with(&dir.path().join("wal"), &|n| n.ends_with(".wal"))
        .into_iter()
        .find(|s| !format::scan(&fs::read(s).unwrap()).markers.is_empty())
        .unwrap();
    let mut image = fs::read(&seg).unwrap();
    let markers = format::scan(&image).markers;
    assert_eq!(markers.len(), 17);
    // Damage the first marker of batch 3 (p2): its second marker q2 stays intact.
    let p2 = markers[4];
    assert_eq!(p2.flags & FLAG_COMMIT, 0);
    image[p2.offset + 30] ^= 1;
    fs::write(&seg, &image).unwrap();
    let Err(err) = Engine::open(dir.path(), opts()) else {
        panic!("damage before an intact sync batch must be reported");
    };
    assert_eq!(err.code, quiver_errors::ErrorCode::CorruptedDatafile);
    let e = Engine::open(
        dir.path(),
        quiver_storage::EngineOptions {
            ignore_datafile_errors: true,
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(get(&e, a, "synced").as_deref(), Some("s"));
    for i in [0, 1, 3, 4, 5, 6, 7] {
        assert!(get(&e, a, &format!("p{i}")).is_some(), "p{i}");
        assert!(get(&e, a, &format!("q{i}")).is_some(), "q{i}");
    }
    assert_eq!(get(&e, a, "p2"), None);
    assert_eq!(get(&e, a, "q2"), None, "half of a batch was applied");
    // The collector copies what the salvaging replay indexed; after it the damaged segment
    // is gone and a normal start sees the same state.
    e.collect().unwrap();
    e.shutdown().unwrap();
    drop(e);
    let e = Engine::open(dir.path(), opts()).unwrap();
    assert_eq!(get(&e, a, "synced").as_deref(), Some("s"));
    assert!(get(&e, a, "q7").is_some());
    assert_eq!(get(&e, a, "q2"), None);
}
