//! Statistics of a run and the reports arangobench prints: text, JSON and JUnit.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

use hdrhistogram::Histogram;
use quiver_errors::{Error, ErrorCode};
use serde_json::{json, Map, Value};

use crate::cases::Acks;
use crate::options::Config;

/// Highest latency the histograms hold (one hour, in nanoseconds); larger values are clamped.
const HIST_MAX_NS: u64 = 3_600_000_000_000;
/// Error messages kept per connection (the count is always complete).
pub const MAX_ERROR_SAMPLES: usize = 10;

pub fn new_histogram() -> Histogram<u64> {
    // 2 significant digits (1 % resolution at every magnitude) keeps one histogram near
    // 40 KiB; with 3 digits it is ~10x larger, and at 64 connections the recording alone
    // showed up in profiles through cache misses.
    Histogram::new_with_bounds(1, HIST_MAX_NS, 2).expect("constant histogram bounds are valid")
}

/// What one connection measured.
#[derive(Debug, Clone)]
pub struct ConnStats {
    pub hist: Histogram<u64>,
    /// Operations sent (batched ones counted individually).
    pub ops: u64,
    /// HTTP requests sent.
    pub requests: u64,
    /// Operations with a failed or unexpected response.
    pub failures: u64,
    /// Operations whose response was expected but incomplete.
    pub incomplete: u64,
    pub time_sum_ns: u128,
    pub min_ns: u64,
    pub max_ns: u64,
    pub started: Option<Instant>,
    pub finished: Option<Instant>,
    pub acks: Acks,
    pub errors: Vec<String>,
    pub connects: u64,
}

impl Default for ConnStats {
    fn default() -> ConnStats {
        ConnStats {
            hist: new_histogram(),
            ops: 0,
            requests: 0,
            failures: 0,
            incomplete: 0,
            time_sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            started: None,
            finished: None,
            acks: Acks::default(),
            errors: Vec::new(),
            connects: 0,
        }
    }
}

impl ConnStats {
    pub fn record_request(&mut self, nanos: u64) {
        let nanos = nanos.clamp(1, HIST_MAX_NS);
        let _ = self.hist.record(nanos);
        self.requests += 1;
        self.time_sum_ns += u128::from(nanos);
        self.min_ns = self.min_ns.min(nanos);
        self.max_ns = self.max_ns.max(nanos);
    }

    pub fn note_error(&mut self, message: String) {
        if self.errors.len() < MAX_ERROR_SAMPLES {
            self.errors.push(message);
        }
    }
}

/// Percentile values (seconds) of a histogram.
pub fn percentiles(hist: &Histogram<u64>, wanted: &[f64]) -> Vec<(f64, f64)> {
    wanted
        .iter()
        .map(|&p| {
            let v = if hist.is_empty() {
                0.0
            } else {
                hist.value_at_quantile(p / 100.0) as f64 / 1e9
            };
            (p, v)
        })
        .collect()
}

/// The outcome of one run.
#[derive(Debug, Clone)]
pub struct RunResult {
    pub operations: u64,
    pub requests: u64,
    pub failures: u64,
    pub incomplete: u64,
    pub concurrency: usize,
    /// Wall time from the first request to the last response, seconds.
    pub elapsed: f64,
    /// Sum of all request/response durations of all connections, seconds.
    pub request_time: f64,
    pub min: f64,
    pub avg: f64,
    pub max: f64,
    pub per_connection: Vec<Vec<(f64, f64)>>,
    pub overall: Vec<(f64, f64)>,
    pub histogram: Histogram<u64>,
    pub problems: Vec<String>,
    pub error_samples: Vec<String>,
    pub connects: u64,
}

impl RunResult {
    pub fn from_connections(
        conns: &[ConnStats],
        wanted: &[f64],
        problems: Vec<String>,
    ) -> RunResult {
        let mut histogram = new_histogram();
        let mut result = RunResult {
            operations: 0,
            requests: 0,
            failures: 0,
            incomplete: 0,
            concurrency: conns.len(),
            elapsed: 0.0,
            request_time: 0.0,
            min: 0.0,
            avg: 0.0,
            max: 0.0,
            per_connection: Vec::new(),
            overall: Vec::new(),
            histogram: new_histogram(),
            problems,
            error_samples: Vec::new(),
            connects: 0,
        };
        let mut min_ns = u64::MAX;
        let mut max_ns = 0;
        let mut time_sum: u128 = 0;
        let start = conns.iter().filter_map(|c| c.started).min();
        let end = conns.iter().filter_map(|c| c.finished).max();
        for c in conns {
            result.operations += c.ops;
            result.requests += c.requests;
            result.failures += c.failures;
            result.incomplete += c.incomplete;
            result.connects += c.connects;
            time_sum += c.time_sum_ns;
            min_ns = min_ns.min(c.min_ns);
            max_ns = max_ns.max(c.max_ns);
            let _ = histogram.add(&c.hist);
            result.per_connection.push(percentiles(&c.hist, wanted));
            for e in &c.errors {
                if result.error_samples.len() < MAX_ERROR_SAMPLES {
                    result.error_samples.push(e.clone());
                }
            }
        }
        if let (Some(s), Some(e)) = (start, end) {
            result.elapsed = e.saturating_duration_since(s).as_secs_f64();
        }
        result.request_time = time_sum as f64 / 1e9;
        if result.requests > 0 {
            result.min = min_ns as f64 / 1e9;
            result.max = max_ns as f64 / 1e9;
            result.avg = result.request_time / result.requests as f64;
        }
        result.overall = percentiles(&histogram, wanted);
        result.histogram = histogram;
        result
    }

    pub fn ops_per_second(&self) -> f64 {
        if self.elapsed > 0.0 {
            self.operations as f64 / self.elapsed
        } else {
            0.0
        }
    }
    pub fn time_per_op(&self) -> f64 {
        if self.operations > 0 {
            self.elapsed / self.operations as f64
        } else {
            0.0
        }
    }
    pub fn time_per_op_per_thread(&self) -> f64 {
        self.time_per_op() * self.concurrency as f64
    }
    pub fn request_time_per_thread(&self) -> f64 {
        if self.concurrency > 0 {
            self.request_time / self.concurrency as f64
        } else {
            0.0
        }
    }
    pub fn failed(&self) -> bool {
        self.failures > 0 || self.incomplete > 0 || !self.problems.is_empty()
    }
}

/// Indices of the fastest, slowest and median run (by elapsed time); the median of an even
/// number of runs is the upper middle one, as arangobench picks it.
pub fn pick_runs(results: &[RunResult]) -> Option<(usize, usize, usize)> {
    if results.is_empty() {
        return None;
    }
    let mut order: Vec<usize> = (0..results.len()).collect();
    order.sort_by(|&a, &b| results[a].elapsed.total_cmp(&results[b].elapsed));
    Some((order[0], order[order.len() - 1], order[order.len() / 2]))
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The header arangobench prints once.
pub fn header_text(config: &Config) -> String {
    let mut s = String::new();
    let ops = match config.duration {
        Some(d) => format!("{} s duration", d.as_secs()),
        None => config.requests.to_string(),
    };
    let _ = writeln!(
        s,
        "Total number of operations: {ops}, runs: {}, keep alive: {}, async: {}, batch size: {}, \
         replication factor: {}, number of shards: {}, wait for sync: {}, concurrency level (threads): {}",
        config.runs,
        yes_no(config.keep_alive),
        yes_no(config.async_requests),
        config.batch_size,
        config.replication_factor,
        config.number_of_shards,
        config.wait_for_sync,
        config.concurrency
    );
    let _ = writeln!(
        s,
        "Test case: {}, complexity: {}, database: '{}', collection: '{}'",
        config.case.name(),
        config.complexity,
        config.database,
        config.collection
    );
    s
}

fn ms(seconds: f64) -> String {
    format!("{:.4}ms", seconds * 1000.0)
}

/// The result block of one run.
pub fn result_text(config: &Config, r: &RunResult) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Total request/response duration (sum of all threads): {:.6} s",
        r.request_time
    );
    let _ = writeln!(
        s,
        "Request/response duration (per thread): {:.6} s",
        r.request_time_per_thread()
    );
    let _ = writeln!(s, "Time needed per operation: {:.6} s", r.time_per_op());
    let _ = writeln!(
        s,
        "Time needed per operation per thread: {:.6} s",
        r.time_per_op_per_thread()
    );
    let _ = writeln!(s, "Operations per second rate: {:.3}", r.ops_per_second());
    let _ = writeln!(s, "Elapsed time since start: {:.6} s", r.elapsed);
    let _ = writeln!(
        s,
        "Operations: {}, HTTP requests: {}",
        r.operations, r.requests
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "Min Request time: {} / Avg Request time: {} / Max Request time: {}",
        ms(r.min),
        ms(r.avg),
        ms(r.max)
    );
    let _ = write!(s, "{:<22}", "Interval/Percentile:");
    for p in &config.percentiles {
        let _ = write!(s, "{:>12}", format!("{p:.2}%"));
    }
    let _ = writeln!(s);
    let mut row = |label: String, values: &[(f64, f64)]| {
        let _ = write!(s, "{label:<22}");
        for (_, v) in values {
            let _ = write!(s, "{:>12}", ms(*v));
        }
        let _ = writeln!(s);
    };
    for (i, values) in r.per_connection.iter().enumerate() {
        row(format!("  thread {i}:"), values);
    }
    if r.per_connection.len() > 1 {
        row("  all:".to_string(), &r.overall);
    }
    if config.histogram_generate && !r.histogram.is_empty() {
        let _ = writeln!(s, "Histogram (request time, count):");
        // Doubling buckets from 1 µs: request times span several orders of magnitude.
        for v in r.histogram.iter_log(1_000, 2.0).take(64) {
            if v.count_since_last_iteration() > 0 {
                let _ = writeln!(
                    s,
                    "  <= {:>12}: {}",
                    ms(v.value_iterated_to() as f64 / 1e9),
                    v.count_since_last_iteration()
                );
            }
        }
    }
    if r.failures > 0 {
        let _ = writeln!(s, "WARNING: {} quiver bench request(s) failed!", r.failures);
    }
    if r.incomplete > 0 {
        let _ = writeln!(
            s,
            "WARNING: {} quiver bench request(s) returned an incomplete result!",
            r.incomplete
        );
    }
    if config.verbose || r.failures > 0 {
        for e in &r.error_samples {
            let _ = writeln!(s, "  error: {e}");
        }
    }
    for p in &r.problems {
        let _ = writeln!(s, "VERIFICATION FAILED: {p}");
    }
    s
}

fn results_json(r: &RunResult) -> Value {
    json!({
        "requestTime": r.request_time,
        "requestResponseDurationPerThread": r.request_time_per_thread(),
        "timeNeededPerOperation": r.time_per_op(),
        "timeNeededPerOperationPerThread": r.time_per_op_per_thread(),
        "operationsPerSecondRate": r.ops_per_second(),
        "timeSinceStart": r.elapsed,
        "failures": r.failures,
        "incompleteResults": r.incomplete,
        "operations": r.operations,
        "httpRequests": r.requests,
        "connectionsOpened": r.connects,
        "verificationProblems": r.problems,
        "min": r.min,
        "avg": r.avg,
        "max": r.max,
    })
}

fn pct_key(p: f64) -> String {
    // "50", "99.9": integral percentiles without a fraction, as arangobench's keys read.
    if p.fract() == 0.0 {
        format!("{p:.0}")
    } else {
        format!("{p}")
    }
}

fn histogram_json(r: &RunResult) -> Value {
    let mut map = Map::new();
    let mut entry = |name: String, values: &[(f64, f64)]| {
        let mut m = Map::new();
        // HDR histograms have no fixed interval; this is their resolution (1 ns).
        m.insert("IntervalSize".into(), json!(1e-9));
        for (p, v) in values {
            m.insert(pct_key(*p), json!(v));
        }
        map.insert(name, Value::Object(m));
    };
    for (i, values) in r.per_connection.iter().enumerate() {
        entry(i.to_string(), values);
    }
    entry("all".into(), &r.overall);
    Value::Object(map)
}

/// The JSON report, with arangobench's keys. `results` is the median run (the only one if
/// --runs 1); every run is listed under `allRuns`.
pub fn json_report(config: &Config, runs: &[RunResult]) -> Value {
    let Some((fastest, slowest, median)) = pick_runs(runs) else {
        return json!({});
    };
    let m = &runs[median];
    json!({
        "histogram": histogram_json(m),
        "totalNumberOfOperations": m.operations,
        "requests": config.requests,
        "duration": config.duration.map(|d| d.as_secs()).unwrap_or(0),
        "runs": config.runs,
        "keepAlive": config.keep_alive,
        "async": config.async_requests,
        "batchSize": config.batch_size,
        "replicationFactor": config.replication_factor,
        "numberOfShards": config.number_of_shards,
        "waitForSync": config.wait_for_sync,
        "concurrencyLevel": config.concurrency,
        "testCase": config.case.name(),
        "complexity": config.complexity,
        "database": config.database,
        "collection": config.collection,
        "seed": config.seed,
        "results": results_json(m),
        "min": m.min,
        "avg": m.avg,
        "max": m.max,
        "fastest": results_json(&runs[fastest]),
        "slowest": results_json(&runs[slowest]),
        "median": results_json(m),
        "allRuns": runs.iter().map(results_json).collect::<Vec<_>>(),
        "success": !runs.iter().any(RunResult::failed),
    })
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// JUnit XML: one testsuite "arangobench" with one testcase per run.
pub fn junit_report(config: &Config, runs: &[RunResult]) -> String {
    let failures = runs.iter().filter(|r| r.failed()).count();
    let total: f64 = runs.iter().map(|r| r.elapsed).sum();
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        s,
        "<testsuite name=\"arangobench\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{total:.6}\">",
        runs.len()
    );
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(
            s,
            "  <testcase classname=\"arangobench\" name=\"{}{}\" time=\"{:.6}\"",
            xml_escape(config.case.name()),
            if runs.len() > 1 {
                format!(" run {}", i + 1)
            } else {
                String::new()
            },
            r.elapsed
        );
        if r.failed() {
            let mut message = format!("{} failed, {} incomplete", r.failures, r.incomplete);
            for p in &r.problems {
                message.push_str("; ");
                message.push_str(p);
            }
            let _ = writeln!(
                s,
                ">\n    <failure message=\"{}\"/>\n  </testcase>",
                xml_escape(&message)
            );
        } else {
            let _ = writeln!(s, "/>");
        }
    }
    s.push_str("</testsuite>\n");
    s
}

/// Writes a new file; arangobench refuses to overwrite an existing JSON report.
pub fn write_new_file(path: &Path, contents: &[u8]) -> Result<(), Error> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| {
            Error::with_message(
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    ErrorCode::FileExists
                } else {
                    ErrorCode::IoError
                },
                format!("cannot create report file '{}': {e}", path.display()),
            )
        })?;
    file.write_all(contents).map_err(|e| {
        Error::with_message(
            ErrorCode::IoError,
            format!("cannot write report file '{}': {e}", path.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;
    use std::time::Duration;

    fn config(args: &[&str]) -> Config {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Options::parse_args(&args).unwrap().into_config().unwrap()
    }

    fn conn(latencies_us: &[u64], ops: u64, start: Instant, secs: f64) -> ConnStats {
        let mut c = ConnStats {
            ops,
            started: Some(start),
            finished: Some(start + Duration::from_secs_f64(secs)),
            ..ConnStats::default()
        };
        for l in latencies_us {
            c.record_request(l * 1000);
        }
        c
    }

    #[test]
    fn arithmetic() {
        let t0 = Instant::now();
        let a = conn(&[100, 200, 300, 400], 4, t0, 1.0);
        let b = conn(&[1000; 4], 4, t0 + Duration::from_millis(500), 1.5);
        let r = RunResult::from_connections(&[a, b], &[50.0, 100.0], vec![]);
        assert_eq!(r.operations, 8);
        assert_eq!(r.requests, 8);
        assert!((r.elapsed - 2.0).abs() < 1e-9);
        assert!((r.ops_per_second() - 4.0).abs() < 1e-9);
        assert!((r.time_per_op() - 0.25).abs() < 1e-9);
        assert!((r.time_per_op_per_thread() - 0.5).abs() < 1e-9);
        assert!((r.request_time - 0.005).abs() < 1e-12);
        assert!((r.request_time_per_thread() - 0.0025).abs() < 1e-12);
        assert!((r.min - 0.0001).abs() < 1e-12);
        assert!((r.max - 0.001).abs() < 1e-12);
        assert!((r.avg - 0.000625).abs() < 1e-12);
        // HDR keeps 2 significant digits.
        let p50 = r.per_connection[0][0].1;
        assert!((p50 - 0.0002).abs() <= 0.0002 * 0.01, "{p50}");
        let p100 = r.overall[1].1;
        assert!((p100 - 0.001).abs() <= 0.001 * 0.01, "{p100}");
        assert!(!r.failed());
    }

    #[test]
    fn percentiles_of_a_uniform_distribution() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1_000_000).unwrap();
        }
        let p = percentiles(&h, &[50.0, 90.0, 99.0]);
        for ((_, got), want) in p.iter().zip([0.5, 0.9, 0.99]) {
            assert!((got - want).abs() <= want * 0.01, "{got} vs {want}");
        }
        assert_eq!(percentiles(&new_histogram(), &[50.0])[0].1, 0.0);
    }

    fn run_with(elapsed: f64) -> RunResult {
        let t0 = Instant::now();
        RunResult::from_connections(&[conn(&[10], 1, t0, elapsed)], &[50.0, 99.9], vec![])
    }

    #[test]
    fn fastest_slowest_median() {
        let runs: Vec<RunResult> = [3.0, 1.0, 2.0, 5.0, 4.0]
            .iter()
            .map(|&e| run_with(e))
            .collect();
        assert_eq!(pick_runs(&runs), Some((1, 3, 0)));
        let runs: Vec<RunResult> = [2.0, 1.0].iter().map(|&e| run_with(e)).collect();
        assert_eq!(pick_runs(&runs), Some((1, 0, 0)));
        assert_eq!(pick_runs(&[]), None);
    }

    #[test]
    fn reports_carry_arangobench_keys() {
        let c = config(&[
            "--test-case",
            "document",
            "--runs",
            "2",
            "--histogram.percentiles",
            "50,99.9",
        ]);
        let mut failed = run_with(2.0);
        failed.failures = 3;
        failed.problems.push("count <mismatch>".into());
        let runs = vec![run_with(1.0), failed];
        let v = json_report(&c, &runs);
        for key in [
            "histogram",
            "totalNumberOfOperations",
            "runs",
            "keepAlive",
            "async",
            "batchSize",
            "replicationFactor",
            "numberOfShards",
            "waitForSync",
            "concurrencyLevel",
            "testCase",
            "complexity",
            "database",
            "collection",
            "results",
            "min",
            "avg",
            "max",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        for key in [
            "requestTime",
            "requestResponseDurationPerThread",
            "timeNeededPerOperation",
            "timeNeededPerOperationPerThread",
            "operationsPerSecondRate",
            "timeSinceStart",
            "failures",
            "incompleteResults",
        ] {
            assert!(v["results"].get(key).is_some(), "missing results.{key}");
        }
        assert!(v["histogram"]["0"].get("99.9").is_some());
        assert!(v["histogram"]["0"].get("50").is_some());
        assert_eq!(v["testCase"], "document");
        assert_eq!(v["success"], false);
        // median of two runs is the slower (upper) one
        assert_eq!(v["results"]["failures"], 3);

        let x = junit_report(&c, &runs);
        assert!(x.contains("<testsuite name=\"arangobench\" tests=\"2\" failures=\"1\""));
        assert!(x.contains("count &lt;mismatch&gt;"));
        let text = result_text(&c, &runs[1]);
        assert!(text.contains("Operations per second rate: 0.500"));
        assert!(text.contains("WARNING: 3 quiver bench request(s) failed!"));
        assert!(text.contains("VERIFICATION FAILED"));
        assert!(header_text(&c).starts_with("Total number of operations: 1000, runs: 2"));
    }

    #[test]
    fn report_files_are_not_overwritten() {
        let dir = std::env::temp_dir().join(format!("quiver-bench-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        let _ = std::fs::remove_file(&path);
        write_new_file(&path, b"{}").unwrap();
        let e = write_new_file(&path, b"{}").unwrap_err();
        assert_eq!(e.code, ErrorCode::FileExists);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
