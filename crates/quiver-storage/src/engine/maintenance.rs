//! The engine's background threads: the syncer (see `syncer.rs`) and the maintenance thread,
//! which prepares spare WAL segments, runs the collector, keeps the mapped datafile pages
//! within their budget, and runs the index GC and the compactor.
//!
//! Invariant: the loops hold only a `Weak` of the engine between rounds and stop when it is
//! dropped or shut down; every wait is bounded.

use quiver_errors::{Error, ErrorCode, Result};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::mapped_budget::MappedBudget;
use super::syncer::syncer_loop;
use super::{Background, Inner};

pub(super) fn start_threads(inner: &Arc<Inner>) -> Result<()> {
    let spawn_error = |e: std::io::Error| {
        Error::with_message(
            ErrorCode::ResourceLimit,
            format!("cannot start a storage engine thread: {e}"),
        )
    };
    let mut threads = inner.threads.lock();
    let weak = Arc::downgrade(inner);
    let bg = inner.bg.clone();
    let interval = inner.options.sync_interval.max(Duration::from_millis(1));
    threads.push(
        std::thread::Builder::new()
            .name("quiver-wal-sync".into())
            .spawn(move || syncer_loop(weak, bg, interval))
            .map_err(spawn_error)?,
    );
    if inner.options.background_collector || inner.options.compaction.background {
        let weak = Arc::downgrade(inner);
        let bg = inner.bg.clone();
        threads.push(
            std::thread::Builder::new()
                .name("quiver-collector".into())
                .spawn(move || maintenance_loop(weak, bg))
                .map_err(spawn_error)?,
        );
    }
    Ok(())
}

/// How often background work may log that the disk is full: once when it starts, then at
/// most once a minute while it lasts (the loop retries every 200 ms).
const FULL_DISK_LOG_INTERVAL: Duration = Duration::from_secs(60);

/// Logs background errors; a full disk (1104) once per [`FULL_DISK_LOG_INTERVAL`].
struct BackgroundLog {
    last_full: Option<Instant>,
}

impl BackgroundLog {
    fn warn(&mut self, what: &str, e: &Error) {
        if e.code == ErrorCode::FileSystemFull {
            if self
                .last_full
                .is_some_and(|t| t.elapsed() < FULL_DISK_LOG_INTERVAL)
            {
                tracing::debug!("{what}: {e}");
                return;
            }
            self.last_full = Some(Instant::now());
        }
        tracing::warn!("{what}: {e}");
    }

    /// Background work succeeded: a later full disk is news again.
    fn progressed(&mut self) {
        self.last_full = None;
    }
}

fn maintenance_loop(weak: Weak<Inner>, bg: Arc<Background>) {
    let mut last_compaction = Instant::now();
    let mut log = BackgroundLog { last_full: None };
    let mut mapped = MappedBudget::new();
    loop {
        {
            let mut woken = bg.wake.lock();
            if !*woken {
                bg.cv.wait_for(&mut woken, Duration::from_millis(200));
            }
            *woken = false;
        }
        if bg.stop.load(Ordering::Acquire) {
            return;
        }
        let Some(inner) = weak.upgrade() else {
            return;
        };
        if inner.closed.load(Ordering::Acquire) {
            return;
        }
        inner.reserve.rearm(&inner.dir, &inner.options.io_hooks);
        if let Err(e) = inner.prepare_spare_segment() {
            log.warn("preparing the next WAL segment", &e);
        }
        let include_active = bg.collect_active.swap(false, Ordering::AcqRel);
        if inner.options.background_collector
            && (include_active || !inner.wal.lock().sealed.is_empty())
        {
            match inner.collect(include_active) {
                Ok(()) => log.progressed(),
                Err(e) => log.warn("collector", &e),
            }
        }
        mapped.tick(&inner);
        // Index GC (old versions, tombstones) whenever enough garbage piled up, whether or
        // not the collection is compacted.
        for col in inner.catalog().collections.values() {
            let garbage = col.garbage.load(Ordering::Relaxed);
            if garbage > 1000 && garbage > col.latest_count() / 8 {
                col.garbage.store(0, Ordering::Relaxed);
                col.index.gc(inner.horizon());
            }
        }
        let copt = &inner.options.compaction;
        if copt.background && last_compaction.elapsed() >= copt.db_sleep_time {
            last_compaction = Instant::now();
            let cat = inner.catalog();
            for col in cat.collections.values() {
                if bg.stop.load(Ordering::Acquire) {
                    return;
                }
                if col.usable().is_err() || !col.options.read().do_compact {
                    continue;
                }
                if !col.dirty.swap(false, Ordering::AcqRel) {
                    continue;
                }
                let recent = col
                    .compact_lock
                    .lock()
                    .is_some_and(|t| t.elapsed() < copt.min_interval);
                if recent {
                    col.dirty.store(true, Ordering::Release);
                    continue;
                }
                if let Err(e) = inner.compact_collection(col, false) {
                    log.warn(&format!("compactor: collection {}", col.id), &e);
                }
            }
        }
    }
}

impl Inner {
    /// After a drop or truncate: wakes the maintenance thread to collect the WAL, the current
    /// segment included, so that segments holding only dropped or truncated versions are
    /// deleted now rather than when the segment fills up.
    pub(super) fn request_wal_release(&self) {
        self.bg.collect_active.store(true, Ordering::Release);
        *self.bg.wake.lock() = true;
        self.bg.cv.notify_all();
    }
}
