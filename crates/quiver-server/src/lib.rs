//! QuiverDB's HTTP server: ArangoDB 3.12's HTTP API (single server) over quiver-core.
//!
//! The life of a request: the hyper connection loop ([`transport`]) reads and decompresses
//! the body and builds a transport-free [`Request`]; [`handle`] resolves the database,
//! queues `x-arango-async` requests, and routes to one module per API family under [`api`];
//! the handler calls quiver-core and returns a [`Response`] that may still carry the
//! durability of the writes it reports, which the transport awaits without blocking a worker
//! before it writes the bytes. The batch API and the job queue call [`handle`] the same way.

pub mod access;
pub mod api;
pub mod auth;
pub mod chunk_buffers;
pub mod cors;
pub mod dump_batches;
#[doc(hidden)]
pub mod fuzz_entry;
pub mod import_format;
pub mod jobs;
pub mod json;
pub mod log;
pub mod multipart;
pub mod ownership;
pub mod query_access;
pub mod request;
pub mod response;
pub mod revision_tree;
pub mod server_mode;
pub mod state;
pub mod stats;
pub mod stop;
pub mod tls;
pub mod transport;
pub mod webui;

pub use request::{parse_bool, Request, DEFAULT_DATABASE};
pub use response::{Durability, Response, JSON_CONTENT_TYPE};
pub use state::{HttpTimeouts, ServerConfig, ServerState};
pub use transport::{serve, serve_on, serve_tls_on, ServeHandle, TlsConfig, TlsProtocol};

use http::Method;
use quiver_errors::{Error, ErrorCode};

/// The methods every path allows (OPTIONS answer and CORS preflight).
pub const ALLOWED_METHODS: &str = "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT";

/// Answers one request, without any transport: the connection loop, the batch API, the
/// async job queue and the handler tests all come through here.
pub fn handle(state: &ServerState, mut request: Request) -> Response {
    if request.method == Method::OPTIONS {
        return Response::empty(200).with_header(http::header::ALLOW, ALLOWED_METHODS);
    }
    // Authentication and every right of the route, before anything else looks at it.
    if let Some(refused) = access::admit(state, &mut request) {
        return refused;
    }
    if let Some(read) = request.received.take() {
        state.statistics.dispatched(read.elapsed());
    }
    state
        .recordings
        .api_call(&request.method, &request.path, &request.database);
    if let Some(mode) = request.header(&request::X_ARANGO_ASYNC) {
        let mode = mode.trim();
        let store = mode.eq_ignore_ascii_case("store");
        if store || mode.eq_ignore_ascii_case("true") {
            // ArangoDB checks the database before queueing, so a bad database fails at once.
            if let Err(e) = state.check_database(&request.database) {
                return e.into();
            }
            let mut queued = request;
            queued.headers.remove(&request::X_ARANGO_ASYNC);
            state.statistics.asynchronous.inc();
            return state.jobs.submit(queued, store);
        }
    }
    if let Err(e) = state.check_database(&request.database) {
        return e.into();
    }
    if let Err(e) = state.ownership.check(&request) {
        return e.into();
    }
    let response = api::route(state, &request);
    state.ownership.record(&request, &response);
    response
}

/// The async job workers answer a queued request the way the transport does, through
/// [`handle`] (the job queue sits below the state and the handlers, so it receives them).
impl jobs::JobHost for ServerState {
    fn jobs(&self) -> &jobs::JobManager {
        &self.jobs
    }

    fn answer(&self, request: Request) -> Response {
        handle(self, request)
    }
}

/// 404 for an unknown path: ArangoDB answers with an error body naming the path.
pub(crate) fn not_found(request: &Request) -> Response {
    Error::with_message(
        ErrorCode::HttpNotFound,
        format!("unknown path '{}'", request.path),
    )
    .into()
}

/// 405 for a known path with an unsupported method.
pub(crate) fn method_not_allowed() -> Response {
    ErrorCode::HttpMethodNotAllowed.into()
}
