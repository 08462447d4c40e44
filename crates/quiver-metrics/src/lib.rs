//! Monitoring primitives shared by the layers that count things: counters and histograms on
//! sharded atomics ([`Counter`], [`Histogram`]), ArangoDB's histogram scales ([`scale`]),
//! and the Prometheus text exposition ([`Exposition`]) that `/_admin/metrics` answers with.
//!
//! Why not the `prometheus-client` crate: its counter is one shared atomic (every request
//! would move that cache line between the cores), and its encoder writes OpenMetrics, which
//! appends `_total` to counter names and names the family without it in `# TYPE`, while
//! ArangoDB's endpoint writes the Prometheus 0.0.4 text format with full names such as
//! `arangodb_http_request_statistics_total_requests_total` in every line. Both parts are
//! small, so they are written here for exactly that format.

mod exposition;
pub mod scale;
mod sharded;

pub use exposition::{Exposition, HistogramSnapshot};
pub use sharded::{Counter, Histogram};
