//! `GET /_admin/metrics` and `/_admin/metrics/v2` (the same page since ArangoDB 3.10): the
//! Prometheus text of [`crate::stats::metrics_page`]; 404 when `--server.export-metrics-api`
//! is off, as ArangoDB answers then.

use http::{HeaderValue, Method};

use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// The content type of the Prometheus text format.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `/_admin/metrics[/v2]`.
pub fn route(state: &ServerState, req: &Request) -> Response {
    match req.suffix(2).as_slice() {
        [] | ["v2"] => {}
        _ => return not_found(req),
    }
    if !state.config.export_metrics_api {
        return not_found(req);
    }
    if req.method != Method::GET && req.method != Method::HEAD {
        return method_not_allowed();
    }
    let mut response = Response::empty(200);
    response.content_type = Some(HeaderValue::from_static(PROMETHEUS_CONTENT_TYPE));
    response.body = crate::stats::metrics_page::render(
        &state.statistics,
        &state.queries,
        &state.core,
        state.started,
    )
    .into();
    response
}
