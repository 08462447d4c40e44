//! `GET /_api/edges/{collection}?vertex=…&direction=in|out|any`: the edges of one vertex.

use http::Method;
use quiver_core::EdgeDirection;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// Routes `/_api/edges/...`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let rest = req.suffix(2);
    let [name] = rest.as_slice() else {
        return Ok(not_found(req));
    };
    if req.method != Method::GET && req.method != Method::HEAD {
        return Ok(method_not_allowed());
    }
    let direction = parse_direction(req.param("direction"))?;
    let vertex = match req.param("vertex") {
        Some(v) if !v.is_empty() => v,
        _ => {
            return Err(Error::with_message(
                ErrorCode::DocumentHandleBad,
                "illegal document identifier: parameter 'vertex' is required",
            ))
        }
    };
    let db = state.database(&req.database)?;
    let coll = db.collection(name)?;
    coll.check_usable()?;
    let edges = match super::transaction::transaction_id(req) {
        Some(trx) => super::transaction::edges_in(state, req, trx, name, vertex, direction)?,
        None => coll.edges(vertex, direction)?,
    };
    let scanned = edges.len();
    Ok(Response::ok_envelope(
        200,
        json!({
            "edges": Value::Array(edges),
            "stats": {"scannedIndex": scanned, "filtered": 0},
        }),
    ))
}

/// `any` (also when missing or empty), `in`/`inbound`, `out`/`outbound`; else 400/400.
fn parse_direction(value: Option<&str>) -> Result<Option<EdgeDirection>> {
    match value.map(str::trim).unwrap_or("") {
        "" | "any" => Ok(None),
        "in" | "inbound" => Ok(Some(EdgeDirection::Inbound)),
        "out" | "outbound" => Ok(Some(EdgeDirection::Outbound)),
        other => Err(Error::with_message(
            ErrorCode::HttpBadParameter,
            format!("invalid direction '{other}': expecting any, in or out"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions() {
        assert_eq!(parse_direction(None).unwrap(), None);
        assert_eq!(parse_direction(Some("any")).unwrap(), None);
        assert_eq!(
            parse_direction(Some("in")).unwrap(),
            Some(EdgeDirection::Inbound)
        );
        assert_eq!(
            parse_direction(Some("outbound")).unwrap(),
            Some(EdgeDirection::Outbound)
        );
        assert_eq!(parse_direction(Some("sideways")).unwrap_err().number(), 400);
    }
}
