//! Damaged or missing collection files fail their collection (error 1000/1002) and are
//! never silently used; salvage keeps reporting the damage; a failed journal fdatasync
//! leaves no hole.

mod harness;

use std::fs;

use harness::*;
use quiver_storage::format::{self};
use quiver_storage::{Engine, FailPoint};

/// A listed datafile without its hint file must end in a footer whose count and CRC of
/// CRCs match its markers: a datafile that lost its tail (footer and last markers) fails
/// its collection with error 1000 instead of opening without the documents behind the cut.
#[test]
fn a_sealed_datafile_that_lost_its_tail_fails_its_collection() {
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
    let cdir = col_dir(dir.path(), db, a);
    let datafiles = files_with(&cdir, &|n| n.starts_with("datafile-") && n.ends_with(".db"));
    assert!(!datafiles.is_empty(), "no sealed datafile");
    let victim = &datafiles[0];
    let _ = fs::remove_file(victim.with_extension("hint"));
    let image = fs::read(victim).unwrap();
    let scan = format::scan(&image);
    let last = *scan.markers.last().unwrap();
    // Cut inside the last marker: the footer and the end of that document are gone.
    let f = fs::OpenOptions::new().write(true).open(victim).unwrap();
    f.set_len((last.offset + last.len / 2) as u64).unwrap();
    drop(f);

    let e = open(dir.path());
    let status = col_status(&e, a);
    if status.is_ok() {
        let now = contents(&e, a);
        assert_eq!(
            now.len(),
            model.len(),
            "a truncated datafile was accepted silently: documents are missing and the \
             collection reports no error"
        );
    }
}

/// Opening with `ignore_datafile_errors` writes no hint file for a damaged datafile: the
/// next normal start scans it again and reports the damage instead of trusting a hint that
/// stops at the damaged marker and silently losing the salvaged documents behind it.
#[test]
fn salvage_writes_no_hint_so_the_next_normal_start_reports_the_damage() {
    let dir = tempfile::tempdir().unwrap();
    let (db, a);
    {
        let e = open(dir.path());
        db = new_db(&e);
        a = new_col(&e, db);
        fill(&e, a, 24, 900);
        e.compact(a).unwrap();
        e.shutdown().unwrap();
    }
    let cdir = col_dir(dir.path(), db, a);
    let datafiles = files_with(&cdir, &|n| n.starts_with("datafile-") && n.ends_with(".db"));
    let victim = datafiles[0].clone();
    fs::remove_file(victim.with_extension("hint")).unwrap();
    let mut image = fs::read(&victim).unwrap();
    let scan = format::scan(&image);
    assert!(
        scan.markers.len() >= 3,
        "need three markers in the datafile"
    );
    let damaged = scan.markers[1];
    image[damaged.offset + damaged.len - 1] ^= 0x55;
    fs::write(&victim, &image).unwrap();

    // Normal start: reported (correct).
    {
        let e = open(dir.path());
        assert!(col_status(&e, a).is_err());
        e.shutdown().unwrap();
    }
    // Salvage start: everything but the damaged document.
    let salvaged = {
        let e = Engine::open(dir.path(), salvage_opts()).unwrap();
        assert!(col_status(&e, a).is_ok());
        let c = contents(&e, a);
        e.shutdown().unwrap();
        c
    };
    assert!(salvaged.len() >= scan.markers.len() - 1);
    // Next normal start: either the corruption is still reported, or the salvaged
    // documents are all there. Silently opening with fewer documents is data loss.
    let e = open(dir.path());
    if col_status(&e, a).is_ok() {
        assert_eq!(
            contents(&e, a).len(),
            salvaged.len(),
            "documents recovered by salvage vanished on the next normal start"
        );
    }
}

/// A collection whose directory (and so its MANIFEST, written at creation) disappeared fails
/// to open with error 1002 instead of opening as an empty collection.
#[test]
fn a_missing_collection_directory_fails_its_collection() {
    let dir = tempfile::tempdir().unwrap();
    let (db, a);
    {
        let e = open(dir.path());
        db = new_db(&e);
        a = new_col(&e, db);
        fill(&e, a, 20, 500);
        e.compact(a).unwrap();
        e.shutdown().unwrap();
    }
    fs::remove_dir_all(col_dir(dir.path(), db, a)).unwrap();
    let e = open(dir.path());
    assert!(
        col_status(&e, a).is_err() || contents(&e, a).len() == 20,
        "20 documents gone without any error"
    );
}

/// After a failed journal fdatasync the collector forgets what it appended since the pass
/// began, so the retry rewrites the same range (the kernel may have dropped those dirty
/// pages) instead of appending a second copy behind a possible hole, which the next start
/// would report as corruption in the middle of the journal. The dropped pages are simulated
/// by zeroing the first copy after the failed sync.
#[test]
fn a_failed_journal_fdatasync_is_retried_over_the_same_range() {
    let dir = tempfile::tempdir().unwrap();
    let faults = std::sync::Arc::new(Faults::default());
    let e = Engine::open(dir.path(), faulty(&faults)).unwrap();
    let db = new_db(&e);
    let a = new_col(&e, db);
    put(&e, a, "k1", "first");
    put(&e, a, "k2", "second");
    faults.arm(FailPoint::JournalSync, 1);
    assert!(
        e.collect().is_err(),
        "journal fdatasync failure must fail the collection"
    );
    let cdir = col_dir(dir.path(), db, a);
    let journals = files_with(&cdir, &|n| n.starts_with("journal-"));
    assert_eq!(journals.len(), 1);
    // The kernel dropped the unsynced pages: the first copy never reaches the disk.
    let mut image = fs::read(&journals[0]).unwrap();
    let scan = format::scan(&image);
    let first = scan.markers.first().unwrap().offset;
    let end = scan.valid_end;
    image[first..end].fill(0);
    fs::write(&journals[0], &image).unwrap();
    e.collect().unwrap(); // retry succeeds, WAL segment deleted
    let crashed = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), crashed.path());
    drop(e);
    let e2 = open(crashed.path());
    assert!(
        col_status(&e2, a).is_ok(),
        "collection refuses to open after a retried journal sync: {:?}",
        col_status(&e2, a)
    );
    assert_eq!(get(&e2, a, "k1").as_deref(), Some("first"));
    assert_eq!(get(&e2, a, "k2").as_deref(), Some("second"));
}
