//! Inspection of one collection: ArangoDB-style figures (one chunked index pass) and
//! `verify` (reads every marker and footer).

use crate::files;
use crate::format::{self, ScanEnd};
use crate::Figures;
use quiver_errors::Result;
use std::collections::HashMap;
use std::sync::atomic::Ordering;

use super::collection::Collection;
use super::collection::StatKind;
use super::{corrupt, Inner};

impl Inner {
    pub(crate) fn figures_of(&self, cid: u64) -> Result<Figures> {
        let col = self.collection(cid)?;
        col.usable()?;
        Ok(self.figures(&col))
    }

    /// The figures of one collection (one chunked index pass, then the file statistics).
    fn figures(&self, col: &Collection) -> Figures {
        // The collector and the compactor change a file's statistics and repoint the index
        // to it under this lock: holding it, the index pass and the statistics agree (without
        // it, documents moved between the two reads would count as dead). Writers do not
        // take it; a figures call waits for at most one collection group or compaction.
        let _consistent = col.compact_lock.lock();
        let visible = self.visible.load(Ordering::Acquire);
        let floor = col.index.floor(visible);
        let mut f = Figures::default();
        // Alive documents by file slot (what index locations name).
        let mut alive_in_files: HashMap<u32, (u64, u64)> = HashMap::new();
        // One chunked pass for counts: no shard is read-locked for longer than a chunk
        // (writers of that shard wait at most that long).
        col.index.for_each_chunked(|_, e| {
            if e.head.tick <= visible && e.head.tick > floor && !e.head.is_removed() {
                f.alive_count += 1;
                f.alive_size += e.head.loc.len as u64;
                let a = alive_in_files.entry(e.head.loc.slot).or_default();
                a.0 += 1;
                a.1 += e.head.loc.len as u64;
            }
        });
        let cf = col.files.lock();
        // The statistics are by fid: the slot of each of the collection's files.
        let slot_of: HashMap<u64, u32> = cf
            .datafiles
            .iter()
            .chain(cf.journal.iter().map(|j| &j.file))
            .map(|f| (f.fid, f.slot))
            .collect();
        for (fid, s) in &cf.stats {
            let (ac, ab) = slot_of
                .get(fid)
                .and_then(|slot| alive_in_files.get(slot))
                .copied()
                .unwrap_or_default();
            f.dead_count += s.docs.saturating_sub(ac);
            f.dead_size += s.doc_bytes.saturating_sub(ab);
            f.dead_deletion += s.removes;
            let slot = match s.kind {
                StatKind::Datafile => &mut f.datafiles,
                StatKind::Journal => &mut f.journals,
            };
            slot.count += 1;
            slot.file_size += s.size;
        }
        drop(cf);
        let compacting = col.compacting.load(Ordering::Acquire);
        if compacting > 0 {
            f.compactors = crate::FileFigures {
                count: 1,
                file_size: compacting,
            };
        }
        f.uncollected_logfile_entries = col.uncollected.load(Ordering::Acquire);
        f.index_memory = col.index.memory_bytes();
        f.last_tick = col.last_tick.load(Ordering::Acquire);
        f.journal_size = col.journal_size(self.options.journal_size_default);
        f.compaction_status = col.compaction_status.lock().clone();
        f
    }

    /// Reads every datafile and the journal of a collection and checks every marker (CRC,
    /// layout) and every footer (marker count, CRC of CRCs).
    pub(crate) fn verify(&self, cid: u64) -> Result<crate::VerifyReport> {
        let col = self.collection(cid)?;
        col.usable()?;
        // The journal is read only up to the end of what the collector has finished writing
        // (taken under the files lock): bytes behind it may be a pwrite in progress, which a
        // scan would take for a torn marker and report as damage that is not there.
        let (datafiles, journal, journal_end) = {
            let cf = col.files.lock();
            (
                cf.datafiles.clone(),
                cf.journal.as_ref().map(|j| j.file.clone()),
                cf.journal.as_ref().map(|j| j.offset).unwrap_or(0),
            )
        };
        let mut report = crate::VerifyReport::default();
        let bad = |fid: u64, what: String| corrupt(format!("collection {cid}: file {fid}: {what}"));
        for (file, sealed) in datafiles
            .iter()
            .map(|f| (f, true))
            .chain(journal.iter().map(|f| (f, false)))
        {
            let mut image = file
                .read_all()
                .map_err(|e| files::io_error(e, "reading a datafile"))?;
            if !sealed {
                image.truncate(journal_end as usize);
            }
            let scan = format::scan(&image);
            match (scan.end, sealed) {
                (ScanEnd::Corrupt, _) | (ScanEnd::TornTail, _) => {
                    let at = scan.bad_offset.unwrap_or(0);
                    let err = bad(file.fid, format!("damaged marker at offset {at}"));
                    return Err(self.checksum_failure(file.slot, at as u64, err));
                }
                (ScanEnd::Clean, true) => {
                    return Err(bad(file.fid, "sealed datafile without footer".into()))
                }
                _ => {}
            }
            if let Some(footer) = scan.footer {
                let crcs: Vec<u8> = scan
                    .markers
                    .iter()
                    .flat_map(|m| m.crc.to_le_bytes())
                    .collect();
                if footer.count != scan.markers.len() as u64
                    || footer.crc_of_crcs != crc32c::crc32c(&crcs)
                {
                    return Err(bad(file.fid, "footer does not match the markers".into()));
                }
            }
            report.files += 1;
            report.markers += scan.markers.len() as u64;
            report.bytes += scan.valid_end as u64;
        }
        Ok(report)
    }
}
