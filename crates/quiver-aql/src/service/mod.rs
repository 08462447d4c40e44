//! The query service behind `/_api/cursor`, `/_api/explain`, `/_api/query`.
//!
//! Every method takes the database name and the typed request the HTTP layer read from the
//! body ([`CursorRequest`], [`ExplainRequest`], [`PropertiesUpdate`]) and returns typed
//! results that the HTTP layer writes as JSON: cursor batches ([`CursorBatch`], its `extra` a
//! [`QueryExtra`]), explained and parsed queries ([`ExplainResult`], [`ParseResult`]), query
//! properties ([`QueryProperties`]), the listings of running and slow queries and of the
//! caches (one JSON object per entry), or nothing for a clear or kill. The HTTP status and
//! the envelope (`error`, `code`) are the HTTP layer's. Failures are a `quiver_errors::Error`
//! that the HTTP layer turns into ArangoDB's error envelope.
//!
//! This file is the facade: planning (through the plan cache) and running queries. Open
//! cursors live in the cursor registry (`cursors.rs`), the cursor protocol is in
//! `batches.rs`, the batch it answers in `batch.rs`, and running and slow queries in the
//! query registry (`queries.rs`). Non-streaming queries run to
//! completion inside `create_cursor` (their writes are committed before the first batch is
//! returned) and keep only the remaining results; streaming queries keep their executor and
//! transaction and produce each batch on demand, committing when the last row has been
//! produced.

mod batch;
mod batches;
mod cursors;
mod explained;
mod queries;
mod query_metrics;
mod request;
mod result_caching;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{Map, Value};

use crate::exec::{ExecCtx, Execution, Limits, DEFAULT_MEMORY_CAP};
use crate::explain;
use crate::expr::eval::EnvState;
use crate::held::{Hold, HoldCaps};
use crate::limits::GlobalMemory;
use crate::optimizer::{self, OptimizeOptions, RuleSelection};
use crate::parser;
use crate::plan::{self, QueryPlan};
use crate::plan_cache::{CachedPlan, NoData, PlanCache, PlanEntry, PlanKey};
use crate::plan_template::Substitution;
pub use crate::query_extra::{ProfileTimings, QueryExtra, QueryStatistics};
use crate::results_cache::ResultsCache;
use crate::run_history::RunHistory;
use crate::source::DataSource;
use crate::value::estimate_size;
pub use batch::CursorBatch;
use batches::cursor_with_values;
pub use cursors::MAX_CURSORS;
use cursors::{Cursor, CursorData, CursorRegistry, StreamState};
pub use explained::{ExplainResult, ExplainStats, ParseResult};
pub use queries::QueryProperties;
use queries::QueryRegistry;
pub use query_metrics::QueryFigures;
pub use request::{CursorRequest, ExplainRequest, PropertiesUpdate};

/// The rows a non-streaming cursor keeps are charged to the cursor caps in steps of this
/// many estimated bytes (one lock per step, not per row).
const HOLD_STEP: u64 = 1 << 20;

/// Query execution, cursors and the query registry of one server.
pub struct QueryService {
    source: Arc<dyn DataSource>,
    cursors: CursorRegistry,
    queries: QueryRegistry,
    /// Ids of queries and cursors (one sequence, as in ArangoDB).
    next_id: AtomicU64,
    plans: PlanCache,
    /// Results of read-only queries (`/_api/query-cache`).
    results: ResultsCache,
    /// `--query.memory-limit`: the budget of a query that sets no `memoryLimit`.
    default_memory_limit: AtomicU64,
    /// What all running queries hold (`--query.global-memory-limit`).
    memory: Arc<GlobalMemory>,
    /// How long the recent runs of each query text took.
    history: RunHistory,
    /// Whether queries use plan templates (see [`crate::plan_template`]).
    plan_templates: AtomicBool,
}

/// A query ready to run: its transaction, plan, stage timings and its plan-cache entry.
struct Prepared {
    txn: Box<dyn crate::source::Transaction>,
    plan: Arc<QueryPlan>,
    parsing: f64,
    optimizing: f64,
    cached: Option<Arc<CachedPlan>>,
    /// The plan cache entry's key when the plan came from it (`planCacheKey`).
    plan_cache_key: Option<u64>,
}

/// `usePlanCache` asks for a query ArangoDB would not cache a plan of: error 1584 for the
/// options and plan nodes ArangoDB names (`optimizer.rules`, `allPlans`, `UPSERT`). QuiverDB's
/// plan cache itself is keyed by every bind value that can shape a plan, so the
/// bind-parameter positions ArangoDB also excludes (attribute names, traversal depths, graph
/// names) are eligible here.
fn check_plan_cache_eligible(
    rules: &[String],
    all_plans: bool,
    plan: Option<&QueryPlan>,
) -> Result<()> {
    let why = if !rules.is_empty() {
        Some("optimizer rules are set")
    } else if all_plans {
        Some("allPlans is set")
    } else if plan.is_some_and(|p| has_upsert(&p.root)) {
        Some("it contains an UPSERT")
    } else {
        None
    };
    match why {
        Some(why) => Err(Error::with_message(
            ErrorCode::QueryNotEligibleForPlanCaching,
            format!("query is not eligible for plan caching because {why}"),
        )),
        None => Ok(()),
    }
}

fn has_upsert(plan: &plan::Plan) -> bool {
    plan.nodes.iter().any(|n| match &n.kind {
        plan::NodeKind::Modify(m) => m.kind == crate::ast::ModifyKind::Upsert,
        plan::NodeKind::Subquery { plan: sub, .. } => has_upsert(sub),
        _ => false,
    })
}

/// The bind parameters as part of a plan-cache key.
fn binds_key(bind_vars: &Map<String, Value>) -> String {
    if bind_vars.is_empty() {
        String::new()
    } else {
        serde_json::to_string(bind_vars).unwrap_or_default()
    }
}

/// What [`QueryService::prepare`] was asked to plan.
struct PlanRequest<'a> {
    db: &'a str,
    query: &'a str,
    bind_vars: &'a Map<String, Value>,
    rules: &'a [String],
    full_count: bool,
    limits: &'a Limits,
    /// The catalog version read before planning.
    version: Option<u64>,
    t0: Instant,
}

/// Plans and optimizes a parsed query for `bind_vars`, choosing among the indexes `txn`
/// lists.
fn plan_query(
    ast: &crate::ast::Query,
    bind_vars: &Map<String, Value>,
    txn: &dyn crate::source::Transaction,
    rules: &[String],
    full_count: bool,
    limits: &Limits,
) -> Result<QueryPlan> {
    let mut plan = plan::build(ast, bind_vars, txn, limits)?;
    let mut indexes = crate::index_select::IndexCatalog {
        hints: plan.index_hints.clone(),
        ..Default::default()
    };
    for name in plan.collections.keys() {
        let mut list = vec![crate::index_select::primary_index()];
        list.extend(txn.secondary_indexes(name)?);
        for analyzer in list
            .iter()
            .filter(|ix| ix.kind == "inverted")
            .flat_map(crate::inverted_select::analyzer_names)
        {
            if !indexes.geo_analyzers.contains(&analyzer)
                && txn.analyzer(&analyzer).is_ok_and(|a| a.is_geo())
            {
                indexes.geo_analyzers.insert(analyzer);
            }
        }
        // Views and other sources without a count have no indexes to choose from.
        if let Ok(count) = txn.count(name) {
            indexes.collections.insert(name.clone(), (count, list));
        }
    }
    optimizer::optimize(
        &mut plan,
        &OptimizeOptions {
            rules: RuleSelection::from_options(rules),
            full_count,
            indexes,
            limits: limits.clone(),
        },
    )?;
    crate::index_select::check_forced_hints(&plan)?;
    Ok(plan)
}

/// Collections a plan writes (a write transaction must declare them up front).
fn written_collections(plan: &QueryPlan) -> Vec<String> {
    plan.collections
        .iter()
        .filter(|(_, t)| **t == "write")
        .map(|(n, _)| n.clone())
        .collect()
}

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message)
}

impl QueryService {
    /// The production service over quiver-core.
    pub fn over_core(core: Arc<quiver_core::Core>) -> QueryService {
        QueryService::new(Arc::new(crate::source::core::CoreSource::new(core)))
    }

    /// A service reading and writing through `source` (quiver-core in the server, the
    /// in-memory source in tests).
    pub fn new(source: Arc<dyn DataSource>) -> QueryService {
        let seed = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs() % 1_000_000)
            * 1000;
        QueryService {
            source,
            cursors: CursorRegistry::new(),
            queries: QueryRegistry::new(),
            next_id: AtomicU64::new(seed + 1),
            plans: PlanCache::default(),
            results: ResultsCache::default(),
            default_memory_limit: AtomicU64::new(DEFAULT_MEMORY_CAP),
            memory: Arc::new(GlobalMemory::default()),
            history: RunHistory::default(),
            plan_templates: AtomicBool::new(true),
        }
    }

    /// Whether the recent runs of `query` in `db` were all brief (see [`crate::run_history`]):
    /// the caller may run it on a thread it shares, with a [`crate::handoff::Handoff`] in
    /// case this run is not.
    pub fn runs_briefly(&self, db: &str, query: &str) -> bool {
        let version = self.source.catalog_version().unwrap_or(0);
        self.history.brief(self.history.key(db, query), version)
    }

    /// Sets `--query.memory-limit` (the budget of a query without its own `memoryLimit`;
    /// 0 = none) and `--query.global-memory-limit` (all running queries together; 0 = none).
    pub fn set_memory_limits(&self, per_query: u64, global: u64) {
        let per_query = if per_query == 0 { u64::MAX } else { per_query };
        self.default_memory_limit
            .store(per_query, Ordering::Relaxed);
        self.memory.set_limit(global);
    }

    /// Estimated bytes held by running queries now.
    pub fn memory_in_use(&self) -> u64 {
        self.memory.used()
    }

    /// Sets the caps on open cursors: how many and how many estimated bytes of results they
    /// may hold, overall and per user (`--query.max-open-cursors`,
    /// `--query.cursors-memory-limit` and their `-per-user` counterparts; 0 = none).
    pub fn set_cursor_caps(&self, caps: HoldCaps) {
        self.cursors.held().set_caps(caps);
    }

    /// Open cursors and the estimated bytes of results they hold, overall, and of `user`.
    pub fn cursor_holdings(&self, user: Option<&str>) -> (usize, u64) {
        self.purge_expired();
        match user {
            Some(u) => self.cursors.held().in_use_by(u),
            None => self.cursors.held().in_use(),
        }
    }

    /// A query's budget: its own `memoryLimit` (which may exceed the server's default, as
    /// with ArangoDB's default `--query.memory-limit-override`), else the server's.
    fn memory_limit_for(&self, requested: u64) -> u64 {
        if requested > 0 {
            requested
        } else {
            self.default_memory_limit.load(Ordering::Relaxed)
        }
    }

    fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Parses, plans and optimizes a query (or takes its plan from the plan cache) and opens
    /// its transaction (unless one is `given`); `limits` (kill flag, `maxRuntime`) are
    /// checked throughout. A query whose vertex parameters have string values uses its
    /// text's plan template ([`crate::plan_template`]).
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        &self,
        db: &str,
        query: &str,
        bind_vars: &Map<String, Value>,
        rules: &[String],
        full_count: bool,
        given: Option<Box<dyn crate::source::Transaction>>,
        limits: &Limits,
    ) -> Result<Prepared> {
        let t0 = Instant::now();
        // Read before planning: a catalog change landing meanwhile makes this entry stale.
        let version = self.source.catalog_version();
        let templates = self.plan_templates.load(Ordering::Relaxed);
        let known = if templates {
            self.plans.vertex_params(query)
        } else {
            None
        };
        let request = PlanRequest {
            db,
            query,
            bind_vars,
            rules,
            full_count,
            limits,
            version,
            t0,
        };
        if let Some(sub) = known
            .as_deref()
            .and_then(|params| Substitution::new(bind_vars, params))
        {
            return self.prepare_templated(&request, &sub, given, None);
        }
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
                plan_cache_key: Some(self.plans.key_hash(&key)),
            });
        }
        let ast = parser::parse_within(query, Some(limits))?;
        if templates && known.is_none() {
            let params: Arc<[String]> = plan::vertex_only_params(&ast).into();
            self.plans.remember_vertex_params(query, params.clone());
            if let Some(sub) = Substitution::new(bind_vars, &params) {
                return self.prepare_templated(&request, &sub, given, Some(ast));
            }
        }
        let parsing = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let leased = given.is_some();
        let mut txn = match given {
            Some(txn) => txn,
            None => self.source.begin(db, &[])?,
        };
        let plan = plan_query(&ast, bind_vars, &*txn, rules, full_count, limits)?;
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
            plan_cache_key: None,
        })
    }

    /// [`QueryService::prepare`] through the text's plan template: the template is cached
    /// under the bind values with placeholders and filled in with this query's values.
    fn prepare_templated(
        &self,
        req: &PlanRequest<'_>,
        sub: &Substitution,
        given: Option<Box<dyn crate::source::Transaction>>,
        ast: Option<crate::ast::Query>,
    ) -> Result<Prepared> {
        let binds = binds_key(&sub.template_binds);
        let key = PlanKey {
            database: req.db,
            query: req.query,
            binds: &binds,
            rules: req.rules,
            full_count: req.full_count,
        };
        if let Some(hit) = req.version.and_then(|v| self.plans.get(&key, v)) {
            let (plan, _) = sub.apply(&hit.plan);
            let txn = match given {
                Some(txn) => txn,
                None => self.source.begin(req.db, &written_collections(&plan))?,
            };
            return Ok(Prepared {
                txn,
                plan: Arc::new(plan),
                parsing: 0.0,
                optimizing: req.t0.elapsed().as_secs_f64(),
                cached: Some(hit),
                plan_cache_key: Some(self.plans.key_hash(&key)),
            });
        }
        let ast = match ast {
            Some(ast) => ast,
            None => parser::parse_within(req.query, Some(req.limits))?,
        };
        let parsing = req.t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let leased = given.is_some();
        let mut txn = match given {
            Some(txn) => txn,
            None => self.source.begin(req.db, &[])?,
        };
        let template = plan_query(
            &ast,
            &sub.template_binds,
            &*txn,
            req.rules,
            req.full_count,
            req.limits,
        )?;
        let (plan, cached) = if sub.covers(&template) {
            let (plan, _) = sub.apply(&template);
            let cached = req
                .version
                .and_then(|v| self.plans.insert(&key, v, Arc::new(template)));
            if cached.is_none() {
                // Not cacheable (planning read a named graph, no catalog version...): filling
                // in a template would only add to planning per value.
                self.plans.remember_vertex_params(req.query, Arc::from([]));
            }
            (plan, cached)
        } else {
            // A placeholder landed where it is not filled in: the text is planned per value.
            self.plans.remember_vertex_params(req.query, Arc::from([]));
            let plan = plan_query(
                &ast,
                req.bind_vars,
                &*txn,
                req.rules,
                req.full_count,
                req.limits,
            )?;
            (plan, None)
        };
        if plan.is_modification && !leased {
            txn = self.source.begin(req.db, &written_collections(&plan))?;
        }
        Ok(Prepared {
            txn,
            plan: Arc::new(plan),
            parsing,
            optimizing: t1.elapsed().as_secs_f64(),
            cached,
            plan_cache_key: None,
        })
    }

    /// Turns plan templates off (every query is planned for its own bind values, as a
    /// reference for tests) or on again (the default).
    pub fn set_plan_templates(&self, on: bool) {
        self.plan_templates.store(on, Ordering::Relaxed);
    }

    /// `POST /_api/cursor`, every result row a value.
    pub fn create_cursor(&self, db: &str, req: CursorRequest) -> Result<CursorBatch> {
        self.create_cursor_with(db, req, None)?.into_values()
    }

    /// `POST /_api/cursor` for the HTTP layer: result rows may be documents as stored JSON
    /// text ([`CursorBatch::raw_rows`]), to be written into the response without parsing.
    pub fn create_cursor_raw(&self, db: &str, req: CursorRequest) -> Result<CursorBatch> {
        self.create_cursor_with(db, req, None)
    }

    /// `POST /_api/cursor` inside a transaction the caller owns (a stream transaction, see
    /// `source::core::leased`): the query reads and writes through `txn`, whose `commit`
    /// hands it back to the caller. The result is always computed in full before this
    /// returns (`stream: true` is treated as false): a streaming cursor would keep using the
    /// transaction after the request that lent it has ended.
    pub fn create_cursor_in(
        &self,
        db: &str,
        req: CursorRequest,
        txn: Box<dyn crate::source::Transaction>,
    ) -> Result<CursorBatch> {
        self.create_cursor_with(db, req, Some(txn))?.into_values()
    }

    /// [`QueryService::create_cursor_run`], its time recorded in the run history.
    fn create_cursor_with(
        &self,
        db: &str,
        req: CursorRequest,
        given: Option<Box<dyn crate::source::Transaction>>,
    ) -> Result<CursorBatch> {
        let started = Instant::now();
        let version = self.source.catalog_version().unwrap_or(0);
        let text = self.history.key(db, &req.query);
        let mut writes = false;
        let answer = self.create_cursor_run(db, req, given, &mut writes);
        let brief = !writes && started.elapsed() <= crate::run_history::BRIEF_RUN;
        self.history.record(text, brief, version);
        answer
    }

    /// Runs a query; `writes` is set once its plan is known to write.
    fn create_cursor_run(
        &self,
        db: &str,
        mut req: CursorRequest,
        given: Option<Box<dyn crate::source::Transaction>>,
        writes: &mut bool,
    ) -> Result<CursorBatch> {
        if req.batch_size == 0 {
            return Err(bad("expecting non-zero value for 'batchSize'"));
        }
        if given.is_some() {
            req.stream = false;
        }
        self.purge_expired();
        // A kept result is answered before anything is parsed.
        let mut candidate = if self.uses_results_cache(&req, given.is_some()) {
            if let Some(reply) = self.cached_cursor(db, &req) {
                return Ok(reply);
            }
            Some(result_caching::Candidate::for_request(&req))
        } else {
            None
        };
        // The query is listed (and can be killed) and its `maxRuntime` runs from before it is
        // parsed, as in ArangoDB.
        let killed = Arc::new(AtomicBool::new(false));
        let limits = Limits {
            deadline: (req.max_runtime > 0.0)
                .then(|| Instant::now() + Duration::from_secs_f64(req.max_runtime.min(1e9))),
            killed: killed.clone(),
            memory_limit: self.memory_limit_for(req.memory_limit),
            global: Some(self.memory.clone()),
            handoff: req.handoff.take(),
        };
        let query_id = self.new_id();
        self.queries.register(query_id, db, &req, killed, false);
        let prepared = self.prepare(
            db,
            &req.query,
            &req.bind_vars,
            &req.rules,
            req.full_count,
            given,
            &limits,
        );
        let Prepared {
            txn,
            plan,
            parsing,
            optimizing,
            cached,
            plan_cache_key,
        } = match prepared.and_then(|p| {
            if req.use_plan_cache {
                check_plan_cache_eligible(&req.rules, false, Some(&p.plan))?;
            }
            Ok(p)
        }) {
            Ok(prepared) => prepared,
            Err(e) => {
                self.queries.unregister(query_id, 0, e.number());
                return Err(e);
            }
        };
        let plan_cache_key = plan_cache_key.filter(|_| req.use_plan_cache);
        if let Some(c) = &mut candidate {
            c.reads_snapshot(txn.snapshot_tick());
        }
        // The caller's rights, checked at every collection the query touches while it runs
        // (which a query that may keep its result also records).
        let access = match &candidate {
            Some(c) => Some(c.observing(req.access.clone())),
            None => req.access.clone(),
        };
        let txn: Box<dyn crate::source::Transaction> = match access {
            Some(access) => Box::new(crate::source::checked::CheckedTransaction::new(txn, access)),
            None => txn,
        };
        *writes = plan.is_modification;
        self.queries
            .set_modification(query_id, plan.is_modification);
        let ctx = ExecCtx::new(
            txn,
            db,
            EnvState::new(req.max_warning_count, req.fail_on_warning),
            limits,
            req.profile >= 2,
        );
        let mut exec = Execution::new(&plan, ctx);
        let started = Instant::now();
        if req.stream {
            let first = self.pull(&mut exec, req.batch_size + 1);
            let mut values = match first {
                Ok(v) => v,
                Err(e) => {
                    self.queries.unregister(query_id, 0, e.number());
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
                raw_result: plan.raw_result(),
                cached: false,
                hold: None,
            };
            let mut batch = cursor_with_values(&mut cursor, values, self, parsing, optimizing)?;
            batch.plan_cache_key = plan_cache_key;
            return self.respond_first(batch, cursor, req.user.as_deref());
        }
        // Non-streaming: run to completion, commit, keep the results. What is left after the
        // first batch is held by the cursor: charged to the cursor caps while the query runs,
        // so that a result too large to keep fails the query before its writes commit.
        let mut results = VecDeque::new();
        let mut hold: Option<Hold> = None;
        let outcome: Result<()> = (|| {
            let mut pending = 0u64;
            while let Some(v) = exec.next_value()? {
                let size = estimate_size(&v);
                exec.ctx.charge(size)?;
                results.push_back(v);
                if results.len() > req.batch_size {
                    pending += size;
                    match &mut hold {
                        None => {
                            hold = Some(self.cursors.held().hold(req.user.as_deref(), pending)?);
                            pending = 0;
                        }
                        Some(h) if pending >= HOLD_STEP => {
                            h.grow(pending)?;
                            pending = 0;
                        }
                        Some(_) => {}
                    }
                }
            }
            if let Some(h) = &mut hold {
                h.grow(pending)?;
            }
            Ok(())
        })();
        if let Err(e) = outcome {
            self.queries
                .unregister(query_id, exec.ctx.stats.peak_memory, e.number());
            return Err(e);
        }
        if let Some(h) = &mut hold {
            // The kept rows stay counted against the global memory limit.
            let kept = h.bytes();
            h.keep_global(exec.ctx.keep_global(kept));
        }
        let executing = started.elapsed().as_secs_f64();
        if let Some(cached) = &cached {
            cached.ran(started.elapsed());
        }
        let (stats, warnings) = match exec.finish() {
            Ok(v) => v,
            Err(e) => {
                self.queries.unregister(query_id, 0, e.number());
                return Err(e);
            }
        };
        self.queries.unregister(query_id, stats.peak_memory, 0);
        let mut extra = QueryExtra {
            warnings,
            stats: QueryStatistics::of_run(
                &stats,
                parsing + optimizing + executing,
                req.full_count,
                Some(&plan),
                req.profile,
            ),
            profile: None,
            plan: None,
        };
        if req.profile >= 1 {
            extra.profile = Some(ProfileTimings {
                parsing,
                optimizing,
                executing,
            });
            extra.plan = Some(self.plan_json_for(db, &plan));
        }
        let extra = Arc::new(extra);
        if let Some(candidate) = candidate {
            let warned = !extra.warnings.is_empty();
            self.keep_result(
                db,
                &req,
                candidate,
                &plan,
                &results,
                warned,
                &extra,
                parsing + optimizing + executing,
            );
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
            raw_result: plan.raw_result(),
            cached: false,
            hold,
        };
        let mut batch = self.next_batch_of(&mut cursor, None)?;
        batch.plan_cache_key = plan_cache_key;
        self.respond_first(batch, cursor, req.user.as_deref())
    }

    /// `POST /_api/cursor` for a query whose cached plan is trivial (see [`crate::plan_cache`]):
    /// run on the calling thread without a snapshot, transaction, query registration or
    /// cursor. `None` when the query does not
    /// qualify (not cached yet, not trivial, or options that need the full path: `stream`,
    /// `profile`, `allowRetry`, a slow-query threshold near zero); the caller then uses
    /// [`QueryService::create_cursor`], whose answer is the same.
    pub fn create_cursor_inline(
        &self,
        db: &str,
        req: &CursorRequest,
    ) -> Option<Result<CursorBatch>> {
        if req.stream
            || req.profile > 0
            || req.allow_retry
            || req.batch_size == 0
            || self.queries.log_fast_queries(db)
            || self.uses_results_cache(req, false)
            || req.use_plan_cache
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
        Some(self.run_inline(db, req, &cached))
    }

    fn run_inline(
        &self,
        db: &str,
        req: &CursorRequest,
        cached: &CachedPlan,
    ) -> Result<CursorBatch> {
        let started = Instant::now();
        let limits = Limits {
            deadline: (req.max_runtime > 0.0)
                .then(|| started + Duration::from_secs_f64(req.max_runtime.min(1e9))),
            killed: Arc::new(AtomicBool::new(false)),
            memory_limit: self.memory_limit_for(req.memory_limit),
            global: Some(self.memory.clone()),
            handoff: None,
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
        self.queries.metrics.finished(started.elapsed(), false);
        outcome?;
        // What a cursor would keep beyond the first batch stays counted against the global
        // memory limit after the query ends.
        let held: u64 = results.iter().skip(req.batch_size).map(estimate_size).sum();
        let kept = exec.ctx.keep_global(held);
        let (stats, warnings) = exec.finish()?;
        let execution_time = started.elapsed().as_secs_f64();
        let extra = Arc::new(QueryExtra {
            warnings,
            stats: QueryStatistics::of_run(&stats, execution_time, req.full_count, None, 0),
            profile: None,
            plan: None,
        });
        if results.len() > req.batch_size {
            // More than one batch: a cursor after all, exactly as the full path makes it.
            let mut hold = self.cursors.held().hold(req.user.as_deref(), held)?;
            hold.keep_global(kept);
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
                raw_result: false,
                cached: false,
                hold: Some(hold),
            };
            let batch = self.next_batch_of(&mut cursor, None)?;
            return self.respond_first(batch, cursor, req.user.as_deref());
        }
        Ok(CursorBatch {
            count: req.count.then_some(results.len() as u64),
            rows: results,
            raw_rows: false,
            has_more: false,
            id: None,
            next_batch_id: None,
            extra: Some(extra),
            cached: false,
            plan_cache_key: None,
        })
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

    /// `POST /_api/explain`.
    pub fn explain(&self, db: &str, req: &ExplainRequest) -> Result<ExplainResult> {
        let ExplainRequest {
            query,
            bind_vars,
            rules,
            all_plans,
            profile,
            use_plan_cache,
        } = req;
        let t0 = Instant::now();
        if *use_plan_cache {
            check_plan_cache_eligible(rules, *all_plans, None)?;
        }
        let Prepared {
            txn,
            plan,
            plan_cache_key,
            ..
        } = self.prepare(
            db,
            query,
            bind_vars,
            rules,
            false,
            None,
            &Limits::unlimited(),
        )?;
        let counts = |c: &str| txn.count(c).unwrap_or(0);
        let plan_json = explain::plan_json(&plan, db, &counts);
        let rules_executed = plan.rule_seconds.len();
        let stats = ExplainStats {
            rules_executed,
            rules_skipped: optimizer::RULES.len().saturating_sub(rules_executed),
            plans_created: 1,
            execution_time: t0.elapsed().as_secs_f64().max(1e-6),
            rule_seconds: (*profile >= 2)
                .then(|| crate::query_extra::owned_rule_seconds(&plan.rule_seconds)),
        };
        if *use_plan_cache {
            check_plan_cache_eligible(rules, false, Some(&plan))?;
        }
        Ok(ExplainResult {
            plan: plan_json,
            all_plans: *all_plans,
            cacheable: plan.cacheable,
            plan_cache_key: plan_cache_key.filter(|_| *use_plan_cache),
            stats,
        })
    }

    /// `POST /_api/query` (parse without executing).
    pub fn parse(&self, _db: &str, query: &str) -> Result<ParseResult> {
        let ast = parser::parse(query)?;
        Ok(ParseResult {
            collections: explain::collection_names(&ast),
            bind_vars: plan::bind_parameter_names(&ast),
            ast: explain::ast_json(&ast),
        })
    }

    /// `GET /_api/query/current`.
    pub fn current(&self, db: &str) -> Result<Vec<Value>> {
        self.queries.current(db)
    }

    /// `GET /_api/query/slow`.
    pub fn slow(&self, db: &str) -> Result<Vec<Value>> {
        self.queries.slow(db)
    }

    /// `DELETE /_api/query/slow`.
    pub fn clear_slow(&self, db: &str) -> Result<()> {
        self.queries.clear_slow(db)
    }

    /// `DELETE /_api/query/{id}`.
    pub fn kill(&self, db: &str, id: &str) -> Result<()> {
        self.queries.kill(db, id)
    }

    /// `GET /_api/query/properties` of database `db`.
    pub fn properties(&self, db: &str) -> Result<QueryProperties> {
        self.queries.properties(db)
    }

    /// `PUT /_api/query/properties` of database `db` (each database has its own).
    pub fn set_properties(&self, db: &str, update: &PropertiesUpdate) -> Result<QueryProperties> {
        self.queries.set_properties(db, update)
    }

    /// Forgets the slow queries and query properties of database `db`, which was dropped.
    pub fn forget_database(&self, db: &str) {
        self.queries.forget_database(db)
    }

    /// `GET /_api/query-plan-cache`: the plans cached for `db` whose every collection
    /// `access` lets the caller read (all of them without an access rule).
    pub fn plan_cache_entries(
        &self,
        db: &str,
        access: Option<&crate::source::checked::CollectionAccess>,
    ) -> Result<Vec<PlanEntry>> {
        let readable = |sources: &[String]| {
            access.is_none_or(|a| sources.iter().all(|c| a.check(c, false).is_ok()))
        };
        Ok(self
            .plans
            .entries(db)
            .into_iter()
            .filter(|e| readable(&e.data_sources))
            .collect())
    }

    /// `DELETE /_api/query-plan-cache`: forgets the plans cached for `db`.
    pub fn clear_plan_cache(&self, db: &str) -> Result<()> {
        self.plans.clear(db);
        Ok(())
    }

    /// `GET /_api/query/rules`: the names of the optimizer rules, in the order they run.
    pub fn rules(&self) -> &'static [&'static str] {
        optimizer::RULES
    }

    /// Every running query of every database: (id, database, query text), by id
    /// (`/_admin/activities`).
    pub fn running_queries(&self) -> Vec<(u64, String, String)> {
        self.queries.running_everywhere()
    }

    /// The AQL figures for monitoring.
    pub fn figures(&self) -> QueryFigures {
        self.queries
            .figures(self.open_cursors() as u64, self.memory.used())
    }

    /// Number of open cursors (for tests and metrics).
    pub fn open_cursors(&self) -> usize {
        self.purge_expired();
        self.cursors.len()
    }
}
