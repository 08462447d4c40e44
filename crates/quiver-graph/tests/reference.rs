//! Property tests: every traversal option combination and every path search, on small random
//! graphs, against brute-force reference implementations written here (explicit path lists,
//! exhaustive DFS enumeration, plain BFS, plain Dijkstra).

use std::collections::{HashSet, VecDeque};

use proptest::prelude::*;
use quiver_errors::ErrorCode;
use quiver_graph::{
    all_shortest_paths, shortest_path, Direction, EdgeHandle, EdgeQuery, EdgeSource, KPaths,
    KShortestPaths, Limits, MemoryGraph, Order, Path, StepView, Traversal, TraversalOptions,
    UniqueEdges, UniqueVertices, Verdict,
};

#[derive(Clone, Debug)]
struct GraphSpec {
    vertices: usize,
    /// (from, to, weight, collection)
    edges: Vec<(usize, usize, u8, bool)>,
}

fn vertex_name(i: usize) -> String {
    // Two vertex collections so that `vertexCollections` restrictions matter.
    if i % 3 == 2 {
        format!("b/{i}")
    } else {
        format!("a/{i}")
    }
}

fn build(spec: &GraphSpec) -> MemoryGraph {
    let mut g = MemoryGraph::new();
    for v in 0..spec.vertices {
        g.add_vertex(&vertex_name(v));
    }
    for (i, (f, t, w, second)) in spec.edges.iter().enumerate() {
        let coll = if *second { "e2" } else { "e1" };
        g.add_edge(
            coll,
            &format!("{coll}/{i}"),
            &vertex_name(*f),
            &vertex_name(*t),
            Some(*w as f64),
        );
    }
    g
}

fn graph_strategy() -> impl Strategy<Value = GraphSpec> {
    (1usize..7).prop_flat_map(|n| {
        prop::collection::vec((0..n, 0..n, 1u8..4, any::<bool>()), 0..14)
            .prop_map(move |edges| GraphSpec { vertices: n, edges })
    })
}

/// All edges of `v` as the search sees them.
fn neighbors<S: EdgeSource>(
    source: &S,
    v: &str,
    backward: bool,
    weighted: bool,
) -> Vec<(EdgeHandle, String, f64)> {
    let mut out = Vec::new();
    source
        .for_each_edge(
            v,
            &EdgeQuery {
                backward,
                depth: 0,
                need_weight: weighted,
            },
            &mut |e| {
                out.push((e.edge, e.other.to_string(), e.weight));
                Ok(())
            },
        )
        .unwrap();
    out
}

// ---------------------------------------------------------------- traversal reference

#[derive(Clone, Debug, PartialEq)]
struct RefStep {
    vertex: String,
    edge: Option<EdgeHandle>,
    weight: f64,
}

type RefPath = Vec<RefStep>;

/// The PRUNE/filter stand-in: a deterministic function of the whole path.
fn verdict_for(seed: u64, vertices: &[String], edges: &[EdgeHandle]) -> Verdict {
    let mut h = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for v in vertices {
        for b in v.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
        }
        h = h.rotate_left(7);
    }
    for e in edges {
        h = (h ^ e.0).wrapping_mul(0x100_0000_01b3);
    }
    match (h >> 17) % 9 {
        0 => Verdict::PRUNE,
        1 => Verdict::FILTER,
        2 => Verdict::FILTER_AND_PRUNE,
        _ => Verdict::TAKE,
    }
}

fn ref_verdict(seed: Option<u64>, path: &RefPath) -> Verdict {
    match seed {
        None => Verdict::TAKE,
        Some(seed) => {
            let vertices: Vec<String> = path.iter().map(|s| s.vertex.clone()).collect();
            let edges: Vec<EdgeHandle> = path.iter().filter_map(|s| s.edge).collect();
            verdict_for(seed, &vertices, &edges)
        }
    }
}

struct RefOptions {
    min: usize,
    max: usize,
    order: Order,
    uv: UniqueVertices,
    ue: UniqueEdges,
    restrict: Option<String>,
    seed: Option<u64>,
}

/// Path uniqueness and collection restriction: `true` when the path may be considered.
fn ref_path_ok(path: &RefPath, o: &RefOptions) -> bool {
    let last = path.last().unwrap();
    if path.len() > 1 {
        if let Some(c) = &o.restrict {
            if !last.vertex.starts_with(&format!("{c}/")) {
                return false;
            }
        }
    }
    match o.uv {
        UniqueVertices::Path => {
            let set: HashSet<&str> = path.iter().map(|s| s.vertex.as_str()).collect();
            if set.len() != path.len() {
                return false;
            }
        }
        UniqueVertices::None if o.ue == UniqueEdges::Path => {
            let edges: Vec<_> = path.iter().filter_map(|s| s.edge).collect();
            let set: HashSet<_> = edges.iter().collect();
            if set.len() != edges.len() {
                return false;
            }
        }
        _ => {}
    }
    true
}

fn ref_dfs<S: EdgeSource>(source: &S, path: &mut RefPath, o: &RefOptions, out: &mut Vec<RefPath>) {
    if !ref_path_ok(path, o) {
        return;
    }
    let verdict = ref_verdict(o.seed, path);
    let depth = path.len() - 1;
    if verdict.emit && depth >= o.min {
        out.push(path.clone());
    }
    if verdict.expand && depth < o.max {
        let last = path.last().unwrap().clone();
        // ArangoDB's depth-first order: a vertex's edges last one first.
        for (e, other, _) in neighbors(source, &last.vertex, false, false)
            .into_iter()
            .rev()
        {
            path.push(RefStep {
                vertex: other,
                edge: Some(e),
                weight: last.weight + 1.0,
            });
            ref_dfs(source, path, o, out);
            path.pop();
        }
    }
}

/// bfs and weighted: a queue of explicit paths; weighted pops the lightest (first queued
/// among equals).
fn ref_queued<S: EdgeSource>(source: &S, start: &str, o: &RefOptions) -> Vec<RefPath> {
    let weighted = o.order == Order::Weighted;
    let mut queue: VecDeque<RefPath> = VecDeque::new();
    queue.push_back(vec![RefStep {
        vertex: start.to_string(),
        edge: None,
        weight: 0.0,
    }]);
    let mut visited: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    loop {
        let path = if weighted {
            let mut best = None;
            for (i, p) in queue.iter().enumerate() {
                let w = p.last().unwrap().weight;
                match best {
                    Some((_, bw)) if bw <= w => {}
                    _ => best = Some((i, w)),
                }
            }
            match best {
                Some((i, _)) => queue.remove(i).unwrap(),
                None => break,
            }
        } else {
            match queue.pop_front() {
                Some(p) => p,
                None => break,
            }
        };
        if !ref_path_ok(&path, o) {
            continue;
        }
        let verdict = ref_verdict(o.seed, &path);
        if !verdict.emit && !verdict.expand {
            continue;
        }
        let last = path.last().unwrap().clone();
        if o.uv == UniqueVertices::Global && !visited.insert(last.vertex.clone()) {
            continue;
        }
        let depth = path.len() - 1;
        if verdict.emit && depth >= o.min {
            out.push(path.clone());
        }
        if verdict.expand && depth < o.max {
            for (e, other, w) in neighbors(source, &last.vertex, false, weighted) {
                let mut next = path.clone();
                next.push(RefStep {
                    vertex: other,
                    edge: Some(e),
                    weight: last.weight + if weighted { w } else { 1.0 },
                });
                queue.push_back(next);
            }
        }
    }
    out
}

fn run_traversal<S: EdgeSource>(
    source: S,
    start: &str,
    o: &RefOptions,
) -> Result<Vec<RefPath>, quiver_errors::Error> {
    let options = TraversalOptions {
        min_depth: o.min,
        max_depth: o.max,
        order: o.order,
        unique_vertices: o.uv,
        unique_edges: o.ue,
        vertex_collections: o.restrict.iter().cloned().collect(),
        limits: Limits::default(),
    };
    let seed = o.seed;
    let check = move |step: &StepView<'_>| -> quiver_errors::Result<Verdict> {
        let Some(seed) = seed else {
            return Ok(Verdict::TAKE);
        };
        // Exercise both the indexed accessors and the materialized path.
        let path = step.to_path();
        let by_index: Vec<String> = (0..=step.depth)
            .map(|i| step.path_vertex(i).unwrap().to_string())
            .collect();
        assert_eq!(path.vertices, by_index);
        let edges: Vec<EdgeHandle> = (0..step.depth)
            .map(|i| step.path_edge(i).unwrap())
            .collect();
        assert_eq!(path.edges, edges);
        assert_eq!(path.vertices.last().map(String::as_str), Some(step.vertex));
        Ok(verdict_for(seed, &path.vertices, &path.edges))
    };
    let mut t = Traversal::new(source, start, options, check)?;
    let mut out = Vec::new();
    while let Some(row) = t.next_row()? {
        let path: Path = t.current_path().unwrap();
        assert_eq!(path.vertices.last().unwrap(), t.vertex_name(row.vertex));
        assert_eq!(path.edges.last().copied(), row.edge);
        assert_eq!(path.edges.len(), row.depth);
        let weighted = o.order == Order::Weighted;
        let steps: Vec<RefStep> = path
            .vertices
            .iter()
            .enumerate()
            .map(|(i, v)| RefStep {
                vertex: v.clone(),
                edge: if i == 0 {
                    None
                } else {
                    Some(path.edges[i - 1])
                },
                weight: if weighted { path.weights[i] } else { i as f64 },
            })
            .collect();
        assert_eq!(steps.last().unwrap().weight, row.weight);
        out.push(steps);
    }
    Ok(out)
}

fn check_all_traversal_combinations(spec: &GraphSpec, start: usize, seed: u64) {
    let g = build(spec);
    let start = vertex_name(start);
    for direction in [Direction::Outbound, Direction::Inbound, Direction::Any] {
        for mixed in [false, true] {
            let make = || {
                let s = g.source(direction, 1.0);
                if mixed {
                    s.with_collections(&[("e1", None), ("e2", Some(Direction::Any))])
                        .unwrap_or_else(|_| g.source(direction, 1.0))
                } else {
                    s
                }
            };
            for order in [Order::Dfs, Order::Bfs, Order::Weighted] {
                for uv in [
                    UniqueVertices::None,
                    UniqueVertices::Path,
                    UniqueVertices::Global,
                ] {
                    for ue in [UniqueEdges::None, UniqueEdges::Path] {
                        for (min, max) in [(0, 0), (0, 2), (1, 1), (1, 3), (2, 3), (3, 2)] {
                            for restrict in [None, Some("a".to_string())] {
                                for check in [None, Some(seed)] {
                                    let o = RefOptions {
                                        min,
                                        max,
                                        order,
                                        uv,
                                        ue,
                                        restrict: restrict.clone(),
                                        seed: check,
                                    };
                                    let got = run_traversal(make(), &start, &o);
                                    if order == Order::Dfs && uv == UniqueVertices::Global {
                                        assert_eq!(got.unwrap_err().code, ErrorCode::BadParameter);
                                        continue;
                                    }
                                    let got = got.unwrap();
                                    let expected = if min > max {
                                        Vec::new()
                                    } else if order == Order::Dfs {
                                        let mut out = Vec::new();
                                        let mut path = vec![RefStep {
                                            vertex: start.clone(),
                                            edge: None,
                                            weight: 0.0,
                                        }];
                                        ref_dfs(&make(), &mut path, &o, &mut out);
                                        out
                                    } else {
                                        ref_queued(&make(), &start, &o)
                                    };
                                    assert_eq!(
                                        got, expected,
                                        "direction {direction:?} mixed {mixed} order {order:?} \
                                         uv {uv:?} ue {ue:?} {min}..{max} restrict {restrict:?} \
                                         check {check:?}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------- path search references

/// Every simple path from `s` to `t` in DFS order (exhaustive enumeration).
fn all_simple_paths<S: EdgeSource>(
    source: &S,
    s: &str,
    t: &str,
) -> Vec<(Vec<String>, Vec<EdgeHandle>, f64)> {
    fn go<S: EdgeSource>(
        source: &S,
        t: &str,
        vertices: &mut Vec<String>,
        edges: &mut Vec<EdgeHandle>,
        weight: f64,
        out: &mut Vec<(Vec<String>, Vec<EdgeHandle>, f64)>,
    ) {
        let last = vertices.last().unwrap().clone();
        if last == t {
            out.push((vertices.clone(), edges.clone(), weight));
            return;
        }
        for (e, other, w) in neighbors(source, &last, false, true) {
            if vertices.contains(&other) {
                continue;
            }
            vertices.push(other);
            edges.push(e);
            go(source, t, vertices, edges, weight + w, out);
            vertices.pop();
            edges.pop();
        }
    }
    let mut out = Vec::new();
    go(
        source,
        t,
        &mut vec![s.to_string()],
        &mut Vec::new(),
        0.0,
        &mut out,
    );
    out
}

fn bfs_distance<S: EdgeSource>(source: &S, s: &str, t: &str) -> Option<usize> {
    let mut dist = std::collections::HashMap::new();
    dist.insert(s.to_string(), 0usize);
    let mut queue = VecDeque::from([s.to_string()]);
    while let Some(v) = queue.pop_front() {
        let d = dist[&v];
        if v == t {
            return Some(d);
        }
        for (_, other, _) in neighbors(source, &v, false, false) {
            if !dist.contains_key(&other) {
                dist.insert(other.clone(), d + 1);
                queue.push_back(other);
            }
        }
    }
    None
}

fn dijkstra_distance<S: EdgeSource>(source: &S, s: &str, t: &str) -> Option<f64> {
    let mut dist: std::collections::HashMap<String, f64> = std::collections::HashMap::new();
    let mut done: HashSet<String> = HashSet::new();
    dist.insert(s.to_string(), 0.0);
    loop {
        let next = dist
            .iter()
            .filter(|(v, _)| !done.contains(*v))
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(v, d)| (v.clone(), *d));
        let (v, d) = next?;
        if v == t {
            return Some(d);
        }
        done.insert(v.clone());
        for (_, other, w) in neighbors(source, &v, false, true) {
            let nd = d + w;
            if dist.get(&other).is_none_or(|&old| nd < old) {
                dist.insert(other, nd);
            }
        }
    }
}

/// The path really exists in the graph (each edge connects its neighbors in a followed
/// direction) and its weights add up.
fn assert_valid_path<S: EdgeSource>(source: &S, p: &Path, weighted: bool) {
    assert_eq!(p.vertices.len(), p.edges.len() + 1);
    assert_eq!(p.weights.len(), p.vertices.len());
    let mut total = 0.0;
    for i in 0..p.edges.len() {
        let hop = neighbors(source, &p.vertices[i], false, weighted)
            .into_iter()
            .find(|(e, other, _)| *e == p.edges[i] && *other == p.vertices[i + 1]);
        let (_, _, w) = hop.unwrap_or_else(|| panic!("no edge {:?} in {p:?}", p.edges[i]));
        total += if weighted { w } else { 1.0 };
        assert_eq!(p.weights[i + 1], total);
    }
}

fn check_path_searches(spec: &GraphSpec, s: usize, t: usize) {
    let g = build(spec);
    let (s, t) = (vertex_name(s), vertex_name(t));
    for direction in [Direction::Outbound, Direction::Inbound, Direction::Any] {
        let source = g.source(direction, 1.0);
        let simple = all_simple_paths(&source, &s, &t);
        let context = format!("{direction:?} {s} -> {t}");

        // SHORTEST_PATH, unweighted and weighted
        let sp = shortest_path(&source, &s, &t, false, Limits::default()).unwrap();
        assert_eq!(
            sp.as_ref().map(|p| p.len()),
            bfs_distance(&source, &s, &t),
            "{context}"
        );
        if let Some(p) = &sp {
            assert_valid_path(&source, p, false);
            assert_eq!(
                (p.vertices[0].as_str(), p.vertices.last().unwrap().as_str()),
                (s.as_str(), t.as_str())
            );
        }
        let wp = shortest_path(&source, &s, &t, true, Limits::default()).unwrap();
        assert_eq!(
            wp.as_ref().map(|p| p.weight()),
            dijkstra_distance(&source, &s, &t),
            "{context}"
        );
        if let Some(p) = &wp {
            assert_valid_path(&source, p, true);
        }

        // ALL_SHORTEST_PATHS: exactly the simple paths of minimal length
        let mut asp: Vec<_> = all_shortest_paths(&source, &s, &t, Limits::default())
            .unwrap()
            .into_iter()
            .map(|p| {
                assert_valid_path(&source, &p, false);
                (p.vertices, p.edges)
            })
            .collect();
        asp.sort();
        let shortest = simple.iter().map(|p| p.1.len()).min();
        let mut expected: Vec<_> = simple
            .iter()
            .filter(|p| Some(p.1.len()) == shortest)
            .map(|p| (p.0.clone(), p.1.clone()))
            .collect();
        expected.sort();
        assert_eq!(asp, expected, "ALL_SHORTEST_PATHS {context}");

        // K_SHORTEST_PATHS: every simple path exactly once, by non-decreasing weight
        for weighted in [false, true] {
            let mut k = KShortestPaths::new(
                g.source(direction, 1.0),
                &s,
                &t,
                weighted,
                Limits::default(),
            );
            let mut got = Vec::new();
            let mut previous = f64::NEG_INFINITY;
            while let Some(p) = k.next_path().unwrap() {
                assert_valid_path(&source, &p, weighted);
                assert!(p.weight() >= previous, "K_SHORTEST_PATHS order {context}");
                previous = p.weight();
                got.push((p.vertices, p.edges));
                assert!(
                    got.len() <= simple.len(),
                    "K_SHORTEST_PATHS repeats {context}"
                );
            }
            got.sort();
            let mut expected: Vec<_> = simple.iter().map(|p| (p.0.clone(), p.1.clone())).collect();
            expected.sort();
            assert_eq!(
                got, expected,
                "K_SHORTEST_PATHS weighted {weighted} {context}"
            );
        }

        // K_PATHS: the simple paths within min..max, by length, DFS order within a length
        for (min, max) in [(0, 0), (0, 3), (1, 2), (2, 5), (3, 1)] {
            let mut k = KPaths::new(
                g.source(direction, 1.0),
                &s,
                &t,
                min,
                max,
                Limits::default(),
            )
            .unwrap();
            let mut got = Vec::new();
            while let Some(p) = k.next_path().unwrap() {
                assert_valid_path(&source, &p, false);
                got.push((p.vertices, p.edges));
            }
            let mut expected: Vec<_> = simple
                .iter()
                .filter(|p| p.1.len() >= min && p.1.len() <= max)
                .map(|p| (p.0.clone(), p.1.clone()))
                .collect();
            expected.sort_by_key(|p| p.1.len());
            assert_eq!(got, expected, "K_PATHS {min}..{max} {context}");
        }
    }
}

proptest! {
    // Each case checks 2,592 option combinations; 32 random graphs keep the suite fast in
    // debug builds.
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn traversals_match_the_reference(spec in graph_strategy(), start in 0usize..7, seed in any::<u64>()) {
        let start = start % spec.vertices;
        check_all_traversal_combinations(&spec, start, seed);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn path_searches_match_the_reference(spec in graph_strategy(), s in 0usize..7, t in 0usize..7) {
        let (s, t) = (s % spec.vertices, t % spec.vertices);
        check_path_searches(&spec, s, t);
    }
}

#[test]
fn dense_multigraph_with_self_loops() {
    // Parallel edges and self-loops in every direction: a fixed hard case.
    let spec = GraphSpec {
        vertices: 4,
        edges: vec![
            (0, 1, 1, false),
            (0, 1, 2, true),
            (1, 1, 1, false),
            (1, 2, 3, false),
            (2, 0, 1, true),
            (2, 3, 1, false),
            (3, 3, 2, true),
            (1, 3, 3, false),
            (3, 0, 1, false),
        ],
    };
    check_all_traversal_combinations(&spec, 0, 7);
    for s in 0..4 {
        for t in 0..4 {
            check_path_searches(&spec, s, t);
        }
    }
}

/// Tight budgets never change results: a search either gives the unbounded answer (a
/// traversal: a prefix of it, then the error) or fails with `ResourceLimit`.
fn check_budgets(spec: &GraphSpec, s: usize, t: usize, budget: u64) {
    let g = build(spec);
    let (s, t) = (vertex_name(s), vertex_name(t));
    let tight = Limits {
        max_edges_visited: budget,
        ..Limits::default()
    };
    let source = g.source(Direction::Any, 1.0);
    for order in [Order::Dfs, Order::Bfs, Order::Weighted] {
        let options = TraversalOptions {
            min_depth: 0,
            max_depth: 4,
            order,
            unique_edges: UniqueEdges::None,
            ..TraversalOptions::default()
        };
        let collect = |limits: Limits| {
            let mut t = Traversal::new(
                &source,
                &s,
                TraversalOptions {
                    limits,
                    ..options.clone()
                },
                quiver_graph::AcceptAll,
            )
            .unwrap();
            let mut rows = Vec::new();
            loop {
                match t.next_row() {
                    Ok(Some(_)) => rows.push(t.current_path().unwrap()),
                    Ok(None) => return (rows, None),
                    Err(e) => return (rows, Some(e)),
                }
            }
        };
        let (full, none) = collect(Limits::default());
        assert!(none.is_none());
        let (partial, err) = collect(tight);
        match err {
            None => assert_eq!(partial, full),
            Some(e) => {
                assert_eq!(e.code, ErrorCode::ResourceLimit);
                assert!(partial.len() <= full.len());
                assert_eq!(partial[..], full[..partial.len()]);
            }
        }
    }
    let same_or_limit = |a: Result<Option<Path>, quiver_errors::Error>, b: Option<Path>| match a {
        Ok(p) => assert_eq!(p, b),
        Err(e) => assert_eq!(e.code, ErrorCode::ResourceLimit),
    };
    for weighted in [false, true] {
        let full = shortest_path(&source, &s, &t, weighted, Limits::default()).unwrap();
        same_or_limit(shortest_path(&source, &s, &t, weighted, tight), full);
    }
    match all_shortest_paths(&source, &s, &t, tight) {
        Ok(p) => assert_eq!(
            p,
            all_shortest_paths(&source, &s, &t, Limits::default()).unwrap()
        ),
        Err(e) => assert_eq!(e.code, ErrorCode::ResourceLimit),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn budgets_fail_cleanly_and_never_change_results(
        spec in graph_strategy(), s in 0usize..7, t in 0usize..7, budget in 0u64..40,
    ) {
        let (s, t) = (s % spec.vertices, t % spec.vertices);
        check_budgets(&spec, s, t, budget);
    }
}

/// Number of distinct shortest walks (by edge sequence) from `s` to `t`: BFS layers from `s`
/// with path counts summed over every edge into the next layer.
fn count_shortest_paths<S: EdgeSource>(source: &S, s: &str, t: &str) -> (Option<usize>, u128) {
    let mut dist = std::collections::HashMap::new();
    let mut count: std::collections::HashMap<String, u128> = std::collections::HashMap::new();
    dist.insert(s.to_string(), 0usize);
    count.insert(s.to_string(), 1);
    let mut layer = vec![s.to_string()];
    let mut d = 0;
    while !layer.is_empty() {
        if dist.get(t) == Some(&d) {
            return (Some(d), count[t]);
        }
        let mut next = Vec::new();
        for v in &layer {
            let c = count[v];
            for (_, other, _) in neighbors(source, v, false, false) {
                match dist.get(&other) {
                    None => {
                        dist.insert(other.clone(), d + 1);
                        count.insert(other.clone(), c);
                        next.push(other);
                    }
                    Some(&od) if od == d + 1 => *count.get_mut(&other).unwrap() += c,
                    _ => {}
                }
            }
        }
        layer = next;
        d += 1;
    }
    (None, 0)
}

fn check_medium_graph(vertices: usize, edges: &[(usize, usize, u8)], pairs: &[(usize, usize)]) {
    let spec = GraphSpec {
        vertices,
        edges: edges.iter().map(|&(f, t, w)| (f, t, w, false)).collect(),
    };
    let g = build(&spec);
    for direction in [Direction::Outbound, Direction::Any] {
        let source = g.source(direction, 1.0);
        for &(s, t) in pairs {
            let (s, t) = (vertex_name(s % vertices), vertex_name(t % vertices));
            let context = format!("{direction:?} {s} -> {t}");
            let (distance, count) = count_shortest_paths(&source, &s, &t);
            let sp = shortest_path(&source, &s, &t, false, Limits::default()).unwrap();
            assert_eq!(sp.as_ref().map(Path::len), distance, "{context}");
            if let Some(p) = &sp {
                assert_valid_path(&source, p, false);
            }
            let wp = shortest_path(&source, &s, &t, true, Limits::default()).unwrap();
            assert_eq!(
                wp.as_ref().map(Path::weight),
                dijkstra_distance(&source, &s, &t),
                "{context}"
            );
            if count <= 2000 {
                let all = all_shortest_paths(&source, &s, &t, Limits::default()).unwrap();
                assert_eq!(
                    all.len() as u128,
                    count,
                    "ALL_SHORTEST_PATHS count {context}"
                );
                let distinct: HashSet<Vec<EdgeHandle>> =
                    all.iter().map(|p| p.edges.clone()).collect();
                assert_eq!(distinct.len(), all.len(), "duplicates {context}");
                for p in &all {
                    assert_valid_path(&source, p, false);
                    assert_eq!(Some(p.len()), distance);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Larger sparse graphs, where the two BFS frontiers meet after several levels.
    #[test]
    fn medium_graphs_match_plain_bfs_and_dijkstra(
        vertices in 40usize..160,
        edges in prop::collection::vec((0usize..160, 0usize..160, 1u8..6), 60..320),
        pairs in prop::collection::vec((0usize..160, 0usize..160), 6),
    ) {
        let edges: Vec<_> = edges.into_iter().map(|(f, t, w)| (f % vertices, t % vertices, w)).collect();
        check_medium_graph(vertices, &edges, &pairs);
    }
}
