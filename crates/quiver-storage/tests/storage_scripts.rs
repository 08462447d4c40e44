//! Storage semantics as plain-text scripts: the files under `tests/scripts/` list engine
//! operations and what each must print (goldenscript format; `!` before a command that must
//! fail). They pin MVCC visibility (snapshots across writes, collection and compaction),
//! recovery (clean restarts and kill -9 at any point between commands) and compaction (what it
//! drops, what it keeps, what the figures say).
//!
//! The engine runs with tiny files and no background threads (tests/harness), so the script
//! decides when the collector and the compactor run. Commands (`C` a collection name, `S` a
//! snapshot name; bodies are opaque text):
//!
//! - `create_collection C`, `drop C`, `truncate C`
//! - `write C [KEY=BODY …] [remove=KEY …] [sync=true]`: one atomic batch of puts and removals
//!   (`remove` and `sync` are not document keys here)
//! - `snapshot S`, `release S`
//! - `get C KEY [at=S]`, `scan C [at=S]` (`key=body` lines in key order), `count C [at=S]`
//! - `collect` (WAL into journals), `compact C`, `figures C`, `verify C`
//! - `restart` (clean shutdown, reopen), `crash` (reopen a copy of the directory as it is now:
//!   what kill -9 leaves behind; snapshots are gone either way)
//!
//! After an intended change, regenerate and read the diff:
//! `UPDATE_GOLDENFILES=1 cargo test -p quiver-storage --test storage_scripts`.

use std::collections::{BTreeMap, HashMap};
use std::error::Error as StdError;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use quiver_storage::{CollectionOptions, Engine, Snapshot, WriteBatch};

mod harness;

#[path = "../../quiver-core/tests/script_support/mod.rs"]
#[macro_use]
#[allow(dead_code)]
mod script_support;

type Failure = Box<dyn StdError>;

struct Runner {
    /// Every data directory this run used: a crash continues in a copy.
    dirs: Vec<tempfile::TempDir>,
    engine: Option<Engine>,
    database: u64,
    collections: HashMap<String, u64>,
    snapshots: BTreeMap<String, Arc<Snapshot>>,
}

impl Runner {
    fn new() -> Runner {
        let dir = tempfile::tempdir().expect("temporary directory");
        let engine = harness::open(dir.path());
        let database = harness::new_db(&engine);
        Runner {
            dirs: vec![dir],
            engine: Some(engine),
            database,
            collections: HashMap::new(),
            snapshots: BTreeMap::new(),
        }
    }

    fn engine(&self) -> &Engine {
        self.engine.as_ref().expect("the engine is open")
    }

    fn dir(&self) -> PathBuf {
        self.dirs
            .last()
            .expect("a data directory")
            .path()
            .to_path_buf()
    }

    fn collection(&self, name: &str) -> Result<u64, Failure> {
        self.collections
            .get(name)
            .copied()
            .ok_or_else(|| format!("no collection {name}").into())
    }

    fn snapshot(&self, at: Option<&str>) -> Result<Arc<Snapshot>, Failure> {
        match at {
            Some(name) => self
                .snapshots
                .get(name)
                .cloned()
                .ok_or_else(|| format!("no snapshot {name}").into()),
            None => Ok(Arc::new(self.engine().snapshot())),
        }
    }

    /// Reopens the engine on `dir`, with collections found again by id.
    fn reopen(&mut self, dir: &Path) -> Result<(), Failure> {
        self.engine = Some(Engine::open(dir, harness::opts())?);
        let catalog = self.engine().catalog();
        for cid in self.collections.values() {
            let present = catalog
                .iter()
                .filter(|db| db.id == self.database)
                .flat_map(|db| db.collections.iter())
                .any(|c| c.id == *cid);
            assert!(
                present,
                "collection {cid} is in the catalog after reopening"
            );
        }
        Ok(())
    }

    fn show_body(body: &Bytes) -> String {
        String::from_utf8_lossy(body).into_owned()
    }
}

impl goldenscript::Runner for Runner {
    type Command = goldenscript::Command;

    fn run(
        &mut self,
        command: &goldenscript::Command,
        _context: &goldenscript::Context,
    ) -> Result<String, Failure> {
        let mut args = command.consume_args();
        let mut output = String::new();
        match command.name.as_str() {
            "create_collection" => {
                let name = args.next_pos().ok_or("name not given")?.to_string();
                args.reject_next()?;
                let cid = self.engine().create_collection(
                    self.database,
                    CollectionOptions::default(),
                    serde_json::json!({ "name": name }),
                )?;
                self.collections.insert(name, cid);
            }
            "drop" => {
                let name = args.next_pos().ok_or("name not given")?;
                args.reject_next()?;
                let cid = self.collection(name)?;
                self.engine().drop_collection(cid)?;
                self.collections.remove(name);
            }
            "truncate" => {
                let cid = self.collection(args.next_pos().ok_or("collection not given")?)?;
                args.reject_next()?;
                self.engine().truncate(cid, false)?.wait()?;
            }
            "write" => {
                let cid = self.collection(args.next_pos().ok_or("collection not given")?)?;
                let mut batch = WriteBatch::new();
                while let Some((key, value)) = args.next_key() {
                    let rev = self.engine().hlc().next();
                    match key {
                        "remove" => batch.remove(cid, value, rev),
                        "sync" => batch.set_sync(value.parse()?),
                        key => batch.put(cid, key, rev, Bytes::from(value.to_string())),
                    }
                }
                args.reject_next()?;
                self.engine().commit(batch)?.wait()?;
            }
            "snapshot" => {
                let name = args.next_pos().ok_or("name not given")?.to_string();
                args.reject_next()?;
                let snapshot = Arc::new(self.engine().snapshot());
                self.snapshots.insert(name, snapshot);
            }
            "release" => {
                let name = args.next_pos().ok_or("name not given")?;
                args.reject_next()?;
                self.snapshots
                    .remove(name)
                    .ok_or_else(|| format!("no snapshot {name}"))?;
            }
            "get" => {
                let cid = self.collection(args.next_pos().ok_or("collection not given")?)?;
                let key = args.next_pos().ok_or("key not given")?.to_string();
                let at = args.take_key("at").map(str::to_string);
                args.reject_next()?;
                let snapshot = self.snapshot(at.as_deref())?;
                output = match snapshot.get(cid, &key)? {
                    Some(doc) => {
                        assert_eq!(
                            snapshot.revision(cid, &key)?,
                            Some(doc.rev),
                            "get and revision agree"
                        );
                        format!("{}\n", Self::show_body(&doc.body))
                    }
                    None => "not found\n".to_string(),
                };
            }
            "scan" | "count" => {
                let cid = self.collection(args.next_pos().ok_or("collection not given")?)?;
                let at = args.take_key("at").map(str::to_string);
                args.reject_next()?;
                let snapshot = self.snapshot(at.as_deref())?;
                let mut seen = BTreeMap::new();
                for item in snapshot.scan(cid)? {
                    let (key, doc) = item?;
                    let body = Self::show_body(&doc.body);
                    assert!(seen.insert(key, body).is_none(), "a key scanned twice");
                }
                assert_eq!(
                    snapshot.count(cid)?,
                    seen.len() as u64,
                    "count agrees with the scan"
                );
                output = if command.name == "count" {
                    format!("{}\n", seen.len())
                } else {
                    seen.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
                };
            }
            "collect" => {
                args.reject_next()?;
                self.engine().collect()?;
            }
            "compact" => {
                let cid = self.collection(args.next_pos().ok_or("collection not given")?)?;
                args.reject_next()?;
                let report = self.engine().compact(cid)?;
                output = format!(
                    "markers kept {}, dropped {}\n",
                    report.markers_kept, report.markers_dropped
                );
            }
            "figures" => {
                let cid = self.collection(args.next_pos().ok_or("collection not given")?)?;
                args.reject_next()?;
                let f = self.engine().figures(cid)?;
                output = format!(
                    "alive {}, dead {} (deletions {}), uncollected {}\n",
                    f.alive_count, f.dead_count, f.dead_deletion, f.uncollected_logfile_entries
                );
            }
            "verify" => {
                let cid = self.collection(args.next_pos().ok_or("collection not given")?)?;
                args.reject_next()?;
                self.engine().verify(cid)?;
            }
            "restart" => {
                args.reject_next()?;
                self.snapshots.clear();
                let engine = self.engine.take().expect("the engine is open");
                engine.shutdown()?;
                drop(engine);
                self.reopen(&self.dir())?;
            }
            "crash" => {
                args.reject_next()?;
                let copy = tempfile::tempdir()?;
                harness::copy_dir(&self.dir(), copy.path());
                self.snapshots.clear();
                // The old engine goes without a clean shutdown; the copy is what a kill -9
                // would have left.
                drop(self.engine.take());
                self.dirs.push(copy);
                self.reopen(&self.dir())?;
            }
            other => return Err(format!("unknown command {other}").into()),
        }
        Ok(output)
    }
}

fn run_script(path: &Path) {
    if let Err(err) = goldenscript::run(&mut Runner::new(), path) {
        panic!("{}: {err}", path.display());
    }
}

scripts!(
    "tests/scripts",
    run_script,
    [mvcc_visibility, recovery, compaction]
);
