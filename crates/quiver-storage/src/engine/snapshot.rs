//! Snapshots and reads. A snapshot is a registered tick plus an `Arc` of the catalog; the
//! oldest registered tick is the horizon below which versions are garbage. Reads resolve a
//! version's location through the file table and retry when the collector or compactor
//! moved it; key-order scans walk the index in chunks.
//!
//! Invariants: a snapshot's tick is a visible tick (never above the last published batch);
//! the horizon is never above the visible tick.

use crate::files;
use crate::format;
use crate::index::{Loc, Version, SCAN_CHUNK};
use crate::StoredDocument;
use bytes::Bytes;
use quiver_errors::{Error, ErrorCode, Result};
use quiver_types::Revision;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::catalog::Catalog;
use super::collection::Collection;
use super::{corrupt, Inner};

/// Point reads of markers up to this size copy their bytes out of the datafile's map
/// (`Snapshot::read_marker`).
const COPY_BELOW: usize = 16 << 10;

impl Inner {
    /// The oldest tick a registered snapshot reads at, else the visible tick: versions
    /// superseded at or below it are invisible to every present and future snapshot.
    pub(crate) fn horizon(&self) -> u64 {
        let snaps = self.snapshots.lock();
        snaps
            .keys()
            .next()
            .copied()
            .unwrap_or_else(|| self.visible.load(Ordering::Acquire))
    }

    /// The commit tick of the newest published batch.
    pub(crate) fn visible_tick(&self) -> u64 {
        self.visible.load(Ordering::Acquire)
    }

    /// The revision of `key` in the newest visible state, without registering a snapshot.
    /// The newest version of a key is never garbage, so no snapshot is needed to keep it.
    pub(crate) fn latest_revision(&self, cid: u64, key: &str) -> Result<Option<Revision>> {
        let cat = self.catalog();
        let col = cat
            .collections
            .get(&cid)
            .ok_or_else(|| Error::new(ErrorCode::DataSourceNotFound))?;
        col.usable()?;
        let tick = self.visible.load(Ordering::Acquire);
        Ok(col.index.get(key, tick).map(|v| Revision(v.rev)))
    }

    /// The marker at `loc` and its file's fid (`None` if the file left the file table
    /// meanwhile).
    fn read_marker(&self, loc: Loc) -> Result<Option<(u64, Bytes)>> {
        let Some(file) = self.file(loc.slot) else {
            return Ok(None);
        };
        // Memory-mapped reads cost no syscall and no copy while their pages stay mapped;
        // every such read counts in the engine's budget of mapped pages (`mapped_budget.rs`,
        // `--storage.mapped-memory-limit`). For a while after the reads overran it, and for
        // a file that could not be mapped, the bytes are copied with `pread` instead.
        if self.mapped_reads.through_map() {
            if let Some(bytes) = file.mapped_range(loc.offset as u64, loc.len as usize) {
                // A document up to COPY_BELOW bytes is copied out of the map: a slice handed
                // on (a traversal's results, a cursor's rows) would be read again later, after
                // a release may have dropped its pages, and that fault maps a whole page-cache
                // folio (up to megabytes) that no budget counts.
                let bytes = if bytes.len() <= COPY_BELOW {
                    Bytes::copy_from_slice(&bytes)
                } else {
                    bytes
                };
                self.mapped_reads.read(self, u64::from(loc.len));
                return Ok(Some((file.fid, bytes)));
            }
        }
        let mut buf = vec![0u8; loc.len as usize];
        std::os::unix::fs::FileExt::read_exact_at(&file.file, &mut buf, loc.offset as u64)
            .map_err(|e| files::io_error(e, "reading a document"))?;
        Ok(Some((file.fid, Bytes::from(buf))))
    }

    /// The version of `key` visible at `tick`, read from its file; looked up again when the
    /// collector or compactor moved it meanwhile.
    pub(super) fn read_version(
        &self,
        col: &Collection,
        key: &str,
        tick: u64,
    ) -> Result<Option<StoredDocument>> {
        // A location can move (collector, compactor) between looking it up and reading the
        // file; the old file then is gone from the table and the lookup is simply repeated.
        for _ in 0..64 {
            let Some(v) = col.index.get(key, tick) else {
                return Ok(None);
            };
            if let Some(doc) = self.read_at(col, v)? {
                return Ok(Some(doc));
            }
            std::thread::yield_now();
        }
        Err(Error::with_message(
            ErrorCode::Internal,
            "document location kept moving",
        ))
    }

    /// The document of version `v` (`None` if its file is gone; error 1000 if damaged).
    pub(super) fn read_at(&self, col: &Collection, v: Version) -> Result<Option<StoredDocument>> {
        let Some((fid, buf)) = self.read_marker(v.loc)? else {
            return Ok(None);
        };
        let bad = |why: &str| {
            corrupt(format!(
                "collection {}: marker at file {} offset {} is {why}",
                col.id, fid, v.loc.offset
            ))
        };
        let m = format::decode(&buf).map_err(|_| {
            let err = bad("damaged (checksum mismatch)");
            self.checksum_failure(v.loc.slot, u64::from(v.loc.offset), err)
        })?;
        let body = format::data_body(&m).map_err(|_| bad("malformed"))?;
        let off = body.doc_offset;
        let len = m.len;
        let rev = body.rev;
        let bytes = buf.slice(off..len);
        Ok(Some(StoredDocument {
            rev: Revision(rev),
            body: bytes,
        }))
    }
}

pub(crate) struct SnapshotGuard {
    pub(super) inner: Arc<Inner>,
    pub(super) tick: u64,
}

impl Drop for SnapshotGuard {
    fn drop(&mut self) {
        let mut snaps = self.inner.snapshots.lock();
        if let Some(n) = snaps.get_mut(&self.tick) {
            *n -= 1;
            if *n == 0 {
                snaps.remove(&self.tick);
            }
        }
    }
}

pub(crate) struct SnapshotState {
    pub guard: SnapshotGuard,
    pub catalog: Arc<Catalog>,
}

impl SnapshotState {
    pub fn tick(&self) -> u64 {
        self.guard.tick
    }

    pub(super) fn collection(&self, cid: u64) -> Result<&Arc<Collection>> {
        let col = self
            .catalog
            .collections
            .get(&cid)
            .ok_or_else(|| Error::new(ErrorCode::DataSourceNotFound))?;
        col.usable()?;
        Ok(col)
    }

    pub fn get(&self, cid: u64, key: &str) -> Result<Option<StoredDocument>> {
        let col = self.collection(cid)?;
        self.guard.inner.read_version(col, key, self.tick())
    }

    pub fn revision(&self, cid: u64, key: &str) -> Result<Option<Revision>> {
        let col = self.collection(cid)?;
        Ok(col.index.get(key, self.tick()).map(|v| Revision(v.rev)))
    }

    /// The revision of `key` and the tick of the marker that wrote it.
    pub fn revision_and_tick(&self, cid: u64, key: &str) -> Result<Option<(Revision, u64)>> {
        let col = self.collection(cid)?;
        Ok(col
            .index
            .get(key, self.tick())
            .map(|v| (Revision(v.rev), v.tick)))
    }

    pub fn existence_epoch(&self, cid: u64) -> Result<Option<u64>> {
        let col = self.collection(cid)?;
        Ok(col.existence.valid_at(self.tick()))
    }

    pub fn count(&self, cid: u64) -> Result<u64> {
        let col = self.collection(cid)?;
        Ok(col.count_at(self.tick()))
    }

    pub(crate) fn inner(&self) -> &Arc<Inner> {
        &self.guard.inner
    }

    pub fn ordered_scan(self: &Arc<Self>, cid: u64) -> Result<super::ordered_scan::OrderedScan> {
        let col = self.collection(cid)?.clone();
        Ok(super::ordered_scan::OrderedScan::new(self.clone(), col))
    }

    /// The documents of collection `cid` whose keys lie within `bounds`, in byte order of the
    /// keys (descending when `reverse`), read lazily: see [`super::key_range`].
    pub fn key_range(
        self: &Arc<Self>,
        cid: u64,
        bounds: (std::ops::Bound<String>, std::ops::Bound<String>),
        reverse: bool,
    ) -> Result<super::key_range::KeyRangeIter> {
        let col = self.collection(cid)?.clone();
        Ok(super::key_range::KeyRangeIter::new(
            self.clone(),
            col,
            bounds,
            reverse,
        ))
    }

    /// Whether the byte order of collection `cid`'s keys is AQL's string order for every key
    /// it ever held (see `index::binary_ordered_key`).
    pub fn keys_binary_ordered(&self, cid: u64) -> Result<bool> {
        Ok(self.collection(cid)?.index.binary_ordered())
    }

    pub fn scan(self: &Arc<Self>, cid: u64) -> Result<ScanIter> {
        self.scan_written_after(cid, 0)
    }

    /// Like [`SnapshotState::scan`], but only the documents whose visible version was written
    /// by a marker with a tick above `after`; the others are skipped in the index, unread.
    pub fn scan_written_after(self: &Arc<Self>, cid: u64, after: u64) -> Result<ScanIter> {
        let col = self.collection(cid)?.clone();
        Ok(ScanIter {
            snap: self.clone(),
            col,
            shard: 0,
            after: None,
            buffer: VecDeque::new(),
            done: false,
            written_after: after,
        })
    }
}

pub(crate) fn snapshot(inner: &Arc<Inner>) -> SnapshotState {
    let catalog = inner.catalog();
    let mut snaps = inner.snapshots.lock();
    let tick = inner.visible.load(Ordering::Acquire);
    // The visible tick only grows, so the horizon (the oldest registered tick) stays at or
    // below every snapshot taken later.
    assert!(
        snaps.keys().next().is_none_or(|oldest| *oldest <= tick),
        "snapshot at {tick} below the horizon"
    );
    *snaps.entry(tick).or_insert(0) += 1;
    drop(snaps);
    SnapshotState {
        guard: SnapshotGuard {
            inner: inner.clone(),
            tick,
        },
        catalog,
    }
}

/// Iterator over a snapshot's documents, fetched in chunks of [`SCAN_CHUNK`] keys.
pub struct ScanIter {
    pub(super) snap: Arc<SnapshotState>,
    pub(super) col: Arc<Collection>,
    pub(super) shard: usize,
    pub(super) after: Option<Box<str>>,
    pub(super) buffer: VecDeque<(Box<str>, Version)>,
    pub(super) done: bool,
    /// Only versions written by markers above this tick are returned (0: all).
    pub(super) written_after: u64,
}

impl Iterator for ScanIter {
    type Item = Result<(String, StoredDocument)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((key, v)) = self.buffer.pop_front() {
                let inner = &self.snap.guard.inner;
                let doc = match inner.read_at(&self.col, v) {
                    Ok(Some(doc)) => Ok(Some(doc)),
                    Ok(None) => inner.read_version(&self.col, &key, self.snap.tick()),
                    Err(e) => Err(e),
                };
                return match doc {
                    Ok(Some(doc)) => Some(Ok((key.into_string(), doc))),
                    Ok(None) => continue,
                    Err(e) => Some(Err(e)),
                };
            }
            if self.done {
                return None;
            }
            if self.shard >= self.col.index.shard_count() {
                self.done = true;
                return None;
            }
            let (items, last) = self.col.index.visible_chunk(
                self.shard,
                self.after.as_deref(),
                self.snap.tick(),
                SCAN_CHUNK,
            );
            let written_after = self.written_after;
            self.buffer
                .extend(items.into_iter().filter(|(_, v)| v.tick > written_after));
            match last {
                Some(k) => self.after = Some(k),
                None => {
                    self.shard += 1;
                    self.after = None;
                }
            }
        }
    }
}
