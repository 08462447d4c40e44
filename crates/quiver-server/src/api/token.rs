//! `/_api/token/{user}`: a user's access tokens (create, list, revoke). Who may call it (the
//! user themself or an administrator) is decided by [`crate::access`].

use http::Method;
use quiver_errors::{Error, ErrorCode, Result};
use rand::Rng;
use serde_json::{json, Value};

use crate::auth::{now_secs, tokens};
use crate::{method_not_allowed, not_found, Request, Response, ServerState};

use super::body_object;

/// Routes `/_api/token/...`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let rest = req.suffix(2);
    match (&req.method, rest.as_slice()) {
        (&Method::POST, [user]) => create(state, req, user),
        (&Method::GET | &Method::HEAD, [user]) => {
            let record = state
                .auth
                .users()
                .get(user)
                .ok_or_else(|| Error::new(ErrorCode::UserNotFound))?;
            let now = now_secs();
            let list: Vec<Value> = record.tokens.iter().map(|t| t.describe(now)).collect();
            Ok(Response::json(200, &json!({ "tokens": list })))
        }
        (&Method::DELETE, [user, id]) => {
            let id = id.parse::<u64>().map_err(|_| {
                Error::with_message(ErrorCode::HttpNotFound, "access token not found")
            })?;
            let (_, committed) = state.auth.users().remove_token(user, id)?;
            let mut response = Response::empty(200);
            response.wait_for(Box::new(committed));
            Ok(response)
        }
        (&Method::GET | &Method::POST | &Method::DELETE, _) => Ok(not_found(req)),
        _ => Ok(method_not_allowed()),
    }
}

fn create(state: &ServerState, req: &Request, user: &str) -> Result<Response> {
    let body = body_object(req, ErrorCode::BadParameter, "access token description")?;
    let name = body
        .get("name")
        .and_then(|v| v.as_str())
        .filter(|n| !n.is_empty() && n.len() <= 256)
        .ok_or_else(|| {
            Error::with_message(
                ErrorCode::BadParameter,
                "name must be a non-empty string of at most 256 bytes",
            )
        })?;
    let now = now_secs();
    let valid_until = body
        .get("valid_until")
        .and_then(|v| v.as_i64())
        .filter(|&t| t > now)
        .ok_or_else(|| {
            Error::with_message(
                ErrorCode::BadParameter,
                "valid_until must be a Unix timestamp in seconds in the future",
            )
        })?;
    // Random ids are never reused, so a revoked token's id never names a new one.
    let id = rand::thread_rng().gen_range(1..(1u64 << 53));
    let (secret, token) = tokens::generate(id, name, valid_until, now);
    let mut description = token.describe(now);
    let (_, committed) = state.auth.users().add_token(user, token)?;
    description["token"] = json!(secret);
    let mut response = Response::json(200, &description);
    response.wait_for(Box::new(committed));
    Ok(response)
}
