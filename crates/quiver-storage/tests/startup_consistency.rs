//! Startup proves that the WAL and the datafiles still hold what was acknowledged: a WAL
//! cut or zeroed behind writes the durable-tick record calls durable refuses to start, a
//! datafile damaged under an intact hint file fails its collection, and salvage
//! (`ignore_datafile_errors`) opens with what is intact and writes a report.

mod harness;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use harness::*;
use quiver_errors::ErrorCode;
use quiver_storage::format;
use quiver_storage::{Engine, EngineOptions, WriteBatch};

/// A scratch directory on tmpfs when there is one (hundreds of fdatasyncs and reopens).
fn scratch() -> tempfile::TempDir {
    match Path::new("/dev/shm").is_dir() {
        true => tempfile::tempdir_in("/dev/shm").unwrap(),
        false => tempfile::tempdir().unwrap(),
    }
}

fn wal_opts() -> EngineOptions {
    EngineOptions {
        wal_logfile_size: 256 * 1024,
        ..opts()
    }
}

fn salvage_wal_opts() -> EngineOptions {
    EngineOptions {
        ignore_datafile_errors: true,
        ..wal_opts()
    }
}

/// `n` waitForSync inserts, each acknowledged after its fdatasync; then the directory as a
/// kill -9 leaves it (copied while the engine runs). Returns the collection and the model.
fn acknowledged_sync_inserts(dir: &Path, n: usize) -> (u64, BTreeMap<String, String>) {
    let live = scratch();
    let e = Engine::open(live.path(), wal_opts()).unwrap();
    let db = new_db(&e);
    let a = new_col(&e, db);
    let mut model = BTreeMap::new();
    for i in 0..n {
        let key = format!("k{i:05}");
        let mut b = WriteBatch::new();
        b.put(a, &key, e.hlc().next(), Bytes::from(format!("v{i}")));
        b.set_sync(true);
        e.commit(b).unwrap().wait().unwrap();
        model.insert(key, format!("v{i}"));
    }
    copy_dir(live.path(), dir);
    drop(e);
    (a, model)
}

/// The WAL segment holding data, its image and the end of its intact prefix.
fn data_segment(dir: &Path) -> (PathBuf, Vec<u8>, usize) {
    for seg in files_with(&dir.join("wal"), &|n| n.ends_with(".wal")) {
        let image = fs::read(&seg).unwrap();
        let scan = format::scan(&image);
        if !scan.markers.is_empty() {
            return (seg, image, scan.valid_end);
        }
    }
    panic!("no WAL segment with data");
}

fn reports(dir: &Path) -> Vec<String> {
    files_with(dir, &|n| n.starts_with("salvage-report-"))
        .iter()
        .map(|p| fs::read_to_string(p).unwrap())
        .collect()
}

/// Refused start naming the segment; salvage keeps exactly the intact prefix and writes a
/// report; the next normal start opens with that prefix (nothing reported twice).
fn refuses_then_salvages(dir: &Path, seg: &Path, a: u64, model: &BTreeMap<String, String>) {
    let image = fs::read(seg).unwrap();
    let kept = format::scan(&image)
        .markers
        .iter()
        .filter(|m| m.flags & format::FLAG_COMMIT != 0)
        .count();
    assert!(kept < model.len() / 2 + 1, "the damage removed nothing");
    let Err(err) = Engine::open(dir, wal_opts()) else {
        panic!("acknowledged durable writes are gone from the WAL, yet startup succeeded");
    };
    assert_eq!(err.code, ErrorCode::CorruptedDatafile);
    let name = seg.file_name().unwrap().to_string_lossy().to_string();
    let text = err.to_string();
    assert!(
        text.contains(&name) && text.contains("acknowledged as durable"),
        "{text}"
    );
    assert!(text.contains("--database.ignore-datafile-errors"), "{text}");
    assert!(reports(dir).is_empty(), "a refused start writes no report");

    let expected: BTreeMap<String, String> = model
        .iter()
        .take(kept)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    {
        let e = Engine::open(dir, salvage_wal_opts()).expect("salvage opens");
        assert_eq!(contents(&e, a), expected);
        e.shutdown().unwrap();
    }
    let reports = reports(dir);
    assert_eq!(reports.len(), 1);
    assert!(reports[0].contains(&name), "{}", reports[0]);
    let e = Engine::open(dir, wal_opts()).expect("the salvaged state opens normally");
    assert_eq!(contents(&e, a), expected);
    e.shutdown().unwrap();
}

/// The case: kill -9 right after waitForSync inserts, then the last segment cut to
/// half its written length.
#[test]
fn a_wal_cut_behind_acknowledged_sync_writes_refuses_to_start() {
    let dir = scratch();
    let (a, model) = acknowledged_sync_inserts(dir.path(), 600);
    let (seg, _, written) = data_segment(dir.path());
    let f = fs::OpenOptions::new().write(true).open(&seg).unwrap();
    f.set_len((written / 2) as u64).unwrap();
    drop(f);
    refuses_then_salvages(dir.path(), &seg, a, &model);
}

#[test]
fn a_wal_zeroed_from_the_middle_to_its_end_refuses_to_start() {
    let dir = scratch();
    let (a, model) = acknowledged_sync_inserts(dir.path(), 600);
    let (seg, mut image, written) = data_segment(dir.path());
    image[written / 2..].fill(0);
    fs::write(&seg, &image).unwrap();
    refuses_then_salvages(dir.path(), &seg, a, &model);
}

/// Control: the same kill -9 without damage opens with every acknowledged write, and a WAL
/// whose record is missing or damaged is not judged against it.
#[test]
fn an_undamaged_wal_opens_and_a_damaged_record_is_ignored() {
    let dir = scratch();
    let (a, model) = acknowledged_sync_inserts(dir.path(), 200);
    let record = dir.path().join("wal").join("durable-tick");
    assert_eq!(fs::read(&record).unwrap().len(), 32);
    {
        let e = Engine::open(dir.path(), wal_opts()).unwrap();
        assert_eq!(contents(&e, a), model);
        e.shutdown().unwrap();
    }
    let mut bytes = fs::read(&record).unwrap();
    bytes[9] ^= 1;
    fs::write(&record, &bytes).unwrap();
    let e = Engine::open(dir.path(), wal_opts()).unwrap();
    assert_eq!(contents(&e, a), model);
    e.shutdown().unwrap();
}

/// Sealed datafiles with hint files, then shut down.
fn sealed_datafiles(dir: &Path) -> (u64, u64, BTreeMap<String, String>) {
    let e = open(dir);
    let db = new_db(&e);
    let a = new_col(&e, db);
    let model = fill(&e, a, 24, 900);
    e.compact(a).unwrap();
    e.shutdown().unwrap();
    (db, a, model)
}

fn first_datafile_with_hint(dir: &Path, db: u64, a: u64) -> PathBuf {
    let cdir = col_dir(dir, db, a);
    files_with(&cdir, &|n| n.starts_with("datafile-") && n.ends_with(".db"))
        .into_iter()
        .find(|p| p.with_extension("hint").exists())
        .expect("a sealed datafile with a hint file")
}

/// The case: one flipped bit inside a datafile whose hint file is intact.
#[test]
fn a_bit_flip_under_an_intact_hint_fails_the_collection_and_salvage_reports_it() {
    let dir = scratch();
    let (db, a, model) = sealed_datafiles(dir.path());
    let victim = first_datafile_with_hint(dir.path(), db, a);
    let hint = fs::read(victim.with_extension("hint")).unwrap();
    let mut image = fs::read(&victim).unwrap();
    let m = format::scan(&image).markers[1];
    image[m.offset + m.len - 3] ^= 0x04;
    fs::write(&victim, &image).unwrap();
    {
        let e = open(dir.path());
        let err = col_status(&e, a).expect_err("a flipped bit opened silently");
        assert_eq!(err.code, ErrorCode::CorruptedDatafile);
        let name = victim.file_name().unwrap().to_string_lossy().to_string();
        assert!(err.to_string().contains(&name), "{err}");
        e.shutdown().unwrap();
    }
    assert_eq!(
        fs::read(victim.with_extension("hint")).unwrap(),
        hint,
        "the hint file is left as it was"
    );
    let e = Engine::open(dir.path(), salvage_opts()).unwrap();
    let got = contents(&e, a);
    assert_eq!(got.len(), model.len() - 1, "all but the damaged document");
    for (k, v) in &got {
        assert_eq!(model.get(k), Some(v), "salvage returned wrong data for {k}");
    }
    e.shutdown().unwrap();
    let reports = reports(dir.path());
    assert_eq!(reports.len(), 1);
    assert!(reports[0].contains(&victim.file_name().unwrap().to_string_lossy().to_string()));
}

/// Byte ranges of a sealed datafile that hold marker bytes (header, markers, footer).
fn marker_bytes(image: &[u8]) -> Vec<(usize, usize)> {
    let scan = format::scan(image);
    let mut out = vec![(0, format::FILE_HEADER_LEN)];
    out.extend(scan.markers.iter().map(|m| (m.offset, m.offset + m.len)));
    let last = scan
        .markers
        .last()
        .map(|m| m.offset + format::padded(m.len));
    let footer = last.unwrap_or(format::padded(format::FILE_HEADER_LEN));
    out.push((footer, footer + format::FOOTER_LEN));
    out
}

/// Every 512-byte sector of a datafile (hint intact) torn, i.e. overwritten with garbage,
/// and the file cut at every 64-byte boundary: whenever marker bytes changed or were lost
/// the collection fails with error 1000, otherwise it opens with exactly its documents.
#[test]
fn a_torn_sector_or_cut_anywhere_in_a_datafile_is_detected_at_startup() {
    let base = scratch();
    let (db, a, model) = sealed_datafiles(base.path());
    let victim = first_datafile_with_hint(base.path(), db, a);
    let rel = victim.strip_prefix(base.path()).unwrap().to_path_buf();
    let image = fs::read(&victim).unwrap();
    let live = marker_bytes(&image);
    let footer_end = live.last().unwrap().1;
    let touches = |from: usize, to: usize| live.iter().any(|&(s, e)| s < to && from < e);
    let work = scratch();
    let mut detected = 0;
    let mut cases = Vec::new();
    for sector in (0..image.len()).step_by(512) {
        cases.push((sector, false));
    }
    for cut in (0..image.len().min(footer_end + 512)).step_by(64) {
        cases.push((cut, true));
    }
    for (i, &(at, cut)) in cases.iter().enumerate() {
        let copy = work.path().join(format!("c{i}"));
        copy_dir(base.path(), &copy);
        let target = copy.join(&rel);
        let must_detect = if cut {
            let f = fs::OpenOptions::new().write(true).open(&target).unwrap();
            f.set_len(at as u64).unwrap();
            at < footer_end
        } else {
            let mut torn = image.clone();
            let end = (at + 512).min(torn.len());
            torn[at..end].fill(0xA5);
            fs::write(&target, &torn).unwrap();
            touches(at, end)
        };
        let e = open(&copy);
        match col_status(&e, a) {
            Err(err) => {
                assert_eq!(err.code, ErrorCode::CorruptedDatafile, "{err}");
                detected += 1;
            }
            Ok(()) => {
                assert!(
                    !must_detect,
                    "{} at {at} opened silently",
                    if cut { "cut" } else { "torn sector" }
                );
                assert_eq!(contents(&e, a), model, "damage at {at} returned wrong data");
            }
        }
        e.shutdown().unwrap();
        drop(e);
        fs::remove_dir_all(&copy).unwrap();
    }
    assert!(detected > cases.len() / 2, "{detected} of {}", cases.len());
}

/// Damage that appears while the engine runs (after startup proved the file): the read of
/// the damaged document fails with error 1000 every time, never returns other bytes, and
/// each failure is counted; other documents read normally.
#[test]
fn a_checksum_failure_at_run_time_fails_the_read_and_is_counted() {
    let dir = scratch();
    let (db, a, model) = sealed_datafiles(dir.path());
    let victim = first_datafile_with_hint(dir.path(), db, a);
    let e = open(dir.path());
    assert_eq!(contents(&e, a), model);
    assert_eq!(e.stats().checksum_failures, 0);
    let image = fs::read(&victim).unwrap();
    let m = format::scan(&image).markers[1];
    let key = {
        let marker = format::decode(&image[m.offset..]).unwrap();
        format::data_body(&marker).unwrap().key.to_string()
    };
    // Bit rot under the running engine: one byte in place (the file keeps its size, so
    // its read-only map stays valid).
    let at = m.offset + m.len - 3;
    let f = fs::OpenOptions::new().write(true).open(&victim).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &[image[at] ^ 0x10], at as u64).unwrap();
    drop(f);
    for round in 1..=2u64 {
        let err = e
            .snapshot()
            .get(a, &key)
            .expect_err("damaged bytes were returned");
        assert_eq!(err.code, ErrorCode::CorruptedDatafile);
        assert!(
            err.message.contains(&format!("offset {}", m.offset)),
            "{err}"
        );
        assert_eq!(e.stats().checksum_failures, round);
    }
    let other = model.keys().find(|k| **k != key).unwrap();
    assert_eq!(get(&e, a, other).as_ref(), model.get(other));
    e.shutdown().unwrap();
}

/// The case: a MANIFEST that omits a datafile. The file used to be deleted as a
/// leftover with its documents; now the collection fails naming it, and salvage opens
/// without it, keeps it aside as `.orphan` and reports it.
#[test]
fn a_datafile_the_manifest_omits_fails_the_collection_and_salvage_sets_it_aside() {
    let dir = scratch();
    let (db, a, model) = {
        // Collected, not compacted: one sealed datafile per few documents.
        let e = open(dir.path());
        let db = new_db(&e);
        let a = new_col(&e, db);
        let model = fill(&e, a, 24, 900);
        e.collect().unwrap();
        e.shutdown().unwrap();
        (db, a, model)
    };
    let cdir = col_dir(dir.path(), db, a);
    let manifest_path = cdir.join("MANIFEST");
    let mut manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(&manifest_path).unwrap()).unwrap();
    let listed = manifest["datafiles"].as_array().unwrap().clone();
    assert!(listed.len() >= 2, "{manifest}");
    let omitted = listed[0].as_u64().unwrap();
    manifest["datafiles"] = serde_json::Value::Array(listed[1..].to_vec());
    fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let victim = cdir.join(format!("datafile-{omitted}.db"));
    let image = fs::read(&victim).unwrap();
    let only_there: Vec<String> = format::scan(&image)
        .markers
        .iter()
        .map(|m| {
            let marker = format::decode(&image[m.offset..]).unwrap();
            format::data_body(&marker).unwrap().key.to_string()
        })
        .collect();
    assert!(!only_there.is_empty());
    let name = victim.file_name().unwrap().to_string_lossy().to_string();
    {
        let e = open(dir.path());
        let err = col_status(&e, a).expect_err("a datafile lost from the MANIFEST went unnoticed");
        assert_eq!(err.code, ErrorCode::CorruptedDatafile);
        assert!(err.to_string().contains(&name), "{err}");
        assert!(
            err.to_string()
                .contains(&format!("{} document(s)", only_there.len())),
            "{err}"
        );
        e.shutdown().unwrap();
    }
    assert!(victim.exists(), "the refused start deleted the only copy");
    let mut expected = model.clone();
    for k in &only_there {
        expected.remove(k);
    }
    {
        let e = Engine::open(dir.path(), salvage_opts()).unwrap();
        assert_eq!(contents(&e, a), expected);
        e.shutdown().unwrap();
    }
    assert!(cdir.join(format!("{name}.orphan")).exists());
    let reports = reports(dir.path());
    assert_eq!(reports.len(), 1);
    assert!(reports[0].contains(&name), "{}", reports[0]);
    let e = open(dir.path());
    assert_eq!(contents(&e, a), expected);
    e.shutdown().unwrap();
}

/// A kill -9 after a compaction's MANIFEST swap but before its inputs are unlinked: the
/// compaction dropped removed documents together with their removals, so an input left on
/// disk (here: the one holding the documents, while the one holding the removals is gone)
/// looks like the only copy of documents found nowhere else. The MANIFEST lists such inputs
/// as retired, and startup deletes them instead of refusing the collection.
#[test]
fn compaction_inputs_left_behind_by_a_kill_after_the_swap_are_deleted_not_judged() {
    let dir = scratch();
    let e = open(dir.path());
    let db = new_db(&e);
    let a = new_col(&e, db);
    // Few documents: their datafile and the one the removals are sealed into form one group.
    let model = fill(&e, a, 4, 900);
    // Sealed into a datafile.
    e.compact(a).unwrap();
    let cdir = col_dir(dir.path(), db, a);
    let is_datafile = |n: &str| n.starts_with("datafile-") && n.ends_with(".db");
    let inputs: Vec<(PathBuf, Vec<u8>)> = files_with(&cdir, &is_datafile)
        .into_iter()
        .map(|p| {
            let image = fs::read(&p).unwrap();
            (p, image)
        })
        .collect();
    assert!(!inputs.is_empty());
    for key in model.keys() {
        remove(&e, a, key);
    }
    e.compact(a).unwrap();
    let manifest: serde_json::Value =
        serde_json::from_slice(&fs::read(cdir.join("MANIFEST")).unwrap()).unwrap();
    let retired: Vec<u64> = manifest["retired"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(serde_json::Value::as_u64)
        .collect();
    e.shutdown().unwrap();
    // The inputs of the last swap come back, as a kill before their unlink leaves them (the
    // inputs of earlier swaps were unlinked before it, so no crash could leave them).
    let left: Vec<&(PathBuf, Vec<u8>)> = inputs
        .iter()
        .filter(|(p, _)| {
            retired
                .iter()
                .any(|fid| p.ends_with(format!("datafile-{fid}.db")))
        })
        .collect();
    assert!(!left.is_empty(), "the swap names its inputs: {manifest}");
    for (path, image) in &left {
        assert!(!path.exists(), "compaction unlinks its inputs");
        fs::write(path, image).unwrap();
    }
    let e = open(dir.path());
    col_status(&e, a).expect("a retired compaction input was judged as a lost datafile");
    assert!(contents(&e, a).is_empty());
    e.shutdown().unwrap();
    for (path, _) in &left {
        assert!(
            !path.exists(),
            "startup deletes retired inputs: {}",
            path.display()
        );
    }
}
