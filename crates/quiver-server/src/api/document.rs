//! `/_api/document`: single and multi-document create, read, replace, update, remove.

use std::sync::Arc;

use bytes::Bytes;
use http::header::{ETAG, LOCATION};
use http::{HeaderName, HeaderValue, Method};
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use quiver_core::{
    revision_matches, Collection, Committed, DocumentReader, OpResult, Revision, WriteKind,
    WriteOptions,
};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use super::transaction::with_writer;
use super::write_options::write_options;
use crate::response::Durability;
use crate::{method_not_allowed, Request, Response, ServerState};

/// Characters escaped in a `Location` path segment.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}');

/// Routes `/_api/document/...`.
///
/// With `x-arango-trx-id` every route runs in that stream transaction: writes are staged
/// there (visible to its own reads, to others only after its commit; their durability comes
/// with the commit), reads see its snapshot plus its own writes. The same handlers serve both
/// cases: writes through [`with_writer`], reads through [`read_raw`].
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let segments = &req.segments;
    match segments.len() {
        2 => without_collection(state, req),
        3 => collection_level(state, req, &segments[2]),
        4 => single(state, req, &segments[2], &segments[3]),
        _ => Ok(crate::not_found(req)),
    }
}

fn without_collection(state: &ServerState, req: &Request) -> Result<Response> {
    match req.method {
        Method::POST => match req.param("collection") {
            Some(name) if !name.is_empty() => insert(state, req, name),
            _ => Err(Error::new(ErrorCode::CollectionParameterMissing)),
        },
        Method::PUT | Method::PATCH | Method::DELETE => Err(Error::with_message(
            ErrorCode::HttpBadParameter,
            "expecting a collection name and a document key in the URL",
        )),
        Method::GET | Method::HEAD => Err(Error::new(ErrorCode::DataSourceNotFound)),
        _ => Ok(method_not_allowed()),
    }
}

fn collection_level(state: &ServerState, req: &Request, name: &str) -> Result<Response> {
    match req.method {
        Method::POST => insert(state, req, name),
        Method::PUT if req.bool_param("onlyget", false) => read_many(state, req, name),
        Method::PUT | Method::PATCH | Method::DELETE => modify_many(state, req, name),
        Method::GET | Method::HEAD => Err(Error::new(ErrorCode::DataSourceNotFound)),
        _ => Ok(method_not_allowed()),
    }
}

fn collection(state: &ServerState, req: &Request, name: &str) -> Result<Arc<Collection>> {
    let coll = state.database(&req.database)?.collection(name)?;
    coll.check_usable()?;
    Ok(coll)
}

fn etag(rev: &str) -> String {
    let mut s = String::with_capacity(rev.len() + 2);
    s.push('"');
    s.push_str(rev);
    s.push('"');
    s
}

/// The `ETag` of revision `rev`: its `_rev` in double quotes, built without the intermediate
/// strings of [`etag`] (one allocation, for the `HeaderValue`'s own copy).
fn etag_value(rev: Revision) -> HeaderValue {
    let mut digits = [0u8; 11];
    let digits = rev.encode_into(&mut digits).as_bytes();
    let mut quoted = [b'"'; 13];
    quoted[1..=digits.len()].copy_from_slice(digits);
    HeaderValue::from_bytes(&quoted[..digits.len() + 2])
        .unwrap_or_else(|_| HeaderValue::from_static("\"\""))
}

fn location(req: &Request, id: &str) -> String {
    let (coll, key) = id.split_once('/').unwrap_or((id, ""));
    // Pushed piece by piece: `format!` with three `Display` adapters cost more than the rest
    // of the response on the batch path, where every inserted part gets a Location.
    let mut out = String::with_capacity(24 + req.database.len() + id.len());
    out.push_str("/_db/");
    out.extend(utf8_percent_encode(&req.database, SEGMENT));
    out.push_str("/_api/document/");
    out.extend(utf8_percent_encode(coll, SEGMENT));
    out.push('/');
    out.extend(utf8_percent_encode(key, SEGMENT));
    out
}

/// A per-item error object of multi-document responses: exactly `error`, `errorNum` and
/// `errorMessage`, as ArangoDB 3.12 builds them. A revision conflict's `_id`/`_key`/`_rev`
/// stay out: python-arango takes every item that has an `_id` for a success.
fn item_error(err: &Error, out: &mut Vec<u8>) {
    let item = serde_json::json!({
        "error": true,
        "errorNum": err.number(),
        "errorMessage": err.message,
    });
    let _ = serde_json::to_writer(&mut *out, &item);
}

/// `X-Arango-Error-Codes`: errorNum → count, as a JSON object (what ArangoDB 3.12 sends).
fn error_codes_header<'a>(errors: impl Iterator<Item = &'a Error>) -> Option<String> {
    let mut counts: Vec<(u32, usize)> = Vec::new();
    for e in errors {
        match counts.iter_mut().find(|(n, _)| *n == e.number()) {
            Some((_, c)) => *c += 1,
            None => counts.push((e.number(), 1)),
        }
    }
    if counts.is_empty() {
        return None;
    }
    let mut map = serde_json::Map::new();
    for (n, c) in counts {
        map.insert(n.to_string(), c.into());
    }
    Some(Value::Object(map).to_string())
}

fn single_status(synced: bool, remove: bool) -> u16 {
    match (synced, remove) {
        (true, false) => 201,
        (true, true) => 200,
        (false, _) => 202,
    }
}

/// Whether a write answers as synchronous (201, or 200 for a removal) rather than 202, by
/// ArangoDB 3.12's rule: the request asked for `waitForSync`, or the collection has the
/// property and at least one item was stored (a removed, replaced or updated document, a
/// `versionAttribute` no-op counts; an ignored insert or a failed item does not). A
/// multi-document write whose items all fail therefore answers 202 on a `waitForSync`
/// collection.
fn answered_synced<'a>(
    requested: bool,
    coll: &Collection,
    mut results: impl Iterator<Item = &'a OpResult>,
) -> bool {
    requested || (coll.wait_for_sync() && results.any(|op| op.kind != WriteKind::Ignored))
}

/// Builds a single-document write response and keeps the write's durability pending.
fn single_write(
    req: &Request,
    coll: &Collection,
    committed: Committed<OpResult>,
    opts: &WriteOptions,
    remove: bool,
) -> Response {
    let result = committed.value();
    let synced = answered_synced(opts.wait_for_sync, coll, std::iter::once(result));
    let mut response = single_write_response(req, result, synced, opts.silent, remove);
    response.wait_for(Box::new(committed) as Box<dyn Durability>);
    response
}

/// The response of one single-document write, without its durability.
fn single_write_response(
    req: &Request,
    result: &OpResult,
    synced: bool,
    silent: bool,
    remove: bool,
) -> Response {
    let status = single_status(synced, remove);
    let mut body = Vec::with_capacity(128);
    if silent {
        body.extend_from_slice(b"{}");
    } else {
        result.write_json(&mut body);
    }
    let mut response =
        Response::json_bytes(status, body).with_header_value(ETAG, etag_value(result.rev));
    if !remove {
        // The value takes the string's buffer over (no copy); keys and names are ASCII once
        // percent-encoded, so the conversion does not fail.
        if let Ok(value) = HeaderValue::try_from(location(req, &result.id)) {
            response = response.with_header_value(LOCATION, value);
        }
    }
    response
}

/// The collection of a plain single-document insert that [`insert_run`] may group with its
/// neighbours: `POST /_api/document/{collection}` or `POST /_api/document?collection=…` with
/// an object body and no options that only the single path understands.
pub(crate) fn groupable_insert_target(req: &Request) -> Option<&str> {
    if req.method != Method::POST
        || req.segments.first() != Some("_api")
        || req.segments.get(1) != Some("document")
        || req.param("from").is_some()
        || req.header(&crate::request::X_ARANGO_ASYNC).is_some()
        || req.header(&crate::request::X_ARANGO_TRX_ID).is_some()
        || req.body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{')
    {
        return None;
    }
    match req.segments.len() {
        3 => req.segments.get(2),
        2 => req.param("collection").filter(|c| !c.is_empty()),
        _ => None,
    }
}

/// Executes consecutive single-document inserts of one batch request (same database,
/// collection and query string, checked by the caller) as one engine commit, answering each
/// exactly as [`route`] would have answered it alone. Items stay independent (a failing one
/// gets its own error response); only the commit, and so the durability wait, is shared.
/// Inserting one by one would cost one commit per part, which dominates small documents.
pub(crate) fn insert_run(
    state: &ServerState,
    reqs: &[Request],
) -> (Vec<Response>, Option<Box<dyn Durability>>) {
    let first = &reqs[0];
    let name = groupable_insert_target(first).unwrap_or("");
    let prepared = write_options(first)
        .and_then(|opts| collection(state, first, name).map(|coll| (coll, opts)));
    let (coll, opts) = match prepared {
        Ok(p) => p,
        Err(e) => {
            return (
                reqs.iter().map(|_| Response::from(e.clone())).collect(),
                None,
            )
        }
    };
    let mut responses: Vec<Option<Response>> = Vec::with_capacity(reqs.len());
    let mut docs = Vec::with_capacity(reqs.len());
    for req in reqs {
        match required_body(req) {
            Ok(doc @ Value::Object(_)) => {
                docs.push(doc);
                responses.push(None);
            }
            Ok(_) => responses.push(Some(Error::new(ErrorCode::DocumentTypeInvalid).into())),
            Err(e) => responses.push(Some(e.into())),
        }
    }
    let committed = match coll.insert_many(docs, &opts) {
        Ok(c) => c,
        Err(e) => {
            return (
                reqs.iter().map(|_| Response::from(e.clone())).collect(),
                None,
            )
        }
    };
    let mut results = committed.value().iter();
    let out = responses
        .into_iter()
        .zip(reqs)
        .map(|(done, req)| match done {
            Some(r) => r,
            None => match results.next() {
                Some(Ok(op)) => {
                    let synced = answered_synced(opts.wait_for_sync, &coll, std::iter::once(op));
                    single_write_response(req, op, synced, opts.silent, false)
                }
                Some(Err(e)) => e.clone().into(),
                None => Error::new(ErrorCode::Internal).into(),
            },
        })
        .collect();
    (out, Some(Box::new(committed) as Box<dyn Durability>))
}

/// Builds a multi-document response: an array of results and error objects (or `{}` /
/// errors only when silent).
fn multi_write(
    coll: &Collection,
    committed: Committed<Vec<Result<OpResult>>>,
    opts: &WriteOptions,
    remove: bool,
) -> Response {
    let results = committed.value();
    let stored = results.iter().filter_map(|r| r.as_ref().ok());
    let synced = answered_synced(opts.wait_for_sync, coll, stored);
    let mut response = multi_response(results, synced, opts.silent, remove);
    response.wait_for(Box::new(committed) as Box<dyn Durability>);
    response
}

/// The response of a multi-document write, without its durability.
fn multi_response(
    results: &[Result<OpResult>],
    synced: bool,
    silent: bool,
    remove: bool,
) -> Response {
    let status = single_status(synced, remove);
    let mut body = Vec::with_capacity(results.len() * 64 + 2);
    let any_error = results.iter().any(|r| r.is_err());
    if silent && !any_error {
        body.extend_from_slice(b"{}");
    } else {
        body.push(b'[');
        let mut first = true;
        for r in results {
            match r {
                Ok(_) if silent => continue,
                Ok(op) => {
                    if !first {
                        body.push(b',');
                    }
                    op.write_json(&mut body);
                }
                Err(e) => {
                    if !first {
                        body.push(b',');
                    }
                    item_error(e, &mut body);
                }
            }
            first = false;
        }
        body.push(b']');
    }
    let header = error_codes_header(results.iter().filter_map(|r| r.as_ref().err()));
    let mut response = Response::json_bytes(status, body);
    if let Some(h) = header {
        response = response.with_header(HeaderName::from_static("x-arango-error-codes"), &h);
    }
    response
}

fn required_body(req: &Request) -> Result<Value> {
    super::body_json(req)?.ok_or_else(|| {
        Error::with_message(
            ErrorCode::DocumentTypeInvalid,
            "request body is empty: expecting a JSON object or array",
        )
    })
}

fn insert(state: &ServerState, req: &Request, name: &str) -> Result<Response> {
    let coll = collection(state, req, name)?;
    let opts = write_options(req)?;
    let old_edge_form = req.param("from").is_some() && req.param("to").is_some();
    if !old_edge_form
        && req.body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
        && coll.takes_encoded(&opts)
    {
        // One pass from the request body to the stored encoding: the attributes the insert
        // does not look at never become `Value`s.
        let doc = crate::json::encode_document(&req.body)?;
        let committed = with_writer(state, req, |w| w.insert_encoded(&coll, doc, &opts))?;
        return Ok(single_write(req, &coll, committed, &opts, false));
    }
    match required_body(req)? {
        Value::Array(docs) => {
            let committed = with_writer(state, req, |w| w.insert_many(&coll, docs, &opts))?;
            Ok(multi_write(&coll, committed, &opts, false))
        }
        mut doc @ Value::Object(_) => {
            // The old form `POST /_api/document?collection=e&from=..&to=..` for edges.
            if let (Some(from), Some(to), Value::Object(map)) =
                (req.param("from"), req.param("to"), &mut doc)
            {
                map.entry("_from").or_insert_with(|| from.into());
                map.entry("_to").or_insert_with(|| to.into());
            }
            let committed = with_writer(state, req, |w| w.insert(&coll, doc, &opts))?;
            Ok(single_write(req, &coll, committed, &opts, false))
        }
        _ => Err(Error::new(ErrorCode::DocumentTypeInvalid)),
    }
}

fn modify_many(state: &ServerState, req: &Request, name: &str) -> Result<Response> {
    // The body is checked before the collection (ArangoDB answers 400/1227 for an object
    // sent to the multi-document endpoint even when the collection does not exist).
    let body = required_body(req)?;
    let Value::Array(items) = body else {
        return Err(Error::with_message(
            ErrorCode::DocumentTypeInvalid,
            "expecting an array of documents",
        ));
    };
    let coll = collection(state, req, name)?;
    let opts = write_options(req)?;
    let remove = req.method == Method::DELETE;
    let committed = with_writer(state, req, |w| match req.method {
        Method::PUT => w.modify_many(&coll, items, &opts, false),
        Method::PATCH => w.modify_many(&coll, items, &opts, true),
        _ => w.remove_many(&coll, &items, &opts),
    })?;
    Ok(multi_write(&coll, committed, &opts, remove))
}

fn read_many(state: &ServerState, req: &Request, name: &str) -> Result<Response> {
    let body = required_body(req)?;
    let Value::Array(items) = body else {
        return Err(Error::with_message(
            ErrorCode::DocumentTypeInvalid,
            "expecting an array of keys or documents",
        ));
    };
    collection(state, req, name)?;
    let ignore_revs = req.bool_param("ignoreRevs", true);
    // One snapshot (or the stream transaction's view) for every item.
    let read = |reader: &dyn DocumentReader| -> Result<Vec<Result<Bytes>>> {
        let coll = reader.collection(name)?;
        Ok(items
            .iter()
            .map(|item| read_item(reader, &coll, item, ignore_revs))
            .collect())
    };
    let results = match super::transaction::transaction_id(req) {
        Some(trx) => super::transaction::within(state, req, trx, |t| read(t))?,
        None => read(&state.database(&req.database)?.read_view())?,
    };
    let mut body = Vec::with_capacity(results.len() * 128 + 2);
    body.push(b'[');
    for (i, r) in results.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        match r {
            Ok(raw) => body.extend_from_slice(raw),
            Err(e) => item_error(e, &mut body),
        }
    }
    body.push(b']');
    let header = error_codes_header(results.iter().filter_map(|r| r.as_ref().err()));
    let mut response = Response::json_bytes(200, body);
    if let Some(h) = header {
        response = response.with_header(HeaderName::from_static("x-arango-error-codes"), &h);
    }
    Ok(response)
}

/// One item of a multi-document read: a key, a `collection/key` handle or an object with
/// `_key` (or `_id`), and with `_rev` checked when `ignore_revs` is false. 1202 when missing.
fn read_item(
    reader: &dyn DocumentReader,
    coll: &Collection,
    item: &Value,
    ignore_revs: bool,
) -> Result<Bytes> {
    let key = item_key(item)?;
    let (rev, raw) = read_raw(reader, coll, &key)?;
    if !ignore_revs {
        if let Some(wanted) = item.get("_rev").and_then(Value::as_str) {
            if !revision_matches(wanted, rev) {
                return Err(conflict(&coll.name(), &key, &rev.encode()));
            }
        }
    }
    Ok(raw)
}

/// A stored document's revision and response-ready body as `reader` sees it; 1202 when it
/// is missing or `key` is not a legal key.
fn read_raw(
    reader: &dyn DocumentReader,
    coll: &Collection,
    key: &str,
) -> Result<(Revision, Bytes)> {
    if quiver_types::validate_key(key).is_err() {
        return Err(Error::new(ErrorCode::DocumentNotFound));
    }
    reader
        .get_raw(coll, key)?
        .ok_or_else(|| Error::new(ErrorCode::DocumentNotFound))
}

fn single(state: &ServerState, req: &Request, name: &str, key: &str) -> Result<Response> {
    match req.method {
        Method::GET | Method::HEAD => read_one(state, req, name, key),
        Method::PUT | Method::PATCH => {
            let coll = collection(state, req, name)?;
            let doc = required_body(req)?;
            if !doc.is_object() {
                return Err(Error::new(ErrorCode::DocumentTypeInvalid));
            }
            let opts = write_options(req)?;
            let committed = with_writer(state, req, |w| {
                if req.method == Method::PUT {
                    w.replace(&coll, Some(key), doc, &opts)
                } else {
                    w.update(&coll, Some(key), doc, &opts)
                }
            })?;
            Ok(single_write(req, &coll, committed, &opts, false))
        }
        Method::DELETE => {
            let coll = collection(state, req, name)?;
            let opts = write_options(req)?;
            let committed = with_writer(state, req, |w| w.remove(&coll, key, &opts))?;
            Ok(single_write(req, &coll, committed, &opts, true))
        }
        _ => Ok(method_not_allowed()),
    }
}

fn read_one(state: &ServerState, req: &Request, name: &str, key: &str) -> Result<Response> {
    let coll = collection(state, req, name)?;
    let if_match = req.header(http::header::IF_MATCH);
    let found = match super::transaction::transaction_id(req) {
        Some(trx) => super::transaction::within(state, req, trx, |t| {
            let coll = t.collection(name)?;
            let (rev, raw) = read_raw(t, &coll, key)?;
            match if_match {
                Some(wanted) if !revision_matches(wanted, rev) => {
                    Err(conflict(name, key, &rev.encode()))
                }
                _ => Ok((rev, raw)),
            }
        }),
        // The plain read: one snapshot lookup, no read view.
        None => coll.get_raw(key, if_match),
    };
    let (rev, body) = match found {
        Ok(found) => found,
        Err(e) if e.code == ErrorCode::ArangoConflict => {
            // The 412 carries the current revision as its ETag too.
            let rev = e
                .extra
                .as_ref()
                .and_then(|x| x.get("_rev"))
                .and_then(Value::as_str)
                .map(etag);
            let mut response = Response::from(e);
            if let Some(rev) = rev {
                response = response.with_header(ETAG, &rev);
            }
            return Ok(response);
        }
        Err(e) => return Err(e),
    };
    let tag = etag_value(rev);
    if let Some(none_match) = req.header(http::header::IF_NONE_MATCH) {
        if revision_matches(none_match, rev) {
            return Ok(Response::empty(304).with_header_value(ETAG, tag));
        }
    }
    Ok(Response::json_bytes(200, body).with_header_value(ETAG, tag))
}

/// The key of a multi-document read item: a key, a handle `coll/key`, or an object with
/// `_key` (or `_id`).
fn item_key(item: &Value) -> Result<String> {
    let text = match item {
        Value::String(s) => Some(s.as_str()),
        Value::Object(map) => map
            .get("_key")
            .or_else(|| map.get("_id"))
            .and_then(Value::as_str),
        _ => None,
    };
    let text = text.ok_or_else(|| Error::new(ErrorCode::DocumentHandleBad))?;
    Ok(text.rsplit_once('/').map_or(text, |(_, k)| k).to_string())
}

/// 412/1200 naming the stored revision, as the core reports conflicts.
fn conflict(collection: &str, key: &str, rev: &str) -> Error {
    Error::with_message(
        ErrorCode::ArangoConflict,
        "conflict, _rev values do not match",
    )
    .with_status(412)
    .with_extra("_id", Value::String(format!("{collection}/{key}")))
    .with_extra("_key", Value::String(key.to_string()))
    .with_extra("_rev", Value::String(rev.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_header_counts_by_number() {
        let errs = [
            Error::new(ErrorCode::UniqueConstraintViolated),
            Error::new(ErrorCode::DocumentKeyBad),
            Error::new(ErrorCode::UniqueConstraintViolated),
        ];
        let h = error_codes_header(errs.iter()).unwrap();
        let v: Value = serde_json::from_str(&h).unwrap();
        assert_eq!(v["1210"], 2);
        assert_eq!(v["1221"], 1);
        assert_eq!(error_codes_header([].iter()), None);
    }

    #[test]
    fn etag_value_quotes_the_revision() {
        for rev in [
            Revision(1),
            Revision(u64::MAX),
            quiver_types::Hlc::new().next(),
        ] {
            assert_eq!(etag_value(rev), etag(&rev.encode()).as_str());
        }
    }

    #[test]
    fn location_escapes_segments() {
        let req = Request::build(Method::POST, "/_db/m%C3%B6t/_api/document/c");
        assert_eq!(
            location(&req, "c x/k%1"),
            "/_db/m%C3%B6t/_api/document/c%20x/k%251"
        );
    }
}
