//! `/_admin/server/jwt`: the SHA-256 digests of the loaded JWT secrets (`GET`) and their
//! reload from `--server.jwt-secret-keyfile` / `--server.jwt-secret-folder` (`POST`).
//! Superuser only ([`crate::access`]).

use http::Method;
use quiver_errors::Result;
use serde_json::json;

use crate::auth::jwt::Secrets;
use crate::{method_not_allowed, Request, Response, ServerState};

/// Routes `/_admin/server/jwt`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    match req.method {
        Method::GET | Method::HEAD => Ok(describe(&state.auth.secrets())),
        Method::POST => Ok(describe(&*state.auth.reload_secrets()?)),
        _ => Ok(method_not_allowed()),
    }
}

fn describe(secrets: &Secrets) -> Response {
    let (active, passive) = secrets.digests();
    let passive: Vec<_> = passive.iter().map(|d| json!({ "sha256": d })).collect();
    Response::ok_result(
        200,
        json!({ "active": { "sha256": active }, "passive": passive }),
    )
}
