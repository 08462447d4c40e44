//! `/_api/analyzer`: create, list, read and drop analyzers (`quiver_core::analyzers` keeps
//! them in each database's `_analyzers`). Answers as ArangoDB 3.12: a created analyzer is 201
//! with its bare definition (200 when an equal one existed), reads and drops carry the
//! `error`/`code` envelope. Analyzers of `_system` are listed and readable from other
//! databases only for callers with read access to `_system`.

use std::sync::Arc;

use http::Method;
use quiver_core::analyzers;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::access::may_read_system;
use crate::response::Durability;
use crate::{method_not_allowed, Request, Response, ServerState};

/// Routes `/_api/analyzer[/{name}]`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let db = state.database(&req.database)?;
    let name = req.segments.get(2);
    if req.segments.get(3).is_some() {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            "expecting /_api/analyzer[/<analyzer-name>]",
        ));
    }
    match (&req.method, name) {
        (&Method::POST, None) => create(state, req, &db),
        (&Method::GET, None) => list(state, req, &db),
        (&Method::GET, Some(name)) => get(state, req, &db, name),
        (&Method::DELETE, Some(name)) => remove(state, req, &db, name),
        (&Method::DELETE, None) => Err(Error::with_message(
            ErrorCode::BadParameter,
            "expecting DELETE /_api/analyzer/<analyzer-name>[?force=true]",
        )),
        (&Method::POST, Some(_)) => Err(Error::with_message(
            ErrorCode::BadParameter,
            "expecting POST /_api/analyzer",
        )),
        _ => Ok(method_not_allowed()),
    }
}

fn create(state: &ServerState, req: &Request, db: &Arc<quiver_core::Database>) -> Result<Response> {
    let body = super::body_json(req)?.unwrap_or(Value::Object(Default::default()));
    let committed = analyzers::create(db, &body, state.core.naming())?;
    let created = committed.value();
    let status = if created.created { 201 } else { 200 };
    let mut response = Response::json(status, &created.definition.to_json());
    response.wait_for(Box::new(committed) as Box<dyn Durability>);
    Ok(response)
}

fn list(state: &ServerState, req: &Request, db: &Arc<quiver_core::Database>) -> Result<Response> {
    let mut all = analyzers::builtins();
    all.extend(analyzers::stored(db)?);
    if !db.is_system() && may_read_system(state, req) {
        let system = state.database(quiver_core::SYSTEM_DATABASE)?;
        all.extend(analyzers::stored(&system)?);
    }
    let result: Vec<Value> = all.iter().map(|def| def.to_json()).collect();
    Ok(Response::ok_result(200, Value::Array(result)))
}

fn get(
    state: &ServerState,
    req: &Request,
    db: &Arc<quiver_core::Database>,
    name: &str,
) -> Result<Response> {
    let normalized = analyzers::normalize(db.name(), name);
    if !db.is_system() && normalized.starts_with("_system::") && !may_read_system(state, req) {
        return Err(Error::with_message(
            ErrorCode::Forbidden,
            format!("insufficient rights while getting analyzer: {normalized}"),
        ));
    }
    let def = analyzers::get(&state.core, db, name)?;
    let Value::Object(fields) = def.to_json() else {
        unreachable!("a definition is an object");
    };
    Ok(Response::ok_envelope(200, Value::Object(fields)))
}

fn remove(
    state: &ServerState,
    req: &Request,
    db: &Arc<quiver_core::Database>,
    name: &str,
) -> Result<Response> {
    let force = req.bool_param("force", false);
    let committed = analyzers::remove(&state.core, db, name, force)?;
    let mut response = Response::ok_envelope(200, json!({ "name": committed.value() }));
    response.wait_for(Box::new(committed) as Box<dyn Durability>);
    Ok(response)
}
