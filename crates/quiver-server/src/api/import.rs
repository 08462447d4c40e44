//! `POST /_api/import`: bulk import of JSON lines, JSON arrays and the tabular format
//! (a header line of attribute names, then one array of values per line).

use quiver_core::{OverwriteMode, WriteKind};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use super::transaction::with_writer;
use super::write_options::write_options;
use crate::import_format::{bad, parse_array, parse_documents, parse_tabular, snippet, Item};
use crate::response::Durability;
use crate::{method_not_allowed, Request, Response, ServerState};

/// Documents per commit when items are independent (`complete=false`): bounds the memory and
/// lock hold time of one engine batch for very large imports.
const CHUNK: usize = 10_000;

/// Applies `fromPrefix`/`toPrefix` to an edge attribute.
fn apply_prefix(doc: &mut Value, attr: &str, prefix: Option<&str>, overwrite: bool) {
    let Some(prefix) = prefix.filter(|p| !p.is_empty()) else {
        return;
    };
    let Some(Value::String(handle)) = doc.get_mut(attr) else {
        return;
    };
    match handle.split_once('/') {
        None => *handle = format!("{prefix}/{handle}"),
        Some((_, key)) if overwrite => *handle = format!("{prefix}/{key}"),
        Some(_) => {}
    }
}

/// The `details` text of a document the core refused. ArangoDB names the error by its default
/// message (no key or attribute), so the text does not depend on the message's detail.
fn write_failure(error: &Error, document: &str) -> String {
    format!(
        "creating document failed with error '{}', offending document: {document}",
        Error::new(error.code).message
    )
}

/// ArangoDB's import handler checks edges itself before inserting: `_from` and `_to` (after
/// the prefixes) must be strings; whether they are valid handles is the insert's check (1233).
fn missing_edge_attribute(doc: &Value) -> Option<String> {
    let is_string = |attr: &str| doc.get(attr).is_some_and(Value::is_string);
    if is_string("_from") && is_string("_to") {
        return None;
    }
    Some(format!(
        "missing '_from' or '_to' attribute, offending document: {}",
        snippet(&doc.to_string())
    ))
}

/// `POST /_api/import`.
pub fn route(state: &ServerState, req: &Request) -> Result<Response> {
    if req.segments.len() > 2 {
        return Ok(crate::not_found(req));
    }
    if req.method != http::Method::POST {
        return Ok(method_not_allowed());
    }
    let name = req
        .param("collection")
        .filter(|c| !c.is_empty())
        .ok_or_else(|| Error::new(ErrorCode::CollectionParameterMissing))?;
    let coll = state.database(&req.database)?.collection(name)?;
    coll.check_usable()?;
    let body = std::str::from_utf8(&req.body).map_err(|_| bad("request body is not UTF-8"))?;
    if body.trim().is_empty() {
        return Err(bad("request body is empty"));
    }
    let mut empty = 0u64;
    let kind = req.param("type").unwrap_or("").trim();
    let items = match kind {
        "documents" => parse_documents(body, &mut empty),
        "array" | "list" => parse_array(body)?,
        "auto" => {
            if body.trim_start().starts_with('[') {
                parse_array(body)?
            } else {
                parse_documents(body, &mut empty)
            }
        }
        "" | "undefined" => {
            parse_tabular(body, req.bool_param("ignoreMissing", false), &mut empty)?
        }
        other => return Err(bad(format!("invalid value for 'type': '{other}'"))),
    };

    let complete = req.bool_param("complete", false);
    let want_details = req.bool_param("details", false);
    // The document API's options; `overwrite` means truncate here, `onDuplicate` is the mode.
    let mut opts = write_options(req)?;
    opts.all_or_nothing = complete;
    opts.silent = true;
    opts.overwrite_mode = match req.param("onDuplicate").unwrap_or("error") {
        "update" => OverwriteMode::Update,
        "replace" => OverwriteMode::Replace,
        "ignore" => OverwriteMode::Ignore,
        _ => OverwriteMode::Conflict,
    };
    let from_prefix = req.param("fromPrefix");
    let to_prefix = req.param("toPrefix");
    let overwrite_prefix = req.bool_param("overwriteCollectionPrefix", false);

    let mut details = Vec::new();
    let mut errors = 0u64;
    let mut docs = Vec::with_capacity(items.len());
    let edges = coll.is_edge();
    for (line, item) in items {
        let (code, problem) = match item {
            Item::Doc(mut doc) => {
                apply_prefix(&mut doc, "_from", from_prefix, overwrite_prefix);
                apply_prefix(&mut doc, "_to", to_prefix, overwrite_prefix);
                match edges.then(|| missing_edge_attribute(&doc)).flatten() {
                    None => {
                        docs.push(doc);
                        continue;
                    }
                    Some(problem) => (ErrorCode::InvalidEdgeAttribute, problem),
                }
            }
            Item::Invalid(code, problem) => (code, problem),
        };
        let text = format!("at position {line}: {problem}");
        if complete {
            return Err(Error::with_message(code, text));
        }
        errors += 1;
        if want_details {
            details.push(text);
        }
    }

    let overwrite = req.bool_param("overwrite", false);
    if overwrite && complete {
        // ArangoDB truncates and imports in one transaction: with complete=true a failed import
        // leaves the collection as it was, its old documents included. The engine's O(1)
        // truncate commits on its own, so this runs in one transaction (the stream
        // transaction, or one of its own) that stages the removals and the inserts.
        let db = state.database(&req.database)?;
        let write = vec![coll.name().to_string()];
        let outcome = with_writer(state, req, |w| {
            let before = w.staged_operations();
            let result = w.transaction(&db, write, opts.wait_for_sync, |t| {
                t.truncate(&coll)?;
                let mut counts = Counts::default();
                for doc in docs {
                    counts.add(t.insert(&coll, doc, &opts)?.kind);
                }
                Ok(counts)
            });
            Ok(result.map_err(|e| (e, w.staged_operations() != before)))
        })?;
        let committed = outcome.or_else(|failure| undo_failed(state, req, failure))?;
        let counts = committed.value().clone();
        return Ok(imported(
            counts,
            0,
            empty,
            want_details.then_some(details),
            vec![Box::new(committed)],
        ));
    }
    let mut durability: Vec<Box<dyn Durability>> = Vec::new();
    if overwrite {
        durability.push(Box::new(with_writer(state, req, |w| {
            w.truncate(&coll, opts.wait_for_sync)
        })?));
    }
    let mut counts = Counts::default();
    let chunk = if complete { docs.len().max(1) } else { CHUNK };
    // ArangoDB numbers a refused insert by its 0-based index among the documents that reached
    // the insert (input errors are numbered by input position, from 1); drivers' tests pin it.
    let mut position = 0usize;
    let mut remaining = docs.into_iter();
    loop {
        let batch: Vec<Value> = remaining.by_ref().take(chunk).collect();
        if batch.is_empty() {
            break;
        }
        // Keep a printable copy only when errors will be reported in detail.
        let copies: Vec<String> = if want_details {
            batch.iter().map(|d| snippet(&d.to_string())).collect()
        } else {
            Vec::new()
        };
        // Each chunk is one commit, or staged in the stream transaction (items stay
        // independent unless complete=true; durability comes with its commit).
        let outcome = with_writer(state, req, |w| {
            let before = w.staged_operations();
            let result = w.insert_many(&coll, batch, &opts);
            Ok(result.map_err(|e| (e, w.staged_operations() != before)))
        })?;
        let committed = outcome.or_else(|failure| undo_failed(state, req, failure))?;
        for (i, result) in committed.value().iter().enumerate() {
            let at = position;
            position += 1;
            match result {
                Ok(op) => counts.add(op.kind),
                Err(e) => {
                    errors += 1;
                    if want_details {
                        let text = copies.get(i).map(String::as_str).unwrap_or("");
                        details.push(format!("at position {at}: {}", write_failure(e, text)));
                    }
                }
            }
        }
        durability.push(Box::new(committed));
    }

    Ok(imported(
        counts,
        errors,
        empty,
        want_details.then_some(details),
        durability,
    ))
}

/// Answers a failed all-or-nothing import step: `(error, staged)` where `staged` says whether
/// the step left writes in the request's stream transaction. That transaction has no savepoint
/// to undo them, so it is aborted; then the error is returned.
fn undo_failed<T>(state: &ServerState, req: &Request, (err, staged): (Error, bool)) -> Result<T> {
    if let (true, Some(id)) = (staged, super::transaction::transaction_id(req)) {
        let _ = state.core.stream_transactions().abort(id, &req.database);
    }
    Err(err)
}

/// The counters of written documents.
#[derive(Clone, Default)]
struct Counts {
    created: u64,
    updated: u64,
    ignored: u64,
}

impl Counts {
    fn add(&mut self, kind: WriteKind) {
        match kind {
            WriteKind::Created => self.created += 1,
            // Imports send no `versionAttribute`, so `Unchanged` does not occur; it would be a
            // successful (no-op) overwrite.
            WriteKind::Replaced | WriteKind::Updated | WriteKind::Unchanged => self.updated += 1,
            WriteKind::Ignored => self.ignored += 1,
            WriteKind::Removed => {}
        }
    }
}

/// The 201 answer: the counters, `details` when asked for, and the writes' durability.
fn imported(
    counts: Counts,
    errors: u64,
    empty: u64,
    details: Option<Vec<String>>,
    durability: Vec<Box<dyn Durability>>,
) -> Response {
    let mut body = json!({
        "error": false,
        "created": counts.created,
        "errors": errors,
        "empty": empty,
        "updated": counts.updated,
        "ignored": counts.ignored,
    });
    if let Some(details) = details {
        body["details"] = json!(details);
    }
    let mut response = Response::json(201, &body);
    response.durability = durability;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_counts_blank_lines() {
        let mut empty = 0;
        let items = parse_documents("\n\n {\"a\":1}\n \n \n \r\n \n {\"b\":2}\n\n", &mut empty);
        assert_eq!(items.len(), 2);
        assert_eq!(empty, 7);
    }

    #[test]
    fn tabular_rows_and_errors() {
        let mut empty = 0;
        let items = parse_tabular(
            "[\"_key\",\"v\"]\n[\"a\",1]\n[\"b\"]\n\n[\"c\",2,3]\n",
            false,
            &mut empty,
        )
        .unwrap();
        assert_eq!(empty, 1);
        assert!(matches!(items[0], (1, Item::Doc(_))));
        assert!(
            matches!(&items[1], (2, Item::Invalid(_, t)) if t == "wrong number of JSON values (got 1, expected 2)")
        );
        assert!(
            matches!(items[2], (4, Item::Invalid(..))),
            "the blank line counts"
        );
        let items = parse_tabular("[\"_key\",\"v\"]\n[\"b\"]\n", true, &mut empty).unwrap();
        assert!(matches!(items[0], (1, Item::Doc(_))));
        assert!(parse_tabular("\n[\"a\"]\n", false, &mut empty).is_err());
        assert!(parse_tabular("{\"a\":1}\n", false, &mut empty).is_err());
    }

    #[test]
    fn details_are_worded_as_arangodb_words_them() {
        let mut empty = 0;
        let items = parse_documents("not json\n[1]\n", &mut empty);
        let texts: Vec<&str> = items
            .iter()
            .map(|i| match &i.1 {
                Item::Invalid(_, t) => t.as_str(),
                Item::Doc(_) => "",
            })
            .collect();
        assert_eq!(
            texts,
            [
                "invalid JSON type (expecting object, probably parse error), offending context: not json",
                "invalid JSON type (expecting object), offending document: [1]",
            ]
        );
        let long = "x".repeat(300);
        assert_eq!(snippet(&long), format!("{}...", &long[..255]));
        assert_eq!(
            missing_edge_attribute(&json!({"_from": "v/a"})).unwrap(),
            "missing '_from' or '_to' attribute, offending document: {\"_from\":\"v/a\"}"
        );
        assert!(missing_edge_attribute(&json!({"_from": "v/a", "_to": "b"})).is_none());
        let dup = Error::with_message(ErrorCode::UniqueConstraintViolated, "detailed text");
        assert_eq!(
            write_failure(&dup, "{}"),
            "creating document failed with error 'unique constraint violated', offending document: {}"
        );
    }

    #[test]
    fn prefixes() {
        let mut doc = json!({"_from": "a", "_to": "x/b"});
        apply_prefix(&mut doc, "_from", Some("v"), false);
        apply_prefix(&mut doc, "_to", Some("w"), false);
        assert_eq!(doc, json!({"_from": "v/a", "_to": "x/b"}));
        apply_prefix(&mut doc, "_to", Some("w"), true);
        assert_eq!(doc["_to"], "w/b");
    }
}
