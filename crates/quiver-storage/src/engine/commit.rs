//! The write path. [`Inner::commit`] (a batch) and [`Inner::commit_insert`] (one insert of a
//! key that must not be alive) encode markers outside every lock, then under the WAL mutex
//! append them ([`Inner::append_locked`]), install the versions in the primary index with
//! the batch's commit tick, update the counts and publish the visible tick.
//!
//! Invariants: a batch's versions are all installed before the visible tick reaches its
//! commit tick (readers see all of a batch or none); a truncate is alone in its batch.
//! Kept cheap: this is the per-insert path (no allocation per marker besides the index
//! entry, no system call).

use crate::format::{self, MarkerType};
use crate::index::{Loc, Version};
use crate::{BatchOp, WriteBatch};
use parking_lot::MutexGuard;
use quiver_errors::{Error, ErrorCode, Result};
use quiver_types::Revision;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::collection::Collection;
use super::disk_reserve::SpaceUse;
use super::wal::{Appended, MarkerSpan, WalState};
use super::Inner;

/// Largest encoded write batch (all its markers), 1 GiB.
const MAX_BATCH_BYTES: usize = 1 << 30;

impl Inner {
    /// Commits a batch atomically: validated and encoded outside every lock, appended,
    /// installed and published under the WAL mutex.
    pub(crate) fn commit(self: &Arc<Self>, batch: WriteBatch) -> Result<crate::CommitTicket> {
        self.check_open()?;
        if batch.ops.is_empty() {
            return Ok(crate::CommitTicket {
                tick: self.visible.load(Ordering::Acquire),
                sync: false,
                inner: None,
                populate_ahead: None,
            });
        }
        let (cols, sync) = self.batch_collections(&batch)?;
        // Encode outside the WAL lock; ticks and CRCs are filled in under it.
        let (mut buf, spans) = encode_batch(&batch.ops)?;
        check_batch_len(buf.len())?;
        self.throttle_writers()?;
        let mut wal = self.wal.lock();
        self.check_open()?;
        // A truncate frees space: it may use a released disk reserve, other writes may not.
        let usage = match batch
            .ops
            .iter()
            .all(|op| matches!(op, BatchOp::Truncate { .. }))
        {
            true => SpaceUse::Freeing,
            false => SpaceUse::Writes,
        };
        let appended = self.append_locked(&mut wal, &mut buf, &spans, sync, usage)?;
        self.install_batch(&batch.ops, &cols, &spans, &appended);
        Ok(self.publish(wal, appended, sync))
    }

    /// The collection of each operation of a batch (all usable, all of one database, keys
    /// within the engine's limit, a truncate alone), and whether the batch waits for sync
    /// (requested, or some collection has `waitForSync`).
    fn batch_collections(&self, batch: &WriteBatch) -> Result<(Vec<Arc<Collection>>, bool)> {
        let cat = self.catalog();
        let mut cols: Vec<Arc<Collection>> = Vec::with_capacity(batch.ops.len());
        let mut sync = batch.sync;
        let mut db = None;
        for op in &batch.ops {
            let (cid, key) = match op {
                BatchOp::Put { cid, key, .. } | BatchOp::Remove { cid, key, .. } => {
                    (*cid, key.as_str())
                }
                BatchOp::Truncate { cid, .. } if batch.ops.len() == 1 => (*cid, "-"),
                BatchOp::Truncate { .. } => {
                    return Err(Error::with_message(
                        ErrorCode::Internal,
                        "a truncate must be alone in its write batch",
                    ))
                }
            };
            check_key(key)?;
            let col = match cols.last() {
                Some(c) if c.id == cid => c.clone(),
                _ => cat
                    .collections
                    .get(&cid)
                    .cloned()
                    .ok_or_else(|| Error::new(ErrorCode::DataSourceNotFound))?,
            };
            col.usable()?;
            if *db.get_or_insert(col.db) != col.db {
                return Err(Error::with_message(
                    ErrorCode::BadParameter,
                    "a write batch may only span collections of one database",
                ));
            }
            sync |= col.options.read().wait_for_sync;
            cols.push(col);
        }
        Ok((cols, sync))
    }

    /// Installs an appended batch's versions in the primary indexes with its commit tick and
    /// updates the counts (under the WAL mutex, before the batch is published).
    fn install_batch(
        &self,
        ops: &[BatchOp],
        cols: &[Arc<Collection>],
        spans: &[MarkerSpan],
        appended: &Appended,
    ) {
        let Appended {
            slot,
            base,
            commit_tick,
            ..
        } = *appended;
        let horizon = self.horizon();
        // Per collection: the change of the live count, whether some version died (which is
        // what can give the compactor work), and whether the set of alive keys changed (a new
        // key, a removed one, a truncate: the collection's existence epoch moves once).
        let mut touched: Vec<(Arc<Collection>, i64, bool, bool)> = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            let col = &cols[i];
            let (start, len, _) = spans[i];
            let (key, version) = match op {
                BatchOp::Truncate { .. } => {
                    // Everything installed so far has a lower tick: one floor in the index
                    // instead of a removal per document. The dropped versions are garbage
                    // for the GC pass.
                    let alive = col.latest_count();
                    col.index.truncate(commit_tick, horizon);
                    col.garbage.fetch_add(alive, Ordering::Relaxed);
                    col.uncollected.fetch_add(1, Ordering::Relaxed);
                    match touched.iter_mut().find(|(c, _, _, _)| c.id == col.id) {
                        Some((_, d, died, keys)) => {
                            *d -= alive as i64;
                            *died = true;
                            *keys = true;
                        }
                        None => touched.push((col.clone(), -(alive as i64), true, true)),
                    }
                    continue;
                }
                BatchOp::Put { key, rev, .. } => (
                    key,
                    Version {
                        tick: commit_tick,
                        rev: rev.0,
                        loc: Loc {
                            slot,
                            offset: (base + start as u64) as u32,
                            len: len as u32,
                        },
                    },
                ),
                BatchOp::Remove { key, rev, .. } => (
                    key,
                    Version {
                        tick: commit_tick,
                        rev: rev.0,
                        loc: Loc::REMOVED,
                    },
                ),
            };
            let was_alive = col.index.install(key, version, horizon);
            if was_alive {
                // The previous version (or the new tombstone) is garbage for the GC pass.
                col.garbage.fetch_add(1, Ordering::Relaxed);
            }
            let delta = match (was_alive, version.is_removed()) {
                (false, false) => 1,
                (true, true) => -1,
                _ => 0,
            };
            let died = was_alive || version.is_removed();
            // A new key or a removed one (not a new version of an alive key).
            let keys_changed = delta != 0;
            match touched.iter_mut().find(|(c, _, _, _)| c.id == col.id) {
                Some((_, d, any, keys)) => {
                    *d += delta;
                    *any |= died;
                    *keys |= keys_changed;
                }
                None => touched.push((col.clone(), delta, died, keys_changed)),
            }
            col.uncollected.fetch_add(1, Ordering::Relaxed);
        }
        for (col, delta, died, keys_changed) in &touched {
            if *keys_changed {
                // Still under the WAL mutex and before the batch is published, as the epoch's
                // exactness argument requires.
                col.existence.changed(commit_tick);
            }
            col.note_commit(commit_tick, *delta, *died, horizon);
        }
    }

    /// [`Inner::commit`] of one insert (the engine's side of a plain single-document insert)
    /// that fails, writing nothing, if the key is alive: the existence check is part of the
    /// index install's descent instead of a lookup of its own. `Ok(None)`: the key exists.
    pub(crate) fn commit_insert(
        self: &Arc<Self>,
        cid: u64,
        key: &str,
        rev: Revision,
        body: &[u8],
        sync: bool,
    ) -> Result<Option<crate::CommitTicket>> {
        self.check_open()?;
        check_key(key)?;
        let col = self.collection(cid)?;
        col.usable()?;
        let sync = sync || col.options.read().wait_for_sync;
        // Reported only if the key is not alive, so that a duplicate still answers 1210 first.
        let mut buf = Vec::new();
        let mut len = 0;
        let mut too_large = check_body_len(body.len()).err();
        if too_large.is_none() {
            buf.reserve_exact(48 + key.len() + body.len());
            len = format::encode_data(&mut buf, MarkerType::Document, cid, rev.0, key, body);
            too_large = check_batch_len(buf.len()).err();
        }
        self.throttle_writers()?;
        let mut wal = self.wal.lock();
        self.check_open()?;
        // Rotated before the key's shard is locked: a new segment may mean creating and
        // syncing a file, and the shard's readers must not wait for that.
        let retired = if too_large.is_none() {
            self.make_room(&mut wal, buf.len() as u64, SpaceUse::Writes)?
        } else {
            None
        };
        let horizon = self.horizon();
        let mut appended = None;
        let installed = col.index.install_new(key, horizon, || {
            if let Some(err) = too_large.take() {
                return Err(err);
            }
            let a = self.append_locked(
                &mut wal,
                &mut buf,
                &[(0, len, MarkerType::Document)],
                sync,
                SpaceUse::Writes,
            )?;
            let version = Version {
                tick: a.commit_tick,
                rev: rev.0,
                loc: Loc {
                    slot: a.slot,
                    offset: a.base as u32,
                    len: len as u32,
                },
            };
            appended = Some(a);
            Ok::<_, Error>(version)
        });
        let appended = match (installed, appended) {
            (Ok(true), Some(appended)) => appended,
            (result, _) => {
                drop(wal);
                drop(retired);
                return result.and(Ok(None));
            }
        };
        col.uncollected.fetch_add(1, Ordering::Relaxed);
        col.existence.changed(appended.commit_tick);
        col.note_commit(appended.commit_tick, 1, false, horizon);
        let ticket = self.publish(wal, appended, sync);
        drop(retired);
        Ok(Some(ticket))
    }

    /// Moves the visible tick to a batch's commit tick (under the WAL mutex, after the whole
    /// batch is installed). Batches are published in tick order: the visible tick only grows
    /// and never passes the last tick handed out.
    fn publish_visible(&self, commit_tick: u64) {
        let before = self.visible.load(Ordering::Relaxed);
        assert!(
            before < commit_tick && commit_tick <= self.tick.load(Ordering::Relaxed),
            "visible tick {before} would move to {commit_tick}"
        );
        self.visible.store(commit_tick, Ordering::Release);
    }

    /// Makes an appended and installed batch visible, releases the WAL mutex, and hands out
    /// its ticket.
    fn publish(
        self: &Arc<Self>,
        wal: MutexGuard<'_, WalState>,
        appended: Appended,
        sync: bool,
    ) -> crate::CommitTicket {
        self.publish_visible(appended.commit_tick);
        drop(wal);
        // Unmapped outside the mutex (32 MiB of populated pages).
        drop(appended.retired);
        self.commits.fetch_add(1, Ordering::Relaxed);
        crate::CommitTicket {
            tick: appended.commit_tick,
            sync,
            inner: Some(self.clone()),
            populate_ahead: appended.populate_ahead,
        }
    }

    /// Back-pressure: while the collector lags by `wal_throttle_when_pending` sealed segments,
    /// a writer waits (outside every engine lock) for it to catch up, at most
    /// `wal_throttle_wait`, then fails with error 1236. Without it the WAL would grow without
    /// bound whenever writers outpace the collector (or the collector keeps failing).
    fn throttle_writers(&self) -> Result<()> {
        let limit = self.options.wal_throttle_when_pending;
        if limit == 0 || !self.options.background_collector {
            return Ok(());
        }
        if self.pending_segments.load(Ordering::Acquire) < limit {
            return Ok(());
        }
        let deadline = Instant::now() + self.options.wal_throttle_wait;
        super::counters::EngineCounters::bump(&self.counters.wal_throttled, 1);
        let mut guard = self.throttle.lock();
        loop {
            self.check_open()?;
            if self.pending_segments.load(Ordering::Acquire) < limit {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::with_message(
                    ErrorCode::WriteThrottleTimeout,
                    format!(
                        "write-throttling timeout: {} WAL segments wait for the collector \
                         (--wal.throttle-when-pending {limit})",
                        self.pending_segments.load(Ordering::Acquire)
                    ),
                ));
            }
            *self.bg.wake.lock() = true;
            self.bg.cv.notify_all();
            // Bounded slices: a notification lost to a race costs at most one slice.
            let slice = (deadline - now).min(Duration::from_millis(50));
            self.throttle_cv.wait_for(&mut guard, slice);
        }
    }

    /// Truncates a collection with one truncate marker (no marker when nothing is alive).
    pub(crate) fn truncate(self: &Arc<Self>, cid: u64, sync: bool) -> Result<crate::CommitTicket> {
        let col = self.collection(cid)?;
        col.usable()?;
        if col.latest_count() == 0 {
            // Nothing alive: no marker needed (readers of older snapshots keep their view).
            let tick = self.visible.load(Ordering::Acquire);
            let need = sync || col.options.read().wait_for_sync;
            return Ok(crate::CommitTicket {
                tick,
                sync: need,
                inner: Some(self.clone()),
                populate_ahead: None,
            });
        }
        // One marker, whatever the collection's size: the WAL mutex is held for one small
        // write, and the index applies it in O(1) (see PrimaryIndex::truncate).
        let mut batch = WriteBatch::new();
        batch.set_sync(sync);
        batch.ops.push(BatchOp::Truncate {
            cid,
            rev: self.hlc.next(),
        });
        let ticket = self
            .reserve
            .retry_when_full("truncating a collection", || self.commit(batch.clone()))?;
        // Ask the collector to pass the WAL now, so that the space the truncated versions
        // held there is freed without waiting for the segment to fill.
        self.request_wal_release();
        Ok(ticket)
    }
}

/// Encodes a batch's markers into one buffer (ticks, flags and CRCs are filled in under the
/// WAL mutex): the buffer and each marker's `(start, length, kind)`.
fn encode_batch(ops: &[BatchOp]) -> Result<(Vec<u8>, Vec<MarkerSpan>)> {
    let mut buf = Vec::with_capacity(
        ops.iter()
            .map(|op| match op {
                BatchOp::Put { key, body, .. } => 48 + key.len() + body.len(),
                BatchOp::Remove { key, .. } => 48 + key.len(),
                BatchOp::Truncate { .. } => format::padded(format::TRUNCATE_LEN),
            })
            .sum(),
    );
    let mut spans = Vec::with_capacity(ops.len());
    for op in ops {
        let start = buf.len();
        let (kind, len) = match op {
            BatchOp::Put {
                cid,
                key,
                rev,
                body,
            } => {
                check_body_len(body.len())?;
                (
                    MarkerType::Document,
                    format::encode_data(&mut buf, MarkerType::Document, *cid, rev.0, key, body),
                )
            }
            BatchOp::Remove { cid, key, rev } => (
                MarkerType::Remove,
                format::encode_data(&mut buf, MarkerType::Remove, *cid, rev.0, key, &[]),
            ),
            BatchOp::Truncate { cid, rev } => (
                MarkerType::Truncate,
                format::encode_truncate(&mut buf, *cid, rev.0),
            ),
        };
        spans.push((start, len, kind));
    }
    Ok((buf, spans))
}

/// A document body must fit in one marker.
fn check_body_len(len: usize) -> Result<()> {
    if len > format::MAX_MARKER_LEN - 400 {
        return Err(Error::new(ErrorCode::DocumentTooLarge));
    }
    Ok(())
}

/// Locations are 32-bit offsets: an encoded batch must fit in one segment below 4 GiB.
fn check_batch_len(len: usize) -> Result<()> {
    if len > MAX_BATCH_BYTES {
        return Err(Error::with_message(
            ErrorCode::ResourceLimit,
            format!("write batch of {len} bytes exceeds the limit of {MAX_BATCH_BYTES} bytes"),
        ));
    }
    Ok(())
}

/// The engine's own limit on keys (the core checks ArangoDB's key rules before).
fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > format::MAX_KEY_LEN {
        return Err(Error::with_message(
            ErrorCode::DocumentKeyBad,
            "illegal document key: keys are 1 to 254 bytes",
        ));
    }
    Ok(())
}
