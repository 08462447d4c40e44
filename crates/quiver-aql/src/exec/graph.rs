//! The operator of graph nodes: traversals, `SHORTEST_PATH` and the path enumerations run
//! the searches of `quiver-graph` over the query's transaction.
//!
//! The edge source reads the transaction's edge lookup (quiver-core's edge index at the
//! query's snapshot, plus a transaction's own writes) and hands out edge *handles*; edge and
//! vertex documents are fetched only when the query reads `e`, `p`, weights or the vertex
//! beyond its `_id` (see `plan::Produce`). The searches keep their state between rows
//! (`TraversalState` and friends) and get the source and step check, which borrow the
//! transaction, anew for every pull.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::Ordering as AtomicOrdering;
use std::sync::Arc;
use std::time::Instant;

use quiver_core::{EdgeHit, VertexSlot};
use quiver_errors::{Error, ErrorCode, Result};
use quiver_graph::{
    shortest_path, AllShortestPathsState, Direction as GDirection, EdgeHandle, EdgeQuery, EdgeRef,
    EdgeSource, KPathsState, KShortestPathsState, Limits as GraphLimits, Path, StepCheck, StepView,
    TraversalOptions, TraversalState, Verdict,
};
use serde_json::{Map, Value};

use super::{ExecCtx, Op, Operator, Row, DEFAULT_MEMORY_CAP};
use crate::ast::GraphKind;
use crate::expr::eval::{eval, EnvState, EvalEnv};
use crate::expr::{CExpr, Slot};
use crate::plan::{GraphNode, Produce};
use crate::source::{EdgeHits, Transaction};
use crate::value::{self, Warning};

/// Edges seen by one search, so that a handle (an index here) maps back to the edge's
/// collection and key. The same edge always gets the same handle (uniqueness checks
/// compare handles). One map per edge collection, so a lookup borrows the key and only a
/// newly seen edge allocates.
///
/// A traversal that never reads its edges and whose uniqueness rules never compare them
/// (`GraphNode::identifies_edges` false) gets an anonymous table: every edge reached gets a
/// fresh handle, and no key is hashed, copied or kept. In the 2-hop neighbour profile the
/// remembered keys were 14 % of the server's CPU.
///
/// An anonymous table also says, in the handle's [`ALIVE_END`] bit, that the edge leads to
/// a vertex known to exist at the query's snapshot: the edge hit carried the vertex's
/// existence mark and it is the existence epoch of the vertex's collection here
/// (docs/design/core.md, "Vertex existence marks"). `RETURN v._id` then needs no
/// primary-index probe for that vertex (in the 2-hop neighbour profile those probes were
/// about half of the server's CPU).
#[derive(Default)]
struct EdgeTable {
    edges: Vec<(u32, Arc<str>)>,
    index: Vec<HashMap<Arc<str>, u64>>,
    scratch: EdgeHits,
    anonymous: bool,
    /// Handles with [`ALIVE_END`] handed out by an anonymous table.
    issued: u64,
    /// Existence epochs of vertex collections at the query's snapshot, as asked so far.
    epochs: Vec<(Box<str>, Option<u64>)>,
    /// Per anonymous handle without [`ALIVE_END`] (its number is the position here): the edge
    /// collection (its index in the node) and where the other end lives in its edge index,
    /// so that marking the vertex after its probe needs no lookup by name.
    reached: Vec<(u32, VertexSlot)>,
}

/// Bit of an anonymous table's handle set when the edge's other end is known to exist.
const ALIVE_END: u64 = 1 << 63;
/// Vertex collections whose epochs an [`EdgeTable`] remembers (more are asked every time).
const EPOCHS_KEPT: usize = 16;

impl EdgeTable {
    fn new(anonymous: bool) -> EdgeTable {
        EdgeTable {
            anonymous,
            ..EdgeTable::default()
        }
    }

    /// The handle of an edge of a table that is not anonymous.
    fn handle(&mut self, collection: u32, key: &str) -> EdgeHandle {
        let ci = collection as usize;
        if self.index.len() <= ci {
            self.index.resize_with(ci + 1, HashMap::new);
        }
        let map = &mut self.index[ci];
        if let Some(&h) = map.get(key) {
            return EdgeHandle(h);
        }
        let h = self.edges.len() as u64;
        let key: Arc<str> = Arc::from(key);
        map.insert(Arc::clone(&key), h);
        self.edges.push((collection, key));
        EdgeHandle(h)
    }

    /// The handle of edge `hit` of edge collection `ci` in an anonymous table: [`ALIVE_END`]
    /// and a count when the other end is known to exist, else the position of the other
    /// end's place in `reached` (which a vertex known to exist never needs).
    fn anonymous_handle(
        &mut self,
        txn: &dyn Transaction,
        ci: u32,
        hit: &EdgeHit<'_>,
    ) -> EdgeHandle {
        if hit.other_mark != 0 && self.alive_under(txn, hit.other, hit.other_mark) {
            self.issued += 1;
            return EdgeHandle(ALIVE_END | (self.issued - 1));
        }
        self.reached.push((ci, hit.other_slot));
        EdgeHandle(self.reached.len() as u64 - 1)
    }

    /// Whether `mark`, the existence mark of vertex `id`, is the existence epoch of `id`'s
    /// collection at `txn`'s snapshot. Epochs are unique across collections and a vertex is
    /// only ever marked with its own collection's epoch ([`Fetch::id_exists`]), so a mark
    /// equal to an epoch this query already asked for is that vertex's collection's epoch:
    /// then neither the id is split nor the collection's name compared (in the 2-hop
    /// neighbour profile those were about 4 % of the server's CPU).
    fn alive_under(&mut self, txn: &dyn Transaction, id: &str, mark: u64) -> bool {
        if self.epochs.iter().any(|&(_, epoch)| epoch == Some(mark)) {
            return true;
        }
        self.epoch_of(txn, id) == Some(mark)
    }

    /// The existence epoch of the collection of vertex `id` at `txn`'s snapshot.
    fn epoch_of(&mut self, txn: &dyn Transaction, id: &str) -> Option<u64> {
        let (collection, _) = split_id(id)?;
        if let Some((_, epoch)) = self.epochs.iter().find(|(c, _)| &**c == collection) {
            return *epoch;
        }
        let epoch = txn.existence_epoch(collection);
        if self.epochs.len() < EPOCHS_KEPT {
            self.epochs.push((collection.into(), epoch));
        }
        epoch
    }

    fn clear(&mut self) {
        self.issued = 0;
        self.epochs.clear();
        self.reached.clear();
        self.edges.clear();
        self.index.iter_mut().for_each(HashMap::clear);
    }

    fn memory_bytes(&self) -> usize {
        let keys: usize = self.edges.iter().map(|(_, k)| k.len() + 16).sum();
        self.edges.capacity() * 24
            + self.reached.capacity() * 24
            + self.index.iter().map(|m| m.capacity() * 32).sum::<usize>()
            + keys
    }
}

/// The graph as the searches see it: the node's edge collections, each in its direction.
struct TxnEdges<'a> {
    txn: &'a dyn Transaction,
    node: &'a GraphNode,
    table: &'a RefCell<EdgeTable>,
    killed: &'a std::sync::atomic::AtomicBool,
    deadline: Option<Instant>,
    calls: Cell<u32>,
    lookups: Cell<u64>,
    memory_limit: usize,
}

impl TxnEdges<'_> {
    fn tick(&self) -> Result<()> {
        let n = self.calls.get().wrapping_add(1);
        self.calls.set(n);
        if n % 64 != 0 {
            return Ok(());
        }
        if self.killed.load(AtomicOrdering::Relaxed) {
            return Err(Error::with_message(ErrorCode::QueryKilled, "query killed"));
        }
        if self.deadline.is_some_and(|d| Instant::now() > d) {
            return Err(Error::with_message(ErrorCode::QueryKilled, "query killed"));
        }
        if self.table.borrow().memory_bytes() > self.memory_limit {
            return Err(Error::with_message(
                ErrorCode::ResourceLimit,
                "query would use more memory than allowed: graph search remembers too many edges",
            ));
        }
        Ok(())
    }

    fn weight(&self, collection: &str, key: &str) -> Result<f64> {
        let attr = self.node.weight_attribute.as_deref().unwrap_or("");
        self.lookups.set(self.lookups.get() + 1);
        let doc = self.txn.get(collection, key)?;
        Ok(doc
            .as_ref()
            .and_then(|d| d.get(attr))
            .and_then(Value::as_f64)
            .unwrap_or(self.node.default_weight))
    }

    fn each(
        &self,
        vertex: &str,
        query: &EdgeQuery,
        entries: &mut EdgeHits,
        sink: &mut dyn FnMut(EdgeRef<'_>) -> Result<()>,
    ) -> Result<()> {
        for (ci, (coll, dir)) in self.node.edge_collections.iter().enumerate() {
            let dir = if query.backward { dir.reversed() } else { *dir };
            entries.clear();
            match dir {
                GDirection::Outbound => self.txn.edges(coll, vertex, true, entries)?,
                GDirection::Inbound => self.txn.edges(coll, vertex, false, entries)?,
                GDirection::Any => {
                    self.txn.edges(coll, vertex, true, entries)?;
                    let outbound = entries.len();
                    self.txn.edges(coll, vertex, false, entries)?;
                    // A self-loop is both outbound and inbound; report it once.
                    entries.retain_from(outbound, |hit| hit.other != vertex);
                }
            }
            for entry in entries.iter() {
                let edge = {
                    let mut table = self.table.borrow_mut();
                    if table.anonymous {
                        table.anonymous_handle(self.txn, ci as u32, &entry)
                    } else {
                        table.handle(ci as u32, entry.key)
                    }
                };
                let weight = if query.need_weight {
                    self.weight(coll, entry.key)?
                } else {
                    1.0
                };
                sink(EdgeRef {
                    edge,
                    other: entry.other,
                    weight,
                })?;
            }
        }
        Ok(())
    }
}

impl EdgeSource for TxnEdges<'_> {
    fn for_each_edge(
        &self,
        vertex: &str,
        query: &EdgeQuery,
        sink: &mut dyn FnMut(EdgeRef<'_>) -> Result<()>,
    ) -> Result<()> {
        self.tick()?;
        let mut entries = std::mem::take(&mut self.table.borrow_mut().scratch);
        let result = self.each(vertex, query, &mut entries, sink);
        entries.clear();
        self.table.borrow_mut().scratch = entries;
        result
    }

    fn degree_hint(&self, vertex: &str, query: &EdgeQuery) -> Option<usize> {
        let mut total = 0;
        for (coll, dir) in &self.node.edge_collections {
            let dir = if query.backward { dir.reversed() } else { *dir };
            if matches!(dir, GDirection::Outbound | GDirection::Any) {
                total += self.txn.edge_degree_hint(coll, vertex, true)?;
            }
            if matches!(dir, GDirection::Inbound | GDirection::Any) {
                total += self.txn.edge_degree_hint(coll, vertex, false)?;
            }
        }
        Some(total)
    }
}

/// Reads vertices and edges as documents (or just ids) for the query's variables.
struct Fetch<'a> {
    txn: &'a dyn Transaction,
    node: &'a GraphNode,
    table: &'a RefCell<EdgeTable>,
    lookups: u64,
}

fn split_id(id: &str) -> Option<(&str, &str)> {
    id.split_once('/')
}

impl Fetch<'_> {
    /// One document lookup through `read`, counted; a collection that does not exist reads
    /// as a missing document (`T::default()`: `None`, `false`).
    fn lookup<T: Default>(
        &mut self,
        read: impl FnOnce(&dyn Transaction) -> Result<T>,
    ) -> Result<T> {
        self.lookups += 1;
        match read(self.txn) {
            Err(e) if e.code == ErrorCode::DataSourceNotFound => Ok(T::default()),
            found => found,
        }
    }

    fn get(&mut self, collection: &str, key: &str) -> Result<Option<Value>> {
        self.lookup(|txn| txn.get(collection, key))
    }

    /// Whether vertex `id`, for its `_id` alone, exists: known without a probe when the
    /// traversal reached it over an edge whose handle says so ([`ALIVE_END`]); otherwise
    /// probed, and a vertex found is marked in the edge indexes for later queries.
    fn id_exists(
        &mut self,
        id: &str,
        collection: &str,
        key: &str,
        reached_by: Option<EdgeHandle>,
    ) -> Result<bool> {
        let anonymous = self.table.borrow().anonymous;
        if anonymous && reached_by.is_some_and(|e| e.0 & ALIVE_END != 0) {
            return Ok(true);
        }
        let exists = self.lookup(|txn| txn.exists(collection, key))?;
        if !exists || !anonymous {
            return Ok(exists);
        }
        let (epoch, reached) = {
            let mut table = self.table.borrow_mut();
            let reached = reached_by.and_then(|e| table.reached.get(e.0 as usize).copied());
            (table.epoch_of(self.txn, id), reached)
        };
        let Some(epoch) = epoch else {
            return Ok(exists);
        };
        match reached {
            // The index the vertex was reached in, at the place the hit named.
            Some((ci, slot)) => {
                if let Some((edges, _)) = self.node.edge_collections.get(ci as usize) {
                    self.txn.mark_vertex_alive(edges, id, slot, epoch);
                }
            }
            None => {
                for (edges, _) in &self.node.edge_collections {
                    self.txn
                        .mark_vertex_alive(edges, id, VertexSlot::default(), epoch);
                }
            }
        }
        Ok(exists)
    }

    /// A vertex as `mode` asks; a vertex that does not exist is null with a warning, as in
    /// ArangoDB.
    fn vertex(&mut self, id: &str, mode: Produce, env: &mut EnvState) -> Result<Value> {
        self.reached_vertex(id, mode, env, None)
    }

    /// [`Fetch::vertex`] of a vertex the traversal reached over edge `reached_by`.
    fn reached_vertex(
        &mut self,
        id: &str,
        mode: Produce,
        env: &mut EnvState,
        reached_by: Option<EdgeHandle>,
    ) -> Result<Value> {
        let found = match (mode, split_id(id)) {
            (Produce::Skip, _) => return Ok(Value::Null),
            (_, None) => None,
            (Produce::Full, Some((c, k))) => self.get(c, k)?,
            (Produce::Raw, Some((c, k))) => {
                self.lookup(|txn| txn.get_json(c, k))?.map(Value::String)
            }
            (Produce::Id, Some((c, k))) => {
                let exists = self.id_exists(id, c, k, reached_by)?;
                exists.then(|| Value::String(id.to_string()))
            }
            (Produce::IdOnly, Some((c, k))) => {
                let exists = self.id_exists(id, c, k, reached_by)?;
                exists.then(|| {
                    let mut m = Map::with_capacity(2);
                    m.insert("_key".into(), Value::String(k.to_string()));
                    m.insert("_id".into(), Value::String(id.to_string()));
                    Value::Object(m)
                })
            }
        };
        match found {
            Some(v) => Ok(v),
            None => {
                env.warn(Warning::new(
                    ErrorCode::DocumentNotFound,
                    format!("vertex '{id}' not found"),
                ))?;
                Ok(Value::Null)
            }
        }
    }

    fn edge(&mut self, handle: EdgeHandle) -> Result<Value> {
        let (ci, key) = {
            let table = self.table.borrow();
            if table.anonymous {
                // `GraphNode::identifies_edges` promised that no edge is ever read.
                return Err(Error::with_message(
                    ErrorCode::Internal,
                    "an edge was read from a traversal planned not to read edges",
                ));
            }
            match table.edges.get(handle.0 as usize) {
                Some((ci, key)) => (*ci as usize, Arc::clone(key)),
                None => return Ok(Value::Null),
            }
        };
        let Some((coll, _)) = self.node.edge_collections.get(ci) else {
            return Ok(Value::Null);
        };
        Ok(self.get(coll, &key)?.unwrap_or(Value::Null))
    }

    /// `p`: `{edges, vertices[, weights]}` (traversals) or `{edges, vertices, weight}`
    /// (path enumerations).
    fn path(
        &mut self,
        path: &Path,
        weights: bool,
        weight: Option<f64>,
        env: &mut EnvState,
    ) -> Result<Value> {
        let mut edges = Vec::with_capacity(path.edges.len());
        for e in &path.edges {
            edges.push(self.edge(*e)?);
        }
        let mut vertices = Vec::with_capacity(path.vertices.len());
        for v in &path.vertices {
            vertices.push(self.vertex(v, Produce::Full, env)?);
        }
        let mut m = Map::new();
        m.insert("edges".into(), Value::Array(edges));
        m.insert("vertices".into(), Value::Array(vertices));
        if weights {
            m.insert(
                "weights".into(),
                Value::Array(path.weights.iter().map(|w| value::number(*w)).collect()),
            );
        }
        if let Some(w) = weight {
            m.insert("weight".into(), value::number(w));
        }
        Ok(Value::Object(m))
    }
}

/// PRUNE and pushed-down filter conditions, evaluated per step.
struct Checker<'a, 'b> {
    node: &'a GraphNode,
    fetch: &'a mut Fetch<'b>,
    row: &'a mut Row,
    reads: &'a HashSet<Slot>,
    txn: &'a dyn Transaction,
    database: &'a str,
    env: &'a mut EnvState,
    prune_value: &'a mut Value,
    filtered: u64,
}

impl Checker<'_, '_> {
    fn eval(&mut self, e: &CExpr) -> Result<Value> {
        let mut env = EvalEnv {
            txn: Some(self.txn),
            database: self.database,
            state: self.env,
        };
        eval(e, self.row, None, &mut env)
    }
}

impl StepCheck for Checker<'_, '_> {
    fn check(&mut self, step: &StepView<'_>) -> Result<Verdict> {
        let node = self.node;
        if let Some(s) = node.vertex_out.filter(|s| self.reads.contains(s)) {
            self.row[s] = self.fetch.vertex(step.vertex, Produce::Full, self.env)?;
        }
        if let Some(s) = node.edge_out.filter(|s| self.reads.contains(s)) {
            self.row[s] = match step.edge {
                Some(h) => self.fetch.edge(h)?,
                None => Value::Null,
            };
        }
        if let Some(s) = node.path_out.filter(|s| self.reads.contains(s)) {
            let weighted = node.weighted();
            self.row[s] = self.fetch.path(&step.to_path(), weighted, None, self.env)?;
        }
        let mut verdict = Verdict::TAKE;
        if let Some(prune) = &node.prune {
            let v = self.eval(prune)?;
            if value::to_bool(&v) {
                verdict = Verdict::PRUNE;
            }
            *self.prune_value = v;
        }
        for c in &node.conditions {
            let v = self.eval(&c.expr)?;
            if !value::to_bool(&v) {
                let failed = if step.depth >= c.fixed_from {
                    Verdict::FILTER_AND_PRUNE
                } else {
                    Verdict::FILTER
                };
                verdict = verdict.combine(failed);
            }
        }
        if !verdict.emit {
            self.filtered += 1;
        }
        Ok(verdict)
    }
}

enum Search {
    Idle,
    Traversal(Box<TraversalState>),
    Rows(VecDeque<(String, Option<EdgeHandle>)>),
    KShortest(Box<KShortestPathsState>),
    KPaths(Box<KPathsState>),
    All(Box<AllShortestPathsState>),
}

pub(super) struct GraphOp {
    pub(super) input: Op,
    pub(super) node: Arc<GraphNode>,
    pub(super) row: Option<Row>,
    search: Search,
    table: RefCell<EdgeTable>,
    check_reads: HashSet<Slot>,
}

impl GraphOp {
    pub(super) fn new(input: Op, node: &GraphNode) -> GraphOp {
        GraphOp {
            input,
            check_reads: node.check_reads(),
            node: Arc::new(node.clone()),
            row: None,
            search: Search::Idle,
            table: RefCell::new(EdgeTable::new(!node.identifies_edges())),
        }
    }

    fn limits(ctx: &ExecCtx) -> GraphLimits {
        let memory = if ctx.limits.memory_limit == 0 {
            DEFAULT_MEMORY_CAP
        } else {
            ctx.limits.memory_limit
        };
        GraphLimits {
            memory_bytes: usize::try_from(memory).unwrap_or(usize::MAX),
            ..GraphLimits::default()
        }
    }

    /// The `_id` of a start or target value: an id string or a document with `_id`.
    fn vertex_id(&self, v: &Value, ctx: &mut ExecCtx, what: &str) -> Result<Option<String>> {
        let id = match v {
            Value::String(s) if s.contains('/') => Some(s.clone()),
            Value::Object(m) => m
                .get("_id")
                .and_then(Value::as_str)
                .filter(|s| s.contains('/'))
                .map(str::to_string),
            _ => None,
        };
        if id.is_none() {
            ctx.warn(Warning::new(
                ErrorCode::BadParameter,
                format!(
                    "Invalid input for {what}: Only id strings or objects with _id are allowed"
                ),
            ))?;
        }
        Ok(id)
    }

    fn exists(ctx: &mut ExecCtx, id: &str) -> Result<bool> {
        let Some((c, k)) = split_id(id) else {
            return Ok(false);
        };
        ctx.stats.document_lookups += 1;
        match ctx.txn.exists(c, k) {
            Ok(b) => Ok(b),
            Err(e) if e.code == ErrorCode::DataSourceNotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Prepares the search for the current input row. `false`: nothing to search (invalid
    /// or missing start/target; warnings were recorded).
    fn start(&mut self, ctx: &mut ExecCtx, row: &Row) -> Result<bool> {
        let node = Arc::clone(&self.node);
        self.table.borrow_mut().clear();
        let what = match node.kind {
            GraphKind::Traversal => "traversal",
            GraphKind::ShortestPath => "Shortest Path",
            GraphKind::KShortestPaths => "K Shortest Paths",
            GraphKind::KPaths => "K Paths",
            GraphKind::AllShortestPaths => "All Shortest Paths",
        };
        let start = ctx.eval(&node.start, row)?;
        let Some(start) = self.vertex_id(&start, ctx, what)? else {
            return Ok(false);
        };
        let limits = Self::limits(ctx);
        if node.kind == GraphKind::Traversal {
            match &mut self.search {
                Search::Traversal(t) => t.restart(&start),
                _ => {
                    let options = TraversalOptions {
                        min_depth: node.min_depth,
                        max_depth: node.max_depth,
                        order: node.order,
                        unique_vertices: node.unique_vertices,
                        unique_edges: node.unique_edges,
                        vertex_collections: node.vertex_collections.clone(),
                        limits,
                    };
                    self.search =
                        Search::Traversal(Box::new(TraversalState::new(&start, options)?));
                }
            }
            return Ok(true);
        }
        let target = match &node.target {
            Some(t) => ctx.eval(t, row)?,
            None => Value::Null,
        };
        let Some(target) = self.vertex_id(&target, ctx, what)? else {
            return Ok(false);
        };
        // ArangoDB answers an empty result when either end does not exist.
        if !Self::exists(ctx, &start)? || !Self::exists(ctx, &target)? {
            return Ok(false);
        }
        let weighted = node.weighted();
        self.search = match node.kind {
            GraphKind::ShortestPath => {
                let (found, calls, lookups) = {
                    let source = self.source(ctx);
                    let found = shortest_path(&source, &start, &target, weighted, limits);
                    (found, source.calls.get(), source.lookups.get())
                };
                ctx.stats.scanned_index += calls as u64;
                ctx.stats.document_lookups += lookups;
                let path = found?;
                let mut rows = VecDeque::new();
                if let Some(path) = path {
                    for (i, v) in path.vertices.into_iter().enumerate() {
                        let edge = if i == 0 {
                            None
                        } else {
                            path.edges.get(i - 1).copied()
                        };
                        rows.push_back((v, edge));
                    }
                }
                Search::Rows(rows)
            }
            GraphKind::KShortestPaths => Search::KShortest(Box::new(KShortestPathsState::new(
                &start, &target, weighted, limits,
            ))),
            GraphKind::KPaths => Search::KPaths(Box::new(KPathsState::new(
                &start,
                &target,
                node.min_depth,
                node.max_depth,
                limits,
            )?)),
            GraphKind::AllShortestPaths => Search::All(Box::new(AllShortestPathsState::new(
                &start, &target, limits,
            ))),
            GraphKind::Traversal => Search::Idle,
        };
        Ok(true)
    }

    fn source<'a>(&'a self, ctx: &'a ExecCtx) -> TxnEdges<'a> {
        TxnEdges {
            txn: &*ctx.txn,
            node: &self.node,
            table: &self.table,
            killed: &ctx.limits.killed,
            deadline: ctx.limits.deadline,
            calls: Cell::new(0),
            lookups: Cell::new(0),
            memory_limit: Self::limits(ctx).memory_bytes,
        }
    }

    /// The next output row of the current search, or None when it is exhausted.
    fn advance(&mut self, ctx: &mut ExecCtx, input: &Row) -> Result<Option<Row>> {
        let node = Arc::clone(&self.node);
        let mut out = input.clone();
        let ExecCtx {
            txn,
            database,
            env,
            stats,
            limits,
            ..
        } = ctx;
        let txn: &dyn Transaction = &**txn;
        let memory_limit = if limits.memory_limit == 0 {
            DEFAULT_MEMORY_CAP
        } else {
            limits.memory_limit
        };
        let source = TxnEdges {
            txn,
            node: &node,
            table: &self.table,
            killed: &limits.killed,
            deadline: limits.deadline,
            calls: Cell::new(0),
            lookups: Cell::new(0),
            memory_limit: usize::try_from(memory_limit).unwrap_or(usize::MAX),
        };
        let mut fetch = Fetch {
            txn,
            node: &node,
            table: &self.table,
            lookups: 0,
        };
        let result = match &mut self.search {
            Search::Idle => Ok(None),
            Search::Traversal(t) => {
                let mut prune_value = Value::Null;
                let row = if node.prune.is_none() && node.conditions.is_empty() {
                    t.next_row(&source, &mut quiver_graph::AcceptAll)
                } else {
                    let mut scratch = input.clone();
                    let mut checker = Checker {
                        node: &node,
                        fetch: &mut fetch,
                        row: &mut scratch,
                        reads: &self.check_reads,
                        txn,
                        database,
                        env,
                        prune_value: &mut prune_value,
                        filtered: 0,
                    };
                    let r = t.next_row(&source, &mut checker);
                    stats.filtered += checker.filtered;
                    r
                };
                match row {
                    Err(e) => Err(e),
                    Ok(None) => Ok(None),
                    Ok(Some(r)) => (|| {
                        if let Some(s) = node.vertex_out {
                            out[s] = fetch.reached_vertex(
                                t.vertex_name(r.vertex),
                                node.vertex_mode,
                                env,
                                r.edge,
                            )?;
                        }
                        if let Some(s) = node.edge_out {
                            out[s] = match (node.edge_mode, r.edge) {
                                (Produce::Skip, _) | (_, None) => Value::Null,
                                (_, Some(h)) => fetch.edge(h)?,
                            };
                        }
                        if let Some(s) = node.path_out {
                            if node.path_mode != Produce::Skip {
                                if let Some(p) = t.current_path() {
                                    out[s] = fetch.path(&p, node.weighted(), None, env)?;
                                }
                            }
                        }
                        if let Some(s) = node.prune_out {
                            out[s] = prune_value;
                        }
                        Ok(Some(out))
                    })(),
                }
            }
            Search::Rows(rows) => match rows.pop_front() {
                None => Ok(None),
                Some((v, e)) => (|| {
                    if let Some(s) = node.vertex_out {
                        out[s] = fetch.vertex(&v, node.vertex_mode, env)?;
                    }
                    if let Some(s) = node.edge_out {
                        out[s] = match (node.edge_mode, e) {
                            (Produce::Skip, _) | (_, None) => Value::Null,
                            (_, Some(h)) => fetch.edge(h)?,
                        };
                    }
                    Ok(Some(out))
                })(),
            },
            Search::KShortest(k) => {
                let weighted = node.weighted();
                Self::path_row(k.next_path(&source), &node, &mut fetch, env, out, weighted)
            }
            Search::KPaths(k) => {
                Self::path_row(k.next_path(&source), &node, &mut fetch, env, out, false)
            }
            Search::All(k) => {
                Self::path_row(k.next_path(&source), &node, &mut fetch, env, out, false)
            }
        };
        stats.document_lookups += source.lookups.get() + fetch.lookups;
        stats.scanned_index += source.calls.get() as u64;
        result
    }

    fn path_row(
        found: Result<Option<Path>>,
        node: &GraphNode,
        fetch: &mut Fetch<'_>,
        env: &mut EnvState,
        mut out: Row,
        weighted: bool,
    ) -> Result<Option<Row>> {
        let Some(path) = found? else {
            return Ok(None);
        };
        if let Some(s) = node.path_out {
            if node.path_mode != Produce::Skip {
                let weight = if weighted {
                    path.weight()
                } else {
                    path.len() as f64
                };
                out[s] = fetch.path(&path, false, Some(weight), env)?;
            }
        }
        Ok(Some(out))
    }
}

impl Operator for GraphOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            ctx.check()?;
            let row = match self.row.take() {
                Some(r) => r,
                None => {
                    let Some(r) = self.input.next(ctx)? else {
                        return Ok(None);
                    };
                    if !self.start(ctx, &r)? {
                        continue;
                    }
                    r
                }
            };
            match self.advance(ctx, &row)? {
                Some(out) => {
                    self.row = Some(row);
                    return Ok(Some(out));
                }
                None => {
                    self.search = match std::mem::replace(&mut self.search, Search::Idle) {
                        // Keep the traversal's allocations for the next start vertex.
                        t @ Search::Traversal(_) => t,
                        _ => Search::Idle,
                    };
                }
            }
        }
    }
}
