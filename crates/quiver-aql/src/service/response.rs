//! The JSON of cursor responses that is the same for every batch kind: `extra.warnings`,
//! `extra.stats`, `extra.profile`, and the single-batch body the inline path writes as bytes.

use serde_json::{json, Map, Value};

use crate::exec::Stats;
use crate::explain;
use crate::plan::QueryPlan;
use crate::value::Warning;

pub(super) fn warnings_json(warnings: &[Warning]) -> Value {
    Value::Array(warnings.iter().map(Warning::to_json).collect())
}

/// `stats.rules` of a profile at level 2: seconds spent in each optimizer rule that ran.
pub(super) fn rule_seconds_json(plan: &QueryPlan) -> Value {
    Value::Object(
        plan.rule_seconds
            .iter()
            .map(|(name, secs)| (name.clone(), json!(secs)))
            .collect(),
    )
}

pub(super) fn stats_json(
    stats: &Stats,
    execution_time: f64,
    full_count: bool,
    plan: Option<&QueryPlan>,
    profile: u8,
) -> Value {
    // Sized up front: this map is built for every query and rehashing showed in profiles.
    let mut m = Map::with_capacity(17);
    let entries: [(&str, Value); 15] = [
        ("writesExecuted", stats.writes_executed.into()),
        ("writesIgnored", stats.writes_ignored.into()),
        ("documentLookups", stats.document_lookups.into()),
        ("seeks", 0.into()),
        ("scannedFull", stats.scanned_full.into()),
        ("scannedIndex", stats.scanned_index.into()),
        ("cursorsCreated", 0.into()),
        ("cursorsRearmed", 0.into()),
        ("cacheHits", 0.into()),
        ("cacheMisses", 0.into()),
        ("filtered", stats.filtered.into()),
        ("httpRequests", 0.into()),
        ("executionTime", execution_time.max(1e-6).into()),
        ("peakMemoryUsage", stats.peak_memory.into()),
        ("intermediateCommits", 0.into()),
    ];
    for (k, v) in entries {
        m.insert(k.to_string(), v);
    }
    if full_count {
        m.insert("fullCount".into(), json!(stats.full_count.unwrap_or(0)));
    }
    if profile >= 2 {
        if let Some(p) = plan {
            m.insert(
                "nodes".into(),
                Value::Array(explain::node_stats_json(&p.root, &stats.nodes)),
            );
            m.insert("rules".into(), rule_seconds_json(p));
        }
    }
    Value::Object(m)
}

/// The response body of a finished query whose results fit one batch, written directly: the
/// same JSON (member order included) that the general path builds as a `Value`, without
/// building it. The constant members of `extra.stats` are one literal.
pub(super) fn single_batch_body(
    results: &[Value],
    count: bool,
    warnings: &[Warning],
    stats: &Stats,
    execution_time: f64,
    full_count: bool,
) -> Vec<u8> {
    use std::io::Write as _;
    let mut out: Vec<u8> = Vec::with_capacity(320 + results.len() * 8);
    out.extend_from_slice(b"{\"result\":");
    // Writing JSON values into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, results);
    out.extend_from_slice(b",\"hasMore\":false");
    if count {
        let _ = write!(out, ",\"count\":{}", results.len());
    }
    out.extend_from_slice(b",\"extra\":{\"warnings\":");
    if warnings.is_empty() {
        out.extend_from_slice(b"[]");
    } else {
        let _ = serde_json::to_writer(&mut out, &warnings_json(warnings));
    }
    let _ = write!(
        out,
        ",\"stats\":{{\"writesExecuted\":{},\"writesIgnored\":{},\"documentLookups\":{},\"seeks\":0,\"scannedFull\":{},\"scannedIndex\":{},\"cursorsCreated\":0,\"cursorsRearmed\":0,\"cacheHits\":0,\"cacheMisses\":0,\"filtered\":{},\"httpRequests\":0,\"executionTime\":",
        stats.writes_executed,
        stats.writes_ignored,
        stats.document_lookups,
        stats.scanned_full,
        stats.scanned_index,
        stats.filtered,
    );
    let _ = serde_json::to_writer(&mut out, &execution_time.max(1e-6));
    let _ = write!(
        out,
        ",\"peakMemoryUsage\":{},\"intermediateCommits\":0",
        stats.peak_memory
    );
    if full_count {
        let _ = write!(out, ",\"fullCount\":{}", stats.full_count.unwrap_or(0));
    }
    out.extend_from_slice(b"}},\"cached\":false,\"error\":false,\"code\":201}");
    out
}

/// Stage timings of `extra.profile`.
pub(super) struct ProfileTimings {
    pub(super) parsing: f64,
    pub(super) optimizing: f64,
    pub(super) executing: f64,
}

impl ProfileTimings {
    pub(super) fn json(&self) -> Value {
        let tiny = 1e-6;
        json!({
            "initializing": tiny,
            "parsing": self.parsing.max(tiny),
            "optimizing ast": tiny,
            "loading collections": tiny,
            "instantiating plan": tiny,
            "optimizing plan": self.optimizing.max(tiny),
            "instantiating executors": tiny,
            "executing": self.executing.max(tiny),
            "finalizing": tiny,
        })
    }
}
