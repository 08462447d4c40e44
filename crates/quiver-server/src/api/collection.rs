//! `/_api/collection`: create, list, describe, properties, count, figures, revision,
//! checksum, truncate, rename, compact, load/unload, drop.

use http::Method;
use quiver_core::{CollectionSpec, DocumentReader};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::response::Durability;
use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// `{"error":false,"code":200}` merged with a description object and extra fields.
fn described(mut description: Value, extra: &[(&str, Value)]) -> Response {
    if let Value::Object(map) = &mut description {
        for (k, v) in extra {
            map.insert((*k).to_string(), v.clone());
        }
    }
    Response::ok_envelope(200, description)
}

/// Routes `/_api/collection/...`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let db = state.database(&req.database)?;
    let rest = req.suffix(2);
    let get = req.method == Method::GET || req.method == Method::HEAD;
    let put = req.method == Method::PUT;
    match rest.as_slice() {
        [] => match req.method {
            Method::GET => {
                let exclude_system = req.bool_param("excludeSystem", false);
                let list: Vec<Value> = db
                    .collections()
                    .iter()
                    .filter(|c| !(exclude_system && c.is_system()))
                    .map(|c| c.basic_info())
                    .collect();
                Ok(Response::ok_result(200, Value::Array(list)))
            }
            Method::POST => {
                let body = super::body_json(req)?
                    .ok_or_else(|| Error::with_message(ErrorCode::IllegalName, "illegal name"))?;
                let spec = CollectionSpec::from_json(&body)?;
                let coll = db.create_collection(spec)?;
                Ok(Response::ok_envelope(200, coll.properties()))
            }
            _ => Ok(method_not_allowed()),
        },
        [name] => match req.method {
            Method::GET => Ok(Response::ok_envelope(
                200,
                db.collection(name)?.basic_info(),
            )),
            Method::DELETE => {
                // ArangoDB 3.12: collections of a graph are dropped with the graph (1942).
                let target = db.collection(name)?;
                quiver_core::graphs::check_collection_droppable(&db, &target.name())?;
                let id = db.drop_collection(name, req.bool_param("isSystem", false))?;
                Ok(Response::ok_envelope(200, json!({"id": id.to_string()})))
            }
            _ => Ok(method_not_allowed()),
        },
        [name, action] => {
            let coll = db.collection(name)?;
            coll.check_usable()?;
            match (*action, get, put) {
                ("properties", true, _) => Ok(Response::ok_envelope(200, coll.properties())),
                ("properties", _, true) => {
                    let body = super::body_object(req, ErrorCode::BadParameter, "properties")?;
                    Ok(Response::ok_envelope(200, coll.set_properties(&body)?))
                }
                ("count", true, _) => {
                    let count = match super::transaction::transaction_id(req) {
                        Some(trx) => {
                            super::transaction::within(state, req, trx, |t| t.count(&coll))?
                        }
                        None => coll.count()?,
                    };
                    Ok(described(coll.properties(), &[("count", json!(count))]))
                }
                ("figures", true, _) => Ok(described(
                    coll.properties(),
                    &[
                        ("count", json!(coll.count()?)),
                        ("figures", coll.figures()?),
                    ],
                )),
                ("revision", true, _) => Ok(described(
                    coll.properties(),
                    &[("revision", json!(coll.revision_string()?))],
                )),
                ("checksum", true, _) => {
                    let (checksum, _) = coll.checksum(
                        req.bool_param("withRevisions", false),
                        req.bool_param("withData", false),
                    )?;
                    // A never-written collection reports revision "0", as ArangoDB does.
                    Ok(described(
                        coll.basic_info(),
                        &[
                            ("checksum", json!(checksum)),
                            ("revision", json!(coll.revision_string()?)),
                        ],
                    ))
                }
                ("load", _, true) => {
                    // `count` is a body attribute (as ArangoDB reads it); the query
                    // parameter is accepted too.
                    let in_body = super::body_json(req)
                        .ok()
                        .flatten()
                        .and_then(|b| b.get("count").and_then(Value::as_bool));
                    let mut extra = Vec::new();
                    if in_body.unwrap_or_else(|| req.bool_param("count", true)) {
                        extra.push(("count", json!(coll.count()?)));
                    }
                    Ok(described(coll.basic_info(), &extra))
                }
                ("unload", _, true) => Ok(described(coll.basic_info(), &[])),
                ("loadIndexesIntoMemory", _, true) => {
                    Ok(Response::ok_envelope(200, json!({"result": true})))
                }
                ("recalculateCount", _, true) => Ok(Response::ok_envelope(
                    200,
                    json!({"result": true, "count": coll.count()?}),
                )),
                ("truncate", _, true) => {
                    let sync = req.bool_param("waitForSync", false);
                    let committed =
                        super::transaction::with_writer(state, req, |w| w.truncate(&coll, sync))?;
                    let mut response = described(coll.basic_info(), &[]);
                    response.wait_for(Box::new(committed) as Box<dyn Durability>);
                    Ok(response)
                }
                ("rename", _, true) => {
                    let body = super::body_object(req, ErrorCode::BadParameter, "body")?;
                    let new_name = body.get("name").and_then(Value::as_str).ok_or_else(|| {
                        Error::with_message(ErrorCode::IllegalName, "name must be a string")
                    })?;
                    let old_name = db.collection(name)?.name();
                    let renamed = db.rename_collection(name, new_name)?;
                    // Graph definitions follow the rename, as in ArangoDB.
                    quiver_core::graphs::rename_collection(&db, &old_name, &renamed.name())?;
                    Ok(Response::ok_envelope(200, renamed.properties()))
                }
                ("compact", _, true) => {
                    coll.compact()?;
                    Ok(described(coll.basic_info(), &[]))
                }
                ("responsibleShard" | "shards", _, _) => Err(Error::with_message(
                    ErrorCode::HttpNotImplemented,
                    "shards exist only in a cluster",
                )),
                (
                    "properties"
                    | "count"
                    | "figures"
                    | "revision"
                    | "checksum"
                    | "load"
                    | "unload"
                    | "loadIndexesIntoMemory"
                    | "recalculateCount"
                    | "truncate"
                    | "rename"
                    | "compact",
                    _,
                    _,
                ) => Ok(method_not_allowed()),
                _ => Ok(not_found(req)),
            }
        }
        _ => Ok(not_found(req)),
    }
}
