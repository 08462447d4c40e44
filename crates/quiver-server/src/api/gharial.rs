//! `/_api/gharial`: named graphs (definitions in `_graphs`, see `quiver_core::graphs`) and
//! vertex / edge CRUD through a graph.
//!
//! Status codes follow ArangoDB 3.12's handler, including its asymmetries: creating a graph
//! answers 201 when synced and 202 otherwise, but dropping a graph and every change of edge
//! definitions or orphan collections answer 202 whatever `waitForSync` says; vertex and edge
//! creation answer 201/202, modification and removal 200/202. The `ETag` of gharial responses
//! is the bare `_rev` (no quotes), unlike the document API.
//!
//! Vertex and edge writes go through the request's document writer (`with_writer`): the stream
//! transaction of `x-arango-trx-id`, or auto-commit (serialized per collection, like the
//! document API). A removal takes the document and every edge pointing at it in one
//! transaction (the stream transaction, or one of its own) so that they go in one atomic
//! batch.

use std::sync::Arc;

use bytes::Bytes;
use http::header::ETAG;
use http::Method;
use quiver_core::graphs::{self, Graph};
use quiver_core::{revision_matches, Committed, Database, DocumentReader, OpResult, WriteOptions};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Map, Value};

use super::transaction::{transaction_id, with_writer, within};
use super::write_options::write_options;
use crate::response::Durability;
use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// Routes `/_api/gharial/...`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let db = state.database(&req.database)?;
    let rest = req.suffix(2);
    let Some(graph_name) = rest.first() else {
        return match req.method {
            Method::GET | Method::HEAD => list(&db),
            Method::POST => create(req, &db),
            _ => Ok(method_not_allowed()),
        };
    };
    // ArangoDB resolves the graph first: an unknown graph is 404/1924 on every sub-path.
    let graph = graphs::get(&db, graph_name)?;
    let Some(kind) = rest.get(1) else {
        return match req.method {
            Method::GET | Method::HEAD => Ok(Response::ok_envelope(
                200,
                json!({"graph": graph.to_client()}),
            )),
            Method::DELETE => drop_graph(req, &db, &graph),
            _ => Ok(method_not_allowed()),
        };
    };
    let vertex = match *kind {
        "vertex" => true,
        "edge" => false,
        _ => return Ok(not_found(req)),
    };
    let collection = rest.get(2).copied();
    let key = rest.get(3).copied();
    if rest.len() > 4 {
        return Ok(not_found(req));
    }
    match (collection, key, &req.method, vertex) {
        (None, _, &Method::GET | &Method::HEAD, _) => {
            let names: Vec<String> = if vertex {
                graph.vertex_collections().into_iter().collect()
            } else {
                graph.edge_collections()
            };
            Ok(Response::ok_envelope(200, json!({ "collections": names })))
        }
        (None, _, &Method::POST, true) => {
            let body = definition_body(req)?;
            let committed = graphs::add_vertex_collection(
                &db,
                &graph.name,
                &body,
                req.bool_param("createCollection", true),
                wait_for_sync(req),
            )?;
            Ok(definition_changed(committed))
        }
        (None, _, &Method::POST, false) => {
            let body = definition_body(req)?;
            let committed =
                graphs::add_edge_definition(&db, &graph.name, &body, wait_for_sync(req))?;
            Ok(definition_changed(committed))
        }
        (Some(coll), None, &Method::POST, _) => {
            create_document(state, req, &db, &graph, vertex, coll)
        }
        (Some(coll), None, &Method::DELETE, true) => {
            let committed = graphs::remove_vertex_collection(
                &db,
                &graph.name,
                coll,
                req.bool_param("dropCollection", false),
                wait_for_sync(req),
            )?;
            Ok(definition_changed(committed))
        }
        (Some(coll), None, &Method::PUT, false) => {
            let body = definition_body(req)?;
            // ArangoDB accepts `dropCollections` here but does not act on it when replacing.
            let committed =
                graphs::replace_edge_definition(&db, &graph.name, coll, &body, wait_for_sync(req))?;
            Ok(definition_changed(committed))
        }
        (Some(coll), None, &Method::DELETE, false) => {
            let committed = graphs::remove_edge_definition(
                &db,
                &graph.name,
                coll,
                req.bool_param("dropCollections", false),
                wait_for_sync(req),
            )?;
            Ok(definition_changed(committed))
        }
        (Some(coll), Some(key), &Method::GET | &Method::HEAD, _) => {
            read_document(state, req, &db, &graph, vertex, coll, key)
        }
        (Some(coll), Some(key), &Method::PUT | &Method::PATCH, _) => modify_document(
            state,
            req,
            &db,
            &graph,
            vertex,
            coll,
            key,
            req.method == Method::PUT,
        ),
        (Some(coll), Some(key), &Method::DELETE, _) => {
            remove_document(state, req, &db, &graph, vertex, coll, key)
        }
        _ => Ok(method_not_allowed()),
    }
}

fn wait_for_sync(req: &Request) -> bool {
    req.bool_param("waitForSync", false)
}

/// The JSON body of a definition change; ArangoDB answers an unparsable or missing body with
/// 400/10.
fn definition_body(req: &Request) -> Result<Value> {
    match super::body_json(req)? {
        Some(v @ Value::Object(_)) => Ok(v),
        _ => Err(Error::with_message(
            ErrorCode::BadParameter,
            "unable to parse body",
        )),
    }
}

fn list(db: &Arc<Database>) -> Result<Response> {
    let all: Vec<Value> = graphs::list(db)?.iter().map(Graph::to_client).collect();
    Ok(Response::ok_envelope(200, json!({ "graphs": all })))
}

fn graph_response(status: u16, graph: &Graph) -> Response {
    Response::ok_envelope(status, json!({"graph": graph.to_client()})).with_header(ETAG, &graph.rev)
}

fn create(req: &Request, db: &Arc<Database>) -> Result<Response> {
    let body = super::body_json(req)?.unwrap_or(Value::Null);
    let committed = graphs::create(db, &body, wait_for_sync(req))?;
    let status = if committed.synced() { 201 } else { 202 };
    let mut response = graph_response(status, committed.value());
    response.wait_for(Box::new(committed) as Box<dyn Durability>);
    Ok(response)
}

fn drop_graph(req: &Request, db: &Arc<Database>, graph: &Graph) -> Result<Response> {
    let committed = graphs::drop(
        db,
        &graph.name,
        req.bool_param("dropCollections", false),
        wait_for_sync(req),
    )?;
    let mut response = Response::ok_envelope(202, json!({"removed": true}));
    response.wait_for(Box::new(committed) as Box<dyn Durability>);
    Ok(response)
}

fn definition_changed(committed: Committed<Graph>) -> Response {
    let mut response = graph_response(202, committed.value());
    response.wait_for(Box::new(committed) as Box<dyn Durability>);
    response
}

/// The vertex or edge collection a document route addresses, after ArangoDB's graph checks:
/// vertex collections must belong to the graph (404/1949) and exist (404/1926), edge
/// collections must have a definition in it (404/1930).
fn document_collection(
    db: &Arc<Database>,
    graph: &Graph,
    vertex: bool,
    name: &str,
) -> Result<Arc<quiver_core::Collection>> {
    if vertex {
        graph.check_vertex_collection(db, name)?;
    } else {
        graph.check_edge_collection(name)?;
    }
    db.collection(name)
}

/// The expected revision: `If-Match`, else the legacy `rev` query parameter.
fn expected_revision(req: &Request) -> Option<String> {
    req.header(http::header::IF_MATCH)
        .or_else(|| req.param("rev"))
        .map(str::to_string)
}

/// The response of a vertex or edge write: `status` when synced, 202 otherwise; the write's
/// durability stays pending on the response.
fn written_response(
    committed: Committed<OpResult>,
    status: u16,
    vertex: bool,
    removed: bool,
) -> Response {
    let op = committed.value();
    let mut fields = Map::new();
    if removed {
        fields.insert("removed".into(), true.into());
    } else {
        let mut meta = Map::new();
        meta.insert("_id".into(), op.id.clone().into());
        meta.insert("_key".into(), op.key.clone().into());
        meta.insert("_rev".into(), op.rev.encode().into());
        if let Some(old_rev) = op.old_rev {
            meta.insert("_oldRev".into(), old_rev.encode().into());
        }
        let name = if vertex { "vertex" } else { "edge" };
        fields.insert(name.into(), Value::Object(meta));
    }
    if let Some(old) = &op.old {
        fields.insert("old".into(), old.clone());
    }
    if let Some(new) = &op.new {
        fields.insert("new".into(), new.clone());
    }
    let status = if committed.synced() { status } else { 202 };
    let mut response = Response::ok_envelope(status, Value::Object(fields));
    if !removed {
        response = response.with_header(ETAG, &op.rev.encode());
    }
    response.wait_for(Box::new(committed) as Box<dyn Durability>);
    response
}

/// The write options of a vertex or edge route: the document API's, with the expected
/// revision from `If-Match` or the legacy `rev` parameter, and `_rev` in bodies ignored.
fn graph_write_options(req: &Request) -> Result<WriteOptions> {
    let mut opts = write_options(req)?;
    opts.if_match = expected_revision(req);
    opts.ignore_revs = true;
    Ok(opts)
}

fn create_document(
    state: &ServerState,
    req: &Request,
    db: &Arc<Database>,
    graph: &Graph,
    vertex: bool,
    name: &str,
) -> Result<Response> {
    let coll = document_collection(db, graph, vertex, name)?;
    let body = match super::body_json(req)? {
        Some(v @ Value::Object(_)) => v,
        Some(_) => return Err(Error::new(ErrorCode::DocumentTypeInvalid)),
        None => {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                "unable to parse body",
            ))
        }
    };
    let vertices = if vertex {
        Vec::new()
    } else {
        graph.check_edge_document(db, &body, false)?
    };
    let opts = graph_write_options(req)?;
    // Like ArangoDB, the vertices are checked just before the write (outside a stream
    // transaction: not under a lock on the vertex collections).
    let committed = with_writer(state, req, |w| {
        w.read(db, |reader| graphs::check_vertices_exist(reader, &vertices))?;
        w.insert(&coll, body, &opts)
    })?;
    Ok(written_response(committed, 201, vertex, false))
}

#[allow(clippy::too_many_arguments)]
fn modify_document(
    state: &ServerState,
    req: &Request,
    db: &Arc<Database>,
    graph: &Graph,
    vertex: bool,
    name: &str,
    key: &str,
    replace: bool,
) -> Result<Response> {
    let coll = document_collection(db, graph, vertex, name)?;
    let body = super::body_json(req)?
        .ok_or_else(|| Error::with_message(ErrorCode::BadParameter, "unable to parse body"))?;
    if !body.is_object() {
        return Err(Error::new(ErrorCode::DocumentTypeInvalid));
    }
    let vertices = if vertex {
        Vec::new()
    } else {
        graph.check_edge_document(db, &body, !replace)?
    };
    let opts = graph_write_options(req)?;
    let committed = with_writer(state, req, |w| {
        w.read(db, |reader| graphs::check_vertices_exist(reader, &vertices))?;
        if replace {
            w.replace(&coll, Some(key), body, &opts)
        } else {
            w.update(&coll, Some(key), body, &opts)
        }
    })?;
    Ok(written_response(committed, 200, vertex, false))
}

fn remove_document(
    state: &ServerState,
    req: &Request,
    db: &Arc<Database>,
    graph: &Graph,
    vertex: bool,
    name: &str,
    key: &str,
) -> Result<Response> {
    let coll = document_collection(db, graph, vertex, name)?;
    let opts = graph_write_options(req)?;
    // The document and every edge pointing at it go in one transaction: one engine batch (a
    // concurrent writer of one of them makes it fail with 409/1200).
    let write = graphs::removal_write_set(db, graph, name)?;
    let committed = with_writer(state, req, |w| {
        w.transaction(db, write, opts.wait_for_sync, |trx| {
            graphs::remove_with_edges(trx, db, graph, &coll, key, &opts)
        })
    })?;
    Ok(written_response(committed, 200, vertex, true))
}

fn read_document(
    state: &ServerState,
    req: &Request,
    db: &Arc<Database>,
    graph: &Graph,
    vertex: bool,
    name: &str,
    key: &str,
) -> Result<Response> {
    let coll = document_collection(db, graph, vertex, name)?;
    let found = if quiver_types::validate_key(key).is_err() {
        None
    } else if let Some(id) = transaction_id(req) {
        within(state, req, id, |trx| trx.get_raw(&coll, key))?
    } else {
        db.read_view().get_raw(&coll, key)?
    };
    let (rev, raw) = found.ok_or_else(|| Error::new(ErrorCode::DocumentNotFound))?;
    let rev_text = rev.encode();
    if let Some(expected) = expected_revision(req) {
        if !revision_matches(&expected, rev) {
            let err = Error::with_message(
                ErrorCode::ArangoConflict,
                "conflict, _rev values do not match",
            )
            .with_status(412)
            .with_extra("_id", Value::String(format!("{name}/{key}")))
            .with_extra("_key", Value::String(key.to_string()))
            .with_extra("_rev", Value::String(rev_text.clone()));
            return Ok(Response::from(err).with_header(ETAG, &rev_text));
        }
    }
    if let Some(none_match) = req.header(http::header::IF_NONE_MATCH) {
        if revision_matches(none_match, rev) {
            return Ok(Response::empty(304).with_header(ETAG, &rev_text));
        }
    }
    // The stored document is response-ready JSON: splice it in without parsing it.
    let field = if vertex { "vertex" } else { "edge" };
    let mut body = Vec::with_capacity(raw.len() + 48);
    body.extend_from_slice(b"{\"error\":false,\"code\":200,\"");
    body.extend_from_slice(field.as_bytes());
    body.extend_from_slice(b"\":");
    body.extend_from_slice(&raw);
    body.push(b'}');
    Ok(Response::json_bytes(200, Bytes::from(body)).with_header(ETAG, &rev_text))
}
