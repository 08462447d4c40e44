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
