//! A collection's journals and datafiles: the MANIFEST rewrite, journal creation, sealing
//! (footer, fdatasync, rename to datafile, hint file) and hint-file writing.
//!
//! Invariants: a journal's offset stays within its size with room for the footer; a sealed
//! file's footer counts exactly its data markers; the MANIFEST is the only list of a
//! collection's live files.

use crate::files::{self, DataFile};
use crate::format::{self, FileKind, Footer, MarkerType};
use crate::FailPoint;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::json;
use std::sync::atomic::Ordering;

use super::collection::{ColFiles, Collection, FileStats, Journal, StatKind};
use super::disk_reserve::SpaceUse;
use super::scratch::{presize, recycle, SCRATCH_KEEP};
use super::{datafile_path, hint_path, journal_path, next_tick, Inner};

/// Buffers of the hint-file writer, reused across files (see [`CollectorScratch`]).
#[derive(Default)]
pub(super) struct HintScratch {
    pub(super) found: Vec<format::Found>,
    pub(super) encoded: Vec<u8>,
}

impl Inner {
    /// Replaces the collection's MANIFEST atomically: its datafiles in order, its journal,
    /// its collected tick and the engine's tick high-water mark.
    pub(super) fn write_manifest(&self, col: &Collection, cf: &ColFiles) -> Result<()> {
        let doc = json!({
            "version": format::FORMAT_VERSION,
            "datafiles": cf.datafiles.iter().map(|f| f.fid).collect::<Vec<_>>(),
            "journal": cf.journal.as_ref().map(|j| j.file.fid),
            "retired": cf.retired,
            "collectedTick": col.collected_tick.load(Ordering::Acquire),
            "tick": self.tick.load(Ordering::Acquire),
        });
        let bytes = serde_json::to_vec(&doc)
            .map_err(|e| Error::with_message(ErrorCode::Internal, e.to_string()))?;
        files::atomic_write(
            &col.dir.join("MANIFEST"),
            &bytes,
            &self.options.io_hooks,
            FailPoint::MetaWrite,
        )
        .map_err(|e| files::io_error(e, "writing MANIFEST"))
    }

    /// Creates the next journal (the collection's `journalSize`, or larger for a marker of
    /// `need` bytes) and lists it in the MANIFEST.
    pub(super) fn create_journal(
        &self,
        col: &Collection,
        cf: &mut ColFiles,
        need: u64,
    ) -> Result<()> {
        let base = col.journal_size(self.options.journal_size_default);
        let min = (format::padded(format::FILE_HEADER_LEN) + format::FOOTER_LEN) as u64 + need;
        let min = (min.div_ceil(4096) * 4096).max(crate::JOURNAL_SIZE_FLOOR);
        // Smaller on a nearly full disk, like WAL segments: the collector keeps freeing WAL
        // segments instead of failing to create a full-size journal.
        let disk_free = files::free_space(&self.dir, &self.options.io_hooks);
        self.reserve
            .check_room(disk_free, SpaceUse::Collector, min)?;
        let free = self.reserve.usable(disk_free, SpaceUse::Collector);
        let size = files::fit_to_free_space(base, min, free);
        let fid = next_tick(self);
        std::fs::create_dir_all(&col.dir)
            .map_err(|e| files::io_error(e, "creating a collection directory"))?;
        let path = journal_path(&col.dir, fid);
        let header = files::header(FileKind::Journal, fid, col.id, size);
        let file = DataFile::create(
            &path,
            &header,
            self.files.new_slot(),
            fid,
            &self.options.io_hooks,
            FailPoint::JournalCreate,
        )
        .map_err(|e| files::io_error(e, "creating a journal"))?;
        cf.journal = Some(Journal {
            file: file.clone(),
            offset: format::padded(format::FILE_HEADER_LEN) as u64,
            size,
            count: 0,
            max_tick: 0,
            crc_acc: 0,
        });
        if let Err(e) = self.write_manifest(col, cf) {
            cf.journal = None;
            file.delete_when_unused(Vec::new());
            return Err(e);
        }
        cf.stats.insert(
            fid,
            FileStats {
                docs: 0,
                doc_bytes: 0,
                removes: 0,
                size,
                kind: StatKind::Journal,
                max_tick: 0,
            },
        );
        self.files.insert(file);
        Ok(())
    }

    /// Footer, fdatasync, rename to datafile, hint file, MANIFEST. Idempotent on retry.
    pub(super) fn seal_journal(&self, col: &Collection, cf: &mut ColFiles) -> Result<()> {
        let Some(journal) = self.seal_journal_unlisted(col, cf)? else {
            return Ok(());
        };
        let file = cf.datafiles.last().cloned();
        if let Err(e) = self.write_manifest(col, cf) {
            // Undo in memory so that a retry repeats the whole (idempotent) seal.
            cf.datafiles.pop();
            if let (Some(file), Some(st)) = (&file, cf.stats.get_mut(&journal.file.fid)) {
                st.kind = StatKind::Journal;
                st.size = file.len();
            }
            cf.journal = Some(journal);
            return Err(e);
        }
        Ok(())
    }

    /// The seal without the MANIFEST rewrite: the caller rewrites it next. Until then the
    /// MANIFEST still names the file as the journal; a crash in between is the case recovery
    /// already handles ("a sealed journal whose MANIFEST edit was lost": it finds the file
    /// under either name, sees the footer and lists it as a datafile). Returns the journal
    /// state it replaced, for an undo.
    ///
    /// Ordering argument for the fsyncs left out: the footer and data are fdatasynced before
    /// anything can name the file a datafile; the rename needs no directory fsync of its own
    /// because the MANIFEST rewrite that follows fsyncs the same directory, and recovery
    /// opens a listed fid under either name; the hint file is a validated cache (CRC, length)
    /// that recovery replaces by a scan when a power loss tore or lost it.
    pub(super) fn seal_journal_unlisted(
        &self,
        col: &Collection,
        cf: &mut ColFiles,
    ) -> Result<Option<Journal>> {
        let Some(j) = cf.journal.as_ref() else {
            return Ok(None);
        };
        let footer = format::footer(
            &Footer {
                count: j.count,
                max_tick: j.max_tick,
                crc_of_crcs: j.crc_acc,
            },
            j.max_tick,
        );
        let file = j.file.clone();
        let offset = j.offset;
        assert!(
            offset % 8 == 0 && offset >= format::padded(format::FILE_HEADER_LEN) as u64,
            "journal {} sealed at offset {offset}, not behind a marker",
            file.fid
        );
        let io = |e| files::io_error(e, "sealing a journal");
        files::check(&self.options.io_hooks, FailPoint::Seal).map_err(io)?;
        std::os::unix::fs::FileExt::write_all_at(&file.file, &footer, offset).map_err(io)?;
        file.file.sync_data().map_err(io)?;
        file.rename_unsynced(&datafile_path(&col.dir, file.fid))
            .map_err(io)?;
        self.write_hint(col, &file)?;
        let journal = cf.journal.take();
        cf.datafiles.push(file.clone());
        // A new datafile may be small enough to merge, or hold versions that died while it
        // was a journal.
        col.dirty.store(true, Ordering::Release);
        if let Some(st) = cf.stats.get_mut(&file.fid) {
            st.kind = StatKind::Datafile;
            st.size = file.len();
        }
        Ok(journal)
    }

    /// Writes the hint file of a sealed datafile from a scan of its markers (not fsynced:
    /// a CRC-checked cache).
    pub(super) fn write_hint(&self, col: &Collection, file: &DataFile) -> Result<()> {
        let image = file
            .image()
            .map_err(|e| files::io_error(e, "reading a datafile for its hint file"))?;
        let mut scratch = self.hint_scratch.lock();
        let HintScratch { found, encoded } = &mut *scratch;
        presize(found, image.len());
        // ~36 bytes per entry, one entry per ~150 bytes of markers.
        encoded.reserve((image.len() / 4).min(SCRATCH_KEEP * 40));
        let scan = format::scan_into(&image, std::mem::take(found));
        files::encode_hints_into(encoded, file.fid, hint_entries(&image, &scan.markers));
        // The scan touched every page of the file: they stay in the page cache, but not in
        // this process's RSS.
        file.release_mapped_pages();
        *found = scan.markers;
        recycle(found);
        let path = hint_path(&col.dir, file.fid);
        let written =
            files::replace_unsynced(&path, encoded, &self.options.io_hooks, FailPoint::Seal)
                .map_err(|e| files::io_error(e, "writing a hint file"));
        // Bytes, not entries: ~40 per entry.
        if encoded.capacity() > SCRATCH_KEEP * 40 {
            *encoded = Vec::new();
        }
        written
    }
}

/// Whether a sealed file's footer matches its markers (count and CRC of their CRCs).
pub(super) fn footer_ok(scan: &format::Scan) -> bool {
    let Some(footer) = scan.footer else {
        return false;
    };
    let crcs: Vec<u8> = scan
        .markers
        .iter()
        .flat_map(|m| m.crc.to_le_bytes())
        .collect();
    footer.count == scan.markers.len() as u64 && footer.crc_of_crcs == crc32c::crc32c(&crcs)
}

/// A marker's index entry: `(kind, key, tick, rev, offset, len)`.
type MarkerEntry<'a> = (MarkerType, &'a str, u64, u64, u32, u32);

/// The index entry of the decoded marker `m`: a document or removal, or a truncate, whose
/// key is empty (it applies to the whole collection); `None` for other markers.
pub(super) fn marker_entry<'a>(
    m: &format::Found,
    marker: &format::Marker<'a>,
) -> Option<MarkerEntry<'a>> {
    let (key, rev) = match format::truncate_body(marker) {
        Ok(t) => ("", t.rev),
        Err(_) => {
            let body = format::data_body(marker).ok()?;
            (body.key, body.rev)
        }
    };
    Some((m.kind, key, m.tick, rev, m.offset as u32, m.len as u32))
}

/// The hint entries of a file's markers, as [`files::encode_hints_into`] takes them.
/// `markers` come from a scan of `image`, which verified their CRCs: decoded again here
/// without that check.
fn hint_entries<'a>(
    image: &'a [u8],
    markers: &'a [format::Found],
) -> impl Iterator<Item = MarkerEntry<'a>> + 'a {
    markers.iter().filter_map(move |m| {
        let marker = format::decode_trusted(&image[m.offset..]).ok()?;
        marker_entry(m, &marker)
    })
}
