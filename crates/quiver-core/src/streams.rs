//! Stream transactions (`/_api/transaction/begin` and friends): a registry of running
//! [`Transaction`]s addressed by numeric string ids, with ArangoDB's status rules, an idle
//! timeout, and finished transactions kept queryable for a while.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use quiver_errors::{Error, ErrorCode, Result};

use crate::database::Database;
use crate::options::Committed;
use crate::txn::{Transaction, TransactionOptions};

/// The most stream transactions running at once (beyond: error 32).
pub const MAX_RUNNING_STREAM_TRANSACTIONS: usize = 4096;
/// How many finished transactions stay queryable.
const FINISHED_KEPT: usize = 1024;

/// The state of a stream transaction as reported by the HTTP API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamStatus {
    /// Open for operations.
    Running,
    /// Committed.
    Committed,
    /// Aborted (explicitly, by a failed commit, or after the idle timeout).
    Aborted,
}

impl StreamStatus {
    /// ArangoDB's status string.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamStatus::Running => "running",
            StreamStatus::Committed => "committed",
            StreamStatus::Aborted => "aborted",
        }
    }
}

enum State {
    Running(Box<Transaction>),
    Finished(StreamStatus),
}

struct Entry {
    state: State,
    last_used: Instant,
    idle_timeout: Duration,
}

impl Entry {
    /// Aborts the transaction if it sat idle for too long.
    fn expire_if_idle(&mut self) {
        if matches!(self.state, State::Running(_)) && self.last_used.elapsed() > self.idle_timeout {
            self.state = State::Finished(StreamStatus::Aborted);
        }
    }

    fn status(&self) -> StreamStatus {
        match self.state {
            State::Running(_) => StreamStatus::Running,
            State::Finished(status) => status,
        }
    }
}

struct SlotData {
    database: String,
    entry: Mutex<Entry>,
}

type Slot = Arc<SlotData>;

/// The registry; one per core.
#[derive(Default)]
pub struct StreamTransactions {
    entries: Mutex<HashMap<String, Slot>>,
    finished: Mutex<VecDeque<String>>,
}

impl std::fmt::Debug for StreamTransactions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamTransactions")
            .field("entries", &self.entries.lock().len())
            .finish()
    }
}

fn not_found(id: &str) -> Error {
    Error::with_message(
        ErrorCode::TransactionNotFound,
        format!("transaction '{id}' not found"),
    )
}

fn aborted(id: &str) -> Error {
    Error::with_message(
        ErrorCode::TransactionAborted,
        format!("transaction '{id}' has been aborted"),
    )
}

impl StreamTransactions {
    fn slot(&self, id: &str, database: &str) -> Result<Slot> {
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("illegal transaction id '{id}'"),
            ));
        }
        let slot = self
            .entries
            .lock()
            .get(id)
            .cloned()
            .ok_or_else(|| not_found(id))?;
        if slot.database != database {
            return Err(not_found(id));
        }
        Ok(slot)
    }

    fn finish(&self, id: &str) {
        let mut finished = self.finished.lock();
        finished.push_back(id.to_string());
        while finished.len() > FINISHED_KEPT {
            if let Some(old) = finished.pop_front() {
                self.entries.lock().remove(&old);
            }
        }
    }

    fn reap_idle(&self) {
        let slots: Vec<(String, Slot)> = self
            .entries
            .lock()
            .iter()
            .map(|(id, slot)| (id.clone(), Arc::clone(slot)))
            .collect();
        for (id, slot) in slots {
            // A busy transaction is in use, hence not idle.
            let Some(mut entry) = slot.entry.try_lock() else {
                continue;
            };
            let was_running = matches!(entry.state, State::Running(_));
            entry.expire_if_idle();
            if was_running && !matches!(entry.state, State::Running(_)) {
                drop(entry);
                self.finish(&id);
            }
        }
    }

    /// Starts a stream transaction in `db`; returns its id. `idle_timeout` aborts it after
    /// that much inactivity (ArangoDB's default is 60 s). Errors: 1203 for an unknown
    /// declared collection, 32 when too many are running.
    pub fn begin(
        &self,
        db: &Arc<Database>,
        options: TransactionOptions,
        idle_timeout: Duration,
    ) -> Result<String> {
        self.reap_idle();
        // Finished entries are bounded separately, so this bounds the running ones.
        if self.entries.lock().len() >= MAX_RUNNING_STREAM_TRANSACTIONS + FINISHED_KEPT {
            return Err(Error::with_message(
                ErrorCode::ResourceLimit,
                "too many running stream transactions",
            ));
        }
        let trx = db.begin_transaction(options)?;
        let id = db.engine().hlc().next().0.to_string();
        let entry = Entry {
            state: State::Running(Box::new(trx)),
            last_used: Instant::now(),
            idle_timeout,
        };
        self.entries.lock().insert(
            id.clone(),
            Arc::new(SlotData {
                database: db.name().to_string(),
                entry: Mutex::new(entry),
            }),
        );
        Ok(id)
    }

    /// Runs `operation` inside the running transaction `id` of database `database`
    /// (operations on one transaction are serialized). Errors: 1655 unknown id (or another
    /// database's), 1654 aborted or expired, 10 for a malformed id, 1653 committed.
    pub fn with<R>(
        &self,
        id: &str,
        database: &str,
        operation: impl FnOnce(&mut Transaction) -> Result<R>,
    ) -> Result<R> {
        let slot = self.slot(id, database)?;
        let mut entry = slot.entry.lock();
        entry.expire_if_idle();
        let result = match &mut entry.state {
            State::Running(trx) => operation(trx),
            State::Finished(StreamStatus::Committed) => {
                return Err(Error::with_message(
                    ErrorCode::TransactionDisallowedOperation,
                    format!("transaction '{id}' has already been committed"),
                ))
            }
            State::Finished(_) => return Err(aborted(id)),
        };
        entry.last_used = Instant::now();
        result
    }

    /// Commits. Committing twice is harmless; committing an aborted transaction is 1653.
    /// A commit that fails (e.g. a write-write conflict, 1200) aborts the transaction and
    /// returns the error.
    pub fn commit(&self, id: &str, database: &str) -> Result<Committed<()>> {
        let slot = self.slot(id, database)?;
        let mut entry = slot.entry.lock();
        entry.expire_if_idle();
        let state = std::mem::replace(&mut entry.state, State::Finished(StreamStatus::Aborted));
        let result = match state {
            State::Running(trx) => match trx.commit() {
                Ok(done) => {
                    entry.state = State::Finished(StreamStatus::Committed);
                    Ok(done)
                }
                Err(err) => Err(err),
            },
            State::Finished(StreamStatus::Committed) => {
                entry.state = State::Finished(StreamStatus::Committed);
                return Ok(Committed::new((), None, || false));
            }
            State::Finished(status) => {
                entry.state = State::Finished(status);
                return Err(Error::with_message(
                    ErrorCode::TransactionDisallowedOperation,
                    format!("transaction '{id}' has already been aborted"),
                ));
            }
        };
        drop(entry);
        self.finish(id);
        result
    }

    /// Aborts. Aborting twice is harmless; aborting a committed transaction is 1653.
    pub fn abort(&self, id: &str, database: &str) -> Result<()> {
        let slot = self.slot(id, database)?;
        let mut entry = slot.entry.lock();
        match entry.state {
            State::Finished(StreamStatus::Committed) => Err(Error::with_message(
                ErrorCode::TransactionDisallowedOperation,
                format!("transaction '{id}' has already been committed"),
            )),
            State::Finished(_) => Ok(()),
            State::Running(_) => {
                entry.state = State::Finished(StreamStatus::Aborted);
                drop(entry);
                self.finish(id);
                Ok(())
            }
        }
    }

    /// The status of a transaction (finished ones stay queryable for a while). Errors as
    /// [`StreamTransactions::with`] for unknown or malformed ids.
    pub fn status(&self, id: &str, database: &str) -> Result<StreamStatus> {
        let slot = self.slot(id, database)?;
        let mut entry = slot.entry.lock();
        entry.expire_if_idle();
        Ok(entry.status())
    }

    /// Ids of the running transactions of `database`.
    pub fn running(&self, database: &str) -> Vec<String> {
        self.reap_idle();
        let mut ids: Vec<String> = self
            .entries
            .lock()
            .iter()
            .filter(|(_, slot)| {
                slot.database == database
                    && slot
                        .entry
                        .try_lock()
                        // Busy means an operation is running inside it.
                        .is_none_or(|entry| matches!(entry.state, State::Running(_)))
            })
            .map(|(id, _)| id.clone())
            .collect();
        ids.sort();
        ids
    }
}
