//! Command-line options with arangobench's names and defaults, and their validation into a
//! [`Config`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser};
use quiver_errors::{Error, ErrorCode};

use crate::case_kind::CaseKind;

/// arangobench's boolean options take a value (`--keep-alive false`) but may also be given
/// bare (`--quiet`), which means `true`.
pub(crate) fn parse_bool(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" | "y" => Ok(true),
        "false" | "no" | "off" | "0" | "n" => Ok(false),
        other => Err(format!("expected true or false, got '{other}'")),
    }
}

fn parse_percentile(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if !(value > 0.0 && value <= 100.0) {
        return Err(format!("percentile {value} is outside (0, 100]"));
    }
    Ok(value)
}

/// The options of `quiver bench`, spelled as arangobench spells them.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "quiver bench",
    about = "Load generator for QuiverDB or any ArangoDB-compatible server (arangobench's options and test cases)",
    disable_version_flag = true
)]
pub struct Options {
    /// Endpoint to connect to: tcp://host:port or http://host:port.
    #[arg(long = "server.endpoint", default_value = "tcp://127.0.0.1:8529")]
    pub endpoint: String,
    /// User name for HTTP basic authentication.
    #[arg(long = "server.username", default_value = "root")]
    pub username: String,
    /// Password for HTTP basic authentication.
    #[arg(long = "server.password", default_value = "")]
    pub password: String,
    /// Database to run the test in.
    #[arg(long = "server.database", default_value = "_system")]
    pub database: String,
    /// Send an Authorization header at all.
    #[arg(long = "server.authentication", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub authentication: bool,
    /// Seconds to wait for a connection to be established.
    #[arg(long = "server.connection-timeout", default_value_t = 5.0)]
    pub connection_timeout: f64,
    /// Seconds to wait for one response.
    #[arg(long = "server.request-timeout", default_value_t = 1200.0)]
    pub request_timeout: f64,

    /// Test case to run (listed below).
    #[arg(long = "test-case", default_value = "version")]
    pub test_case: String,
    /// Total number of operations (batched operations count individually).
    #[arg(long = "requests", default_value_t = 1000)]
    pub requests: u64,
    /// Run for this many seconds instead of --requests (0 = use --requests).
    #[arg(long = "duration", default_value_t = 0)]
    pub duration: u64,
    /// Number of parallel connections (arangobench 3.10+ calls it --threads; both spellings
    /// work). Default: the number of CPU cores, as in arangobench 3.10+.
    #[arg(long = "concurrency", visible_alias = "threads")]
    pub concurrency: Option<u64>,
    /// Operations per /_api/batch request; 0 sends each operation on its own.
    #[arg(long = "batch-size", default_value_t = 0)]
    pub batch_size: u64,
    /// Test-specific size, usually the number of attributes per document.
    #[arg(long = "complexity", default_value_t = 1)]
    pub complexity: u64,
    /// Use HTTP keep-alive.
    #[arg(long = "keep-alive", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub keep_alive: bool,
    /// Send x-arango-async: true (the server queues the request and answers 202 at once).
    #[arg(long = "async", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub async_requests: bool,
    /// Wait 10 seconds before starting (for runs started in series).
    #[arg(long = "delay", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub delay: bool,
    /// Collection the test cases use.
    #[arg(long = "collection", default_value = "ArangoBenchmark")]
    pub collection: String,
    /// Create the test collection (after dropping it); false uses it as it is.
    #[arg(long = "create-collection", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub create_collection: bool,
    /// Created collections use waitForSync.
    #[arg(long = "wait-for-sync", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub wait_for_sync: bool,
    /// replicationFactor of created collections (cluster option, passed through).
    #[arg(long = "replication-factor", default_value_t = 1)]
    pub replication_factor: u64,
    /// numberOfShards of created collections (cluster option, passed through).
    #[arg(long = "number-of-shards", default_value_t = 1)]
    pub number_of_shards: u64,
    /// Repeat the test; the fastest, slowest and median run are printed.
    #[arg(long = "runs", default_value_t = 1)]
    pub runs: u64,
    /// Create --server.database before running.
    #[arg(long = "create-database", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub create_database: bool,
    /// AQL query of the custom-query test case.
    #[arg(long = "custom-query", default_value = "")]
    pub custom_query: String,
    /// File holding the AQL query of the custom-query test case.
    #[arg(long = "custom-query-file", default_value = "")]
    pub custom_query_file: String,
    /// Bind parameters of the custom query, as a JSON object.
    #[arg(long = "custom-query-bindvars", default_value = "")]
    pub custom_query_bindvars: String,
    /// Percentiles to print (repeat the option or separate with commas); the first one given
    /// replaces the default list 50, 80, 85, 90, 95, 99, 99.99.
    #[arg(long = "histogram.percentiles", value_delimiter = ',', action = ArgAction::Append,
          value_parser = parse_percentile)]
    pub percentiles: Vec<f64>,
    /// arangobench's bucket count; accepted so its command lines run unchanged, without
    /// effect: latencies go into an HDR histogram, which needs no bucket setup.
    #[arg(long = "histogram.num-intervals", default_value_t = 1000)]
    pub histogram_num_intervals: u64,
    /// arangobench's bucket width in seconds; accepted without effect (see num-intervals).
    #[arg(long = "histogram.interval-size", default_value_t = 0.0)]
    pub histogram_interval_size: f64,
    /// Print the latency histogram buckets.
    #[arg(long = "histogram.generate", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub histogram_generate: bool,
    /// Write a JSON report to this file (refuses to overwrite an existing file).
    #[arg(long = "json-report-file", default_value = "")]
    pub json_report_file: String,
    /// Write a JUnit XML report to this file.
    #[arg(long = "junit-report-file", default_value = "")]
    pub junit_report_file: String,
    /// Suppress status lines.
    #[arg(long = "quiet", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub quiet: bool,
    /// Show a progress bar (only ever on an interactive terminal).
    #[arg(long = "progress", default_value = "true", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub progress: bool,
    /// Print the bodies of failed responses.
    #[arg(long = "verbose", default_value = "false", num_args = 0..=1,
          default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub verbose: bool,
    /// Seed of the random generators (QuiverDB extension; runs with the same seed send the same requests).
    #[arg(long = "seed", default_value_t = 0x5eed_ba5e)]
    pub seed: u64,
    /// OS threads driving the connections (QuiverDB extension; 0 = one per core, at most one per connection).
    #[arg(long = "io-threads", default_value_t = 0)]
    pub io_threads: u64,
}

/// Where to connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    /// Parses arangosh's endpoint syntax. Only plain TCP is spoken: TLS and unix sockets are
    /// rejected with a clear error instead of failing later.
    pub fn parse(text: &str) -> Result<Endpoint, Error> {
        let rest = ["tcp://", "http+tcp://", "http://", "h2+tcp://"]
            .iter()
            .find_map(|p| text.strip_prefix(p));
        let Some(rest) = rest else {
            let reason = if text.starts_with("ssl://")
                || text.starts_with("https://")
                || text.starts_with("http+ssl://")
            {
                "TLS endpoints are not supported by quiver bench"
            } else if text.starts_with("unix://") {
                "unix socket endpoints are not supported by quiver bench"
            } else {
                "expected tcp://host:port"
            };
            return Err(bad(format!("invalid --server.endpoint '{text}': {reason}")));
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            let (h, p) = v6
                .split_once(']')
                .ok_or_else(|| bad(format!("invalid --server.endpoint '{text}'")))?;
            (h.to_string(), p.strip_prefix(':').unwrap_or(""))
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), p),
                None => (rest.to_string(), ""),
            }
        };
        if host.is_empty() {
            return Err(bad(format!("invalid --server.endpoint '{text}': no host")));
        }
        let port = if port.is_empty() {
            8529
        } else {
            port.parse()
                .map_err(|_| bad(format!("invalid --server.endpoint '{text}': bad port")))?
        };
        Ok(Endpoint { host, port })
    }

    /// The value of the Host header.
    pub fn host_header(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Validated settings of one `quiver bench` invocation.
#[derive(Debug, Clone)]
pub struct Config {
    pub endpoint: Endpoint,
    pub username: String,
    pub password: String,
    pub authentication: bool,
    pub database: String,
    pub connection_timeout: Duration,
    pub request_timeout: Duration,
    pub case: CaseKind,
    pub requests: u64,
    pub duration: Option<Duration>,
    pub concurrency: usize,
    pub batch_size: u64,
    pub complexity: u64,
    pub keep_alive: bool,
    pub async_requests: bool,
    pub delay: bool,
    pub collection: String,
    pub create_collection: bool,
    pub wait_for_sync: bool,
    pub replication_factor: u64,
    pub number_of_shards: u64,
    pub runs: usize,
    pub create_database: bool,
    /// The custom query and its bind parameters (custom-query only).
    pub custom_query: Option<(String, serde_json::Map<String, serde_json::Value>)>,
    pub percentiles: Vec<f64>,
    pub histogram_generate: bool,
    pub json_report_file: Option<PathBuf>,
    pub junit_report_file: Option<PathBuf>,
    pub quiet: bool,
    pub progress: bool,
    pub verbose: bool,
    pub seed: u64,
    pub io_threads: usize,
}

/// arangobench 3.10+'s default of --histogram.percentiles.
pub const DEFAULT_PERCENTILES: [f64; 7] = [50.0, 80.0, 85.0, 90.0, 95.0, 99.0, 99.99];

/// Upper bound on connections: each one is a socket and a task; far beyond what a load test
/// on one machine can use, low enough that a typo cannot exhaust file descriptors.
pub const MAX_CONCURRENCY: u64 = 4096;
/// Upper bound on operations per batch request, so one request body stays bounded.
pub const MAX_BATCH_SIZE: u64 = 100_000;
/// Upper bound on --complexity (attributes per document): bounds every generated body.
pub const MAX_COMPLEXITY: u64 = 1_000_000;
/// Upper bound on --duration (one year): keeps deadline arithmetic far from overflow.
pub const MAX_DURATION_SECS: u64 = 365 * 24 * 3600;
/// Upper bound on --runs.
pub const MAX_RUNS: u64 = 1000;

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message)
}

impl Options {
    /// Parses `args` (what follows `quiver bench`).
    pub fn parse_args(args: &[String]) -> Result<Options, clap::Error> {
        use clap::{CommandFactory, FromArgMatches};
        let argv = std::iter::once("quiver bench".to_string()).chain(args.iter().cloned());
        let mut cases = String::from("Test cases:\n");
        for kind in CaseKind::ALL {
            cases.push_str(&format!("  {:<18} {}\n", kind.name(), kind.description()));
        }
        let matches = Options::command()
            .after_help(cases)
            .try_get_matches_from(argv)?;
        Options::from_arg_matches(&matches)
    }

    /// Checks the combination of options and resolves files and defaults.
    pub fn into_config(self) -> Result<Config, Error> {
        let endpoint = Endpoint::parse(&self.endpoint)?;
        let case = CaseKind::from_name(&self.test_case).ok_or_else(|| {
            bad(format!(
                "unknown --test-case '{}'; known test cases: {}",
                self.test_case,
                CaseKind::ALL
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let cores = std::thread::available_parallelism()
            .map(|n| n.get() as u64)
            .unwrap_or(1);
        let concurrency = self.concurrency.unwrap_or(cores);
        if concurrency == 0 || concurrency > MAX_CONCURRENCY {
            return Err(bad(format!(
                "--concurrency must be between 1 and {MAX_CONCURRENCY}"
            )));
        }
        if self.batch_size > MAX_BATCH_SIZE {
            return Err(bad(format!(
                "--batch-size must be at most {MAX_BATCH_SIZE}"
            )));
        }
        if self.complexity > MAX_COMPLEXITY {
            return Err(bad(format!(
                "--complexity must be at most {MAX_COMPLEXITY}"
            )));
        }
        if self.runs == 0 || self.runs > MAX_RUNS {
            return Err(bad(format!("--runs must be between 1 and {MAX_RUNS}")));
        }
        if self.duration > MAX_DURATION_SECS {
            return Err(bad(format!(
                "--duration must be at most {MAX_DURATION_SECS} seconds"
            )));
        }
        if self.requests == 0 && self.duration == 0 {
            return Err(bad("--requests must be positive (or give --duration)"));
        }
        if case == CaseKind::DocumentRemove && self.duration > 0 {
            return Err(bad(
                "document-remove removes each preloaded document once; use --requests, not --duration",
            ));
        }
        if self.collection.is_empty() {
            return Err(bad("--collection must not be empty"));
        }
        if self.database.is_empty() {
            return Err(bad("--server.database must not be empty"));
        }
        let timeout = |value: f64, name: &str| -> Result<Duration, Error> {
            if value.is_finite() && value > 0.0 && value <= 86_400.0 {
                Ok(Duration::from_secs_f64(value))
            } else {
                Err(bad(format!("{name} must be between 0 and 86400 seconds")))
            }
        };
        let connection_timeout = timeout(self.connection_timeout, "--server.connection-timeout")?;
        let request_timeout = timeout(self.request_timeout, "--server.request-timeout")?;

        let custom_query = if case == CaseKind::CustomQuery {
            // As in arangobench, --custom-query wins when both are given.
            let query = if !self.custom_query.is_empty() {
                self.custom_query.clone()
            } else if !self.custom_query_file.is_empty() {
                std::fs::read_to_string(&self.custom_query_file).map_err(|e| {
                    bad(format!(
                        "cannot read --custom-query-file '{}': {e}",
                        self.custom_query_file
                    ))
                })?
            } else {
                return Err(bad(
                    "test case custom-query needs --custom-query or --custom-query-file",
                ));
            };
            if query.trim().is_empty() {
                return Err(bad("the custom query is empty"));
            }
            let bind_vars = if self.custom_query_bindvars.trim().is_empty() {
                serde_json::Map::new()
            } else {
                match serde_json::from_str::<serde_json::Value>(&self.custom_query_bindvars) {
                    Ok(serde_json::Value::Object(map)) => map,
                    Ok(_) => return Err(bad("--custom-query-bindvars must be a JSON object")),
                    Err(e) => {
                        return Err(bad(format!(
                            "--custom-query-bindvars is not valid JSON: {e}"
                        )))
                    }
                }
            };
            Some((query, bind_vars))
        } else {
            None
        };

        let mut percentiles = if self.percentiles.is_empty() {
            DEFAULT_PERCENTILES.to_vec()
        } else {
            self.percentiles.clone()
        };
        percentiles.sort_by(|a, b| a.total_cmp(b));
        percentiles.dedup();

        let path = |s: &str| (!s.is_empty()).then(|| PathBuf::from(s));
        let io_threads = if self.io_threads > 0 {
            self.io_threads.min(concurrency)
        } else {
            cores.min(concurrency)
        } as usize;
        Ok(Config {
            endpoint,
            username: self.username,
            password: self.password,
            authentication: self.authentication,
            database: self.database,
            connection_timeout,
            request_timeout,
            case,
            requests: self.requests,
            duration: (self.duration > 0).then(|| Duration::from_secs(self.duration)),
            concurrency: concurrency as usize,
            batch_size: self.batch_size,
            complexity: self.complexity,
            keep_alive: self.keep_alive,
            async_requests: self.async_requests,
            delay: self.delay,
            collection: self.collection,
            create_collection: self.create_collection,
            wait_for_sync: self.wait_for_sync,
            replication_factor: self.replication_factor,
            number_of_shards: self.number_of_shards,
            runs: self.runs as usize,
            create_database: self.create_database,
            custom_query,
            percentiles,
            histogram_generate: self.histogram_generate,
            json_report_file: path(&self.json_report_file),
            junit_report_file: path(&self.junit_report_file),
            quiet: self.quiet,
            progress: self.progress,
            verbose: self.verbose,
            seed: self.seed,
            io_threads: io_threads.max(1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Options::parse_args(&args)
            .map_err(|e| e.to_string())?
            .into_config()
            .map_err(|e| e.message)
    }

    #[test]
    fn defaults_are_arangobench_defaults() {
        let c = parse(&[]).unwrap();
        assert_eq!(
            c.endpoint,
            Endpoint {
                host: "127.0.0.1".into(),
                port: 8529
            }
        );
        assert_eq!(c.case, CaseKind::Version);
        assert_eq!(c.requests, 1000);
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(c.concurrency, cores);
        assert_eq!(c.batch_size, 0);
        assert_eq!(c.complexity, 1);
        assert!(c.keep_alive);
        assert!(!c.async_requests);
        assert_eq!(c.collection, "ArangoBenchmark");
        assert_eq!(c.database, "_system");
        assert_eq!(c.username, "root");
        assert_eq!(c.runs, 1);
        assert_eq!(
            c.percentiles,
            vec![50.0, 80.0, 85.0, 90.0, 95.0, 99.0, 99.99]
        );
        assert!(c.duration.is_none());
        assert!(c.json_report_file.is_none());
    }

    #[test]
    fn arangobench_spellings_parse() {
        let c = parse(&[
            "--server.endpoint",
            "tcp://localhost:9000",
            "--test-case",
            "crud",
            "--requests",
            "500",
            "--threads",
            "4",
            "--batch-size=16",
            "--complexity",
            "10",
            "--keep-alive",
            "false",
            "--async",
            "--wait-for-sync",
            "true",
            "--quiet",
            "--histogram.percentiles",
            "99,50",
            "--histogram.percentiles",
            "99.9",
            "--runs",
            "3",
        ])
        .unwrap();
        assert_eq!(c.endpoint.host, "localhost");
        assert_eq!(c.endpoint.port, 9000);
        assert_eq!(c.case, CaseKind::Crud);
        assert_eq!(c.requests, 500);
        assert_eq!(c.concurrency, 4);
        assert_eq!(c.batch_size, 16);
        assert_eq!(c.complexity, 10);
        assert!(!c.keep_alive);
        assert!(c.async_requests);
        assert!(c.wait_for_sync);
        assert!(c.quiet);
        assert_eq!(c.percentiles, vec![50.0, 99.0, 99.9]);
        assert_eq!(c.runs, 3);
        let c = parse(&["--concurrency", "7"]).unwrap();
        assert_eq!(c.concurrency, 7);
    }

    #[test]
    fn bad_input_is_rejected_with_a_message() {
        assert!(parse(&["--test-case", "nope"])
            .unwrap_err()
            .contains("unknown --test-case"));
        assert!(parse(&["--concurrency", "0"]).is_err());
        assert!(parse(&["--requests", "x"]).is_err());
        assert!(parse(&["--keep-alive", "maybe"]).is_err());
        assert!(parse(&["--histogram.percentiles", "101"]).is_err());
        assert!(parse(&["--server.endpoint", "ssl://127.0.0.1:8529"])
            .unwrap_err()
            .contains("TLS"));
        assert!(parse(&["--test-case", "custom-query"])
            .unwrap_err()
            .contains("--custom-query"));
        assert!(parse(&[
            "--test-case",
            "custom-query",
            "--custom-query",
            "RETURN 1",
            "--custom-query-bindvars",
            "[1]"
        ])
        .unwrap_err()
        .contains("JSON object"));
        assert!(parse(&["--no-such-option", "1"]).is_err());
        assert!(parse(&["--test-case", "document-remove", "--duration", "5"]).is_err());
        assert!(parse(&["--duration", "18446744073709551615"]).is_err());
    }

    #[test]
    fn custom_query_with_bind_vars() {
        let c = parse(&[
            "--test-case",
            "custom-query",
            "--custom-query",
            "RETURN @x",
            "--custom-query-bindvars",
            "{\"x\": 3}",
        ])
        .unwrap();
        let (q, b) = c.custom_query.unwrap();
        assert_eq!(q, "RETURN @x");
        assert_eq!(b["x"], 3);
    }

    #[test]
    fn custom_query_beats_custom_query_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("q.aql");
        std::fs::write(&file, "RETURN 'from file'").unwrap();
        let file = file.to_str().unwrap();
        let with = |extra: &[&str]| {
            let mut args = vec!["--test-case", "custom-query", "--custom-query-file", file];
            args.extend_from_slice(extra);
            parse(&args).map(|c| c.custom_query.unwrap().0)
        };
        assert_eq!(with(&[]).unwrap(), "RETURN 'from file'");
        assert_eq!(with(&["--custom-query", "RETURN 1"]).unwrap(), "RETURN 1");
        assert!(parse(&[
            "--test-case",
            "custom-query",
            "--custom-query-file",
            "/nonexistent/q.aql"
        ])
        .unwrap_err()
        .contains("cannot read"));
    }

    #[test]
    fn arangobench_histogram_options_are_accepted() {
        let c = parse(&[
            "--histogram.num-intervals",
            "500",
            "--histogram.interval-size",
            "0.001",
            "--histogram.generate",
            "true",
        ])
        .unwrap();
        assert!(c.histogram_generate);
        assert!(parse(&["--histogram.num-intervals", "x"]).is_err());
    }

    #[test]
    fn endpoints() {
        assert_eq!(
            Endpoint::parse("http://example.org").unwrap(),
            Endpoint {
                host: "example.org".into(),
                port: 8529
            }
        );
        let v6 = Endpoint::parse("tcp://[::1]:8530").unwrap();
        assert_eq!(v6.host, "::1");
        assert_eq!(v6.port, 8530);
        assert_eq!(v6.host_header(), "[::1]:8530");
        assert!(Endpoint::parse("tcp://:80").is_err());
        assert!(Endpoint::parse("tcp://h:99999").is_err());
        assert!(Endpoint::parse("unix:///tmp/x").is_err());
    }
}
