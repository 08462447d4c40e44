//! The cursor protocol over the registries: the first batch of a new cursor, continuations
//! (`POST /_api/cursor/{id}[/{batchId}]`, with `allowRetry` re-sends), streaming batches that
//! run the query further and commit it at the end, and `DELETE /_api/cursor/{id}`.

use std::sync::Arc;
use std::time::Instant;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use super::cursors::{Cursor, CursorData, StreamState};
use super::{bad, CursorBatch, QueryService};
use crate::exec::Execution;
use crate::query_extra::{ProfileTimings, QueryExtra, QueryStatistics};

/// How long a batch request waits for a cursor lock held by another request's expiry sweep
/// before it reports the cursor busy.
const SWEEP_WAIT: std::time::Duration = std::time::Duration::from_millis(2);

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

    /// Stores the cursor (of `user`) if it has more to give.
    pub(super) fn respond_first(
        &self,
        batch: CursorBatch,
        cursor: Cursor,
        user: Option<&str>,
    ) -> Result<CursorBatch> {
        // As ArangoDB 3.12: a first batch that holds the whole result creates no cursor, with
        // or without `count`, `stream` or `allowRetry` (its body has no `id` to ask it with).
        if !cursor.exhausted {
            if let Some(id) = &batch.id {
                self.cursors.insert(id.clone(), cursor, user)?;
            }
        }
        Ok(batch)
    }

    /// Produces the next batch of a cursor.
    pub(super) fn next_batch_of(
        &self,
        cursor: &mut Cursor,
        id: Option<String>,
    ) -> Result<CursorBatch> {
        let values = cursor.take_rows(cursor.batch_size);
        if let CursorData::Materialized(results) = &cursor.data {
            cursor.exhausted = results.is_empty();
        }
        self.finish_batch(cursor, values, id)
    }

    pub(super) fn finish_batch(
        &self,
        cursor: &mut Cursor,
        values: Vec<Value>,
        id: Option<String>,
    ) -> Result<CursorBatch> {
        cursor.batch_id += 1;
        let has_more = !cursor.exhausted;
        // `id` and `nextBatchId` only while there is more, as ArangoDB's cursors write them;
        // a retriable cursor's last batch omits them too (the client already has the id).
        let id = has_more.then(|| id.unwrap_or_else(|| self.new_id().to_string()));
        let extra = if has_more || cursor.allow_retry {
            cursor.extra.clone()
        } else {
            // Last batch: the cursor is about to go away.
            cursor.extra.take()
        };
        let batch = CursorBatch {
            rows: values,
            raw_rows: cursor.raw_result,
            has_more,
            id,
            next_batch_id: has_more.then_some(cursor.batch_id + 1),
            count: cursor.count,
            extra,
            cached: cursor.cached,
            plan_cache_key: None,
        };
        if cursor.allow_retry {
            cursor.last_batch = Some(batch.clone());
        }
        cursor.expires = Instant::now() + cursor.ttl;
        Ok(batch)
    }

    /// `POST|PUT /_api/cursor/{id}` (`batch_id` None) and `POST /_api/cursor/{id}/{batchId}`,
    /// every result row a value.
    pub fn next_batch(&self, db: &str, id: &str, batch_id: Option<&str>) -> Result<CursorBatch> {
        self.next_batch_raw(db, id, batch_id)?.into_values()
    }

    /// The next batch for the HTTP layer: rows may be documents as stored JSON text
    /// ([`CursorBatch::raw_rows`]).
    pub fn next_batch_raw(
        &self,
        db: &str,
        id: &str,
        batch_id: Option<&str>,
    ) -> Result<CursorBatch> {
        self.purge_expired();
        let not_found = || Error::with_message(ErrorCode::CursorNotFound, "cursor not found");
        let handle = self.cursors.get(id).ok_or_else(not_found)?;
        // Busy means another request is using the cursor. The expiry sweep of other requests
        // (`take_expired`) also takes each cursor's lock, for a moment only: wait that long
        // (bounded) rather than answer 1601 to a client whose cursor was merely looked at.
        let mut cursor = handle
            .try_lock_for(SWEEP_WAIT)
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
                let batch = cursor.last_batch.clone().ok_or_else(not_found)?;
                cursor.expires = Instant::now() + cursor.ttl;
                return Ok(batch);
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
        let batch = match &mut cursor.data {
            CursorData::Materialized(_) => self.next_batch_of(&mut cursor, Some(id.to_string())),
            CursorData::Streaming(_) => self.stream_batch(&mut cursor, id),
        };
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                drop(cursor);
                self.cursors.remove(id);
                return Err(e);
            }
        };
        let remove = cursor.exhausted && !cursor.allow_retry;
        drop(cursor);
        if remove {
            self.cursors.remove(id);
        }
        Ok(batch)
    }

    fn stream_batch(&self, cursor: &mut Cursor, id: &str) -> Result<CursorBatch> {
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
            if b.id.is_some() {
                b.id = Some(id.to_string());
            }
            b
        })
    }

    /// `DELETE /_api/cursor/{id}`.
    pub fn delete_cursor(&self, db: &str, id: &str) -> Result<()> {
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
        Ok(())
    }
}

/// Builds a streaming batch from `values`; when the stream has ended, commits the query's
/// writes and attaches `extra`.
pub(super) fn cursor_with_values(
    cursor: &mut Cursor,
    values: Vec<Value>,
    service: &QueryService,
    parsing: f64,
    optimizing: f64,
) -> Result<CursorBatch> {
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
            let mut extra = QueryExtra {
                warnings,
                stats: QueryStatistics::of_run(
                    &stats,
                    parsing + optimizing + executing,
                    stats.full_count.is_some(),
                    Some(plan),
                    *profile,
                ),
                profile: None,
                plan: None,
            };
            if *profile >= 1 {
                extra.profile = Some(ProfileTimings {
                    parsing,
                    optimizing,
                    executing,
                });
                extra.plan = Some(service.plan_json_for(&cursor.database, plan));
            }
            cursor.extra = Some(Arc::new(extra));
        }
        cursor.exhausted = true;
    }
    service.finish_batch(cursor, values, None)
}
