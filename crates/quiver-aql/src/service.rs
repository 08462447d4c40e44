//! The JSON-in/JSON-out query service behind `/_api/cursor`, `/_api/explain`, `/_api/query`.
//!
//! Every method takes the database name and the parsed request body (use `Value::Null` when
//! the request had no body) and returns `(http_status, response_body)` for success or a
//! `quiver_errors::Error` that the HTTP layer turns into ArangoDB's error envelope.
//!
//! Cursors live in a registry keyed by id. Non-streaming queries run to completion inside
//! `create_cursor` (their writes are committed before the first batch is returned) and keep
//! only the remaining results; streaming queries keep their executor and transaction and
//! produce each batch on demand, committing when the last row has been produced.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Map, Value};

use crate::exec::{ExecCtx, Execution, Limits, Stats};
use crate::explain;
use crate::expr::eval::EnvState;
use crate::optimizer::{self, OptimizeOptions, RuleSelection};
use crate::parser;
use crate::plan::{self, QueryPlan};
use crate::plan_cache::{CachedPlan, NoData, PlanCache, PlanKey};
use crate::source::DataSource;
use crate::value::estimate_size;
use crate::value::Warning;

/// `(HTTP status, JSON body)` of a successful call.
pub type ServiceReply = (u16, Value);

/// Upper bound of open cursors per service; creating more fails with a resource error
/// instead of growing without bound.
const MAX_CURSORS: usize = 16_384;

/// Batch size limit so a client cannot ask for one unbounded batch of a streaming query.
const MAX_BATCH_SIZE: u64 = 1_000_000;

/// `/_api/query/properties`.
#[derive(Clone, Debug)]
struct QueryProperties {
    enabled: bool,
    track_slow_queries: bool,
    track_bind_vars: bool,
    max_slow_queries: u64,
    slow_query_threshold: f64,
    slow_streaming_query_threshold: f64,
    max_query_string_length: u64,
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

fn seconds_json(f: f64) -> Value {
    crate::value::number(f)
}

impl QueryProperties {
    fn to_json(&self) -> Value {
        json!({
            "error": false,
            "code": 200,
            "enabled": self.enabled,
            "trackSlowQueries": self.track_slow_queries,
            "trackBindVars": self.track_bind_vars,
            "maxSlowQueries": self.max_slow_queries,
            "slowQueryThreshold": seconds_json(self.slow_query_threshold),
            "slowStreamingQueryThreshold": seconds_json(self.slow_streaming_query_threshold),
            "maxQueryStringLength": self.max_query_string_length,
        })
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
}

enum CursorData {
    /// Results of a query that already ran to completion.
    Materialized(VecDeque<Value>),
    /// A streaming query still producing rows.
    Streaming(Box<StreamState>),
}

struct StreamState {
    exec: Option<Execution>,
    peeked: Option<Value>,
    plan: Arc<QueryPlan>,
    query_id: u64,
    profile: u8,
    started: Instant,
}

struct Cursor {
    database: String,
    batch_size: usize,
    ttl: Duration,
    expires: Instant,
    count: Option<u64>,
    data: CursorData,
    /// Extra of a materialized cursor (repeated with every batch) or of a finished stream.
    extra: Option<Value>,
    /// Number of the batch delivered last (the first response is batch 1).
    batch_id: u64,
    last_batch: Option<Value>,
    allow_retry: bool,
    exhausted: bool,
}

/// Query execution, cursors and the query registry of one server.
pub struct QueryService {
    source: Arc<dyn DataSource>,
    cursors: Mutex<HashMap<String, Arc<Mutex<Cursor>>>>,
    running: Mutex<HashMap<u64, RunningQuery>>,
    slow: Mutex<HashMap<String, VecDeque<Value>>>,
    properties: Mutex<QueryProperties>,
    next_id: AtomicU64,
    plans: PlanCache,
    /// The slow-query log would record queries taking about as long as an inline one
    /// (threshold near zero): inline runs are not registered, so they are off then.
    log_fast_queries: AtomicBool,
}

/// A query ready to run: its transaction, plan, stage timings and its plan-cache entry.
struct Prepared {
    txn: Box<dyn crate::source::Transaction>,
    plan: Arc<QueryPlan>,
    parsing: f64,
    optimizing: f64,
    cached: Option<Arc<CachedPlan>>,
}

/// The bind parameters as part of a plan-cache key.
fn binds_key(bind_vars: &Map<String, Value>) -> String {
    if bind_vars.is_empty() {
        String::new()
    } else {
        serde_json::to_string(bind_vars).unwrap_or_default()
    }
}

/// Collections a plan writes (a write transaction must declare them up front).
fn written_collections(plan: &QueryPlan) -> Vec<String> {
    plan.collections
        .iter()
        .filter(|(_, t)| **t == "write")
        .map(|(n, _)| n.clone())
        .collect()
}

/// Options of `POST /_api/cursor` after validation.
struct CursorRequest {
    query: String,
    bind_vars: Map<String, Value>,
    count: bool,
    batch_size: usize,
    ttl: f64,
    memory_limit: u64,
    full_count: bool,
    stream: bool,
    profile: u8,
    max_runtime: f64,
    rules: Vec<String>,
    fail_on_warning: bool,
    max_warning_count: usize,
    allow_retry: bool,
}

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message)
}

fn as_bool(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => s == "true" || s == "1",
        _ => false,
    }
}

fn as_f64(v: Option<&Value>) -> Option<f64> {
    match v {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.parse().ok(),
        _ => None,
    }
}

fn query_text(body: &Value) -> Result<String> {
    let Value::Object(obj) = body else {
        if body.is_null() {
            return Err(Error::with_message(ErrorCode::QueryEmpty, "query is empty"));
        }
        return Err(Error::new(ErrorCode::HttpCorruptedJson));
    };
    match obj.get("query") {
        None if obj.is_empty() => Err(Error::new(ErrorCode::HttpCorruptedJson)),
        None | Some(Value::Null) => {
            Err(Error::with_message(ErrorCode::QueryEmpty, "query is empty"))
        }
        Some(Value::String(s)) if s.is_empty() => {
            Err(Error::with_message(ErrorCode::QueryEmpty, "query is empty"))
        }
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(Error::with_message(
            ErrorCode::QueryEmpty,
            "expecting non-empty string for 'query'",
        )),
    }
}

fn bind_vars_of(body: &Value) -> Result<Map<String, Value>> {
    match body.get("bindVars") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(Error::with_message(
            ErrorCode::QueryBindParametersInvalid,
            "invalid structure of bind parameters",
        )),
    }
}

fn rules_of(options: Option<&Value>) -> Vec<String> {
    options
        .and_then(|o| o.get("optimizer"))
        .and_then(|o| o.get("rules"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl CursorRequest {
    fn from_body(body: &Value) -> Result<CursorRequest> {
        let query = query_text(body)?;
        let bind_vars = bind_vars_of(body)?;
        let options = body.get("options");
        let opt = |name: &str| options.and_then(|o| o.get(name)).or_else(|| body.get(name));
        let batch_size = match body.get("batchSize") {
            None | Some(Value::Null) => 1000,
            Some(v) => match as_f64(Some(v)) {
                Some(f) if f >= 1.0 => (f as u64).min(MAX_BATCH_SIZE) as usize,
                _ => return Err(bad("expecting non-zero value for 'batchSize'")),
            },
        };
        let ttl = match as_f64(body.get("ttl")) {
            Some(t) if t > 0.0 => t.min(86_400.0 * 30.0),
            _ => 30.0,
        };
        let profile = match opt("profile") {
            Some(Value::Bool(true)) => 1,
            Some(Value::Number(n)) => n.as_u64().unwrap_or(0).min(2) as u8,
            _ => 0,
        };
        Ok(CursorRequest {
            query,
            bind_vars,
            count: as_bool(body.get("count")),
            batch_size,
            ttl,
            memory_limit: as_f64(body.get("memoryLimit"))
                .or_else(|| as_f64(opt("memoryLimit")))
                .unwrap_or(0.0)
                .max(0.0) as u64,
            full_count: as_bool(opt("fullCount")),
            stream: as_bool(opt("stream")),
            profile,
            max_runtime: as_f64(opt("maxRuntime")).unwrap_or(0.0).max(0.0),
            rules: rules_of(options),
            fail_on_warning: as_bool(opt("failOnWarning")),
            max_warning_count: as_f64(opt("maxWarningCount"))
                .map_or(10, |f| f.max(0.0) as usize)
                .min(100_000),
            allow_retry: as_bool(opt("allowRetry")),
        })
    }
}

fn warnings_json(warnings: &[Warning]) -> Value {
    Value::Array(warnings.iter().map(Warning::to_json).collect())
}

fn stats_json(
    stats: &Stats,
    execution_time: f64,
    full_count: bool,
    plan: Option<&QueryPlan>,
    profile: u8,
) -> Value {
    // Sized up front: this map is built for every query and rehashing showed in profiles.
    let mut m = Map::with_capacity(17);
    let entries: [(&str, Value); 15] = [
        ("writesExecuted", stats.writes_executed.into()),
        ("writesIgnored", stats.writes_ignored.into()),
        ("documentLookups", stats.document_lookups.into()),
        ("seeks", 0.into()),
        ("scannedFull", stats.scanned_full.into()),
        ("scannedIndex", stats.scanned_index.into()),
        ("cursorsCreated", 0.into()),
        ("cursorsRearmed", 0.into()),
        ("cacheHits", 0.into()),
        ("cacheMisses", 0.into()),
        ("filtered", stats.filtered.into()),
        ("httpRequests", 0.into()),
        ("executionTime", execution_time.max(1e-6).into()),
        ("peakMemoryUsage", stats.peak_memory.into()),
        ("intermediateCommits", 0.into()),
    ];
    for (k, v) in entries {
        m.insert(k.to_string(), v);
    }
    if full_count {
        m.insert("fullCount".into(), json!(stats.full_count.unwrap_or(0)));
    }
    if profile >= 2 {
        if let Some(p) = plan {
            m.insert(
                "nodes".into(),
                Value::Array(explain::node_stats_json(&p.root, &stats.nodes)),
            );
        }
    }
    Value::Object(m)
}

/// The response body of a finished query whose results fit one batch, written directly: the
/// same JSON (member order included) that the general path builds as a `Value`, without
/// building it. The constant members of `extra.stats` are one literal.
fn single_batch_body(
    results: &[Value],
    count: bool,
    warnings: &[Warning],
    stats: &Stats,
    execution_time: f64,
    full_count: bool,
) -> Vec<u8> {
    use std::io::Write as _;
    let mut out: Vec<u8> = Vec::with_capacity(320 + results.len() * 8);
    out.extend_from_slice(b"{\"result\":");
    // Writing JSON values into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut out, results);
    out.extend_from_slice(b",\"hasMore\":false");
    if count {
        let _ = write!(out, ",\"count\":{}", results.len());
    }
    out.extend_from_slice(b",\"extra\":{\"warnings\":");
    if warnings.is_empty() {
        out.extend_from_slice(b"[]");
    } else {
        let _ = serde_json::to_writer(&mut out, &warnings_json(warnings));
    }
    let _ = write!(
        out,
        ",\"stats\":{{\"writesExecuted\":{},\"writesIgnored\":{},\"documentLookups\":{},\"seeks\":0,\"scannedFull\":{},\"scannedIndex\":{},\"cursorsCreated\":0,\"cursorsRearmed\":0,\"cacheHits\":0,\"cacheMisses\":0,\"filtered\":{},\"httpRequests\":0,\"executionTime\":",
        stats.writes_executed,
        stats.writes_ignored,
        stats.document_lookups,
        stats.scanned_full,
        stats.scanned_index,
        stats.filtered,
    );
    let _ = serde_json::to_writer(&mut out, &execution_time.max(1e-6));
    let _ = write!(
        out,
        ",\"peakMemoryUsage\":{},\"intermediateCommits\":0",
        stats.peak_memory
    );
    if full_count {
        let _ = write!(out, ",\"fullCount\":{}", stats.full_count.unwrap_or(0));
    }
    out.extend_from_slice(b"}},\"cached\":false,\"error\":false,\"code\":201}");
    out
}

fn iso_time(t: SystemTime) -> String {
    let dt: chrono::DateTime<chrono::Utc> = t.into();
    dt.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Stage timings of `extra.profile`.
struct ProfileTimings {
    parsing: f64,
    optimizing: f64,
    executing: f64,
}

impl ProfileTimings {
    fn json(&self) -> Value {
        let tiny = 1e-6;
        json!({
            "initializing": tiny,
            "parsing": self.parsing.max(tiny),
            "optimizing ast": tiny,
            "loading collections": tiny,
            "instantiating plan": tiny,
            "optimizing plan": self.optimizing.max(tiny),
            "instantiating executors": tiny,
            "executing": self.executing.max(tiny),
            "finalizing": tiny,
        })
    }
}

impl QueryService {
    /// A service reading and writing through `source` (quiver-core in the server, the
    /// in-memory source in tests).
    /// The production service over quiver-core.
    pub fn over_core(core: Arc<quiver_core::Core>) -> QueryService {
        QueryService::new(Arc::new(crate::source::core::CoreSource::new(core)))
    }

    pub fn new(source: Arc<dyn DataSource>) -> QueryService {
        let seed = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs() % 1_000_000)
            * 1000;
        QueryService {
            source,
            cursors: Mutex::new(HashMap::new()),
            running: Mutex::new(HashMap::new()),
            slow: Mutex::new(HashMap::new()),
            properties: Mutex::new(QueryProperties::default()),
            next_id: AtomicU64::new(seed + 1),
            plans: PlanCache::default(),
            log_fast_queries: AtomicBool::new(false),
        }
    }

    fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    fn purge_expired(&self) {
        let now = Instant::now();
        let mut expired = Vec::new();
        self.cursors.lock().retain(|_, c| {
            let keep = c.try_lock().is_none_or(|c| c.expires > now);
            if !keep {
                expired.push(c.clone());
            }
            keep
        });
        // Outside the registry lock: dropping a streaming execution aborts its writes, and
        // its query leaves the list of running queries.
        for c in expired {
            if let Some(mut c) = c.try_lock() {
                if let CursorData::Streaming(state) = &mut c.data {
                    let peak = state.exec.as_ref().map_or(0, |e| e.ctx.stats.peak_memory);
                    state.exec = None;
                    self.unregister(state.query_id, peak, ErrorCode::CursorNotFound.number());
                }
            }
        }
    }

    /// Parses, plans and optimizes a query (or takes its plan from the plan cache) and opens
    /// its transaction (unless one is `given`).
    fn prepare(
        &self,
        db: &str,
        query: &str,
        bind_vars: &Map<String, Value>,
        rules: &[String],
        full_count: bool,
        given: Option<Box<dyn crate::source::Transaction>>,
    ) -> Result<Prepared> {
        let t0 = Instant::now();
        // Read before planning: a catalog change landing meanwhile makes this entry stale.
        let version = self.source.catalog_version();
        let binds = binds_key(bind_vars);
        let key = PlanKey {
            database: db,
            query,
            binds: &binds,
            rules,
            full_count,
        };
        if let Some(hit) = version.and_then(|v| self.plans.get(&key, v)) {
            let txn = match given {
                Some(txn) => txn,
                None => self.source.begin(db, &written_collections(&hit.plan))?,
            };
            return Ok(Prepared {
                txn,
                plan: hit.plan.clone(),
                parsing: 0.0,
                optimizing: t0.elapsed().as_secs_f64(),
                cached: Some(hit),
            });
        }
        let ast = parser::parse(query)?;
        let parsing = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let leased = given.is_some();
        let mut txn = match given {
            Some(txn) => txn,
            None => self.source.begin(db, &[])?,
        };
        let mut plan = plan::build(&ast, bind_vars, &*txn)?;
        let mut indexes = crate::index_select::IndexCatalog {
            hints: plan.index_hints.clone(),
            ..Default::default()
        };
        for name in plan.collections.keys() {
            let list = txn.secondary_indexes(name)?;
            if !list.is_empty() {
                let count = txn.count(name)?;
                indexes.collections.insert(name.clone(), (count, list));
            }
        }
        optimizer::optimize(
            &mut plan,
            &OptimizeOptions {
                rules: RuleSelection::from_options(rules),
                full_count,
                indexes,
            },
        );
        crate::index_select::check_forced_hints(&plan)?;
        if plan.is_modification && !leased {
            // Writers declare their collections up front (the storage transaction locks and
            // validates them); planning above only needed a read view.
            txn = self.source.begin(db, &written_collections(&plan))?;
        }
        let plan = Arc::new(plan);
        let cached = version.and_then(|v| self.plans.insert(&key, v, plan.clone()));
        Ok(Prepared {
            txn,
            plan,
            parsing,
            optimizing: t1.elapsed().as_secs_f64(),
            cached,
        })
    }

    fn register(
        &self,
        db: &str,
        req: &CursorRequest,
        killed: Arc<AtomicBool>,
        modification: bool,
    ) -> u64 {
        let id = self.new_id();
        let track_bind = self.properties.lock().track_bind_vars;
        self.running.lock().insert(
            id,
            RunningQuery {
                database: db.to_string(),
                query: req.query.clone(),
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
            },
        );
        id
    }

    fn unregister(&self, id: u64, peak_memory: u64, exit_code: u32) {
        let Some(q) = self.running.lock().remove(&id) else {
            return;
        };
        let props = self.properties.lock().clone();
        let runtime = q.started_at.elapsed().as_secs_f64();
        let threshold = if q.stream {
            props.slow_streaming_query_threshold
        } else {
            props.slow_query_threshold
        };
        if props.enabled && props.track_slow_queries && runtime >= threshold {
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
            "user": "root",
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

    /// `POST /_api/cursor`.
    pub fn create_cursor(&self, db: &str, body: Value) -> Result<ServiceReply> {
        self.create_cursor_with(db, body, None)
    }

    /// `POST /_api/cursor` inside a transaction the caller owns (a stream transaction, see
    /// `source::core::leased`): the query reads and writes through `txn`, whose `commit`
    /// hands it back to the caller. The result is always computed in full before this
    /// returns (`stream: true` is treated as false): a streaming cursor would keep using the
    /// transaction after the request that lent it has ended.
    pub fn create_cursor_in(
        &self,
        db: &str,
        body: Value,
        txn: Box<dyn crate::source::Transaction>,
    ) -> Result<ServiceReply> {
        self.create_cursor_with(db, body, Some(txn))
    }

    fn create_cursor_with(
        &self,
        db: &str,
        body: Value,
        given: Option<Box<dyn crate::source::Transaction>>,
    ) -> Result<ServiceReply> {
        let mut req = CursorRequest::from_body(&body)?;
        if given.is_some() {
            req.stream = false;
        }
        self.purge_expired();
        let Prepared {
            txn,
            plan,
            parsing,
            optimizing,
            cached,
        } = self.prepare(
            db,
            &req.query,
            &req.bind_vars,
            &req.rules,
            req.full_count,
            given,
        )?;
        let killed = Arc::new(AtomicBool::new(false));
        let limits = Limits {
            deadline: (req.max_runtime > 0.0)
                .then(|| Instant::now() + Duration::from_secs_f64(req.max_runtime.min(1e9))),
            killed: killed.clone(),
            memory_limit: req.memory_limit,
        };
        let ctx = ExecCtx::new(
            txn,
            db,
            EnvState::new(req.max_warning_count, req.fail_on_warning),
            limits,
            req.profile >= 2,
        );
        let query_id = self.register(db, &req, killed, plan.is_modification);
        let mut exec = Execution::new(&plan, ctx);
        let started = Instant::now();
        if req.stream {
            let first = self.pull(&mut exec, req.batch_size + 1);
            let mut values = match first {
                Ok(v) => v,
                Err(e) => {
                    self.unregister(query_id, 0, e.number());
                    return Err(e);
                }
            };
            let peeked = if values.len() > req.batch_size {
                values.pop()
            } else {
                None
            };
            let mut cursor = Cursor {
                database: db.to_string(),
                batch_size: req.batch_size,
                ttl: Duration::from_secs_f64(req.ttl),
                expires: Instant::now() + Duration::from_secs_f64(req.ttl),
                count: None,
                data: CursorData::Streaming(Box::new(StreamState {
                    exec: Some(exec),
                    peeked,
                    plan: plan.clone(),
                    query_id,
                    profile: req.profile,
                    started,
                })),
                extra: None,
                batch_id: 0,
                last_batch: None,
                allow_retry: req.allow_retry,
                exhausted: false,
            };
            return self.respond_first(
                cursor_with_values(&mut cursor, values, self, parsing, optimizing)?,
                cursor,
                201,
            );
        }
        // Non-streaming: run to completion, commit, keep the results.
        let mut results = VecDeque::new();
        let outcome: Result<()> = (|| {
            while let Some(v) = exec.next_value()? {
                exec.ctx.charge(estimate_size(&v))?;
                results.push_back(v);
            }
            Ok(())
        })();
        if let Err(e) = outcome {
            self.unregister(query_id, exec.ctx.stats.peak_memory, e.number());
            return Err(e);
        }
        let executing = started.elapsed().as_secs_f64();
        if let Some(cached) = &cached {
            cached.ran(started.elapsed());
        }
        let (stats, warnings) = match exec.finish() {
            Ok(v) => v,
            Err(e) => {
                self.unregister(query_id, 0, e.number());
                return Err(e);
            }
        };
        self.unregister(query_id, stats.peak_memory, 0);
        let mut extra = json!({
            "warnings": warnings_json(&warnings),
            "stats": stats_json(&stats, parsing + optimizing + executing, req.full_count, Some(&plan), req.profile),
        });
        if req.profile >= 1 {
            extra["profile"] = ProfileTimings {
                parsing,
                optimizing,
                executing,
            }
            .json();
            extra["plan"] = self.plan_json_for(db, &plan);
        }
        let count = results.len() as u64;
        let mut cursor = Cursor {
            database: db.to_string(),
            batch_size: req.batch_size,
            ttl: Duration::from_secs_f64(req.ttl),
            expires: Instant::now() + Duration::from_secs_f64(req.ttl),
            count: req.count.then_some(count),
            data: CursorData::Materialized(results),
            extra: Some(extra),
            batch_id: 0,
            last_batch: None,
            allow_retry: req.allow_retry,
            exhausted: false,
        };
        let body = self.next_body(&mut cursor, None)?;
        self.respond_first(body, cursor, 201)
    }

    /// `POST /_api/cursor` for a query whose cached plan is trivial (see [`crate::plan_cache`]):
    /// run on the calling thread without a snapshot, transaction, query registration or
    /// cursor, the response written straight into bytes. `None` when the query does not
    /// qualify (not cached yet, not trivial, or options that need the full path: `stream`,
    /// `profile`, `allowRetry`, a slow-query threshold near zero); the caller then uses
    /// [`QueryService::create_cursor`], whose answer is the same.
    pub fn create_cursor_inline(&self, db: &str, body: &Value) -> Option<Result<(u16, Vec<u8>)>> {
        let req = CursorRequest::from_body(body).ok()?;
        if req.stream
            || req.profile > 0
            || req.allow_retry
            || self.log_fast_queries.load(Ordering::Relaxed)
        {
            return None;
        }
        let version = self.source.catalog_version()?;
        let binds = binds_key(&req.bind_vars);
        let key = PlanKey {
            database: db,
            query: &req.query,
            binds: &binds,
            rules: &req.rules,
            full_count: req.full_count,
        };
        let cached = self.plans.get(&key, version)?;
        if !cached.inline() {
            return None;
        }
        Some(self.run_inline(db, &req, &cached))
    }

    fn run_inline(
        &self,
        db: &str,
        req: &CursorRequest,
        cached: &CachedPlan,
    ) -> Result<(u16, Vec<u8>)> {
        let started = Instant::now();
        let limits = Limits {
            deadline: (req.max_runtime > 0.0)
                .then(|| started + Duration::from_secs_f64(req.max_runtime.min(1e9))),
            killed: Arc::new(AtomicBool::new(false)),
            memory_limit: req.memory_limit,
        };
        let ctx = ExecCtx::new(
            Box::new(NoData),
            db,
            EnvState::new(req.max_warning_count, req.fail_on_warning),
            limits,
            false,
        );
        let mut exec = Execution::new(&cached.plan, ctx);
        let mut results = Vec::new();
        let outcome: Result<()> = (|| {
            while let Some(v) = exec.next_value()? {
                exec.ctx.charge(estimate_size(&v))?;
                results.push(v);
            }
            Ok(())
        })();
        cached.ran(started.elapsed());
        outcome?;
        let (stats, warnings) = exec.finish()?;
        let execution_time = started.elapsed().as_secs_f64();
        if results.len() > req.batch_size {
            // More than one batch: a cursor after all, exactly as the full path makes it.
            let extra = json!({
                "warnings": warnings_json(&warnings),
                "stats": stats_json(&stats, execution_time, req.full_count, None, 0),
            });
            let mut cursor = Cursor {
                database: db.to_string(),
                batch_size: req.batch_size,
                ttl: Duration::from_secs_f64(req.ttl),
                expires: Instant::now() + Duration::from_secs_f64(req.ttl),
                count: req.count.then_some(results.len() as u64),
                data: CursorData::Materialized(results.into()),
                extra: Some(extra),
                batch_id: 0,
                last_batch: None,
                allow_retry: false,
                exhausted: false,
            };
            let body = self.next_body(&mut cursor, None)?;
            let (code, body) = self.respond_first(body, cursor, 201)?;
            let bytes = serde_json::to_vec(&body)
                .map_err(|e| Error::with_message(ErrorCode::Internal, e.to_string()))?;
            return Ok((code, bytes));
        }
        Ok((
            201,
            single_batch_body(
                &results,
                req.count,
                &warnings,
                &stats,
                execution_time,
                req.full_count,
            ),
        ))
    }

    fn plan_json_for(&self, db: &str, plan: &QueryPlan) -> Value {
        let txn = self.source.begin(db, &[]).ok();
        let counts = |c: &str| txn.as_ref().and_then(|t| t.count(c).ok()).unwrap_or(0);
        explain::plan_json(plan, db, &counts)
    }

    fn pull(&self, exec: &mut Execution, n: usize) -> Result<Vec<Value>> {
        let mut out = Vec::with_capacity(n.min(4096));
        while out.len() < n {
            match exec.next_value()? {
                Some(v) => out.push(v),
                None => break,
            }
        }
        Ok(out)
    }

    /// Stores the cursor if it has more to give (or must stay for retries) and sets the
    /// status code.
    fn respond_first(&self, mut body: Value, cursor: Cursor, code: u16) -> Result<ServiceReply> {
        body["code"] = json!(code);
        let keep = !cursor.exhausted || cursor.allow_retry;
        if keep {
            let id = body["id"].as_str().map(str::to_string);
            if let Some(id) = id {
                let mut cursors = self.cursors.lock();
                if cursors.len() >= MAX_CURSORS {
                    return Err(Error::with_message(
                        ErrorCode::ResourceLimit,
                        "too many open cursors",
                    ));
                }
                cursors.insert(id, Arc::new(Mutex::new(cursor)));
            }
        }
        Ok((code, body))
    }

    /// Produces the next batch of a cursor as a response body (without `code`).
    fn next_body(&self, cursor: &mut Cursor, id: Option<String>) -> Result<Value> {
        let values = match &mut cursor.data {
            CursorData::Materialized(results) => {
                let n = cursor.batch_size.min(results.len());
                results.drain(..n).collect::<Vec<_>>()
            }
            CursorData::Streaming(_) => Vec::new(),
        };
        if let CursorData::Materialized(results) = &cursor.data {
            cursor.exhausted = results.is_empty();
        }
        self.finish_body(cursor, values, id)
    }

    fn finish_body(
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
        let id = id.unwrap_or_else(|| self.new_id().to_string());
        if has_more || cursor.allow_retry {
            body.insert("id".into(), json!(id));
        }
        if has_more {
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
        body.insert("cached".into(), json!(false));
        body.insert("error".into(), json!(false));
        let body = Value::Object(body);
        if cursor.allow_retry {
            cursor.last_batch = Some(body.clone());
        }
        cursor.expires = Instant::now() + cursor.ttl;
        Ok(body)
    }

    /// `POST|PUT /_api/cursor/{id}` (`batch_id` None) and `POST /_api/cursor/{id}/{batchId}`.
    pub fn next_batch(&self, db: &str, id: &str, batch_id: Option<&str>) -> Result<ServiceReply> {
        self.purge_expired();
        let not_found = || Error::with_message(ErrorCode::CursorNotFound, "cursor not found");
        let handle = self.cursors.lock().get(id).cloned().ok_or_else(not_found)?;
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
                return Ok((200, body));
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
                self.cursors.lock().remove(id);
                return Err(e);
            }
        };
        body["code"] = json!(200);
        let remove = cursor.exhausted && !cursor.allow_retry;
        drop(cursor);
        if remove {
            self.cursors.lock().remove(id);
        }
        Ok((200, body))
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
        let mut cursors = self.cursors.lock();
        let matches = cursors
            .get(id)
            .is_some_and(|c| c.try_lock().is_none_or(|c| c.database == db));
        if !matches {
            return Err(Error::with_message(
                ErrorCode::CursorNotFound,
                "cursor not found",
            ));
        }
        if let Some(c) = cursors.remove(id) {
            drop(cursors);
            if let Some(mut c) = c.try_lock() {
                if let CursorData::Streaming(state) = &mut c.data {
                    let StreamState { query_id, exec, .. } = &mut **state;
                    let peak = exec.as_ref().map_or(0, |e| e.ctx.stats.peak_memory);
                    let qid = *query_id;
                    // Dropping the execution aborts its uncommitted writes.
                    *exec = None;
                    self.unregister(qid, peak, 0);
                }
            }
        }
        Ok((202, json!({"id": id, "error": false, "code": 202})))
    }

    /// `POST /_api/explain`.
    pub fn explain(&self, db: &str, body: Value) -> Result<ServiceReply> {
        let query = query_text(&body)?;
        let bind_vars = bind_vars_of(&body)?;
        let options = body.get("options");
        let rules = rules_of(options);
        let t0 = Instant::now();
        let Prepared { txn, plan, .. } =
            self.prepare(db, &query, &bind_vars, &rules, false, None)?;
        let counts = |c: &str| txn.count(c).unwrap_or(0);
        let plan_json = explain::plan_json(&plan, db, &counts);
        let rules_executed = plan.rules.len();
        let stats = json!({
            "rulesExecuted": optimizer::RULES.len(),
            "rulesSkipped": optimizer::RULES.len() - rules_executed.min(optimizer::RULES.len()),
            "plansCreated": 1,
            "peakMemoryUsage": 0,
            "executionTime": t0.elapsed().as_secs_f64().max(1e-6),
        });
        let all_plans = as_bool(options.and_then(|o| o.get("allPlans")));
        let mut out = json!({"warnings": [], "stats": stats, "error": false, "code": 200});
        if all_plans {
            out["plans"] = json!([plan_json]);
        } else {
            out["plan"] = plan_json;
            out["cacheable"] = json!(!plan.is_modification);
        }
        Ok((200, out))
    }

    /// `POST /_api/query` (parse without executing).
    pub fn parse(&self, _db: &str, body: Value) -> Result<ServiceReply> {
        let query = query_text(&body)?;
        let ast = parser::parse(&query)?;
        Ok((
            200,
            json!({
                "error": false,
                "code": 200,
                "parsed": true,
                "collections": explain::collection_names(&ast),
                "bindVars": plan::bind_parameter_names(&ast),
                "ast": explain::ast_json(&ast),
            }),
        ))
    }

    /// `GET /_api/query/current`.
    pub fn current(&self, db: &str) -> Result<ServiceReply> {
        let running = self.running.lock();
        let mut list: Vec<(u64, Value)> = running
            .iter()
            .filter(|(_, q)| q.database == db)
            .map(|(id, q)| (*id, Self::query_json(*id, q, 0)))
            .collect();
        list.sort_by_key(|(id, _)| *id);
        Ok((
            200,
            Value::Array(list.into_iter().map(|(_, v)| v).collect()),
        ))
    }

    /// `GET /_api/query/slow`.
    pub fn slow(&self, db: &str) -> Result<ServiceReply> {
        let slow = self.slow.lock();
        let list = slow
            .get(db)
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default();
        Ok((200, Value::Array(list)))
    }

    /// `DELETE /_api/query/slow`.
    pub fn clear_slow(&self, db: &str) -> Result<ServiceReply> {
        self.slow.lock().remove(db);
        Ok((200, json!({"error": false, "code": 200})))
    }

    /// `DELETE /_api/query/{id}`.
    pub fn kill(&self, db: &str, id: &str) -> Result<ServiceReply> {
        let running = self.running.lock();
        let q = id
            .parse::<u64>()
            .ok()
            .and_then(|n| running.get(&n))
            .filter(|q| q.database == db)
            .ok_or_else(|| Error::with_message(ErrorCode::QueryNotFound, "query ID not found"))?;
        q.killed.store(true, Ordering::Relaxed);
        Ok((200, json!({"error": false, "code": 200})))
    }

    /// `GET /_api/query/properties`.
    pub fn properties(&self, _db: &str) -> Result<ServiceReply> {
        Ok((200, self.properties.lock().to_json()))
    }

    /// `PUT /_api/query/properties`.
    pub fn set_properties(&self, db: &str, body: Value) -> Result<ServiceReply> {
        let Value::Object(m) = body else {
            return Err(Error::new(ErrorCode::HttpCorruptedJson));
        };
        {
            let mut p = self.properties.lock();
            let mut next = p.clone();
            for (k, v) in &m {
                let num = || {
                    as_f64(Some(v))
                        .filter(|f| *f >= 0.0)
                        .ok_or_else(|| bad(format!("invalid value for '{k}'")))
                };
                let flag = || {
                    v.as_bool()
                        .ok_or_else(|| bad(format!("invalid value for '{k}'")))
                };
                match k.as_str() {
                    "enabled" => next.enabled = flag()?,
                    "trackSlowQueries" => next.track_slow_queries = flag()?,
                    "trackBindVars" => next.track_bind_vars = flag()?,
                    "maxSlowQueries" => next.max_slow_queries = num()? as u64,
                    "slowQueryThreshold" => next.slow_query_threshold = num()?,
                    "slowStreamingQueryThreshold" => next.slow_streaming_query_threshold = num()?,
                    "maxQueryStringLength" => next.max_query_string_length = num()? as u64,
                    _ => {}
                }
            }
            // An inline run takes well under a millisecond; with a threshold that low the
            // slow log wants every query, which only the registered path records.
            self.log_fast_queries.store(
                next.enabled && next.track_slow_queries && next.slow_query_threshold < 0.001,
                Ordering::Relaxed,
            );
            *p = next;
        }
        self.properties(db)
    }

    /// `GET /_api/query/rules`.
    pub fn rules(&self) -> Result<ServiceReply> {
        let list: Vec<Value> = optimizer::RULES
            .iter()
            .map(|r| {
                json!({"name": r, "flags": {"hidden": false, "clusterOnly": false, "canBeDisabled": true,
                    "canCreateAdditionalPlans": false, "disabledByDefault": false, "enterpriseOnly": false}})
            })
            .collect();
        Ok((200, Value::Array(list)))
    }

    /// Number of open cursors (for tests and metrics).
    pub fn open_cursors(&self) -> usize {
        self.purge_expired();
        self.cursors.lock().len()
    }
}

/// Builds a streaming batch body from `values`; when the stream has ended, commits the
/// query's writes and attaches `extra`.
fn cursor_with_values(
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
                    service.unregister(*query_id, 0, err.number());
                    return Err(err);
                }
            };
            let executing = started.elapsed().as_secs_f64();
            service.unregister(*query_id, stats.peak_memory, 0);
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
