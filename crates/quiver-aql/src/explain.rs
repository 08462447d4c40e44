//! Explain output in ArangoDB's JSON shape: `{nodes, rules, collections, variables,
//! estimatedCost, estimatedNrItems, isModificationQuery}`, plus the AST dump of
//! `POST /_api/query`.

use serde_json::{json, Map, Value};

mod graph;

use crate::ast::{self, Expr, ObjectKey, Op, Quantifier, SortOrder, UnaryOp};
use crate::exec::NodeStats;
use crate::expr::{CExpr, CKey, Slot};
use crate::optimizer::estimates;
use crate::plan::{Bound, IntoKind, ListSource, NodeKind, Plan, QueryPlan, VarInfo};

fn var(vars: &[VarInfo], slot: Slot) -> Value {
    let name = vars
        .get(slot)
        .map_or_else(|| slot.to_string(), |v| v.name.clone());
    json!({"id": slot, "name": name, "isFullDocumentFromCollection": false, "isDataFromCollection": false})
}

/// ArangoDB-style expression JSON (`{"type": "compare ==", "subNodes": [...]}`).
pub fn expr_json(e: &CExpr, vars: &[VarInfo]) -> Value {
    crate::deep(|| expr_json_inner(e, vars))
}

fn expr_json_inner(e: &CExpr, vars: &[VarInfo]) -> Value {
    let sub = |items: Vec<Value>| Value::Array(items);
    match e {
        CExpr::Const(v) => match v {
            Value::Array(_) | Value::Object(_) => {
                json!({"type": if v.is_array() {"array"} else {"object"}, "value": v})
            }
            _ => json!({"type": "value", "value": v}),
        },
        CExpr::Var(s) => {
            let name = vars
                .get(*s)
                .map_or_else(|| s.to_string(), |v| v.name.clone());
            json!({"type": "reference", "name": name, "id": s})
        }
        CExpr::Current => json!({"type": "reference", "name": "CURRENT"}),
        CExpr::Array(items) => {
            json!({"type": "array", "subNodes": sub(items.iter().map(|i| expr_json(i, vars)).collect())})
        }
        CExpr::Object(members) => {
            json!({"type": "object", "subNodes": sub(members.iter().map(|(k, v)| match k {
            CKey::Static(name) => json!({"type": "object element", "name": name, "subNodes": [expr_json(v, vars)]}),
            CKey::Computed(k) => json!({"type": "calculated object element", "subNodes": [expr_json(k, vars), expr_json(v, vars)]}),
        }).collect())})
        }
        CExpr::Attribute(b, name) => {
            json!({"type": "attribute access", "name": name, "subNodes": [expr_json(b, vars)]})
        }
        CExpr::Index(b, i) => {
            json!({"type": "indexed access", "subNodes": [expr_json(b, vars), expr_json(i, vars)]})
        }
        CExpr::Expansion {
            input,
            depth,
            filter,
            limit,
            project,
        } => {
            let mut nodes = vec![expr_json(input, vars)];
            if let Some(f) = filter {
                nodes.push(expr_json(f, vars));
            }
            if let Some((a, b)) = limit {
                nodes.push(
                    json!({"type": "limit", "subNodes": [expr_json(a, vars), expr_json(b, vars)]}),
                );
            }
            if let Some(p) = project {
                nodes.push(expr_json(p, vars));
            }
            json!({"type": "expansion", "levels": depth, "subNodes": nodes})
        }
        CExpr::Unary(op, a) => {
            let t = match op {
                UnaryOp::Not => "unary not",
                UnaryOp::Minus => "unary minus",
                UnaryOp::Plus => "unary plus",
            };
            json!({"type": t, "subNodes": [expr_json(a, vars)]})
        }
        CExpr::Binary(op, a, b) => {
            json!({"type": op.ast_name(), "subNodes": [expr_json(a, vars), expr_json(b, vars)]})
        }
        CExpr::ArrayCompare(q, op, a, b) => {
            let quantifier = match q {
                Quantifier::Any => "any",
                Quantifier::All => "all",
                Quantifier::None => "none",
            };
            json!({"type": format!("array {}", op.ast_name()), "quantifier": quantifier, "subNodes": [expr_json(a, vars), expr_json(b, vars)]})
        }
        CExpr::ArrayAtLeast(n, op, a, b) => {
            json!({"type": format!("array {}", op.ast_name()), "quantifier": {"type": "at least", "subNodes": [expr_json(n, vars)]}, "subNodes": [expr_json(a, vars), expr_json(b, vars)]})
        }
        CExpr::Ternary(c, t, f) => {
            let mut nodes = vec![expr_json(c, vars)];
            if let Some(t) = t {
                nodes.push(expr_json(t, vars));
            }
            nodes.push(expr_json(f, vars));
            json!({"type": "ternary", "subNodes": nodes})
        }
        CExpr::Range(a, b) => {
            json!({"type": "range", "subNodes": [expr_json(a, vars), expr_json(b, vars)]})
        }
        CExpr::Call(def, args) => json!({
            "type": "function call",
            "name": def.name,
            "subNodes": [{"type": "array", "subNodes": sub(args.iter().map(|a| expr_json(a, vars)).collect())}]
        }),
    }
}

/// The `plan` object of `/_api/explain` (and `extra.plan` with profiling).
pub fn plan_json(qp: &QueryPlan, database: &str, counts: &dyn Fn(&str) -> u64) -> Value {
    let nodes = nodes_json(&qp.root, qp, database, counts);
    let est = estimates(&qp.root, counts);
    let (items, cost) = est.last().copied().unwrap_or((1.0, 1.0));
    let collections: Vec<Value> = qp
        .collections
        .iter()
        .map(|(name, t)| json!({"name": name, "type": t}))
        .collect();
    let variables: Vec<Value> = qp
        .vars
        .iter()
        .enumerate()
        .map(|(i, v)| json!({"id": i, "name": v.name, "isFullDocumentFromCollection": false, "isDataFromCollection": false}))
        .collect();
    json!({
        "nodes": nodes,
        "rules": qp.rules,
        "collections": collections,
        "variables": variables,
        "estimatedCost": crate::value::number(cost),
        "estimatedNrItems": crate::value::number(items),
        "isModificationQuery": qp.is_modification,
    })
}

fn bound_json(b: Bound) -> Value {
    match b {
        Bound::Unbounded => json!("unbounded"),
        Bound::Rows(n) => crate::value::number(n),
        Bound::Duration { months, millis } => {
            json!(format!(
                "P{months}MT{}.{:03}S",
                millis / 1000,
                millis % 1000
            ))
        }
    }
}

fn nodes_json(
    plan: &Plan,
    qp: &QueryPlan,
    database: &str,
    counts: &dyn Fn(&str) -> u64,
) -> Vec<Value> {
    let vars = &qp.vars;
    let est = estimates(plan, counts);
    let mut out = Vec::with_capacity(plan.nodes.len());
    let mut prev: Option<usize> = None;
    for (node, (items, cost)) in plan.nodes.iter().zip(est) {
        let mut m = Map::new();
        m.insert("type".into(), json!(node.kind.type_name()));
        m.insert(
            "dependencies".into(),
            json!(prev.into_iter().collect::<Vec<_>>()),
        );
        m.insert("id".into(), json!(node.id));
        // ArangoDB prints integral doubles without a fraction; drivers check for ints.
        m.insert("estimatedCost".into(), crate::value::number(cost));
        m.insert("estimatedNrItems".into(), crate::value::number(items));
        match &node.kind {
            NodeKind::Singleton | NodeKind::NoResults => {}
            NodeKind::EnumerateCollection {
                out,
                collection,
                random,
                projections,
            } => {
                m.insert("database".into(), json!(database));
                m.insert("collection".into(), json!(collection));
                m.insert("outVariable".into(), var(vars, *out));
                m.insert("random".into(), json!(random));
                m.insert(
                    "projections".into(),
                    json!(projections.clone().unwrap_or_default()),
                );
                m.insert("producesResult".into(), json!(true));
            }
            NodeKind::Index {
                out,
                collection,
                lookup,
                multi,
            } => {
                m.insert("database".into(), json!(database));
                m.insert("collection".into(), json!(collection));
                m.insert("outVariable".into(), var(vars, *out));
                m.insert(
                    "indexes".into(),
                    json!([{"id": "0", "type": "primary", "name": "primary", "fields": ["_key"], "unique": true, "sparse": false, "selectivityEstimate": 1}]),
                );
                m.insert(
                    "condition".into(),
                    json!({"type": if *multi {"compare in"} else {"compare =="}, "subNodes": [
                        {"type": "attribute access", "name": "_key", "subNodes": [{"type": "reference", "name": vars.get(*out).map(|v| v.name.clone()), "id": out}]},
                        expr_json(lookup, vars)
                    ]}),
                );
                m.insert("producesResult".into(), json!(true));
            }
            NodeKind::IndexScan(scan) => {
                m.insert("database".into(), json!(database));
                m.insert("collection".into(), json!(scan.collection));
                m.insert("outVariable".into(), var(vars, scan.out));
                // Explain names indexes by their number alone, as ArangoDB does.
                let mut index = scan.index.description.clone();
                index["id"] = json!(scan.index.id.to_string());
                m.insert("indexes".into(), json!([index]));
                let parts: Vec<Value> = scan.condition.iter().map(|c| expr_json(c, vars)).collect();
                m.insert(
                    "condition".into(),
                    if parts.is_empty() {
                        json!({})
                    } else {
                        json!({"type": "n-ary or", "subNodes": [{"type": "n-ary and", "subNodes": parts}]})
                    },
                );
                m.insert("reverse".into(), json!(scan.reverse));
                m.insert("ascending".into(), json!(!scan.reverse));
                m.insert("sorted".into(), json!(scan.sorted));
                m.insert("evalFCalls".into(), json!(true));
                m.insert(
                    "waitForSync".into(),
                    json!(scan.inverted.as_ref().is_some_and(|s| s.wait_for_sync)),
                );
                match &scan.projections {
                    Some(names) => {
                        m.insert("projections".into(), json!(names));
                        m.insert("indexCoversProjections".into(), json!(true));
                    }
                    None => {
                        m.insert("projections".into(), json!([]));
                        m.insert("indexCoversProjections".into(), json!(false));
                    }
                }
                m.insert("producesResult".into(), json!(true));
            }
            NodeKind::EnumerateNearVectors(near) => {
                m.insert("database".into(), json!(database));
                m.insert("collection".into(), json!(near.collection));
                let mut index = near.index.description.clone();
                index["id"] = json!(near.index.id.to_string());
                m.insert("index".into(), index);
                m.insert("oldDocumentVariable".into(), var(vars, near.out));
                m.insert("documentOutVariable".into(), var(vars, near.out));
                m.insert("distanceOutVariable".into(), var(vars, near.distance_out));
                m.insert("inExpression".into(), expr_json(&near.query, vars));
                m.insert("limit".into(), json!(near.limit));
                m.insert("offset".into(), json!(near.offset));
                let search = match &near.options {
                    Some(CExpr::Const(Value::Object(o))) => match o.get("nProbe") {
                        Some(n) => json!({"nProbe": n}),
                        None => json!({}),
                    },
                    _ => json!({}),
                };
                m.insert("searchParameters".into(), search);
                if let Some(filter) = &near.filter {
                    m.insert("filterExpression".into(), expr_json(filter, vars));
                }
                m.insert("isCoveredByStoredValues".into(), json!(false));
                m.insert("producesResult".into(), json!(true));
            }
            NodeKind::EnumerateList { out, input } => {
                match input {
                    ListSource::Slot(s) => {
                        m.insert("inVariable".into(), var(vars, *s));
                    }
                    ListSource::Range(a, b) => {
                        m.insert("inExpression".into(), json!({"type": "range", "subNodes": [expr_json(a, vars), expr_json(b, vars)]}));
                    }
                }
                m.insert("outVariable".into(), var(vars, *out));
            }
            NodeKind::Calculation { out, expr } => {
                m.insert("expression".into(), expr_json(expr, vars));
                m.insert("outVariable".into(), var(vars, *out));
                m.insert("canThrow".into(), json!(false));
                m.insert(
                    "expressionType".into(),
                    json!(if matches!(expr, CExpr::Const(_)) {
                        "json"
                    } else {
                        "simple"
                    }),
                );
            }
            NodeKind::Subquery { out, plan: sub } => {
                m.insert(
                    "subquery".into(),
                    json!({"nodes": nodes_json(sub, qp, database, counts)}),
                );
                m.insert("outVariable".into(), var(vars, *out));
                m.insert("isConst".into(), json!(false));
            }
            NodeKind::Filter { input } => {
                m.insert("inVariable".into(), var(vars, *input));
            }
            NodeKind::Sort { keys, limit } => {
                let elements: Vec<Value> = keys
                    .iter()
                    .map(|(s, asc)| json!({"inVariable": var(vars, *s), "ascending": asc}))
                    .collect();
                m.insert("elements".into(), Value::Array(elements));
                m.insert("stable".into(), json!(false));
                m.insert("limit".into(), json!(limit.unwrap_or(0)));
                m.insert(
                    "strategy".into(),
                    json!(if limit.is_some() {
                        "constrained-heap"
                    } else {
                        "standard"
                    }),
                );
            }
            NodeKind::Limit {
                offset,
                count,
                full_count,
            } => {
                m.insert("offset".into(), json!(offset));
                m.insert("limit".into(), json!(count));
                m.insert("fullCount".into(), json!(full_count));
            }
            NodeKind::Collect {
                groups,
                aggregates,
                into,
                count,
                method,
            } => {
                let g: Vec<Value> = groups
                    .iter()
                    .map(
                        |(o, i)| json!({"outVariable": var(vars, *o), "inVariable": var(vars, *i)}),
                    )
                    .collect();
                let a: Vec<Value> = aggregates
                    .iter()
                    .map(|a| json!({"outVariable": var(vars, a.out), "inVariable": a.input.map(|s| var(vars, s)), "type": a.function}))
                    .collect();
                m.insert("groups".into(), Value::Array(g));
                m.insert("aggregates".into(), Value::Array(a));
                if let Some((slot, kind)) = into {
                    m.insert("outVariable".into(), var(vars, *slot));
                    match kind {
                        IntoKind::Expr(s) => {
                            m.insert("expressionVariable".into(), var(vars, *s));
                        }
                        IntoKind::Vars(list) => {
                            let keep: Vec<Value> = list
                                .iter()
                                .map(|(_, s)| json!({"variable": var(vars, *s)}))
                                .collect();
                            m.insert("keepVariables".into(), Value::Array(keep));
                        }
                    }
                }
                if let Some(c) = count {
                    m.insert("outVariable".into(), var(vars, *c));
                    m.insert("count".into(), json!(true));
                }
                m.insert("collectOptions".into(), json!({"method": method}));
            }
            NodeKind::Window {
                range_input,
                preceding,
                following,
                aggregates,
            } => {
                if let Some(s) = range_input {
                    m.insert("rangeVariable".into(), var(vars, *s));
                }
                m.insert("bounds".into(), json!({"preceding": bound_json(*preceding), "following": bound_json(*following)}));
                let a: Vec<Value> = aggregates
                    .iter()
                    .map(|a| json!({"outVariable": var(vars, a.out), "inVariable": a.input.map(|s| var(vars, s)), "type": a.function}))
                    .collect();
                m.insert("aggregates".into(), Value::Array(a));
            }
            NodeKind::Return { input, distinct } => {
                m.insert("inVariable".into(), var(vars, *input));
                m.insert("count".into(), json!(true));
                if *distinct {
                    m.insert("distinct".into(), json!(true));
                }
            }
            NodeKind::Graph(g) => graph::node_fields(&mut m, g, database, vars),
            NodeKind::EnumerateView(v) => {
                m.insert("database".into(), json!(database));
                m.insert("view".into(), json!(v.view));
                m.insert("outVariable".into(), var(vars, v.out));
                m.insert("options".into(), v.options.clone());
                view_node_fields(&mut m, v, vars);
                m.insert(
                    "scorers".into(),
                    Value::Array(
                        v.scorers
                            .iter()
                            .map(|(scorer, slot)| {
                                let (name, args) = match scorer {
                                    quiver_search::index::Scorer::Bm25 { k, b } => ("BM25", json!([k, b])),
                                    quiver_search::index::Scorer::Tfidf { with_norms } => ("TFIDF", json!([with_norms])),
                                };
                                json!({"name": name, "arguments": args, "variable": var(vars, *slot)})
                            })
                            .collect(),
                    ),
                );
                m.insert("condition".into(), json!({"search": v.condition.is_some()}));
                if let Some(sort) = &v.scorers_sort {
                    let keys: Vec<Value> = sort
                        .order
                        .keys
                        .iter()
                        .map(|(index, asc)| json!({"index": index, "asc": asc}))
                        .collect();
                    m.insert("scorersSort".into(), Value::Array(keys));
                    m.insert("scorersSortLimit".into(), json!(sort.limit));
                }
            }
            NodeKind::Materialize { var: slot } => {
                m.insert("inNmDocId".into(), var(vars, *slot));
                m.insert("outVariable".into(), var(vars, *slot));
            }
            NodeKind::Modify(spec) => {
                m.insert("database".into(), json!(database));
                m.insert("collection".into(), json!(spec.collection));
                m.insert("inVariable".into(), var(vars, spec.first));
                if let Some(s) = spec.second {
                    m.insert("inDocVariable".into(), var(vars, s));
                }
                if let Some(s) = spec.out_new {
                    m.insert("outVariableNew".into(), var(vars, s));
                }
                if let Some(s) = spec.out_old {
                    m.insert("outVariableOld".into(), var(vars, s));
                }
                m.insert("modificationFlags".into(), spec.options_json.clone());
            }
        }
        out.push(Value::Object(m));
        prev = Some(node.id);
    }
    out
}

/// What an EnumerateViewNode says of its materialization and its use of the view's primary
/// sort and stored values, in ArangoDB's attributes: `noMaterialization`; `primarySort` (the
/// view's, `{field, asc}`) and `primarySortBuckets` (how many of its fields the loop's order
/// follows) when it reads in that order; `viewValuesVars` for the attributes taken from the
/// index (a primary sort field `{fieldNumber, field, …}`, a stored column `{columnNumber,
/// viewStoredValuesVars: [{fieldNumber, field, …}]}`; `id` and `name` are the loop variable's,
/// which holds them); `outNmDocId` with late materialization.
fn view_node_fields(m: &mut Map<String, Value>, v: &crate::plan::ViewNode, vars: &[VarInfo]) {
    use crate::plan::Materialize;
    m.insert(
        "noMaterialization".into(),
        json!(matches!(
            v.materialize,
            Materialize::Nothing | Materialize::Values(_)
        )),
    );
    if let Some(read) = v.primary_sort {
        let sort: Vec<Value> = v
            .columns
            .sort
            .iter()
            .map(|(field, asc)| json!({"field": field, "asc": asc}))
            .collect();
        m.insert("primarySort".into(), Value::Array(sort));
        m.insert("primarySortBuckets".into(), json!(read.buckets));
    }
    let (Materialize::Values(values) | Materialize::Late(values)) = &v.materialize else {
        m.insert("viewValuesVars".into(), json!([]));
        return;
    };
    let out = var(vars, v.out);
    let sort_len = v.columns.sort.len();
    let mut list = Vec::new();
    let mut columns: Vec<(usize, Vec<Value>)> = Vec::new();
    for value in values {
        let Some(position) = value.position else {
            continue;
        };
        let mut entry = json!({"field": value.name, "id": out["id"], "name": out["name"]});
        if position < sort_len {
            entry["fieldNumber"] = json!(position);
            list.push(entry);
            continue;
        }
        // The stored column holding the position, and the field's number in it.
        let mut at = position - sort_len;
        for (column, fields) in v.columns.stored.iter().enumerate() {
            if at < fields.len() {
                entry["fieldNumber"] = json!(at);
                match columns.iter_mut().find(|(c, _)| *c == column) {
                    Some((_, vars)) => vars.push(entry),
                    None => columns.push((column, vec![entry])),
                }
                break;
            }
            at -= fields.len();
        }
    }
    columns.sort_by_key(|(column, _)| *column);
    for (column, fields) in columns {
        list.push(json!({"columnNumber": column, "viewStoredValuesVars": fields}));
    }
    m.insert("viewValuesVars".into(), Value::Array(list));
    if matches!(v.materialize, Materialize::Late(_)) {
        m.insert("outNmDocId".into(), out);
    }
}

/// `extra.stats.nodes` for `profile: 2`.
pub fn node_stats_json(
    plan: &Plan,
    stats: &std::collections::HashMap<usize, NodeStats>,
) -> Vec<Value> {
    fn walk(
        plan: &Plan,
        stats: &std::collections::HashMap<usize, NodeStats>,
        out: &mut Vec<Value>,
    ) {
        for n in &plan.nodes {
            let s = stats.get(&n.id).cloned().unwrap_or_default();
            out.push(json!({"id": n.id, "calls": s.calls, "items": s.items, "filtered": 0, "runtime": crate::value::number(s.runtime.as_secs_f64())}));
            if let NodeKind::Subquery { plan: sub, .. } = &n.kind {
                walk(sub, stats, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(plan, stats, &mut out);
    out
}

/// The AST dump of `POST /_api/query`: `[{"type": "root", "subNodes": [...]}]`.
pub fn ast_json(q: &ast::Query) -> Value {
    json!([{"type": "root", "subNodes": query_nodes(q)}])
}

fn query_nodes(q: &ast::Query) -> Vec<Value> {
    let variable = |name: &str| json!({"type": "variable", "name": name});
    let mut out = Vec::new();
    if !q.with.is_empty() {
        out.push(json!({"type": "with", "subNodes": [{"type": "array", "subNodes": q.with.iter().map(|c| json!({"type": "collection", "name": c})).collect::<Vec<_>>()}]}));
    }
    for op in &q.ops {
        out.push(match op {
            Op::For { var, source, .. } => json!({"type": "for", "subNodes": [variable(var), ast_expr(source)]}),
            Op::Traversal(g) => graph::ast_node(g),
            Op::Filter(e) => json!({"type": "filter", "subNodes": [ast_expr(e)]}),
            Op::Let { var, expr } => json!({"type": "let", "subNodes": [variable(var), ast_expr(expr)]}),
            Op::Sort(keys) => json!({"type": "sort", "subNodes": [{"type": "array", "subNodes": keys.iter().map(|(e, order)| {
                let direction = match order {
                    SortOrder::Ascending => json!({"type": "value", "value": true}),
                    SortOrder::Descending => json!({"type": "value", "value": false}),
                    SortOrder::Given(given) => ast_expr(given),
                };
                json!({"type": "sort element", "subNodes": [ast_expr(e), direction]})
            }).collect::<Vec<_>>()}]}),
            Op::Limit { offset, count } => json!({"type": "limit", "subNodes": [ast_expr(offset), ast_expr(count)]}),
            Op::Collect(c) => {
                let mut subs: Vec<Value> = c.groups.iter().map(|(n, e)| json!({"type": "assign", "subNodes": [variable(n), ast_expr(e)]})).collect();
                subs.extend(c.aggregates.iter().map(|(n, e)| json!({"type": "aggregate", "subNodes": [variable(n), ast_expr(e)]})));
                if let Some((n, _)) = &c.into {
                    subs.push(json!({"type": "into", "subNodes": [variable(n)]}));
                }
                if let Some(n) = &c.count_into {
                    subs.push(json!({"type": "count", "subNodes": [variable(n)]}));
                }
                json!({"type": "collect", "subNodes": subs})
            }
            Op::Window { aggregates, .. } => json!({"type": "window", "subNodes": aggregates.iter().map(|(n, e)| json!({"type": "aggregate", "subNodes": [variable(n), ast_expr(e)]})).collect::<Vec<_>>()}),
            Op::Return { distinct, expr } => {
                if *distinct {
                    json!({"type": "return distinct", "subNodes": [ast_expr(expr)]})
                } else {
                    json!({"type": "return", "subNodes": [ast_expr(expr)]})
                }
            }
            Op::Modify(m) => {
                let coll = match &m.collection {
                    ast::CollectionRef::Name(n) => json!({"type": "collection", "name": n}),
                    ast::CollectionRef::Bind(n) => json!({"type": "datasource parameter", "name": n}),
                };
                let mut subs = vec![ast_expr(&m.first)];
                for e in [&m.second, &m.third].into_iter().flatten() {
                    subs.push(ast_expr(e));
                }
                subs.push(coll);
                json!({"type": m.kind.node_name().trim_end_matches("Node").to_lowercase(), "subNodes": subs})
            }
        });
    }
    out
}

fn ast_expr(e: &Expr) -> Value {
    crate::deep(|| ast_expr_inner(e))
}

fn ast_expr_inner(e: &Expr) -> Value {
    match e {
        Expr::Literal(v) => json!({"type": "value", "value": v}),
        Expr::Array(items) => {
            json!({"type": "array", "subNodes": items.iter().map(ast_expr).collect::<Vec<_>>()})
        }
        Expr::Object(members) => {
            json!({"type": "object", "subNodes": members.iter().map(|(k, v)| match k {
            ObjectKey::Static(n) => json!({"type": "object element", "name": n, "subNodes": [ast_expr(v)]}),
            ObjectKey::Computed(k) => json!({"type": "calculated object element", "subNodes": [ast_expr(k), ast_expr(v)]}),
        }).collect::<Vec<_>>()})
        }
        Expr::Name(n) => json!({"type": "reference", "name": n}),
        Expr::Bind(n) => json!({"type": "parameter", "name": n}),
        Expr::BindCollection(n) => json!({"type": "datasource parameter", "name": n}),
        Expr::Attribute(b, n) => {
            json!({"type": "attribute access", "name": n, "subNodes": [ast_expr(b)]})
        }
        Expr::Index(b, i) => {
            json!({"type": "indexed access", "subNodes": [ast_expr(b), ast_expr(i)]})
        }
        Expr::Expansion { input, .. } => {
            json!({"type": "expansion", "subNodes": [ast_expr(input)]})
        }
        Expr::Current => json!({"type": "reference", "name": "CURRENT"}),
        Expr::Unary(op, a) => {
            json!({"type": match op { UnaryOp::Not => "unary not", UnaryOp::Minus => "unary minus", UnaryOp::Plus => "unary plus" }, "subNodes": [ast_expr(a)]})
        }
        Expr::Binary(op, a, b) => {
            json!({"type": op.ast_name(), "subNodes": [ast_expr(a), ast_expr(b)]})
        }
        Expr::ArrayCompare(_, op, a, b) => {
            json!({"type": format!("array {}", op.ast_name()), "subNodes": [ast_expr(a), ast_expr(b)]})
        }
        Expr::ArrayAtLeast(n, op, a, b) => {
            json!({"type": format!("array {}", op.ast_name()), "subNodes": [ast_expr(a), ast_expr(b), ast_expr(n)]})
        }
        Expr::Ternary(c, t, f) => {
            let mut subs = vec![ast_expr(c)];
            if let Some(t) = t {
                subs.push(ast_expr(t));
            }
            subs.push(ast_expr(f));
            json!({"type": "ternary", "subNodes": subs})
        }
        Expr::Range(a, b) => json!({"type": "range", "subNodes": [ast_expr(a), ast_expr(b)]}),
        Expr::Call(name, args) => {
            json!({"type": "function call", "name": name, "subNodes": [{"type": "array", "subNodes": args.iter().map(ast_expr).collect::<Vec<_>>()}]})
        }
        Expr::Subquery(q) => json!({"type": "subquery", "subNodes": query_nodes(q)}),
    }
}

/// Collection names a query mentions (for `/_api/query`'s `collections`).
pub fn collection_names(q: &ast::Query) -> Vec<String> {
    fn expr(e: &Expr, out: &mut Vec<String>) {
        if let Expr::Subquery(q) = e {
            query(q, out);
        }
    }
    fn query(q: &ast::Query, out: &mut Vec<String>) {
        out.extend(q.with.iter().filter(|w| !w.starts_with('@')).cloned());
        let mut declared: Vec<String> = Vec::new();
        for op in &q.ops {
            match op {
                Op::For { var, source, .. } => {
                    if let Expr::Name(n) = source {
                        if !declared.contains(n) {
                            out.push(n.clone());
                        }
                    }
                    expr(source, out);
                    declared.push(var.clone());
                }
                Op::Let { var, expr: e } => {
                    expr(e, out);
                    declared.push(var.clone());
                }
                Op::Traversal(g) => {
                    if let ast::GraphRef::Collections(list) = &g.graph {
                        for (_, c) in list {
                            if let ast::CollectionRef::Name(n) = c {
                                out.push(n.clone());
                            }
                        }
                    }
                    declared.extend(g.vars.iter().cloned());
                }
                Op::Modify(m) => {
                    if let ast::CollectionRef::Name(n) = &m.collection {
                        out.push(n.clone());
                    }
                }
                Op::Return { expr: e, .. } | Op::Filter(e) => expr(e, out),
                _ => {}
            }
        }
    }
    let mut out = Vec::new();
    query(q, &mut out);
    out.sort();
    out.dedup();
    out
}
