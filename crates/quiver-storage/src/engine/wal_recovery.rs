//! Replaying the WAL at startup: inspects every segment for damage, decides between a
//! power-loss hole (point-in-time: the intact prefix, later segments moved aside) and damage
//! to synced data (refuse, or salvage every intact batch), then replays committed batches of
//! markers above each collection's collected tick into the index.
//!
//! Invariant: only complete batches (ending in a `COMMIT` marker) are applied.

use crate::files::{self, DataFile};
use crate::format::{self, MarkerType, ScanEnd, FLAG_COMMIT, FLAG_SYNC};
use crate::index::{Loc, Version};
use quiver_errors::{Error, ErrorCode, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::catalog::Catalog;
use super::durable_record;
use super::recovery::{observe, par_map, Recovered};
use super::{wal_dir, Inner};

pub(super) fn recover_wal(
    inner: &Inner,
    cat: &Catalog,
    rec: &mut Recovered,
) -> Result<Vec<Arc<DataFile>>> {
    let dir = wal_dir(&inner.dir);
    let segs = list_segments(&dir)?;
    // Point-in-time recovery: a damaged spot inside a segment followed by intact markers is a
    // power-loss hole in the unsynced tail (pages reach the disk in any order) unless a later
    // marker claims that the damaged range had been made durable — then it is damage to
    // synced data and startup refuses (unless salvaging).
    let infos = par_map(segs.len(), |i| inspect_segment(segs[i].0, &segs[i].1));
    let mut infos: Vec<SegInfo> = infos.into_iter().collect::<Result<_>>()?;
    let record = durable_record::read(&dir);
    if let Some(r) = record {
        check_against_record(inner, &segs, &infos, r)?;
    }
    let mut keep = segs.len();
    let mut salvaging = None;
    if let Some(k) = infos.iter().position(|s| s.hole.is_some()) {
        let (bad_offset, before) = infos[k].hole.unwrap_or_default();
        // The durable-tick record vouches like a claim: it was written after an fdatasync
        // that covered its tick.
        let evidence = infos[k].tail_claim > before
            || infos[k + 1..].iter().any(|s| s.max_claim > before)
            || record.is_some_and(|r| r.tick > before);
        // An intact sync batch behind the damage and no claim: if that batch was
        // acknowledged, the fdatasync that acknowledged it flushed the damaged range too (media
        // damage to synced data); if the power failed during that fdatasync, it is a hole.
        // Nothing on disk tells the two apart, and guessing "hole" could drop an acknowledged
        // write, so recovery refuses and lets the operator salvage.
        let sync_behind = infos[k].tail_sync || infos[k + 1..].iter().any(|s| s.has_sync);
        if evidence || sync_behind {
            if !inner.options.ignore_datafile_errors {
                let why = if evidence {
                    "in data that was already synced"
                } else {
                    "followed by a waitForSync batch that may have been acknowledged (media \
                     damage, or a power loss during its fdatasync: the files cannot tell)"
                };
                return Err(Error::with_message(
                    ErrorCode::CorruptedDatafile,
                    format!(
                        "WAL segment {} is damaged at offset {bad_offset} {why}; start with \
                         --database.ignore-datafile-errors to keep every intact batch (what \
                         the damaged bytes held is lost)",
                        segs[k].1.display()
                    ),
                ));
            }
            inner.note_salvage(format!(
                "WAL segment {} is damaged at offset {bad_offset}: salvaged every intact \
                 batch; the damaged range is lost",
                segs[k].1.display()
            ));
            salvaging = Some(k);
        } else {
            tracing::warn!(
                "WAL segment {} has a hole at offset {bad_offset} in its unsynced tail (power \
                 loss): recovering up to tick {before}, dropping {} later segment(s)",
                segs[k].1.display(),
                segs.len() - k - 1
            );
            keep = k + 1;
            cut_at_hole(&dir, &segs[k..], bad_offset)?;
            infos.truncate(keep);
        }
    }
    let segs = &segs[..keep];
    // Segments are independent (a batch never spans two) and "highest tick wins" makes the
    // order irrelevant, so they are replayed in parallel.
    let slots: Vec<u32> = segs.iter().map(|_| inner.files.new_slot()).collect();
    let results = par_map(segs.len(), |i| {
        let (fid, path) = (segs[i].0, &segs[i].1);
        replay_segment(cat, (fid, slots[i]), path, salvaging == Some(i))
    });
    let mut out = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        let (file, max_tick, max_rev) = r?;
        observe(rec, max_tick.max(segs[i].0), max_rev);
        inner.files.insert(file.clone());
        out.push(file);
    }
    restate_record(inner, &dir, segs, &infos);
    Ok(out)
}

/// Startup's proof that no write acknowledged as durable is gone from the WAL: the segment
/// the durable-tick record names must still hold intact committed batches up to the
/// recorded tick. A segment with a damaged spot followed by intact markers is judged by the
/// hole rules instead (the record counts there as a claim). Otherwise startup refuses,
/// naming the segment and the lost tick range, unless salvaging.
fn check_against_record(
    inner: &Inner,
    segs: &[(u64, PathBuf)],
    infos: &[SegInfo],
    r: durable_record::DurableRecord,
) -> Result<()> {
    let problem = match segs.iter().position(|(fid, _)| *fid == r.segment) {
        Some(i) if infos[i].hole.is_none() && infos[i].committed_tick < r.tick => Some(format!(
            "WAL segment {} ends at tick {} (its intact data stops at offset {}), but writes \
             up to tick {} were acknowledged as durable: the segment was truncated or \
             overwritten, and every write after tick {} would be lost",
            segs[i].1.display(),
            infos[i].committed_tick,
            infos[i].valid_end,
            r.tick,
            infos[i].committed_tick
        )),
        // Gone: moved into journals by the collector and unlinked. A segment deleted by
        // damage looks the same from here (the MANIFESTs that would tell may belong to a
        // damaged or dropped collection), so it is not judged: see docs/storage-format.md.
        _ => None,
    };
    let Some(problem) = problem else {
        return Ok(());
    };
    if !inner.options.ignore_datafile_errors {
        return Err(Error::with_message(
            ErrorCode::CorruptedDatafile,
            format!(
                "{problem}; start with --database.ignore-datafile-errors to open with what is \
                 intact (a report is written into the database directory)"
            ),
        ));
    }
    inner.note_salvage(format!("{problem}; opened with what is intact"));
    Ok(())
}

/// After recovery, points the durable-tick record at what the kept segments hold (their
/// ticks are fdatasynced before the engine calls them durable), so a salvaged or cut WAL is
/// not reported again at the next start; removes it when no segment holds a batch.
fn restate_record(inner: &Inner, dir: &Path, segs: &[(u64, PathBuf)], infos: &[SegInfo]) {
    let newest = segs
        .iter()
        .zip(infos)
        .rev()
        .find(|(_, info)| info.committed_tick > 0)
        .map(|((fid, _), info)| durable_record::DurableRecord {
            tick: info.committed_tick,
            segment: *fid,
        });
    let Some(record) = newest else {
        durable_record::remove(dir);
        return;
    };
    let written = durable_record::open_writer(dir).and_then(|f| {
        durable_record::write(&f, record)?;
        Ok(f)
    });
    match written {
        Ok(f) => *inner.durable_record.lock() = Some(Some(f)),
        Err(e) => {
            tracing::warn!("cannot write the WAL's durable-tick record: {e}");
            durable_record::remove(dir);
        }
    }
}

/// The segments in `dir` (created if missing), in fid order.
fn list_segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    std::fs::create_dir_all(dir).map_err(|e| files::io_error(e, "creating wal directory"))?;
    let mut segs: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .map_err(|e| files::io_error(e, "listing wal directory"))?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let fid = name.strip_suffix(".wal")?.parse::<u64>().ok()?;
            Some((fid, e.path()))
        })
        .collect();
    segs.sort();
    Ok(segs)
}

/// Point-in-time recovery at a power-loss hole at `bad_offset` of the first of `segs`: the
/// later segments are moved aside, the damaged segment's tail is saved next to it and zeroed.
fn cut_at_hole(dir: &Path, segs: &[(u64, PathBuf)], bad_offset: usize) -> Result<()> {
    // Moved aside, not deleted: an operator can still inspect them.
    for (_, path) in &segs[1..] {
        let _ = std::fs::rename(path, path.with_extension("wal.dropped"));
    }
    // The damaged segment keeps its intact prefix; its tail is saved next to it and
    // zeroed, so that the next start does not find the same hole again and judge the
    // newer segments written after this recovery against it.
    let path = &segs[0].1;
    let cut = (|| -> std::io::Result<()> {
        let image = std::fs::read(path)?;
        if bad_offset < image.len() {
            std::fs::write(
                path.with_extension("wal.dropped-tail"),
                &image[bad_offset..],
            )?;
            let file = std::fs::OpenOptions::new().write(true).open(path)?;
            std::os::unix::fs::FileExt::write_all_at(
                &file,
                &vec![0u8; image.len() - bad_offset],
                bad_offset as u64,
            )?;
            file.sync_all()?;
        }
        Ok(())
    })();
    cut.map_err(|e| files::io_error(e, "cutting a damaged WAL segment"))?;
    let _ = files::sync_dir(dir);
    Ok(())
}

/// What recovery needs to know about a WAL segment before replaying it.
struct SegInfo {
    /// A damaged spot followed by intact markers: (offset, tick of the last marker before).
    hole: Option<(usize, u64)>,
    /// Highest durability claim of the intact markers before the hole (or of all).
    max_claim: u64,
    /// Highest durability claim of intact markers after the hole.
    tail_claim: u64,
    /// Some intact marker of the segment's intact prefix ends a sync batch.
    has_sync: bool,
    /// Some intact marker after the hole ends a sync batch.
    tail_sync: bool,
    /// Tick of the last complete batch of the intact prefix (`0`: none).
    committed_tick: u64,
    /// Offset after the intact prefix.
    valid_end: usize,
}

fn inspect_segment(fid: u64, path: &Path) -> Result<SegInfo> {
    let image = std::fs::read(path).map_err(|e| files::io_error(e, "reading WAL"))?;
    let scan = format::scan(&image);
    let claims = |ms: &[format::Found]| {
        ms.iter()
            .filter_map(|m| format::durable_claim(&image[m.offset..]))
            .max()
            .unwrap_or(0)
    };
    let mut info = SegInfo {
        hole: None,
        max_claim: claims(&scan.markers),
        tail_claim: 0,
        has_sync: scan
            .markers
            .iter()
            .any(|m| m.flags & FLAG_COMMIT != 0 && m.flags & FLAG_SYNC != 0),
        tail_sync: false,
        committed_tick: scan
            .markers
            .iter()
            .rev()
            .find(|m| m.flags & FLAG_COMMIT != 0)
            .map(|m| m.tick)
            .unwrap_or(0),
        valid_end: scan.valid_end,
    };
    if scan.end == ScanEnd::Corrupt {
        let bad = scan.bad_offset.unwrap_or(scan.valid_end);
        let before = scan.markers.last().map(|m| m.tick).unwrap_or(fid);
        info.hole = Some((bad, before));
        info.tail_claim = format::max_claim_from(&image, bad + 1);
        info.tail_sync = format::sync_commit_from(&image, bad + 1);
    }
    Ok(info)
}

/// A replayed WAL segment with the highest tick and revision found in it.
type Replayed = (Arc<DataFile>, u64, u64);

/// Replays WAL segment `fid` into the index as file `slot`: its intact prefix, or with
/// `salvage` every intact complete batch anywhere in it.
fn replay_segment(
    cat: &Catalog,
    (fid, slot): (u64, u32),
    path: &Path,
    salvage: bool,
) -> Result<Replayed> {
    let file = DataFile::open(fid, slot, path).map_err(|e| files::io_error(e, "opening WAL"))?;
    let image = file
        .read_all()
        .map_err(|e| files::io_error(e, "reading WAL"))?;
    // recover_wal decided above that anything behind a damaged spot is either an unsynced
    // tail (prefix only) or to be salvaged.
    let (mut max_tick, mut max_rev) = (0u64, 0u64);
    for p in committed_markers(&image, salvage) {
        let Ok(marker) = format::decode(&image[p.offset..]) else {
            continue;
        };
        let Some((cid, rev)) = format::marker_owner(&marker) else {
            continue;
        };
        max_tick = max_tick.max(p.tick);
        max_rev = max_rev.max(rev);
        let Some(col) = cat.collections.get(&cid) else {
            continue;
        };
        if col.status.is_err() || p.tick <= col.collected_tick.load(Ordering::Acquire) {
            continue;
        }
        col.uncollected.fetch_add(1, Ordering::Relaxed);
        col.last_tick.fetch_max(p.tick, Ordering::AcqRel);
        let Ok(body) = format::data_body(&marker) else {
            // A truncate (marker_owner accepted it): not durable in the journals yet, so
            // compaction must not rely on it until the collector copied it.
            col.index.note_truncate(p.tick);
            continue;
        };
        let loc = if p.kind == MarkerType::Document {
            Loc {
                slot,
                offset: p.offset as u32,
                len: p.len as u32,
            }
        } else {
            Loc::REMOVED
        };
        col.index.recover(
            body.key,
            Version {
                tick: p.tick,
                rev: body.rev,
                loc,
            },
        );
    }
    Ok((file, max_tick, max_rev))
}

/// The markers of complete batches in a WAL segment image, in log order: those of its
/// intact prefix, or with `salvage` those of every intact batch anywhere in it.
fn committed_markers(image: &[u8], salvage: bool) -> Vec<format::Found> {
    let markers = if salvage {
        format::salvage(image)
    } else {
        format::scan(image).markers
    };
    committed_of(markers, salvage)
}

/// The markers of complete (committed) batches among `markers`, a segment's scan (`salvage`:
/// found by [`format::salvage`], possibly with gaps).
pub(super) fn committed_of(markers: Vec<format::Found>, salvage: bool) -> Vec<format::Found> {
    let mut out = Vec::with_capacity(markers.len());
    let mut pending: Vec<format::Found> = Vec::new();
    // After a gap (damaged bytes) the markers up to the next COMMIT belong to a batch whose
    // head is lost: applying them would apply part of a batch.
    let mut expect = format::padded(format::FILE_HEADER_LEN);
    let mut headless = false;
    for m in markers {
        if salvage && m.offset != expect {
            pending.clear();
            headless = true;
        }
        expect = m.offset + format::padded(m.len);
        pending.push(m);
        if m.flags & FLAG_COMMIT == 0 {
            continue;
        }
        if std::mem::take(&mut headless) {
            pending.clear();
        } else {
            out.append(&mut pending);
        }
    }
    out
}
