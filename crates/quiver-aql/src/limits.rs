//! What ends a query early: its kill flag (`DELETE /_api/query/{id}`), its `maxRuntime`
//! deadline and its memory limit. The executor checks them while rows are pulled; the
//! parser, planner and optimizer check the kill flag and the deadline in their loops over
//! statements and nodes, so that a query too big to prepare in time fails like one too slow
//! to run. As in ArangoDB, running out of `maxRuntime` is being killed: error 1500
//! "query killed".

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::time::Instant;

use quiver_errors::{Error, ErrorCode, Result};

use crate::handoff::Handoff;

/// Runtime limits of one query.
#[derive(Clone, Debug)]
pub struct Limits {
    pub deadline: Option<Instant>,
    pub killed: Arc<AtomicBool>,
    /// Bytes (estimated); 0 = the engine's default cap.
    pub memory_limit: u64,
    /// What all running queries hold together (`--query.global-memory-limit`).
    pub global: Option<Arc<GlobalMemory>>,
    /// Run by the first check past its budget on the calling thread (a query started on a
    /// shared thread frees it, see [`crate::handoff`]).
    pub handoff: Option<Arc<Handoff>>,
}

/// The memory (estimated bytes) all running queries hold together, against
/// `--query.global-memory-limit` (0 = no limit).
#[derive(Debug, Default)]
pub struct GlobalMemory {
    used: AtomicU64,
    limit: AtomicU64,
}

impl GlobalMemory {
    pub fn set_limit(&self, bytes: u64) {
        self.limit.store(bytes, AtomicOrdering::Relaxed);
    }

    /// Bytes held by running queries now.
    pub fn used(&self) -> u64 {
        self.used.load(AtomicOrdering::Relaxed)
    }

    /// Takes `bytes` from the budget; refused (nothing taken) when that would pass the limit.
    fn try_take(&self, bytes: u64) -> bool {
        let now = self.used.fetch_add(bytes, AtomicOrdering::Relaxed) + bytes;
        let limit = self.limit.load(AtomicOrdering::Relaxed);
        if limit > 0 && now > limit {
            self.used.fetch_sub(bytes, AtomicOrdering::Relaxed);
            return false;
        }
        true
    }

    fn limit_error(&self) -> Error {
        let limit = self.limit.load(AtomicOrdering::Relaxed);
        Error::with_message(
            ErrorCode::ResourceLimit,
            format!(
                "AQL: all running queries together would use more memory than allowed (global limit: {limit} bytes) (while executing)"
            ),
        )
    }

    fn release(&self, bytes: u64) {
        let before = self.used.fetch_sub(bytes, AtomicOrdering::Relaxed);
        debug_assert!(
            before >= bytes,
            "released more global query memory than charged"
        );
    }
}

/// Bytes a [`GlobalCharge`] takes from the [`GlobalMemory`] at a time, as ArangoDB's
/// `ResourceMonitor` moves its global counter in 32 KiB chunks: a query's many small charges
/// touch the counter every chunk instead of every row (the counter's cache line is written by
/// every core running a query; in the 2-hop neighbour profile its updates were 4 % of the
/// server's CPU).
pub const GLOBAL_CHUNK: u64 = 32 << 10;

/// One query's share of the [`GlobalMemory`]: whatever it still holds is given back when it
/// is dropped (the query ended, failed or was killed).
///
/// The share is taken from the global counter in [`GLOBAL_CHUNK`]s, so the counter includes
/// up to one chunk not yet used per running query; near the limit a charge takes exactly
/// what it needs, so no query fails while the budget still has room beyond other queries'
/// unused chunks. [`GlobalCharge::release`] gives back everything not held.
#[derive(Debug, Default)]
pub struct GlobalCharge {
    memory: Option<Arc<GlobalMemory>>,
    /// Bytes charged and not released.
    held: u64,
    /// Bytes taken from the global counter (at least `held`).
    reserved: u64,
}

impl GlobalCharge {
    pub fn new(memory: Option<Arc<GlobalMemory>>) -> GlobalCharge {
        GlobalCharge {
            memory,
            held: 0,
            reserved: 0,
        }
    }

    /// Fails with 32 when all queries together would pass the global limit.
    #[inline]
    pub fn charge(&mut self, bytes: u64) -> Result<()> {
        if self.memory.is_none() {
            return Ok(());
        }
        let held = self.held.saturating_add(bytes);
        if held > self.reserved {
            self.reserve(held - self.reserved)?;
        }
        self.held = held;
        Ok(())
    }

    /// Takes `need` more bytes from the global counter: a whole chunk when the budget has
    /// room for it, else exactly `need`.
    #[cold]
    fn reserve(&mut self, need: u64) -> Result<()> {
        let Some(memory) = &self.memory else {
            return Ok(());
        };
        let chunk = need.max(GLOBAL_CHUNK);
        if memory.try_take(chunk) {
            self.reserved += chunk;
            return Ok(());
        }
        if chunk > need && memory.try_take(need) {
            self.reserved += need;
            return Ok(());
        }
        Err(memory.limit_error())
    }

    /// Bytes this charge holds now.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Moves up to `bytes` of this charge into a charge of its own, without touching the
    /// global count: results that outlive their query (the rows a cursor keeps) stay counted
    /// against `--query.global-memory-limit` until they are given back, as in ArangoDB,
    /// where a cursor's results are part of its query's memory.
    pub fn split_off(&mut self, bytes: u64) -> GlobalCharge {
        let moved = bytes.min(self.held);
        self.held -= moved;
        self.reserved -= moved;
        GlobalCharge {
            memory: self.memory.clone(),
            held: moved,
            reserved: moved,
        }
    }

    /// Releases up to `bytes` of what is held, and gives back to the global counter all
    /// that is then not held (releases are rare: the end of a blocking node's input).
    pub fn release(&mut self, bytes: u64) {
        let bytes = bytes.min(self.held);
        self.held -= bytes;
        let unused = self.reserved - self.held;
        if let Some(memory) = &self.memory {
            memory.release(unused);
        }
        self.reserved = self.held;
    }
}

impl Drop for GlobalCharge {
    fn drop(&mut self) {
        self.release(u64::MAX);
    }
}

/// ArangoDB's default for `--query.memory-limit` (`reserve` 0.2, `share` 0.75) and
/// `--query.global-memory-limit` (0.1, 0.9) on a machine with `available` bytes of RAM:
/// keep `reserve` of the memory (at least 256 MiB) back, allow `share` of the rest, but never
/// less than a quarter of the memory; 0 (no limit) when the memory is unknown.
pub fn default_memory_limit(available: u64, reserve: f64, share: f64) -> u64 {
    if available == 0 {
        return 0;
    }
    let kept = ((available as f64) * reserve).max((256u64 << 20) as f64);
    let allowed = ((available as f64) - kept).max(0.0) * share;
    (allowed as u64).max(available / 4)
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
            global: None,
            handoff: None,
        }
    }

    /// Fails with 1500 once the query was killed or ran past its `maxRuntime`.
    pub fn check(&self) -> Result<()> {
        check_limits(self)
    }
}

/// Kill flag and `maxRuntime` (also usable off the query's thread, by parallel scans), and
/// the query's [`Handoff`] once its budget is spent.
pub fn check_limits(limits: &Limits) -> Result<()> {
    if let Some(handoff) = &limits.handoff {
        handoff.check();
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_limits_follow_arangodb_for_common_sizes() {
        const MIB: u64 = 1 << 20;
        // Per query (reserve 0.2, share 0.75), as ArangoDB documents them.
        assert_eq!(default_memory_limit(128 * MIB, 0.2, 0.75), 32 * MIB);
        assert_eq!(default_memory_limit(512 * MIB, 0.2, 0.75), 192 * MIB);
        assert_eq!(default_memory_limit(24576 * MIB, 0.2, 0.75) / MIB, 14745);
        // All queries (reserve 0.1, share 0.9).
        assert_eq!(default_memory_limit(4096 * MIB, 0.1, 0.9) / MIB, 3317);
        assert_eq!(default_memory_limit(0, 0.2, 0.75), 0);
    }

    #[test]
    fn a_split_off_charge_keeps_its_bytes_counted_until_it_is_dropped() {
        let global = Arc::new(GlobalMemory::default());
        global.set_limit(1000);
        let mut query = GlobalCharge::new(Some(global.clone()));
        query.charge(600).unwrap();
        let mut kept = query.split_off(400);
        assert_eq!((query.held(), kept.held(), global.used()), (200, 400, 600));
        // More than is held moves only what is held.
        assert_eq!(query.split_off(10_000).held(), 200);
        assert_eq!(global.used(), 400);
        drop(query);
        assert_eq!(global.used(), 400);
        kept.release(150);
        assert_eq!((kept.held(), global.used()), (250, 250));
        drop(kept);
        assert_eq!(global.used(), 0);
    }

    #[test]
    fn small_charges_take_the_global_budget_a_chunk_at_a_time() {
        let global = Arc::new(GlobalMemory::default());
        global.set_limit(GLOBAL_CHUNK * 3 / 2);
        let mut a = GlobalCharge::new(Some(global.clone()));
        a.charge(10).unwrap();
        assert_eq!((a.held(), global.used()), (10, GLOBAL_CHUNK));
        for _ in 0..99 {
            a.charge(10).unwrap();
        }
        assert_eq!((a.held(), global.used()), (1000, GLOBAL_CHUNK));
        // Near the limit another query takes exactly what it needs, and fails only past it.
        let mut b = GlobalCharge::new(Some(global.clone()));
        b.charge(GLOBAL_CHUNK / 2).unwrap();
        assert_eq!(global.used(), GLOBAL_CHUNK * 3 / 2);
        let err = b.charge(1).unwrap_err();
        assert_eq!(err.code, ErrorCode::ResourceLimit);
        assert_eq!(
            (b.held(), global.used()),
            (GLOBAL_CHUNK / 2, GLOBAL_CHUNK * 3 / 2)
        );
        // A release gives back all that is not held.
        a.release(400);
        assert_eq!(global.used(), 600 + GLOBAL_CHUNK / 2);
        drop(a);
        drop(b);
        assert_eq!(global.used(), 0);
    }

    #[test]
    fn global_memory_is_shared_and_given_back() {
        let global = Arc::new(GlobalMemory::default());
        global.set_limit(1000);
        let mut a = GlobalCharge::new(Some(global.clone()));
        let mut b = GlobalCharge::new(Some(global.clone()));
        a.charge(600).unwrap();
        let err = b.charge(500).unwrap_err();
        assert_eq!(err.code, ErrorCode::ResourceLimit);
        assert_eq!(global.used(), 600);
        b.charge(400).unwrap();
        a.release(100);
        assert_eq!(global.used(), 900);
        drop(a);
        assert_eq!(global.used(), 400);
        drop(b);
        assert_eq!(global.used(), 0);
    }
}
