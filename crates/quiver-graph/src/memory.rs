//! An in-memory graph implementing [`EdgeSource`]: the reference source for tests and the
//! micro benchmark, and a model of what the executor's source over the edge index does
//! (per-edge-collection directions, weights from an attribute with a default).

use std::collections::HashMap;

use quiver_errors::{Error, ErrorCode, Result};

use crate::{Direction, EdgeHandle, EdgeQuery, EdgeRef, EdgeSource};

struct StoredEdge {
    collection: u32,
    from: u32,
    to: u32,
    weight: Option<f64>,
}

/// Edge collections with their edges, indexed in both directions like an edge index.
/// Edges keep insertion order per vertex; [`EdgeHandle`]s are insertion positions.
#[derive(Default)]
pub struct MemoryGraph {
    vertex_ids: HashMap<String, u32>,
    vertex_names: Vec<String>,
    collections: Vec<String>,
    edges: Vec<StoredEdge>,
    /// Edge `_id`s back to back (one allocation instead of one per edge: the benchmark graph
    /// has millions of edges); `edge_id_ends[i]` is where id `i` ends.
    edge_ids: String,
    edge_id_ends: Vec<usize>,
    /// Per vertex: `(edge index, other end)`, so a scan reads edge records only for weights.
    outgoing: Vec<Vec<(u32, u32)>>,
    incoming: Vec<Vec<(u32, u32)>>,
}

impl MemoryGraph {
    /// An empty graph.
    pub fn new() -> MemoryGraph {
        MemoryGraph::default()
    }

    fn vertex(&mut self, id: &str) -> u32 {
        if let Some(&v) = self.vertex_ids.get(id) {
            return v;
        }
        let v = self.vertex_names.len() as u32;
        self.vertex_names.push(id.to_string());
        self.vertex_ids.insert(id.to_string(), v);
        self.outgoing.push(Vec::new());
        self.incoming.push(Vec::new());
        v
    }

    /// Registers a vertex without edges (so that it "exists").
    pub fn add_vertex(&mut self, id: &str) {
        self.vertex(id);
    }

    /// Whether the vertex was added or appears on an edge.
    pub fn has_vertex(&self, id: &str) -> bool {
        self.vertex_ids.contains_key(id)
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.vertex_names.len()
    }

    /// Number of edges.
    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }

    /// Adds an edge `from → to` to edge collection `collection` with an optional weight
    /// attribute value. Returns its handle.
    pub fn add_edge(
        &mut self,
        collection: &str,
        id: &str,
        from: &str,
        to: &str,
        weight: Option<f64>,
    ) -> EdgeHandle {
        let collection = match self.collections.iter().position(|c| c == collection) {
            Some(c) => c as u32,
            None => {
                self.collections.push(collection.to_string());
                (self.collections.len() - 1) as u32
            }
        };
        let from = self.vertex(from);
        let to = self.vertex(to);
        let index = self.edges.len() as u32;
        self.edge_ids.push_str(id);
        self.edge_id_ends.push(self.edge_ids.len());
        self.edges.push(StoredEdge {
            collection,
            from,
            to,
            weight,
        });
        self.outgoing[from as usize].push((index, to));
        self.incoming[to as usize].push((index, from));
        EdgeHandle(index as u64)
    }

    /// The `_id` of an edge.
    pub fn edge_id(&self, edge: EdgeHandle) -> Option<&str> {
        let i = usize::try_from(edge.0).ok()?;
        let end = *self.edge_id_ends.get(i)?;
        let start = if i == 0 { 0 } else { self.edge_id_ends[i - 1] };
        self.edge_ids.get(start..end)
    }

    /// `(_from, _to)` of an edge.
    pub fn edge_ends(&self, edge: EdgeHandle) -> Option<(&str, &str)> {
        self.edges.get(edge.0 as usize).map(|e| {
            (
                self.vertex_names[e.from as usize].as_str(),
                self.vertex_names[e.to as usize].as_str(),
            )
        })
    }

    /// The stored weight attribute of an edge.
    pub fn edge_weight(&self, edge: EdgeHandle) -> Option<f64> {
        self.edges.get(edge.0 as usize).and_then(|e| e.weight)
    }

    /// A source following every edge collection in `direction`, weights taken from the edges'
    /// weight values with `default_weight` where missing.
    pub fn source(&self, direction: Direction, default_weight: f64) -> MemoryGraphSource<'_> {
        MemoryGraphSource {
            graph: self,
            default_direction: direction,
            per_collection: Vec::new(),
            default_weight,
        }
    }
}

/// A view of a [`MemoryGraph`] with the directions of one query.
pub struct MemoryGraphSource<'g> {
    graph: &'g MemoryGraph,
    default_direction: Direction,
    /// `(collection index, direction)`; when non-empty only these collections are followed.
    per_collection: Vec<(u32, Direction)>,
    default_weight: f64,
}

impl MemoryGraphSource<'_> {
    /// Restricts the source to the named edge collections, each with its own direction
    /// (`FOR v IN OUTBOUND s edges1, ANY edges2`). Unknown collection names fail with
    /// `DataSourceNotFound`, as a query naming a missing collection does.
    pub fn with_collections(mut self, collections: &[(&str, Option<Direction>)]) -> Result<Self> {
        self.per_collection.clear();
        for (name, direction) in collections {
            let index = self
                .graph
                .collections
                .iter()
                .position(|c| c == name)
                .ok_or_else(|| {
                    Error::with_message(
                        ErrorCode::DataSourceNotFound,
                        format!("collection or view not found: {name}"),
                    )
                })?;
            self.per_collection
                .push((index as u32, direction.unwrap_or(self.default_direction)));
        }
        Ok(self)
    }

    fn direction_of(&self, collection: u32) -> Option<Direction> {
        if self.per_collection.is_empty() {
            return Some(self.default_direction);
        }
        self.per_collection
            .iter()
            .find(|(c, _)| *c == collection)
            .map(|(_, d)| *d)
    }
}

impl EdgeSource for MemoryGraphSource<'_> {
    fn degree_hint(&self, vertex: &str, query: &EdgeQuery) -> Option<usize> {
        let &v = self.graph.vertex_ids.get(vertex)?;
        if !self.per_collection.is_empty() {
            // Mixed directions would need a look at every edge's collection.
            return None;
        }
        let dir = if query.backward {
            self.default_direction.reversed()
        } else {
            self.default_direction
        };
        let out = self.graph.outgoing[v as usize].len();
        let inc = self.graph.incoming[v as usize].len();
        Some(match dir {
            Direction::Outbound => out,
            Direction::Inbound => inc,
            Direction::Any => out + inc,
        })
    }

    fn for_each_edge(
        &self,
        vertex: &str,
        query: &EdgeQuery,
        sink: &mut dyn FnMut(EdgeRef<'_>) -> Result<()>,
    ) -> Result<()> {
        let graph = self.graph;
        let Some(&v) = graph.vertex_ids.get(vertex) else {
            return Ok(());
        };
        // One collection in one direction (the common case): edge records are read only for
        // weights.
        let uniform = self.per_collection.is_empty();
        let direction_of = |index: u32| -> Option<Direction> {
            let dir = if uniform {
                self.default_direction
            } else {
                self.direction_of(graph.edges[index as usize].collection)?
            };
            Some(if query.backward { dir.reversed() } else { dir })
        };
        let weight_of = |index: u32| {
            if query.need_weight {
                graph.edges[index as usize]
                    .weight
                    .unwrap_or(self.default_weight)
            } else {
                1.0
            }
        };
        // Outgoing list first, then incoming: like an edge index lookup on `_from` followed by
        // one on `_to` for ANY.
        for &(index, other) in &graph.outgoing[v as usize] {
            if matches!(
                direction_of(index),
                Some(Direction::Outbound | Direction::Any)
            ) {
                sink(EdgeRef {
                    edge: EdgeHandle(index as u64),
                    other: &graph.vertex_names[other as usize],
                    weight: weight_of(index),
                })?;
            }
        }
        for &(index, other) in &graph.incoming[v as usize] {
            let dir = direction_of(index);
            let self_loop_seen = dir == Some(Direction::Any) && other == v;
            if matches!(dir, Some(Direction::Inbound | Direction::Any)) && !self_loop_seen {
                sink(EdgeRef {
                    edge: EdgeHandle(index as u64),
                    other: &graph.vertex_names[other as usize],
                    weight: weight_of(index),
                })?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(source: &MemoryGraphSource<'_>, v: &str, backward: bool) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        source
            .for_each_edge(
                v,
                &EdgeQuery {
                    backward,
                    depth: 0,
                    need_weight: false,
                },
                &mut |e| {
                    out.push((e.edge.0, e.other.to_string()));
                    Ok(())
                },
            )
            .unwrap();
        out
    }

    #[test]
    fn directions_per_collection_and_backward() {
        let mut g = MemoryGraph::new();
        g.add_edge("e1", "e1/0", "v/a", "v/b", None);
        g.add_edge("e2", "e2/0", "v/c", "v/a", None);
        g.add_edge("e1", "e1/1", "v/a", "v/a", None);
        let out = g.source(Direction::Outbound, 1.0);
        assert_eq!(
            collect(&out, "v/a", false),
            vec![(0, "v/b".into()), (2, "v/a".into())]
        );
        assert_eq!(
            collect(&out, "v/a", true),
            vec![(1, "v/c".into()), (2, "v/a".into())]
        );
        let any = g.source(Direction::Any, 1.0);
        assert_eq!(collect(&any, "v/a", false).len(), 3, "self-loop once");
        let mixed = g
            .source(Direction::Outbound, 1.0)
            .with_collections(&[("e2", Some(Direction::Inbound))])
            .unwrap();
        assert_eq!(collect(&mixed, "v/a", false), vec![(1, "v/c".into())]);
        assert_eq!(collect(&mixed, "v/c", true), vec![(1, "v/a".into())]);
        assert!(collect(&out, "v/unknown", false).is_empty());
        assert_eq!(
            g.source(Direction::Any, 1.0)
                .with_collections(&[("nope", None)])
                .err()
                .unwrap()
                .code,
            ErrorCode::DataSourceNotFound
        );
    }

    #[test]
    fn sink_errors_stop_the_scan() {
        let mut g = MemoryGraph::new();
        for i in 0..5 {
            g.add_edge("e", &format!("e/{i}"), "v/a", &format!("v/{i}"), Some(2.0));
        }
        let source = g.source(Direction::Outbound, 1.0);
        let mut seen = 0;
        let err = source
            .for_each_edge(
                "v/a",
                &EdgeQuery {
                    backward: false,
                    depth: 0,
                    need_weight: true,
                },
                &mut |e| {
                    assert_eq!(e.weight, 2.0);
                    seen += 1;
                    if seen == 2 {
                        Err(Error::new(ErrorCode::QueryKilled))
                    } else {
                        Ok(())
                    }
                },
            )
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::QueryKilled);
        assert_eq!(seen, 2);
        assert_eq!(g.edge_id(EdgeHandle(3)), Some("e/3"));
        assert_eq!(g.edge_ends(EdgeHandle(3)), Some(("v/a", "v/3")));
    }
}
