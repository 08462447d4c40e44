//! File handles, preallocation, atomic metadata writes and hint files.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use quiver_errors::{Error, ErrorCode};

use crate::format::{self, FileHeader, FileKind, MarkerType};
use crate::{FailPoint, IoHooks};

/// An open data file (WAL segment, journal, datafile). Readers hold an `Arc` while they
/// `pread`; a file replaced by compaction or collected is unlinked when the last `Arc` drops,
/// which is how old files outlive the readers that still need them.
pub(crate) struct DataFile {
    /// The file's number on disk (its name and header): a tick, so 64 bits.
    pub fid: u64,
    /// The file's number in this process: the engine's file table and the in-memory index
    /// refer to the file by it ([`crate::index::Loc::slot`]). Never 0 (0 marks a removal).
    pub slot: u32,
    pub file: File,
    path: Mutex<PathBuf>,
    delete_on_drop: AtomicBool,
    extra_paths: Mutex<Vec<PathBuf>>,
    /// Read-only map of the whole file, made on the first read (`None` when mapping failed:
    /// reads then fall back to `pread`).
    map: OnceLock<Option<Arc<memmap2::Mmap>>>,
    /// Whether every marker of this file passed its CRC check, computed once on request
    /// (only ever asked of sealed, immutable files; see [`DataFile::verified_sealed`]).
    verified: OnceLock<bool>,
    /// Whether `posix_fallocate` reserved the file's blocks when it was created: only then
    /// may it be appended to through a writable map ([`DataFile::append_map`]).
    reserved: bool,
}

impl std::fmt::Debug for DataFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DataFile({}, {:?})", self.fid, self.path.lock())
    }
}

impl DataFile {
    /// The file's current path (a sealed journal's is its datafile name).
    pub fn path(&self) -> PathBuf {
        self.path.lock().clone()
    }

    /// Opens the existing file `fid` at `path` as file `slot` of this process.
    pub fn open(fid: u64, slot: u32, path: &Path) -> io::Result<Arc<DataFile>> {
        assert_ne!(slot, 0, "file slot 0 marks a removal");
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Arc::new(DataFile {
            fid,
            slot,
            file,
            path: Mutex::new(path.to_path_buf()),
            delete_on_drop: AtomicBool::new(false),
            extra_paths: Mutex::new(Vec::new()),
            map: OnceLock::new(),
            verified: OnceLock::new(),
            reserved: false,
        }))
    }

    /// Creates a preallocated file of `size` bytes with a file header and makes its
    /// existence durable (file and directory synced); it is file `slot` of this process.
    pub fn create(
        path: &Path,
        header: &FileHeader,
        slot: u32,
        tick: u64,
        hooks: &Option<Arc<dyn IoHooks>>,
        point: FailPoint,
    ) -> io::Result<Arc<DataFile>> {
        Self::create_with(path, header, slot, tick, hooks, point, false)
    }

    /// Like [`DataFile::create`]; `zero_fill` writes zeros over the whole file instead of
    /// only reserving it, so that later fdatasyncs flush data only and never have to convert
    /// unwritten extents (metadata) — used for WAL segments, where fdatasync latency is the
    /// latency of every waitForSync write.
    pub fn create_with(
        path: &Path,
        header: &FileHeader,
        slot: u32,
        tick: u64,
        hooks: &Option<Arc<dyn IoHooks>>,
        point: FailPoint,
        zero_fill: bool,
    ) -> io::Result<Arc<DataFile>> {
        assert_ne!(slot, 0, "file slot 0 marks a removal");
        check(hooks, point)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        let result = (|| {
            let reserved = preallocate(&file, header.size)?;
            if zero_fill {
                let zeros = vec![0u8; (1 << 20).min(header.size as usize)];
                let mut at = 0u64;
                while at < header.size {
                    let n = zeros.len().min((header.size - at) as usize);
                    file.write_all_at(&zeros[..n], at)?;
                    at += n as u64;
                }
            }
            file.write_all_at(&format::file_header(header, tick), 0)?;
            file.sync_all()?;
            sync_dir(path.parent().unwrap_or(Path::new(".")))?;
            Ok(reserved)
        })();
        let reserved = match result {
            Ok(reserved) => reserved,
            Err(e) => {
                drop(file);
                let _ = std::fs::remove_file(path);
                return Err(e);
            }
        };
        Ok(Arc::new(DataFile {
            fid: header.fid,
            slot,
            file,
            path: Mutex::new(path.to_path_buf()),
            delete_on_drop: AtomicBool::new(false),
            extra_paths: Mutex::new(Vec::new()),
            map: OnceLock::new(),
            verified: OnceLock::new(),
            reserved,
        }))
    }

    /// A writable shared map of the whole file for appending WAL batches with a `memcpy`
    /// instead of a `pwrite` (see [`AppendMap`]); `None` when the file's blocks were not
    /// reserved by `posix_fallocate` (a store into a hole of a full disk would raise SIGBUS
    /// instead of returning ENOSPC) or the map cannot be made: the caller then uses `pwrite`.
    /// `prefault` maps the file's pages in now (for the spare segment, prepared by the
    /// maintenance thread) so that committers do not take those page faults.
    pub fn append_map(&self, prefault: bool) -> Option<AppendMap> {
        if !self.reserved {
            return None;
        }
        let size = usize::try_from(self.file.metadata().ok()?.len()).ok()?;
        if size == 0 {
            return None;
        }
        // A raw map: its stores are unsafe at the use (`AppendMap::write_at`), where the
        // reasons they are sound are given. The engine never truncates its files, so no part
        // of the map loses its backing while mapped.
        let map = memmap2::MmapOptions::new()
            .len(size)
            .map_raw(&self.file)
            .ok()?;
        if prefault {
            prefault_pages(&map);
        }
        Some(AppendMap {
            shared: Arc::new(AppendShared {
                map,
                writable_to: AtomicUsize::new(0),
                populating: AtomicBool::new(false),
                populate_write: AtomicBool::new(true),
            }),
        })
    }

    /// Renames the file (idempotent) and syncs the directory.
    pub fn rename(&self, to: &Path) -> io::Result<()> {
        let mut path = self.path.lock();
        if *path != to {
            std::fs::rename(&*path, to)?;
            sync_dir(to.parent().unwrap_or(Path::new(".")))?;
            *path = to.to_path_buf();
        }
        Ok(())
    }

    /// Renames the file (idempotent) without syncing the directory: for a caller that
    /// fsyncs the same directory right after (the MANIFEST rewrite), and whose recovery finds
    /// the file under either name.
    pub fn rename_unsynced(&self, to: &Path) -> io::Result<()> {
        let mut path = self.path.lock();
        if *path != to {
            std::fs::rename(&*path, to)?;
            *path = to.to_path_buf();
        }
        Ok(())
    }

    /// Unlink this file (and `extra` companions such as its hint) once nobody reads it.
    pub fn delete_when_unused(&self, extra: Vec<PathBuf>) {
        self.extra_paths.lock().extend(extra);
        self.delete_on_drop.store(true, Ordering::Release);
    }

    pub fn len(&self) -> u64 {
        self.file.metadata().map(|m| m.len()).unwrap_or(0)
    }

    /// `len` bytes at `offset` as a slice of the file's read-only memory map, kept alive by
    /// the returned `Bytes` (so a file the collector or compactor unlinks meanwhile stays
    /// readable), or `None` when the range is not mapped (the caller then uses `pread`).
    ///
    /// Why a map is sound here: the engine never shrinks its files (they are preallocated to
    /// their final size before anything is written), and a byte range is only read once an
    /// index entry points at it, which happens after it was written and is never rewritten
    /// while referenced. Mapping the whole preallocated file once also covers the WAL and
    /// journal regions written later through `pwrite`: a shared mapping and the page cache
    /// are coherent on Linux. These maps are read-only; the only writable maps are the WAL
    /// segments' [`AppendMap`]s, written by the WAL mutex holder into ranges not yet indexed.
    pub fn mapped_range(&self, offset: u64, len: usize) -> Option<bytes::Bytes> {
        let map = self
            .map
            .get_or_init(|| map_read_only(&self.file))
            .as_ref()?;
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(len)?;
        if end > map.len() {
            return None;
        }
        Some(bytes::Bytes::from_owner(MapOwner(map.clone())).slice(start..end))
    }

    /// The whole file, as a slice of its read-only map when it can be mapped (else read).
    ///
    /// For the collector and the hint-file writer, which walk a whole 32 MiB segment or
    /// journal: reading into a fresh buffer made the kernel zero and then fill 32 MiB of new
    /// anonymous memory per file, which profiled at ~8 % of the server's CPU under a sustained
    /// insert load (docs/benchmarks/http.md); the pages of a just-written file are in the page
    /// cache already and a map only points at them.
    pub fn image(&self) -> io::Result<bytes::Bytes> {
        let len = usize::try_from(self.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file too large"))?;
        if let Some(image) = self.mapped_range(0, len) {
            return Ok(image);
        }
        self.read_all().map(bytes::Bytes::from)
    }

    /// The file's read-only map (made on first use), `None` when it cannot be mapped.
    pub fn map(&self) -> Option<Arc<memmap2::Mmap>> {
        self.map.get_or_init(|| map_read_only(&self.file)).clone()
    }

    /// Whether the file's read-only map has been made (and could hold mapped pages).
    pub fn is_mapped(&self) -> bool {
        matches!(self.map.get(), Some(Some(_)))
    }

    /// Drops this process's page-table entries for the file's read-only map, after a pass
    /// over the whole file (the hint writer's scan of a sealed journal, the startup and the
    /// first storage-order verification of a datafile). The pages stay in the kernel's page
    /// cache; a later read through the map faults them back in. Without this, every page
    /// such a pass touched counted in the process's RSS (as file pages) for the life of the
    /// file: after an import, about as much as all the data written
    /// (docs/benchmarks/storage.md, "Memory per stored document").
    #[allow(unsafe_code)]
    pub fn release_mapped_pages(&self) {
        if let Some(Some(map)) = self.map.get() {
            // SAFETY: the map is a read-only `MAP_SHARED` map of the file (`map_read_only`).
            // On a shared file mapping MADV_DONTNEED only unmaps the pages: every later
            // access, through this map or a `Bytes` slice of it handed out earlier, reads the
            // file's contents again, and those are the same bytes, because the engine never
            // shrinks a file nor rewrites a range an index entry points at.
            let released = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
            if let Err(e) = released {
                tracing::debug!("releasing the mapped pages of file {}: {e}", self.fid);
            }
        }
    }

    /// For a sealed datafile only (never appended to again): whether the whole file is
    /// intact, i.e. it scans cleanly up to its footer and every marker's CRC matches. The
    /// sequential pass runs once per process and file; afterwards readers may skip the
    /// per-marker CRC (`format::decode_trusted`). A file that fails (or cannot be read) stays
    /// unverified for good, so its readers keep checking every marker and a damaged one
    /// still fails loudly.
    pub fn verified_sealed(&self) -> bool {
        *self.verified.get_or_init(|| {
            let scan = match self.map() {
                Some(map) => format::scan(&map),
                None => match self.read_all() {
                    Ok(buf) => format::scan(&buf),
                    Err(_) => return false,
                },
            };
            self.release_mapped_pages();
            scan.end == format::ScanEnd::Sealed && scan.bad_offset.is_none()
        })
    }

    /// Records the outcome of a full verification made elsewhere (startup proves every
    /// sealed datafile once); a later [`DataFile::verified_sealed`] returns it without a
    /// second pass. No effect if the outcome is already known.
    pub fn set_verified_sealed(&self, intact: bool) {
        let _ = self.verified.set(intact);
    }

    pub fn read_all(&self) -> io::Result<Vec<u8>> {
        let len = self.len() as usize;
        let mut buf = vec![0u8; len];
        self.file.read_exact_at(&mut buf, 0)?;
        Ok(buf)
    }
}

/// Maps the whole file read-only; `None` if it is empty or cannot be mapped.
#[allow(unsafe_code)]
fn map_read_only(file: &File) -> Option<Arc<memmap2::Mmap>> {
    let size = usize::try_from(file.metadata().ok()?.len()).ok()?;
    if size == 0 {
        return None;
    }
    // SAFETY: a map is only unsound if the file shrinks or referenced bytes change while
    // mapped; the engine never truncates its files and never rewrites a range an index entry
    // points at (see `DataFile::mapped_range`).
    unsafe { memmap2::MmapOptions::new().len(size).map(file) }
        .ok()
        .map(Arc::new)
}

/// A writable `MAP_SHARED` map of a WAL segment, written only under the WAL mutex.
///
/// Why a map and not `pwrite`: a `pwrite` per commit under the WAL mutex was ~2.5 µs of
/// kernel time (ext4 buffered write path, inode lock, timestamps) per single-document insert,
/// and the other writers spun on the mutex meanwhile; a store into the map is a `memcpy` into
/// the page cache plus, once per 4 KiB page, a minor fault. Durability is the same: the
/// stored bytes are in the page cache (a kill -9 of the process keeps them) and the syncer's
/// `fdatasync` on the file descriptor writes pages dirtied through any shared map (Linux).
/// Only used for files whose blocks `posix_fallocate` reserved, so a store can never hit
/// ENOSPC (which would be SIGBUS through a map).
pub(crate) struct AppendMap {
    shared: Arc<AppendShared>,
}

/// The part of an [`AppendMap`] that a [`PopulateAhead`] shares while it runs outside the WAL
/// mutex.
struct AppendShared {
    /// A raw map: the WAL mutex holder stores through its pointer while a [`PopulateAhead`]
    /// may be advising another range of it; neither needs a reference to the bytes.
    map: memmap2::MmapRaw,
    /// Bytes below this offset were made writable by `MADV_POPULATE_WRITE`.
    writable_to: AtomicUsize,
    /// A [`PopulateAhead`] is out (at most one at a time).
    populating: AtomicBool,
    /// Cleared when the kernel lacks `MADV_POPULATE_WRITE` (before 5.14).
    populate_write: AtomicBool,
}

/// How far ahead of the append position pages are made writable in one go.
const WRITABLE_AHEAD: usize = 128 * 1024;
/// A [`PopulateAhead`] is handed out once fewer bytes than this are left writable.
const POPULATE_WHEN_LEFT: usize = 64 * 1024;

impl AppendMap {
    /// Copies `bytes` to `offset`; an error (never a panic) if the range is outside the map.
    ///
    /// The first store to each read-populated page takes a write-protect fault (ext4's
    /// `page_mkwrite`, ~2.7 us each here), one per 4 KiB, i.e. every ~20 small inserts, each
    /// a round trip into the kernel under the WAL mutex (and a collection's writer lock).
    /// Instead, pages are made writable ahead of the appends, `WRITABLE_AHEAD` bytes at a
    /// time with one `MADV_POPULATE_WRITE`, by the [`PopulateAhead`] this returns when the
    /// writable range runs low: the caller runs it after releasing its locks, so that no
    /// other writer waits for those faults. The zero pages it dirties ahead of the appends
    /// are at most that much extra for the next `fdatasync`, and read back as the zeros they
    /// were.
    ///
    /// An append beyond the writable range (the populate is late, failed or unsupported)
    /// makes its own pages writable first, so that a page the file system refuses (EFAULT:
    /// a store would raise SIGBUS, e.g. out of space for the extent conversion) fails the
    /// append as an I/O error, which the engine handles (the segment is marked broken),
    /// instead of killing the process in the copy.
    #[allow(unsafe_code)]
    pub fn write_at(&mut self, bytes: &[u8], offset: u64) -> io::Result<Option<PopulateAhead>> {
        let shared = &self.shared;
        let len = shared.map.len();
        let start = usize::try_from(offset)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset out of range"))?;
        let end = start
            .checked_add(bytes.len())
            .filter(|end| *end <= len)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "write past the map"))?;
        let populate = shared.populate_write.load(Ordering::Relaxed);
        if populate && end > shared.writable_to.load(Ordering::Acquire) {
            match shared.populate(start & !4095, end) {
                Err(e) if e.raw_os_error() == Some(libc::EFAULT) => return Err(e),
                // Anything else (no memory, interrupted) leaves the pages to the ordinary
                // faults of the copy.
                _ => {}
            }
        }
        // SAFETY: `start..end` lies inside the map (checked above), which lives as long as
        // `shared`; the file is never truncated. Only the WAL mutex holder (the `&mut self`)
        // stores through it, and only into bytes no index entry points at yet, so no reader
        // looks at them concurrently (readers' read-only maps see them once the index
        // publishes them); a concurrent `PopulateAhead` only advises, it never stores.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                shared.map.as_mut_ptr().add(start),
                bytes.len(),
            );
        }
        let writable = shared.writable_to.load(Ordering::Acquire);
        if !populate || writable >= len || writable.saturating_sub(end) >= POPULATE_WHEN_LEFT {
            return Ok(None);
        }
        if shared.populating.swap(true, Ordering::AcqRel) {
            return Ok(None);
        }
        let from = writable.max(end) & !4095;
        Ok(Some(PopulateAhead {
            shared: self.shared.clone(),
            from,
            to: (from + WRITABLE_AHEAD).min(len),
        }))
    }
}

/// Makes the next range of an [`AppendMap`] writable (see [`AppendMap::write_at`]) when it is
/// dropped: hold it until the WAL mutex and the writer locks are released. The map stays
/// alive until it is done even if the segment is sealed meanwhile.
pub(crate) struct PopulateAhead {
    shared: Arc<AppendShared>,
    from: usize,
    to: usize,
}

impl Drop for PopulateAhead {
    fn drop(&mut self) {
        // On EFAULT and the rest, the appends into this range make their own pages writable
        // (and fail on EFAULT), see `write_at`.
        let _ = self.shared.populate(self.from, self.to);
        self.shared.populating.store(false, Ordering::Release);
    }
}

impl AppendShared {
    /// Makes `from..to` writable with one `MADV_POPULATE_WRITE` (`from` on a page boundary)
    /// and records it; turns the advice off for good where the kernel lacks it (EINVAL).
    fn populate(&self, from: usize, to: usize) -> io::Result<()> {
        let result = self
            .map
            .advise_range(memmap2::Advice::PopulateWrite, from, to - from);
        match &result {
            Ok(()) => {
                // The advice covers whole pages: the rest of the last page is writable too.
                let page_end = to.div_ceil(4096).saturating_mul(4096).min(self.map.len());
                self.writable_to.fetch_max(page_end, Ordering::AcqRel);
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                self.populate_write.store(false, Ordering::Relaxed);
            }
            Err(_) => {}
        }
        result
    }
}

/// Maps every page of a fresh segment into the process before it is used.
///
/// Read-populate, not write-populate: `MADV_POPULATE_WRITE` would dirty all 32 MiB at once,
/// so the syncer's first `fdatasync` of the segment would write the whole reserved range
/// (zeros and all, converting every unwritten extent: the cost measured against
/// zero-filled segments), and pages cleaned by writeback are write-protected again anyway.
/// Read-populating puts the (zero) page-cache pages in place without I/O; the first store to
/// each page then takes only a write-protect fault that marks it dirty.
#[allow(unsafe_code)]
fn prefault_pages(map: &memmap2::MmapRaw) {
    if map.advise(memmap2::Advice::PopulateRead).is_ok() {
        return;
    }
    // Kernels before 5.14 lack MADV_POPULATE_READ: touch one byte per page instead.
    let page = 4096;
    let mut sum = 0u8;
    for at in (0..map.len()).step_by(page) {
        // SAFETY: `at` is inside the map; nobody writes the fresh segment yet.
        sum = sum.wrapping_add(unsafe { map.as_ptr().add(at).read_volatile() });
    }
    std::hint::black_box(sum);
}

/// Lets a `Bytes` own a reference to a file map.
struct MapOwner(Arc<memmap2::Mmap>);

impl AsRef<[u8]> for MapOwner {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for DataFile {
    fn drop(&mut self) {
        if self.delete_on_drop.load(Ordering::Acquire) {
            let path = self.path.lock().clone();
            let _ = std::fs::remove_file(&path);
            for p in self.extra_paths.lock().iter() {
                let _ = std::fs::remove_file(p);
            }
            if let Some(dir) = path.parent() {
                let _ = sync_dir(dir);
            }
        }
    }
}

/// Runs the fault-injection hook for `point`, if any.
pub(crate) fn check(hooks: &Option<Arc<dyn IoHooks>>, point: FailPoint) -> io::Result<()> {
    match hooks {
        Some(h) => h.check(point),
        None => Ok(()),
    }
}

/// Reserves `len` bytes on disk so that later writes cannot run out of space (the file is
/// "prefilled": the reserved range reads as zeros). Returns whether the blocks are really
/// reserved (false when the file system has no `fallocate` and the file was only extended).
#[allow(unsafe_code)]
pub(crate) fn preallocate(file: &File, len: u64) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor belongs to `file`, which outlives the call; posix_fallocate
    // touches no memory of ours.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
    match rc {
        0 => Ok(true),
        libc::EOPNOTSUPP | libc::EINVAL => file.set_len(len).map(|_| false),
        code => Err(io::Error::from_raw_os_error(code)),
    }
}

/// `statvfs` of the file system holding `dir`; `None` if it fails.
#[allow(unsafe_code)]
fn statvfs(dir: &Path) -> Option<libc::statvfs> {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `c` is a NUL-terminated path and `st` a writable statvfs the call fills in.
    let rc = unsafe { libc::statvfs(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it initialized `st`.
    Some(unsafe { st.assume_init() })
}

/// The size of the file system holding `dir` in bytes; `None` if unknown.
pub(crate) fn total_space(dir: &Path) -> Option<u64> {
    let st = statvfs(dir)?;
    // The field types differ between targets (u64 on x86-64 Linux, narrower elsewhere).
    #[allow(clippy::unnecessary_cast)]
    Some((st.f_blocks as u64).saturating_mul(st.f_frsize as u64))
}

/// Bytes available to the engine on the file system holding `dir` (`statvfs`; the fault
/// hooks may model a smaller disk); `None` if unknown.
pub(crate) fn free_space(dir: &Path, hooks: &Option<Arc<dyn IoHooks>>) -> Option<u64> {
    if let Some(free) = hooks.as_ref().and_then(|h| h.free_space()) {
        return Some(free);
    }
    let st = statvfs(dir)?;
    // The field types differ between targets (u64 on x86-64 Linux, narrower elsewhere).
    #[allow(clippy::unnecessary_cast)]
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// The size of a new preallocated file (WAL segment, journal): `wanted`, unless half of the
/// `free` space is less; then that half (in whole 4 KiB pages), but never below `minimum`
/// (what the write needs). On a nearly full disk writes keep going in smaller files, and the
/// other half stays for the collector's copy into journals and for compaction.
pub(crate) fn fit_to_free_space(wanted: u64, minimum: u64, free: Option<u64>) -> u64 {
    let Some(free) = free else {
        return wanted.max(minimum);
    };
    let half = free / 2 / 4096 * 4096;
    wanted.min(half).max(minimum)
}

/// Takes an exclusive advisory lock (flock) on the directory's LOCK file; false if another
/// process holds it. Released when the file is closed.
#[allow(unsafe_code)]
pub(crate) fn try_lock_exclusive(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: the descriptor belongs to `file`, which outlives the call; flock touches no
    // memory of ours.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// fsync of a directory, so that creates/renames/unlinks in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes all of `bytes` at `offset` (a positioned write, looping over partial writes), after
/// the fault hooks' check at `point`; a short write the hooks ask for writes a prefix of
/// `bytes` and fails with EIO.
pub(crate) fn write_all_at(
    file: &File,
    bytes: &[u8],
    offset: u64,
    hooks: &Option<Arc<dyn IoHooks>>,
    point: FailPoint,
) -> io::Result<()> {
    check(hooks, point)?;
    if let Some(cut) = hooks.as_ref().and_then(|h| h.short_write(point)) {
        let cut = cut.min(bytes.len());
        file.write_all_at(&bytes[..cut], offset)?;
        return Err(io::Error::other(format!(
            "short write: {cut} of {} bytes (injected)",
            bytes.len()
        )));
    }
    file.write_all_at(bytes, offset)
}

/// Replaces `path` atomically with `bytes` (temp file, fsync, rename, directory fsync).
pub(crate) fn atomic_write(
    path: &Path,
    bytes: &[u8],
    hooks: &Option<Arc<dyn IoHooks>>,
    point: FailPoint,
) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let file = File::create(&tmp)?;
        write_all_at(&file, bytes, 0, hooks, point)?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// Replaces `path` with `bytes` (temp file, rename) without any fsync: for caches whose
/// reader validates them (hint files carry a CRC and their length) and falls back to the
/// source of truth, so a copy lost or torn by a power failure costs time, never data.
pub(crate) fn replace_unsynced(
    path: &Path,
    bytes: &[u8],
    hooks: &Option<Arc<dyn IoHooks>>,
    point: FailPoint,
) -> io::Result<()> {
    check(hooks, point)?;
    let tmp = path.with_extension("tmp");
    {
        let file = File::create(&tmp)?;
        file.write_all_at(bytes, 0)?;
    }
    std::fs::rename(&tmp, path)
}

/// Maps an I/O error to the engine's error (ENOSPC → 1104 "filesystem full").
pub(crate) fn io_error(e: io::Error, what: &str) -> Error {
    if e.raw_os_error() == Some(libc::ENOSPC) {
        Error::with_message(
            ErrorCode::FileSystemFull,
            format!("filesystem full: {what}: {e}"),
        )
    } else {
        Error::with_message(ErrorCode::IoError, format!("IO error: {what}: {e}"))
    }
}

/// One entry of a hint file: where a marker of a sealed datafile lives, so that restart need
/// not read the datafile.
#[cfg(test)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HintEntry {
    pub kind: MarkerType,
    pub key: String,
    pub tick: u64,
    pub rev: u64,
    pub offset: u32,
    pub len: u32,
}

const HINT_MAGIC: u32 = 0x4948_5651; // "QVHI"

/// Encodes a hint file: magic, version, fid, count, entries, CRC32C of all preceding bytes.
#[cfg(test)]
pub(crate) fn encode_hints(fid: u64, entries: &[HintEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_hints_into(
        &mut out,
        fid,
        entries
            .iter()
            .map(|e| (e.kind, e.key.as_str(), e.tick, e.rev, e.offset, e.len)),
    );
    out
}

/// Encodes a hint file into `out` (cleared first; the seal path reuses one buffer) from
/// `(kind, key, tick, rev, offset, len)` entries, without an intermediate entry per marker.
pub(crate) fn encode_hints_into<'a>(
    out: &mut Vec<u8>,
    fid: u64,
    entries: impl Iterator<Item = (MarkerType, &'a str, u64, u64, u32, u32)>,
) {
    out.clear();
    out.extend_from_slice(&HINT_MAGIC.to_le_bytes());
    out.extend_from_slice(&format::FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&fid.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    let mut count = 0u64;
    for (kind, key, tick, rev, offset, len) in entries {
        out.push(kind as u8);
        out.push(key.len() as u8);
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(&tick.to_le_bytes());
        out.extend_from_slice(&rev.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        count += 1;
    }
    out[16..24].copy_from_slice(&count.to_le_bytes());
    let crc = crc32c::crc32c(out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Decodes a hint file; `None` if it is damaged or belongs to another file (the caller then
/// scans the datafile instead).
#[cfg(test)]
pub(crate) fn decode_hints(fid: u64, buf: &[u8]) -> Option<Vec<HintEntry>> {
    let mut out = Vec::new();
    for_each_hint(fid, buf, |kind, key, tick, rev, offset, len| {
        out.push(HintEntry {
            kind,
            key: key.to_string(),
            tick,
            rev,
            offset,
            len,
        })
    })?;
    Some(out)
}

/// Calls `f(kind, key, tick, rev, offset, len)` for every entry of a hint file without
/// allocating per entry (restart of a 10-million-document collection goes through here).
/// Returns `None` — before calling `f` at all — if the file is damaged or describes another
/// datafile; the caller then scans the datafile instead.
pub(crate) fn for_each_hint(
    fid: u64,
    buf: &[u8],
    mut f: impl FnMut(MarkerType, &str, u64, u64, u32, u32),
) -> Option<()> {
    if buf.len() < 28 {
        return None;
    }
    let (body, crc) = buf.split_at(buf.len() - 4);
    if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().ok()?) {
        return None;
    }
    let u32_at = |b: &[u8], at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let u64_at = |b: &[u8], at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
    };
    if u32_at(body, 0)? != HINT_MAGIC || u32_at(body, 4)? != format::FORMAT_VERSION {
        return None;
    }
    if u64_at(body, 8)? != fid {
        return None;
    }
    let count = u64_at(body, 16)? as usize;
    // Validate the structure completely before handing out a single entry.
    let mut at = 24;
    for _ in 0..count {
        MarkerType::from_u8(*body.get(at)?)?;
        let key_len = *body.get(at + 1)? as usize;
        std::str::from_utf8(body.get(at + 2..at + 2 + key_len)?).ok()?;
        at += 2 + key_len + 24;
    }
    if at != body.len() {
        return None;
    }
    let mut at = 24;
    for _ in 0..count {
        let kind = MarkerType::from_u8(body[at])?;
        let key_len = body[at + 1] as usize;
        let key = std::str::from_utf8(&body[at + 2..at + 2 + key_len]).ok()?;
        at += 2 + key_len;
        f(
            kind,
            key,
            u64_at(body, at)?,
            u64_at(body, at + 8)?,
            u32_at(body, at + 16)?,
            u32_at(body, at + 20)?,
        );
        at += 24;
    }
    Some(())
}

/// The header of a new file.
pub(crate) fn header(kind: FileKind, fid: u64, cid: u64, size: u64) -> FileHeader {
    FileHeader {
        version: format::FORMAT_VERSION,
        kind,
        fid,
        cid,
        size,
        created_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn new_files_shrink_to_half_the_free_space_but_hold_what_is_needed() {
        let mib = 1024 * 1024;
        assert_eq!(fit_to_free_space(32 * mib, 4096, None), 32 * mib);
        assert_eq!(
            fit_to_free_space(32 * mib, 4096, Some(1024 * mib)),
            32 * mib
        );
        // 18 MB free: a 9 MB (page-aligned) segment instead of a failed 32 MiB one.
        let free = 18_000_000;
        let got = fit_to_free_space(32 * mib, 4096, Some(free));
        assert!(
            got <= free / 2 && got > free / 2 - 4096 && got % 4096 == 0,
            "{got}"
        );
        assert_eq!(
            fit_to_free_space(32 * mib, 64 * 1024, Some(10_000)),
            64 * 1024
        );
    }

    #[test]
    fn the_file_system_reports_free_space() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_space(dir.path(), &None).is_some_and(|f| f > 0));
    }

    use super::*;

    /// Appends through the map land where `pwrite` would put them, across the windows made
    /// writable ahead, up to the map's last byte, and never past it.
    #[test]
    fn append_map_writes_across_windows_and_stops_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg.wal");
        let size = 3 * WRITABLE_AHEAD as u64 + 1000;
        let hdr = header(FileKind::Wal, 1, 0, size);
        let file = DataFile::create(&path, &hdr, 1, 1, &None, FailPoint::WalCreate).unwrap();
        let Some(mut map) = file.append_map(true) else {
            // The file system could not reserve the blocks: the engine uses pwrite then.
            return;
        };
        let mut expected = file.read_all().unwrap();
        let mut at = 4096usize;
        let mut i = 0u8;
        // Populates are run at once in the first half and held back in the second, where the
        // appends overtake the writable range and make their own pages writable.
        let mut held = Vec::new();
        while at < size as usize {
            let len = (173 + i as usize * 37 % 900).min(size as usize - at);
            let bytes: Vec<u8> = (0..len).map(|j| i.wrapping_add(j as u8) | 1).collect();
            let ahead = map.write_at(&bytes, at as u64).unwrap();
            if at > size as usize / 2 {
                held.extend(ahead);
            }
            expected[at..at + len].copy_from_slice(&bytes);
            at += len;
            i = i.wrapping_add(1);
        }
        // Handed out once in the second half and held, so none after it: one at a time
        // (none at all on kernels without `MADV_POPULATE_WRITE`).
        let supported = map.shared.populate_write.load(Ordering::Relaxed);
        assert_eq!(held.len(), usize::from(supported), "one populate at a time");
        drop(held);
        assert!(map.write_at(b"x", size).is_err());
        assert!(map.write_at(b"xy", size - 1).is_err());
        assert!(map.write_at(b"x", u64::MAX).is_err());
        drop(map);
        assert_eq!(file.read_all().unwrap(), expected);
    }

    #[test]
    fn hints_round_trip_and_detect_damage() {
        let entries = vec![
            HintEntry {
                kind: MarkerType::Document,
                key: "abc".into(),
                tick: 5,
                rev: 9,
                offset: 64,
                len: 50,
            },
            HintEntry {
                kind: MarkerType::Remove,
                key: "x".into(),
                tick: 6,
                rev: 10,
                offset: 120,
                len: 42,
            },
        ];
        let enc = encode_hints(7, &entries);
        assert_eq!(decode_hints(7, &enc), Some(entries));
        assert_eq!(decode_hints(8, &enc), None);
        for i in 0..enc.len() {
            let mut bad = enc.clone();
            bad[i] ^= 0x10;
            assert_eq!(decode_hints(7, &bad), None, "flip at {i}");
        }
        assert_eq!(decode_hints(7, &enc[..enc.len() - 1]), None);
    }
}
