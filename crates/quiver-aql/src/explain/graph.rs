//! Explain output of graph nodes (`TraversalNode`, `ShortestPathNode`,
//! `EnumeratePathsNode`) with ArangoDB's field names, and their AST dump.

use serde_json::{json, Map, Value};

use super::{ast_expr, expr_json, var};
use crate::ast::{CollectionRef, Direction, GraphKind, GraphOp, GraphRef};
use crate::expr::CExpr;
use crate::plan::{graph_options_json, GraphNode, VarInfo};

/// ArangoDB's numeric directions: 0 any, 1 inbound, 2 outbound.
fn direction_number(d: quiver_graph::Direction) -> u8 {
    match d {
        quiver_graph::Direction::Any => 0,
        quiver_graph::Direction::Inbound => 1,
        quiver_graph::Direction::Outbound => 2,
    }
}

fn vertex_field(m: &mut Map<String, Value>, e: &CExpr, prefix: &str, vars: &[VarInfo]) {
    let (id_key, var_key) = if prefix.is_empty() {
        ("vertexId".to_string(), "inVariable".to_string())
    } else {
        (format!("{prefix}VertexId"), format!("{prefix}InVariable"))
    };
    match e {
        CExpr::Const(v) => {
            m.insert(id_key, v.clone());
        }
        CExpr::Var(s) => {
            m.insert(var_key, var(vars, *s));
        }
        other => {
            m.insert(var_key, expr_json(other, vars));
        }
    }
}

/// Adds the graph node's fields to its explain object.
pub(super) fn node_fields(
    m: &mut Map<String, Value>,
    n: &GraphNode,
    database: &str,
    vars: &[VarInfo],
) {
    m.insert("database".into(), json!(database));
    let edge_names: Vec<&String> = n.edge_collections.iter().map(|e| &e.0).collect();
    m.insert(
        "graph".into(),
        match &n.graph {
            Some(name) => json!(name),
            None => json!(edge_names),
        },
    );
    m.insert(
        "graphDefinition".into(),
        json!({"vertexCollectionNames": n.graph_vertex_collections, "edgeCollectionNames": edge_names}),
    );
    m.insert("isLocalGraphNode".into(), json!(false));
    m.insert("isUsedAsSatellite".into(), json!(false));
    m.insert(
        "defaultDirection".into(),
        json!(match n.direction {
            Direction::Any => 0,
            Direction::Inbound => 1,
            Direction::Outbound => 2,
        }),
    );
    m.insert(
        "directions".into(),
        json!(n
            .edge_collections
            .iter()
            .map(|e| direction_number(e.1))
            .collect::<Vec<_>>()),
    );
    m.insert("edgeCollections".into(), json!(edge_names));
    m.insert("vertexCollections".into(), json!(n.vertex_collections));
    let mut options = graph_options_json(n);
    match n.kind {
        GraphKind::Traversal => {
            vertex_field(m, &n.start, "", vars);
        }
        _ => {
            vertex_field(m, &n.start, "start", vars);
            if let Some(t) = &n.target {
                vertex_field(m, t, "target", vars);
            }
            let path_type = match n.kind {
                GraphKind::ShortestPath => "shortest_path",
                GraphKind::KShortestPaths => "k_shortest_paths",
                GraphKind::KPaths => "k_paths",
                _ => "all_shortest_paths",
            };
            if n.kind != GraphKind::ShortestPath {
                m.insert("pathType".into(), json!(path_type));
            }
            if let Some(o) = options.as_object_mut() {
                for k in ["order", "bfs", "uniqueVertices", "uniqueEdges"] {
                    o.remove(k);
                }
            }
        }
    }
    m.insert("options".into(), options);
    if let Some(s) = n.vertex_out {
        m.insert("vertexOutVariable".into(), var(vars, s));
    }
    if let Some(s) = n.edge_out {
        m.insert("edgeOutVariable".into(), var(vars, s));
    }
    if let Some(s) = n.path_out {
        m.insert("pathOutVariable".into(), var(vars, s));
    }
    if let Some(p) = &n.prune {
        m.insert("expression".into(), expr_json(p, vars));
    }
    if let Some(s) = n.prune_out {
        m.insert("pruneVariable".into(), var(vars, s));
    }
    if !n.conditions.is_empty() {
        m.insert(
            "condition".into(),
            json!({"type": "n-ary and", "subNodes": n.conditions.iter().map(|c| expr_json(&c.expr, vars)).collect::<Vec<_>>()}),
        );
    }
}

/// The AST dump (`POST /_api/query`) of a graph operation.
pub(super) fn ast_node(g: &GraphOp) -> Value {
    let direction = match g.direction {
        Direction::Any => 0,
        Direction::Inbound => 1,
        Direction::Outbound => 2,
    };
    let mut subs = Vec::new();
    subs.push(json!({"type": "direction", "subNodes": [
        {"type": "value", "value": direction},
        g.depth.as_ref().map(ast_expr).unwrap_or(json!({"type": "value", "value": 1})),
    ]}));
    subs.push(ast_expr(&g.start));
    if let Some(t) = &g.target {
        subs.push(ast_expr(t));
    }
    subs.push(match &g.graph {
        GraphRef::Named(e) => ast_expr(e),
        GraphRef::Collections(list) => {
            json!({"type": "collection list", "subNodes": list.iter().map(|(_, c)| match c {
            CollectionRef::Name(n) => json!({"type": "collection", "name": n}),
            CollectionRef::Bind(n) => json!({"type": "parameter", "name": format!("@{n}")}),
        }).collect::<Vec<_>>()})
        }
    });
    if let Some((_, p)) = &g.prune {
        subs.push(ast_expr(p));
    }
    if let Some(o) = &g.options {
        subs.push(ast_expr(o));
    }
    for v in &g.vars {
        subs.push(json!({"type": "variable", "name": v}));
    }
    let kind = match g.kind {
        GraphKind::Traversal => "traversal",
        GraphKind::ShortestPath => "shortest path",
        GraphKind::KShortestPaths | GraphKind::KPaths | GraphKind::AllShortestPaths => {
            "enumerate paths"
        }
    };
    json!({"type": kind, "subNodes": subs})
}
