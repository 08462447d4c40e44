//! `PUT /_api/replication/restore-*`: what arangorestore calls to bring a dump back —
//! `restore-collection` (create, or with `overwrite=true` recreate, a collection from its
//! dumped `parameters`, key generator state included), `restore-indexes` (dumped index ids
//! kept), `restore-data` (JSON lines, plain documents or `{"type":…,"data":…}` envelopes;
//! every document keeps its dumped `_rev`) and `restore-view`.

use std::sync::Arc;

use quiver_core::{
    Collection, CollectionSpec, Database, DocumentWriter, EncodedDocument, OverwriteMode,
    WriteOptions,
};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::json::DumpLine;
use crate::{Request, Response, ServerState};

/// Documents per commit of `restore-data`: bounds one engine batch.
const CHUNK: usize = 10_000;

/// Replication marker types of enveloped dump lines.
const MARKER_DOCUMENT: u64 = 2300;
const MARKER_EDGE: u64 = 2301;
const MARKER_REMOVE: u64 = 2302;

/// Handles `restore-collection`, `restore-indexes`, `restore-data` and `restore-view`.
pub fn route(state: &ServerState, req: &Request, what: &str) -> Result<Response> {
    let db = state.database(&req.database)?;
    match what {
        "restore-collection" => restore_collection(&db, req),
        "restore-indexes" => restore_indexes(&db, req),
        "restore-data" => restore_data(&db, req),
        "restore-view" => restore_view(&db, req),
        other => unreachable!("restore route '{other}' is not dispatched here"),
    }
}

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message)
}

/// The `{parameters, indexes}` body of `restore-collection` and `restore-indexes`.
fn structure(req: &Request) -> Result<(Value, Vec<Value>)> {
    let body = super::body_json(req)?.ok_or_else(|| bad("request body is missing"))?;
    let parameters = match body.get("parameters") {
        Some(p @ Value::Object(_)) => p.clone(),
        _ => {
            return Err(bad(
                "collection declaration is invalid: 'parameters' missing",
            ))
        }
    };
    let indexes = match body.get("indexes") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list.clone(),
        Some(_) => return Err(bad("collection indexes declaration is invalid")),
    };
    Ok((parameters, indexes))
}

fn name_of(parameters: &Value) -> Result<&str> {
    match parameters.get("name") {
        Some(Value::String(name)) if !name.is_empty() => Ok(name),
        _ => Err(bad("collection name is missing")),
    }
}

fn restore_collection(db: &Arc<Database>, req: &Request) -> Result<Response> {
    let (parameters, _) = structure(req)?;
    let name = name_of(&parameters)?.to_string();
    let overwrite = req.bool_param("overwrite", false);
    let mut response = Response::ok_result(200, json!(true));
    if let Ok(existing) = db.collection(&name) {
        if !overwrite {
            return Err(Error::with_message(
                ErrorCode::DuplicateName,
                format!("collection '{name}' already exists"),
            ));
        }
        if existing.is_system() {
            // System collections stay (other parts of the server hold them); their content
            // goes, as ArangoDB does.
            response.wait_for(Box::new(existing.truncate(false)?));
            restore_key_state(&existing, &parameters)?;
            return Ok(response);
        }
        db.drop_collection(&name, true)?;
    }
    let mut spec_body = parameters.clone();
    if let Some(map) = spec_body.as_object_mut() {
        map.remove("id");
        map.remove("globallyUniqueId");
    }
    let spec = CollectionSpec::from_json(&spec_body)?;
    let coll = db.create_collection(spec)?;
    restore_key_state(&coll, &parameters)?;
    Ok(response)
}

/// Carries `keyOptions.lastValue` over, so that generated keys continue after the dumped ones.
fn restore_key_state(coll: &Arc<Collection>, parameters: &Value) -> Result<()> {
    match parameters.pointer("/keyOptions/lastValue") {
        None | Some(Value::Null) => Ok(()),
        Some(value) => {
            let last = value
                .as_u64()
                .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
                .ok_or_else(|| bad("keyOptions.lastValue must be a non-negative integer"))?;
            coll.restore_key_generator(last)
        }
    }
}

fn restore_indexes(db: &Arc<Database>, req: &Request) -> Result<Response> {
    let (parameters, indexes) = structure(req)?;
    let name = match req.param("collection") {
        Some(name) if !name.is_empty() => name.to_string(),
        _ => name_of(&parameters)?.to_string(),
    };
    let force = req.bool_param("force", false);
    let coll = db.collection(&name)?;
    for index in indexes {
        if matches!(index["type"].as_str(), Some("primary" | "edge")) {
            continue;
        }
        let mut definition = index;
        // The dumped id (`"123"` or `"collection/123"`) comes back with the index.
        let dumped_id = dumped_index_id(&definition);
        if let Some(map) = definition.as_object_mut() {
            map.remove("id");
            map.remove("selectivityEstimate");
            map.remove("figures");
        }
        let created = match dumped_id {
            Some(id) => coll.restore_index(&definition, id),
            None => coll.create_index(&definition),
        };
        match created {
            Ok(_) => {}
            Err(_) if force => {}
            Err(err) => return Err(err),
        }
    }
    Ok(Response::ok_result(200, json!(true)))
}

/// The numeric id of a dumped index definition: a number, a decimal string or a handle.
fn dumped_index_id(definition: &Value) -> Option<u64> {
    match definition.get("id")? {
        Value::Number(n) => n.as_u64(),
        Value::String(text) => text.rsplit('/').next()?.parse().ok(),
        _ => None,
    }
}

/// One line of a dump's data: a document to store or a key to remove.
// Read and moved once per line into the chunk; boxing the document would only add an
// allocation per line.
#[allow(clippy::large_enum_variant)]
enum DataLine {
    Store(EncodedDocument),
    Remove(String),
}

/// Reads one line of the restore data in one pass (`json::encode_dump_line`: no `Value` per
/// attribute); a line that pass refuses is read as a value, which words the error.
fn parse_line(line: &str, number: usize) -> Result<DataLine> {
    match crate::json::encode_dump_line(line.as_bytes()) {
        Ok(DumpLine::Document(doc)) => Ok(DataLine::Store(doc)),
        Ok(DumpLine::Envelope(marker, data)) => enveloped(marker, data, number),
        Err(_) => parse_value_line(line, number),
    }
}

/// The document or removal of an enveloped line with `marker`.
fn enveloped(marker: u64, data: EncodedDocument, number: usize) -> Result<DataLine> {
    match marker {
        MARKER_DOCUMENT | MARKER_EDGE => Ok(DataLine::Store(data)),
        MARKER_REMOVE => match data.key {
            Some(Value::String(key)) => Ok(DataLine::Remove(key)),
            _ => Err(bad(format!("remove marker in line {number} has no _key"))),
        },
        other => Err(bad(format!(
            "unexpected marker type {other} in line {number} of the restore data"
        ))),
    }
}

/// [`parse_line`] by way of a `Value`: the errors' wording.
fn parse_value_line(line: &str, number: usize) -> Result<DataLine> {
    let value = crate::json::parse(line.as_bytes()).map_err(|e| {
        bad(format!(
            "invalid JSON in line {number} of the restore data: {}",
            e.message
        ))
    })?;
    let Value::Object(mut object) = value else {
        return Err(Error::with_message(
            ErrorCode::DocumentTypeInvalid,
            format!("line {number} of the restore data is not a JSON object"),
        ));
    };
    // The enveloped format of arangodump before 3.8: {"type":2300,"data":{…}}.
    let enveloped_line = object.len() <= 3
        && object.get("type").is_some_and(Value::is_u64)
        && object.get("data").is_some_and(Value::is_object);
    let (marker, doc) = if enveloped_line {
        let marker = object["type"].as_u64().unwrap_or(0);
        (Some(marker), object.remove("data").unwrap_or_default())
    } else {
        (None, Value::Object(object))
    };
    // The one-pass reading refused a line this reading accepts: encoded from its printed
    // form (`_rev` stays: restore mode keeps the dumped revision).
    let doc = crate::json::encode_document(doc.to_string().as_bytes())?;
    match marker {
        Some(marker) => enveloped(marker, doc, number),
        None => Ok(DataLine::Store(doc)),
    }
}

fn restore_data(db: &Arc<Database>, req: &Request) -> Result<Response> {
    let name = match req.param("collection") {
        Some(name) if !name.is_empty() => name,
        _ => return Err(Error::new(ErrorCode::CollectionParameterMissing)),
    };
    let force = req.bool_param("force", false);
    let coll = db.collection(name)?;
    coll.check_usable()?;
    let body = std::str::from_utf8(&req.body).map_err(|_| bad("restore data is not UTF-8"))?;
    let mut opts = WriteOptions::new();
    opts.overwrite_mode = OverwriteMode::Replace;
    opts.silent = true;
    opts.keep_revisions = true;
    let mut response = Response::ok_result(200, json!(true));
    let mut pending: Vec<EncodedDocument> = Vec::new();
    let flush = |pending: &mut Vec<EncodedDocument>, response: &mut Response| -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        let documents = std::mem::replace(pending, Vec::with_capacity(pending.capacity()));
        let committed = DocumentWriter::AutoCommit.insert_many_encoded(&coll, documents, &opts)?;
        if !force {
            if let Some(Err(err)) = committed.value().iter().find(|r| r.is_err()) {
                return Err(err.clone());
            }
        }
        response.wait_for(Box::new(committed));
        Ok(())
    };
    for (i, line) in body.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line, i + 1) {
            Ok(DataLine::Store(doc)) => {
                if pending.capacity() == 0 {
                    // A dumped edge is ~100 bytes of text.
                    pending.reserve((body.len() / 64 + 1).min(CHUNK));
                }
                pending.push(doc);
                if pending.len() >= CHUNK {
                    flush(&mut pending, &mut response)?;
                }
            }
            Ok(DataLine::Remove(key)) => {
                // Earlier lines first: a removal applies after the documents before it.
                flush(&mut pending, &mut response)?;
                match coll.remove(&key, &opts) {
                    Ok(committed) => response.wait_for(Box::new(committed)),
                    Err(err) if err.code == ErrorCode::DocumentNotFound || force => {}
                    Err(err) => return Err(err),
                }
            }
            Err(_) if force => {}
            Err(err) => return Err(err),
        }
    }
    flush(&mut pending, &mut response)?;
    Ok(response)
}

/// Creates a view from its dumped definition (a `<name>.view.json` file: the view's
/// properties with links by collection name). An existing view of that name is a conflict
/// (1207) unless `overwrite=true`, which drops it first.
fn restore_view(db: &Arc<Database>, req: &Request) -> Result<Response> {
    let mut body = super::body_json(req)?.ok_or_else(|| bad("request body is missing"))?;
    let Some(map) = body.as_object_mut() else {
        return Err(bad("view definition is invalid: expecting an object"));
    };
    // The dumping server's identifiers are not part of the definition.
    for noise in ["id", "globallyUniqueId", "planId", "objectId"] {
        map.remove(noise);
    }
    let name = match map.get("name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        _ => return Err(bad("view definition is invalid: 'name' missing")),
    };
    let view_type = match map.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        _ => return Err(bad("view definition is invalid: 'type' missing")),
    };
    if db.view(&name).is_ok() {
        if !req.bool_param("overwrite", false) {
            return Err(Error::with_message(
                ErrorCode::DuplicateName,
                format!("view '{name}' already exists"),
            ));
        }
        db.drop_view(&name)?;
    }
    db.create_view(&name, &view_type, &body)?;
    Ok(Response::ok_result(200, json!(true)))
}
