//! The engine's background threads: the syncer (see `syncer.rs`) and the maintenance thread,
//! which prepares spare WAL segments, runs the collector, the index GC and the compactor.
//!
//! Invariant: the loops hold only a `Weak` of the engine between rounds and stop when it is
//! dropped or shut down; every wait is bounded.

use quiver_errors::{Error, ErrorCode, Result};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

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

fn maintenance_loop(weak: Weak<Inner>, bg: Arc<Background>) {
    let mut last_compaction = Instant::now();
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
        if let Err(e) = inner.prepare_spare_segment() {
            tracing::warn!("preparing the next WAL segment: {}", e);
        }
        if inner.options.background_collector && !inner.wal.lock().sealed.is_empty() {
            if let Err(e) = inner.collect(false) {
                tracing::warn!("collector: {}", e);
            }
        }
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
                    tracing::warn!("compactor: collection {}: {}", col.id, e);
                }
            }
        }
    }
}
