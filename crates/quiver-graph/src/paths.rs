//! `K_SHORTEST_PATHS` (Yen's algorithm) and `K_PATHS` (bounded enumeration of simple paths),
//! both lazy: the executor pulls one path at a time, so `LIMIT` stops the work.

use std::collections::BinaryHeap;

use hashbrown::HashSet;

use quiver_errors::Result;

use crate::intern::{Interner, VertexId};
use crate::shortest::{
    bfs, build_path, dijkstra, expand, BfsWorkspace, DijkstraWorkspace, Restrictions, Route,
};
use crate::{Budget, EdgeHandle, EdgeSource, Limits, Path};

struct Candidate {
    weight: f64,
    seq: u64,
    route: Route,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    // Reversed: the lightest, earliest candidate is popped first.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .weight
            .total_cmp(&self.weight)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

fn route_weight(route: &Route) -> f64 {
    route.1.iter().map(|(_, w)| w).sum()
}

/// `K_SHORTEST_PATHS`: loopless paths from start to target in order of increasing weight
/// (number of edges when unweighted), produced one at a time with Yen's algorithm; each
/// spur search is a bidirectional Dijkstra.
pub struct KShortestPaths<S: EdgeSource> {
    source: S,
    state: KShortestPathsState,
}

impl<S: EdgeSource> KShortestPaths<S> {
    /// Prepares the search; nothing is computed before the first [`Self::next_path`].
    pub fn new(
        source: S,
        start: &str,
        target: &str,
        weighted: bool,
        limits: Limits,
    ) -> KShortestPaths<S> {
        KShortestPaths {
            source,
            state: KShortestPathsState::new(start, target, weighted, limits),
        }
    }

    /// The next path, or `None` when there are no more.
    pub fn next_path(&mut self) -> Result<Option<Path>> {
        self.state.next_path(&self.source)
    }
}

/// [`KShortestPaths`] without its source, which is passed to every call instead.
pub struct KShortestPathsState {
    weighted: bool,
    interner: Interner,
    budget: Budget,
    start: VertexId,
    target: VertexId,
    found: Vec<Route>,
    candidates: BinaryHeap<Candidate>,
    seen: HashSet<Vec<EdgeHandle>>,
    seq: u64,
    started: bool,
    done: bool,
    stored_bytes: usize,
    bfs_workspace: BfsWorkspace,
    dijkstra_workspace: DijkstraWorkspace,
}

impl KShortestPathsState {
    /// See [`KShortestPaths::new`].
    pub fn new(start: &str, target: &str, weighted: bool, limits: Limits) -> KShortestPathsState {
        let mut interner = Interner::new();
        let start = interner.intern(start);
        let target = interner.intern(target);
        KShortestPathsState {
            weighted,
            interner,
            budget: Budget::new(limits),
            start,
            target,
            found: Vec::new(),
            candidates: BinaryHeap::new(),
            seen: HashSet::new(),
            seq: 0,
            started: false,
            done: false,
            stored_bytes: 0,
            bfs_workspace: BfsWorkspace::new(),
            dijkstra_workspace: DijkstraWorkspace::new(),
        }
    }

    /// One lightest route from `from` to the target avoiding `restrictions`: breadth-first
    /// when unweighted (cheaper than Dijkstra with unit weights), Dijkstra otherwise.
    fn search<S: EdgeSource + ?Sized>(
        &mut self,
        source: &S,
        from: VertexId,
        restrictions: &Restrictions,
    ) -> Result<Option<Route>> {
        if self.weighted {
            dijkstra(
                source,
                &mut self.interner,
                &mut self.budget,
                &mut self.dijkstra_workspace,
                from,
                self.target,
                true,
                restrictions,
            )
        } else {
            bfs(
                source,
                &mut self.interner,
                &mut self.budget,
                &mut self.bfs_workspace,
                from,
                self.target,
                restrictions,
            )
        }
    }

    fn remember(&mut self, route: &Route) -> Result<bool> {
        let key: Vec<EdgeHandle> = route.1.iter().map(|(e, _)| *e).collect();
        self.stored_bytes += route.0.len() * 40 + 64;
        self.budget
            .memory(self.stored_bytes + self.interner.memory_bytes())?;
        Ok(self.seen.insert(key))
    }

    /// The next path, or `None` when there are no more.
    pub fn next_path<S: EdgeSource + ?Sized>(&mut self, source: &S) -> Result<Option<Path>> {
        if self.done {
            return Ok(None);
        }
        if !self.started {
            self.started = true;
            let first = self.search(source, self.start, &Restrictions::default())?;
            let Some(route) = first else {
                self.done = true;
                return Ok(None);
            };
            self.remember(&route)?;
            let path = build_path(&self.interner, &route.0, &route.1);
            self.found.push(route);
            return Ok(Some(path));
        }
        self.add_spur_candidates(source)?;
        let Some(candidate) = self.candidates.pop() else {
            self.done = true;
            return Ok(None);
        };
        let path = build_path(&self.interner, &candidate.route.0, &candidate.route.1);
        self.found.push(candidate.route);
        Ok(Some(path))
    }

    /// Yen's step: deviations from the last path found at each of its vertices.
    fn add_spur_candidates<S: EdgeSource + ?Sized>(&mut self, source: &S) -> Result<()> {
        let Some(last) = self.found.last().cloned() else {
            return Ok(());
        };
        let (last_vertices, last_steps) = last;
        for i in 0..last_steps.len() {
            let spur = last_vertices[i];
            let root_steps = &last_steps[..i];
            let mut restrictions = Restrictions::default();
            for (vertices, steps) in &self.found {
                if steps.len() > i
                    && steps[..i]
                        .iter()
                        .map(|s| s.0)
                        .eq(root_steps.iter().map(|s| s.0))
                    && vertices[0] == last_vertices[0]
                {
                    restrictions.edges.insert(steps[i].0);
                }
            }
            restrictions
                .vertices
                .extend(last_vertices[..i].iter().copied());
            let spur_route = self.search(source, spur, &restrictions)?;
            if let Some((spur_vertices, spur_steps)) = spur_route {
                let mut vertices = last_vertices[..i].to_vec();
                vertices.extend_from_slice(&spur_vertices);
                let mut steps = root_steps.to_vec();
                steps.extend_from_slice(&spur_steps);
                let route = (vertices, steps);
                if self.remember(&route)? {
                    self.seq += 1;
                    self.candidates.push(Candidate {
                        weight: route_weight(&route),
                        seq: self.seq,
                        route,
                    });
                }
            }
        }
        Ok(())
    }
}

struct KFrame {
    vertex: VertexId,
    edge: Option<EdgeHandle>,
    children_start: usize,
    next: usize,
}

/// `K_PATHS`: every simple path (no vertex twice) from start to target whose number of edges
/// lies in `min..max`, shortest first; within one length in the source's edge order.
pub struct KPaths<S: EdgeSource> {
    source: S,
    state: KPathsState,
}

impl<S: EdgeSource> KPaths<S> {
    /// Prepares the search. Fails with `ResourceLimit` when `max` exceeds the depth limit.
    pub fn new(
        source: S,
        start: &str,
        target: &str,
        min: usize,
        max: usize,
        limits: Limits,
    ) -> Result<KPaths<S>> {
        Ok(KPaths {
            source,
            state: KPathsState::new(start, target, min, max, limits)?,
        })
    }

    /// The next path, or `None` when all were produced.
    pub fn next_path(&mut self) -> Result<Option<Path>> {
        self.state.next_path(&self.source)
    }
}

/// [`KPaths`] without its source, which is passed to every call instead.
pub struct KPathsState {
    interner: Interner,
    budget: Budget,
    start: VertexId,
    target: VertexId,
    min: usize,
    max: usize,
    /// Distance of each vertex to the target (`u32::MAX`: farther than `max`), for pruning.
    to_target: Vec<u32>,
    length: usize,
    frames: Vec<KFrame>,
    children: Vec<(VertexId, EdgeHandle)>,
    on_path: Vec<bool>,
    prepared: bool,
    name_buf: String,
    scratch: Vec<(VertexId, EdgeHandle, f64)>,
}

impl KPathsState {
    /// See [`KPaths::new`].
    pub fn new(
        start: &str,
        target: &str,
        min: usize,
        max: usize,
        limits: Limits,
    ) -> Result<KPathsState> {
        let budget = Budget::new(limits);
        budget.depth(max)?;
        let mut interner = Interner::new();
        let start = interner.intern(start);
        let target = interner.intern(target);
        Ok(KPathsState {
            interner,
            budget,
            start,
            target,
            min,
            max,
            to_target: Vec::new(),
            length: min,
            frames: Vec::new(),
            children: Vec::new(),
            on_path: Vec::new(),
            prepared: false,
            name_buf: String::new(),
            scratch: Vec::new(),
        })
    }

    /// Breadth-first search backwards from the target, up to `max` steps.
    fn prepare<S: EdgeSource + ?Sized>(&mut self, source: &S) -> Result<()> {
        self.to_target = vec![u32::MAX; self.interner.len()];
        self.to_target[self.target.index()] = 0;
        let mut frontier = vec![self.target];
        let mut depth = 0u32;
        while !frontier.is_empty() && (depth as usize) < self.max {
            let mut next = Vec::new();
            for &v in &frontier {
                expand(
                    source,
                    &mut self.interner,
                    &mut self.budget,
                    &mut self.name_buf,
                    v,
                    true,
                    depth as usize,
                    false,
                    &mut self.scratch,
                )?;
                if self.to_target.len() < self.interner.len() {
                    self.to_target.resize(self.interner.len(), u32::MAX);
                }
                for &(u, _, _) in &self.scratch {
                    if self.to_target[u.index()] == u32::MAX {
                        self.to_target[u.index()] = depth + 1;
                        next.push(u);
                    }
                }
            }
            self.budget.memory(
                self.interner.memory_bytes() + self.to_target.capacity() * 4 + next.capacity() * 4,
            )?;
            frontier = next;
            depth += 1;
        }
        self.on_path = vec![false; self.interner.len()];
        Ok(())
    }

    fn distance(&self, v: VertexId) -> usize {
        match self.to_target.get(v.index()) {
            Some(&d) if d != u32::MAX => d as usize,
            _ => usize::MAX / 2,
        }
    }

    fn push_frame<S: EdgeSource + ?Sized>(
        &mut self,
        source: &S,
        vertex: VertexId,
        edge: Option<EdgeHandle>,
    ) -> Result<()> {
        let depth = self.frames.len();
        let children_start = self.children.len();
        if depth < self.length {
            expand(
                source,
                &mut self.interner,
                &mut self.budget,
                &mut self.name_buf,
                vertex,
                false,
                depth,
                false,
                &mut self.scratch,
            )?;
            if self.on_path.len() < self.interner.len() {
                self.on_path.resize(self.interner.len(), false);
            }
            let remaining = self.length - depth - 1;
            for i in 0..self.scratch.len() {
                let (u, e, _) = self.scratch[i];
                // A child is only worth visiting if the target is still reachable in exactly
                // the remaining number of steps; the target itself ends a path.
                let d = self.distance(u);
                if d <= remaining && (u != self.target || remaining == 0) {
                    self.children.push((u, e));
                }
            }
        }
        if self.on_path.len() < self.interner.len() {
            self.on_path.resize(self.interner.len(), false);
        }
        self.on_path[vertex.index()] = true;
        self.frames.push(KFrame {
            vertex,
            edge,
            children_start,
            next: children_start,
        });
        self.budget.memory(
            self.interner.memory_bytes()
                + self.children.capacity() * 16
                + self.frames.capacity() * std::mem::size_of::<KFrame>(),
        )
    }

    fn current_path(&self) -> Path {
        let vertices: Vec<VertexId> = self.frames.iter().map(|f| f.vertex).collect();
        let steps: Vec<(EdgeHandle, f64)> = self
            .frames
            .iter()
            .filter_map(|f| f.edge.map(|e| (e, 1.0)))
            .collect();
        build_path(&self.interner, &vertices, &steps)
    }

    /// The next path, or `None` when all were produced.
    pub fn next_path<S: EdgeSource + ?Sized>(&mut self, source: &S) -> Result<Option<Path>> {
        if !self.prepared {
            self.prepared = true;
            if self.min > self.max {
                self.length = self.max + 1;
                return Ok(None);
            }
            self.prepare(source)?;
        }
        loop {
            if self.frames.is_empty() {
                if self.length > self.max {
                    return Ok(None);
                }
                if self.distance(self.start) > self.length {
                    self.length += 1;
                    continue;
                }
                if self.length == 0 {
                    self.length = 1;
                    if self.start == self.target {
                        self.frames.clear();
                        return Ok(Some(build_path(&self.interner, &[self.start], &[])));
                    }
                    continue;
                }
                self.push_frame(source, self.start, None)?;
            }
            let depth = self.frames.len() - 1;
            let end = self.children.len();
            let Some(top) = self.frames.last_mut() else {
                continue;
            };
            if top.next >= end {
                if let Some(frame) = self.frames.pop() {
                    self.children.truncate(frame.children_start);
                    self.on_path[frame.vertex.index()] = false;
                }
                if self.frames.is_empty() {
                    // The enumeration of this length is complete.
                    self.length += 1;
                }
                continue;
            }
            let (u, e) = self.children[top.next];
            top.next += 1;
            if self.on_path[u.index()] {
                continue;
            }
            if depth + 1 == self.length {
                if u == self.target {
                    let mut path = self.current_path();
                    path.vertices.push(self.interner.name(u).to_string());
                    path.edges.push(e);
                    path.weights.push(self.length as f64);
                    return Ok(Some(path));
                }
                continue;
            }
            self.push_frame(source, u, Some(e))?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Direction, MemoryGraph};

    /// A subset of ArangoDB's kShortestPathsGraph (travel times as weights).
    fn trains() -> MemoryGraph {
        let mut g = MemoryGraph::new();
        let edges = [
            ("Inverness", "Aberdeen", 3.0),
            ("Aberdeen", "Leuchars", 1.5),
            ("Leuchars", "Edinburgh", 1.5),
            ("Edinburgh", "Glasgow", 1.0),
            ("Edinburgh", "York", 3.5),
            ("Glasgow", "Carlisle", 1.0),
            ("Carlisle", "York", 2.5),
            ("Carlisle", "Birmingham", 2.0),
            ("Birmingham", "London", 1.5),
            ("York", "London", 1.8),
            ("Aberdeen", "Inverness", 3.0),
        ];
        for (i, (f, t, w)) in edges.iter().enumerate() {
            g.add_edge(
                "connections",
                &format!("connections/{i}"),
                &format!("places/{f}"),
                &format!("places/{t}"),
                Some(*w),
            );
        }
        g
    }

    fn names(p: &Path) -> Vec<&str> {
        p.vertices
            .iter()
            .map(|v| v.trim_start_matches("places/"))
            .collect()
    }

    #[test]
    fn k_shortest_paths_by_weight_like_the_documentation() {
        let g = trains();
        let mut k = KShortestPaths::new(
            g.source(Direction::Outbound, 1.0),
            "places/Aberdeen",
            "places/London",
            true,
            Limits::default(),
        );
        let p1 = k.next_path().unwrap().unwrap();
        assert_eq!(
            names(&p1),
            ["Aberdeen", "Leuchars", "Edinburgh", "York", "London"]
        );
        assert!((p1.weight() - 8.3).abs() < 1e-9);
        let p2 = k.next_path().unwrap().unwrap();
        assert_eq!(
            names(&p2),
            [
                "Aberdeen",
                "Leuchars",
                "Edinburgh",
                "Glasgow",
                "Carlisle",
                "Birmingham",
                "London"
            ]
        );
        assert!((p2.weight() - 8.5).abs() < 1e-9);
        let mut rest = 0;
        let mut previous = p2.weight();
        while let Some(p) = k.next_path().unwrap() {
            assert!(p.weight() >= previous);
            previous = p.weight();
            rest += 1;
        }
        assert_eq!(rest, 1, "only the detour via Glasgow and York remains");
        assert!(k.next_path().unwrap().is_none());
    }

    #[test]
    fn k_shortest_paths_unweighted_counts_edges_and_handles_no_path() {
        let g = trains();
        let mut k = KShortestPaths::new(
            g.source(Direction::Outbound, 1.0),
            "places/Carlisle",
            "places/London",
            false,
            Limits::default(),
        );
        let lengths: Vec<usize> = std::iter::from_fn(|| k.next_path().unwrap())
            .map(|p| p.len())
            .collect();
        assert_eq!(lengths, [2, 2]);
        let mut none = KShortestPaths::new(
            g.source(Direction::Outbound, 1.0),
            "places/London",
            "places/Carlisle",
            false,
            Limits::default(),
        );
        assert!(none.next_path().unwrap().is_none());
    }

    #[test]
    fn k_paths_enumerates_simple_paths_by_length() {
        let g = trains();
        let mut k = KPaths::new(
            g.source(Direction::Outbound, 1.0),
            "places/Aberdeen",
            "places/London",
            1,
            10,
            Limits::default(),
        )
        .unwrap();
        let mut all = Vec::new();
        while let Some(p) = k.next_path().unwrap() {
            all.push(names(&p).join(","));
        }
        assert_eq!(
            all,
            [
                "Aberdeen,Leuchars,Edinburgh,York,London",
                "Aberdeen,Leuchars,Edinburgh,Glasgow,Carlisle,York,London",
                "Aberdeen,Leuchars,Edinburgh,Glasgow,Carlisle,Birmingham,London",
            ]
        );
        let mut short = KPaths::new(
            g.source(Direction::Outbound, 1.0),
            "places/Aberdeen",
            "places/London",
            1,
            3,
            Limits::default(),
        )
        .unwrap();
        assert!(short.next_path().unwrap().is_none());
        let mut zero = KPaths::new(
            g.source(Direction::Outbound, 1.0),
            "places/York",
            "places/York",
            0,
            3,
            Limits::default(),
        )
        .unwrap();
        assert_eq!(names(&zero.next_path().unwrap().unwrap()), ["York"]);
        assert!(zero.next_path().unwrap().is_none());
        assert!(KPaths::new(
            g.source(Direction::Outbound, 1.0),
            "places/York",
            "places/York",
            0,
            3,
            Limits {
                max_depth: 2,
                ..Limits::default()
            },
        )
        .is_err());
    }
}
