//! `/_api/index`: list, create, describe and drop the indexes of a collection.

use std::sync::Arc;

use http::Method;
use quiver_core::Collection;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Map, Value};

use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// Routes `/_api/index/...`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let db = state.database(&req.database)?;
    let rest = req.suffix(2);
    // A handle may arrive as two segments (`coll/123`) or as one with an encoded slash.
    let handle: Option<(&str, &str)> = match rest.as_slice() {
        [] => None,
        [one] => Some(one.split_once('/').ok_or_else(|| {
            Error::with_message(
                ErrorCode::IndexHandleBad,
                format!("illegal index identifier '{one}': expecting collection/index"),
            )
        })?),
        [coll, index] => Some((coll, index)),
        _ => return Ok(not_found(req)),
    };
    match handle {
        None => {
            let coll = match req.param("collection") {
                Some(name) if !name.is_empty() => usable(db.collection(name)?)?,
                _ => return Err(Error::new(ErrorCode::CollectionParameterMissing)),
            };
            match req.method {
                Method::GET | Method::HEAD => list(&coll),
                Method::POST => {
                    let body = super::body_json(req)?.ok_or_else(|| {
                        Error::with_message(ErrorCode::BadParameter, "index definition missing")
                    })?;
                    if !body.is_object() {
                        return Err(Error::with_message(
                            ErrorCode::BadParameter,
                            "index definition must be a JSON object",
                        ));
                    }
                    let (description, created) = coll.create_index(&body)?;
                    let code = if created { 201 } else { 200 };
                    Ok(Response::ok_envelope(
                        code,
                        with_fields(description, &[("isNewlyCreated", created.into())]),
                    ))
                }
                _ => Ok(method_not_allowed()),
            }
        }
        Some((coll_name, index)) => {
            let coll = usable(db.collection(coll_name)?)?;
            match req.method {
                Method::GET | Method::HEAD => Ok(Response::ok_envelope(200, coll.index(index)?)),
                Method::DELETE => {
                    let id = coll.drop_index(index)?;
                    Ok(Response::ok_envelope(200, json!({ "id": id })))
                }
                _ => Ok(method_not_allowed()),
            }
        }
    }
}

fn usable(coll: Arc<Collection>) -> Result<Arc<Collection>> {
    coll.check_usable()?;
    Ok(coll)
}

/// `{indexes:[…], identifiers:{id: index}}` in creation order.
fn list(coll: &Collection) -> Result<Response> {
    let indexes = coll.indexes()?;
    let mut identifiers = Map::new();
    for index in &indexes {
        if let Some(id) = index.get("id").and_then(Value::as_str) {
            identifiers.insert(id.to_string(), index.clone());
        }
    }
    Ok(Response::ok_envelope(
        200,
        json!({ "indexes": indexes, "identifiers": identifiers }),
    ))
}

fn with_fields(mut description: Value, extra: &[(&str, Value)]) -> Value {
    if let Value::Object(map) = &mut description {
        for (k, v) in extra {
            map.insert((*k).to_string(), v.clone());
        }
    }
    description
}
