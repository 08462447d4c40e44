//! `GET /_admin/options` (the options the server runs with, secrets hidden) and
//! `/_admin/options-description` (every option with its section, type, default and help),
//! from the [`crate::state::StartupOptions`] the binary filled in.

use http::Method;

use crate::{method_not_allowed, Request, Response, ServerState};

/// `/_admin/options`.
pub fn options(state: &ServerState, req: &Request) -> Response {
    if req.method != Method::GET && req.method != Method::HEAD {
        return method_not_allowed();
    }
    Response::json(200, &state.config.startup_options.values)
}

/// `/_admin/options-description`.
pub fn description(state: &ServerState, req: &Request) -> Response {
    if req.method != Method::GET && req.method != Method::HEAD {
        return method_not_allowed();
    }
    Response::json(200, &state.config.startup_options.descriptions)
}
