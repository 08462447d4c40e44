//! A transport-free response, plus the durability it still waits for.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode};
use quiver_errors::{Error, ErrorCode, Result};
use serde::Serialize;

/// JSON responses carry exactly this content type (ArangoDB's; rb specs compare it literally).
pub const JSON_CONTENT_TYPE: &str = "application/json; charset=utf-8";

/// A write whose durability a response must wait for before it is sent: the transport awaits
/// it without blocking a worker thread, the batch API and the job queue collect or block.
pub trait Durability: Send + 'static {
    /// Blocks the calling thread until the write is durable.
    fn wait_blocking(self: Box<Self>) -> Result<()>;
    /// Waits without blocking the executor.
    fn wait_async(self: Box<Self>) -> Pin<Box<dyn Future<Output = Result<()>> + Send>>;
}

/// What a handler answers.
pub struct Response {
    /// HTTP status.
    pub status: StatusCode,
    /// The `Content-Type`; `None` for empty bodies without a type (204, 202 of async jobs).
    pub content_type: Option<HeaderValue>,
    /// Further headers (ETag, Location, X-Arango-Error-Codes, ...).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body (for HEAD the transport sends only its length).
    pub body: Bytes,
    /// Writes this response reports that must be durable before the client sees it.
    pub durability: Vec<Box<dyn Durability>>,
}

impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Response")
            .field("status", &self.status)
            .field("content_type", &self.content_type)
            .field("headers", &self.headers)
            .field("body", &String::from_utf8_lossy(&self.body))
            .field("pending_writes", &self.durability.len())
            .finish()
    }
}

fn status(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

impl Response {
    /// A response with a JSON body already serialized.
    pub fn json_bytes(code: u16, body: impl Into<Bytes>) -> Response {
        Response {
            status: status(code),
            content_type: Some(HeaderValue::from_static(JSON_CONTENT_TYPE)),
            headers: Vec::new(),
            body: body.into(),
            durability: Vec::new(),
        }
    }

    /// A response serializing `value` as its JSON body.
    pub fn json<T: Serialize + ?Sized>(code: u16, value: &T) -> Response {
        match serde_json::to_vec(value) {
            Ok(bytes) => Response::json_bytes(code, bytes),
            Err(e) => Response::error(&Error::with_message(
                ErrorCode::Internal,
                format!("cannot serialize response: {e}"),
            )),
        }
    }

    /// `{"error":false,"code":N, ...fields}`: ArangoDB's management envelope.
    pub fn ok_envelope(code: u16, fields: serde_json::Value) -> Response {
        let mut map = serde_json::Map::new();
        map.insert("error".into(), false.into());
        map.insert("code".into(), code.into());
        if let serde_json::Value::Object(extra) = fields {
            for (k, v) in extra {
                map.insert(k, v);
            }
        }
        Response::json(code, &serde_json::Value::Object(map))
    }

    /// `{"error":false,"code":N,"result":value}`.
    pub fn ok_result(code: u16, result: serde_json::Value) -> Response {
        Response::ok_envelope(code, serde_json::json!({ "result": result }))
    }

    /// An empty response with just a status.
    pub fn empty(code: u16) -> Response {
        Response {
            status: status(code),
            content_type: None,
            headers: Vec::new(),
            body: Bytes::new(),
            durability: Vec::new(),
        }
    }

    /// The ArangoDB error envelope for `err`, with its status.
    pub fn error(err: &Error) -> Response {
        Response::json(err.http_status(), &err.to_envelope())
    }

    /// Adds a header; values that are not valid header text are dropped rather than failing
    /// the request (they come from stored data such as keys, which are ASCII anyway).
    #[must_use]
    pub fn with_header(mut self, name: HeaderName, value: &str) -> Response {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.headers.push((name, v));
        }
        self
    }

    /// Adds a header whose value is already built.
    #[must_use]
    pub fn with_header_value(mut self, name: HeaderName, value: HeaderValue) -> Response {
        self.headers.push((name, value));
        self
    }

    /// Registers a write this response must wait for.
    pub fn wait_for(&mut self, durability: Box<dyn Durability>) {
        self.durability.push(durability);
    }

    /// A header value previously added with [`Response::with_header`].
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.as_str().eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.to_str().ok())
    }

    /// The body as JSON (tests and the job list use it).
    pub fn body_json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// Blocks until every registered write is durable; a failed sync turns the response into
    /// that error, because the client must not believe an undurable write was acknowledged.
    pub fn settle_blocking(mut self) -> Response {
        let pending = std::mem::take(&mut self.durability);
        for d in pending {
            if let Err(e) = d.wait_blocking() {
                return Response::error(&e);
            }
        }
        self
    }

    /// Whether [`Response::settle`] has a sync to wait for.
    pub fn waits_for_durability(&self) -> bool {
        !self.durability.is_empty()
    }

    /// [`Response::settle_blocking`] without blocking the executor.
    pub async fn settle(mut self) -> Response {
        let pending = std::mem::take(&mut self.durability);
        for d in pending {
            if let Err(e) = d.wait_async().await {
                return Response::error(&e);
            }
        }
        self
    }
}

impl From<Error> for Response {
    fn from(err: Error) -> Response {
        Response::error(&err)
    }
}

impl From<ErrorCode> for Response {
    fn from(code: ErrorCode) -> Response {
        Response::error(&Error::new(code))
    }
}

impl<T: Send + 'static> Durability for quiver_core::Committed<T> {
    fn wait_blocking(self: Box<Self>) -> Result<()> {
        (*self).wait().map(|_| ())
    }

    fn wait_async(self: Box<Self>) -> Pin<Box<dyn Future<Output = Result<()>> + Send>> {
        Box::pin(async move { (*self).wait_async().await.map(|_| ()) })
    }
}

/// Escapes every non-ASCII character of a JSON text as `\uXXXX` (upper-case hex, surrogate
/// pairs beyond the BMP), as ArangoDB's JSON writer does. Outside string literals JSON is pure
/// ASCII, so every non-ASCII character is inside a string and can be escaped in place without
/// parsing. ASCII-only bodies (the common case) are returned untouched.
pub fn escape_non_ascii(body: Bytes) -> Bytes {
    if body.is_ascii() {
        return body;
    }
    let Ok(text) = std::str::from_utf8(&body) else {
        return body;
    };
    let mut out = String::with_capacity(body.len() + body.len() / 2);
    let mut units = [0u16; 2];
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04X}"));
            }
        }
    }
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_ascii_is_escaped_like_arangodb() {
        let body = Bytes::from("{\"a\":\"öä Grüß 😀\"}");
        let escaped = escape_non_ascii(body);
        assert_eq!(
            &escaped[..],
            br#"{"a":"\u00F6\u00E4 Gr\u00FC\u00DF \uD83D\uDE00"}"#
        );
        let back: serde_json::Value = serde_json::from_slice(&escaped).unwrap();
        assert_eq!(back["a"], "öä Grüß 😀");
        let ascii = Bytes::from_static(b"{\"a\":1}");
        assert_eq!(escape_non_ascii(ascii.clone()).as_ptr(), ascii.as_ptr());
    }
}
