//! The read deadlines of one HTTP/1.1 connection: how long it may sit idle between requests
//! (`--http.keep-alive-timeout`) and how long it may take to send a request head once it has
//! begun (`--http.request-header-timeout`). Body stalls are timed where the body is read
//! (`read_body`), and a request being handled has no deadline here (a query may run long).
//!
//! The clock costs the request path two relaxed stores and a clock read per request; its
//! watcher wakes at most every half header timeout, not per request, and re-checks the
//! phase when it wakes, so a connection is closed between one and one and a half times its
//! timeout after the deadline began.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use crate::state::HttpTimeouts;

/// The shortest wait between two checks (bounds the wake-ups of very short timeouts).
const MIN_CHECK: Duration = Duration::from_millis(10);
/// The longest wait between two checks when no timeout is shorter.
const MAX_CHECK: Duration = Duration::from_secs(60);

/// Where the connection is between requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// No request in progress and nothing of the next one received.
    Idle,
    /// Bytes of a request head have arrived; the head is not complete yet.
    Head,
    /// A request is being read, handled or answered.
    Busy,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Idle,
            1 => Phase::Head,
            _ => Phase::Busy,
        }
    }
}

/// Shared by the connection's socket wrapper (bytes arrived), its service (request started,
/// answered) and its watcher ([`ConnectionClock::expired`]).
pub(super) struct ConnectionClock {
    timeouts: HttpTimeouts,
    origin: Instant,
    phase: AtomicU8,
    /// When the phase began, in nanoseconds after `origin`.
    since: AtomicU64,
}

impl ConnectionClock {
    pub(super) fn new(timeouts: HttpTimeouts) -> ConnectionClock {
        ConnectionClock {
            timeouts,
            origin: Instant::now(),
            phase: AtomicU8::new(Phase::Idle as u8),
            since: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn enter(&self, phase: Phase) {
        self.since.store(self.now(), Ordering::Relaxed);
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    /// Bytes arrived from the client: the start of a request head if none was in progress.
    pub(super) fn bytes_arrived(&self) {
        if self.phase() == Phase::Idle {
            self.enter(Phase::Head);
        }
    }

    /// A request head was parsed: no deadline while it is read, handled and answered.
    pub(super) fn request_started(&self) {
        self.phase.store(Phase::Busy as u8, Ordering::Relaxed);
    }

    /// The answer was handed to the connection: idle until the next request arrives.
    pub(super) fn request_answered(&self) {
        self.enter(Phase::Idle);
    }

    pub(super) fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Relaxed))
    }

    /// The deadline of the current phase, if it has one.
    fn deadline(&self) -> Option<Instant> {
        let limit = match self.phase() {
            Phase::Idle => self.timeouts.keep_alive,
            Phase::Head => self.timeouts.request_header,
            Phase::Busy => return None,
        };
        if limit.is_zero() {
            return None;
        }
        let since = Duration::from_nanos(self.since.load(Ordering::Relaxed));
        Some(self.origin + since + limit)
    }

    /// How long the watcher sleeps at most: a phase change can bring the deadline forward
    /// (idle to head), and the watcher only sees it when it wakes.
    fn check_interval(&self) -> Duration {
        let shortest = [self.timeouts.keep_alive, self.timeouts.request_header]
            .into_iter()
            .filter(|t| !t.is_zero())
            .min()
            .unwrap_or(MAX_CHECK);
        (shortest / 2).clamp(MIN_CHECK, MAX_CHECK)
    }

    /// Resolves with the phase whose deadline passed; never while a request is busy.
    pub(super) async fn expired(&self) -> Phase {
        loop {
            let now = Instant::now();
            let next_check = now + self.check_interval();
            let wake = self.deadline().map_or(next_check, |d| d.min(next_check));
            tokio::time::sleep_until(wake).await;
            if self.deadline().is_some_and(|d| Instant::now() >= d) {
                return self.phase();
            }
        }
    }
}

/// A connection's socket that tells its clock when bytes arrive.
pub(super) struct Watched<S> {
    pub(super) inner: S,
    clock: Arc<ConnectionClock>,
}

impl<S> Watched<S> {
    pub(super) fn new(inner: S, clock: Arc<ConnectionClock>) -> Watched<S> {
        Watched { inner, clock }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.clock.bytes_arrived();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeouts(keep_alive: u64, header: u64) -> HttpTimeouts {
        HttpTimeouts {
            keep_alive: Duration::from_millis(keep_alive),
            request_header: Duration::from_millis(header),
            request_body: Duration::from_secs(60),
        }
    }

    // Real time, short durations: bounds are loose for a loaded machine.

    #[tokio::test]
    async fn idle_connections_expire_after_the_keep_alive_timeout() {
        let clock = ConnectionClock::new(timeouts(300, 100));
        let started = Instant::now();
        assert_eq!(clock.expired().await, Phase::Idle);
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(waited < Duration::from_millis(1500), "{waited:?}");
    }

    #[tokio::test]
    async fn a_started_head_expires_after_the_header_timeout() {
        let clock = ConnectionClock::new(timeouts(60_000, 200));
        let started = Instant::now();
        clock.bytes_arrived();
        // More bytes do not restart the deadline: dribbling does not help.
        tokio::time::sleep(Duration::from_millis(100)).await;
        clock.bytes_arrived();
        assert_eq!(clock.expired().await, Phase::Head);
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(200), "{waited:?}");
        assert!(waited < Duration::from_millis(1500), "{waited:?}");
    }

    #[tokio::test]
    async fn busy_connections_never_expire_and_answers_restart_the_idle_clock() {
        let clock = ConnectionClock::new(timeouts(200, 50));
        clock.bytes_arrived();
        clock.request_started();
        let busy = tokio::time::timeout(Duration::from_millis(600), clock.expired()).await;
        assert!(busy.is_err(), "a busy connection expired");
        clock.request_answered();
        let started = Instant::now();
        assert_eq!(clock.expired().await, Phase::Idle);
        assert!(started.elapsed() >= Duration::from_millis(200));
    }

    #[tokio::test]
    async fn zero_turns_a_timeout_off() {
        let clock = ConnectionClock::new(timeouts(0, 0));
        let idle = tokio::time::timeout(Duration::from_millis(300), clock.expired()).await;
        assert!(idle.is_err());
        clock.bytes_arrived();
        let head = tokio::time::timeout(Duration::from_millis(300), clock.expired()).await;
        assert!(head.is_err());
    }
}
