//! `/_admin/server/tls`: the TLS keyfile in use (`GET`, any caller with read access to the
//! database) and its reload from `--ssl.keyfile` (`POST`, superuser only, checked by
//! [`crate::access`]), as ArangoDB 3.12 answers them.

use http::Method;
use quiver_errors::{Error, ErrorCode};
use serde_json::{json, Value};

use crate::{Request, Response, ServerState};

/// Routes `/_admin/server/tls`.
pub fn route(state: &ServerState, req: &Request) -> Response {
    match req.method {
        Method::GET | Method::HEAD => Response::ok_result(200, summary(state)),
        Method::POST => {
            if let Some(tls) = &state.config.tls {
                if let Err(message) = tls.reload() {
                    tracing::warn!("reloading the TLS keyfile failed: {message}");
                    return Error::with_message(
                        ErrorCode::BadParameter,
                        format!("cannot reload the TLS data: {message}"),
                    )
                    .into();
                }
                tracing::info!("TLS keyfile reloaded");
            }
            Response::ok_result(200, summary(state))
        }
        // ArangoDB answers every other method with 403.
        _ => Error::new(ErrorCode::Forbidden).into(),
    }
}

/// `{"keyfile": {...}}`, or `{}` without `ssl://` endpoints (ArangoDB's answer without TLS).
fn summary(state: &ServerState) -> Value {
    match &state.config.tls {
        Some(tls) => json!({ "keyfile": tls.keyfile_summary() }),
        None => json!({}),
    }
}
