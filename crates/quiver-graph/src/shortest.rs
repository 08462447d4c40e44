//! `SHORTEST_PATH` and `ALL_SHORTEST_PATHS`: bidirectional searches from both ends.
//!
//! Searching from both ends touches roughly the square root of the vertices a one-sided
//! search touches, and it notices a missing connection as soon as either side runs out of
//! vertices: a target without incoming edges is answered after one edge index lookup (the
//! benchmark's "hard path").

use std::collections::BinaryHeap;

use hashbrown::{HashMap, HashSet};

use quiver_errors::Result;

use crate::intern::{Interner, VertexId};
use crate::{checked_weight, Budget, EdgeHandle, EdgeQuery, EdgeSource, Limits, Path};

const UNSEEN: u32 = u32::MAX;

/// A path under construction: vertices and `(edge, weight)` steps.
pub(crate) type Route = (Vec<VertexId>, Vec<(EdgeHandle, f64)>);

/// Reads the edges of `vertex` into `out` as `(other vertex, edge, weight)`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn expand<S: EdgeSource + ?Sized>(
    source: &S,
    interner: &mut Interner,
    budget: &mut Budget,
    name_buf: &mut String,
    vertex: VertexId,
    backward: bool,
    depth: usize,
    weighted: bool,
    out: &mut Vec<(VertexId, EdgeHandle, f64)>,
) -> Result<()> {
    out.clear();
    name_buf.clear();
    name_buf.push_str(interner.name(vertex));
    let query = EdgeQuery {
        backward,
        depth,
        need_weight: weighted,
    };
    source.for_each_edge(name_buf, &query, &mut |edge| {
        budget.edge()?;
        let weight = if weighted {
            checked_weight(edge.weight)?
        } else {
            1.0
        };
        out.push((interner.intern(edge.other), edge.edge, weight));
        Ok(())
    })
}

/// Builds a [`Path`] from vertex ids and `(edge, weight)` steps.
pub(crate) fn build_path(
    interner: &Interner,
    vertices: &[VertexId],
    edges: &[(EdgeHandle, f64)],
) -> Path {
    let mut weights = Vec::with_capacity(vertices.len());
    let mut total = 0.0;
    weights.push(0.0);
    for (_, w) in edges {
        total += w;
        weights.push(total);
    }
    Path {
        vertices: vertices
            .iter()
            .map(|v| interner.name(*v).to_string())
            .collect(),
        edges: edges.iter().map(|(e, _)| *e).collect(),
        weights,
    }
}

/// Finds one shortest path from `start` to `target` (`SHORTEST_PATH`). Unweighted searches
/// count edges (bidirectional breadth-first search); weighted ones add
/// [`crate::EdgeRef::weight`] (bidirectional Dijkstra). `Ok(None)` when there is no
/// connection. The caller checks that both vertices exist (ArangoDB answers an empty result
/// otherwise).
pub fn shortest_path<S: EdgeSource + ?Sized>(
    source: &S,
    start: &str,
    target: &str,
    weighted: bool,
    limits: Limits,
) -> Result<Option<Path>> {
    let mut interner = Interner::new();
    let s = interner.intern(start);
    let t = interner.intern(target);
    let mut budget = Budget::new(limits);
    if weighted {
        let found = dijkstra(
            source,
            &mut interner,
            &mut budget,
            &mut DijkstraWorkspace::new(),
            s,
            t,
            true,
            &Restrictions::default(),
        )?;
        Ok(found.map(|(v, e)| build_path(&interner, &v, &e)))
    } else {
        let route = bfs(
            source,
            &mut interner,
            &mut budget,
            &mut BfsWorkspace::new(),
            s,
            t,
            &Restrictions::default(),
        )?;
        Ok(route.map(|(v, e)| build_path(&interner, &v, &e)))
    }
}

/// Finds every shortest path (by number of edges) from `start` to `target`
/// (`ALL_SHORTEST_PATHS`), collected; see [`AllShortestPaths`] for the lazy form.
pub fn all_shortest_paths<S: EdgeSource + ?Sized>(
    source: &S,
    start: &str,
    target: &str,
    limits: Limits,
) -> Result<Vec<Path>> {
    let mut search = AllShortestPaths::new(source, start, target, limits);
    let mut out = Vec::new();
    let mut bytes = 0usize;
    while let Some(path) = search.next_path()? {
        bytes += path.vertices.iter().map(|v| v.len() + 40).sum::<usize>();
        search.state.budget.memory(bytes)?;
        out.push(path);
    }
    Ok(out)
}

/// `ALL_SHORTEST_PATHS`, lazily: a bidirectional breadth-first search up to the level where
/// both sides meet, then, per meeting vertex, every start→meeting chain combined with every
/// meeting→target chain. Each shortest path crosses the meeting level exactly once, so no
/// path repeats. The number of shortest paths can be exponential: pulling stops the work,
/// and the chains held per meeting vertex count against the memory budget.
pub struct AllShortestPaths<S: EdgeSource> {
    source: S,
    state: AllShortestPathsState,
}

impl<S: EdgeSource> AllShortestPaths<S> {
    /// Prepares the search; nothing is computed before the first [`Self::next_path`].
    pub fn new(source: S, start: &str, target: &str, limits: Limits) -> AllShortestPaths<S> {
        AllShortestPaths {
            source,
            state: AllShortestPathsState::new(start, target, limits),
        }
    }

    /// The next shortest path, or `None` when all were produced.
    pub fn next_path(&mut self) -> Result<Option<Path>> {
        self.state.next_path(&self.source)
    }
}

/// [`AllShortestPaths`] without its source, which is passed to every call instead (for
/// callers whose source borrows something they only hold while pulling, like the AQL
/// executor's transaction).
pub struct AllShortestPathsState {
    interner: Interner,
    budget: Budget,
    workspace: BfsWorkspace,
    start: VertexId,
    target: VertexId,
    started: bool,
    meetings: Vec<VertexId>,
    next_meeting: usize,
    to_start: Vec<(Vec<VertexId>, Vec<EdgeHandle>)>,
    to_target: Vec<(Vec<VertexId>, Vec<EdgeHandle>)>,
    i: usize,
    j: usize,
}

impl AllShortestPathsState {
    /// See [`AllShortestPaths::new`].
    pub fn new(start: &str, target: &str, limits: Limits) -> AllShortestPathsState {
        let mut interner = Interner::new();
        let start = interner.intern(start);
        let target = interner.intern(target);
        AllShortestPathsState {
            interner,
            budget: Budget::new(limits),
            workspace: BfsWorkspace::new(),
            start,
            target,
            started: false,
            meetings: Vec::new(),
            next_meeting: 0,
            to_start: Vec::new(),
            to_target: Vec::new(),
            i: 0,
            j: 0,
        }
    }

    /// The next shortest path, or `None` when all were produced.
    pub fn next_path<S: EdgeSource + ?Sized>(&mut self, source: &S) -> Result<Option<Path>> {
        if !self.started {
            self.started = true;
            if self.start == self.target {
                self.next_meeting = usize::MAX;
                return Ok(Some(build_path(&self.interner, &[self.start], &[])));
            }
            self.meetings = bfs_meet(
                source,
                &mut self.interner,
                &mut self.budget,
                &mut self.workspace,
                self.start,
                self.target,
                true,
                &Restrictions::default(),
            )?;
        }
        while self.i >= self.to_start.len() || self.to_target.is_empty() {
            let Some(&m) = self.meetings.get(self.next_meeting) else {
                return Ok(None);
            };
            self.next_meeting += 1;
            self.to_start.clear();
            self.to_target.clear();
            chains(
                &self.workspace.sides[0],
                m,
                &self.budget,
                &mut self.to_start,
            )?;
            chains(
                &self.workspace.sides[1],
                m,
                &self.budget,
                &mut self.to_target,
            )?;
            self.i = 0;
            self.j = 0;
        }
        let (vertices, steps) = join_chains(&self.to_start[self.i], &self.to_target[self.j]);
        self.j += 1;
        if self.j == self.to_target.len() {
            self.j = 0;
            self.i += 1;
        }
        Ok(Some(build_path(&self.interner, &vertices, &steps)))
    }
}

struct BfsSide {
    backward: bool,
    dist: Vec<u32>,
    /// First predecessor `(vertex, edge)`: the neighbor one step closer to this side's root.
    pred: Vec<(u32, EdgeHandle)>,
    /// Further predecessors at the same distance (only collected for all shortest paths).
    more_preds: HashMap<u32, Vec<(VertexId, EdgeHandle)>>,
    frontier: Vec<VertexId>,
    depth: u32,
    /// Entries of `dist`/`pred` written by the current search, so that a reused side is
    /// reset in time proportional to what the last search touched (Yen runs many searches
    /// over one growing interner).
    touched: Vec<u32>,
    /// Vertices expanded and edges seen by this side, for choosing the cheaper side.
    expanded: u64,
    edges_seen: u64,
    /// Sum of the frontier's degree hints (when the source gives them): the edges expanding
    /// this side's next level would read.
    frontier_edges: u64,
}

impl BfsSide {
    fn empty() -> BfsSide {
        BfsSide {
            backward: false,
            dist: Vec::new(),
            pred: Vec::new(),
            more_preds: HashMap::new(),
            frontier: Vec::new(),
            depth: 0,
            touched: Vec::new(),
            expanded: 0,
            edges_seen: 0,
            frontier_edges: 0,
        }
    }

    fn reset(&mut self, root: VertexId, backward: bool, n: usize) {
        for &i in &self.touched {
            self.dist[i as usize] = UNSEEN;
            self.pred[i as usize] = (UNSEEN, EdgeHandle(0));
        }
        self.touched.clear();
        self.more_preds.clear();
        self.frontier.clear();
        self.frontier.push(root);
        self.backward = backward;
        self.depth = 0;
        self.expanded = 0;
        self.edges_seen = 0;
        self.frontier_edges = 0;
        self.grow(n);
        self.dist[root.index()] = 0;
        self.touched.push(root.0);
    }

    fn grow(&mut self, n: usize) {
        if self.dist.len() < n {
            self.dist.resize(n, UNSEEN);
            self.pred.resize(n, (UNSEEN, EdgeHandle(0)));
        }
    }

    fn preds(&self, v: VertexId) -> Vec<(VertexId, EdgeHandle)> {
        let mut out = Vec::new();
        let (p, e) = self.pred[v.index()];
        if p != UNSEEN {
            out.push((VertexId(p), e));
        }
        if let Some(more) = self.more_preds.get(&v.0) {
            out.extend_from_slice(more);
        }
        out
    }

    fn memory_bytes(&self) -> usize {
        self.dist.capacity() * 4
            + self.pred.capacity() * 16
            + self.frontier.capacity() * 4
            + self.touched.capacity() * 4
            + self.more_preds.len() * 48
    }
}

/// Every root→`v` chain of this side as (vertices from `v` towards the root, edges).
fn chains(
    side: &BfsSide,
    v: VertexId,
    budget: &Budget,
    out: &mut Vec<(Vec<VertexId>, Vec<EdgeHandle>)>,
) -> Result<()> {
    // Iterative enumeration over the predecessor DAG; `stack` holds partial chains.
    let mut stack: Vec<(Vec<VertexId>, Vec<EdgeHandle>)> = vec![(vec![v], Vec::new())];
    let mut bytes = 0usize;
    while let Some((vertices, edges)) = stack.pop() {
        let last = *vertices.last().unwrap_or(&v);
        let preds = side.preds(last);
        if preds.is_empty() {
            bytes += vertices.len() * 12;
            budget.memory(bytes)?;
            out.push((vertices, edges));
            continue;
        }
        for (p, e) in preds.into_iter().rev() {
            let mut nv = vertices.clone();
            nv.push(p);
            let mut ne = edges.clone();
            ne.push(e);
            stack.push((nv, ne));
        }
    }
    Ok(())
}

/// The degrees of the start (forward) and target (backward) vertices, if the source knows
/// both.
fn root_degree_hints<S: EdgeSource + ?Sized>(
    source: &S,
    interner: &Interner,
    s: VertexId,
    t: VertexId,
) -> Option<(usize, usize)> {
    let query = |backward| EdgeQuery {
        backward,
        depth: 0,
        need_weight: false,
    };
    let fwd = source.degree_hint(interner.name(s), &query(false))?;
    let bwd = source.degree_hint(interner.name(t), &query(true))?;
    Some((fwd, bwd))
}

/// Reusable state of bidirectional breadth-first searches.
pub(crate) struct BfsWorkspace {
    sides: [BfsSide; 2],
}

impl BfsWorkspace {
    pub(crate) fn new() -> BfsWorkspace {
        BfsWorkspace {
            sides: [BfsSide::empty(), BfsSide::empty()],
        }
    }
}

/// Bidirectional breadth-first search from `s` (≠ `t`) to `t` avoiding `restrictions`, up to
/// the level where both sides meet. Returns the meeting vertices (empty: no connection); with
/// `all` the level is finished and every predecessor recorded, so that the workspace holds
/// every shortest path.
#[allow(clippy::too_many_arguments)]
fn bfs_meet<S: EdgeSource + ?Sized>(
    source: &S,
    interner: &mut Interner,
    budget: &mut Budget,
    workspace: &mut BfsWorkspace,
    s: VertexId,
    t: VertexId,
    all: bool,
    restrictions: &Restrictions,
) -> Result<Vec<VertexId>> {
    let n = interner.len();
    let sides = &mut workspace.sides;
    sides[0].reset(s, false, n);
    sides[1].reset(t, true, n);
    // Seed each side's cost estimate with its root's degree when the source knows it.
    let hints = root_degree_hints(source, interner, s, t);
    let hinted = hints.is_some();
    if let Some((fwd, bwd)) = hints {
        sides[0].edges_seen = fwd as u64;
        sides[1].edges_seen = bwd as u64;
        sides[0].frontier_edges = fwd as u64;
        sides[1].frontier_edges = bwd as u64;
    }
    let mut name_buf = String::new();
    let mut edges = Vec::new();
    let mut meetings: Vec<VertexId> = Vec::new();
    while meetings.is_empty() {
        if sides[0].frontier.is_empty() || sides[1].frontier.is_empty() {
            return Ok(Vec::new());
        }
        // Expand the side with fewer edges to read: known exactly from the degree hints when
        // the source gives them, else estimated as frontier size times the average degree
        // seen on that side so far (in- and out-degrees differ a lot on social graphs).
        // ArangoDB picks the smaller frontier; on a power-law graph one hub in a frontier
        // outweighs hundreds of ordinary vertices, which the edge count sees.
        let cost = |side: &BfsSide| {
            if hinted {
                side.frontier_edges as f64
            } else {
                side.frontier.len() as f64 * (side.edges_seen as f64 + 1.0)
                    / (side.expanded as f64 + 1.0)
            }
        };
        let x = if cost(&sides[0]) <= cost(&sides[1]) {
            0
        } else {
            1
        };
        let (a, b) = sides.split_at_mut(1);
        let (side, other) = if x == 0 {
            (&mut a[0], &mut b[0])
        } else {
            (&mut b[0], &mut a[0])
        };
        let frontier = std::mem::take(&mut side.frontier);
        let next_depth = side.depth + 1;
        let mut next = Vec::new();
        let mut next_edges = 0u64;
        let next_query = EdgeQuery {
            backward: side.backward,
            depth: next_depth as usize,
            need_weight: false,
        };
        'level: for &v in &frontier {
            expand(
                source,
                interner,
                budget,
                &mut name_buf,
                v,
                side.backward,
                side.depth as usize,
                false,
                &mut edges,
            )?;
            side.grow(interner.len());
            other.grow(interner.len());
            side.expanded += 1;
            side.edges_seen += edges.len() as u64;
            for &(u, e, _) in &edges {
                if restrictions.blocks(u, e) {
                    continue;
                }
                let du = side.dist[u.index()];
                if du == UNSEEN {
                    side.dist[u.index()] = next_depth;
                    side.pred[u.index()] = (v.0, e);
                    side.touched.push(u.0);
                    next.push(u);
                    if hinted {
                        let degree = source.degree_hint(interner.name(u), &next_query);
                        next_edges += degree.unwrap_or(0) as u64;
                    }
                    if other.dist[u.index()] != UNSEEN {
                        meetings.push(u);
                        if !all {
                            // Every meeting found while expanding this level closes a path of
                            // the same length (see docs/design/graph.md), so the first one
                            // is a shortest path.
                            break 'level;
                        }
                    }
                } else if all && du == next_depth {
                    side.more_preds.entry(u.0).or_default().push((v, e));
                }
            }
            budget.memory(
                interner.memory_bytes()
                    + side.memory_bytes()
                    + other.memory_bytes()
                    + next.capacity() * 4,
            )?;
        }
        side.frontier = next;
        side.frontier_edges = next_edges;
        side.depth = next_depth;
    }
    Ok(meetings)
}

/// One shortest route from `s` to `t` avoiding `restrictions` (bidirectional BFS).
#[allow(clippy::too_many_arguments)]
pub(crate) fn bfs<S: EdgeSource + ?Sized>(
    source: &S,
    interner: &mut Interner,
    budget: &mut Budget,
    workspace: &mut BfsWorkspace,
    s: VertexId,
    t: VertexId,
    restrictions: &Restrictions,
) -> Result<Option<Route>> {
    if s == t {
        return Ok(Some((vec![s], Vec::new())));
    }
    let meetings = bfs_meet(
        source,
        interner,
        budget,
        workspace,
        s,
        t,
        false,
        restrictions,
    )?;
    let Some(&m) = meetings.first() else {
        return Ok(None);
    };
    let to_start = single_chain(&workspace.sides[0], m);
    let to_target = single_chain(&workspace.sides[1], m);
    Ok(Some(join_chains(&to_start, &to_target)))
}

/// start→m (given from m backwards) and m→target into one route.
fn join_chains(
    to_start: &(Vec<VertexId>, Vec<EdgeHandle>),
    to_target: &(Vec<VertexId>, Vec<EdgeHandle>),
) -> Route {
    let (sv, se) = to_start;
    let (tv, te) = to_target;
    let mut vertices: Vec<VertexId> = sv.iter().rev().copied().collect();
    vertices.extend_from_slice(&tv[1..]);
    let mut steps: Vec<(EdgeHandle, f64)> = se.iter().rev().map(|e| (*e, 1.0)).collect();
    steps.extend(te.iter().map(|e| (*e, 1.0)));
    (vertices, steps)
}

fn single_chain(side: &BfsSide, v: VertexId) -> (Vec<VertexId>, Vec<EdgeHandle>) {
    let mut vertices = vec![v];
    let mut edges = Vec::new();
    let mut cur = v;
    loop {
        let (p, e) = side.pred[cur.index()];
        if p == UNSEEN {
            break;
        }
        edges.push(e);
        cur = VertexId(p);
        vertices.push(cur);
    }
    (vertices, edges)
}

/// Vertices and edges a restricted search must avoid (Yen's spur searches).
#[derive(Default)]
pub(crate) struct Restrictions {
    pub(crate) vertices: HashSet<VertexId>,
    pub(crate) edges: HashSet<EdgeHandle>,
}

impl Restrictions {
    #[inline]
    fn blocks(&self, vertex: VertexId, edge: EdgeHandle) -> bool {
        (!self.edges.is_empty() && self.edges.contains(&edge))
            || (!self.vertices.is_empty() && self.vertices.contains(&vertex))
    }
}

#[derive(Clone, Copy)]
struct QueueItem {
    weight: f64,
    seq: u64,
    vertex: VertexId,
}

impl PartialEq for QueueItem {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for QueueItem {}
impl PartialOrd for QueueItem {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for QueueItem {
    // Reversed: `BinaryHeap` pops the lightest, earliest entry first.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .weight
            .total_cmp(&self.weight)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

struct DijkstraSide {
    backward: bool,
    dist: Vec<f64>,
    settled: Vec<bool>,
    pred: Vec<(u32, EdgeHandle, f64)>,
    heap: BinaryHeap<QueueItem>,
    /// Entries written by the current search (see `BfsSide::touched`).
    touched: Vec<u32>,
}

impl DijkstraSide {
    fn empty() -> DijkstraSide {
        DijkstraSide {
            backward: false,
            dist: Vec::new(),
            settled: Vec::new(),
            pred: Vec::new(),
            heap: BinaryHeap::new(),
            touched: Vec::new(),
        }
    }

    fn reset(&mut self, root: VertexId, backward: bool, n: usize) {
        for &i in &self.touched {
            self.dist[i as usize] = f64::INFINITY;
            self.settled[i as usize] = false;
            self.pred[i as usize] = (UNSEEN, EdgeHandle(0), 0.0);
        }
        self.touched.clear();
        self.heap.clear();
        self.backward = backward;
        self.grow(n);
        self.dist[root.index()] = 0.0;
        self.touched.push(root.0);
        self.heap.push(QueueItem {
            weight: 0.0,
            seq: 0,
            vertex: root,
        });
    }

    fn grow(&mut self, n: usize) {
        if self.dist.len() < n {
            self.dist.resize(n, f64::INFINITY);
            self.settled.resize(n, false);
            self.pred.resize(n, (UNSEEN, EdgeHandle(0), 0.0));
        }
    }

    /// Drops queue entries that are settled or superseded; the smallest live key.
    fn top(&mut self) -> Option<f64> {
        while let Some(item) = self.heap.peek() {
            let v = item.vertex.index();
            if self.settled[v] || item.weight > self.dist[v] {
                self.heap.pop();
            } else {
                return Some(item.weight);
            }
        }
        None
    }

    fn memory_bytes(&self) -> usize {
        self.dist.capacity() * 8
            + self.settled.capacity()
            + self.pred.capacity() * 24
            + self.heap.capacity() * std::mem::size_of::<QueueItem>()
            + self.touched.capacity() * 4
    }

    /// Root→`v` as (vertices from `v` towards the root, (edge, weight) steps).
    fn chain(&self, v: VertexId) -> (Vec<VertexId>, Vec<(EdgeHandle, f64)>) {
        let mut vertices = vec![v];
        let mut steps = Vec::new();
        let mut cur = v;
        loop {
            let (p, e, w) = self.pred[cur.index()];
            if p == UNSEEN || vertices.len() > self.pred.len() {
                break;
            }
            steps.push((e, w));
            cur = VertexId(p);
            vertices.push(cur);
        }
        (vertices, steps)
    }
}

/// Reusable state of bidirectional Dijkstra searches.
pub(crate) struct DijkstraWorkspace {
    sides: [DijkstraSide; 2],
}

impl DijkstraWorkspace {
    pub(crate) fn new() -> DijkstraWorkspace {
        DijkstraWorkspace {
            sides: [DijkstraSide::empty(), DijkstraSide::empty()],
        }
    }
}

/// Bidirectional Dijkstra from `s` to `t` avoiding `restrictions`. Unweighted searches use
/// weight 1 per edge. Returns vertices and `(edge, weight)` steps of one lightest path.
#[allow(clippy::too_many_arguments)]
pub(crate) fn dijkstra<S: EdgeSource + ?Sized>(
    source: &S,
    interner: &mut Interner,
    budget: &mut Budget,
    workspace: &mut DijkstraWorkspace,
    s: VertexId,
    t: VertexId,
    weighted: bool,
    restrictions: &Restrictions,
) -> Result<Option<Route>> {
    if s == t {
        return Ok(Some((vec![s], Vec::new())));
    }
    let n = interner.len();
    let sides = &mut workspace.sides;
    sides[0].reset(s, false, n);
    sides[1].reset(t, true, n);
    // While both queues hold just their root, start on the side with fewer edges if known.
    let mut first_side = match root_degree_hints(source, interner, s, t) {
        Some((fwd, bwd)) if bwd < fwd => Some(1),
        _ => None,
    };
    let mut best = f64::INFINITY;
    // (side that relaxed the meeting edge, its settled vertex, edge, weight, vertex reached)
    let mut meeting: Option<(usize, VertexId, EdgeHandle, f64, VertexId)> = None;
    let mut name_buf = String::new();
    let mut edges = Vec::new();
    let mut seq = 0u64;
    while let (Some(top0), Some(top1)) = (sides[0].top(), sides[1].top()) {
        if top0 + top1 >= best {
            break;
        }
        let x = if let Some(first) = first_side.take() {
            first
        } else if sides[0].heap.len() <= sides[1].heap.len() {
            0
        } else {
            1
        };
        let (a, b) = sides.split_at_mut(1);
        let (side, other) = if x == 0 {
            (&mut a[0], &mut b[0])
        } else {
            (&mut b[0], &mut a[0])
        };
        let Some(item) = side.heap.pop() else { break };
        let v = item.vertex;
        if side.settled[v.index()] || item.weight > side.dist[v.index()] {
            continue;
        }
        side.settled[v.index()] = true;
        let d = item.weight;
        expand(
            source,
            interner,
            budget,
            &mut name_buf,
            v,
            side.backward,
            0,
            weighted,
            &mut edges,
        )?;
        side.grow(interner.len());
        other.grow(interner.len());
        for &(u, e, w) in &edges {
            if restrictions.blocks(u, e) {
                continue;
            }
            let nd = d + w;
            if nd < side.dist[u.index()] {
                if side.dist[u.index()] == f64::INFINITY {
                    side.touched.push(u.0);
                }
                side.dist[u.index()] = nd;
                side.pred[u.index()] = (v.0, e, w);
                seq += 1;
                side.heap.push(QueueItem {
                    weight: nd,
                    seq,
                    vertex: u,
                });
            }
            let through = nd + other.dist[u.index()];
            if through < best {
                best = through;
                meeting = Some((x, v, e, w, u));
            }
        }
        budget.memory(interner.memory_bytes() + side.memory_bytes() + other.memory_bytes())?;
    }
    let Some((x, v, e, w, u)) = meeting else {
        return Ok(None);
    };
    // Chain on the relaxing side to `v`, the meeting edge, then the other side from `u`.
    let (near_v, near_s) = sides[x].chain(v);
    let (far_v, far_s) = sides[1 - x].chain(u);
    let mut vertices: Vec<VertexId> = near_v.iter().rev().copied().collect();
    let mut steps: Vec<(EdgeHandle, f64)> = near_s.iter().rev().copied().collect();
    steps.push((e, w));
    vertices.extend_from_slice(&far_v);
    steps.extend_from_slice(&far_s);
    if x == 1 {
        vertices.reverse();
        steps.reverse();
    }
    Ok(Some((vertices, steps)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Direction, MemoryGraph};
    use quiver_errors::ErrorCode;

    fn graph(edges: &[(&str, &str, f64)]) -> MemoryGraph {
        let mut g = MemoryGraph::new();
        for (i, (f, t, w)) in edges.iter().enumerate() {
            g.add_edge("e", &format!("e/{i}"), f, t, Some(*w));
        }
        g
    }

    #[test]
    fn unweighted_shortest_path_and_reverse_direction() {
        let g = graph(&[
            ("v/a", "v/b", 1.0),
            ("v/b", "v/c", 1.0),
            ("v/c", "v/d", 1.0),
            ("v/a", "v/x", 1.0),
            ("v/x", "v/d", 1.0),
        ]);
        let p = shortest_path(
            &g.source(Direction::Outbound, 1.0),
            "v/a",
            "v/d",
            false,
            Limits::default(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(p.vertices, ["v/a", "v/x", "v/d"]);
        assert_eq!(p.edges, [EdgeHandle(3), EdgeHandle(4)]);
        assert_eq!(p.weights, [0.0, 1.0, 2.0]);
        let none = shortest_path(
            &g.source(Direction::Outbound, 1.0),
            "v/d",
            "v/a",
            false,
            Limits::default(),
        )
        .unwrap();
        assert!(none.is_none());
        let back = shortest_path(
            &g.source(Direction::Inbound, 1.0),
            "v/d",
            "v/a",
            false,
            Limits::default(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(back.vertices, ["v/d", "v/x", "v/a"]);
        let same = shortest_path(
            &g.source(Direction::Any, 1.0),
            "v/c",
            "v/c",
            false,
            Limits::default(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(same.vertices, ["v/c"]);
        assert!(same.edges.is_empty());
    }

    #[test]
    fn weighted_shortest_path_prefers_light_detours() {
        let g = graph(&[
            ("v/a", "v/d", 10.0),
            ("v/a", "v/b", 1.0),
            ("v/b", "v/c", 1.0),
            ("v/c", "v/d", 1.0),
        ]);
        let p = shortest_path(
            &g.source(Direction::Outbound, 1.0),
            "v/a",
            "v/d",
            true,
            Limits::default(),
        )
        .unwrap()
        .unwrap();
        assert_eq!(p.vertices, ["v/a", "v/b", "v/c", "v/d"]);
        assert_eq!(p.weight(), 3.0);
        let neg = graph(&[("v/a", "v/b", -1.0)]);
        assert_eq!(
            shortest_path(
                &neg.source(Direction::Outbound, 1.0),
                "v/a",
                "v/b",
                true,
                Limits::default()
            )
            .unwrap_err()
            .code,
            ErrorCode::GraphNegativeEdgeWeight
        );
    }

    /// The "hard path": the target has no incoming edge, in a graph where the start reaches
    /// everything else. The search must stop after one lookup on the target side.
    #[test]
    fn missing_connection_is_found_without_exploring_the_graph() {
        let mut g = MemoryGraph::new();
        for i in 0..2000 {
            g.add_edge(
                "e",
                &format!("e/{i}"),
                &format!("v/{i}"),
                &format!("v/{}", (i + 1) % 2000),
                None,
            );
            g.add_edge(
                "e",
                &format!("f/{i}"),
                &format!("v/{i}"),
                &format!("v/{}", (i * 7 + 3) % 2000),
                None,
            );
        }
        g.add_edge("e", "e/out", "v/lonely", "v/5", None);
        let limits = Limits {
            max_edges_visited: 10,
            ..Limits::default()
        };
        let r = shortest_path(
            &g.source(Direction::Outbound, 1.0),
            "v/0",
            "v/lonely",
            false,
            limits,
        )
        .unwrap();
        assert!(r.is_none());
        let r = shortest_path(
            &g.source(Direction::Outbound, 1.0),
            "v/0",
            "v/lonely",
            true,
            limits,
        )
        .unwrap();
        assert!(r.is_none());
    }

    /// With degree hints, the side of a target without incoming edges is expanded first, so
    /// the hard path costs no edge at all, however many edges the start has.
    #[test]
    fn degree_hints_answer_the_hard_path_without_expanding_the_start() {
        let mut g = MemoryGraph::new();
        for i in 0..100 {
            g.add_edge("e", &format!("e/{i}"), "v/start", &format!("v/{i}"), None);
        }
        g.add_edge("e", "e/out", "v/lonely", "v/1", None);
        let limits = Limits {
            max_edges_visited: 0,
            ..Limits::default()
        };
        let source = g.source(Direction::Outbound, 1.0);
        for weighted in [false, true] {
            let r = shortest_path(&source, "v/start", "v/lonely", weighted, limits).unwrap();
            assert!(r.is_none());
        }
        assert!(all_shortest_paths(&source, "v/start", "v/lonely", limits)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn all_shortest_paths_finds_every_route() {
        // Carlisle → London in ArangoDB's example: via Birmingham and via York.
        let g = graph(&[
            ("p/Carlisle", "p/Birmingham", 1.0),
            ("p/Carlisle", "p/York", 1.0),
            ("p/Birmingham", "p/London", 1.0),
            ("p/York", "p/London", 1.0),
            ("p/Carlisle", "p/Glasgow", 1.0),
            ("p/Glasgow", "p/Edinburgh", 1.0),
            ("p/Edinburgh", "p/York", 1.0),
        ]);
        let paths = all_shortest_paths(
            &g.source(Direction::Outbound, 1.0),
            "p/Carlisle",
            "p/London",
            Limits::default(),
        )
        .unwrap();
        let mut routes: Vec<_> = paths.iter().map(|p| p.vertices[1].clone()).collect();
        routes.sort();
        assert_eq!(routes, ["p/Birmingham", "p/York"]);
        assert!(paths.iter().all(|p| p.len() == 2));
        assert!(all_shortest_paths(
            &g.source(Direction::Outbound, 1.0),
            "p/London",
            "p/Carlisle",
            Limits::default()
        )
        .unwrap()
        .is_empty());
    }

    #[test]
    fn limits_stop_runaway_searches() {
        let mut g = MemoryGraph::new();
        for i in 0..500 {
            g.add_edge(
                "e",
                &format!("e/{i}"),
                &format!("v/{i}"),
                &format!("v/{}", i + 1),
                None,
            );
        }
        let limits = Limits {
            max_edges_visited: 50,
            ..Limits::default()
        };
        let err = shortest_path(
            &g.source(Direction::Outbound, 1.0),
            "v/0",
            "v/500",
            false,
            limits,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::ResourceLimit);
        let err = shortest_path(
            &g.source(Direction::Outbound, 1.0),
            "v/0",
            "v/500",
            true,
            limits,
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::ResourceLimit);
    }
}
