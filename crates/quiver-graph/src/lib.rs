//! quiver-graph: the graph algorithms behind AQL traversals and path searches.
//!
//! The crate sees the graph only through [`EdgeSource`]: "give me the edges of this vertex that
//! the query may follow". The AQL executor implements it over the core's edge index (applying
//! per-edge-collection directions, edge-collection restrictions and pushed-down edge filters);
//! [`MemoryGraph`] implements it in memory for tests and benchmarks. Edges are identified by
//! an opaque [`EdgeHandle`] chosen by the source, so edge documents are only fetched when a
//! query actually looks at them.
//!
//! Algorithms (semantics follow ArangoDB 3.12's AQL, see `docs/design/graph.md`):
//! - [`Traversal`]: `FOR v, e, p IN min..max …` with dfs / bfs / weighted order, vertex and
//!   edge uniqueness, and a [`StepCheck`] callback for PRUNE and pushed-down filters.
//! - [`shortest_path()`]: `SHORTEST_PATH` (bidirectional BFS, or bidirectional Dijkstra when
//!   weighted); a pair without connection is detected as soon as one side is exhausted.
//! - `ALL_SHORTEST_PATHS` with [`AllShortestPaths`] (lazy) or [`all_shortest_paths()`].
//! - [`KShortestPaths`]: `K_SHORTEST_PATHS` (Yen's algorithm, lazily, in order of weight).
//! - [`KPaths`]: `K_PATHS` (all simple paths with a length in `min..max`, by length).
//!
//! Every search is bounded by [`Limits`] and fails with `ResourceLimit` (32) instead of
//! running away.

mod intern;
mod memory;
mod paths;
mod shortest;
mod traversal;

pub use intern::{Interner, VertexId};
pub use memory::{MemoryGraph, MemoryGraphSource};
pub use paths::{KPaths, KPathsState, KShortestPaths, KShortestPathsState};
pub use shortest::{all_shortest_paths, shortest_path, AllShortestPaths, AllShortestPathsState};
pub use traversal::{
    AcceptAll, Order, StepCheck, StepView, Traversal, TraversalOptions, TraversalRow,
    TraversalState, UniqueEdges, UniqueVertices, Verdict,
};

use quiver_errors::{Error, ErrorCode, Result};

/// The direction edges are followed in, as written in AQL (`OUTBOUND`, `INBOUND`, `ANY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Follow `_from` → `_to`.
    Outbound,
    /// Follow `_to` → `_from`.
    Inbound,
    /// Both.
    Any,
}

impl Direction {
    /// The direction that walks the same edges backwards (used by the target side of a
    /// bidirectional search).
    pub fn reversed(self) -> Direction {
        match self {
            Direction::Outbound => Direction::Inbound,
            Direction::Inbound => Direction::Outbound,
            Direction::Any => Direction::Any,
        }
    }

    /// Parses AQL's keyword (case-insensitive).
    pub fn parse(text: &str) -> Option<Direction> {
        if text.eq_ignore_ascii_case("outbound") {
            Some(Direction::Outbound)
        } else if text.eq_ignore_ascii_case("inbound") {
            Some(Direction::Inbound)
        } else if text.eq_ignore_ascii_case("any") {
            Some(Direction::Any)
        } else {
            None
        }
    }
}

/// An edge as the [`EdgeSource`] identifies it. Opaque to this crate: it is compared for
/// uniqueness (two different edges must have different handles) and handed back in results,
/// so the executor can fetch the edge document (or just its `_id`) lazily.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EdgeHandle(pub u64);

/// What a search asks of [`EdgeSource::for_each_edge`].
#[derive(Clone, Copy, Debug)]
pub struct EdgeQuery {
    /// `false`: follow the query's directions from the start side. `true`: walk them
    /// backwards (the target side of a bidirectional search): a collection traversed
    /// OUTBOUND is then read INBOUND and vice versa; ANY stays ANY.
    pub backward: bool,
    /// The depth of the vertex being expanded (0 for the start vertex); the edges returned
    /// lead to depth `depth + 1`. Lets the executor apply per-depth edge filters
    /// (`p.edges[1].x == …`).
    pub depth: usize,
    /// Whether [`EdgeRef::weight`] is used. When false the source may report any weight
    /// (1.0 is customary) and need not read edge documents.
    pub need_weight: bool,
}

/// One edge handed from the [`EdgeSource`] to a search.
#[derive(Clone, Copy, Debug)]
pub struct EdgeRef<'a> {
    /// The edge.
    pub edge: EdgeHandle,
    /// The vertex at the other end (its `_id`).
    pub other: &'a str,
    /// The edge weight (`weightAttribute` if present and numeric, else `defaultWeight`);
    /// only read when [`EdgeQuery::need_weight`] is set. Negative weights make weighted
    /// searches fail with `GraphNegativeEdgeWeight`.
    pub weight: f64,
}

/// The graph as seen by the algorithms.
///
/// Contract:
/// - `for_each_edge` calls `sink` once per edge incident to `vertex` that may be followed
///   (directions, edge collection restrictions and pushed-down edge conditions applied by
///   the implementor), in a stable order: the order determines dfs/bfs output order, as the
///   edge index order does in ArangoDB.
/// - An unknown vertex simply has no edges.
/// - If `sink` returns an error the implementor stops and returns that error. An implementor
///   may also fail on its own (for example `QueryKilled` when the query was killed), which
///   aborts the search.
/// - With `Direction::Any`, a self-loop should be reported once.
pub trait EdgeSource {
    /// Reports the edges of `vertex`.
    fn for_each_edge(
        &self,
        vertex: &str,
        query: &EdgeQuery,
        sink: &mut dyn FnMut(EdgeRef<'_>) -> Result<()>,
    ) -> Result<()>;

    /// How many edges [`Self::for_each_edge`] would report, if that is known without reading
    /// them (an in-memory edge index knows its list lengths). Only used to decide which end
    /// of a bidirectional search to expand first: a target nobody points to (the benchmark's
    /// "hard path") is then recognised without expanding the start vertex at all.
    fn degree_hint(&self, vertex: &str, query: &EdgeQuery) -> Option<usize> {
        let _ = (vertex, query);
        None
    }
}

impl<T: EdgeSource + ?Sized> EdgeSource for &T {
    fn for_each_edge(
        &self,
        vertex: &str,
        query: &EdgeQuery,
        sink: &mut dyn FnMut(EdgeRef<'_>) -> Result<()>,
    ) -> Result<()> {
        (**self).for_each_edge(vertex, query, sink)
    }

    fn degree_hint(&self, vertex: &str, query: &EdgeQuery) -> Option<usize> {
        (**self).degree_hint(vertex, query)
    }
}

impl<T: EdgeSource + ?Sized> EdgeSource for Box<T> {
    fn for_each_edge(
        &self,
        vertex: &str,
        query: &EdgeQuery,
        sink: &mut dyn FnMut(EdgeRef<'_>) -> Result<()>,
    ) -> Result<()> {
        (**self).for_each_edge(vertex, query, sink)
    }

    fn degree_hint(&self, vertex: &str, query: &EdgeQuery) -> Option<usize> {
        (**self).degree_hint(vertex, query)
    }
}

/// Bounds every search so that a query cannot run away.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Largest depth (path length) a traversal or `K_PATHS` may ask for. The default admits
    /// any depth a query can sensibly write (`0..1000000000` is a common "unbounded"
    /// idiom); deep searches are bounded by the edge and memory budgets instead.
    pub max_depth: usize,
    /// Most edges a single search may inspect (every edge reported by the source counts).
    pub max_edges_visited: u64,
    /// Approximate bytes of search state (queues, visited sets, stored paths) allowed.
    pub memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_depth: u32::MAX as usize - 1,
            max_edges_visited: 2_000_000_000,
            memory_bytes: 2 << 30,
        }
    }
}

/// Counts the work of one search against its [`Limits`].
#[derive(Clone, Debug)]
pub(crate) struct Budget {
    limits: Limits,
    edges: u64,
}

impl Budget {
    pub(crate) fn new(limits: Limits) -> Budget {
        Budget { limits, edges: 0 }
    }

    #[inline]
    pub(crate) fn edge(&mut self) -> Result<()> {
        self.edges += 1;
        if self.edges > self.limits.max_edges_visited {
            return Err(Error::with_message(
                ErrorCode::ResourceLimit,
                format!(
                    "graph search inspected more than {} edges (limit)",
                    self.limits.max_edges_visited
                ),
            ));
        }
        Ok(())
    }

    #[inline]
    pub(crate) fn memory(&self, bytes: usize) -> Result<()> {
        if bytes > self.limits.memory_bytes {
            return Err(Error::with_message(
                ErrorCode::ResourceLimit,
                format!(
                    "query would use more memory than allowed: graph search needs more than {} bytes",
                    self.limits.memory_bytes
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn depth(&self, depth: usize) -> Result<()> {
        if depth > self.limits.max_depth {
            return Err(Error::with_message(
                ErrorCode::ResourceLimit,
                format!(
                    "graph search depth {depth} exceeds the maximum of {}",
                    self.limits.max_depth
                ),
            ));
        }
        Ok(())
    }

    /// Edges inspected so far.
    pub(crate) fn edges_visited(&self) -> u64 {
        self.edges
    }
}

/// Checks an edge weight for weighted searches.
#[inline]
pub(crate) fn checked_weight(weight: f64) -> Result<f64> {
    if weight.is_nan() || weight < 0.0 {
        return Err(Error::with_message(
            ErrorCode::GraphNegativeEdgeWeight,
            format!("negative edge weight found: {weight}"),
        ));
    }
    Ok(weight)
}

/// A path as a search returns it: `vertices[0]` is the start, `edges[i]` connects
/// `vertices[i]` and `vertices[i+1]`, `weights[i]` is the cost of the path up to
/// `vertices[i]` (0 for the start; the number of edges when the search is unweighted).
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    /// Vertex `_id`s from start to end.
    pub vertices: Vec<String>,
    /// Edges, one fewer than vertices.
    pub edges: Vec<EdgeHandle>,
    /// Cumulative cost at each vertex.
    pub weights: Vec<f64>,
}

impl Path {
    /// Number of edges.
    pub fn len(&self) -> usize {
        self.edges.len()
    }

    /// Whether the path has no edges (start = end).
    pub fn is_empty(&self) -> bool {
        self.edges.is_empty()
    }

    /// Total cost (`weight` of `K_SHORTEST_PATHS`).
    pub fn weight(&self) -> f64 {
        self.weights.last().copied().unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_parsing_and_reversal() {
        assert_eq!(Direction::parse("OUTBOUND"), Some(Direction::Outbound));
        assert_eq!(Direction::parse("inbound"), Some(Direction::Inbound));
        assert_eq!(Direction::parse("Any"), Some(Direction::Any));
        assert_eq!(Direction::parse("sideways"), None);
        assert_eq!(Direction::Outbound.reversed(), Direction::Inbound);
        assert_eq!(Direction::Inbound.reversed(), Direction::Outbound);
        assert_eq!(Direction::Any.reversed(), Direction::Any);
    }

    #[test]
    fn budget_reports_resource_limit() {
        let mut budget = Budget::new(Limits {
            max_edges_visited: 2,
            memory_bytes: 100,
            max_depth: 3,
        });
        assert!(budget.edge().is_ok());
        assert!(budget.edge().is_ok());
        assert_eq!(budget.edge().unwrap_err().code, ErrorCode::ResourceLimit);
        assert!(budget.memory(100).is_ok());
        assert_eq!(
            budget.memory(101).unwrap_err().code,
            ErrorCode::ResourceLimit
        );
        assert!(budget.depth(3).is_ok());
        assert_eq!(budget.depth(4).unwrap_err().code, ErrorCode::ResourceLimit);
        assert_eq!(budget.edges_visited(), 3);
    }

    #[test]
    fn negative_and_nan_weights_are_rejected() {
        assert_eq!(checked_weight(0.0).unwrap(), 0.0);
        assert_eq!(checked_weight(2.5).unwrap(), 2.5);
        assert_eq!(
            checked_weight(-1.0).unwrap_err().code,
            ErrorCode::GraphNegativeEdgeWeight
        );
        assert!(checked_weight(f64::NAN).is_err());
    }
}
