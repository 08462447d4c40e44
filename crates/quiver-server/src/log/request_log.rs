//! The request log: with topic `requests` at debug level, one line per answered request
//! with a request id, method, database, path with its (decoded) query, status and time
//! taken, and the structured parameters switched on (`/_admin/log/structured`). Nothing is
//! computed (no id, no copy of the path) unless the level is on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use http::{Method, StatusCode};

use super::structured::{StructuredParams, StructuredSnapshot};
use crate::Request;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A request being logged.
pub struct RequestLine {
    id: u64,
    method: Method,
    database: String,
    path: String,
}

impl RequestLine {
    /// Starts the line of `request`, or `None` when the request log is off.
    pub fn start(request: &Request, structured: &StructuredParams) -> Option<RequestLine> {
        if !tracing::enabled!(target: "quiver::requests", tracing::Level::DEBUG) {
            return None;
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let params = structured_text(request, structured.snapshot());
        let mut path = request.path.clone();
        for (i, (name, value)) in request.query.iter().enumerate() {
            path.push(if i == 0 { '?' } else { '&' });
            path.push_str(name);
            path.push('=');
            path.push_str(value);
        }
        tracing::debug!(
            target: "quiver::requests",
            "[{id}] {} /_db/{}{path} received, {} body bytes{params}",
            request.method,
            request.database,
            request.body.len()
        );
        Some(RequestLine {
            id,
            method: request.method.clone(),
            database: request.database.to_string(),
            path,
        })
    }

    /// Logs the answer.
    pub fn finish(self, status: StatusCode, started: Instant) {
        tracing::debug!(
            target: "quiver::requests",
            "[{}] {} /_db/{}{} answered {} in {:.6} s",
            self.id,
            self.method,
            self.database,
            self.path,
            status.as_u16(),
            started.elapsed().as_secs_f64()
        );
    }
}

/// The structured parameters that are on, as ` [name: value]` each. The line is written
/// before authentication, so `username` is the name the request claims (its Basic
/// credentials; JWT callers are `-`).
fn structured_text(request: &Request, on: StructuredSnapshot) -> String {
    if !on.any() {
        return String::new();
    }
    let mut text = String::new();
    if on.database {
        text.push_str(&format!(" [database: {}]", request.database));
    }
    if on.username {
        let user = claimed_user(request).unwrap_or_else(|| "-".into());
        text.push_str(&format!(" [username: {user}]"));
    }
    if on.url {
        text.push_str(&format!(" [url: {}]", request.path));
    }
    text
}

fn claimed_user(request: &Request) -> Option<String> {
    use base64::Engine;
    let value = request
        .headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let encoded = value.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    Some(text.split(':').next().unwrap_or("").to_owned())
}
