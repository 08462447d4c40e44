//! `/_open/*`: the routes that need no credentials. `POST /_open/auth` exchanges a user name
//! and password for a user JWT (lifetime `--server.session-timeout`, one hour by default).

use http::Method;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::json;

use crate::{method_not_allowed, not_found, Request, Response, ServerState};

use super::body_object;

/// Routes `/_open/...`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    match (req.segments.get(1), req.segments.len()) {
        (Some("auth"), 2) if req.method == Method::POST => auth(state, req),
        (Some("auth"), 2) => Ok(method_not_allowed()),
        _ => Ok(not_found(req)),
    }
}

fn auth(state: &ServerState, req: &Request) -> Result<Response> {
    // Without authentication there is nothing to log in to (ArangoDB answers 404).
    if !state.auth.enabled() {
        return Ok(not_found(req));
    }
    let body = body_object(req, ErrorCode::HttpBadParameter, "request body")?;
    let (Some(username), Some(password)) = (
        body.get("username").and_then(|v| v.as_str()),
        body.get("password").and_then(|v| v.as_str()),
    ) else {
        return Err(Error::with_message(
            ErrorCode::HttpBadParameter,
            "invalid JSON: expecting 'username' and 'password' strings",
        ));
    };
    if state.auth.login(username, password, req.peer).is_err() {
        return Err(Error::with_message(
            ErrorCode::HttpUnauthorized,
            "Wrong credentials",
        ));
    }
    let token = state
        .auth
        .secrets()
        .issue_user_token(username, state.auth.config().session_timeout)?;
    Ok(Response::json(200, &json!({ "jwt": token })))
}
