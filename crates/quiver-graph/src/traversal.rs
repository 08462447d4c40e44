//! `FOR v, e, p IN min..max OUTBOUND|INBOUND|ANY start …`: depth-first, breadth-first and
//! weighted traversals with ArangoDB's uniqueness rules, PRUNE and pushed-down filters.
//!
//! Semantics (ArangoDB 3.12): every step reached — the start vertex at depth 0 included — is
//! first checked by the [`StepCheck`] (PRUNE, `vertexCollections`, pushed-down filters), then
//! by the uniqueness rules; a step is emitted when it passes and its depth is at least `min`,
//! and expanded when it is not pruned and its depth is below `max`. With
//! `uniqueVertices: "global"` a vertex counts as visited only once a step reaching it passed
//! the check, so a vertex filtered on one path can still be reached on another.
//! dfs emits in pre-order, taking a vertex's edges last one first (as ArangoDB's stack of
//! steps does); bfs emits level by level in the source's edge order;
//! weighted emits in order of increasing path weight (ties: first reached first).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use quiver_errors::{Error, ErrorCode, Result};

use crate::intern::{Interner, VertexId};
use crate::{checked_weight, Budget, EdgeHandle, EdgeQuery, EdgeSource, Limits, Path};

/// `order` option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Depth-first (ArangoDB's default).
    Dfs,
    /// Breadth-first.
    Bfs,
    /// By increasing path weight.
    Weighted,
}

impl Order {
    /// Parses the `order` option value (`"dfs"`, `"bfs"`, `"weighted"`).
    pub fn parse(text: &str) -> Option<Order> {
        match text {
            "dfs" => Some(Order::Dfs),
            "bfs" => Some(Order::Bfs),
            "weighted" => Some(Order::Weighted),
            _ => None,
        }
    }
}

/// `uniqueVertices` option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UniqueVertices {
    /// No check (default).
    None,
    /// No vertex twice on one path.
    Path,
    /// Every vertex visited at most once in the whole traversal (bfs / weighted only).
    Global,
}

impl UniqueVertices {
    /// Parses the `uniqueVertices` option value (`"none"`, `"path"`, `"global"`).
    pub fn parse(text: &str) -> Option<UniqueVertices> {
        match text {
            "none" => Some(UniqueVertices::None),
            "path" => Some(UniqueVertices::Path),
            "global" => Some(UniqueVertices::Global),
            _ => None,
        }
    }
}

/// `uniqueEdges` option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UniqueEdges {
    /// No check: cycles are followed up to the maximum depth.
    None,
    /// No edge twice on one path (default).
    Path,
}

impl UniqueEdges {
    /// Parses the `uniqueEdges` option value (`"none"`, `"path"`). ArangoDB 3.x no longer
    /// supports `"global"` for edges.
    pub fn parse(text: &str) -> Option<UniqueEdges> {
        match text {
            "none" => Some(UniqueEdges::None),
            "path" => Some(UniqueEdges::Path),
            _ => None,
        }
    }
}

/// Options of one traversal.
#[derive(Clone, Debug)]
pub struct TraversalOptions {
    /// Smallest depth emitted (AQL default 1).
    pub min_depth: usize,
    /// Largest depth reached.
    pub max_depth: usize,
    /// Visiting order.
    pub order: Order,
    /// Vertex uniqueness.
    pub unique_vertices: UniqueVertices,
    /// Edge uniqueness.
    pub unique_edges: UniqueEdges,
    /// `vertexCollections`: when non-empty, vertices of other collections are neither emitted
    /// nor expanded (the start vertex is always allowed).
    pub vertex_collections: Vec<String>,
    /// Resource bounds.
    pub limits: Limits,
}

impl Default for TraversalOptions {
    fn default() -> TraversalOptions {
        TraversalOptions {
            min_depth: 1,
            max_depth: 1,
            order: Order::Dfs,
            unique_vertices: UniqueVertices::None,
            unique_edges: UniqueEdges::Path,
            vertex_collections: Vec::new(),
            limits: Limits::default(),
        }
    }
}

/// What the [`StepCheck`] decides for one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The step may be part of the result (if its depth is at least `min`).
    pub emit: bool,
    /// The traversal may continue beyond this step.
    pub expand: bool,
}

impl Verdict {
    /// Emit and continue.
    pub const TAKE: Verdict = Verdict {
        emit: true,
        expand: true,
    };
    /// Emit but do not continue (PRUNE true).
    pub const PRUNE: Verdict = Verdict {
        emit: true,
        expand: false,
    };
    /// Do not emit but continue (a post-filter on the last vertex/edge).
    pub const FILTER: Verdict = Verdict {
        emit: false,
        expand: true,
    };
    /// Neither (a failed pushed-down path condition).
    pub const FILTER_AND_PRUNE: Verdict = Verdict {
        emit: false,
        expand: false,
    };

    /// Both verdicts' restrictions.
    pub fn combine(self, other: Verdict) -> Verdict {
        Verdict {
            emit: self.emit && other.emit,
            expand: self.expand && other.expand,
        }
    }
}

/// The PRUNE / filter hook: the executor evaluates its expressions on the step here.
pub trait StepCheck {
    /// Decides about one step. Errors abort the traversal.
    fn check(&mut self, step: &StepView<'_>) -> Result<Verdict>;
}

impl<F> StepCheck for F
where
    F: FnMut(&StepView<'_>) -> Result<Verdict>,
{
    fn check(&mut self, step: &StepView<'_>) -> Result<Verdict> {
        self(step)
    }
}

/// A [`StepCheck`] that takes every step.
#[derive(Clone, Copy, Debug, Default)]
pub struct AcceptAll;

impl StepCheck for AcceptAll {
    #[inline]
    fn check(&mut self, _step: &StepView<'_>) -> Result<Verdict> {
        Ok(Verdict::TAKE)
    }
}

const NO_PARENT: u32 = u32::MAX;

#[derive(Clone, Copy, Debug)]
struct Step {
    vertex: VertexId,
    edge: Option<EdgeHandle>,
    parent: u32,
    depth: u32,
    weight: f64,
}

#[derive(Clone, Copy, Debug)]
struct Frame {
    step: Step,
    children_start: u32,
    /// Children `children_start..unvisited_end` are still to be visited, last one first.
    unvisited_end: u32,
}

#[derive(Clone, Copy, Debug)]
struct Child {
    vertex: VertexId,
    edge: EdgeHandle,
    weight: f64,
}

#[derive(Clone, Copy)]
enum PathRef<'a> {
    Stack {
        frames: &'a [Frame],
        candidate: Step,
    },
    Arena {
        steps: &'a [Step],
        index: u32,
    },
}

/// One step as shown to the [`StepCheck`]: the vertex reached, the edge it was reached by,
/// and access to the whole path (`p`).
pub struct StepView<'a> {
    /// The vertex reached.
    pub vertex: &'a str,
    /// The edge leading to it (`None` for the start vertex).
    pub edge: Option<EdgeHandle>,
    /// Its depth (0 = start vertex).
    pub depth: usize,
    /// The path weight up to here (depth for unweighted traversals).
    pub weight: f64,
    path: PathRef<'a>,
    interner: &'a Interner,
}

impl StepView<'_> {
    fn steps(&self) -> Vec<Step> {
        match self.path {
            PathRef::Stack { frames, candidate } => {
                let mut out: Vec<Step> = frames.iter().map(|f| f.step).collect();
                out.push(candidate);
                out
            }
            PathRef::Arena { steps, index } => arena_path(steps, index),
        }
    }

    /// `p.vertices[i]` (`None` past the end).
    pub fn path_vertex(&self, i: usize) -> Option<&str> {
        if i > self.depth {
            return None;
        }
        let step = match self.path {
            PathRef::Stack { frames, candidate } => {
                if i == self.depth {
                    candidate
                } else {
                    frames[i].step
                }
            }
            PathRef::Arena { steps, index } => arena_ancestor(steps, index, self.depth - i),
        };
        Some(self.interner.name(step.vertex))
    }

    /// `p.edges[i]` (`None` past the end).
    pub fn path_edge(&self, i: usize) -> Option<EdgeHandle> {
        if i >= self.depth {
            return None;
        }
        let step = match self.path {
            PathRef::Stack { frames, candidate } => {
                if i + 1 == self.depth {
                    candidate
                } else {
                    frames[i + 1].step
                }
            }
            PathRef::Arena { steps, index } => arena_ancestor(steps, index, self.depth - i - 1),
        };
        step.edge
    }

    /// The whole path (`p`).
    pub fn to_path(&self) -> Path {
        steps_to_path(&self.steps(), self.interner)
    }
}

fn arena_ancestor(steps: &[Step], mut index: u32, up: usize) -> Step {
    for _ in 0..up {
        index = steps[index as usize].parent;
    }
    steps[index as usize]
}

fn arena_path(steps: &[Step], mut index: u32) -> Vec<Step> {
    let mut out = Vec::new();
    while index != NO_PARENT {
        let step = steps[index as usize];
        out.push(step);
        index = step.parent;
    }
    out.reverse();
    out
}

fn steps_to_path(steps: &[Step], interner: &Interner) -> Path {
    Path {
        vertices: steps
            .iter()
            .map(|s| interner.name(s.vertex).to_string())
            .collect(),
        edges: steps.iter().filter_map(|s| s.edge).collect(),
        weights: steps.iter().map(|s| s.weight).collect(),
    }
}

/// One result row: `v` (and `e`); `p` via [`Traversal::current_path`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraversalRow {
    /// The vertex (name via [`Traversal::vertex_name`]).
    pub vertex: VertexId,
    /// The edge leading to it (`null` for the start vertex).
    pub edge: Option<EdgeHandle>,
    /// Its depth.
    pub depth: usize,
    /// The path weight (weighted order; the depth otherwise).
    pub weight: f64,
}

#[derive(Clone, Copy)]
struct HeapItem {
    weight: f64,
    seq: u64,
    index: u32,
}

impl PartialEq for HeapItem {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for HeapItem {}
impl PartialOrd for HeapItem {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for HeapItem {
    // Reversed so that `BinaryHeap` (a max-heap) pops the lightest, earliest step first.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .weight
            .total_cmp(&self.weight)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

enum LastRow {
    None,
    Stack,
    Arena(u32),
}

/// A lazily evaluated traversal: call [`Traversal::next_row`] until it returns `None`.
pub struct Traversal<S: EdgeSource, C: StepCheck> {
    source: S,
    check: C,
    state: TraversalState,
}

impl<S: EdgeSource, C: StepCheck> Traversal<S, C> {
    /// Prepares a traversal from the vertex `start` (an `_id`). Fails with `BadParameter` for
    /// `uniqueVertices: "global"` with depth-first order (as ArangoDB does) and with
    /// `ResourceLimit` for a maximum depth beyond the limits.
    pub fn new(
        source: S,
        start: &str,
        options: TraversalOptions,
        check: C,
    ) -> Result<Traversal<S, C>> {
        Ok(Traversal {
            source,
            check,
            state: TraversalState::new(start, options)?,
        })
    }

    /// Starts over from another start vertex with the same source, options and check, keeping
    /// the allocations of the previous run (the executor runs one traversal per input row).
    pub fn restart(&mut self, start: &str) {
        self.state.restart(start)
    }

    /// The `_id` of a vertex in a row.
    pub fn vertex_name(&self, vertex: VertexId) -> &str {
        self.state.vertex_name(vertex)
    }

    /// The path (`p`) of the row returned last; `None` before the first row and after the
    /// end.
    pub fn current_path(&self) -> Option<Path> {
        self.state.current_path()
    }

    /// Edges inspected so far (for profiling output).
    pub fn edges_visited(&self) -> u64 {
        self.state.edges_visited()
    }

    /// The next row, or `None` when the traversal is complete.
    pub fn next_row(&mut self) -> Result<Option<TraversalRow>> {
        self.state.next_row(&self.source, &mut self.check)
    }
}

/// The state of a traversal without its edge source and step check, which are passed to
/// every [`TraversalState::next_row`] call instead. The AQL executor needs this form: its
/// source and check borrow the query's transaction, which it only holds while a row is
/// being pulled, so they cannot live inside a long-lived operator.
pub struct TraversalState {
    options: TraversalOptions,
    interner: Interner,
    budget: Budget,
    start: VertexId,
    started: bool,
    name_buf: String,
    visited: Vec<bool>,
    // depth-first state: the current path as frames, their pending children in one buffer
    frames: Vec<Frame>,
    children: Vec<Child>,
    on_path: Vec<u32>,
    // breadth-first / weighted state: every step reached, linked to its parent
    arena: Vec<Step>,
    fifo: VecDeque<u32>,
    heap: BinaryHeap<HeapItem>,
    seq: u64,
    last: LastRow,
}

impl TraversalState {
    /// See [`Traversal::new`].
    pub fn new(start: &str, options: TraversalOptions) -> Result<TraversalState> {
        if options.unique_vertices == UniqueVertices::Global && options.order == Order::Dfs {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                "uniqueVertices: 'global' is only supported with order 'bfs' or 'weighted' \
                 because depth-first results would be unpredictable",
            ));
        }
        let budget = Budget::new(options.limits);
        budget.depth(options.max_depth)?;
        let mut interner = Interner::new();
        let start = interner.intern(start);
        Ok(TraversalState {
            options,
            interner,
            budget,
            start,
            started: false,
            name_buf: String::new(),
            visited: Vec::new(),
            frames: Vec::new(),
            children: Vec::new(),
            on_path: Vec::new(),
            arena: Vec::new(),
            fifo: VecDeque::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            last: LastRow::None,
        })
    }

    /// Starts over from another start vertex with the same source, options and check, keeping
    /// the allocations of the previous run (the executor runs one traversal per input row).
    pub fn restart(&mut self, start: &str) {
        self.interner.clear();
        self.start = self.interner.intern(start);
        self.budget = Budget::new(self.options.limits);
        self.started = false;
        self.visited.clear();
        self.frames.clear();
        self.children.clear();
        self.on_path.clear();
        self.arena.clear();
        self.fifo.clear();
        self.heap.clear();
        self.seq = 0;
        self.last = LastRow::None;
    }

    /// The `_id` of a vertex in a row.
    pub fn vertex_name(&self, vertex: VertexId) -> &str {
        self.interner.name(vertex)
    }

    /// The path (`p`) of the row returned last; `None` before the first row and after the
    /// end.
    pub fn current_path(&self) -> Option<Path> {
        match self.last {
            LastRow::None => None,
            LastRow::Stack => {
                let steps: Vec<Step> = self.frames.iter().map(|f| f.step).collect();
                Some(steps_to_path(&steps, &self.interner))
            }
            LastRow::Arena(index) => Some(steps_to_path(
                &arena_path(&self.arena, index),
                &self.interner,
            )),
        }
    }

    /// Edges inspected so far (for profiling output).
    pub fn edges_visited(&self) -> u64 {
        self.budget.edges_visited()
    }

    /// The next row, or `None` when the traversal is complete.
    pub fn next_row<S: EdgeSource + ?Sized, C: StepCheck + ?Sized>(
        &mut self,
        source: &S,
        check: &mut C,
    ) -> Result<Option<TraversalRow>> {
        if self.options.min_depth > self.options.max_depth {
            return Ok(None);
        }
        let row = match self.options.order {
            Order::Dfs => self.next_dfs(source, check)?,
            Order::Bfs | Order::Weighted => self.next_queued(source, check)?,
        };
        if row.is_none() {
            self.last = LastRow::None;
        }
        Ok(row)
    }

    fn allowed_collection(&self, step: &Step) -> bool {
        if step.depth == 0 || self.options.vertex_collections.is_empty() {
            return true;
        }
        let name = self.interner.name(step.vertex);
        let collection = name.split('/').next().unwrap_or("");
        self.options
            .vertex_collections
            .iter()
            .any(|c| c == collection)
    }

    fn grow(&mut self) {
        let n = self.interner.len();
        if self.visited.len() < n {
            self.visited.resize(n, false);
        }
        if self.on_path.len() < n {
            self.on_path.resize(n, 0);
        }
    }

    /// Reads the edges of `vertex` into `self.children`.
    fn load_children<S: EdgeSource + ?Sized>(
        &mut self,
        source: &S,
        vertex: VertexId,
        depth: u32,
    ) -> Result<()> {
        self.name_buf.clear();
        self.name_buf.push_str(self.interner.name(vertex));
        let weighted = self.options.order == Order::Weighted;
        let query = EdgeQuery {
            backward: false,
            depth: depth as usize,
            need_weight: weighted,
        };
        let (interner, children, budget) =
            (&mut self.interner, &mut self.children, &mut self.budget);
        source.for_each_edge(&self.name_buf, &query, &mut |edge| {
            budget.edge()?;
            let weight = if weighted {
                checked_weight(edge.weight)?
            } else {
                1.0
            };
            children.push(Child {
                vertex: interner.intern(edge.other),
                edge: edge.edge,
                weight,
            });
            Ok(())
        })?;
        self.grow();
        self.budget.memory(self.memory_bytes())
    }

    fn memory_bytes(&self) -> usize {
        self.interner.memory_bytes()
            + self.visited.capacity()
            + self.on_path.capacity() * 4
            + self.frames.capacity() * std::mem::size_of::<Frame>()
            + self.children.capacity() * std::mem::size_of::<Child>()
            + self.arena.capacity() * std::mem::size_of::<Step>()
            + self.fifo.capacity() * 4
            + self.heap.capacity() * std::mem::size_of::<HeapItem>()
    }

    fn start_step(&self) -> Step {
        Step {
            vertex: self.start,
            edge: None,
            parent: NO_PARENT,
            depth: 0,
            weight: 0.0,
        }
    }

    fn row(step: &Step, weighted: bool) -> TraversalRow {
        TraversalRow {
            vertex: step.vertex,
            edge: step.edge,
            depth: step.depth as usize,
            weight: if weighted {
                step.weight
            } else {
                step.depth as f64
            },
        }
    }

    // ---- depth-first ----

    fn next_dfs<S: EdgeSource + ?Sized, C: StepCheck + ?Sized>(
        &mut self,
        source: &S,
        check: &mut C,
    ) -> Result<Option<TraversalRow>> {
        if !self.started {
            self.started = true;
            self.grow();
            let start = self.start_step();
            if let Some(row) = self.visit_dfs(source, check, start)? {
                return Ok(Some(row));
            }
        }
        loop {
            let Some(top) = self.frames.last_mut() else {
                return Ok(None);
            };
            if top.unvisited_end == top.children_start {
                let frame = *top;
                self.frames.pop();
                self.children.truncate(frame.children_start as usize);
                self.on_path[frame.step.vertex.index()] -= 1;
                continue;
            }
            // ArangoDB's depth-first search keeps a stack of steps and pushes a vertex's
            // edges in index order, so it visits them last edge first (its documented
            // traversalGraph example yields G J K H I B E F C D); so do we.
            top.unvisited_end -= 1;
            let child = self.children[top.unvisited_end as usize];
            let step = Step {
                vertex: child.vertex,
                edge: Some(child.edge),
                parent: NO_PARENT,
                depth: top.step.depth + 1,
                weight: top.step.weight + child.weight,
            };
            if let Some(row) = self.visit_dfs(source, check, step)? {
                return Ok(Some(row));
            }
        }
    }

    fn visit_dfs<S: EdgeSource + ?Sized, C: StepCheck + ?Sized>(
        &mut self,
        source: &S,
        check: &mut C,
        step: Step,
    ) -> Result<Option<TraversalRow>> {
        if step.depth > 0 {
            if self.options.unique_vertices == UniqueVertices::Path
                && self.on_path[step.vertex.index()] > 0
            {
                return Ok(None);
            }
            if self.options.unique_vertices == UniqueVertices::None
                && self.options.unique_edges == UniqueEdges::Path
                && step.depth > 1
                && self.frames.iter().any(|f| f.step.edge == step.edge)
            {
                return Ok(None);
            }
            if !self.allowed_collection(&step) {
                return Ok(None);
            }
        }
        let view = StepView {
            vertex: self.interner.name(step.vertex),
            edge: step.edge,
            depth: step.depth as usize,
            weight: step.weight,
            path: PathRef::Stack {
                frames: &self.frames,
                candidate: step,
            },
            interner: &self.interner,
        };
        let verdict = check.check(&view)?;
        let depth = step.depth as usize;
        let emit = verdict.emit && depth >= self.options.min_depth;
        let expand = verdict.expand && depth < self.options.max_depth;
        if !emit && !expand {
            return Ok(None);
        }
        let children_start = self.children.len() as u32;
        if expand {
            self.load_children(source, step.vertex, step.depth)?;
        }
        self.on_path[step.vertex.index()] += 1;
        self.frames.push(Frame {
            step,
            children_start,
            unvisited_end: self.children.len() as u32,
        });
        if emit {
            self.last = LastRow::Stack;
            return Ok(Some(Self::row(&step, false)));
        }
        Ok(None)
    }

    // ---- breadth-first and weighted ----

    fn enqueue(&mut self, step: Step) -> Result<()> {
        let index = self.arena.len();
        if index >= NO_PARENT as usize {
            return Err(Error::with_message(
                ErrorCode::ResourceLimit,
                "graph traversal reached too many paths",
            ));
        }
        self.arena.push(step);
        match self.options.order {
            Order::Weighted => {
                self.seq += 1;
                self.heap.push(HeapItem {
                    weight: step.weight,
                    seq: self.seq,
                    index: index as u32,
                });
            }
            _ => self.fifo.push_back(index as u32),
        }
        Ok(())
    }

    fn dequeue(&mut self) -> Option<u32> {
        match self.options.order {
            Order::Weighted => self.heap.pop().map(|item| item.index),
            _ => self.fifo.pop_front(),
        }
    }

    /// Whether the path ending in arena step `parent` extended by (`vertex`, `edge`) breaks
    /// path uniqueness.
    fn violates_path_uniqueness(&self, parent: u32, vertex: VertexId, edge: EdgeHandle) -> bool {
        let by_vertex = match self.options.unique_vertices {
            UniqueVertices::Path => true,
            UniqueVertices::None if self.options.unique_edges == UniqueEdges::Path => false,
            _ => return false,
        };
        let mut index = parent;
        while index != NO_PARENT {
            let step = &self.arena[index as usize];
            if by_vertex {
                if step.vertex == vertex {
                    return true;
                }
            } else if step.edge == Some(edge) {
                return true;
            }
            index = step.parent;
        }
        false
    }

    fn next_queued<S: EdgeSource + ?Sized, C: StepCheck + ?Sized>(
        &mut self,
        source: &S,
        check: &mut C,
    ) -> Result<Option<TraversalRow>> {
        let weighted = self.options.order == Order::Weighted;
        let global = self.options.unique_vertices == UniqueVertices::Global;
        if !self.started {
            self.started = true;
            self.grow();
            let start = self.start_step();
            self.enqueue(start)?;
        }
        while let Some(index) = self.dequeue() {
            let step = self.arena[index as usize];
            if global && self.visited[step.vertex.index()] {
                continue;
            }
            if !self.allowed_collection(&step) {
                continue;
            }
            let view = StepView {
                vertex: self.interner.name(step.vertex),
                edge: step.edge,
                depth: step.depth as usize,
                weight: step.weight,
                path: PathRef::Arena {
                    steps: &self.arena,
                    index,
                },
                interner: &self.interner,
            };
            let verdict = check.check(&view)?;
            if !verdict.emit && !verdict.expand {
                continue;
            }
            if global {
                self.visited[step.vertex.index()] = true;
            }
            let depth = step.depth as usize;
            let emit = verdict.emit && depth >= self.options.min_depth;
            let expand = verdict.expand && depth < self.options.max_depth;
            if expand {
                self.children.clear();
                self.load_children(source, step.vertex, step.depth)?;
                for i in 0..self.children.len() {
                    let child = self.children[i];
                    if global && self.visited[child.vertex.index()] {
                        continue;
                    }
                    if self.violates_path_uniqueness(index, child.vertex, child.edge) {
                        continue;
                    }
                    self.enqueue(Step {
                        vertex: child.vertex,
                        edge: Some(child.edge),
                        parent: index,
                        depth: step.depth + 1,
                        weight: step.weight + child.weight,
                    })?;
                }
                self.budget.memory(self.memory_bytes())?;
            }
            if emit {
                self.last = LastRow::Arena(index);
                return Ok(Some(Self::row(&step, weighted)));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Direction, MemoryGraph};

    /// ArangoDB's "traversalGraph" example: A→B→C→D, B→E→F, A→G→H→I, G→J→K.
    fn circles() -> MemoryGraph {
        let mut g = MemoryGraph::new();
        for (i, (f, t)) in [
            ("A", "B"),
            ("B", "C"),
            ("C", "D"),
            ("B", "E"),
            ("E", "F"),
            ("A", "G"),
            ("G", "H"),
            ("H", "I"),
            ("G", "J"),
            ("J", "K"),
        ]
        .iter()
        .enumerate()
        {
            g.add_edge(
                "edges",
                &format!("edges/{i}"),
                &format!("circles/{f}"),
                &format!("circles/{t}"),
                Some((i + 1) as f64),
            );
        }
        g
    }

    fn keys<S: EdgeSource, C: StepCheck>(t: &mut Traversal<S, C>) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(row) = t.next_row().unwrap() {
            out.push(
                t.vertex_name(row.vertex)
                    .trim_start_matches("circles/")
                    .to_string(),
            );
        }
        out
    }

    fn run(g: &MemoryGraph, dir: Direction, options: TraversalOptions) -> Vec<String> {
        let mut t = Traversal::new(g.source(dir, 1.0), "circles/A", options, AcceptAll).unwrap();
        keys(&mut t)
    }

    #[test]
    fn dfs_matches_arangodb_documentation_order() {
        // ArangoDB 3.10's generated example output for
        // `FOR v IN 1..3 OUTBOUND 'circles/A' GRAPH 'traversalGraph' RETURN v._key`.
        let g = circles();
        let options = TraversalOptions {
            min_depth: 1,
            max_depth: 3,
            ..Default::default()
        };
        assert_eq!(
            run(&g, Direction::Outbound, options),
            ["G", "J", "K", "H", "I", "B", "E", "F", "C", "D"]
        );
    }

    #[test]
    fn bfs_is_level_by_level_and_min_depth_hides_shallow_levels() {
        let g = circles();
        let options = TraversalOptions {
            min_depth: 2,
            max_depth: 3,
            order: Order::Bfs,
            ..Default::default()
        };
        assert_eq!(
            run(&g, Direction::Outbound, options),
            ["C", "E", "H", "J", "D", "F", "I", "K"]
        );
    }

    #[test]
    fn depth_zero_emits_start_and_inbound_walks_backwards() {
        let g = circles();
        let mut t = Traversal::new(
            g.source(Direction::Inbound, 1.0),
            "circles/D",
            TraversalOptions {
                min_depth: 0,
                max_depth: 5,
                ..Default::default()
            },
            AcceptAll,
        )
        .unwrap();
        let mut last_path = None;
        let mut out = Vec::new();
        while let Some(row) = t.next_row().unwrap() {
            out.push(t.vertex_name(row.vertex).to_string());
            last_path = t.current_path();
        }
        assert_eq!(out, ["circles/D", "circles/C", "circles/B", "circles/A"]);
        let path = last_path.unwrap();
        assert_eq!(
            path.vertices,
            ["circles/D", "circles/C", "circles/B", "circles/A"]
        );
        assert_eq!(path.edges, [EdgeHandle(2), EdgeHandle(1), EdgeHandle(0)]);
        assert!(t.current_path().is_none());
    }

    #[test]
    fn prune_emits_but_stops_and_filter_skips_but_continues() {
        let g = circles();
        let options = TraversalOptions {
            min_depth: 1,
            max_depth: 3,
            ..Default::default()
        };
        let mut t = Traversal::new(
            g.source(Direction::Outbound, 1.0),
            "circles/A",
            options.clone(),
            |step: &StepView<'_>| {
                Ok(match step.vertex {
                    "circles/B" => Verdict::PRUNE,
                    "circles/H" => Verdict::FILTER,
                    "circles/J" => Verdict::FILTER_AND_PRUNE,
                    _ => Verdict::TAKE,
                })
            },
        )
        .unwrap();
        assert_eq!(keys(&mut t), ["G", "I", "B"]);
    }

    #[test]
    fn step_view_exposes_the_path() {
        let g = circles();
        let mut seen = Vec::new();
        for order in [Order::Dfs, Order::Bfs, Order::Weighted] {
            let mut t = Traversal::new(
                g.source(Direction::Outbound, 1.0),
                "circles/A",
                TraversalOptions {
                    min_depth: 3,
                    max_depth: 3,
                    order,
                    ..Default::default()
                },
                |step: &StepView<'_>| {
                    if step.vertex == "circles/K" {
                        seen.push((
                            step.path_vertex(0).unwrap().to_string(),
                            step.path_vertex(2).unwrap().to_string(),
                            step.path_edge(2),
                            step.path_vertex(4).is_none(),
                            step.to_path().vertices.len(),
                        ));
                    }
                    Ok(Verdict::TAKE)
                },
            )
            .unwrap();
            while t.next_row().unwrap().is_some() {}
        }
        assert_eq!(seen.len(), 3);
        for s in seen {
            assert_eq!(
                s,
                (
                    "circles/A".to_string(),
                    "circles/J".to_string(),
                    Some(EdgeHandle(9)),
                    true,
                    4
                )
            );
        }
    }

    #[test]
    fn weighted_order_and_global_uniqueness() {
        let mut g = MemoryGraph::new();
        g.add_edge("e", "e/0", "v/a", "v/b", Some(5.0));
        g.add_edge("e", "e/1", "v/a", "v/c", Some(1.0));
        g.add_edge("e", "e/2", "v/c", "v/b", Some(1.0));
        let mut t = Traversal::new(
            g.source(Direction::Outbound, 1.0),
            "v/a",
            TraversalOptions {
                min_depth: 1,
                max_depth: 5,
                order: Order::Weighted,
                unique_vertices: UniqueVertices::Global,
                ..Default::default()
            },
            AcceptAll,
        )
        .unwrap();
        let mut rows = Vec::new();
        let mut weights = Vec::new();
        while let Some(row) = t.next_row().unwrap() {
            rows.push((t.vertex_name(row.vertex).to_string(), row.weight));
            weights = t.current_path().unwrap().weights;
        }
        assert_eq!(rows, [("v/c".to_string(), 1.0), ("v/b".to_string(), 2.0)]);
        assert_eq!(weights, vec![0.0, 1.0, 2.0]);
    }

    #[test]
    fn negative_weights_abort_weighted_traversals() {
        let mut g = MemoryGraph::new();
        g.add_edge("e", "e/0", "v/a", "v/b", Some(-1.0));
        let mut t = Traversal::new(
            g.source(Direction::Outbound, 1.0),
            "v/a",
            TraversalOptions {
                order: Order::Weighted,
                ..Default::default()
            },
            AcceptAll,
        )
        .unwrap();
        assert_eq!(
            t.next_row().unwrap_err().code,
            ErrorCode::GraphNegativeEdgeWeight
        );
    }

    #[test]
    fn bad_options_and_limits() {
        let g = circles();
        let err = Traversal::new(
            g.source(Direction::Outbound, 1.0),
            "circles/A",
            TraversalOptions {
                unique_vertices: UniqueVertices::Global,
                ..Default::default()
            },
            AcceptAll,
        )
        .err()
        .unwrap();
        assert_eq!(err.code, ErrorCode::BadParameter);

        // A cycle with no uniqueness runs into the edge budget instead of running away.
        let mut cyc = MemoryGraph::new();
        cyc.add_edge("e", "e/0", "v/a", "v/b", None);
        cyc.add_edge("e", "e/1", "v/b", "v/a", None);
        let mut t = Traversal::new(
            cyc.source(Direction::Outbound, 1.0),
            "v/a",
            TraversalOptions {
                min_depth: 1,
                max_depth: 1000,
                unique_edges: UniqueEdges::None,
                limits: Limits {
                    max_edges_visited: 100,
                    ..Limits::default()
                },
                ..Default::default()
            },
            AcceptAll,
        )
        .unwrap();
        let err = loop {
            match t.next_row() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("must hit the limit"),
                Err(e) => break e,
            }
        };
        assert_eq!(err.code, ErrorCode::ResourceLimit);

        // min > max: nothing.
        assert!(run(
            &g,
            Direction::Outbound,
            TraversalOptions {
                min_depth: 3,
                max_depth: 2,
                ..Default::default()
            }
        )
        .is_empty());
    }

    #[test]
    fn restart_reuses_the_traversal() {
        let g = circles();
        for order in [Order::Dfs, Order::Bfs, Order::Weighted] {
            let options = TraversalOptions {
                min_depth: 0,
                max_depth: 3,
                order,
                ..Default::default()
            };
            let mut t = Traversal::new(
                g.source(Direction::Any, 1.0),
                "circles/A",
                options.clone(),
                AcceptAll,
            )
            .unwrap();
            let first = keys(&mut t);
            t.restart("circles/G");
            let second = keys(&mut t);
            let mut fresh = Traversal::new(
                g.source(Direction::Any, 1.0),
                "circles/G",
                options,
                AcceptAll,
            )
            .unwrap();
            assert_eq!(second, keys(&mut fresh));
            assert_ne!(first, second);
            t.restart("circles/A");
            assert_eq!(keys(&mut t), first);
        }
    }

    /// The benchmark's neighbors2: distinct vertices at depth 1..2, start excluded even when
    /// a cycle leads back to it.
    #[test]
    fn neighbors2_with_global_uniqueness_is_distinct_and_excludes_the_start() {
        let mut g = MemoryGraph::new();
        for (i, (f, t)) in [
            ("s", "a"),
            ("s", "b"),
            ("a", "b"),
            ("a", "s"),
            ("b", "c"),
            ("a", "c"),
        ]
        .iter()
        .enumerate()
        {
            g.add_edge(
                "r",
                &format!("r/{i}"),
                &format!("p/{f}"),
                &format!("p/{t}"),
                None,
            );
        }
        let mut t = Traversal::new(
            g.source(Direction::Outbound, 1.0),
            "p/s",
            TraversalOptions {
                min_depth: 1,
                max_depth: 2,
                order: Order::Bfs,
                unique_vertices: UniqueVertices::Global,
                ..Default::default()
            },
            AcceptAll,
        )
        .unwrap();
        let mut out = Vec::new();
        while let Some(row) = t.next_row().unwrap() {
            out.push((t.vertex_name(row.vertex).to_string(), row.depth));
        }
        assert_eq!(
            out,
            [
                ("p/a".to_string(), 1),
                ("p/b".to_string(), 1),
                ("p/c".to_string(), 2)
            ]
        );
    }

    /// The executor picks sources and checks at run time: a `&dyn EdgeSource` and a boxed
    /// closure must work.
    #[test]
    fn dynamic_source_and_boxed_check() {
        let g = circles();
        let source = g.source(Direction::Outbound, 1.0);
        let dyn_source: &dyn EdgeSource = &source;
        type BoxedCheck = Box<dyn FnMut(&StepView<'_>) -> Result<Verdict>>;
        let check: BoxedCheck = Box::new(|step: &StepView<'_>| {
            Ok(if step.vertex == "circles/B" {
                Verdict::FILTER_AND_PRUNE
            } else {
                Verdict::TAKE
            })
        });
        let mut t = Traversal::new(
            dyn_source,
            "circles/A",
            TraversalOptions {
                min_depth: 1,
                max_depth: 3,
                order: Order::Bfs,
                ..Default::default()
            },
            check,
        )
        .unwrap();
        assert_eq!(keys(&mut t), ["G", "H", "J", "I", "K"]);
    }

    #[test]
    fn option_values_parse() {
        assert_eq!(Order::parse("weighted"), Some(Order::Weighted));
        assert_eq!(Order::parse("BFS"), None);
        assert_eq!(
            UniqueVertices::parse("global"),
            Some(UniqueVertices::Global)
        );
        assert_eq!(UniqueVertices::parse("all"), None);
        assert_eq!(UniqueEdges::parse("path"), Some(UniqueEdges::Path));
        assert_eq!(UniqueEdges::parse("global"), None);
    }

    #[test]
    fn vertex_collection_restriction() {
        let mut g = MemoryGraph::new();
        g.add_edge("e", "e/0", "a/1", "b/1", None);
        g.add_edge("e", "e/1", "a/1", "a/2", None);
        g.add_edge("e", "e/2", "b/1", "a/3", None);
        let mut t = Traversal::new(
            g.source(Direction::Outbound, 1.0),
            "a/1",
            TraversalOptions {
                min_depth: 0,
                max_depth: 3,
                vertex_collections: vec!["a".into()],
                ..Default::default()
            },
            AcceptAll,
        )
        .unwrap();
        let mut out = Vec::new();
        while let Some(row) = t.next_row().unwrap() {
            out.push(t.vertex_name(row.vertex).to_string());
        }
        assert_eq!(out, ["a/1", "a/2"]);
    }
}
