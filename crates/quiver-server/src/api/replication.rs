//! `/_api/replication/*` as arangodump and arangorestore use it on a single server: dump
//! batches (`batch`), the `inventory` of a database and the `dump` of a collection's documents
//! through a batch's read view; the `restore-*` calls live in [`super::restore`], the
//! revision-based calls (`revisions/tree`, `ranges`, `documents`) in [`super::revisions`].

use std::sync::Arc;

use http::{HeaderName, Method};
use quiver_core::{Collection, Database};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::dump_batches::{ttl_attribute, Batch};
use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// The content type of dump chunks (arangodump checks its prefix).
pub const DUMP_CONTENT_TYPE: &str = "application/x-arango-dump; charset=utf-8";
/// Whether more documents follow the chunk.
pub const CHECK_MORE: &str = "x-arango-replication-checkmore";
/// The position the next request continues from.
pub const LAST_INCLUDED: &str = "x-arango-replication-lastincluded";

/// Default and bounds of `chunkSize` (bytes per dump response), as arangodump's.
const DEFAULT_CHUNK: usize = 128 * 1024;
const MAX_CHUNK: usize = 96 * 1024 * 1024;

/// Routes `/_api/replication/...`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let rest = req.suffix(2);
    match (rest.as_slice(), &req.method) {
        (["batch"], &Method::POST) => start_batch(state, req),
        (["batch", id], &Method::PUT) => {
            let ttl = ttl_attribute(&super::body_object(req, ErrorCode::BadParameter, "body")?)?;
            state.dump_batches.get(&req.database, id, ttl)?;
            Ok(Response::empty(204))
        }
        (["batch", id], &Method::DELETE) => {
            state.dump_batches.remove(&req.database, id)?;
            Ok(Response::empty(204))
        }
        (["batch", ..], _) => Ok(method_not_allowed()),
        (["inventory"], &Method::GET) => inventory(state, req),
        (["logger-state"], &Method::GET) => logger_state(state, req),
        (["dump"], &Method::GET) => dump(state, req),
        (["revisions", what], _) => super::revisions::route(state, req, what),
        (
            ["restore-collection" | "restore-indexes" | "restore-data" | "restore-view"],
            &Method::PUT,
        ) => super::restore::route(state, req, rest.as_slice()[0]),
        (
            ["inventory" | "dump" | "logger-state" | "restore-collection" | "restore-indexes"
            | "restore-data" | "restore-view"],
            _,
        ) => Ok(method_not_allowed()),
        _ => Ok(not_found(req)),
    }
}

/// `GET /_api/replication/logger-state`: the engine's newest visible commit tick as the last
/// logged tick (every commit is visible once it is acknowledged, so nothing is uncommitted),
/// the batches committed since the server started as the events logged, and no clients (the
/// server keeps no replication log that followers tail, see `api/wal.rs`).
fn logger_state(state: &ServerState, req: &Request) -> Result<Response> {
    state.database(&req.database)?;
    let server_id = super::diagnostics::server_id(&state.config.data_dir).map_err(|e| {
        Error::with_message(
            ErrorCode::Internal,
            format!("cannot read the server id: {e}"),
        )
    })?;
    let engine = state.core.engine();
    let tick = engine.last_tick().to_string();
    Ok(Response::json(
        200,
        &json!({
            "state": {
                "running": true,
                "lastLogTick": tick,
                "lastUncommittedLogTick": tick,
                "totalEvents": engine.stats().commits,
                "time": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            },
            "server": {
                "version": super::admin::ARANGO_VERSION,
                "serverId": server_id,
                "engine": "rocksdb",
            },
            "clients": [],
        }),
    ))
}

fn start_batch(state: &ServerState, req: &Request) -> Result<Response> {
    let db = state.database(&req.database)?;
    let ttl = ttl_attribute(&super::body_object(req, ErrorCode::BadParameter, "body")?)?;
    let (id, tick) = state.dump_batches.start(&db, ttl)?;
    Ok(Response::json(
        200,
        &json!({ "id": id.to_string(), "lastTick": tick.to_string(), "state": server_state(tick) }),
    ))
}

/// The `state` object of inventory and batch answers.
fn server_state(tick: u64) -> Value {
    json!({
        "running": true,
        "lastLogTick": tick.to_string(),
        "lastUncommittedLogTick": tick.to_string(),
        "totalEvents": tick,
    })
}

/// The properties of database `db` as `GET /_api/database/current` reports them.
fn database_properties(db: &Database) -> Value {
    json!({
        "id": db.id().to_string(),
        "name": db.name(),
        "isSystem": db.is_system(),
        "sharding": "",
        "replicationFactor": 1,
        "writeConcern": 1,
    })
}

/// A collection as the inventory lists it: `parameters` (its properties, key generator
/// state included) and `indexes` (the user-defined ones, ids without the collection prefix).
pub fn collection_entry(coll: &Collection) -> Result<Value> {
    let mut parameters = coll.properties();
    parameters["deleted"] = false.into();
    let indexes: Vec<Value> = coll
        .indexes()?
        .into_iter()
        .filter(|ix| !matches!(ix["type"].as_str(), Some("primary" | "edge")))
        .map(|mut ix| {
            if let Some(id) = ix["id"].as_str().and_then(|id| id.rsplit_once('/')) {
                ix["id"] = id.1.to_string().into();
            }
            if let Some(map) = ix.as_object_mut() {
                map.remove("selectivityEstimate");
            }
            ix
        })
        .collect();
    Ok(json!({ "parameters": parameters, "indexes": indexes }))
}

fn inventory(state: &ServerState, req: &Request) -> Result<Response> {
    let db = state.database(&req.database)?;
    let include_system = req.bool_param("includeSystem", true);
    let tick = match req.param("batchId") {
        Some(id) => state.dump_batches.get(&req.database, id, None)?.tick(),
        None => db.read_view().snapshot().tick(),
    };
    let mut collections: Vec<Arc<Collection>> = db
        .collections()
        .into_iter()
        .filter(|c| include_system || !c.is_system())
        .collect();
    // Document collections before edge collections, by name: the order arangorestore
    // creates them in.
    collections.sort_by_key(|c| (c.is_edge(), c.name()));
    let collections = collections
        .iter()
        .map(|c| collection_entry(c))
        .collect::<Result<Vec<_>>>()?;
    // Every view with its properties and links by collection name, as arangodump writes
    // them into `<name>.view.json`.
    let views: Vec<Value> = db
        .views()
        .iter()
        .map(|view| db.view_properties(view))
        .collect();
    Ok(Response::json(
        200,
        &json!({
            "collections": collections,
            "views": views,
            "properties": database_properties(&db),
            "state": server_state(tick),
            "tick": tick.to_string(),
        }),
    ))
}

fn number_param(req: &Request, name: &str) -> Result<Option<u64>> {
    match req.param(name) {
        None | Some("") => Ok(None),
        Some(text) => text.parse::<u64>().map(Some).map_err(|_| {
            Error::with_message(
                ErrorCode::BadParameter,
                format!("invalid value for '{name}': {text}"),
            )
        }),
    }
}

fn dump(state: &ServerState, req: &Request) -> Result<Response> {
    let name = match req.param("collection") {
        Some(name) if !name.is_empty() => name,
        _ => return Err(Error::new(ErrorCode::CollectionParameterMissing)),
    };
    let batch_id = req.param("batchId").ok_or_else(|| {
        Error::with_message(
            ErrorCode::BadParameter,
            "replication dump request misses batchId",
        )
    })?;
    let batch: Arc<Batch> = state.dump_batches.get(&req.database, batch_id, None)?;
    let chunk_size = number_param(req, "chunkSize")?
        .map_or(DEFAULT_CHUNK, |n| usize::try_from(n).unwrap_or(MAX_CHUNK))
        .clamp(1, MAX_CHUNK);
    let from = number_param(req, "from")?.unwrap_or(0);
    let envelope = req.bool_param("useEnvelope", true);
    let chunk = batch.next_chunk(name, from, chunk_size, envelope)?;
    let code = if chunk.body.is_empty() { 204 } else { 200 };
    let mut response = Response::json_bytes(code, chunk.body);
    response.content_type = Some(http::HeaderValue::from_static(DUMP_CONTENT_TYPE));
    Ok(response
        .with_header(
            HeaderName::from_static(CHECK_MORE),
            if chunk.more { "true" } else { "false" },
        )
        .with_header(
            HeaderName::from_static(LAST_INCLUDED),
            &chunk.last_included.to_string(),
        ))
}
