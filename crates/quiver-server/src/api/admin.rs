//! Server endpoints: `/_api/version`, `/_api/engine`, `/_admin/*`, `/_api/endpoint`,
//! `/_api/key-generators`.

use std::time::{SystemTime, UNIX_EPOCH};

use http::Method;
use quiver_errors::{Error, ErrorCode};
use serde_json::json;

use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// The ArangoDB version QuiverDB answers as (drivers branch on it).
pub const ARANGO_VERSION: &str = "3.12.4";

fn is_get(req: &Request) -> bool {
    req.method == Method::GET || req.method == Method::HEAD
}

fn version_body(req: &Request) -> serde_json::Value {
    let mut v = json!({
        "server": "arango",
        "version": ARANGO_VERSION,
        "license": "community",
    });
    if req.bool_param("details", false) {
        v["details"] = json!({
            "architecture": std::env::consts::ARCH,
            "arm": if std::env::consts::ARCH.starts_with("aarch") { "true" } else { "false" },
            "build-date": "",
            "compiler": "rustc",
            "host": hostname(),
            "license": "community",
            "mode": "server",
            "platform": std::env::consts::OS,
            "role": "SINGLE",
            "server-version": ARANGO_VERSION,
            "quiver-version": env!("CARGO_PKG_VERSION"),
            "rocksdb-version": "none",
            "v8-version": "none",
        });
    }
    v
}

/// The version as ArangoDB's number: major * 10000 + minor * 100 + patch (`31204`).
fn numeric_version() -> String {
    let mut parts = ARANGO_VERSION
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    (next() * 10000 + next() * 100 + next()).to_string()
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

fn now_float() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// `/_api/version`, `/_admin/version`.
pub fn version(_state: &ServerState, req: &Request) -> Response {
    if req.segments.len() > 2 {
        return not_found(req);
    }
    if !is_get(req) {
        return method_not_allowed();
    }
    Response::json(200, &version_body(req))
}

/// `/_api/engine` and `/_api/engine/stats`.
pub fn engine(_state: &ServerState, req: &Request) -> Response {
    if !is_get(req) {
        return method_not_allowed();
    }
    match req.suffix(2).as_slice() {
        [] => Response::json(
            200,
            &json!({
                "name": "rocksdb",
                "supports": {
                    "dfdb": false,
                    // Every type `POST /_api/index` accepts, as ArangoDB lists its own.
                    "indexes": [
                        "primary", "edge", "persistent", "hash", "skiplist", "ttl", "geo",
                        "fulltext", "zkd", "mdi", "mdi-prefixed", "inverted"
                    ],
                    "aliases": {"indexes": {"hash": "persistent", "skiplist": "persistent"}}
                }
            }),
        ),
        [s] if *s == "stats" => Response::json(200, &json!({})),
        _ => not_found(req),
    }
}

/// `/_api/key-generators`.
pub fn key_generators(_state: &ServerState, req: &Request) -> Response {
    if !is_get(req) {
        return method_not_allowed();
    }
    Response::json(
        200,
        &json!({"keyGenerators": ["traditional", "autoincrement", "uuid", "padded"]}),
    )
}

/// `/_api/endpoint` (deprecated; `_system` only).
pub fn endpoint(state: &ServerState, req: &Request) -> Response {
    if !is_get(req) {
        return method_not_allowed();
    }
    if req.database != crate::DEFAULT_DATABASE {
        return Error::new(ErrorCode::UseSystemDatabase).into();
    }
    let ep = state.config.endpoint.replacen("tcp://", "http://", 1);
    Response::json(200, &json!([{ "endpoint": ep }]))
}

/// Everything under `/_admin/`.
pub fn admin(state: &ServerState, req: &Request) -> Response {
    let rest = req.suffix(1);
    match rest.as_slice() {
        ["version"] => {
            if !is_get(req) {
                return method_not_allowed();
            }
            Response::json(200, &version_body(req))
        }
        ["time"] => {
            if !is_get(req) {
                return method_not_allowed();
            }
            Response::ok_envelope(200, json!({ "time": now_float() }))
        }
        ["license"] => match req.method {
            Method::GET | Method::HEAD => Response::json(200, &json!({"license": "none"})),
            Method::PUT => Error::with_message(
                ErrorCode::OnlyEnterprise,
                "setting a license requires the Enterprise Edition",
            )
            .into(),
            _ => method_not_allowed(),
        },
        ["server", "role"] => {
            if !is_get(req) {
                return method_not_allowed();
            }
            Response::ok_envelope(200, json!({"role": "SINGLE", "mode": "default"}))
        }
        ["server", "mode"] => match req.method {
            Method::GET | Method::HEAD => Response::ok_envelope(200, json!({"mode": "default"})),
            Method::PUT => {
                if req.database != crate::DEFAULT_DATABASE {
                    return Error::new(ErrorCode::UseSystemDatabase).into();
                }
                let body = match crate::json::parse_body(&req.body) {
                    Ok(b) => b,
                    Err(e) => return e.into(),
                };
                match body
                    .as_ref()
                    .and_then(|b| b.get("mode"))
                    .and_then(|m| m.as_str())
                {
                    Some("default") => Response::ok_envelope(200, json!({"mode": "default"})),
                    Some("readonly") => Error::with_message(
                        ErrorCode::NotImplemented,
                        "read-only mode is not supported",
                    )
                    .into(),
                    _ => Error::with_message(
                        ErrorCode::HttpBadParameter,
                        "mode must be 'default' or 'readonly'",
                    )
                    .into(),
                }
            }
            _ => method_not_allowed(),
        },
        ["server", "availability"] => {
            if !is_get(req) {
                return method_not_allowed();
            }
            Response::json(200, &json!({"mode": "default", "writeOpsEnabled": true}))
        }
        ["server", "tls"] => super::server_tls::route(state, req),
        // Encryption at rest (Enterprise Edition) does not exist: ArangoDB's Community answer.
        ["server", "encryption"] => Error::with_message(
            ErrorCode::HttpNotFound,
            "encryption at rest is not supported, so there is no key to rotate",
        )
        .into(),
        ["server", "id"] => Error::with_message(
            ErrorCode::HttpServerError,
            "server id is only available in a cluster",
        )
        .into(),
        ["status"] => {
            if !is_get(req) {
                return method_not_allowed();
            }
            Response::json(
                200,
                &json!({
                    "server": "arango",
                    "version": ARANGO_VERSION,
                    "license": "community",
                    "mode": "server",
                    "operationMode": "server",
                    "foxxApi": false,
                    "host": hostname(),
                    "hostname": hostname(),
                    "pid": std::process::id(),
                    "uptime": state.started.elapsed().as_secs_f64(),
                    "serverInfo": {
                        "role": "SINGLE",
                        "writeOpsEnabled": true,
                        "readOnly": false,
                        "maintenance": false,
                        "persistedId": "",
                        "progress": {"phase": "in wait", "feature": "", "recoveryTick": 0},
                    },
                }),
            )
        }
        ["echo"] => echo(req),
        ["backup", op] => super::backup::backup(state, req, op),
        ["database", "target-version"] => {
            if !is_get(req) {
                return method_not_allowed();
            }
            Response::ok_envelope(200, json!({"version": numeric_version()}))
        }
        _ => not_found(req),
    }
}

fn echo(req: &Request) -> Response {
    let mut headers = serde_json::Map::new();
    for (name, value) in &req.headers {
        headers.insert(
            name.as_str().to_string(),
            String::from_utf8_lossy(value.as_bytes())
                .into_owned()
                .into(),
        );
    }
    let mut params = serde_json::Map::new();
    for (k, v) in &req.query {
        params.insert(k.clone(), v.clone().into());
    }
    let raw = String::from_utf8_lossy(&req.body).into_owned();
    let body_value = match crate::json::parse_body(&req.body) {
        Ok(Some(v)) => v,
        _ => raw.clone().into(),
    };
    Response::json(
        200,
        &json!({
            "authorized": true,
            "user": "root",
            "isAdminUser": true,
            "database": req.database,
            "url": req.path,
            "protocol": "http",
            "portType": "tcp/ip",
            "requestType": req.method.as_str(),
            "requestBody": body_value,
            "rawRequestBody": raw,
            "headers": headers,
            "parameters": params,
            "cookies": {},
            "suffix": req.suffix(2).to_vec(),
            "rawSuffix": req.suffix(2).to_vec(),
            "path": req.path,
            "prefix": "/",
            "internals": {},
        }),
    )
}
