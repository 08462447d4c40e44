//! The plan cache: optimized plans of queries seen before, so that a repeated query skips
//! lexing, parsing, planning and optimizing.
//!
//! A plan is keyed by everything it was built from: database, query text, bind parameter
//! values (bind values are substituted and folded while planning, so the values are part of
//! the key, not just the names; a plan template holds a placeholder for the string value of
//! a start or target vertex parameter instead, see [`crate::plan_template`]), the
//! `optimizer.rules` option and `fullCount` (which turns
//! `sort-limit` off). What the plan read from the catalog (collection existence and type,
//! index lists) is covered by the source's catalog version: an entry built under another
//! version is stale and planned again. Plans whose planning read documents (named graphs read
//! `_graphs`) are never cached. The cache is invisible to clients: a hit returns the same plan
//! a fresh planning would have produced.
//!
//! The cache also decides which plans may run inline on the HTTP worker ([`CachedPlan::inline`]):
//! plans that touch no collection, iterate only constant lists of bounded size and call no
//! function that reads data or sleeps, and whose runs stay within [`INLINE_BUDGET`] (three
//! over-budget runs in a row demote a plan for good).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

use crate::expr::{CExpr, Slot};
use crate::plan::{ListSource, NodeKind, Plan, QueryPlan};
use crate::value::estimate_size;

/// At most this many plans are kept; when full, the cache starts over (simple and bounded:
/// a workload with more distinct queries than this does not profit from caching anyway).
const MAX_ENTRIES: usize = 1024;

/// Queries (and serialized bind parameters) longer than this are not cached: their keys and
/// plans would take much memory for little gain.
const MAX_KEY_TEXT: usize = 16 * 1024;

/// Plans whose constants (folded expressions, bind values, literal lists) are estimated
/// above this many bytes are not cached.
const MAX_PLAN_WEIGHT: u64 = 1 << 20;

/// Rows a plan may produce (over all its loops, nested ones multiplied) and still count as
/// trivial.
const TRIVIAL_ROWS: u64 = 10_000;

/// A trivial plan runs inline only while its runs take at most this long (wall time);
/// [`SLOW_STREAK`] longer runs in a row demote it for good.
pub const INLINE_BUDGET: Duration = Duration::from_micros(500);

/// Consecutive over-budget runs that demote a trivial plan. More than one: on a loaded
/// machine a run of a few microseconds now and then loses its core for a whole time slice,
/// which says nothing about the plan, while a plan that really is expensive is slow every
/// time.
const SLOW_STREAK: u32 = 3;

/// One cached plan.
pub struct CachedPlan {
    pub plan: Arc<QueryPlan>,
    /// The catalog version the plan was built under.
    pub version: u64,
    /// Statically cheap: see the module documentation.
    pub trivial: bool,
    /// Trivial, and not demoted by slow runs.
    inline_ok: AtomicBool,
    /// Over-budget runs in a row.
    slow_streak: AtomicU32,
    /// How often the plan was taken from the cache.
    hits: AtomicU64,
}

impl CachedPlan {
    /// Whether the plan may run inline on the caller's thread.
    pub fn inline(&self) -> bool {
        self.trivial && self.inline_ok.load(Ordering::Relaxed)
    }

    /// Records how long a run took; [`SLOW_STREAK`] slow runs in a row end inline execution
    /// of this plan.
    pub fn ran(&self, took: Duration) {
        if !self.trivial {
            return;
        }
        if took <= INLINE_BUDGET {
            self.slow_streak.store(0, Ordering::Relaxed);
        } else if self.slow_streak.fetch_add(1, Ordering::Relaxed) + 1 >= SLOW_STREAK {
            self.inline_ok.store(false, Ordering::Relaxed);
        }
    }
}

/// What a plan was built from.
pub struct PlanKey<'a> {
    pub database: &'a str,
    pub query: &'a str,
    /// The bind parameters serialized (empty without any).
    pub binds: &'a str,
    pub rules: &'a [String],
    pub full_count: bool,
}

impl PlanKey<'_> {
    fn hash(&self, state: &impl BuildHasher) -> u64 {
        let mut h = state.build_hasher();
        self.database.hash(&mut h);
        self.query.hash(&mut h);
        self.binds.hash(&mut h);
        self.rules.hash(&mut h);
        self.full_count.hash(&mut h);
        h.finish()
    }

    /// Whether the key is small enough to be cached.
    pub fn cacheable(&self) -> bool {
        self.query.len() <= MAX_KEY_TEXT && self.binds.len() <= MAX_KEY_TEXT
    }
}

struct Entry {
    database: Box<str>,
    query: Box<str>,
    binds: Box<str>,
    rules: Box<[String]>,
    full_count: bool,
    plan: Arc<CachedPlan>,
    /// When the plan was cached (ISO 8601, UTC).
    created: String,
    /// Estimated bytes: the key's texts and the plan's constants.
    memory: u64,
}

impl Entry {
    fn matches(&self, key: &PlanKey<'_>) -> bool {
        *self.query == *key.query
            && *self.database == *key.database
            && *self.binds == *key.binds
            && *self.rules == *key.rules
            && self.full_count == key.full_count
    }
}

#[derive(Default)]
struct Entries {
    /// By key hash; collisions share the bucket.
    buckets: HashMap<u64, Vec<Entry>>,
    len: usize,
}

/// The cache of one query service.
#[derive(Default)]
pub struct PlanCache {
    hasher: std::collections::hash_map::RandomState,
    entries: Mutex<Entries>,
    /// By query text: its vertex parameters ([`crate::plan::vertex_only_params`]), so that
    /// a query with new values finds its plan template without being parsed.
    vertex_params: Mutex<HashMap<Box<str>, Arc<[String]>>>,
}

impl PlanCache {
    /// The number `GET /_api/query-plan-cache` lists as the entry's `hash` and a query that
    /// used the entry answers as `planCacheKey`.
    pub fn key_hash(&self, key: &PlanKey<'_>) -> u64 {
        key.hash(&self.hasher)
    }

    /// The plan cached for `key`, if it was built under catalog `version`.
    pub fn get(&self, key: &PlanKey<'_>, version: u64) -> Option<Arc<CachedPlan>> {
        let hash = key.hash(&self.hasher);
        let entries = self.entries.lock();
        entries
            .buckets
            .get(&hash)?
            .iter()
            .find(|e| e.matches(key))
            .filter(|e| e.plan.version == version)
            .map(|e| {
                e.plan.hits.fetch_add(1, Ordering::Relaxed);
                e.plan.clone()
            })
    }

    /// The plans cached for `database`, as `GET /_api/query-plan-cache` lists them.
    pub fn entries(&self, database: &str) -> Vec<PlanEntry> {
        let entries = self.entries.lock();
        let mut out: Vec<PlanEntry> = entries
            .buckets
            .iter()
            .flat_map(|(hash, bucket)| bucket.iter().map(move |e| (*hash, e)))
            .filter(|(_, e)| *e.database == *database)
            .map(|(hash, e)| PlanEntry {
                hash,
                query: e.query.to_string(),
                query_hash: text_hash(&e.query),
                binds: e.binds.to_string(),
                full_count: e.full_count,
                data_sources: e.plan.plan.collections.keys().cloned().collect(),
                created: e.created.clone(),
                hits: e.plan.hits.load(Ordering::Relaxed),
                memory: e.memory,
            })
            .collect();
        debug_assert!(
            out.len() <= MAX_ENTRIES,
            "the cache holds at most MAX_ENTRIES plans"
        );
        out.sort_by(|a, b| a.created.cmp(&b.created).then(a.query.cmp(&b.query)));
        out
    }

    /// Drops every plan cached for `database`.
    pub fn clear(&self, database: &str) {
        let mut entries = self.entries.lock();
        let mut removed = 0;
        entries.buckets.retain(|_, bucket| {
            let before = bucket.len();
            bucket.retain(|e| *e.database != *database);
            removed += before - bucket.len();
            !bucket.is_empty()
        });
        entries.len -= removed;
    }

    /// Caches `plan` (built under catalog `version`) if it may be cached; returns the entry.
    /// A trivial plan may run inline until runs (reported through [`CachedPlan::ran`]) keep
    /// taking longer than the budget.
    pub fn insert(
        &self,
        key: &PlanKey<'_>,
        version: u64,
        plan: Arc<QueryPlan>,
    ) -> Option<Arc<CachedPlan>> {
        if !key.cacheable() {
            return None;
        }
        let weight = cacheable_weight(&plan)?;
        let trivial = is_trivial(&plan);
        let cached = Arc::new(CachedPlan {
            plan,
            version,
            trivial,
            inline_ok: AtomicBool::new(true),
            slow_streak: AtomicU32::new(0),
            hits: AtomicU64::new(0),
        });
        let hash = key.hash(&self.hasher);
        let mut entries = self.entries.lock();
        if entries.len >= MAX_ENTRIES {
            entries.buckets.clear();
            entries.len = 0;
        }
        let bucket = entries.buckets.entry(hash).or_default();
        let before = bucket.len();
        bucket.retain(|e| !e.matches(key));
        let removed = before - bucket.len();
        bucket.push(Entry {
            database: key.database.into(),
            query: key.query.into(),
            binds: key.binds.into(),
            rules: key.rules.into(),
            full_count: key.full_count,
            plan: cached.clone(),
            created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            memory: (key.query.len() + key.binds.len()) as u64 + weight,
        });
        entries.len = entries.len + 1 - removed;
        Some(cached)
    }

    /// The vertex parameters of `query`, if the text was seen before (an empty list when
    /// it has none).
    pub fn vertex_params(&self, query: &str) -> Option<Arc<[String]>> {
        self.vertex_params.lock().get(query).cloned()
    }

    /// Remembers the vertex parameters of `query` (a syntactic property of the text, valid
    /// for every database and catalog version); at most [`MAX_ENTRIES`] texts of at most
    /// [`MAX_KEY_TEXT`] bytes (then it starts over).
    pub fn remember_vertex_params(&self, query: &str, params: Arc<[String]>) {
        if query.len() > MAX_KEY_TEXT {
            return;
        }
        let mut texts = self.vertex_params.lock();
        if texts.len() >= MAX_ENTRIES {
            texts.clear();
        }
        texts.insert(query.into(), params);
    }

    /// Number of cached plans.
    pub fn len(&self) -> usize {
        self.entries.lock().len
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Calls `f` for every expression of every node (subqueries included).
fn for_each_expr(plan: &Plan, f: &mut dyn FnMut(&CExpr)) {
    for node in &plan.nodes {
        match &node.kind {
            NodeKind::Calculation { expr, .. } => f(expr),
            NodeKind::EnumerateList {
                input: ListSource::Range(a, b),
                ..
            } => {
                f(a);
                f(b);
            }
            NodeKind::Index { lookup, .. } => f(lookup),
            NodeKind::IndexScan(scan) => {
                for c in &scan.eq {
                    let (crate::plan::EqCond::Eq(e) | crate::plan::EqCond::In(e)) = c;
                    f(e);
                }
                for (e, _) in scan.lower.iter().chain(scan.upper.iter()) {
                    f(e);
                }
                scan.condition.iter().for_each(&mut *f);
                if let Some(mdi) = &scan.mdi {
                    mdi.expressions().into_iter().for_each(&mut *f);
                }
            }
            NodeKind::Modify(m) => {
                if let Some(e) = &m.upsert_update {
                    f(e);
                }
            }
            NodeKind::Graph(g) => {
                f(&g.start);
                for e in g.target.iter().chain(g.prune.iter()) {
                    f(e);
                }
                for c in &g.conditions {
                    f(&c.expr);
                }
            }
            NodeKind::EnumerateNearVectors(near) => {
                near.expressions().into_iter().for_each(&mut *f)
            }
            NodeKind::Subquery { plan, .. } => for_each_expr(plan, f),
            _ => {}
        }
    }
}

fn any_node(plan: &Plan, pred: &dyn Fn(&NodeKind) -> bool) -> bool {
    plan.nodes.iter().any(|n| {
        pred(&n.kind) || matches!(&n.kind, NodeKind::Subquery { plan, .. } if any_node(plan, pred))
    })
}

/// The estimated size of a plan's constants if it may be cached: planning read nothing but
/// the catalog, and its constants are of bounded size.
fn cacheable_weight(plan: &QueryPlan) -> Option<u64> {
    if any_node(
        &plan.root,
        &|k| matches!(k, NodeKind::Graph(g) if g.graph.is_some()),
    ) {
        return None;
    }
    let mut weight = 0u64;
    for_each_expr(&plan.root, &mut |e| {
        e.walk(&mut |e| {
            if let CExpr::Const(v) = e {
                weight = weight.saturating_add(estimate_size(v));
            }
        })
    });
    (weight <= MAX_PLAN_WEIGHT).then_some(weight)
}

/// A stable hash of a query text (the first bytes of its MD5 digest, cut to 53 bits so that
/// it survives JSON clients that read numbers as doubles): the same text always has the same
/// `queryHash`.
fn text_hash(text: &str) -> u64 {
    use md5::Digest as _;
    let digest = md5::Md5::digest(text.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first) & ((1 << 53) - 1)
}

/// One cached plan as the plan cache API lists it.
pub struct PlanEntry {
    /// The key's hash (the cache's own bucket key).
    pub hash: u64,
    pub query: String,
    pub query_hash: u64,
    /// The serialized bind parameters the plan was built with (empty without any).
    pub binds: String,
    pub full_count: bool,
    /// The collections and views the plan reads or writes.
    pub data_sources: Vec<String>,
    pub created: String,
    pub hits: u64,
    pub memory: u64,
}

/// Functions a trivial plan must not call: they read data (the inline path has no snapshot),
/// wait, or call functions by name.
fn inline_safe_call(name: &str, reads_data: bool) -> bool {
    !reads_data && !matches!(name, "SLEEP" | "CALL" | "APPLY" | "RANGE")
}

/// Statically cheap plans: no collection, no writes, only the node kinds below, loops over
/// constant lists or ranges with at most [`TRIVIAL_ROWS`] rows in total, no call of a
/// function that reads data or waits, no range built from non-constant bounds.
fn is_trivial(plan: &QueryPlan) -> bool {
    if !plan.collections.is_empty() || plan.is_modification {
        return false;
    }
    let mut calls_ok = true;
    for_each_expr(&plan.root, &mut |e| {
        e.walk(&mut |e| match e {
            CExpr::Call(def, _) if !inline_safe_call(def.name, def.reads_data) => calls_ok = false,
            CExpr::Range(..) => calls_ok = false,
            _ => {}
        })
    });
    calls_ok && trivial_pipeline(&plan.root, 1, &HashMap::new()).is_some()
}

/// Checks one pipeline, whose singleton is entered `rows` times; `outer` maps the slots of
/// constant arrays computed by enclosing pipelines to their lengths. Returns the rows the
/// pipeline may produce at most, over all its entries.
fn trivial_pipeline(plan: &Plan, rows: u64, outer: &HashMap<Slot, usize>) -> Option<u64> {
    let mut rows = rows;
    let mut consts = outer.clone();
    for node in &plan.nodes {
        match &node.kind {
            NodeKind::Singleton
            | NodeKind::Filter { .. }
            | NodeKind::Sort { .. }
            | NodeKind::Limit { .. }
            | NodeKind::Return { .. }
            | NodeKind::NoResults => {}
            NodeKind::Collect { .. } => {}
            NodeKind::Calculation { out, expr } => {
                if let CExpr::Const(Value::Array(items)) = expr {
                    consts.insert(*out, items.len());
                }
            }
            NodeKind::EnumerateList { input, .. } => {
                let len = match input {
                    ListSource::Slot(s) => *consts.get(s)? as u64,
                    ListSource::Range(CExpr::Const(a), CExpr::Const(b)) => {
                        let (a, b) = (a.as_f64()?, b.as_f64()?);
                        (a - b).abs().min(u64::MAX as f64 / 2.0) as u64 + 1
                    }
                    ListSource::Range(..) => return None,
                };
                rows = rows.saturating_mul(len.max(1));
            }
            // Runs once per row: its own loops are bounded inside, relative to `rows`; it
            // adds no rows to this pipeline.
            NodeKind::Subquery { plan, .. } => {
                trivial_pipeline(plan, rows, &consts)?;
            }
            _ => return None,
        }
        if rows > TRIVIAL_ROWS {
            return None;
        }
    }
    Some(rows)
}

/// The "transaction" of a plan run inline: trivial plans never read or write data, so it
/// holds no snapshot; should one reach for data anyway, it gets an internal error rather
/// than a wrong answer.
pub struct NoData;

fn no_data() -> quiver_errors::Error {
    quiver_errors::Error::with_message(
        quiver_errors::ErrorCode::Internal,
        "inline query tried to access data",
    )
}

impl crate::source::Transaction for NoData {
    fn collection(&self, _: &str) -> quiver_errors::Result<crate::source::CollectionInfo> {
        Err(no_data())
    }
    fn count(&self, _: &str) -> quiver_errors::Result<u64> {
        Err(no_data())
    }
    fn get(&self, _: &str, _: &str) -> quiver_errors::Result<Option<Value>> {
        Err(no_data())
    }
    fn scan(&self, _: &str) -> quiver_errors::Result<crate::source::DocIter> {
        Err(no_data())
    }
    fn insert(
        &mut self,
        _: &str,
        _: Value,
        _: &crate::source::WriteOptions,
    ) -> quiver_errors::Result<crate::source::WriteOutcome> {
        Err(no_data())
    }
    fn update(
        &mut self,
        _: &str,
        _: Value,
        _: &crate::source::WriteOptions,
    ) -> quiver_errors::Result<crate::source::WriteOutcome> {
        Err(no_data())
    }
    fn replace(
        &mut self,
        _: &str,
        _: Value,
        _: &crate::source::WriteOptions,
    ) -> quiver_errors::Result<crate::source::WriteOutcome> {
        Err(no_data())
    }
    fn remove(
        &mut self,
        _: &str,
        _: Value,
        _: &crate::source::WriteOptions,
    ) -> quiver_errors::Result<crate::source::WriteOutcome> {
        Err(no_data())
    }
    fn commit(self: Box<Self>) -> quiver_errors::Result<()> {
        Ok(())
    }
}
