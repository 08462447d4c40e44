//! What every handler shares: configuration, the core, the job queue.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use quiver_aql::QueryService;
use quiver_core::{Core, Database};
use quiver_errors::Result;

use crate::auth::{AuthConfig, Authenticator};
use crate::jobs::JobManager;

/// ArangoDB's default idle timeout of stream transactions
/// (`--transaction.streaming-idle-timeout`; see `ServerConfig::stream_idle_timeout`).
pub const STREAM_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Server settings (from the command line / configuration file).
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The endpoint listened on (`tcp://127.0.0.1:8529`; the binary puts the bound address here,
    /// so port 0 shows the port picked), reported by `/_api/endpoint`.
    pub endpoint: String,
    /// The data directory, reported by `/_api/database/current`.
    pub data_dir: PathBuf,
    /// Largest accepted request body, after decompression (413 beyond).
    pub max_body_size: usize,
    /// How many `x-arango-async` requests may wait (503/21003 beyond).
    pub async_queue_capacity: usize,
    /// Threads executing async jobs.
    pub async_workers: usize,
    /// Inactivity after which a stream transaction is aborted
    /// (`--transaction.streaming-idle-timeout`).
    pub stream_idle_timeout: std::time::Duration,
    /// Authentication (on by default; handler tests say explicitly when they turn it off).
    pub auth: AuthConfig,
    /// Origins whose cross-origin requests may carry credentials (`--http.trusted-origin`).
    pub trusted_origins: crate::cors::TrustedOrigins,
    /// Whether `/_admin/metrics` is served (`--server.export-metrics-api`).
    pub export_metrics_api: bool,
    /// Bytes the recent API calls and AQL queries may take (`--server.api-call-recording`,
    /// `--server.api-recording-memory-limit` and their AQL counterparts; 0 = not recorded).
    pub recording_limits: crate::stats::RecordingLimits,
    /// The log: levels per topic, outputs, recent entries.
    pub log: Arc<crate::log::LogControl>,
    /// The options the server runs with, for `/_admin/options*`.
    pub startup_options: Arc<StartupOptions>,
    /// How long a connection may idle or dribble a request before it is closed.
    pub http_timeouts: HttpTimeouts,
    /// The memory budget (estimated bytes) of a query without its own `memoryLimit`
    /// (`--query.memory-limit`; 0 = none).
    pub query_memory_limit: u64,
    /// The budget of all running queries together (`--query.global-memory-limit`; 0 = none).
    pub query_global_memory_limit: u64,
    /// Caps on open cursors: how many, and the estimated bytes of the results they hold,
    /// overall and per user (`--query.max-open-cursors`, `--query.cursors-memory-limit` and
    /// their `-per-user` options).
    pub cursor_caps: quiver_aql::held::HoldCaps,
    /// Caps on stored async jobs: per user how many, and the bytes of their responses overall
    /// and per user (`--server.max-async-results-per-user`,
    /// `--server.async-results-memory-limit`, `…-per-user`); how many overall is four times
    /// the queue's capacity.
    pub async_result_caps: quiver_aql::held::HoldCaps,
    /// The most bytes the parts' responses of one `/_api/batch` request may hold
    /// (`--server.batch-response-memory-limit`; 0 = none).
    pub batch_response_limit: u64,
    /// The TLS settings of the `ssl://` endpoints (shared with them, so `POST
    /// /_admin/server/tls` reloads what they use); `None` without such an endpoint.
    pub tls: Option<crate::tls::TlsConfig>,
}

/// The server's options as `/_admin/options` and `/_admin/options-description` show them.
#[derive(Clone, Debug, Default)]
pub struct StartupOptions {
    /// `{"section.name": value}` of every option, secrets left out.
    pub values: serde_json::Value,
    /// `{"section.name": {section, description, type, default, …}}`, secrets left out.
    pub descriptions: serde_json::Value,
}

impl StartupOptions {
    /// Whether an option's value must never be shown (ArangoDB leaves out every option whose
    /// name mentions a password or a secret).
    pub fn is_secret(name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        ["passwd", "password", "secret"]
            .iter()
            .any(|word| name.contains(word))
    }

    /// Options from `(name, value, description)` triples, secrets dropped.
    pub fn new(
        options: impl IntoIterator<Item = (String, serde_json::Value, serde_json::Value)>,
    ) -> StartupOptions {
        let mut values = serde_json::Map::new();
        let mut descriptions = serde_json::Map::new();
        for (name, value, description) in options {
            if StartupOptions::is_secret(&name) {
                continue;
            }
            values.insert(name.clone(), value);
            descriptions.insert(name, description);
        }
        StartupOptions {
            values: values.into(),
            descriptions: descriptions.into(),
        }
    }
}

/// Read timeouts of client connections; a zero duration turns that timeout off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpTimeouts {
    /// A connection with no request in progress is closed after this long
    /// (`--http.keep-alive-timeout`, ArangoDB's default 300 s); also the wait for the first
    /// request of a new connection.
    pub keep_alive: std::time::Duration,
    /// From the first byte of a request head to its end (`--http.request-header-timeout`):
    /// a client dribbling its headers (slowloris) is cut off after this long.
    pub request_header: std::time::Duration,
    /// The longest pause between two pieces of a request body
    /// (`--http.request-body-timeout`); a request whose body stalls this long is answered
    /// 408 and its connection closed.
    pub request_body: std::time::Duration,
}

impl Default for HttpTimeouts {
    fn default() -> HttpTimeouts {
        HttpTimeouts {
            keep_alive: std::time::Duration::from_secs(300),
            request_header: std::time::Duration::from_secs(30),
            request_body: std::time::Duration::from_secs(60),
        }
    }
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            endpoint: "tcp://127.0.0.1:8529".into(),
            data_dir: PathBuf::from("./quiver-data"),
            max_body_size: 512 * 1024 * 1024,
            async_queue_capacity: 4096,
            async_workers: 2,
            stream_idle_timeout: STREAM_IDLE_TIMEOUT,
            auth: AuthConfig::default(),
            trusted_origins: crate::cors::TrustedOrigins::None,
            export_metrics_api: true,
            recording_limits: crate::stats::RecordingLimits::default(),
            log: Arc::default(),
            startup_options: Arc::new(StartupOptions::new([])),
            http_timeouts: HttpTimeouts::default(),
            query_memory_limit: quiver_aql::exec::DEFAULT_MEMORY_CAP,
            query_global_memory_limit: 0,
            cursor_caps: quiver_aql::held::HoldCaps {
                count: quiver_aql::service::MAX_CURSORS,
                ..Default::default()
            },
            async_result_caps: Default::default(),
            batch_response_limit: 0,
            tls: None,
        }
    }
}

/// Shared state of a running server.
pub struct ServerState {
    /// Settings.
    pub config: ServerConfig,
    /// Databases, collections, documents.
    pub core: Arc<Core>,
    /// AQL: cursors, explain, query registry.
    pub queries: QueryService,
    /// The async job queue.
    pub jobs: JobManager,
    /// When the server started (for `/_admin/status`).
    pub started: Instant,
    /// Users, credentials, JWT secrets.
    pub auth: Authenticator,
    /// Who created each cursor and stream transaction.
    pub ownership: crate::ownership::Ownership,
    /// Request and connection statistics.
    pub statistics: Arc<crate::stats::RequestStatistics>,
    /// The recent API calls and AQL queries (`/_admin/server/api-calls`, `aql-queries`).
    pub recordings: crate::stats::Recordings,
    /// Running dump batches of the replication API.
    pub dump_batches: crate::dump_batches::DumpBatches,
    /// A shutdown asked for by `DELETE /_admin/shutdown`.
    pub stop: crate::stop::StopRequest,
    /// `default` or `readonly` (`/_admin/server/mode`).
    pub mode: crate::server_mode::ServerMode,
}

impl ServerState {
    /// Builds the state (loading the users of `_system/_users`, creating `root` on first
    /// start, and the JWT secrets) and starts the async job workers, which answer their
    /// requests through the state ([`crate::jobs::JobHost`]).
    pub fn new(config: ServerConfig, core: Arc<Core>) -> std::io::Result<Arc<ServerState>> {
        let workers = config.async_workers;
        let auth = Authenticator::new(config.auth.clone(), core.clone(), &config.data_dir)
            .map_err(|e| std::io::Error::other(e.message))?;
        let state = Arc::new(ServerState {
            auth,
            ownership: Default::default(),
            statistics: Arc::default(),
            recordings: crate::stats::Recordings::new(config.recording_limits),
            dump_batches: Default::default(),
            stop: Default::default(),
            mode: Default::default(),
            queries: {
                let queries = QueryService::over_core(core.clone());
                queries
                    .set_memory_limits(config.query_memory_limit, config.query_global_memory_limit);
                queries.set_cursor_caps(config.cursor_caps);
                queries
            },
            core,
            jobs: {
                let jobs = JobManager::new(config.async_queue_capacity);
                jobs.set_result_caps(config.async_result_caps);
                jobs
            },
            config,
            started: Instant::now(),
        });
        state.jobs.start_workers(Arc::downgrade(&state), workers)?;
        Ok(state)
    }

    /// 404/1228 unless `name` is an existing database.
    pub fn check_database(&self, name: &str) -> Result<()> {
        if self.core.has_database(name) {
            Ok(())
        } else {
            Err(quiver_errors::Error::new(
                quiver_errors::ErrorCode::DatabaseNotFound,
            ))
        }
    }

    /// The database a request addresses (404/1228 if it does not exist).
    pub fn database(&self, name: &str) -> Result<Arc<Database>> {
        self.core.database(name)
    }

    /// Stops the job queue (the binary then shuts the core down).
    pub fn shutdown(&self) {
        self.jobs.close();
    }
}
