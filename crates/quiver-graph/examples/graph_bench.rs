//! Micro benchmark of the graph algorithms on a generated power-law graph, shaped like the
//! Pokec social network of the ArangoDB benchmark (directed "friendship" edges, skewed
//! degrees): 1-hop and 2-hop neighbors (`FOR v IN 1..2 OUTBOUND … OPTIONS {order: "bfs",
//! uniqueVertices: "global"}`), SHORTEST_PATH between random pairs, and the "hard path" (a
//! pair without connection).
//!
//! Run: `cargo run --release -p quiver-graph --example graph_bench -- [vertices] [edges] [queries] [seed]`
//! (defaults 100000 2000000 1000 42). Deterministic for a given seed.

use std::cell::Cell;
use std::time::{Duration, Instant};

use quiver_errors::Result;
use quiver_graph::{
    shortest_path, AcceptAll, Direction, EdgeQuery, EdgeRef, EdgeSource, KShortestPaths, Limits,
    MemoryGraph, Order, Traversal, TraversalOptions, UniqueVertices,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn arg(args: &[String], i: usize, default: u64) -> u64 {
    args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default)
}

/// A vertex drawn with a power-law (Zipf-like) bias towards low numbers, scrambled so that
/// popular vertices are spread over the key space.
fn skewed(rng: &mut ChaCha8Rng, n: u64, exponent: f64) -> u64 {
    let u: f64 = rng.gen();
    let rank = ((n as f64) * u.powf(exponent)) as u64 % n;
    (rank.wrapping_mul(2_654_435_761)) % n
}

/// Counts the edges the algorithms pull: a load-independent measure of their work.
struct Counting<S> {
    inner: S,
    edges: Cell<u64>,
}

impl<S: EdgeSource> EdgeSource for Counting<S> {
    fn for_each_edge(
        &self,
        vertex: &str,
        query: &EdgeQuery,
        sink: &mut dyn FnMut(EdgeRef<'_>) -> Result<()>,
    ) -> Result<()> {
        self.inner.for_each_edge(vertex, query, &mut |e| {
            self.edges.set(self.edges.get() + 1);
            sink(e)
        })
    }

    fn degree_hint(&self, vertex: &str, query: &EdgeQuery) -> Option<usize> {
        self.inner.degree_hint(vertex, query)
    }
}

/// CPU time this thread has run, from the scheduler's statistics (Linux): unlike wall-clock
/// time it does not grow when other processes take the CPU away.
fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map(Duration::from_nanos)
        .unwrap_or_default()
}

thread_local! {
    static CPU_MARK: Cell<Duration> = const { Cell::new(Duration::ZERO) };
}

fn mark() {
    CPU_MARK.with(|m| m.set(thread_cpu()));
}

fn report(
    name: &str,
    count: usize,
    total: Duration,
    items: u64,
    source: &Counting<impl EdgeSource>,
) {
    let n = count.max(1) as f64;
    let cpu = thread_cpu().saturating_sub(CPU_MARK.with(|m| m.get()));
    let edges = source.edges.replace(0);
    println!(
        "{name:<27} {count:>5} q  wall avg {:>8.4} ms  cpu avg {:>8.4} ms  ({items} results, {} edges/query)",
        total.as_secs_f64() * 1000.0 / n,
        cpu.as_secs_f64() * 1000.0 / n,
        edges / count.max(1) as u64
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let vertices = arg(&args, 1, 100_000);
    let edges = arg(&args, 2, 2_000_000);
    let queries = arg(&args, 3, 1000) as usize;
    let seed = arg(&args, 4, 42);

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let build_start = Instant::now();
    let mut graph = MemoryGraph::new();
    for v in 0..vertices {
        graph.add_vertex(&format!("profiles/P{v}"));
    }
    for i in 0..edges {
        // Senders mildly skewed, receivers strongly skewed: a few very popular profiles.
        let from = skewed(&mut rng, vertices, 1.5);
        let to = skewed(&mut rng, vertices, 2.0);
        graph.add_edge(
            "relations",
            &format!("relations/{i}"),
            &format!("profiles/P{from}"),
            &format!("profiles/P{to}"),
            Some(1.0 + (i % 7) as f64),
        );
    }
    // The hard path target: only outgoing edges, so nothing reaches it.
    graph.add_edge(
        "relations",
        "relations/hard",
        "profiles/Phard",
        "profiles/P1",
        None,
    );
    println!(
        "graph: {} vertices, {} edges, built in {:.1} s",
        graph.vertex_count(),
        graph.edge_count(),
        build_start.elapsed().as_secs_f64()
    );

    let source = Counting {
        inner: graph.source(Direction::Outbound, 1.0),
        edges: Cell::new(0),
    };
    let starts: Vec<String> = (0..queries)
        .map(|_| format!("profiles/P{}", rng.gen_range(0..vertices)))
        .collect();

    for (label, max_depth) in [("neighbors (1..1)", 1), ("neighbors2 (1..2)", 2)] {
        let mut total = Duration::ZERO;
        let mut found = 0u64;
        mark();
        // One traversal object reused for every start vertex, as the executor does for the
        // rows feeding a traversal node.
        let mut t = Traversal::new(
            &source,
            &starts[0],
            TraversalOptions {
                min_depth: 1,
                max_depth,
                order: Order::Bfs,
                unique_vertices: UniqueVertices::Global,
                ..Default::default()
            },
            AcceptAll,
        )
        .expect("valid options");
        let mut ids: Vec<String> = Vec::new();
        for start in &starts {
            let t0 = Instant::now();
            t.restart(start);
            ids.clear();
            while let Some(row) = t.next_row().expect("traversal") {
                ids.push(t.vertex_name(row.vertex).to_string());
            }
            total += t0.elapsed();
            found += ids.len() as u64;
        }
        report(label, starts.len(), total, found, &source);
    }

    let pairs: Vec<(String, String)> = (0..queries)
        .map(|_| {
            (
                format!("profiles/P{}", rng.gen_range(0..vertices)),
                format!("profiles/P{}", rng.gen_range(0..vertices)),
            )
        })
        .collect();
    for (label, weighted) in [("shortest path", false), ("shortest path (weighted)", true)] {
        let mut total = Duration::ZERO;
        let mut length = 0u64;
        let mut connected = 0u64;
        mark();
        for (from, to) in &pairs {
            let t0 = Instant::now();
            let p = shortest_path(&source, from, to, weighted, Limits::default()).expect("search");
            total += t0.elapsed();
            if let Some(p) = p {
                connected += 1;
                length += p.len() as u64;
            }
        }
        report(label, pairs.len(), total, connected, &source);
        println!("{:<28} sum of path lengths {length}", "");
    }

    mark();
    let t0 = Instant::now();
    let hard = shortest_path(
        &source,
        "profiles/P0",
        "profiles/Phard",
        false,
        Limits::default(),
    )
    .expect("search");
    report("hard path", 1, t0.elapsed(), hard.is_some() as u64, &source);

    let k_pairs = &pairs[..pairs.len().min(100)];
    let mut total = Duration::ZERO;
    let mut found = 0u64;
    mark();
    for (from, to) in k_pairs {
        let t0 = Instant::now();
        let mut k = KShortestPaths::new(&source, from, to, false, Limits::default());
        for _ in 0..3 {
            if k.next_path().expect("search").is_none() {
                break;
            }
            found += 1;
        }
        total += t0.elapsed();
    }
    report(
        "k shortest paths (LIMIT 3)",
        k_pairs.len(),
        total,
        found,
        &source,
    );
}
