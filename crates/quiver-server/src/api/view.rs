//! `/_api/view`: create, list, describe, change the properties of, rename and drop views
//! (arangosearch; their catalog and indexes are quiver-core's).

use http::Method;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// Routes `/_api/view/...`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let db = state.database(&req.database)?;
    let rest = req.suffix(2);
    match (rest.as_slice(), &req.method) {
        ([], &Method::GET | &Method::HEAD) => {
            let list: Vec<Value> = db.views().iter().map(|v| v.basic_json()).collect();
            Ok(Response::ok_result(200, Value::Array(list)))
        }
        ([], &Method::POST) => {
            let body = super::body_object(req, ErrorCode::BadParameter, "view definition")?;
            let Some(name) = body
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
            else {
                return Err(Error::with_message(
                    ErrorCode::BadParameter,
                    "expecting name parameter to be a non-empty string",
                ));
            };
            let view_type = match body.get("type") {
                Some(Value::String(t)) => t.as_str(),
                None => {
                    return Err(Error::with_message(
                        ErrorCode::BadParameter,
                        "expecting type parameter to be a string",
                    ))
                }
                Some(_) => {
                    return Err(Error::with_message(
                        ErrorCode::BadParameter,
                        "expecting type parameter to be a string",
                    ))
                }
            };
            let view = db.create_view(name, view_type, &body)?;
            Ok(Response::json(201, &db.view_properties(&view)))
        }
        ([name], &Method::GET | &Method::HEAD) => {
            let view = db.view(name)?;
            Ok(Response::ok_envelope(200, view.basic_json()))
        }
        ([name], &Method::DELETE) => {
            db.drop_view(name)?;
            Ok(Response::ok_result(200, json!(true)))
        }
        ([name, "properties"], &Method::GET | &Method::HEAD) => {
            let view = db.view(name)?;
            Ok(Response::ok_envelope(200, db.view_properties(&view)))
        }
        ([name, "properties"], &Method::PUT | &Method::PATCH) => {
            let body = super::body_object(req, ErrorCode::BadParameter, "view properties")?;
            let view = db.update_view(name, &body, req.method == Method::PATCH)?;
            Ok(Response::json(200, &db.view_properties(&view)))
        }
        ([name, "rename"], &Method::PUT) => {
            let body = super::body_object(req, ErrorCode::BadParameter, "rename body")?;
            let Some(new_name) = body.get("name").and_then(Value::as_str) else {
                return Err(Error::with_message(
                    ErrorCode::BadParameter,
                    "expecting name parameter to be a string",
                ));
            };
            let view = db.rename_view(name, new_name)?;
            Ok(Response::ok_envelope(200, view.basic_json()))
        }
        ([], _) | ([_], _) | ([_, "properties" | "rename"], _) => Ok(method_not_allowed()),
        _ => Ok(not_found(req)),
    }
}
