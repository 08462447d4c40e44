//! The HTTP request and connection statistics (ArangoDB's `arangodb_http_request_statistics_*`
//! and `arangodb_client_connection_statistics_*`, and the `client`/`http` groups of
//! `/_admin/statistics`). Recorded at four points: a connection opens and closes
//! (`transport.rs`, [`ConnectionRecord`]), a request is answered (`transport.rs` `answer`,
//! [`RequestStatistics::answered`]), its caller is authenticated (`access::admit`) and it
//! reaches the dispatcher (`handle`: queue time, async requests). Every figure is a sharded
//! counter or histogram (quiver-metrics): no lock, no allocation per request.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::Method;
use quiver_metrics::{scale, Counter, Histogram};

use crate::auth::Identity;

/// The methods ArangoDB counts one by one (`other` for the rest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MethodKind {
    Delete,
    Get,
    Head,
    Options,
    Patch,
    Post,
    Put,
    Other,
}

impl MethodKind {
    /// Every kind, in the order of [`RequestStatistics::by_method`].
    pub const ALL: [MethodKind; 8] = [
        MethodKind::Delete,
        MethodKind::Get,
        MethodKind::Head,
        MethodKind::Options,
        MethodKind::Patch,
        MethodKind::Post,
        MethodKind::Put,
        MethodKind::Other,
    ];

    /// The kind of `method`.
    pub fn of(method: &Method) -> MethodKind {
        match *method {
            Method::DELETE => MethodKind::Delete,
            Method::GET => MethodKind::Get,
            Method::HEAD => MethodKind::Head,
            Method::OPTIONS => MethodKind::Options,
            Method::PATCH => MethodKind::Patch,
            Method::POST => MethodKind::Post,
            Method::PUT => MethodKind::Put,
            _ => MethodKind::Other,
        }
    }
}

/// Histograms of one caller group (ArangoDB keeps them for all requests and for user
/// requests apart; QuiverDB keeps the all-requests ones).
pub struct RequestTimes {
    /// Whole request: reading, handling, waiting for durability (seconds).
    pub total_time: Histogram,
    /// The handler, hand-offs included (seconds).
    pub request_time: Histogram,
    /// From the end of reading a request to the start of its handler (seconds).
    pub queue_time: Histogram,
    /// Reading the request body from the connection (seconds).
    pub io_time: Histogram,
    /// Request body bytes.
    pub bytes_received: Histogram,
    /// Response body bytes.
    pub bytes_sent: Histogram,
}

impl RequestTimes {
    fn new() -> RequestTimes {
        let seconds = |bounds: &[f64]| Histogram::new(bounds.to_vec(), 1e9);
        RequestTimes {
            total_time: seconds(&scale::CONNECTION_TIME),
            request_time: seconds(&scale::REQUEST_TIME),
            queue_time: seconds(&scale::REQUEST_TIME),
            io_time: seconds(&scale::REQUEST_TIME),
            bytes_received: Histogram::new(scale::BYTES_TRANSFERRED.to_vec(), 1.0),
            bytes_sent: Histogram::new(scale::BYTES_TRANSFERRED.to_vec(), 1.0),
        }
    }
}

/// The request and connection statistics of one server.
pub struct RequestStatistics {
    /// Requests answered.
    pub total: Counter,
    /// Requests whose caller was the superuser (a server JWT, or authentication off).
    pub superuser: Counter,
    /// Requests whose caller was a user.
    pub user: Counter,
    /// Requests queued with `x-arango-async`.
    pub asynchronous: Counter,
    /// Requests per method, in the order of [`MethodKind::ALL`].
    pub by_method: [Counter; 8],
    /// Times and sizes of all requests.
    pub times: RequestTimes,
    /// Connections open now.
    pub open_connections: AtomicI64,
    /// Connections accepted.
    pub connections: Counter,
    /// How long closed connections were open (seconds).
    pub connection_time: Histogram,
}

impl Default for RequestStatistics {
    fn default() -> RequestStatistics {
        RequestStatistics::new()
    }
}

impl RequestStatistics {
    /// All figures at zero.
    pub fn new() -> RequestStatistics {
        RequestStatistics {
            total: Counter::new(),
            superuser: Counter::new(),
            user: Counter::new(),
            asynchronous: Counter::new(),
            by_method: std::array::from_fn(|_| Counter::new()),
            times: RequestTimes::new(),
            open_connections: AtomicI64::new(0),
            connections: Counter::new(),
            connection_time: Histogram::new(scale::CONNECTION_TIME.to_vec(), 1e9),
        }
    }

    /// The count of one method.
    pub fn method_count(&self, kind: MethodKind) -> u64 {
        let i = MethodKind::ALL
            .iter()
            .position(|k| *k == kind)
            .expect("every kind is listed");
        self.by_method[i].get()
    }

    /// A request was answered: `started` when its head arrived, `read` when its body was
    /// read, `handled` when its handler returned, `finished` when its answer (durability
    /// included) was ready to be written. The caller reads the clock only where time can
    /// have passed (a request without a body is read at `started`, an answer without a
    /// sync to wait for is finished at `handled`).
    pub fn answered(
        &self,
        method: &Method,
        received_bytes: usize,
        sent_bytes: usize,
        [started, read, handled, finished]: [Instant; 4],
    ) {
        debug_assert!(started <= read && read <= finished && handled <= finished);
        let kind = MethodKind::of(method);
        let i = MethodKind::ALL
            .iter()
            .position(|k| *k == kind)
            .expect("every kind is listed");
        self.total.inc();
        self.by_method[i].inc();
        let t = &self.times;
        t.io_time.record_duration(read - started);
        t.request_time
            .record_duration(handled.saturating_duration_since(read));
        t.total_time.record_duration(finished - started);
        t.bytes_received.record(received_bytes as u64);
        t.bytes_sent.record(sent_bytes as u64);
    }

    /// A request reached its handler `waited` after it was read.
    pub fn dispatched(&self, waited: Duration) {
        self.times.queue_time.record_duration(waited);
    }

    /// A request's caller was authenticated.
    pub fn caller(&self, identity: &Identity) {
        match identity {
            Identity::Superuser => self.superuser.inc(),
            Identity::User(_) => self.user.inc(),
        }
    }

    /// A connection was accepted; the record counts it while it lives.
    pub fn connection_opened(self: &Arc<Self>) -> ConnectionRecord {
        self.connections.inc();
        self.open_connections.fetch_add(1, Ordering::Relaxed);
        ConnectionRecord {
            statistics: Arc::clone(self),
            opened: Instant::now(),
        }
    }
}

/// An open connection: dropped when the connection closes, however its task ends.
pub struct ConnectionRecord {
    statistics: Arc<RequestStatistics>,
    opened: Instant,
}

impl Drop for ConnectionRecord {
    fn drop(&mut self) {
        let s = &self.statistics;
        let before = s.open_connections.fetch_sub(1, Ordering::Relaxed);
        debug_assert!(before > 0, "a connection closed that was never opened");
        s.connection_time.record_duration(self.opened.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_connections_are_counted() {
        let s = Arc::new(RequestStatistics::new());
        let start = Instant::now();
        let later = start + std::time::Duration::from_millis(3);
        s.answered(&Method::GET, 10, 300, [start, start, later, later]);
        s.answered(&Method::from_bytes(b"PROPFIND").unwrap(), 0, 0, [start; 4]);
        s.caller(&Identity::Superuser);
        assert_eq!(s.total.get(), 2);
        assert_eq!(s.method_count(MethodKind::Get), 1);
        assert_eq!(s.method_count(MethodKind::Other), 1);
        assert_eq!(s.superuser.get(), 1);
        assert_eq!(s.times.bytes_sent.snapshot().counts[1], 1);
        // 3 ms from head to answer, all of it in the handler.
        assert_eq!(s.times.total_time.snapshot().sum, 0.003);
        assert_eq!(s.times.request_time.snapshot().sum, 0.003);
        assert_eq!(s.times.io_time.snapshot().sum, 0.0);
        let record = s.connection_opened();
        assert_eq!(s.open_connections.load(Ordering::Relaxed), 1);
        drop(record);
        assert_eq!(s.open_connections.load(Ordering::Relaxed), 0);
        assert_eq!(s.connection_time.snapshot().count, 1);
    }
}
