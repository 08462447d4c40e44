//! `quiver`: the QuiverDB server binary (`quiver serve`, the default) and its tools.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

mod startup_options;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use quiver_core::{Core, CoreOptions, EngineOptions, NamingConvention};
use quiver_server::auth::AuthConfig;
use quiver_server::cors::TrustedOrigins;
use quiver_server::log::{LogControl, LogOptions};
use quiver_server::state::StartupOptions;
use quiver_server::stats::RecordingLimits;
use quiver_server::{HttpTimeouts, ServerConfig, ServerState};
use quiver_storage::CompactionOptions;

// glibc's allocator spends a large share of the batch and import paths consolidating free
// lists (malloc_consolidate) whenever a request allocates more than a kilobyte after many small
// frees; mimalloc's thread-local free lists avoid that.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Returns the memory this thread freed to the OS now. Recovery builds the primary indexes
/// and then rebuilds them with full nodes (`PrimaryIndex::repack`), freeing about a third of
/// their memory; mimalloc purges freed pages lazily, on later allocations of the thread that
/// freed them, and this thread allocates next to nothing after startup, so without a forced
/// collection the server kept the whole peak resident (measured with the repack: 2M
/// documents, 268 vs 146 MiB of anonymous memory after restart; docs/benchmarks/storage.md,
/// section 3 "Reopen time and memory per document").
#[allow(unsafe_code)]
fn release_freed_memory() {
    // SAFETY: `mi_collect` only walks and purges this thread's mimalloc heap, which is the
    // global allocator; no allocation is in flight on this thread.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

/// Turns transparent huge pages off for this process. mimalloc asks for them on its arenas
/// (`MADV_HUGEPAGE`), and a query that allocates its result in fresh or purged arena memory
/// then faults in whole 2 MiB pages, each zeroed by the kernel: on the 2-hop neighbour
/// workload (`FOR v IN 1..2 OUTBOUND … RETURN v._id`, 25 connections) that zeroing was 21 %
/// of the server's CPU; with huge pages off the server used about a fifth less CPU time and
/// a quarter less resident memory there (docs/benchmarks/peers.md, "Cost per reached
/// vertex").
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn disable_transparent_huge_pages() {
    // SAFETY: `prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)` only sets a flag of this process's
    // memory map; it takes no pointers.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
}

/// QuiverDB: a multi-model database speaking ArangoDB's HTTP API.
#[derive(Parser, Debug)]
#[command(
    name = "quiver",
    version,
    about,
    args_conflicts_with_subcommands = true,
    args_override_self = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeOptions,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Start the server (the default when no command is given).
    #[command(args_override_self = true)]
    Serve(Box<ServeOptions>),
    /// Load generator (arangobench-compatible); `quiver bench --help` lists its options.
    #[command(disable_help_flag = true)]
    Bench {
        /// Options passed to the load generator.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Dump databases (arangodump-compatible); `quiver dump --help` lists its options.
    #[command(disable_help_flag = true)]
    Dump {
        /// Options passed to the dump tool.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Restore a dump (arangorestore-compatible); `quiver restore --help` lists its options.
    #[command(disable_help_flag = true)]
    Restore {
        /// Options passed to the restore tool.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Import JSON, JSON lines, CSV or TSV (arangoimport-compatible); `quiver import --help`.
    #[command(disable_help_flag = true)]
    Import {
        /// Options passed to the import tool.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Export collections or a query as JSON, JSON lines or CSV (arangoexport-compatible).
    #[command(disable_help_flag = true)]
    Export {
        /// Options passed to the export tool.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Create, list, restore or delete hot backups of a running server (arangobackup-compatible).
    #[command(disable_help_flag = true)]
    Backup {
        /// The operation and options passed to the backup tool.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
}

/// Options of `quiver serve`, named like ArangoDB's (`--section.option`).
#[derive(Args, Debug, Clone)]
struct ServeOptions {
    /// Read options from an arangod-style configuration file (`[section]`, `key = value`,
    /// `@include`); options QuiverDB lacks are skipped with a warning, command-line options
    /// win; `none` reads no file.
    #[arg(
        short = 'c',
        long = "configuration",
        value_name = "FILE",
        help_heading = "General"
    )]
    configuration: Option<PathBuf>,

    /// Endpoint to listen on: tcp://HOST:PORT, or ssl://HOST:PORT for TLS (needs
    /// --ssl.keyfile); port 0 picks a free port. Repeat to listen on several at once.
    #[arg(
        long = "server.endpoint",
        value_name = "ENDPOINT",
        default_value = "tcp://127.0.0.1:8529",
        help_heading = "Server"
    )]
    endpoint: Vec<String>,

    /// PEM file with the server certificate (chain) and its private key, for ssl:// endpoints.
    #[arg(long = "ssl.keyfile", value_name = "FILE", help_heading = "SSL")]
    ssl_keyfile: Option<PathBuf>,

    /// TLS versions of ssl:// endpoints: 5 = TLSv1.2, 6 = TLSv1.3, 9 = TLSv1.2 or higher,
    /// negotiated (1 to 4, SSL and TLSv1.0, are refused).
    #[arg(
        long = "ssl.protocol",
        value_name = "PROTOCOL",
        default_value_t = 9,
        help_heading = "SSL"
    )]
    ssl_protocol: u32,

    /// Largest accepted request body in bytes, after decompression (413 beyond).
    #[arg(
        long = "server.max-body-size",
        value_name = "SIZE",
        default_value = "512MiB",
        value_parser = parse_size,
        help_heading = "Server"
    )]
    max_body_size: u64,

    /// How many x-arango-async requests may wait before 503 (queue full).
    #[arg(
        long = "server.maximal-queue-size",
        value_name = "N",
        default_value_t = 4096,
        help_heading = "Server"
    )]
    max_queue_size: usize,

    /// How many x-arango-async: store jobs (pending or done, not yet fetched) one user may
    /// have (0 = no limit); everyone together: four times --server.maximal-queue-size.
    #[arg(
        long = "server.max-async-results-per-user",
        value_name = "N",
        default_value_t = 4096,
        help_heading = "Server"
    )]
    max_async_results_per_user: usize,

    /// Bytes of the responses of stored async jobs not yet fetched, everyone together
    /// (0 = no limit); default: a sixteenth of the RAM.
    #[arg(
        long = "server.async-results-memory-limit",
        value_name = "SIZE",
        value_parser = parse_size,
        help_heading = "Server"
    )]
    async_results_memory_limit: Option<u64>,

    /// Bytes of the responses of one user's stored async jobs (0 = no limit); default: a
    /// quarter of --server.async-results-memory-limit.
    #[arg(
        long = "server.async-results-memory-limit-per-user",
        value_name = "SIZE",
        value_parser = parse_size,
        help_heading = "Server"
    )]
    async_results_memory_limit_per_user: Option<u64>,

    /// Bytes the parts' responses of one /_api/batch request may hold before the remaining
    /// parts are refused unexecuted (0 = no limit).
    #[arg(
        long = "server.batch-response-memory-limit",
        value_name = "SIZE",
        default_value = "512MiB",
        value_parser = parse_size,
        help_heading = "Server"
    )]
    batch_response_memory_limit: u64,

    /// Threads serving HTTP connections, each its own connections (0 = one per core).
    #[arg(
        long = "server.threads",
        value_name = "N",
        default_value_t = 0,
        help_heading = "Server"
    )]
    threads: usize,

    /// Require authentication (HTTP Basic or a JWT) for the database APIs.
    #[arg(
        long = "server.authentication",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value = "true",
        default_missing_value = "true",
        value_parser = parse_flag,
        help_heading = "Authentication"
    )]
    authentication: bool,

    /// Require authentication only for the system APIs (`/_api`, `/_admin`, `/_open`).
    #[arg(
        long = "server.authentication-system-only",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value = "true",
        default_missing_value = "true",
        value_parser = parse_flag,
        help_heading = "Authentication"
    )]
    authentication_system_only: bool,

    /// Secret for signing and verifying JWTs (prefer the keyfile: a command line is visible
    /// to other users of the machine).
    #[arg(
        long = "server.jwt-secret",
        value_name = "SECRET",
        help_heading = "Authentication"
    )]
    jwt_secret: Option<String>,

    /// File holding the JWT secret (reloadable through POST /_admin/server/jwt).
    #[arg(
        long = "server.jwt-secret-keyfile",
        value_name = "FILE",
        help_heading = "Authentication"
    )]
    jwt_secret_keyfile: Option<PathBuf>,

    /// Folder of JWT secrets, one per file: the first by name signs, all verify
    /// (reloadable through POST /_admin/server/jwt).
    #[arg(
        long = "server.jwt-secret-folder",
        value_name = "DIR",
        help_heading = "Authentication"
    )]
    jwt_secret_folder: Option<PathBuf>,

    /// Lifetime of the JWTs POST /_open/auth issues, in seconds.
    #[arg(
        long = "server.session-timeout",
        value_name = "SECONDS",
        default_value_t = 3600.0,
        value_parser = parse_seconds,
        help_heading = "Authentication"
    )]
    session_timeout: f64,

    /// Data directory (created on first start).
    #[arg(
        long = "database.directory",
        value_name = "DIR",
        default_value = "./quiver-data",
        help_heading = "Database"
    )]
    directory: PathBuf,

    /// Default size of a collection journal file (bytes; k/m/g and KiB/MiB/GiB suffixes).
    #[arg(
        long = "database.maximal-journal-size",
        value_name = "SIZE",
        default_value = "32MiB",
        value_parser = parse_size,
        help_heading = "Database"
    )]
    journal_size: u64,

    /// Open collections with damaged datafiles, keeping every intact document.
    #[arg(
        long = "database.ignore-datafile-errors",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value = "false",
        default_missing_value = "true",
        value_parser = parse_flag,
        help_heading = "Database"
    )]
    ignore_datafile_errors: bool,

    /// Allow most UTF-8 characters in database, collection, view and index names (ArangoDB's
    /// extended naming convention; `false` keeps the traditional ASCII names).
    #[arg(
        long = "database.extended-names",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value = "true",
        default_missing_value = "true",
        value_parser = parse_flag,
        help_heading = "Database"
    )]
    extended_names: bool,

    /// Space held back in the data directory's `RESERVE` file so that dropping or truncating
    /// collections, the collector and the compactor still work on a full disk (bytes; k/m/g
    /// suffixes; `auto`: a 32nd of the file system, between 1 MiB and 64 MiB; 0: none).
    #[arg(
        long = "database.disk-reserve",
        value_name = "SIZE",
        default_value = "auto",
        value_parser = parse_auto_size,
        help_heading = "Database"
    )]
    disk_reserve: AutoSize,

    /// Datafile pages mapped into the server's memory: when the file-backed part of its
    /// resident set passes this size, the mapped pages are released (they stay in the
    /// kernel's page cache and are mapped again on the next read). Bytes with k/m/g
    /// suffixes; `auto`: a 96th of the machine's memory, at least 256 MiB; 0: no limit.
    #[arg(
        long = "storage.mapped-memory-limit",
        value_name = "SIZE",
        default_value = "auto",
        value_parser = parse_auto_size,
        help_heading = "Database"
    )]
    mapped_memory_limit: AutoSize,

    /// An origin (`https://app.example.com`) whose cross-origin requests may carry
    /// credentials (`Access-Control-Allow-Credentials: true`); repeatable or comma-separated;
    /// `all` trusts every origin, `none` (the default) none.
    #[arg(
        long = "http.trusted-origin",
        value_name = "ORIGIN",
        action = clap::ArgAction::Append,
        value_delimiter = ',',
        help_heading = "Server"
    )]
    trusted_origins: Vec<String>,

    /// Seconds a connection may stay open with no request in progress (also the wait for a
    /// new connection's first request); 0 keeps idle connections open for good.
    #[arg(
        long = "http.keep-alive-timeout",
        value_name = "SECONDS",
        default_value_t = 300.0,
        value_parser = parse_seconds_or_zero,
        help_heading = "Server"
    )]
    keep_alive_timeout: f64,

    /// Seconds a client may take to send a request head once it has begun (slow clients
    /// are disconnected); 0 turns the limit off.
    #[arg(
        long = "http.request-header-timeout",
        value_name = "SECONDS",
        default_value_t = 30.0,
        value_parser = parse_seconds_or_zero,
        help_heading = "Server"
    )]
    request_header_timeout: f64,

    /// Seconds a request body may stall between two pieces before the request is answered
    /// 408 and its connection closed; 0 turns the limit off.
    #[arg(
        long = "http.request-body-timeout",
        value_name = "SECONDS",
        default_value_t = 60.0,
        value_parser = parse_seconds_or_zero,
        help_heading = "Server"
    )]
    request_body_timeout: f64,

    /// Memory budget of one AQL query that sets no memoryLimit, in estimated bytes (0 = no
    /// limit); default as ArangoDB: 75 % of the RAM beyond a 20 % reserve, at least 25 %.
    #[arg(
        long = "query.memory-limit",
        value_name = "SIZE",
        value_parser = parse_size,
        help_heading = "AQL"
    )]
    query_memory_limit: Option<u64>,

    /// Memory budget of all running AQL queries together, in estimated bytes (0 = no
    /// limit); default as ArangoDB: 90 % of the RAM beyond a 10 % reserve, at least 25 %.
    #[arg(
        long = "query.global-memory-limit",
        value_name = "SIZE",
        value_parser = parse_size,
        help_heading = "AQL"
    )]
    query_global_memory_limit: Option<u64>,

    /// How many cursors may be open at once, by everyone (0 = no limit).
    #[arg(
        long = "query.max-open-cursors",
        value_name = "N",
        default_value_t = quiver_aql::service::MAX_CURSORS,
        help_heading = "AQL"
    )]
    max_open_cursors: usize,

    /// How many cursors one user may have open at once (0 = no limit).
    #[arg(
        long = "query.max-open-cursors-per-user",
        value_name = "N",
        default_value_t = quiver_aql::service::MAX_CURSORS / 4,
        help_heading = "AQL"
    )]
    max_open_cursors_per_user: usize,

    /// Estimated bytes of results all open cursors may hold (0 = no limit); default: a
    /// sixteenth of the RAM.
    #[arg(
        long = "query.cursors-memory-limit",
        value_name = "SIZE",
        value_parser = parse_size,
        help_heading = "AQL"
    )]
    cursors_memory_limit: Option<u64>,

    /// Estimated bytes of results the open cursors of one user may hold (0 = no limit);
    /// default: a quarter of --query.cursors-memory-limit.
    #[arg(
        long = "query.cursors-memory-limit-per-user",
        value_name = "SIZE",
        value_parser = parse_size,
        help_heading = "AQL"
    )]
    cursors_memory_limit_per_user: Option<u64>,

    /// Interval of the background sync of the write-ahead log, in milliseconds.
    #[arg(
        long = "wal.sync-interval",
        value_name = "MS",
        default_value_t = 100,
        help_heading = "Write-ahead log"
    )]
    sync_interval: u64,

    /// Size of one write-ahead log file (bytes; suffixes as for journal sizes).
    #[arg(
        long = "wal.logfile-size",
        value_name = "SIZE",
        default_value = "32MiB",
        value_parser = parse_size,
        help_heading = "Write-ahead log"
    )]
    logfile_size: u64,

    /// Write back-pressure: a write that would start a new write-ahead log file while this
    /// many sealed files still wait for the collector waits for it (0 = never). Counted in
    /// log files (bounded disk use), not in operations as in ArangoDB.
    #[arg(
        long = "wal.throttle-when-pending",
        value_name = "FILES",
        default_value_t = 8,
        help_heading = "Write-ahead log"
    )]
    throttle_when_pending: usize,

    /// How long a throttled write waits before it fails with error 1236, in milliseconds.
    #[arg(
        long = "wal.throttle-wait",
        value_name = "MS",
        default_value_t = 15_000,
        help_heading = "Write-ahead log"
    )]
    throttle_wait: u64,

    /// Pause of the background compactor between two passes, in seconds.
    #[arg(
        long = "compaction.db-sleep-time",
        value_name = "SECONDS",
        default_value_t = 1.0,
        value_parser = parse_seconds,
        help_heading = "Compaction"
    )]
    compaction_sleep: f64,

    /// Minimum time between two compactions of one collection, in seconds.
    #[arg(
        long = "compaction.min-interval",
        value_name = "SECONDS",
        default_value_t = 10.0,
        value_parser = parse_seconds_or_zero,
        help_heading = "Compaction"
    )]
    compaction_min_interval: f64,

    /// Datafiles smaller than this are merged with their neighbours (bytes).
    #[arg(
        long = "compaction.min-small-data-file-size",
        value_name = "SIZE",
        default_value = "128KiB",
        value_parser = parse_size,
        help_heading = "Compaction"
    )]
    compaction_min_small_file: u64,

    /// Dead bytes that make a datafile a compaction candidate.
    #[arg(
        long = "compaction.dead-size-threshold",
        value_name = "SIZE",
        default_value = "128KiB",
        value_parser = parse_size,
        help_heading = "Compaction"
    )]
    compaction_dead_size: u64,

    /// Share of dead bytes (0 to 1) that makes a datafile a compaction candidate.
    #[arg(
        long = "compaction.dead-size-percent-threshold",
        value_name = "FRACTION",
        default_value_t = 0.1,
        value_parser = parse_fraction,
        help_heading = "Compaction"
    )]
    compaction_dead_share: f64,

    /// Dead documents that make a datafile a compaction candidate.
    #[arg(
        long = "compaction.dead-documents-threshold",
        value_name = "N",
        default_value_t = 16_384,
        help_heading = "Compaction"
    )]
    compaction_dead_documents: u64,

    /// Most datafiles merged into one compaction result.
    #[arg(
        long = "compaction.max-files",
        value_name = "N",
        default_value_t = 3,
        value_parser = clap::value_parser!(u64).range(1..=1024),
        help_heading = "Compaction"
    )]
    compaction_max_files: u64,

    /// Largest compaction result file (bytes).
    #[arg(
        long = "compaction.max-result-file-size",
        value_name = "SIZE",
        default_value = "128MiB",
        value_parser = parse_size,
        help_heading = "Compaction"
    )]
    compaction_max_result: u64,

    /// Compaction results are also capped at this multiple of the journal size.
    #[arg(
        long = "compaction.max-file-size-factor",
        value_name = "N",
        default_value_t = 3,
        value_parser = clap::value_parser!(u64).range(1..=1024),
        help_heading = "Compaction"
    )]
    compaction_size_factor: u64,

    /// How often documents expired by ttl indexes are removed, in milliseconds.
    #[arg(
        long = "ttl.frequency",
        value_name = "MS",
        default_value_t = 30_000,
        help_heading = "TTL"
    )]
    ttl_frequency: u64,

    /// Nice value (0-19) of the search indexes' background threads: the indexers that
    /// analyze committed documents for arangosearch views and inverted indexes, and
    /// tantivy's indexing and merge threads. Above 0 they yield the CPU to request handling;
    /// 0 keeps them at the server's priority (threads are never raised above it).
    #[arg(
        long = "arangosearch.nice",
        value_name = "NICE",
        default_value_t = quiver_core::DEFAULT_SEARCH_NICE,
        value_parser = clap::value_parser!(i32).range(0..=19),
        help_heading = "ArangoSearch"
    )]
    search_nice: i32,

    /// Seconds of inactivity after which a stream transaction is aborted.
    #[arg(
        long = "transaction.streaming-idle-timeout",
        value_name = "SECONDS",
        default_value_t = 60.0,
        value_parser = parse_seconds,
        help_heading = "Transactions"
    )]
    stream_idle_timeout: f64,

    /// Log level: fatal, error, warning, info, debug or trace for topic general, or
    /// `topic=level` for one topic (aql, authentication, communication, engines, general,
    /// queries, requests, ssl, startup, trx, ttl, views; `all` for every one). Repeatable.
    #[arg(
        long = "log.level",
        value_name = "LEVEL",
        default_value = "info",
        value_parser = parse_log_level,
        help_heading = "Logging"
    )]
    log_level: Vec<String>,

    /// Where log lines go: `-` (stdout), `+` (stderr), `file://PATH` or a path. Repeatable;
    /// stderr when not given.
    #[arg(long = "log.output", value_name = "OUTPUT", help_heading = "Logging")]
    log_output: Vec<String>,

    /// Write log lines as JSON objects (`time`, `pid`, `level`, `topic`, `message`).
    #[arg(
        long = "log.use-json-format",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value = "false",
        default_missing_value = "true",
        value_parser = parse_flag,
        help_heading = "Logging"
    )]
    log_json: bool,

    /// Serve the metrics API (`/_admin/metrics`).
    #[arg(
        long = "server.export-metrics-api",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value = "true",
        default_missing_value = "true",
        value_parser = parse_flag,
        help_heading = "Server"
    )]
    export_metrics_api: bool,

    /// Record the most recent API calls (`/_admin/server/api-calls`).
    #[arg(
        long = "server.api-call-recording",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value = "true",
        default_missing_value = "true",
        value_parser = parse_flag,
        help_heading = "Server"
    )]
    api_call_recording: bool,

    /// Record the most recent AQL queries (`/_admin/server/aql-queries`).
    #[arg(
        long = "server.aql-query-recording",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value = "true",
        default_missing_value = "true",
        value_parser = parse_flag,
        help_heading = "Server"
    )]
    aql_query_recording: bool,

    /// Memory the recorded API calls may take, in bytes (suffixes KiB, MiB, GiB).
    #[arg(
        long = "server.api-recording-memory-limit",
        value_name = "BYTES",
        default_value = "26214400",
        value_parser = parse_size,
        help_heading = "Server"
    )]
    api_recording_memory_limit: u64,

    /// Memory the recorded AQL queries may take, in bytes (suffixes KiB, MiB, GiB).
    #[arg(
        long = "server.aql-recording-memory-limit",
        value_name = "BYTES",
        default_value = "26214400",
        value_parser = parse_size,
        help_heading = "Server"
    )]
    aql_recording_memory_limit: u64,

    /// Seconds after which a finished AQL query counts as slow (slow-query log and list).
    #[arg(
        long = "query.slow-threshold",
        value_name = "SECONDS",
        default_value_t = 10.0,
        value_parser = parse_seconds,
        help_heading = "Queries"
    )]
    slow_threshold: f64,

    /// Seconds after which a finished streaming AQL query counts as slow.
    #[arg(
        long = "query.slow-streaming-threshold",
        value_name = "SECONDS",
        default_value_t = 10.0,
        value_parser = parse_seconds,
        help_heading = "Queries"
    )]
    slow_streaming_threshold: f64,

    /// Track running and slow AQL queries (`/_api/query/current`, `/_api/query/slow`).
    #[arg(
        long = "query.tracking",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value = "true",
        default_missing_value = "true",
        value_parser = parse_flag,
        help_heading = "Queries"
    )]
    query_tracking: bool,

    /// Mode of the AQL query results cache: off, on (every query unless it says
    /// `cache: false`) or demand (queries that say `cache: true`).
    #[arg(
        long = "query.cache-mode",
        value_name = "MODE",
        default_value = "off",
        value_parser = ["off", "on", "demand"],
        help_heading = "Queries"
    )]
    query_cache_mode: String,

    /// Results the query results cache keeps per database (0: the default, 128).
    #[arg(
        long = "query.cache-entries",
        value_name = "N",
        default_value_t = 0,
        help_heading = "Queries"
    )]
    query_cache_entries: u64,

    /// Bytes of all results the query results cache keeps per database (0: the default,
    /// 256 MiB; suffixes KiB, MiB, GiB).
    #[arg(
        long = "query.cache-entries-max-size",
        value_name = "SIZE",
        default_value = "0",
        value_parser = parse_size,
        help_heading = "Queries"
    )]
    query_cache_entries_max_size: u64,

    /// Bytes of one result the query results cache keeps (0: the default, 16 MiB).
    #[arg(
        long = "query.cache-entry-max-size",
        value_name = "SIZE",
        default_value = "0",
        value_parser = parse_size,
        help_heading = "Queries"
    )]
    query_cache_entry_max_size: u64,

    /// Whether the query results cache keeps results read from system collections.
    #[arg(
        long = "query.cache-include-system-collections",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value = "false",
        default_missing_value = "true",
        value_parser = parse_flag,
        help_heading = "Queries"
    )]
    query_cache_include_system: bool,
}

fn parse_flag(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "y" | "1" => Ok(true),
        "false" | "no" | "off" | "n" | "0" => Ok(false),
        other => Err(format!("expected true or false, got '{other}'")),
    }
}

/// A positive, finite number of seconds (fractions allowed), at most a day.
fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86_400.0 => Ok(v),
        _ => Err(format!(
            "expected seconds between 0 and 86400, got '{text}'"
        )),
    }
}

/// Like [`parse_seconds`], but 0 is allowed ("no minimum").
fn parse_seconds_or_zero(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(0.0) => Ok(0.0),
        _ => parse_seconds(text),
    }
}

/// The machine's RAM in bytes (`MemTotal` of /proc/meminfo; 0 when unknown, which means no
/// default limit), for the default query memory limits.
fn physical_memory() -> u64 {
    let Ok(info) = std::fs::read_to_string("/proc/meminfo") else {
        return 0;
    };
    info.lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse::<u64>().ok())
        .map_or(0, |kib| kib.saturating_mul(1024))
}

/// A share between 0 and 1.
fn parse_fraction(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("expected a fraction between 0 and 1, got '{text}'")),
    }
}

/// The engine's options from the startup options.
fn engine_options(options: &ServeOptions) -> EngineOptions {
    EngineOptions {
        journal_size_default: options.journal_size,
        sync_interval: Duration::from_millis(options.sync_interval.max(1)),
        wal_logfile_size: options.logfile_size,
        ignore_datafile_errors: options.ignore_datafile_errors,
        disk_reserve: options.disk_reserve.0,
        mapped_memory_limit: mapped_memory_limit(options.mapped_memory_limit, physical_memory()),
        wal_throttle_when_pending: options.throttle_when_pending,
        wal_throttle_wait: Duration::from_millis(options.throttle_wait),
        compaction: CompactionOptions {
            db_sleep_time: Duration::from_secs_f64(options.compaction_sleep),
            min_interval: Duration::from_secs_f64(options.compaction_min_interval),
            min_small_data_file_size: options.compaction_min_small_file,
            dead_size_threshold: options.compaction_dead_size,
            dead_size_percent_threshold: options.compaction_dead_share,
            dead_documents_threshold: options.compaction_dead_documents,
            max_files: options.compaction_max_files as usize,
            max_result_file_size: options.compaction_max_result,
            max_file_size_factor: options.compaction_size_factor,
            ..CompactionOptions::default()
        },
        ..EngineOptions::default()
    }
}

/// A size option that may be `auto` (None) or a number of bytes (`--database.disk-reserve`,
/// `--storage.mapped-memory-limit`).
#[derive(Clone, Copy, Debug)]
struct AutoSize(Option<u64>);

/// `auto` or a size as [`parse_size`] reads it.
fn parse_auto_size(text: &str) -> Result<AutoSize, String> {
    match text.trim() {
        "auto" => Ok(AutoSize(None)),
        other => parse_size(other).map(|n| AutoSize(Some(n))),
    }
}

/// The smallest `auto` mapped-memory limit, whatever the machine's memory.
const MAPPED_MEMORY_LIMIT_MIN: u64 = 256 << 20;

/// The `auto` mapped-memory limit is the machine's memory divided by this.
const MAPPED_MEMORY_LIMIT_SHARE: u64 = 96;

/// `--storage.mapped-memory-limit`: `auto` is a 96th of the machine's memory, at least
/// [`MAPPED_MEMORY_LIMIT_MIN`]; 0 means no limit. The whole budget is part of the server's
/// peak resident set: every workload that reads documents at random fills it before its reads
/// switch to `pread` (`engine/mapped_budget.rs`), and a 32nd (768 MiB on a 24 GiB machine)
/// put the full-scale Pokec run's peak 0.8 GB above what a 256 MiB budget gave, with the reads
/// above the budget copying by `pread` either way (docs/benchmarks/peers.md, "Peak memory per
/// workload").
fn mapped_memory_limit(option: AutoSize, physical: u64) -> Option<u64> {
    match option.0 {
        None => Some((physical / MAPPED_MEMORY_LIMIT_SHARE).max(MAPPED_MEMORY_LIMIT_MIN)),
        Some(0) => None,
        Some(bytes) => Some(bytes),
    }
}

/// Parses `33554432`, `32MiB`, `32m`, `1g`, `64kb` into bytes.
fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("invalid size '{text}'"))?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("invalid size unit in '{text}'")),
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| format!("size '{text}' is too large"))
}

/// How deeply `@include` lines may nest (arangod forbids only recursion; a bound keeps a long
/// chain of distinct files from running away).
const MAX_INCLUDE_DEPTH: usize = 16;

/// Reads an ArangoDB configuration file (arangod's `.conf` format) into `--section.key=value`
/// arguments: `#`/`;` comment lines, `[section]` headers, `key = value` lines (a key that
/// already has a dot is used as it is), `[section:community]` sections (read) and
/// `[section:enterprise]` sections (skipped, as a community arangod does), and
/// `@include FILE` lines (`.conf` appended when missing, relative to the including file when
/// not found as given; recursion is an error).
fn config_file_args(path: &Path) -> Result<Vec<String>, String> {
    let mut args = Vec::new();
    let mut seen = Vec::new();
    read_config_file(path, &mut seen, &mut args)?;
    Ok(args)
}

fn read_config_file(
    path: &Path,
    seen: &mut Vec<PathBuf>,
    args: &mut Vec<String>,
) -> Result<(), String> {
    if seen.len() >= MAX_INCLUDE_DEPTH {
        return Err(format!(
            "{}: configuration files nest deeper than {MAX_INCLUDE_DEPTH} includes",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read configuration file {}: {e}", path.display()))?;
    seen.push(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()));
    let mut section = String::new();
    let mut enterprise_only = false;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let at = || format!("{}:{}", path.display(), n + 1);
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let name = name.trim();
            let (name, edition) = name.split_once(':').unwrap_or((name, ""));
            enterprise_only = match edition {
                "" | "community" => false,
                "enterprise" => true,
                other => return Err(format!("{}: unknown section suffix ':{other}'", at())),
            };
            section = name.to_string();
            continue;
        }
        if let Some(target) = line.strip_prefix("@include") {
            let mut target = target.trim().to_string();
            if target.is_empty() {
                return Err(format!("{}: @include needs a file name", at()));
            }
            if !target.ends_with(".conf") {
                target.push_str(".conf");
            }
            let mut include = PathBuf::from(&target);
            if !include.is_file() {
                if let Some(dir) = path.parent() {
                    include = dir.join(&target);
                }
            }
            let canonical = std::fs::canonicalize(&include).unwrap_or_else(|_| include.clone());
            if seen.contains(&canonical) {
                return Err(format!(
                    "{}: recursive include of {}",
                    at(),
                    include.display()
                ));
            }
            read_config_file(&include, seen, args)?;
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!("{}: expected 'key = value', found '{line}'", at()));
        };
        if enterprise_only {
            continue;
        }
        let key = key.trim();
        let value = value.trim().trim_matches('"');
        let name = if section.is_empty() || key.contains('.') {
            key.to_string()
        } else {
            format!("{section}.{key}")
        };
        args.push(format!("--{name}={value}"));
    }
    seen.pop();
    Ok(())
}

/// Splits `--name=value` arguments read from a configuration file into those `quiver serve`
/// knows and the names of the others. An arangod.conf names options of features QuiverDB does
/// not have (JavaScript, Foxx, statistics, …); a user switching over should be
/// able to start with it, so those are reported and skipped instead of refusing to start (on
/// the command line an unknown option stays an error).
fn split_known_options(file_args: Vec<String>) -> (Vec<String>, Vec<String>) {
    use clap::CommandFactory;
    let command = Cli::command();
    let known: Vec<&str> = command
        .get_arguments()
        .filter_map(|a| a.get_long())
        .collect();
    let mut kept = Vec::with_capacity(file_args.len());
    let mut ignored = Vec::new();
    for arg in file_args {
        let name = arg
            .strip_prefix("--")
            .and_then(|a| a.split('=').next())
            .unwrap_or("");
        if known.contains(&name) {
            kept.push(arg);
        } else {
            ignored.push(name.to_string());
        }
    }
    (kept, ignored)
}

/// Finds `--configuration FILE` / `-c FILE` among the raw arguments.
fn configuration_path(args: &[String]) -> Option<PathBuf> {
    let mut iter = args.iter();
    while let Some(a) = iter.next() {
        if let Some(v) = a.strip_prefix("--configuration=") {
            return Some(PathBuf::from(v));
        }
        if a == "--configuration" || a == "-c" {
            return iter.next().map(PathBuf::from);
        }
    }
    None
}

/// A `--server.endpoint`: where to listen, and whether connections speak TLS.
#[derive(Debug, PartialEq, Eq)]
struct Endpoint {
    addr: SocketAddr,
    tls: bool,
}

/// Parses `tcp://host:port` (also `http+tcp://`, `http://` or no scheme) and `ssl://host:port`
/// (also `http+ssl://`, `https://`).
fn parse_endpoint(endpoint: &str) -> Result<Endpoint, String> {
    const PLAIN: [&str; 3] = ["tcp://", "http+tcp://", "http://"];
    const TLS: [&str; 3] = ["ssl://", "http+ssl://", "https://"];
    let strip = |schemes: [&str; 3]| schemes.iter().find_map(|s| endpoint.strip_prefix(s));
    let (rest, tls) = match (strip(PLAIN), strip(TLS)) {
        (Some(rest), _) => (rest, false),
        (None, Some(rest)) => (rest, true),
        (None, None) if endpoint.contains("://") => {
            return Err(format!(
                "unsupported endpoint '{endpoint}' (tcp:// and ssl:// are supported)"
            ))
        }
        (None, None) => (endpoint, false),
    };
    let addr = rest
        .to_socket_addrs()
        .map_err(|e| format!("invalid endpoint '{endpoint}': {e}"))?
        .next()
        .ok_or_else(|| format!("endpoint '{endpoint}' does not resolve"))?;
    Ok(Endpoint { addr, tls })
}

/// The TLS settings of the ssl:// endpoints, if there is one: a keyfile is then required.
fn tls_config(
    endpoints: &[Endpoint],
    options: &ServeOptions,
) -> Result<Option<quiver_server::TlsConfig>, String> {
    if !endpoints.iter().any(|e| e.tls) {
        return Ok(None);
    }
    let protocol = quiver_server::TlsProtocol::from_arango(options.ssl_protocol)?;
    let keyfile = options
        .ssl_keyfile
        .as_ref()
        .ok_or("an ssl:// endpoint needs --ssl.keyfile (PEM with certificate and private key)")?;
    quiver_server::TlsConfig::from_keyfile(keyfile, protocol).map(Some)
}

/// `LEVEL` or ArangoDB's `topic=LEVEL`; an unknown level is an error, as in arangod (it used to
/// fall back to info silently).
fn parse_log_level(text: &str) -> Result<String, String> {
    let level = text.rsplit('=').next().unwrap_or("").trim();
    match level.to_ascii_lowercase().as_str() {
        "fatal" | "error" | "err" | "warning" | "warn" | "info" | "debug" | "trace" => {
            Ok(text.to_string())
        }
        _ => Err(format!(
            "invalid log level '{level}' (expected fatal, error, warning, info, debug or trace)"
        )),
    }
}

fn serve(options: ServeOptions, startup_options: StartupOptions) -> Result<(), String> {
    let log = LogControl::install(&LogOptions {
        levels: options.log_level.clone(),
        outputs: options.log_output.clone(),
        json: options.log_json,
    })?;
    let endpoints = options
        .endpoint
        .iter()
        .map(|e| parse_endpoint(e))
        .collect::<Result<Vec<_>, String>>()?;
    // Checked before the data directory is opened: a bad keyfile is a startup error.
    let tls = tls_config(&endpoints, &options)?;
    std::fs::create_dir_all(&options.directory).map_err(|e| {
        format!(
            "cannot create data directory {}: {e}",
            options.directory.display()
        )
    })?;
    let engine = engine_options(&options);
    // Before the catalog opens: stored `aql` analyzers are built when it loads them.
    quiver_aql::restricted::serve_aql_analyzers();
    let core = Core::open(
        &options.directory,
        CoreOptions {
            engine,
            ttl_frequency: Duration::from_millis(options.ttl_frequency.max(1)),
            search_nice: options.search_nice,
            naming: if options.extended_names {
                NamingConvention::Extended
            } else {
                NamingConvention::Traditional
            },
            ..CoreOptions::default()
        },
    )
    .map_err(|e| {
        format!(
            "cannot open data directory {}: {e}",
            options.directory.display()
        )
    })?;
    core.set_computed_values_evaluator(Arc::new(quiver_aql::restricted::RestrictedAql::new()));
    let core = Arc::new(core);
    release_freed_memory();

    // One single-worker runtime per HTTP thread, connections spread over them (see
    // `quiver_server::serve_on`), and a runtime of its own for accepting them and for the
    // signals, driven by this thread.
    let threads = if options.threads > 0 {
        options.threads
    } else {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    };
    let runtimes = (0..threads)
        .map(|i| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                // tokio's default cap (512) per runtime would multiply with the threads; at
                // least 32 each, since `block_in_place` hands the worker over through it.
                .max_blocking_threads((512 / threads).max(32))
                .enable_all()
                .thread_name(format!("quiver-http-{i}"))
                .build()
                .map_err(|e| format!("cannot start runtime: {e}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let workers: Vec<_> = runtimes.iter().map(|rt| rt.handle().clone()).collect();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start runtime: {e}"))?;

    let mut listeners = Vec::with_capacity(endpoints.len());
    for endpoint in &endpoints {
        let addr = endpoint.addr;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(addr))
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        listeners.push((listener, endpoint.tls));
    }
    // The bound addresses, not the configured ones: with port 0 the startup line and
    // `/_api/endpoint` must name the port the kernel picked.
    let mut bound = Vec::with_capacity(listeners.len());
    for (listener, tls) in &listeners {
        let addr = listener
            .local_addr()
            .map_err(|e| format!("cannot read a bound address: {e}"))?;
        bound.push(format!("{}://{addr}", if *tls { "ssl" } else { "tcp" }));
    }
    let config = ServerConfig {
        // `/_api/endpoint` reports the first endpoint.
        endpoint: bound.first().cloned().unwrap_or_default(),
        data_dir: options.directory.clone(),
        max_body_size: usize::try_from(options.max_body_size).unwrap_or(usize::MAX),
        async_queue_capacity: options.max_queue_size,
        stream_idle_timeout: Duration::from_secs_f64(options.stream_idle_timeout),
        auth: AuthConfig {
            enabled: options.authentication,
            system_only: options.authentication_system_only,
            jwt_secret: options.jwt_secret.clone(),
            jwt_secret_keyfile: options.jwt_secret_keyfile.clone(),
            jwt_secret_folder: options.jwt_secret_folder.clone(),
            session_timeout: Duration::from_secs_f64(options.session_timeout),
            // As ArangoDB's docker images: the password root gets when it is created.
            initial_root_password: std::env::var("ARANGODB_DEFAULT_ROOT_PASSWORD")
                .unwrap_or_default(),
        },
        trusted_origins: TrustedOrigins::parse(&options.trusted_origins),
        export_metrics_api: options.export_metrics_api,
        recording_limits: RecordingLimits {
            api_calls: if options.api_call_recording {
                usize::try_from(options.api_recording_memory_limit).unwrap_or(usize::MAX)
            } else {
                0
            },
            aql_queries: if options.aql_query_recording {
                usize::try_from(options.aql_recording_memory_limit).unwrap_or(usize::MAX)
            } else {
                0
            },
        },
        log: Arc::new(log),
        startup_options: Arc::new(startup_options),
        query_memory_limit: options.query_memory_limit.unwrap_or_else(|| {
            quiver_aql::limits::default_memory_limit(physical_memory(), 0.2, 0.75)
        }),
        query_global_memory_limit: options.query_global_memory_limit.unwrap_or_else(|| {
            quiver_aql::limits::default_memory_limit(physical_memory(), 0.1, 0.9)
        }),
        cursor_caps: {
            let bytes = options
                .cursors_memory_limit
                .unwrap_or_else(|| physical_memory() / 16);
            quiver_aql::held::HoldCaps {
                count: options.max_open_cursors,
                bytes,
                count_per_user: options.max_open_cursors_per_user,
                bytes_per_user: options.cursors_memory_limit_per_user.unwrap_or(bytes / 4),
            }
        },
        async_result_caps: {
            let bytes = options
                .async_results_memory_limit
                .unwrap_or_else(|| physical_memory() / 16);
            quiver_aql::held::HoldCaps {
                count: 0,
                bytes,
                count_per_user: options.max_async_results_per_user,
                bytes_per_user: options
                    .async_results_memory_limit_per_user
                    .unwrap_or(bytes / 4),
            }
        },
        batch_response_limit: options.batch_response_memory_limit,
        http_timeouts: HttpTimeouts {
            keep_alive: Duration::from_secs_f64(options.keep_alive_timeout),
            request_header: Duration::from_secs_f64(options.request_header_timeout),
            request_body: Duration::from_secs_f64(options.request_body_timeout),
        },
        tls: tls.clone(),
        ..ServerConfig::default()
    };
    let state = ServerState::new(config, core.clone())
        .map_err(|e| format!("cannot start the server: {e}"))?;
    state
        .queries
        .set_properties(
            quiver_server::DEFAULT_DATABASE,
            &quiver_aql::PropertiesUpdate {
                enabled: Some(options.query_tracking),
                slow_query_threshold: Some(options.slow_threshold),
                slow_streaming_query_threshold: Some(options.slow_streaming_threshold),
                ..Default::default()
            },
        )
        .map_err(|e| format!("cannot set the query tracking options: {}", e.message))?;
    let positive = |v: u64| (v > 0).then_some(v);
    state
        .queries
        .set_results_cache_properties(&quiver_aql::results_cache::CacheUpdate {
            mode: Some(quiver_aql::results_cache::CacheMode::parse(
                &options.query_cache_mode,
            )),
            max_results: positive(options.query_cache_entries),
            max_results_size: positive(options.query_cache_entries_max_size),
            max_entry_size: positive(options.query_cache_entry_max_size),
            include_system: Some(options.query_cache_include_system),
        });

    let result = runtime.block_on(async {
        let signals = ShutdownSignals::install()?;
        let mut handles = Vec::with_capacity(listeners.len());
        for (listener, is_tls) in listeners {
            let handle = match (&tls, is_tls) {
                (Some(tls), true) => quiver_server::serve_tls_on(
                    state.clone(),
                    listener,
                    workers.clone(),
                    tls.clone(),
                ),
                _ => quiver_server::serve_on(state.clone(), listener, workers.clone()),
            };
            handles.push(handle.map_err(|e| format!("cannot serve: {e}"))?);
        }
        println!(
            "QuiverDB {} listening on {} (data directory {})",
            env!("CARGO_PKG_VERSION"),
            bound.join(", "),
            options.directory.display()
        );
        tracing::info!(
            target: "quiver::startup",
            "QuiverDB {} (ArangoDB {}) ready for business on {}",
            env!("CARGO_PKG_VERSION"),
            quiver_server::api::admin::ARANGO_VERSION,
            bound.join(", ")
        );
        // After the startup line, which supervisors and tests read first.
        if options.authentication && state.auth.root_password_is_empty() {
            println!(
                "warning: authentication is on and user 'root' has an empty password; \
                 set one (PUT /_api/user/root) or start with ARANGODB_DEFAULT_ROOT_PASSWORD on a new data directory"
            );
        }
        use std::io::Write;
        let _ = std::io::stdout().flush();
        tokio::select! {
            _ = signals.wait() => {}
            _ = state.stop.wait() => {}
        }
        println!("shutting down");
        // All endpoints at once: each lets its connections finish within the same 5 s.
        let stopping: Vec<_> = handles
            .into_iter()
            .map(|handle| tokio::spawn(handle.shutdown(Duration::from_secs(5))))
            .collect();
        for stop in stopping {
            let _ = stop.await;
        }
        Ok::<(), String>(())
    });
    state.shutdown();
    // In parallel: each waits up to 2 s for its blocking tasks.
    std::thread::scope(|scope| {
        for runtime in runtimes {
            scope.spawn(move || runtime.shutdown_timeout(Duration::from_secs(2)));
        }
    });
    runtime.shutdown_timeout(Duration::from_secs(2));
    core.shutdown()
        .map_err(|e| format!("shutdown failed: {e}"))?;
    println!("shutdown complete");
    result
}

/// SIGINT (Ctrl-C) and SIGTERM handlers. They are installed before the startup line is
/// printed: a supervisor (or a test) that sends SIGTERM as soon as it read that line must get
/// the clean shutdown, not the default action that kills the process without syncing.
struct ShutdownSignals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl ShutdownSignals {
    /// Must run inside the tokio runtime.
    fn install() -> Result<ShutdownSignals, String> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let install = |kind| signal(kind).map_err(|e| format!("cannot handle signals: {e}"));
            Ok(ShutdownSignals {
                interrupt: install(SignalKind::interrupt())?,
                terminate: install(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(ShutdownSignals {})
        }
    }

    async fn wait(mut self) {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => {}
                _ = self.terminate.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// A flag set on the first Ctrl-C (SIGINT) or SIGTERM, watched on a thread of its own; a
/// second signal ends the process at once.
fn watch_interrupt() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let flag = std::sync::Arc::new(AtomicBool::new(false));
    let setter = flag.clone();
    let spawned = std::thread::Builder::new()
        .name("quiver-signals".into())
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()
            else {
                return;
            };
            runtime.block_on(async move {
                use tokio::signal::unix::{signal, SignalKind};
                let (Ok(mut int), Ok(mut term)) = (
                    signal(SignalKind::interrupt()),
                    signal(SignalKind::terminate()),
                ) else {
                    return;
                };
                for _ in 0..2 {
                    tokio::select! {
                        _ = int.recv() => {}
                        _ = term.recv() => {}
                    }
                    if setter.swap(true, Ordering::SeqCst) {
                        std::process::exit(130);
                    }
                    eprintln!("interrupted: stopping after the current request");
                }
            });
        });
    if spawned.is_err() {
        eprintln!("warning: cannot watch for Ctrl-C");
    }
    flag
}

fn main() -> ExitCode {
    #[cfg(target_os = "linux")]
    disable_transparent_huge_pages();
    let raw: Vec<String> = std::env::args().collect();
    // `quiver bench ...` hands its raw arguments to the load generator untouched.
    if raw.get(1).map(String::as_str) == Some("bench") {
        let code = quiver_bench::run_cli(raw[2..].to_vec());
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // `quiver dump|restore ...` hand their raw arguments to the data tools, with a Ctrl-C
    // handler that asks them to stop between requests.
    if let Some(tool @ ("dump" | "restore" | "import" | "export" | "backup")) =
        raw.get(1).map(String::as_str)
    {
        let interrupted = watch_interrupt();
        let code = quiver_tools::run_cli(tool, raw[2..].to_vec(), &interrupted);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // Configuration file values go first so that command-line options override them.
    let mut args = vec![raw.first().cloned().unwrap_or_else(|| "quiver".into())];
    let mut rest: Vec<String> = raw.get(1..).unwrap_or(&[]).to_vec();
    // `--configuration none` (arangod's way to skip its default file) reads nothing.
    if let Some(path) = configuration_path(&rest).filter(|p| p.as_os_str() != "none") {
        match config_file_args(&path) {
            Ok(file_args) => {
                // Keep a leading subcommand in front of the options it takes.
                if rest.first().map(|a| a == "serve").unwrap_or(false) {
                    args.push(rest.remove(0));
                }
                let (known, ignored) = split_known_options(file_args);
                if !ignored.is_empty() {
                    eprintln!(
                        "quiver: ignoring options of {} that QuiverDB does not have: {}",
                        path.display(),
                        ignored.join(", ")
                    );
                }
                args.extend(known);
            }
            Err(e) => {
                eprintln!("quiver: {e}");
                return ExitCode::from(2);
            }
        }
    }
    args.extend(rest);
    let command = Cli::command();
    let matches = command.clone().get_matches_from(args);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    // The options `/_admin/options` reports: those of the `serve` subcommand when it is used.
    let startup_options = match matches.subcommand() {
        Some(("serve", sub)) => command
            .find_subcommand("serve")
            .map(|serve| startup_options::report(serve, sub))
            .unwrap_or_default(),
        _ => startup_options::report(&command, &matches),
    };
    let options = match cli.command {
        Some(Command::Serve(o)) => *o,
        Some(Command::Bench { args }) => {
            let code = quiver_bench::run_cli(args);
            return ExitCode::from(u8::try_from(code).unwrap_or(1));
        }
        // Reached only after options before the tool name (handled before parsing otherwise).
        Some(Command::Dump { args }) => {
            let code = quiver_tools::run_cli("dump", args, &watch_interrupt());
            return ExitCode::from(u8::try_from(code).unwrap_or(1));
        }
        Some(Command::Restore { args }) => {
            let code = quiver_tools::run_cli("restore", args, &watch_interrupt());
            return ExitCode::from(u8::try_from(code).unwrap_or(1));
        }
        Some(Command::Import { args }) => {
            let code = quiver_tools::run_cli("import", args, &watch_interrupt());
            return ExitCode::from(u8::try_from(code).unwrap_or(1));
        }
        Some(Command::Export { args }) => {
            let code = quiver_tools::run_cli("export", args, &watch_interrupt());
            return ExitCode::from(u8::try_from(code).unwrap_or(1));
        }
        Some(Command::Backup { args }) => {
            let code = quiver_tools::run_cli("backup", args, &watch_interrupt());
            return ExitCode::from(u8::try_from(code).unwrap_or(1));
        }
        None => cli.serve,
    };
    match serve(options, startup_options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("quiver: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("33554432"), Ok(33554432));
        assert_eq!(parse_size("32MiB"), Ok(32 << 20));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert!(parse_size("12x").is_err());
        assert!(parse_size("").is_err());
    }

    #[test]
    fn endpoints() {
        let addr = "127.0.0.1:8529".parse().unwrap();
        assert_eq!(
            parse_endpoint("tcp://127.0.0.1:8529").unwrap(),
            Endpoint { addr, tls: false }
        );
        assert_eq!(parse_endpoint("127.0.0.1:0").unwrap().addr.port(), 0);
        assert_eq!(
            parse_endpoint("ssl://127.0.0.1:8529").unwrap(),
            Endpoint { addr, tls: true }
        );
        assert!(parse_endpoint("http+ssl://127.0.0.1:1").unwrap().tls);
        assert!(parse_endpoint("unix:///tmp/arangod.sock").is_err());
        assert!(parse_endpoint("tcp://nonsense").is_err());
        assert!(parse_endpoint("ssl://nonsense").is_err());
    }

    #[test]
    fn config_file_and_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quiver.conf");
        std::fs::write(
            &path,
            "# comment\n[server]\nendpoint = tcp://127.0.0.1:9999\n\n[database]\ndirectory = /tmp/x\nmaximal-journal-size = 1MiB\n",
        )
        .unwrap();
        let args = config_file_args(&path).unwrap();
        assert_eq!(args[0], "--server.endpoint=tcp://127.0.0.1:9999");
        let mut all = vec!["quiver".to_string()];
        all.extend(args);
        all.push("--database.directory=/tmp/y".into());
        let cli = Cli::try_parse_from(all).unwrap();
        assert_eq!(cli.serve.endpoint, ["tcp://127.0.0.1:9999"]);
        assert_eq!(cli.serve.directory, PathBuf::from("/tmp/y"));
        assert_eq!(cli.serve.journal_size, 1 << 20);
        std::fs::write(&path, "[server]\nnot a key value line\n").unwrap();
        assert!(config_file_args(&path).is_err());
    }

    #[test]
    fn config_file_includes_dotted_keys_and_edition_sections() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("common.conf"), "[log]\nlevel = debug\n").unwrap();
        let main = dir.path().join("main.conf");
        std::fs::write(
            &main,
            "; arangod-style\n@include common\n[server]\nendpoint = tcp://127.0.0.1:1\n\
             database.directory = /tmp/dotted\n[server:enterprise]\nendpoint = tcp://127.0.0.1:2\n\
             [wal:community]\nsync-interval = 7\n",
        )
        .unwrap();
        assert_eq!(
            config_file_args(&main).unwrap(),
            [
                "--log.level=debug",
                "--server.endpoint=tcp://127.0.0.1:1",
                "--database.directory=/tmp/dotted",
                "--wal.sync-interval=7",
            ]
        );
        // Recursion and a bad section suffix are errors, not loops or silent skips.
        std::fs::write(dir.path().join("common.conf"), "@include main.conf\n").unwrap();
        assert!(config_file_args(&main)
            .unwrap_err()
            .contains("recursive include"));
        std::fs::write(&main, "[server:cloud]\nendpoint = x\n").unwrap();
        assert!(config_file_args(&main).is_err());
    }

    #[test]
    fn options_quiver_lacks_are_skipped_from_an_arangod_conf() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("arangod.conf");
        std::fs::write(
            &path,
            "[database]\ndirectory = /tmp/q\n[server]\nendpoint = tcp://127.0.0.1:9\n\
             authentication = true\nstorage-engine = auto\n[javascript]\n\
             startup-directory = /usr/share/arangodb3/js\n[log]\nlevel = info\n",
        )
        .unwrap();
        let (known, ignored) = split_known_options(config_file_args(&path).unwrap());
        assert_eq!(
            known,
            [
                "--database.directory=/tmp/q",
                "--server.endpoint=tcp://127.0.0.1:9",
                "--server.authentication=true",
                "--log.level=info",
            ]
        );
        assert_eq!(
            ignored,
            ["server.storage-engine", "javascript.startup-directory"]
        );
        let mut all = vec!["quiver".to_string()];
        all.extend(known);
        assert!(Cli::try_parse_from(all).is_ok());
        // On the command line an unknown option is still an error.
        assert!(Cli::try_parse_from(["quiver", "--server.storage-engine=auto"]).is_err());
    }

    #[test]
    fn log_levels_are_checked() {
        for ok in ["info", "WARNING", "requests=trace", "err"] {
            assert!(
                Cli::try_parse_from(["quiver", "--log.level", ok]).is_ok(),
                "{ok}"
            );
        }
        for bad in ["verbose", "requests=loud", ""] {
            assert!(
                Cli::try_parse_from(["quiver", "--log.level", bad]).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn idle_timeout_must_be_sane() {
        assert!(parse_seconds("0").is_err());
        assert!(parse_seconds("-1").is_err());
        assert!(parse_seconds("inf").is_err());
        assert!(parse_seconds("1e9").is_err());
        assert_eq!(parse_seconds(" 2.5 ").unwrap(), 2.5);
    }

    #[test]
    fn serve_is_the_default_and_flags_parse() {
        let cli = Cli::try_parse_from(["quiver"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.serve.endpoint, ["tcp://127.0.0.1:8529"]);
        assert_eq!(cli.serve.ssl_protocol, 9);
        let cli = Cli::try_parse_from([
            "quiver",
            "--server.endpoint",
            "tcp://127.0.0.1:1",
            "--server.endpoint=ssl://127.0.0.1:2",
            "--ssl.protocol",
            "5",
        ])
        .unwrap();
        assert_eq!(
            cli.serve.endpoint,
            ["tcp://127.0.0.1:1", "ssl://127.0.0.1:2"]
        );
        let endpoints: Vec<Endpoint> = cli
            .serve
            .endpoint
            .iter()
            .map(|e| parse_endpoint(e).unwrap())
            .collect();
        // An ssl:// endpoint needs a keyfile; the protocol is checked first.
        let err = tls_config(&endpoints, &cli.serve).err().unwrap();
        assert!(err.contains("--ssl.keyfile"), "{err}");
        let mut options = cli.serve;
        options.ssl_protocol = 4;
        let err = tls_config(&endpoints, &options).err().unwrap();
        assert!(err.contains("not supported"), "{err}");
        assert!(tls_config(&endpoints[..1], &options).unwrap().is_none());
        let cli = Cli::try_parse_from([
            "quiver",
            "serve",
            "--database.ignore-datafile-errors",
            "--wal.sync-interval",
            "5",
            "--ttl.frequency",
            "250",
            "--arangosearch.nice",
            "19",
            "--transaction.streaming-idle-timeout",
            "1.5",
        ])
        .unwrap();
        match cli.command {
            Some(Command::Serve(o)) => {
                assert!(o.ignore_datafile_errors);
                assert_eq!(o.sync_interval, 5);
                assert_eq!(o.ttl_frequency, 250);
                assert_eq!(o.search_nice, 19);
                assert_eq!(o.stream_idle_timeout, 1.5);
            }
            _ => panic!("expected serve"),
        }
    }

    #[test]
    fn mapped_memory_limit_option() {
        let gib = 1u64 << 30;
        let defaults = Cli::try_parse_from(["quiver"]).unwrap().serve;
        assert_eq!(
            mapped_memory_limit(defaults.mapped_memory_limit, 24 * gib),
            Some(256 << 20)
        );
        assert_eq!(
            mapped_memory_limit(defaults.mapped_memory_limit, 96 * gib),
            Some(gib)
        );
        assert_eq!(
            mapped_memory_limit(defaults.mapped_memory_limit, 2 * gib),
            Some(MAPPED_MEMORY_LIMIT_MIN)
        );
        let parse = |value: &str| {
            Cli::try_parse_from(["quiver", "--storage.mapped-memory-limit", value])
                .map(|cli| mapped_memory_limit(cli.serve.mapped_memory_limit, 24 * gib))
        };
        assert_eq!(parse("0").unwrap(), None);
        assert_eq!(parse("64m").unwrap(), Some(64 << 20));
        assert!(parse("lots").is_err());
    }

    #[test]
    fn naming_and_trusted_origin_flags() {
        let defaults = Cli::try_parse_from(["quiver"]).unwrap().serve;
        assert!(defaults.extended_names);
        assert!(defaults.trusted_origins.is_empty());
        let cli = Cli::try_parse_from([
            "quiver",
            "--database.extended-names",
            "false",
            "--http.trusted-origin",
            "http://a.test",
            "--http.trusted-origin=https://b.test/,https://c.test",
        ])
        .unwrap();
        assert!(!cli.serve.extended_names);
        assert_eq!(
            TrustedOrigins::parse(&cli.serve.trusted_origins),
            TrustedOrigins::Listed(vec![
                "http://a.test".into(),
                "https://b.test".into(),
                "https://c.test".into()
            ])
        );
        assert!(Cli::try_parse_from(["quiver", "--database.extended-names", "maybe"]).is_err());
    }

    #[test]
    fn wal_and_compaction_options_reach_the_engine() {
        let defaults = engine_options(&Cli::try_parse_from(["quiver"]).unwrap().serve);
        let engine_defaults = EngineOptions::default();
        assert_eq!(defaults.compaction, engine_defaults.compaction);
        assert_eq!(
            defaults.wal_throttle_when_pending,
            engine_defaults.wal_throttle_when_pending
        );
        assert_eq!(
            defaults.wal_throttle_wait,
            engine_defaults.wal_throttle_wait
        );

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("quiver.conf");
        std::fs::write(
            &path,
            "[wal]\nthrottle-when-pending = 3\nthrottle-wait = 2500\n\n[compaction]\n\
             db-sleep-time = 0.5\nmin-interval = 0\nmin-small-data-file-size = 64KiB\n\
             dead-size-threshold = 1MiB\ndead-size-percent-threshold = 0.25\n\
             dead-documents-threshold = 100\nmax-files = 5\nmax-result-file-size = 64MiB\n\
             max-file-size-factor = 2\n",
        )
        .unwrap();
        let mut all = vec!["quiver".to_string()];
        all.extend(config_file_args(&path).unwrap());
        all.push("--compaction.max-files=7".into());
        let o = engine_options(&Cli::try_parse_from(all).unwrap().serve);
        assert_eq!(o.wal_throttle_when_pending, 3);
        assert_eq!(o.wal_throttle_wait, Duration::from_millis(2500));
        let c = &o.compaction;
        assert_eq!(c.db_sleep_time, Duration::from_millis(500));
        assert_eq!(c.min_interval, Duration::ZERO);
        assert_eq!(c.min_small_data_file_size, 64 << 10);
        assert_eq!(c.dead_size_threshold, 1 << 20);
        assert_eq!(c.dead_size_percent_threshold, 0.25);
        assert_eq!(c.dead_documents_threshold, 100);
        assert_eq!(c.max_files, 7, "the command line wins over the file");
        assert_eq!(c.max_result_file_size, 64 << 20);
        assert_eq!(c.max_file_size_factor, 2);
        assert!(c.background);

        for bad in [
            "--compaction.dead-size-percent-threshold=1.5",
            "--compaction.max-files=0",
            "--compaction.db-sleep-time=0",
            "--compaction.min-interval=-1",
            "--wal.throttle-wait=soon",
        ] {
            assert!(Cli::try_parse_from(["quiver", bad]).is_err(), "{bad}");
        }
    }
}
