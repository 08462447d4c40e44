//! `/_api/wal/*`, ArangoDB's WAL access API. `lastTick` is the engine's newest visible commit
//! tick. `range` and `tail` are refused (api/refused.rs): the engine folds its WAL into
//! per-collection datafiles and keeps no replication log that operations could be tailed from.

use http::Method;
use quiver_errors::Result;
use serde_json::json;

use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// Routes `/_api/wal/...` (the refused paths never get here).
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    // The database must exist, as for every database-scoped route.
    state.database(&req.database)?;
    match (req.suffix(2).as_slice(), &req.method) {
        (["lastTick"], &Method::GET) => {
            let tick = state.core.engine().last_tick();
            Ok(Response::json(
                200,
                &json!({
                    "tick": tick.to_string(),
                    "time": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                    "server": {"version": super::admin::ARANGO_VERSION},
                }),
            ))
        }
        (["lastTick"], _) => Ok(method_not_allowed()),
        _ => Ok(not_found(req)),
    }
}
