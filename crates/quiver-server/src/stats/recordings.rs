//! What `/_admin/server/api-calls` and `/_admin/server/aql-queries` show: the most recent API
//! calls and AQL queries, each in a [`Recorder`] bounded by bytes as ArangoDB bounds them
//! (`--server.api-recording-memory-limit`, `--server.aql-recording-memory-limit`, 25 MiB
//! each by default). A recorder is split into shards, one picked per thread, so that recording
//! on the request path takes a lock no other thread usually holds; a reading merges the
//! shards by sequence number, newest first.
//!
//! Hand-written: a bounded, sharded ring of typed entries is a few lines over `VecDeque`, and
//! the merge by sequence number is specific to this page.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use chrono::{DateTime, Utc};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};

/// ArangoDB's default memory limit of each recording (25 MiB).
pub const DEFAULT_MEMORY_LIMIT: usize = 25 << 20;

const SHARDS: usize = 8;

/// Something a [`Recorder`] keeps: its (estimated) memory in bytes.
pub trait Recorded {
    /// Bytes the entry holds, itself included.
    fn bytes(&self) -> usize;
}

/// One API call: when, method, path below the database prefix, database.
#[derive(Clone, Debug)]
pub struct ApiCall {
    pub at: DateTime<Utc>,
    pub method: http::Method,
    pub path: String,
    pub database: String,
}

impl Recorded for ApiCall {
    fn bytes(&self) -> usize {
        ApiCall::bytes_of(&self.path, &self.database)
    }
}

impl ApiCall {
    /// The bytes of a call of `path` in `database` (as [`Recorded::bytes`]).
    fn bytes_of(path: &str, database: &str) -> usize {
        std::mem::size_of::<Self>() + path.len() + database.len()
    }

    fn to_json(&self) -> Value {
        json!({
            "timeStamp": iso_seconds(&self.at),
            "requestType": self.method.as_str(),
            "path": self.path,
            "database": self.database,
        })
    }
}

/// One AQL query as submitted: when, text, bind parameters, database.
#[derive(Clone, Debug)]
pub struct AqlQuery {
    pub at: DateTime<Utc>,
    pub query: String,
    pub bind_vars: Map<String, Value>,
    /// The bind parameters' size as JSON, measured once when recorded.
    bind_bytes: usize,
    pub database: String,
}

impl AqlQuery {
    /// The bind parameters' size as JSON (0 for none), counted without writing them out.
    fn bind_bytes_of(bind_vars: &Map<String, Value>) -> usize {
        if bind_vars.is_empty() {
            return 0;
        }
        let mut counted = ByteCount(0);
        // Counting bytes cannot fail.
        let _ = serde_json::to_writer(&mut counted, bind_vars);
        counted.0
    }

    /// The bytes of a query (as [`Recorded::bytes`]).
    fn bytes_of(query: &str, bind_bytes: usize, database: &str) -> usize {
        std::mem::size_of::<Self>() + query.len() + bind_bytes + database.len()
    }

    fn to_json(&self) -> Value {
        json!({
            "timeStamp": iso_seconds(&self.at),
            "query": self.query,
            "bindVars": self.bind_vars,
            "database": self.database,
        })
    }
}

impl Recorded for AqlQuery {
    fn bytes(&self) -> usize {
        AqlQuery::bytes_of(&self.query, self.bind_bytes, &self.database)
    }
}

/// An `io::Write` that only counts the bytes written to it.
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn iso_seconds(at: &DateTime<Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

struct Shard<T> {
    entries: VecDeque<(u64, T)>,
    bytes: usize,
}

/// The most recent entries of one kind, at most `limit` bytes together.
pub struct Recorder<T> {
    shards: Box<[Mutex<Shard<T>>]>,
    next: AtomicU64,
    shard_limit: usize,
}

/// The shard of the calling thread, given out round robin.
fn shard_of_thread() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    SHARD.with(|s| {
        if s.get() == usize::MAX {
            s.set(NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS);
        }
        s.get()
    })
}

impl<T: Recorded + Clone> Recorder<T> {
    /// A recorder keeping at most `limit` bytes (0 records nothing).
    pub fn new(limit: usize) -> Recorder<T> {
        Recorder {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        entries: VecDeque::new(),
                        bytes: 0,
                    })
                })
                .collect(),
            next: AtomicU64::new(0),
            shard_limit: limit / SHARDS,
        }
    }

    /// Whether entries are kept at all (a limit of 0 keeps none).
    pub fn is_on(&self) -> bool {
        self.shard_limit > 0
    }

    /// Keeps `entry`, dropping the oldest of its shard beyond the limit. An entry larger
    /// than a shard's share is not kept.
    pub fn record(&self, entry: T) {
        self.record_with(entry.bytes(), |_| entry);
    }

    /// As [`Recorder::record`], for an entry of `size` bytes that `make` builds, given the
    /// last entry dropped to make room for it, if any: a full recorder (the usual state after
    /// the first minutes of a busy server) then reuses that entry's allocations instead of
    /// freeing them and allocating new ones for every request.
    pub fn record_with(&self, size: usize, make: impl FnOnce(Option<T>) -> T) {
        if size > self.shard_limit {
            return;
        }
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        let mut shard = self.shards[shard_of_thread()].lock();
        let mut dropped = None;
        while shard.bytes + size > self.shard_limit {
            let (_, oldest) = shard
                .entries
                .pop_front()
                .expect("a shard over its limit holds entries");
            shard.bytes -= oldest.bytes();
            dropped = Some(oldest);
        }
        let entry = make(dropped);
        debug_assert_eq!(entry.bytes(), size);
        shard.bytes += size;
        shard.entries.push_back((seq, entry));
        debug_assert!(shard.bytes <= self.shard_limit);
    }

    /// Every entry kept, newest first.
    pub fn newest_first(&self) -> Vec<T> {
        let mut all: Vec<(u64, T)> = Vec::new();
        for shard in self.shards.iter() {
            all.extend(shard.lock().entries.iter().cloned());
        }
        all.sort_unstable_by_key(|e| std::cmp::Reverse(e.0));
        all.into_iter().map(|(_, e)| e).collect()
    }
}

/// The two recordings of the server.
pub struct Recordings {
    pub api_calls: Recorder<ApiCall>,
    pub aql_queries: Recorder<AqlQuery>,
}

/// The memory each recording may take, in bytes (0: nothing is recorded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordingLimits {
    pub api_calls: usize,
    pub aql_queries: usize,
}

impl Default for RecordingLimits {
    fn default() -> RecordingLimits {
        RecordingLimits {
            api_calls: DEFAULT_MEMORY_LIMIT,
            aql_queries: DEFAULT_MEMORY_LIMIT,
        }
    }
}

impl Default for Recordings {
    fn default() -> Recordings {
        Recordings::new(RecordingLimits::default())
    }
}

impl Recordings {
    /// Recordings within `limits`.
    pub fn new(limits: RecordingLimits) -> Recordings {
        Recordings {
            api_calls: Recorder::new(limits.api_calls),
            aql_queries: Recorder::new(limits.aql_queries),
        }
    }

    /// Records a call of `method` `path` (below `/_db/{database}`).
    pub fn api_call(&self, method: &http::Method, path: &str, database: &str) {
        if !self.api_calls.is_on() {
            return;
        }
        let at = Utc::now();
        let size = ApiCall::bytes_of(path, database);
        self.api_calls.record_with(size, |dropped| match dropped {
            Some(mut call) => {
                call.at = at;
                call.method = method.clone();
                call.path.clear();
                call.path.push_str(path);
                call.database.clear();
                call.database.push_str(database);
                call
            }
            None => ApiCall {
                at,
                method: method.clone(),
                path: path.to_owned(),
                database: database.to_owned(),
            },
        });
    }

    /// Records a submitted AQL query.
    pub fn aql_query(&self, query: &str, bind_vars: &Map<String, Value>, database: &str) {
        if !self.aql_queries.is_on() {
            return;
        }
        let at = Utc::now();
        let bind_bytes = AqlQuery::bind_bytes_of(bind_vars);
        let size = AqlQuery::bytes_of(query, bind_bytes, database);
        // As for API calls, a full recorder's dropped entry lends its allocations.
        self.aql_queries.record_with(size, |dropped| match dropped {
            Some(mut entry) => {
                entry.at = at;
                entry.query.clear();
                entry.query.push_str(query);
                entry.bind_vars.clone_from(bind_vars);
                entry.bind_bytes = bind_bytes;
                entry.database.clear();
                entry.database.push_str(database);
                entry
            }
            None => AqlQuery {
                at,
                query: query.to_owned(),
                bind_vars: bind_vars.clone(),
                bind_bytes,
                database: database.to_owned(),
            },
        });
    }

    /// The `result` of `/_admin/server/api-calls`.
    pub fn api_calls_json(&self) -> Value {
        let calls: Vec<Value> = self
            .api_calls
            .newest_first()
            .iter()
            .map(ApiCall::to_json)
            .collect();
        json!({ "calls": calls })
    }

    /// The `result` of `/_admin/server/aql-queries`.
    pub fn aql_queries_json(&self) -> Value {
        let queries: Vec<Value> = self
            .aql_queries
            .newest_first()
            .iter()
            .map(AqlQuery::to_json)
            .collect();
        json!({ "queries": queries })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_first_and_bounded_by_bytes() {
        let one = ApiCall {
            at: Utc::now(),
            method: http::Method::GET,
            path: "/_api/version".into(),
            database: "_system".into(),
        }
        .bytes();
        // Room for three entries per shard.
        let recorder: Recorder<ApiCall> = Recorder::new(SHARDS * (3 * one + one / 2));
        for i in 0..10 {
            recorder.record(ApiCall {
                at: Utc::now(),
                method: http::Method::GET,
                // Same length as "/_api/version".
                path: format!("/_api/versio{i}"),
                database: "_system".into(),
            });
        }
        let kept: Vec<String> = recorder
            .newest_first()
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert_eq!(kept, ["/_api/versio9", "/_api/versio8", "/_api/versio7"]);
    }

    #[test]
    fn a_full_recording_reuses_dropped_calls_with_their_new_contents() {
        let one = ApiCall::bytes_of("/_api/version", "_system");
        let recordings = Recordings::new(RecordingLimits {
            api_calls: SHARDS * (4 * one),
            aql_queries: 0,
        });
        // Paths and databases longer and shorter than the dropped calls' own.
        for i in 0..12 {
            let path = format!("/_api/document/c/{}", "k".repeat(i % 3));
            let database = if i % 2 == 0 { "_system" } else { "db1" };
            recordings.api_call(&http::Method::PUT, &path, database);
        }
        let calls = recordings.api_calls_json();
        let list = calls["calls"].as_array().unwrap();
        assert!(list.len() >= 3, "{calls}");
        for (call, i) in list.iter().zip((0..12).rev()) {
            assert_eq!(
                call["path"],
                format!("/_api/document/c/{}", "k".repeat(i % 3))
            );
            assert_eq!(call["database"], if i % 2 == 0 { "_system" } else { "db1" });
            assert_eq!(call["requestType"], "PUT");
        }
        let shard = recordings.api_calls.shards[shard_of_thread()].lock();
        let held: usize = shard.entries.iter().map(|(_, c)| c.bytes()).sum();
        assert_eq!(held, shard.bytes);
        assert!(shard.bytes <= recordings.api_calls.shard_limit);
    }

    #[test]
    fn a_full_recording_reuses_dropped_queries_with_their_new_contents() {
        let binds_of = |i: usize| {
            let mut binds = Map::new();
            for n in 0..i % 3 {
                binds.insert(format!("v{n}"), json!("x".repeat(i)));
            }
            binds
        };
        let one = AqlQuery::bytes_of("RETURN @v0", 40, "_system");
        let recordings = Recordings::new(RecordingLimits {
            api_calls: 0,
            aql_queries: SHARDS * (4 * one),
        });
        for i in 0..12 {
            let database = if i % 2 == 0 { "_system" } else { "db1" };
            let query = format!("RETURN {}", "@v0 ".repeat(i % 3));
            recordings.aql_query(&query, &binds_of(i), database);
        }
        let queries = recordings.aql_queries_json();
        let list = queries["queries"].as_array().unwrap();
        assert!(list.len() >= 3, "{queries}");
        for (entry, i) in list.iter().zip((0..12).rev()) {
            assert_eq!(entry["query"], format!("RETURN {}", "@v0 ".repeat(i % 3)));
            assert_eq!(entry["bindVars"], Value::Object(binds_of(i)));
            assert_eq!(
                entry["database"],
                if i % 2 == 0 { "_system" } else { "db1" }
            );
        }
        let shard = recordings.aql_queries.shards[shard_of_thread()].lock();
        for (_, entry) in &shard.entries {
            let json_len = if entry.bind_vars.is_empty() {
                0
            } else {
                serde_json::to_vec(&entry.bind_vars).unwrap().len()
            };
            assert_eq!(entry.bind_bytes, json_len);
        }
        let held: usize = shard.entries.iter().map(|(_, q)| q.bytes()).sum();
        assert_eq!(held, shard.bytes);
        assert!(shard.bytes <= recordings.aql_queries.shard_limit);
    }

    #[test]
    fn entries_larger_than_a_shard_are_not_kept_and_zero_keeps_nothing() {
        let recordings = Recordings::new(RecordingLimits {
            api_calls: 0,
            aql_queries: SHARDS * 1024,
        });
        recordings.api_call(&http::Method::GET, "/_api/version", "_system");
        assert_eq!(recordings.api_calls_json(), json!({"calls": []}));
        let mut binds = Map::new();
        binds.insert("x".into(), json!("y".repeat(2000)));
        recordings.aql_query("RETURN @x", &binds, "_system");
        recordings.aql_query("RETURN 1", &Map::new(), "db1");
        let queries = recordings.aql_queries_json();
        let list = queries["queries"].as_array().unwrap();
        assert_eq!(list.len(), 1, "{queries}");
        assert_eq!(list[0]["query"], "RETURN 1");
        assert_eq!(list[0]["database"], "db1");
        assert_eq!(list[0]["bindVars"], json!({}));
        assert!(list[0]["timeStamp"].as_str().unwrap().ends_with('Z'));
    }
}
