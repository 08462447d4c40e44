//! Memory held per stored document, by component: a document collection with generated keys,
//! one with 10-character keys in random order, and an edge collection (generated keys, Pokec's
//! shape: about 19 edges per vertex), each filled with `N` tiny documents in batches of 10,000
//! (the chunks `/_api/import` commits).
//!
//! Every heap allocation goes through a counting allocator (bytes requested, so the allocator's
//! own rounding and headers are not included; the RSS column has them, with glibc's allocator).
//! Per collection it reports, divided by `N`: what is held after the inserts, after the WAL was
//! collected into journals, what dropping the collection frees (its primary index, its edge
//! index and whatever else the collection keeps per document), the engine's estimate of the
//! primary index, the edge index's own figure, and the live heap blocks.
//!
//! `cargo run --release -p quiver-core --example memory_per_document -- [N]` (default 1000000).

// The counting allocator below is the one use of `unsafe`: it forwards every call unchanged to
// the system allocator and only counts.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};

use quiver_core::{CollectionSpec, CollectionType, Core, CoreOptions, InsertOptions};
use serde_json::{json, Value};

struct Counting;

static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);
static LIVE_BLOCKS: AtomicI64 = AtomicI64::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments and returns its result
// unchanged; the counters are plain atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
            LIVE_BLOCKS.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
            LIVE_BLOCKS.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator (hence from `System`) with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        LIVE_BLOCKS.fetch_sub(1, Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`; `new_size` is the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Live heap bytes, live heap blocks and the process's anonymous RSS in bytes.
#[derive(Clone, Copy)]
struct Mark {
    bytes: i64,
    blocks: i64,
    rss_anon: i64,
}

fn mark() -> Mark {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rss_anon = status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(0)
        * 1024;
    Mark {
        bytes: LIVE_BYTES.load(Ordering::Relaxed),
        blocks: LIVE_BLOCKS.load(Ordering::Relaxed),
        rss_anon,
    }
}

/// A deterministic pseudo-random sequence (xorshift64*), so that every run inserts the same keys.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A 10-character key of digits and lower-case letters.
fn key10(rng: &mut Rng) -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut x = rng.next();
    (0..10)
        .map(|_| {
            let c = ALPHABET[(x % 36) as usize] as char;
            x /= 36;
            c
        })
        .collect()
}

enum Shape {
    GeneratedKeys,
    TenCharKeys,
    Edges,
}

impl Shape {
    fn name(&self) -> &'static str {
        match self {
            Shape::GeneratedKeys => "documents, generated keys",
            Shape::TenCharKeys => "documents, 10-char keys, random order",
            Shape::Edges => "edges, generated keys, ~19 per vertex",
        }
    }

    fn document(&self, rng: &mut Rng, vertices: u64) -> Value {
        match self {
            Shape::GeneratedKeys => json!({"a": 1}),
            Shape::TenCharKeys => json!({"_key": key10(rng), "a": 1}),
            Shape::Edges => json!({
                "_from": format!("profiles/P{}", rng.next() % vertices),
                "_to": format!("profiles/P{}", rng.next() % vertices),
            }),
        }
    }
}

fn per_doc(delta: i64, n: usize) -> f64 {
    delta as f64 / n as f64
}

fn measure(core: &Core, shape: Shape, n: usize, seed: u64) {
    let db = core.database("_system").expect("_system");
    let name = format!("memory{seed}");
    let mut spec = CollectionSpec::new(&name);
    if matches!(shape, Shape::Edges) {
        spec.collection_type = CollectionType::Edge;
    }
    let coll = db.create_collection(spec).expect("create");
    let cid = coll.id();
    let opts = InsertOptions::new();
    let mut rng = Rng(seed);
    let vertices = (n as u64 / 19).max(1);
    let before = mark();
    let started = std::time::Instant::now();
    let mut left = n;
    while left > 0 {
        let batch = left.min(10_000);
        let docs: Vec<Value> = (0..batch)
            .map(|_| shape.document(&mut rng, vertices))
            .collect();
        let done = coll
            .insert_many(docs, &opts)
            .expect("insert")
            .wait()
            .expect("durable");
        assert!(done.iter().all(|r| r.is_ok()), "every insert succeeds");
        left -= batch;
    }
    let seconds = started.elapsed().as_secs_f64();
    let inserted = mark();
    core.engine().collect().expect("collect");
    let collected = mark();
    let figures = core.engine().figures(cid).expect("figures");
    assert_eq!(figures.alive_count, n as u64, "every document is stored");
    let edge_index = coll
        .edge_index_stats()
        .expect("edge index")
        .map_or(0, |s| s.memory_bytes);
    drop(coll);
    db.drop_collection(&name, false).expect("drop");
    core.engine().collect().expect("collect");
    let dropped = mark();
    println!(
        "{} (N = {n}, {:.0} inserts/s)",
        shape.name(),
        n as f64 / seconds
    );
    println!(
        "  heap held after the inserts      {:7.1} B/doc",
        per_doc(inserted.bytes - before.bytes, n)
    );
    println!(
        "  heap held after collecting the WAL {:5.1} B/doc  ({:.2} live blocks/doc)",
        per_doc(collected.bytes - before.bytes, n),
        per_doc(collected.blocks - before.blocks, n)
    );
    println!(
        "  freed by dropping the collection {:7.1} B/doc",
        per_doc(collected.bytes - dropped.bytes, n)
    );
    println!(
        "    primary index (engine estimate) {:6.1} B/doc",
        per_doc(figures.index_memory as i64, n)
    );
    println!(
        "    edge index (its own figure)     {:6.1} B/doc",
        per_doc(edge_index as i64, n)
    );
    println!(
        "  RssAnon after collecting the WAL {:7.1} B/doc",
        per_doc(collected.rss_anon - before.rss_anon, n)
    );
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let core = Core::open(dir.path(), CoreOptions::default()).expect("open");
    measure(&core, Shape::GeneratedKeys, n, 1);
    measure(&core, Shape::TenCharKeys, n, 2);
    measure(&core, Shape::Edges, n, 3);
    core.shutdown().expect("shutdown");
}
