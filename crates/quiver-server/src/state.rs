//! What every handler shares: configuration, the core, the job queue.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use quiver_aql::QueryService;
use quiver_core::{Core, Database};
use quiver_errors::Result;

use crate::auth::{AuthConfig, Authenticator};
use crate::jobs::JobManager;

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
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            endpoint: "tcp://127.0.0.1:8529".into(),
            data_dir: PathBuf::from("./quiver-data"),
            max_body_size: 512 * 1024 * 1024,
            async_queue_capacity: 4096,
            async_workers: 2,
            stream_idle_timeout: crate::api::transaction::IDLE_TIMEOUT,
            auth: AuthConfig::default(),
            trusted_origins: crate::cors::TrustedOrigins::None,
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
    /// Running dump batches of the replication API.
    pub dump_batches: crate::dump_batches::DumpBatches,
}

impl ServerState {
    /// Builds the state (loading the users of `_system/_users`, creating `root` on first
    /// start, and the JWT secrets) and starts the async job workers.
    pub fn new(config: ServerConfig, core: Arc<Core>) -> std::io::Result<Arc<ServerState>> {
        let workers = config.async_workers;
        let auth = Authenticator::new(config.auth.clone(), core.clone(), &config.data_dir)
            .map_err(|e| std::io::Error::other(e.message))?;
        let state = Arc::new(ServerState {
            auth,
            ownership: Default::default(),
            dump_batches: Default::default(),
            queries: QueryService::over_core(core.clone()),
            core,
            jobs: JobManager::new(config.async_queue_capacity),
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
