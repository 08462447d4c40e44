//! What a cursor call answers: the status, the body, and whether the body's `result` holds
//! documents as stored JSON text. A query whose top-level `RETURN` passes a traversal's
//! vertices through unchanged (`plan::Produce::Raw`) never parses them: each row is the
//! document's text in a `Value::String` (or null for a missing vertex), written into the
//! response verbatim by [`CursorReply::to_bytes`]. In-process callers that want values get
//! them from [`CursorReply::into_plain`], which parses those rows.

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use super::ServiceReply;

/// The answer of `POST /_api/cursor` and its continuations.
#[derive(Debug)]
pub struct CursorReply {
    pub code: u16,
    pub body: Value,
    /// The rows of `body.result` are JSON texts (strings) or null, not values.
    pub raw_result: bool,
}

impl CursorReply {
    /// The reply with every row a value (raw rows parsed).
    pub fn into_plain(self) -> Result<ServiceReply> {
        let CursorReply {
            code,
            mut body,
            raw_result,
        } = self;
        if raw_result {
            if let Some(Value::Array(rows)) = body.get_mut("result") {
                for row in rows.iter_mut() {
                    if let Value::String(text) = row {
                        *row = serde_json::from_str(text).map_err(|e| {
                            Error::with_message(
                                ErrorCode::Internal,
                                format!("stored document is not JSON: {e}"),
                            )
                        })?;
                    }
                }
            }
        }
        Ok((code, body))
    }

    /// The body as JSON bytes, raw rows written as they are.
    pub fn to_bytes(&self) -> Vec<u8> {
        let result_len = match self.body.get("result") {
            Some(Value::Array(rows)) if self.raw_result => rows
                .iter()
                .map(|r| r.as_str().map_or(8, str::len) + 1)
                .sum::<usize>(),
            _ => 0,
        };
        let mut out = Vec::with_capacity(256 + result_len);
        // Writing JSON into a Vec cannot fail.
        match &self.body {
            Value::Object(members) if self.raw_result => {
                out.push(b'{');
                for (i, (name, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    let _ = serde_json::to_writer(&mut out, name);
                    out.push(b':');
                    match (name.as_str(), value) {
                        ("result", Value::Array(rows)) => write_raw_rows(&mut out, rows),
                        _ => {
                            let _ = serde_json::to_writer(&mut out, value);
                        }
                    }
                }
                out.push(b'}');
            }
            body => {
                let _ = serde_json::to_writer(&mut out, body);
            }
        }
        out
    }
}

fn write_raw_rows(out: &mut Vec<u8>, rows: &[Value]) {
    out.push(b'[');
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match row {
            Value::String(text) => out.extend_from_slice(text.as_bytes()),
            other => {
                let _ = serde_json::to_writer(&mut *out, other);
            }
        }
    }
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn raw_rows_are_written_verbatim_and_parsed_for_plain_callers() {
        let body = json!({
            "result": ["{\"_key\":\"a\",\"x\":[1,2]}", null, "{\"_key\":\"b\"}"],
            "hasMore": false,
            "extra": {"s": "a \"quoted\" text"},
        });
        let reply = CursorReply {
            code: 201,
            body: body.clone(),
            raw_result: true,
        };
        let bytes = reply.to_bytes();
        let parsed: Value = serde_json::from_slice(&bytes).unwrap();
        let expected = json!({
            "result": [{"_key": "a", "x": [1, 2]}, null, {"_key": "b"}],
            "hasMore": false,
            "extra": {"s": "a \"quoted\" text"},
        });
        assert_eq!(parsed, expected);
        assert_eq!(reply.into_plain().unwrap(), (201, expected));
        // Without the flag, strings stay strings.
        let plain = CursorReply {
            code: 200,
            body: body.clone(),
            raw_result: false,
        };
        assert_eq!(
            serde_json::from_slice::<Value>(&plain.to_bytes()).unwrap(),
            body
        );
    }
}
