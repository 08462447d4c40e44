//! Reopening one collection at startup: reads its MANIFEST, deletes unlisted files, loads
//! hint files in parallel, scans the journal and datafiles without a valid hint (torn tail:
//! sealed after the last intact marker; damage: error 1000 or salvage), and rebuilds the
//! file set.
//!
//! Invariants: the index keeps the highest tick per key whatever order files are read in;
//! a listed file that is missing or damaged fails the collection, never the engine.

use crate::files::{self, DataFile};
use crate::format::{self, MarkerType, ScanEnd};
use crate::index::{Loc, PrimaryIndex, Version};
use parking_lot::Mutex;
use quiver_errors::{Error, ErrorCode};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::collection::Collection;
use super::collection::{ColFiles, FileStats, Journal, StatKind};
use super::journal::{footer_ok, marker_entry};
use super::{datafile_path, hint_path, journal_path, Inner};

pub(super) struct Recovered {
    pub(super) max_tick: u64,
    pub(super) max_rev: u64,
}

pub(super) fn observe(r: &mut Recovered, tick: u64, rev: u64) {
    r.max_tick = r.max_tick.max(tick);
    r.max_rev = r.max_rev.max(rev);
}

fn fid_from_name(name: &str) -> Option<(String, u64)> {
    let (stem, ext) = name.rsplit_once('.')?;
    let (kind, fid) = stem.rsplit_once('-')?;
    Some((format!("{kind}.{ext}"), fid.parse().ok()?))
}

/// Reopens one collection's files (see the module notes). An error fails this collection
/// only; the caller records it as the collection's status. Returns the journals and
/// datafiles the MANIFEST does not list, for [`judge_unlisted`] once the WAL is replayed.
pub(super) fn recover_collection(
    inner: &Inner,
    col: &mut Collection,
    rec: &mut Recovered,
) -> std::result::Result<Vec<PathBuf>, Error> {
    let dir = col.dir.clone();
    let manifest = read_manifest(col)?;
    col.collected_tick
        .store(manifest.collected_tick, Ordering::Release);
    rec.max_tick = rec.max_tick.max(manifest.tick);
    let mut keep: HashSet<u64> = manifest.datafiles.iter().copied().collect();
    keep.extend(manifest.journal);
    let unlisted = remove_unlisted_files(&dir, &keep, &manifest.retired, rec);
    let mut cf = ColFiles::default();
    // Each listed file's slot in the file table, given before its hint file names it in
    // index locations (and kept if the hint is unusable and the file is scanned instead).
    let slot_of: HashMap<u64, u32> = manifest
        .datafiles
        .iter()
        .chain(manifest.journal.iter())
        .map(|&fid| (fid, inner.files.new_slot()))
        .collect();
    let open_any = |fid: u64| -> Option<Arc<DataFile>> {
        let d = datafile_path(&dir, fid);
        let j = journal_path(&dir, fid);
        let path = if d.exists() { d } else { j };
        DataFile::open(fid, slot_of[&fid], &path).ok()
    };
    let verify = inner.options.verify_datafiles_on_open;
    let sealed: Vec<(u64, u32)> = manifest
        .datafiles
        .iter()
        .map(|fid| (*fid, slot_of[fid]))
        .collect();
    let mut preloaded = preload_hints(&col.index, &dir, &sealed, verify);
    let mut all: Vec<(u64, bool)> = manifest.datafiles.iter().map(|f| (*f, false)).collect();
    all.extend(manifest.journal.map(|f| (f, true)));
    for (fid, is_journal) in all {
        let proven = preloaded.get_mut(&fid).and_then(|p| p.file.take());
        let Some(file) = proven.or_else(|| open_any(fid)) else {
            return Err(Error::with_message(
                ErrorCode::CorruptedCollection,
                format!(
                    "collection {}: datafile {fid} listed in MANIFEST is missing",
                    col.id
                ),
            ));
        };
        if let Some(loaded) = preloaded.remove(&fid) {
            observe(rec, loaded.max_tick, loaded.max_rev);
            col.last_tick.fetch_max(loaded.max_tick, Ordering::AcqRel);
            col.truncate_durable
                .fetch_max(loaded.truncate_tick, Ordering::AcqRel);
            inner.files.insert(file.clone());
            cf.stats.insert(fid, loaded.stats);
            cf.datafiles.push(file);
            continue;
        }
        recover_file(inner, col, rec, &mut cf, file, is_journal)?;
    }
    let now_listed: Vec<u64> = cf.datafiles.iter().map(|f| f.fid).collect();
    let now_journal = cf.journal.as_ref().map(|j| j.file.fid);
    if now_listed != manifest.datafiles
        || now_journal != manifest.journal
        || !dir.join("MANIFEST").exists()
    {
        inner.write_manifest(col, &cf)?;
    }
    col.files = Mutex::new(cf);
    Ok(unlisted)
}

/// What a collection's MANIFEST lists.
struct Manifest {
    /// Sealed datafiles, oldest first.
    datafiles: Vec<u64>,
    journal: Option<u64>,
    /// Compaction inputs swapped out whose files may still exist.
    retired: HashSet<u64>,
    collected_tick: u64,
    /// The engine's tick high-water mark when it was written.
    tick: u64,
}

/// Reads the collection's MANIFEST; a missing one is damage (error 1002), never "empty".
fn read_manifest(col: &Collection) -> std::result::Result<Manifest, Error> {
    let path = col.dir.join("MANIFEST");
    let manifest: Value = match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            Error::with_message(
                ErrorCode::CorruptedCollection,
                format!("collection {}: unreadable MANIFEST: {e}", col.id),
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Every collection gets its MANIFEST before the catalog lists it: a missing one
            // (or a missing directory) is damage, never "empty". Files are not touched.
            return Err(Error::with_message(
                ErrorCode::CorruptedCollection,
                format!("collection {}: {} is missing", col.id, path.display()),
            ));
        }
        Err(e) => return Err(files::io_error(e, "reading MANIFEST")),
    };
    Ok(Manifest {
        datafiles: manifest["datafiles"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default(),
        journal: manifest["journal"].as_u64(),
        retired: manifest["retired"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default(),
        collected_tick: manifest["collectedTick"].as_u64().unwrap_or(0),
        tick: manifest["tick"].as_u64().unwrap_or(0),
    })
}

/// Deletes the files of `dir` whose fid the MANIFEST does not list (`keep`) — leftovers of
/// an interrupted compaction (`compaction-*.db`), compaction inputs the MANIFEST calls
/// `retired`, atomic replacements (`*.tmp`), hint files — except other unlisted journals and
/// datafiles, which are returned for [`judge_unlisted`]: an interrupted journal creation or
/// compaction swap leaves ones that hold nothing that is not also elsewhere, a damaged
/// MANIFEST ones that hold the only copy. The fids of the kept files count as seen ticks.
fn remove_unlisted_files(
    dir: &Path,
    keep: &HashSet<u64>,
    retired: &HashSet<u64>,
    rec: &mut Recovered,
) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut unlisted = Vec::new();
    for entry in rd.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name == "MANIFEST" || name.ends_with(".orphan") {
            continue;
        }
        match fid_from_name(&name) {
            Some((_, fid)) if keep.contains(&fid) => {
                rec.max_tick = rec.max_tick.max(fid);
            }
            Some((kind, fid))
                if (kind == "datafile.db" || kind == "journal.db") && !retired.contains(&fid) =>
            {
                unlisted.push(entry.path());
            }
            _ => {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    unlisted.sort();
    unlisted
}

/// Judges the unlisted journals and datafiles of a collection once its listed files and the
/// WAL are in the index: a compaction that dropped a removed document and its removal (the
/// removal's newer marker was still in the WAL) leaves, after a kill -9 between its MANIFEST
/// swap and the deletion of its inputs, an input whose document only the WAL's removal
/// accounts for. A marker is accounted for when the index holds the same or a newer version
/// of its key (removals included), a truncate covers it, or another unlisted file removes the
/// key later; removals count as accounted (see the design note). A file whose documents are
/// all accounted for is a harmless leftover and deleted. Otherwise the MANIFEST lost it: the
/// collection fails with error 1000 naming the files and how many documents only they hold,
/// or, salvaging, each is kept aside as `<name>.orphan` (not used) and reported.
pub(super) fn judge_unlisted(
    inner: &Inner,
    col: &Collection,
    unlisted: &[PathBuf],
) -> std::result::Result<(), Error> {
    // (key, tick, is_document) of every intact data marker, per file.
    let mut found: Vec<Vec<(String, u64, bool)>> = Vec::with_capacity(unlisted.len());
    for path in unlisted {
        let image = std::fs::read(path).unwrap_or_default();
        let scan = format::scan(&image);
        let markers = match scan.end {
            ScanEnd::Corrupt => format::salvage(&image),
            _ => scan.markers,
        };
        let mut entries = Vec::with_capacity(markers.len());
        for m in &markers {
            let Ok(marker) = format::decode(&image[m.offset..]) else {
                continue;
            };
            if let Some((kind, key, tick, _, _, _)) = marker_entry(m, &marker) {
                if kind != MarkerType::Truncate {
                    entries.push((key.to_string(), tick, kind == MarkerType::Document));
                }
            }
        }
        found.push(entries);
    }
    let mut removed_later: HashMap<&str, u64> = HashMap::new();
    for (key, tick, is_doc) in found.iter().flatten() {
        if !is_doc {
            let t = removed_later.entry(key.as_str()).or_default();
            *t = (*t).max(*tick);
        }
    }
    let floor = col.index.last_truncate();
    // Markers above the MANIFEST's collected tick are still in the WAL, which is only
    // released once a MANIFEST records them collected: a kill -9 between the collector's
    // journal write and its MANIFEST update leaves an unlisted journal whose markers the WAL
    // replay brings back.
    let collected = col.collected_tick.load(Ordering::Acquire);
    let mut lost = Vec::new();
    for (path, entries) in unlisted.iter().zip(&found) {
        let only_here = entries
            .iter()
            .filter(|(key, tick, is_doc)| {
                *is_doc
                    && *tick > floor
                    && *tick <= collected
                    && col.index.newest_tick(key).is_none_or(|t| t < *tick)
                    && removed_later.get(key.as_str()).is_none_or(|t| t < tick)
            })
            .count();
        if only_here == 0 {
            let _ = std::fs::remove_file(path);
        } else {
            lost.push((path, only_here));
        }
    }
    if lost.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = lost
        .iter()
        .map(|(p, n)| format!("{} ({n} document(s))", p.display()))
        .collect();
    if !inner.options.ignore_datafile_errors {
        return Err(Error::with_message(
            ErrorCode::CorruptedDatafile,
            format!(
                "collection {}: the MANIFEST does not list {}, which hold documents found in \
                 no listed file; start with --database.ignore-datafile-errors to open without \
                 them (each is kept as <name>.orphan)",
                col.id,
                named.join(", ")
            ),
        ));
    }
    for (path, n) in lost {
        let aside = path.with_extension("db.orphan");
        let kept = std::fs::rename(path, &aside).is_ok();
        inner.note_salvage(format!(
            "collection {}: {} is not listed in the MANIFEST and holds {n} document(s) found \
             in no listed file; opened without it, {}",
            col.id,
            path.display(),
            if kept {
                format!("kept as {}", aside.display())
            } else {
                "left in place (could not be renamed)".to_string()
            }
        ));
    }
    Ok(())
}

/// A listed file without a usable hint, scanned: its markers go into the index, then it
/// becomes the journal again (clean), a journal sealed behind its last intact marker (torn
/// tail), or a datafile (sealed, or salvaged).
fn recover_file(
    inner: &Inner,
    col: &Collection,
    rec: &mut Recovered,
    cf: &mut ColFiles,
    file: Arc<DataFile>,
    is_journal: bool,
) -> std::result::Result<(), Error> {
    let fid = file.fid;
    let image = file
        .read_all()
        .map_err(|e| files::io_error(e, "reading a datafile"))?;
    let scan = judge_scan(col, &image, is_journal);
    let salvaged = scan.end == ScanEnd::Corrupt;
    let markers = match scan.end {
        ScanEnd::Corrupt if !inner.options.ignore_datafile_errors => {
            return Err(Error::with_message(
                ErrorCode::CorruptedDatafile,
                format!(
                    "collection {}: {} {} is corrupt at offset {}: {} of its markers lie \
                     behind the damage (start with --database.ignore-datafile-errors to \
                     salvage the intact markers)",
                    col.id,
                    if is_journal { "journal" } else { "datafile" },
                    file.path().display(),
                    scan.bad_offset.unwrap_or(0),
                    format::salvage(&image[scan.bad_offset.unwrap_or(0).min(image.len())..]).len()
                ),
            ));
        }
        ScanEnd::Corrupt => {
            let found = format::salvage(&image);
            inner.note_salvage(format!(
                "collection {}: {} {} is corrupt at offset {}; kept its {} intact markers \
                 (the scan before the damage had found {})",
                col.id,
                if is_journal { "journal" } else { "datafile" },
                file.path().display(),
                scan.bad_offset.unwrap_or(0),
                found.len(),
                scan.markers.len()
            ));
            found
        }
        _ => scan.markers.clone(),
    };
    let mut stats = FileStats {
        docs: 0,
        doc_bytes: 0,
        removes: 0,
        size: file.len(),
        kind: StatKind::Datafile,
        max_tick: 0,
    };
    index_markers(col, rec, file.slot, &image, &markers, &mut stats);
    inner.files.insert(file.clone());
    let reusable = is_journal && scan.end == ScanEnd::Clean && !salvaged;
    if reusable {
        let size = file.len();
        let crc_acc = markers.iter().fold(0u32, |acc, m| {
            crc32c::crc32c_append(acc, &m.crc.to_le_bytes())
        });
        stats.kind = StatKind::Journal;
        cf.stats.insert(fid, stats);
        cf.journal = Some(Journal {
            file,
            offset: scan.valid_end as u64,
            size,
            count: markers.len() as u64,
            max_tick: markers.iter().map(|m| m.tick).max().unwrap_or(0),
            crc_acc,
        });
    } else if is_journal && scan.end != ScanEnd::Sealed && !salvaged {
        // A torn tail: seal the journal right after its last intact marker, so nothing is
        // ever appended behind garbage.
        let count = markers.len() as u64;
        let max_tick = markers.iter().map(|m| m.tick).max().unwrap_or(0);
        let crc_acc = markers.iter().fold(0u32, |acc, m| {
            crc32c::crc32c_append(acc, &m.crc.to_le_bytes())
        });
        let end = markers
            .last()
            .map(|m| m.offset + format::padded(m.len))
            .unwrap_or(format::padded(format::FILE_HEADER_LEN));
        cf.journal = Some(Journal {
            file,
            offset: end as u64,
            size: 0,
            count,
            max_tick,
            crc_acc,
        });
        cf.stats.insert(fid, stats);
        inner.seal_journal(col, cf)?;
    } else {
        // A sealed journal whose MANIFEST edit was lost, or a datafile without a hint.
        if is_journal {
            file.rename(&datafile_path(&col.dir, fid))
                .map_err(|e| files::io_error(e, "renaming a sealed journal"))?;
        }
        // No hint for a salvaged file: a hint would make the next normal start trust it
        // and silently skip the damage; without one the damage is reported again until
        // compaction (in salvage mode) rewrites the intact markers into a fresh file.
        if !salvaged && inner.write_hint(col, &file).is_err() {
            tracing::warn!("collection {}: could not rewrite hint file {fid}", col.id);
        }
        cf.stats.insert(fid, stats);
        cf.datafiles.push(file);
    }
    Ok(())
}

/// Scans a listed file and judges how it ends: a sealed datafile must end in a footer that
/// matches its markers (anything else, a lost tail included, is damage); a journal's damage
/// behind the collected tick that only uncollected markers follow is a torn tail.
fn judge_scan(col: &Collection, image: &[u8], is_journal: bool) -> format::Scan {
    let mut scan = format::scan(image);
    if is_journal && scan.end == ScanEnd::Corrupt {
        // Journal ticks grow along the file. Damage that starts after the last collected
        // (synced) tick and is followed only by uncollected markers is an unsynced tail
        // (power loss during a collector pass): everything from there on is still in the
        // WAL, so the journal is cut at the damage instead of being reported.
        let collected = col.collected_tick.load(Ordering::Acquire);
        let bad = scan.bad_offset.unwrap_or(scan.valid_end);
        let before = scan.markers.last().map(|m| m.tick).unwrap_or(0);
        let tail_uncollected = format::salvage(image)
            .iter()
            .filter(|m| m.offset > bad)
            .all(|m| m.tick > collected);
        if before >= collected && tail_uncollected {
            scan.end = ScanEnd::TornTail;
        }
    }
    // A sealed datafile was fdatasynced with its footer before it was listed: anything
    // but a footer that matches its markers means damage (a lost tail included).
    let sealed_ok = scan.end == ScanEnd::Sealed && footer_ok(&scan);
    let damaged_datafile = !is_journal && !sealed_ok;
    let damaged_journal = is_journal && scan.end == ScanEnd::Sealed && !footer_ok(&scan);
    if (damaged_datafile || damaged_journal) && scan.end != ScanEnd::Corrupt {
        scan.end = ScanEnd::Corrupt;
        scan.bad_offset = Some(scan.valid_end);
    }
    scan
}

/// Enters the markers of the file in slot `slot` into the index (highest tick wins) and its
/// statistics.
fn index_markers(
    col: &Collection,
    rec: &mut Recovered,
    slot: u32,
    image: &[u8],
    markers: &[format::Found],
    stats: &mut FileStats,
) {
    for m in markers {
        let Ok(marker) = format::decode(&image[m.offset..]) else {
            continue;
        };
        let Some((kind, key, tick, rev, off, len)) = marker_entry(m, &marker) else {
            continue;
        };
        observe(rec, tick, rev);
        col.last_tick.fetch_max(tick, Ordering::Relaxed);
        stats.max_tick = stats.max_tick.max(tick);
        if kind == MarkerType::Truncate {
            col.index.note_truncate(tick);
            col.truncate_durable.fetch_max(tick, Ordering::AcqRel);
            continue;
        }
        let loc = if kind == MarkerType::Document {
            stats.docs += 1;
            stats.doc_bytes += len as u64;
            Loc {
                slot,
                offset: off,
                len,
            }
        } else {
            stats.removes += 1;
            Loc::REMOVED
        };
        col.index.recover(key, Version { tick, rev, loc });
    }
}

struct Preloaded {
    /// The datafile, opened and proven intact against its footer (`None` when not
    /// verified: `verify_datafiles_on_open` off).
    file: Option<Arc<DataFile>>,
    pub(super) stats: FileStats,
    pub(super) max_tick: u64,
    pub(super) max_rev: u64,
    /// Tick of the newest truncate marker in the file (0 if none).
    pub(super) truncate_tick: u64,
}

/// Loads the hint files of sealed datafiles into the index, several files in parallel (the
/// index shards take concurrent inserts; "highest tick wins" makes the order irrelevant).
/// Files without a valid hint are left to the caller, which scans them. With `verify`, a
/// hint is used only after its datafile passed one sequential CRC pass ending in a footer
/// that matches its markers (a bit flip, torn sector or lost tail under an intact hint is
/// then left to the caller's scan, which reports it or salvages).
fn preload_hints(
    index: &PrimaryIndex,
    dir: &Path,
    fids: &[(u64, u32)],
    verify: bool,
) -> HashMap<u64, Preloaded> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = Mutex::new(HashMap::new());
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(fids.len())
        .max(1);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(fid, slot)) = fids.get(i) else {
                    break;
                };
                let Ok(buf) = std::fs::read(hint_path(dir, fid)) else {
                    continue;
                };
                let mut p = Preloaded {
                    file: None,
                    stats: FileStats {
                        docs: 0,
                        doc_bytes: 0,
                        removes: 0,
                        size: std::fs::metadata(datafile_path(dir, fid))
                            .map(|m| m.len())
                            .unwrap_or(0),
                        kind: StatKind::Datafile,
                        max_tick: 0,
                    },
                    max_tick: 0,
                    max_rev: 0,
                    truncate_tick: 0,
                };
                // A hint is only as good as its datafile: one that lost its tail (footer or
                // markers) must be scanned, which reports the damage.
                let mut needed = 0u64;
                let parsed = files::for_each_hint(fid, &buf, |_, _, _, _, offset, len| {
                    needed = needed.max(offset as u64 + len as u64);
                });
                let footer_end = format::padded(needed as usize) + format::FOOTER_LEN;
                if parsed.is_none() || p.stats.size < footer_end as u64 {
                    continue;
                }
                if verify {
                    match prove_intact(fid, slot, &datafile_path(dir, fid)) {
                        Some(file) => p.file = Some(file),
                        None => continue,
                    }
                }
                let ok = files::for_each_hint(fid, &buf, |kind, key, tick, rev, offset, len| {
                    p.max_tick = p.max_tick.max(tick);
                    p.max_rev = p.max_rev.max(rev);
                    if kind == MarkerType::Truncate {
                        p.truncate_tick = p.truncate_tick.max(tick);
                        index.note_truncate(tick);
                        return;
                    }
                    let loc = if kind == MarkerType::Document {
                        p.stats.docs += 1;
                        p.stats.doc_bytes += len as u64;
                        Loc { slot, offset, len }
                    } else {
                        p.stats.removes += 1;
                        Loc::REMOVED
                    };
                    index.recover(key, Version { tick, rev, loc });
                });
                if ok.is_some() {
                    p.stats.max_tick = p.max_tick;
                    results.lock().insert(fid, p);
                }
            });
        }
    });
    results.into_inner()
}

/// Opens a sealed datafile and checks every marker's CRC and its footer (count and CRC of
/// CRCs) in one sequential pass over its read-only map: the file if intact, `None` if
/// damaged or unreadable. The outcome is remembered on the file, so storage-order scans do
/// not verify it again.
fn prove_intact(fid: u64, slot: u32, path: &Path) -> Option<Arc<DataFile>> {
    let file = DataFile::open(fid, slot, path).ok()?;
    let scan = match file.map() {
        Some(map) => format::scan(&map),
        None => format::scan(&file.read_all().ok()?),
    };
    file.release_mapped_pages();
    let intact = scan.end == ScanEnd::Sealed && scan.bad_offset.is_none() && footer_ok(&scan);
    if !intact {
        tracing::error!(
            "datafile {} fails its checksum verification (damage at offset {}); scanning it",
            path.display(),
            scan.bad_offset.unwrap_or(scan.valid_end)
        );
        return None;
    }
    file.set_verified_sealed(true);
    Some(file)
}

/// Runs `f(0..n)` on up to one thread per core and returns the results in order.
pub(super) fn par_map<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..n).map(|_| None).collect());
    let threads = std::thread::available_parallelism()
        .map(|t| t.get())
        .unwrap_or(1)
        .min(n)
        .max(1);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let r = f(i);
                results.lock()[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .into_iter()
        .map(|r| r.expect("every index was processed"))
        .collect()
}
