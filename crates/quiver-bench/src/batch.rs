//! ArangoDB's batch request format (`POST /_api/batch`): a `multipart/form-data` body whose
//! parts have `Content-Type: application/x-arango-batchpart` and each hold one raw HTTP request;
//! the response is multipart again, one raw HTTP response per part, plus an `x-arango-errors`
//! header counting the failed parts.

use crate::http::{find, Method};

/// The boundary arangob used; kept so server logs look the same for both tools.
pub const BOUNDARY: &str = "XXXarangob-benchmarkXXX";

/// `Content-Type` of a batch request.
pub fn content_type() -> String {
    format!("multipart/form-data; boundary={BOUNDARY}")
}

/// Appends one part (one request) to a batch body. `path` is relative to the database the
/// batch is sent to (no `/_db/` prefix), as ArangoDB resolves parts against it.
pub fn push_part(out: &mut Vec<u8>, content_id: u64, method: Method, path: &str, body: &[u8]) {
    out.extend_from_slice(b"--");
    out.extend_from_slice(BOUNDARY.as_bytes());
    out.extend_from_slice(b"\r\nContent-Type: application/x-arango-batchpart\r\nContent-Id: ");
    out.extend_from_slice(content_id.to_string().as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out.extend_from_slice(method.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n\r\n");
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}

/// Closes a batch body.
pub fn finish(out: &mut Vec<u8>) {
    out.extend_from_slice(b"--");
    out.extend_from_slice(BOUNDARY.as_bytes());
    out.extend_from_slice(b"--\r\n");
}

/// One part of a batch response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Extracts the boundary parameter from a multipart content type.
pub fn boundary_of(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| value.trim().trim_matches('"'))
    })
}

/// Splits a multipart batch response into the parts' HTTP responses, in order.
pub fn parse_response(
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Vec<PartResponse>, String> {
    let boundary = content_type
        .and_then(boundary_of)
        .unwrap_or(BOUNDARY)
        .to_string();
    let delimiter = format!("--{boundary}");
    let delimiter = delimiter.as_bytes();
    let mut parts = Vec::new();
    let Some(first) = find(body, delimiter) else {
        return Err("batch response contains no multipart boundary".into());
    };
    let mut rest = &body[first + delimiter.len()..];
    loop {
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        let Some(next) = find(rest, delimiter) else {
            return Err("batch response is missing its closing boundary".into());
        };
        let mut part = &rest[..next];
        // The CRLF before a delimiter belongs to the delimiter.
        if part.ends_with(b"\r\n") {
            part = &part[..part.len() - 2];
        }
        part = part.strip_prefix(b"\r\n").unwrap_or(part);
        parts.push(parse_part(part)?);
        rest = &rest[next + delimiter.len()..];
    }
}

fn parse_part(part: &[u8]) -> Result<PartResponse, String> {
    // Part headers (Content-Type, Content-Id) end with an empty line; the HTTP response follows.
    let head_end = find(part, b"\r\n\r\n").ok_or("batch part without header end")?;
    let inner = &part[head_end + 4..];
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let used = match response.parse(inner) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("batch part with incomplete response".into()),
        Err(e) => return Err(format!("batch part with malformed response: {e}")),
    };
    Ok(PartResponse {
        status: response.code.unwrap_or(0),
        body: inner[used..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_arangob() {
        let mut out = Vec::new();
        push_part(
            &mut out,
            1,
            Method::Post,
            "/_api/document?collection=c",
            b"{\"a\":1}",
        );
        push_part(&mut out, 2, Method::Get, "/_api/document/c/k", b"");
        finish(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "--XXXarangob-benchmarkXXX\r\nContent-Type: application/x-arango-batchpart\r\nContent-Id: 1\r\n\r\n\
             POST /_api/document?collection=c HTTP/1.1\r\n\r\n{\"a\":1}\r\n\
             --XXXarangob-benchmarkXXX\r\nContent-Type: application/x-arango-batchpart\r\nContent-Id: 2\r\n\r\n\
             GET /_api/document/c/k HTTP/1.1\r\n\r\n\r\n\
             --XXXarangob-benchmarkXXX--\r\n"
        );
        assert_eq!(
            content_type(),
            "multipart/form-data; boundary=XXXarangob-benchmarkXXX"
        );
    }

    #[test]
    fn parses_a_batch_response() {
        let body = b"--SEP\r\nContent-Type: application/x-arango-batchpart\r\nContent-Id: 1\r\n\r\n\
HTTP/1.1 202 Accepted\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: 9\r\n\r\n{\"_key\":1}\r\n\
--SEP\r\nContent-Type: application/x-arango-batchpart\r\n\r\n\
HTTP/1.1 404 Not Found\r\n\r\n{\"error\":true}\r\n--SEP--\r\n";
        let parts = parse_response(Some("multipart/form-data; boundary=SEP"), body).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].status, 202);
        assert_eq!(parts[0].body, b"{\"_key\":1}");
        assert_eq!(parts[1].status, 404);
        assert_eq!(parts[1].body, b"{\"error\":true}");
    }

    #[test]
    fn boundary_parameter() {
        assert_eq!(
            boundary_of("multipart/form-data; charset=x; boundary=\"abc\""),
            Some("abc")
        );
        assert_eq!(boundary_of("application/json"), None);
    }

    #[test]
    fn rejects_broken_multipart() {
        assert!(parse_response(None, b"{}").is_err());
        assert!(parse_response(
            Some("multipart/form-data; boundary=S"),
            b"--S\r\nx\r\n\r\nHTTP/1.1 200 OK\r\n\r\n"
        )
        .is_err());
    }
}
