//! The collector: copies the committed markers of sealed WAL segments byte for byte into the
//! collections' journals (sealing journals that fill up), fdatasyncs them, records the
//! collected tick in the MANIFEST, and repoints the index from the WAL to the journal.
//!
//! Invariants: a journal's counters (offset, count, CRCs) change only after their bytes were
//! written, and pending bytes always fit the journal in front of its footer; a segment is
//! deleted only after its markers are durable in journals; the collected tick only grows.

use crate::files::{self, DataFile};
use crate::format::{self, MarkerType, ScanEnd, FLAG_COMMIT};
use crate::index::{Loc, PrimaryIndex};
use crate::FailPoint;
use quiver_errors::{Error, ErrorCode, Result};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::collection::{ColFiles, Collection, FileStats, StatKind};
use super::scratch::{presize, recycle};
use super::wal_recovery::committed_of;
use super::{corrupt, Inner};

/// A journal's counters at the start of a collection pass.
struct JournalState {
    fid: u64,
    offset: u64,
    count: u64,
    max_tick: u64,
    crc_acc: u32,
    stats: Option<(u64, u64, u64)>,
}

/// Forgets everything appended to the current journal since `start` (see the caller).
fn rewind_journal(cf: &mut ColFiles, start: &Option<JournalState>) {
    let Some(j) = cf.journal.as_mut() else {
        return;
    };
    let fid = j.file.fid;
    match start {
        Some(st) if st.fid == fid => {
            j.offset = st.offset;
            j.count = st.count;
            j.max_tick = st.max_tick;
            j.crc_acc = st.crc_acc;
            if let Some(s) = cf.stats.get_mut(&fid) {
                (s.docs, s.doc_bytes, s.removes) = st.stats.unwrap_or_default();
            }
        }
        _ => {
            // The journal was created during this pass: nothing in it counts.
            j.offset = format::padded(format::FILE_HEADER_LEN) as u64;
            j.count = 0;
            j.max_tick = 0;
            j.crc_acc = 0;
            if let Some(s) = cf.stats.get_mut(&fid) {
                (s.docs, s.doc_bytes, s.removes) = (0, 0, 0);
            }
        }
    }
}

/// Markers prepared for a journal but not yet written: byte ranges of the WAL segment's
/// image, written by [`Inner::flush_journal`] straight from the image (no staging copy; with
/// one collection written, a whole segment is one range and one `pwrite`).
#[derive(Default)]
pub(super) struct Pending {
    /// Ranges of the image, in journal order; adjacent ranges are merged.
    runs: Vec<std::ops::Range<usize>>,
    /// Total bytes in `runs`.
    len: u64,
    count: u64,
    max_tick: u64,
    crcs: Vec<u8>,
    docs: u64,
    doc_bytes: u64,
    removes: u64,
}

impl Pending {
    pub(super) fn push(&mut self, range: std::ops::Range<usize>) {
        self.len += range.len() as u64;
        match self.runs.last_mut() {
            Some(last) if last.end == range.start => last.end = range.end,
            _ => self.runs.push(range),
        }
    }
}

/// Buffers one collector pass needs per WAL segment, kept from segment to segment: with
/// ~200,000 markers per 32 MiB segment, fresh vectors meant fresh (kernel-zeroed) memory per
/// segment, which profiled as the collector's largest item (`clear_page_erms`, ~16 % of its
/// samples). Retained size is bounded by the largest segment collected (~12 MiB for 32 MiB of
/// ~150-byte markers).
#[derive(Default)]
pub(super) struct CollectorScratch {
    /// The segment's markers (scan result).
    found: Vec<format::Found>,
    /// `(collection id, index into found)` of every committed marker, grouped by collection.
    keyed: Vec<(u64, u32)>,
    /// `(index shard, WAL location, journal location)` of every document moved.
    moved: Vec<(usize, Loc, Loc)>,
}

/// How many versions the collector repoints per acquisition of a shard's write lock: long
/// enough to amortize the lock, short enough that a writer of the shard waits microseconds.
const REPOINT_RUN: usize = 64;

impl Inner {
    /// Moves committed markers of sealed WAL segments into collection journals.
    pub(super) fn collect(&self, include_active: bool) -> Result<()> {
        let mut scratch = self.collect_lock.lock();
        let mut retired = None;
        let segments = {
            let mut wal = self.wal.lock();
            if include_active {
                let has_data = wal.segment.is_some()
                    && wal.offset > format::padded(format::FILE_HEADER_LEN) as u64;
                if has_data {
                    retired = self.seal_segment(&mut wal);
                }
            }
            wal.sealed.clone()
        };
        drop(retired);
        for seg in segments {
            if self.bg.stop.load(Ordering::Acquire) {
                // Shutting down: the rest stays in the WAL and is collected after restart.
                break;
            }
            // Long collection passes must not starve the writers of prepared segments.
            if let Err(e) = self.prepare_spare_segment() {
                // A full disk is reported by the maintenance loop, once.
                if e.code != ErrorCode::FileSystemFull {
                    tracing::warn!("preparing the next WAL segment: {}", e);
                }
            }
            let retain = self.collect_segment(&seg, &mut scratch)?;
            super::counters::EngineCounters::bump(&self.counters.wal_segments_collected, 1);
            let mut wal = self.wal.lock();
            wal.sealed.retain(|s| s.fid != seg.fid);
            self.pending_segments
                .store(wal.sealed.len(), Ordering::Release);
            drop(self.throttle.lock());
            self.throttle_cv.notify_all();
            if retain {
                // It holds data of a collection that failed to open: keep the segment for
                // the next start (possibly in salvage mode) instead of losing that data.
                wal.retained.push(seg);
                continue;
            }
            drop(wal);
            self.files.remove(&seg);
            seg.delete_when_unused(Vec::new());
        }
        Ok(())
    }

    /// Collects every sealed segment and the current one now.
    pub(crate) fn collect_all(&self) -> Result<()> {
        self.check_open()?;
        self.collect(true)
    }

    /// Copies one sealed segment's committed markers into the journals of their collections.
    /// Returns whether the segment must be kept (it holds data of a corrupt collection).
    fn collect_segment(&self, seg: &Arc<DataFile>, scratch: &mut CollectorScratch) -> Result<bool> {
        let mut retain = false;
        let image = seg
            .image()
            .map_err(|e| files::io_error(e, "reading a WAL segment"))?;
        presize(&mut scratch.found, image.len());
        presize(&mut scratch.keyed, image.len());
        presize(&mut scratch.moved, image.len());
        let found = committed_in_segment(seg.fid, &image, std::mem::take(&mut scratch.found));
        group_by_collection(&image, &found, &mut scratch.keyed);
        let keyed = &scratch.keyed;
        let cat = self.catalog();
        let mut group_start = 0;
        while group_start < keyed.len() {
            let cid = keyed[group_start].0;
            let group_end = group_start
                + keyed[group_start..]
                    .iter()
                    .position(|(c, _)| *c != cid)
                    .unwrap_or(keyed.len() - group_start);
            let group = &keyed[group_start..group_end];
            group_start = group_end;
            let Some(col) = cat.collections.get(&cid) else {
                continue;
            };
            if col.status.is_err() {
                retain = true;
                continue;
            }
            if col.dropped.load(Ordering::Acquire) {
                continue;
            }
            let markers = group.iter().map(|(_, i)| &found[*i as usize]);
            self.collect_group(col, seg.slot, &image, markers, &mut scratch.moved)?;
        }
        scratch.found = found;
        recycle(&mut scratch.found);
        recycle(&mut scratch.keyed);
        recycle(&mut scratch.moved);
        Ok(retain)
    }

    /// Collects one collection's markers of a segment (`markers`, in log order): appends
    /// those above its collected tick to its journal, fdatasyncs it, records the collected
    /// tick, then repoints the index from the WAL to the journal.
    fn collect_group<'a>(
        &self,
        col: &Collection,
        seg_slot: u32,
        image: &[u8],
        markers: impl Iterator<Item = &'a format::Found> + Clone,
        moved: &mut Vec<(usize, Loc, Loc)>,
    ) -> Result<()> {
        // Excludes compaction of this collection until the index points at the copies:
        // a journal sealed here must not be compacted while its markers still look
        // unreferenced (the index would then be repointed into a deleted file).
        let _no_compaction = col.compact_lock.lock();
        let mut cf = col.files.lock();
        let collected = col.collected_tick.load(Ordering::Acquire);
        // Versions below a truncate that is durable in the WAL and older than every snapshot
        // are dead for every reader, and recovery replays the truncate from the WAL until it
        // is collected itself: they are not copied, so that a truncate (or a drop) frees the
        // WAL's space without first writing what it removed into journals.
        let covered = col.index.last_truncate();
        let covered = match covered <= self.durable_tick.load(Ordering::Acquire)
            && covered <= self.horizon()
        {
            true => covered,
            false => 0,
        };
        let skipped = markers
            .clone()
            .filter(|m| m.tick > collected && m.tick < covered)
            .count() as u64;
        if skipped > 0 {
            let _ = col
                .uncollected
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                    Some(u.saturating_sub(skipped))
                });
        }
        let markers = markers.filter(move |m| m.tick > collected && m.tick >= covered);
        if markers.clone().next().is_none() {
            return Ok(());
        }
        let start_state = JournalState::of(&cf);
        moved.clear();
        let copied = self.append_to_journal(col, &mut cf, seg_slot, image, markers, moved)?;
        if let Err(e) = self.sync_journal(&cf) {
            // After a failed fdatasync the written pages may be gone: forget them, so
            // that the retry rewrites the same range instead of appending behind a
            // possible hole (the WAL segment stays until a retry succeeds).
            rewind_journal(&mut cf, &start_state);
            return Err(e);
        }
        self.record_collected(col, &cf, &copied)?;
        drop(cf);
        repoint_moved(col, image, moved);
        let _ = col
            .uncollected
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                Some(u.saturating_sub(copied.count))
            });
        Ok(())
    }

    /// Appends `markers` (byte ranges of `image`) to the collection's journal, sealing full
    /// journals and creating new ones; records in `moved` where each document went.
    fn append_to_journal<'a>(
        &self,
        col: &Collection,
        cf: &mut ColFiles,
        seg_slot: u32,
        image: &[u8],
        markers: impl Iterator<Item = &'a format::Found>,
        moved: &mut Vec<(usize, Loc, Loc)>,
    ) -> Result<Copied> {
        // Bytes and counters are applied to the journal only after they were written, so
        // a failed write leaves the journal exactly as it was (no gap, no lost offset).
        let mut pend = Pending::default();
        let mut copied = Copied::default();
        for m in markers {
            let bytes = &image[m.offset..m.offset + format::padded(m.len)];
            let need = bytes.len() as u64;
            let fits = cf
                .journal
                .as_ref()
                .is_some_and(|j| j.offset + pend.len + need + format::FOOTER_LEN as u64 <= j.size);
            if !fits {
                self.flush_journal(cf, &mut pend, image)?;
                if cf.journal.is_some() {
                    // The MANIFEST rewrite of create_journal lists the sealed file too:
                    // one rewrite (two fsyncs) per journal switch instead of two.
                    self.seal_journal_unlisted(col, cf)?;
                }
                self.create_journal(col, cf, need)?;
            }
            let Some(j) = cf.journal.as_ref() else {
                return Err(Error::new(ErrorCode::Internal));
            };
            let new_loc = Loc {
                slot: j.file.slot,
                offset: (j.offset + pend.len) as u32,
                len: m.len as u32,
            };
            pend.push(m.offset..m.offset + bytes.len());
            pend.count += 1;
            pend.max_tick = pend.max_tick.max(m.tick);
            pend.crcs.extend_from_slice(&m.crc.to_le_bytes());
            copied.max_tick = copied.max_tick.max(m.tick);
            copied.count += 1;
            if m.kind == MarkerType::Truncate {
                copied.truncate_tick = copied.truncate_tick.max(m.tick);
            } else if m.kind == MarkerType::Document {
                // Verified by the segment's scan: decoded without the CRC.
                let marker = format::decode_trusted(&image[m.offset..])
                    .map_err(|_| corrupt("WAL marker".into()))?;
                let body = format::data_body(&marker).map_err(|_| corrupt("WAL marker".into()))?;
                pend.docs += 1;
                pend.doc_bytes += m.len as u64;
                moved.push((
                    PrimaryIndex::shard_of(body.key),
                    Loc {
                        slot: seg_slot,
                        offset: m.offset as u32,
                        len: m.len as u32,
                    },
                    new_loc,
                ));
            } else {
                pend.removes += 1;
            }
        }
        self.flush_journal(cf, &mut pend, image)?;
        Ok(copied)
    }

    /// fdatasync of the collection's journal (if it has one).
    fn sync_journal(&self, cf: &ColFiles) -> Result<()> {
        let Some(j) = &cf.journal else {
            return Ok(());
        };
        files::check(&self.options.io_hooks, FailPoint::JournalSync)
            .and_then(|_| j.file.file.sync_data())
            .map_err(|e| files::io_error(e, "fdatasync of a journal"))
    }

    /// Raises the collected tick (persisted in the MANIFEST) and the durable truncate tick
    /// to what the journal now durably holds.
    fn record_collected(&self, col: &Collection, cf: &ColFiles, copied: &Copied) -> Result<()> {
        let previous = col.collected_tick.load(Ordering::Acquire);
        if copied.max_tick > previous {
            col.collected_tick.store(copied.max_tick, Ordering::Release);
            // Persisted so that a restart does not replay (and collect again) what is
            // already in the journals: WAL segments retained for another collection are
            // replayed at every start.
            if let Err(e) = self.write_manifest(col, cf) {
                // Not recorded: the retry collects these markers again (duplicates are
                // dead copies with the same ticks, harmless).
                col.collected_tick.store(previous, Ordering::Release);
                return Err(e);
            }
        }
        // Durable in the journal and listed: compaction may now drop what it covers.
        if col
            .truncate_durable
            .fetch_max(copied.truncate_tick, Ordering::AcqRel)
            < copied.truncate_tick
        {
            col.dirty.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Writes the pending markers (ranges of `image`) at the journal's end and applies their
    /// counters. A single range is written straight from the image; several (collections
    /// interleaved in the WAL) are gathered first, so that a journal run is still one `pwrite`.
    pub(super) fn flush_journal(
        &self,
        cf: &mut ColFiles,
        pend: &mut Pending,
        image: &[u8],
    ) -> Result<()> {
        if pend.runs.is_empty() {
            return Ok(());
        }
        let Some(j) = cf.journal.as_mut() else {
            return Err(Error::new(ErrorCode::Internal));
        };
        // What `collect_segment` let into `pend` fits in front of the journal's footer.
        assert!(
            j.offset + pend.len + format::FOOTER_LEN as u64 <= j.size,
            "journal {} overflows: {} + {} bytes of {}",
            j.file.fid,
            j.offset,
            pend.len,
            j.size
        );
        let gathered;
        let bytes: &[u8] = match pend.runs.as_slice() {
            [one] => &image[one.clone()],
            runs => {
                let mut buf = Vec::with_capacity(pend.len as usize);
                for run in runs {
                    buf.extend_from_slice(&image[run.clone()]);
                }
                gathered = buf;
                &gathered
            }
        };
        files::write_all_at(
            &j.file.file,
            bytes,
            j.offset,
            &self.options.io_hooks,
            FailPoint::JournalWrite,
        )
        .map_err(|e| files::io_error(e, "writing a journal"))?;
        j.offset += pend.len;
        j.count += pend.count;
        j.max_tick = j.max_tick.max(pend.max_tick);
        j.crc_acc = crc32c::crc32c_append(j.crc_acc, &pend.crcs);
        let fid = j.file.fid;
        let st = cf.stats.entry(fid).or_insert(FileStats {
            docs: 0,
            doc_bytes: 0,
            removes: 0,
            size: 0,
            kind: StatKind::Journal,
            max_tick: 0,
        });
        st.max_tick = st.max_tick.max(pend.max_tick);
        st.docs += pend.docs;
        st.doc_bytes += pend.doc_bytes;
        st.removes += pend.removes;
        *pend = Pending::default();
        Ok(())
    }
}

/// What one collector pass appended to a collection's journal.
#[derive(Default)]
struct Copied {
    /// Markers appended.
    count: u64,
    /// Highest tick among them.
    max_tick: u64,
    /// Highest tick of a truncate marker among them (0: none).
    truncate_tick: u64,
}

impl JournalState {
    /// The counters of the collection's current journal, if it has one.
    fn of(cf: &ColFiles) -> Option<JournalState> {
        cf.journal.as_ref().map(|j| JournalState {
            fid: j.file.fid,
            offset: j.offset,
            count: j.count,
            max_tick: j.max_tick,
            crc_acc: j.crc_acc,
            stats: cf
                .stats
                .get(&j.file.fid)
                .map(|st| (st.docs, st.doc_bytes, st.removes)),
        })
    }
}

/// The committed markers of a sealed segment, in log order (`found`: a buffer to reuse).
/// A segment with damage followed by intact markers got this far only because recovery
/// salvaged it (or it was damaged since): every intact batch is collected, as the replay
/// did, so that nothing the index holds is lost when the segment is unlinked.
fn committed_in_segment(fid: u64, image: &[u8], found: Vec<format::Found>) -> Vec<format::Found> {
    let scan = format::scan_into(image, found);
    if scan.end == ScanEnd::Corrupt {
        tracing::error!("WAL segment {fid} is damaged: collecting every intact batch");
        return committed_of(format::salvage(image), true);
    }
    // The committed markers of a clean scan are its prefix up to the last COMMIT (what
    // `committed_of` would copy into a new vector).
    let mut markers = scan.markers;
    let end = markers
        .iter()
        .rposition(|m| m.flags & FLAG_COMMIT != 0)
        .map_or(0, |i| i + 1);
    markers.truncate(end);
    markers
}

/// Fills `keyed` with `(collection id, index into found)` of every data marker, grouped by
/// collection, log order within each (pairs are unique, so the unstable sort is
/// deterministic); one collection written, the usual case, needs no sort. Every marker in
/// `found` passed its CRC check in the scan: decoded here without it (it was three more CRC
/// passes over the segment).
fn group_by_collection(image: &[u8], found: &[format::Found], keyed: &mut Vec<(u64, u32)>) {
    keyed.clear();
    for (i, p) in found.iter().enumerate() {
        let Ok(marker) = format::decode_trusted(&image[p.offset..]) else {
            continue;
        };
        let Some((cid, _)) = format::marker_owner(&marker) else {
            continue;
        };
        keyed.push((cid, i as u32));
    }
    if keyed.windows(2).any(|w| w[0].0 != w[1].0) {
        keyed.sort_unstable();
    }
}

/// Repoints the moved documents from their WAL location to their journal location. Shard
/// by shard, a bounded run per lock acquisition; each version is found by its WAL location,
/// so the order of the moves does not matter for correctness. Within a shard in log order:
/// the keys are read back from the segment image front to back, and increasing keys stay
/// adjacent in the index.
fn repoint_moved(col: &Collection, image: &[u8], moved: &mut [(usize, Loc, Loc)]) {
    moved.sort_unstable_by_key(|(shard, from, _)| (*shard, from.offset));
    for run in moved.chunk_by(|a, b| a.0 == b.0) {
        for part in run.chunks(REPOINT_RUN) {
            col.index.repoint_in_shard(
                part[0].0,
                part.iter().filter_map(|(_, from, to)| {
                    let marker = format::decode_trusted(&image[from.offset as usize..]).ok()?;
                    Some((format::data_body(&marker).ok()?.key, *from, *to))
                }),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_merges_adjacent_ranges_only() {
        let mut p = Pending::default();
        p.push(64..128);
        p.push(128..200);
        p.push(256..300);
        p.push(300..310);
        assert_eq!(p.runs, vec![64..200, 256..310]);
        assert_eq!(p.len, 136 + 54);
    }
}
