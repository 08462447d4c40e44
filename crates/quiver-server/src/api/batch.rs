//! `POST /_api/batch`: a `multipart/form-data` body whose parts are complete HTTP requests,
//! executed in order through [`crate::handle`] and answered as one multipart response.
//!
//! The multipart framing is parsed by `crate::multipart`. The parts' responses are held until
//! the whole answer goes out; once they hold more than `--server.batch-response-memory-limit`
//! bytes, the remaining parts are not executed but answered with 500/32.

use http::{HeaderName, HeaderValue, Method};
use quiver_errors::{Error, ErrorCode, Result};

use crate::multipart::{bad, boundary, parse_embedded, split_parts};
use crate::{Request, Response, ServerState};

pub use crate::multipart::MAX_PARTS;

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

/// One part of the multipart answer: the part header, then the part's response.
fn write_part(
    out: &mut Vec<u8>,
    boundary: &str,
    content_id: Option<&str>,
    response: &Response,
    is_head: bool,
) {
    out.extend_from_slice(b"--");
    out.extend_from_slice(boundary.as_bytes());
    out.extend_from_slice(b"\r\nContent-Type: application/x-arango-batchpart\r\n");
    if let Some(id) = content_id {
        out.extend_from_slice(b"Content-Id: ");
        out.extend_from_slice(id.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    write_part_response(out, response, is_head);
    out.extend_from_slice(b"\r\n");
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
    let limit = state.config.batch_response_limit;
    let mut i = 0;
    while i < parsed.len() {
        if limit > 0 && out.len() as u64 > limit {
            let refused = Response::from(Error::with_message(
                ErrorCode::ResourceLimit,
                format!(
                    "batch responses would hold more memory than allowed (limit: {limit} bytes); part not executed"
                ),
            ));
            for (content_id, _) in &parsed[i..] {
                errors += 1;
                write_part(&mut out, &boundary, content_id.as_deref(), &refused, false);
            }
            break;
        }
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
            write_part(
                &mut out,
                &boundary,
                content_id.as_deref(),
                &response,
                is_head,
            );
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
    use crate::multipart::find;

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
