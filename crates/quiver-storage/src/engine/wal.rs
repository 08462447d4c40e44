//! The write-ahead log's segments: the current segment and its append map, the prepared
//! spare, sealing and rotation, and the append of an encoded batch under the WAL mutex.
//!
//! Invariants (asserted in [`Inner::append_locked`]): a batch's markers get consecutive
//! ticks above every earlier tick; they fit the segment (`offset + len <= size`, file offsets
//! stay below 4 GiB); the written tick only grows. A broken segment (failed write) is never
//! appended to again.

use super::counters::EngineCounters;
use super::disk_reserve::SpaceUse;
use crate::files::{self, AppendMap, DataFile};
use crate::format::{self, FileKind, MarkerType, FLAG_COMMIT, FLAG_SYNC};
use crate::{FailPoint, JOURNAL_SIZE_FLOOR};
use quiver_errors::{Error, ErrorCode, Result};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{next_tick, wal_dir, Inner, MAX_FILE_SIZE};

/// One encoded marker of a batch: its start and (unpadded) length in the batch buffer, and
/// its kind.
pub(super) type MarkerSpan = (usize, usize, MarkerType);

/// The WAL's state, guarded by the WAL mutex.
pub(super) struct WalState {
    pub(super) segment: Option<Arc<DataFile>>,
    /// Writable map of `segment` that commits append through (`None`: `pwrite`, for a file
    /// whose blocks could not be reserved or mapped; see [`AppendMap`]).
    pub(super) map: Option<AppendMap>,
    pub(super) offset: u64,
    pub(super) size: u64,
    pub(super) broken: bool,
    /// Sealed segments not yet collected, oldest first.
    pub(super) sealed: Vec<Arc<DataFile>>,
    /// Segments with writes not yet fdatasynced (besides the current one).
    pub(super) unsynced: Vec<Arc<DataFile>>,
    /// Collected segments kept because a corrupt collection has data in them.
    pub(super) retained: Vec<Arc<DataFile>>,
    /// A preallocated empty segment, its size and its prefaulted append map, for the next
    /// rotation.
    pub(super) spare: Option<(Arc<DataFile>, u64, Option<AppendMap>)>,
    pub(super) written_tick: u64,
    /// The segment holding the batch of `written_tick` (`0`: none since startup).
    pub(super) written_fid: u64,
}

/// What [`Inner::append_locked`] wrote, and where.
pub(super) struct Appended {
    /// The segment's file slot (what index locations name).
    pub(super) slot: u32,
    /// Offset of the first marker in the segment.
    pub(super) base: u64,
    pub(super) commit_tick: u64,
    /// The map of a segment sealed to make room, for the caller to drop after releasing the
    /// WAL mutex.
    pub(super) retired: Option<AppendMap>,
    pub(super) populate_ahead: Option<files::PopulateAhead>,
}

impl Inner {
    /// Seals the current segment (no footer needed: collection reads committed batches).
    /// Returns its append map, for the caller to drop *after* releasing the WAL mutex
    /// (unmapping 32 MiB of populated pages is not free).
    #[must_use]
    pub(super) fn seal_segment(&self, wal: &mut WalState) -> Option<AppendMap> {
        let map = wal.map.take();
        if let Some(seg) = wal.segment.take() {
            EngineCounters::bump(&self.counters.wal_segments_sealed, 1);
            wal.sealed.push(seg.clone());
            self.pending_segments
                .store(wal.sealed.len(), Ordering::Release);
            wal.unsynced.push(seg);
            *self.bg.wake.lock() = true;
            self.bg.cv.notify_all();
        }
        wal.offset = 0;
        wal.size = 0;
        wal.broken = false;
        map
    }

    /// Starts the next segment: the spare if `need` bytes fit it, else one created inline.
    fn new_segment(&self, wal: &mut WalState, need: u64, usage: SpaceUse) -> Result<()> {
        let header_len = format::padded(format::FILE_HEADER_LEN) as u64;
        EngineCounters::bump(&self.counters.wal_segments_started, 1);
        if let Some((spare, size, map)) = wal.spare.take() {
            if header_len + need <= size {
                wal.segment = Some(spare);
                wal.map = map;
                wal.offset = header_len;
                wal.size = size;
                wal.broken = false;
                return Ok(());
            }
            // Too small for this batch: keep it for the next rotation.
            wal.spare = Some((spare, size, map));
        }
        let size = self.segment_size(need, usage)?;
        // Inline (under the WAL mutex), like the spares prepared in the background: only
        // reserve the space (see prepare_spare_segment).
        let seg = self.create_segment(size, false)?;
        // Not prefaulted: that would hold the WAL mutex for the whole segment's page faults;
        // the committers take them one page at a time instead.
        wal.map = seg.append_map(false);
        wal.segment = Some(seg);
        wal.offset = header_len;
        wal.size = size;
        wal.broken = false;
        Ok(())
    }

    /// The size of a new segment for a batch of `need` bytes: `--wal.logfile-size`, or less
    /// on a nearly full disk (`files::fit_to_free_space`), never less than the batch needs.
    /// Ordinary writes get error 1104 instead when only a released disk reserve is left
    /// (`disk_reserve.rs`).
    fn segment_size(&self, need: u64, usage: SpaceUse) -> Result<u64> {
        let minimum = (format::FILE_HEADER_LEN as u64 + need + 4096).max(JOURNAL_SIZE_FLOOR);
        // Locations are 32-bit offsets: no file may reach 4 GiB (batches are capped at 1 GiB).
        let wanted = self.options.wal_logfile_size.min(MAX_FILE_SIZE);
        let disk_free = files::free_space(&wal_dir(&self.dir), &self.options.io_hooks);
        self.reserve.check_room(disk_free, usage, minimum)?;
        let free = self.reserve.usable(disk_free, usage);
        let size = files::fit_to_free_space(wanted, minimum, free);
        assert!(size >= minimum && size <= MAX_FILE_SIZE.max(minimum));
        Ok(size)
    }

    /// Creates (and preallocates) a WAL segment and enters it in the file table.
    fn create_segment(&self, size: u64, zero_fill: bool) -> Result<Arc<DataFile>> {
        let fid = next_tick(self);
        let path = wal_dir(&self.dir).join(format!("{fid:020}.wal"));
        let header = files::header(FileKind::Wal, fid, 0, size);
        let seg = DataFile::create_with(
            &path,
            &header,
            self.files.new_slot(),
            fid,
            &self.options.io_hooks,
            FailPoint::WalCreate,
            zero_fill,
        )
        .map_err(|e| files::io_error(e, "creating WAL segment"))?;
        self.files.insert(seg.clone());
        Ok(seg)
    }

    /// Prepares the next WAL segment ahead of time (maintenance thread), so that a rotation
    /// under the WAL mutex does not wait for fallocate and fsyncs.
    pub(super) fn prepare_spare_segment(&self) -> Result<()> {
        {
            let wal = self.wal.lock();
            let half_full = wal.segment.is_some() && wal.offset * 2 >= wal.size;
            if wal.spare.is_some() || !half_full {
                return Ok(());
            }
        }
        let Ok(size) = self.segment_size(0, SpaceUse::Writes) else {
            // Only the released disk reserve is left: no spare until space is freed.
            return Ok(());
        };
        // Reserved (fallocate), not zero-filled: measured side by side (docs/benchmarks/http.md),
        // appends into unwritten extents cost the committer about half the kernel time of
        // appends into zero-written blocks (whose pages, once evicted under memory pressure,
        // must even be read back from disk inside the WAL mutex), the 32 MiB of zeros cost the
        // maintenance thread ~4 % of an insert load, and waitForSync writers were not slower.
        let seg = self.create_segment(size, false)?;
        let map = seg.append_map(true);
        let mut wal = self.wal.lock();
        if wal.spare.is_none() {
            wal.spare = Some((seg, size, map));
        } else {
            drop(map);
            drop(wal);
            self.files.remove(&seg);
            seg.delete_when_unused(Vec::new());
        }
        Ok(())
    }

    /// Makes room for `need` bytes in the current WAL segment: seals it and starts the next
    /// one (the spare if it fits) when they do not fit or the segment is broken. Returns the
    /// sealed segment's map, for the caller to drop after releasing the WAL mutex.
    pub(super) fn make_room(
        &self,
        wal: &mut WalState,
        need: u64,
        usage: SpaceUse,
    ) -> Result<Option<AppendMap>> {
        if !(wal.broken || wal.segment.is_none() || wal.offset + need > wal.size) {
            return Ok(None);
        }
        let retired = match wal.segment.is_some() {
            true => self.seal_segment(wal),
            false => None,
        };
        self.new_segment(wal, need, usage)?;
        assert!(
            wal.offset + need <= wal.size,
            "a new segment holds the batch"
        );
        // Let the maintenance thread prepare the next segment right away.
        *self.bg.wake.lock() = true;
        self.bg.cv.notify_all();
        Ok(retired)
    }

    /// Takes `n` consecutive ticks for a batch (under the WAL mutex) and returns the first.
    /// Every tick comes from the one counter, so a batch's ticks lie above every tick
    /// written or published before.
    fn take_ticks(&self, wal: &WalState, n: u64) -> u64 {
        assert!(n > 0, "a batch has at least one marker");
        let first = self.tick.fetch_add(n, Ordering::AcqRel) + 1;
        assert!(
            first > wal.written_tick && first > self.visible.load(Ordering::Relaxed),
            "tick {first} handed out below the written tick {}",
            wal.written_tick
        );
        first
    }

    /// Appends a batch's encoded markers (`spans` of `buf`: start, length, kind) to the WAL,
    /// rotating to a new segment if they do not fit: takes their ticks, fills in ticks, flags
    /// and CRCs, and writes them. Under the WAL mutex.
    pub(super) fn append_locked(
        &self,
        wal: &mut WalState,
        buf: &mut [u8],
        spans: &[MarkerSpan],
        sync: bool,
        usage: SpaceUse,
    ) -> Result<Appended> {
        let need = buf.len() as u64;
        assert!(
            spans.first().is_some_and(|s| s.0 == 0) && need % 8 == 0,
            "a batch is its padded markers from the first byte of its buffer"
        );
        let retired = self.make_room(wal, need, usage)?;
        let n = spans.len() as u64;
        let durable = self.durable_tick.load(Ordering::Acquire);
        let first = self.take_ticks(wal, n);
        let commit_tick = first + n - 1;
        for (i, (start, len, kind)) in spans.iter().enumerate() {
            let flags = match (i + 1 == spans.len(), sync) {
                (false, _) => 0,
                (true, false) => FLAG_COMMIT,
                (true, true) => FLAG_COMMIT | FLAG_SYNC,
            };
            format::finish_wal_marker(
                &mut buf[*start..*start + *len],
                *kind,
                flags,
                first + i as u64,
                durable,
            );
        }
        let seg = wal
            .segment
            .clone()
            .ok_or_else(|| Error::new(ErrorCode::Internal))?;
        let base = wal.offset;
        // Locations are 32-bit offsets into 8-aligned markers of a segment that holds them.
        assert!(
            base % 8 == 0 && base + need <= wal.size && wal.size <= u64::from(u32::MAX),
            "batch of {need} bytes at offset {base} does not fit segment {} of {} bytes",
            seg.fid,
            wal.size
        );
        let write =
            files::check(&self.options.io_hooks, FailPoint::WalWrite).and_then(|_| {
                match wal.map.as_mut() {
                    Some(map) => map.write_at(buf, base),
                    None => std::os::unix::fs::FileExt::write_all_at(&seg.file, buf, base)
                        .map(|()| None),
                }
            });
        let populate_ahead = match write {
            Ok(ahead) => ahead,
            Err(e) => {
                // The segment may hold a partial batch without its commit flag; never append
                // after it (recovery ignores uncommitted markers at a segment's end).
                wal.broken = true;
                return Err(files::io_error(e, "writing the write-ahead log"));
            }
        };
        wal.offset += need;
        EngineCounters::bump(&self.counters.wal_bytes, need);
        assert!(
            commit_tick > wal.written_tick,
            "the written tick only grows"
        );
        wal.written_tick = commit_tick;
        wal.written_fid = seg.fid;
        Ok(Appended {
            slot: seg.slot,
            base,
            commit_tick,
            retired,
            populate_ahead,
        })
    }
}
