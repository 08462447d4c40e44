//! `/_api/job`: status, results and cancellation of `x-arango-async: store` requests.

use http::{HeaderName, Method};
use quiver_errors::{Error, ErrorCode};
use serde_json::json;

use crate::jobs::Fetch;
use crate::{method_not_allowed, Request, Response, ServerState};

fn unknown_job() -> Response {
    Error::with_message(ErrorCode::HttpNotFound, "job not found").into()
}

fn parse_id(text: &str) -> Option<u64> {
    text.parse().ok()
}

/// Routes `/_api/job/...`.
pub fn route(state: &ServerState, req: &Request) -> Response {
    let jobs = &state.jobs;
    // Every call sees only the caller's own jobs.
    let caller = req.identity.as_ref();
    let rest = req.suffix(2);
    match (&req.method, rest.as_slice()) {
        (&Method::GET, [kind @ ("pending" | "done")]) => {
            let count = req
                .param("count")
                .and_then(|c| c.parse::<usize>().ok())
                .unwrap_or(100);
            Response::json(200, &jobs.list(*kind == "done", count, caller))
        }
        (&Method::GET, [id]) => match parse_id(id) {
            Some(id) => match jobs.status(id, caller) {
                Some(true) => Response::empty(200),
                Some(false) => Response::empty(204),
                None => unknown_job(),
            },
            None => Error::with_message(
                ErrorCode::HttpBadParameter,
                "expecting GET /_api/job/<job-id>, /_api/job/pending or /_api/job/done",
            )
            .into(),
        },
        (&Method::PUT, [id]) => match parse_id(id).map(|id| (id, jobs.fetch(id, caller))) {
            Some((id, Fetch::Done(stored))) => {
                let mut response = Response::empty(stored.status.as_u16());
                response.content_type = stored.content_type;
                response.headers = stored.headers;
                response.body = stored.body;
                response.with_header(
                    HeaderName::from_static("x-arango-async-id"),
                    &id.to_string(),
                )
            }
            Some((_, Fetch::Pending)) => Response::empty(204),
            _ => unknown_job(),
        },
        (&Method::PUT, [id, "cancel"]) => match parse_id(id) {
            Some(id) if jobs.cancel(id, caller) => Response::json(200, &json!({"result": true})),
            _ => unknown_job(),
        },
        (&Method::DELETE, ["all"]) => {
            jobs.delete_all(caller);
            Response::json(200, &json!({"result": true}))
        }
        (&Method::DELETE, ["expired"]) => {
            let Some(stamp) = req.param("stamp").and_then(|s| s.parse::<f64>().ok()) else {
                return Error::with_message(
                    ErrorCode::HttpBadParameter,
                    "invalid or missing 'stamp' parameter",
                )
                .into();
            };
            jobs.delete_expired(stamp, caller);
            Response::json(200, &json!({"result": true}))
        }
        (&Method::DELETE, [id]) => match parse_id(id) {
            Some(id) if jobs.delete(id, caller) => Response::json(200, &json!({"result": true})),
            _ => unknown_job(),
        },
        (_, []) => Error::with_message(ErrorCode::HttpBadParameter, "missing job id").into(),
        (&Method::GET | &Method::PUT | &Method::DELETE, _) => crate::not_found(req),
        _ => method_not_allowed(),
    }
}
