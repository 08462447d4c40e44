//! What every operator of a running query shares: the transaction, the evaluation
//! environment, statistics and profile counters, and the limits (`memoryLimit`,
//! `maxRuntime`, the kill flag) checked while rows are pulled.

use std::collections::HashMap;
use std::time::Duration;

use quiver_errors::Result;
use serde_json::Value;

use super::Row;
use crate::expr::eval::{eval, EnvState, EvalEnv};
use crate::limits::GlobalCharge;
pub use crate::limits::{check_limits, memory_error, memory_limit, Limits, DEFAULT_MEMORY_CAP};
use crate::source::Transaction;
use crate::value::{estimate_size, Warning};

/// Per-node profile counters (`extra.stats.nodes` with `profile: 2`).
#[derive(Clone, Debug, Default)]
pub struct NodeStats {
    pub calls: u64,
    pub items: u64,
    pub runtime: Duration,
}

/// Query statistics as reported in `extra.stats`.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub writes_executed: u64,
    pub writes_ignored: u64,
    pub scanned_full: u64,
    pub scanned_index: u64,
    pub document_lookups: u64,
    pub filtered: u64,
    pub full_count: Option<u64>,
    pub peak_memory: u64,
    pub nodes: HashMap<usize, NodeStats>,
}

/// Shared state of one running query.
pub struct ExecCtx {
    pub txn: Box<dyn Transaction>,
    pub database: String,
    pub env: EnvState,
    pub stats: Stats,
    pub limits: Limits,
    pub memory: u64,
    pub profile: bool,
    ticks: u32,
    /// This query's share of the memory of all running queries, given back when it ends.
    global: GlobalCharge,
}

impl ExecCtx {
    pub fn new(
        txn: Box<dyn Transaction>,
        database: &str,
        env: EnvState,
        limits: Limits,
        profile: bool,
    ) -> ExecCtx {
        let mut env = env;
        env.killed = Some(limits.killed.clone());
        env.deadline = limits.deadline;
        env.memory_limit = Some(memory_limit(&limits));
        let global = GlobalCharge::new(limits.global.clone());
        ExecCtx {
            global,
            txn,
            database: database.to_string(),
            env,
            stats: Stats::default(),
            limits,
            memory: 0,
            profile,
            ticks: 0,
        }
    }

    #[inline]
    pub(super) fn eval(&mut self, e: &crate::expr::CExpr, row: &[Value]) -> Result<Value> {
        self.eval_with_current(e, row, None)
    }

    /// [`ExecCtx::eval`] with `CURRENT` bound to `current`.
    pub(super) fn eval_with_current(
        &mut self,
        e: &crate::expr::CExpr,
        row: &[Value],
        current: Option<&Value>,
    ) -> Result<Value> {
        let mut env = EvalEnv {
            txn: Some(&*self.txn),
            database: &self.database,
            state: &mut self.env,
        };
        eval(e, row, current, &mut env)
    }

    /// Kill flag and `maxRuntime`, checked every few hundred rows.
    #[inline]
    pub(super) fn check(&mut self) -> Result<()> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks % 256 != 0 {
            return Ok(());
        }
        self.check_now()
    }

    pub fn check_now(&self) -> Result<()> {
        check_limits(&self.limits)
    }

    /// Accounts `bytes` more buffered memory.
    pub fn charge(&mut self, bytes: u64) -> Result<()> {
        self.global.charge(bytes)?;
        self.memory += bytes;
        self.stats.peak_memory = self.stats.peak_memory.max(self.memory);
        let limit = memory_limit(&self.limits);
        if self.memory > limit {
            return Err(memory_error(limit));
        }
        Ok(())
    }

    /// Moves up to `bytes` of what the query holds against the global memory limit into a
    /// charge that outlives the query (the rows its cursor keeps); the query's own memory
    /// figures are unchanged.
    pub fn keep_global(&mut self, bytes: u64) -> GlobalCharge {
        self.global.split_off(bytes)
    }

    pub fn release(&mut self, bytes: u64) {
        self.global.release(bytes);
        self.memory = self.memory.saturating_sub(bytes);
    }

    pub(super) fn warn(&mut self, w: Warning) -> Result<()> {
        self.env.warn(w)
    }
}

pub(super) fn row_size(row: &Row) -> u64 {
    row.iter().map(estimate_size).sum()
}
