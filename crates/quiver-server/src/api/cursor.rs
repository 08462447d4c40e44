//! `/_api/cursor`, `/_api/query*`, `/_api/explain`: AQL, answered by quiver-aql's query
//! service (JSON in, JSON out); this module only maps paths and methods onto it.

use http::Method;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use crate::{method_not_allowed, not_found, Request, Response, ServerState};

fn reply(result: Result<(u16, Value)>) -> Result<Response> {
    let (status, body) = result?;
    Ok(Response::json(status, &body))
}

/// Routes the AQL endpoints.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let queries = &state.queries;
    let db = req.database.as_str();
    let family = req.segments.get(1).map(String::as_str).unwrap_or("");
    let rest: Vec<&str> = req.suffix(2).iter().map(String::as_str).collect();
    let body = || -> Result<Value> { Ok(super::body_json(req)?.unwrap_or(Value::Null)) };
    match (family, &req.method, rest.as_slice()) {
        ("cursor", &Method::POST, []) => reply(queries.create_cursor(db, body()?)),
        ("cursor", &Method::PUT, []) => Err(Error::with_message(
            ErrorCode::HttpBadParameter,
            "expecting PUT /_api/cursor/<cursor-id>",
        )),
        ("cursor", &Method::POST | &Method::PUT, [id]) => reply(queries.next_batch(db, id, None)),
        ("cursor", &Method::POST, [id, batch]) => reply(queries.next_batch(db, id, Some(batch))),
        ("cursor", &Method::DELETE, [id]) => reply(queries.delete_cursor(db, id)),
        ("cursor", _, [] | [_] | [_, _]) => Ok(method_not_allowed()),
        ("explain", &Method::POST, []) => reply(queries.explain(db, body()?)),
        ("explain", _, []) => Ok(method_not_allowed()),
        ("query", &Method::POST, []) => reply(queries.parse(db, body()?)),
        ("query", &Method::GET, ["current"]) => reply(queries.current(db)),
        ("query", &Method::GET, ["slow"]) => reply(queries.slow(db)),
        ("query", &Method::DELETE, ["slow"]) => reply(queries.clear_slow(db)),
        ("query", &Method::GET, ["properties"]) => reply(queries.properties(db)),
        ("query", &Method::PUT, ["properties"]) => reply(queries.set_properties(db, body()?)),
        ("query", &Method::GET, ["rules"]) => reply(queries.rules()),
        ("query", &Method::DELETE, [id]) => reply(queries.kill(db, id)),
        ("query", _, [] | ["current" | "slow" | "properties" | "rules"]) => {
            Ok(method_not_allowed())
        }
        _ => Ok(not_found(req)),
    }
}
