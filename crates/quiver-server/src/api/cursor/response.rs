//! The JSON body of a cursor batch, written straight into bytes from the query service's
//! typed batch ([`CursorBatch`]): `result`, `hasMore`, `id`, `nextBatchId`, `count`,
//! `extra` (`warnings`, `stats`, `profile`, `plan`), `cached`, `error`, `planCacheKey`,
//! `code`, in ArangoDB's member order. Rows that are documents as stored JSON text
//! ([`CursorBatch::raw_rows`]) are copied in verbatim, never parsed.

use std::io::Write as _;

use quiver_aql::service::{CursorBatch, ProfileTimings, QueryExtra, QueryStatistics};
use serde_json::Value;

/// The smallest time reported for a stage or a query, as ArangoDB never reports 0.
const TINY: f64 = 1e-6;

/// The response body of `batch`, with `code` (201 for a new cursor, 200 for the next batch).
pub(super) fn batch_body(batch: &CursorBatch, code: u16) -> Vec<u8> {
    let rows_len = if batch.raw_rows {
        batch
            .rows
            .iter()
            .map(|r| r.as_str().map_or(8, str::len) + 1)
            .sum::<usize>()
    } else {
        batch.rows.len() * 8
    };
    let mut out: Vec<u8> = Vec::with_capacity(320 + rows_len);
    // Writing JSON into a Vec cannot fail.
    out.extend_from_slice(b"{\"result\":");
    if batch.raw_rows {
        write_raw_rows(&mut out, &batch.rows);
    } else {
        let _ = serde_json::to_writer(&mut out, &batch.rows);
    }
    out.extend_from_slice(if batch.has_more {
        b",\"hasMore\":true"
    } else {
        b",\"hasMore\":false"
    });
    if let Some(id) = &batch.id {
        out.extend_from_slice(b",\"id\":");
        let _ = serde_json::to_writer(&mut out, id);
    }
    if let Some(next) = batch.next_batch_id {
        let _ = write!(out, ",\"nextBatchId\":\"{next}\"");
    }
    if let Some(count) = batch.count {
        let _ = write!(out, ",\"count\":{count}");
    }
    if let Some(extra) = &batch.extra {
        out.extend_from_slice(b",\"extra\":");
        write_extra(&mut out, extra);
    }
    out.extend_from_slice(if batch.cached {
        b",\"cached\":true"
    } else {
        b",\"cached\":false"
    });
    out.extend_from_slice(b",\"error\":false");
    if let Some(key) = batch.plan_cache_key {
        let _ = write!(out, ",\"planCacheKey\":\"{key}\"");
    }
    let _ = write!(out, ",\"code\":{code}}}");
    out
}

fn write_raw_rows(out: &mut Vec<u8>, rows: &[Value]) {
    out.push(b'[');
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match row {
            Value::String(text) => out.extend_from_slice(text.as_bytes()),
            other => {
                let _ = serde_json::to_writer(&mut *out, other);
            }
        }
    }
    out.push(b']');
}

/// `extra`: `{"warnings": [...], "stats": {...}}`, and `profile` and `plan` of a profiled
/// query.
fn write_extra(out: &mut Vec<u8>, extra: &QueryExtra) {
    out.extend_from_slice(b"{\"warnings\":[");
    for (i, warning) in extra.warnings.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = write!(out, "{{\"code\":{},\"message\":", warning.code.number());
        let _ = serde_json::to_writer(&mut *out, &warning.message);
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"stats\":");
    write_stats(out, &extra.stats);
    if let Some(profile) = &extra.profile {
        out.extend_from_slice(b",\"profile\":");
        write_profile(out, profile);
    }
    if let Some(plan) = &extra.plan {
        out.extend_from_slice(b",\"plan\":");
        let _ = serde_json::to_writer(&mut *out, plan);
    }
    out.push(b'}');
}

/// `extra.stats`; the counters QuiverDB has no use for (`seeks`, `cursorsCreated`, …) are
/// always 0.
fn write_stats(out: &mut Vec<u8>, stats: &QueryStatistics) {
    // Numbers through serde_json (itoa, ryu) rather than `write!`: every answer has them.
    let number = |out: &mut Vec<u8>, name: &[u8], n: u64| {
        out.extend_from_slice(name);
        let _ = serde_json::to_writer(&mut *out, &n);
    };
    number(out, b"{\"writesExecuted\":", stats.writes_executed);
    number(out, b",\"writesIgnored\":", stats.writes_ignored);
    number(out, b",\"documentLookups\":", stats.document_lookups);
    number(out, b",\"seeks\":0,\"scannedFull\":", stats.scanned_full);
    number(out, b",\"scannedIndex\":", stats.scanned_index);
    number(
        out,
        b",\"cursorsCreated\":0,\"cursorsRearmed\":0,\"cacheHits\":0,\"cacheMisses\":0,\"filtered\":",
        stats.filtered,
    );
    out.extend_from_slice(b",\"httpRequests\":0,\"executionTime\":");
    let _ = serde_json::to_writer(&mut *out, &stats.execution_time.max(TINY));
    number(out, b",\"peakMemoryUsage\":", stats.peak_memory);
    out.extend_from_slice(b",\"intermediateCommits\":0");
    if let Some(full_count) = stats.full_count {
        let _ = write!(out, ",\"fullCount\":{full_count}");
    }
    if let Some(nodes) = &stats.nodes {
        out.extend_from_slice(b",\"nodes\":");
        let _ = serde_json::to_writer(&mut *out, nodes);
    }
    if let Some(rules) = &stats.rules {
        out.extend_from_slice(b",\"rules\":{");
        for (i, (name, seconds)) in rules.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let _ = serde_json::to_writer(&mut *out, name);
            out.push(b':');
            let _ = serde_json::to_writer(&mut *out, seconds);
        }
        out.push(b'}');
    }
    out.push(b'}');
}

/// `extra.profile`: the stages QuiverDB does not time separately report the smallest time.
fn write_profile(out: &mut Vec<u8>, profile: &ProfileTimings) {
    let stages = [
        ("initializing", TINY),
        ("parsing", profile.parsing.max(TINY)),
        ("optimizing ast", TINY),
        ("loading collections", TINY),
        ("instantiating plan", TINY),
        ("optimizing plan", profile.optimizing.max(TINY)),
        ("instantiating executors", TINY),
        ("executing", profile.executing.max(TINY)),
        ("finalizing", TINY),
    ];
    out.push(b'{');
    for (i, (name, seconds)) in stages.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = write!(out, "\"{name}\":");
        let _ = serde_json::to_writer(&mut *out, &seconds);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use quiver_aql::value::Warning;
    use quiver_errors::ErrorCode;
    use serde_json::json;

    use super::*;

    fn batch(rows: Vec<Value>, raw_rows: bool) -> CursorBatch {
        CursorBatch {
            rows,
            raw_rows,
            has_more: false,
            id: None,
            next_batch_id: None,
            count: None,
            extra: None,
            cached: false,
            plan_cache_key: None,
        }
    }

    #[test]
    fn raw_rows_are_written_verbatim() {
        let rows = vec![
            json!("{\"_key\":\"a\",\"x\":[1,2]}"),
            Value::Null,
            json!("{\"_key\":\"b\"}"),
        ];
        let parsed: Value =
            serde_json::from_slice(&batch_body(&batch(rows.clone(), true), 201)).unwrap();
        assert_eq!(
            parsed,
            json!({
                "result": [{"_key": "a", "x": [1, 2]}, null, {"_key": "b"}],
                "hasMore": false,
                "cached": false,
                "error": false,
                "code": 201,
            })
        );
        // Without the flag, strings stay strings.
        let plain: Value =
            serde_json::from_slice(&batch_body(&batch(rows.clone(), false), 200)).unwrap();
        assert_eq!(plain["result"], Value::Array(rows));
    }

    /// Every member in ArangoDB's order, and the bytes are those serde_json writes for the
    /// same document.
    #[test]
    fn every_member_in_order() {
        let extra = QueryExtra {
            warnings: vec![Warning::new(
                ErrorCode::QueryDivisionByZero,
                "a \"quoted\" text",
            )],
            stats: QueryStatistics {
                writes_executed: 1,
                writes_ignored: 2,
                document_lookups: 3,
                scanned_full: 4,
                scanned_index: 5,
                filtered: 6,
                execution_time: 0.25,
                peak_memory: 7,
                full_count: Some(8),
                nodes: Some(vec![json!({"id": 1, "calls": 1})]),
                rules: Some(vec![("move-calculations-up".into(), 0.5)]),
            },
            profile: Some(ProfileTimings {
                parsing: 0.125,
                optimizing: 0.0,
                executing: 2.0,
            }),
            plan: Some(json!({"nodes": [], "rules": []})),
        };
        let full = CursorBatch {
            has_more: true,
            id: Some("17".into()),
            next_batch_id: Some(2),
            count: Some(9),
            extra: Some(Arc::new(extra)),
            cached: true,
            plan_cache_key: Some(42),
            ..batch(vec![json!(1), json!({"a": "b"})], false)
        };
        let expected = json!({
            "result": [1, {"a": "b"}],
            "hasMore": true,
            "id": "17",
            "nextBatchId": "2",
            "count": 9,
            "extra": {
                "warnings": [{"code": 1562, "message": "a \"quoted\" text"}],
                "stats": {
                    "writesExecuted": 1, "writesIgnored": 2, "documentLookups": 3, "seeks": 0,
                    "scannedFull": 4, "scannedIndex": 5, "cursorsCreated": 0,
                    "cursorsRearmed": 0, "cacheHits": 0, "cacheMisses": 0, "filtered": 6,
                    "httpRequests": 0, "executionTime": 0.25, "peakMemoryUsage": 7,
                    "intermediateCommits": 0, "fullCount": 8,
                    "nodes": [{"id": 1, "calls": 1}],
                    "rules": {"move-calculations-up": 0.5},
                },
                "profile": {
                    "initializing": 1e-6, "parsing": 0.125, "optimizing ast": 1e-6,
                    "loading collections": 1e-6, "instantiating plan": 1e-6,
                    "optimizing plan": 1e-6, "instantiating executors": 1e-6,
                    "executing": 2.0, "finalizing": 1e-6,
                },
                "plan": {"nodes": [], "rules": []},
            },
            "cached": true,
            "error": false,
            "planCacheKey": "42",
            "code": 201,
        });
        assert_eq!(
            String::from_utf8(batch_body(&full, 201)).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
    }
}
