//! Planner: turns the AST into an execution plan, ArangoDB style — a pipeline of nodes
//! (`SingletonNode`, `EnumerateCollectionNode`, `CalculationNode`, `FilterNode`, ...) where
//! every expression is computed by a `CalculationNode` into a variable slot and the other
//! nodes only reference slots. Names are resolved to slots here, bind parameters substituted,
//! functions looked up (1540/1541) and constant expressions folded.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{Map, Value};

use crate::ast::{self, CollectionRef, Expr, ModifyKind, ObjectKey, Op, SortOrder};
use crate::expr::eval::{eval, EnvState, EvalEnv};
use crate::expr::{CExpr, CKey, Slot};
use crate::functions;
use crate::limits::{memory_error, memory_limit, Limits};
use crate::source::{Transaction, WriteOptions};
use crate::value::estimate_size;

mod geo_search;
mod graph;
mod index_scan;
mod inverted_search;
mod mdi_search;
mod near_vectors;
mod view_nested;
mod view_search;
pub use geo_search::{GeoOrigin, GeoSearch};
pub use graph::{options_json as graph_options_json, GraphNode, PathCondition, Produce};
pub use index_scan::{EqCond, IndexHint, IndexScan};
pub use inverted_search::InvertedSearch;
pub use mdi_search::{DimBounds, MdiSearch};
pub use near_vectors::NearVectors;
pub use view_nested::NestedCount;
pub use view_search::{
    ArrayQuantifier, Compare, GeoCall, Materialize, PrimarySortRead, ScorersSort, SearchCond,
    ViewNode, ViewValue,
};

/// What an EnumerateListNode iterates: a variable's array, or a range streamed lazily.
#[derive(Clone, Debug)]
pub enum ListSource {
    Slot(Slot),
    Range(CExpr, CExpr),
}

/// How `COLLECT ... INTO var` fills its groups.
#[derive(Clone, Debug)]
pub enum IntoKind {
    /// `INTO g = expr`: the projected values.
    Expr(Slot),
    /// `INTO g [KEEP ...]`: objects of the named variables.
    Vars(Vec<(String, Slot)>),
}

/// One `AGGREGATE` (or `WINDOW`) assignment: `out = FUNC(input)`.
#[derive(Clone, Debug)]
pub struct Aggregate {
    pub out: Slot,
    pub function: String,
    pub input: Option<Slot>,
}

/// Bound of a WINDOW frame: a count (of rows, or of the range value), unbounded, or an ISO
/// 8601 duration applied to a range value read as a timestamp in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    Rows(f64),
    Unbounded,
    /// Calendar months and milliseconds (`P1M` is a month, not 30 days).
    Duration {
        months: i64,
        millis: i64,
    },
}

#[derive(Clone, Debug)]
pub struct ModifySpec {
    pub kind: ModifyKind,
    pub collection: String,
    pub first: Slot,
    pub second: Option<Slot>,
    /// UPSERT's update/replace document, evaluated after OLD is bound.
    pub upsert_update: Option<CExpr>,
    /// `UPSERT FILTER`'s condition (`CURRENT` is the candidate document); `first` then holds
    /// nothing.
    pub upsert_filter: Option<CExpr>,
    pub options: WriteOptions,
    pub ignore_errors: bool,
    pub out_new: Option<Slot>,
    pub out_old: Option<Slot>,
    pub options_json: Value,
    /// UPSERT ... REPLACE rather than UPDATE.
    pub upsert_replace: bool,
}

#[derive(Clone, Debug)]
pub enum NodeKind {
    Singleton,
    EnumerateCollection {
        out: Slot,
        collection: String,
        random: bool,
        /// Top-level attributes the query reads from the documents, when that is all it
        /// reads (rule `reduce-extraction-to-projection`): only these are materialized.
        projections: Option<Vec<String>>,
    },
    /// Primary-index lookup: `lookup` yields a key / `_id` / document (or an array of them
    /// when `multi`).
    Index {
        out: Slot,
        collection: String,
        lookup: CExpr,
        multi: bool,
    },
    /// Lookup through a secondary (persistent) index: see [`crate::index_select`].
    IndexScan(Box<IndexScan>),
    /// Nearest documents through a vector index: see [`crate::vector_select`].
    EnumerateNearVectors(Box<NearVectors>),
    EnumerateList {
        out: Slot,
        input: ListSource,
    },
    Calculation {
        out: Slot,
        expr: CExpr,
    },
    Subquery {
        out: Slot,
        plan: Arc<Plan>,
    },
    Filter {
        input: Slot,
    },
    Sort {
        keys: Vec<(Slot, bool)>,
        limit: Option<u64>,
    },
    Limit {
        offset: u64,
        count: u64,
        full_count: bool,
    },
    Collect {
        groups: Vec<(Slot, Slot)>,
        aggregates: Vec<Aggregate>,
        into: Option<(Slot, IntoKind)>,
        count: Option<Slot>,
        method: String,
    },
    Window {
        range_input: Option<Slot>,
        preceding: Bound,
        following: Bound,
        aggregates: Vec<Aggregate>,
    },
    Return {
        input: Slot,
        distinct: bool,
    },
    Modify(Box<ModifySpec>),
    /// Traversals and path searches (`plan::graph`).
    Graph(Box<GraphNode>),
    /// `FOR d IN view SEARCH …` (`plan::view_search`).
    EnumerateView(Box<ViewNode>),
    /// Replaces the `{_key, _id, …}` a view loop with late materialization put into `var` by
    /// the document (`MATERIALIZE var`).
    Materialize {
        var: Slot,
    },
    NoResults,
}

impl NodeKind {
    pub fn type_name(&self) -> &'static str {
        match self {
            NodeKind::Singleton => "SingletonNode",
            NodeKind::EnumerateCollection { .. } => "EnumerateCollectionNode",
            NodeKind::Index { .. } | NodeKind::IndexScan(_) => "IndexNode",
            NodeKind::EnumerateNearVectors(_) => "EnumerateNearVectorNode",
            NodeKind::EnumerateList { .. } => "EnumerateListNode",
            NodeKind::Calculation { .. } => "CalculationNode",
            NodeKind::Subquery { .. } => "SubqueryNode",
            NodeKind::Filter { .. } => "FilterNode",
            NodeKind::Sort { .. } => "SortNode",
            NodeKind::Limit { .. } => "LimitNode",
            NodeKind::Collect { .. } => "CollectNode",
            NodeKind::Window { .. } => "WindowNode",
            NodeKind::Return { .. } => "ReturnNode",
            NodeKind::Modify(m) => m.kind.node_name(),
            NodeKind::Graph(g) => g.type_name(),
            NodeKind::EnumerateView(_) => "EnumerateViewNode",
            NodeKind::Materialize { .. } => "MaterializeNode",
            NodeKind::NoResults => "NoResultsNode",
        }
    }

    /// Slots this node reads (subquery plans included, their internal slots too).
    pub fn reads(&self) -> HashSet<Slot> {
        let mut set = HashSet::new();
        match self {
            NodeKind::Index { lookup, .. } => set = lookup.vars(),
            NodeKind::IndexScan(scan) => {
                for c in &scan.eq {
                    let (EqCond::Eq(e) | EqCond::In(e)) = c;
                    set.extend(e.vars());
                }
                for (e, _) in scan.lower.iter().chain(scan.upper.iter()) {
                    set.extend(e.vars());
                }
                if let Some(geo) = &scan.geo {
                    for e in geo.expressions() {
                        set.extend(e.vars());
                    }
                    // Its own output is not an input.
                    set.remove(&scan.out);
                }
                if let Some(mdi) = &scan.mdi {
                    for e in mdi.expressions() {
                        set.extend(e.vars());
                    }
                }
                if let Some(inverted) = &scan.inverted {
                    inverted.visit_vars(&mut |s| {
                        set.insert(s);
                    });
                }
            }
            NodeKind::EnumerateNearVectors(near) => {
                for e in near.expressions() {
                    set.extend(e.vars());
                }
                // The pushed filter reads the node's own document.
                set.remove(&near.out);
            }
            NodeKind::EnumerateList {
                input: ListSource::Slot(input),
                ..
            }
            | NodeKind::Filter { input }
            | NodeKind::Return { input, .. } => {
                set.insert(*input);
            }
            NodeKind::EnumerateList {
                input: ListSource::Range(a, b),
                ..
            } => {
                set = a.vars();
                set.extend(b.vars());
            }
            NodeKind::Calculation { expr, .. } => set = expr.vars(),
            NodeKind::Subquery { plan, .. } => {
                for n in &plan.nodes {
                    set.extend(n.kind.reads());
                }
            }
            NodeKind::Sort { keys, .. } => set.extend(keys.iter().map(|k| k.0)),
            NodeKind::Collect {
                groups,
                aggregates,
                into,
                ..
            } => {
                set.extend(groups.iter().map(|g| g.1));
                set.extend(aggregates.iter().filter_map(|a| a.input));
                match into {
                    Some((_, IntoKind::Expr(s))) => {
                        set.insert(*s);
                    }
                    Some((_, IntoKind::Vars(vars))) => set.extend(vars.iter().map(|v| v.1)),
                    None => {}
                }
            }
            NodeKind::Window {
                range_input,
                aggregates,
                ..
            } => {
                set.extend(range_input.iter().copied());
                set.extend(aggregates.iter().filter_map(|a| a.input));
            }
            NodeKind::Modify(m) => {
                set.insert(m.first);
                set.extend(m.second.iter().copied());
                if let Some(e) = &m.upsert_update {
                    set.extend(e.vars());
                }
            }
            NodeKind::Graph(g) => set = g.reads(),
            NodeKind::Materialize { var } => {
                set.insert(*var);
            }
            NodeKind::EnumerateView(v) => {
                if let Some(c) = &v.condition {
                    c.visit_vars(&mut |s| {
                        set.insert(s);
                    });
                }
            }
            NodeKind::Singleton
            | NodeKind::EnumerateCollection { .. }
            | NodeKind::Limit { .. }
            | NodeKind::NoResults => {}
        }
        set
    }

    /// Slots this node defines.
    pub fn writes(&self) -> Vec<Slot> {
        match self {
            NodeKind::EnumerateCollection { out, .. }
            | NodeKind::Index { out, .. }
            | NodeKind::EnumerateList { out, .. }
            | NodeKind::Calculation { out, .. }
            | NodeKind::Subquery { out, .. } => vec![*out],
            NodeKind::IndexScan(scan) => vec![scan.out],
            NodeKind::EnumerateNearVectors(near) => vec![near.out, near.distance_out],
            NodeKind::Collect {
                groups,
                aggregates,
                into,
                count,
                ..
            } => {
                let mut v: Vec<Slot> = groups.iter().map(|g| g.0).collect();
                v.extend(aggregates.iter().map(|a| a.out));
                v.extend(into.iter().map(|i| i.0));
                v.extend(count.iter().copied());
                v
            }
            NodeKind::Window { aggregates, .. } => aggregates.iter().map(|a| a.out).collect(),
            NodeKind::Modify(m) => m.out_new.iter().chain(m.out_old.iter()).copied().collect(),
            NodeKind::Graph(g) => g.writes(),
            NodeKind::EnumerateView(v) => std::iter::once(v.out)
                .chain(v.scorers.iter().map(|s| s.1))
                .chain(v.offset_infos.iter().map(|o| o.1))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// A loop: produces possibly many rows per input row.
    pub fn is_loop(&self) -> bool {
        matches!(
            self,
            NodeKind::EnumerateCollection { .. }
                | NodeKind::Index { .. }
                | NodeKind::IndexScan(_)
                | NodeKind::EnumerateNearVectors(_)
                | NodeKind::EnumerateList { .. }
                | NodeKind::Graph(_)
                | NodeKind::EnumerateView(_)
        )
    }
}

#[derive(Clone, Debug)]
pub struct Node {
    pub id: usize,
    pub kind: NodeKind,
}

/// One pipeline (the main query or a subquery), in execution order; `nodes[0]` is the
/// singleton.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub nodes: Vec<Node>,
}

#[derive(Clone, Debug)]
pub struct VarInfo {
    pub name: String,
    /// Declared by the user (as opposed to a planner temporary).
    pub user: bool,
}

/// The planned query with everything explain and the executor need.
#[derive(Clone, Debug)]
pub struct QueryPlan {
    pub root: Plan,
    /// Shared, not copied, when a plan template is filled in for a run.
    pub vars: Arc<[VarInfo]>,
    /// Collection name → "read" / "write".
    pub collections: BTreeMap<String, &'static str>,
    /// The optimizer rules that changed the plan. Names from [`crate::optimizer::RULES`]
    /// (static, as in `rule_seconds`): a plan is copied per run of a plan template, and
    /// owned names made that copy allocate one string per rule.
    pub rules: Vec<&'static str>,
    /// Seconds the optimizer spent in each rule it ran, in rule order (`stats.rules` of a
    /// profile at level 2).
    pub rule_seconds: Vec<(&'static str, f64)>,
    pub is_modification: bool,
    /// The query results cache may keep this plan's results: it writes nothing and calls no
    /// function ArangoDB marks uncacheable (random values, the clock, reads of documents,
    /// collections or the caller outside the query's own loops).
    pub cacheable: bool,
    pub bind_names: Vec<String>,
    /// `indexHint` / `forceIndexHint` of collection loops, by loop variable slot.
    pub index_hints: HashMap<Slot, IndexHint>,
}

impl QueryPlan {
    /// Whether the query's results are documents as stored JSON text (`Value::String`s, or
    /// null for a missing vertex) rather than values: the top-level `RETURN` returns a
    /// traversal's vertex variable in [`Produce::Raw`] mode.
    pub fn raw_result(&self) -> bool {
        let Some(NodeKind::Return { input, .. }) = self.root.nodes.last().map(|n| &n.kind) else {
            return false;
        };
        self.root.nodes.iter().any(|n| {
            matches!(&n.kind, NodeKind::Graph(g)
                if g.vertex_out == Some(*input) && g.vertex_mode == Produce::Raw)
        })
    }
}

/// The variables in scope while planning: one frame per (sub)query, innermost last, each
/// in declaration order, and an index from each name to its visible slots, so that a lookup
/// costs one hash probe however many variables are declared (a query of n `LET`s plans in
/// O(n), not O(n²)). The innermost, most recent declaration of a name is the one seen.
struct Scopes {
    frames: Vec<Vec<(String, Slot)>>,
    visible: HashMap<String, Vec<Slot>>,
}

impl Default for Scopes {
    fn default() -> Scopes {
        Scopes {
            frames: vec![Vec::new()],
            visible: HashMap::new(),
        }
    }
}

impl Scopes {
    /// The innermost frame's variables, in declaration order.
    fn current(&self) -> &[(String, Slot)] {
        self.frames.last().map_or(&[], Vec::as_slice)
    }

    fn declare(&mut self, name: String, slot: Slot) {
        let frame = self
            .frames
            .last_mut()
            .expect("the query's frame is never popped");
        self.visible.entry(name.clone()).or_default().push(slot);
        frame.push((name, slot));
    }

    fn lookup(&self, name: &str) -> Option<Slot> {
        self.visible
            .get(name)
            .and_then(|slots| slots.last())
            .copied()
    }

    /// Hides the innermost frame's variables from position `len` on.
    fn truncate_current(&mut self, len: usize) {
        let Some(frame) = self.frames.last_mut() else {
            return;
        };
        let len = len.min(frame.len());
        for (name, slot) in frame.drain(len..).rev() {
            let slots = self.visible.get_mut(&name);
            let popped = slots.and_then(|slots| slots.pop());
            assert_eq!(popped, Some(slot), "scope index out of step for '{name}'");
            if self.visible.get(&name).is_some_and(Vec::is_empty) {
                self.visible.remove(&name);
            }
        }
    }

    fn push_frame(&mut self) {
        self.frames.push(Vec::new());
    }

    fn pop_frame(&mut self) {
        self.truncate_current(0);
        self.frames.pop();
        debug_assert!(!self.frames.is_empty(), "the query's frame was popped");
    }
}

struct Planner<'a> {
    bind: &'a Map<String, Value>,
    used_binds: HashSet<String>,
    txn: &'a dyn Transaction,
    vars: Vec<VarInfo>,
    scopes: Scopes,
    /// Per scope: where the variables of the first FOR loop begin. COLLECT ends the loop
    /// scopes (as ArangoDB's parser does), hiding everything declared from there on, while
    /// variables declared before the first loop stay visible.
    loop_marks: Vec<Option<usize>>,
    collections: BTreeMap<String, &'static str>,
    next_id: usize,
    modified: HashSet<String>,
    index_hints: HashMap<Slot, IndexHint>,
    limits: &'a Limits,
    /// Estimated bytes of the constants folded so far, charged to the query's budget.
    folded_bytes: u64,
    /// The variables of view loops with their EnumerateViewNode's id (scorers attach there).
    view_vars: Vec<(Slot, usize)>,
    /// A function whose results must not be cached was called.
    calls_uncacheable: bool,
}

/// Plans `query`; `txn` is used only to check collections exist. `limits` (kill flag,
/// `maxRuntime`) are checked at every statement.
pub fn build(
    query: &ast::Query,
    bind: &Map<String, Value>,
    txn: &dyn Transaction,
    limits: &Limits,
) -> Result<QueryPlan> {
    let mut planner = Planner {
        limits,
        folded_bytes: 0,
        bind,
        used_binds: HashSet::new(),
        txn,
        vars: Vec::new(),
        scopes: Scopes::default(),
        loop_marks: vec![None],
        collections: BTreeMap::new(),
        next_id: 1,
        modified: HashSet::new(),
        index_hints: HashMap::new(),
        view_vars: Vec::new(),
        calls_uncacheable: false,
    };
    for name in &query.with {
        let name = planner.resolve_collection_name(&collection_ref_of_with(name))?;
        planner.collections.entry(name).or_insert("read");
    }
    let root = planner.plan_query(query)?;
    let mut unused: Vec<&String> = bind
        .keys()
        .filter(|k| !planner.used_binds.contains(*k))
        .collect();
    unused.sort();
    if let Some(name) = unused.first() {
        return Err(Error::with_message(
            ErrorCode::QueryBindParameterUndeclared,
            format!("AQL: bind parameter '{name}' was not declared in the query (while parsing)"),
        ));
    }
    let is_modification = !planner.modified.is_empty();
    let cacheable = !is_modification && !planner.calls_uncacheable;
    let mut bind_names: Vec<String> = planner.used_binds.into_iter().collect();
    bind_names.sort();
    Ok(QueryPlan {
        root,
        vars: planner.vars.into(),
        collections: planner.collections,
        rules: Vec::new(),
        rule_seconds: Vec::new(),
        is_modification,
        cacheable,
        bind_names,
        index_hints: planner.index_hints,
    })
}

/// A `SORT` direction given as a value (`SORT x @dir`): `"ASC"`/`"DESC"` in any case or a
/// boolean or number (true or non-zero: ascending); any other value is a syntax error (1501).
fn sort_direction(v: &Value) -> Result<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("asc") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("desc") => Ok(false),
        Value::Number(n) => Ok(n.as_f64().is_some_and(|f| f != 0.0)),
        _ => Err(Error::with_message(
            ErrorCode::QueryParse,
            format!("AQL: invalid sort direction {v} (while parsing)"),
        )),
    }
}

fn collection_ref_of_with(name: &str) -> CollectionRef {
    match name.strip_prefix('@') {
        Some(bind) => CollectionRef::Bind(bind.to_string()),
        None => CollectionRef::Name(name.to_string()),
    }
}

/// Collects bind parameter names used by a query without planning it (for `/_api/query`).
pub fn bind_parameter_names(q: &ast::Query) -> Vec<String> {
    let mut out = BindOccurrences::default();
    out.query(q);
    out.all.sort();
    out.all.dedup();
    out.all
}

/// The value bind parameters whose every use is the whole start or target vertex of a graph
/// operation (`FOR v IN 1..2 OUTBOUND @start edges`, `SHORTEST_PATH @from TO @to`), sorted.
/// Planning copies such a value into the graph node untouched (see
/// `plan_template`), so a plan made for one string there serves any other string.
pub fn vertex_only_params(q: &ast::Query) -> Vec<String> {
    let mut out = BindOccurrences::default();
    out.query(q);
    let count = |list: &[String], name: &str| list.iter().filter(|n| *n == name).count();
    let mut names: Vec<String> = out
        .vertices
        .iter()
        .filter(|n| count(&out.vertices, n) == count(&out.all, n))
        .cloned()
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Every use of a bind parameter in a query (collection parameters as `@name`), and the
/// uses that are a graph operation's whole start or target vertex.
#[derive(Default)]
struct BindOccurrences {
    all: Vec<String>,
    vertices: Vec<String>,
}

impl BindOccurrences {
    fn push(&mut self, name: String) {
        self.all.push(name);
    }

    fn query(&mut self, q: &ast::Query) {
        occurrences_in_query(q, self)
    }
}

fn occurrences_in_query(q: &ast::Query, out: &mut BindOccurrences) {
    fn expr(e: &Expr, out: &mut BindOccurrences) {
        match e {
            Expr::Bind(n) => out.push(n.clone()),
            Expr::BindCollection(n) => out.push(format!("@{n}")),
            Expr::Literal(_) | Expr::Name(_) | Expr::Current => {}
            Expr::Array(items) | Expr::Call(_, items) => items.iter().for_each(|e| expr(e, out)),
            Expr::Object(m) => m.iter().for_each(|(k, v)| {
                if let ObjectKey::Computed(k) = k {
                    expr(k, out);
                }
                expr(v, out);
            }),
            Expr::Attribute(e, _) | Expr::Unary(_, e) => expr(e, out),
            Expr::Index(a, b)
            | Expr::Binary(_, a, b)
            | Expr::ArrayCompare(_, _, a, b)
            | Expr::Range(a, b) => {
                expr(a, out);
                expr(b, out);
            }
            Expr::ArrayAtLeast(n, _, a, b) => {
                expr(n, out);
                expr(a, out);
                expr(b, out);
            }
            Expr::Expansion {
                input,
                filter,
                limit,
                project,
                ..
            } => {
                expr(input, out);
                for e in [filter, project].into_iter().flatten() {
                    expr(e, out);
                }
                if let Some((a, b)) = limit {
                    expr(a, out);
                    expr(b, out);
                }
            }
            Expr::Ternary(c, t, e) => {
                expr(c, out);
                if let Some(t) = t {
                    expr(t, out);
                }
                expr(e, out);
            }
            Expr::Subquery(q) => query(q, out),
        }
    }
    fn coll(c: &CollectionRef, out: &mut BindOccurrences) {
        if let CollectionRef::Bind(n) = c {
            out.push(format!("@{n}"));
        }
    }
    fn query(q: &ast::Query, out: &mut BindOccurrences) {
        for w in &q.with {
            if let Some(b) = w.strip_prefix('@') {
                out.push(format!("@{b}"));
            }
        }
        for op in &q.ops {
            match op {
                Op::For {
                    source,
                    search,
                    options,
                    ..
                } => {
                    expr(source, out);
                    search.iter().for_each(|e| expr(e, out));
                    options.iter().for_each(|e| expr(e, out));
                }
                Op::Traversal(g) => {
                    for e in std::iter::once(&g.start).chain(g.target.as_ref()) {
                        if let Expr::Bind(n) = e {
                            out.vertices.push(n.clone());
                        }
                    }
                    let prune = g.prune.as_ref().map(|p| &p.1);
                    [&g.depth, &g.options, &g.target]
                        .into_iter()
                        .flatten()
                        .chain(prune)
                        .chain(std::iter::once(&g.start))
                        .for_each(|e| expr(e, out));
                    match &g.graph {
                        ast::GraphRef::Named(e) => expr(e, out),
                        ast::GraphRef::Collections(list) => {
                            list.iter().for_each(|(_, c)| coll(c, out))
                        }
                    }
                }
                Op::Filter(e) => expr(e, out),
                Op::Let { expr: e, .. } => expr(e, out),
                Op::Sort(keys) => keys.iter().for_each(|k| expr(&k.0, out)),
                Op::Limit { offset, count } => {
                    expr(offset, out);
                    expr(count, out);
                }
                Op::Collect(c) => {
                    c.groups
                        .iter()
                        .chain(c.aggregates.iter())
                        .for_each(|g| expr(&g.1, out));
                    if let Some((_, Some(p))) = &c.into {
                        expr(p, out);
                    }
                    c.options.iter().for_each(|e| expr(e, out));
                }
                Op::Window {
                    range_value,
                    spec,
                    aggregates,
                } => {
                    range_value.iter().for_each(|e| expr(e, out));
                    expr(spec, out);
                    aggregates.iter().for_each(|a| expr(&a.1, out));
                }
                Op::Return { expr: e, .. } => expr(e, out),
                Op::Modify(m) => {
                    expr(&m.first, out);
                    for e in [&m.second, &m.third, &m.options].into_iter().flatten() {
                        expr(e, out);
                    }
                    coll(&m.collection, out);
                }
            }
        }
    }
    query(q, out)
}

/// Aggregate functions allowed in COLLECT AGGREGATE and WINDOW (ArangoDB's list).
pub const AGGREGATE_FUNCTIONS: &[&str] = &[
    "LENGTH",
    "COUNT",
    "MIN",
    "MAX",
    "SUM",
    "AVERAGE",
    "AVG",
    "VARIANCE_POPULATION",
    "VARIANCE",
    "VARIANCE_SAMPLE",
    "STDDEV_POPULATION",
    "STDDEV",
    "STDDEV_SAMPLE",
    "UNIQUE",
    "SORTED_UNIQUE",
    "COUNT_DISTINCT",
    "COUNT_UNIQUE",
    "PUSH",
    "BIT_AND",
    "BIT_OR",
    "BIT_XOR",
];

impl<'a> Planner<'a> {
    fn node(&mut self, plan: &mut Plan, kind: NodeKind) {
        plan.nodes.push(Node {
            id: self.next_id,
            kind,
        });
        self.next_id += 1;
    }

    fn new_var(&mut self, name: &str, user: bool) -> Slot {
        self.vars.push(VarInfo {
            name: name.to_string(),
            user,
        });
        self.vars.len() - 1
    }

    fn temp(&mut self) -> Slot {
        let n = self.vars.len();
        self.new_var(&n.to_string(), false)
    }

    fn declare(&mut self, name: &str) -> Result<Slot> {
        if self.lookup_var(name).is_some() && !matches!(name, "NEW" | "OLD") {
            return Err(Error::with_message(
                ErrorCode::QueryVariableRedeclared,
                format!("AQL: variable '{name}' is assigned multiple times (while parsing)"),
            ));
        }
        let slot = self.new_var(name, true);
        self.scopes.declare(name.to_string(), slot);
        Ok(slot)
    }

    fn mark_loop(&mut self) {
        let len = self.scopes.current().len();
        if let Some(mark) = self.loop_marks.last_mut() {
            mark.get_or_insert(len);
        }
    }

    fn lookup_var(&self, name: &str) -> Option<Slot> {
        self.scopes.lookup(name)
    }

    fn bind_value(&mut self, name: &str) -> Result<Value> {
        self.used_binds.insert(name.to_string());
        self.bind.get(name).cloned().ok_or_else(|| {
            Error::with_message(
                ErrorCode::QueryBindParameterMissing,
                format!(
                    "AQL: no value specified for declared bind parameter '{name}' (while parsing)"
                ),
            )
        })
    }

    /// The view `c` names, if it names one.
    fn view_name(&mut self, c: &CollectionRef) -> Result<Option<String>> {
        let name = match c {
            CollectionRef::Name(n) => n.clone(),
            CollectionRef::Bind(n) => match self.bind_value(&format!("@{n}"))? {
                Value::String(s) => s,
                _ => return Ok(None),
            },
        };
        Ok(self.txn.is_view(&name).then_some(name))
    }

    fn resolve_collection_name(&mut self, c: &CollectionRef) -> Result<String> {
        let name = match c {
            CollectionRef::Name(n) => n.clone(),
            CollectionRef::Bind(n) => {
                let key = format!("@{n}");
                match self.bind_value(&key)? {
                    Value::String(s) => s,
                    _ => {
                        return Err(Error::with_message(
                            ErrorCode::QueryBindParameterType,
                            format!("AQL: bind parameter '@{n}' has an invalid value or type (while parsing)"),
                        ))
                    }
                }
            }
        };
        self.txn.collection(&name).map_err(|e| {
            if e.code == ErrorCode::DataSourceNotFound {
                Error::with_message(
                    ErrorCode::DataSourceNotFound,
                    format!("AQL: collection or view not found: {name} (while parsing)"),
                )
            } else {
                e
            }
        })?;
        Ok(name)
    }

    fn plan_query(&mut self, query: &ast::Query) -> Result<Plan> {
        let mut plan = Plan::default();
        self.node(&mut plan, NodeKind::Singleton);
        for op in &query.ops {
            self.limits.check()?;
            self.plan_op(op, &mut plan)?;
        }
        Ok(plan)
    }

    /// A slot holding the value of `e`: the variable itself for a plain reference, otherwise
    /// a new CalculationNode.
    fn expr_slot(&mut self, e: &Expr, plan: &mut Plan) -> Result<Slot> {
        let c = self.compile(e, plan)?;
        if let CExpr::Var(s) = c {
            return Ok(s);
        }
        let out = self.temp();
        self.node(plan, NodeKind::Calculation { out, expr: c });
        Ok(out)
    }

    fn constant(&mut self, e: &Expr, plan: &mut Plan, what: &str) -> Result<Value> {
        match self.compile(e, plan)? {
            CExpr::Const(v) => Ok(v),
            _ => Err(Error::with_message(
                ErrorCode::QueryCompileTimeOptions,
                format!("AQL: {what} must be a value known at query compile time (while parsing)"),
            )),
        }
    }

    fn plan_op(&mut self, op: &Op, plan: &mut Plan) -> Result<()> {
        match op {
            Op::For {
                var,
                source,
                search,
                options,
            } => {
                let collection = match source {
                    Expr::Name(n) if self.lookup_var(n).is_none() => {
                        Some(CollectionRef::Name(n.clone()))
                    }
                    Expr::BindCollection(n) => Some(CollectionRef::Bind(n.clone())),
                    _ => None,
                };
                if let Some(c) = &collection {
                    if let Some(view) = self.view_name(c)? {
                        return self.plan_view(var, view, search.as_ref(), options.as_ref(), plan);
                    }
                }
                if let (Some(c), Some(_)) = (&collection, search) {
                    // An unknown name is 1203; a collection cannot be searched.
                    self.resolve_collection_name(c)?;
                    return Err(Error::with_message(
                        ErrorCode::QueryParse,
                        "AQL: SEARCH is only allowed on views (while parsing)",
                    ));
                }
                if search.is_some() {
                    return Err(Error::with_message(
                        ErrorCode::QueryParse,
                        "AQL: SEARCH is only allowed on views (while parsing)",
                    ));
                }
                if let Some(c) = collection {
                    let name = self.resolve_collection_name(&c)?;
                    if self.modified.contains(&name) {
                        return Err(Error::with_message(
                            ErrorCode::QueryAccessAfterModification,
                            format!("AQL: access after data-modification by collection '{name}' (while parsing)"),
                        ));
                    }
                    self.collections.entry(name.clone()).or_insert("read");
                    self.mark_loop();
                    let out = self.declare(var)?;
                    if let Some(options) = options {
                        let options = self.constant(options, plan, "OPTIONS")?;
                        if let Some(hint) = IndexHint::from_options(&options) {
                            self.index_hints.insert(out, hint);
                        }
                    }
                    self.node(
                        plan,
                        NodeKind::EnumerateCollection {
                            out,
                            collection: name,
                            random: false,
                            projections: None,
                        },
                    );
                } else {
                    let input = match self.compile(source, plan)? {
                        CExpr::Range(a, b) => ListSource::Range(*a, *b),
                        CExpr::Var(s) => ListSource::Slot(s),
                        other => {
                            let out = self.temp();
                            self.node(plan, NodeKind::Calculation { out, expr: other });
                            ListSource::Slot(out)
                        }
                    };
                    self.mark_loop();
                    let out = self.declare(var)?;
                    self.node(plan, NodeKind::EnumerateList { out, input });
                }
            }
            Op::Traversal(g) => self.plan_graph(g, plan)?,
            Op::Filter(e) => {
                let input = self.expr_slot(e, plan)?;
                self.node(plan, NodeKind::Filter { input });
            }
            Op::Let { var, expr } => {
                let c = self.compile(expr, plan)?;
                let out = self.declare(var)?;
                self.node(plan, NodeKind::Calculation { out, expr: c });
            }
            Op::Sort(keys) => {
                let mut slots = Vec::new();
                for (e, order) in keys {
                    let asc = match order {
                        SortOrder::Ascending => true,
                        SortOrder::Descending => false,
                        SortOrder::Given(given) => {
                            let v = self.constant(given, plan, "SORT direction")?;
                            sort_direction(&v)?
                        }
                    };
                    slots.push((self.expr_slot(e, plan)?, asc));
                }
                self.node(
                    plan,
                    NodeKind::Sort {
                        keys: slots,
                        limit: None,
                    },
                );
            }
            Op::Limit { offset, count } => {
                let offset_v = self.constant(offset, plan, "LIMIT offset")?;
                let count_v = self.constant(count, plan, "LIMIT count")?;
                let number = |v: &Value| -> Result<u64> {
                    match v {
                        Value::Number(n) if n.as_f64().is_some_and(|f| f >= 0.0) => {
                            Ok(n.as_f64().unwrap_or(0.0) as u64)
                        }
                        _ => Err(Error::with_message(
                            ErrorCode::QueryNumberOutOfRange,
                            "AQL: LIMIT value is not a number or out of range (while parsing)",
                        )),
                    }
                };
                let offset = if offset_v.is_null() {
                    0
                } else {
                    number(&offset_v)?
                };
                // python-arango sends `LIMIT skip, null` to mean "no limit".
                let count = if count_v.is_null() {
                    u64::MAX
                } else {
                    number(&count_v)?
                };
                self.node(
                    plan,
                    NodeKind::Limit {
                        offset,
                        count,
                        full_count: false,
                    },
                );
            }
            Op::Collect(c) => self.plan_collect(c, plan)?,
            Op::Window {
                range_value,
                spec,
                aggregates,
            } => {
                let range_input = match range_value {
                    Some(e) => Some(self.expr_slot(e, plan)?),
                    None => None,
                };
                let spec = self.constant(spec, plan, "WINDOW specification")?;
                let ranged = range_input.is_some();
                let bound = |name: &str| -> Result<Bound> {
                    match spec.get(name) {
                        None | Some(Value::Null) => Ok(Bound::Rows(0.0)),
                        Some(Value::String(s)) if s.eq_ignore_ascii_case("unbounded") => Ok(Bound::Unbounded),
                        Some(Value::String(s)) if ranged && s.starts_with('P') => {
                            match crate::functions::parse_duration(s) {
                                Some((months, millis)) => Ok(Bound::Duration { months, millis }),
                                None => Err(Error::with_message(
                                    ErrorCode::BadParameter,
                                    format!("AQL: WINDOW attribute '{name}' is not a valid ISO 8601 duration: '{s}' (while parsing)"),
                                )),
                            }
                        }
                        Some(Value::Number(n)) if n.as_f64().is_some_and(|f| f >= 0.0) => Ok(Bound::Rows(n.as_f64().unwrap_or(0.0))),
                        Some(Value::String(s)) if s.parse::<f64>().is_ok() => Ok(Bound::Rows(s.parse().unwrap_or(0.0))),
                        _ => Err(Error::with_message(
                            ErrorCode::BadParameter,
                            format!("AQL: WINDOW attribute '{name}' must be a non-negative number or \"unbounded\" (while parsing)"),
                        )),
                    }
                };
                let (preceding, following) = (bound("preceding")?, bound("following")?);
                if let Some(slot) = range_input {
                    // A range frame is a run of neighbours in the order of the range value: as
                    // ArangoDB, sort by it first.
                    self.node(
                        plan,
                        NodeKind::Sort {
                            keys: vec![(slot, true)],
                            limit: None,
                        },
                    );
                }
                let aggregates = self.plan_aggregates(aggregates, plan)?;
                for a in &aggregates {
                    let name = self.vars[a.out].name.clone();
                    self.scopes.declare(name, a.out);
                }
                self.node(
                    plan,
                    NodeKind::Window {
                        range_input,
                        preceding,
                        following,
                        aggregates,
                    },
                );
            }
            Op::Return { distinct, expr } => {
                let input = self.expr_slot(expr, plan)?;
                self.node(
                    plan,
                    NodeKind::Return {
                        input,
                        distinct: *distinct,
                    },
                );
            }
            Op::Modify(m) => self.plan_modify(m, plan)?,
        }
        Ok(())
    }

    fn plan_aggregates(
        &mut self,
        list: &[(String, Expr)],
        plan: &mut Plan,
    ) -> Result<Vec<Aggregate>> {
        let mut out = Vec::new();
        for (name, e) in list {
            let invalid = || {
                Error::with_message(
                    ErrorCode::QueryInvalidAggregateExpression,
                    "AQL: invalid aggregate expression (while parsing)",
                )
            };
            let Expr::Call(func, args) = e else {
                return Err(invalid());
            };
            if !AGGREGATE_FUNCTIONS.contains(&func.as_str()) || args.len() > 1 {
                return Err(invalid());
            }
            if args.is_empty() && !matches!(func.as_str(), "LENGTH" | "COUNT") {
                return Err(invalid());
            }
            let input = match args.first() {
                Some(a) => Some(self.expr_slot(a, plan)?),
                None => None,
            };
            let slot = self.new_var(name, true);
            out.push(Aggregate {
                out: slot,
                function: func.clone(),
                input,
            });
        }
        Ok(out)
    }

    fn plan_collect(&mut self, c: &ast::Collect, plan: &mut Plan) -> Result<()> {
        let mut groups = Vec::new();
        for (name, e) in &c.groups {
            let input = self.expr_slot(e, plan)?;
            groups.push((name.clone(), input));
        }
        let aggregates = self.plan_aggregates(&c.aggregates, plan)?;
        let into = match &c.into {
            Some((name, Some(projection))) => Some((
                name.clone(),
                IntoKind::Expr(self.expr_slot(projection, plan)?),
            )),
            Some((name, None)) => {
                let visible: Vec<(String, Slot)> = if c.keep.is_empty() {
                    let mut seen = HashSet::new();
                    let from = self.loop_marks.last().copied().flatten().unwrap_or(0);
                    let mut list: Vec<(String, Slot)> = self.scopes.current()[from..]
                        .iter()
                        .rev()
                        .filter(|(n, s)| self.vars[*s].user && seen.insert(n.clone()))
                        .cloned()
                        .collect();
                    list.reverse();
                    list
                } else {
                    let mut list = Vec::new();
                    for k in &c.keep {
                        let slot = self.lookup_var(k).ok_or_else(|| {
                            Error::with_message(
                                ErrorCode::QueryVariableNameUnknown,
                                format!("AQL: unknown variable '{k}' in KEEP (while parsing)"),
                            )
                        })?;
                        list.push((k.clone(), slot));
                    }
                    list
                };
                Some((name.clone(), IntoKind::Vars(visible)))
            }
            None => None,
        };
        let method = match &c.options {
            Some(e) => {
                let v = self.constant(e, plan, "COLLECT options")?;
                v.get("method")
                    .and_then(Value::as_str)
                    .unwrap_or("sorted")
                    .to_string()
            }
            None => "sorted".to_string(),
        };
        // COLLECT ends the scope of the current loop variables.
        let keep_from = self.loop_marks.last().copied().flatten();
        if let Some(from) = keep_from {
            self.scopes.truncate_current(from);
        }
        *self.loop_marks.last_mut().expect("scope") = None;
        let mut group_slots = Vec::new();
        for (name, input) in groups {
            group_slots.push((self.declare(&name)?, input));
        }
        for a in &aggregates {
            let name = self.vars[a.out].name.clone();
            if self.lookup_var(&name).is_some() {
                return Err(Error::with_message(
                    ErrorCode::QueryVariableRedeclared,
                    format!("AQL: variable '{name}' is assigned multiple times (while parsing)"),
                ));
            }
            self.scopes.declare(name, a.out);
        }
        let into = match into {
            Some((name, kind)) => Some((self.declare(&name)?, kind)),
            None => None,
        };
        let count = match &c.count_into {
            Some(name) => Some(self.declare(name)?),
            None => None,
        };
        self.node(
            plan,
            NodeKind::Collect {
                groups: group_slots,
                aggregates,
                into,
                count,
                method,
            },
        );
        Ok(())
    }

    fn plan_modify(&mut self, m: &ast::Modify, plan: &mut Plan) -> Result<()> {
        let collection = self.resolve_collection_name(&m.collection)?;
        let (first, upsert_filter) = if m.upsert_filter {
            let condition = self.compile(&m.first, plan)?;
            let none = self.expr_slot(&Expr::lit(Value::Null), plan)?;
            (none, Some(condition))
        } else {
            (self.expr_slot(&m.first, plan)?, None)
        };
        let second = match (&m.kind, &m.second) {
            (ModifyKind::Upsert, Some(e)) | (ModifyKind::Update | ModifyKind::Replace, Some(e)) => {
                Some(self.expr_slot(e, plan)?)
            }
            _ => None,
        };
        let options_json = match &m.options {
            Some(e) => self.constant(e, plan, "OPTIONS")?,
            None => Value::Object(Map::new()),
        };
        let mut options = WriteOptions::default();
        let flag = |name: &str, default: bool| {
            options_json
                .get(name)
                .and_then(Value::as_bool)
                .unwrap_or(default)
        };
        options.wait_for_sync = flag("waitForSync", false);
        options.keep_null = flag("keepNull", true);
        options.merge_objects = flag("mergeObjects", true);
        options.ignore_revs = flag("ignoreRevs", true);
        options.overwrite_mode = options_json
            .get("overwriteMode")
            .and_then(Value::as_str)
            .map(str::to_string);
        if options.overwrite_mode.is_none() && flag("overwrite", false) {
            options.overwrite_mode = Some("replace".into());
        }
        options.version_attribute = options_json
            .get("versionAttribute")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
            .map(str::to_string);
        let ignore_errors = flag("ignoreErrors", false);
        // OLD is visible inside UPSERT's update expression.
        let old_slot = self.new_var("OLD", true);
        let upsert_update = if m.kind == ModifyKind::Upsert {
            self.scopes.push_frame();
            self.scopes.declare("OLD".to_string(), old_slot);
            self.loop_marks.push(None);
            let compiled = m.third.as_ref().map(|e| self.compile(e, plan)).transpose();
            self.scopes.pop_frame();
            self.loop_marks.pop();
            compiled?
        } else {
            None
        };
        if self.modified.contains(&collection) {
            return Err(Error::with_message(
                ErrorCode::QueryMultiModify,
                format!("AQL: multi-modify query: collection '{collection}' is modified more than once (while parsing)"),
            ));
        }
        self.modified.insert(collection.clone());
        self.collections.insert(collection.clone(), "write");
        let new_slot = self.new_var("NEW", true);
        let (has_new, has_old) = match m.kind {
            ModifyKind::Insert => (true, options.overwrite_mode.is_some()),
            ModifyKind::Remove => (false, true),
            _ => (true, true),
        };
        if has_new {
            self.scopes.declare("NEW".to_string(), new_slot);
        }
        if has_old {
            self.scopes.declare("OLD".to_string(), old_slot);
        }
        let spec = ModifySpec {
            kind: m.kind,
            collection,
            first,
            second,
            upsert_update,
            upsert_filter,
            options,
            ignore_errors,
            out_new: has_new.then_some(new_slot),
            out_old: has_old.then_some(old_slot),
            options_json,
            upsert_replace: m.upsert_replace,
        };
        self.node(plan, NodeKind::Modify(Box::new(spec)));
        Ok(())
    }

    fn compile(&mut self, e: &Expr, plan: &mut Plan) -> Result<CExpr> {
        crate::deep(|| self.compile_inner(e, plan))
    }

    fn compile_inner(&mut self, e: &Expr, plan: &mut Plan) -> Result<CExpr> {
        let c = match e {
            Expr::Literal(v) => return Ok(CExpr::Const(v.clone())),
            Expr::Array(items) => {
                let items = items
                    .iter()
                    .map(|i| self.compile(i, plan))
                    .collect::<Result<Vec<_>>>()?;
                CExpr::Array(items)
            }
            Expr::Object(members) => {
                let mut out = Vec::new();
                for (k, v) in members {
                    let key = match k {
                        ObjectKey::Static(s) => CKey::Static(s.clone()),
                        ObjectKey::Computed(e) => CKey::Computed(self.compile(e, plan)?),
                    };
                    out.push((key, self.compile(v, plan)?));
                }
                CExpr::Object(out)
            }
            Expr::Name(n) => match self.lookup_var(n) {
                Some(slot) => return Ok(CExpr::Var(slot)),
                None => return Err(self.name_error(n)),
            },
            Expr::Bind(n) => return Ok(CExpr::Const(self.bind_value(n)?)),
            Expr::BindCollection(n) => {
                let name = self.resolve_collection_name(&CollectionRef::Bind(n.clone()))?;
                return Err(Error::with_message(
                    ErrorCode::QueryCollectionUsedInExpression,
                    format!("AQL: collection '{name}' used as expression operand (while parsing)"),
                ));
            }
            Expr::Attribute(base, name) => {
                CExpr::Attribute(Box::new(self.compile(base, plan)?), name.clone())
            }
            Expr::Index(base, index) => CExpr::Index(
                Box::new(self.compile(base, plan)?),
                Box::new(self.compile(index, plan)?),
            ),
            Expr::Expansion {
                input,
                depth,
                filter,
                limit,
                project,
            } => {
                let input = Box::new(self.compile(input, plan)?);
                let filter_c = match filter {
                    Some(e) => Some(Box::new(self.compile(e, plan)?)),
                    None => None,
                };
                let project_c = match project {
                    Some(e) => Some(Box::new(self.compile(e, plan)?)),
                    None => None,
                };
                let limit_c = match limit {
                    Some((a, b)) => Some((
                        Box::new(self.compile(a, plan)?),
                        Box::new(self.compile(b, plan)?),
                    )),
                    None => None,
                };
                // Expansions depend on CURRENT, so never fold them as a whole unless the
                // input is constant (the evaluator handles that correctly below).
                CExpr::Expansion {
                    input,
                    depth: *depth,
                    filter: filter_c,
                    limit: limit_c,
                    project: project_c,
                }
            }
            Expr::Current => return Ok(CExpr::Current),
            Expr::Unary(op, operand) => CExpr::Unary(*op, Box::new(self.compile(operand, plan)?)),
            Expr::Binary(op, a, b) => CExpr::Binary(
                *op,
                Box::new(self.compile(a, plan)?),
                Box::new(self.compile(b, plan)?),
            ),
            Expr::ArrayCompare(q, op, a, b) => CExpr::ArrayCompare(
                *q,
                *op,
                Box::new(self.compile(a, plan)?),
                Box::new(self.compile(b, plan)?),
            ),
            Expr::ArrayAtLeast(n, op, a, b) => CExpr::ArrayAtLeast(
                Box::new(self.compile(n, plan)?),
                *op,
                Box::new(self.compile(a, plan)?),
                Box::new(self.compile(b, plan)?),
            ),
            Expr::Ternary(c, t, f) => CExpr::Ternary(
                Box::new(self.compile(c, plan)?),
                match t {
                    Some(t) => Some(Box::new(self.compile(t, plan)?)),
                    None => None,
                },
                Box::new(self.compile(f, plan)?),
            ),
            Expr::Range(a, b) => CExpr::Range(
                Box::new(self.compile(a, plan)?),
                Box::new(self.compile(b, plan)?),
            ),
            Expr::Call(name, args) => {
                if let Some(score) = self.scorer_call(name, args, plan)? {
                    return Ok(score);
                }
                if let Some(offsets) = self.offset_info_call(name, args, plan)? {
                    return Ok(offsets);
                }
                if name.contains("::") {
                    return Err(Error::with_message(
                        ErrorCode::QueryFunctionNotFound,
                        format!("AQL: user function '{name}()' not found (while parsing)"),
                    ));
                }
                let def = functions::lookup(name).ok_or_else(|| {
                    Error::with_message(
                        ErrorCode::QueryFunctionNameUnknown,
                        format!("AQL: usage of unknown function '{name}()' (while parsing)"),
                    )
                })?;
                def.check_arity(args.len()).map_err(|e| {
                    Error::with_message(e.code, format!("AQL: {} (while parsing)", e.message))
                })?;
                // `LENGTH(users)` and `COUNT(users)` count the collection's documents, as
                // ArangoDB rewrites them into `COLLECTION_COUNT("users")`.
                if let ("LENGTH" | "COUNT", [arg]) = (def.name, args.as_slice()) {
                    if let Some(coll) = self.collection_argument(arg) {
                        let name = self.resolve_collection_name(&coll)?;
                        let count = functions::lookup("COLLECTION_COUNT").ok_or_else(|| {
                            Error::with_message(ErrorCode::Internal, "COLLECTION_COUNT missing")
                        })?;
                        self.calls_uncacheable |= !count.cacheable;
                        return Ok(CExpr::Call(count, vec![CExpr::Const(Value::String(name))]));
                    }
                }
                let mut compiled = Vec::with_capacity(args.len());
                for (position, a) in args.iter().enumerate() {
                    // Some arguments take a collection by bare name (DOCUMENT(users, "a")).
                    match self.collection_argument(a) {
                        Some(coll) if def.takes_collection_at(position) => {
                            let name = self.resolve_collection_name(&coll)?;
                            compiled.push(CExpr::Const(Value::String(name)));
                        }
                        _ => compiled.push(self.compile(a, plan)?),
                    }
                }
                self.calls_uncacheable |= !def.cacheable;
                CExpr::Call(def, compiled)
            }
            Expr::Subquery(q) => {
                self.scopes.push_frame();
                self.loop_marks.push(None);
                let sub = self.plan_query(q);
                self.scopes.pop_frame();
                self.loop_marks.pop();
                let sub = sub?;
                let out = self.temp();
                self.node(
                    plan,
                    NodeKind::Subquery {
                        out,
                        plan: Arc::new(sub),
                    },
                );
                return Ok(CExpr::Var(out));
            }
        };
        self.fold_charged(c)
    }

    /// Folds `c` and charges what the folded value adds beyond the constants it was made of
    /// to the query's memory budget: constants computed at plan time count like values
    /// buffered at run time (error 32 beyond `memoryLimit`).
    fn fold_charged(&mut self, c: CExpr) -> Result<CExpr> {
        let limit = memory_limit(self.limits);
        let consumed = constant_operands_size(&c);
        // A value larger than the whole budget is not built here; left for run time, it
        // fails there under the same limit.
        let folded = fold_within(c, Some(limit));
        if let CExpr::Const(v) = &folded {
            let added = estimate_size(v).saturating_sub(consumed);
            self.folded_bytes = self.folded_bytes.saturating_add(added);
            if self.folded_bytes > limit {
                return Err(memory_error(limit));
            }
        }
        Ok(folded)
    }

    /// The collection a function argument names: a bare name that is no variable in scope,
    /// or a collection bind parameter. None for every other expression.
    fn collection_argument(&self, arg: &Expr) -> Option<CollectionRef> {
        match arg {
            Expr::Name(n) if self.lookup_var(n).is_none() => Some(CollectionRef::Name(n.clone())),
            Expr::BindCollection(n) => Some(CollectionRef::Bind(n.clone())),
            _ => None,
        }
    }

    fn name_error(&mut self, name: &str) -> Error {
        if self.txn.collection(name).is_ok() {
            return Error::with_message(
                ErrorCode::QueryCollectionUsedInExpression,
                format!("AQL: collection '{name}' used as expression operand (while parsing)"),
            );
        }
        Error::with_message(
            ErrorCode::DataSourceNotFound,
            format!("AQL: collection or view not found: {name} (while parsing)"),
        )
    }
}

/// Longest a single constant-folding evaluation may take before the expression is left for
/// run time instead.
const FOLD_BUDGET: std::time::Duration = std::time::Duration::from_millis(20);

/// Constant folding: evaluates an expression whose inputs are all constants and which has
/// no side effects. Expressions that warn or fail are left for run time so the warning or
/// error is reported there, as ArangoDB does.
pub fn fold(c: CExpr) -> CExpr {
    fold_within(c, None)
}

/// [`fold`], where a function may build no single value larger than `budget` bytes
/// (estimated; `FunctionContext::reserve`): beyond it the expression is left for run time,
/// where the query's memory limit fails it.
pub fn fold_within(c: CExpr, budget: Option<u64>) -> CExpr {
    let foldable = match &c {
        CExpr::Const(_) | CExpr::Var(_) | CExpr::Current => return c,
        CExpr::Array(items) => items.iter().all(is_const),
        CExpr::Object(members) => members.iter().all(|(k, v)| {
            is_const(v) && matches!(k, CKey::Static(_) | CKey::Computed(CExpr::Const(_)))
        }),
        CExpr::Attribute(e, _) | CExpr::Unary(_, e) => is_const(e),
        CExpr::Index(a, b) | CExpr::Binary(_, a, b) | CExpr::ArrayCompare(_, _, a, b) => {
            is_const(a) && is_const(b)
        }
        CExpr::ArrayAtLeast(n, _, a, b) => is_const(n) && is_const(a) && is_const(b),
        // Ranges stay lazy: `FOR i IN 1..1000000` must not materialize the array.
        CExpr::Range(..) => false,
        CExpr::Ternary(a, b, d) => is_const(a) && b.as_deref().is_none_or(is_const) && is_const(d),
        CExpr::Call(def, args) => def.deterministic && !def.reads_data && args.iter().all(is_const),
        // CURRENT inside refers to the elements, so only the input must be constant.
        CExpr::Expansion { input, .. } => {
            let mut uses_vars = false;
            c.visit_vars(&mut |_| uses_vars = true);
            is_const(input) && !uses_vars && c.is_deterministic()
        }
    };
    if !foldable {
        return c;
    }
    let mut state = EnvState::new(10, false);
    // Planning knows no `maxRuntime`: an expensive constant call (LEVENSHTEIN_DISTANCE of two
    // huge bind parameters) gives up folding after a short budget and runs at execution
    // time, under the query's limits.
    state.deadline = Some(std::time::Instant::now() + FOLD_BUDGET);
    state.memory_limit = budget;
    let mut env = EvalEnv {
        txn: None,
        database: "_system",
        state: &mut state,
    };
    match eval(&c, &[], None, &mut env) {
        Ok(v) if state.warnings.is_empty() => CExpr::Const(v),
        _ => c,
    }
}

/// The estimated size of the constants `c` is computed from (its direct operands): what
/// folding `c` consumes.
fn constant_operands_size(c: &CExpr) -> u64 {
    let size = |e: &CExpr| match e {
        CExpr::Const(v) => estimate_size(v),
        _ => 0,
    };
    match c {
        CExpr::Array(items) => items.iter().map(size).sum(),
        CExpr::Object(members) => members
            .iter()
            .map(|(k, v)| {
                size(v)
                    + match k {
                        CKey::Computed(e) => size(e),
                        _ => 0,
                    }
            })
            .sum(),
        CExpr::Attribute(e, _) | CExpr::Unary(_, e) => size(e),
        CExpr::Index(a, b) | CExpr::Binary(_, a, b) | CExpr::ArrayCompare(_, _, a, b) => {
            size(a) + size(b)
        }
        CExpr::ArrayAtLeast(n, _, a, b) => size(n) + size(a) + size(b),
        CExpr::Ternary(a, b, d) => size(a) + b.as_deref().map_or(0, size) + size(d),
        CExpr::Call(_, args) => args.iter().map(size).sum(),
        CExpr::Expansion { input, .. } => size(input),
        _ => 0,
    }
}

fn is_const(e: &CExpr) -> bool {
    matches!(e, CExpr::Const(_))
}
