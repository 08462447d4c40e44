//! `quiver dump`: arangodump over the replication API. Per database: a dump batch (one read
//! view, so each collection is a consistent snapshot while writers go on), the inventory,
//! then each collection's structure file and data file (collections on `--threads` workers,
//! each fetching chunks that grow from `--initial-batch-size` to `--batch-size`), view files,
//! and `dump.json` last.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::client::{encode, Client, Connection};
use crate::dump_format::{self, io_error, DataWriter};
use crate::options::DumpOptions;
use crate::progress::{rate, Progress};

/// Bytes a chunk buffer holds beyond `--batch-size` (a server ends a chunk after the document
/// that passes the size).
const CHUNK_SLACK: usize = 1 << 20;

/// Time to live the batch is started and extended with, in seconds.
const BATCH_TTL: u64 = 600;

/// What a dump did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DumpSummary {
    /// Databases dumped.
    pub databases: usize,
    /// Collections dumped.
    pub collections: usize,
    /// Documents written.
    pub documents: u64,
    /// Bytes of data received.
    pub bytes: u64,
}

fn canceled() -> Error {
    Error::with_message(ErrorCode::RequestCanceled, "interrupted")
}

/// Runs the dump; `interrupted` is polled between requests.
pub fn run(options: &DumpOptions, interrupted: &AtomicBool) -> Result<DumpSummary> {
    let connection = options.server.connection()?;
    let client = connection.client();
    let databases = if options.all_databases {
        let list = client.request("GET", Some("_system"), "/_api/database/user", None)?;
        let mut names: Vec<String> = list.json()?["result"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        names.sort_by_key(|n| (n != "_system", n.clone()));
        names
    } else {
        vec![options.server.database.clone()]
    };
    prepare_directory(&options.output_directory, options.overwrite)?;
    let mut summary = DumpSummary::default();
    for db in &databases {
        let dir = if options.all_databases {
            let dir = options.output_directory.join(db);
            prepare_directory(&dir, options.overwrite)?;
            dir
        } else {
            options.output_directory.clone()
        };
        let one = dump_database(&connection, &client, options, db, &dir, interrupted)?;
        summary.databases += 1;
        summary.collections += one.collections;
        summary.documents += one.documents;
        summary.bytes += one.bytes;
    }
    Ok(summary)
}

/// Creates the output directory; an existing one that holds files needs `--overwrite`, and
/// loses its `dump.json` first so that it never looks complete while being rewritten.
fn prepare_directory(dir: &Path, overwrite: bool) -> Result<()> {
    if dir.exists() {
        let non_empty = std::fs::read_dir(dir)
            .map_err(|e| io_error(dir, e))?
            .next()
            .is_some();
        if non_empty && !overwrite {
            return Err(Error::with_message(
                ErrorCode::FileExists,
                format!(
                    "output directory '{}' already exists; use \"--overwrite true\" to overwrite data in it",
                    dir.display()
                ),
            ));
        }
        let marker = dir.join(dump_format::DUMP_FILE);
        if marker.exists() {
            std::fs::remove_file(&marker).map_err(|e| io_error(&marker, e))?;
        }
        Ok(())
    } else {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::with_message(
                ErrorCode::CannotCreateDirectory,
                format!("cannot create output directory '{}': {e}", dir.display()),
            )
        })
    }
}

/// The collections to dump out of an inventory: `--collection` restricts (an unknown name is
/// an error), system collections only with `--include-system-collections`.
pub fn select_collections(
    inventory: &Value,
    wanted: &[String],
    include_system: bool,
) -> Result<Vec<Value>> {
    let all = inventory["collections"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let name = |c: &Value| c["parameters"]["name"].as_str().unwrap_or("").to_string();
    for w in wanted {
        if !all.iter().any(|c| &name(c) == w) {
            return Err(Error::with_message(
                ErrorCode::DataSourceNotFound,
                format!("collection '{w}' not found"),
            ));
        }
    }
    Ok(all
        .into_iter()
        .filter(|c| {
            let n = name(c);
            if !wanted.is_empty() {
                return wanted.contains(&n);
            }
            include_system || !n.starts_with('_')
        })
        .collect())
}

fn dump_database(
    connection: &Connection,
    client: &Client,
    options: &DumpOptions,
    db: &str,
    dir: &Path,
    interrupted: &AtomicBool,
) -> Result<DumpSummary> {
    let started = Instant::now();
    let batch = client.json(
        "POST",
        Some(db),
        "/_api/replication/batch",
        &json!({ "ttl": BATCH_TTL }),
    )?;
    let batch_id = batch["id"]
        .as_str()
        .ok_or_else(|| Error::with_message(ErrorCode::Internal, "batch answer has no id"))?
        .to_string();
    let result = dump_in_batch(connection, client, options, db, dir, &batch_id, interrupted);
    // The batch goes whether the dump worked or not; a failure to end it only costs the
    // server its time to live.
    let _ = client.request(
        "DELETE",
        Some(db),
        &format!("/_api/replication/batch/{batch_id}"),
        None,
    );
    let summary = result?;
    eprintln!(
        "Dumped database '{db}': {} collection(s), {} document(s), {} bytes ({})",
        summary.collections,
        summary.documents,
        summary.bytes,
        rate(summary.documents, started)
    );
    Ok(summary)
}

fn dump_in_batch(
    connection: &Connection,
    client: &Client,
    options: &DumpOptions,
    db: &str,
    dir: &Path,
    batch_id: &str,
    interrupted: &AtomicBool,
) -> Result<DumpSummary> {
    let include = options.include_system_collections;
    let inventory = client
        .request(
            "GET",
            Some(db),
            &format!("/_api/replication/inventory?includeSystem={include}&includeFoxxQueues={include}&batchId={batch_id}"),
            None,
        )?
        .json()?;
    let collections = select_collections(&inventory, &options.collections, include)?;
    dump_format::write_atomically(
        dir,
        dump_format::ENCRYPTION_FILE,
        dump_format::NO_ENCRYPTION.as_bytes(),
    )?;
    let mut total = 0u64;
    for c in &collections {
        let name = c["parameters"]["name"].as_str().unwrap_or("");
        if let Ok(reply) = client.request(
            "GET",
            Some(db),
            &format!("/_api/collection/{}/count", encode(name)),
            None,
        ) {
            total += reply.json()?["count"].as_u64().unwrap_or(0);
        }
    }
    let progress = Progress::new(&format!("dump {db}"), total, options.progress);
    let queue: Mutex<std::vec::IntoIter<Value>> = Mutex::new(collections.clone().into_iter());
    let failures: Mutex<Vec<Error>> = Mutex::new(Vec::new());
    let bytes = std::sync::atomic::AtomicU64::new(0);
    let threads = options.threads.clamp(1, 64).min(collections.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let client = connection.client();
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some(collection) = next else { break };
                    if !failures
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .is_empty()
                        && !options.force
                    {
                        break;
                    }
                    let job = CollectionJob {
                        client: &client,
                        options,
                        db,
                        dir,
                        batch_id,
                        progress: &progress,
                        interrupted,
                    };
                    match job.run(&collection) {
                        Ok(n) => {
                            bytes.fetch_add(n, Ordering::Relaxed);
                        }
                        Err(err) => {
                            progress.line(
                                &format!(
                                    "error dumping collection '{}': {}",
                                    collection["parameters"]["name"].as_str().unwrap_or(""),
                                    err.message
                                ),
                                true,
                            );
                            failures.lock().unwrap_or_else(|e| e.into_inner()).push(err);
                        }
                    }
                }
            });
        }
    });
    progress.finish();
    let failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(first) = failures.into_iter().next() {
        return Err(first);
    }
    if interrupted.load(Ordering::Relaxed) {
        return Err(canceled());
    }
    for view in inventory["views"].as_array().into_iter().flatten() {
        if let Some(name) = view["name"].as_str() {
            dump_format::write_json(dir, &dump_format::view_file(name), view)?;
        }
    }
    let tick = inventory["tick"].as_str().unwrap_or("0");
    let meta = dump_format::dump_meta(db, tick, &inventory["properties"], options.envelope);
    // Written last: its presence says the dump is complete.
    dump_format::write_json(dir, dump_format::DUMP_FILE, &meta)?;
    Ok(DumpSummary {
        databases: 1,
        collections: collections.len(),
        documents: progress.done(),
        bytes: bytes.load(Ordering::Relaxed),
    })
}

struct CollectionJob<'a> {
    client: &'a Client,
    options: &'a DumpOptions,
    db: &'a str,
    dir: &'a Path,
    batch_id: &'a str,
    progress: &'a Progress,
    interrupted: &'a AtomicBool,
}

impl CollectionJob<'_> {
    /// Writes the structure and data files of one collection; returns the data bytes.
    fn run(&self, collection: &Value) -> Result<u64> {
        let name = collection["parameters"]["name"]
            .as_str()
            .ok_or_else(|| Error::with_message(ErrorCode::Internal, "collection without name"))?;
        dump_format::write_json(self.dir, &dump_format::structure_file(name), collection)?;
        let mut writer = DataWriter::create(self.dir, name, self.options.compress_output)?;
        if !self.options.dump_data {
            writer.finish()?;
            return Ok(0);
        }
        // Keep the batch alive for this collection.
        let _ = self.client.json(
            "PUT",
            Some(self.db),
            &format!("/_api/replication/batch/{}", self.batch_id),
            &json!({ "ttl": BATCH_TTL }),
        );
        let max_chunk = self.options.batch_size.clamp(128 * 1024, 96 * 1024 * 1024);
        let chunk = self.options.initial_batch_size.clamp(128 * 1024, max_chunk);
        // The file is written (and compressed) on a thread of its own, so the next chunk is
        // already being asked for while this one goes to disk; at most one chunk waits.
        // Written bodies come back to be read into again (their pages are already mapped).
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Vec<u8>>(1);
        let (give_back, given_back) = std::sync::mpsc::channel::<Vec<u8>>();
        std::thread::scope(|scope| {
            let written = scope.spawn(move || -> Result<()> {
                for body in receiver {
                    writer.write(&body)?;
                    let _ = give_back.send(body);
                }
                writer.finish()
            });
            let fetched = self.fetch(name, chunk, max_chunk, &sender, &given_back);
            drop(sender);
            let written = written.join().unwrap_or_else(|_| {
                Err(Error::with_message(
                    ErrorCode::Internal,
                    "the data file writer panicked",
                ))
            });
            // A failed write closes the channel, which stops the fetching with a send error:
            // the write's error is the one to report.
            written?;
            fetched
        })
    }

    /// Fetches the chunks of collection `name` into the buffers `given_back` holds (or new
    /// ones) and hands each to `sender`; returns the data bytes.
    fn fetch(
        &self,
        name: &str,
        mut chunk: u64,
        max_chunk: u64,
        sender: &std::sync::mpsc::SyncSender<Vec<u8>>,
        given_back: &std::sync::mpsc::Receiver<Vec<u8>>,
    ) -> Result<u64> {
        let mut from = 0u64;
        let mut bytes = 0u64;
        loop {
            if self.interrupted.load(Ordering::Relaxed) {
                return Err(canceled());
            }
            let path = format!(
                "/_api/replication/dump?collection={}&batchId={}&ticks=false&flush=false&useEnvelope={}&from={from}&chunkSize={chunk}",
                encode(name),
                self.batch_id,
                self.options.envelope
            );
            // Room for the largest chunk, so that a buffer handed back fits any later chunk
            // and is never moved (a move or a fresh buffer costs a zeroed page per 4 KiB).
            let mut buffer = given_back.try_recv().unwrap_or_default();
            buffer.clear();
            buffer.reserve(max_chunk as usize + CHUNK_SLACK);
            let reply = self
                .client
                .request_into("GET", Some(self.db), &path, None, buffer)?;
            let content_type = reply.header("content-type").unwrap_or("");
            if reply.status == 200 && !content_type.starts_with("application/x-arango-dump") {
                return Err(Error::with_message(
                    ErrorCode::Internal,
                    format!("got invalid response from server: content-type is '{content_type}'"),
                ));
            }
            let more = reply
                .header("x-arango-replication-checkmore")
                .ok_or_else(|| {
                    Error::with_message(
                        ErrorCode::Internal,
                        format!("got invalid response from server: required header is missing while dumping collection '{name}'"),
                    )
                })?
                == "true";
            let last: u64 = reply
                .header("x-arango-replication-lastincluded")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            bytes += reply.body.len() as u64;
            let lines = reply.body.iter().filter(|&&b| b == b'\n').count() as u64;
            if sender.send(reply.body).is_err() {
                // The writer stopped on an error, which the caller reports.
                return Ok(bytes);
            }
            self.progress.add(lines);
            if !more || last <= from {
                break;
            }
            from = last;
            chunk = (chunk + chunk / 2).min(max_chunk);
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inventory() -> Value {
        json!({"collections": [
            {"parameters": {"name": "_graphs"}, "indexes": []},
            {"parameters": {"name": "a"}, "indexes": []},
            {"parameters": {"name": "b"}, "indexes": []},
        ]})
    }

    fn names(list: Vec<Value>) -> Vec<String> {
        list.iter()
            .map(|c| c["parameters"]["name"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn selection_follows_arangodump() {
        assert_eq!(
            names(select_collections(&inventory(), &[], false).unwrap()),
            ["a", "b"]
        );
        assert_eq!(
            names(select_collections(&inventory(), &[], true).unwrap()),
            ["_graphs", "a", "b"]
        );
        assert_eq!(
            names(select_collections(&inventory(), &["b".into()], false).unwrap()),
            ["b"]
        );
        let err = select_collections(&inventory(), &["zz".into()], false).unwrap_err();
        assert_eq!(err.code, ErrorCode::DataSourceNotFound);
    }

    #[test]
    fn an_existing_directory_needs_overwrite_and_loses_its_marker() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("dump.json"), "{}").unwrap();
        let err = prepare_directory(dir.path(), false).unwrap_err();
        assert_eq!(err.code, ErrorCode::FileExists);
        prepare_directory(dir.path(), true).unwrap();
        assert!(!dir.path().join("dump.json").exists());
        let fresh = dir.path().join("new/sub");
        prepare_directory(&fresh, false).unwrap();
        assert!(fresh.is_dir());
    }
}
