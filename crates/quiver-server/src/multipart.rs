//! The multipart framing of `POST /_api/batch` (ArangoDB's format): the boundary of the
//! `multipart/form-data` content type, the parts (each `application/x-arango-batchpart`, with an
//! optional `Content-Id`), and the HTTP request embedded in each part.
//!
//! Hand-written: ArangoDB's batch format (HTTP messages inside parts, `Content-Id` echo) is not
//! form-data as generic multipart crates model it, and the parser must refuse every malformed
//! input with a clean 400 instead of guessing. Fuzzed by `fuzz/server-parsers` (`batch`).

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use quiver_errors::{Error, ErrorCode, Result};

use crate::Request;

/// At most this many parts per batch: bounds the work one request can ask for.
pub const MAX_PARTS: usize = 100_000;

const PART_CONTENT_TYPE: &str = "application/x-arango-batchpart";

pub(crate) fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::HttpBadParameter, message)
}

/// Extracts the boundary from `multipart/form-data; boundary=...`.
pub(crate) fn boundary(content_type: Option<&str>) -> Result<String> {
    let invalid = || bad("invalid content-type or boundary received");
    let ct = content_type.ok_or_else(invalid)?;
    let mut pieces = ct.split(';');
    let mime = pieces.next().unwrap_or("").trim();
    if !mime.eq_ignore_ascii_case("multipart/form-data") {
        return Err(invalid());
    }
    for piece in pieces {
        let (k, v) = piece.split_once('=').unwrap_or((piece, ""));
        if k.trim().eq_ignore_ascii_case("boundary") {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(v);
            // ArangoDB refuses one-character boundaries; they would match inside any body.
            if v.len() < 2 || v.len() > 200 || v.contains(['\r', '\n']) {
                return Err(invalid());
            }
            return Ok(v.to_string());
        }
    }
    Err(invalid())
}

pub(crate) fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut pos = from;
    // Scan for the first byte, then compare the rest: a comparison per position would cost
    // a memcmp call for every byte of a large batch body.
    while pos + needle.len() <= haystack.len() {
        let offset = haystack[pos..=haystack.len() - needle.len()]
            .iter()
            .position(|&b| b == first)?;
        let start = pos + offset;
        if &haystack[start + 1..start + needle.len()] == rest {
            return Some(start);
        }
        pos = start + 1;
    }
    None
}

/// A part of the batch: its Content-Id and the embedded request bytes.
pub(crate) struct Part<'a> {
    pub content_id: Option<String>,
    pub message: &'a [u8],
}

/// Splits the body into parts, checking the framing.
pub(crate) fn split_parts<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<Part<'a>>> {
    let delimiter = format!("--{boundary}");
    let delim = delimiter.as_bytes();
    // Leading blank lines are tolerated; anything else before the first delimiter is not.
    let start = body
        .iter()
        .position(|b| !matches!(b, b'\r' | b'\n'))
        .unwrap_or(body.len());
    if !body[start..].starts_with(delim) {
        return Err(bad("bad request body: does not start with the boundary"));
    }
    let mut parts = Vec::new();
    let mut pos = start + delim.len();
    loop {
        // After a delimiter: `--` ends the body, otherwise a line break starts a part.
        if body[pos..].starts_with(b"--") {
            break;
        }
        pos = skip_line_end(body, pos)
            .ok_or_else(|| bad("bad request body: boundary not followed by a line break"))?;
        let next = find(body, delim, pos)
            .ok_or_else(|| bad("bad request body: missing closing boundary"))?;
        // The line break before the delimiter belongs to the framing.
        let mut end = next;
        if end >= pos + 2 && &body[end - 2..end] == b"\r\n" {
            end -= 2;
        } else if end > pos && body[end - 1] == b'\n' {
            end -= 1;
        }
        parts.push(parse_part(&body[pos..end])?);
        if parts.len() > MAX_PARTS {
            return Err(bad(format!("too many parts in batch (limit {MAX_PARTS})")));
        }
        pos = next + delim.len();
        if pos > body.len() {
            return Err(bad("bad request body: truncated"));
        }
    }
    if parts.is_empty() {
        return Err(bad("bad request body: no parts"));
    }
    Ok(parts)
}

fn skip_line_end(body: &[u8], pos: usize) -> Option<usize> {
    if body[pos..].starts_with(b"\r\n") {
        Some(pos + 2)
    } else if body[pos..].starts_with(b"\n") {
        Some(pos + 1)
    } else {
        None
    }
}

/// Finds the end of a header block: returns (header text, offset of the content).
fn split_header_block(data: &[u8]) -> Option<(&[u8], usize)> {
    let crlf = find(data, b"\r\n\r\n", 0).map(|i| (i, i + 4));
    let lf = find(data, b"\n\n", 0).map(|i| (i, i + 2));
    let (end, content) = match (crlf, lf) {
        (Some(a), Some(b)) => {
            if a.0 <= b.0 {
                a
            } else {
                b
            }
        }
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => return None,
    };
    Some((&data[..end], content))
}

pub(crate) fn parse_part(data: &[u8]) -> Result<Part<'_>> {
    let (header_block, content) = split_header_block(data)
        .ok_or_else(|| bad("invalid multipart message: part without headers"))?;
    let headers = std::str::from_utf8(header_block)
        .map_err(|_| bad("invalid multipart message: part headers are not UTF-8"))?;
    let mut content_type_ok = false;
    let mut content_id = None;
    for line in headers.lines() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| bad("invalid multipart message: malformed part header"))?;
        let name = name.trim();
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-type") {
            content_type_ok = value
                .split(';')
                .next()
                .map(|m| m.trim().eq_ignore_ascii_case(PART_CONTENT_TYPE))
                .unwrap_or(false);
        } else if name.eq_ignore_ascii_case("content-id") {
            content_id = Some(value.to_string());
        }
    }
    if !content_type_ok {
        return Err(bad("invalid content-type for batch part"));
    }
    Ok(Part {
        content_id,
        message: &data[content..],
    })
}

/// Parses an embedded HTTP request (`METHOD /path HTTP/1.1`, headers, body).
pub(crate) fn parse_embedded(
    message: &[u8],
    database: &str,
    whole: Option<&Bytes>,
) -> Result<Request> {
    let (head, body_start) = match split_header_block(message) {
        Some(split) => split,
        None => (message, message.len()),
    };
    let head = std::str::from_utf8(head).map_err(|_| bad("request header is not UTF-8"))?;
    let mut lines = head.lines().map(|l| l.trim_end_matches('\r'));
    let request_line = lines
        .by_ref()
        .find(|l| !l.trim().is_empty())
        .ok_or_else(|| bad("missing request line in batch part"))?;
    let mut words = request_line.split_whitespace();
    let (Some(method), Some(target)) = (words.next(), words.next()) else {
        return Err(bad("malformed request line in batch part"));
    };
    let method =
        Method::from_bytes(method.as_bytes()).map_err(|_| bad("invalid method in batch part"))?;
    let mut headers = HeaderMap::new();
    let mut content_length = None;
    for line in lines {
        if line.trim().is_empty() {
            continue;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| bad("malformed header in batch part"))?;
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_str(value.trim()),
        ) else {
            return Err(bad("invalid header in batch part"));
        };
        if name == http::header::CONTENT_LENGTH {
            content_length = value.to_str().ok().and_then(|v| v.parse::<usize>().ok());
        }
        headers.append(name, value);
    }
    let mut body = &message[body_start.min(message.len())..];
    if let Some(len) = content_length {
        if len < body.len() {
            body = &body[..len];
        }
    }
    // The part's body is a slice of the batch body: share it instead of copying.
    let body = match whole {
        Some(whole) if !body.is_empty() => whole.slice_ref(body),
        _ => Bytes::copy_from_slice(body),
    };
    let mut request = Request::new(method, target, headers, body)?;
    // Parts always run in the batch's database, whatever prefix they name.
    request.database = database.to_owned().into();
    Ok(request)
}
