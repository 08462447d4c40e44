//! `quiver restore`: arangorestore over the replication API. Per database directory: check
//! that the dump is complete (`dump.json`) and unencrypted, create the database if asked,
//! then per collection (on `--threads` workers; document collections before edge
//! collections) `restore-collection`, the data in requests of at most `--batch-size` bytes
//! (`restore-data`; up to `--threads` of them in flight unless the dump is enveloped),
//! `restore-indexes` — `_analyzers` first, edge collections after document
//! collections — and views last (`restore-view`).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Instant;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::client::{encode, Client, Connection};
use crate::dump_format::{self, io_error};
use crate::options::RestoreOptions;
use crate::progress::{rate, Progress};

/// The system collection holding a database's custom analyzers.
const ANALYZERS_COLLECTION: &str = "_analyzers";

/// What a restore did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RestoreSummary {
    /// Databases restored.
    pub databases: usize,
    /// Collections restored.
    pub collections: usize,
    /// Documents sent.
    pub documents: u64,
}

fn canceled() -> Error {
    Error::with_message(ErrorCode::RequestCanceled, "interrupted")
}

/// Runs the restore; `interrupted` is polled between requests.
pub fn run(options: &RestoreOptions, interrupted: &AtomicBool) -> Result<RestoreSummary> {
    let connection = options.server.connection()?;
    let client = connection.client();
    let input = &options.input_directory;
    if !input.is_dir() {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            format!("input directory '{}' does not exist", input.display()),
        ));
    }
    let mut jobs: Vec<(String, PathBuf)> = Vec::new();
    if options.all_databases {
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(input)
            .map_err(|e| io_error(input, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join(dump_format::DUMP_FILE).is_file())
            .collect();
        dirs.sort();
        for dir in dirs {
            let meta = dump_format::read_json(&dir.join(dump_format::DUMP_FILE))?;
            let name = meta["database"]
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| dir.file_name().unwrap_or_default().to_string_lossy().into());
            jobs.push((name, dir));
        }
    } else {
        jobs.push((options.server.database.clone(), input.clone()));
    }
    let mut summary = RestoreSummary::default();
    for (db, dir) in jobs {
        let one = restore_database(&connection, &client, options, &db, &dir, interrupted)?;
        summary.databases += 1;
        summary.collections += one.collections;
        summary.documents += one.documents;
    }
    Ok(summary)
}

/// Checks `dump.json` and `ENCRYPTION` of a dump directory.
pub fn check_dump_directory(dir: &Path) -> Result<Value> {
    let marker = dir.join(dump_format::DUMP_FILE);
    if !marker.is_file() {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            format!(
                "'{}' holds no {}: not a complete dump",
                dir.display(),
                dump_format::DUMP_FILE
            ),
        ));
    }
    let encryption = dir.join(dump_format::ENCRYPTION_FILE);
    if encryption.is_file() {
        let text = std::fs::read_to_string(&encryption).map_err(|e| io_error(&encryption, e))?;
        if text.trim() != dump_format::NO_ENCRYPTION {
            return Err(Error::with_message(
                ErrorCode::NotImplemented,
                format!(
                    "the dump is encrypted ({}); encrypted dumps are not supported",
                    text.trim()
                ),
            ));
        }
    }
    dump_format::read_json(&marker)
}

fn ensure_database(client: &Client, db: &str, create: bool) -> Result<()> {
    match client.request("GET", Some(db), "/_api/database/current", None) {
        Ok(_) => Ok(()),
        Err(err) if create && err.code == ErrorCode::DatabaseNotFound => {
            client.json(
                "POST",
                Some("_system"),
                "/_api/database",
                &json!({ "name": db }),
            )?;
            Ok(())
        }
        Err(err) => Err(err),
    }
}

fn restore_database(
    connection: &Connection,
    client: &Client,
    options: &RestoreOptions,
    db: &str,
    dir: &Path,
    interrupted: &AtomicBool,
) -> Result<RestoreSummary> {
    let started = Instant::now();
    let meta = check_dump_directory(dir)?;
    // Lines of an enveloped dump may remove what an earlier line inserted: their order
    // counts, so they go one request after the other. Plain lines (3.8 and later, and every
    // dump of `quiver dump` without `--envelope`) are one document each and go out on
    // `--threads` connections, as arangorestore restores such a collection.
    let ordered = meta["useEnvelope"].as_bool().unwrap_or(false);
    ensure_database(client, db, options.create_database)?;
    let structures: Vec<Value> = dump_format::read_structures(dir)?
        .into_iter()
        .filter(|s| {
            let name = s["parameters"]["name"].as_str().unwrap_or("");
            if !options.collections.is_empty() {
                return options.collections.iter().any(|c| c == name);
            }
            options.include_system_collections || !name.starts_with('_')
        })
        .collect();
    let progress = Progress::new(&format!("restore {db}"), 0, options.progress);
    let failures: Mutex<Vec<Error>> = Mutex::new(Vec::new());
    // `_analyzers` first (views and links name its analyzers), then document collections,
    // then edge collections, as arangorestore does: each group on the workers.
    let (analyzers, others): (Vec<Value>, Vec<Value>) = structures
        .iter()
        .cloned()
        .partition(|s| s["parameters"]["name"] == ANALYZERS_COLLECTION);
    let (documents, edges): (Vec<Value>, Vec<Value>) = others
        .into_iter()
        .partition(|s| s["parameters"]["type"].as_u64() != Some(3));
    for group in [analyzers, documents, edges] {
        let queue = Mutex::new(group.into_iter());
        std::thread::scope(|scope| {
            for _ in 0..options.threads.clamp(1, 64) {
                scope.spawn(|| {
                    let client = connection.client();
                    loop {
                        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                        let Some(structure) = next else { break };
                        if !options.force
                            && !failures
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .is_empty()
                        {
                            break;
                        }
                        let name = structure["parameters"]["name"].as_str().unwrap_or("");
                        let job = CollectionRestore {
                            connection,
                            client: &client,
                            options,
                            db,
                            dir,
                            ordered,
                            progress: &progress,
                            interrupted,
                        };
                        let result = job.run(&structure);
                        if let Err(err) = result {
                            progress.line(
                                &format!("error restoring collection '{name}': {}", err.message),
                                true,
                            );
                            failures.lock().unwrap_or_else(|e| e.into_inner()).push(err);
                        }
                    }
                });
            }
        });
    }
    progress.finish();
    let failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(first) = failures.into_iter().next() {
        return Err(first);
    }
    if interrupted.load(Ordering::Relaxed) {
        return Err(canceled());
    }
    if options.create_collection && options.collections.is_empty() {
        for view in dump_format::read_views(dir)? {
            client.json(
                "PUT",
                Some(db),
                &format!(
                    "/_api/replication/restore-view?overwrite={}",
                    options.overwrite
                ),
                &view,
            )?;
        }
    }
    let summary = RestoreSummary {
        databases: 1,
        collections: structures.len(),
        documents: progress.done(),
    };
    eprintln!(
        "Restored database '{db}': {} collection(s), {} document(s) ({})",
        summary.collections,
        summary.documents,
        rate(summary.documents, started)
    );
    Ok(summary)
}

/// The restore of one collection.
struct CollectionRestore<'a> {
    connection: &'a Connection,
    client: &'a Client,
    options: &'a RestoreOptions,
    db: &'a str,
    dir: &'a Path,
    /// Send the data one request after the other (an enveloped dump).
    ordered: bool,
    progress: &'a Progress,
    interrupted: &'a AtomicBool,
}

impl CollectionRestore<'_> {
    fn run(&self, structure: &Value) -> Result<()> {
        let (client, options, db) = (self.client, self.options, self.db);
        let name = structure["parameters"]["name"].as_str().unwrap_or("");
        if options.create_collection {
            client.json(
                "PUT",
                Some(db),
                &format!(
                    "/_api/replication/restore-collection?overwrite={}&force={}&ignoreDistributeShardsLikeErrors=false",
                    options.overwrite, options.force
                ),
                structure,
            )?;
        }
        if options.import_data {
            if let Some(path) = dump_format::find_data_file(self.dir, name) {
                self.send_data(name, &path)?;
            }
        }
        if options.create_collection {
            client.json(
                "PUT",
                Some(db),
                &format!(
                    "/_api/replication/restore-indexes?collection={}&force={}",
                    encode(name),
                    options.force
                ),
                structure,
            )?;
        }
        Ok(())
    }

    /// Reads the data file into requests of whole lines of at most `--batch-size` bytes and
    /// sends them: one at a time when `ordered`, else on up to `--threads` connections (a
    /// bounded queue of one request per sender between the reader and the senders).
    fn send_data(&self, name: &str, path: &Path) -> Result<()> {
        let target = format!(
            "/_api/replication/restore-data?collection={}&force={}",
            encode(name),
            self.options.force
        );
        let senders = if self.ordered {
            1
        } else {
            self.options.threads.clamp(1, 64)
        };
        if senders == 1 {
            return self.read_batches(path, &mut |body, lines| {
                self.client
                    .request("PUT", Some(self.db), &target, Some(&body))?;
                self.progress.add(lines);
                Ok(())
            });
        }
        let (sender, receiver) = mpsc::sync_channel::<(Vec<u8>, u64)>(senders);
        let receiver = Mutex::new(receiver);
        let failure: Mutex<Option<Error>> = Mutex::new(None);
        let read = std::thread::scope(|scope| {
            for _ in 0..senders {
                scope.spawn(|| {
                    let client = self.connection.client();
                    loop {
                        let next = receiver.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        let Ok((body, lines)) = next else { break };
                        if failure.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
                            continue;
                        }
                        match client.request("PUT", Some(self.db), &target, Some(&body)) {
                            Ok(_) => self.progress.add(lines),
                            Err(err) => {
                                failure
                                    .lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .get_or_insert(err);
                            }
                        }
                    }
                });
            }
            let read = self.read_batches(path, &mut |body, lines| {
                if let Some(err) = failure.lock().unwrap_or_else(|e| e.into_inner()).clone() {
                    return Err(err);
                }
                sender.send((body, lines)).map_err(|_| {
                    Error::with_message(ErrorCode::Internal, "restore senders stopped")
                })
            });
            drop(sender);
            read
        });
        // A sender's error is the cause of a reader's stop: it comes first.
        if let Some(err) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(err);
        }
        read
    }

    /// Cuts the data file into bodies of whole non-blank lines, each at most `--batch-size`
    /// bytes (or one line), and hands each with its line count to `send`.
    fn read_batches(
        &self,
        path: &Path,
        send: &mut dyn FnMut(Vec<u8>, u64) -> Result<()>,
    ) -> Result<()> {
        let limit = self.options.batch_size.clamp(1024, 512 * 1024 * 1024) as usize;
        let capacity = limit.min(16 << 20) + (64 << 10);
        let mut reader = dump_format::open_data(path)?;
        let mut buffer: Vec<u8> = Vec::with_capacity(capacity);
        let mut lines = 0u64;
        let mut line = Vec::new();
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|e| io_error(path, e))?;
            if n > 0 && !line.iter().all(u8::is_ascii_whitespace) {
                buffer.extend_from_slice(&line);
                if !line.ends_with(b"\n") {
                    buffer.push(b'\n');
                }
                lines += 1;
            }
            if (n == 0 && !buffer.is_empty()) || buffer.len() >= limit {
                if self.interrupted.load(Ordering::Relaxed) {
                    return Err(canceled());
                }
                let body = std::mem::replace(&mut buffer, Vec::with_capacity(capacity));
                send(body, std::mem::take(&mut lines))?;
            }
            if n == 0 {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_dump_json_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = check_dump_directory(dir.path()).unwrap_err();
        assert!(
            err.message.contains("not a complete dump"),
            "{}",
            err.message
        );
        std::fs::write(dir.path().join("dump.json"), r#"{"database":"x"}"#).unwrap();
        std::fs::write(dir.path().join("ENCRYPTION"), "aes-256-ctr").unwrap();
        assert_eq!(
            check_dump_directory(dir.path()).unwrap_err().code,
            ErrorCode::NotImplemented
        );
        std::fs::write(dir.path().join("ENCRYPTION"), "none").unwrap();
        assert_eq!(check_dump_directory(dir.path()).unwrap()["database"], "x");
    }
}
