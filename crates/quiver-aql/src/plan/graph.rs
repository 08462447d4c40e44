//! Planning of graph operations: traversals (`TraversalNode`), `SHORTEST_PATH`
//! (`ShortestPathNode`) and the path enumerations `K_SHORTEST_PATHS`, `K_PATHS`,
//! `ALL_SHORTEST_PATHS` (`EnumeratePathsNode`). The graph (named or a list of edge
//! collections with directions), the depth range and the options are resolved here, at
//! compile time, as ArangoDB does; the executor (`exec::graph`) runs the searches of
//! `quiver-graph` over the query's transaction.

use std::collections::HashSet;

use quiver_errors::{Error, ErrorCode, Result};
use quiver_graph::{Direction as GDirection, Order, UniqueEdges, UniqueVertices};
use serde_json::{json, Value};

use super::{NodeKind, Plan, Planner};
use crate::ast::{CollectionRef, Direction, Expr, GraphKind, GraphOp, GraphRef};
use crate::expr::{CExpr, Slot};

/// How much of a vertex or edge the rest of the query needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Produce {
    /// The whole document.
    Full,
    /// Only `_id` / `_key` are read: the document is not fetched (an existence check
    /// keeps missing vertices null, as with full documents).
    IdOnly,
    /// Only `_id` is read, by calculations whose reads of `v._id` were rewritten to `v`: the
    /// variable holds the id string itself (after the same existence check), so no
    /// `{_key, _id}` object is built per vertex.
    Id,
    /// Nothing reads it (rule `optimize-traversals`).
    Skip,
    /// The whole document as its stored JSON text, in a `Value::String`: the vertex
    /// variable is only returned by the query's final `RETURN`, so the text goes into the
    /// response unparsed (see `optimizer::graph::pass_stored_vertices` and
    /// `service::CursorBatch`).
    Raw,
}

/// A filter condition moved into a traversal (rule `optimize-traversals`). It is evaluated on
/// every step with `v`, `e` and `p` bound; once the step's depth reaches `fixed_from`, the
/// condition's value can no longer change on longer paths, so a failing step is also not
/// expanded.
#[derive(Clone, Debug)]
pub struct PathCondition {
    pub expr: CExpr,
    pub fixed_from: usize,
}

/// One graph operation, as planned.
#[derive(Clone, Debug)]
pub struct GraphNode {
    pub kind: GraphKind,
    /// `v` of traversals and `SHORTEST_PATH`.
    pub vertex_out: Option<Slot>,
    /// `e` of traversals and `SHORTEST_PATH`.
    pub edge_out: Option<Slot>,
    /// `p` of traversals, the path variable of the path enumerations.
    pub path_out: Option<Slot>,
    pub start: CExpr,
    pub target: Option<CExpr>,
    pub min_depth: usize,
    pub max_depth: usize,
    pub direction: Direction,
    /// Edge collections with the direction each is followed in.
    pub edge_collections: Vec<(String, GDirection)>,
    /// The `vertexCollections` restriction.
    pub vertex_collections: Vec<String>,
    /// The named graph, if any, and its vertex collections (for explain).
    pub graph: Option<String>,
    pub graph_vertex_collections: Vec<String>,
    pub order: Order,
    pub unique_vertices: UniqueVertices,
    pub unique_edges: UniqueEdges,
    pub weight_attribute: Option<String>,
    pub default_weight: f64,
    /// The options as written (explain).
    pub options_json: Value,
    pub prune: Option<CExpr>,
    pub prune_out: Option<Slot>,
    pub conditions: Vec<PathCondition>,
    pub vertex_mode: Produce,
    pub edge_mode: Produce,
    pub path_mode: Produce,
}

impl GraphNode {
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            GraphKind::Traversal => "TraversalNode",
            GraphKind::ShortestPath => "ShortestPathNode",
            _ => "EnumeratePathsNode",
        }
    }

    /// Whether the search adds up edge weights.
    pub fn weighted(&self) -> bool {
        match self.kind {
            GraphKind::Traversal => self.order == Order::Weighted,
            GraphKind::ShortestPath | GraphKind::KShortestPaths => self.weight_attribute.is_some(),
            _ => false,
        }
    }

    /// Slots read from outside (start, target, PRUNE and pushed conditions, except the
    /// node's own output variables).
    pub fn reads(&self) -> HashSet<Slot> {
        let mut set = self.start.vars();
        if let Some(t) = &self.target {
            set.extend(t.vars());
        }
        for e in self
            .prune
            .iter()
            .chain(self.conditions.iter().map(|c| &c.expr))
        {
            set.extend(e.vars());
        }
        for own in self.writes() {
            set.remove(&own);
        }
        set
    }

    /// Slots the node defines.
    pub fn writes(&self) -> Vec<Slot> {
        [
            self.vertex_out,
            self.edge_out,
            self.path_out,
            self.prune_out,
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// Whether the search must tell its edges apart: a traversal whose query never reads
    /// `e` or `p` (not in the output, PRUNE or a pushed-down condition) and whose uniqueness
    /// rules do not compare edges (only `uniqueVertices: "none"` with `uniqueEdges: "path"`
    /// does; unique vertices on a path already make its edges distinct) only needs edges to
    /// reach vertices, so the executor hands out anonymous handles without remembering the
    /// edge keys. Every other graph operation identifies its edges.
    pub fn identifies_edges(&self) -> bool {
        if self.kind != GraphKind::Traversal {
            return true;
        }
        let checked = self.check_reads();
        let read = |slot: Option<Slot>, mode: Produce| {
            slot.is_some_and(|s| mode != Produce::Skip || checked.contains(&s))
        };
        read(self.edge_out, self.edge_mode)
            || read(self.path_out, self.path_mode)
            || (self.unique_vertices == UniqueVertices::None
                && self.unique_edges == UniqueEdges::Path)
    }

    /// Slots the step check needs bound (PRUNE and pushed conditions).
    pub fn check_reads(&self) -> HashSet<Slot> {
        let mut set = HashSet::new();
        for e in self
            .prune
            .iter()
            .chain(self.conditions.iter().map(|c| &c.expr))
        {
            set.extend(e.vars());
        }
        set
    }
}

fn graph_direction(d: Direction) -> GDirection {
    match d {
        Direction::Outbound => GDirection::Outbound,
        Direction::Inbound => GDirection::Inbound,
        Direction::Any => GDirection::Any,
    }
}

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message.into())
}

/// A string or an array of strings (`vertexCollections`, `edgeCollections`).
fn string_list(v: &Value, what: &str) -> Result<Vec<String>> {
    match v {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(format!("{what} must be a string or an array of strings")))
            })
            .collect(),
        _ => Err(bad(format!(
            "{what} must be a string or an array of strings"
        ))),
    }
}

impl Planner<'_> {
    pub(super) fn plan_graph(&mut self, g: &GraphOp, plan: &mut Plan) -> Result<()> {
        let (min_depth, max_depth) = self.graph_depth(g, plan)?;
        let start = self.graph_vertex_expr(&g.start, plan)?;
        let target = match &g.target {
            Some(t) => Some(self.graph_vertex_expr(t, plan)?),
            None => None,
        };
        let options = match &g.options {
            Some(o) => self.constant(o, plan, "OPTIONS")?,
            None => Value::Null,
        };
        if !options.is_null() && !options.is_object() {
            return Err(Error::with_message(
                ErrorCode::QueryCompileTimeOptions,
                "AQL: OPTIONS must be an object (while parsing)",
            ));
        }
        let option = |name: &str| options.get(name).cloned().unwrap_or(Value::Null);

        // The graph: edge collections with their directions.
        let mut graph_name = None;
        let mut graph_vertex_collections = Vec::new();
        let mut edge_collections: Vec<(String, GDirection)> = Vec::new();
        match &g.graph {
            GraphRef::Named(e) => {
                let name = match self.constant(e, plan, "graph name")? {
                    Value::String(s) => s,
                    _ => {
                        return Err(Error::with_message(
                            ErrorCode::GraphInvalidParameter,
                            "invalid parameter type: the graph name must be a string",
                        ))
                    }
                };
                let (edges, vertices) = self.named_graph(&name)?;
                for e in edges {
                    edge_collections.push((e, graph_direction(g.direction)));
                }
                graph_vertex_collections = vertices;
                graph_name = Some(name);
            }
            GraphRef::Collections(list) => {
                for (dir, c) in list {
                    let name = self.resolve_collection_name(c)?;
                    let dir = graph_direction(dir.unwrap_or(g.direction));
                    if let Some(existing) = edge_collections.iter_mut().find(|e| e.0 == name) {
                        // The same collection twice with different directions is ANY.
                        if existing.1 != dir {
                            existing.1 = GDirection::Any;
                        }
                        continue;
                    }
                    edge_collections.push((name, dir));
                }
            }
        }
        for (name, _) in &edge_collections {
            if !self.txn.collection(name)?.is_edge {
                return Err(Error::with_message(
                    ErrorCode::CollectionTypeInvalid,
                    format!("AQL: collection type invalid: '{name}' is not an edge collection (while parsing)"),
                ));
            }
            if self.modified.contains(name) {
                return Err(Error::with_message(
                    ErrorCode::QueryAccessAfterModification,
                    format!("AQL: access after data-modification by collection '{name}' (while parsing)"),
                ));
            }
            self.collections.entry(name.clone()).or_insert("read");
        }
        let only_edges = string_list(&option("edgeCollections"), "edgeCollections")?;
        if !only_edges.is_empty() {
            edge_collections.retain(|(n, _)| only_edges.contains(n));
        }
        let vertex_collections = string_list(&option("vertexCollections"), "vertexCollections")?;
        for name in &vertex_collections {
            self.resolve_collection_name(&CollectionRef::Name(name.clone()))?;
        }

        // Traversal order and uniqueness.
        let mut order = Order::Dfs;
        if option("bfs") == Value::Bool(true) {
            order = Order::Bfs;
        }
        match option("order") {
            Value::Null => {}
            Value::String(s) => {
                order = Order::parse(&s).ok_or_else(|| {
                    bad(format!(
                        "invalid traversal order '{s}': expecting 'bfs', 'dfs' or 'weighted'"
                    ))
                })?
            }
            _ => return Err(bad("the traversal option 'order' must be a string")),
        }
        let unique_vertices = match option("uniqueVertices") {
            Value::Null => UniqueVertices::None,
            Value::String(s) => UniqueVertices::parse(&s).ok_or_else(|| {
                bad(format!(
                    "invalid uniqueVertices value '{s}': expecting 'none', 'path' or 'global'"
                ))
            })?,
            _ => {
                return Err(bad(
                    "the traversal option 'uniqueVertices' must be a string",
                ))
            }
        };
        let unique_edges = match option("uniqueEdges") {
            Value::Null => UniqueEdges::Path,
            Value::String(s) => UniqueEdges::parse(&s).ok_or_else(|| {
                bad(format!(
                    "invalid uniqueEdges value '{s}': expecting 'none' or 'path'"
                ))
            })?,
            _ => return Err(bad("the traversal option 'uniqueEdges' must be a string")),
        };
        if g.kind == GraphKind::Traversal
            && unique_vertices == UniqueVertices::Global
            && order == Order::Dfs
        {
            return Err(bad(
                "uniqueVertices: 'global' is only supported with order: 'bfs' or 'weighted' \
                 (or bfs: true) due to otherwise unpredictable results",
            ));
        }
        let weight_attribute = match option("weightAttribute") {
            Value::Null => None,
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(s),
            _ => return Err(bad("the option 'weightAttribute' must be a string")),
        };
        let default_weight = match option("defaultWeight") {
            Value::Null => 1.0,
            Value::Number(n) => n.as_f64().unwrap_or(1.0),
            _ => return Err(bad("the option 'defaultWeight' must be a number")),
        };
        if default_weight < 0.0 {
            return Err(Error::with_message(
                ErrorCode::GraphNegativeEdgeWeight,
                "negative edge weight found: defaultWeight must not be negative",
            ));
        }

        // Output variables: traversal v, e, p; SHORTEST_PATH v, e; enumerations p.
        self.mark_loop();
        let mut slots = Vec::new();
        for v in &g.vars {
            slots.push(self.declare(v)?);
        }
        let (vertex_out, edge_out, path_out) = match g.kind {
            GraphKind::Traversal | GraphKind::ShortestPath => (
                slots.first().copied(),
                slots.get(1).copied(),
                slots.get(2).copied(),
            ),
            _ => (None, None, slots.first().copied()),
        };
        let (prune, prune_out) = match &g.prune {
            Some((var, e)) => {
                let mut scratch = Plan::default();
                let c = self.compile(e, &mut scratch)?;
                if !scratch.nodes.is_empty() {
                    return Err(Error::with_message(
                        ErrorCode::QueryParse,
                        "AQL: PRUNE conditions must not contain subqueries (while parsing)",
                    ));
                }
                let out = match var {
                    Some(v) => Some(self.declare(v)?),
                    None => None,
                };
                (Some(c), out)
            }
            None => (None, None),
        };
        let node = GraphNode {
            kind: g.kind,
            vertex_out,
            edge_out,
            path_out,
            start,
            target,
            min_depth,
            max_depth,
            direction: g.direction,
            edge_collections,
            vertex_collections,
            graph: graph_name,
            graph_vertex_collections,
            order,
            unique_vertices,
            unique_edges,
            weight_attribute,
            default_weight,
            options_json: options,
            prune,
            prune_out,
            conditions: Vec::new(),
            vertex_mode: Produce::Full,
            edge_mode: Produce::Full,
            path_mode: Produce::Full,
        };
        self.node(plan, NodeKind::Graph(Box::new(node)));
        Ok(())
    }

    /// `IN min..max`, `IN n` (= n..n) or nothing (= 1..1); `K_PATHS` defaults to 1..1 too
    /// in ArangoDB, the other path searches have no depth.
    fn graph_depth(&mut self, g: &GraphOp, plan: &mut Plan) -> Result<(usize, usize)> {
        let Some(depth) = &g.depth else {
            return Ok((1, 1));
        };
        let invalid = || {
            Error::with_message(
                ErrorCode::QueryParse,
                "AQL: invalid traversal depth (while parsing)",
            )
        };
        let number = |v: &Value| -> Result<usize> {
            match v.as_f64() {
                Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= u32::MAX as f64 => Ok(f as usize),
                _ => Err(invalid()),
            }
        };
        match depth {
            Expr::Range(a, b) => {
                let a = self.constant(a, plan, "traversal depth")?;
                let b = self.constant(b, plan, "traversal depth")?;
                Ok((number(&a)?, number(&b)?))
            }
            e => {
                let v = self.constant(e, plan, "traversal depth")?;
                let n = number(&v)?;
                Ok((n, n))
            }
        }
    }

    /// A start or target vertex: a constant stays in the node (explain shows `vertexId`),
    /// anything else is computed into a variable before the node.
    fn graph_vertex_expr(&mut self, e: &Expr, plan: &mut Plan) -> Result<CExpr> {
        match self.compile(e, plan)? {
            c @ (CExpr::Const(_) | CExpr::Var(_)) => Ok(c),
            other => {
                let out = self.temp();
                self.node(plan, NodeKind::Calculation { out, expr: other });
                Ok(CExpr::Var(out))
            }
        }
    }

    /// Reads a named graph's definition from `_graphs` (the format `/_api/gharial`
    /// stores): its edge collections, and its vertex collections (from, to and orphans).
    fn named_graph(&mut self, name: &str) -> Result<(Vec<String>, Vec<String>)> {
        let not_found = || {
            Error::with_message(
                ErrorCode::GraphNotFound,
                format!("graph '{name}' not found"),
            )
        };
        let doc = match self.txn.get("_graphs", name) {
            Ok(Some(doc)) => doc,
            Ok(None) => return Err(not_found()),
            Err(e) if e.code == ErrorCode::DataSourceNotFound => return Err(not_found()),
            Err(e) => return Err(e),
        };
        let corrupt = || {
            Error::with_message(
                ErrorCode::GraphInternalDataCorrupt,
                format!("internal graph data corrupt: graph '{name}'"),
            )
        };
        let mut edges = Vec::new();
        let mut vertices: Vec<String> = Vec::new();
        let mut add_vertex = |v: &str| {
            if !vertices.iter().any(|x| x == v) {
                vertices.push(v.to_string());
            }
        };
        let definitions = match doc.get("edgeDefinitions") {
            None | Some(Value::Null) => &[][..],
            Some(Value::Array(a)) => &a[..],
            Some(_) => return Err(corrupt()),
        };
        for def in definitions {
            let coll = def
                .get("collection")
                .and_then(Value::as_str)
                .ok_or_else(corrupt)?;
            if !edges.iter().any(|e: &String| e == coll) {
                edges.push(coll.to_string());
            }
            for side in ["from", "to"] {
                for v in string_list(def.get(side).unwrap_or(&Value::Null), side)
                    .map_err(|_| corrupt())?
                {
                    add_vertex(&v);
                }
            }
        }
        for v in string_list(
            doc.get("orphanCollections").unwrap_or(&Value::Null),
            "orphanCollections",
        )
        .map_err(|_| corrupt())?
        {
            add_vertex(&v);
        }
        for e in &edges {
            self.txn.collection(e).map_err(|err| {
                if err.code == ErrorCode::DataSourceNotFound {
                    Error::with_message(
                        ErrorCode::DataSourceNotFound,
                        format!("AQL: collection or view not found: {e} (while parsing)"),
                    )
                } else {
                    err
                }
            })?;
        }
        Ok((edges, vertices))
    }
}

/// The `options` object of a graph node in explain output, with ArangoDB's defaults filled
/// in.
pub fn options_json(n: &GraphNode) -> Value {
    let order = match n.order {
        Order::Dfs => "dfs",
        Order::Bfs => "bfs",
        Order::Weighted => "weighted",
    };
    let uv = match n.unique_vertices {
        UniqueVertices::None => "none",
        UniqueVertices::Path => "path",
        UniqueVertices::Global => "global",
    };
    let ue = match n.unique_edges {
        UniqueEdges::None => "none",
        UniqueEdges::Path => "path",
    };
    let mut o = json!({
        "minDepth": n.min_depth,
        "maxDepth": n.max_depth,
        "order": order,
        "bfs": n.order == Order::Bfs,
        "uniqueVertices": uv,
        "uniqueEdges": ue,
        "weightAttribute": n.weight_attribute.clone().unwrap_or_default(),
        "defaultWeight": n.default_weight,
        "vertexCollections": n.vertex_collections,
        "produceVertices": n.vertex_mode != Produce::Skip,
        "parallelism": 1,
    });
    if let (Some(obj), Some(user)) = (o.as_object_mut(), n.options_json.as_object()) {
        for key in ["maxProjections", "edgeCollections", "parallelism"] {
            if let Some(v) = user.get(key) {
                obj.insert(key.to_string(), v.clone());
            }
        }
    }
    o
}
