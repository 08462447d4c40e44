//! Stream transactions: `POST /_api/transaction/begin`, `GET|PUT|DELETE
//! /_api/transaction/{id}`, `GET /_api/transaction`, plus the helpers the document, edges and
//! collection routes use to run one operation inside the transaction named by the
//! `x-arango-trx-id` header.

use std::collections::HashSet;

use http::Method;
use quiver_core::{DocumentReader, DocumentWriter, EdgeDirection, Transaction, TransactionOptions};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::response::Durability;
use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// The stream transaction a request runs in (`x-arango-trx-id`), if any.
pub fn transaction_id(req: &Request) -> Option<&str> {
    req.header(&crate::request::X_ARANGO_TRX_ID)
        .map(str::trim)
        .filter(|id| !id.is_empty())
}

/// Runs `operation` inside stream transaction `id` of the request's database.
pub fn within<R>(
    state: &ServerState,
    req: &Request,
    id: &str,
    operation: impl FnOnce(&mut Transaction) -> Result<R>,
) -> Result<R> {
    state
        .core
        .stream_transactions()
        .with(id, &req.database, operation)
}

/// Runs `operation` with the request's document writer: the stream transaction named by
/// `x-arango-trx-id` (writes staged there, durable with its commit), or auto-commit (every
/// write a transaction of its own, committed at once). The one place where a document route
/// tells the two apart.
pub fn with_writer<R>(
    state: &ServerState,
    req: &Request,
    operation: impl FnOnce(&mut DocumentWriter<'_>) -> Result<R>,
) -> Result<R> {
    match transaction_id(req) {
        Some(id) => within(state, req, id, |trx| {
            operation(&mut DocumentWriter::Transaction(trx))
        }),
        None => operation(&mut DocumentWriter::AutoCommit),
    }
}

/// Routes `/_api/transaction/...`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let db = state.database(&req.database)?;
    let streams = state.core.stream_transactions();
    let rest = req.suffix(2);
    match (rest.as_slice(), &req.method) {
        ([], &Method::GET) => {
            let list: Vec<Value> = streams
                .running(&req.database)
                .into_iter()
                .map(|id| json!({"id": id, "state": "running"}))
                .collect();
            Ok(Response::ok_envelope(200, json!({ "transactions": list })))
        }
        ([], &Method::POST) => Err(Error::with_message(
            ErrorCode::NotImplemented,
            "JavaScript transactions are not supported (no JavaScript engine); use stream transactions",
        )),
        ([], _) => Ok(method_not_allowed()),
        (["begin"], &Method::POST) => {
            let body = super::body_object(req, ErrorCode::BadParameter, "transaction options")?;
            let options = begin_options(&body)?;
            let id = streams.begin(&db, options, state.config.stream_idle_timeout)?;
            Ok(Response::ok_result(
                201,
                json!({"id": id, "status": "running"}),
            ))
        }
        (["begin"], _) => Ok(method_not_allowed()),
        ([id], &Method::GET) | ([id], &Method::HEAD) => {
            let status = streams.status(id, &req.database)?;
            Ok(status_response(id, status.as_str()))
        }
        ([id], &Method::PUT) => {
            let committed = streams.commit(id, &req.database)?;
            let mut response = status_response(id, "committed");
            response.wait_for(Box::new(committed) as Box<dyn Durability>);
            Ok(response)
        }
        ([id], &Method::DELETE) => {
            streams.abort(id, &req.database)?;
            Ok(status_response(id, "aborted"))
        }
        ([_], _) => Ok(method_not_allowed()),
        _ => Ok(not_found(req)),
    }
}

fn status_response(id: &str, status: &str) -> Response {
    Response::ok_result(200, json!({"id": id, "status": status}))
}

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message)
}

/// A collection list: one name or an array of names.
fn names(value: Option<&Value>, what: &str) -> Result<Vec<String>> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(format!("'collections.{what}' must hold collection names")))
            })
            .collect(),
        Some(_) => Err(bad(format!(
            "'collections.{what}' must be a string or an array of strings"
        ))),
    }
}

fn flag(body: &Value, name: &str, default: bool) -> Result<bool> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(bad(format!("'{name}' must be a boolean"))),
    }
}

/// The body of `POST /_api/transaction/begin`. `lockTimeout` and `skipFastLockRound` are
/// accepted and ignored: writers are serialized at commit, nothing waits for locks earlier.
fn begin_options(body: &Value) -> Result<TransactionOptions> {
    let collections = match body.get("collections") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => return Err(bad("'collections' must be an object")),
    };
    let max_transaction_size = match body.get("maxTransactionSize") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(0) => None,
            Some(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            None => return Err(bad("'maxTransactionSize' must be a non-negative integer")),
        },
    };
    Ok(TransactionOptions {
        read: names(collections.get("read"), "read")?,
        write: names(collections.get("write"), "write")?,
        exclusive: names(collections.get("exclusive"), "exclusive")?,
        allow_implicit: flag(
            &collections,
            "allowImplicit",
            flag(body, "allowImplicit", true)?,
        )?,
        wait_for_sync: flag(body, "waitForSync", false)?,
        max_transaction_size,
    })
}

/// `/_api/edges` inside a stream transaction: the edges as the transaction sees them (its own
/// writes included), documents with `_id`.
pub fn edges_in(
    state: &ServerState,
    req: &Request,
    id: &str,
    collection: &str,
    vertex: &str,
    direction: Option<EdgeDirection>,
) -> Result<Vec<Value>> {
    within(state, req, id, |trx| {
        let coll = trx.collection(collection)?;
        let directions: &[EdgeDirection] = match direction {
            Some(EdgeDirection::Outbound) => &[EdgeDirection::Outbound],
            Some(EdgeDirection::Inbound) => &[EdgeDirection::Inbound],
            None => &[EdgeDirection::Outbound, EdgeDirection::Inbound],
        };
        let mut hits = quiver_core::EdgeHits::new();
        for d in directions {
            trx.edges(&coll, vertex, *d, &mut hits)?;
        }
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for hit in hits.iter() {
            if !seen.insert(hit.key) {
                continue;
            }
            if let Some(doc) = trx.get(&coll, hit.key)? {
                out.push(doc);
            }
        }
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn begin_options_accept_strings_and_arrays() {
        let o = begin_options(&json!({
            "collections": {"read": "a", "write": ["b", "c"], "exclusive": []},
            "waitForSync": true,
            "maxTransactionSize": 1000,
        }))
        .unwrap();
        assert_eq!(o.read, ["a"]);
        assert_eq!(o.write, ["b", "c"]);
        assert!(o.exclusive.is_empty());
        assert!(o.allow_implicit && o.wait_for_sync);
        assert_eq!(o.max_transaction_size, Some(1000));
        let o = begin_options(&json!({"collections": {"allowImplicit": false}})).unwrap();
        assert!(!o.allow_implicit);
    }

    #[test]
    fn begin_options_reject_malformed() {
        for body in [
            json!({"collections": "a"}),
            json!({"collections": {"write": 5}}),
            json!({"collections": {"read": [1]}}),
            json!({"waitForSync": "yes"}),
            json!({"maxTransactionSize": -1}),
        ] {
            assert_eq!(begin_options(&body).unwrap_err().number(), 10, "{body}");
        }
    }
}
