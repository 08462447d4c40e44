//! CPU time of a bulk load and of point lookups by key, measured as CPU time rather than wall
//! time (so that other work on a shared machine does not count): `N` small documents with
//! generated keys inserted in batches of 10,000 (the chunks `/_api/import` commits), timed by
//! the process's CPU clock (the engine's background threads included); then `ROUNDS` passes
//! of `get_raw` over every key in a shuffled order (a different one per pass, the same in
//! every run), timed by the calling thread's CPU clock (a lookup runs on the caller).
//!
//! `cargo run --release -p quiver-core --example lookup_cpu -- [N] [ROUNDS]`
//! (defaults 1000000 and 3).

// Reading the CPU clocks (`clock_gettime`) is the one use of `unsafe`.
#![allow(unsafe_code)]

use quiver_core::{CollectionSpec, Core, CoreOptions, InsertOptions};
use serde_json::json;

/// Seconds of CPU time of `clock` (`CLOCK_PROCESS_CPUTIME_ID` or `CLOCK_THREAD_CPUTIME_ID`).
fn cpu_seconds(clock: libc::clockid_t) -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids are constants of libc.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// A deterministic pseudo-random sequence (xorshift64*), so that every run probes in the
/// same order.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let rounds: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    let dir = tempfile::tempdir().expect("tempdir");
    let core = Core::open(dir.path(), CoreOptions::default()).expect("open");
    let db = core.database("_system").expect("_system");
    let coll = db
        .create_collection(CollectionSpec::new("lookups"))
        .expect("create");
    let opts = InsertOptions::new();

    let started = cpu_seconds(libc::CLOCK_PROCESS_CPUTIME_ID);
    let mut keys = Vec::with_capacity(n);
    let mut left = n;
    while left > 0 {
        let batch = left.min(10_000);
        let docs: Vec<_> = (0..batch).map(|i| json!({"a": i})).collect();
        let done = coll
            .insert_many(docs, &opts)
            .expect("insert")
            .wait()
            .expect("durable");
        for r in done {
            keys.push(r.expect("every insert succeeds").key);
        }
        left -= batch;
    }
    let insert = cpu_seconds(libc::CLOCK_PROCESS_CPUTIME_ID) - started;

    let mut rng = Rng(7);
    let mut lookup = 0.0;
    let mut bytes = 0usize;
    for _ in 0..rounds {
        // Fisher-Yates with the fixed sequence.
        for i in (1..keys.len()).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            keys.swap(i, j);
        }
        let started = cpu_seconds(libc::CLOCK_THREAD_CPUTIME_ID);
        for key in &keys {
            let (_, raw) = coll.get_raw(key, None).expect("get");
            bytes += raw.len();
        }
        lookup += cpu_seconds(libc::CLOCK_THREAD_CPUTIME_ID) - started;
    }
    println!(
        "n={n} insert (batches of 10,000): {:.3} us CPU per document (process)  \
         get_raw, shuffled keys: {:.1} ns CPU per lookup (thread, {rounds} rounds, {bytes} bytes read)",
        insert * 1e6 / n as f64,
        lookup * 1e9 / (n * rounds) as f64,
    );
    core.shutdown().expect("shutdown");
}
