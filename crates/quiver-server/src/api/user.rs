//! `/_api/user`: users (create, list, get, replace, update, remove) and their database and
//! collection access levels, over [`crate::auth::UserStore`]. Who may call what is decided by
//! [`crate::access`]; this module only narrows lists for non-administrators.

use std::sync::Arc;

use http::Method;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Map, Value};

use crate::auth::store::{validate_name, UserChange, UserStore};
use crate::auth::user::WILDCARD;
use crate::auth::{password, Identity, Level, UserRecord};
use crate::{method_not_allowed, not_found, Request, Response, ServerState};

use super::body_object;

/// Routes `/_api/user/...`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let rest = req.suffix(2);
    match (&req.method, rest.as_slice()) {
        (&Method::GET | &Method::HEAD, []) => list(state, req),
        (&Method::POST, []) => create(state, req),
        (&Method::GET | &Method::HEAD, [name]) => {
            let user = existing(state, name)?;
            Ok(Response::ok_envelope(200, user.describe()))
        }
        (&Method::PUT, [name]) => change(state, req, name, false),
        (&Method::PATCH, [name]) => change(state, req, name, true),
        (&Method::DELETE, [name]) => {
            let committed = state.auth.users().remove(name)?;
            let mut response = Response::ok_envelope(202, json!({}));
            response.wait_for(Box::new(committed));
            Ok(response)
        }
        (&Method::GET | &Method::HEAD, [name, "database"]) => {
            let user = existing(state, name)?;
            let full = req.bool_param("full", false);
            Ok(Response::ok_result(200, databases(state, &user, full)))
        }
        (&Method::GET | &Method::HEAD, [name, "database", db]) => {
            let user = existing(state, name)?;
            Ok(Response::ok_result(
                200,
                json!(user.database_level(db).as_str()),
            ))
        }
        (&Method::GET | &Method::HEAD, [name, "database", db, collection]) => {
            let user = existing(state, name)?;
            Ok(Response::ok_result(
                200,
                json!(user.collection_level(db, collection).as_str()),
            ))
        }
        (&Method::PUT, [name, "database", db]) => {
            let level = grant(req)?;
            check_database(state, db)?;
            let (_, committed) = state
                .auth
                .users()
                .set_database_level(name, db, Some(level))?;
            let mut response = Response::ok_envelope(200, json!({ *db: level.as_str() }));
            response.wait_for(Box::new(committed));
            Ok(response)
        }
        (&Method::PUT, [name, "database", db, collection]) => {
            let level = grant(req)?;
            check_database(state, db)?;
            let (_, committed) =
                state
                    .auth
                    .users()
                    .set_collection_level(name, db, collection, Some(level))?;
            let mut response =
                Response::ok_envelope(200, json!({ format!("{db}/{collection}"): level.as_str() }));
            response.wait_for(Box::new(committed));
            Ok(response)
        }
        (&Method::DELETE, [name, "database", db]) => {
            let (_, committed) = state.auth.users().set_database_level(name, db, None)?;
            let mut response = Response::ok_envelope(202, json!({}));
            response.wait_for(Box::new(committed));
            Ok(response)
        }
        (&Method::DELETE, [name, "database", db, collection]) => {
            let (_, committed) = state
                .auth
                .users()
                .set_collection_level(name, db, collection, None)?;
            let mut response = Response::ok_envelope(202, json!({}));
            response.wait_for(Box::new(committed));
            Ok(response)
        }
        (
            &Method::GET
            | &Method::HEAD
            | &Method::POST
            | &Method::PUT
            | &Method::PATCH
            | &Method::DELETE,
            _,
        ) => Ok(not_found(req)),
        _ => Ok(method_not_allowed()),
    }
}

fn existing(state: &ServerState, name: &str) -> Result<Arc<UserRecord>> {
    state
        .auth
        .users()
        .get(name)
        .ok_or_else(|| Error::new(ErrorCode::UserNotFound))
}

/// Every user for administrators, only the caller otherwise.
fn list(state: &ServerState, req: &Request) -> Result<Response> {
    let users = state.auth.users().list();
    let visible: Vec<Value> = match &req.identity {
        Some(Identity::User(me)) => {
            let admin = users.iter().any(|u| u.name == **me && u.is_admin());
            users
                .iter()
                .filter(|u| admin || u.name == **me)
                .map(|u| u.describe())
                .collect()
        }
        _ => users.iter().map(|u| u.describe()).collect(),
    };
    Ok(Response::ok_result(200, Value::Array(visible)))
}

fn create(state: &ServerState, req: &Request) -> Result<Response> {
    let body = body_object(req, ErrorCode::BadParameter, "user description")?;
    let name = body
        .get("user")
        .and_then(|v| v.as_str())
        .ok_or_else(|| Error::new(ErrorCode::UserInvalidName))?;
    validate_name(name)?;
    let hash = password::hash(password_of(&body)?.unwrap_or(""))?;
    let record = UserStore::new_record(
        name,
        hash,
        active_of(&body)?.unwrap_or(true),
        extra_of(&body)?.unwrap_or_else(|| json!({})),
    );
    let description = record.describe();
    let committed = state.auth.users().create(record)?;
    let mut response = Response::ok_envelope(201, description);
    response.wait_for(Box::new(committed));
    Ok(response)
}

/// `PUT` (replace: unset fields take their defaults, grants are reset) or `PATCH`.
fn change(state: &ServerState, req: &Request, name: &str, update: bool) -> Result<Response> {
    let body = body_object(req, ErrorCode::BadParameter, "user description")?;
    existing(state, name)?;
    let password = password_of(&body)?;
    let change = if update {
        UserChange {
            password_hash: password.map(password::hash).transpose()?,
            active: active_of(&body)?,
            extra: extra_of(&body)?,
            merge_extra: true,
            reset_grants: false,
        }
    } else {
        UserChange {
            password_hash: Some(password::hash(password.unwrap_or(""))?),
            active: Some(active_of(&body)?.unwrap_or(true)),
            extra: Some(extra_of(&body)?.unwrap_or_else(|| json!({}))),
            merge_extra: false,
            reset_grants: false,
        }
    };
    let (user, committed) = state.auth.users().change(name, change)?;
    let mut response = Response::ok_envelope(200, user.describe());
    response.wait_for(Box::new(committed));
    Ok(response)
}

fn password_of(body: &Value) -> Result<Option<&str>> {
    match body.get("passwd") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(p)) => Ok(Some(p)),
        Some(_) => Err(Error::with_message(
            ErrorCode::BadParameter,
            "passwd must be a string",
        )),
    }
}

fn active_of(body: &Value) -> Result<Option<bool>> {
    match body.get("active") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(Error::with_message(
            ErrorCode::BadParameter,
            "active must be a boolean",
        )),
    }
}

fn extra_of(body: &Value) -> Result<Option<Value>> {
    match body.get("extra") {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Object(_)) => Ok(Some(v.clone())),
        Some(_) => Err(Error::with_message(
            ErrorCode::BadParameter,
            "extra must be an object",
        )),
    }
}

/// The `grant` of a `PUT .../database/...` body: `rw`, `ro` or `none`.
fn grant(req: &Request) -> Result<Level> {
    let body = body_object(req, ErrorCode::BadParameter, "grant")?;
    body.get("grant")
        .and_then(|g| g.as_str())
        .and_then(Level::parse)
        .ok_or_else(|| {
            Error::with_message(
                ErrorCode::BadParameter,
                "grant must be one of \"rw\", \"ro\", \"none\"",
            )
        })
}

/// Grants name an existing database or `*`.
fn check_database(state: &ServerState, db: &str) -> Result<()> {
    if db == WILDCARD || state.core.has_database(db) {
        Ok(())
    } else {
        Err(Error::new(ErrorCode::DatabaseNotFound))
    }
}

/// `GET /_api/user/{user}/database`: the level of every database the user may use; with
/// `full`, every database with its collections' levels (and the explicit wildcards).
fn databases(state: &ServerState, user: &UserRecord, full: bool) -> Value {
    let mut out = Map::new();
    for db in state.core.databases() {
        let name = db.name();
        let level = user.database_level(name);
        if !full {
            if level > Level::None {
                out.insert(name.to_owned(), json!(level.as_str()));
            }
            continue;
        }
        let mut collections = Map::new();
        for c in db.collections() {
            let cname = c.name();
            collections.insert(
                cname.to_string(),
                json!(user.collection_level(name, &cname).as_str()),
            );
        }
        let wildcard = user
            .databases
            .get(name)
            .and_then(|g| g.collections.get(WILDCARD))
            .map_or("undefined", |l| l.as_str());
        collections.insert(WILDCARD.to_owned(), json!(wildcard));
        out.insert(
            name.to_owned(),
            json!({"permission": level.as_str(), "collections": collections}),
        );
    }
    if full {
        if let Some(level) = user.databases.get(WILDCARD).and_then(|g| g.level) {
            out.insert(WILDCARD.to_owned(), json!({"permission": level.as_str()}));
        }
    }
    Value::Object(out)
}
