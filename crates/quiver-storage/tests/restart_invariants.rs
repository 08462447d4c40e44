//! Restart invariants: a seal interrupted between rename and MANIFEST recovers, repeated
//! restarts with uncollected WAL keep the model, writes after a full compaction survive.

mod harness;

use std::sync::Arc;

use harness::*;
use quiver_storage::{Engine, FailPoint};

/// A seal whose MANIFEST update fails leaves `datafile-<fid>.db` on disk while the MANIFEST
/// still lists the fid as the journal; a crash right then, or a retry and a crash later,
/// recovers every document exactly once.
#[test]
fn seal_interrupted_between_rename_and_manifest_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(Faults::default());
    let e = Engine::open(dir.path(), faulty(&faults)).unwrap();
    let db = new_db(&e);
    let a = new_col(&e, db);
    let mut model = fill(&e, a, 5, 1000);
    e.collect().unwrap(); // journal exists and is listed
    let more = fill(&e, a, 12, 1000); // overwrites d000..d004, fills past the journal size
    model.extend(more);
    faults.arm(FailPoint::MetaWrite, 1);
    assert!(e.collect().is_err());
    assert_eq!(contents(&e, a), model);
    // The state this test is about: renamed on disk, still the journal in the MANIFEST.
    let cdir = col_dir(dir.path(), db, a);
    let renamed = files_with(&cdir, &|n| n.starts_with("datafile-") && n.ends_with(".db"));
    assert_eq!(renamed.len(), 1);
    let fid = renamed[0]
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .trim_start_matches("datafile-")
        .to_string();
    let manifest = std::fs::read_to_string(cdir.join("MANIFEST")).unwrap();
    assert!(
        manifest.contains(&format!("\"journal\":{fid}")),
        "{manifest}"
    );
    let crashed = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), crashed.path());
    {
        let e2 = open(crashed.path());
        assert!(col_status(&e2, a).is_ok());
        assert_eq!(contents(&e2, a), model);
        e2.compact(a).unwrap();
        assert_eq!(contents(&e2, a), model);
    }
    faults.disarm_all();
    e.collect().unwrap();
    remove(&e, a, "d003");
    model.remove("d003");
    e.compact(a).unwrap();
    let crashed = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), crashed.path());
    drop(e);
    let e3 = open(crashed.path());
    assert_eq!(contents(&e3, a), model);
    let f = e3.figures(a).unwrap();
    assert_eq!(f.alive_count, model.len() as u64);
}

/// Many restarts in a row with data in the WAL, journals and datafiles: contents stay
/// exactly the model, and counts match scans every time.
#[test]
fn repeated_restarts_with_uncollected_wal_keep_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = std::collections::BTreeMap::new();
    let a = {
        let e = open(dir.path());
        let db = new_db(&e);
        let a = new_col(&e, db);
        e.shutdown().unwrap();
        a
    };
    for round in 0..6 {
        let e = open(dir.path());
        assert_eq!(contents(&e, a), model, "round {round}");
        for i in 0..8 {
            let key = format!("k{}", (round * 3 + i) % 10);
            if (round + i) % 3 == 0 {
                remove(&e, a, &key);
                model.remove(&key);
            } else {
                let body = format!("{round}-{i}-{}", "q".repeat(500));
                put(&e, a, &key, &body);
                model.insert(key, body);
            }
        }
        match round % 3 {
            0 => {}
            1 => e.collect().unwrap(),
            _ => {
                e.compact(a).unwrap();
            }
        }
        e.shutdown().unwrap();
    }
    let e = open(dir.path());
    assert_eq!(contents(&e, a), model);
}

/// Whatever the engine remembers about collected WAL data (e.g. a collected tick in the
/// MANIFEST) must stay consistent with the ticks handed out after a restart: when
/// compaction removed every marker with the newest ticks, new writes after a restart must
/// still be recovered at the next one (never mistaken for already collected ones).
#[test]
fn writes_after_a_restart_that_follows_full_compaction_survive_the_next_restart() {
    let dir = tempfile::tempdir().unwrap();
    let a;
    {
        let e = open(dir.path());
        let db = new_db(&e);
        a = new_col(&e, db);
        for i in 0..5 {
            put(&e, a, &format!("old{i}"), "x");
        }
        for i in 0..5 {
            remove(&e, a, &format!("old{i}"));
        }
        e.compact(a).unwrap();
        e.compact(a).unwrap();
        e.shutdown().unwrap();
    }
    for round in 0..3 {
        let e = open(dir.path());
        for r in 0..round {
            assert_eq!(
                get(&e, a, &format!("new{r}")).as_deref(),
                Some("acknowledged"),
                "round {round}: write of round {r} lost"
            );
        }
        put(&e, a, &format!("new{round}"), "acknowledged");
        if round == 1 {
            e.collect().unwrap();
        }
        e.shutdown().unwrap();
    }
    let e = open(dir.path());
    assert_eq!(contents(&e, a).len(), 3);
}
