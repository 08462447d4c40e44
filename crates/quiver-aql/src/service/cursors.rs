//! The cursor registry: open cursors by id, their remaining results or running streaming
//! query, expiry (`ttl`) and the bound on how many may be open.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use crate::exec::Execution;
use crate::plan::QueryPlan;

/// Upper bound of open cursors per service; creating more fails with a resource error
/// instead of growing without bound.
const MAX_CURSORS: usize = 16_384;

pub(super) enum CursorData {
    /// Results of a query that already ran to completion.
    Materialized(VecDeque<Value>),
    /// A streaming query still producing rows.
    Streaming(Box<StreamState>),
}

pub(super) struct StreamState {
    pub(super) exec: Option<Execution>,
    pub(super) peeked: Option<Value>,
    pub(super) plan: Arc<QueryPlan>,
    pub(super) query_id: u64,
    pub(super) profile: u8,
    pub(super) started: Instant,
}

pub(super) struct Cursor {
    pub(super) database: String,
    pub(super) batch_size: usize,
    pub(super) ttl: Duration,
    pub(super) expires: Instant,
    pub(super) count: Option<u64>,
    pub(super) data: CursorData,
    /// Extra of a materialized cursor (repeated with every batch) or of a finished stream.
    pub(super) extra: Option<Value>,
    /// Number of the batch delivered last (the first response is batch 1).
    pub(super) batch_id: u64,
    pub(super) last_batch: Option<Value>,
    pub(super) allow_retry: bool,
    pub(super) exhausted: bool,
    /// Rows are documents as stored JSON text (`QueryPlan::raw_result`).
    pub(super) raw_result: bool,
    /// The rows come from the query results cache (`cached` in every batch).
    pub(super) cached: bool,
}

/// Open cursors by id. A cursor in use is locked by its user; the registry never waits for
/// that lock (a busy cursor neither expires nor can be deleted by someone else meanwhile).
pub(super) struct CursorRegistry {
    cursors: Mutex<HashMap<String, Arc<Mutex<Cursor>>>>,
}

impl CursorRegistry {
    pub(super) fn new() -> CursorRegistry {
        CursorRegistry {
            cursors: Mutex::new(HashMap::new()),
        }
    }

    /// Takes the expired cursors nobody is using out of the registry and returns them; the
    /// caller drops them outside the registry lock.
    pub(super) fn take_expired(&self) -> Vec<Arc<Mutex<Cursor>>> {
        let now = Instant::now();
        let mut expired = Vec::new();
        self.cursors.lock().retain(|_, c| {
            let keep = c.try_lock().is_none_or(|c| c.expires > now);
            if !keep {
                expired.push(c.clone());
            }
            keep
        });
        expired
    }

    /// Stores `cursor` under `id`; 32 (resource limit) when too many are open.
    pub(super) fn insert(&self, id: String, cursor: Cursor) -> Result<()> {
        let mut cursors = self.cursors.lock();
        if cursors.len() >= MAX_CURSORS {
            return Err(Error::with_message(
                ErrorCode::ResourceLimit,
                "too many open cursors",
            ));
        }
        cursors.insert(id, Arc::new(Mutex::new(cursor)));
        Ok(())
    }

    pub(super) fn get(&self, id: &str) -> Option<Arc<Mutex<Cursor>>> {
        self.cursors.lock().get(id).cloned()
    }

    pub(super) fn remove(&self, id: &str) {
        self.cursors.lock().remove(id);
    }

    /// Removes cursor `id` if it belongs to `db` (a cursor busy elsewhere counts as
    /// belonging); None when there is no such cursor.
    pub(super) fn remove_in_database(&self, id: &str, db: &str) -> Option<Arc<Mutex<Cursor>>> {
        let mut cursors = self.cursors.lock();
        let matches = cursors
            .get(id)
            .is_some_and(|c| c.try_lock().is_none_or(|c| c.database == db));
        if !matches {
            return None;
        }
        cursors.remove(id)
    }

    pub(super) fn len(&self) -> usize {
        self.cursors.lock().len()
    }
}
