//! `quiver import`: arangoimport over `POST /_api/import`. The input (a file, `-` for
//! standard input, gzip when the name ends in `.gz`) is read as JSON (an array, or JSON lines),
//! JSON lines, CSV or TSV; columns are renamed (`--translate`), attributes dropped
//! (`--remove-attribute`), CSV values converted (`--convert`); documents go to the server as
//! JSON lines (`type=documents`) in requests of at most `--batch-size` bytes, `--threads` of
//! them in flight (a bounded queue between the reader and the senders). The server's counts
//! are summed and reported as arangoimport reports them.

use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Instant;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Map, Value};

use crate::client::{encode, Client};
use crate::options::ImportOptions;
use crate::progress::{rate, Progress};

/// Error details printed at most (the counts stay exact).
const MAX_DETAILS: usize = 100;

/// The largest input `--complete` sends (in one request, so that the server can refuse it
/// all).
const COMPLETE_LIMIT: usize = 512 * 1024 * 1024;

/// The server's counts, summed over all requests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ImportSummary {
    /// Documents created.
    pub created: u64,
    /// Documents refused.
    pub errors: u64,
    /// Empty lines.
    pub empty: u64,
    /// Documents updated or replaced.
    pub updated: u64,
    /// Documents ignored.
    pub ignored: u64,
    /// Lines or documents read.
    pub lines: u64,
}

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message)
}

/// What the reader hands the senders: one request body and how many documents it holds.
struct Request {
    body: Vec<u8>,
    documents: u64,
}

/// Column renames and removals applied to every document.
#[derive(Debug, Default)]
pub struct Shaping {
    translate: Vec<(String, String)>,
    remove: Vec<String>,
}

impl Shaping {
    /// Parses `--translate old=new` and `--remove-attribute` values.
    pub fn new(translate: &[String], remove: &[String]) -> Result<Shaping> {
        let translate = translate
            .iter()
            .map(|t| {
                t.split_once('=')
                    .filter(|(a, b)| !a.is_empty() && !b.is_empty())
                    .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
                    .ok_or_else(|| bad(format!("invalid translation '{t}': expected old=new")))
            })
            .collect::<Result<_>>()?;
        Ok(Shaping {
            translate,
            remove: remove.to_vec(),
        })
    }

    fn is_identity(&self) -> bool {
        self.translate.is_empty() && self.remove.is_empty()
    }

    /// Applies the renames and removals to one document.
    pub fn apply(&self, doc: &mut Map<String, Value>) {
        for (from, to) in &self.translate {
            if let Some(v) = doc.remove(from) {
                doc.insert(to.clone(), v);
            }
        }
        for name in &self.remove {
            doc.remove(name);
        }
    }
}

/// A CSV/TSV value as arangoimport converts it: `null`, `true`, `false` and numbers become JSON
/// values when `convert`; everything else stays a string.
pub fn convert_value(text: &str, convert: bool) -> Value {
    if !convert {
        return Value::String(text.to_string());
    }
    match text {
        "null" => Value::Null,
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => {
            let numeric = !text.is_empty()
                && text
                    .bytes()
                    .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
                && text.bytes().any(|b| b.is_ascii_digit());
            if numeric {
                if let Ok(n) = text.parse::<i64>() {
                    return Value::from(n);
                }
                if let Some(n) = text
                    .parse::<f64>()
                    .ok()
                    .and_then(serde_json::Number::from_f64)
                {
                    return Value::Number(n);
                }
            }
            Value::String(text.to_string())
        }
    }
}

fn open_input(file: &str) -> Result<Box<dyn BufRead + Send>> {
    let raw: Box<dyn Read + Send> = if file == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(file).map_err(|e| {
            Error::with_message(ErrorCode::IoError, format!("cannot open '{file}': {e}"))
        })?)
    };
    Ok(if file.ends_with(".gz") {
        Box::new(BufReader::with_capacity(
            1 << 20,
            flate2::read::MultiGzDecoder::new(raw),
        ))
    } else {
        Box::new(BufReader::with_capacity(1 << 20, raw))
    })
}

/// Runs the import; `interrupted` is polled between requests.
pub fn run(options: &ImportOptions, interrupted: &AtomicBool) -> Result<ImportSummary> {
    let started = Instant::now();
    let connection = options.server.connection()?;
    let client = connection.client();
    let db = options.server.database.as_str();
    let shaping = Shaping::new(&options.translate, &options.remove_attribute)?;
    prepare_collection(&client, options)?;
    let mut query = format!(
        "/_api/import?collection={}&type=documents&onDuplicate={}&details=true&complete={}",
        encode(&options.collection),
        options.on_duplicate,
        options.complete
    );
    for (name, value) in [
        ("fromPrefix", &options.from_collection_prefix),
        ("toPrefix", &options.to_collection_prefix),
    ] {
        if let Some(prefix) = value {
            query.push_str(&format!("&{name}={}", encode(prefix)));
        }
    }
    if options.overwrite_collection_prefix {
        query.push_str("&overwriteCollectionPrefix=true");
    }
    let progress = Progress::new(
        &format!("import {}", options.collection),
        0,
        options.progress,
    );
    let threads = options.threads.clamp(1, 64);
    let (sender, receiver) = mpsc::sync_channel::<Request>(threads * 2);
    let receiver = Mutex::new(receiver);
    let totals = Mutex::new(ImportSummary::default());
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let details = Mutex::new(0usize);
    let read_result = std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let client = connection.client();
                loop {
                    let next = receiver.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok(request) = next else { break };
                    if interrupted.load(Ordering::Relaxed) {
                        continue;
                    }
                    match client.request("POST", Some(db), &query, Some(&request.body)) {
                        Ok(reply) => match reply.json() {
                            Ok(counts) => {
                                add_counts(&totals, &counts);
                                report_details(&progress, &details, &counts);
                                progress.add(request.documents);
                            }
                            Err(err) => record(&failure, err),
                        },
                        Err(err) => record(&failure, err),
                    }
                }
            });
        }
        let result = read_documents(options, &shaping, &sender, &failure, interrupted);
        drop(sender);
        result
    });
    progress.finish();
    let mut summary = totals.into_inner().unwrap_or_else(|e| e.into_inner());
    summary.lines = read_result?;
    if let Some(err) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(err);
    }
    if interrupted.load(Ordering::Relaxed) {
        return Err(Error::with_message(
            ErrorCode::RequestCanceled,
            "interrupted",
        ));
    }
    eprintln!(
        "created: {}\nwarnings/errors: {}\nupdated/replaced: {}\nignored: {}\n({})",
        summary.created,
        summary.errors,
        summary.updated,
        summary.ignored,
        rate(summary.created + summary.updated, started)
    );
    Ok(summary)
}

fn record(failure: &Mutex<Option<Error>>, err: Error) {
    failure
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert(err);
}

fn add_counts(totals: &Mutex<ImportSummary>, counts: &Value) {
    let n = |k: &str| counts[k].as_u64().unwrap_or(0);
    let mut t = totals.lock().unwrap_or_else(|e| e.into_inner());
    t.created += n("created");
    t.errors += n("errors");
    t.empty += n("empty");
    t.updated += n("updated");
    t.ignored += n("ignored");
}

fn report_details(progress: &Progress, printed: &Mutex<usize>, counts: &Value) {
    let mut printed = printed.lock().unwrap_or_else(|e| e.into_inner());
    for detail in counts["details"].as_array().into_iter().flatten() {
        if *printed >= MAX_DETAILS {
            return;
        }
        *printed += 1;
        progress.line(&format!("warning: {}", detail.as_str().unwrap_or("")), true);
    }
}

/// Truncates (`--overwrite`) or creates (`--create-collection`) the target collection.
fn prepare_collection(client: &Client, options: &ImportOptions) -> Result<()> {
    let db = Some(options.server.database.as_str());
    let name = encode(&options.collection);
    match client.request("GET", db, &format!("/_api/collection/{name}"), None) {
        Ok(_) => {}
        Err(err) if err.code == ErrorCode::DataSourceNotFound && options.create_collection => {
            let kind = if options.create_collection_type == "edge" {
                3
            } else {
                2
            };
            client.json(
                "POST",
                db,
                "/_api/collection",
                &json!({ "name": options.collection, "type": kind }),
            )?;
            return Ok(());
        }
        Err(err) => return Err(err),
    }
    if options.overwrite {
        client.request(
            "PUT",
            db,
            &format!("/_api/collection/{name}/truncate"),
            None,
        )?;
    }
    Ok(())
}

/// Batches documents into request bodies of at most `limit` bytes.
struct Batcher<'a> {
    sender: &'a mpsc::SyncSender<Request>,
    failure: &'a Mutex<Option<Error>>,
    interrupted: &'a AtomicBool,
    limit: usize,
    /// `--complete`: everything in one request; exceeding `limit` is an error, not a flush.
    complete: bool,
    body: Vec<u8>,
    documents: u64,
    lines: u64,
}

impl Batcher<'_> {
    fn push(&mut self, line: &[u8]) -> Result<()> {
        self.body.extend_from_slice(line);
        self.body.push(b'\n');
        self.documents += 1;
        self.lines += 1;
        if self.body.len() >= self.limit {
            if self.complete {
                return Err(bad(format!(
                    "--complete imports at most {} bytes in its one request",
                    self.limit
                )));
            }
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.interrupted.load(Ordering::Relaxed) {
            return Err(Error::with_message(
                ErrorCode::RequestCanceled,
                "interrupted",
            ));
        }
        if let Some(err) = self
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Err(err);
        }
        if self.body.is_empty() {
            return Ok(());
        }
        let request = Request {
            body: std::mem::take(&mut self.body),
            documents: std::mem::take(&mut self.documents),
        };
        self.sender
            .send(request)
            .map_err(|_| Error::with_message(ErrorCode::Internal, "import senders stopped"))
    }
}

fn serialize(doc: &Value) -> Vec<u8> {
    serde_json::to_vec(doc).unwrap_or_default()
}

/// Reads the input and queues its documents; returns the lines (or array items) read.
fn read_documents(
    options: &ImportOptions,
    shaping: &Shaping,
    sender: &mpsc::SyncSender<Request>,
    failure: &Mutex<Option<Error>>,
    interrupted: &AtomicBool,
) -> Result<u64> {
    let mut input = open_input(&options.file)?;
    let mut batcher = Batcher {
        sender,
        failure,
        interrupted,
        limit: if options.complete {
            COMPLETE_LIMIT
        } else {
            options.batch_size.clamp(1024, 256 * 1024 * 1024) as usize
        },
        complete: options.complete,
        body: Vec::new(),
        documents: 0,
        lines: 0,
    };
    let shape_line = |line: &[u8]| -> Vec<u8> {
        if shaping.is_identity() {
            return line.to_vec();
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(Value::Object(mut doc)) => {
                shaping.apply(&mut doc);
                serialize(&Value::Object(doc))
            }
            // Left as it is: the server reports it with its line.
            _ => line.to_vec(),
        }
    };
    match options.kind.as_str() {
        "json" | "jsonl" => {
            let mut first = Vec::new();
            // A JSON file may hold one array instead of lines.
            let peek = input.fill_buf().map_err(|e| io(&options.file, e))?;
            let is_array = options.kind == "json"
                && peek.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
            if is_array {
                input
                    .read_to_end(&mut first)
                    .map_err(|e| io(&options.file, e))?;
                let value: Value = serde_json::from_slice(&first).map_err(|e| {
                    bad(format!("'{}' is not a valid JSON array: {e}", options.file))
                })?;
                for item in value.as_array().into_iter().flatten() {
                    batcher.push(&shape_line(&serialize(item)))?;
                }
            } else {
                let mut line = Vec::new();
                let mut number = 0u64;
                loop {
                    line.clear();
                    let n = input
                        .read_until(b'\n', &mut line)
                        .map_err(|e| io(&options.file, e))?;
                    if n == 0 {
                        break;
                    }
                    number += 1;
                    let text = line.trim_ascii();
                    if text.is_empty() {
                        continue;
                    }
                    if options.complete {
                        // Named with the file's own line number, before anything is sent.
                        if let Err(e) = serde_json::from_slice::<Value>(text) {
                            return Err(bad(format!(
                                "line {number} of '{}' is not valid JSON: {e}",
                                options.file
                            )));
                        }
                    }
                    batcher.push(&shape_line(text))?;
                }
            }
        }
        _ => read_tabular(options, shaping, &mut input, &mut batcher)?,
    }
    batcher.flush()?;
    Ok(batcher.lines)
}

fn io(file: &str, e: std::io::Error) -> Error {
    Error::with_message(ErrorCode::IoError, format!("reading '{file}': {e}"))
}

fn single_byte(text: &str, what: &str) -> Result<u8> {
    let text = if text == "\\t" { "\t" } else { text };
    match text.as_bytes() {
        [b] => Ok(*b),
        _ => Err(bad(format!(
            "{what} must be a single character, got '{text}'"
        ))),
    }
}

fn read_tabular(
    options: &ImportOptions,
    shaping: &Shaping,
    input: &mut Box<dyn BufRead + Send>,
    batcher: &mut Batcher<'_>,
) -> Result<()> {
    let default = if options.kind == "tsv" { "\t" } else { "," };
    let separator = single_byte(
        options.separator.as_deref().unwrap_or(default),
        "--separator",
    )?;
    let mut skipped = String::new();
    for _ in 0..options.skip_lines {
        skipped.clear();
        if input
            .read_line(&mut skipped)
            .map_err(|e| io(&options.file, e))?
            == 0
        {
            break;
        }
    }
    let mut builder = csv::ReaderBuilder::new();
    builder
        .delimiter(separator)
        .has_headers(true)
        .flexible(true);
    if options.kind == "tsv" {
        builder.quoting(false);
    } else {
        builder.quote(single_byte(&options.quote, "--quote")?);
    }
    let mut reader = builder.from_reader(input);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| bad(format!("cannot read the header of '{}': {e}", options.file)))?
        .iter()
        .map(str::to_string)
        .collect();
    if header.iter().all(String::is_empty) {
        return Err(bad(format!("'{}' has no header line", options.file)));
    }
    for record in reader.records() {
        let record = record.map_err(|e| bad(format!("{}: malformed input: {e}", options.file)))?;
        let mut doc = Map::new();
        for (name, value) in header.iter().zip(record.iter()) {
            if name.is_empty() || value.is_empty() {
                continue;
            }
            doc.insert(name.clone(), convert_value(value, options.convert));
        }
        shaping.apply(&mut doc);
        batcher.push(&serialize(&Value::Object(doc)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_convert_as_arangoimport_converts_them() {
        assert_eq!(convert_value("null", true), Value::Null);
        assert_eq!(convert_value("true", true), json!(true));
        assert_eq!(convert_value("12", true), json!(12));
        assert_eq!(convert_value("-1.5e3", true), json!(-1500.0));
        assert_eq!(convert_value("1-2", true), json!("1-2"));
        assert_eq!(convert_value("e", true), json!("e"));
        assert_eq!(convert_value("12", false), json!("12"));
    }

    #[test]
    fn translations_and_removals() {
        let s = Shaping::new(&["id=_key".into()], &["junk".into()]).unwrap();
        let mut doc = json!({"id": "a", "junk": 1, "keep": 2})
            .as_object()
            .unwrap()
            .clone();
        s.apply(&mut doc);
        assert_eq!(Value::Object(doc), json!({"_key": "a", "keep": 2}));
        assert!(Shaping::new(&["noequals".into()], &[]).is_err());
    }
}
