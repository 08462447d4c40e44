//! Engine-level benchmark (no HTTP): journal-size sweep, sync-writer scaling versus the raw
//! fdatasync rate of the same disk, reopen time and memory per document.
//!
//! Usage: engine_bench [--dir PATH] [--quick] [--docs N] [--only journal|sync|reopen]
//!        engine_bench [--dir PATH] --journal-one MIB OPS   (one journal run, one CSV line:
//!        insert/s,replace/s,get/s,remove/s,collect ms — for side-by-side A/B scripts)
//!        engine_bench [--dir PATH] [--gather-us US] [--window-ms MS] --sync-one WRITERS
//!        (one sync-scaling cell, one CSV line: raw fdatasync/s,sync inserts/s,
//!        non-sync inserts/s,fdatasyncs — for bench/storage/sync_ab.py)
//!        engine_bench --dir PATH --load-only N   (N documents into PATH, collected into
//!        datafiles and hint files, left there for --open-only A/B runs)
//!        engine_bench --open-only PATH           (one reopen: "seconds rss_kib count cpu";
//!        with --no-verify the sealed datafiles are trusted without startup's CRC pass)
//!        engine_bench [--dir PATH] --commit-one N (N single-document commits in one thread,
//!        then one collector pass over them; one CSV line: commit CPU µs/doc, collect CPU
//!        µs/doc, collect wall ms — thread CPU time, so other processes' load barely matters)
//!        engine_bench [--dir PATH] --probe-one N (N documents with Pokec's keys `P1`..`PN`,
//!        then point lookups of all of them in a shuffled order, five times, through one
//!        snapshot, as a traversal's vertex checks do; one CSV line: thread CPU ns per lookup)
//! (bench/storage/run.sh builds it in release mode and passes its arguments through.)

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use quiver_storage::{CollectionOptions, Engine, EngineOptions, WriteBatch};

struct Args {
    open_only: Option<PathBuf>,
    dir: PathBuf,
    quick: bool,
    /// `--no-verify`: reopen without proving the sealed datafiles intact first.
    no_verify: bool,
    docs: u64,
    only: Option<String>,
    journal_one: Option<(u64, u64)>,
    sync_one: Option<u64>,
    load_only: Option<u64>,
    commit_one: Option<u64>,
    probe_one: Option<u64>,
    gather: Option<Duration>,
    window: Option<Duration>,
}

fn parse_args() -> Args {
    let mut args = Args {
        open_only: None,
        dir: std::env::temp_dir().join(format!("quiver-engine-bench-{}", std::process::id())),
        quick: false,
        no_verify: false,
        docs: 1_000_000,
        only: None,
        journal_one: None,
        sync_one: None,
        load_only: None,
        commit_one: None,
        probe_one: None,
        gather: None,
        window: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--dir" => args.dir = PathBuf::from(it.next().expect("--dir PATH")),
            "--quick" => args.quick = true,
            "--docs" => args.docs = it.next().and_then(|v| v.parse().ok()).expect("--docs N"),
            "--only" => args.only = it.next(),
            "--journal-one" => {
                let mut num = || it.next().and_then(|v| v.parse().ok());
                args.journal_one = Some((
                    num().expect("--journal-one MIB OPS"),
                    num().expect("--journal-one MIB OPS"),
                ));
            }
            "--open-only" => args.open_only = it.next().map(PathBuf::from),
            "--no-verify" => args.no_verify = true,
            "--load-only" => {
                args.load_only = Some(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .expect("--load-only N"),
                )
            }
            "--sync-one" => {
                args.sync_one = Some(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .expect("--sync-one WRITERS"),
                )
            }
            "--gather-us" => {
                args.gather = Some(Duration::from_micros(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .expect("--gather-us US"),
                ))
            }
            "--commit-one" => {
                args.commit_one = Some(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .expect("--commit-one N"),
                )
            }
            "--probe-one" => {
                args.probe_one = Some(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .expect("--probe-one N"),
                )
            }
            "--window-ms" => {
                args.window = Some(Duration::from_millis(
                    it.next()
                        .and_then(|v| v.parse().ok())
                        .expect("--window-ms MS"),
                ))
            }
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    args
}

fn body(i: u64) -> Bytes {
    Bytes::from(format!(
        "{{\"_key\":\"k{i}\",\"name\":\"user {i}\",\"age\":{},\"active\":true,\"tags\":[\"a\",\"b\"]}}",
        i % 90
    ))
}

fn fresh(dir: &Path, options: EngineOptions) -> (Engine, u64) {
    let _ = std::fs::remove_dir_all(dir);
    let engine = Engine::open(dir, options).expect("open");
    let db = engine.create_database(serde_json::json!({})).unwrap();
    let cid = engine
        .create_collection(db, CollectionOptions::default(), serde_json::json!({}))
        .unwrap();
    (engine, cid)
}

fn rate(ops: u64, d: Duration) -> f64 {
    ops as f64 / d.as_secs_f64()
}

/// One journal-size run: (insert/s, replace/s, get/s, remove/s, collect ms).
fn journal_run(args: &Args, mib: u64, n: u64) -> [f64; 5] {
    let dir = args.dir.join(format!("journal-{mib}-{n}"));
    let options = EngineOptions {
        journal_size_default: mib << 20,
        // WAL segments small enough that the collector really moves data into journals
        // during the run, so the journal size matters.
        wal_logfile_size: 4 << 20,
        ..EngineOptions::default()
    };
    let (engine, cid) = fresh(&dir, options);
    let t = Instant::now();
    for i in 0..n {
        let mut b = WriteBatch::new();
        b.put(cid, &format!("k{i}"), engine.hlc().next(), body(i));
        engine.commit(b).unwrap();
    }
    let insert = t.elapsed();
    let t = Instant::now();
    for i in 0..n {
        let mut b = WriteBatch::new();
        b.put(cid, &format!("k{i}"), engine.hlc().next(), body(i + 1));
        engine.commit(b).unwrap();
    }
    let replace = t.elapsed();
    let t = Instant::now();
    engine.collect().unwrap();
    let collect = t.elapsed();
    let t = Instant::now();
    for i in 0..n {
        let snap = engine.snapshot();
        let d = snap.get(cid, &format!("k{i}")).unwrap();
        assert!(d.is_some());
    }
    let get = t.elapsed();
    let t = Instant::now();
    for i in 0..n {
        let mut b = WriteBatch::new();
        b.remove(cid, &format!("k{i}"), engine.hlc().next());
        engine.commit(b).unwrap();
    }
    let remove = t.elapsed();
    engine.shutdown().unwrap();
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    [
        rate(n, insert),
        rate(n, replace),
        rate(n, get),
        rate(n, remove),
        collect.as_secs_f64() * 1000.0,
    ]
}

fn journal_sweep(args: &Args) {
    println!(
        "## Journal-size sweep (single writer, non-sync, ~100-byte documents, median of 3 runs)\n"
    );
    println!("| journal | ops | insert/s | replace/s | get/s | remove/s | collect+seal ms |");
    println!("|---|---|---|---|---|---|---|");
    let counts: &[u64] = if args.quick {
        &[10_000]
    } else {
        &[10_000, 100_000]
    };
    for &n in counts {
        for mib in [1u64, 2, 4, 8, 16, 32] {
            let runs: Vec<[f64; 5]> = (0..3).map(|_| journal_run(args, mib, n)).collect();
            let median = |i: usize| {
                let mut v: Vec<f64> = runs.iter().map(|r| r[i]).collect();
                v.sort_by(|a, b| a.total_cmp(b));
                v[1]
            };
            println!(
                "| {mib} MiB | {n} | {:.0} | {:.0} | {:.0} | {:.0} | {:.1} |",
                median(0),
                median(1),
                median(2),
                median(3),
                median(4)
            );
        }
    }
    println!();
}

fn raw_fdatasync_rate(dir: &Path, window: Duration) -> f64 {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("fdatasync-probe");
    let file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    // Written (not sparse) blocks, like the engine's preallocated WAL segments, so that the
    // probe measures data fdatasync and not block allocation.
    file.write_all_at(&vec![0u8; 1 << 20], 0).unwrap();
    file.sync_all().unwrap();
    let buf = [7u8; 128];
    let t = Instant::now();
    let mut n = 0u64;
    while t.elapsed() < window {
        file.write_all_at(&buf, (n * 128) % (1 << 20)).unwrap();
        file.sync_data().unwrap();
        n += 1;
    }
    let r = rate(n, t.elapsed());
    drop(file);
    let _ = std::fs::remove_file(path);
    r
}

fn writers(engine: &Engine, cid: u64, threads: u64, window: Duration, sync: bool) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let engine = engine.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let mut i = 0u64;
                while start.elapsed() < window {
                    let mut b = WriteBatch::new();
                    b.put(
                        cid,
                        &format!("t{t}-{i}-{sync}"),
                        engine.hlc().next(),
                        body(i),
                    );
                    b.set_sync(sync);
                    engine.commit(b).unwrap().wait().unwrap();
                    i += 1;
                }
                done.fetch_add(i, Ordering::Relaxed);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    rate(done.load(Ordering::Relaxed), start.elapsed())
}

fn engine_options(args: &Args) -> EngineOptions {
    let mut options = EngineOptions::default();
    if let Some(gather) = args.gather {
        options.group_commit_gather = gather;
    }
    options
}

/// One cell of the sync-scaling table: raw fdatasync rate, then `threads` sync writers, then
/// as many non-sync writers, each for `window`.
fn sync_one(args: &Args, threads: u64) {
    let window = args.window.unwrap_or(Duration::from_secs(2));
    let dir = args.dir.join("sync");
    let raw = raw_fdatasync_rate(&args.dir, window);
    let (engine, cid) = fresh(&dir, engine_options(args));
    let before = engine.stats().wal_syncs;
    let sync = writers(&engine, cid, threads, window, true);
    let syncs = engine.stats().wal_syncs - before;
    let nosync = writers(&engine, cid, threads, window, false);
    engine.shutdown().unwrap();
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    println!("{raw:.0},{sync:.0},{nosync:.0},{syncs}");
}

fn sync_scaling(args: &Args) {
    let window = if args.quick {
        Duration::from_millis(700)
    } else {
        args.window.unwrap_or(Duration::from_secs(2))
    };
    let dir = args.dir.join("sync");
    let raw = raw_fdatasync_rate(&args.dir, window);
    println!("## Sync inserts versus raw fdatasync\n");
    println!(
        "raw fdatasync rate of this disk (128-byte write + fdatasync, one thread): {raw:.0}/s\n"
    );
    println!("| writers | sync inserts/s | non-sync inserts/s | sync / non-sync | sync / raw fdatasync | fdatasyncs |");
    println!("|---|---|---|---|---|---|");
    for threads in [1u64, 4, 16, 64] {
        let (engine, cid) = fresh(&dir, engine_options(args));
        let before = engine.stats().wal_syncs;
        let sync = writers(&engine, cid, threads, window, true);
        let syncs = engine.stats().wal_syncs - before;
        let nosync = writers(&engine, cid, threads, window, false);
        println!(
            "| {threads} | {sync:.0} | {nosync:.0} | {:.1} % | {:.1}x | {syncs} |",
            100.0 * sync / nosync,
            sync / raw
        );
        engine.shutdown().unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!();
}

/// CPU seconds (user + system) this process used so far, from /proc/self/stat.
/// CPU time of the calling thread.
#[allow(unsafe_code)]
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The engine's commit and collector costs per document, measured as this thread's CPU time:
/// N single-document commits (the HTTP insert path's batch shape; background collector off),
/// then one `collect` (seals the WAL, moves everything into journals, seals full journals
/// and writes their hint files) in this thread.
fn commit_one(args: &Args, n: u64) {
    let dir = args.dir.join("commit-one");
    let options = EngineOptions {
        background_collector: false,
        compaction: quiver_storage::CompactionOptions {
            background: false,
            ..Default::default()
        },
        ..EngineOptions::default()
    };
    let (engine, cid) = fresh(&dir, options);
    // Increasing keys of one length, like the traditional key generator's.
    let keys: Vec<String> = (0..n).map(|i| format!("{}", 100_000_000 + i)).collect();
    let bodies: Vec<Bytes> = (0..n).map(body).collect();
    let t = thread_cpu();
    for (key, body) in keys.iter().zip(bodies) {
        let mut b = WriteBatch::new();
        b.put(cid, key, engine.hlc().next(), body);
        engine.commit(b).unwrap();
    }
    let commit = thread_cpu() - t;
    let wall = Instant::now();
    let t = thread_cpu();
    engine.collect().unwrap();
    let collect = thread_cpu() - t;
    let wall = wall.elapsed();
    engine.shutdown().unwrap();
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    let per_doc = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
    println!(
        "{:.3},{:.3},{:.1}",
        per_doc(commit),
        per_doc(collect),
        wall.as_secs_f64() * 1000.0
    );
}

/// The primary index's point lookup (key → visible revision, no document read) per key, as
/// thread CPU time: N documents keyed `P1`..`PN` committed in batches of 1,000 (the import's
/// shape), collected into journals, then every key looked up five times in a shuffled order
/// through one snapshot.
fn probe_one(args: &Args, n: u64) {
    let dir = args.dir.join("probe-one");
    let (engine, cid) = fresh(&dir, EngineOptions::default());
    let keys: Vec<String> = (1..=n).map(|i| format!("P{i}")).collect();
    for chunk in keys.chunks(1000) {
        let mut b = WriteBatch::new();
        for (i, key) in chunk.iter().enumerate() {
            b.put(cid, key, engine.hlc().next(), body(i as u64));
        }
        engine.commit(b).unwrap();
    }
    engine.collect().unwrap();
    let mut order: Vec<usize> = (0..keys.len()).collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let snap = engine.snapshot();
    let rounds = 5;
    let t = thread_cpu();
    let mut found = 0u64;
    for _ in 0..rounds {
        for &i in &order {
            found += u64::from(snap.revision(cid, &keys[i]).unwrap().is_some());
        }
    }
    let cpu = thread_cpu() - t;
    assert_eq!(found, n * rounds);
    drop(snap);
    engine.shutdown().unwrap();
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
    println!("{:.1}", cpu.as_secs_f64() * 1e9 / (n * rounds) as f64);
}

fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let utime: f64 = fields.get(11)?.parse().ok()?;
            let stime: f64 = fields.get(12)?.parse().ok()?;
            Some((utime + stime) / 100.0)
        })
        .unwrap_or(0.0)
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Commits `n` documents in batches of 1000 into a fresh engine in `dir`.
fn load(dir: &Path, n: u64) -> (Engine, u64) {
    let (engine, cid) = fresh(dir, EngineOptions::default());
    let mut i = 0;
    while i < n {
        let mut b = WriteBatch::new();
        for _ in 0..1000.min(n - i) {
            b.put(cid, &format!("k{i}"), engine.hlc().next(), body(i));
            i += 1;
        }
        engine.commit(b).unwrap();
    }
    (engine, cid)
}

fn reopen(args: &Args) {
    let n = if args.quick { 100_000 } else { args.docs };
    let dir = args.dir.join("reopen");
    println!("## Reopen time and memory ({n} documents)\n");
    let t = Instant::now();
    let (engine, cid) = load(&dir, n);
    let load = t.elapsed();
    engine.shutdown().unwrap();
    drop(engine);
    println!("| phase | wall time | CPU time | RSS delta | bytes/doc |");
    println!("|---|---|---|---|---|");
    println!(
        "| load (batches of 1000) | {:.2} s | | | |",
        load.as_secs_f64()
    );
    let (secs, rss, count, cpu) = reopen_in_child(&dir);
    assert_eq!(count, n);
    println!(
        "| reopen from WAL (nothing collected yet), fresh process | {secs:.2} s | {cpu:.2} s | {} MiB | {:.0} |",
        rss / 1024,
        rss as f64 * 1024.0 / n as f64
    );
    let engine = Engine::open(&dir, EngineOptions::default()).unwrap();
    let t = Instant::now();
    engine.collect().unwrap();
    let collect = t.elapsed();
    println!(
        "| collect into journals | {:.2} s | | | |",
        collect.as_secs_f64()
    );
    engine.shutdown().unwrap();
    drop(engine);
    let (secs, rss, count, cpu) = reopen_in_child(&dir);
    assert_eq!(count, n);
    println!(
        "| reopen from datafiles + hint files, fresh process | {secs:.2} s | {cpu:.2} s | {} MiB | {:.0} |",
        rss / 1024,
        rss as f64 * 1024.0 / n as f64
    );
    // The background compactor is off for this phase, so that the explicit compaction below
    // does (and reports) all the work after the truncate.
    let mut quiet = EngineOptions::default();
    quiet.compaction.background = false;
    let engine = Engine::open(&dir, quiet).unwrap();
    let f = engine.figures(cid).unwrap();
    println!(
        "\nfigures: {} datafiles ({} MiB), {} journal(s), index memory estimate {} MiB ({:.0} B/doc)\n",
        f.datafiles.count,
        f.datafiles.file_size >> 20,
        f.journals.count,
        f.index_memory >> 20,
        f.index_memory as f64 / n as f64
    );
    // Truncate is one marker whatever the size; compaction then drops the datafiles unread.
    let t = Instant::now();
    engine.truncate(cid, false).unwrap().wait().unwrap();
    let truncate = t.elapsed();
    let cpu0 = cpu_seconds();
    let t = Instant::now();
    let report = engine.compact(cid).unwrap();
    let compact = t.elapsed();
    let compact_cpu = cpu_seconds() - cpu0;
    let after = engine.figures(cid).unwrap();
    println!(
        "truncate of {n} documents: {:.1} ms; compaction afterwards: {:.2} s ({:.2} s CPU), \
         {} files compacted ({} datafiles before, {} after), {} written\n",
        truncate.as_secs_f64() * 1000.0,
        compact.as_secs_f64(),
        compact_cpu,
        report.files_compacted,
        f.datafiles.count,
        after.datafiles.count,
        report.files_written
    );
    assert_eq!(engine.snapshot().count(cid).unwrap(), 0);
    engine.shutdown().unwrap();
    drop(engine);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Child process of the reopen test: opens `dir` in a fresh process so that its RSS delta is
/// the engine's and not leftovers of the load phase; prints "seconds rss_kib_delta count".
fn open_only(dir: &Path, verify_datafiles_on_open: bool) {
    let rss0 = rss_kib();
    let cpu0 = cpu_seconds();
    let t = Instant::now();
    let options = EngineOptions {
        verify_datafiles_on_open,
        ..EngineOptions::default()
    };
    let engine = Engine::open(dir, options).unwrap();
    let secs = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let rss1 = rss_kib();
    let cat = engine.catalog();
    let cid = cat[0].collections[0].id;
    let count = engine.snapshot().count(cid).unwrap();
    println!("{secs} {} {count} {cpu}", rss1.saturating_sub(rss0));
    engine.shutdown().unwrap();
}

fn reopen_in_child(dir: &Path) -> (f64, u64, u64, f64) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--open-only")
        .arg(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let parts: Vec<&str> = text.split_whitespace().collect();
    assert_eq!(
        parts.len(),
        4,
        "child said: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        parts[0].parse().unwrap(),
        parts[1].parse().unwrap(),
        parts[2].parse().unwrap(),
        parts[3].parse().unwrap(),
    )
}

fn main() {
    let args = parse_args();
    if let Some(dir) = &args.open_only {
        open_only(dir, !args.no_verify);
        return;
    }
    if let Some(n) = args.load_only {
        let (engine, _) = load(&args.dir, n);
        engine.collect().unwrap();
        engine.shutdown().unwrap();
        return;
    }
    std::fs::create_dir_all(&args.dir).unwrap();
    if let Some(n) = args.commit_one {
        commit_one(&args, n);
        let _ = std::fs::remove_dir_all(&args.dir);
        return;
    }
    if let Some(n) = args.probe_one {
        probe_one(&args, n);
        let _ = std::fs::remove_dir_all(&args.dir);
        return;
    }
    if let Some(threads) = args.sync_one {
        sync_one(&args, threads);
        let _ = std::fs::remove_dir_all(&args.dir);
        return;
    }
    if let Some((mib, n)) = args.journal_one {
        let r = journal_run(&args, mib, n);
        println!(
            "{:.0},{:.0},{:.0},{:.0},{:.1}",
            r[0], r[1], r[2], r[3], r[4]
        );
        let _ = std::fs::remove_dir_all(&args.dir);
        return;
    }
    println!(
        "quiver-storage engine_bench: {} cores, dir {}\n",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        args.dir.display()
    );
    let run = |name: &str| args.only.as_deref().is_none_or(|o| o == name);
    if run("journal") {
        journal_sweep(&args);
    }
    if run("sync") {
        sync_scaling(&args);
    }
    if run("reopen") {
        reopen(&args);
    }
    let _ = std::fs::remove_dir_all(&args.dir);
}
