//! The query registry: the queries running now (`/_api/query/current`, killable through
//! `DELETE /_api/query/{id}`), and per database (as each of ArangoDB's databases has its own
//! query list) the slow-query log (`/_api/query/slow`) and `/_api/query/properties`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use parking_lot::Mutex;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use super::query_metrics::{QueryFigures, QueryMetrics};
use super::request::{CursorRequest, PropertiesUpdate};

/// `/_api/query/properties` of one database: whether queries are tracked, and what the
/// slow-query log keeps (thresholds in seconds).
#[derive(Clone, Debug, PartialEq)]
pub struct QueryProperties {
    pub enabled: bool,
    pub track_slow_queries: bool,
    pub track_bind_vars: bool,
    pub max_slow_queries: u64,
    pub slow_query_threshold: f64,
    pub slow_streaming_query_threshold: f64,
    pub max_query_string_length: u64,
}

impl Default for QueryProperties {
    fn default() -> Self {
        QueryProperties {
            enabled: true,
            track_slow_queries: true,
            track_bind_vars: true,
            max_slow_queries: 64,
            slow_query_threshold: 10.0,
            slow_streaming_query_threshold: 10.0,
            max_query_string_length: 4096,
        }
    }
}

/// Bounds of `maxQueryStringLength`, as ArangoDB clamps it.
const QUERY_STRING_LENGTH: std::ops::RangeInclusive<u64> = 64..=8 * 1024 * 1024;

/// The most slow queries a database keeps (`maxSlowQueries`), as ArangoDB clamps it.
const MAX_SLOW_QUERIES: u64 = 16_384;

/// `query` as the query lists show it: at most `max` bytes, cut at a character boundary and
/// marked with `...` when cut (ArangoDB's rule).
fn shown_query(query: &str, max: u64) -> String {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    if query.len() <= max {
        return query.to_string();
    }
    let mut end = max;
    while !query.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &query[..end])
}

fn seconds_json(f: f64) -> Value {
    crate::value::number(f)
}

impl QueryProperties {
    /// Whether the slow-query log wants queries about as fast as an inline one (threshold
    /// near zero): inline runs are not registered, so they are off then.
    fn logs_fast_queries(&self) -> bool {
        self.enabled && self.track_slow_queries && self.slow_query_threshold < 0.001
    }
}

/// A query listed by `/_api/query/current`.
struct RunningQuery {
    database: String,
    query: String,
    bind_vars: Value,
    started: SystemTime,
    started_at: Instant,
    killed: Arc<AtomicBool>,
    stream: bool,
    modification: bool,
    /// The user who runs it (empty for the superuser).
    user: String,
}

/// Running queries, the slow-query log and the properties that govern both.
pub(super) struct QueryRegistry {
    running: Mutex<HashMap<u64, RunningQuery>>,
    slow: Mutex<HashMap<String, VecDeque<Value>>>,
    /// The properties of the databases that changed theirs (the others have the defaults);
    /// a dropped database's go with it ([`QueryRegistry::forget_database`]).
    properties: Mutex<HashMap<String, QueryProperties>>,
    /// How many databases' slow-query logs want queries as fast as inline ones
    /// ([`QueryProperties::logs_fast_queries`]): while none does, the inline path asks no lock.
    fast_logging: AtomicUsize,
    /// Counts and times of finished queries.
    pub(super) metrics: QueryMetrics,
}

impl QueryRegistry {
    pub(super) fn new() -> QueryRegistry {
        QueryRegistry {
            running: Mutex::new(HashMap::new()),
            slow: Mutex::new(HashMap::new()),
            properties: Mutex::new(HashMap::new()),
            fast_logging: AtomicUsize::new(0),
            metrics: QueryMetrics::new(),
        }
    }

    /// The properties of database `db`.
    fn properties_of(&self, db: &str) -> QueryProperties {
        self.properties.lock().get(db).cloned().unwrap_or_default()
    }

    /// Whether bind parameters are shown with `db`'s tracked queries (and cached results).
    pub(super) fn tracks_bind_vars(&self, db: &str) -> bool {
        self.properties_of(db).track_bind_vars
    }

    /// Whether `db`'s slow log wants queries as fast as inline ones (which are not registered).
    pub(super) fn log_fast_queries(&self, db: &str) -> bool {
        self.fast_logging.load(Ordering::Relaxed) > 0 && self.properties_of(db).logs_fast_queries()
    }

    /// Drops what is kept for database `db` (dropped): its slow queries and properties, so a
    /// database created later under that name starts afresh.
    pub(super) fn forget_database(&self, db: &str) {
        self.slow.lock().remove(db);
        if let Some(p) = self.properties.lock().remove(db) {
            if p.logs_fast_queries() {
                self.fast_logging.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Lists query `id` as running until [`QueryRegistry::unregister`].
    pub(super) fn register(
        &self,
        id: u64,
        db: &str,
        req: &CursorRequest,
        killed: Arc<AtomicBool>,
        modification: bool,
    ) {
        let (track_bind, max_length) = {
            let p = self.properties_of(db);
            (p.track_bind_vars, p.max_query_string_length)
        };
        self.running.lock().insert(
            id,
            RunningQuery {
                database: db.to_string(),
                query: shown_query(&req.query, max_length),
                bind_vars: if track_bind {
                    Value::Object(req.bind_vars.clone())
                } else {
                    json!({})
                },
                started: SystemTime::now(),
                started_at: Instant::now(),
                killed,
                stream: req.stream,
                modification,
                user: req.user.clone().unwrap_or_default(),
            },
        );
    }

    /// Records whether a registered query writes, known once it is planned.
    pub(super) fn set_modification(&self, id: u64, modification: bool) {
        if let Some(q) = self.running.lock().get_mut(&id) {
            q.modification = modification;
        }
    }

    pub(super) fn unregister(&self, id: u64, peak_memory: u64, exit_code: u32) {
        let Some(q) = self.running.lock().remove(&id) else {
            return;
        };
        let props = self.properties_of(&q.database);
        let took = q.started_at.elapsed();
        let runtime = took.as_secs_f64();
        let threshold = if q.stream {
            props.slow_streaming_query_threshold
        } else {
            props.slow_query_threshold
        };
        let slow = props.enabled && props.track_slow_queries && runtime >= threshold;
        self.metrics.finished(took, slow);
        if slow {
            // The slow-query log (topic `queries`, as ArangoDB's), the query as listed: cut
            // to `maxQueryStringLength` bytes when it was registered.
            tracing::warn!(
                target: "quiver::queries",
                "slow query: '{}', database: {}, id: {id}, peak memory usage: {peak_memory}, \
                 took: {runtime:.6} s",
                q.query,
                q.database,
            );
            let mut slow = self.slow.lock();
            let list = slow.entry(q.database.clone()).or_default();
            let mut entry = Self::query_json(id, &q, peak_memory);
            entry["state"] = json!("finished");
            entry["exitCode"] = json!(exit_code);
            entry["runTime"] = seconds_json(runtime);
            list.push_back(entry);
            while list.len() as u64 > props.max_slow_queries {
                list.pop_front();
            }
        }
    }

    fn query_json(id: u64, q: &RunningQuery, peak_memory: u64) -> Value {
        json!({
            "id": id.to_string(),
            "database": q.database,
            "user": q.user,
            "query": q.query,
            "bindVars": q.bind_vars,
            "started": iso_time(q.started),
            "runTime": seconds_json(q.started_at.elapsed().as_secs_f64()),
            "peakMemoryUsage": peak_memory,
            "state": "executing",
            "stream": q.stream,
            "modificationQuery": q.modification,
        })
    }

    /// The AQL figures, with `cursors` open cursors and `memory` bytes held by running
    /// queries (the global memory accountant's reading).
    pub(super) fn figures(&self, cursors: u64, memory: u64) -> QueryFigures {
        let running = self.running.lock().len() as u64;
        self.metrics.figures(running, memory, cursors)
    }

    /// Every running query of every database: (id, database, query text), by id.
    pub(super) fn running_everywhere(&self) -> Vec<(u64, String, String)> {
        let mut list: Vec<(u64, String, String)> = self
            .running
            .lock()
            .iter()
            .map(|(id, q)| (*id, q.database.clone(), q.query.clone()))
            .collect();
        list.sort_by_key(|(id, _, _)| *id);
        list
    }

    /// `GET /_api/query/current`.
    pub(super) fn current(&self, db: &str) -> Result<Vec<Value>> {
        let running = self.running.lock();
        let mut list: Vec<(u64, Value)> = running
            .iter()
            .filter(|(_, q)| q.database == db)
            .map(|(id, q)| (*id, Self::query_json(*id, q, 0)))
            .collect();
        list.sort_by_key(|(id, _)| *id);
        Ok(list.into_iter().map(|(_, v)| v).collect())
    }

    /// `GET /_api/query/slow`.
    pub(super) fn slow(&self, db: &str) -> Result<Vec<Value>> {
        let slow = self.slow.lock();
        Ok(slow
            .get(db)
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default())
    }

    /// `DELETE /_api/query/slow`.
    pub(super) fn clear_slow(&self, db: &str) -> Result<()> {
        self.slow.lock().remove(db);
        Ok(())
    }

    /// `DELETE /_api/query/{id}`.
    pub(super) fn kill(&self, db: &str, id: &str) -> Result<()> {
        let running = self.running.lock();
        let q = id
            .parse::<u64>()
            .ok()
            .and_then(|n| running.get(&n))
            .filter(|q| q.database == db)
            .ok_or_else(|| Error::with_message(ErrorCode::QueryNotFound, "query ID not found"))?;
        q.killed.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// `GET /_api/query/properties` of database `db`.
    pub(super) fn properties(&self, db: &str) -> Result<QueryProperties> {
        Ok(self.properties_of(db))
    }

    /// `PUT /_api/query/properties` of database `db`.
    pub(super) fn set_properties(
        &self,
        db: &str,
        update: &PropertiesUpdate,
    ) -> Result<QueryProperties> {
        {
            let mut all = self.properties.lock();
            let p = all.entry(db.to_string()).or_default();
            let mut next = p.clone();
            let PropertiesUpdate {
                enabled,
                track_slow_queries,
                track_bind_vars,
                max_slow_queries,
                slow_query_threshold,
                slow_streaming_query_threshold,
                max_query_string_length,
            } = update.clone();
            next.enabled = enabled.unwrap_or(next.enabled);
            next.track_slow_queries = track_slow_queries.unwrap_or(next.track_slow_queries);
            next.track_bind_vars = track_bind_vars.unwrap_or(next.track_bind_vars);
            next.max_slow_queries = max_slow_queries
                .unwrap_or(next.max_slow_queries)
                .min(MAX_SLOW_QUERIES);
            next.slow_query_threshold = slow_query_threshold.unwrap_or(next.slow_query_threshold);
            next.slow_streaming_query_threshold =
                slow_streaming_query_threshold.unwrap_or(next.slow_streaming_query_threshold);
            next.max_query_string_length = max_query_string_length
                .unwrap_or(next.max_query_string_length)
                .clamp(*QUERY_STRING_LENGTH.start(), *QUERY_STRING_LENGTH.end());
            // An inline run takes well under a millisecond; with a threshold that low the
            // slow log wants every query, which only the registered path records.
            match (p.logs_fast_queries(), next.logs_fast_queries()) {
                (false, true) => {
                    self.fast_logging.fetch_add(1, Ordering::Relaxed);
                }
                (true, false) => {
                    self.fast_logging.fetch_sub(1, Ordering::Relaxed);
                }
                _ => {}
            }
            *p = next;
        }
        self.properties(db)
    }
}

fn iso_time(t: SystemTime) -> String {
    let dt: chrono::DateTime<chrono::Utc> = t.into();
    dt.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::shown_query;

    #[test]
    fn long_queries_are_cut_at_a_character_boundary_and_marked() {
        assert_eq!(shown_query("RETURN 1", 64), "RETURN 1");
        let q = format!("RETURN '{}'", "ä".repeat(100));
        let shown = shown_query(&q, 64);
        assert!(shown.ends_with("..."));
        let kept = shown.trim_end_matches("...");
        assert!(kept.len() <= 64 && kept.len() >= 63, "{}", kept.len());
        assert!(q.starts_with(kept));
    }
}
