//! One module per API family; [`route`] picks the family from the first path segments.

pub mod admin;
pub mod analyzer;
pub mod backup;
pub mod batch;
pub mod collection;
pub mod cursor;
pub mod database;
pub mod diagnostics;
pub mod document;
pub mod dump;
pub mod edges;
pub mod gharial;
pub mod import;
pub mod index;
pub mod job;
pub mod log;
pub mod metrics;
pub mod open;
pub mod options;
pub mod refused;
pub mod replication;
pub mod restore;
pub mod revisions;
pub mod server_jwt;
pub mod server_tls;
pub mod simple;
pub mod statistics;
pub mod token;
pub mod transaction;
pub mod user;
pub mod view;
pub mod wal;
pub mod write_options;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use crate::{not_found, Request, Response, ServerState};

/// Routes a request whose database exists.
pub fn route(state: &ServerState, req: &Request) -> Response {
    if let Some(refused) = refused::refusal(req) {
        return refused;
    }
    let first = req.segments.first();
    let second = req.segments.get(1);
    let result = match (first, second) {
        (Some("_api"), Some(family)) => match family {
            "version" => return admin::version(state, req),
            "engine" => return admin::engine(state, req),
            "key-generators" => return admin::key_generators(state, req),
            "endpoint" => return admin::endpoint(state, req),
            "batch" => return batch::route(state, req),
            "job" => return job::route(state, req),
            "database" => database::route(state, req),
            "collection" => collection::route(state, req),
            "document" => document::route(state, req),
            "import" => import::route(state, req),
            "index" => index::route(state, req),
            "replication" => replication::route(state, req),
            "dump" => dump::route(state, req),
            "edges" => edges::route(state, req),
            "gharial" => gharial::route(state, req),
            "analyzer" => analyzer::route(state, req),
            "transaction" => transaction::route(state, req),
            "user" => user::route(state, req),
            "view" => view::route(state, req),
            "wal" => wal::route(state, req),
            "token" => token::route(state, req),
            "simple" => simple::route(state, req),
            "cursor" | "query" | "explain" | "query-cache" | "query-plan-cache" => {
                cursor::route(state, req)
            }
            _ => return not_found(req),
        },
        (Some("_admin"), Some("server"))
            if req.segments.get(2) == Some("jwt") && req.segments.len() == 3 =>
        {
            server_jwt::route(state, req)
        }
        (Some("_admin"), Some("server" | "deployment" | "crashes"))
            if req.segments.len() == 3 && diagnostics::serves(req) =>
        {
            return diagnostics::route(state, req)
        }
        (Some("_admin"), Some("aardvark")) => return crate::webui::serve(req),
        (Some("_admin"), Some("metrics")) => return metrics::route(state, req),
        (Some("_admin"), Some("log")) => return log::route(state, req),
        (Some("_admin"), Some(page)) if req.segments.len() == 2 => match page {
            "statistics" => return statistics::statistics(state, req),
            "statistics-description" => return statistics::description(state, req),
            "options" => return options::options(state, req),
            "options-description" => return options::description(state, req),
            "options-public" => return options::public(state, req),
            "support-info" | "crashes" | "activities" | "usage-metrics" => {
                return diagnostics::route(state, req)
            }
            _ => return admin::admin(state, req),
        },
        (Some("_admin"), Some(_)) => return admin::admin(state, req),
        (Some("_open"), Some(_)) => open::route(state, req),
        (None, _) => return crate::webui::root_redirect(req),
        _ => return not_found(req),
    };
    result.unwrap_or_else(Response::from)
}

/// The request body as JSON; `None` when empty. Malformed JSON is 400/600.
pub fn body_json(req: &Request) -> Result<Option<Value>> {
    crate::json::parse_body(&req.body)
}

/// The request body as a JSON object (a missing body counts as `{}`); other JSON types are
/// 400 with `code`.
pub fn body_object(req: &Request, code: ErrorCode, what: &str) -> Result<Value> {
    match body_json(req)? {
        None => Ok(Value::Object(Default::default())),
        Some(v @ Value::Object(_)) => Ok(v),
        Some(_) => Err(Error::with_message(
            code,
            format!("{what} must be a JSON object"),
        )),
    }
}
