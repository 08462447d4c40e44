//! `/_api/cursor`, `/_api/query*`, `/_api/explain`: AQL, answered by quiver-aql's query
//! service; this module maps paths and methods onto it, `cursor/request.rs` reads the
//! request bodies into the service's typed requests, `cursor/response.rs` writes the
//! service's typed cursor batches as response bodies and `cursor/query_bodies.rs` the
//! service's other typed results (explain, parse, query registry and caches).

mod query_bodies;
mod request;
mod response;

use std::sync::Arc;

use http::Method;
use parking_lot::Mutex;
use quiver_aql::service::{CursorBatch, QueryExtra};
use quiver_aql::source::core::{leased, LeaseReturn};
use quiver_aql::CursorRequest;
use quiver_core::TransactionOptions;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// A 200 response with `body`.
fn ok(body: Value) -> Result<Response> {
    Ok(Response::json(200, &body))
}

/// A cursor batch (rows may be stored documents passed through as JSON text), with status
/// `code`.
fn batch_reply(result: Result<CursorBatch>, code: u16) -> Result<Response> {
    let batch = result?;
    Ok(Response::json_bytes(
        code,
        response::batch_body(&batch, code),
    ))
}

/// Routes the AQL endpoints.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let queries = &state.queries;
    let db: &str = &req.database;
    let family = req.segments.get(1).unwrap_or("");
    let rest = req.suffix(2);
    let body = || -> Result<Value> { Ok(super::body_json(req)?.unwrap_or(Value::Null)) };
    match (family, &req.method, rest.as_slice()) {
        ("cursor", &Method::POST, []) => match super::transaction::transaction_id(req) {
            Some(trx) => create_in_transaction(state, req, trx, body()?),
            None => {
                let mut query = request::cursor_request(req.body_json()?.unwrap_or(&Value::Null))?;
                query.handoff = req.handoff.clone();
                state
                    .recordings
                    .aql_query(&query.query, &query.bind_vars, db);
                for_caller(state, req, &mut query);
                batch_reply(queries.create_cursor_raw(db, query), 201)
            }
        },
        ("cursor", &Method::PUT, []) => Err(Error::with_message(
            ErrorCode::HttpBadParameter,
            "expecting PUT /_api/cursor/<cursor-id>",
        )),
        ("cursor", &Method::POST | &Method::PUT, [id]) => {
            batch_reply(queries.next_batch_raw(db, id, None), 200)
        }
        ("cursor", &Method::POST, [id, batch]) => {
            batch_reply(queries.next_batch_raw(db, id, Some(batch)), 200)
        }
        ("cursor", &Method::DELETE, [id]) => {
            queries.delete_cursor(db, id)?;
            Ok(Response::json(
                202,
                &json!({"id": id, "error": false, "code": 202}),
            ))
        }
        ("cursor", _, [] | [_] | [_, _]) => Ok(method_not_allowed()),
        ("explain", &Method::POST, []) => ok(query_bodies::explain_body(
            queries.explain(db, &request::explain_request(&body()?)?)?,
        )),
        ("explain", _, []) => Ok(method_not_allowed()),
        ("query", &Method::POST, []) => ok(query_bodies::parse_body(
            queries.parse(db, &request::query_text(&body()?)?)?,
        )),
        ("query", &Method::GET, ["current"]) => ok(Value::Array(queries.current(db)?)),
        ("query", &Method::GET, ["slow"]) => ok(Value::Array(queries.slow(db)?)),
        ("query", &Method::DELETE, ["slow"]) => {
            queries.clear_slow(db)?;
            ok(query_bodies::acknowledged())
        }
        ("query", &Method::GET, ["properties"]) => {
            ok(query_bodies::properties_body(&queries.properties(db)?))
        }
        ("query", &Method::PUT, ["properties"]) => {
            let update = request::properties_update(&body()?)?;
            ok(query_bodies::properties_body(
                &queries.set_properties(db, &update)?,
            ))
        }
        ("query", &Method::GET, ["rules"]) => ok(query_bodies::rules_body(queries.rules())),
        ("query", &Method::DELETE, [id]) => {
            queries.kill(db, id)?;
            ok(query_bodies::acknowledged())
        }
        ("query", _, [] | ["current" | "slow" | "properties" | "rules"]) => {
            Ok(method_not_allowed())
        }
        ("query-plan-cache", &Method::GET, []) => {
            let access = crate::access::query_access(state, req);
            ok(query_bodies::plan_cache_body(
                &queries.plan_cache_entries(db, access.as_ref())?,
            ))
        }
        ("query-plan-cache", &Method::DELETE, []) => {
            queries.clear_plan_cache(db)?;
            ok(query_bodies::acknowledged())
        }
        ("query-plan-cache", _, []) => Ok(method_not_allowed()),
        ("query-cache", &Method::GET, ["properties"]) => ok(
            query_bodies::results_cache_properties_body(&queries.results_cache_properties()),
        ),
        ("query-cache", &Method::PUT, ["properties"]) => {
            let update = request::results_cache_update(&body()?)?;
            ok(query_bodies::results_cache_properties_body(
                &queries.set_results_cache_properties(&update),
            ))
        }
        ("query-cache", &Method::GET, ["entries"]) => {
            let access = crate::access::query_access(state, req);
            ok(Value::Array(
                queries.results_cache_entries(db, access.as_ref())?,
            ))
        }
        ("query-cache", &Method::DELETE, []) => {
            queries.clear_results_cache(db);
            ok(query_bodies::acknowledged())
        }
        ("query-cache", _, [] | ["properties" | "entries"]) => Ok(method_not_allowed()),
        _ => Ok(not_found(req)),
    }
}

/// The caller's rights at every collection the query touches, and the user whose caps an
/// open cursor counts against.
fn for_caller(state: &ServerState, req: &Request, query: &mut CursorRequest) {
    query.access = crate::access::query_access(state, req);
    query.user = req
        .identity
        .as_ref()
        .and_then(|i| i.user())
        .map(str::to_owned);
}

/// Runs `body` (a `POST /_api/cursor` body built by another endpoint) in `req`'s database
/// with the caller's collection access, answering the cursor as `POST /_api/cursor` does.
pub(crate) fn run_body(state: &ServerState, req: &Request, body: &Value) -> Result<Response> {
    let mut query = request::cursor_request(body)?;
    for_caller(state, req, &mut query);
    batch_reply(state.queries.create_cursor_raw(&req.database, query), 201)
}

/// Runs `body` (as [`run_body`]) to its end: every result row, and the query's `extra`
/// (statistics, warnings). `rows_hint` (how many rows the caller expects at most) sizes the
/// batches; the rows are fetched batch by batch until the cursor is exhausted.
pub(crate) fn run_to_end(
    state: &ServerState,
    req: &Request,
    body: &Value,
    rows_hint: usize,
) -> Result<(Vec<Value>, Option<Arc<QueryExtra>>)> {
    let mut query = request::cursor_request(body)?;
    for_caller(state, req, &mut query);
    query.batch_size = rows_hint.clamp(1, CursorRequest::DEFAULT_BATCH_SIZE);
    let db: &str = &req.database;
    let mut batch = state.queries.create_cursor(db, query)?;
    let mut rows = Vec::new();
    loop {
        rows.append(&mut batch.rows);
        match (batch.has_more, batch.id.take()) {
            (true, Some(id)) => {
                // Every batch but the last is full, so this ends after the query's rows.
                batch = state.queries.next_batch(db, &id, None)?;
            }
            _ => break,
        }
    }
    Ok((rows, batch.extra))
}

/// Where the transport may run a `POST /_api/cursor` ([`try_inline`]).
pub enum Inline {
    /// Answered already: the query service knows the query to be trivial (its cached plan
    /// touches no data and runs in microseconds, see `quiver_aql::plan_cache`).
    Answered(Response),
    /// The recent runs of the query text were brief (`quiver_aql::run_history`): it may run
    /// through [`crate::handle`] on the calling worker, with a hand-off in the request
    /// ([`Request::handoff`]) that frees the worker should this run take longer.
    Brief,
    /// Anything else (another route, a body the cursor API refuses, a stream transaction, an
    /// async job, a query not known to be brief): through [`crate::handle`] after freeing the
    /// worker.
    Elsewhere,
}

/// Decides where a `POST /_api/cursor` runs, answering it at once if its plan is trivial. The
/// answer is the same wherever it runs: this only spares short queries the hand-off a
/// potentially long query needs.
pub fn try_inline(state: &ServerState, req: &Request) -> Inline {
    if req.method != Method::POST
        || req.segments.len() != 2
        || &req.segments[1] != "cursor"
        || req.header(&crate::request::X_ARANGO_ASYNC).is_some()
        || super::transaction::transaction_id(req).is_some()
        || state.check_database(&req.database).is_err()
    {
        return Inline::Elsewhere;
    }
    // Parsed once: the route reads the same parse if the query runs elsewhere.
    let Ok(Some(body)) = req.body_json() else {
        return Inline::Elsewhere;
    };
    let Ok(mut request) = request::cursor_request(body) else {
        return Inline::Elsewhere;
    };
    request.user = req
        .identity
        .as_ref()
        .and_then(|i| i.user())
        .map(str::to_owned);
    let Some(answer) = state.queries.create_cursor_inline(&req.database, &request) else {
        return if state.queries.runs_briefly(&req.database, &request.query) {
            Inline::Brief
        } else {
            Inline::Elsewhere
        };
    };
    // Answered here, so [`crate::handle`] does not see it: record it as it would.
    state
        .recordings
        .api_call(&req.method, &req.path, &req.database);
    state
        .recordings
        .aql_query(&request.query, &request.bind_vars, &req.database);
    Inline::Answered(batch_reply(answer, 201).unwrap_or_else(Into::into))
}

/// Runs a query inside stream transaction `trx` (`x-arango-trx-id`): it reads the
/// transaction's snapshot and staged writes, and its writes join the transaction (visible to
/// others only after the commit). The transaction is lent to the query for the duration of
/// the request: a placeholder takes its place in the registry slot (which stays locked, so
/// nothing else can use it meanwhile), and the query hands it back on success. A query that
/// fails after staging writes does not hand it back: those partial writes cannot be undone
/// inside the transaction, so the stream transaction is aborted (later use answers 1654).
fn create_in_transaction(
    state: &ServerState,
    req: &Request,
    trx: &str,
    body: Value,
) -> Result<Response> {
    let db = state.database(&req.database)?;
    let back: LeaseReturn = Arc::new(Mutex::new(None));
    let mut lost = false;
    let reply = super::transaction::within(state, req, trx, |owned| {
        let placeholder = db.begin_transaction(TransactionOptions::default())?;
        let lent = std::mem::replace(owned, placeholder);
        let lent = leased(lent, Arc::clone(&back));
        // Read inside the lease, as the query's own errors are: a body the service cannot
        // take ends the lease without handing the transaction back, like a failed query.
        let reply = request::cursor_request(&body).and_then(|mut query| {
            state
                .recordings
                .aql_query(&query.query, &query.bind_vars, &req.database);
            for_caller(state, req, &mut query);
            state.queries.create_cursor_in(&req.database, query, lent)
        });
        match back.lock().take() {
            Some(returned) => *owned = returned,
            None => lost = true,
        }
        Ok(reply)
    })?;
    if lost {
        // The abort can only fail if someone finished the transaction meanwhile, which the
        // locked slot rules out; the query's own error is the one to report.
        let _ = state.core.stream_transactions().abort(trx, &req.database);
    }
    batch_reply(reply, 201)
}
