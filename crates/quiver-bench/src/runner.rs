//! Runs a test case: setup, the timed load over `--concurrency` connections, verification.
//!
//! Threading: a few OS threads (one per core by default, never more than connections), each
//! with its own single-threaded tokio runtime driving its share of the connections as tasks.
//! This is wrk's model (one event loop per thread, connections pinned to a loop): no work
//! stealing, no cross-thread wake-ups, and the machine's cores stay available to the server
//! under test, which usually runs on the same host.

use std::io::IsTerminal;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quiver_errors::{Error, ErrorCode};
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::batch;
use crate::cases::{account, Acks, Op, TestCase};
use crate::http::{ClientSettings, HttpClient, Method};
use crate::options::Config;
use crate::report::{self, ConnStats, RunResult};

/// Counter offset between connections in --duration mode: each connection owns a counter
/// range this wide (a multiple of every cycle length 1..=5, so key cycles never straddle).
const DURATION_STRIDE: u64 = 60_000_000_000;

/// Splits `requests` operations between `concurrency` connections in whole key cycles.
pub fn plan_ranges(requests: u64, concurrency: usize, cycle: u64) -> Vec<Range<u64>> {
    let cycle = cycle.max(1);
    // u128: units * (i + 1) overflows u64 for request counts near u64::MAX.
    let units = u128::from(requests.div_ceil(cycle));
    let c = concurrency.max(1) as u128;
    let bound = |unit: u128| (unit * u128::from(cycle)).min(u128::from(requests)) as u64;
    (0..c)
        .map(|i| bound(units * i / c)..bound(units * (i + 1) / c))
        .collect()
}

fn duration_ranges(concurrency: usize) -> Vec<Range<u64>> {
    (0..concurrency as u64)
        .map(|i| i * DURATION_STRIDE..(i + 1) * DURATION_STRIDE)
        .collect()
}

/// The random value each run's test case draws from (random-shapes), derived from --seed so
/// that the same seed sends the same requests.
pub fn run_random_values(seed: u64, runs: usize) -> Vec<u32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..runs).map(|_| rng.gen()).collect()
}

/// Writes to stdout, ignoring errors: a closed pipe (`quiver bench | head`) must neither
/// panic, as `print!` would, nor change the outcome of the benchmark.
fn say(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::with_message(ErrorCode::Internal, format!("cannot start runtime: {e}")))
}

/// Runs every run of the configured test; prints and writes the reports. Returns whether all
/// runs succeeded.
pub fn run_all(config: &Config) -> Result<bool, Error> {
    // Found out before the run, not after hours of it.
    if let Some(path) = &config.json_report_file {
        if path.exists() {
            return Err(Error::with_message(
                ErrorCode::FileExists,
                format!(
                    "JSON report file '{}' exists; it is never overwritten",
                    path.display()
                ),
            ));
        }
    }
    let settings = ClientSettings::from_config(config)?;
    let control_rt = runtime()?;
    let mut control = HttpClient::new(settings.clone(), &config.database);
    control.retry_stale = true;
    if config.create_database {
        control_rt.block_on(create_database(&mut control, &config.database))?;
    }
    // Status lines are what --quiet suppresses; the report itself is always printed.
    let status = |text: &str| {
        if !config.quiet {
            say(&format!("{text}\n"));
        }
    };
    let config_arc = Arc::new(config.clone());
    let mut results = Vec::with_capacity(config.runs);
    for (run, random_value) in run_random_values(config.seed, config.runs)
        .into_iter()
        .enumerate()
    {
        let case = Arc::new(TestCase::new(config, random_value));
        status("setting up...");
        let initial = control_rt.block_on(case.setup(&mut control, config))?;
        if config.delay {
            status("sleeping (startup delay)...");
            std::thread::sleep(Duration::from_secs(10));
        }
        status("executing tests...");
        let conns = execute(&config_arc, &settings, &case)?;
        let mut acks = Acks::default();
        for c in &conns {
            acks.merge(&c.acks);
        }
        let problems =
            control_rt.block_on(case.verify(&mut control, &acks, initial, config.async_requests));
        let result = RunResult::from_connections(&conns, &config.percentiles, problems);
        if config.runs > 1 {
            status(&format!(
                "run {}: {:.6} s, {:.3} operations/s{}",
                run + 1,
                result.elapsed,
                result.ops_per_second(),
                if result.failed() { " (FAILED)" } else { "" }
            ));
        }
        results.push(result);
    }
    say(&report::report_text(config, &results));
    if let Some(path) = &config.json_report_file {
        let value = report::json_report(config, &results);
        let text = serde_json::to_vec_pretty(&value).unwrap_or_default();
        report::write_new_file(path, &text)?;
    }
    if let Some(path) = &config.junit_report_file {
        // arangobench overwrites an existing JUnit file (only the JSON report is protected).
        let _ = std::fs::remove_file(path);
        report::write_new_file(path, report::junit_report(config, &results).as_bytes())?;
    }
    Ok(!results.iter().any(RunResult::failed))
}

async fn create_database(client: &mut HttpClient, name: &str) -> Result<(), Error> {
    client.set_database("_system");
    let response = client
        .send_json(Method::Post, "/_api/database", &json!({ "name": name }))
        .await;
    client.set_database(name);
    let response = response?;
    match response.status {
        200 | 201 => Ok(()),
        // Like arangobench, an existing database is an error: --create-database promises a
        // database the run starts in, not one left over from earlier runs.
        409 => Err(Error::with_message(
            ErrorCode::DuplicateName,
            format!(
                "failed to create the specified database '{name}': it exists already \
                 (leave out --create-database to use it)"
            ),
        )),
        status => Err(Error::with_message(
            ErrorCode::SimpleClientUnknownError,
            format!(
                "failed to create the specified database '{name}': HTTP {status} {}",
                response.body_text()
            ),
        )),
    }
}

/// The timed part of one run: all connections, in parallel.
fn execute(
    config: &Arc<Config>,
    settings: &ClientSettings,
    case: &Arc<TestCase>,
) -> Result<Vec<ConnStats>, Error> {
    let concurrency = config.concurrency;
    let threads = config.io_threads.clamp(1, concurrency);
    let ranges = match config.duration {
        Some(_) => duration_ranges(concurrency),
        None => plan_ranges(config.requests, concurrency, case.kind.cycle()),
    };
    let barrier = Arc::new(tokio::sync::Barrier::new(concurrency));
    let progress = Arc::new(AtomicU64::new(0));
    let mut handles = Vec::with_capacity(threads);
    for t in 0..threads {
        let mine: Vec<(usize, Range<u64>)> = (t..concurrency)
            .step_by(threads)
            .map(|i| (i, ranges[i].clone()))
            .collect();
        let config = Arc::clone(config);
        let settings = settings.clone();
        let case = Arc::clone(case);
        let barrier = Arc::clone(&barrier);
        let progress = Arc::clone(&progress);
        let handle = std::thread::Builder::new()
            .name(format!("bench-io-{t}"))
            .spawn(move || -> Result<Vec<(usize, ConnStats)>, Error> {
                let rt = runtime()?;
                rt.block_on(async move {
                    let mut set = tokio::task::JoinSet::new();
                    for (i, range) in mine {
                        set.spawn(connection(
                            i,
                            range,
                            Arc::clone(&config),
                            settings.clone(),
                            Arc::clone(&case),
                            Arc::clone(&barrier),
                            Arc::clone(&progress),
                        ));
                    }
                    let mut out = Vec::new();
                    while let Some(joined) = set.join_next().await {
                        match joined {
                            Ok(pair) => out.push(pair),
                            Err(e) => {
                                return Err(Error::with_message(
                                    ErrorCode::Internal,
                                    format!("connection task failed: {e}"),
                                ))
                            }
                        }
                    }
                    Ok(out)
                })
            })
            .map_err(|e| {
                Error::with_message(ErrorCode::Internal, format!("cannot start thread: {e}"))
            })?;
        handles.push(handle);
    }

    let show_progress = config.progress && !config.quiet && std::io::stderr().is_terminal();
    if show_progress {
        let bar = match config.duration {
            Some(d) => indicatif::ProgressBar::new(d.as_secs()),
            None => indicatif::ProgressBar::new(config.requests),
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} {msg} [{elapsed_precise}]",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let started = Instant::now();
        while !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(Duration::from_millis(100));
            let done = progress.load(Ordering::Relaxed);
            match config.duration {
                Some(_) => {
                    bar.set_position(started.elapsed().as_secs());
                    bar.set_message(format!("{done} operations"));
                }
                None => bar.set_position(done),
            }
        }
        bar.finish_and_clear();
    }

    let mut all = Vec::with_capacity(concurrency);
    for handle in handles {
        match handle.join() {
            Ok(Ok(part)) => all.extend(part),
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(Error::with_message(
                    ErrorCode::Internal,
                    "a benchmark thread panicked",
                ))
            }
        }
    }
    all.sort_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, s)| s).collect())
}

async fn connection(
    index: usize,
    range: Range<u64>,
    config: Arc<Config>,
    settings: ClientSettings,
    case: Arc<TestCase>,
    barrier: Arc<tokio::sync::Barrier>,
    progress: Arc<AtomicU64>,
) -> (usize, ConnStats) {
    let mut stats = ConnStats::default();
    let mut client = HttpClient::new(settings, &config.database);
    // Like arangobench, every connection first checks the server answers at all.
    let ready = match client.get("/_api/version").await {
        Ok(r) if r.status == 200 => true,
        Ok(r) => {
            stats.note_error(format!(
                "connection {index}: GET /_api/version answered {}: {}",
                r.status,
                r.body_text()
            ));
            false
        }
        Err(e) => {
            stats.note_error(format!("connection {index}: {}", e.message));
            false
        }
    };
    barrier.wait().await;
    let start = Instant::now();
    stats.started = Some(start);
    if !ready {
        stats.failures = if config.duration.is_some() {
            1
        } else {
            range.end - range.start
        };
        stats.finished = Some(Instant::now());
        stats.connects = client.connects;
        return (index, stats);
    }
    let deadline = config.duration.map(|d| start + d);
    let batch_size = config.batch_size;
    let async_mode = config.async_requests;
    let per_request = batch_size.max(1) as usize;
    let mut ops: Vec<Op> = (0..per_request).map(|_| Op::default()).collect();
    let batch_type = batch::content_type();
    let mut batch_body = Vec::new();
    let mut counter = range.start;
    let mut conn_counter = 0u64;
    while counter < range.end {
        if let Some(deadline) = deadline {
            if Instant::now() >= deadline {
                break;
            }
        }
        let n = if batch_size == 0 {
            1
        } else {
            batch_size.min(range.end - counter)
        };
        for (j, op) in ops.iter_mut().enumerate().take(n as usize) {
            case.build(counter + j as u64, index, conn_counter + j as u64, op);
        }
        let t0 = Instant::now();
        if batch_size == 0 {
            let op = &ops[0];
            let outcome = client
                .request(op.method, &op.path, None, &op.body, async_mode)
                .await;
            stats.record_request(t0.elapsed().as_nanos() as u64);
            match outcome {
                Ok(response) => {
                    match account(
                        op.effect,
                        response.status,
                        &response.body,
                        async_mode,
                        &mut stats.acks,
                    ) {
                        Ok(true) => {}
                        Ok(false) => stats.incomplete += 1,
                        Err(message) => {
                            stats.failures += 1;
                            stats.note_error(format!(
                                "{} {}: {message}",
                                op.method.as_str(),
                                op.path
                            ));
                        }
                    }
                }
                Err(e) => {
                    stats.failures += 1;
                    stats.note_error(format!("{} {}: {}", op.method.as_str(), op.path, e.message));
                }
            }
        } else {
            batch_body.clear();
            for (j, op) in ops.iter().take(n as usize).enumerate() {
                batch::push_part(&mut batch_body, j as u64 + 1, op.method, &op.path, &op.body);
            }
            batch::finish(&mut batch_body);
            let outcome = client
                .request(
                    Method::Post,
                    "/_api/batch",
                    Some(&batch_type),
                    &batch_body,
                    async_mode,
                )
                .await;
            stats.record_request(t0.elapsed().as_nanos() as u64);
            account_batch(&ops[..n as usize], outcome, async_mode, &mut stats);
        }
        counter += n;
        conn_counter += n;
        stats.ops += n;
        progress.fetch_add(n, Ordering::Relaxed);
    }
    stats.finished = Some(Instant::now());
    stats.connects = client.connects;
    (index, stats)
}

/// Checks a batch response part by part.
fn account_batch(
    ops: &[Op],
    outcome: Result<crate::http::Response, Error>,
    async_mode: bool,
    stats: &mut ConnStats,
) {
    let n = ops.len() as u64;
    let response = match outcome {
        Ok(r) => r,
        Err(e) => {
            stats.failures += n;
            stats.note_error(format!("POST /_api/batch: {}", e.message));
            return;
        }
    };
    if async_mode {
        if response.status == 202 {
            for op in ops {
                let _ = account(op.effect, 202, b"", true, &mut stats.acks);
            }
        } else {
            stats.failures += n;
            stats.note_error(format!(
                "async POST /_api/batch answered {}: {}",
                response.status,
                response.body_text()
            ));
        }
        return;
    }
    if response.status != 200 {
        stats.failures += n;
        stats.note_error(format!(
            "POST /_api/batch answered {}: {}",
            response.status,
            response.body_text()
        ));
        return;
    }
    let parts = match batch::parse_response(response.content_type.as_deref(), &response.body) {
        Ok(parts) => parts,
        Err(message) => {
            stats.failures += n;
            stats.note_error(format!("POST /_api/batch: {message}"));
            return;
        }
    };
    let mut failed_parts = 0;
    for (op, part) in ops.iter().zip(parts.iter()) {
        match account(op.effect, part.status, &part.body, false, &mut stats.acks) {
            Ok(true) => {}
            Ok(false) => stats.incomplete += 1,
            Err(message) => {
                failed_parts += 1;
                stats.failures += 1;
                stats.note_error(format!(
                    "batch part {} {}: {message}",
                    op.method.as_str(),
                    op.path
                ));
            }
        }
    }
    if parts.len() < ops.len() {
        stats.incomplete += (ops.len() - parts.len()) as u64;
        stats.note_error(format!(
            "batch response has {} parts for {} operations",
            parts.len(),
            ops.len()
        ));
    }
    // The server's own count of failed parts must agree with what the parts say.
    if let Some(reported) = response.arango_errors {
        if reported != failed_parts {
            stats.note_error(format!(
                "x-arango-errors says {reported} failed parts, the parts show {failed_parts}"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_everything_in_whole_cycles() {
        for (requests, c, cycle) in [(1000, 3, 5), (7, 4, 2), (10, 1, 3), (3, 8, 1), (1001, 4, 4)] {
            let ranges = plan_ranges(requests, c, cycle);
            assert_eq!(ranges.len(), c);
            let mut next = 0;
            for r in &ranges {
                assert_eq!(r.start, next);
                assert!(r.start % cycle == 0 || r.start == requests);
                next = r.end;
            }
            assert_eq!(next, requests);
        }
        assert_eq!(plan_ranges(1000, 3, 5), vec![0..330, 330..665, 665..1000]);
        let huge = plan_ranges(u64::MAX, 4096, 5);
        assert_eq!(huge.last().unwrap().end, u64::MAX);
    }

    #[test]
    fn the_seed_fixes_the_requests() {
        let bodies = |seed: &str| -> Vec<Vec<u8>> {
            let args: Vec<String> = [
                "--test-case",
                "random-shapes",
                "--runs",
                "3",
                "--seed",
                seed,
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            let config = crate::Options::parse_args(&args)
                .unwrap()
                .into_config()
                .unwrap();
            run_random_values(config.seed, config.runs)
                .into_iter()
                .flat_map(|value| {
                    let case = TestCase::new(&config, value);
                    (0..30).step_by(3).map(move |counter| {
                        let mut op = Op::default();
                        case.build(counter, 0, counter, &mut op);
                        op.body
                    })
                })
                .collect()
        };
        assert_eq!(bodies("7"), bodies("7"));
        assert_ne!(bodies("7"), bodies("8"));
        assert_eq!(run_random_values(1, 4).len(), 4);
    }

    #[test]
    fn duration_ranges_are_cycle_aligned() {
        for r in duration_ranges(4) {
            for cycle in 1..=5 {
                assert_eq!(r.start % cycle, 0);
            }
        }
    }
}
