//! The tests read cursor batches as the JSON body the server writes for them
//! (`quiver-server/src/api/cursor/response.rs`, which pins the bytes and member order): the
//! same members from the same typed fields, here as a `Value`, so that assertions read like
//! the HTTP protocol they check.

use quiver_aql::service::{CursorBatch, QueryExtra};
use quiver_aql::source::Transaction;
use quiver_aql::{CursorRequest, QueryService};
use quiver_errors::Result;
use serde_json::{json, Map, Value};

/// The body of `batch` with status `code`.
pub fn body(batch: CursorBatch, code: u16) -> Value {
    let batch = batch.into_values().expect("stored rows are JSON");
    let mut m = Map::new();
    m.insert("result".into(), Value::Array(batch.rows));
    m.insert("hasMore".into(), json!(batch.has_more));
    if let Some(id) = batch.id {
        m.insert("id".into(), json!(id));
    }
    if let Some(next) = batch.next_batch_id {
        m.insert("nextBatchId".into(), json!(next.to_string()));
    }
    if let Some(count) = batch.count {
        m.insert("count".into(), json!(count));
    }
    if let Some(extra) = batch.extra {
        m.insert("extra".into(), extra_json(&extra));
    }
    m.insert("cached".into(), json!(batch.cached));
    m.insert("error".into(), json!(false));
    if let Some(key) = batch.plan_cache_key {
        m.insert("planCacheKey".into(), json!(key.to_string()));
    }
    m.insert("code".into(), json!(code));
    Value::Object(m)
}

fn extra_json(extra: &QueryExtra) -> Value {
    let s = &extra.stats;
    let mut stats = json!({
        "writesExecuted": s.writes_executed,
        "writesIgnored": s.writes_ignored,
        "documentLookups": s.document_lookups,
        "seeks": 0,
        "scannedFull": s.scanned_full,
        "scannedIndex": s.scanned_index,
        "cursorsCreated": 0,
        "cursorsRearmed": 0,
        "cacheHits": 0,
        "cacheMisses": 0,
        "filtered": s.filtered,
        "httpRequests": 0,
        "executionTime": s.execution_time.max(1e-6),
        "peakMemoryUsage": s.peak_memory,
        "intermediateCommits": 0,
    });
    if let Some(full_count) = s.full_count {
        stats["fullCount"] = json!(full_count);
    }
    if let Some(nodes) = &s.nodes {
        stats["nodes"] = json!(nodes);
    }
    if let Some(rules) = &s.rules {
        stats["rules"] = rules.iter().map(|(n, t)| (n.clone(), json!(t))).collect();
    }
    let warnings: Vec<Value> = extra.warnings.iter().map(|w| w.to_json()).collect();
    let mut out = json!({"warnings": warnings, "stats": stats});
    if let Some(p) = &extra.profile {
        let tiny = 1e-6;
        out["profile"] = json!({
            "initializing": tiny,
            "parsing": p.parsing.max(tiny),
            "optimizing ast": tiny,
            "loading collections": tiny,
            "instantiating plan": tiny,
            "optimizing plan": p.optimizing.max(tiny),
            "instantiating executors": tiny,
            "executing": p.executing.max(tiny),
            "finalizing": tiny,
        });
    }
    if let Some(plan) = &extra.plan {
        out["plan"] = plan.clone();
    }
    out
}

/// The cursor calls of the query service, answering `(status, body)` as the server does.
pub trait CursorJson {
    fn create_cursor_json(&self, db: &str, req: CursorRequest) -> Result<(u16, Value)>;
    fn create_cursor_in_json(
        &self,
        db: &str,
        req: CursorRequest,
        txn: Box<dyn Transaction>,
    ) -> Result<(u16, Value)>;
    /// The inline path's answer as the bytes the server writes.
    fn create_cursor_inline_json(
        &self,
        db: &str,
        req: &CursorRequest,
    ) -> Option<Result<(u16, Vec<u8>)>>;
    fn next_batch_json(&self, db: &str, id: &str, batch_id: Option<&str>) -> Result<(u16, Value)>;
    fn delete_cursor_json(&self, db: &str, id: &str) -> Result<(u16, Value)>;
}

impl CursorJson for QueryService {
    fn create_cursor_json(&self, db: &str, req: CursorRequest) -> Result<(u16, Value)> {
        Ok((201, body(self.create_cursor(db, req)?, 201)))
    }

    fn create_cursor_in_json(
        &self,
        db: &str,
        req: CursorRequest,
        txn: Box<dyn Transaction>,
    ) -> Result<(u16, Value)> {
        Ok((201, body(self.create_cursor_in(db, req, txn)?, 201)))
    }

    fn create_cursor_inline_json(
        &self,
        db: &str,
        req: &CursorRequest,
    ) -> Option<Result<(u16, Vec<u8>)>> {
        Some(
            self.create_cursor_inline(db, req)?
                .map(|b| (201, serde_json::to_vec(&body(b, 201)).unwrap())),
        )
    }

    fn next_batch_json(&self, db: &str, id: &str, batch_id: Option<&str>) -> Result<(u16, Value)> {
        Ok((200, body(self.next_batch(db, id, batch_id)?, 200)))
    }

    fn delete_cursor_json(&self, db: &str, id: &str) -> Result<(u16, Value)> {
        self.delete_cursor(db, id)?;
        Ok((202, json!({"id": id, "error": false, "code": 202})))
    }
}
