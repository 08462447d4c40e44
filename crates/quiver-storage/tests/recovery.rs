//! Crash recovery: torn tails at every byte, corruption in the middle, salvage, fault
//! injection at every named I/O point.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use common::*;
use quiver_errors::ErrorCode;
use quiver_storage::format::{self, ScanEnd};
use quiver_storage::{CollectionOptions, Engine, EngineOptions, FailPoint, WriteBatch};

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != "LOCK" {
            fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn files_named(dir: &Path, pred: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            out.extend(files_named(&entry.path(), pred));
        } else if pred(&entry.file_name().to_string_lossy()) {
            out.push(entry.path());
        }
    }
    out.sort();
    out
}

type Model = BTreeMap<String, String>;

/// Commits `n` batches (1-3 operations each, puts and removes) and returns the model after
/// each batch (index 0 = empty).
fn write_batches(engine: &Engine, cid: u64, n: usize) -> Vec<Model> {
    let mut states = vec![Model::new()];
    let mut model = Model::new();
    for i in 0..n {
        let mut b = WriteBatch::new();
        let ops = 1 + i % 3;
        for j in 0..ops {
            let key = format!("k{}", (i * 7 + j) % 11);
            if (i + j) % 5 == 4 {
                b.remove(cid, &key, engine.hlc().next());
                model.remove(&key);
            } else {
                let body = format!("v{i}-{j}");
                b.put(cid, &key, engine.hlc().next(), Bytes::from(body.clone()));
                model.insert(key, body);
            }
        }
        engine.commit(b).unwrap().wait().unwrap();
        states.push(model.clone());
    }
    states
}

/// End offsets of the committed batches in a WAL segment or journal image.
fn batch_ends(image: &[u8]) -> Vec<usize> {
    let scan = format::scan(image);
    scan.markers
        .iter()
        .filter(|m| m.flags & format::FLAG_COMMIT != 0)
        .map(|m| m.offset + m.len)
        .collect()
}

fn check_every_offset(base: &Path, file: &Path, states: &[Model], cid: u64, last_batches: usize) {
    let image = fs::read(file).unwrap();
    let ends = batch_ends(&image);
    assert_eq!(ends.len(), states.len() - 1, "one commit marker per batch");
    let from = ends[ends.len() - last_batches - 1];
    let to = *ends.last().unwrap() + 8;
    let rel = file.strip_prefix(base).unwrap();
    // Hundreds of recoveries: on tmpfs when there is one (fsync is free there), the I/O
    // pattern is the same.
    let work = match Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").unwrap(),
        false => tempfile::tempdir().unwrap(),
    };
    for cut in from..=to {
        for garble in [false, true] {
            if garble && cut % 3 != 0 {
                continue;
            }
            let copy = work.path().join(format!("c{cut}-{garble}"));
            copy_dir(base, &copy);
            let target = copy.join(rel);
            lose_durable_record(&copy);
            if garble {
                // Garbage instead of zeros after the cut: still a torn tail.
                let mut img = image.clone();
                for b in img.iter_mut().take(to.min(image.len())).skip(cut) {
                    *b = 0xA5;
                }
                fs::write(&target, &img).unwrap();
            } else {
                let f = fs::OpenOptions::new().write(true).open(&target).unwrap();
                f.set_len(cut as u64).unwrap();
            }
            let engine = open(&copy);
            let got = contents(&engine, cid);
            let complete = ends.iter().filter(|&&e| e <= cut).count();
            assert_eq!(
                got, states[complete],
                "cut at {cut} (garble {garble}): expected the first {complete} batches"
            );
            if cut % 8 != 0 {
                engine.shutdown().unwrap();
                drop(engine);
                fs::remove_dir_all(&copy).unwrap();
                continue;
            }
            // The engine keeps working after recovering a torn tail.
            put(&engine, cid, "after", "crash");
            engine.shutdown().unwrap();
            drop(engine);
            let engine = open(&copy);
            assert_eq!(contents(&engine, cid)["after"], "crash");
            engine.shutdown().unwrap();
            drop(engine);
            fs::remove_dir_all(&copy).unwrap();
        }
    }
}

#[test]
fn wal_recovery_at_every_byte_keeps_exactly_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(
        dir.path(),
        EngineOptions {
            wal_logfile_size: 64 * 1024,
            ..small_options()
        },
    )
    .unwrap();
    let (_, cid) = setup(&engine);
    let states = write_batches(&engine, cid, 12);
    engine.shutdown().unwrap();
    drop(engine);
    let wal = files_named(dir.path(), &|n| n.ends_with(".wal"));
    assert_eq!(wal.len(), 1);
    check_every_offset(dir.path(), &wal[0], &states, cid, 2);
}

#[test]
fn journal_recovery_at_every_byte_keeps_exactly_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(
        dir.path(),
        EngineOptions {
            journal_size_default: 64 * 1024,
            min_journal_size: quiver_storage::JOURNAL_SIZE_FLOOR,
            ..small_options()
        },
    )
    .unwrap();
    let (_, cid) = setup(&engine);
    // Single-operation batches: the journal holds markers, batches were atomic in the WAL.
    let mut states = vec![Model::new()];
    let mut model = Model::new();
    for i in 0..10 {
        let key = format!("k{}", i % 4);
        if i % 4 == 3 {
            remove(&engine, cid, "k0");
            model.remove("k0");
        } else {
            put(&engine, cid, &key, &format!("v{i}"));
            model.insert(key, format!("v{i}"));
        }
        states.push(model.clone());
    }
    engine.collect().unwrap();
    engine.shutdown().unwrap();
    drop(engine);
    assert!(files_named(dir.path(), &|n| n.ends_with(".wal")).is_empty());
    let journal = files_named(dir.path(), &|n| n.starts_with("journal-"));
    assert_eq!(journal.len(), 1);
    check_every_offset(dir.path(), &journal[0], &states, cid, 2);
}

/// `write_batches`, then a truncate, then two more batches: the last three commits (the
/// truncate marker among them) are cut at every byte.
fn write_batches_around_a_truncate(engine: &Engine, cid: u64) -> Vec<Model> {
    let mut states = write_batches(engine, cid, 8);
    engine.truncate(cid, false).unwrap().wait().unwrap();
    states.push(Model::new());
    let mut model = Model::new();
    for (key, body) in [("k1", "after-1"), ("k9", "after-2")] {
        put(engine, cid, key, body);
        model.insert(key.to_string(), body.to_string());
        states.push(model.clone());
    }
    states
}

#[test]
fn wal_recovery_at_every_byte_around_a_truncate_keeps_exactly_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(
        dir.path(),
        EngineOptions {
            wal_logfile_size: 64 * 1024,
            ..small_options()
        },
    )
    .unwrap();
    let (_, cid) = setup(&engine);
    let states = write_batches_around_a_truncate(&engine, cid);
    engine.shutdown().unwrap();
    drop(engine);
    let wal = files_named(dir.path(), &|n| n.ends_with(".wal"));
    assert_eq!(wal.len(), 1);
    check_every_offset(dir.path(), &wal[0], &states, cid, 3);
}

#[test]
fn journal_recovery_at_every_byte_around_a_truncate_keeps_exactly_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(
        dir.path(),
        EngineOptions {
            journal_size_default: 64 * 1024,
            min_journal_size: quiver_storage::JOURNAL_SIZE_FLOOR,
            ..small_options()
        },
    )
    .unwrap();
    let (_, cid) = setup(&engine);
    // Single-operation batches (the journal holds markers; batches were atomic in the WAL).
    let mut states = vec![Model::new()];
    let mut model = Model::new();
    for i in 0..6 {
        let key = format!("k{}", i % 4);
        put(&engine, cid, &key, &format!("v{i}"));
        model.insert(key, format!("v{i}"));
        states.push(model.clone());
    }
    engine.truncate(cid, false).unwrap().wait().unwrap();
    states.push(Model::new());
    put(&engine, cid, "k2", "after");
    states.push(Model::from([("k2".to_string(), "after".to_string())]));
    engine.collect().unwrap();
    engine.shutdown().unwrap();
    drop(engine);
    assert!(files_named(dir.path(), &|n| n.ends_with(".wal")).is_empty());
    let journal = files_named(dir.path(), &|n| n.starts_with("journal-"));
    assert_eq!(journal.len(), 1);
    check_every_offset(dir.path(), &journal[0], &states, cid, 2);
}

fn fill_sealed(engine: &Engine, cid: u64, n: usize) -> Model {
    let mut model = Model::new();
    for i in 0..n {
        let body = format!("{{\"i\":{i},\"pad\":\"{}\"}}", "x".repeat(50));
        put(engine, cid, &format!("k{i}"), &body);
        model.insert(format!("k{i}"), body);
    }
    engine.collect().unwrap();
    model
}

#[test]
fn corruption_in_a_datafile_is_reported_for_that_collection_only_and_salvageable() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (db, bad) = setup(&engine);
    let good = engine
        .create_collection(db, CollectionOptions::default(), serde_json::json!({}))
        .unwrap();
    let bad_model = fill_sealed(&engine, bad, 400);
    let good_model = fill_sealed(&engine, good, 50);
    let bad_dir = dir.path().join(format!("db-{db}/col-{bad}"));
    engine.shutdown().unwrap();
    drop(engine);

    let datafiles = files_named(&bad_dir, &|n| {
        n.starts_with("datafile-") && n.ends_with(".db")
    });
    assert!(datafiles.len() > 2);
    let victim = &datafiles[1];
    let mut img = fs::read(victim).unwrap();
    let scan = format::scan(&img);
    assert_eq!(scan.end, ScanEnd::Sealed);
    let hit = scan.markers[1];
    img[hit.offset + 30] ^= 0xff;
    fs::write(victim, &img).unwrap();
    let hit_key = {
        let clean = format::scan(&fs::read(&datafiles[0]).unwrap())
            .markers
            .len();
        format!("k{}", clean + 1)
    };

    // With the hint file, startup stays fast and the damage shows on the read of that
    // document and in an explicit verification: reported, never silently skipped.
    let engine = open(dir.path());
    let err = engine.snapshot().get(bad, &hit_key).unwrap_err();
    assert_eq!(err.code, ErrorCode::CorruptedDatafile, "{err:?}");
    let err = engine.verify(bad).unwrap_err();
    assert_eq!(err.code, ErrorCode::CorruptedDatafile, "{err:?}");
    assert!(
        err.message.contains(&format!("offset {}", hit.offset)),
        "{}",
        err.message
    );
    let report = engine.verify(good).unwrap();
    assert!(report.files > 0 && report.markers >= 50, "{report:?}");
    assert_eq!(contents(&engine, good), good_model);
    engine.shutdown().unwrap();
    drop(engine);

    // Without hints the datafile is scanned: the collection reports the corruption, the
    // other collection opens.
    for hint in files_named(&bad_dir, &|n| n.ends_with(".hint")) {
        fs::remove_file(hint).unwrap();
    }
    let engine = open(dir.path());
    let cat = engine.catalog();
    let entry = cat[0].collections.iter().find(|c| c.id == bad).unwrap();
    let err = entry.status.clone().unwrap_err();
    assert_eq!(err.code, ErrorCode::CorruptedDatafile);
    assert!(
        err.message.contains("ignore-datafile-errors"),
        "{}",
        err.message
    );
    assert_eq!(
        engine.snapshot().count(bad).unwrap_err().code,
        ErrorCode::CorruptedDatafile
    );
    let mut b = WriteBatch::new();
    b.put(bad, "x", engine.hlc().next(), Bytes::from_static(b"1"));
    assert!(engine.commit(b).is_err());
    assert_eq!(contents(&engine, good), good_model);
    engine.shutdown().unwrap();
    drop(engine);
    // The corrupt file is left untouched for the operator.
    assert_eq!(fs::read(victim).unwrap(), img);

    // Salvage mode keeps everything intact.
    let engine = Engine::open(
        dir.path(),
        EngineOptions {
            ignore_datafile_errors: true,
            ..small_options()
        },
    )
    .unwrap();
    let got = contents(&engine, bad);
    let mut expected = bad_model.clone();
    expected.remove(&hit_key);
    assert_eq!(got, expected);
    engine.shutdown().unwrap();
}

#[test]
fn corruption_in_the_middle_of_the_wal_refuses_start_unless_salvaging() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(
        dir.path(),
        EngineOptions {
            wal_logfile_size: 64 * 1024,
            ..small_options()
        },
    )
    .unwrap();
    let (_, cid) = setup(&engine);
    // waitForSync: every later batch records that the earlier ones were durable, so damage
    // to them is damage to synced data, not a power-loss hole.
    let synced = CollectionOptions {
        wait_for_sync: true,
        ..CollectionOptions::default()
    };
    engine
        .update_collection(cid, synced, serde_json::json!({}))
        .unwrap();
    let states = write_batches(&engine, cid, 10);
    engine.shutdown().unwrap();
    drop(engine);
    let wal = files_named(dir.path(), &|n| n.ends_with(".wal")).remove(0);
    let mut img = fs::read(&wal).unwrap();
    let ends = batch_ends(&img);
    img[ends[3] + 2] ^= 0x40; // inside batch 5's first marker
    fs::write(&wal, &img).unwrap();
    let err = Engine::open(dir.path(), small_options()).unwrap_err();
    assert_eq!(err.code, ErrorCode::CorruptedDatafile);
    let engine = Engine::open(
        dir.path(),
        EngineOptions {
            ignore_datafile_errors: true,
            ..small_options()
        },
    )
    .unwrap();
    // Salvage keeps every intact batch: all but the damaged batch 5.
    let mut expected = Model::new();
    for i in (0..10).filter(|&i| i != 4) {
        for j in 0..1 + i % 3 {
            let key = format!("k{}", (i * 7 + j) % 11);
            if (i + j) % 5 == 4 {
                expected.remove(&key);
            } else {
                expected.insert(key, format!("v{i}-{j}"));
            }
        }
    }
    assert_ne!(expected, states[10]);
    assert_eq!(contents(&engine, cid), expected);
    engine.shutdown().unwrap();
}

#[test]
fn a_hole_in_the_unsynced_wal_tail_recovers_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(
        dir.path(),
        EngineOptions {
            wal_logfile_size: 64 * 1024,
            // No background fdatasync during the writes: the whole tail is unsynced.
            sync_interval: std::time::Duration::from_secs(3600),
            ..small_options()
        },
    )
    .unwrap();
    let (_, cid) = setup(&engine);
    let states = write_batches(&engine, cid, 10);
    engine.shutdown().unwrap();
    drop(engine);
    let wal = files_named(dir.path(), &|n| n.ends_with(".wal")).remove(0);
    let mut img = fs::read(&wal).unwrap();
    let ends = batch_ends(&img);
    // Batch 6 never reached the disk, later ones did (write-back in any order).
    img[ends[4]..ends[5]].fill(0);
    fs::write(&wal, &img).unwrap();
    lose_durable_record(dir.path());
    let engine = open(dir.path());
    assert_eq!(contents(&engine, cid), states[5]);
    put(&engine, cid, "after", "hole");
    engine.shutdown().unwrap();
    drop(engine);
    let engine = open(dir.path());
    let mut expected = states[5].clone();
    expected.insert("after".into(), "hole".into());
    assert_eq!(contents(&engine, cid), expected);
    engine.shutdown().unwrap();
}

/// Runs a workload with `point` failing part of the time and checks that nothing
/// acknowledged is lost and that the engine works again once the fault is gone.
fn fault_scenario(point: FailPoint, errno: i32) {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(Faults::default());
    let engine = Engine::open(dir.path(), with_faults(&faults)).unwrap();
    let (_, cid) = setup(&engine);
    let mut acked: Model = Model::new();
    let mut attempted: Model = Model::new();
    let write =
        |engine: &Engine, i: usize, sync: bool, acked: &mut Model, attempted: &mut Model| {
            let key = format!("k{i}");
            let body = format!("{{\"i\":{i},\"pad\":\"{}\"}}", "y".repeat(60));
            let mut b = WriteBatch::new();
            b.put(cid, &key, engine.hlc().next(), Bytes::from(body.clone()));
            b.set_sync(sync);
            attempted.insert(key.clone(), body.clone());
            if let Ok(t) = engine.commit(b) {
                if t.wait().is_ok() {
                    acked.insert(key, body);
                }
            }
        };
    for i in 0..60 {
        write(&engine, i, i % 2 == 0, &mut acked, &mut attempted);
    }
    let _ = engine.collect();
    faults.arm(point, errno);
    let mut failures = 0;
    for i in 60..160 {
        let before = acked.len();
        write(&engine, i, i % 3 == 0, &mut acked, &mut attempted);
        if acked.len() == before {
            failures += 1;
        }
        if i % 20 == 0 {
            let _ = engine.collect();
            let _ = engine.compact(cid);
        }
    }
    let _ = engine.collect();
    let _ = engine.compact(cid);
    let _ = engine.sync();
    assert!(
        !faults.hits.lock().is_empty(),
        "{point:?} was never reached by the workload"
    );
    // Reads keep working while the fault lasts.
    let snap = engine.snapshot();
    for (k, v) in &acked {
        let d = snap.get(cid, k).unwrap().unwrap();
        assert_eq!(&d.body[..], v.as_bytes());
    }
    drop(snap);
    faults.disarm_all();
    let poisoned = point == FailPoint::WalSync;
    if !poisoned {
        // Writing works again once the fault is gone, without a restart.
        for i in 160..200 {
            write(&engine, i, true, &mut acked, &mut attempted);
        }
        assert!(
            acked.contains_key("k199"),
            "{point:?}: writes must work again"
        );
        engine.collect().unwrap();
        engine.compact(cid).unwrap();
    } else {
        assert!(failures > 0);
    }
    let _ = engine.shutdown();
    drop(engine);

    let engine = open(dir.path());
    let got = contents(&engine, cid);
    for (k, v) in &acked {
        assert_eq!(got.get(k), Some(v), "{point:?}: acknowledged {k} lost");
    }
    for (k, v) in &got {
        assert_eq!(attempted.get(k), Some(v), "{point:?}: phantom {k}");
    }
    if poisoned {
        for i in 200..210 {
            write(&engine, i, true, &mut acked, &mut attempted);
        }
        assert!(acked.contains_key("k209"), "writes work after restart");
    }
    engine.shutdown().unwrap();
}

#[test]
fn faults_at_every_named_point_lose_nothing_acknowledged() {
    for point in [
        FailPoint::WalCreate,
        FailPoint::WalWrite,
        FailPoint::JournalCreate,
        FailPoint::JournalWrite,
        FailPoint::JournalSync,
        FailPoint::Seal,
        FailPoint::CompactionWrite,
        FailPoint::CompactionSwap,
        FailPoint::MetaWrite,
    ] {
        eprintln!("fault point {point:?}");
        fault_scenario(point, libc_enospc());
    }
    fault_scenario(FailPoint::WalSync, libc_eio());
}

fn libc_enospc() -> i32 {
    28
}

fn libc_eio() -> i32 {
    5
}

#[test]
fn disk_full_fails_writes_clearly_and_recovers_without_restart() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(Faults::default());
    let engine = Engine::open(dir.path(), with_faults(&faults)).unwrap();
    let (_, cid) = setup(&engine);
    put(&engine, cid, "before", "1");
    faults.arm(FailPoint::WalCreate, libc_enospc());
    faults.arm(FailPoint::WalWrite, libc_enospc());
    let mut b = WriteBatch::new();
    b.put(cid, "during", engine.hlc().next(), Bytes::from_static(b"2"));
    let err = engine.commit(b).unwrap_err();
    assert_eq!(err.code, ErrorCode::FileSystemFull, "{err:?}");
    assert!(err.message.contains("filesystem full"));
    assert_eq!(
        &engine.snapshot().get(cid, "before").unwrap().unwrap().body[..],
        b"1"
    );
    assert_eq!(engine.snapshot().get(cid, "during").unwrap(), None);
    faults.disarm_all();
    put(&engine, cid, "after", "3");
    engine.shutdown().unwrap();
    drop(engine);
    let engine = open(dir.path());
    let got = contents(&engine, cid);
    assert_eq!(got.keys().collect::<Vec<_>>(), ["after", "before"]);
    engine.shutdown().unwrap();
}

#[test]
fn interrupted_compaction_leaves_garbage_that_startup_removes() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(Faults::default());
    let engine = Engine::open(dir.path(), with_faults(&faults)).unwrap();
    let (db, cid) = setup(&engine);
    let mut model = fill_sealed(&engine, cid, 120);
    for i in 0..60 {
        remove(&engine, cid, &format!("k{i}"));
        model.remove(&format!("k{i}"));
    }
    faults.arm(FailPoint::CompactionSwap, libc_enospc());
    assert!(engine.compact(cid).is_err());
    let col_dir = dir.path().join(format!("db-{db}/col-{cid}"));
    engine.shutdown().unwrap();
    drop(engine);
    // Simulate a crash after the result was written but before the swap.
    fs::write(col_dir.join("compaction-999999999.db"), b"partial").unwrap();
    fs::write(col_dir.join("datafile-999999998.db"), b"unlisted").unwrap();
    let engine = open(dir.path());
    assert_eq!(contents(&engine, cid), model);
    assert!(!col_dir.join("compaction-999999999.db").exists());
    assert!(!col_dir.join("datafile-999999998.db").exists());
    engine.compact(cid).unwrap();
    assert_eq!(contents(&engine, cid), model);
    engine.shutdown().unwrap();
}

#[test]
fn missing_metadata_refuses_instead_of_deleting_data() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (db, cid) = setup(&engine);
    let model = fill_sealed(&engine, cid, 100);
    engine.shutdown().unwrap();
    drop(engine);
    let col_dir = dir.path().join(format!("db-{db}/col-{cid}"));
    fs::rename(col_dir.join("MANIFEST"), dir.path().join("MANIFEST.saved")).unwrap();
    let engine = open(dir.path());
    let status = engine.catalog()[0].collections[0].status.clone();
    assert_eq!(status.unwrap_err().code, ErrorCode::CorruptedCollection);
    engine.shutdown().unwrap();
    drop(engine);
    fs::rename(dir.path().join("MANIFEST.saved"), col_dir.join("MANIFEST")).unwrap();
    let engine = open(dir.path());
    assert_eq!(contents(&engine, cid), model);
    engine.shutdown().unwrap();
    drop(engine);

    fs::rename(
        dir.path().join("catalog.json"),
        dir.path().join("catalog.saved"),
    )
    .unwrap();
    let err = Engine::open(dir.path(), small_options()).unwrap_err();
    assert_eq!(err.code, ErrorCode::IllegalParameterFile);
    fs::rename(
        dir.path().join("catalog.saved"),
        dir.path().join("catalog.json"),
    )
    .unwrap();
    let engine = open(dir.path());
    assert_eq!(contents(&engine, cid), model);
    engine.shutdown().unwrap();
}
