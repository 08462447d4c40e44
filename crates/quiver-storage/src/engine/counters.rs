//! The engine's activity counters for monitoring: WAL bytes and segments, group-commit
//! rounds and their waiters, fdatasync durations, collector and compactor work. Every counter
//! is a relaxed atomic bumped by the one thread (or under the one mutex) that does the work,
//! so counting costs no lock and no shared-line contention on the document write path.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::{EngineStats, FSYNC_SECONDS_BUCKETS};

/// Durations of one group-commit round's fdatasync calls, in the buckets of
/// [`FSYNC_SECONDS_BUCKETS`] (the last slot is the `+Inf` bucket).
pub(crate) struct FsyncTimes {
    buckets: [AtomicU64; FSYNC_SECONDS_BUCKETS.len() + 1],
    count: AtomicU64,
    nanos: AtomicU64,
}

impl FsyncTimes {
    fn new() -> FsyncTimes {
        FsyncTimes {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            nanos: AtomicU64::new(0),
        }
    }

    pub(crate) fn record(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        let slot = FSYNC_SECONDS_BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(FSYNC_SECONDS_BUCKETS.len());
        self.buckets[slot].fetch_add(1, Ordering::Relaxed);
        self.nanos.fetch_add(
            u64::try_from(took.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        self.count.fetch_add(1, Ordering::Relaxed);
    }
}

/// The counters of one open engine.
pub(crate) struct EngineCounters {
    /// Bytes of markers appended to the WAL (bumped under the WAL mutex).
    pub(crate) wal_bytes: AtomicU64,
    /// WAL segments started (rotations), the first one included.
    pub(crate) wal_segments_started: AtomicU64,
    /// WAL segments sealed and handed to the collector.
    pub(crate) wal_segments_sealed: AtomicU64,
    /// Sealed WAL segments the collector copied into journals and removed.
    pub(crate) wal_segments_collected: AtomicU64,
    /// Writers that waited for the WAL write-throttle.
    pub(crate) wal_throttled: AtomicU64,
    /// Group-commit rounds that ran fdatasync.
    pub(crate) group_commit_rounds: AtomicU64,
    /// Writers that waited for a group commit (`waitForSync`).
    pub(crate) group_commit_waits: AtomicU64,
    /// Durations of the rounds' fdatasync calls.
    pub(crate) fsync_times: FsyncTimes,
    /// Compaction passes over a collection that rewrote at least one datafile.
    pub(crate) compaction_runs: AtomicU64,
    /// Datafiles compacted away.
    pub(crate) compaction_files: AtomicU64,
    /// Bytes of dead markers the compactor dropped.
    pub(crate) compaction_bytes_reclaimed: AtomicU64,
    /// Markers whose checksum failed when read at run time (`damage_report.rs`).
    pub(crate) checksum_failures: AtomicU64,
}

impl EngineCounters {
    pub(crate) fn new() -> EngineCounters {
        EngineCounters {
            wal_bytes: AtomicU64::new(0),
            wal_segments_started: AtomicU64::new(0),
            wal_segments_sealed: AtomicU64::new(0),
            wal_segments_collected: AtomicU64::new(0),
            wal_throttled: AtomicU64::new(0),
            group_commit_rounds: AtomicU64::new(0),
            group_commit_waits: AtomicU64::new(0),
            fsync_times: FsyncTimes::new(),
            compaction_runs: AtomicU64::new(0),
            compaction_files: AtomicU64::new(0),
            compaction_bytes_reclaimed: AtomicU64::new(0),
            checksum_failures: AtomicU64::new(0),
        }
    }

    pub(crate) fn bump(counter: &AtomicU64, by: u64) {
        counter.fetch_add(by, Ordering::Relaxed);
    }

    /// Copies the counters into `stats`.
    pub(crate) fn fill(&self, stats: &mut EngineStats) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        stats.wal_bytes = get(&self.wal_bytes);
        stats.wal_segments_started = get(&self.wal_segments_started);
        stats.wal_segments_sealed = get(&self.wal_segments_sealed);
        stats.wal_segments_collected = get(&self.wal_segments_collected);
        stats.wal_throttled = get(&self.wal_throttled);
        stats.group_commit_rounds = get(&self.group_commit_rounds);
        stats.group_commit_waits = get(&self.group_commit_waits);
        stats.fsync_buckets = self.fsync_times.buckets.iter().map(get).collect();
        stats.fsync_count = get(&self.fsync_times.count);
        stats.fsync_seconds = get(&self.fsync_times.nanos) as f64 / 1e9;
        stats.compaction_runs = get(&self.compaction_runs);
        stats.compaction_files = get(&self.compaction_files);
        stats.compaction_bytes_reclaimed = get(&self.compaction_bytes_reclaimed);
        stats.checksum_failures = get(&self.checksum_failures);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsync_times_fall_into_their_buckets() {
        let c = EngineCounters::new();
        c.fsync_times.record(Duration::from_micros(10));
        c.fsync_times.record(Duration::from_secs(100));
        let mut stats = EngineStats::default();
        c.fill(&mut stats);
        assert_eq!(stats.fsync_count, 2);
        assert_eq!(stats.fsync_buckets.len(), FSYNC_SECONDS_BUCKETS.len() + 1);
        assert_eq!(stats.fsync_buckets[0], 1);
        assert_eq!(*stats.fsync_buckets.last().unwrap(), 1);
        assert!((stats.fsync_seconds - 100.00001).abs() < 1e-6);
    }
}
