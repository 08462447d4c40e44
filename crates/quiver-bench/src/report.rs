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

/// Run indices from the fastest to the slowest run (by elapsed time).
pub fn by_time(results: &[RunResult]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..results.len()).collect();
    order.sort_by(|&a, &b| results[a].elapsed.total_cmp(&results[b].elapsed));
    order
}

/// The run the report calls "the" result, as arangobench computes it: the only run, the middle
/// run of an odd number of runs, or for an even number the mean of the two middle runs
/// (elapsed time, request time, operation and failure counts; counts rounded down, as
/// arangobench's integer arithmetic does). Percentiles and samples come from the upper one.
pub fn median_run(results: &[RunResult]) -> Option<RunResult> {
    let order = by_time(results);
    let mid = order.len() / 2;
    let upper = results.get(*order.get(mid)?)?;
    if order.len() % 2 == 1 {
        return Some(upper.clone());
    }
    let lower = &results[order[mid - 1]];
    let mut m = upper.clone();
    m.elapsed = (lower.elapsed + upper.elapsed) / 2.0;
    m.request_time = (lower.request_time + upper.request_time) / 2.0;
    m.operations = (lower.operations + upper.operations) / 2;
    m.requests = (lower.requests + upper.requests) / 2;
    m.failures = (lower.failures + upper.failures) / 2;
    m.incomplete = (lower.incomplete + upper.incomplete) / 2;
    Some(m)
}

/// Request-time statistics over every request of every run (arangobench aggregates its min,
/// avg and max over all runs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Totals {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
}

pub fn totals(results: &[RunResult]) -> Totals {
    let measured = results.iter().filter(|r| r.requests > 0);
    let requests: u64 = measured.clone().map(|r| r.requests).sum();
    if requests == 0 {
        return Totals {
            min: 0.0,
            avg: 0.0,
            max: 0.0,
        };
    }
    Totals {
        min: measured
            .clone()
            .map(|r| r.min)
            .fold(f64::INFINITY, f64::min),
        avg: measured.clone().map(|r| r.request_time).sum::<f64>() / requests as f64,
        max: measured.map(|r| r.max).fold(0.0, f64::max),
    }
}

/// All runs' latencies in one histogram.
fn merged_histogram(results: &[RunResult]) -> Histogram<u64> {
    let mut all = new_histogram();
    for r in results {
        let _ = all.add(&r.histogram);
    }
    all
}

/// The operation count arangobench reports: --requests, or with --duration what was done.
fn total_operations(config: &Config, median: &RunResult) -> u64 {
    match config.duration {
        Some(_) => median.operations,
        None => config.requests,
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The two header lines of arangobench's report.
pub fn header_text(config: &Config, total_operations: u64) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Total number of operations: {total_operations}, runs: {}, keep alive: {}, async: {}, batch size: {}, \
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

/// The result block of one run (or of the median), with arangobench's lines and precision.
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
    let _ = writeln!(s, "Operations per second rate: {:.6}", r.ops_per_second());
    let _ = writeln!(s, "Elapsed time since start: {:.6} s", r.elapsed);
    let _ = writeln!(
        s,
        "Operations: {}, HTTP requests: {}",
        r.operations, r.requests
    );
    let _ = writeln!(s);
    if r.failures > 0 {
        let _ = writeln!(s, "WARNING: {} quiver bench request(s) failed!", r.failures);
    }
    if r.incomplete > 0 {
        let _ = writeln!(
            s,
            "WARNING: {} quiver bench requests with incomplete results!",
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

/// The whole report printed after the runs, in arangobench's order: header, the fastest and
/// slowest run (with --runs > 1), the median, min/avg/max request time over all runs, then the
/// percentile table with one row per connection of every run.
pub fn report_text(config: &Config, results: &[RunResult]) -> String {
    let Some(median) = median_run(results) else {
        return String::new();
    };
    let mut s = String::from("\n");
    s.push_str(&header_text(config, total_operations(config, &median)));
    if results.len() > 1 {
        let order = by_time(results);
        let underline = "=======================";
        let _ = writeln!(s, "\nPrinting fastest result\n{underline}");
        s.push_str(&result_text(config, &results[order[0]]));
        let _ = writeln!(s, "Printing slowest result\n{underline}");
        s.push_str(&result_text(config, &results[order[order.len() - 1]]));
        let _ = writeln!(s, "Printing median result\n{underline}");
    }
    s.push_str(&result_text(config, &median));
    let t = totals(results);
    let _ = writeln!(s, "Min request time: {:.6}ms", t.min * 1000.0);
    let _ = writeln!(s, "Avg request time: {:.6}ms", t.avg * 1000.0);
    let _ = writeln!(s, "Max request time: {:.6}ms", t.max * 1000.0);
    let _ = writeln!(s);

    let _ = write!(s, "{:<26}", "Interval/Percentile:");
    for p in &config.percentiles {
        let _ = write!(s, "{:>12}", format!("{p:.2}%"));
    }
    let _ = writeln!(s);
    let mut row = |label: String, values: &[(f64, f64)]| {
        let _ = write!(s, "{label:<26}");
        for (_, v) in values {
            let _ = write!(s, "{:>12}", ms(*v));
        }
        let _ = writeln!(s);
    };
    let mut rows = 0;
    for (run, r) in results.iter().enumerate() {
        for (i, values) in r.per_connection.iter().enumerate() {
            let label = if results.len() > 1 {
                format!("  run {} thread {i}:", run + 1)
            } else {
                format!("  thread {i}:")
            };
            row(label, values);
            rows += 1;
        }
    }
    let all = merged_histogram(results);
    if rows > 1 {
        row(
            "  all:".to_string(),
            &percentiles(&all, &config.percentiles),
        );
    }
    if config.histogram_generate && !all.is_empty() {
        let _ = writeln!(s, "Histogram (request time, count):");
        // Doubling buckets from 1 µs: request times span several orders of magnitude.
        for v in all.iter_log(1_000, 2.0).take(64) {
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
    if results.iter().any(RunResult::failed) {
        let _ = writeln!(s, "At least one of the runs produced failures!");
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

/// arangobench names percentile keys with C++'s `std::to_string(double)`: "50.000000".
pub fn pct_key(p: f64) -> String {
    format!("{p:.6}")
}

fn histogram_entry(values: &[(f64, f64)]) -> Value {
    let mut m = Map::new();
    // arangobench's bucket width; an HDR histogram has none, this is its recording unit (1 ns).
    m.insert("IntervalSize".into(), json!(1e-9));
    for (p, v) in values {
        m.insert(pct_key(*p), json!(v));
    }
    Value::Object(m)
}

/// The JSON report: arangobench's keys (`results` is the median, `fastestResults` and
/// `slowestResults` appear with --runs > 1), plus QuiverDB's extras (`requests`, `duration`,
/// `seed`, `allRuns`, `success`, and per-run counts inside each results object).
/// `histogram` holds one entry per connection of the run `results` is taken from and `all`
/// (every request of every run).
pub fn json_report(config: &Config, runs: &[RunResult]) -> Value {
    let Some(median) = median_run(runs) else {
        return json!({});
    };
    let mut histogram = Map::new();
    for (i, values) in median.per_connection.iter().enumerate() {
        histogram.insert(i.to_string(), histogram_entry(values));
    }
    let all = percentiles(&merged_histogram(runs), &config.percentiles);
    histogram.insert("all".into(), histogram_entry(&all));
    let t = totals(runs);
    let mut v = Map::new();
    v.insert("histogram".into(), Value::Object(histogram));
    v.insert(
        "totalNumberOfOperations".into(),
        json!(total_operations(config, &median)),
    );
    v.insert("runs".into(), json!(config.runs));
    v.insert("keepAlive".into(), json!(config.keep_alive));
    v.insert("async".into(), json!(config.async_requests));
    v.insert("batchSize".into(), json!(config.batch_size));
    v.insert("replicationFactor".into(), json!(config.replication_factor));
    v.insert("numberOfShards".into(), json!(config.number_of_shards));
    v.insert("waitForSync".into(), json!(config.wait_for_sync));
    v.insert("concurrencyLevel".into(), json!(config.concurrency));
    v.insert("testCase".into(), json!(config.case.name()));
    v.insert("complexity".into(), json!(config.complexity));
    v.insert("database".into(), json!(config.database));
    v.insert("collection".into(), json!(config.collection));
    if runs.len() > 1 {
        let order = by_time(runs);
        v.insert("fastestResults".into(), results_json(&runs[order[0]]));
        v.insert(
            "slowestResults".into(),
            results_json(&runs[order[order.len() - 1]]),
        );
    }
    v.insert("results".into(), results_json(&median));
    v.insert("min".into(), json!(t.min));
    v.insert("avg".into(), json!(t.avg));
    v.insert("max".into(), json!(t.max));
    v.insert("requests".into(), json!(config.requests));
    v.insert(
        "duration".into(),
        json!(config.duration.map(|d| d.as_secs()).unwrap_or(0)),
    );
    v.insert("seed".into(), json!(config.seed));
    v.insert(
        "allRuns".into(),
        Value::Array(runs.iter().map(results_json).collect()),
    );
    v.insert("success".into(), json!(!runs.iter().any(RunResult::failed)));
    Value::Object(v)
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_string())
}

/// JUnit XML as arangobench writes it: one testsuite "arangobench" with one testcase named
/// after the test case, classname "BenchTest", time = the median run's elapsed time. Unlike
/// arangobench (which always writes failures="0"), failed runs are reported as a failure.
pub fn junit_report(config: &Config, runs: &[RunResult]) -> String {
    let time = median_run(runs).map(|m| m.elapsed).unwrap_or(0.0);
    let failed: Vec<(usize, &RunResult)> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.failed())
        .collect();
    let timestamp = chrono::Local::now().format("%FT%T%z");
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        s,
        "<testsuite name=\"arangobench\" tests=\"1\" skipped=\"0\" failures=\"{}\" errors=\"0\" \
         timestamp=\"{timestamp}\" hostname=\"{}\" time=\"{time:.6}\">",
        usize::from(!failed.is_empty()),
        xml_escape(&hostname())
    );
    s.push_str("<properties/>\n");
    let _ = write!(
        s,
        "<testcase name=\"{}\" classname=\"BenchTest\" time=\"{time:.6}\"",
        xml_escape(config.case.name())
    );
    if failed.is_empty() {
        s.push_str("/>\n");
    } else {
        let mut message = String::new();
        for (i, r) in failed {
            if !message.is_empty() {
                message.push_str("; ");
            }
            let _ = write!(
                message,
                "run {}: {} failed, {} incomplete",
                i + 1,
                r.failures,
                r.incomplete
            );
            for p in &r.problems {
                message.push_str("; ");
                message.push_str(p);
            }
        }
        let _ = writeln!(
            s,
            ">\n  <failure message=\"{}\"/>\n</testcase>",
            xml_escape(&message)
        );
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
        assert_eq!(by_time(&runs), vec![1, 2, 0, 4, 3]);
        assert_eq!(median_run(&runs).unwrap().elapsed, 3.0);
        assert!(median_run(&[]).is_none());
        assert_eq!(median_run(&runs[..1]).unwrap().elapsed, 3.0);
    }

    #[test]
    fn median_of_an_even_number_of_runs_is_the_mean_of_the_middle_two() {
        let mut runs: Vec<RunResult> = [4.0, 1.0, 2.0, 8.0].iter().map(|&e| run_with(e)).collect();
        runs[0].failures = 3; // 4.0 s: upper middle
        runs[2].failures = 0; // 2.0 s: lower middle
        runs[0].request_time = 0.5;
        runs[2].request_time = 0.25;
        let m = median_run(&runs).unwrap();
        assert_eq!(m.elapsed, 3.0);
        assert_eq!(m.request_time, 0.375);
        // Integer mean, rounded down, as arangobench's size_t arithmetic does.
        assert_eq!(m.failures, 1);
        assert!((m.ops_per_second() - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn min_avg_max_span_all_runs() {
        let t0 = Instant::now();
        let a = RunResult::from_connections(&[conn(&[100, 300], 2, t0, 1.0)], &[50.0], vec![]);
        let b = RunResult::from_connections(&[conn(&[50, 1000], 2, t0, 1.0)], &[50.0], vec![]);
        let idle = RunResult::from_connections(&[conn(&[], 0, t0, 1.0)], &[50.0], vec![]);
        let t = totals(&[a, idle, b]);
        assert!((t.min - 50e-6).abs() < 1e-12, "{t:?}");
        assert!((t.max - 1000e-6).abs() < 1e-12, "{t:?}");
        assert!((t.avg - 362.5e-6).abs() < 1e-12, "{t:?}");
        assert_eq!(totals(&[]).max, 0.0);
    }

    #[test]
    fn reports_carry_arangobench_keys() {
        let c = config(&[
            "--test-case",
            "document",
            "--runs",
            "3",
            "--histogram.percentiles",
            "50,99.9",
        ]);
        let mut failed = run_with(2.0);
        failed.failures = 3;
        failed.problems.push("count <mismatch>".into());
        let runs = vec![run_with(1.0), failed, run_with(3.0)];
        let v = json_report(&c, &runs);
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        // arangobench's keys, in its order, then QuiverDB's extras.
        assert_eq!(
            keys,
            vec![
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
                "fastestResults",
                "slowestResults",
                "results",
                "min",
                "avg",
                "max",
                "requests",
                "duration",
                "seed",
                "allRuns",
                "success",
            ]
        );
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
            for r in ["results", "fastestResults", "slowestResults"] {
                assert!(v[r].get(key).is_some(), "missing {r}.{key}");
            }
        }
        assert!(v["histogram"]["0"].get("99.900000").is_some());
        assert!(v["histogram"]["0"].get("50.000000").is_some());
        assert!(v["histogram"]["0"].get("IntervalSize").is_some());
        assert!(v["histogram"]["all"].get("50.000000").is_some());
        assert_eq!(v["testCase"], "document");
        assert_eq!(v["totalNumberOfOperations"], 1000);
        assert_eq!(v["success"], false);
        assert_eq!(v["fastestResults"]["timeSinceStart"], 1.0);
        assert_eq!(v["slowestResults"]["timeSinceStart"], 3.0);
        // The median of three runs is the middle one, the failed run.
        assert_eq!(v["results"]["failures"], 3);
        assert_eq!(v["allRuns"].as_array().unwrap().len(), 3);
        // One run: no fastest/slowest keys.
        let one = json_report(&config(&["--test-case", "document"]), &runs[..1]);
        assert!(one.get("fastestResults").is_none());
        assert!(one.get("results").is_some());

        let x = junit_report(&c, &runs);
        assert!(x.contains(
            "<testsuite name=\"arangobench\" tests=\"1\" skipped=\"0\" failures=\"1\" errors=\"0\""
        ));
        assert!(x.contains("<properties/>"));
        assert!(
            x.contains("<testcase name=\"document\" classname=\"BenchTest\" time=\"2.000000\">")
        );
        assert!(x.contains("run 2: 3 failed, 0 incomplete; count &lt;mismatch&gt;"));
        let ok = junit_report(&c, &runs[..1]);
        assert!(ok.contains("failures=\"0\""));
        assert!(ok.contains("classname=\"BenchTest\" time=\"1.000000\"/>"));

        let text = report_text(&c, &runs);
        let order = [
            "Total number of operations: 1000, runs: 3, keep alive: yes, async: no, batch size: 0",
            "Test case: document, complexity: 1, database: '_system', collection: 'ArangoBenchmark'",
            "Printing fastest result",
            "Elapsed time since start: 1.000000 s",
            "Printing slowest result",
            "Elapsed time since start: 3.000000 s",
            "Printing median result",
            "Operations per second rate: 0.500000",
            "WARNING: 3 quiver bench request(s) failed!",
            "VERIFICATION FAILED: count <mismatch>",
            "Min request time: 0.010000ms",
            "Avg request time: 0.010000ms",
            "Max request time: 0.010000ms",
            "Interval/Percentile:",
            "  run 3 thread 0:",
            "  all:",
            "At least one of the runs produced failures!",
        ];
        let mut at = 0;
        for line in order {
            let found = text[at..].find(line);
            assert!(
                found.is_some(),
                "{line:?} missing after byte {at} in\n{text}"
            );
            at += found.unwrap();
        }
        let single = report_text(&config(&["--test-case", "document"]), &runs[..1]);
        assert!(!single.contains("Printing"));
        assert!(!single.contains("At least one"));
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
