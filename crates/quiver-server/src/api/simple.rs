//! The simple-query API (`PUT /_api/simple/*`): deprecated, undocumented in 3.12, but still
//! registered by arangod 3.12 (`all`, `all-keys`, `by-example`, `lookup-by-keys`,
//! `remove-by-keys`). As in arangod, each is an AQL query built from the body and run
//! through the query service; the first three answer a cursor, the last two one object.

use http::Method;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Map, Value};

use super::cursor;
use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// Routes `/_api/simple/{operation}`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    let rest = req.suffix(2);
    let operation = match rest.as_slice() {
        [op @ ("all" | "all-keys" | "by-example" | "lookup-by-keys" | "remove-by-keys")] => *op,
        _ => return Ok(not_found(req)),
    };
    if req.method != Method::PUT {
        return Ok(method_not_allowed());
    }
    let body = match super::body_json(req)? {
        Some(Value::Object(body)) => body,
        None => Map::new(),
        Some(_) => return Err(type_error("expecting JSON object body")),
    };
    match operation {
        "all" => cursor::run_body(state, req, &all(req, &body)?),
        "all-keys" => cursor::run_body(state, req, &all_keys(req, &body)?),
        "by-example" => cursor::run_body(state, req, &by_example(req, &body)?),
        "lookup-by-keys" => lookup_by_keys(state, req, &body),
        _ => remove_by_keys(state, req, &body),
    }
}

/// The count of a `LIMIT` that only skips: more rows than any collection holds (the largest
/// integer a JSON double holds exactly).
const NO_LIMIT: u64 = (1 << 53) - 1;

fn type_error(message: &str) -> Error {
    Error::with_message(ErrorCode::TypeError, message)
}

/// The collection named by the body's `collection`, else by the `collection` parameter.
fn collection(req: &Request, body: &Map<String, Value>) -> Result<String> {
    let name = match body.get("collection") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => String::new(),
        None => req.param("collection").unwrap_or_default().to_string(),
    };
    if name.is_empty() {
        return Err(type_error("expecting string for <collection>"));
    }
    Ok(name)
}

/// Passes the cursor options arangod passes on (`batchSize`, `ttl`) into `query`.
fn pass_options(body: &Map<String, Value>, query: &mut Map<String, Value>) {
    for name in ["batchSize", "ttl"] {
        if let Some(v) = body.get(name) {
            query.insert(name.into(), v.clone());
        }
    }
}

/// `all`: every document, with `skip` and `limit`, and the count.
fn all(req: &Request, body: &Map<String, Value>) -> Result<Value> {
    let mut binds = Map::new();
    binds.insert("@collection".into(), collection(req, body)?.into());
    let mut aql = String::from("FOR doc IN @@collection ");
    let number = |name: &str| body.get(name).filter(|v| v.is_number()).cloned();
    let (skip, limit) = (number("skip"), number("limit"));
    if skip.is_some() || limit.is_some() {
        aql.push_str("LIMIT @skip, @limit ");
        binds.insert("skip".into(), skip.unwrap_or(json!(0)));
        binds.insert("limit".into(), limit.unwrap_or(json!(NO_LIMIT)));
    }
    aql.push_str("RETURN doc");
    let mut query = Map::new();
    query.insert("query".into(), aql.into());
    query.insert("bindVars".into(), binds.into());
    query.insert("count".into(), true.into());
    pass_options(body, &mut query);
    Ok(query.into())
}

/// `all-keys`: every document's key (`type` "key"), id ("id") or document path (default).
fn all_keys(req: &Request, body: &Map<String, Value>) -> Result<Value> {
    let collection = collection(req, body)?;
    let kind = match body.get("type") {
        Some(v) => v.as_str().unwrap_or_default().to_string(),
        None => req.param("type").unwrap_or_default().to_string(),
    };
    let (aql, mut binds) = match kind.as_str() {
        "key" => ("FOR doc IN @@collection RETURN doc._key", Map::new()),
        "id" => ("FOR doc IN @@collection RETURN doc._id", Map::new()),
        _ => {
            let mut binds = Map::new();
            let prefix = format!("/_db/{}/_api/document/", req.database);
            binds.insert("prefix".into(), prefix.into());
            (
                "FOR doc IN @@collection RETURN CONCAT(@prefix, doc._id)",
                binds,
            )
        }
    };
    binds.insert("@collection".into(), collection.into());
    Ok(json!({"query": aql, "bindVars": binds}))
}

/// A non-negative integer option of the body, 0 when absent or not a number.
fn count_option(body: &Map<String, Value>, name: &str) -> u64 {
    body.get(name)
        .and_then(Value::as_f64)
        .filter(|f| *f > 0.0)
        .map_or(0, |f| f as u64)
}

/// `by-example`: documents whose attributes (dotted paths reach into sub-objects) equal the
/// example's values.
fn by_example(req: &Request, body: &Map<String, Value>) -> Result<Value> {
    let Some(Value::Object(example)) = body.get("example") else {
        return Err(Error::new(ErrorCode::BadParameter));
    };
    let collection = collection(req, body)?;
    let mut binds = Map::new();
    binds.insert("@collection".into(), collection.into());
    let mut aql = String::from("FOR doc IN @@collection");
    for (i, (path, value)) in example.iter().enumerate() {
        // Backticks quote each path part; a backtick inside a name cannot be quoted in AQL,
        // so it is dropped, as arangod does.
        let parts: Vec<String> = path
            .replace('`', "")
            .split('.')
            .map(|part| format!("`{part}`"))
            .collect();
        aql.push_str(&format!(" FILTER doc.{} == @value{i}", parts.join(".")));
        binds.insert(format!("value{i}"), value.clone());
    }
    let (skip, limit) = (count_option(body, "skip"), count_option(body, "limit"));
    if skip > 0 || limit > 0 {
        let limit = if limit > 0 { limit } else { NO_LIMIT };
        aql.push_str(&format!(" LIMIT {skip}, {limit}"));
    }
    aql.push_str(" RETURN doc");
    let mut query = Map::new();
    query.insert("query".into(), aql.into());
    query.insert("bindVars".into(), binds.into());
    query.insert("count".into(), true.into());
    let batch_size = count_option(body, "batchSize");
    if batch_size > 0 {
        query.insert("batchSize".into(), batch_size.into());
    }
    Ok(query.into())
}

/// The body's `collection` name and `keys` array (of `lookup-by-keys`, `remove-by-keys`).
fn collection_and_keys(body: &Map<String, Value>) -> Result<(&str, &Vec<Value>)> {
    let Some(Value::String(collection)) = body.get("collection") else {
        return Err(type_error("expecting string for <collection>"));
    };
    let keys = body
        .get("keys")
        .and_then(Value::as_array)
        .ok_or_else(|| type_error("expecting array for <keys>"))?;
    Ok((collection, keys))
}

/// `lookup-by-keys`: the documents with the given keys (or ids of the collection) that exist.
fn lookup_by_keys(
    state: &ServerState,
    req: &Request,
    body: &Map<String, Value>,
) -> Result<Response> {
    let (collection, keys) = collection_and_keys(body)?;
    // Ids of this collection count as their keys, as arangod's bind parameter stripping does.
    let prefix = format!("{collection}/");
    let keys: Vec<Value> = keys
        .iter()
        .map(|k| match k.as_str().and_then(|s| s.strip_prefix(&prefix)) {
            Some(key) => Value::String(key.to_string()),
            None => k.clone(),
        })
        .collect();
    let query = json!({
        "query": "FOR doc IN @@collection FILTER doc._key IN @keys RETURN doc",
        "bindVars": {"@collection": collection, "keys": keys},
    });
    let (documents, _) = cursor::run_to_end(state, req, &query, keys.len())?;
    Ok(Response::json(
        200,
        &json!({"documents": documents, "error": false, "code": 200}),
    ))
}

/// `remove-by-keys`: removes the documents with the given keys, ignoring missing ones;
/// answers how many were removed and ignored (and, with `silent: false`, the removed
/// documents' ids or, with `returnOld`, the documents).
fn remove_by_keys(
    state: &ServerState,
    req: &Request,
    body: &Map<String, Value>,
) -> Result<Response> {
    let (collection, keys) = collection_and_keys(body)?;
    let options = body.get("options").and_then(Value::as_object);
    let flag = |name: &str, default: bool| {
        options
            .and_then(|o| o.get(name))
            .and_then(Value::as_bool)
            .unwrap_or(default)
    };
    let (wait_for_sync, silent, return_old) = (
        flag("waitForSync", false),
        flag("silent", true),
        flag("returnOld", false),
    );
    let mut aql = format!(
        "FOR key IN @keys REMOVE key IN @@collection OPTIONS {{ ignoreErrors: true, \
         waitForSync: {wait_for_sync} }}"
    );
    if !silent {
        aql.push_str(if return_old {
            " RETURN OLD"
        } else {
            " RETURN {_id: OLD._id, _key: OLD._key, _rev: OLD._rev}"
        });
    }
    let query = json!({
        "query": aql,
        "bindVars": {"@collection": collection, "keys": keys},
    });
    let (old, extra) = cursor::run_to_end(state, req, &query, keys.len())?;
    let (removed, ignored) = extra.map_or((0, 0), |e| {
        (e.stats.writes_executed, e.stats.writes_ignored)
    });
    let mut answer = json!({
        "removed": removed,
        "ignored": ignored,
        "error": false,
        "code": 200,
    });
    if !silent {
        answer["old"] = Value::Array(old);
    }
    Ok(Response::json(200, &answer))
}
