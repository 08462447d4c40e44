//! The benchmark's workloads, run against any database through its [`Peer`] adapter: every
//! job goes through one of `connections` client connections (the 2018 harness's pools had
//! 25), timing is wall clock from the first request to the last answer, as benchmark.js
//! measured it, and every answer is checked against the generator's expected results.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quiver_errors::{Error, ErrorCode};
use serde_json::{json, Value};

use super::client::Monitor;
use super::gen::{self, Spec};
use super::load::read_json;
use super::peer::{Connection, Job, Peer};
use crate::report::new_histogram;

/// Test order of one run of the 2018 harness (runTest.sh).
pub const ALL_TESTS: [&str; 9] = [
    "shortest",
    "neighbors",
    "neighbors2",
    "singleRead",
    "singleWrite",
    "singleWriteSync",
    "aggregation",
    "hardPath",
    "neighbors2data",
];

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub dir: std::path::PathBuf,
    pub connections: usize,
    pub tests: Vec<String>,
    /// Use only the first n read ids, write bodies, neighbor starts and path pairs (0 = all),
    /// like benchmark.js `-s`; expected checksums are restricted accordingly.
    pub restrict: usize,
    pub server_pid: Option<u32>,
    pub max_rss_kib: u64,
    pub progress: bool,
}

/// How a workload ended.
#[derive(Debug, Clone, PartialEq)]
enum Status {
    Ok,
    NotImplemented(String),
    Failed(String),
    Stopped(String),
}

struct Outcome {
    queries: usize,
    succeeded: usize,
    total: Duration,
    latencies: hdrhistogram::Histogram<u64>,
    rows: u64,
    /// Sum over queries of (rows - 1) for non-empty path results.
    path_lengths: u64,
    empty_paths: u64,
    amounts: u64,
    status: Status,
}

/// What the jobs of one workload share.
struct Shared {
    bodies: Arc<Vec<Value>>,
    over_limit: Arc<AtomicBool>,
    /// Writes go to a durable write target.
    sync: bool,
}

/// Runs `jobs` over `connections` connections of `peer`; a job answered with "not
/// implemented" stops the workload (the rest would answer the same), as do the memory limit
/// and any other error. Connections are opened before the clock starts.
async fn run_jobs<P: Peer>(
    peer: &P,
    jobs: Vec<Job>,
    connections: usize,
    shared: &Shared,
    path_query: bool,
) -> Outcome {
    let mut out = Outcome {
        queries: jobs.len(),
        succeeded: 0,
        total: Duration::ZERO,
        latencies: new_histogram(),
        rows: 0,
        path_lengths: 0,
        empty_paths: 0,
        amounts: 0,
        status: Status::Ok,
    };
    let mut opened = Vec::new();
    for _ in 0..connections.min(jobs.len()).max(1) {
        match peer.connect().await {
            Ok(c) => opened.push(c),
            Err(e) => {
                out.status =
                    Status::Failed(format!("connect: {} (error {})", e.message, e.number()));
                return out;
            }
        }
    }
    let jobs = Arc::new(jobs);
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for mut connection in opened {
        let (jobs, next, stop, bodies, over) = (
            jobs.clone(),
            next.clone(),
            stop.clone(),
            shared.bodies.clone(),
            shared.over_limit.clone(),
        );
        let sync = shared.sync;
        tasks.push(tokio::spawn(async move {
            let mut hist = new_histogram();
            let (mut ok, mut rows, mut lengths, mut empty, mut amounts) = (0usize, 0, 0, 0, 0);
            let mut status = Status::Ok;
            loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                if over.load(Ordering::Relaxed) {
                    status = Status::Stopped("the server's memory passed the limit".into());
                    stop.store(true, Ordering::Relaxed);
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let t = Instant::now();
                match connection.run(job, &bodies, sync).await {
                    Ok(a) => {
                        let _ = hist.record(t.elapsed().as_nanos().max(1) as u64);
                        ok += 1;
                        rows += a.rows;
                        amounts += a.amounts;
                        if path_query {
                            if a.rows == 0 {
                                empty += 1;
                            } else {
                                lengths += a.rows - 1;
                            }
                        }
                    }
                    Err(e) => {
                        status = if e.code == ErrorCode::NotImplemented {
                            Status::NotImplemented(e.message)
                        } else {
                            Status::Failed(format!("{} (error {})", e.message, e.number()))
                        };
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                }
            }
            (hist, ok, rows, lengths, empty, amounts, status)
        }));
    }
    for task in tasks {
        match task.await {
            Ok((hist, ok, rows, lengths, empty, amounts, status)) => {
                let _ = out.latencies.add(&hist);
                out.succeeded += ok;
                out.rows += rows;
                out.path_lengths += lengths;
                out.empty_paths += empty;
                out.amounts += amounts;
                if out.status == Status::Ok {
                    out.status = status;
                }
            }
            Err(e) => out.status = Status::Failed(format!("connection task: {e}")),
        }
    }
    out.total = started.elapsed();
    out
}

fn keys(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|k| k.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The machine's 1/5/15-minute load averages: the machine is shared, so every report says
/// how busy it was.
fn loadavg() -> Value {
    std::fs::read_to_string("/proc/loadavg")
        .map(|t| json!(t.split_whitespace().take(3).collect::<Vec<_>>().join(" ")))
        .unwrap_or(Value::Null)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn validate(opts: &RunOptions) -> Result<(), Error> {
    if opts.connections == 0 || opts.connections > 256 {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            "connections must be 1..=256",
        ));
    }
    for t in &opts.tests {
        if !ALL_TESTS.contains(&t.as_str()) {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("unknown test '{t}'; known: {}", ALL_TESTS.join(", ")),
            ));
        }
    }
    Ok(())
}

/// Runs the selected workloads against `peer` and returns the report.
pub fn run<P: Peer>(peer: P, opts: &RunOptions) -> Result<Value, Error> {
    validate(opts)?;
    let dir = &opts.dir;
    let meta = read_json(&dir.join("meta.json"))?;
    let reads = keys(&read_json(&dir.join("ids100000.json"))?);
    let warmup = keys(&read_json(&dir.join("warmup1000.json"))?);
    let pairs = read_json(&dir.join("shortest1000.json"))?;
    let hard = read_json(&dir.join("hardpath.json"))?;
    let spec = Spec::new(
        meta["scale"].as_f64().unwrap_or(0.0),
        meta["seed"].as_u64().unwrap_or(gen::DEFAULT_SEED),
    )?;
    let limit = |n: usize| {
        if opts.restrict == 0 {
            n
        } else {
            n.min(opts.restrict)
        }
    };
    let reads: Vec<String> = reads.into_iter().take(limit(usize::MAX)).collect();
    let all_pairs = pairs.as_array().cloned().unwrap_or_default();
    let pairs: Vec<Value> = all_pairs.into_iter().take(limit(usize::MAX)).collect();
    let counts = read_json(&dir.join("neighbors1000.json"))?;
    let counts = counts.as_array().map(Vec::as_slice).unwrap_or(&[]);
    let count_sum = |field: &str, n: usize| -> u64 {
        counts
            .iter()
            .take(limit(n))
            .filter_map(|c| c[field].as_u64())
            .sum()
    };
    let expected = json!({
        "neighbors": count_sum("neighbors", gen::NEIGHBOR_STARTS),
        "neighbors2": count_sum("neighbors2", gen::NEIGHBOR_STARTS),
        "neighbors2data": count_sum("neighbors2", gen::NEIGHBOR_DATA_STARTS),
        "shortestPathLengthSum": pairs.iter().filter_map(|p| p["length"].as_u64()).sum::<u64>(),
    });
    let expected = &expected;
    let profiles = meta["profiles"].as_u64().unwrap_or(0);

    let load_start = loadavg();
    let monitor = Monitor::start(opts.server_pid, opts.max_rss_kib);
    let cpu_before = monitor.now().map(|u| u.cpu_seconds);
    let runtime = super::client::runtime()?;
    let over = monitor.over_limit();
    let selected = |name: &str| opts.tests.iter().any(|t| t == name);
    let write_tests = selected("singleWrite") || selected("singleWriteSync");
    // Bodies are generated before timing starts, like the harness loading bodies100000.json;
    // each adapter serializes them per insert, as the drivers did.
    let bodies: Arc<Vec<Value>> = Arc::new(if write_tests {
        (0..limit(gen::READ_IDS) as u64)
            .map(|i| gen::write_body(&spec, i))
            .collect()
    } else {
        Vec::new()
    });
    let plain = Shared {
        bodies: bodies.clone(),
        over_limit: over.clone(),
        sync: false,
    };
    let peer = &peer;

    let (results, description) = runtime.block_on(async {
        let description = peer.describe().await;
        let mut results: Vec<Value> = Vec::new();

        // Warmup: the aggregation, the database's own step, 1,000 reads.
        let t = Instant::now();
        let w1 = run_jobs(peer, vec![Job::Aggregate], 1, &plain, false).await;
        peer.warm_up().await?;
        let jobs = warmup.iter().map(|k| Job::Read(k.clone())).collect();
        let mut w2 = run_jobs(peer, jobs, opts.connections, &plain, false).await;
        let warm_status = [&w1.status, &w2.status]
            .into_iter()
            .find(|s| **s != Status::Ok)
            .cloned()
            .unwrap_or(Status::Ok);
        let _ = w2.latencies.add(&w1.latencies);
        w2.succeeded += w1.succeeded;
        let queries = 1 + w2.queries;
        results.push(entry("warmup", &w2, ms(t.elapsed()), queries, warm_status, None, None));
        if opts.progress {
            println!("{}", summary_line(&results[0]));
        }

        for name in ALL_TESTS.iter().filter(|n| selected(n)) {
            let name = *name;
            let conns = opts.connections;
            let neighbor_jobs = |starts: usize, make: fn(String) -> Job| -> Vec<Job> {
                reads.iter().take(limit(starts)).map(|k| make(k.clone())).collect()
            };
            let (outcome, result, want): (Outcome, Value, Value) = match name {
                "singleRead" => {
                    let jobs = reads.iter().map(|k| Job::Read(k.clone())).collect();
                    let o = run_jobs(peer, jobs, conns, &plain, false).await;
                    let r = json!(o.succeeded);
                    (o, r, json!(reads.len()))
                }
                "singleWrite" | "singleWriteSync" => {
                    let sync = name == "singleWriteSync";
                    peer.recreate_write_target(sync).await?;
                    let jobs = (0..bodies.len()).map(Job::Write).collect();
                    let shared = Shared {
                        bodies: bodies.clone(),
                        over_limit: over.clone(),
                        sync,
                    };
                    let o = run_jobs(peer, jobs, conns, &shared, false).await;
                    let count = peer.count_write_target().await?;
                    (o, json!(count), json!(bodies.len()))
                }
                "aggregation" => {
                    let o = run_jobs(peer, vec![Job::Aggregate], 1, &plain, false).await;
                    let r = json!(o.amounts);
                    (o, r, json!(profiles))
                }
                "neighbors" => {
                    let jobs = neighbor_jobs(gen::NEIGHBOR_STARTS, Job::Neighbors);
                    let o = run_jobs(peer, jobs, conns, &plain, false).await;
                    let r = json!(o.rows);
                    (o, r, expected[name].clone())
                }
                "neighbors2" => {
                    let jobs = neighbor_jobs(gen::NEIGHBOR_STARTS, Job::Neighbors2);
                    let o = run_jobs(peer, jobs, conns, &plain, false).await;
                    let r = json!(o.rows);
                    (o, r, expected[name].clone())
                }
                "neighbors2data" => {
                    let jobs = neighbor_jobs(gen::NEIGHBOR_DATA_STARTS, Job::Neighbors2Data);
                    let o = run_jobs(peer, jobs, conns, &plain, false).await;
                    let r = json!(o.rows);
                    (o, r, expected[name].clone())
                }
                "shortest" => {
                    let jobs = pairs
                        .iter()
                        .map(|p| {
                            let (from, to) = (p["from"].as_str(), p["to"].as_str());
                            Job::Shortest(
                                from.unwrap_or("").to_string(),
                                to.unwrap_or("").to_string(),
                            )
                        })
                        .collect();
                    let o = run_jobs(peer, jobs, conns, &plain, true).await;
                    let r = json!({"pathLengthSum": o.path_lengths, "emptyPaths": o.empty_paths});
                    (o, r, json!({"pathLengthSum": expected["shortestPathLengthSum"], "emptyPaths": 0}))
                }
                _ => {
                    let (from, to) = (hard["from"].as_str(), hard["to"].as_str());
                    let jobs = vec![Job::Shortest(
                        from.unwrap_or("").to_string(),
                        to.unwrap_or("").to_string(),
                    )];
                    let o = run_jobs(peer, jobs, 1, &plain, true).await;
                    let r = json!({"rows": o.rows});
                    (o, r, json!({"rows": 0}))
                }
            };
            let mut status = outcome.status.clone();
            if status == Status::Ok && result != want {
                status = Status::Failed(format!("checksum mismatch: got {result}, expected {want}"));
            }
            let total = ms(outcome.total);
            results.push(entry(name, &outcome, total, outcome.queries, status, Some(result), Some(want)));
            if opts.progress {
                println!("{}", summary_line(results.last().unwrap_or(&Value::Null)));
            }
        }
        Ok::<_, Error>((results, description))
    })?;
    let usage = monitor.now();
    Ok(json!({
        "benchmark": "pokec",
        "database": peer.name(),
        "databaseInfo": description,
        "dataset": meta,
        "connections": opts.connections,
        "restrict": opts.restrict,
        "loadAverage": {"start": load_start, "end": loadavg()},
        "workloads": results,
        "server": {
            "pid": opts.server_pid,
            "peakRssKiB": monitor.peak_rss_kib().max(usage.map_or(0, |u| u.rss_kib)),
            "hwmKiB": usage.filter(|u| u.processes == 1).map(|u| u.hwm_kib),
            "cpuSecondsDuringRun": match (cpu_before, usage) {
                (Some(b), Some(u)) => json!(u.cpu_seconds - b),
                _ => Value::Null,
            },
            "cpuSecondsTotal": usage.map(|u| u.cpu_seconds),
            "memoryLimitHit": monitor.over_limit().load(Ordering::Relaxed),
        },
    }))
}

fn entry(
    name: &str,
    o: &Outcome,
    total_ms: f64,
    queries: usize,
    status: Status,
    result: Option<Value>,
    expected: Option<Value>,
) -> Value {
    let pct = |q: f64| o.latencies.value_at_quantile(q) as f64 / 1e6;
    let (status, message) = match status {
        Status::Ok => ("ok", String::new()),
        Status::NotImplemented(m) => ("not implemented", m),
        Status::Failed(m) => ("failed", m),
        Status::Stopped(m) => ("stopped", m),
    };
    json!({
        "name": name,
        "status": status,
        "message": message,
        "queries": queries,
        "succeeded": o.succeeded,
        "totalMs": total_ms,
        "avgMs": if queries > 0 { total_ms / queries as f64 } else { 0.0 },
        "latencyMeanMs": o.latencies.mean() / 1e6,
        "latencyP50Ms": pct(0.5),
        "latencyP99Ms": pct(0.99),
        "latencyMaxMs": o.latencies.max() as f64 / 1e6,
        "result": result,
        "expected": expected,
    })
}

/// One line per workload, like benchmark.js printed ("Total Time … Average …").
pub fn summary_line(w: &Value) -> String {
    let status = w["status"].as_str().unwrap_or("?");
    let mut line = format!(
        "{:<16} {:>7} queries  total {:>10.1} ms  avg {:>8.3} ms  p50 {:>8.3} ms  {status}",
        w["name"].as_str().unwrap_or("?"),
        w["queries"],
        w["totalMs"].as_f64().unwrap_or(0.0),
        w["avgMs"].as_f64().unwrap_or(0.0),
        w["latencyP50Ms"].as_f64().unwrap_or(0.0),
    );
    if !w["result"].is_null() {
        line.push_str(&format!("  result {}", w["result"]));
    }
    if let Some(m) = w["message"].as_str().filter(|m| !m.is_empty()) {
        line.push_str(&format!("  ({m})"));
    }
    line
}

/// The report as CSV, one row per workload.
pub fn csv(report: &Value) -> String {
    let mut out = String::from(
        "scale,workload,status,queries,succeeded,total_ms,avg_ms,p50_ms,p99_ms,result,expected,peak_rss_kib\n",
    );
    let scale = &report["dataset"]["scale"];
    let rss = &report["server"]["peakRssKiB"];
    for w in report["workloads"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        let quote = |v: &Value| format!("\"{}\"", v.to_string().replace('"', "'"));
        out.push_str(&format!(
            "{scale},{},{},{},{},{:.3},{:.4},{:.4},{:.4},{},{},{rss}\n",
            w["name"].as_str().unwrap_or(""),
            w["status"].as_str().unwrap_or(""),
            w["queries"],
            w["succeeded"],
            w["totalMs"].as_f64().unwrap_or(0.0),
            w["avgMs"].as_f64().unwrap_or(0.0),
            w["latencyP50Ms"].as_f64().unwrap_or(0.0),
            w["latencyP99Ms"].as_f64().unwrap_or(0.0),
            quote(&w["result"]),
            quote(&w["expected"]),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Value {
        json!({
            "dataset": {"scale": 0.1},
            "server": {"peakRssKiB": 2048},
            "workloads": [
                {"name": "singleRead", "status": "ok", "queries": 10, "succeeded": 10,
                 "totalMs": 5.0, "avgMs": 0.5, "latencyP50Ms": 0.4, "latencyP99Ms": 0.9,
                 "result": 10, "expected": 10, "message": ""},
                {"name": "shortest", "status": "not implemented", "queries": 3, "succeeded": 0,
                 "totalMs": 1.0, "avgMs": 0.3333, "latencyP50Ms": 0.0, "latencyP99Ms": 0.0,
                 "result": {"pathLengthSum": 0}, "expected": {"pathLengthSum": 7},
                 "message": "HTTP 501 error 9: path searches"},
            ],
        })
    }

    #[test]
    fn csv_has_one_row_per_workload_with_quoted_checksums() {
        let text = csv(&report());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("scale,workload,status,queries"));
        assert_eq!(
            lines[1],
            "0.1,singleRead,ok,10,10,5.000,0.5000,0.4000,0.9000,\"10\",\"10\",2048"
        );
        assert!(lines[2].contains("not implemented"));
        assert!(lines[2].contains("\"{'pathLengthSum':0}\",\"{'pathLengthSum':7}\""));
        // Every row has the header's number of fields (the checksums hold no commas here).
        assert!(lines.iter().all(|l| l.split(',').count() == 12));
    }

    #[test]
    fn summary_names_status_and_message() {
        let r = report();
        let line = summary_line(&r["workloads"][1]);
        assert!(line.starts_with("shortest"));
        assert!(line.contains("not implemented") && line.contains("(HTTP 501 error 9"));
        assert!(!summary_line(&r["workloads"][0]).contains('('));
    }

    #[test]
    fn unknown_tests_and_bad_connection_counts_are_rejected() {
        let peer =
            || super::super::arango_http::ArangoHttp::new("tcp://127.0.0.1:1", None).unwrap();
        let opts = RunOptions {
            dir: std::path::PathBuf::from("/nonexistent"),
            connections: 25,
            tests: vec!["neighbours".into()],
            restrict: 0,
            server_pid: None,
            max_rss_kib: 1,
            progress: false,
        };
        let e = run(peer(), &opts).unwrap_err();
        assert_eq!(e.number(), 10);
        assert!(e.message.contains("unknown test 'neighbours'"));
        let e = run(
            peer(),
            &RunOptions {
                connections: 0,
                ..opts.clone()
            },
        )
        .unwrap_err();
        assert_eq!(e.number(), 10);
        let e = run(
            peer(),
            &RunOptions {
                tests: vec!["singleRead".into()],
                ..opts
            },
        )
        .unwrap_err();
        assert_eq!(e.number(), 25, "missing data directory: {}", e.message);
    }
}
