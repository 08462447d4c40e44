//! `/_api/dump/*`: the parallel dump protocol arangodump 3.12 uses by default.
//! `POST /_api/dump/start` (body `{batchSize, prefetchCount, parallelism, shards, ttl}`; on a
//! single server the shards are collection names) answers 201 with the dump's id in
//! `x-arango-dump-id`; `POST /_api/dump/next/{id}?batchId=N&lastBatch=M` answers batch N —
//! documents of one collection as JSON lines, the collection in `x-arango-dump-shard-id` — or
//! 204 when all are done; `DELETE /_api/dump/{id}` ends it. A dump is a batch of
//! [`crate::dump_batches`], so every collection is read from one read view.

use http::{HeaderName, HeaderValue, Method};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use super::replication::DUMP_CONTENT_TYPE;
use crate::{Request, Response, ServerState};

/// The dump's id.
pub const DUMP_ID: &str = "x-arango-dump-id";
/// The collection (shard) a batch belongs to.
pub const DUMP_SHARD_ID: &str = "x-arango-dump-shard-id";
/// Bounds of `batchSize` in bytes.
const MAX_BATCH_SIZE: u64 = 96 * 1024 * 1024;
const DEFAULT_BATCH_SIZE: u64 = 16 * 1024 * 1024;

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message)
}

/// Routes `/_api/dump/...`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let rest = req.suffix(2);
    match (rest.as_slice(), &req.method) {
        (["start"], &Method::POST) => start(state, req),
        (["next", id], &Method::POST) => next(state, req, id),
        ([id], &Method::DELETE) => {
            state.dump_batches.remove(&req.database, id)?;
            Ok(Response::empty(200))
        }
        (_, &Method::DELETE) => Err(bad("expecting DELETE /_api/dump/<id>")),
        (_, &Method::POST) => Err(bad(
            "expecting POST /_api/dump/start or /_api/dump/next/<id>",
        )),
        _ => Err(Error::new(ErrorCode::HttpMethodNotAllowed)),
    }
}

fn start(state: &ServerState, req: &Request) -> Result<Response> {
    let db = state.database(&req.database)?;
    let body = super::body_object(req, ErrorCode::BadParameter, "dump options")?;
    let shards: Vec<String> = match body.get("shards") {
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| {
                v.as_str()
                    .map(String::from)
                    .ok_or_else(|| bad("shards must be strings"))
            })
            .collect::<Result<_>>()?,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err(bad("shards must be an array")),
    };
    let batch_size = match body.get("batchSize") {
        None | Some(Value::Null) => DEFAULT_BATCH_SIZE,
        Some(Value::Number(n)) => n
            .as_u64()
            .ok_or_else(|| bad("batchSize must be a positive integer"))?,
        Some(_) => return Err(bad("batchSize must be a number")),
    }
    .clamp(1, MAX_BATCH_SIZE);
    let ttl = crate::dump_batches::ttl_attribute(&body)?;
    let (id, _) = state.dump_batches.start(&db, ttl)?;
    let batch = state
        .dump_batches
        .get(&req.database, &id.to_string(), ttl)?;
    if let Err(err) = batch.set_parallel(shards, batch_size as usize) {
        let _ = state.dump_batches.remove(&req.database, &id.to_string());
        return Err(err);
    }
    Ok(Response::empty(201).with_header(HeaderName::from_static(DUMP_ID), &id.to_string()))
}

fn next(state: &ServerState, req: &Request, id: &str) -> Result<Response> {
    let number = |name: &str| -> Result<Option<u64>> {
        match req.param(name) {
            None | Some("") => Ok(None),
            Some(text) => text
                .parse()
                .map(Some)
                .map_err(|_| bad(format!("invalid value for '{name}': {text}"))),
        }
    };
    let batch_id = number("batchId")?.ok_or_else(|| bad("expecting 'batchId'"))?;
    let last_batch = number("lastBatch")?;
    let batch = state.dump_batches.get(&req.database, id, None)?;
    match batch.next_parallel(batch_id, last_batch)? {
        None => Ok(Response::empty(204)),
        Some((shard, chunk)) => {
            let mut response = Response::json_bytes(200, chunk.body);
            response.content_type = Some(HeaderValue::from_static(DUMP_CONTENT_TYPE));
            Ok(response.with_header(HeaderName::from_static(DUMP_SHARD_ID), &shard))
        }
    }
}
