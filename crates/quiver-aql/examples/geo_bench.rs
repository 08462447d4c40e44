//! Geo-index and covering-index benchmark, in process (query service over quiver-core, no
//! HTTP). Each pair of queries runs alternately in the same round, so both sides see the same
//! machine load; reported are medians over rounds of the CPU time per query (this process's
//! user + system time from /proc/self/stat, over a batch of queries) and of the wall time.
//!
//! - NEAR-style: `SORT DISTANCE(d.lat, d.lng, …) LIMIT 10` through the geo index (rule
//!   `geo-index-optimizer`) and as a full scan with `-geo-index-optimizer`;
//! - a distance range `FILTER DISTANCE(…) <= 50 km`, same two ways;
//! - a covering read: `FILTER d.g >= x && d.g < x + 10 RETURN [d._key, d.s]` (1,000 rows)
//!   over a persistent index with
//!   `storedValues: ["s"]`, with documents built from the index and with
//!   `-reduce-extraction-to-projection` (documents read).
//!
//! `cargo run --release -p quiver-aql --example geo_bench -- [POINTS] [ROUNDS]`
//! (defaults 100000 and 7).

use std::sync::Arc;
use std::time::Instant;

use quiver_aql::{CursorRequest, QueryService};
use quiver_core::{CollectionSpec, Core, CoreOptions, InsertOptions};
use serde_json::{json, Value};

/// CPU seconds (user + system) this process used so far.
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // Fields after the parenthesised command name; utime and stime are 14 and 15.
            let rest = &s[s.rfind(')')? + 2..];
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let utime: f64 = fields.get(11)?.parse().ok()?;
            let stime: f64 = fields.get(12)?.parse().ok()?;
            Some((utime + stime) / 100.0)
        })
        .unwrap_or(0.0)
}

/// Runs `queries` (text, bind) `repeat` times; returns (CPU ms, wall ms) per query and rows
/// seen in one pass. Fast queries repeat so that the 10 ms CPU-time ticks average out.
fn batch(
    service: &QueryService,
    queries: &[(String, Value)],
    rules: &[&str],
    repeat: usize,
) -> (f64, f64, usize) {
    let (cpu0, t0) = (cpu_seconds(), Instant::now());
    let mut rows = 0;
    for (q, bind) in queries.iter().cycle().take(queries.len() * repeat) {
        let reply = service
            .create_cursor(
                "_system",
                CursorRequest {
                    bind_vars: bind.as_object().cloned().unwrap_or_default(),
                    batch_size: 10000,
                    rules: rules.iter().map(|r| r.to_string()).collect(),
                    ..CursorRequest::new(q.to_string())
                },
            )
            .expect("query runs");
        rows += reply.rows.len();
    }
    let n = (queries.len() * repeat) as f64;
    (
        (cpu_seconds() - cpu0) * 1000.0 / n,
        t0.elapsed().as_secs_f64() * 1000.0 / n,
        rows / repeat,
    )
}

/// (name, queries with their bind values, the rule that turns the feature off).
type Case<'a> = (&'a str, &'a [(String, Value)], &'a str);

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A deterministic pseudo-random sequence (no RNG dependency outside dev-dependencies).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let points: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(7);
    let dir = tempfile::tempdir().expect("tempdir");
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).expect("open"));
    let db = core.database("_system").expect("system database");
    let coll = db
        .create_collection(CollectionSpec::new("pts"))
        .expect("collection");
    let mut rng = Lcg(42);
    let t = Instant::now();
    let mut docs: Vec<Value> = Vec::with_capacity(10_000);
    for i in 0..points {
        // Three quarters in a European box, the rest anywhere: dense and sparse areas.
        let (lat, lng) = if i % 4 == 0 {
            (rng.next() * 170.0 - 85.0, rng.next() * 360.0 - 180.0)
        } else {
            (40.0 + rng.next() * 20.0, -10.0 + rng.next() * 40.0)
        };
        docs.push(
            json!({"_key": format!("p{i}"), "lat": lat, "lng": lng, "g": i % 1000,
                         "s": format!("name{i}"), "pad": "x".repeat(100)}),
        );
        if docs.len() == 10_000 || i + 1 == points {
            coll.insert_many(std::mem::take(&mut docs), &InsertOptions::new())
                .expect("insert")
                .wait()
                .expect("durable");
        }
    }
    println!(
        "loaded {points} points in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    coll.create_index(&json!({"type": "geo", "fields": ["lat", "lng"]}))
        .expect("geo index");
    coll.create_index(&json!({"type": "persistent", "fields": ["g"], "storedValues": ["s"]}))
        .expect("persistent index");
    assert!(coll.wait_for_indexes(std::time::Duration::from_secs(600)));
    println!("built both indexes in {:.1} s", t.elapsed().as_secs_f64());

    let service = QueryService::over_core(core.clone());
    let centres: Vec<(f64, f64)> = (0..20)
        .map(|i| {
            if i % 4 == 0 {
                (rng.next() * 170.0 - 85.0, rng.next() * 360.0 - 180.0)
            } else {
                (40.0 + rng.next() * 20.0, -10.0 + rng.next() * 40.0)
            }
        })
        .collect();
    let with_centres = |q: &str| -> Vec<(String, Value)> {
        centres
            .iter()
            .map(|(lat, lng)| (q.to_string(), json!({"lat": lat, "lng": lng})))
            .collect()
    };
    let near =
        with_centres("FOR d IN pts SORT DISTANCE(d.lat, d.lng, @lat, @lng) LIMIT 10 RETURN d._key");
    let within = with_centres(
        "FOR d IN pts FILTER DISTANCE(d.lat, d.lng, @lat, @lng) <= 50000 RETURN d._key",
    );
    let covering: Vec<(String, Value)> = (0..20)
        .map(|i| {
            (
                "FOR d IN pts FILTER d.g >= @g && d.g < @g + 10 RETURN [d._key, d.s]".to_string(),
                json!({"g": i * 37 % 990}),
            )
        })
        .collect();
    let cases: [Case<'_>; 3] = [
        ("SORT DISTANCE LIMIT 10", &near, "-geo-index-optimizer"),
        ("FILTER DISTANCE <= 50 km", &within, "-geo-index-optimizer"),
        (
            "covering FILTER g in [x, x+10) RETURN [_key, s]",
            &covering,
            "-reduce-extraction-to-projection",
        ),
    ];
    println!(
        "| query | rows/query | with: CPU ms | wall ms | without: CPU ms | wall ms | CPU ratio |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, queries, off) in cases {
        let (mut cpu_on, mut wall_on, mut cpu_off, mut wall_off) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut rows = (0, 0);
        for _ in 0..rounds {
            let (c, w, r) = batch(&service, queries, &[], 10);
            cpu_on.push(c);
            wall_on.push(w);
            let off_repeat = if off == "-geo-index-optimizer" { 1 } else { 10 };
            let (c2, w2, r2) = batch(&service, queries, &[off], off_repeat);
            cpu_off.push(c2);
            wall_off.push(w2);
            rows = (r, r2);
        }
        assert_eq!(rows.0, rows.1, "{name}: both plans return as many rows");
        let (c_on, c_off) = (median(cpu_on), median(cpu_off));
        println!(
            "| {name} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1}x |",
            rows.0 / queries.len(),
            c_on,
            median(wall_on),
            c_off,
            median(wall_off),
            c_off / c_on.max(0.001)
        );
    }
}
