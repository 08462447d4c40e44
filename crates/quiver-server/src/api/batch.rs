//! `POST /_api/batch`: a `multipart/form-data` body whose parts are complete HTTP requests,
//! executed in order through [`crate::handle`] and answered as one multipart response.
//!
//! The multipart framing is hand-written: ArangoDB's batch format (HTTP messages inside
//! `application/x-arango-batchpart` parts, `Content-Id` echo) is not form-data as generic
//! multipart crates model it, and the parser must refuse every malformed input with a
//! clean 400 instead of guessing.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use quiver_errors::{Error, ErrorCode, Result};

use crate::{Request, Response, ServerState};

/// At most this many parts per batch: bounds the work one request can ask for.
pub const MAX_PARTS: usize = 100_000;

const PART_CONTENT_TYPE: &str = "application/x-arango-batchpart";

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::HttpBadParameter, message)
}

/// Extracts the boundary from `multipart/form-data; boundary=...`.
fn boundary(content_type: Option<&str>) -> Result<String> {
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

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
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
struct Part<'a> {
    content_id: Option<String>,
    message: &'a [u8],
}

/// Splits the body into parts, checking the framing.
fn split_parts<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<Part<'a>>> {
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

fn parse_part(data: &[u8]) -> Result<Part<'_>> {
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
fn parse_embedded(message: &[u8], database: &str, whole: Option<&Bytes>) -> Result<Request> {
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

fn write_part_response(out: &mut Vec<u8>, response: &Response, is_head: bool) {
    let status = response.status;
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(b"Server: ArangoDB\r\n");
    if let Some(ct) = &response.content_type {
        out.extend_from_slice(b"Content-Type: ");
        out.extend_from_slice(ct.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    for (name, value) in &response.headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let is_json = response
        .content_type
        .as_ref()
        .is_some_and(|ct| ct.as_bytes().starts_with(b"application/json"));
    let body = if is_json {
        crate::response::escape_non_ascii(response.body.clone())
    } else {
        response.body.clone()
    };
    out.extend_from_slice(b"Content-Length: ");
    out.extend_from_slice(body.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    if !is_head {
        out.extend_from_slice(&body);
    }
}

/// `POST /_api/batch`.
pub fn route(state: &ServerState, req: &Request) -> Response {
    if req.segments.len() > 2 {
        return crate::not_found(req);
    }
    if req.method != Method::POST {
        return crate::method_not_allowed();
    }
    match run(state, req) {
        Ok(r) => r,
        Err(e) => e.into(),
    }
}

/// Most parts one grouped commit may take: bounds the size of one engine batch.
const MAX_GROUP: usize = 1024;

fn run(state: &ServerState, req: &Request) -> Result<Response> {
    let boundary = boundary(req.header("content-type"))?;
    let parts = split_parts(&req.body, &boundary)?;
    let mut parsed: Vec<(Option<String>, Result<Request>)> = parts
        .into_iter()
        .map(|p| {
            (
                p.content_id,
                // Each part runs as the batch's caller and needs its own route's rights.
                crate::access::admit_part(
                    state,
                    req,
                    parse_embedded(p.message, &req.database, Some(&req.body)),
                ),
            )
        })
        .collect();
    let mut out = Vec::with_capacity(parsed.len() * 256);
    let mut errors = 0usize;
    let mut durability = Vec::new();
    let mut i = 0;
    while i < parsed.len() {
        // Runs of plain inserts into one collection share one commit (see insert_run).
        let run_len = match &parsed[i].1 {
            Ok(first) => match super::document::groupable_insert_target(first) {
                Some(target) => parsed[i..]
                    .iter()
                    .take(MAX_GROUP)
                    .take_while(|(_, r)| {
                        r.as_ref().is_ok_and(|r| {
                            super::document::groupable_insert_target(r) == Some(target)
                                && r.query == first.query
                        })
                    })
                    .count(),
                None => 0,
            },
            Err(_) => 0,
        };
        let responses: Vec<(Response, bool)> = if run_len > 1 {
            // Every request of the run is answered from its response below and never used
            // again, so it is moved out (a placeholder error stays behind).
            let reqs: Vec<Request> = parsed[i..i + run_len]
                .iter_mut()
                .filter_map(|(_, r)| {
                    std::mem::replace(r, Err(Error::new(ErrorCode::Internal))).ok()
                })
                .collect();
            let (responses, pending) = super::document::insert_run(state, &reqs);
            durability.extend(pending);
            responses.into_iter().map(|r| (r, false)).collect()
        } else {
            let taken = std::mem::replace(&mut parsed[i].1, Err(Error::new(ErrorCode::Internal)));
            let response = match taken {
                Ok(inner) => {
                    let is_head = inner.method == Method::HEAD;
                    let nested = inner.segments.first() == Some("_api")
                        && inner.segments.get(1) == Some("batch");
                    if nested {
                        (
                            Response::from(bad("nested batch requests are not supported")),
                            is_head,
                        )
                    } else {
                        (crate::handle(state, inner), is_head)
                    }
                }
                Err(e) => (Response::from(e), false),
            };
            vec![response]
        };
        for (mut response, is_head) in responses {
            let content_id = &parsed[i].0;
            i += 1;
            durability.append(&mut response.durability);
            if response.status.as_u16() >= 400 {
                errors += 1;
            }
            out.extend_from_slice(b"--");
            out.extend_from_slice(boundary.as_bytes());
            out.extend_from_slice(b"\r\nContent-Type: application/x-arango-batchpart\r\n");
            if let Some(id) = content_id {
                out.extend_from_slice(b"Content-Id: ");
                out.extend_from_slice(id.as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            out.extend_from_slice(b"\r\n");
            write_part_response(&mut out, &response, is_head);
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"--");
    out.extend_from_slice(boundary.as_bytes());
    out.extend_from_slice(b"--\r\n");
    let mut response = Response::json_bytes(200, out);
    response.content_type =
        HeaderValue::from_str(&format!("multipart/form-data; boundary={boundary}")).ok();
    response.durability = durability;
    if errors > 0 {
        response = response.with_header(
            HeaderName::from_static("x-arango-errors"),
            &errors.to_string(),
        );
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn arbitrary_bodies_never_panic(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            if let Ok(parts) = split_parts(&body, "XX") {
                for p in parts {
                    let _ = parse_embedded(p.message, "db", None);
                }
            }
        }

        #[test]
        fn mutated_valid_bodies_never_panic(cut in 0usize..120, byte in proptest::prelude::any::<u8>()) {
            let mut body = b"--XX\r\nContent-Type: application/x-arango-batchpart\r\nContent-Id: 1\r\n\r\nPOST /_api/document/c?x=1 HTTP/1.1\r\nContent-Length: 7\r\n\r\n{\"a\":1}\r\n--XX--\r\n".to_vec();
            let at = cut.min(body.len() - 1);
            body[at] = byte;
            if let Ok(parts) = split_parts(&body, "XX") {
                for p in parts {
                    let _ = parse_embedded(p.message, "db", None);
                }
            }
            body.truncate(at);
            let _ = split_parts(&body, "XX");
        }
    }

    #[test]
    fn find_matches_naive_search() {
        let hay = b"aab--SEP--SE--SEP\r\nx";
        for needle in [
            &b"--SEP"[..],
            b"a",
            b"x",
            b"\r\nx",
            b"zz",
            b"aab--SEP--SE--SEP\r\nxx",
        ] {
            for from in 0..=hay.len() + 1 {
                let naive = (from..hay.len()).find(|&i| hay[i..].starts_with(needle));
                assert_eq!(find(hay, needle, from), naive, "{needle:?} from {from}");
            }
        }
        assert_eq!(find(hay, b"", 0), None);
    }

    #[test]
    fn boundary_rules() {
        assert_eq!(
            boundary(Some("multipart/form-data; boundary=XXXsubpartXXX")).unwrap(),
            "XXXsubpartXXX"
        );
        assert_eq!(
            boundary(Some("multipart/form-data; boundary=\"abc\"")).unwrap(),
            "abc"
        );
        for bad in [
            None,
            Some("xxx/xxx"),
            Some("application/json"),
            Some("multipart/form-data"),
            Some("multipart/form-data; boundary="),
            Some("multipart/form-data; boundary=a"),
        ] {
            assert!(boundary(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn parts_are_split_with_ids() {
        let body = "--SEP\r\nContent-Type: application/x-arango-batchpart\r\nContent-Id: 1\r\n\r\nGET /_api/version HTTP/1.1\r\n\r\n\r\n--SEP\r\nContent-Type: application/x-arango-batchpart\r\n\r\nPOST /_api/document/c HTTP/1.1\r\n\r\n{\"a\":1}\r\n--SEP--\r\n";
        let parts = split_parts(body.as_bytes(), "SEP").unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].content_id.as_deref(), Some("1"));
        let r = parse_embedded(parts[1].message, "db", None).unwrap();
        assert_eq!(r.method, Method::POST);
        assert_eq!(r.database, "db");
        assert_eq!(&r.body[..], b"{\"a\":1}");
    }

    #[test]
    fn malformed_bodies_are_refused() {
        let ok_part = "Content-Type: application/x-arango-batchpart\r\n\r\nGET /x HTTP/1.1\r\n\r\n";
        for body in [
            String::new(),
            "garbage".to_string(),
            "--SEP--".to_string(),
            format!("--SEP\r\n{ok_part}"),
            format!("--SEP\r\n{ok_part}\r\n--OTHER--"),
            "--SEP\r\nContent-Type: text/plain\r\n\r\nGET /x HTTP/1.1\r\n\r\n\r\n--SEP--"
                .to_string(),
            "--SEP\r\nno headers here\r\n--SEP--".to_string(),
        ] {
            assert!(split_parts(body.as_bytes(), "SEP").is_err(), "{body:?}");
        }
        assert!(parse_embedded(b"\r\n\r\n", "x", None).is_err());
        assert!(parse_embedded(b"GET\r\n\r\n", "x", None).is_err());
        assert!(parse_embedded(b"G@T /x HTTP/1.1\r\n\r\n", "x", None).is_err());
        assert!(parse_embedded(b"GET relative HTTP/1.1\r\n\r\n", "x", None).is_err());
    }
}
