//! The budget of datafile pages mapped into the process (`--storage.mapped-memory-limit`).
//!
//! Datafiles are read through read-only shared maps (`files.rs`). Every page a read touches
//! stays mapped, and so counts in the process's resident set, until the map is dropped: after
//! a full scan of a large collection (an aggregation, a dump) or many random reads, the
//! resident set carries a second copy of the page cache's view of the data, although the
//! kernel could reclaim those pages at any moment. The maintenance thread checks the file-backed
//! part of the resident set at most once per [`CHECK_INTERVAL`]; above the limit it drops the
//! page-table entries of every datafile's map (`DataFile::release_mapped_pages`). The pages stay
//! in the kernel's page cache, as a database reading with `pread` would leave them, and the next
//! read faults them back in (a minor fault, no disk I/O while they are cached).

use std::time::{Duration, Instant};

use super::Inner;

/// Shortest time between two readings of the resident set.
pub(super) const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// When the maintenance thread last looked.
pub(super) struct MappedBudget {
    last_check: Option<Instant>,
}

impl MappedBudget {
    pub(super) fn new() -> MappedBudget {
        MappedBudget { last_check: None }
    }

    /// Called on every round of the maintenance loop: at most once per [`CHECK_INTERVAL`],
    /// releases the datafiles' mapped pages when the file-backed resident set is above the
    /// engine's limit. Returns how many maps were released.
    pub(super) fn tick(&mut self, inner: &Inner) -> usize {
        let Some(limit) = inner.options.mapped_memory_limit else {
            return 0;
        };
        if self
            .last_check
            .is_some_and(|t| t.elapsed() < CHECK_INTERVAL)
        {
            return 0;
        }
        self.last_check = Some(Instant::now());
        match resident_file_bytes() {
            Some(resident) if resident > limit => {
                let released = inner.release_mapped_pages();
                tracing::debug!(
                    "mapped datafile pages: {resident} bytes resident, limit {limit}: released the maps of {released} files"
                );
                released
            }
            _ => 0,
        }
    }
}

impl Inner {
    /// Drops the page-table entries of every datafile's read-only map; returns how many files
    /// had one.
    pub(super) fn release_mapped_pages(&self) -> usize {
        let files: Vec<_> = self.files.read().values().cloned().collect();
        let mut released = 0;
        for file in files {
            if file.is_mapped() {
                file.release_mapped_pages();
                released += 1;
            }
        }
        released
    }
}

/// The file-backed part of this process's resident set in bytes (`/proc/self/statm`, third
/// field: resident shared pages, i.e. file and shared-memory pages). `None` where it cannot be
/// read (not Linux).
pub fn resident_file_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(2)?.parse().ok()?;
    Some(pages.saturating_mul(page_size()))
}

#[allow(unsafe_code)]
fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).ok().filter(|&s| s > 0).unwrap_or(4096)
}
