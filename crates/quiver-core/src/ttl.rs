//! Background expiry for ttl indexes: a thread that periodically removes the documents whose
//! indexed timestamp plus `expireAfter` lies in the past (ArangoDB's `--ttl.frequency`).
//!
//! The timestamp is a number of seconds since the Unix epoch or an ISO 8601 date string;
//! documents without a valid timestamp never expire. Removals carry the revision that was
//! seen, so a document updated meanwhile is left alone (and reconsidered next round).

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::{Condvar, Mutex, RwLock};
use serde_json::Value;

use crate::catalog::Database;

/// The most documents one round removes from one collection (bounds each round's work).
pub(crate) const MAX_REMOVALS_PER_ROUND: usize = 100_000;

/// Parses an expiry timestamp: seconds since the epoch, or an ISO 8601 date (UTC unless it
/// carries an offset).
pub(crate) fn timestamp_seconds(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64().filter(|f| f.is_finite() && *f >= 0.0),
        Value::String(text) => {
            if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(text) {
                return Some(dt.timestamp_millis() as f64 / 1000.0);
            }
            for format in [
                "%Y-%m-%dT%H:%M:%S%.f",
                "%Y-%m-%d %H:%M:%S%.f",
                "%Y-%m-%dT%H:%M:%S%.fZ",
            ] {
                if let Ok(dt) = chrono::NaiveDateTime::parse_from_str(text, format) {
                    return Some(dt.and_utc().timestamp_millis() as f64 / 1000.0);
                }
            }
            chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|dt| dt.and_utc().timestamp() as f64)
        }
        _ => None,
    }
}

/// Seconds since the epoch now.
pub(crate) fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timestamps() {
        assert_eq!(
            timestamp_seconds(&json!(1_700_000_000)),
            Some(1_700_000_000.0)
        );
        assert_eq!(
            timestamp_seconds(&json!("2023-11-14T22:13:20Z")),
            Some(1_700_000_000.0)
        );
        assert_eq!(
            timestamp_seconds(&json!("2023-11-14T22:13:20.500Z")),
            Some(1_700_000_000.5)
        );
        assert_eq!(
            timestamp_seconds(&json!("2023-11-14T23:13:20+01:00")),
            Some(1_700_000_000.0)
        );
        assert_eq!(
            timestamp_seconds(&json!("2023-11-14 22:13:20")),
            Some(1_700_000_000.0)
        );
        assert_eq!(
            timestamp_seconds(&json!("2023-11-14")),
            Some(1_699_920_000.0)
        );
        for never in [json!("soon"), json!(-5), json!(null), json!([1])] {
            assert_eq!(timestamp_seconds(&never), None, "{never}");
        }
    }
}
