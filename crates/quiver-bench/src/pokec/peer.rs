//! The adapter interface of the benchmark harness: what every database under test provides
//! (the 2018 harness's `description.js` per database). The runner in [`super::workload`]
//! owns the jobs, the concurrency, the timing and the verification; an adapter only says how
//! one job is sent to its database through that database's own driver. Adding a database is
//! one file implementing [`Peer`] and [`Connection`].

use std::future::Future;

use quiver_errors::Error;
use serde_json::Value;

/// One operation of a workload, in the database's neutral terms (keys are `P<n>`).
#[derive(Clone, Debug)]
pub enum Job {
    /// Fetch one profile by key.
    Read(String),
    /// Insert write body number `i` into the write target.
    Write(usize),
    /// Count profiles per `AGE` over the whole collection.
    Aggregate,
    /// Distinct direct outbound neighbours of a profile (their keys or ids).
    Neighbors(String),
    /// Distinct outbound neighbours at depth 1..2, the start excluded.
    Neighbors2(String),
    /// As `Neighbors2`, returning whole profiles.
    Neighbors2Data(String),
    /// Unweighted outbound shortest path between two profiles.
    Shortest(String, String),
}

/// What one job returned, for the verification against the generator's expected results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// Rows returned: profiles found, neighbours, or the vertices of a path (0: no path).
    pub rows: u64,
    /// Sum of the counts of aggregation rows.
    pub amounts: u64,
}

/// A database under test: connection factory and the untimed setup steps around workloads.
pub trait Peer: Send + Sync + 'static {
    type Connection: Connection;

    /// The name in reports (`quiver`, `postgresql-tabular`, …).
    fn name(&self) -> String;

    /// Opens one client connection (or session); the runner opens as many as its concurrency,
    /// before it starts the clock. The connection must be open when this returns (a driver
    /// that connects on first use is made to connect here), so that no database's timed
    /// window holds its connection set-up.
    fn connect(&self) -> impl Future<Output = Result<Self::Connection, Error>> + Send;

    /// The database-specific part of the warmup after the aggregation and before the 1,000
    /// reads (ArangoDB: load the edge index into memory; PostgreSQL: scan the relations).
    fn warm_up(&self) -> impl Future<Output = Result<(), Error>> + Send;

    /// Drops and creates the write target (`profiles_temp`), durable when `sync`.
    fn recreate_write_target(&self, sync: bool) -> impl Future<Output = Result<(), Error>> + Send;

    /// How many documents the write target holds.
    fn count_write_target(&self) -> impl Future<Output = Result<u64, Error>> + Send;

    /// Versions and settings worth recording in the report.
    fn describe(&self) -> impl Future<Output = Value> + Send;
}

/// One client connection of a [`Peer`]; used by one task at a time.
pub trait Connection: Send + 'static {
    /// Sends one job and waits for its whole answer. `bodies` are the write bodies (profile
    /// documents), serialized by the adapter per insert as the drivers of the 2018 harness did.
    /// A database that cannot run a job answers `ErrorCode::NotImplemented`.
    fn run(
        &mut self,
        job: &Job,
        bodies: &[Value],
        sync: bool,
    ) -> impl Future<Output = Result<Answer, Error>> + Send;
}
