//! The benchmark's workloads with the queries of the ArangoDB adapter (2018, arangojs):
//! every request goes through one of `connections` keep-alive connections (the adapter's
//! http.Agent had 25 sockets and queued all requests at once), timing is wall clock from the
//! first request to the last answer, as benchmark.js measured it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quiver_errors::{Error, ErrorCode};
use serde_json::{json, Value};

use super::client::{call, server_error, settings, Monitor, DATABASE};
use super::gen::{self, Spec};
use super::load::read_json;
use crate::http::{ClientSettings, HttpClient, Method};
use crate::report::new_histogram;

pub const NEIGHBORS: &str =
    "FOR v IN OUTBOUND @key relations OPTIONS {bfs: true, uniqueVertices: \"global\"} RETURN v._id";
pub const NEIGHBORS2: &str = "FOR v IN 1..2 OUTBOUND @key relations OPTIONS {bfs: true, uniqueVertices: \"global\"} RETURN v._id";
pub const NEIGHBORS2DATA: &str = "FOR v IN 1..2 OUTBOUND @key relations OPTIONS {bfs: true, uniqueVertices: \"global\"} RETURN v";
pub const SHORTEST: &str = "FOR v IN OUTBOUND SHORTEST_PATH @from TO @to relations RETURN v._id";
pub const AGGREGATION: &str = "FOR x IN profiles COLLECT age = x.AGE WITH COUNT INTO counter RETURN {age: age, amount: counter}";

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

/// Continuation requests of one cursor are bounded; 100,000 batches of 1,000 rows is far
/// beyond any benchmark query result.
const MAX_BATCHES: usize = 100_000;

#[derive(Clone, Debug)]
pub struct RunOptions {
    pub endpoint: String,
    /// The `Authorization` header of every request (None: no header).
    pub authorization: Option<String>,
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

enum Job {
    Read(String),
    Write(usize),
    Query(&'static str, Value),
}

/// What one request returned.
struct Answer {
    rows: u64,
    /// Sum of `amount` of aggregation rows.
    amounts: u64,
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

async fn run_job(
    client: &mut HttpClient,
    job: &Job,
    bodies: &[Vec<u8>],
    write_collection: &str,
) -> Result<Answer, Error> {
    match job {
        Job::Read(key) => {
            let path = format!("/_api/document/profiles/{key}");
            let response = client.get(&path).await?;
            if response.status != 200 {
                return Err(server_error("read", &response));
            }
            Ok(Answer {
                rows: 1,
                amounts: 0,
            })
        }
        Job::Write(i) => {
            let path = format!("/_api/document/{write_collection}");
            let body = bodies.get(*i).map(Vec::as_slice).unwrap_or(b"{}");
            let response = client
                .request(Method::Post, &path, None, body, false)
                .await?;
            if response.status != 201 && response.status != 202 {
                return Err(server_error("write", &response));
            }
            Ok(Answer {
                rows: 1,
                amounts: 0,
            })
        }
        Job::Query(query, bind) => {
            let body = json!({"query": query, "bindVars": bind});
            let mut page = call(client, Method::Post, "/_api/cursor", Some(&body), &[201]).await?;
            let mut answer = Answer {
                rows: 0,
                amounts: 0,
            };
            for _ in 0..MAX_BATCHES {
                let result = page["result"].as_array().map(Vec::as_slice).unwrap_or(&[]);
                answer.rows += result.len() as u64;
                answer.amounts += result
                    .iter()
                    .filter_map(|r| r["amount"].as_u64())
                    .sum::<u64>();
                if page["hasMore"] != json!(true) {
                    return Ok(answer);
                }
                let id = page["id"].as_str().unwrap_or_default().to_string();
                page = call(
                    client,
                    Method::Put,
                    &format!("/_api/cursor/{id}"),
                    None,
                    &[200],
                )
                .await?;
            }
            Err(Error::with_message(
                ErrorCode::ResourceLimit,
                "cursor has too many batches",
            ))
        }
    }
}

/// Runs `jobs` over `connections` connections; a job answered with "not implemented" stops
/// the workload (the rest would answer the same), as do the memory limit and any other error.
async fn run_jobs(
    settings: &ClientSettings,
    jobs: Vec<Job>,
    connections: usize,
    bodies: Arc<Vec<Vec<u8>>>,
    write_collection: &'static str,
    over_limit: Arc<AtomicBool>,
    path_query: bool,
) -> Outcome {
    let jobs = Arc::new(jobs);
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections.min(jobs.len()).max(1) {
        let (jobs, next, stop, bodies, over) = (
            jobs.clone(),
            next.clone(),
            stop.clone(),
            bodies.clone(),
            over_limit.clone(),
        );
        let mut client = HttpClient::new(settings.clone(), DATABASE);
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
                match run_job(&mut client, job, &bodies, write_collection).await {
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

fn vertex(key: &str) -> Value {
    json!(format!("profiles/{key}"))
}

/// Recreates the write target (`profiles_temp`), as the harness did before each write test.
async fn recreate(client: &mut HttpClient, sync: bool) -> Result<(), Error> {
    call(
        client,
        Method::Delete,
        "/_api/collection/profiles_temp",
        None,
        &[200, 404],
    )
    .await?;
    let body = json!({"name": "profiles_temp", "waitForSync": sync});
    call(
        client,
        Method::Post,
        "/_api/collection",
        Some(&body),
        &[200],
    )
    .await?;
    Ok(())
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

/// Runs the selected workloads and returns the report.
pub fn run(opts: &RunOptions) -> Result<Value, Error> {
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
    let settings = settings(
        &opts.endpoint,
        opts.authorization.clone(),
        Duration::from_secs(600),
    )?;
    let runtime = super::client::runtime()?;
    let over = monitor.over_limit();
    let selected = |name: &str| opts.tests.iter().any(|t| t == name);
    let write_tests = selected("singleWrite") || selected("singleWriteSync");
    // Bodies are serialized before timing starts, like the harness loading bodies100000.json.
    let bodies: Arc<Vec<Vec<u8>>> = Arc::new(if write_tests {
        (0..limit(gen::READ_IDS) as u64)
            .map(|i| serde_json::to_vec(&gen::write_body(&spec, i)).unwrap_or_default())
            .collect()
    } else {
        Vec::new()
    });

    let results = runtime.block_on(async {
        let mut control = HttpClient::new(settings.clone(), DATABASE);
        control.retry_stale = true;
        let mut results: Vec<Value> = Vec::new();

        // Warmup (RocksDB variant): aggregation, edge index into memory, 1,000 reads.
        let t = Instant::now();
        let agg = vec![Job::Query(AGGREGATION, json!({}))];
        let w1 = run_jobs(&settings, agg, 1, bodies.clone(), "", over.clone(), false).await;
        call(
            &mut control,
            Method::Put,
            "/_api/collection/relations/loadIndexesIntoMemory",
            None,
            &[200],
        )
        .await?;
        let jobs = warmup.iter().map(|k| Job::Read(k.clone())).collect();
        let mut w2 = run_jobs(&settings, jobs, opts.connections, bodies.clone(), "", over.clone(), false)
            .await;
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
            let (outcome, result, want): (Outcome, Value, Value) = match name {
                "singleRead" => {
                    let jobs = reads.iter().map(|k| Job::Read(k.clone())).collect();
                    let o = run_jobs(&settings, jobs, conns, bodies.clone(), "", over.clone(), false)
                        .await;
                    let r = json!(o.succeeded);
                    (o, r, json!(reads.len()))
                }
                "singleWrite" | "singleWriteSync" => {
                    recreate(&mut control, name == "singleWriteSync").await?;
                    let jobs = (0..bodies.len()).map(Job::Write).collect();
                    let o = run_jobs(
                        &settings,
                        jobs,
                        conns,
                        bodies.clone(),
                        "profiles_temp",
                        over.clone(),
                        false,
                    )
                    .await;
                    let count = call(
                        &mut control,
                        Method::Get,
                        "/_api/collection/profiles_temp/count",
                        None,
                        &[200],
                    )
                    .await?["count"]
                        .as_u64()
                        .unwrap_or(0);
                    (o, json!(count), json!(bodies.len()))
                }
                "aggregation" => {
                    let jobs = vec![Job::Query(AGGREGATION, json!({}))];
                    let o = run_jobs(&settings, jobs, 1, bodies.clone(), "", over.clone(), false)
                        .await;
                    let r = json!(o.amounts);
                    (o, r, json!(profiles))
                }
                "neighbors" | "neighbors2" | "neighbors2data" => {
                    let (query, starts) = match name {
                        "neighbors" => (NEIGHBORS, gen::NEIGHBOR_STARTS),
                        "neighbors2" => (NEIGHBORS2, gen::NEIGHBOR_STARTS),
                        _ => (NEIGHBORS2DATA, gen::NEIGHBOR_DATA_STARTS),
                    };
                    let jobs = reads
                        .iter()
                        .take(limit(starts))
                        .map(|k| Job::Query(query, json!({"key": vertex(k)})))
                        .collect();
                    let o = run_jobs(&settings, jobs, conns, bodies.clone(), "", over.clone(), false)
                        .await;
                    let r = json!(o.rows);
                    (o, r, expected[name].clone())
                }
                "shortest" => {
                    let jobs = pairs
                        .iter()
                        .map(|p| {
                            let (from, to) = (p["from"].as_str(), p["to"].as_str());
                            Job::Query(
                                SHORTEST,
                                json!({"from": vertex(from.unwrap_or("")), "to": vertex(to.unwrap_or(""))}),
                            )
                        })
                        .collect();
                    let o = run_jobs(&settings, jobs, conns, bodies.clone(), "", over.clone(), true)
                        .await;
                    let r = json!({"pathLengthSum": o.path_lengths, "emptyPaths": o.empty_paths});
                    (o, r, json!({"pathLengthSum": expected["shortestPathLengthSum"], "emptyPaths": 0}))
                }
                _ => {
                    let (from, to) = (hard["from"].as_str(), hard["to"].as_str());
                    let jobs = vec![Job::Query(
                        SHORTEST,
                        json!({"from": vertex(from.unwrap_or("")), "to": vertex(to.unwrap_or(""))}),
                    )];
                    let o = run_jobs(&settings, jobs, 1, bodies.clone(), "", over.clone(), true)
                        .await;
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
        Ok::<_, Error>(results)
    })?;
    let usage = monitor.now();
    Ok(json!({
        "benchmark": "pokec",
        "dataset": meta,
        "connections": opts.connections,
        "restrict": opts.restrict,
        "loadAverage": {"start": load_start, "end": loadavg()},
        "workloads": results,
        "server": {
            "pid": opts.server_pid,
            "peakRssKiB": monitor.peak_rss_kib().max(usage.map_or(0, |u| u.hwm_kib)),
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
        let opts = RunOptions {
            endpoint: "tcp://127.0.0.1:1".into(),
            authorization: None,
            dir: std::path::PathBuf::from("/nonexistent"),
            connections: 25,
            tests: vec!["neighbours".into()],
            restrict: 0,
            server_pid: None,
            max_rss_kib: 1,
            progress: false,
        };
        let e = run(&opts).unwrap_err();
        assert_eq!(e.number(), 10);
        assert!(e.message.contains("unknown test 'neighbours'"));
        let e = run(&RunOptions {
            connections: 0,
            ..opts.clone()
        })
        .unwrap_err();
        assert_eq!(e.number(), 10);
        let e = run(&RunOptions {
            tests: vec!["singleRead".into()],
            ..opts
        })
        .unwrap_err();
        assert_eq!(e.number(), 25, "missing data directory: {}", e.message);
    }
}
