//! Imports a generated data set into database `pokec` through `POST /_api/import`
//! (`type=documents`, JSON lines), several connections in parallel, the way arangoimport
//! loaded the benchmark (it used 8 threads).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use quiver_errors::{Error, ErrorCode};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::client::{call, server_error, settings, Monitor, DATABASE};
use crate::http::{HttpClient, Method};

#[derive(Clone, Debug)]
pub struct LoadOptions {
    pub endpoint: String,
    /// The `Authorization` header of every request (None: no header).
    pub authorization: Option<String>,
    pub dir: std::path::PathBuf,
    pub connections: usize,
    /// Bytes of JSON lines per import request.
    pub batch_bytes: usize,
    pub server_pid: Option<u32>,
    pub max_rss_kib: u64,
    pub progress: bool,
}

/// Outcome of importing one file.
#[derive(Debug, Clone, Default)]
pub struct Imported {
    pub documents: u64,
    pub errors: u64,
    pub requests: u64,
    pub seconds: f64,
}

impl Imported {
    fn to_json(&self) -> Value {
        json!({
            "documents": self.documents,
            "errors": self.errors,
            "requests": self.requests,
            "seconds": self.seconds,
            "documentsPerSecond": if self.seconds > 0.0 { self.documents as f64 / self.seconds } else { 0.0 },
        })
    }
}

/// Drops and recreates database `pokec` with `profiles` (documents) and `relations` (edges,
/// autoincrement keys, as the 2018 import created them).
pub async fn create_schema(client: &mut HttpClient) -> Result<(), Error> {
    client.set_database("_system");
    call(
        client,
        Method::Delete,
        &format!("/_api/database/{DATABASE}"),
        None,
        &[200, 404],
    )
    .await?;
    call(
        client,
        Method::Post,
        "/_api/database",
        Some(&json!({"name": DATABASE})),
        &[200, 201],
    )
    .await?;
    client.set_database(DATABASE);
    call(
        client,
        Method::Post,
        "/_api/collection",
        Some(&json!({"name": "profiles"})),
        &[200],
    )
    .await?;
    let relations = json!({
        "name": "relations",
        "type": 3,
        "keyOptions": {"type": "autoincrement", "increment": 1, "offset": 0},
    });
    call(
        client,
        Method::Post,
        "/_api/collection",
        Some(&relations),
        &[200],
    )
    .await?;
    Ok(())
}

/// Why an import task stopped before the file's end.
enum Stopped {
    /// Its request failed: the error to report.
    Failed(Error),
    /// Another task's failure or the memory monitor stopped it.
    Aborted,
}

/// Streams `file` (JSON lines) into `collection`: one reader thread cuts it into batches of
/// whole lines, `connections` tasks post them; the channel holds at most two batches per
/// connection, so memory stays bounded whatever the file size.
pub async fn import_file(
    opts: &LoadOptions,
    file: &Path,
    collection: &str,
    abort: Arc<AtomicBool>,
) -> Result<Imported, Error> {
    let started = Instant::now();
    let reader = std::fs::File::open(file)
        .map_err(|e| Error::with_message(ErrorCode::IoError, format!("{}: {e}", file.display())))?;
    let (tx, rx) = mpsc::channel::<Vec<u8>>(opts.connections * 2);
    let batch_bytes = opts.batch_bytes;
    let read_abort = abort.clone();
    let reader_thread = std::thread::spawn(move || -> Result<(), String> {
        let mut lines = BufReader::with_capacity(1 << 20, reader);
        let mut batch = Vec::with_capacity(batch_bytes + 4096);
        loop {
            let n = lines
                .read_until(b'\n', &mut batch)
                .map_err(|e| e.to_string())?;
            if n > 0 && batch.last() != Some(&b'\n') {
                batch.push(b'\n');
            }
            if batch.len() >= batch_bytes || (n == 0 && !batch.is_empty()) {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(batch_bytes + 4096));
                if tx.blocking_send(full).is_err() || read_abort.load(Ordering::Relaxed) {
                    return Ok(());
                }
            }
            if n == 0 {
                return Ok(());
            }
        }
    });
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let settings = settings(
        &opts.endpoint,
        opts.authorization.clone(),
        Duration::from_secs(600),
    )?;
    let path = format!("/_api/import?collection={collection}&type=documents");
    let mut tasks = Vec::new();
    for _ in 0..opts.connections {
        let rx = rx.clone();
        let mut client = HttpClient::new(settings.clone(), DATABASE);
        let path = path.clone();
        let abort = abort.clone();
        tasks.push(tokio::spawn(async move {
            let mut done = Imported::default();
            loop {
                let Some(batch) = rx.lock().await.recv().await else {
                    return Ok(done);
                };
                if abort.load(Ordering::Relaxed) {
                    return Err(Stopped::Aborted);
                }
                let response = client
                    .request(
                        Method::Post,
                        &path,
                        Some("application/x-ndjson"),
                        &batch,
                        false,
                    )
                    .await
                    .map_err(Stopped::Failed)?;
                if response.status != 201 {
                    abort.store(true, Ordering::Relaxed);
                    return Err(Stopped::Failed(server_error("import", &response)));
                }
                let body = response.json().unwrap_or(Value::Null);
                done.documents += body["created"].as_u64().unwrap_or(0);
                done.errors += body["errors"].as_u64().unwrap_or(0);
                done.requests += 1;
            }
        }));
    }
    let mut total = Imported::default();
    let mut first_error = None;
    let mut aborted = false;
    for task in tasks {
        match task.await {
            Ok(Ok(part)) => {
                total.documents += part.documents;
                total.errors += part.errors;
                total.requests += part.requests;
            }
            Ok(Err(Stopped::Failed(e))) => {
                abort.store(true, Ordering::Relaxed);
                first_error.get_or_insert(e);
            }
            Ok(Err(Stopped::Aborted)) => aborted = true,
            Err(e) => {
                first_error.get_or_insert(Error::with_message(ErrorCode::Internal, e.to_string()));
            }
        }
    }
    // Unblocks the reader if the workers stopped early.
    drop(rx);
    let read = reader_thread
        .join()
        .map_err(|_| Error::with_message(ErrorCode::Internal, "reader thread panicked"))?;
    if let Some(e) = first_error {
        return Err(e);
    }
    if aborted {
        // No request failed: the monitor stopped the import.
        return Err(Error::with_message(
            ErrorCode::ResourceLimit,
            "import stopped: the server's memory passed the limit",
        ));
    }
    read.map_err(|e| Error::with_message(ErrorCode::IoError, format!("{}: {e}", file.display())))?;
    total.seconds = started.elapsed().as_secs_f64();
    if opts.progress {
        eprintln!(
            "imported {} {collection} ({} errors) in {:.1} s, {} requests",
            total.documents, total.errors, total.seconds, total.requests
        );
    }
    Ok(total)
}

/// Imports the whole data set and returns the import report.
pub fn load(opts: &LoadOptions) -> Result<Value, Error> {
    if opts.connections == 0 || opts.connections > 64 {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            "connections must be 1..=64",
        ));
    }
    let meta: Value = read_json(&opts.dir.join("meta.json"))?;
    let monitor = Monitor::start(opts.server_pid, opts.max_rss_kib);
    let runtime = super::client::runtime()?;
    let report = runtime.block_on(async {
        let settings = settings(
            &opts.endpoint,
            opts.authorization.clone(),
            Duration::from_secs(600),
        )?;
        let mut control = HttpClient::new(settings, "_system");
        control.retry_stale = true;
        create_schema(&mut control).await?;
        let abort = monitor.over_limit();
        let profiles = import_file(
            opts,
            &opts.dir.join("profiles.jsonl"),
            "profiles",
            abort.clone(),
        )
        .await?;
        let relations =
            import_file(opts, &opts.dir.join("relations.jsonl"), "relations", abort).await?;
        let mut counts = [0u64; 2];
        for (slot, c) in counts.iter_mut().zip(["profiles", "relations"]) {
            let path = format!("/_api/collection/{c}/count");
            *slot = call(&mut control, Method::Get, &path, None, &[200]).await?["count"]
                .as_u64()
                .unwrap_or(0);
        }
        let (profiles_count, relations_count) = (counts[0], counts[1]);
        Ok::<_, Error>(json!({
            "profiles": profiles.to_json(),
            "relations": relations.to_json(),
            "seconds": profiles.seconds + relations.seconds,
            "counts": {"profiles": profiles_count, "relations": relations_count},
        }))
    })?;
    let mut report = report;
    let expected = (meta["profiles"].as_u64(), meta["relations"].as_u64());
    let got = (
        report["counts"]["profiles"].as_u64(),
        report["counts"]["relations"].as_u64(),
    );
    report["countsMatch"] = json!(expected == got);
    report["peakRssKiB"] = json!(monitor.peak_rss_kib());
    if let Some(u) = monitor.now() {
        report["serverCpuSeconds"] = json!(u.cpu_seconds);
    }
    if expected != got {
        return Err(Error::with_message(
            ErrorCode::Internal,
            format!("after import the server holds {got:?} documents, expected {expected:?}"),
        ));
    }
    Ok(report)
}

pub fn read_json(path: &Path) -> Result<Value, Error> {
    let text = std::fs::read(path)
        .map_err(|e| Error::with_message(ErrorCode::IoError, format!("{}: {e}", path.display())))?;
    serde_json::from_slice(&text).map_err(|e| {
        Error::with_message(ErrorCode::BadParameter, format!("{}: {e}", path.display()))
    })
}
