//! Background expiry for ttl indexes: a thread that periodically removes the documents whose
//! indexed timestamp plus `expireAfter` lies in the past (ArangoDB's `--ttl.frequency`).
//!
//! The timestamp is a number of seconds since the Unix epoch or an ISO 8601 date string;
//! documents without a valid timestamp never expire. Removals carry the revision that was
//! seen, so a document updated meanwhile is left alone (and reconsidered next round).

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};

use crate::database::Database;
use crate::indexes::ttl::now_seconds;

/// The most documents one round removes from one collection (bounds each round's work).
pub(crate) const MAX_REMOVALS_PER_ROUND: usize = 100_000;

/// Runs one expiry round over every collection with a ttl index; returns the number of
/// documents removed.
pub(crate) fn run_round(databases: &RwLock<BTreeMap<String, Arc<Database>>>) -> usize {
    let now = now_seconds();
    let dbs: Vec<Arc<Database>> = databases.read().values().cloned().collect();
    let mut removed = 0;
    for db in dbs {
        for coll in db.collections() {
            match coll.expire_ttl(now, MAX_REMOVALS_PER_ROUND) {
                Ok(n) => removed += n,
                Err(err) if !coll.is_dropped() => {
                    tracing::warn!(collection = %coll.name(), %err, "ttl expiry failed")
                }
                Err(_) => {}
            }
        }
    }
    removed
}

/// The background thread; stops when told to or when the core is gone.
pub(crate) struct TtlWorker {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

impl TtlWorker {
    pub fn spawn(
        databases: Weak<RwLock<BTreeMap<String, Arc<Database>>>>,
        frequency: Duration,
    ) -> TtlWorker {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let signal = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("quiver-ttl".into())
            .spawn(move || loop {
                {
                    let (lock, condvar) = &*signal;
                    let mut stopped = lock.lock();
                    if !*stopped {
                        condvar.wait_for(&mut stopped, frequency);
                    }
                    if *stopped {
                        return;
                    }
                }
                let Some(databases) = databases.upgrade() else {
                    return;
                };
                run_round(&databases);
            })
            .ok();
        TtlWorker {
            stop,
            handle: Mutex::new(handle),
        }
    }

    /// Stops the thread and waits for its current round to finish.
    pub fn stop(&self) {
        {
            let (lock, condvar) = &*self.stop;
            *lock.lock() = true;
            condvar.notify_all();
        }
        if let Some(handle) = self.handle.lock().take() {
            let _ = handle.join();
        }
    }

    /// Tells the thread to stop without waiting (used when the core is dropped).
    pub fn signal(&self) {
        let (lock, condvar) = &*self.stop;
        *lock.lock() = true;
        condvar.notify_all();
    }
}
