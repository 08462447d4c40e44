//! Group commit: one syncer thread owns `fdatasync` of the WAL. Sync waiters raise the
//! requested tick and wait for the durable tick (condvar for blocking waiters, a watch
//! channel for async ones); the syncer fdatasyncs every segment with unsynced writes and
//! publishes the durable tick. A failed fdatasync poisons the engine (no retry: the kernel
//! may have dropped the pages).
//!
//! Invariants: the durable tick only grows and never passes the WAL's written tick (what an
//! fdatasync covered).

use crate::files::{self, DataFile};
use crate::FailPoint;
use quiver_errors::{Error, ErrorCode, Result};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use super::counters::EngineCounters;
use super::durable_record;
use super::{Background, Inner};

#[derive(Default)]
pub(super) struct SyncState {
    pub(super) durable: u64,
    pub(super) requested: u64,
    /// Sync writers currently waiting (blocking or async).
    pub(super) waiters: usize,
    /// How many waiters the previous fdatasync released; the syncer waits (briefly) for that
    /// many to come back before the next fdatasync, so one fdatasync covers the whole group.
    pub(super) last_group: usize,
}

impl Inner {
    /// Blocks until `tick` is on stable storage.
    pub(crate) fn wait_durable(&self, tick: u64) -> Result<()> {
        let mut s = self.sync.lock();
        if s.durable >= tick {
            return Ok(());
        }
        s.waiters += 1;
        EngineCounters::bump(&self.counters.group_commit_waits, 1);
        let result = loop {
            if let Some(e) = self.poisoned.read().as_ref() {
                break Err(e.clone());
            }
            if s.durable >= tick {
                break Ok(());
            }
            if self.bg.stop.load(Ordering::Acquire) && self.closed.load(Ordering::Acquire) {
                break Err(Error::new(ErrorCode::Shutdown));
            }
            if s.requested < tick {
                s.requested = tick;
            }
            self.bg_wake();
            self.sync_cv.wait_for(&mut s, Duration::from_millis(50));
        };
        s.waiters -= 1;
        result
    }

    /// Asks the syncer to make `tick` durable (without waiting).
    pub(crate) fn request_sync(&self, tick: u64) {
        let mut s = self.sync.lock();
        if s.requested < tick {
            s.requested = tick;
        }
        drop(s);
        self.syncer_cv.notify_one();
    }

    /// Like [`Inner::wait_durable`], without blocking an async worker thread.
    pub(crate) async fn wait_durable_async(&self, tick: u64) -> Result<()> {
        let mut rx = self.durable_tx.subscribe();
        struct Waiting<'a>(&'a Inner);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.sync.lock().waiters -= 1;
            }
        }
        self.sync.lock().waiters += 1;
        EngineCounters::bump(&self.counters.group_commit_waits, 1);
        let _waiting = Waiting(self);
        self.request_sync(tick);
        let _ = rx.wait_for(|(d, failed)| *d >= tick || *failed).await;
        if let Some(e) = self.poisoned.read().as_ref() {
            return Err(e.clone());
        }
        if self.sync.lock().durable >= tick {
            Ok(())
        } else {
            Err(Error::new(ErrorCode::Shutdown))
        }
    }

    /// Wakes the syncer.
    fn bg_wake(&self) {
        self.syncer_cv.notify_one();
    }

    /// One round of the syncer: fdatasync every segment with unsynced writes.
    pub(super) fn sync_round(&self) -> Result<bool> {
        let (target, target_fid, segs) = {
            let mut wal = self.wal.lock();
            let mut segs: Vec<Arc<DataFile>> = std::mem::take(&mut wal.unsynced);
            if let Some(s) = &wal.segment {
                segs.push(s.clone());
            }
            (wal.written_tick, wal.written_fid, segs)
        };
        assert!(
            target <= self.tick.load(Ordering::Relaxed),
            "written tick {target} above every tick handed out"
        );
        if target <= self.sync.lock().durable {
            return Ok(false);
        }
        let started = Instant::now();
        for seg in &segs {
            let r = files::check(&self.options.io_hooks, FailPoint::WalSync)
                .and_then(|_| seg.file.sync_data());
            if let Err(e) = r {
                let err = files::io_error(e, "fdatasync of the write-ahead log");
                // After a failed fdatasync the kernel may have dropped the dirty pages: never
                // retry and pretend success (fsyncgate); stop accepting writes instead.
                self.poison(err.clone());
                return Err(err);
            }
            self.wal_syncs.fetch_add(1, Ordering::Relaxed);
        }
        EngineCounters::bump(&self.counters.group_commit_rounds, 1);
        self.counters.fsync_times.record(started.elapsed());
        let mut s = self.sync.lock();
        if target > s.durable {
            s.durable = target;
            self.durable_tick.store(target, Ordering::Release);
        }
        drop(s);
        self.sync_cv.notify_all();
        self.durable_tx.send_modify(|v| v.0 = v.0.max(target));
        if target_fid != 0 {
            self.write_durable_record(target, target_fid);
        }
        Ok(true)
    }

    /// Records (after the fdatasync that made it so) that `tick`, whose batch lies in
    /// segment `fid`, is durable: startup checks the WAL against it (`durable_record.rs`).
    /// Only the syncer calls this, so records are written in tick order. A failure only
    /// weakens that check: warned once, never fails a commit.
    fn write_durable_record(&self, tick: u64, fid: u64) {
        assert!(
            tick <= self.durable_tick.load(Ordering::Acquire),
            "a durable-tick record above the durable tick"
        );
        let mut guard = self.durable_record.lock();
        let file = guard.get_or_insert_with(|| {
            durable_record::open_writer(&super::wal_dir(&self.dir))
                .map_err(|e| tracing::warn!("cannot open the WAL's durable-tick record: {e}"))
                .ok()
        });
        let record = durable_record::DurableRecord { tick, segment: fid };
        if let Some(f) = file.as_ref() {
            if let Err(e) = durable_record::write(f, record) {
                // Given up for this process (one warning): the check only gets weaker.
                tracing::warn!("cannot write the WAL's durable-tick record: {e}");
                *file = None;
            }
        }
    }

    /// Makes everything written so far durable.
    pub(crate) fn sync_all(&self) -> Result<()> {
        self.check_open()?;
        let tick = self.wal.lock().written_tick;
        self.wait_durable(tick)
    }
}

pub(super) fn syncer_loop(weak: Weak<Inner>, bg: Arc<Background>, interval: Duration) {
    let mut last = Instant::now();
    loop {
        if bg.stop.load(Ordering::Acquire) {
            return;
        }
        let Some(inner) = weak.upgrade() else {
            return;
        };
        {
            let mut s = inner.sync.lock();
            let due = last + interval;
            if s.requested <= s.durable {
                let now = Instant::now();
                if now < due {
                    let wait = (due - now).min(Duration::from_millis(100));
                    inner.syncer_cv.wait_for(&mut s, wait);
                }
            }
            let requested = s.requested > s.durable;
            if requested {
                // Group commit: let the writers released by the previous fdatasync commit
                // their next batch and join this one (bounded wait; a lone writer never waits).
                let deadline = Instant::now() + inner.options.group_commit_gather;
                while s.waiters < s.last_group && !bg.stop.load(Ordering::Acquire) {
                    if inner.syncer_cv.wait_until(&mut s, deadline).timed_out() {
                        break;
                    }
                }
                s.last_group = s.waiters;
            }
            drop(s);
            if !requested && Instant::now() < due {
                continue;
            }
        }
        last = Instant::now();
        if inner.poisoned.read().is_some() {
            drop(inner);
            std::thread::sleep(interval);
            continue;
        }
        let _ = inner.sync_round();
    }
}
