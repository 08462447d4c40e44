//! `GET /_admin/statistics` and `/_admin/statistics-description`
//! ([`crate::stats::statistics_json`]).

use http::Method;

use crate::stats::statistics_json;
use crate::{method_not_allowed, Request, Response, ServerState};

/// `/_admin/statistics`.
pub fn statistics(state: &ServerState, req: &Request) -> Response {
    if req.method != Method::GET && req.method != Method::HEAD {
        return method_not_allowed();
    }
    Response::json(
        200,
        &statistics_json::statistics(&state.statistics, state.started),
    )
}

/// `/_admin/statistics-description`.
pub fn description(state: &ServerState, req: &Request) -> Response {
    if req.method != Method::GET && req.method != Method::HEAD {
        return method_not_allowed();
    }
    Response::json(200, &statistics_json::description(&state.statistics))
}
