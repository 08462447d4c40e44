//! `POST /_api/import`: bulk import of JSON lines, JSON arrays and the tabular format
//! (a header line of attribute names, then one array of values per line).

use quiver_core::{EncodedDocument, OverwriteMode, WriteKind};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use super::transaction::with_writer;
use super::write_options::write_options;
use crate::import_format::{bad, document_item, for_each_line, read_items, snippet, Format, Item};
use crate::response::Durability;
use crate::{method_not_allowed, Request, Response, ServerState};

/// Documents per commit when items are independent (`complete=false`): bounds the memory and
/// lock hold time of one engine batch for very large imports.
const CHUNK: usize = 10_000;

/// Estimated bytes of the documents of one chunk at most (`quiver_aql::value::estimate_size`):
/// with large documents a chunk ends before [`CHUNK`] documents.
const CHUNK_BYTES: u64 = 32 << 20;

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
///
/// The body is read item by item (`import_format::read_items`) and never held as documents
/// all at once: with `complete=false` the documents go to the core in chunks of at most
/// [`CHUNK`] documents or [`CHUNK_BYTES`] estimated bytes, each chunk one commit (or staged in
/// the request's stream transaction); with `complete=true` a first reading checks every item
/// (an input error writes nothing, as before any insert in ArangoDB), and a second one stages
/// the documents one by one in one transaction (after the truncate of `overwrite=true`).
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
    let kind = req.param("type").unwrap_or("").trim();
    let format = Format::of(kind, body, req.bool_param("ignoreMissing", false))?;

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
    let prefixes = Prefixes {
        from: req.param("fromPrefix"),
        to: req.param("toPrefix"),
        overwrite: req.bool_param("overwriteCollectionPrefix", false),
        edges: coll.is_edge(),
    };
    let overwrite = req.bool_param("overwrite", false);
    let mut empty = 0u64;

    if complete {
        // Every input item must be good before anything is written.
        read_items(body, format, &mut empty, false, &mut |(line, item)| {
            prefixes
                .document(line, item)
                .map(drop)
                .map_err(|(code, text)| Error::with_message(code, text))
        })?;
        // ArangoDB imports (and truncates first, with overwrite=true) in one transaction:
        // a failed import leaves the collection as it was. The engine's O(1) truncate
        // commits on its own, so the truncate is staged in the transaction (the stream
        // transaction, or one of its own) with the inserts.
        let db = state.database(&req.database)?;
        let write = vec![coll.name().to_string()];
        let outcome = with_writer(state, req, |w| {
            let before = w.staged_operations();
            let result = w.transaction(&db, write, opts.wait_for_sync, |t| {
                if overwrite {
                    t.truncate(&coll)?;
                }
                let mut counts = Counts::default();
                let mut blank = 0u64;
                read_items(body, format, &mut blank, true, &mut |(line, item)| {
                    let doc = prefixes
                        .document(line, item)
                        .map_err(|(code, text)| Error::with_message(code, text))?;
                    counts.add(t.insert(&coll, doc, &opts)?.kind);
                    Ok(())
                })?;
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
            want_details.then(Vec::new),
            vec![Box::new(committed)],
        ));
    }

    let mut progress = Progress {
        want_details,
        ..Progress::default()
    };
    if overwrite {
        progress
            .durability
            .push(Box::new(with_writer(state, req, |w| {
                w.truncate(&coll, opts.wait_for_sync)
            })?));
    }
    let refused = |progress: &mut Progress, problem: String| {
        progress.errors += 1;
        if want_details {
            progress.input_details.push(problem);
        }
    };
    if format == Format::Documents && !prefixes.active() && coll.takes_encoded(&opts) {
        // JSON lines the core stores as encoded go from the line to the stored encoding in
        // one pass (`json::encode_document`), without a `Value` per attribute.
        let mut chunk = Chunk::for_body(body.len());
        for_each_line(body, &mut empty, &mut |line, text| {
            match prefixes.encoded(line, text) {
                Ok(doc) => {
                    let bytes = doc.members.len() as u64 + 64;
                    chunk.push(doc, bytes, want_details.then_some(Source::Line(text)));
                }
                Err(problem) => refused(&mut progress, problem),
            }
            if chunk.is_full() {
                let (docs, sources) = chunk.take();
                let docs = ChunkDocuments::new(Documents::Encoded(docs), sources);
                progress.insert(state, req, &coll, &opts, &prefixes, docs)?;
            }
            Ok(())
        })?;
        let (docs, sources) = chunk.take();
        let docs = ChunkDocuments::new(Documents::Encoded(docs), sources);
        progress.insert(state, req, &coll, &opts, &prefixes, docs)?;
    } else {
        let mut chunk = Chunk::for_body(body.len());
        let mut each = |progress: &mut Progress, line: usize, item: Item, source| -> Result<()> {
            match prefixes.document(line, item) {
                Ok(doc) => {
                    // Formats without lines keep a printable copy while details may need it.
                    let source = match source {
                        Source::Text(_) if want_details => Source::Text(snippet(&doc.to_string())),
                        other => other,
                    };
                    let bytes = quiver_aql::value::estimate_size(&doc);
                    chunk.push(doc, bytes, want_details.then_some(source));
                }
                Err((_, problem)) => refused(progress, problem),
            }
            if chunk.is_full() {
                let (docs, sources) = chunk.take();
                let docs = ChunkDocuments::new(Documents::Values(docs), sources);
                progress.insert(state, req, &coll, &opts, &prefixes, docs)?;
            }
            Ok(())
        };
        if format == Format::Documents {
            for_each_line(body, &mut empty, &mut |line, text| {
                each(&mut progress, line, document_item(text), Source::Line(text))
            })?;
        } else {
            read_items(body, format, &mut empty, false, &mut |(line, item)| {
                each(&mut progress, line, item, Source::Text(String::new()))
            })?;
        }
        let (docs, sources) = chunk.take();
        let docs = ChunkDocuments::new(Documents::Values(docs), sources);
        progress.insert(state, req, &coll, &opts, &prefixes, docs)?;
    }
    let Progress {
        counts,
        errors,
        mut input_details,
        write_details,
        durability,
        ..
    } = progress;
    // Input errors first, then the refused inserts, as ArangoDB lists them.
    input_details.extend(write_details);
    Ok(imported(
        counts,
        errors,
        empty,
        want_details.then_some(input_details),
        durability,
    ))
}

/// How an input item becomes a document: the edge prefixes and the edge check.
struct Prefixes<'a> {
    from: Option<&'a str>,
    to: Option<&'a str>,
    overwrite: bool,
    edges: bool,
}

impl Prefixes<'_> {
    /// Whether a prefix may change `_from` or `_to` (of any collection, as [`apply_prefix`]
    /// does).
    fn active(&self) -> bool {
        [self.from, self.to]
            .iter()
            .any(|p| p.is_some_and(|p| !p.is_empty()))
    }

    /// The document to insert, or the error code and the `details` text of the input item at
    /// `line`.
    fn document(&self, line: usize, item: Item) -> std::result::Result<Value, (ErrorCode, String)> {
        let (code, problem) = match item {
            Item::Doc(mut doc) => {
                apply_prefix(&mut doc, "_from", self.from, self.overwrite);
                apply_prefix(&mut doc, "_to", self.to, self.overwrite);
                match self.edges.then(|| missing_edge_attribute(&doc)).flatten() {
                    None => return Ok(doc),
                    Some(problem) => (ErrorCode::InvalidEdgeAttribute, problem),
                }
            }
            Item::Invalid(code, problem) => (code, problem),
        };
        Err((code, format!("at position {line}: {problem}")))
    }

    /// [`Prefixes::document`] of the JSON line `text` as an encoded document (for use when no
    /// prefix is [`Prefixes::active`]), or the `details` text of its error: the errors of
    /// [`Prefixes::document`], worded from the line parsed as a `Value` (only then).
    fn encoded(&self, line: usize, text: &str) -> std::result::Result<EncodedDocument, String> {
        let is_string = |end: &Option<Value>| matches!(end, Some(Value::String(_)));
        match crate::json::encode_document(text.as_bytes()) {
            Ok(doc) if !self.edges || (is_string(&doc.from) && is_string(&doc.to)) => Ok(doc),
            // Not an object, not JSON, or an edge without its ends: the reading as a value
            // words the error (and decides, should the two readings ever disagree).
            _ => {
                let doc = self
                    .document(line, document_item(text))
                    .map_err(|(_, problem)| problem)?;
                crate::json::encode_document(doc.to_string().as_bytes())
                    .map_err(|e| format!("at position {line}: {}", e.message))
            }
        }
    }

    /// The `details` text of a refused document of the JSON line `text`: the document as
    /// inserted (after the prefixes), printed again.
    fn printed(&self, text: &str) -> String {
        match self.document(0, document_item(text)) {
            Ok(doc) => snippet(&doc.to_string()),
            Err(_) => snippet(text),
        }
    }
}

/// Where the `details` text of a document comes from should its insert be refused: its JSON
/// line, parsed and printed again only then, or a copy printed up front (formats without
/// lines of their own).
enum Source<'a> {
    Line(&'a str),
    Text(String),
}

/// The documents of one commit, in input order.
enum Documents {
    Values(Vec<Value>),
    Encoded(Vec<EncodedDocument>),
}

/// One chunk handed to [`Progress::insert`]: its documents and, per document, where its
/// `details` text comes from (empty when details are not asked for).
struct ChunkDocuments<'a> {
    documents: Documents,
    sources: Vec<Source<'a>>,
}

impl<'a> ChunkDocuments<'a> {
    fn new(documents: Documents, sources: Vec<Source<'a>>) -> ChunkDocuments<'a> {
        ChunkDocuments { documents, sources }
    }
}

/// The documents of an import with independent items not inserted yet: at most [`CHUNK`]
/// documents or [`CHUNK_BYTES`] estimated bytes.
struct Chunk<'a, D> {
    docs: Vec<D>,
    /// Per document, its [`Source`] (only when `details` are asked for).
    sources: Vec<Source<'a>>,
    bytes: u64,
}

impl<'a, D> Chunk<'a, D> {
    /// An empty chunk with room for the documents of a body of `body_bytes` (at most
    /// [`CHUNK`]), so that it does not grow by copying.
    fn for_body(body_bytes: usize) -> Self {
        // A JSON line of an edge is ~50 bytes; smaller documents are rare.
        let capacity = (body_bytes / 32 + 1).min(CHUNK);
        Chunk {
            docs: Vec::with_capacity(capacity),
            sources: Vec::new(),
            bytes: 0,
        }
    }

    fn push(&mut self, doc: D, bytes: u64, source: Option<Source<'a>>) {
        self.docs.push(doc);
        self.bytes += bytes;
        self.sources.extend(source);
    }

    fn is_full(&self) -> bool {
        self.docs.len() >= CHUNK || self.bytes >= CHUNK_BYTES
    }

    /// The documents and their sources so far; the chunk starts again empty, with the same
    /// room.
    fn take(&mut self) -> (Vec<D>, Vec<Source<'a>>) {
        self.bytes = 0;
        let capacity = self.docs.capacity();
        (
            std::mem::replace(&mut self.docs, Vec::with_capacity(capacity)),
            std::mem::take(&mut self.sources),
        )
    }
}

/// What an import with independent items (`complete=false`) has done so far.
#[derive(Default)]
struct Progress {
    want_details: bool,
    counts: Counts,
    errors: u64,
    /// ArangoDB numbers a refused insert by its 0-based index among the documents that
    /// reached the insert (input errors are numbered by input position, from 1); drivers'
    /// tests pin it.
    position: usize,
    input_details: Vec<String>,
    write_details: Vec<String>,
    durability: Vec<Box<dyn Durability>>,
}

impl Progress {
    /// Inserts one chunk: one commit, or staged in the stream transaction (durability comes
    /// with its commit).
    fn insert(
        &mut self,
        state: &ServerState,
        req: &Request,
        coll: &std::sync::Arc<quiver_core::Collection>,
        opts: &quiver_core::WriteOptions,
        prefixes: &Prefixes<'_>,
        chunk: ChunkDocuments<'_>,
    ) -> Result<()> {
        let ChunkDocuments { documents, sources } = chunk;
        let empty = match &documents {
            Documents::Values(docs) => docs.is_empty(),
            Documents::Encoded(docs) => docs.is_empty(),
        };
        if empty {
            return Ok(());
        }
        let outcome = with_writer(state, req, |w| {
            let before = w.staged_operations();
            let result = match documents {
                Documents::Values(docs) => w.insert_many(coll, docs, opts),
                Documents::Encoded(docs) => w.insert_many_encoded(coll, docs, opts),
            };
            Ok(result.map_err(|e| (e, w.staged_operations() != before)))
        })?;
        let committed = outcome.or_else(|failure| undo_failed(state, req, failure))?;
        for (i, result) in committed.value().iter().enumerate() {
            let at = self.position;
            self.position += 1;
            match result {
                Ok(op) => self.counts.add(op.kind),
                Err(e) => {
                    self.errors += 1;
                    if self.want_details {
                        let text = match sources.get(i) {
                            Some(Source::Line(line)) => prefixes.printed(line),
                            Some(Source::Text(text)) => text.clone(),
                            None => String::new(),
                        };
                        self.write_details
                            .push(format!("at position {at}: {}", write_failure(e, &text)));
                    }
                }
            }
        }
        // Only the durability is kept until the answer: the chunk's results (an `OpResult`,
        // with its key, per document) were ~250 bytes per imported document held until the
        // whole body was in, 2.5 GB of the peak of a 10-million-document import
        // (docs/benchmarks/reliability.md, "Held results").
        self.durability.push(Box::new(committed.map(|_| ())));
        Ok(())
    }
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
    use crate::import_format::collect_items;

    fn tabular(ignore_missing: bool) -> Format {
        Format::Tabular { ignore_missing }
    }

    #[test]
    fn jsonl_counts_blank_lines() {
        let mut empty = 0;
        let items = collect_items(
            "\n\n {\"a\":1}\n \n \n \r\n \n {\"b\":2}\n\n",
            Format::Documents,
            &mut empty,
        )
        .unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(empty, 7);
    }

    #[test]
    fn tabular_rows_and_errors() {
        let mut empty = 0;
        let items = collect_items(
            "[\"_key\",\"v\"]\n[\"a\",1]\n[\"b\"]\n\n[\"c\",2,3]\n",
            tabular(false),
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
        let items =
            collect_items("[\"_key\",\"v\"]\n[\"b\"]\n", tabular(true), &mut empty).unwrap();
        assert!(matches!(items[0], (1, Item::Doc(_))));
        assert!(collect_items("\n[\"a\"]\n", tabular(false), &mut empty).is_err());
        assert!(collect_items("{\"a\":1}\n", tabular(false), &mut empty).is_err());
    }

    #[test]
    fn details_are_worded_as_arangodb_words_them() {
        let mut empty = 0;
        let items = collect_items("not json\n[1]\n", Format::Documents, &mut empty).unwrap();
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

    /// A JSON line read for the encoded path fails with exactly the `details` text of the
    /// line read as a value, and a good one keeps its attributes in order.
    #[test]
    fn encoded_lines_fail_as_values_do() {
        let edges = Prefixes {
            from: None,
            to: None,
            overwrite: false,
            edges: true,
        };
        for text in [
            r#"{"_from":"v/a"}"#,
            r#"{"_from":"v/a","_to":1}"#,
            "[1]",
            "not json",
            r#"{"a":1,"a":2}"#,
            r#"{"a":1} {"b":2}"#,
        ] {
            let value = edges.document(7, document_item(text)).unwrap_err().1;
            assert_eq!(edges.encoded(7, text).unwrap_err(), value, "{text}");
        }
        let doc = edges
            .encoded(
                1,
                r#" {"_key":"k","_to":"v/b","x":[1, 2.0],"_from":"v/a","_id":"e/k"}"#,
            )
            .unwrap();
        assert_eq!(doc.key, Some(json!("k")));
        assert_eq!(
            String::from_utf8(doc.members).unwrap(),
            r#","_to":"v/b","x":[1,2],"_from":"v/a""#
        );
        assert!(!edges.active());
    }

    /// A refused document is printed from its line as the insert saw it: after the prefixes.
    #[test]
    fn refused_documents_are_printed_after_the_prefixes() {
        let prefixed = Prefixes {
            from: Some("v"),
            to: Some(""),
            overwrite: false,
            edges: true,
        };
        assert!(prefixed.active());
        assert_eq!(
            prefixed.printed(r#"{"_from":"a", "_to":"x/b"}"#),
            r#"{"_from":"v/a","_to":"x/b"}"#
        );
        let documents = Prefixes {
            edges: false,
            ..prefixed
        };
        // As before the encoded path: the prefixes apply to document collections too.
        assert!(documents.active());
        assert_eq!(documents.printed(r#"{"_from":"a"}"#), r#"{"_from":"v/a"}"#);
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
