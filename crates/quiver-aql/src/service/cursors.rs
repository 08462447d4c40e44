//! The cursor registry: open cursors by id, their remaining results or running streaming
//! query, expiry (`ttl`) and the caps on how many may be open and how much memory their
//! results may hold, overall and per user ([`crate::held`]).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use quiver_errors::Result;
use serde_json::Value;

use super::CursorBatch;
use crate::exec::Execution;
use crate::held::{HeldResults, Hold, HoldCaps};
use crate::plan::QueryPlan;
use crate::query_extra::QueryExtra;

/// Default upper bound of open cursors per service (`--query.max-open-cursors`); creating
/// more fails with a resource error instead of growing without bound.
pub const MAX_CURSORS: usize = 16_384;

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
    pub(super) extra: Option<Arc<QueryExtra>>,
    /// Number of the batch delivered last (the first response is batch 1).
    pub(super) batch_id: u64,
    pub(super) last_batch: Option<CursorBatch>,
    pub(super) allow_retry: bool,
    pub(super) exhausted: bool,
    /// Rows are documents as stored JSON text (`QueryPlan::raw_result`).
    pub(super) raw_result: bool,
    /// The rows come from the query results cache (`cached` in every batch).
    pub(super) cached: bool,
    /// The cursor's place under the caps and the estimated bytes of its remaining rows;
    /// given back when the cursor is dropped.
    pub(super) hold: Option<Hold>,
}

impl Cursor {
    /// Delivers the next `n` materialized rows and gives their share of the charged bytes
    /// back (rows are charged by estimate; they leave in proportion).
    pub(super) fn take_rows(&mut self, n: usize) -> Vec<Value> {
        let CursorData::Materialized(results) = &mut self.data else {
            return Vec::new();
        };
        let before = results.len();
        let n = n.min(before);
        let rows: Vec<Value> = results.drain(..n).collect();
        if let Some(hold) = &mut self.hold {
            let share = if n == before {
                hold.bytes()
            } else {
                (u128::from(hold.bytes()) * n as u128 / before as u128) as u64
            };
            hold.shrink(share);
        }
        rows
    }
}

/// Open cursors by id. A cursor in use is locked by its user; the registry never waits for
/// that lock (a busy cursor neither expires nor can be deleted by someone else meanwhile).
pub(super) struct CursorRegistry {
    cursors: Mutex<HashMap<String, Arc<Mutex<Cursor>>>>,
    /// What open cursors hold, against the caps.
    held: Arc<HeldResults>,
}

impl CursorRegistry {
    pub(super) fn new() -> CursorRegistry {
        CursorRegistry {
            cursors: Mutex::new(HashMap::new()),
            held: HeldResults::new(
                "open cursors",
                HoldCaps {
                    count: MAX_CURSORS,
                    ..HoldCaps::default()
                },
            ),
        }
    }

    /// The accountant of what open cursors hold.
    pub(super) fn held(&self) -> &Arc<HeldResults> {
        &self.held
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

    /// Stores `cursor` of `user` under `id`; 32 (resource limit) when `user` or everyone
    /// has as many open as allowed. A cursor whose rows were charged while the query ran
    /// already has its hold.
    pub(super) fn insert(&self, id: String, mut cursor: Cursor, user: Option<&str>) -> Result<()> {
        if cursor.hold.is_none() {
            cursor.hold = Some(self.held.hold(user, 0)?);
        }
        self.cursors.lock().insert(id, Arc::new(Mutex::new(cursor)));
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
