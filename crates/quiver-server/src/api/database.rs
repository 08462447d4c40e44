//! `/_api/database`: list, current, create, drop.

use http::Method;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::{method_not_allowed, not_found, Request, Response, ServerState, DEFAULT_DATABASE};

fn require_system(req: &Request) -> Result<()> {
    if req.database != DEFAULT_DATABASE {
        return Err(Error::new(ErrorCode::UseSystemDatabase));
    }
    Ok(())
}

/// Routes `/_api/database/...`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let rest = req.suffix(2);
    match (&req.method, rest.as_slice()) {
        (&Method::GET | &Method::HEAD, []) => {
            require_system(req)?;
            Ok(Response::ok_result(200, json!(state.core.database_names())))
        }
        (&Method::GET | &Method::HEAD, ["user"]) => {
            // Only the databases the caller may use.
            let names = state.core.database_names();
            let visible: Vec<String> = match &req.identity {
                Some(crate::auth::Identity::User(me)) => match state.auth.users().get(me) {
                    Some(user) => names
                        .into_iter()
                        .filter(|db| user.database_level(db) > crate::auth::Level::None)
                        .collect(),
                    None => Vec::new(),
                },
                _ => names,
            };
            Ok(Response::ok_result(200, json!(visible)))
        }
        (&Method::GET | &Method::HEAD, ["current"]) => {
            let db = state.database(&req.database)?;
            let path = state
                .config
                .data_dir
                .join("databases")
                .join(format!("database-{}", db.id()));
            Ok(Response::ok_result(
                200,
                json!({
                    "id": db.id().to_string(),
                    "name": db.name(),
                    "path": path.to_string_lossy(),
                    "isSystem": db.is_system(),
                    "sharding": "",
                    "replicationFactor": 1,
                    "writeConcern": 1,
                }),
            ))
        }
        (&Method::POST, []) => create(state, req),
        (&Method::DELETE, [name]) => {
            require_system(req)?;
            state.core.drop_database(name)?;
            // A database created later under the same name starts without old grants, slow
            // queries or query properties.
            state.queries.forget_database(name);
            let mut response = Response::ok_result(200, json!(true));
            for committed in state.auth.users().forget_database(name)? {
                response.wait_for(Box::new(committed));
            }
            Ok(response)
        }
        (&Method::DELETE, []) => Err(Error::with_message(
            ErrorCode::HttpBadParameter,
            "expecting DELETE /_api/database/<name>",
        )),
        (&Method::GET | &Method::HEAD | &Method::POST | &Method::DELETE, _) => Ok(not_found(req)),
        _ => Ok(method_not_allowed()),
    }
}

fn create(state: &ServerState, req: &Request) -> Result<Response> {
    require_system(req)?;
    let invalid = || Error::new(ErrorCode::DatabaseNameInvalid);
    let body = super::body_json(req)?.ok_or_else(invalid)?;
    let Value::Object(body) = body else {
        return Err(invalid());
    };
    let name = match body.get("name") {
        Some(Value::String(n)) => n.clone(),
        _ => return Err(invalid()),
    };
    match body.get("users") {
        None | Some(Value::Null) => {}
        Some(Value::Array(users)) => {
            for user in users {
                let ok = user
                    .as_object()
                    .map(|u| {
                        u.get("username").map(Value::is_string).unwrap_or(false)
                            || u.get("user").map(Value::is_string).unwrap_or(false)
                    })
                    .unwrap_or(false);
                if !ok {
                    return Err(Error::with_message(
                        ErrorCode::HttpBadParameter,
                        "each entry of 'users' needs a 'username'",
                    ));
                }
                let username = user.get("username").or_else(|| user.get("user"));
                crate::auth::store::validate_name(username.and_then(Value::as_str).unwrap_or(""))?;
            }
        }
        // ArangoDB answers malformed `users` and `options` with 400/400 (HTTP bad parameter).
        Some(_) => {
            return Err(Error::with_message(
                ErrorCode::HttpBadParameter,
                "invalid users slice",
            ))
        }
    }
    let options = match body.get("options") {
        Some(o @ Value::Object(_)) => o.clone(),
        None | Some(Value::Null) => json!({}),
        Some(_) => {
            return Err(Error::with_message(
                ErrorCode::HttpBadParameter,
                "invalid options slice",
            ))
        }
    };
    state.core.create_database(&name, options)?;
    let mut response = Response::ok_result(201, json!(true));
    // The listed users (created when missing) and the creator administrate the new database,
    // with read-write on all its collections, as ArangoDB does.
    let mut administrators: Vec<String> = Vec::new();
    if let Some(crate::auth::Identity::User(me)) = &req.identity {
        administrators.push(me.to_string());
    }
    for user in body
        .get("users")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let username = user
            .get("username")
            .or_else(|| user.get("user"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if state.auth.users().get(username).is_none() {
            let password = user.get("passwd").and_then(Value::as_str).unwrap_or("");
            let active = user.get("active").and_then(Value::as_bool).unwrap_or(true);
            let extra = match user.get("extra") {
                Some(extra @ Value::Object(_)) => extra.clone(),
                _ => json!({}),
            };
            let hash = crate::auth::password::hash(password)?;
            let record = crate::auth::UserStore::new_record(username, hash, active, extra);
            response.wait_for(Box::new(state.auth.users().create(record)?));
        }
        administrators.push(username.to_owned());
    }
    for user in administrators {
        let users = state.auth.users();
        let rw = Some(crate::auth::Level::ReadWrite);
        let (_, committed) = users.set_database_level(&user, &name, rw)?;
        response.wait_for(Box::new(committed));
        let (_, committed) = users.set_collection_level(&user, &name, "*", rw)?;
        response.wait_for(Box::new(committed));
    }
    Ok(response)
}
