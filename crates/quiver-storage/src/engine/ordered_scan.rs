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
//! (`mapped_budget.rs`). Under the limit nothing is released.
//!
//! Parallel scans ([`OrderedScan::for_each_parallel`]) split the reading by storage order,
//! not by index shard: the threads walk their shares of the index shards in parallel, each
//! sorts its share, and each then reads one contiguous stretch of the combined order. So every
//! page is read (and mapped, and released) by one thread only — but for the pages where two
//! stretches meet — and no thread waits for another to finish with a file. (When each thread
//! read its own shards' documents, both threads read every file, and in the full-scale Pokec
//! aggregation's profile mapping and unmapping the same pages twice was about 40 % of the
//! server's CPU.)

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

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

/// A location in a window: `at` packs the index into `OrderedScan::files` (high 32 bits; in
/// the walks of a parallel scan the file's slot, [`Loc::slot`], which every thread numbers
/// alike) and the offset (low 32 bits), so that sorting by it groups by file and orders by
/// offset.
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

#[derive(Clone)]
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
    /// The walk of one thread of a parallel scan: windows hold file slots, not indexes into
    /// `files` (see [`Slot`]), and are read by [`Rounds`], not by [`OrderedScan::next_raw`].
    by_file_slot: bool,
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
            by_file_slot: false,
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
            let by_file_slot = self.by_file_slot;
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
                    let file = if by_file_slot {
                        loc.slot as u64
                    } else {
                        i as u64
                    };
                    window.push(Slot {
                        at: file << 32 | loc.offset as u64,
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
        assert!(
            !self.by_file_slot,
            "a walk of a parallel scan is not read by next_raw"
        );
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
        debug_assert!(!self.by_file_slot, "a walk's windows are read by Rounds");
        if let Some(i) = self.reading.take() {
            if over_limit(self.limit) {
                self.files[i].file.release_mapped_pages();
            }
        }
    }

    /// Splits this (not yet started) scan into up to `parts` walks over disjoint sets of
    /// index shards, which together see exactly the documents this one would (see
    /// [`Rounds`] for how they are read).
    fn split(self, parts: usize) -> Vec<OrderedScan> {
        let parts = parts.clamp(1, self.shards.len().max(1));
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
                by_file_slot: true,
            })
            .collect()
    }

    /// This walk's next window as a [`Run`]: its locations sorted by (file slot, offset) and
    /// the files they point into. Empty once the walk is done.
    fn next_run(&mut self) -> Result<Run> {
        debug_assert!(self.by_file_slot);
        self.fill()?;
        let pinned = self
            .file_index
            .iter()
            .map(|(&slot, &i)| (slot, self.files[i].clone()))
            .collect();
        Ok(Run {
            slots: std::mem::take(&mut self.window),
            pinned,
        })
    }

    /// Calls `visit` for every document, split over up to `threads` threads (capped at
    /// [`MAX_SCAN_THREADS`]; a small collection is read on the calling thread). Each thread
    /// walks its share of the index shards, and reads one stretch of the combined storage
    /// order ([`Rounds`]), folding into its own state, made by `init`; the states are returned
    /// (one per thread used). The first error (or a panic of `visit`) stops the scan and is
    /// returned.
    pub fn for_each_parallel<S, I, V>(self, threads: usize, init: I, visit: V) -> Result<Vec<S>>
    where
        S: Send,
        I: Fn() -> S,
        V: Fn(&mut S, RawDocument<'_>) -> Result<()> + Sync,
    {
        let threads = threads.clamp(1, MAX_SCAN_THREADS);
        let small = self.col.count_at(self.snap.tick()) < PARALLEL_MIN as u64;
        if threads == 1 || small {
            let mut scan = self;
            let mut state = init();
            while let Some(doc) = scan.next_raw() {
                visit(&mut state, doc?)?;
            }
            return Ok(vec![state]);
        }
        let walks = self.split(threads);
        let rounds = Rounds::new(walks.len());
        let visit = &visit;
        let rounds = &rounds;
        let states: Vec<S> = walks.iter().map(|_| init()).collect();
        let results: Vec<(S, Option<Error>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = walks
                .into_iter()
                .zip(states)
                .enumerate()
                .map(|(me, (walk, state))| scope.spawn(move || rounds.run(me, walk, state, visit)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a scan thread catches its panics"))
                .collect()
        });
        let mut states = Vec::with_capacity(results.len());
        let mut first_error = None;
        for (state, error) in results {
            states.push(state);
            if first_error.is_none() {
                first_error = error;
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(states),
        }
    }
}

/// One walk's window of a parallel scan: its locations, sorted by (file slot, offset), and
/// the files they point into, pinned (by file slot).
struct Run {
    slots: Vec<Slot>,
    pinned: HashMap<u32, Pinned>,
}

/// How much of a file a stretch copies with one `pread` when it reads the file without its
/// map (over the mapped limit): the markers of a stretch lie in increasing offsets, mostly
/// back to back, so one read serves many, and they are read from the cache right after (the
/// chunk is small enough to stay in a core's L2 cache while its markers are decoded).
const COPY_CHUNK: usize = 256 << 10;

/// How many documents a stretch reads between two looks at whether another thread failed
/// (a killed query stops all its threads within this many documents each).
const FAILED_CHECK: usize = 1024;

/// Samples per run from which the threads of a round choose where their stretches begin.
const SPLIT_SAMPLES: usize = 256;

/// The rounds of one parallel scan. In each round every thread walks the next window of its
/// index shards and sorts it (a [`Run`]), all runs are published, and then each thread reads
/// its stretch of their combined (file slot, offset) order: thread `t` of `n` reads from the
/// `t`-th to the `t+1`-th `n`-quantile, chosen alike by every thread from samples of the runs,
/// merging the runs' parts in that stretch. A thread's stretch moves through the files front
/// to back, so it releases a file's pages (over the mapped limit) as soon as it moves on; only
/// the file where two stretches meet is read by two threads.
///
/// Two barriers per round keep the threads in step: after the first every run of the round
/// is published and every thread knows whether this is the last round (no walk has more, or
/// a thread failed); after the second every thread holds the round's runs, so the next
/// round's may replace them. Every thread takes part in every round until the last, also
/// after an error or a panic (caught), so none waits at a barrier forever.
struct Rounds {
    threads: usize,
    barrier: Barrier,
    runs: Mutex<Vec<Option<Arc<Run>>>>,
    /// Threads whose walk has more to give.
    walking: AtomicUsize,
    failed: AtomicBool,
}

impl Rounds {
    fn new(threads: usize) -> Rounds {
        Rounds {
            threads,
            barrier: Barrier::new(threads),
            runs: Mutex::new(vec![None; threads]),
            walking: AtomicUsize::new(threads),
            failed: AtomicBool::new(false),
        }
    }

    /// One thread's part of the scan: walks, publishes, reads its stretches; returns its state
    /// and its first error.
    fn run<S, V>(
        &self,
        me: usize,
        mut walk: OrderedScan,
        mut state: S,
        visit: &V,
    ) -> (S, Option<Error>)
    where
        V: Fn(&mut S, RawDocument<'_>) -> Result<()> + Sync,
    {
        let mut error: Option<Error> = None;
        let mut counted_done = false;
        let mut reader = StretchReader::default();
        // Bounded: every round takes one window from each walk that has more, and the walks
        // end; a failure makes the next round the last.
        loop {
            if !self.failed.load(Ordering::Acquire) && !walk.walked {
                let run = guarded(|| walk.next_run());
                match run {
                    Ok(run) => self.runs.lock()[me] = Some(Arc::new(run)),
                    Err(e) => {
                        walk.walked = true;
                        self.fail(&mut error, e);
                    }
                }
            } else {
                self.runs.lock()[me] = None;
            }
            if (walk.walked || self.failed.load(Ordering::Acquire)) && !counted_done {
                counted_done = true;
                self.walking.fetch_sub(1, Ordering::AcqRel);
            }
            self.barrier.wait();
            let last =
                self.walking.load(Ordering::Acquire) == 0 || self.failed.load(Ordering::Acquire);
            let runs: Vec<Arc<Run>> = self.runs.lock().iter().flatten().cloned().collect();
            self.barrier.wait();
            if !self.failed.load(Ordering::Acquire) {
                let outcome = guarded(|| {
                    reader.read(&runs, me, self.threads, &walk, &self.failed, &mut |doc| {
                        visit(&mut state, doc)
                    })
                });
                if let Err(e) = outcome {
                    self.fail(&mut error, e);
                }
            }
            if last {
                return (state, error);
            }
        }
    }

    fn fail(&self, error: &mut Option<Error>, e: Error) {
        error.get_or_insert(e);
        self.failed.store(true, Ordering::Release);
    }
}

/// Runs `f`, turning a panic into an error (a thread of a parallel scan must go on taking
/// part in its rounds, see [`Rounds`]).
fn guarded<T>(f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(Error::with_message(
            ErrorCode::Internal,
            "a scan thread panicked",
        ))
    })
}

/// Reads one thread's stretch of a round (see [`Rounds`]); keeps its read buffer across
/// rounds.
#[derive(Default)]
struct StretchReader {
    scratch: Vec<u8>,
    /// Bytes of the file being read through `pread` (see [`StretchReader::read`]), and the
    /// file offset of its first byte.
    chunk: Vec<u8>,
    chunk_at: usize,
}

impl StretchReader {
    /// Reads the stretch of thread `me` of `threads` over `runs` in storage order, calling
    /// `visit` for each document; stops early (every [`FAILED_CHECK`] documents it looks)
    /// once another thread has `failed`, which ends the scan anyway.
    fn read(
        &mut self,
        runs: &[Arc<Run>],
        me: usize,
        threads: usize,
        walk: &OrderedScan,
        failed: &AtomicBool,
        visit: &mut dyn FnMut(RawDocument<'_>) -> Result<()>,
    ) -> Result<()> {
        let (from, to) = stretch(runs, me, threads);
        // Per run: the next position and the end of this thread's part.
        let mut cursors: Vec<(usize, usize)> = runs
            .iter()
            .map(|run| {
                let lo = from.map_or(0, |k| run.slots.partition_point(|s| s.at < k));
                let hi = to.map_or(run.slots.len(), |k| run.slots.partition_point(|s| s.at < k));
                (lo, hi.max(lo))
            })
            .collect();
        let cid = walk.col.id;
        let inner = walk.snap.inner();
        let too_large = walk.limit.is_some_and(|limit| mapped_bytes(runs) > limit);
        // The file being read, and its length when it is read through `pread` rather than its
        // map.
        let mut reading: Option<(u32, &Pinned, Option<usize>)> = None;
        let mut read = 0usize;
        // Bounded: every step advances one cursor towards its end.
        loop {
            read += 1;
            if read % FAILED_CHECK == 0 && failed.load(Ordering::Relaxed) {
                break;
            }
            let mut best: Option<(usize, Slot)> = None;
            for (r, &(pos, end)) in cursors.iter().enumerate() {
                if pos < end {
                    let slot = runs[r].slots[pos];
                    if best.is_none_or(|(_, b)| slot.at < b.at) {
                        best = Some((r, slot));
                    }
                }
            }
            let Some((r, slot)) = best else { break };
            let run = &runs[r];
            cursors[r].0 += 1;
            let file_slot = slot.file() as u32;
            let (pinned, copied) = match reading {
                Some((s, p, copied)) if s == file_slot => (p, copied),
                _ => {
                    if let Some((_, done, None)) = reading {
                        if over_limit(walk.limit) {
                            done.file.release_mapped_pages();
                        }
                    }
                    let p = run.pinned.get(&file_slot).ok_or_else(|| {
                        Error::with_message(ErrorCode::Internal, "scan file not pinned")
                    })?;
                    // Mapping a file only to release it again costs more than copying it: so
                    // when the scan's files do not fit the mapped limit, or the limit is
                    // reached already.
                    let copied = (p.map.is_none() || too_large || over_limit(walk.limit))
                        .then(|| p.file.len() as usize);
                    self.chunk.clear();
                    self.chunk_at = 0;
                    reading = Some((file_slot, p, copied));
                    (p, copied)
                }
            };
            let doc = if let Some(file_len) = copied {
                let (offset, len) = (slot.offset(), slot.len as usize);
                let buf = self.copied(pinned, file_len, offset, len, cid)?;
                decode_document(pinned, buf, offset, cid, inner)?
            } else {
                if let Some(&ahead) = run.slots.get(cursors[r].0 + PREFETCH_AHEAD) {
                    if ahead.file() as u32 == file_slot {
                        prefetch_at(pinned, ahead.offset(), ahead.len);
                    }
                }
                read_at(
                    pinned,
                    slot.offset(),
                    slot.len,
                    &mut self.scratch,
                    cid,
                    inner,
                )?
            };
            visit(doc)?;
        }
        if let Some((_, done, None)) = reading {
            if over_limit(walk.limit) {
                done.file.release_mapped_pages();
            }
        }
        Ok(())
    }

    /// The `len` bytes at `offset` of a file of `file_len` bytes read through `pread`: from the
    /// chunk in hand, or from a new [`COPY_CHUNK`] read starting at `offset`.
    fn copied(
        &mut self,
        pinned: &Pinned,
        file_len: usize,
        offset: usize,
        len: usize,
        cid: u64,
    ) -> Result<&[u8]> {
        if offset < self.chunk_at || offset + len > self.chunk_at + self.chunk.len() {
            let want = COPY_CHUNK.max(len).min(file_len.saturating_sub(offset));
            if want < len {
                return Err(Error::with_message(
                    ErrorCode::CorruptedDatafile,
                    format!(
                        "collection {cid}: marker at file {} offset {offset} runs past the \
                         file's end",
                        pinned.file.fid
                    ),
                ));
            }
            self.chunk.resize(want, 0);
            std::os::unix::fs::FileExt::read_exact_at(
                &pinned.file.file,
                &mut self.chunk,
                offset as u64,
            )
            .map_err(|e| crate::files::io_error(e, "reading documents"))?;
            self.chunk_at = offset;
        }
        let from = offset - self.chunk_at;
        Ok(&self.chunk[from..from + len])
    }
}

/// The bytes of the files `runs` point into (each file once), as mapped.
fn mapped_bytes(runs: &[Arc<Run>]) -> u64 {
    let mut seen = HashSet::new();
    runs.iter()
        .flat_map(|run| run.pinned.iter())
        .filter(|(slot, _)| seen.insert(**slot))
        .map(|(_, p)| p.map.as_deref().map_or(0, |m| m.len() as u64))
        .sum()
}

/// Where the stretch of thread `me` of `threads` begins and ends in the combined order of
/// `runs` (None: the start, the end). Every thread computes the same bounds: from up to
/// [`SPLIT_SAMPLES`] keys of each run, each standing for its share of that run.
fn stretch(runs: &[Arc<Run>], me: usize, threads: usize) -> (Option<u64>, Option<u64>) {
    let total: usize = runs.iter().map(|r| r.slots.len()).sum();
    if total == 0 || threads <= 1 {
        return (None, None);
    }
    let mut samples: Vec<(u64, f64)> = Vec::new();
    for run in runs {
        let n = run.slots.len();
        if n == 0 {
            continue;
        }
        let step = n.div_ceil(SPLIT_SAMPLES).max(1);
        let mut i = 0;
        while i < n {
            samples.push((run.slots[i].at, step.min(n - i) as f64));
            i += step;
        }
    }
    samples.sort_unstable_by_key(|s| s.0);
    // The key at which the cumulative weight reaches `k / threads` of the total.
    let bound = |k: usize| -> Option<u64> {
        if k == 0 || k >= threads {
            return None;
        }
        let target = total as f64 * k as f64 / threads as f64;
        let mut sum = 0.0;
        for &(at, weight) in &samples {
            if sum >= target {
                return Some(at);
            }
            sum += weight;
        }
        samples.last().map(|s| s.0.saturating_add(1))
    };
    (bound(me), bound(me + 1))
}

/// How many documents ahead of the one being read the scan asks the CPU to fetch.
const PREFETCH_AHEAD: usize = 8;
/// How much of a marker is fetched ahead: header, key and the first attributes of the body
/// (what a projection or a grouped count usually reads).
const PREFETCH_BYTES: usize = 320;

/// Starts loading the beginning of the marker at `slot` into the cache. Documents are read
/// one after the other but rarely share a cache line or page, so without this every marker
/// header costs a full memory (and often TLB) miss, which dominated the scan's profile.
#[inline]
fn prefetch(files: &[Pinned], slot: Slot) {
    if let Some(pinned) = files.get(slot.file()) {
        prefetch_at(pinned, slot.offset(), slot.len);
    }
}

/// [`prefetch`] of the marker at `offset` (`len` bytes) of a pinned file.
#[allow(unsafe_code)]
#[inline]
fn prefetch_at(pinned: &Pinned, offset: usize, len: u32) {
    #[cfg(target_arch = "x86_64")]
    if let Some(map) = pinned.map.as_deref() {
        let start = map.as_ptr().wrapping_add(offset);
        let len = PREFETCH_BYTES.min(len as usize);
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
    let _ = (pinned, offset, len);
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
    read_at(pinned, slot.offset(), slot.len, scratch, cid, inner)
}

/// Reads and decodes the document marker at `offset` (`len` bytes) of a pinned file.
fn read_at<'a>(
    pinned: &'a Pinned,
    offset: usize,
    len: u32,
    scratch: &'a mut Vec<u8>,
    cid: u64,
    inner: &Inner,
) -> Result<RawDocument<'a>> {
    let start = offset;
    let end = start + len as usize;
    let buf: &'a [u8] = match pinned.map.as_deref().and_then(|m| m.get(start..end)) {
        Some(b) => b,
        None => {
            scratch.resize(len as usize, 0);
            std::os::unix::fs::FileExt::read_exact_at(&pinned.file.file, scratch, start as u64)
                .map_err(|e| crate::files::io_error(e, "reading a document"))?;
            scratch
        }
    };
    decode_document(pinned, buf, offset, cid, inner)
}

/// Decodes the document marker `buf`, read from `offset` of a pinned file.
fn decode_document<'a>(
    pinned: &Pinned,
    buf: &'a [u8],
    offset: usize,
    cid: u64,
    inner: &Inner,
) -> Result<RawDocument<'a>> {
    let bad = |why: &str| {
        Error::with_message(
            ErrorCode::CorruptedDatafile,
            format!(
                "collection {cid}: marker at file {} offset {offset} is {why}",
                pinned.file.fid
            ),
        )
    };
    let marker = if pinned.trusted {
        format::decode_trusted(buf)
    } else {
        format::decode(buf)
    }
    .map_err(|_| {
        let err = bad("damaged (checksum mismatch)");
        inner.checksum_failure(pinned.file.slot, offset as u64, err)
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
        open_limited(dir, verify_datafiles_on_open, None)
    }

    /// [`open_with`] with a mapped memory limit (`Some(1)`: always over it, so that the
    /// stretches of a parallel scan copy their files instead of reading their maps).
    fn open_limited(
        dir: &std::path::Path,
        verify_datafiles_on_open: bool,
        mapped_memory_limit: Option<u64>,
    ) -> Engine {
        let options = EngineOptions {
            mapped_memory_limit,
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

    /// More documents than a scan reads on one thread, over many small datafiles, some
    /// updated and removed, plus newer ones in the WAL.
    fn many(engine: &Engine, cid: u64) -> usize {
        let n = super::PARALLEL_MIN + 5000;
        for chunk in (0..n).collect::<Vec<_>>().chunks(4096) {
            let mut batch = WriteBatch::new();
            for &i in chunk {
                batch.put(
                    cid,
                    &format!("k{i:06}"),
                    engine.hlc().next(),
                    Bytes::from(body(i, 0)),
                );
            }
            engine.commit(batch).unwrap().wait().unwrap();
        }
        engine.collect().unwrap();
        for i in (0..n).step_by(5) {
            put(engine, cid, &format!("k{i:06}"), &body(i, 1));
        }
        for i in (1..n).step_by(11) {
            remove(engine, cid, &format!("k{i:06}"));
        }
        n
    }

    /// Every document of a parallel scan (windows of `window` locations in all), with the
    /// number each thread read.
    fn parallel(
        snap: &crate::Snapshot,
        cid: u64,
        threads: usize,
        window: usize,
    ) -> (Vec<(String, String)>, Vec<usize>) {
        let mut scan = snap.ordered_scan(cid).unwrap();
        scan.window_limit = window;
        let parts = scan
            .for_each_parallel(
                threads,
                Vec::new,
                |seen: &mut Vec<(String, String)>, doc| {
                    seen.push((
                        doc.key.to_string(),
                        String::from_utf8(doc.body.to_vec()).unwrap(),
                    ));
                    Ok(())
                },
            )
            .unwrap();
        let counts = parts.iter().map(Vec::len).collect();
        let mut all: Vec<(String, String)> = parts.into_iter().flatten().collect();
        all.sort();
        (all, counts)
    }

    #[test]
    fn parallel_stretches_read_every_document_once_in_any_number_of_rounds() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        let cid = setup(&engine);
        many(&engine, cid);
        let snap = engine.snapshot();
        let want: Vec<(String, String)> = key_order(&snap, cid).into_iter().collect();
        assert!(want.len() > super::PARALLEL_MIN);
        // One round, several rounds, and windows smaller than an index chunk (one round per
        // few chunks of each walk); two and three threads.
        for (threads, window) in [(2, super::WINDOW), (2, 5000), (3, 7000), (2, 100)] {
            let (all, counts) = parallel(&snap, cid, threads, window);
            assert_eq!(all, want, "{threads} threads, window {window}");
            assert_eq!(counts.len(), threads);
            // The stretches are about equal: a thread reads at least a third of its share.
            let share = want.len() / threads;
            assert!(
                counts.iter().all(|&c| c >= share / 3),
                "{threads} threads, window {window}: {counts:?}"
            );
        }
        engine.shutdown().unwrap();
    }

    #[test]
    fn parallel_stretches_over_the_mapped_limit_copy_their_files_and_read_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open_limited(dir.path(), true, Some(1));
        let cid = setup(&engine);
        many(&engine, cid);
        let snap = engine.snapshot();
        let want: Vec<(String, String)> = key_order(&snap, cid).into_iter().collect();
        for (threads, window) in [(2, super::WINDOW), (3, 4000)] {
            assert_eq!(
                parallel(&snap, cid, threads, window).0,
                want,
                "{threads}, {window}"
            );
        }
        engine.shutdown().unwrap();
    }

    #[test]
    fn an_error_or_a_panic_in_one_thread_ends_the_parallel_scan() {
        let dir = tempfile::tempdir().unwrap();
        let engine = open(dir.path());
        let cid = setup(&engine);
        many(&engine, cid);
        let snap = engine.snapshot();
        for window in [super::WINDOW, 3000] {
            let mut scan = snap.ordered_scan(cid).unwrap();
            scan.window_limit = window;
            let err = scan
                .for_each_parallel(
                    2,
                    || 0usize,
                    |n, doc| {
                        *n += 1;
                        if doc.key == "k000500" {
                            return Err(quiver_errors::Error::with_message(
                                quiver_errors::ErrorCode::QueryKilled,
                                "stop",
                            ));
                        }
                        Ok(())
                    },
                )
                .unwrap_err();
            assert_eq!(err.code, quiver_errors::ErrorCode::QueryKilled);
            let mut scan = snap.ordered_scan(cid).unwrap();
            scan.window_limit = window;
            let err = scan
                .for_each_parallel(
                    2,
                    || (),
                    |_, doc| {
                        assert_ne!(doc.key, "k030000", "a visit that panics");
                        Ok(())
                    },
                )
                .unwrap_err();
            assert_eq!(err.code, quiver_errors::ErrorCode::Internal);
            // The other threads stop soon after a failure, not at the end of their stretch.
            let visited = std::sync::atomic::AtomicUsize::new(0);
            let mut scan = snap.ordered_scan(cid).unwrap();
            scan.window_limit = window;
            scan.for_each_parallel(
                2,
                || (),
                |_, _| {
                    let n = visited.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if n == 10 {
                        return Err(quiver_errors::Error::new(
                            quiver_errors::ErrorCode::QueryKilled,
                        ));
                    }
                    Ok(())
                },
            )
            .unwrap_err();
            let visited = visited.into_inner();
            assert!(
                visited <= 11 + 2 * super::FAILED_CHECK,
                "{visited} documents visited after the failure"
            );
        }
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
