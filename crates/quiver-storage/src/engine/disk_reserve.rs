//! The disk reserve: a preallocated file (`RESERVE` in the data directory) that holds space
//! back for the work that frees space, so that a full disk never leaves the user without a way
//! out (CockroachDB's "emergency ballast" is the same idea).
//!
//! * While the reserve is **held**, nothing changes: every write sees the file system's free
//!   space as usual.
//! * When a step that frees space fails with ENOSPC (a DDL change such as dropping a
//!   collection or database, a truncate marker), the reserve is **released** (the file
//!   unlinked) and the step retried once. From then on new WAL segments for ordinary writes
//!   leave the reserve's size free: those writes fail with 1104 rather than eat the space the
//!   way out needs. The collector's new journals leave a quarter of it, so that a collector
//!   pass running beside a drop cannot take the last bytes the catalog needs; drops and
//!   truncates may use all of it.
//! * Startup releases it before recovery when the disk has less free space than the reserve,
//!   so recovery and the first collector pass can always run.
//! * The maintenance thread takes the reserve again once the free space is at least three times
//!   its size (the reserve, as much again for writes, and a margin), so a full disk that was
//!   cleaned up returns to normal without a restart.
//!
//! Invariant: `held` is true only while the file exists with its full size reserved.

use crate::files;
use crate::IoHooks;
use quiver_errors::{Error, ErrorCode, Result};
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// The file's name in the data directory.
pub(crate) const RESERVE_FILE: &str = "RESERVE";

/// The largest automatic reserve: enough for a catalog change, a truncate marker and a
/// collector pass into journals sized to half the free space.
const AUTO_MAX: u64 = 64 * 1024 * 1024;
/// The smallest reserve worth keeping.
const AUTO_MIN: u64 = 1024 * 1024;

/// Free space, as a multiple of the reserve, above which a released reserve is taken again.
const REARM_FACTOR: u64 = 3;

/// Which kind of work asks for space, and so how much of a released reserve it may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SpaceUse {
    /// Document writes (WAL segments for their batches, spare segments): none of it.
    Writes,
    /// The collector's journals: all but a quarter of it.
    Collector,
    /// Work that frees space: catalog changes (drops), truncate markers: all of it.
    Freeing,
}

pub(crate) struct DiskReserve {
    path: PathBuf,
    /// The reserve's size in bytes; 0 = no reserve.
    size: u64,
    held: AtomicBool,
    /// Times the reserve was released (monitoring).
    releases: AtomicU64,
}

impl DiskReserve {
    /// The reserve of the engine in `dir`: `configured` bytes, or (None) automatic: a 32nd of
    /// the file system, between 1 MiB and the smaller of 64 MiB and two WAL segments. Takes it
    /// when there is room for it three times over; otherwise starts released (a nearly full
    /// disk at startup), and removes a leftover file so that recovery has its space.
    pub(crate) fn open(
        dir: &Path,
        configured: Option<u64>,
        wal_logfile_size: u64,
        hooks: &Option<Arc<dyn IoHooks>>,
    ) -> DiskReserve {
        let size = configured.unwrap_or_else(|| {
            let total = files::total_space(dir).unwrap_or(0);
            (total / 32)
                .min(AUTO_MAX)
                .min(wal_logfile_size.saturating_mul(2))
                .max(AUTO_MIN)
        });
        let reserve = DiskReserve {
            path: dir.join(RESERVE_FILE),
            size,
            held: AtomicBool::new(false),
            releases: AtomicU64::new(0),
        };
        if size == 0 {
            let _ = std::fs::remove_file(&reserve.path);
            return reserve;
        }
        let existing = std::fs::metadata(&reserve.path).map(|m| m.len()).ok();
        let free = files::free_space(dir, hooks);
        match existing {
            Some(len) if len == size && free.is_none_or(|f| f >= size) => {
                reserve.held.store(true, Ordering::Release);
            }
            Some(_) => {
                // A different size was configured, or the disk is full: give the space back
                // first (recovery may need it) and take the reserve again when there is room.
                let _ = std::fs::remove_file(&reserve.path);
                if free.is_some_and(|f| f < size) {
                    tracing::warn!(
                        "the disk holding {} has {} bytes free: the {}-byte disk reserve is \
                         released for recovery; free space by dropping or truncating collections",
                        dir.display(),
                        free.unwrap_or(0),
                        size
                    );
                    reserve.releases.fetch_add(1, Ordering::Relaxed);
                }
                reserve.take(dir, hooks);
            }
            None => reserve.take(dir, hooks),
        }
        reserve
    }

    /// The reserve's size in bytes (0 = none).
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Whether the reserve file is in place.
    pub(crate) fn is_held(&self) -> bool {
        self.held.load(Ordering::Acquire)
    }

    /// How often the reserve was released since the engine opened (startup included).
    pub(crate) fn releases(&self) -> u64 {
        self.releases.load(Ordering::Relaxed)
    }

    /// The free space `usage` may use of `free`: all of it while the reserve is held; once it
    /// is released, ordinary writes leave its size alone and the collector a quarter of it.
    pub(crate) fn usable(&self, free: Option<u64>, usage: SpaceUse) -> Option<u64> {
        let free = free?;
        if self.is_held() {
            return Some(free);
        }
        let kept = match usage {
            SpaceUse::Writes => self.size,
            SpaceUse::Collector => self.size / 4,
            SpaceUse::Freeing => 0,
        };
        Some(free.saturating_sub(kept))
    }

    /// The error for `usage` when a new file of `minimum` bytes does not fit in what it may use
    /// of `free` while the reserve is released (checked before the file is created, so the
    /// space stays for the work that frees it).
    pub(crate) fn check_room(
        &self,
        free: Option<u64>,
        usage: SpaceUse,
        minimum: u64,
    ) -> Result<()> {
        if self.is_held() || usage == SpaceUse::Freeing {
            return Ok(());
        }
        match self.usable(free, usage) {
            Some(usable) if usable < minimum => Err(Error::with_message(
                ErrorCode::FileSystemFull,
                format!(
                    "filesystem full: {usable} bytes left, held back for drops and truncates \
                     (disk reserve {} bytes); free space by dropping or truncating collections",
                    self.size
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Releases the reserve (unlinks the file) so that the step that failed with ENOSPC can
    /// retry with its space. Returns whether there was anything to release.
    pub(crate) fn release(&self, what: &str) -> bool {
        if !self.held.swap(false, Ordering::AcqRel) {
            return false;
        }
        let _ = std::fs::remove_file(&self.path);
        self.releases.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            "the disk is full while {what}: released the {}-byte disk reserve ({}); ordinary \
             writes stay refused (error 1104) until space is freed, drops and truncates go on",
            self.size,
            self.path.display()
        );
        true
    }

    /// Takes the reserve again after a release once the disk has room for it three times
    /// over (maintenance thread).
    pub(crate) fn rearm(&self, dir: &Path, hooks: &Option<Arc<dyn IoHooks>>) {
        if self.size == 0 || self.is_held() {
            return;
        }
        let free = files::free_space(dir, hooks);
        if free.is_some_and(|f| f >= self.size.saturating_mul(REARM_FACTOR)) {
            self.take(dir, hooks);
            if self.is_held() {
                tracing::info!(
                    "disk space is back: the {}-byte disk reserve is taken again",
                    self.size
                );
            }
        }
    }

    /// Creates the file with its blocks reserved, if the disk has room for it three times over.
    fn take(&self, dir: &Path, hooks: &Option<Arc<dyn IoHooks>>) {
        let free = files::free_space(dir, hooks);
        if free.is_some_and(|f| f < self.size.saturating_mul(REARM_FACTOR)) {
            return;
        }
        match create_reserved(&self.path, self.size) {
            Ok(()) => self.held.store(true, Ordering::Release),
            Err(e) => {
                let _ = std::fs::remove_file(&self.path);
                tracing::warn!(
                    "cannot create the disk reserve {}: {e}",
                    self.path.display()
                );
            }
        }
    }

    /// Runs `step`; if it fails because the disk is full and the reserve can be released, runs
    /// it once more with the reserve's space.
    pub(crate) fn retry_when_full<T>(
        &self,
        what: &str,
        mut step: impl FnMut() -> Result<T>,
    ) -> Result<T> {
        match step() {
            Err(e) if e.code == ErrorCode::FileSystemFull && self.release(what) => step(),
            other => other,
        }
    }
}

/// Writes the reserve file: `size` bytes whose blocks are really allocated (fallocate, or
/// zeros where the file system has no fallocate), durable before it counts.
fn create_reserved(path: &Path, size: u64) -> std::io::Result<()> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    if !files::preallocate(&file, size)? {
        // Only extended, not reserved: write the zeros so that the blocks exist.
        use std::os::unix::fs::FileExt;
        let zeros = vec![0u8; (1 << 20).min(size as usize)];
        let mut at = 0u64;
        while at < size {
            let n = zeros.len().min((size - at) as usize);
            file.write_all_at(&zeros[..n], at)?;
            at += n as u64;
        }
    }
    file.sync_all()?;
    files::sync_dir(path.parent().unwrap_or(Path::new(".")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FailPoint;

    struct Disk(AtomicU64);
    impl IoHooks for Disk {
        fn check(&self, _point: FailPoint) -> std::io::Result<()> {
            Ok(())
        }
        fn free_space(&self) -> Option<u64> {
            Some(self.0.load(Ordering::Relaxed))
        }
    }

    fn hooks(free: u64) -> (Arc<Disk>, Option<Arc<dyn IoHooks>>) {
        let disk = Arc::new(Disk(AtomicU64::new(free)));
        let dyn_hooks: Arc<dyn IoHooks> = disk.clone();
        (disk, Some(dyn_hooks))
    }

    #[test]
    fn taken_when_there_is_room_and_kept_across_opens() {
        let dir = tempfile::tempdir().unwrap();
        let (_, h) = hooks(1 << 30);
        let r = DiskReserve::open(dir.path(), Some(1 << 20), 1 << 20, &h);
        assert!(r.is_held());
        assert_eq!(
            std::fs::metadata(dir.path().join(RESERVE_FILE))
                .unwrap()
                .len(),
            1 << 20
        );
        assert_eq!(r.usable(Some(5 << 20), SpaceUse::Writes), Some(5 << 20));
        let again = DiskReserve::open(dir.path(), Some(1 << 20), 1 << 20, &h);
        assert!(again.is_held());
        assert_eq!(again.releases(), 0);
    }

    #[test]
    fn released_writes_leave_its_size_and_maintenance_may_use_it() {
        let dir = tempfile::tempdir().unwrap();
        let (disk, h) = hooks(1 << 30);
        let r = DiskReserve::open(dir.path(), Some(1 << 20), 1 << 20, &h);
        let full = Error::new(ErrorCode::FileSystemFull);
        let mut tries = 0;
        let got = r.retry_when_full("testing", || {
            tries += 1;
            if tries == 1 {
                Err(full.clone())
            } else {
                Ok(tries)
            }
        });
        assert_eq!(got.unwrap(), 2);
        assert!(!r.is_held());
        assert!(!dir.path().join(RESERVE_FILE).exists());
        assert_eq!(r.releases(), 1);
        assert_eq!(r.usable(Some(3 << 20), SpaceUse::Writes), Some(2 << 20));
        assert_eq!(r.usable(Some(1 << 19), SpaceUse::Writes), Some(0));
        assert_eq!(r.usable(Some(1 << 19), SpaceUse::Freeing), Some(1 << 19));
        assert_eq!(r.usable(Some(1 << 19), SpaceUse::Collector), Some(1 << 18));
        assert!(r
            .check_room(Some(3 << 20), SpaceUse::Writes, 1 << 20)
            .is_ok());
        let refused = r
            .check_room(Some(3 << 19), SpaceUse::Writes, 1 << 20)
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::FileSystemFull);
        assert!(r.check_room(Some(4096), SpaceUse::Freeing, 1 << 20).is_ok());
        // A second failure has nothing left to release: the error stands.
        let err = r
            .retry_when_full("testing", || Err::<(), _>(full.clone()))
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::FileSystemFull);
        // Not taken back while space is short, taken back once there is room three times over.
        disk.0.store(2 << 20, Ordering::Relaxed);
        r.rearm(dir.path(), &h);
        assert!(!r.is_held());
        disk.0.store(3 << 20, Ordering::Relaxed);
        r.rearm(dir.path(), &h);
        assert!(r.is_held());
        assert!(dir.path().join(RESERVE_FILE).exists());
    }

    #[test]
    fn a_full_disk_at_startup_gives_the_reserve_back_before_recovery() {
        let dir = tempfile::tempdir().unwrap();
        let (disk, h) = hooks(1 << 30);
        drop(DiskReserve::open(dir.path(), Some(1 << 20), 1 << 20, &h));
        disk.0.store(4096, Ordering::Relaxed);
        let r = DiskReserve::open(dir.path(), Some(1 << 20), 1 << 20, &h);
        assert!(!r.is_held());
        assert!(!dir.path().join(RESERVE_FILE).exists());
        assert_eq!(r.releases(), 1);
    }

    #[test]
    fn automatic_size_is_bounded_and_zero_disables() {
        let dir = tempfile::tempdir().unwrap();
        let r = DiskReserve::open(dir.path(), None, 32 << 20, &None);
        assert!((AUTO_MIN..=AUTO_MAX).contains(&r.size()), "{}", r.size());
        let none = DiskReserve::open(dir.path(), Some(0), 32 << 20, &None);
        assert!(!none.is_held());
        assert!(!dir.path().join(RESERVE_FILE).exists());
    }
}
