//! Storage-order scans: a snapshot's documents read in file order instead of key order.
//!
//! A key-order scan touches the files at random (keys are hashed over the index shards and
//! written in arrival order), so every document costs a cache and TLB miss and the kernel's
//! read-ahead and fault-around do not help. This scan first collects the snapshot's visible
//! locations (a window of at most [`WINDOW`] of them), sorts them by file and offset, and then
//! reads each file front to back. Keys are not copied out of the index: the marker carries the
//! key, so a caller that wants it reads it from there.
//!
//! Consistency: the window is collected from the primary index at the snapshot's tick, so it
//! holds exactly the versions the snapshot sees (a concurrent update adds a newer version the
//! snapshot ignores; the old one stays indexed while the snapshot lives). Every file a location
//! points into is pinned (an `Arc`) while the shard lock that produced the location is still
//! held, and the collector and compactor repoint entries (under the shard's write lock) before
//! dropping a file from the table, so a pinned file holds the bytes of every collected
//! location even if they are copied elsewhere meanwhile: files are never rewritten or shrunk.
//!
//! Checksums: markers of a sealed datafile are read without their per-marker CRC check once
//! the whole file passed one sequential verification ([`DataFile::verified_sealed`], once per
//! process and file). Markers of WAL segments, the journal, and any file whose verification
//! failed are checked one by one as before, so damage still fails the read loudly.
//!
//! Mapped memory: a window is read file by file, so once the scan moves on from a file it
//! reads nothing more of it in that window. Then, when the file-backed part of the resident
//! set is above `--storage.mapped-memory-limit`, it releases that file's mapped pages
//! ([`DataFile::release_mapped_pages`]; they stay in the page cache), so a pass over a
//! collection larger than the limit holds about one file's pages per scanning thread above
//! it instead of the whole collection until the maintenance thread's next look
//! (`mapped_budget.rs`). Under the limit nothing is released. The threads of a parallel scan
//! all read every file, so there a file is released once each of them has moved past it
//! ([`FilePasses`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use parking_lot::Mutex;
use quiver_errors::{Error, ErrorCode, Result};
use quiver_types::Revision;

use super::mapped_budget::over_limit;
use super::{Collection, Inner, SnapshotState};
use crate::files::DataFile;
use crate::format;
use crate::index::{Loc, SCAN_CHUNK};

/// Most locations collected and sorted at once (16 bytes each: 32 MiB). Larger collections
/// are scanned in several windows, each sorted on its own, which keeps memory bounded at the
/// price of one pass over the files per window.
pub(crate) const WINDOW: usize = 1 << 21;

/// Below this many documents, [`OrderedScan::for_each_parallel`] does not start threads
/// (their start-up would cost more than they save).
const PARALLEL_MIN: usize = 1 << 15;

/// Most worker threads of one parallel scan.
pub const MAX_SCAN_THREADS: usize = 8;

/// One document as stored: borrowed from the file map (or the scan's read buffer).
#[derive(Clone, Copy, Debug)]
pub struct RawDocument<'a> {
    pub key: &'a str,
    pub rev: Revision,
    pub body: &'a [u8],
}

/// A location in a window: `at` packs the index into `OrderedScan::files` (high 32 bits) and
/// the offset (low 32 bits), so that sorting by it groups by file and orders by offset.
#[derive(Clone, Copy)]
struct Slot {
    at: u64,
    len: u32,
}

impl Slot {
    fn file(self) -> usize {
        (self.at >> 32) as usize
    }

    fn offset(self) -> usize {
        self.at as u32 as usize
    }
}

struct Pinned {
    file: Arc<DataFile>,
    map: Option<Arc<memmap2::Mmap>>,
    /// A sealed datafile whose every marker passed the one-time CRC verification.
    trusted: bool,
}

/// A snapshot's documents of one collection in storage order (see the module notes).
pub struct OrderedScan {
    snap: Arc<SnapshotState>,
    col: Arc<Collection>,
    /// Sealed datafiles when the scan started: only these may be trusted after verification.
    sealed: HashSet<u64>,
    files: Vec<Pinned>,
    /// File slot ([`Loc::slot`]) → index into `files`.
    file_index: HashMap<u32, usize>,
    /// The index shards this scan walks (all of them, or one thread's share) and the
    /// position in that list.
    shards: Vec<usize>,
    shard_pos: usize,
    after: Option<Box<str>>,
    walked: bool,
    window: Vec<Slot>,
    /// Most locations per window ([`WINDOW`]; tests use less).
    window_limit: usize,
    pos: usize,
    /// Read buffer for files that could not be mapped.
    scratch: Vec<u8>,
    /// The engine's `mapped_memory_limit`.
    limit: Option<u64>,
    /// The file (index into `files`) the last document came from.
    reading: Option<usize>,
    /// For one thread of a parallel scan: the passes of all its threads over each file.
    passes: Option<Arc<FilePasses>>,
}

/// How often the threads of one parallel scan have moved past each file. The threads split
/// the index shards, not the files: each reads every file for its own documents, and they
/// walk the files in the same order at about the same pace. A thread that released a file's
/// mapped pages as soon as it moved past it took them from under the others, which then
/// faulted them back in (in the full-scale aggregation's profile, mapping and unmapping
/// pages were about 40 % of the server's CPU). So a file is released when every thread has
/// moved past it as often as the first, or, so that a thread far behind the others cannot
/// keep the whole collection mapped, when more than [`HELD_PER_THREAD`] files per thread wait
/// for it (the oldest first). A thread with none of its documents in a file never passes it;
/// such a file leaves the waiting list the same way.
struct FilePasses {
    threads: usize,
    state: Mutex<Passes>,
}

/// Files one parallel scan's threads moved past and not all of them yet, oldest first, at
/// most [`HELD_PER_THREAD`] per thread.
const HELD_PER_THREAD: usize = 2;

#[derive(Default)]
struct Passes {
    /// File id → passes so far (one entry per file of the collection at most).
    passed: HashMap<u64, usize>,
    /// Files passed by some threads but not all, oldest first.
    waiting: std::collections::VecDeque<Arc<DataFile>>,
}

impl FilePasses {
    fn new(threads: usize) -> FilePasses {
        FilePasses {
            threads: threads.max(1),
            state: Mutex::new(Passes::default()),
        }
    }

    /// Counts one thread's pass over `file`; returns the files whose mapped pages may go now.
    fn pass(&self, file: &Arc<DataFile>) -> Vec<Arc<DataFile>> {
        let mut state = self.state.lock();
        let n = state.passed.entry(file.fid).or_insert(0);
        *n += 1;
        let n = *n;
        let mut release = Vec::new();
        if n % self.threads == 0 {
            state.waiting.retain(|f| f.fid != file.fid);
            release.push(file.clone());
        } else if n % self.threads == 1 {
            state.waiting.push_back(file.clone());
        }
        // Bounded: every round takes one file off the list until it is within its bound.
        while state.waiting.len() > self.threads * HELD_PER_THREAD {
            release.extend(state.waiting.pop_front());
        }
        release
    }
}

impl OrderedScan {
    pub(crate) fn new(snap: Arc<SnapshotState>, col: Arc<Collection>) -> OrderedScan {
        let sealed = col.sealed_fids();
        let shards = (0..col.primary().shard_count()).collect();
        OrderedScan {
            col,
            sealed,
            files: Vec::new(),
            file_index: HashMap::new(),
            shards,
            shard_pos: 0,
            after: None,
            walked: false,
            window: Vec::new(),
            window_limit: WINDOW,
            pos: 0,
            scratch: Vec::new(),
            limit: snap.inner().options.mapped_memory_limit,
            reading: None,
            passes: None,
            snap,
        }
    }

    /// Collects the next window of locations; false when the index is exhausted.
    fn fill(&mut self) -> Result<bool> {
        self.window.clear();
        self.pos = 0;
        if self.walked {
            return Ok(false);
        }
        let inner = self.snap.inner().clone();
        let tick = self.snap.tick();
        let index = self.col.primary();
        let mut missing: Option<u32> = None;
        let mut new_files = Vec::new();
        while self.window.len() + SCAN_CHUNK <= self.window_limit.max(SCAN_CHUNK) {
            let Some(&shard) = self.shards.get(self.shard_pos) else {
                self.walked = true;
                break;
            };
            let files = &mut self.files;
            let file_index = &mut self.file_index;
            let window = &mut self.window;
            let last = index.visible_locs(
                shard,
                self.after.as_deref(),
                tick,
                SCAN_CHUNK,
                |loc: Loc| {
                    let i = match file_index.get(&loc.slot) {
                        Some(&i) => i,
                        // Pinned under the shard lock: see the module notes.
                        None => match inner.file(loc.slot) {
                            Some(file) => {
                                let map = file.map();
                                files.push(Pinned {
                                    file,
                                    map,
                                    trusted: false,
                                });
                                file_index.insert(loc.slot, files.len() - 1);
                                new_files.push(files.len() - 1);
                                files.len() - 1
                            }
                            None => {
                                missing.get_or_insert(loc.slot);
                                return;
                            }
                        },
                    };
                    window.push(Slot {
                        at: (i as u64) << 32 | loc.offset as u64,
                        len: loc.len,
                    });
                },
            );
            if let Some(slot) = missing {
                self.col.usable()?;
                return Err(Error::with_message(
                    ErrorCode::Internal,
                    format!(
                        "collection {}: a document points into file slot {slot}, which is not open",
                        self.col.id
                    ),
                ));
            }
            match last {
                Some(k) => self.after = Some(k),
                None => {
                    self.shard_pos += 1;
                    self.after = None;
                }
            }
        }
        for i in new_files {
            let p = &mut self.files[i];
            if self.sealed.contains(&p.file.fid) {
                p.trusted = p.file.verified_sealed();
            }
        }
        self.window.sort_unstable_by_key(|s| s.at);
        Ok(!self.window.is_empty() || !self.walked)
    }

    /// The next document, borrowed until the following call. Streaming callers (a cursor
    /// that pulls a batch at a time) use this; see [`OrderedScan::for_each_parallel`] for
    /// whole-collection consumers.
    pub fn next_raw(&mut self) -> Option<Result<RawDocument<'_>>> {
        while self.pos >= self.window.len() {
            self.moved_past();
            match self.fill() {
                Ok(true) => continue,
                Ok(false) => return None,
                Err(e) => {
                    self.walked = true;
                    return Some(Err(e));
                }
            }
        }
        let slot = self.window[self.pos];
        if self.reading != Some(slot.file()) {
            self.moved_past();
            self.reading = Some(slot.file());
        }
        if let Some(&ahead) = self.window.get(self.pos + PREFETCH_AHEAD) {
            prefetch(&self.files, ahead);
        }
        self.pos += 1;
        Some(read(
            &self.files,
            slot,
            &mut self.scratch,
            self.col.id,
            self.snap.inner(),
        ))
    }

    /// The scan has read what it reads of the current file in this window: above the mapped
    /// memory limit, that file's mapped pages are released (see the module notes).
    fn moved_past(&mut self) {
        if let Some(i) = self.reading.take() {
            let file = &self.files[i].file;
            let release = match &self.passes {
                None => vec![file.clone()],
                Some(passes) => passes.pass(file),
            };
            if !release.is_empty() && over_limit(self.limit) {
                for file in release {
                    file.release_mapped_pages();
                }
            }
        }
    }

    /// Splits this (not yet started) scan into up to `parts` scans over disjoint sets of
    /// index shards, which together see exactly the documents this one would. Each reads its
    /// share in storage order, so parallel workers each sweep the files front to back.
    fn split(self, parts: usize) -> Vec<OrderedScan> {
        let parts = parts.clamp(1, self.shards.len().max(1));
        let passes = Arc::new(FilePasses::new(parts));
        (0..parts)
            .map(|p| OrderedScan {
                snap: self.snap.clone(),
                col: self.col.clone(),
                sealed: self.sealed.clone(),
                files: Vec::new(),
                file_index: HashMap::new(),
                shards: self.shards.iter().copied().skip(p).step_by(parts).collect(),
                shard_pos: 0,
                after: None,
                walked: false,
                window: Vec::new(),
                window_limit: (self.window_limit / parts).max(1),
                pos: 0,
                scratch: Vec::new(),
                limit: self.limit,
                reading: None,
                passes: Some(passes.clone()),
            })
            .collect()
    }

    /// Calls `visit` for every document, split over up to `threads` threads (capped at
    /// [`MAX_SCAN_THREADS`]; a small collection is read on the calling thread). Each thread
    /// walks its own share of the index shards, sorts and reads it, and folds into its own
    /// state, made by `init`; the states are returned (one per thread used). The first error
    /// stops the scan (other threads finish their share) and is returned.
    pub fn for_each_parallel<S, I, V>(self, threads: usize, init: I, visit: V) -> Result<Vec<S>>
    where
        S: Send,
        I: Fn() -> S,
        V: Fn(&mut S, RawDocument<'_>) -> Result<()> + Sync,
    {
        let run = |mut scan: OrderedScan, mut state: S| -> Result<S> {
            while let Some(doc) = scan.next_raw() {
                visit(&mut state, doc?)?;
            }
            Ok(state)
        };
        let threads = threads.clamp(1, MAX_SCAN_THREADS);
        let small = self.col.count_at(self.snap.tick()) < PARALLEL_MIN as u64;
        if threads == 1 || small {
            return Ok(vec![run(self, init())?]);
        }
        let run = &run;
        let scans = self.split(threads);
        let states: Vec<S> = scans.iter().map(|_| init()).collect();
        let results: Vec<Result<S>> = std::thread::scope(|scope| {
            let handles: Vec<_> = scans
                .into_iter()
                .zip(states)
                .map(|(scan, state)| scope.spawn(move || run(scan, state)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::with_message(
                            ErrorCode::Internal,
                            "a scan thread panicked",
                        ))
                    })
                })
                .collect()
        });
        results.into_iter().collect()
    }
}

/// How many documents ahead of the one being read the scan asks the CPU to fetch.
const PREFETCH_AHEAD: usize = 8;
/// How much of a marker is fetched ahead: header, key and the first attributes of the body
/// (what a projection or a grouped count usually reads).
const PREFETCH_BYTES: usize = 320;

/// Starts loading the beginning of the marker at `slot` into the cache. Documents are read
/// one after the other but rarely share a cache line or page, so without this every marker
/// header costs a full memory (and often TLB) miss, which dominated the scan's profile.
#[allow(unsafe_code)]
#[inline]
fn prefetch(files: &[Pinned], slot: Slot) {
    #[cfg(target_arch = "x86_64")]
    if let Some(map) = files.get(slot.file()).and_then(|p| p.map.as_deref()) {
        let start = map.as_ptr().wrapping_add(slot.offset());
        let len = PREFETCH_BYTES.min(slot.len as usize);
        for line in (0..len).step_by(64) {
            // SAFETY: a prefetch is only a hint: it never faults and has no architectural
            // effect, whatever the address (it lies inside the map here anyway).
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    start.wrapping_add(line).cast(),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (files, slot);
}

/// Reads and decodes the document marker at `slot` from the pinned files.
fn read<'a>(
    files: &'a [Pinned],
    slot: Slot,
    scratch: &'a mut Vec<u8>,
    cid: u64,
    inner: &Inner,
) -> Result<RawDocument<'a>> {
    let pinned = files
        .get(slot.file())
        .ok_or_else(|| Error::with_message(ErrorCode::Internal, "scan file not pinned"))?;
    let bad = |why: &str| {
        Error::with_message(
            ErrorCode::CorruptedDatafile,
            format!(
                "collection {cid}: marker at file {} offset {} is {why}",
                pinned.file.fid,
                slot.offset()
            ),
        )
    };
    let start = slot.offset();
    let end = start + slot.len as usize;
    let buf: &'a [u8] = match pinned.map.as_deref().and_then(|m| m.get(start..end)) {
        Some(b) => b,
        None => {
            scratch.resize(slot.len as usize, 0);
            std::os::unix::fs::FileExt::read_exact_at(&pinned.file.file, scratch, start as u64)
                .map_err(|e| crate::files::io_error(e, "reading a document"))?;
            scratch
        }
    };
    let marker = if pinned.trusted {
        format::decode_trusted(buf)
    } else {
        format::decode(buf)
    }
    .map_err(|_| {
        let err = bad("damaged (checksum mismatch)");
        inner.checksum_failure(pinned.file.slot, slot.offset() as u64, err)
    })?;
    let body = format::data_body(&marker).map_err(|_| bad("malformed"))?;
    Ok(RawDocument {
        key: body.key,
        rev: Revision(body.rev),
        body: body.doc,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use bytes::Bytes;

    use crate::{CollectionOptions, CompactionOptions, Engine, EngineOptions, WriteBatch};

    /// Small files, so that a few hundred documents spread over WAL segments, a journal and
    /// several sealed datafiles; background work off, so the tests decide when it happens.
    fn open(dir: &std::path::Path) -> Engine {
        open_with(dir, true)
    }

    /// [`open`], choosing whether startup proves the sealed datafiles intact.
    fn open_with(dir: &std::path::Path, verify_datafiles_on_open: bool) -> Engine {
        let options = EngineOptions {
            verify_datafiles_on_open,
            journal_size_default: 8 * 1024,
            min_journal_size: crate::JOURNAL_SIZE_FLOOR,
            sync_interval: Duration::from_millis(5),
            wal_logfile_size: 16 * 1024,
            compaction: CompactionOptions {
                background: false,
                ..CompactionOptions::default()
            },
            background_collector: false,
            ..EngineOptions::default()
        };
        Engine::open(dir, options).expect("open")
    }

    fn setup(engine: &Engine) -> u64 {
        let db = engine
            .create_database(serde_json::json!({"name": "test"}))
            .unwrap();
        engine
            .create_collection(
                db,
                CollectionOptions::default(),
                serde_json::json!({"name": "c"}),
            )
            .unwrap()
    }

    fn put(engine: &Engine, cid: u64, key: &str, body: &str) {
        let mut b = WriteBatch::new();
        b.put(cid, key, engine.hlc().next(), Bytes::from(body.to_string()));
        engine.commit(b).unwrap().wait().unwrap();
    }

    fn remove(engine: &Engine, cid: u64, key: &str) {
        let mut b = WriteBatch::new();
        b.remove(cid, key, engine.hlc().next());
        engine.commit(b).unwrap().wait().unwrap();
    }

    fn body(i: usize, round: usize) -> String {
        format!(
            "{{\"i\":{i},\"round\":{round},\"pad\":\"{}\"}}",
            "x".repeat(i % 40)
        )
    }

    fn key_order(snap: &crate::Snapshot, cid: u64) -> BTreeMap<String, String> {
        snap.scan(cid)
            .unwrap()
            .map(|r| {
                let (k, d) = r.unwrap();
                (k, String::from_utf8(d.body.to_vec()).unwrap())
            })
            .collect()
    }

    /// Drains an ordered scan (windows of `window` locations); asserts no key twice.
    fn file_order(
        snap: &crate::Snapshot,
        cid: u64,
        window: usize,
    ) -> crate::Result<BTreeMap<String, String>> {
        let mut scan = snap.ordered_scan(cid)?;
        scan.window_limit = window;
        let mut out = BTreeMap::new();
        while let Some(doc) = scan.next_raw() {
            let doc = doc?;
            let old = out.insert(
                doc.key.to_string(),
                String::from_utf8(doc.body.to_vec()).unwrap(),
            );
            assert!(old.is_none(), "{} seen twice", doc.key);
        }
        Ok(out)
    }

    /// Documents in sealed datafiles, the journal and the WAL, some updated and removed.
    fn mixed(engine: &Engine, cid: u64) {
        for i in 0..600 {
            put(engine, cid, &format!("k{i:04}"), &body(i, 0));
        }
        engine.collect().unwrap();
        for i in (0..600).step_by(3) {
            put(engine, cid, &format!("k{i:04}"), &body(i, 1));
        }
        for i in (1..600).step_by(7) {
            remove(engine, cid, &format!("k{i:04}"));
        }
        engine.collect().unwrap();
        for i in 600..700 {
            put(engine, cid, &format!("k{i:04}"), &body(i, 0));
        }
    }

    #[test]
    fn file_order_and_key_order_give_the_same_documents() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        let cid = setup(&engine);
        mixed(&engine, cid);
        let snap = engine.snapshot();
        let want = key_order(&snap, cid);
        assert!(want.len() > 500);
        // One window, many small windows, and windows smaller than an index chunk.
        for window in [super::WINDOW, 300, 1] {
            assert_eq!(
                file_order(&snap, cid, window).unwrap(),
                want,
                "window {window}"
            );
        }
        // The parallel variant sees the same multiset, split over threads.
        let parts = snap
            .ordered_scan(cid)
            .unwrap()
            .for_each_parallel(2, Vec::new, |seen: &mut Vec<(String, String)>, doc| {
                seen.push((
                    doc.key.to_string(),
                    String::from_utf8(doc.body.to_vec()).unwrap(),
                ));
                Ok(())
            })
            .unwrap();
        let mut all: Vec<(String, String)> = parts.into_iter().flatten().collect();
        all.sort();
        assert_eq!(all, want.into_iter().collect::<Vec<_>>());
        engine.shutdown().unwrap();
    }

    #[test]
    fn a_file_is_released_once_every_thread_has_passed_it_or_too_many_wait() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        let cid = setup(&engine);
        mixed(&engine, cid);
        let snap = engine.snapshot();
        let mut scan = snap.ordered_scan(cid).unwrap();
        assert!(scan.fill().unwrap());
        let files: Vec<_> = scan.files.iter().map(|p| p.file.clone()).collect();
        let want = 2 * super::HELD_PER_THREAD + 2;
        assert!(files.len() >= want, "{} files", files.len());
        let fids = |v: Vec<std::sync::Arc<crate::files::DataFile>>| {
            v.iter().map(|f| f.fid).collect::<Vec<_>>()
        };
        // Two threads in step: a file goes when the second passes it.
        let passes = super::FilePasses::new(2);
        assert!(passes.pass(&files[0]).is_empty());
        assert!(passes.pass(&files[1]).is_empty());
        assert_eq!(fids(passes.pass(&files[0])), vec![files[0].fid]);
        assert_eq!(fids(passes.pass(&files[1])), vec![files[1].fid]);
        assert!(passes.state.lock().waiting.is_empty());
        // One thread far ahead of the other: at most HELD_PER_THREAD files per thread wait;
        // the oldest goes first.
        let ahead = super::FilePasses::new(2);
        let mut released = Vec::new();
        for f in &files[..want] {
            released.extend(fids(ahead.pass(f)));
            assert!(ahead.state.lock().waiting.len() <= 2 * super::HELD_PER_THREAD);
        }
        assert_eq!(released, vec![files[0].fid, files[1].fid]);
        // A single thread releases every file it passes.
        let one = super::FilePasses::new(1);
        assert_eq!(fids(one.pass(&files[2])), vec![files[2].fid]);
        engine.shutdown().unwrap();
    }

    #[test]
    fn parallel_scan_splits_large_windows_over_threads() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        let cid = setup(&engine);
        let n = super::PARALLEL_MIN + 100;
        let mut batch = WriteBatch::new();
        for i in 0..n {
            batch.put(
                cid,
                &format!("k{i}"),
                engine.hlc().next(),
                Bytes::from_static(b"{}"),
            );
        }
        engine.commit(batch).unwrap().wait().unwrap();
        let parts = engine
            .snapshot()
            .ordered_scan(cid)
            .unwrap()
            .for_each_parallel(
                2,
                || 0u64,
                |count, _| {
                    *count += 1;
                    Ok(())
                },
            )
            .unwrap();
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|&c| c > 0), "{parts:?}");
        assert_eq!(parts.iter().sum::<u64>(), n as u64);
        engine.shutdown().unwrap();
    }

    #[test]
    fn a_scan_sees_its_snapshot_across_updates_collection_and_compaction() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        let cid = setup(&engine);
        mixed(&engine, cid);
        let snap = engine.snapshot();
        let want = key_order(&snap, cid);
        // Updated after the snapshot but before the scan starts: invisible to it.
        put(&engine, cid, "k0000", &body(0, 9));
        put(&engine, cid, "new", "{}");
        let mut scan = snap.ordered_scan(cid).unwrap();
        scan.window_limit = 300;
        let mut seen = BTreeMap::new();
        let mut n = 0;
        while let Some(doc) = scan.next_raw() {
            let doc = doc.unwrap();
            assert!(seen
                .insert(
                    doc.key.to_string(),
                    String::from_utf8(doc.body.to_vec()).unwrap()
                )
                .is_none());
            n += 1;
            if n == 10 || n == 400 {
                // Mid-scan (inside the first window, and inside a later one): rewrite
                // everything, move it through the collector and the compactor.
                for i in 0..700 {
                    put(&engine, cid, &format!("k{i:04}"), &body(i, n));
                }
                engine.collect().unwrap();
                engine.compact(cid).unwrap();
            }
        }
        assert_eq!(seen, want);
        engine.shutdown().unwrap();
    }

    #[test]
    fn a_truncate_hides_older_documents_from_later_snapshots_only() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        let cid = setup(&engine);
        mixed(&engine, cid);
        let before = engine.snapshot();
        let want_before = key_order(&before, cid);
        engine.truncate(cid, false).unwrap().wait().unwrap();
        put(&engine, cid, "after", "{}");
        let after = engine.snapshot();
        assert_eq!(file_order(&before, cid, 300).unwrap(), want_before);
        let now = file_order(&after, cid, 300).unwrap();
        assert_eq!(now, key_order(&after, cid));
        assert_eq!(now.keys().collect::<Vec<_>>(), ["after"]);
        engine.shutdown().unwrap();
    }

    #[test]
    fn a_damaged_marker_in_a_sealed_datafile_still_fails_the_scan() {
        let dir = tempfile::tempdir().unwrap();
        let (cid, victim);
        {
            let engine = open(dir.path());
            cid = setup(&engine);
            for i in 0..300 {
                put(&engine, cid, &format!("k{i:04}"), &body(i, 0));
            }
            engine.collect().unwrap();
            // Intact: the sealed files verify and the scan reads them all.
            let snap = engine.snapshot();
            assert_eq!(file_order(&snap, cid, 50).unwrap(), key_order(&snap, cid));
            drop(snap);
            engine.shutdown().unwrap();
            let mut datafiles = Vec::new();
            for entry in walk(dir.path()) {
                let name = entry.file_name().unwrap().to_string_lossy().to_string();
                if name.starts_with("datafile-") && name.ends_with(".db") {
                    datafiles.push(entry);
                }
            }
            datafiles.sort();
            assert!(datafiles.len() > 2, "{datafiles:?}");
            victim = datafiles[1].clone();
        }
        // Flip one byte inside a document body; the hint file stays. Startup's verification
        // finds it (the collection fails to open); without that verification (damage that
        // appears while the server runs looks the same) only the scan meets the damage.
        let mut image = std::fs::read(&victim).unwrap();
        let m = crate::format::scan(&image).markers[2];
        image[m.offset + m.len - 2] ^= 0x20;
        std::fs::write(&victim, &image).unwrap();
        {
            let engine = open(dir.path());
            let err = engine.snapshot().ordered_scan(cid).err().map(|e| e.code);
            assert_eq!(err, Some(quiver_errors::ErrorCode::CorruptedDatafile));
            engine.shutdown().unwrap();
        }
        let engine = open_with(dir.path(), false);
        let snap = engine.snapshot();
        for window in [super::WINDOW, 7] {
            let err = file_order(&snap, cid, window).unwrap_err();
            assert_eq!(
                err.code,
                quiver_errors::ErrorCode::CorruptedDatafile,
                "{err:?}"
            );
        }
        let err = snap
            .ordered_scan(cid)
            .unwrap()
            .for_each_parallel(2, || (), |_, _| Ok(()))
            .unwrap_err();
        assert_eq!(err.code, quiver_errors::ErrorCode::CorruptedDatafile);
        drop(snap);
        engine.shutdown().unwrap();
    }

    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
        out
    }
}
