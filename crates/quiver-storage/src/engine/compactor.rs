//! The compactor: per collection, drops datafiles wholly below a durable truncate, then
//! rewrites the groups the planner picks into one result file each, swaps the result in with
//! one MANIFEST rewrite and repoints the index.
//!
//! Invariants: every document marker any version references is copied (else compaction is
//! refused); inputs are unlisted only by the swap and unlinked only after it; the result's
//! offsets stay within its length.

use super::counters::EngineCounters;
use crate::files::{self, DataFile};
use crate::format::{self, FileKind, Footer, MarkerType, ScanEnd};
use crate::index::Loc;
use crate::{CompactionReport, FailPoint};
use quiver_errors::Result;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::collection::Collection;
use super::collection::{FileStats, StatKind};
use super::compaction_plan::{plan, select_markers, FileStat, MarkerInfo};
use super::journal::footer_ok;
use super::{corrupt, datafile_path, hint_path, next_tick, Inner};

impl Inner {
    /// Explicit compaction: collects the WAL and seals a non-empty journal first, so that
    /// everything is compacted.
    pub(crate) fn compact(&self, cid: u64) -> Result<CompactionReport> {
        self.check_open()?;
        let col = self.collection(cid)?;
        // Data still in the WAL or the journal is moved into datafiles first, so an explicit
        // compaction sees everything.
        self.collect(true)?;
        {
            let mut cf = col.files.lock();
            if cf.journal.as_ref().is_some_and(|j| j.count > 0) {
                self.seal_journal(&col, &mut cf)?;
            }
        }
        self.compact_collection(&col, true)
    }

    /// Compacts one collection: datafiles wholly below a durable truncate first, then the
    /// groups the planner picks, one at a time (`force`: every file with dead data).
    pub(super) fn compact_collection(
        &self,
        col: &Arc<Collection>,
        force: bool,
    ) -> Result<CompactionReport> {
        col.usable()?;
        let mut last = col.compact_lock.lock();
        let mut report = CompactionReport::default();
        let journal_size = col.journal_size(self.options.journal_size_default);
        // Each round merges one group; bounded by the number of datafiles.
        let rounds = col.files.lock().datafiles.len();
        if rounds == 0 {
            *col.compaction_status.lock() = "no datafiles to compact".to_string();
            return Ok(report);
        }
        // Datafiles wholly below a durable truncate go first, all at once and unread.
        // The pass walks every key: skipped when no key has anything it could drop, which is
        // the compactor's periodic check of a collection that only gets inserts.
        if col.index.may_hold_garbage() {
            col.index.gc(self.horizon());
        }
        let truncated: Vec<u64> = {
            let floor = col.truncate_durable.load(Ordering::Acquire);
            let cf = col.files.lock();
            cf.datafiles
                .iter()
                .filter(|f| cf.stats.get(&f.fid).is_some_and(|st| st.max_tick < floor))
                .map(|f| f.fid)
                .collect()
        };
        if !truncated.is_empty() {
            let r = self.compact_group(col, &truncated)?;
            report.files_compacted += r.files_compacted;
            report.files_written += r.files_written;
            report.bytes_reclaimed += r.bytes_reclaimed;
            report.markers_kept += r.markers_kept;
            report.markers_dropped += r.markers_dropped;
        }
        for _ in 0..rounds {
            // Versions no snapshot can see any more must not keep their markers alive.
            if col.index.may_hold_garbage() {
                col.index.gc(self.horizon());
            }
            let stats = self.file_stats_view(col);
            let groups = plan(&stats, &self.options.compaction, journal_size, force);
            let Some(group) = groups.into_iter().next() else {
                break;
            };
            let r = self.compact_group(col, &group)?;
            report.files_compacted += r.files_compacted;
            report.files_written += r.files_written;
            report.bytes_reclaimed += r.bytes_reclaimed;
            report.markers_kept += r.markers_kept;
            report.markers_dropped += r.markers_dropped;
        }
        *last = Some(Instant::now());
        if report.files_compacted > 0 {
            let counters = &self.counters;
            EngineCounters::bump(&counters.compaction_runs, 1);
            EngineCounters::bump(&counters.compaction_files, report.files_compacted as u64);
            EngineCounters::bump(&counters.compaction_bytes_reclaimed, report.bytes_reclaimed);
        }
        *col.compaction_status.lock() = if report.files_compacted > 0 {
            format!(
                "compacted {} datafile(s), reclaimed {} bytes",
                report.files_compacted, report.bytes_reclaimed
            )
        } else {
            "no compaction needed".to_string()
        };
        Ok(report)
    }

    /// Per-datafile statistics for the planner (alive from one chunked index pass).
    fn file_stats_view(&self, col: &Collection) -> Vec<FileStat> {
        let cf = col.files.lock();
        let datafiles: Vec<(u64, u32, u64)> = cf
            .datafiles
            .iter()
            .map(|f| {
                (
                    f.fid,
                    f.slot,
                    cf.stats.get(&f.fid).map(|s| s.size).unwrap_or(0),
                )
            })
            .collect();
        let totals: HashMap<u64, (u64, u64, u64)> = cf
            .stats
            .iter()
            .map(|(fid, s)| (*fid, (s.docs, s.doc_bytes, s.removes)))
            .collect();
        drop(cf);
        // Alive documents by file slot (what index locations name).
        let mut alive: HashMap<u32, (u64, u64)> = HashMap::new();
        let visible = self.visible.load(Ordering::Acquire);
        let floor = col.index.floor(visible);
        col.index.for_each_chunked(|_, e| {
            if e.head.tick <= visible && e.head.tick > floor && !e.head.is_removed() {
                let a = alive.entry(e.head.loc.slot).or_default();
                a.0 += 1;
                a.1 += e.head.loc.len as u64;
            }
        });
        datafiles
            .into_iter()
            .map(|(fid, slot, size)| {
                let (docs, bytes, removes) = totals.get(&fid).copied().unwrap_or_default();
                let (alive_count, alive_bytes) = alive.get(&slot).copied().unwrap_or_default();
                FileStat {
                    fid,
                    file_size: size,
                    alive_count,
                    alive_bytes,
                    dead_count: docs.saturating_sub(alive_count),
                    dead_bytes: bytes.saturating_sub(alive_bytes),
                    removes,
                }
            })
            .collect()
    }

    /// Rewrites one group of datafiles (fids in MANIFEST order) into one result file and
    /// swaps it in: the inputs, the locations the index references in them, the markers to
    /// keep, the result file, one MANIFEST rewrite, then the index repointed and the inputs
    /// dropped.
    fn compact_group(&self, col: &Arc<Collection>, group: &[u64]) -> Result<CompactionReport> {
        let mut report = CompactionReport::default();
        let Some((inputs, keep_tombstones)) = self.group_inputs(col, group) else {
            return Ok(report);
        };
        let input_fids: HashSet<u64> = group.iter().copied().collect();
        let input_slots: HashSet<u32> = inputs.iter().map(|f| f.slot).collect();
        let referenced = referenced_locations(col, &input_slots);
        let truncate_floor = col.truncate_durable.load(Ordering::Acquire);
        let wholly_truncated = referenced.is_empty() && {
            let cf = col.files.lock();
            group.iter().all(|fid| {
                cf.stats
                    .get(fid)
                    .is_some_and(|st| st.max_tick < truncate_floor)
            })
        };
        let fid = next_tick(self);
        let slot = self.files.new_slot();
        let images = self.read_inputs(col, &inputs, wholly_truncated, &mut report)?;
        // Which removals to keep is decided from the same `referenced` set that decides which
        // documents are kept, never from the live index: a snapshot released and a GC pass
        // during this copy would otherwise drop the removal of a document version copied
        // while the snapshot still pinned it, and that version would come back at restart.
        let referenced_ref = &referenced;
        let keep = select_markers(
            inputs
                .iter()
                .zip(&images)
                .flat_map(|(input, (image, found))| {
                    found.iter().map(move |m| MarkerInfo {
                        kind: m.kind,
                        tick: m.tick,
                        key: marker_key(&image[m.offset..]),
                        referenced: referenced_ref.contains(&(input.slot, m.offset as u32)),
                    })
                }),
            keep_tombstones,
            truncate_floor,
        );
        let rewrite = copy_kept(slot, &inputs, &images, keep, &mut report)?;
        if rewrite.found_refs < referenced.len() {
            // Some document the index points to is not (intact) in the inputs: replacing them
            // would lose it. Leave everything as it is and report.
            return Err(corrupt(format!(
                "collection {}: {} referenced document(s) not found intact in datafiles {:?}; \
                 compaction refused",
                col.id,
                referenced.len() - rewrite.found_refs,
                group
            )));
        }
        assert_eq!(
            rewrite.found_refs,
            referenced.len(),
            "every kept document is a referenced one"
        );
        let Rewrite {
            out,
            moved,
            count,
            max_tick,
            crc_acc,
            mut stats,
            ..
        } = rewrite;
        let result = match count {
            0 => None,
            _ => Some(self.write_result(col, (fid, slot), out, count, max_tick, crc_acc)?),
        };
        if let Some(file) = &result {
            stats.size = file.len();
            stats.max_tick = max_tick;
        }
        self.swap_in(col, &inputs, &input_fids, &result, stats)?;
        for (key, from, to) in moved {
            col.index.repoint(&key, from, to);
        }
        let mut table = self.files.write();
        for f in &inputs {
            table.remove(&f.slot);
            f.delete_when_unused(vec![hint_path(&col.dir, f.fid)]);
        }
        drop(table);
        report.files_compacted = inputs.len();
        report.files_written = usize::from(result.is_some());
        Ok(report)
    }

    /// The group's datafiles, and whether every removal in them must be kept. `None` when
    /// the file set changed since the group was planned.
    fn group_inputs(&self, col: &Collection, group: &[u64]) -> Option<(Vec<Arc<DataFile>>, bool)> {
        let cf = col.files.lock();
        let inputs: Vec<Arc<DataFile>> = cf
            .datafiles
            .iter()
            .filter(|f| group.contains(&f.fid))
            .cloned()
            .collect();
        // A removal must survive while an older file may still hold the removed key, and
        // while a WAL segment that will be replayed at the next start (retained for a
        // collection that failed to open, or not yet collected) may hold one.
        let first_pos = cf
            .datafiles
            .iter()
            .position(|f| group.contains(&f.fid))
            .unwrap_or(0);
        let wal_has_old_data = {
            let wal = self.wal.lock();
            !wal.retained.is_empty() || !wal.sealed.is_empty()
        };
        (inputs.len() == group.len()).then_some((inputs, first_pos > 0 || wal_has_old_data))
    }

    /// Each input's image and markers, fully verified (hint files were trusted at startup:
    /// this is where a damaged datafile, a lost tail included, must be caught before it is
    /// replaced); with `--database.ignore-datafile-errors` its intact markers. Inputs wholly
    /// below a durable truncate are dropped unread (an empty image each).
    fn read_inputs(
        &self,
        col: &Collection,
        inputs: &[Arc<DataFile>],
        wholly_truncated: bool,
        report: &mut CompactionReport,
    ) -> Result<Vec<(Vec<u8>, Vec<format::Found>)>> {
        let mut images = Vec::with_capacity(inputs.len());
        for input in inputs {
            if wholly_truncated {
                // Nothing in it can be needed: no snapshot references it, and every marker
                // is below a truncate that is durable in a later file. Dropped unread.
                report.markers_dropped += col
                    .files
                    .lock()
                    .stats
                    .get(&input.fid)
                    .map(|st| st.docs + st.removes)
                    .unwrap_or(0);
                report.bytes_reclaimed += input.len();
                images.push((Vec::new(), Vec::new()));
                continue;
            }
            let image = input
                .read_all()
                .map_err(|e| files::io_error(e, "reading a datafile for compaction"))?;
            let found = match self.options.ignore_datafile_errors {
                true => format::salvage(&image),
                false => {
                    let scan = format::scan(&image);
                    if scan.end != ScanEnd::Sealed || !footer_ok(&scan) {
                        let at = scan.bad_offset.unwrap_or(scan.valid_end);
                        let err = corrupt(format!(
                            "collection {}: datafile {} is damaged at offset {at} (compaction \
                             refused; start with --database.ignore-datafile-errors to salvage)",
                            col.id, input.fid,
                        ));
                        return Err(self.checksum_failure(input.slot, at as u64, err));
                    }
                    scan.markers
                }
            };
            images.push((image, found));
        }
        Ok(images)
    }

    /// Writes the result file `compaction-<fid>.db` (header, the kept markers `out`, footer)
    /// as file `slot` of the file table, fdatasyncs it, renames it to `datafile-<fid>.db` and
    /// writes its hint file. On failure nothing of it remains.
    fn write_result(
        &self,
        col: &Collection,
        (fid, slot): (u64, u32),
        mut out: Vec<u8>,
        count: u64,
        max_tick: u64,
        crc_acc: u32,
    ) -> Result<Arc<DataFile>> {
        let header_len = format::padded(format::FILE_HEADER_LEN);
        let io = |e| files::io_error(e, "writing a compaction file");
        let size = (header_len + out.len() + format::FOOTER_LEN) as u64;
        // The planner caps a result at 2 GiB: its locations are 32-bit offsets.
        assert!(
            size <= u64::from(u32::MAX),
            "compaction result of {size} bytes"
        );
        let tmp = col.dir.join(format!("compaction-{fid}.db"));
        col.compacting.store(size, Ordering::Release);
        let _compacting = ResetOnDrop(&col.compacting);
        let header = files::header(FileKind::Compaction, fid, col.id, size);
        let file = DataFile::create(
            &tmp,
            &header,
            slot,
            fid,
            &self.options.io_hooks,
            FailPoint::CompactionWrite,
        )
        .map_err(io)?;
        out.extend_from_slice(&format::footer(
            &Footer {
                count,
                max_tick,
                crc_of_crcs: crc_acc,
            },
            max_tick,
        ));
        let written = files::write_all_at(
            &file.file,
            &out,
            header_len as u64,
            &self.options.io_hooks,
            FailPoint::CompactionWrite,
        )
        .and_then(|_| file.file.sync_data())
        .and_then(|_| file.rename(&datafile_path(&col.dir, fid)));
        if let Err(e) = written {
            file.delete_when_unused(Vec::new());
            return Err(io(e));
        }
        if let Err(e) = self.write_hint(col, &file) {
            file.delete_when_unused(vec![hint_path(&col.dir, fid)]);
            return Err(e);
        }
        Ok(file)
    }

    /// The swap: one MANIFEST rewrite makes the result live and the inputs garbage. On
    /// failure the file set is as before and the result is deleted.
    fn swap_in(
        &self,
        col: &Collection,
        inputs: &[Arc<DataFile>],
        input_fids: &HashSet<u64>,
        result: &Option<Arc<DataFile>>,
        stats: FileStats,
    ) -> Result<()> {
        let mut cf = col.files.lock();
        let before = cf.datafiles.clone();
        let retired_before = cf.retired.clone();
        // Inputs of earlier swaps that are gone from disk need no mention any more.
        cf.retired
            .retain(|fid| datafile_path(&col.dir, *fid).exists());
        cf.retired.extend(input_fids.iter().copied());
        let pos = cf
            .datafiles
            .iter()
            .position(|f| input_fids.contains(&f.fid))
            .unwrap_or(0);
        cf.datafiles.retain(|f| !input_fids.contains(&f.fid));
        if let Some(r) = result {
            cf.datafiles.insert(pos, r.clone());
        }
        let swapped = files::check(&self.options.io_hooks, FailPoint::CompactionSwap)
            .map_err(|e| files::io_error(e, "compaction swap"))
            .and_then(|_| self.write_manifest(col, &cf));
        if let Err(e) = swapped {
            cf.datafiles = before;
            cf.retired = retired_before;
            if let Some(r) = result {
                r.delete_when_unused(vec![hint_path(&col.dir, r.fid)]);
            }
            return Err(e);
        }
        if let Some(r) = result {
            cf.stats.insert(r.fid, stats);
            self.files.insert(r.clone());
        }
        for f in inputs {
            cf.stats.remove(&f.fid);
        }
        Ok(())
    }
}

/// The kept markers of a compaction group, laid out as the result file's body.
struct Rewrite {
    /// The kept markers, byte for byte, in input order (the result's body behind its header).
    out: Vec<u8>,
    /// `(key, old location, new location)` of every kept document.
    moved: Vec<(String, Loc, Loc)>,
    count: u64,
    max_tick: u64,
    crc_acc: u32,
    /// Kept documents (each one referenced by the index).
    found_refs: usize,
    stats: FileStats,
}

/// Every location (file slot, offset) in the group's files (`input_slots`) that some version
/// (of any snapshot) references.
fn referenced_locations(col: &Collection, input_slots: &HashSet<u32>) -> HashSet<(u32, u32)> {
    let mut referenced: HashSet<(u32, u32)> = HashSet::new();
    col.index.for_each_chunked(|_, e| {
        for v in std::iter::once(&e.head).chain(e.older().iter()) {
            if input_slots.contains(&v.loc.slot) {
                referenced.insert((v.loc.slot, v.loc.offset));
            }
        }
    });
    referenced
}

/// Copies the markers `keep` selects (one decision per marker of `images`, in order) into
/// the body of the result file in slot `slot`, counting what was dropped into `report`.
fn copy_kept(
    slot: u32,
    inputs: &[Arc<DataFile>],
    images: &[(Vec<u8>, Vec<format::Found>)],
    keep: Vec<bool>,
    report: &mut CompactionReport,
) -> Result<Rewrite> {
    let header_len = format::padded(format::FILE_HEADER_LEN);
    let mut r = Rewrite {
        out: Vec::new(),
        moved: Vec::new(),
        count: 0,
        max_tick: 0,
        crc_acc: 0,
        found_refs: 0,
        stats: FileStats {
            docs: 0,
            doc_bytes: 0,
            removes: 0,
            size: 0,
            kind: StatKind::Datafile,
            max_tick: 0,
        },
    };
    let mut keep = keep.into_iter();
    for (input, (image, found)) in inputs.iter().zip(images) {
        for m in found.iter().copied() {
            let bytes = &image[m.offset..m.offset + format::padded(m.len)];
            if !keep.next().unwrap_or(true) {
                report.markers_dropped += 1;
                report.bytes_reclaimed += bytes.len() as u64;
                continue;
            }
            let new_off = header_len + r.out.len();
            r.out.extend_from_slice(bytes);
            r.count += 1;
            r.max_tick = r.max_tick.max(m.tick);
            r.crc_acc = crc32c::crc32c_append(r.crc_acc, &m.crc.to_le_bytes());
            report.markers_kept += 1;
            if m.kind == MarkerType::Truncate {
                // Counted neither as a document nor as a removal.
            } else if m.kind == MarkerType::Document {
                r.found_refs += 1;
                r.stats.docs += 1;
                r.stats.doc_bytes += m.len as u64;
                let marker =
                    format::decode(bytes).map_err(|_| corrupt("datafile marker".into()))?;
                let body =
                    format::data_body(&marker).map_err(|_| corrupt("datafile marker".into()))?;
                r.moved.push((
                    body.key.to_string(),
                    Loc {
                        slot: input.slot,
                        offset: m.offset as u32,
                        len: m.len as u32,
                    },
                    Loc {
                        slot,
                        offset: new_off as u32,
                        len: m.len as u32,
                    },
                ));
            } else {
                r.stats.removes += 1;
            }
        }
    }
    Ok(r)
}

/// Zeroes a gauge when a scope ends, however it ends.
struct ResetOnDrop<'a>(&'a AtomicU64);

impl Drop for ResetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(0, Ordering::Release);
    }
}

/// The key of a data marker at the start of `marker` (`None` if it does not decode).
fn marker_key(marker: &[u8]) -> Option<String> {
    let m = format::decode(marker).ok()?;
    Some(format::data_body(&m).ok()?.key.to_string())
}
