//! `GET /_admin/options` (the options the server runs with, secrets hidden) and
//! `/_admin/options-description` (every option with its section, type, default and help),
//! from the [`crate::state::StartupOptions`] the binary filled in; and
//! `/_admin/options-public`, the few of them any reader may see.

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

/// The options `/_admin/options-public` shows (ArangoDB's list; the cluster ones appear when
/// the binary has them).
const PUBLIC_OPTIONS: [&str; 6] = [
    "database.extended-names",
    "cluster.min-replication-factor",
    "cluster.max-replication-factor",
    "cluster.max-number-of-shards",
    "cluster.api-jwt-policy",
    "server.session-timeout",
];

/// `/_admin/options-public`: served whatever `--server.options-api` says.
pub fn public(state: &ServerState, req: &Request) -> Response {
    if req.method != Method::GET && req.method != Method::HEAD {
        return method_not_allowed();
    }
    let values = &state.config.startup_options.values;
    let public: serde_json::Map<String, serde_json::Value> = PUBLIC_OPTIONS
        .iter()
        .filter_map(|name| values.get(*name).map(|v| ((*name).to_owned(), v.clone())))
        .collect();
    Response::json(200, &public)
}
