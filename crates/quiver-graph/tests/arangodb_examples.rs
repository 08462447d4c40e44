//! ArangoDB's documented examples, with the example graphs' data and the results ArangoDB
//! printed for them (generated example outputs of the 3.10 documentation).

use quiver_graph::{
    all_shortest_paths, shortest_path, Direction, KPaths, KShortestPaths, Limits, MemoryGraph,
    Order, Path, Traversal, TraversalOptions,
};

/// `kShortestPathsGraph`, European part, edges in creation order with `travelTime`.
fn k_shortest_paths_graph() -> MemoryGraph {
    let edges = [
        ("Inverness", "Aberdeen", 3.0),
        ("Aberdeen", "Inverness", 2.5),
        ("Aberdeen", "Leuchars", 1.5),
        ("Leuchars", "Aberdeen", 1.0),
        ("Leuchars", "Edinburgh", 1.5),
        ("Edinburgh", "Leuchars", 3.0),
        ("Edinburgh", "Glasgow", 1.0),
        ("Glasgow", "Edinburgh", 1.0),
        ("Edinburgh", "York", 3.5),
        ("York", "Edinburgh", 4.0),
        ("Glasgow", "Carlisle", 1.0),
        ("Carlisle", "Glasgow", 1.0),
        ("Carlisle", "York", 2.5),
        ("York", "Carlisle", 3.5),
        ("Carlisle", "Birmingham", 2.0),
        ("Birmingham", "Carlisle", 1.0),
        ("Birmingham", "London", 1.5),
        ("London", "Birmingham", 2.5),
        ("Leuchars", "StAndrews", 0.2),
        ("StAndrews", "Leuchars", 0.2),
        ("York", "London", 1.8),
        ("London", "York", 2.0),
        ("London", "Brussels", 2.5),
        ("Brussels", "London", 3.5),
        ("Brussels", "Cologne", 2.0),
        ("Cologne", "Brussels", 1.5),
        ("Toronto", "Winnipeg", 36.0),
        ("Winnipeg", "Toronto", 35.0),
    ];
    let mut g = MemoryGraph::new();
    for (i, (from, to, time)) in edges.iter().enumerate() {
        g.add_edge(
            "connections",
            &format!("connections/{}", 63138 + 2 * i),
            &format!("places/{from}"),
            &format!("places/{to}"),
            Some(*time),
        );
    }
    g
}

fn places(p: &Path) -> Vec<&str> {
    p.vertices
        .iter()
        .map(|v| v.trim_start_matches("places/"))
        .collect()
}

/// GRAPHKSP_05_StAndrews_to_Cologne: weighted by travelTime (default weight 15), LIMIT 3.
#[test]
fn k_shortest_paths_weighted_st_andrews_to_cologne() {
    let g = k_shortest_paths_graph();
    let mut k = KShortestPaths::new(
        g.source(Direction::Outbound, 15.0),
        "places/StAndrews",
        "places/Cologne",
        true,
        Limits::default(),
    );
    let expected: [(&[&str], f64); 3] = [
        (
            &[
                "StAndrews",
                "Leuchars",
                "Edinburgh",
                "York",
                "London",
                "Brussels",
                "Cologne",
            ],
            11.5,
        ),
        (
            &[
                "StAndrews",
                "Leuchars",
                "Edinburgh",
                "Glasgow",
                "Carlisle",
                "Birmingham",
                "London",
                "Brussels",
                "Cologne",
            ],
            11.7,
        ),
        (
            &[
                "StAndrews",
                "Leuchars",
                "Edinburgh",
                "Glasgow",
                "Carlisle",
                "York",
                "London",
                "Brussels",
                "Cologne",
            ],
            12.5,
        ),
    ];
    for (route, weight) in expected {
        let p = k.next_path().unwrap().unwrap();
        assert_eq!(places(&p), route);
        assert!(
            (p.weight() - weight).abs() < 1e-9,
            "{} vs {weight}",
            p.weight()
        );
    }
}

/// GRAPHASP_03_Carlisle_to_London: K_SHORTEST_PATHS without LIMIT lists every route by
/// length (ArangoDB's order among the two 2-stop routes is not specified).
#[test]
fn k_shortest_paths_unweighted_carlisle_to_london() {
    let g = k_shortest_paths_graph();
    let mut k = KShortestPaths::new(
        g.source(Direction::Outbound, 1.0),
        "places/Carlisle",
        "places/London",
        false,
        Limits::default(),
    );
    let mut got = Vec::new();
    while let Some(p) = k.next_path().unwrap() {
        got.push(places(&p).join(","));
    }
    assert_eq!(got.len(), 3);
    let mut first_two = got[..2].to_vec();
    first_two.sort();
    assert_eq!(
        first_two,
        ["Carlisle,Birmingham,London", "Carlisle,York,London"]
    );
    assert_eq!(got[2], "Carlisle,Glasgow,Edinburgh,York,London");
}

/// GRAPHASP_02_Carlisle_to_London and the shortest-path page: both 2-stop routes.
#[test]
fn all_shortest_paths_carlisle_to_london() {
    let g = k_shortest_paths_graph();
    let source = g.source(Direction::Outbound, 1.0);
    let mut got: Vec<String> = all_shortest_paths(
        &source,
        "places/Carlisle",
        "places/London",
        Limits::default(),
    )
    .unwrap()
    .iter()
    .map(|p| places(p).join(","))
    .collect();
    got.sort();
    assert_eq!(got, ["Carlisle,Birmingham,London", "Carlisle,York,London"]);
    let one = shortest_path(
        &source,
        "places/Carlisle",
        "places/London",
        false,
        Limits::default(),
    )
    .unwrap()
    .unwrap();
    assert!(got.contains(&places(&one).join(",")));
    // GRAPHASP_04 / GRAPHKSP_04: no route to Toronto.
    assert!(all_shortest_paths(
        &source,
        "places/Carlisle",
        "places/Toronto",
        Limits::default()
    )
    .unwrap()
    .is_empty());
}

/// The k-paths page: the four simple routes from Aberdeen to London, and none to Toronto.
#[test]
fn k_paths_aberdeen_to_london() {
    let g = k_shortest_paths_graph();
    let mut k = KPaths::new(
        g.source(Direction::Outbound, 1.0),
        "places/Aberdeen",
        "places/London",
        1,
        10,
        Limits::default(),
    )
    .unwrap();
    let mut got = Vec::new();
    while let Some(p) = k.next_path().unwrap() {
        got.push(places(&p).join(","));
    }
    assert_eq!(got[0], "Aberdeen,Leuchars,Edinburgh,York,London");
    let mut rest = got[1..].to_vec();
    rest.sort();
    assert_eq!(
        rest,
        [
            "Aberdeen,Leuchars,Edinburgh,Glasgow,Carlisle,Birmingham,London",
            "Aberdeen,Leuchars,Edinburgh,Glasgow,Carlisle,York,London",
            "Aberdeen,Leuchars,Edinburgh,York,Carlisle,Birmingham,London",
        ]
    );
    let mut none = KPaths::new(
        g.source(Direction::Outbound, 1.0),
        "places/Aberdeen",
        "places/Toronto",
        1,
        10,
        Limits::default(),
    )
    .unwrap();
    assert!(none.next_path().unwrap().is_none());
}

/// GRAPHTRAV_graphPruneExample1: `0..10 OUTBOUND "places/Toronto" PRUNE v.label ==
/// "Edmonton" OPTIONS {uniqueVertices: "path"}` on the Canadian part stops at Edmonton.
#[test]
fn prune_example_toronto_to_edmonton() {
    let mut g = MemoryGraph::new();
    for (i, (from, to)) in [
        ("Toronto", "Winnipeg"),
        ("Winnipeg", "Toronto"),
        ("Winnipeg", "Saskatoon"),
        ("Saskatoon", "Winnipeg"),
        ("Saskatoon", "Edmonton"),
        ("Edmonton", "Saskatoon"),
        ("Edmonton", "Jasper"),
        ("Jasper", "Edmonton"),
        ("Jasper", "Vancouver"),
        ("Vancouver", "Jasper"),
    ]
    .iter()
    .enumerate()
    {
        g.add_edge(
            "connections",
            &format!("connections/{i}"),
            &format!("places/{from}"),
            &format!("places/{to}"),
            None,
        );
    }
    let mut t = Traversal::new(
        g.source(Direction::Outbound, 1.0),
        "places/Toronto",
        TraversalOptions {
            min_depth: 0,
            max_depth: 10,
            order: Order::Dfs,
            unique_vertices: quiver_graph::UniqueVertices::Path,
            ..Default::default()
        },
        |step: &quiver_graph::StepView<'_>| {
            Ok(if step.vertex == "places/Edmonton" {
                quiver_graph::Verdict::PRUNE
            } else {
                quiver_graph::Verdict::TAKE
            })
        },
    )
    .unwrap();
    let mut got = Vec::new();
    while t.next_row().unwrap().is_some() {
        got.push(places(&t.current_path().unwrap()).join(" -- "));
    }
    assert_eq!(
        got,
        [
            "Toronto",
            "Toronto -- Winnipeg",
            "Toronto -- Winnipeg -- Saskatoon",
            "Toronto -- Winnipeg -- Saskatoon -- Edmonton",
        ]
    );
}

/// `traversalGraph`: A→B→C→D, B→E→F, A→G→H→I, G→J→K (creation order).
fn traversal_graph() -> MemoryGraph {
    let mut g = MemoryGraph::new();
    for (i, (from, to)) in [
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
            &format!("edges/{}", 63864 + 2 * i),
            &format!("circles/{from}"),
            &format!("circles/{to}"),
            None,
        );
    }
    g
}

fn keys_of(
    g: &MemoryGraph,
    max_depth: usize,
    check: impl FnMut(&quiver_graph::StepView<'_>) -> quiver_errors::Result<quiver_graph::Verdict>,
) -> Vec<Vec<String>> {
    let mut t = Traversal::new(
        g.source(Direction::Outbound, 1.0),
        "circles/A",
        TraversalOptions {
            min_depth: 1,
            max_depth,
            ..Default::default()
        },
        check,
    )
    .unwrap();
    let mut out = Vec::new();
    while t.next_row().unwrap().is_some() {
        out.push(
            t.current_path()
                .unwrap()
                .vertices
                .iter()
                .map(|v| v.trim_start_matches("circles/").to_string())
                .collect(),
        );
    }
    out
}

/// GRAPHTRAV_02_traverse_all_a, GRAPHTRAV_04_traverse_4a and GRAPHTRAV_graphPruneEdges: the
/// depth-first order ArangoDB prints (a vertex's edges last one first).
#[test]
fn traversal_graph_examples() {
    let g = traversal_graph();
    let last = |paths: Vec<Vec<String>>| -> Vec<String> {
        paths
            .into_iter()
            .map(|p| p.last().unwrap().clone())
            .collect()
    };
    assert_eq!(
        last(keys_of(&g, 3, |_: &quiver_graph::StepView<'_>| Ok(
            quiver_graph::Verdict::TAKE
        ))),
        ["G", "J", "K", "H", "I", "B", "E", "F", "C", "D"]
    );
    // FILTER p.vertices[1]._key != 'G', pushed into the traversal.
    assert_eq!(
        last(keys_of(&g, 3, |s: &quiver_graph::StepView<'_>| Ok(
            if s.path_vertex(1) == Some("circles/G") {
                quiver_graph::Verdict::FILTER_AND_PRUNE
            } else {
                quiver_graph::Verdict::TAKE
            }
        ))),
        ["B", "E", "F", "C", "D"]
    );
    // PRUNE e.theTruth == true (every edge has it).
    assert_eq!(
        keys_of(&g, 5, |s: &quiver_graph::StepView<'_>| Ok(
            if s.edge.is_some() {
                quiver_graph::Verdict::PRUNE
            } else {
                quiver_graph::Verdict::TAKE
            }
        )),
        [vec!["A", "G"], vec!["A", "B"]]
    );
}
