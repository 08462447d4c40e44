//! The cursor protocol over the registries: the first batch of a new cursor, continuations
//! (`POST /_api/cursor/{id}[/{batchId}]`, with `allowRetry` re-sends), streaming batches that
//! run the query further and commit it at the end, and `DELETE /_api/cursor/{id}`.

use std::time::Instant;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Map, Value};

use super::cursors::{Cursor, CursorData, StreamState};
use super::response::{stats_json, warnings_json, ProfileTimings};
use super::{bad, CursorReply, QueryService, ServiceReply};
use crate::exec::Execution;

impl QueryService {
    /// Drops expired cursors; a streaming one aborts its writes and leaves the list of
    /// running queries.
    pub(super) fn purge_expired(&self) {
        // Outside the registry lock: dropping a streaming execution aborts its writes, and
        // its query leaves the list of running queries.
        for c in self.cursors.take_expired() {
            if let Some(mut c) = c.try_lock() {
                if let CursorData::Streaming(state) = &mut c.data {
                    let peak = state.exec.as_ref().map_or(0, |e| e.ctx.stats.peak_memory);
                    state.exec = None;
                    self.queries.unregister(
                        state.query_id,
                        peak,
                        ErrorCode::CursorNotFound.number(),
                    );
                }
            }
        }
    }

    /// Stores the cursor (of `user`) if it has more to give and sets the status code.
    pub(super) fn respond_first(
        &self,
        mut body: Value,
        cursor: Cursor,
        code: u16,
        user: Option<&str>,
    ) -> Result<CursorReply> {
        body["code"] = json!(code);
        let raw_result = cursor.raw_result;
        // As ArangoDB 3.12: a first batch that holds the whole result creates no cursor, with
        // or without `count`, `stream` or `allowRetry` (its body has no `id` to ask it with).
        if !cursor.exhausted {
            let id = body["id"].as_str().map(str::to_string);
            if let Some(id) = id {
                self.cursors.insert(id, cursor, user)?;
            }
        }
        Ok(CursorReply {
            code,
            body,
            raw_result,
        })
    }

    /// Produces the next batch of a cursor as a response body (without `code`).
    pub(super) fn next_body(&self, cursor: &mut Cursor, id: Option<String>) -> Result<Value> {
        let values = cursor.take_rows(cursor.batch_size);
        if let CursorData::Materialized(results) = &cursor.data {
            cursor.exhausted = results.is_empty();
        }
        self.finish_body(cursor, values, id)
    }

    pub(super) fn finish_body(
        &self,
        cursor: &mut Cursor,
        values: Vec<Value>,
        id: Option<String>,
    ) -> Result<Value> {
        cursor.batch_id += 1;
        let has_more = !cursor.exhausted;
        let mut body = Map::with_capacity(10);
        body.insert("result".into(), Value::Array(values));
        body.insert("hasMore".into(), json!(has_more));
        // `id` and `nextBatchId` only while there is more, as ArangoDB's cursors write them;
        // a retriable cursor's last batch omits them too (the client already has the id).
        if has_more {
            let id = id.unwrap_or_else(|| self.new_id().to_string());
            body.insert("id".into(), json!(id));
            body.insert(
                "nextBatchId".into(),
                json!((cursor.batch_id + 1).to_string()),
            );
        }
        if let Some(c) = cursor.count {
            body.insert("count".into(), json!(c));
        }
        if has_more || cursor.allow_retry {
            if let Some(extra) = &cursor.extra {
                body.insert("extra".into(), extra.clone());
            }
        } else if let Some(extra) = cursor.extra.take() {
            // Last batch: the cursor is about to go away, no need to copy.
            body.insert("extra".into(), extra);
        } else if !matches!(cursor.data, CursorData::Streaming(_)) {
            body.insert("extra".into(), json!({"warnings": [], "stats": {}}));
        }
        body.insert("cached".into(), json!(cursor.cached));
        body.insert("error".into(), json!(false));
        let body = Value::Object(body);
        if cursor.allow_retry {
            cursor.last_batch = Some(body.clone());
        }
        cursor.expires = Instant::now() + cursor.ttl;
        Ok(body)
    }

    /// `POST|PUT /_api/cursor/{id}` (`batch_id` None) and `POST /_api/cursor/{id}/{batchId}`.
    /// `POST /_api/cursor/{id}[/{batchId}]`, every result row a value.
    pub fn next_batch(&self, db: &str, id: &str, batch_id: Option<&str>) -> Result<ServiceReply> {
        self.next_batch_reply(db, id, batch_id)?.into_plain()
    }

    /// The next batch for the HTTP layer: rows may be documents as stored JSON text.
    pub fn next_batch_reply(
        &self,
        db: &str,
        id: &str,
        batch_id: Option<&str>,
    ) -> Result<CursorReply> {
        self.purge_expired();
        let not_found = || Error::with_message(ErrorCode::CursorNotFound, "cursor not found");
        let handle = self.cursors.get(id).ok_or_else(not_found)?;
        let mut cursor = handle
            .try_lock()
            .ok_or_else(|| Error::with_message(ErrorCode::CursorBusy, "cursor is busy"))?;
        if cursor.database != db {
            return Err(not_found());
        }
        if let Some(requested) = batch_id {
            let requested: u64 = requested.parse().map_err(|_| bad("invalid batch id"))?;
            if requested == cursor.batch_id {
                if !cursor.allow_retry {
                    return Err(bad(format!("batch id {requested} was already delivered; the cursor does not allow retries")));
                }
                let mut body = cursor.last_batch.clone().ok_or_else(not_found)?;
                body["code"] = json!(200);
                cursor.expires = Instant::now() + cursor.ttl;
                return Ok(CursorReply {
                    code: 200,
                    body,
                    raw_result: cursor.raw_result,
                });
            }
            if requested != cursor.batch_id + 1 {
                return Err(bad(format!("batch id {requested} not found")));
            }
        }
        if cursor.exhausted {
            // Only reachable with allowRetry: the cursor stays for re-fetching the last batch.
            drop(cursor);
            return Err(not_found());
        }
        let body = match &mut cursor.data {
            CursorData::Materialized(_) => self.next_body(&mut cursor, Some(id.to_string())),
            CursorData::Streaming(_) => self.stream_batch(&mut cursor, id),
        };
        let mut body = match body {
            Ok(b) => b,
            Err(e) => {
                drop(cursor);
                self.cursors.remove(id);
                return Err(e);
            }
        };
        body["code"] = json!(200);
        let remove = cursor.exhausted && !cursor.allow_retry;
        let raw_result = cursor.raw_result;
        drop(cursor);
        if remove {
            self.cursors.remove(id);
        }
        Ok(CursorReply {
            code: 200,
            body,
            raw_result,
        })
    }

    fn stream_batch(&self, cursor: &mut Cursor, id: &str) -> Result<Value> {
        let batch_size = cursor.batch_size;
        let CursorData::Streaming(state) = &mut cursor.data else {
            return Err(Error::new(ErrorCode::Internal));
        };
        let StreamState { exec, peeked, .. } = &mut **state;
        let mut values: Vec<Value> = peeked.take().into_iter().collect();
        if let Some(e) = exec.as_mut() {
            let more = self.pull(e, batch_size + 1 - values.len())?;
            values.extend(more);
        }
        if values.len() > batch_size {
            *peeked = values.pop();
        }
        cursor_with_values(cursor, values, self, 0.0, 0.0).map(|mut b| {
            if b.get("id").is_some() {
                b["id"] = json!(id);
            }
            b
        })
    }

    /// `DELETE /_api/cursor/{id}`.
    pub fn delete_cursor(&self, db: &str, id: &str) -> Result<ServiceReply> {
        self.purge_expired();
        let Some(c) = self.cursors.remove_in_database(id, db) else {
            return Err(Error::with_message(
                ErrorCode::CursorNotFound,
                "cursor not found",
            ));
        };
        {
            if let Some(mut c) = c.try_lock() {
                if let CursorData::Streaming(state) = &mut c.data {
                    let StreamState { query_id, exec, .. } = &mut **state;
                    let peak = exec.as_ref().map_or(0, |e| e.ctx.stats.peak_memory);
                    let qid = *query_id;
                    // Dropping the execution aborts its uncommitted writes.
                    *exec = None;
                    self.queries.unregister(qid, peak, 0);
                }
            }
        }
        Ok((202, json!({"id": id, "error": false, "code": 202})))
    }
}

/// Builds a streaming batch body from `values`; when the stream has ended, commits the
/// query's writes and attaches `extra`.
pub(super) fn cursor_with_values(
    cursor: &mut Cursor,
    values: Vec<Value>,
    service: &QueryService,
    parsing: f64,
    optimizing: f64,
) -> Result<Value> {
    let CursorData::Streaming(state) = &mut cursor.data else {
        return Err(Error::new(ErrorCode::Internal));
    };
    let StreamState {
        exec,
        peeked,
        plan,
        query_id,
        profile,
        started,
    } = &mut **state;
    let finished = peeked.is_none() && exec.as_ref().is_none_or(Execution::is_done);
    if finished {
        if let Some(e) = exec.take() {
            let (stats, warnings) = match e.finish() {
                Ok(v) => v,
                Err(err) => {
                    service.queries.unregister(*query_id, 0, err.number());
                    return Err(err);
                }
            };
            let executing = started.elapsed().as_secs_f64();
            service.queries.unregister(*query_id, stats.peak_memory, 0);
            let mut extra = json!({
                "warnings": warnings_json(&warnings),
                "stats": stats_json(&stats, parsing + optimizing + executing, stats.full_count.is_some(), Some(plan), *profile),
            });
            if *profile >= 1 {
                extra["profile"] = ProfileTimings {
                    parsing,
                    optimizing,
                    executing,
                }
                .json();
                extra["plan"] = service.plan_json_for(&cursor.database, plan);
            }
            cursor.extra = Some(extra);
        }
        cursor.exhausted = true;
    }
    service.finish_body(cursor, values, None)
}
