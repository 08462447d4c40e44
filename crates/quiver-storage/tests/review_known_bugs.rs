//! Adversarial review: scenarios in which the engine currently loses or resurrects data, or
//! silently accepts a damaged file. Each test FAILS against the current engine; they run only
//! with `QUIVER_REVIEW_FAILING=1` so that CI stays green until the bug is fixed. When a fix
//! lands, the test should pass with the variable set; then drop the gate.

mod review_util;

use std::fs;

use bytes::Bytes;
use quiver_storage::format::{self, MarkerType, FLAG_COMMIT};
use quiver_storage::{Engine, WriteBatch};
use review_util::*;

fn gated() -> bool {
    std::env::var("QUIVER_REVIEW_FAILING").is_err()
}
/// BUG (low for JSON bodies, real for the engine's opaque-bytes contract): the torn-tail
/// test `any_valid_marker_after` (format.rs) probes every 8-byte offset after the first
/// invalid marker, *including the inside of the torn marker itself*. A document whose bytes
/// contain a well-formed marker turns an ordinary torn tail of the WAL (power loss during
/// a non-sync write) into "corruption in the middle", and the whole engine refuses to start
/// (recover_wal returns error 1000). With ignore_datafile_errors the embedded marker would
/// be salvaged as a real document. JSON text cannot contain NUL bytes, so the core's bodies
/// cannot trigger it today. Fix: start probing after the torn marker's announced length when
/// that length is plausible, and treat a WAL segment's tail after the last complete batch
/// as torn unless a later *batch* (COMMIT) follows.
#[test]
fn review_known_bug_torn_tail_with_marker_shaped_body_refuses_startup() {
    if gated() {
        return;
    }
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
    let e =
        Engine::open(dir.path(), opts()).expect("a torn tail of the WAL must not refuse startup");
    assert_eq!(
        get(&e, a, "before").as_deref(),
        Some("acknowledged and synced")
    );
    assert_eq!(get(&e, a, "e"), None);
}

/// BUG (medium): a power loss can leave a hole in the not-yet-synced part of the WAL (the
/// kernel writes dirty pages back in any order: a later page reached the disk, an earlier one
/// did not). Recovery classifies that as "corruption in the middle" and the whole engine
/// refuses to start (format.rs `scan` -> `ScanEnd::Corrupt`, engine.rs `replay_segment`),
/// although the design promises that a power loss only loses the last
/// `--wal.sync-interval` of non-sync writes. Bit rot and an unsynced hole look alike, but the
/// WAL's tail after the last fdatasync is *expected* to be arbitrary. Fix: point-in-time
/// recovery for the WAL — stop at the first invalid marker of a segment that may hold
/// unsynced data (e.g. persist the durable offset/tick at each fdatasync in a small file, or
/// treat the newest segments' tails as torn), refusing to start only for damage before the
/// last durable point.
#[test]
fn review_known_bug_unsynced_wal_page_hole_after_power_loss_refuses_startup() {
    if gated() {
        return;
    }
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
    let e = Engine::open(dir.path(), opts())
        .expect("a power loss in the unsynced WAL tail must not refuse startup");
    assert_eq!(
        get(&e, a, "synced").as_deref(),
        Some("durable before the power loss")
    );
}

/// BUG (medium; introduced by the point-in-time WAL recovery that fixes the page-hole bug
/// above): a damaged spot in a WAL segment is judged a power-loss hole unless a *later*
/// marker claims the damaged range was durable. The claim is only carried by markers written
/// after an fdatasync, so the last synced batches never vouch for what precedes them: here
/// a sync write (acknowledged after an fdatasync that also flushed the damaged page, so the
/// damage cannot be a power-loss hole) lands in the next segment with no claim, the damage
/// is taken for an unsynced hole, and recovery *deletes* the later segment — the acknowledged
/// sync write is gone without any error. Fix: record the durable point when an fdatasync
/// completes (e.g. a tiny side file or a sync-point marker written by the syncer), never
/// delete WAL segments at recovery (move them aside), and refuse when in doubt.
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
            "a sync-acknowledged write was dropped (its WAL segment deleted) without any error"
        ),
    }
}

/// BUG (medium; in the point-in-time WAL recovery being added): at open the engine sets
/// its durable tick to the highest recovered tick, but the recovered WAL segments were read
/// from the page cache after a kill -9 and are never fdatasynced (they wait in `sealed` for
/// the collector; the syncer only syncs `unsynced` and the current segment). New markers
/// then "claim" that the old, unsynced data is durable. A power loss before the collector
/// has moved them loses old pages as usual, and the next start sees a hole "vouched for" by
/// a later marker: it refuses to start, reporting damage to synced data, although only
/// never-synced writes were lost. Fix: fdatasync every recovered segment before publishing
/// the recovered tick as durable (or start the durable tick at 0 after recovery).
#[test]
fn review_known_bug_kill9_then_power_loss_refuses_startup() {
    if gated() {
        return;
    }
    let lazy = || quiver_storage::EngineOptions {
        sync_interval: std::time::Duration::from_secs(3600),
        ..opts()
    };
    let first = tempfile::tempdir().unwrap();
    let killed = tempfile::tempdir().unwrap();
    let a;
    {
        let e = Engine::open(first.path(), lazy()).unwrap();
        let db = new_db(&e);
        a = new_col(&e, db);
        for i in 0..14 {
            put(&e, a, &format!("n{i:02}"), &"z".repeat(900)); // never synced
        }
        copy_dir(first.path(), killed.path()); // kill -9: no shutdown, no fdatasync
    }
    let old_segment_name = files_with(&killed.path().join("wal"), &|n| n.ends_with(".wal"))
        .into_iter()
        .find(|s| format::scan(&fs::read(s).unwrap()).valid_end > 3 * 4096)
        .expect("the segment of the first run")
        .file_name()
        .unwrap()
        .to_owned();
    let power_lost = tempfile::tempdir().unwrap();
    {
        let e = Engine::open(killed.path(), lazy()).unwrap();
        let mut b = WriteBatch::new();
        b.put(
            a,
            "synced",
            e.hlc().next(),
            Bytes::from_static(b"acknowledged"),
        );
        b.set_sync(true);
        e.commit(b).unwrap().wait().unwrap();
        copy_dir(killed.path(), power_lost.path()); // power loss right after the ack
    }
    // The first run's pages were never synced: one of them did not survive the power loss.
    let old_segment = power_lost.path().join("wal").join(old_segment_name);
    let mut image = fs::read(&old_segment).unwrap();
    image[4096..8192].fill(0);
    fs::write(&old_segment, &image).unwrap();
    let e = Engine::open(power_lost.path(), opts())
        .expect("only never-synced writes were lost: startup must not refuse");
    assert_eq!(get(&e, a, "synced").as_deref(), Some("acknowledged"));
}
