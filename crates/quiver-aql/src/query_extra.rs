//! What a finished query reports beside its rows (a cursor's `extra`): its warnings, its
//! statistics and, when profiled, its stage timings and plan. Typed values; the HTTP layer
//! writes them as ArangoDB's JSON (`quiver-server/src/api/cursor/response.rs`).

use serde_json::Value;

use crate::exec::Stats;
use crate::explain;
use crate::plan::QueryPlan;
use crate::value::Warning;

/// A finished query's warnings, statistics and profile.
#[derive(Clone, Debug, Default)]
pub struct QueryExtra {
    pub warnings: Vec<Warning>,
    pub stats: QueryStatistics,
    /// Stage timings, for a query run with `profile` 1 or more.
    pub profile: Option<ProfileTimings>,
    /// The plan the query ran, in the explain format ([`explain::plan_json`]), for a query
    /// run with `profile` 1 or more.
    pub plan: Option<Value>,
}

/// The counters of a finished query (`extra.stats`).
#[derive(Clone, Debug, Default)]
pub struct QueryStatistics {
    pub writes_executed: u64,
    pub writes_ignored: u64,
    pub document_lookups: u64,
    pub scanned_full: u64,
    pub scanned_index: u64,
    pub filtered: u64,
    /// Seconds from parsing to the end of execution.
    pub execution_time: f64,
    pub peak_memory: u64,
    /// The number of rows before the last `LIMIT`, when `fullCount` was asked for.
    pub full_count: Option<u64>,
    /// Per-node counters in the explain format ([`explain::node_stats_json`]), at `profile`
    /// 2.
    pub nodes: Option<Vec<Value>>,
    /// Seconds spent in each optimizer rule that ran, at `profile` 2.
    pub rules: Option<Vec<(String, f64)>>,
}

impl QueryStatistics {
    /// The statistics of a run: `full_count` when it was asked for (0 if no `LIMIT` counted
    /// it), per-node counters and rule timings of `plan` at `profile` 2.
    pub fn of_run(
        stats: &Stats,
        execution_time: f64,
        full_count: bool,
        plan: Option<&QueryPlan>,
        profile: u8,
    ) -> QueryStatistics {
        let profiled = plan.filter(|_| profile >= 2);
        QueryStatistics {
            writes_executed: stats.writes_executed,
            writes_ignored: stats.writes_ignored,
            document_lookups: stats.document_lookups,
            scanned_full: stats.scanned_full,
            scanned_index: stats.scanned_index,
            filtered: stats.filtered,
            execution_time,
            peak_memory: stats.peak_memory,
            full_count: full_count.then(|| stats.full_count.unwrap_or(0)),
            nodes: profiled.map(|p| explain::node_stats_json(&p.root, &stats.nodes)),
            rules: profiled.map(|p| owned_rule_seconds(&p.rule_seconds)),
        }
    }
}

/// Seconds spent in the stages of a query (`extra.profile`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProfileTimings {
    pub parsing: f64,
    pub optimizing: f64,
    pub executing: f64,
}

/// A plan's seconds per optimizer rule with owned names, as profiles and explains report them.
pub(crate) fn owned_rule_seconds(rule_seconds: &[(&'static str, f64)]) -> Vec<(String, f64)> {
    rule_seconds
        .iter()
        .map(|(rule, seconds)| (rule.to_string(), *seconds))
        .collect()
}
