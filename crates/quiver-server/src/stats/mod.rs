//! Observability of the running server: the request and connection statistics it records
//! ([`requests`]), the process figures it reads from the system ([`process`]), and the two
//! ways they are shown: the Prometheus page of `/_admin/metrics` ([`metrics_page`]) and the
//! JSON of `/_admin/statistics` ([`statistics_json`]); and the recent API calls and AQL
//! queries ([`recordings`]).

pub mod metrics_page;
pub mod process;
pub mod recordings;
pub mod requests;
pub mod statistics_json;

pub use recordings::{RecordingLimits, Recordings};
pub use requests::{ConnectionRecord, RequestStatistics};
