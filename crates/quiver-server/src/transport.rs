//! The hyper 1.x connection loop: HTTP/1.1 (keep-alive, pipelining) and HTTP/2 (prior
//! knowledge or `Upgrade: h2c`) on the same port, or over TLS (`ssl://` endpoints, HTTP/2
//! chosen by ALPN, see [`tls`]), body limits, request-body decompression, common headers and
//! CORS. Everything else happens in [`crate::handle`].
//!
//! hyper is used directly rather than through a web framework: routing is ArangoDB's own
//! (database prefix, percent-decoded segments) and a framework would only add a layer per
//! request on the hot insert/read path.

use std::convert::Infallible;
use std::io::Read;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use quiver_aql::handoff::Handoff;
use quiver_aql::run_history::BRIEF_RUN;
use quiver_errors::{Error, ErrorCode};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::api::cursor::Inline;
use crate::cors::CorsRequest;
use crate::{Request, Response, ServerState};

mod accept_backoff;
mod h2c;
mod read_deadline;

use accept_backoff::AcceptBackoff;
use read_deadline::{ConnectionClock, Phase, Watched};

use crate::tls;
pub use crate::tls::{TlsConfig, TlsProtocol};

/// Headers ArangoDB sends on every response (http-api.md §1.6).
const STATIC_HEADERS: &[(&str, &str)] = &[
    ("server", "ArangoDB"),
    ("x-content-type-options", "nosniff"),
    (
        "content-security-policy",
        "frame-ancestors 'self'; form-action 'self';",
    ),
    (
        "cache-control",
        "no-cache, no-store, must-revalidate, pre-check=0, post-check=0, max-age=0, s-maxage=0",
    ),
    ("pragma", "no-cache"),
    ("expires", "0"),
    (
        "strict-transport-security",
        "max-age=31536000 ; includeSubDomains",
    ),
    ("x-arango-queue-time-seconds", "0.000000"),
];

/// The response headers every answer starts from: [`STATIC_HEADERS`] plus
/// `Connection: Keep-Alive` and the JSON `Content-Type` (most answers are JSON; the others
/// replace or remove it), built once. Cloning the finished map costs two allocations and a
/// copy; inserting the same nine headers one by one (hashing each name) was ~1.5 % of the
/// server's CPU per insert.
fn header_template() -> &'static HeaderMap {
    static TEMPLATE: std::sync::OnceLock<HeaderMap> = std::sync::OnceLock::new();
    TEMPLATE.get_or_init(|| {
        // Room for the per-response headers too (type, length, date, ETag, Location, CORS),
        // so that adding them never regrows the map's index.
        let mut headers = HeaderMap::with_capacity(STATIC_HEADERS.len() + 12);
        for (name, value) in STATIC_HEADERS {
            headers.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        headers.insert(header::CONNECTION, HeaderValue::from_static("Keep-Alive"));
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(crate::JSON_CONTENT_TYPE),
        );
        headers
    })
}

/// A running server: its bound address and a way to stop it.
pub struct ServeHandle {
    /// The address actually bound (useful with port 0).
    pub local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl ServeHandle {
    /// Stops accepting, lets open connections finish their current request (at most
    /// `grace`), then returns.
    pub async fn shutdown(self, grace: Duration) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(grace + Duration::from_secs(1), self.task).await;
    }
}

/// Serves `state` on `listener` until [`ServeHandle::shutdown`], with every connection on
/// the current runtime.
pub fn serve(state: Arc<ServerState>, listener: TcpListener) -> std::io::Result<ServeHandle> {
    serve_on(state, listener, vec![tokio::runtime::Handle::current()])
}

/// As [`serve_on`], for an `ssl://` endpoint: every connection first completes a TLS handshake
/// (at most [`tls::HANDSHAKE_WAIT`]; a failed one just closes that connection), then speaks
/// HTTP/2 if the client chose `h2` by ALPN, HTTP/1.1 otherwise. Placement, accounting and
/// shutdown are those of [`serve_on`].
pub fn serve_tls_on(
    state: Arc<ServerState>,
    listener: TcpListener,
    workers: Vec<tokio::runtime::Handle>,
    tls: TlsConfig,
) -> std::io::Result<ServeHandle> {
    start(state, listener, workers, Some(tls))
}

/// Serves `state` on `listener` until [`ServeHandle::shutdown`], spreading the connections
/// over `workers` (runtimes): the accept loop runs on the current runtime (the listener's),
/// and each new connection goes to the worker runtime with the fewest open connections and
/// stays there. The binary accepts on a runtime of its own, on the main thread, so that no
/// request handler delays accepting.
///
/// The binary runs one single-worker runtime per core. With one multi-worker runtime, tokio
/// moves connection tasks between its workers (work stealing, and the wake-ups of an idle
/// worker that go with it), so a connection's buffers, its hyper state and the task itself
/// kept changing cores: measured side by side at concurrency 16, pinning connections this
/// way cut the server's CPU per insert by ~0.7-2 us and raised throughput by 6-12 %
/// (docs/benchmarks/http.md, "Connections pinned to one core each"). Each runtime still has
/// its own blocking pool, and `block_in_place` still hands a worker's other connections to
/// another thread.
pub fn serve_on(
    state: Arc<ServerState>,
    listener: TcpListener,
    workers: Vec<tokio::runtime::Handle>,
) -> std::io::Result<ServeHandle> {
    start(state, listener, workers, None)
}

/// Starts the accept loop of [`serve_on`] and [`serve_tls_on`].
fn start(
    state: Arc<ServerState>,
    listener: TcpListener,
    workers: Vec<tokio::runtime::Handle>,
    tls: Option<TlsConfig>,
) -> std::io::Result<ServeHandle> {
    if workers.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "no runtime to serve connections on",
        ));
    }
    let local_addr = listener.local_addr()?;
    let (stop, stopped) = watch::channel(false);
    let task = tokio::spawn(accept_loop(state, listener, stopped, workers, tls));
    Ok(ServeHandle {
        local_addr,
        stop,
        task,
    })
}

async fn accept_loop(
    state: Arc<ServerState>,
    listener: TcpListener,
    mut stopped: watch::Receiver<bool>,
    workers: Vec<tokio::runtime::Handle>,
    tls: Option<TlsConfig>,
) {
    // Open connections per worker: where the next one goes, and what shutdown waits for.
    let loads: Vec<Arc<AtomicUsize>> = workers
        .iter()
        .map(|_| Arc::new(AtomicUsize::new(0)))
        .collect();
    let mut backoff = AcceptBackoff::default();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stopped.changed() => break,
        };
        let (stream, _) = match accepted {
            Ok(a) => {
                backoff.succeeded();
                a
            }
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                let wait = backoff.failed(&e);
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stopped.changed() => break,
                }
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (worker, load) = workers
            .iter()
            .zip(&loads)
            .min_by_key(|(_, load)| load.load(Ordering::Acquire))
            .expect("serve_on checked that there is a worker");
        let state = state.clone();
        let conn_stopped = stopped.clone();
        let tls = tls.clone();
        let open = OpenConnection::new(load, &state.statistics);
        // A socket is registered with the reactor of the runtime that accepted it: it moves
        // to its worker's runtime as a std socket (still non-blocking) and is registered
        // there. (Also when the worker is this runtime: two `epoll_ctl` calls per connection
        // are cheaper than telling runtimes apart.)
        let stream = match stream.into_std() {
            Ok(stream) => stream,
            Err(e) => {
                tracing::warn!("cannot hand a connection to its worker: {e}");
                continue;
            }
        };
        worker.spawn(async move {
            match TcpStream::from_std(stream) {
                Ok(stream) => match tls {
                    None => connection(state, stream, conn_stopped, open).await,
                    Some(tls) => tls_connection(state, stream, tls, conn_stopped, open).await,
                },
                Err(e) => tracing::warn!("cannot register a connection with its worker: {e}"),
            }
        });
    }
    // Give connections a moment to finish the requests they are in.
    for _ in 0..100 {
        if loads.iter().all(|load| load.load(Ordering::Acquire) == 0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Counts a connection in its worker's load while it lives: dropped when the connection's
/// task ends, however it ends (a panic included, which would otherwise leave the worker looking
/// busier than it is for good, and make every shutdown wait its whole grace period).
/// It also counts the connection in the connection statistics while it lives.
struct OpenConnection {
    load: Arc<AtomicUsize>,
    _record: crate::stats::ConnectionRecord,
}

impl OpenConnection {
    fn new(
        load: &Arc<AtomicUsize>,
        statistics: &Arc<crate::stats::RequestStatistics>,
    ) -> OpenConnection {
        load.fetch_add(1, Ordering::AcqRel);
        OpenConnection {
            load: Arc::clone(load),
            _record: statistics.connection_opened(),
        }
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.load.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Serves one connection until the client closes it or the server stops; `_open` counts it
/// while it is open.
async fn connection(
    state: Arc<ServerState>,
    stream: TcpStream,
    mut conn_stopped: watch::Receiver<bool>,
    _open: OpenConnection,
) {
    // The client's address, for the login throttle.
    let peer = stream.peer_addr().ok().map(|a| a.ip());
    // A connection that has sent nothing yet is simply closed at shutdown, or when it has
    // sent nothing for the keep-alive timeout.
    let keep_alive = state.config.http_timeouts.keep_alive;
    let first_bytes = async {
        if keep_alive.is_zero() {
            opening(&stream).await
        } else {
            tokio::time::timeout(keep_alive, opening(&stream))
                .await
                .unwrap_or(Opening::Closed)
        }
    };
    let opening = tokio::select! {
        o = first_bytes => o,
        _ = conn_stopped.changed() => return,
    };
    match opening {
        Opening::Closed => return,
        Opening::Http1 => {}
        Opening::Http2 => return http2_connection(state, stream, peer, conn_stopped).await,
        Opening::H2cUpgrade(upgrade) => {
            if let Some(io) = h2c::switch(stream, upgrade, PREFACE_WAIT).await {
                http2_connection(state, io, peer, conn_stopped).await;
            }
            return;
        }
    }
    http1_connection(state, stream, peer, conn_stopped).await;
}

/// Serves one connection of an `ssl://` endpoint until the client closes it or the server
/// stops; `_open` counts it while it is open (the handshake included).
async fn tls_connection(
    state: Arc<ServerState>,
    stream: TcpStream,
    tls: TlsConfig,
    mut conn_stopped: watch::Receiver<bool>,
    _open: OpenConnection,
) {
    let peer = stream.peer_addr().ok().map(|a| a.ip());
    // A connection still in its handshake is simply closed at shutdown.
    let stream = tokio::select! {
        s = tls.handshake(stream) => match s {
            Some(stream) => stream,
            None => return,
        },
        _ = conn_stopped.changed() => return,
    };
    if tls::negotiated_h2(&stream) {
        http2_connection(state, stream, peer, conn_stopped).await;
    } else {
        http1_connection(state, stream, peer, conn_stopped).await;
    }
}

/// Serves HTTP/1.1 on `stream` (a socket, or a TLS stream over one) until the client closes
/// it or the server stops.
async fn http1_connection<S>(
    state: Arc<ServerState>,
    stream: S,
    peer: Option<std::net::IpAddr>,
    mut conn_stopped: watch::Receiver<bool>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    // Each request's future needs its own reference to the state. Taking it from a
    // per-connection `Arc` keeps that reference count on the connection's worker; the
    // server-wide one is shared by every worker, and bumping it per request moved its
    // cache line between the cores.
    let state = Arc::new(state);
    let clock = Arc::new(ConnectionClock::new(state.config.http_timeouts));
    let service_clock = Arc::clone(&clock);
    let service = service_fn(move |req| {
        let state = Arc::clone(&state);
        let clock = Arc::clone(&service_clock);
        async move {
            clock.request_started();
            let response = answer(&state, req, peer).await;
            clock.request_answered();
            Ok::<_, Infallible>(response)
        }
    });
    let io = DeferredShutdown::new(TokioIo::new(Watched::new(stream, Arc::clone(&clock))));
    let mut conn = Box::pin(
        http1::Builder::new()
            .keep_alive(true)
            // Every answer is flushed before the next pipelined request is parsed: when a
            // later request turns out malformed, hyper ends the connection and what it still
            // held unwritten would be lost, for requests already executed.
            .pipeline_flush(false)
            // A client that sends a request and then shuts down its sending side still
            // gets its answer.
            .half_close(true)
            // Each answer's head and body are copied into one buffer and sent with one
            // `send`, as before `pipeline_flush(false)` (which also stopped hyper from
            // flattening): with the sockets' vectored writes, hyper queued the body beside
            // the head and wrote both with `writev`, which cost a single-document read at
            // c=16 ~0.8 µs (6 %) more server CPU (docs/benchmarks/http.md, "Single-document
            // request cost"). The price: hyper's write buffer keeps the capacity of the
            // largest answer the connection sent until the connection closes.
            .writev(false)
            // arangod sends no `Date` header (http-api.md §1.6); hyper's would add 37
            // bytes to every answer for the client to parse.
            .auto_date_header(false)
            .max_buf_size(MAX_HEAD_BYTES)
            .serve_connection(io, service),
    );
    let result = tokio::select! {
        r = conn.as_mut() => r,
        _ = conn_stopped.changed() => {
            conn.as_mut().graceful_shutdown();
            tokio::time::timeout(Duration::from_secs(5), conn.as_mut())
                .await
                .unwrap_or(Ok(()))
        }
        phase = clock.expired() => {
            if phase == Phase::Head {
                tracing::debug!("closing a connection whose request head did not arrive in time");
            }
            Ok(())
        }
    };
    // hyper 1.x ends a connection whose request head it cannot parse with an error (its
    // own bare answer held back by DeferredShutdown); the socket is still open, so the
    // ArangoDB answer goes out through it before the close.
    let parts = Pin::into_inner(conn).into_parts();
    let refused = result
        .as_ref()
        .err()
        .and_then(|e| refused_request_error(e, parts.read_buf.len()));
    let mut stream = parts.io.into_inner(refused.is_some()).await.inner;
    match refused {
        Some(err) => answer_refused(stream, &err).await,
        None => {
            let _ = tokio::time::timeout(Duration::from_secs(5), stream.shutdown()).await;
        }
    }
}

/// The first bytes an HTTP/2 client with prior knowledge sends (RFC 9113 §3.4).
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How long a connection may take to finish sending a partial HTTP/2 preface before it is
/// served as HTTP/1.1 (whose parser then refuses the `PRI` request line with 400), and how
/// long an `h2c` upgrade may take to complete.
const PREFACE_WAIT: Duration = Duration::from_secs(5);

/// How much of a connection's first bytes is looked at: enough for the head of an upgrade
/// request.
const OPENING_BYTES: usize = 4096;

/// The protocol a connection opens with.
enum Opening {
    /// Nothing arrived within the keep-alive timeout.
    Closed,
    Http1,
    /// HTTP/2 with prior knowledge: the connection starts with the preface.
    Http2,
    /// An HTTP/1.1 request asking to switch to HTTP/2 (`Upgrade: h2c`).
    H2cUpgrade(h2c::Upgrade),
}

/// Tells the protocol from the connection's first bytes, looked at without consuming them
/// (`peek`): one system call per connection. An HTTP/1.1 request line differs from the
/// preface in its first or second byte; a client that stops in the middle of the preface is
/// polled every millisecond for at most [`PREFACE_WAIT`].
async fn opening(stream: &TcpStream) -> Opening {
    let mut buf = vec![0u8; OPENING_BYTES];
    let deadline = tokio::time::Instant::now() + PREFACE_WAIT;
    loop {
        let n = match stream.peek(&mut buf).await {
            Ok(n) => n,
            Err(_) => return Opening::Http1,
        };
        if n == 0 {
            return Opening::Http1;
        }
        let compared = n.min(HTTP2_PREFACE.len());
        if buf[..compared] != HTTP2_PREFACE[..compared] {
            return match h2c::upgrade_request(&buf[..n]) {
                Some(upgrade) => Opening::H2cUpgrade(upgrade),
                None => Opening::Http1,
            };
        }
        if n >= HTTP2_PREFACE.len() {
            return Opening::Http2;
        }
        if tokio::time::Instant::now() >= deadline {
            return Opening::Http1;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Serves an HTTP/2 connection (prior knowledge, or switched by `h2c`) until the client closes
/// it or the server stops: the same request path as HTTP/1.1 ([`answer`]: body limit,
/// decompression, URI limit, error envelopes, placement), the same head limit (as the
/// header-list size), and at shutdown a GOAWAY that lets the open streams finish (at most 5 s,
/// as for HTTP/1.1).
async fn http2_connection<S>(
    state: Arc<ServerState>,
    stream: S,
    peer: Option<std::net::IpAddr>,
    mut conn_stopped: watch::Receiver<bool>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    // Per-connection reference, as for HTTP/1.1 (see `connection`).
    let state = Arc::new(state);
    let service = service_fn(move |req| {
        let state = Arc::clone(&state);
        async move {
            let mut response = answer(&state, req, peer).await;
            // Connection-specific headers do not exist in HTTP/2 (RFC 9113 §8.2.2).
            response.headers_mut().remove(header::CONNECTION);
            Ok::<_, Infallible>(response)
        }
    });
    let mut conn = std::pin::pin!(http2::Builder::new(TokioExecutor::new())
        .auto_date_header(false)
        .max_header_list_size(MAX_HEAD_BYTES as u32)
        .serve_connection(TokioIo::new(stream), service));
    let result = tokio::select! {
        r = conn.as_mut() => r,
        _ = conn_stopped.changed() => {
            conn.as_mut().graceful_shutdown();
            tokio::time::timeout(Duration::from_secs(5), conn.as_mut())
                .await
                .unwrap_or(Ok(()))
        }
    };
    if let Err(e) = result {
        tracing::debug!("HTTP/2 connection ended: {e}");
    }
}

/// The connection's socket as hyper sees it, except that hyper's close (`poll_shutdown`) is
/// left to the connection loop, which closes the socket once hyper is done: after a request
/// head hyper refused, the loop answers with ArangoDB's error envelope (http-api.md §1.2).
/// hyper writes a bare answer of its own first (status line, `connection: close`,
/// `content-length: 0`); that one is held back here, and dropped when the connection ends
/// with the parse error it answered. (Any other write first sends what is held, so a body
/// that happened to end with the same bytes is only delayed, never lost.)
struct DeferredShutdown<S> {
    io: TokioIo<S>,
    held: Option<&'static [u8]>,
}

/// The answers hyper writes itself to a request head it cannot parse.
const HYPER_REFUSALS: [&[u8]; 3] = [
    b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
    b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
    b"HTTP/1.1 414 URI Too Long\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
];

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> DeferredShutdown<S> {
    fn new(io: TokioIo<S>) -> DeferredShutdown<S> {
        DeferredShutdown { io, held: None }
    }

    /// Writes what is held back, if anything.
    fn poll_release(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while let Some(held) = self.held {
            let n = std::task::ready!(hyper::rt::Write::poll_write(
                Pin::new(&mut self.io),
                cx,
                held
            ))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            self.held = (n < held.len()).then(|| &held[n..]);
        }
        Poll::Ready(Ok(()))
    }

    /// The socket back, dropping a held refusal of hyper's (`refused`) or sending it.
    async fn into_inner(mut self, refused: bool) -> S {
        if refused {
            self.held = None;
        } else {
            let release = std::future::poll_fn(|cx| self.poll_release(cx));
            let _ = tokio::time::timeout(Duration::from_secs(5), release).await;
        }
        self.io.into_inner()
    }
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> hyper::rt::Read
    for DeferredShutdown<S>
{
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> hyper::rt::Write
    for DeferredShutdown<S>
{
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        std::task::ready!(this.poll_release(cx))?;
        let Some(refusal) = HYPER_REFUSALS.iter().find(|r| buf.ends_with(r)) else {
            return Pin::new(&mut this.io).poll_write(cx, buf);
        };
        let before = &buf[..buf.len() - refusal.len()];
        if !before.is_empty() {
            let n = std::task::ready!(Pin::new(&mut this.io).poll_write(cx, before))?;
            if n < before.len() {
                return Poll::Ready(Ok(n));
            }
        }
        this.held = Some(refusal);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let last = bufs.iter().rev().find(|b| !b.is_empty());
        let may_end_in_refusal =
            last.is_some_and(|b| HYPER_REFUSALS.iter().any(|r| b.ends_with(r)));
        if may_end_in_refusal || self.held.is_some() {
            // Rare: one slice at a time through the checks above.
            let first = bufs
                .iter()
                .find(|b| !b.is_empty())
                .map_or(&[][..], |b| &b[..]);
            return self.poll_write(cx, first);
        }
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// The largest request head (request line and headers) hyper buffers; a longer one is answered
/// 431 (http-api.md §1.2: headers over 1 MB).
const MAX_HEAD_BYTES: usize = 1024 * 1024;

/// ArangoDB's limit on the request-target (http-api.md §1.2: URLs over 16 KB are answered 414).
/// hyper's own limit is 64 KiB.
const MAX_URI_BYTES: usize = 16 * 1024;

/// The most header fields a request may have (hyper's, which parses them on the stack).
/// ArangoDB counts only the head's size; 100 fields is several times what any driver or
/// proxy sends, and a request with more is answered 431 with a message that says so.
const MAX_HEADER_FIELDS: usize = 100;

/// The ArangoDB error for a connection hyper ended because it could not parse a request head,
/// or `None` for other connection errors (client gone, I/O), which get no answer.
/// `unparsed_head` is how many bytes of the refused head hyper held.
fn refused_request_error(e: &hyper::Error, unparsed_head: usize) -> Option<Error> {
    if e.is_parse_too_large() {
        // hyper's public API does not tell an over-long request-target from an over-long head
        // or from too many header fields; its message tells the first ("URI too long" vs
        // "message head is too large"), and a head refused before it reached the size limit
        // had too many fields.
        return Some(if e.to_string().contains("URI") {
            Error::with_message(
                ErrorCode::HttpUriTooLong,
                format!("request-URI exceeds the maximum of {MAX_URI_BYTES} bytes"),
            )
        } else if unparsed_head < MAX_HEAD_BYTES {
            Error::with_message(
                ErrorCode::HttpRequestHeaderFieldsTooLarge,
                format!("request has more than {MAX_HEADER_FIELDS} header fields"),
            )
        } else {
            Error::with_message(
                ErrorCode::HttpRequestHeaderFieldsTooLarge,
                format!("request headers exceed the maximum of {MAX_HEAD_BYTES} bytes"),
            )
        });
    }
    if e.is_parse() {
        return Some(Error::with_message(
            ErrorCode::HttpBadParameter,
            format!("malformed HTTP request: {e}"),
        ));
    }
    None
}

/// The bytes of a closing response carrying `err`'s envelope, with the common headers.
fn refused_response_bytes(err: &Error) -> Vec<u8> {
    let body = err.to_envelope().to_string();
    let status = StatusCode::from_u16(err.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    let mut out = Vec::with_capacity(body.len() + 640);
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("Error").as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in STATIC_HEADERS {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"connection: Close\r\ncontent-type: ");
    out.extend_from_slice(crate::JSON_CONTENT_TYPE.as_bytes());
    out.extend_from_slice(format!("\r\ncontent-length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body.as_bytes());
    out
}

/// Writes the answer to a refused request and closes the connection. Bounded: at most 5 s and
/// 4 MiB of further input, which is read and discarded after our FIN, because closing a socket
/// with unread input sends a reset that can make the client drop the answer unread.
async fn answer_refused<S>(mut stream: S, err: &Error)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::AsyncReadExt;
    let bytes = refused_response_bytes(err);
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        stream.write_all(&bytes).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 8192];
        let mut drained = 0usize;
        while drained < 4 << 20 {
            let n = stream.read(&mut sink).await?;
            if n == 0 {
                break;
            }
            drained += n;
        }
        Ok::<_, std::io::Error>(())
    })
    .await;
}

/// Where a request's handler runs: most routes are cheap and run inline on the tokio worker;
/// some may run long and must not stall the other connections of that worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    Inline,
    /// On the blocking pool: bulk routes (batch, import, large bodies, DDL) whose cost is
    /// known to be high, where a thread hop is negligible.
    BlockingPool,
    /// In place on the worker after handing the worker's other tasks to another thread
    /// (`block_in_place`). For AQL: most queries take microseconds, and a blocking-pool hop
    /// (two thread wake-ups) cost 3-4x a `RETURN 1` round trip, yet a long query must not hold
    /// up the connections queued behind it on this worker.
    InPlace,
}

fn placement(req: &Request) -> Placement {
    if req.body.len() > 64 * 1024 {
        return Placement::BlockingPool;
    }
    match req.segments.get(1) {
        // A batch of small operations takes a fraction of a millisecond: the blocking-pool
        // hop (two thread wake-ups per request) was a measurable share of a 64-insert batch
        // at concurrency 1, and in place the worker's other connections still move on.
        Some("cursor" | "query" | "explain" | "batch") => Placement::InPlace,
        Some("import" | "transaction") => Placement::BlockingPool,
        // Password hashing (Argon2) takes milliseconds: user changes and logins.
        Some("user" | "auth") if req.method != Method::GET => Placement::BlockingPool,
        Some("collection") | Some("database") if req.method != Method::GET => {
            Placement::BlockingPool
        }
        // Creating a unique index scans the collection; an edge lookup may build the edge
        // index.
        Some("index") if req.method != Method::GET => Placement::BlockingPool,
        Some("edges") => Placement::BlockingPool,
        // Graph changes create and drop collections (catalog fsyncs); removing a vertex may
        // build edge indexes.
        Some("gharial") if req.method != Method::GET => Placement::BlockingPool,
        Some("document") if req.body.first() == Some(&b'[') => Placement::BlockingPool,
        _ => Placement::Inline,
    }
}

async fn answer(
    state: &Arc<ServerState>,
    req: hyper::Request<Incoming>,
    peer: Option<std::net::IpAddr>,
) -> hyper::Response<Full<Bytes>> {
    let started = std::time::Instant::now();
    let (parts, body) = req.into_parts();
    let cors = CorsRequest::from_headers(parts.method == Method::OPTIONS, &parts.headers);
    let mut close = wants_close(&parts);
    let method = parts.method.clone();
    let response = match read_request(state, parts, body).await {
        Ok(mut request) => {
            request.peer = peer;
            // A request without a body was read with its head: no second clock read.
            let read = if request.body.is_empty() {
                started
            } else {
                std::time::Instant::now()
            };
            request.received = Some(read);
            let received_bytes = request.body.len();
            let logged = crate::log::request_log::RequestLine::start(
                &request,
                state.config.log.structured(),
            );
            let response = dispatch(state, request).await;
            let handled = std::time::Instant::now();
            // Only a write waiting for its sync takes time to settle.
            let waits = response.waits_for_durability();
            let response = response.settle().await;
            let finished = if waits {
                std::time::Instant::now()
            } else {
                handled
            };
            let sent_bytes = response.body.len();
            if let Some(line) = logged {
                line.finish(response.status, started);
            }
            state.statistics.answered(
                &method,
                received_bytes,
                sent_bytes,
                [started, read, handled, finished],
            );
            let mut out = to_hyper(response, close);
            if let Some(cors) = &cors {
                cors.add_headers(out.headers_mut(), &state.config.trusted_origins);
            }
            return out;
        }
        Err(RequestError::Refused(err)) => Response::from(err),
        Err(RequestError::Unreadable(err)) => {
            // The body's framing is broken or it stalled: the next request cannot be found.
            close = true;
            Response::from(err)
        }
    };
    let now = std::time::Instant::now();
    let sent_bytes = response.body.len();
    state
        .statistics
        .answered(&method, 0, sent_bytes, [started, now, now, now]);
    let mut out = to_hyper(response, close);
    if let Some(cors) = cors {
        cors.without_preflight()
            .add_headers(out.headers_mut(), &state.config.trusted_origins);
    }
    out
}

/// Whether the client asked to close the connection after this request (`Connection: close`,
/// or HTTP/1.0 without `Connection: keep-alive`).
fn wants_close(parts: &http::request::Parts) -> bool {
    // Drivers send `Connection: Keep-Alive` with every request: compared in place rather than
    // through a lower-cased copy.
    let contains = |value: &[u8], token: &[u8]| {
        value
            .windows(token.len())
            .any(|w| w.eq_ignore_ascii_case(token))
    };
    match parts.headers.get(header::CONNECTION).map(|v| v.as_bytes()) {
        Some(v) if contains(v, b"close") => true,
        Some(v) if contains(v, b"keep-alive") => false,
        _ => parts.version == http::Version::HTTP_10,
    }
}

async fn dispatch(state: &Arc<ServerState>, request: Request) -> Response {
    let placement = placement(&request);
    if placement == Placement::Inline {
        // Run right here: no queue to wait in, so no clock read for the queue time.
        let mut request = request;
        request.received = None;
        state.statistics.dispatched(std::time::Duration::ZERO);
        return guarded(state, request);
    }
    let multi_thread = tokio::runtime::Handle::current().runtime_flavor()
        == tokio::runtime::RuntimeFlavor::MultiThread;
    let state = Arc::clone(state);
    match placement {
        Placement::Inline => guarded(&state, request),
        // Queries known to finish in microseconds skip the hand-off below.
        Placement::InPlace if request.segments.get(1).is_some_and(|s| s == "cursor") => {
            // The inline path skips `handle`: admit the request here (handle re-checks it).
            let mut request = request;
            if let Some(refused) = crate::access::admit(&state, &mut request) {
                return refused;
            }
            match guarded_inline(&state, &request) {
                Inline::Answered(response) => {
                    state.ownership.record(&request, &response);
                    response
                }
                // Recent runs of this query text were brief: run it right here, and should this
                // run take longer, free the worker from inside the query (`block_in_place` with
                // nothing to do hands the worker's other connections to another thread; the
                // query goes on on this one).
                Inline::Brief if multi_thread => {
                    request.handoff = Some(Arc::new(Handoff::new(BRIEF_RUN, || {
                        tokio::task::block_in_place(|| {})
                    })));
                    guarded(&state, request)
                }
                _ if multi_thread => tokio::task::block_in_place(|| guarded(&state, request)),
                _ => {
                    let joined = tokio::task::spawn_blocking(move || {
                        guarded(&state, request).settle_blocking()
                    })
                    .await;
                    joined.unwrap_or_else(|_| Error::new(ErrorCode::Internal).into())
                }
            }
        }
        // block_in_place needs the multi-threaded runtime; elsewhere (tests on a
        // current-thread runtime) fall back to the blocking pool.
        Placement::InPlace if multi_thread => {
            tokio::task::block_in_place(|| guarded(&state, request))
        }
        Placement::InPlace | Placement::BlockingPool => {
            let joined =
                tokio::task::spawn_blocking(move || guarded(&state, request).settle_blocking())
                    .await;
            joined.unwrap_or_else(|_| Error::new(ErrorCode::Internal).into())
        }
    }
}

/// [`crate::api::cursor::try_inline`] under the same panic guard as [`guarded`].
fn guarded_inline(state: &ServerState, request: &Request) -> Inline {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::api::cursor::try_inline(state, request)
    }))
    .unwrap_or_else(|_| {
        Inline::Answered(Error::with_message(ErrorCode::Internal, "handler panicked").into())
    })
}

/// A handler bug must cost one request a 500, not the connection or the process.
fn guarded(state: &ServerState, request: Request) -> Response {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::handle(state, request)
    }))
    .unwrap_or_else(|_| Error::with_message(ErrorCode::Internal, "handler panicked").into())
}

/// Why a request was not handed to the dispatcher.
enum RequestError {
    /// Refused (too large, bad encoding, URI too long); the connection can go on.
    Refused(Error),
    /// Its body could not be read to the end (broken chunked framing, a stall longer than
    /// the body timeout): answered, then the connection is closed.
    Unreadable(Error),
}

impl From<Error> for RequestError {
    fn from(err: Error) -> RequestError {
        RequestError::Refused(err)
    }
}

async fn read_request(
    state: &ServerState,
    parts: http::request::Parts,
    mut body: Incoming,
) -> Result<Request, RequestError> {
    let limit = state.config.max_body_size;
    let http2 = parts.version == http::Version::HTTP_2;
    let too_large = |body: Incoming| {
        if http2 {
            drain_refused_body(body);
        }
        Error::with_message(
            ErrorCode::HttpRequestTooLarge,
            format!("request body exceeds the maximum of {limit} bytes"),
        )
    };
    // hyper has parsed `Content-Length` into the body's size hint (exact for such bodies,
    // no lower bound for chunked ones, which `Limited` bounds while reading).
    if hyper::body::Body::size_hint(&body).lower() > limit as u64 {
        return Err(too_large(body).into());
    }
    let stall = state.config.http_timeouts.request_body;
    let collected = read_body(Limited::new(&mut body, limit), stall).await;
    let mut bytes = match collected {
        Ok(b) => b,
        Err(BodyError::Stalled) => {
            return Err(RequestError::Unreadable(Error::with_message(
                ErrorCode::HttpRequestTimeout,
                format!(
                    "request body stalled for more than {} s",
                    stall.as_secs_f64()
                ),
            )));
        }
        Err(BodyError::Read(e)) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                return Err(too_large(body).into());
            }
            return Err(RequestError::Unreadable(Error::with_message(
                ErrorCode::HttpBadParameter,
                format!("cannot read request body: {e}"),
            )));
        }
    };
    let mut headers = parts.headers;
    let encoding = if bytes.is_empty() {
        None
    } else {
        headers
            .get(header::CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.trim().to_ascii_lowercase())
    };
    if let Some(encoding) = encoding {
        if encoding != "identity" {
            bytes = decompress(&encoding, &bytes, limit)?;
            headers.remove(header::CONTENT_ENCODING);
        }
    }
    let target = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    if target.len() > MAX_URI_BYTES {
        return Err(Error::with_message(
            ErrorCode::HttpUriTooLong,
            format!("request-URI exceeds the maximum of {MAX_URI_BYTES} bytes"),
        )
        .into());
    }
    Ok(Request::new(parts.method, target, headers, bytes)?)
}

/// How much of a refused HTTP/2 request body is read and discarded, at most, and for how long.
const DRAIN_BYTES: usize = 1024 * 1024;
const DRAIN_WAIT: Duration = Duration::from_secs(5);

/// Keeps reading (and discarding) the body of an HTTP/2 request that was refused with 413
/// while the answer goes out. Dropping an unfinished HTTP/2 request body before the response
/// is sent resets the stream with CANCEL, and clients then report a stream error instead of the
/// 413; once the answer is out, a body dropped unfinished ends the stream with NO_ERROR, which
/// clients accept (RFC 9113 §8.1). Bounded by [`DRAIN_BYTES`] and [`DRAIN_WAIT`].
fn drain_refused_body(mut body: Incoming) {
    tokio::spawn(async move {
        let drain = async {
            let mut drained = 0usize;
            while drained <= DRAIN_BYTES {
                match body.frame().await {
                    Some(Ok(frame)) => {
                        drained += frame.data_ref().map_or(0, |d| d.len());
                    }
                    _ => break,
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_WAIT, drain).await;
    });
}

/// Reads a request body to its end. Unlike `BodyExt::collect`, this stops as soon as the body
/// says it is complete (all `Content-Length` bytes received) instead of polling once more for
/// the end-of-stream signal: hyper sends that signal only after the handler's task has
/// returned `Pending`, and waking the task for it re-queues it as a yield, which tokio answers
/// by waking a second worker thread. For a small POST that doubled the server's CPU time per
/// request (two extra context switches).
///
/// `stall` bounds the wait for each piece of the body (zero: no bound).
async fn read_body<B>(body: B, stall: Duration) -> Result<Bytes, BodyError<B::Error>>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
{
    let mut body = body;
    let mut first: Option<Bytes> = None;
    let mut rest: Vec<u8> = Vec::new();
    while !body.is_end_stream() {
        // `timeout` polls the read first and arms its timer only when the read has to wait.
        let next = if stall.is_zero() {
            body.frame().await
        } else {
            tokio::time::timeout(stall, body.frame())
                .await
                .map_err(|_| BodyError::Stalled)?
        };
        let Some(frame) = next else {
            break;
        };
        let Ok(data) = frame.map_err(BodyError::Read)?.into_data() else {
            continue; // trailers
        };
        match &first {
            None => first = Some(data),
            Some(f) => {
                if rest.is_empty() {
                    rest.extend_from_slice(f);
                }
                rest.extend_from_slice(&data);
            }
        }
    }
    Ok(if rest.is_empty() {
        first.unwrap_or_default()
    } else {
        Bytes::from(rest)
    })
}

/// Why [`read_body`] stopped before the end of the body.
enum BodyError<E> {
    /// The body's own error (framing, size limit, connection).
    Read(E),
    /// No piece of the body arrived within the body timeout.
    Stalled,
}

/// Inflates a `gzip` or `deflate` body, refusing to produce more than `limit` bytes (a
/// small compressed body must not be able to exhaust memory).
pub fn decompress(encoding: &str, data: &[u8], limit: usize) -> Result<Bytes, Error> {
    let mut out = Vec::new();
    let cap = limit as u64 + 1;
    let result = match encoding {
        "gzip" | "x-gzip" => flate2::read::MultiGzDecoder::new(data)
            .take(cap)
            .read_to_end(&mut out),
        "deflate" => {
            // HTTP's "deflate" is zlib-wrapped, but some clients send raw deflate.
            let zlib = flate2::read::ZlibDecoder::new(data)
                .take(cap)
                .read_to_end(&mut out);
            if zlib.is_err() {
                out.clear();
                flate2::read::DeflateDecoder::new(data)
                    .take(cap)
                    .read_to_end(&mut out)
            } else {
                zlib
            }
        }
        other => {
            return Err(Error::with_message(
                ErrorCode::HttpBadParameter,
                format!("unsupported content-encoding '{other}'"),
            ))
        }
    };
    if let Err(e) = result {
        return Err(Error::with_message(
            ErrorCode::HttpBadParameter,
            format!("cannot decompress request body: {e}"),
        ));
    }
    if out.len() > limit {
        return Err(Error::with_message(
            ErrorCode::HttpRequestTooLarge,
            format!("decompressed request body exceeds the maximum of {limit} bytes"),
        ));
    }
    Ok(Bytes::from(out))
}

fn to_hyper(response: Response, close: bool) -> hyper::Response<Full<Bytes>> {
    let is_json = response
        .content_type
        .as_ref()
        .is_some_and(|ct| ct.as_bytes().starts_with(b"application/json"));
    let body = if is_json {
        crate::response::escape_non_ascii(response.body)
    } else {
        response.body
    };
    let mut out = hyper::Response::new(Full::new(body));
    *out.status_mut() = response.status;
    let headers = out.headers_mut();
    *headers = header_template().clone();
    if close {
        headers.insert(header::CONNECTION, HeaderValue::from_static("Close"));
    }
    // hyper omits the body of a HEAD response itself but keeps its length; a 304 has no type.
    match response.content_type {
        _ if response.status == StatusCode::NOT_MODIFIED => {
            headers.remove(header::CONTENT_TYPE);
        }
        Some(ct) if ct == crate::JSON_CONTENT_TYPE => {}
        Some(ct) => {
            headers.insert(header::CONTENT_TYPE, ct);
        }
        None => {
            headers.remove(header::CONTENT_TYPE);
        }
    }
    // A response's own Cache-Control (or Pragma, Expires) replaces the template's.
    for (name, _) in &response.headers {
        if STATIC_HEADERS.iter().any(|(n, _)| name == *n) {
            headers.remove(name);
        }
    }
    for (name, value) in response.headers {
        headers.append(name, value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn responses_carry_the_common_headers_once_and_their_own() {
        let response = Response::json_bytes(201, "{}")
            .with_header(header::ETAG, "\"_abc\"")
            .with_header(header::LOCATION, "/_db/_system/_api/document/c/1");
        let out = to_hyper(response, false);
        let headers = out.headers();
        for (name, value) in STATIC_HEADERS {
            assert_eq!(headers.get_all(*name).iter().count(), 1, "{name}");
            assert_eq!(headers[*name], *value);
        }
        assert_eq!(headers[header::CONNECTION], "Keep-Alive");
        assert_eq!(headers[header::CONTENT_TYPE], crate::JSON_CONTENT_TYPE);
        assert_eq!(headers[header::ETAG], "\"_abc\"");
        assert_eq!(headers[header::LOCATION], "/_db/_system/_api/document/c/1");
        assert_eq!(out.status(), StatusCode::CREATED);

        // The shared template is not changed by what one response adds or replaces.
        let closing = to_hyper(Response::empty(204), true);
        assert_eq!(closing.headers()[header::CONNECTION], "Close");
        assert_eq!(
            closing.headers().get_all(header::CONNECTION).iter().count(),
            1
        );
        assert!(closing.headers().get(header::ETAG).is_none());
        let again = to_hyper(Response::empty(204), false);
        assert_eq!(again.headers()[header::CONNECTION], "Keep-Alive");
        assert!(again.headers().get(header::CONTENT_TYPE).is_none());

        // Other types replace the template's JSON type; a 304 carries none.
        let mut text = Response::empty(200);
        text.content_type = Some(HeaderValue::from_static("text/plain"));
        let text = to_hyper(text, false);
        assert_eq!(text.headers()[header::CONTENT_TYPE], "text/plain");
        assert_eq!(
            text.headers().get_all(header::CONTENT_TYPE).iter().count(),
            1
        );
        let mut not_modified = Response::json_bytes(304, "");
        not_modified
            .headers
            .push((header::ETAG, HeaderValue::from_static("\"_x\"")));
        let not_modified = to_hyper(not_modified, false);
        assert!(not_modified.headers().get(header::CONTENT_TYPE).is_none());
        assert_eq!(not_modified.headers()[header::ETAG], "\"_x\"");
        // The common headers come first, in ArangoDB's order, then the response's own.
        let names: Vec<&str> = out.headers().keys().map(|n| n.as_str()).collect();
        let expected: Vec<&str> = STATIC_HEADERS
            .iter()
            .map(|(n, _)| *n)
            .chain(["connection", "content-type", "etag", "location"])
            .collect();
        assert_eq!(names, expected);
    }

    #[test]
    fn connection_header_decides_close_case_insensitively() {
        let parts = |version, connection: Option<&str>| {
            let mut builder = http::Request::builder().version(version);
            if let Some(c) = connection {
                builder = builder.header(header::CONNECTION, c);
            }
            builder.body(()).unwrap().into_parts().0
        };
        const HTTP_10: http::Version = http::Version::HTTP_10;
        const HTTP_11: http::Version = http::Version::HTTP_11;
        assert!(!wants_close(&parts(HTTP_11, None)));
        assert!(wants_close(&parts(HTTP_10, None)));
        assert!(wants_close(&parts(HTTP_11, Some("Close"))));
        assert!(wants_close(&parts(HTTP_11, Some("TE, close"))));
        assert!(!wants_close(&parts(HTTP_10, Some("Keep-Alive"))));
        assert!(!wants_close(&parts(HTTP_11, Some("keep-alive"))));
        assert!(!wants_close(&parts(HTTP_11, Some("clos"))));
        assert!(wants_close(&parts(HTTP_10, Some("upgrade"))));
    }

    #[test]
    fn gzip_and_deflate_round_trip_and_limits() {
        let payload = br#"{"a":1}"#.repeat(100);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&payload).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(&decompress("gzip", &gz, 1 << 20).unwrap()[..], &payload[..]);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&payload).unwrap();
        let z = z.finish().unwrap();
        assert_eq!(
            &decompress("deflate", &z, 1 << 20).unwrap()[..],
            &payload[..]
        );
        let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        raw.write_all(&payload).unwrap();
        let raw = raw.finish().unwrap();
        assert_eq!(
            &decompress("deflate", &raw, 1 << 20).unwrap()[..],
            &payload[..]
        );
        let err = decompress("gzip", &gz, 10).unwrap_err();
        assert_eq!(err.code, ErrorCode::HttpRequestTooLarge);
        assert_eq!(
            decompress("gzip", b"garbage", 100).unwrap_err().code,
            ErrorCode::HttpBadParameter
        );
        assert!(decompress("br", b"x", 100).is_err());
    }
}
