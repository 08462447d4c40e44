//! AQL traversals and path searches on small random graphs, run through the whole engine
//! (parser, planner, optimizer, executor) over quiver-core, compared with brute-force
//! enumerations written here from the semantics in docs/design/graph.md. Seeded, so a
//! failure names the graph and query that reproduce it.

mod support;

use support::CursorJson;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use quiver_aql::QueryService;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

#[derive(Clone, Debug)]
struct Edge {
    key: String,
    coll: usize,
    from: usize,
    to: usize,
    w: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Dir {
    Out,
    In,
    Any,
}

impl Dir {
    fn word(self) -> &'static str {
        match self {
            Dir::Out => "OUTBOUND",
            Dir::In => "INBOUND",
            Dir::Any => "ANY",
        }
    }
}

struct Graph {
    n: usize,
    edges: Vec<Edge>,
}

fn id(v: usize) -> String {
    format!("v/{v}")
}

impl Graph {
    fn random(rng: &mut StdRng) -> Graph {
        let n = rng.gen_range(2..=6);
        let m = rng.gen_range(0..=10);
        let edges = (0..m)
            .map(|i| Edge {
                key: format!("x{i:02}"),
                coll: rng.gen_range(0..2),
                from: rng.gen_range(0..n),
                to: rng.gen_range(0..n),
                w: rng.gen_range(0..4) as f64,
            })
            .collect();
        Graph { n, edges }
    }

    /// The steps from `v` in the query's directions: (edge index, other vertex), in the
    /// order the edge index reports them (collection order, then write order; ANY lists
    /// outbound before inbound and a self-loop once).
    fn steps(&self, v: usize, dirs: &[Dir; 2], backward: bool) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (c, dir) in dirs.iter().enumerate() {
            let dir = match (dir, backward) {
                (Dir::Out, true) => Dir::In,
                (Dir::In, true) => Dir::Out,
                (d, _) => *d,
            };
            if matches!(dir, Dir::Out | Dir::Any) {
                for (i, e) in self.edges.iter().enumerate() {
                    if e.coll == c && e.from == v {
                        out.push((i, e.to));
                    }
                }
            }
            if matches!(dir, Dir::In | Dir::Any) {
                for (i, e) in self.edges.iter().enumerate() {
                    if e.coll == c && e.to == v && !(dir == Dir::Any && e.from == v) {
                        out.push((i, e.from));
                    }
                }
            }
        }
        out
    }

    /// Every walk from `start` with `min..=max` edges that respects the uniqueness options,
    /// as edge-index sequences.
    fn walks(
        &self,
        start: usize,
        dirs: &[Dir; 2],
        min: usize,
        max: usize,
        unique_vertices_path: bool,
        unique_edges_path: bool,
    ) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        let mut stack = vec![(vec![start], Vec::<usize>::new())];
        while let Some((vs, es)) = stack.pop() {
            if es.len() >= min {
                out.push(es.clone());
            }
            if es.len() == max {
                continue;
            }
            let last = *vs.last().unwrap_or(&start);
            for (e, other) in self.steps(last, dirs, false) {
                if unique_vertices_path && vs.contains(&other) {
                    continue;
                }
                if unique_edges_path && es.contains(&e) {
                    continue;
                }
                let mut vs2 = vs.clone();
                vs2.push(other);
                let mut es2 = es.clone();
                es2.push(e);
                stack.push((vs2, es2));
            }
        }
        out
    }

    /// Breadth-first distances from `start`.
    fn distances(&self, start: usize, dirs: &[Dir; 2]) -> Vec<Option<usize>> {
        let mut dist = vec![None; self.n];
        dist[start] = Some(0);
        let mut queue = VecDeque::from([start]);
        while let Some(v) = queue.pop_front() {
            for (_, o) in self.steps(v, dirs, false) {
                if dist[o].is_none() {
                    dist[o] = Some(dist[v].unwrap_or(0) + 1);
                    queue.push_back(o);
                }
            }
        }
        dist
    }

    /// Dijkstra distances by weight.
    fn weighted_distances(&self, start: usize, dirs: &[Dir; 2]) -> Vec<Option<f64>> {
        let mut dist: Vec<Option<f64>> = vec![None; self.n];
        dist[start] = Some(0.0);
        let mut done = vec![false; self.n];
        loop {
            let next = (0..self.n)
                .filter(|&v| !done[v] && dist[v].is_some())
                .min_by(|&a, &b| dist[a].unwrap_or(0.0).total_cmp(&dist[b].unwrap_or(0.0)));
            let Some(v) = next else { break };
            done[v] = true;
            for (e, o) in self.steps(v, dirs, false) {
                let d = dist[v].unwrap_or(0.0) + self.edges[e].w;
                if dist[o].is_none_or(|x| d < x) {
                    dist[o] = Some(d);
                }
            }
        }
        dist
    }

    /// Simple paths (no vertex twice) from `s` to `t` with `min..=max` edges.
    fn simple_paths(
        &self,
        s: usize,
        t: usize,
        dirs: &[Dir; 2],
        min: usize,
        max: usize,
    ) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        let mut stack = vec![(vec![s], Vec::<usize>::new())];
        while let Some((vs, es)) = stack.pop() {
            let last = *vs.last().unwrap_or(&s);
            if last == t {
                if es.len() >= min {
                    out.push(es.clone());
                }
                continue;
            }
            if es.len() == max {
                continue;
            }
            for (e, o) in self.steps(last, dirs, false) {
                if vs.contains(&o) {
                    continue;
                }
                let mut vs2 = vs.clone();
                vs2.push(o);
                let mut es2 = es.clone();
                es2.push(e);
                stack.push((vs2, es2));
            }
        }
        out
    }

    fn keys(&self, path: &[usize]) -> Vec<String> {
        path.iter().map(|&e| self.edges[e].key.clone()).collect()
    }

    /// Where the edges `keys` lead from `s` in the query's directions (None if they do not
    /// form a walk).
    fn end_of(&self, keys: &[String], s: usize, dirs: &[Dir; 2]) -> Option<usize> {
        let mut at = s;
        for k in keys {
            at = self
                .steps(at, dirs, false)
                .into_iter()
                .find(|(e, _)| &self.edges[*e].key == k)
                .map(|(_, o)| o)?;
        }
        Some(at)
    }

    fn is_path(&self, keys: &[String], s: usize, t: usize, dirs: &[Dir; 2]) -> bool {
        self.end_of(keys, s, dirs) == Some(t)
    }
}

struct Db {
    service: QueryService,
    name: String,
}

fn load(core: &Arc<quiver_core::Core>, name: &str, g: &Graph) -> Db {
    core.create_database(name, json!({})).expect("database");
    let db = core.database(name).expect("database");
    let spec = |n: &str, t: u8| {
        quiver_core::CollectionSpec::from_json(&json!({"name": n, "type": t})).expect("spec")
    };
    let v = db.create_collection(spec("v", 2)).expect("v");
    let e = [
        db.create_collection(spec("e0", 3)).expect("e0"),
        db.create_collection(spec("e1", 3)).expect("e1"),
    ];
    let options = quiver_core::InsertOptions::new();
    // Committed writes are visible to the queries; durability does not matter here.
    for i in 0..g.n {
        let _ = v
            .insert(json!({"_key": i.to_string()}), &options)
            .expect("vertex");
    }
    for edge in &g.edges {
        let _ = e[edge.coll]
            .insert(
                json!({"_key": edge.key, "_from": id(edge.from), "_to": id(edge.to), "w": edge.w}),
                &options,
            )
            .expect("edge");
    }
    Db {
        service: QueryService::over_core(core.clone()),
        name: name.to_string(),
    }
}

impl Db {
    fn query(&self, q: &str) -> Vec<Value> {
        let (_, reply) = self
            .service
            .create_cursor_json(
                &self.name,
                support::cursor(&json!({"query": q, "batchSize": 1_000_000})),
            )
            .unwrap_or_else(|e| panic!("{q}: {e}"));
        reply["result"].as_array().cloned().unwrap_or_default()
    }
}

fn sorted(mut v: Vec<Vec<String>>) -> Vec<Vec<String>> {
    v.sort();
    v
}

fn key_lists(rows: &[Value], field: &str) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| {
            r[field]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|k| k.as_str().unwrap_or("?").to_string())
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

#[test]
fn traversals_and_path_searches_match_brute_force() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = quiver_core::CoreOptions::default();
    options.engine.journal_size_default = 1024 * 1024;
    let core = Arc::new(quiver_core::Core::open(dir.path(), options).expect("core"));
    let mut rng = StdRng::seed_from_u64(0x6a0f_2026);
    let dirs_all = [Dir::Out, Dir::In, Dir::Any];
    for round in 0..12 {
        let g = Graph::random(&mut rng);
        let db = load(&core, &format!("ref{round}"), &g);
        for _ in 0..12 {
            let dirs = [dirs_all[rng.gen_range(0..3)], dirs_all[rng.gen_range(0..3)]];
            let start = rng.gen_range(0..g.n);
            let target = rng.gen_range(0..g.n);
            let graph = format!("{} e0, {} e1", dirs[0].word(), dirs[1].word());

            // Traversals with path/none uniqueness, dfs and bfs: the same multiset of paths.
            let min = rng.gen_range(0..=2);
            let max = rng.gen_range(min..=3);
            let uv_path = rng.gen_bool(0.5);
            let ue_path = rng.gen_bool(0.5);
            let order = ["dfs", "bfs"][rng.gen_range(0..2)];
            let q = format!(
                "FOR v, e, p IN {min}..{max} OUTBOUND '{}' {graph} OPTIONS {{order: '{order}', uniqueVertices: '{}', uniqueEdges: '{}'}} RETURN {{v: v._id, es: p.edges[*]._key, last: e._key}}",
                id(start),
                if uv_path { "path" } else { "none" },
                if ue_path { "path" } else { "none" },
            );
            let rows = db.query(&q);
            let expected_walks: Vec<Vec<String>> = g
                .walks(start, &dirs, min, max, uv_path, ue_path)
                .iter()
                .map(|w| g.keys(w))
                .collect();
            let actual = key_lists(&rows, "es");
            assert_eq!(
                sorted(actual.clone()),
                sorted(expected_walks.clone()),
                "{q}"
            );
            for (row, keys) in rows.iter().zip(&actual) {
                // `e` is the last edge, `v` the path's end.
                assert_eq!(row["last"].as_str(), keys.last().map(String::as_str), "{q}");
                let end = g.end_of(keys, start, &dirs).map(id);
                assert_eq!(row["v"].as_str(), end.as_deref(), "{q}");
            }
            if order == "bfs" {
                let lengths: Vec<usize> = actual.iter().map(Vec::len).collect();
                assert!(lengths.windows(2).all(|w| w[0] <= w[1]), "bfs order: {q}");
            }

            // The same traversal reading only `v`: unless edges are compared for uniqueness
            // (vertices "none", edges "path"), its edges are never told apart (anonymous
            // handles), and the ends of the paths must still be the same multiset.
            let q = format!(
                "FOR v IN {min}..{max} OUTBOUND '{}' {graph} OPTIONS {{order: '{order}', uniqueVertices: '{}', uniqueEdges: '{}'}} RETURN v._id",
                id(start),
                if uv_path { "path" } else { "none" },
                if ue_path { "path" } else { "none" },
            );
            let mut ends: Vec<String> = db
                .query(&q)
                .iter()
                .map(|v| v.as_str().unwrap_or("?").to_string())
                .collect();
            ends.sort();
            let mut expected_ends: Vec<String> = expected_walks
                .iter()
                .map(|keys| g.end_of(keys, start, &dirs).map(id).unwrap_or_default())
                .collect();
            expected_ends.sort();
            assert_eq!(ends, expected_ends, "{q}");

            // uniqueVertices global with bfs: each reachable vertex once, at its distance.
            let q = format!(
                "FOR v, e, p IN {min}..{max} OUTBOUND '{}' {graph} OPTIONS {{bfs: true, uniqueVertices: 'global'}} RETURN {{v: v._id, d: LENGTH(p.edges)}}",
                id(start)
            );
            let dist = g.distances(start, &dirs);
            let mut expected: Vec<(String, usize)> = (0..g.n)
                .filter_map(|v| {
                    dist[v]
                        .filter(|d| (min..=max).contains(d))
                        .map(|d| (id(v), d))
                })
                .collect();
            expected.sort();
            let mut actual: Vec<(String, usize)> = db
                .query(&q)
                .iter()
                .map(|r| {
                    (
                        r["v"].as_str().unwrap_or("?").to_string(),
                        r["d"].as_u64().unwrap_or(99) as usize,
                    )
                })
                .collect();
            actual.sort();
            assert_eq!(actual, expected, "{q}");
            // Reading only `v`, the edges are anonymous: the same vertices.
            let q = format!(
                "FOR v IN {min}..{max} OUTBOUND '{}' {graph} OPTIONS {{bfs: true, uniqueVertices: 'global'}} RETURN v._id",
                id(start)
            );
            let mut reached: Vec<String> = db
                .query(&q)
                .iter()
                .map(|v| v.as_str().unwrap_or("?").to_string())
                .collect();
            reached.sort();
            let expected_ids: Vec<String> = expected.iter().map(|(v, _)| v.clone()).collect();
            assert_eq!(reached, expected_ids, "{q}");

            // SHORTEST_PATH, unweighted and weighted: a valid path of the optimal cost.
            let q = format!(
                "FOR v, e IN OUTBOUND SHORTEST_PATH '{}' TO '{}' {graph} RETURN e._key",
                id(start),
                id(target)
            );
            let rows = db.query(&q);
            match dist[target] {
                None => assert!(rows.is_empty(), "{q}"),
                Some(d) => {
                    assert_eq!(rows.len(), d + 1, "{q}");
                    let keys: Vec<String> = rows[1..]
                        .iter()
                        .map(|k| k.as_str().unwrap_or("?").to_string())
                        .collect();
                    assert!(g.is_path(&keys, start, target, &dirs), "{q}");
                }
            }
            let q = format!(
                "FOR p IN OUTBOUND K_SHORTEST_PATHS '{}' TO '{}' {graph} OPTIONS {{weightAttribute: 'w'}} LIMIT 1 RETURN {{es: p.edges[*]._key, w: p.weight}}",
                id(start),
                id(target)
            );
            let rows = db.query(&q);
            match g.weighted_distances(start, &dirs)[target] {
                None => assert!(rows.is_empty(), "{q}"),
                Some(d) => {
                    assert_eq!(rows.len(), 1, "{q}");
                    assert_eq!(rows[0]["w"].as_f64(), Some(d), "{q}");
                    assert!(
                        g.is_path(&key_lists(&rows, "es")[0], start, target, &dirs),
                        "{q}"
                    );
                }
            }

            // K_PATHS and ALL_SHORTEST_PATHS against the enumeration of simple paths.
            let (kmin, kmax) = (rng.gen_range(0..=2), rng.gen_range(2..=4));
            let q = format!(
                "FOR p IN {kmin}..{kmax} OUTBOUND K_PATHS '{}' TO '{}' {graph} RETURN {{es: p.edges[*]._key}}",
                id(start),
                id(target)
            );
            let expected: Vec<Vec<String>> = g
                .simple_paths(start, target, &dirs, kmin, kmax)
                .iter()
                .map(|p| g.keys(p))
                .collect();
            let actual = key_lists(&db.query(&q), "es");
            let lengths: Vec<usize> = actual.iter().map(Vec::len).collect();
            assert!(
                lengths.windows(2).all(|w| w[0] <= w[1]),
                "K_PATHS by length: {q}"
            );
            assert_eq!(sorted(actual), sorted(expected), "{q}");

            let q = format!(
                "FOR p IN OUTBOUND ALL_SHORTEST_PATHS '{}' TO '{}' {graph} RETURN {{es: p.edges[*]._key}}",
                id(start),
                id(target)
            );
            let all = g.simple_paths(start, target, &dirs, 0, g.n);
            let shortest = all.iter().map(Vec::len).min();
            let expected: Vec<Vec<String>> = all
                .iter()
                .filter(|p| Some(p.len()) == shortest)
                .map(|p| g.keys(p))
                .collect();
            assert_eq!(
                sorted(key_lists(&db.query(&q), "es")),
                sorted(expected),
                "{q}"
            );

            // K_SHORTEST_PATHS to exhaustion: every simple path once, by weight.
            let q = format!(
                "FOR p IN OUTBOUND K_SHORTEST_PATHS '{}' TO '{}' {graph} OPTIONS {{weightAttribute: 'w'}} RETURN {{es: p.edges[*]._key, w: p.weight}}",
                id(start),
                id(target)
            );
            let rows = db.query(&q);
            let weights: Vec<f64> = rows
                .iter()
                .map(|r| r["w"].as_f64().unwrap_or(-1.0))
                .collect();
            assert!(weights.windows(2).all(|w| w[0] <= w[1]), "{q}");
            let weight_of: HashMap<String, f64> =
                g.edges.iter().map(|e| (e.key.clone(), e.w)).collect();
            for (r, keys) in rows.iter().zip(key_lists(&rows, "es")) {
                let sum: f64 = keys
                    .iter()
                    .map(|k| weight_of.get(k).copied().unwrap_or(0.0))
                    .sum();
                assert_eq!(r["w"].as_f64(), Some(sum), "{q}");
            }
            let expected: Vec<Vec<String>> = g
                .simple_paths(start, target, &dirs, 0, g.n)
                .iter()
                .map(|p| g.keys(p))
                .collect();
            assert_eq!(sorted(key_lists(&rows, "es")), sorted(expected), "{q}");
        }
    }
}
