//! Diagnostics for operators and support: `/_admin/support-info`, `/_admin/deployment/id`,
//! `/_admin/crashes*` (no crash dumps are written, so the list is empty),
//! `/_admin/activities`, `/_admin/server/api-calls` and `/_admin/server/aql-queries`
//! (the recordings of [`crate::stats::recordings`]) and `/_admin/usage-metrics`.

use std::io::Write;
use std::path::Path;

use http::Method;
use quiver_errors::{Error, ErrorCode};
use serde_json::{json, Value};

use crate::api::admin::ARANGO_VERSION;
use crate::{method_not_allowed, Request, Response, ServerState};

/// Whether a three-segment `/_admin/…` path is one of this module's.
pub fn serves(req: &Request) -> bool {
    matches!(
        req.suffix(1).as_slice(),
        ["server", "api-calls" | "aql-queries"] | ["deployment", "id"] | ["crashes", _]
    )
}

/// Routes the paths of this module (below `/_admin/`).
pub fn route(state: &ServerState, req: &Request) -> Response {
    match req.suffix(1).as_slice() {
        ["support-info"] => support_info(state, req),
        ["deployment", "id"] => deployment(state, req),
        ["crashes"] => crashes(req, None),
        ["crashes", crash_id] => crashes(req, Some(*crash_id)),
        ["activities"] => activities(state, req),
        ["server", what @ ("api-calls" | "aql-queries")] => recordings(state, req, what),
        ["usage-metrics"] => usage_metrics(req),
        _ => crate::not_found(req),
    }
}

fn is_get(req: &Request) -> bool {
    req.method == Method::GET || req.method == Method::HEAD
}

/// The file in the data directory that keeps the deployment's id.
const DEPLOYMENT_ID_FILE: &str = "DEPLOYMENT_ID";

/// The deployment's id: a UUID made on first request and kept in the data directory, so it
/// stays the same across restarts. Two first requests at once agree: the id is written to a
/// private file that is then linked into place, which fails if another got there first.
fn deployment_id(data_dir: &Path) -> std::io::Result<String> {
    let path = data_dir.join(DEPLOYMENT_ID_FILE);
    match std::fs::read_to_string(&path) {
        Ok(id) => return Ok(id.trim().to_string()),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        Err(_) => {}
    }
    let id = uuid::Uuid::new_v4().to_string();
    let staging = data_dir.join(format!("{DEPLOYMENT_ID_FILE}.{id}"));
    {
        let mut f = std::fs::File::create(&staging)?;
        f.write_all(id.as_bytes())?;
        f.sync_all()?;
    }
    let linked = std::fs::hard_link(&staging, &path);
    let _ = std::fs::remove_file(&staging);
    match linked {
        Ok(()) => Ok(id),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Ok(std::fs::read_to_string(&path)?.trim().to_string())
        }
        Err(e) => Err(e),
    }
}

/// The server's id as the replication API reports it (`serverId`, a decimal number as in
/// ArangoDB): the first 48 bits of the deployment id, so it is kept across restarts too.
pub fn server_id(data_dir: &Path) -> std::io::Result<String> {
    let id = deployment_id(data_dir)?;
    let uuid = uuid::Uuid::parse_str(&id)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    Ok(((uuid.as_u128() >> 80) as u64).max(1).to_string())
}

/// `GET /_admin/deployment/id`.
pub fn deployment(state: &ServerState, req: &Request) -> Response {
    if !is_get(req) {
        return method_not_allowed();
    }
    match deployment_id(&state.config.data_dir) {
        Ok(id) => Response::json(200, &json!({ "id": id })),
        Err(e) => Error::with_message(
            ErrorCode::HttpServerError,
            format!("cannot read or create the deployment id: {e}"),
        )
        .into(),
    }
}

/// `/_admin/support-info` (`_system` only; ArangoDB accepts any method).
pub fn support_info(state: &ServerState, req: &Request) -> Response {
    if req.database != crate::DEFAULT_DATABASE {
        return Error::new(ErrorCode::UseSystemDatabase).into();
    }
    let process = crate::stats::process::read();
    let id = deployment_id(&state.config.data_dir).unwrap_or_default();
    let date = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    Response::json(
        200,
        &json!({
            "date": date,
            "deployment": {"type": "single", "id": id},
            "host": {
                "role": "SINGLE",
                "maintenance": false,
                "readOnly": false,
                "version": ARANGO_VERSION,
                "build": env!("CARGO_PKG_VERSION"),
                "license": "community",
                "engine": "rocksdb",
                "os": std::env::consts::OS,
                "platform": std::env::consts::OS,
                "architecture": std::env::consts::ARCH,
                "physicalMemory": {"value": process.physical_memory, "overridden": false},
                "numberOfCores": {"value": process.cpu_cores, "overridden": false},
                "processStats": {
                    "processUptime": state.started.elapsed().as_secs_f64(),
                    "numberOfThreads": process.threads,
                    "virtualSize": process.virtual_size,
                    "residentSetSize": process.resident_size,
                    "minorPageFaults": process.minor_page_faults,
                    "majorPageFaults": process.major_page_faults,
                    "userTime": process.user_time,
                    "systemTime": process.system_time,
                },
                "databases": state.core.database_names().len(),
            },
        }),
    )
}

/// `/_admin/crashes` and `/_admin/crashes/{id}`: QuiverDB writes no crash dumps (a panic
/// costs one request a 500, see `transport.rs`), so the list is empty and every id unknown.
pub fn crashes(req: &Request, id: Option<&str>) -> Response {
    match (id, &req.method) {
        (None, &Method::GET | &Method::HEAD) => Response::ok_result(200, json!([])),
        (Some(id), &Method::GET | &Method::HEAD | &Method::DELETE) => Error::with_message(
            ErrorCode::HttpNotFound,
            format!("crash dump '{id}' not found"),
        )
        .into(),
        _ => method_not_allowed(),
    }
}

/// `GET /_admin/activities`: the running AQL queries of every database and the request
/// asking. Identifiers are opaque strings, as in ArangoDB.
pub fn activities(state: &ServerState, req: &Request) -> Response {
    if !is_get(req) {
        return method_not_allowed();
    }
    let handler_id = format!("{req:p}");
    let mut list = vec![json!({
        "id": handler_id,
        "type": "RestHandler",
        "parent": {"id": "0x0"},
        "metadata": {"method": req.method.as_str(), "url": req.path, "handler": "activities"},
    })];
    for (id, database, query) in state.queries.running_queries() {
        list.push(json!({
            "id": format!("aql-{id}"),
            "type": "AQLQuery",
            "parent": {"id": "0x0"},
            "metadata": {"query": query, "database": database, "id": id.to_string()},
        }));
    }
    Response::json(200, &json!({ "activities": list }))
}

/// `GET /_admin/server/api-calls` and `GET /_admin/server/aql-queries`.
pub fn recordings(state: &ServerState, req: &Request, what: &str) -> Response {
    if !is_get(req) {
        return method_not_allowed();
    }
    let result: Value = match what {
        "api-calls" => state.recordings.api_calls_json(),
        _ => state.recordings.aql_queries_json(),
    };
    Response::ok_result(200, result)
}

/// `GET /_admin/usage-metrics`: ArangoDB fills it on DB-Servers with per-shard usage; a
/// single server has no shards, so the Prometheus page is empty.
pub fn usage_metrics(req: &Request) -> Response {
    if !is_get(req) {
        // ArangoDB answers this endpoint's other methods with 400 (error 405).
        return Error::with_message(ErrorCode::HttpMethodNotAllowed, "method not supported")
            .with_status(400)
            .into();
    }
    let mut response = Response::empty(200);
    response.content_type = Some(http::HeaderValue::from_static(
        crate::api::metrics::PROMETHEUS_CONTENT_TYPE,
    ));
    response
}
