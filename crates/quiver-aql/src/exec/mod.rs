//! The executor: a pull-based pipeline of operators, one per plan node. Rows are vectors of
//! variable slots. Non-blocking nodes (loops, calculations, filters, limits, writes) stream
//! rows one at a time so a streaming cursor holds only the rows of its current batch;
//! blocking nodes (SORT, COLLECT, WINDOW) buffer, charge the query's memory budget and fail
//! with ArangoDB's resource-limit error when it is exceeded.

pub mod eval;
mod geo;
mod graph;
mod index;

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{Map, Value};

use crate::ast::ModifyKind;
use crate::functions::{self, FunctionContext};
use crate::plan::{
    Aggregate, Bound, IntoKind, ListSource, ModifySpec, NodeKind, Plan, QueryPlan, Slot,
};
use crate::source::{DocIter, Transaction};
use crate::value::{self, ValueKey, Warning};
use eval::{eval, range_bounds, EnvState, EvalEnv, RangeIter};

pub type Row = Vec<Value>;

/// Per-node profile counters (`extra.stats.nodes` with `profile: 2`).
#[derive(Clone, Debug, Default)]
pub struct NodeStats {
    pub calls: u64,
    pub items: u64,
    pub runtime: Duration,
}

/// Query statistics as reported in `extra.stats`.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub writes_executed: u64,
    pub writes_ignored: u64,
    pub scanned_full: u64,
    pub scanned_index: u64,
    pub document_lookups: u64,
    pub filtered: u64,
    pub full_count: Option<u64>,
    pub peak_memory: u64,
    pub nodes: HashMap<usize, NodeStats>,
}

/// Runtime limits of one query.
#[derive(Clone, Debug)]
pub struct Limits {
    pub deadline: Option<Instant>,
    pub killed: Arc<AtomicBool>,
    /// Bytes (estimated); 0 = the engine's default cap.
    pub memory_limit: u64,
}

/// Without an explicit `memoryLimit` a query may still not buffer more than this (estimated)
/// so that one query cannot take the server down.
pub const DEFAULT_MEMORY_CAP: u64 = 4 << 30;

/// Shared state of one running query.
pub struct ExecCtx {
    pub txn: Box<dyn Transaction>,
    pub database: String,
    pub env: EnvState,
    pub stats: Stats,
    pub limits: Limits,
    pub memory: u64,
    pub profile: bool,
    ticks: u32,
}

impl ExecCtx {
    pub fn new(
        txn: Box<dyn Transaction>,
        database: &str,
        env: EnvState,
        limits: Limits,
        profile: bool,
    ) -> ExecCtx {
        let mut env = env;
        env.killed = Some(limits.killed.clone());
        env.deadline = limits.deadline;
        ExecCtx {
            txn,
            database: database.to_string(),
            env,
            stats: Stats::default(),
            limits,
            memory: 0,
            profile,
            ticks: 0,
        }
    }

    fn eval(&mut self, e: &crate::plan::CExpr, row: &[Value]) -> Result<Value> {
        let mut env = EvalEnv {
            txn: Some(&*self.txn),
            database: &self.database,
            state: &mut self.env,
        };
        eval(e, row, None, &mut env)
    }

    /// Kill flag and `maxRuntime`, checked every few hundred rows.
    fn check(&mut self) -> Result<()> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks % 256 != 0 {
            return Ok(());
        }
        self.check_now()
    }

    pub fn check_now(&self) -> Result<()> {
        check_limits(&self.limits)
    }

    /// Accounts `bytes` more buffered memory.
    pub fn charge(&mut self, bytes: u64) -> Result<()> {
        self.memory += bytes;
        self.stats.peak_memory = self.stats.peak_memory.max(self.memory);
        let limit = memory_limit(&self.limits);
        if self.memory > limit {
            return Err(memory_error(limit));
        }
        Ok(())
    }

    pub fn release(&mut self, bytes: u64) {
        self.memory = self.memory.saturating_sub(bytes);
    }

    fn warn(&mut self, w: Warning) -> Result<()> {
        self.env.warn(w)
    }
}

/// Kill flag and `maxRuntime` (also usable off the query's thread, by parallel scans).
fn check_limits(limits: &Limits) -> Result<()> {
    if limits.killed.load(AtomicOrdering::Relaxed) {
        return Err(Error::with_message(ErrorCode::QueryKilled, "query killed"));
    }
    if let Some(deadline) = limits.deadline {
        if Instant::now() > deadline {
            return Err(Error::with_message(
                ErrorCode::QueryKilled,
                "query killed (maxRuntime exceeded)",
            ));
        }
    }
    Ok(())
}

fn memory_limit(limits: &Limits) -> u64 {
    if limits.memory_limit == 0 {
        DEFAULT_MEMORY_CAP
    } else {
        limits.memory_limit
    }
}

fn memory_error(limit: u64) -> Error {
    Error::with_message(
        ErrorCode::ResourceLimit,
        format!("AQL: query would use more memory than allowed (limit: {limit} bytes) (while executing)"),
    )
}

/// Rough in-memory size of a value, for memory accounting. Deliberately cheap: strings and
/// containers are counted by length, not walked byte by byte.
pub fn estimate_size(v: &Value) -> u64 {
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => 16,
        Value::String(s) => 24 + s.len() as u64,
        Value::Array(a) => 24 + a.iter().map(estimate_size).sum::<u64>(),
        Value::Object(m) => {
            48 + m
                .iter()
                .map(|(k, v)| 24 + k.len() as u64 + estimate_size(v))
                .sum::<u64>()
        }
    }
}

fn row_size(row: &Row) -> u64 {
    row.iter().map(estimate_size).sum()
}

/// One node's runtime form.
pub trait Operator: Send {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>>;
}

type Op = Box<dyn Operator>;

/// Builds the operator chain of `plan`, starting from `seed` (the outer row of a subquery or
/// an all-null row).
pub fn build(plan: &Plan, seed: Row, profile: bool) -> Op {
    let mut op: Op = Box::new(SingletonOp {
        row: Some(seed.clone()),
    });
    // Nodes folded into the operator before them.
    let mut skip = 0;
    // Whether every node so far was a singleton (the input is the seed row only).
    let mut at_start = true;
    for (i, node) in plan.nodes.iter().enumerate() {
        if skip > 0 {
            skip -= 1;
            continue;
        }
        let first = std::mem::replace(&mut at_start, false);
        let next: Op = match &node.kind {
            NodeKind::Singleton => {
                at_start = first;
                continue;
            }
            NodeKind::EnumerateCollection {
                out,
                collection,
                projections,
                ..
            } => match count_by_attribute_pattern(&plan.nodes[i..]) {
                // Profiling reports every node's own counts, so it keeps the nodes apart.
                Some((attribute, group, count)) if first && !profile => {
                    skip = 2;
                    Box::new(CountByAttributeOp {
                        input: op,
                        collection: collection.clone(),
                        attribute,
                        group,
                        count,
                        output: None,
                    })
                }
                _ => Box::new(ScanOp {
                    input: op,
                    out: *out,
                    collection: collection.clone(),
                    projections: projections.clone(),
                    row: None,
                    iter: None,
                }),
            },
            NodeKind::IndexScan(scan) if scan.geo.is_some() => {
                Box::new(geo::GeoScanOp::new(op, (**scan).clone()))
            }
            NodeKind::IndexScan(scan) => Box::new(index::IndexScanOp::new(op, (**scan).clone())),
            NodeKind::Index {
                out,
                collection,
                lookup,
                multi,
            } => Box::new(IndexOp {
                input: op,
                out: *out,
                collection: collection.clone(),
                lookup: lookup.clone(),
                multi: *multi,
                row: None,
                pending: VecDeque::new(),
            }),
            NodeKind::EnumerateList { out, input } => Box::new(ListOp {
                input: op,
                out: *out,
                source: input.clone(),
                row: None,
                items: ListItems::None,
            }),
            NodeKind::Calculation { out, expr } => Box::new(CalcOp {
                input: op,
                out: *out,
                expr: expr.clone(),
            }),
            NodeKind::Subquery { out, plan } => Box::new(SubqueryOp {
                input: op,
                out: *out,
                plan: plan.clone(),
                profile,
            }),
            NodeKind::Filter { input } => Box::new(FilterOp {
                input: op,
                slot: *input,
            }),
            NodeKind::Sort { keys, limit } => Box::new(SortOp {
                input: op,
                keys: keys.clone(),
                limit: *limit,
                sorted: None,
                charged: 0,
            }),
            NodeKind::Limit {
                offset,
                count,
                full_count,
            } => Box::new(LimitOp {
                input: op,
                offset: *offset,
                count: *count,
                full_count: *full_count,
                seen: 0,
                returned: 0,
            }),
            NodeKind::Collect {
                groups,
                aggregates,
                into,
                count,
                ..
            } => Box::new(CollectOp {
                input: op,
                groups: groups.clone(),
                aggregates: aggregates.clone(),
                into: into.clone(),
                count: *count,
                template: seed.clone(),
                output: None,
            }),
            NodeKind::Window {
                range_input,
                preceding,
                following,
                aggregates,
            } => Box::new(WindowOp {
                input: op,
                range_input: *range_input,
                preceding: *preceding,
                following: *following,
                aggregates: aggregates.clone(),
                output: None,
            }),
            NodeKind::Return { input, distinct } => Box::new(ReturnOp {
                input: op,
                slot: *input,
                seen: if *distinct {
                    Some(HashSet::new())
                } else {
                    None
                },
            }),
            NodeKind::Modify(spec) => Box::new(ModifyOp {
                input: op,
                spec: spec.clone(),
            }),
            NodeKind::Graph(g) => Box::new(graph::GraphOp::new(op, g)),
            NodeKind::NoResults => Box::new(NoResultsOp),
        };
        op = if profile {
            Box::new(ProfiledOp {
                id: node.id,
                inner: next,
            })
        } else {
            next
        };
        // Pulling a row recurses through the whole pipeline; every few nodes, check the
        // stack (long pipelines and nested subqueries).
        if node.id % 16 == 0 {
            op = Box::new(StackCheckOp { inner: op });
        }
    }
    op
}

struct StackCheckOp {
    inner: Op,
}

impl Operator for StackCheckOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        crate::deep(|| self.inner.next(ctx))
    }
}

struct ProfiledOp {
    id: usize,
    inner: Op,
}

impl Operator for ProfiledOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        let start = Instant::now();
        let r = self.inner.next(ctx);
        let s = ctx.stats.nodes.entry(self.id).or_default();
        s.calls += 1;
        s.runtime += start.elapsed();
        if matches!(r, Ok(Some(_))) {
            s.items += 1;
        }
        r
    }
}

struct SingletonOp {
    row: Option<Row>,
}

impl Operator for SingletonOp {
    fn next(&mut self, _ctx: &mut ExecCtx) -> Result<Option<Row>> {
        Ok(self.row.take())
    }
}

struct NoResultsOp;

impl Operator for NoResultsOp {
    fn next(&mut self, _ctx: &mut ExecCtx) -> Result<Option<Row>> {
        Ok(None)
    }
}

struct ScanOp {
    input: Op,
    out: Slot,
    collection: String,
    projections: Option<Vec<String>>,
    row: Option<Row>,
    iter: Option<DocIter>,
}

impl Operator for ScanOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let (Some(row), Some(iter)) = (&self.row, &mut self.iter) {
                if let Some(doc) = iter.next() {
                    let doc = doc?;
                    ctx.check()?;
                    ctx.stats.scanned_full += 1;
                    let mut r = row.clone();
                    r[self.out] = doc;
                    return Ok(Some(r));
                }
            }
            match self.input.next(ctx)? {
                Some(row) => {
                    self.iter = Some(match &self.projections {
                        Some(attrs) => ctx.txn.scan_projected(&self.collection, attrs)?,
                        None => ctx.txn.scan(&self.collection)?,
                    });
                    self.row = Some(row);
                }
                None => return Ok(None),
            }
        }
    }
}

/// Recognizes `FOR d IN coll COLLECT g = d.attr WITH COUNT INTO n` at the start of `nodes`
/// (a collection scan, the calculation of one top-level attribute of its documents, and a
/// COLLECT grouping by it that only counts): returns the attribute and the group and count
/// slots. Neither `d` nor the calculation is visible after such a COLLECT, so the three nodes
/// can run as one.
fn count_by_attribute_pattern(nodes: &[crate::plan::Node]) -> Option<(String, Slot, Slot)> {
    let [scan, calc, collect, ..] = nodes else {
        return None;
    };
    let NodeKind::EnumerateCollection { out: doc, .. } = &scan.kind else {
        return None;
    };
    let NodeKind::Calculation {
        out: value,
        expr: crate::plan::CExpr::Attribute(base, attribute),
    } = &calc.kind
    else {
        return None;
    };
    if !matches!(**base, crate::plan::CExpr::Var(s) if s == *doc) {
        return None;
    }
    let NodeKind::Collect {
        groups,
        aggregates,
        into: None,
        count: Some(count),
        ..
    } = &collect.kind
    else {
        return None;
    };
    match groups.as_slice() {
        [(group, input)] if input == value && aggregates.is_empty() => {
            Some((attribute.clone(), *group, *count))
        }
        _ => None,
    }
}

/// The count-per-value COLLECT over a whole collection (see [`count_by_attribute_pattern`]),
/// counted by the data source in one pass without a row per document. Output as
/// [`CollectOp`] gives it: one row per group, sorted by the group value.
struct CountByAttributeOp {
    input: Op,
    collection: String,
    attribute: String,
    group: Slot,
    count: Slot,
    output: Option<std::vec::IntoIter<Row>>,
}

impl CountByAttributeOp {
    fn run(&mut self, ctx: &mut ExecCtx) -> Result<Vec<Row>> {
        let mut groups: HashMap<ValueKey, u64> = HashMap::new();
        let mut template = None;
        while let Some(row) = self.input.next(ctx)? {
            ctx.check_now()?;
            let limits = ctx.limits.clone();
            let budget = memory_limit(&limits).saturating_sub(ctx.memory);
            let check = move |held: u64| -> Result<()> {
                check_limits(&limits)?;
                if held > budget {
                    return Err(memory_error(memory_limit(&limits)));
                }
                Ok(())
            };
            let counts = ctx
                .txn
                .count_by_attribute(&self.collection, &self.attribute, &check)?;
            for (v, n) in counts {
                ctx.stats.scanned_full += n;
                *groups.entry(ValueKey(v)).or_insert(0) += n;
            }
            template.get_or_insert(row);
        }
        let Some(template) = template else {
            return Ok(Vec::new());
        };
        let mut groups: Vec<(Value, u64)> = groups.into_iter().map(|(k, n)| (k.0, n)).collect();
        let size: u64 = groups.iter().map(|(v, _)| estimate_size(v) * 2 + 64).sum();
        ctx.charge(size)?;
        groups.sort_by(|a, b| value::compare(&a.0, &b.0));
        let rows = groups
            .into_iter()
            .map(|(v, n)| {
                let mut row = template.clone();
                row[self.group] = v;
                row[self.count] = Value::from(n);
                row
            })
            .collect();
        ctx.release(size);
        Ok(rows)
    }
}

impl Operator for CountByAttributeOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        if self.output.is_none() {
            let rows = self.run(ctx)?;
            self.output = Some(rows.into_iter());
        }
        Ok(self.output.as_mut().and_then(Iterator::next))
    }
}

struct IndexOp {
    input: Op,
    out: Slot,
    collection: String,
    lookup: crate::plan::CExpr,
    multi: bool,
    row: Option<Row>,
    pending: VecDeque<Value>,
}

impl IndexOp {
    /// The key a lookup value designates in this collection (keys, `_id`s and documents are
    /// accepted, as the primary index does).
    fn key_of(&self, v: &Value) -> Option<String> {
        let handle = match v {
            Value::String(s) => s.as_str(),
            Value::Object(m) => match (m.get("_key"), m.get("_id")) {
                (Some(Value::String(k)), _) => return Some(k.clone()),
                (_, Some(Value::String(id))) => id.as_str(),
                _ => return None,
            },
            _ => return None,
        };
        match handle.split_once('/') {
            Some((coll, key)) if coll == self.collection => Some(key.to_string()),
            Some(_) => None,
            None => Some(handle.to_string()),
        }
    }
}

impl Operator for IndexOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let Some(row) = &self.row {
                while let Some(v) = self.pending.pop_front() {
                    let Some(key) = self.key_of(&v) else { continue };
                    ctx.stats.document_lookups += 1;
                    if let Some(doc) = ctx.txn.get(&self.collection, &key)? {
                        ctx.stats.scanned_index += 1;
                        let mut r = row.clone();
                        r[self.out] = doc;
                        return Ok(Some(r));
                    }
                }
            }
            match self.input.next(ctx)? {
                Some(row) => {
                    let v = ctx.eval(&self.lookup, &row)?;
                    self.pending.clear();
                    if self.multi {
                        if let Value::Array(items) = v {
                            // IN lists may repeat keys; the index returns each document once.
                            let mut seen = HashSet::new();
                            for i in items {
                                if seen.insert(ValueKey(i.clone())) {
                                    self.pending.push_back(i);
                                }
                            }
                        }
                    } else {
                        self.pending.push_back(v);
                    }
                    self.row = Some(row);
                }
                None => return Ok(None),
            }
        }
    }
}

enum ListItems {
    None,
    Values(std::vec::IntoIter<Value>),
    Range(RangeIter),
}

struct ListOp {
    input: Op,
    out: Slot,
    source: ListSource,
    row: Option<Row>,
    items: ListItems,
}

impl Operator for ListOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let Some(row) = &self.row {
                let item = match &mut self.items {
                    ListItems::None => None,
                    ListItems::Values(it) => it.next(),
                    ListItems::Range(it) => it.next().map(Value::from),
                };
                if let Some(item) = item {
                    ctx.check()?;
                    let mut r = row.clone();
                    r[self.out] = item;
                    return Ok(Some(r));
                }
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            self.items = match &self.source {
                ListSource::Range(a, b) => {
                    let from = ctx.eval(a, &row)?;
                    let to = ctx.eval(b, &row)?;
                    let (from, to) = range_bounds(&from, &to);
                    ListItems::Range(RangeIter::new(from, to))
                }
                ListSource::Slot(s) => match &row[*s] {
                    Value::Array(items) => ListItems::Values(items.clone().into_iter()),
                    other => {
                        return Err(Error::with_message(
                            ErrorCode::QueryArrayExpected,
                            format!(
                                "AQL: collection or array expected as operand to FOR loop; you provided a value of type '{}' (while executing)",
                                value::type_name(other)
                            ),
                        ))
                    }
                },
            };
            self.row = Some(row);
        }
    }
}

struct CalcOp {
    input: Op,
    out: Slot,
    expr: crate::plan::CExpr,
}

impl Operator for CalcOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        let Some(mut row) = self.input.next(ctx)? else {
            return Ok(None);
        };
        row[self.out] = ctx.eval(&self.expr, &row)?;
        Ok(Some(row))
    }
}

/// Runs a whole (sub)plan for one seed row and returns its result values.
pub fn run_subplan(plan: &Plan, seed: Row, profile: bool, ctx: &mut ExecCtx) -> Result<Vec<Value>> {
    let result_slot = match plan.nodes.last().map(|n| &n.kind) {
        Some(NodeKind::Return { input, .. }) => Some(*input),
        _ => None,
    };
    let mut op = crate::deep(|| build(plan, seed, profile));
    let mut out = Vec::new();
    let mut charged = 0;
    while let Some(row) = op.next(ctx)? {
        if let Some(s) = result_slot {
            let v = row.into_iter().nth(s).unwrap_or(Value::Null);
            let size = estimate_size(&v);
            charged += size;
            ctx.charge(size)?;
            out.push(v);
        }
    }
    ctx.release(charged);
    Ok(out)
}

struct SubqueryOp {
    input: Op,
    out: Slot,
    plan: Arc<Plan>,
    profile: bool,
}

impl Operator for SubqueryOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        let Some(mut row) = self.input.next(ctx)? else {
            return Ok(None);
        };
        let values = run_subplan(&self.plan, row.clone(), self.profile, ctx)?;
        row[self.out] = Value::Array(values);
        Ok(Some(row))
    }
}

struct FilterOp {
    input: Op,
    slot: Slot,
}

impl Operator for FilterOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            if value::to_bool(&row[self.slot]) {
                return Ok(Some(row));
            }
            ctx.stats.filtered += 1;
            ctx.check()?;
        }
    }
}

fn compare_rows(a: &Row, b: &Row, keys: &[(Slot, bool)]) -> Ordering {
    for (slot, asc) in keys {
        let o = value::compare(&a[*slot], &b[*slot]);
        if o != Ordering::Equal {
            return if *asc { o } else { o.reverse() };
        }
    }
    Ordering::Equal
}

struct SortOp {
    input: Op,
    keys: Vec<(Slot, bool)>,
    /// Top-k (the sort-limit rule): keep only this many rows.
    limit: Option<u64>,
    sorted: Option<std::vec::IntoIter<Row>>,
    charged: u64,
}

impl Operator for SortOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        if self.sorted.is_none() {
            let mut rows: Vec<Row> = Vec::new();
            let keys = self.keys.clone();
            let cap = self.limit.map(|l| l.min(1 << 24) as usize);
            while let Some(row) = self.input.next(ctx)? {
                ctx.check()?;
                let size = row_size(&row);
                self.charged += size;
                ctx.charge(size)?;
                rows.push(row);
                if let Some(k) = cap {
                    // Bounded top-k: sort and cut whenever the buffer doubles; stable sort
                    // keeps the earliest of equal rows, like a full sort would.
                    if rows.len() >= 2 * k.max(1) {
                        rows.sort_by(|a, b| compare_rows(a, b, &keys));
                        let dropped: u64 = rows[k..].iter().map(row_size).sum();
                        rows.truncate(k);
                        self.charged -= dropped;
                        ctx.release(dropped);
                    }
                }
            }
            rows.sort_by(|a, b| compare_rows(a, b, &keys));
            if let Some(k) = cap {
                rows.truncate(k);
            }
            self.sorted = Some(rows.into_iter());
        }
        let next = self.sorted.as_mut().and_then(Iterator::next);
        if next.is_none() {
            ctx.release(self.charged);
            self.charged = 0;
        }
        Ok(next)
    }
}

struct LimitOp {
    input: Op,
    offset: u64,
    count: u64,
    full_count: bool,
    seen: u64,
    returned: u64,
}

impl Operator for LimitOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        while self.seen < self.offset {
            if self.input.next(ctx)?.is_none() {
                self.report(ctx);
                return Ok(None);
            }
            self.seen += 1;
        }
        if self.returned < self.count {
            if let Some(row) = self.input.next(ctx)? {
                self.seen += 1;
                self.returned += 1;
                return Ok(Some(row));
            }
            self.report(ctx);
            return Ok(None);
        }
        if self.full_count {
            while self.input.next(ctx)?.is_some() {
                self.seen += 1;
                ctx.check()?;
            }
            self.report(ctx);
            self.full_count = false;
        }
        Ok(None)
    }
}

impl LimitOp {
    fn report(&mut self, ctx: &mut ExecCtx) {
        if self.full_count {
            ctx.stats.full_count = Some(self.seen);
            self.full_count = false;
        }
    }
}

/// Applies an aggregate function to the collected inputs of one group.
fn aggregate_value(
    function: &str,
    values: Vec<Value>,
    count: u64,
    ctx: &mut ExecCtx,
) -> Result<Value> {
    match function {
        "LENGTH" | "COUNT" => Ok(Value::from(count)),
        "PUSH" => Ok(Value::Array(values)),
        _ => {
            let name = match function {
                "AVG" => "AVERAGE",
                "VARIANCE" => "VARIANCE_POPULATION",
                "STDDEV" => "STDDEV_POPULATION",
                "COUNT_UNIQUE" => "COUNT_DISTINCT",
                other => other,
            };
            let Some(def) = functions::lookup(name) else {
                return Err(Error::with_message(
                    ErrorCode::QueryInvalidAggregateExpression,
                    format!("AQL: aggregate function '{function}' is not available"),
                ));
            };
            let mut fctx = FunctionContext::new();
            let r = def.invoke(&mut fctx, &[Value::Array(values)])?;
            for w in fctx.take_warnings() {
                ctx.warn(w)?;
            }
            Ok(r)
        }
    }
}

struct Group {
    key: Vec<Value>,
    agg_inputs: Vec<Vec<Value>>,
    into: Vec<Value>,
    count: u64,
}

struct CollectOp {
    input: Op,
    groups: Vec<(Slot, Slot)>,
    aggregates: Vec<Aggregate>,
    into: Option<(Slot, IntoKind)>,
    count: Option<Slot>,
    template: Row,
    output: Option<std::vec::IntoIter<Row>>,
}

impl CollectOp {
    fn run(&mut self, ctx: &mut ExecCtx) -> Result<Vec<Row>> {
        let mut index: HashMap<Vec<ValueKey>, usize> = HashMap::new();
        let mut groups: Vec<Group> = Vec::new();
        let keep_agg_values: Vec<bool> = self
            .aggregates
            .iter()
            .map(|a| !matches!(a.function.as_str(), "LENGTH" | "COUNT"))
            .collect();
        let mut first_row = true;
        let mut charged = 0u64;
        while let Some(row) = self.input.next(ctx)? {
            ctx.check()?;
            // Variables declared before the first loop stay visible after COLLECT; they
            // are the same in every input row, so take them from the first one.
            if first_row {
                self.template.clone_from(&row);
                first_row = false;
            }
            // One clone of the group values per row; the group's own copy is made only
            // when a new group starts (most rows hit an existing group).
            let hkey: Vec<ValueKey> = self
                .groups
                .iter()
                .map(|(_, input)| ValueKey(row[*input].clone()))
                .collect();
            let gi = match index.get(&hkey) {
                Some(i) => *i,
                None => {
                    let key: Vec<Value> = hkey.iter().map(|k| k.0.clone()).collect();
                    let size: u64 = key.iter().map(estimate_size).sum::<u64>() * 2 + 64;
                    charged += size;
                    ctx.charge(size)?;
                    groups.push(Group {
                        key,
                        agg_inputs: vec![Vec::new(); self.aggregates.len()],
                        into: Vec::new(),
                        count: 0,
                    });
                    index.insert(hkey, groups.len() - 1);
                    groups.len() - 1
                }
            };
            let g = &mut groups[gi];
            g.count += 1;
            for (i, a) in self.aggregates.iter().enumerate() {
                if keep_agg_values[i] {
                    let v = a.input.map_or(Value::Null, |s| row[s].clone());
                    let size = estimate_size(&v);
                    charged += size;
                    ctx.charge(size)?;
                    g.agg_inputs[i].push(v);
                }
            }
            if let Some((_, kind)) = &self.into {
                let v = match kind {
                    IntoKind::Expr(s) => row[*s].clone(),
                    IntoKind::Vars(vars) => {
                        let mut m = Map::new();
                        for (name, slot) in vars {
                            m.insert(name.clone(), row[*slot].clone());
                        }
                        Value::Object(m)
                    }
                };
                let size = estimate_size(&v);
                charged += size;
                ctx.charge(size)?;
                g.into.push(v);
            }
        }
        // Without group variables there is exactly one group, even for empty input.
        if self.groups.is_empty() && groups.is_empty() {
            groups.push(Group {
                key: Vec::new(),
                agg_inputs: vec![Vec::new(); self.aggregates.len()],
                into: Vec::new(),
                count: 0,
            });
        }
        // The "sorted" method's output order (the "hash" method is followed by a SORT in
        // ArangoDB, which gives the same order).
        groups.sort_by(|a, b| {
            for (x, y) in a.key.iter().zip(&b.key) {
                let o = value::compare(x, y);
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
        let mut out = Vec::with_capacity(groups.len());
        for g in groups {
            let mut row = self.template.clone();
            for ((slot, _), v) in self.groups.iter().zip(g.key) {
                row[*slot] = v;
            }
            for (a, values) in self.aggregates.iter().zip(g.agg_inputs) {
                let values: Vec<Value> = if a.input.is_some() {
                    values
                } else {
                    Vec::new()
                };
                row[a.out] = aggregate_value(&a.function, values, g.count, ctx)?;
            }
            if let Some((slot, _)) = &self.into {
                row[*slot] = Value::Array(g.into);
            }
            if let Some(slot) = self.count {
                row[slot] = Value::from(g.count);
            }
            out.push(row);
        }
        ctx.release(charged);
        Ok(out)
    }
}

impl Operator for CollectOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        if self.output.is_none() {
            let rows = self.run(ctx)?;
            self.output = Some(rows.into_iter());
        }
        Ok(self.output.as_mut().and_then(Iterator::next))
    }
}

/// A timestamp in milliseconds moved by a duration with calendar months (the end of a
/// duration-based WINDOW frame); NaN when the result leaves the date range, so that the
/// frame holds just the rows with the current row's own value.
fn shift_timestamp(ms: f64, months: i64, millis: i64) -> f64 {
    if !ms.is_finite() {
        return f64::NAN;
    }
    let whole = ms.trunc();
    crate::functions::add_calendar(whole as i64, months, millis)
        .map_or(f64::NAN, |shifted| shifted as f64 + (ms - whole))
}

struct WindowOp {
    input: Op,
    range_input: Option<Slot>,
    preceding: Bound,
    following: Bound,
    aggregates: Vec<Aggregate>,
    output: Option<std::vec::IntoIter<Row>>,
}

impl WindowOp {
    fn run(&mut self, ctx: &mut ExecCtx) -> Result<Vec<Row>> {
        let mut rows = Vec::new();
        let mut charged = 0;
        while let Some(row) = self.input.next(ctx)? {
            ctx.check()?;
            let size = row_size(&row);
            charged += size;
            ctx.charge(size)?;
            rows.push(row);
        }
        let n = rows.len();
        let mut results: Vec<Vec<Value>> = Vec::with_capacity(n);
        for i in 0..n {
            ctx.check()?;
            let (lo, hi) = match self.range_input {
                None => {
                    let lo = match self.preceding {
                        Bound::Unbounded => 0,
                        Bound::Rows(p) => i.saturating_sub(p as usize),
                        // The planner accepts durations for range frames only.
                        Bound::Duration { .. } => i,
                    };
                    let hi = match self.following {
                        Bound::Unbounded => n.saturating_sub(1),
                        Bound::Rows(f) => (i + f as usize).min(n.saturating_sub(1)),
                        Bound::Duration { .. } => i,
                    };
                    (lo, hi)
                }
                Some(slot) => {
                    let v = value::to_number(&rows[i][slot]);
                    let lower = match self.preceding {
                        Bound::Unbounded => f64::NEG_INFINITY,
                        Bound::Rows(p) => v - p,
                        Bound::Duration { months, millis } => shift_timestamp(v, -months, -millis),
                    };
                    let upper = match self.following {
                        Bound::Unbounded => f64::INFINITY,
                        Bound::Rows(f) => v + f,
                        Bound::Duration { months, millis } => shift_timestamp(v, months, millis),
                    };
                    let in_range = |r: &Row| {
                        let x = value::to_number(&r[slot]);
                        x >= lower && x <= upper
                    };
                    let mut lo = i;
                    while lo > 0 && in_range(&rows[lo - 1]) {
                        lo -= 1;
                    }
                    let mut hi = i;
                    while hi + 1 < n && in_range(&rows[hi + 1]) {
                        hi += 1;
                    }
                    (lo, hi)
                }
            };
            let mut values = Vec::with_capacity(self.aggregates.len());
            for a in &self.aggregates {
                let inputs: Vec<Value> = match a.input {
                    Some(s) => rows[lo..=hi].iter().map(|r| r[s].clone()).collect(),
                    None => Vec::new(),
                };
                values.push(aggregate_value(
                    &a.function,
                    inputs,
                    (hi + 1 - lo) as u64,
                    ctx,
                )?);
            }
            results.push(values);
        }
        for (row, values) in rows.iter_mut().zip(results) {
            for (a, v) in self.aggregates.iter().zip(values) {
                row[a.out] = v;
            }
        }
        ctx.release(charged);
        Ok(rows)
    }
}

impl Operator for WindowOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        if self.output.is_none() {
            let rows = self.run(ctx)?;
            self.output = Some(rows.into_iter());
        }
        Ok(self.output.as_mut().and_then(Iterator::next))
    }
}

struct ReturnOp {
    input: Op,
    slot: Slot,
    seen: Option<HashSet<ValueKey>>,
}

impl Operator for ReturnOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            match &mut self.seen {
                None => return Ok(Some(row)),
                Some(seen) => {
                    if seen.insert(ValueKey(row[self.slot].clone())) {
                        ctx.charge(estimate_size(&row[self.slot]))?;
                        return Ok(Some(row));
                    }
                }
            }
        }
    }
}

struct ModifyOp {
    input: Op,
    spec: Box<ModifySpec>,
}

/// The document (with `_key`) that UPDATE/REPLACE/REMOVE address: `key_or_doc` may be a key
/// string, an `_id`, or an object with `_key`.
fn addressed(key_or_doc: &Value, patch: Option<&Value>, collection: &str) -> Result<Value> {
    let bad_key = || Error::with_message(ErrorCode::DocumentKeyMissing, "missing document key");
    let key = match key_or_doc {
        Value::String(s) => match s.split_once('/') {
            Some((c, k)) if c == collection => k.to_string(),
            Some(_) => return Err(Error::new(ErrorCode::DocumentHandleBad)),
            None => s.clone(),
        },
        Value::Object(m) => match m.get("_key") {
            Some(Value::String(k)) => k.clone(),
            _ => match m
                .get("_id")
                .and_then(Value::as_str)
                .and_then(|id| id.split_once('/'))
            {
                Some((_, k)) => k.to_string(),
                None => return Err(bad_key()),
            },
        },
        _ => return Err(Error::new(ErrorCode::DocumentKeyBad)),
    };
    let mut doc = match patch.unwrap_or(key_or_doc) {
        Value::Object(m) => m.clone(),
        Value::String(_) if patch.is_none() => Map::new(),
        _ => return Err(Error::new(ErrorCode::DocumentTypeInvalid)),
    };
    if patch.is_some() {
        // With `WITH`, a `_rev` in the key document is the one to check.
        if let Some(rev) = key_or_doc.get("_rev") {
            doc.entry("_rev").or_insert(rev.clone());
        }
    }
    doc.insert("_key".into(), Value::String(key));
    Ok(Value::Object(doc))
}

/// Whether `doc` has every attribute of `example` with an equal value (UPSERT's search).
fn matches_example(doc: &Value, example: &Map<String, Value>) -> bool {
    example.iter().all(|(k, v)| match (doc.get(k), v) {
        (Some(Value::Object(d)), Value::Object(e)) => matches_example(&Value::Object(d.clone()), e),
        (Some(d), v) => value::equals(d, v),
        (None, Value::Null) => true,
        (None, _) => false,
    })
}

impl ModifyOp {
    fn apply(&mut self, row: &mut Row, ctx: &mut ExecCtx) -> Result<()> {
        let spec = &self.spec;
        let coll = spec.collection.as_str();
        let first = row[spec.first].clone();
        let outcome = match spec.kind {
            ModifyKind::Insert => {
                if !first.is_object() {
                    return Err(Error::new(ErrorCode::DocumentTypeInvalid));
                }
                ctx.txn.insert(coll, first, &spec.options)?
            }
            ModifyKind::Update | ModifyKind::Replace => {
                let doc = addressed(&first, spec.second.map(|s| &row[s]), coll)?;
                if spec.kind == ModifyKind::Update {
                    ctx.txn.update(coll, doc, &spec.options)?
                } else {
                    ctx.txn.replace(coll, doc, &spec.options)?
                }
            }
            ModifyKind::Remove => {
                let doc = addressed(&first, None, coll)?;
                ctx.txn.remove(coll, doc, &spec.options)?
            }
            ModifyKind::Upsert => {
                let Value::Object(example) = &first else {
                    return Err(Error::with_message(
                        ErrorCode::QueryParse,
                        "AQL: UPSERT search document must be an object",
                    ));
                };
                let mut found = None;
                if let Some(Value::String(k)) = example.get("_key") {
                    found = ctx
                        .txn
                        .get(coll, k)?
                        .filter(|d| matches_example(d, example));
                } else {
                    let mut iter = ctx.txn.scan(coll)?;
                    for doc in iter.by_ref() {
                        let doc = doc?;
                        ctx.stats.scanned_full += 1;
                        if matches_example(&doc, example) {
                            found = Some(doc);
                            break;
                        }
                    }
                }
                match found {
                    None => {
                        let doc = spec.second.map_or(Value::Null, |s| row[s].clone());
                        if !doc.is_object() {
                            return Err(Error::new(ErrorCode::DocumentTypeInvalid));
                        }
                        ctx.txn.insert(coll, doc, &spec.options)?
                    }
                    Some(old) => {
                        if let Some(slot) = spec.out_old {
                            row[slot] = old.clone();
                        }
                        let update = match &spec.upsert_update {
                            Some(e) => ctx.eval(e, row)?,
                            None => Value::Object(Map::new()),
                        };
                        let doc = addressed(&old, Some(&update), coll)?;
                        if spec.upsert_replace {
                            ctx.txn.replace(coll, doc, &spec.options)?
                        } else {
                            ctx.txn.update(coll, doc, &spec.options)?
                        }
                    }
                }
            }
        };
        if outcome.new.is_none() && outcome.old.is_none() {
            ctx.stats.writes_ignored += 1;
        } else {
            ctx.stats.writes_executed += 1;
        }
        if let Some(slot) = spec.out_new {
            row[slot] = outcome.new.unwrap_or(Value::Null);
        }
        if let Some(slot) = spec.out_old {
            row[slot] = outcome.old.unwrap_or(Value::Null);
        }
        Ok(())
    }
}

impl Operator for ModifyOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            let Some(mut row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            ctx.check()?;
            match self.apply(&mut row, ctx) {
                Ok(()) => return Ok(Some(row)),
                Err(e) if self.spec.ignore_errors && e.code != ErrorCode::QueryKilled => {
                    ctx.stats.writes_ignored += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// A running query: the operator pipeline and its context. Values are pulled one at a time;
/// `finish` commits the query's writes.
pub struct Execution {
    root: Op,
    result_slot: Option<Slot>,
    pub ctx: ExecCtx,
    done: bool,
}

impl Execution {
    pub fn new(plan: &QueryPlan, ctx: ExecCtx) -> Execution {
        let seed = vec![Value::Null; plan.vars.len()];
        let result_slot = match plan.root.nodes.last().map(|n| &n.kind) {
            Some(NodeKind::Return { input, .. }) => Some(*input),
            _ => None,
        };
        let root = build(&plan.root, seed, ctx.profile);
        Execution {
            root,
            result_slot,
            ctx,
            done: false,
        }
    }

    /// The next result value, None when exhausted.
    pub fn next_value(&mut self) -> Result<Option<Value>> {
        if self.done {
            return Ok(None);
        }
        self.ctx.check_now()?;
        loop {
            match self.root.next(&mut self.ctx)? {
                Some(row) => {
                    if let Some(s) = self.result_slot {
                        return Ok(Some(row.into_iter().nth(s).unwrap_or(Value::Null)));
                    }
                }
                None => {
                    self.done = true;
                    return Ok(None);
                }
            }
        }
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Commits the writes (all-or-nothing) and returns the final context for statistics.
    pub fn finish(self) -> Result<(Stats, Vec<Warning>)> {
        let ExecCtx {
            txn, stats, env, ..
        } = self.ctx;
        txn.commit()?;
        Ok((stats, env.warnings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::{OptimizeOptions, RuleSelection};
    use crate::source::DataSource;

    fn planned(query: &str) -> crate::plan::QueryPlan {
        let source = crate::source::memory::MemorySource::new();
        source
            .create_collection("_system", "c", false, Vec::new())
            .unwrap();
        let txn = source.begin("_system", &[]).unwrap();
        let ast = crate::parser::parse(query).unwrap();
        let mut plan = crate::plan::build(&ast, &Map::new(), &*txn).unwrap();
        crate::optimizer::optimize(
            &mut plan,
            &OptimizeOptions {
                rules: RuleSelection::from_options(&[]),
                full_count: false,
                indexes: Default::default(),
            },
        );
        plan
    }

    #[test]
    fn count_by_attribute_pattern_matches_only_the_plain_shape() {
        let cases = [
            (
                "FOR d IN c COLLECT a = d.x WITH COUNT INTO n RETURN {a, n}",
                Some("x"),
            ),
            (
                "FOR d IN c COLLECT a = d.x.y WITH COUNT INTO n RETURN n",
                None,
            ),
            ("FOR d IN c COLLECT a = d.x INTO g RETURN g", None),
            (
                "FOR d IN c COLLECT a = d.x, b = d.y WITH COUNT INTO n RETURN n",
                None,
            ),
            (
                "FOR d IN c FILTER d.y == 1 COLLECT a = d.x WITH COUNT INTO n RETURN n",
                None,
            ),
            (
                "FOR d IN c COLLECT a = d.x AGGREGATE m = MAX(d.y) RETURN m",
                None,
            ),
            ("FOR d IN c COLLECT a = d.x RETURN a", None),
            (
                "FOR d IN c COLLECT a = LOWER(d.x) WITH COUNT INTO n RETURN n",
                None,
            ),
        ];
        for (query, want) in cases {
            let plan = planned(query);
            let nodes = &plan.root.nodes;
            let scan = nodes
                .iter()
                .position(|n| matches!(n.kind, NodeKind::EnumerateCollection { .. }))
                .unwrap_or_else(|| panic!("no scan in {query}"));
            let got = count_by_attribute_pattern(&nodes[scan..]).map(|(a, ..)| a);
            assert_eq!(got.as_deref(), want, "{query}");
        }
    }
}
