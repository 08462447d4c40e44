//! What ends a query early: its kill flag (`DELETE /_api/query/{id}`), its `maxRuntime`
//! deadline and its memory limit. The executor checks them while rows are pulled; the
//! parser, planner and optimizer check the kill flag and the deadline in their loops over
//! statements and nodes, so that a query too big to prepare in time fails like one too slow
//! to run. As in ArangoDB, running out of `maxRuntime` is being killed: error 1500
//! "query killed".

use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::time::Instant;

use quiver_errors::{Error, ErrorCode, Result};

/// Runtime limits of one query.
#[derive(Clone, Debug)]
pub struct Limits {
    pub deadline: Option<Instant>,
    pub killed: Arc<AtomicBool>,
    /// Bytes (estimated); 0 = the engine's default cap.
    pub memory_limit: u64,
}

/// Without an explicit `memoryLimit` a query may still not buffer more than this (estimated)
/// so that one query cannot take the server down.
pub const DEFAULT_MEMORY_CAP: u64 = 4 << 30;

impl Limits {
    /// No deadline, never killed, the default memory cap.
    pub fn unlimited() -> Limits {
        Limits {
            deadline: None,
            killed: Arc::new(AtomicBool::new(false)),
            memory_limit: 0,
        }
    }

    /// Fails with 1500 once the query was killed or ran past its `maxRuntime`.
    pub fn check(&self) -> Result<()> {
        check_limits(self)
    }
}

/// Kill flag and `maxRuntime` (also usable off the query's thread, by parallel scans).
pub fn check_limits(limits: &Limits) -> Result<()> {
    if limits.killed.load(AtomicOrdering::Relaxed) {
        return Err(Error::with_message(ErrorCode::QueryKilled, "query killed"));
    }
    if let Some(deadline) = limits.deadline {
        if Instant::now() > deadline {
            return Err(Error::with_message(ErrorCode::QueryKilled, "query killed"));
        }
    }
    Ok(())
}

pub fn memory_limit(limits: &Limits) -> u64 {
    if limits.memory_limit == 0 {
        DEFAULT_MEMORY_CAP
    } else {
        limits.memory_limit
    }
}

pub fn memory_error(limit: u64) -> Error {
    Error::with_message(
        ErrorCode::ResourceLimit,
        format!("AQL: query would use more memory than allowed (limit: {limit} bytes) (while executing)"),
    )
}
