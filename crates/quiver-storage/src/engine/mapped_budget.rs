//! The budget of datafile pages mapped into the process (`--storage.mapped-memory-limit`).
//!
//! Datafiles are read through read-only shared maps (`files.rs`). Every page a read touches
//! stays mapped, and so counts in the process's resident set, until the map is dropped: after
//! a full scan of a large collection (an aggregation, a dump) or many random reads, the
//! resident set counts the page cache's pages of the data, although the kernel could reclaim
//! them at any moment. The maintenance thread checks the file-backed part of the resident set
//! at most once per [`CHECK_INTERVAL`] (longer after releases that freed little); above the
//! limit it drops the page-table entries of every datafile's map
//! (`DataFile::release_mapped_pages`). The pages stay in the kernel's page cache, as a
//! database reading with `pread` would leave them, and the next read faults them back in (a
//! minor fault, no disk I/O while they are cached).
//!
//! A once-a-second look is too slow for a pass over a whole collection, which maps every page
//! it reads within a fraction of a second, and for many connections reading documents at
//! random, each read mapping the kernel's 64 KiB fault-around (100,000 reads of 25
//! connections mapped 2.2 GB within about a second at full Pokec scale): reads keep within
//! the limit themselves. A storage-order scan (`ordered_scan.rs`) releases each file's map
//! once it has moved past the file; every other read through a map (point reads, and the
//! key-order and key-range scans, which read the files at random) counts in the engine's
//! [`MappedReads`], which looks at the resident set every [`READ_STEP`] of mapped reads of
//! all threads together and releases every datafile's map above the limit. Under the limit
//! nothing is released, so repeated reads of data that fits keep their pages mapped.
//!
//! A release by the reads means the data they touch does not fit the limit; mapping it again
//! would only fill the limit and release again. On a kernel that maps large page-cache folios
//! whole (6.18: a fault on a 32 MiB datafile the collector wrote mapped 64 KiB, 256 KiB or a
//! whole 2 MiB folio, `MADV_RANDOM` changed nothing), that cycle cost about 4.5 µs per
//! 2 KiB read against 1.1 µs for a `pread` (and 0.35 µs for a read through a map that stays
//! mapped). So after such a release the reads copy their bytes with `pread` for a while
//! ([`MappedReads::through_map`]): the pages then stay in the kernel's page cache only,
//! outside the process's resident set, as a database reading with `pread` (PostgreSQL's
//! shared buffers aside) keeps them. The while is [`DIRECT_WINDOW`], doubled (up to
//! [`DIRECT_WINDOW_MAX`]) whenever the reads through maps that follow it fill the limit again
//! within one window, and back to the shortest when they take longer: data that fits keeps
//! being read through its maps.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::Inner;

/// Shortest time between two readings of the resident set.
pub(super) const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Longest time between two readings: the interval doubles up to this after a release that
/// freed little (the file-backed pages above the limit are then not the datafiles', e.g. a
/// view's index files), so such a process does not release and re-fault the datafiles every
/// second.
pub(super) const CHECK_INTERVAL_MAX: Duration = Duration::from_secs(64);

/// When the maintenance thread last looked, and when it looks next.
pub(super) struct MappedBudget {
    last_check: Option<Instant>,
    interval: Duration,
}

impl MappedBudget {
    pub(super) fn new() -> MappedBudget {
        MappedBudget {
            last_check: None,
            interval: CHECK_INTERVAL,
        }
    }

    /// Called on every round of the maintenance loop: at most once per interval, releases
    /// the datafiles' mapped pages when the file-backed resident set is above the engine's
    /// limit. Returns how many maps were released.
    pub(super) fn tick(&mut self, inner: &Inner) -> usize {
        let Some(limit) = inner.options.mapped_memory_limit else {
            return 0;
        };
        if self.last_check.is_some_and(|t| t.elapsed() < self.interval) {
            return 0;
        }
        self.last_check = Some(Instant::now());
        let Some(resident) = resident_file_bytes().filter(|&r| r > limit) else {
            self.interval = CHECK_INTERVAL;
            return 0;
        };
        let released = inner.release_mapped_pages();
        let after = resident_file_bytes().unwrap_or(resident);
        self.interval = next_interval(self.interval, resident, after, limit);
        tracing::debug!(
            "mapped datafile pages: {resident} bytes resident, limit {limit}: released the maps of {released} files, {after} bytes resident after; next look in {:?}",
            self.interval
        );
        released
    }
}

/// The wait before the next look after a release that took the resident file pages from
/// `before` to `after`: the shortest when it freed at least an eighth of the limit, else
/// twice the last wait (at most [`CHECK_INTERVAL_MAX`]).
fn next_interval(last: Duration, before: u64, after: u64, limit: u64) -> Duration {
    if before.saturating_sub(after) >= limit / 8 {
        CHECK_INTERVAL
    } else {
        (last * 2).min(CHECK_INTERVAL_MAX)
    }
}

/// Most bytes the engine's reads may map between two looks at the resident set (and at most
/// a quarter of the limit). Each read counts as at least [`FAULT_AROUND`].
pub(super) const READ_STEP: u64 = 32 << 20;

/// What one read through a map maps at least on a typical kernel: the faulting page and its
/// cached neighbours (`fault_around_bytes`, 64 KiB by default).
const FAULT_AROUND: u64 = 64 << 10;

/// Reads between two looks at the resident set however little they counted: recent kernels
/// map a whole large page-cache folio on a fault (up to megabytes of a file written in large
/// writes, as the collector writes datafiles), so a read can map far more than
/// [`FAULT_AROUND`]. A look reads `/proc/self/statm`, a few microseconds.
pub(super) const READS_PER_LOOK: u64 = 64;

/// Whether the file-backed resident set is above `limit` (never without a limit).
pub(super) fn over_limit(limit: Option<u64>) -> bool {
    limit.is_some_and(|limit| resident_file_bytes().is_some_and(|r| r > limit))
}

/// The engine's reads through datafile maps (point reads, key-order and key-range passes):
/// counts what they may have mapped and, every [`READ_STEP`] of it (a quarter of a smaller
/// limit) or every [`READS_PER_LOOK`] reads, releases every datafile's map when the
/// file-backed resident set is above the limit (see the module notes). One counter for all
/// threads, so 25 connections reading documents at random are bounded like one pass.
pub(super) struct MappedReads {
    limit: Option<u64>,
    step: u64,
    /// Bytes counted since the engine opened; a look is due whenever a read carries it past
    /// a multiple of `step`.
    counted: AtomicU64,
    /// Reads counted since the engine opened.
    reads: AtomicU64,
    /// Set while one reader releases the maps, so that the others do not release them again.
    releasing: AtomicBool,
    /// The origin of the millisecond clock of `direct_until`.
    origin: Instant,
    /// Until when (milliseconds since `origin`) reads use `pread` instead of the maps; 0:
    /// never set.
    direct_until: AtomicU64,
    /// The length of the last `pread` window in milliseconds.
    direct_window: AtomicU64,
}

/// How long reads use `pread` after the first release by reads (see the module notes).
pub(super) const DIRECT_WINDOW: Duration = Duration::from_secs(1);

/// The longest `pread` window: the window doubles up to this while the reads through maps
/// after each window fill the limit again within one window.
pub(super) const DIRECT_WINDOW_MAX: Duration = Duration::from_secs(64);

impl MappedReads {
    pub(super) fn new(limit: Option<u64>) -> MappedReads {
        MappedReads {
            limit,
            step: limit.map_or(READ_STEP, |l| (l / 4).clamp(FAULT_AROUND, READ_STEP)),
            counted: AtomicU64::new(0),
            reads: AtomicU64::new(0),
            releasing: AtomicBool::new(false),
            origin: Instant::now(),
            direct_until: AtomicU64::new(0),
            direct_window: AtomicU64::new(0),
        }
    }

    /// Whether a read should go through the file's map (and then be counted with
    /// [`MappedReads::read`]) rather than copy its bytes with `pread`: always, except for a
    /// while after the reads themselves released the maps (see the module notes).
    pub(super) fn through_map(&self) -> bool {
        let until = self.direct_until.load(Ordering::Relaxed);
        until == 0 || self.now_ms() >= until
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Starts a `pread` window after a release by the reads: twice the last one when the
    /// reads through maps since it ended filled the limit within one window, else the
    /// shortest. Nothing while a window is open (a release by reads that were already past
    /// [`MappedReads::through_map`] when it opened).
    fn start_direct_window(&self) {
        let now = self.now_ms();
        let until = self.direct_until.load(Ordering::Relaxed);
        if now < until {
            return;
        }
        let last = self.direct_window.load(Ordering::Relaxed);
        let since = now - until;
        let window = next_direct_window(last, since);
        self.direct_window.store(window, Ordering::Relaxed);
        self.direct_until
            .store(now.saturating_add(window).max(1), Ordering::Relaxed);
        tracing::debug!(
            "mapped datafile pages above the limit after reads: reads use pread for {window} ms"
        );
    }

    /// Counts a read of `len` bytes through a map; returns whether it was the one that
    /// released the maps.
    pub(super) fn read(&self, inner: &Inner, len: u64) -> bool {
        if self.limit.is_none() {
            return false;
        }
        let add = len.max(FAULT_AROUND);
        let before = self.counted.fetch_add(add, Ordering::Relaxed);
        let reads = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
        if before / self.step == before.wrapping_add(add) / self.step && reads % READS_PER_LOOK != 0
        {
            return false;
        }
        if !over_limit(self.limit) || self.releasing.swap(true, Ordering::Acquire) {
            return false;
        }
        inner.release_mapped_pages();
        self.start_direct_window();
        self.releasing.store(false, Ordering::Release);
        true
    }
}

/// The next `pread` window in milliseconds, after one of `last` (0: none yet) whose end was
/// `since` milliseconds ago: doubled when the reads through maps filled the limit again
/// within a window's length, else the shortest.
fn next_direct_window(last: u64, since: u64) -> u64 {
    let shortest = DIRECT_WINDOW.as_millis() as u64;
    let longest = DIRECT_WINDOW_MAX.as_millis() as u64;
    if last > 0 && since < last {
        (last * 2).min(longest)
    } else {
        shortest
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_grows_while_releases_free_little_and_resets_when_one_does() {
        let mib = 1u64 << 20;
        let limit = 800 * mib;
        let mut wait = CHECK_INTERVAL;
        for expected in [2, 4, 8, 16, 32, 64, 64] {
            wait = next_interval(wait, 900 * mib, 890 * mib, limit);
            assert_eq!(wait, Duration::from_secs(expected));
        }
        assert_eq!(
            next_interval(wait, 900 * mib, 700 * mib, limit),
            CHECK_INTERVAL
        );
        assert_eq!(
            next_interval(wait, 900 * mib, 1000 * mib, limit),
            CHECK_INTERVAL_MAX
        );
    }

    #[test]
    fn the_pread_window_doubles_while_mapped_reads_refill_the_limit_quickly() {
        assert_eq!(next_direct_window(0, u64::MAX), 1000);
        let mut window = next_direct_window(0, 5);
        for expected in [2000, 4000, 8000, 16000, 32000, 64000, 64000] {
            window = next_direct_window(window, window - 1);
            assert_eq!(window, expected);
        }
        assert_eq!(next_direct_window(window, window), 1000);
    }

    #[test]
    fn reads_use_pread_only_during_a_window() {
        let reads = MappedReads::new(Some(64 << 20));
        assert!(reads.through_map());
        reads.start_direct_window();
        assert!(!reads.through_map());
        assert_eq!(reads.direct_window.load(Ordering::Relaxed), 1000);
        // A second release while the window is open does not lengthen it.
        reads.start_direct_window();
        assert_eq!(reads.direct_window.load(Ordering::Relaxed), 1000);
        // The window over (moved into the past), maps are used again.
        reads.direct_until.store(1, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(2));
        assert!(reads.through_map());
    }
}
