//! Script tests of the core's document semantics: the plain-text files under
//! `tests/scripts/` list operations and the output each must print (goldenscript format:
//! commands, `---`, expected output; `!` before a command that must fail, `( … )` around one
//! whose output is not shown).
//!
//! Every script runs twice, against a real core in a temporary directory: once with every write
//! outside an explicit transaction committed on its own (`DocumentWriter::AutoCommit`, the
//! lone-insert fast path included) and once with every such write staged in a transaction of
//! one operation that is committed right after (`DocumentWriter::Transaction`). Both runs must
//! print the same expected output: the two ways into the one write path agree.
//!
//! After an intended change of behaviour, regenerate the expected output and read the diff:
//! `UPDATE_GOLDENFILES=1 cargo test -p quiver-core --test document_scripts`.
//!
//! Commands (`C` a collection name, `T` a transaction name, `V` a snapshot name; JSON in
//! single quotes; write options as `key=value` with ArangoDB's names — `overwriteMode`,
//! `returnNew`, `returnOld`, `silent`, `keepNull`, `mergeObjects`, `ignoreRevs`, `ifMatch`,
//! `versionAttribute`, `skipDocumentValidation`, `allOrNothing`, `waitForSync`; `trx=T` runs a
//! read or write in an explicit transaction, `at=V` a read in a snapshot):
//!
//! - `create_database NAME ['{options}']`, `use NAME`, `create_collection C ['{spec}']`,
//!   `rename C NEW`, `drop C`, `properties C KEY…`, `restart` (clean shutdown and reopen)
//! - `create_index C '{definition}'`, `index C HANDLE`, `indexes C`, `drop_index C HANDLE`
//! - `insert C DOC|[DOC…]`, `replace C KEY|- DOC|[DOC…]`, `update C KEY|- DOC|[DOC…]`,
//!   `remove C KEY|ITEM|[ITEM…]`, `truncate C`
//! - `get C KEY|[ITEM…]`, `count C`, `scan C` (documents in key order)
//! - `begin T [write=C,…] [read=C,…] [allowImplicit=false]`, `commit T`, `abort T`,
//!   `snapshot V`
//!
//! Revisions print as `R1`, `R2`, … in the order first seen and generated numeric keys as `K1`,
//! `K2`, …; scripts may use those names wherever a revision or key is expected.

use std::collections::{BTreeMap, HashMap};
use std::error::Error as StdError;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use quiver_core::{
    Collection, CollectionSpec, Core, CoreOptions, Database, DocumentReader, DocumentWriter,
    OpResult, OverwriteMode, ReadView, Revision, Transaction, TransactionOptions, WriteKind,
    WriteOptions, SYSTEM_DATABASE,
};
use script_support::Names;
use serde_json::{Map, Value};

#[macro_use]
mod script_support;

type Failure = Box<dyn StdError>;

/// How writes outside explicit transactions are committed.
#[derive(Clone, Copy, Debug)]
enum Mode {
    AutoCommit,
    OneOperationTransaction,
}

struct Runner {
    mode: Mode,
    dir: tempfile::TempDir,
    core: Option<Core>,
    db: Option<Arc<Database>>,
    transactions: BTreeMap<String, Transaction>,
    snapshots: BTreeMap<String, ReadView>,
    names: Names,
    last_revision: Option<Revision>,
    generated_keys: HashMap<String, u64>,
}

fn core_options() -> CoreOptions {
    let mut options = CoreOptions::default();
    options.engine.sync_interval = Duration::from_millis(10);
    options.engine.journal_size_default = 1024 * 1024;
    options
}

fn parse_json(text: &str) -> Result<Value, Failure> {
    serde_json::from_str(text).map_err(|e| format!("bad JSON {text:?}: {e}").into())
}

fn parse_bool(text: &str) -> Result<bool, Failure> {
    text.parse()
        .map_err(|_| format!("expected true or false, got {text:?}").into())
}

fn kind_name(result: &OpResult) -> String {
    format!("{:?}", result.kind).to_lowercase()
}

impl Runner {
    fn new(mode: Mode) -> Runner {
        let dir = tempfile::tempdir().expect("temporary directory");
        let core = Core::open(dir.path(), core_options()).expect("open core");
        let db = core.database(SYSTEM_DATABASE).expect("_system");
        Runner {
            mode,
            dir,
            core: Some(core),
            db: Some(db),
            transactions: BTreeMap::new(),
            snapshots: BTreeMap::new(),
            names: Names::default(),
            last_revision: None,
            generated_keys: HashMap::new(),
        }
    }

    fn core(&self) -> &Core {
        self.core.as_ref().expect("core is open")
    }

    fn db(&self) -> Arc<Database> {
        Arc::clone(self.db.as_ref().expect("a database is in use"))
    }

    fn restart(&mut self) -> Result<(), Failure> {
        let database = self.db().name().to_string();
        self.transactions.clear();
        self.snapshots.clear();
        self.db = None;
        let core = self.core.take().expect("core is open");
        core.shutdown()?;
        drop(core);
        let core = Core::open(self.dir.path(), core_options())?;
        self.db = Some(core.database(&database)?);
        self.core = Some(core);
        Ok(())
    }

    /// New revisions only increase, and so do the keys a collection generates, restarts
    /// included.
    fn check_increasing(&mut self, result: &OpResult) {
        let writes = !matches!(
            result.kind,
            WriteKind::Ignored | WriteKind::Unchanged | WriteKind::Removed
        );
        if writes {
            if let Some(last) = self.last_revision {
                assert!(
                    result.rev > last,
                    "revision {:?} after {last:?}",
                    result.rev
                );
            }
            self.last_revision = Some(result.rev);
        }
        if result.kind == WriteKind::Created {
            if let (true, Ok(key)) = (self.names.generated(&result.key), result.key.parse::<u64>())
            {
                let collection = result.id.split('/').next().unwrap_or_default().to_string();
                let last = self.generated_keys.entry(collection).or_insert(0);
                assert!(key > *last, "generated key {key} after {last}");
                *last = key;
            }
        }
    }

    /// One error as scripts show it: number, message, status and the envelope's extra fields.
    fn show_error(&mut self, err: &quiver_errors::Error) -> String {
        let mut envelope = err.to_envelope();
        let extra: Map<String, Value> = envelope
            .as_object_mut()
            .map(|map| {
                map.iter()
                    .filter(|(k, _)| {
                        !matches!(k.as_str(), "error" | "errorNum" | "errorMessage" | "code")
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let mut text = format!("{} ({}): {}", err.number(), err.http_status(), err.message);
        if !extra.is_empty() {
            let shown = self.names.show(&Value::Object(extra));
            text.push_str(&format!(" {shown}"));
        }
        text
    }

    fn show_result(&mut self, result: &OpResult) -> String {
        self.check_increasing(result);
        let json = result.to_json();
        let mut written = Vec::new();
        result.write_json(&mut written);
        let rewritten: Value = serde_json::from_slice(&written).expect("write_json is JSON");
        assert_eq!(rewritten, json, "write_json and to_json agree");
        format!("{} {}", kind_name(result), self.names.show(&json))
    }

    fn show_item(&mut self, item: &quiver_errors::Result<OpResult>) -> String {
        match item {
            Ok(result) => self.show_result(result),
            Err(err) => format!("error {}", self.show_error(err)),
        }
    }

    fn write_options(
        &mut self,
        args: &mut goldenscript::ArgumentConsumer<'_>,
    ) -> Result<WriteOptions, Failure> {
        let mut opts = WriteOptions::new();
        let flag = |args: &mut goldenscript::ArgumentConsumer<'_>,
                    key: &str,
                    into: &mut bool|
         -> Result<(), Failure> {
            if let Some(v) = args.take_key(key) {
                *into = parse_bool(v)?;
            }
            Ok(())
        };
        flag(args, "returnNew", &mut opts.return_new)?;
        flag(args, "returnOld", &mut opts.return_old)?;
        flag(args, "silent", &mut opts.silent)?;
        flag(args, "keepNull", &mut opts.keep_null)?;
        flag(args, "mergeObjects", &mut opts.merge_objects)?;
        flag(args, "ignoreRevs", &mut opts.ignore_revs)?;
        flag(
            args,
            "skipDocumentValidation",
            &mut opts.skip_document_validation,
        )?;
        flag(args, "allOrNothing", &mut opts.all_or_nothing)?;
        flag(args, "waitForSync", &mut opts.wait_for_sync)?;
        if let Some(mode) = args.take_key("overwriteMode") {
            opts.overwrite_mode = OverwriteMode::parse(mode).map_err(|e| self.show_error(&e))?;
        }
        opts.if_match = args.take_key("ifMatch").map(|rev| self.names.real(rev));
        opts.version_attribute = args.take_key("versionAttribute").map(str::to_string);
        Ok(opts)
    }

    /// Runs one write on collection `name`: in the explicit transaction `trx`, or as this
    /// run's mode commits writes outside transactions.
    fn write<T>(
        &mut self,
        name: &str,
        trx: Option<&str>,
        op: impl FnOnce(
            &mut DocumentWriter<'_>,
            &Arc<Collection>,
        ) -> quiver_errors::Result<quiver_core::Committed<T>>,
    ) -> Result<quiver_errors::Result<T>, Failure> {
        if let Some(trx_name) = trx {
            let trx = self
                .transactions
                .get_mut(trx_name)
                .ok_or_else(|| format!("no transaction {trx_name}"))?;
            let coll = match trx.collection(name) {
                Ok(coll) => coll,
                Err(err) => return Ok(Err(err)),
            };
            return Ok(op(&mut DocumentWriter::Transaction(trx), &coll).and_then(|c| c.wait()));
        }
        let db = self.db();
        let coll = match db.collection(name) {
            Ok(coll) => coll,
            Err(err) => return Ok(Err(err)),
        };
        Ok(match self.mode {
            Mode::AutoCommit => op(&mut DocumentWriter::AutoCommit, &coll).and_then(|c| c.wait()),
            Mode::OneOperationTransaction => (|| {
                let mut trx = db.begin_transaction(TransactionOptions::writing(&[name]))?;
                let value = op(&mut DocumentWriter::Transaction(&mut trx), &coll)?.wait()?;
                trx.commit()?.wait()?;
                Ok(value)
            })(),
        })
    }

    /// Shows a single write's result, or fails the command with its error.
    fn single(&mut self, result: quiver_errors::Result<OpResult>) -> Result<String, Failure> {
        match result {
            Ok(result) => Ok(format!("{}\n", self.show_result(&result))),
            Err(err) => Err(self.show_error(&err).into()),
        }
    }

    /// Shows a multi-document write's items, one line each, or fails with its error.
    fn many(
        &mut self,
        result: quiver_errors::Result<Vec<quiver_errors::Result<OpResult>>>,
    ) -> Result<String, Failure> {
        match result {
            Ok(items) => Ok(items
                .iter()
                .map(|item| format!("{}\n", self.show_item(item)))
                .collect()),
            Err(err) => Err(self.show_error(&err).into()),
        }
    }

    /// Runs `read` over the explicit transaction, the snapshot or a read view taken now.
    fn read<R>(
        &mut self,
        trx: Option<&str>,
        at: Option<&str>,
        read: impl FnOnce(&dyn DocumentReader) -> quiver_errors::Result<R>,
    ) -> Result<R, Failure> {
        let result = match (trx, at) {
            (Some(name), _) => read(
                self.transactions
                    .get(name)
                    .ok_or_else(|| format!("no transaction {name}"))?,
            ),
            (None, Some(name)) => read(
                self.snapshots
                    .get(name)
                    .ok_or_else(|| format!("no snapshot {name}"))?,
            ),
            (None, None) => read(&self.db().read_view()),
        };
        result.map_err(|e| self.show_error(&e).into())
    }

    fn document_body(&mut self, text: &str) -> Result<Value, Failure> {
        Ok(self.names.input(parse_json(text)?))
    }

    fn modify(&mut self, command: &goldenscript::Command, merge: bool) -> Result<String, Failure> {
        let mut args = command.consume_args();
        let coll = args.next_pos().ok_or("collection not given")?.to_string();
        let key = args.next_pos().ok_or("key (or -) not given")?;
        let key = (key != "-").then(|| self.names.real(key));
        let body = self.document_body(args.next_pos().ok_or("document not given")?)?;
        let trx = args.take_key("trx").map(str::to_string);
        let opts = self.write_options(&mut args)?;
        args.reject_next()?;
        match (key, body) {
            (None, Value::Array(items)) => {
                let result = self.write(&coll, trx.as_deref(), |w, c| {
                    w.modify_many(c, items, &opts, merge)
                })?;
                self.many(result)
            }
            (key, doc) => {
                let result = self.write(&coll, trx.as_deref(), |w, c| {
                    if merge {
                        w.update(c, key.as_deref(), doc, &opts)
                    } else {
                        w.replace(c, key.as_deref(), doc, &opts)
                    }
                })?;
                self.single(result)
            }
        }
    }
}

impl goldenscript::Runner for Runner {
    type Command = goldenscript::Command;

    fn run(
        &mut self,
        command: &goldenscript::Command,
        _context: &goldenscript::Context,
    ) -> Result<String, Failure> {
        let db = self.db();
        let mut args = command.consume_args();
        let mut output = String::new();
        match command.name.as_str() {
            "create_database" => {
                let name = args.next_pos().ok_or("name not given")?;
                let options = args.next_pos().map(parse_json).transpose()?;
                args.reject_next()?;
                self.core()
                    .create_database(name, options.unwrap_or_else(|| Value::Object(Map::new())))
                    .map_err(|e| self.show_error(&e))?;
            }
            "use" => {
                let name = args.next_pos().ok_or("name not given")?;
                args.reject_next()?;
                self.db = Some(
                    self.core()
                        .database(name)
                        .map_err(|e| self.show_error(&e))?,
                );
            }
            "create_collection" => {
                let name = args.next_pos().ok_or("name not given")?;
                let mut spec = match args.next_pos() {
                    Some(text) => parse_json(text)?,
                    None => Value::Object(Map::new()),
                };
                args.reject_next()?;
                spec.as_object_mut()
                    .ok_or("the collection spec must be an object")?
                    .insert("name".into(), Value::String(name.to_string()));
                let spec = CollectionSpec::from_json(&spec).map_err(|e| self.show_error(&e))?;
                db.create_collection(spec)
                    .map_err(|e| self.show_error(&e))?;
            }
            "rename" => {
                let (old, new) = (
                    args.next_pos().ok_or("name not given")?,
                    args.next_pos().ok_or("new name not given")?,
                );
                args.reject_next()?;
                db.rename_collection(old, new)
                    .map_err(|e| self.show_error(&e))?;
            }
            "drop" => {
                let name = args.next_pos().ok_or("name not given")?;
                args.reject_next()?;
                db.drop_collection(name, false)
                    .map_err(|e| self.show_error(&e))?;
            }
            "properties" => {
                let name = args.next_pos().ok_or("name not given")?;
                let coll = db.collection(name).map_err(|e| self.show_error(&e))?;
                let properties = coll.properties();
                let mut shown = Map::new();
                while let Some(key) = args.next_pos() {
                    let value = key
                        .split('.')
                        .try_fold(&properties, |v, part| v.get(part))
                        .cloned()
                        .unwrap_or(Value::Null);
                    shown.insert(key.to_string(), value);
                }
                args.reject_next()?;
                output.push_str(&format!("{}\n", Value::Object(shown)));
            }
            "restart" => {
                args.reject_next()?;
                self.restart()?;
            }
            "create_index" => {
                let name = args.next_pos().ok_or("collection not given")?;
                let definition = parse_json(args.next_pos().ok_or("definition not given")?)?;
                args.reject_next()?;
                let coll = db.collection(name).map_err(|e| self.show_error(&e))?;
                let (index, created) = coll
                    .create_index(&definition)
                    .map_err(|e| self.show_error(&e))?;
                let what = if created { "created" } else { "existing" };
                output = format!("{what} {}\n", self.names.show(&index));
            }
            "index" => {
                let name = args.next_pos().ok_or("collection not given")?;
                let handle = self.names.real(args.next_pos().ok_or("index not given")?);
                args.reject_next()?;
                let coll = db.collection(name).map_err(|e| self.show_error(&e))?;
                let index = coll.index(&handle).map_err(|e| self.show_error(&e))?;
                output = format!("{}\n", self.names.show(&index));
            }
            "indexes" => {
                let name = args.next_pos().ok_or("collection not given")?;
                args.reject_next()?;
                let coll = db.collection(name).map_err(|e| self.show_error(&e))?;
                for index in coll.indexes().map_err(|e| self.show_error(&e))? {
                    output.push_str(&format!("{}\n", self.names.show(&index)));
                }
            }
            "drop_index" => {
                let name = args.next_pos().ok_or("collection not given")?;
                let handle = self.names.real(args.next_pos().ok_or("index not given")?);
                args.reject_next()?;
                let coll = db.collection(name).map_err(|e| self.show_error(&e))?;
                let dropped = coll.drop_index(&handle).map_err(|e| self.show_error(&e))?;
                output = format!("dropped {}\n", self.names.id(&dropped));
            }
            "insert" => {
                let coll = args.next_pos().ok_or("collection not given")?.to_string();
                let body = self.document_body(args.next_pos().ok_or("document not given")?)?;
                let trx = args.take_key("trx").map(str::to_string);
                let opts = self.write_options(&mut args)?;
                args.reject_next()?;
                output = match body {
                    Value::Array(docs) => {
                        let result = self
                            .write(&coll, trx.as_deref(), |w, c| w.insert_many(c, docs, &opts))?;
                        self.many(result)?
                    }
                    doc => {
                        let result =
                            self.write(&coll, trx.as_deref(), |w, c| w.insert(c, doc, &opts))?;
                        self.single(result)?
                    }
                };
            }
            "replace" => output = self.modify(command, false)?,
            "update" => output = self.modify(command, true)?,
            "remove" => {
                let coll = args.next_pos().ok_or("collection not given")?.to_string();
                let target = args.next_pos().ok_or("key or items not given")?.to_string();
                let trx = args.take_key("trx").map(str::to_string);
                let opts = self.write_options(&mut args)?;
                args.reject_next()?;
                output = if target.starts_with('[') {
                    let Value::Array(items) = self.document_body(&target)? else {
                        unreachable!("a JSON text starting with [ is an array");
                    };
                    let result = self.write(&coll, trx.as_deref(), |w, c| {
                        w.remove_many(c, &items, &opts)
                    })?;
                    self.many(result)?
                } else if target.starts_with('{') {
                    let item = self.document_body(&target)?;
                    let result =
                        self.write(&coll, trx.as_deref(), |w, c| w.remove_item(c, &item, &opts))?;
                    self.single(result)?
                } else {
                    let key = self.names.real(&target);
                    let result =
                        self.write(&coll, trx.as_deref(), |w, c| w.remove(c, &key, &opts))?;
                    self.single(result)?
                };
            }
            "truncate" => {
                let coll = args.next_pos().ok_or("collection not given")?.to_string();
                let trx = args.take_key("trx").map(str::to_string);
                args.reject_next()?;
                self.write(&coll, trx.as_deref(), |w, c| w.truncate(c, false))?
                    .map_err(|e| self.show_error(&e))?;
            }
            "get" => {
                let name = args.next_pos().ok_or("collection not given")?.to_string();
                let target = args.next_pos().ok_or("key not given")?.to_string();
                let trx = args.take_key("trx").map(str::to_string);
                let at = args.take_key("at").map(str::to_string);
                let if_match = args.take_key("ifMatch").map(|r| self.names.real(r));
                let ignore_revs = args.take_key("ignoreRevs").map(parse_bool).transpose()?;
                args.reject_next()?;
                if target.starts_with('[') {
                    let Value::Array(items) = self.document_body(&target)? else {
                        unreachable!("a JSON text starting with [ is an array");
                    };
                    let coll = db.collection(&name).map_err(|e| self.show_error(&e))?;
                    let results = coll
                        .get_many(&items, ignore_revs.unwrap_or(true))
                        .map_err(|e| self.show_error(&e))?;
                    for result in results {
                        let line = match result {
                            Ok(doc) => self.names.show(&doc).to_string(),
                            Err(err) => format!("error {}", self.show_error(&err)),
                        };
                        output.push_str(&format!("{line}\n"));
                    }
                } else if trx.is_some() || at.is_some() {
                    let key = self.names.real(&target);
                    let found = self.read(trx.as_deref(), at.as_deref(), |reader| {
                        let coll = reader.collection(&name)?;
                        reader.get(&coll, &key)
                    })?;
                    output = match found {
                        Some(doc) => format!("{}\n", self.names.show(&doc)),
                        None => "not found\n".to_string(),
                    };
                } else {
                    let key = self.names.real(&target);
                    let coll = db.collection(&name).map_err(|e| self.show_error(&e))?;
                    let (rev, raw) = coll
                        .get_raw(&key, if_match.as_deref())
                        .map_err(|e| self.show_error(&e))?;
                    let doc: Value = serde_json::from_slice(&raw)?;
                    assert_eq!(
                        doc["_rev"].as_str(),
                        Some(rev.encode().as_str()),
                        "the stored text carries the revision the index holds"
                    );
                    output = format!("{}\n", self.names.show(&doc));
                }
            }
            "count" => {
                let name = args.next_pos().ok_or("collection not given")?.to_string();
                let trx = args.take_key("trx").map(str::to_string);
                let at = args.take_key("at").map(str::to_string);
                args.reject_next()?;
                let count = self.read(trx.as_deref(), at.as_deref(), |reader| {
                    let coll = reader.collection(&name)?;
                    reader.count(&coll)
                })?;
                output = format!("{count}\n");
            }
            "scan" => {
                let name = args.next_pos().ok_or("collection not given")?.to_string();
                let trx = args.take_key("trx").map(str::to_string);
                let at = args.take_key("at").map(str::to_string);
                args.reject_next()?;
                let mut docs = self.read(trx.as_deref(), at.as_deref(), |reader| {
                    let coll = reader.collection(&name)?;
                    reader
                        .scan(&coll)?
                        .collect::<quiver_errors::Result<Vec<Value>>>()
                })?;
                docs.sort_by(|a, b| a["_key"].as_str().cmp(&b["_key"].as_str()));
                for doc in docs {
                    output.push_str(&format!("{}\n", self.names.show(&doc)));
                }
            }
            "begin" => {
                let name = args
                    .next_pos()
                    .ok_or("transaction name not given")?
                    .to_string();
                let list = |text: Option<&str>| -> Vec<String> {
                    text.map(|t| t.split(',').map(str::to_string).collect())
                        .unwrap_or_default()
                };
                let options = TransactionOptions {
                    write: list(args.take_key("write")),
                    read: list(args.take_key("read")),
                    exclusive: list(args.take_key("exclusive")),
                    allow_implicit: args
                        .take_key("allowImplicit")
                        .map(parse_bool)
                        .transpose()?
                        .unwrap_or(true),
                    ..TransactionOptions::default()
                };
                args.reject_next()?;
                if self.transactions.contains_key(&name) {
                    return Err(format!("transaction {name} is already running").into());
                }
                let trx = db
                    .begin_transaction(options)
                    .map_err(|e| self.show_error(&e))?;
                self.transactions.insert(name, trx);
            }
            "commit" => {
                let name = args.next_pos().ok_or("transaction name not given")?;
                args.reject_next()?;
                let trx = self
                    .transactions
                    .remove(name)
                    .ok_or_else(|| format!("no transaction {name}"))?;
                trx.commit()
                    .and_then(|c| c.wait())
                    .map_err(|e| self.show_error(&e))?;
            }
            "abort" => {
                let name = args.next_pos().ok_or("transaction name not given")?;
                args.reject_next()?;
                self.transactions
                    .remove(name)
                    .ok_or_else(|| format!("no transaction {name}"))?
                    .abort();
            }
            "snapshot" => {
                let name = args
                    .next_pos()
                    .ok_or("snapshot name not given")?
                    .to_string();
                args.reject_next()?;
                self.snapshots.insert(name, db.read_view());
            }
            other => return Err(format!("unknown command {other}").into()),
        }
        Ok(output)
    }
}

fn run_script(path: &Path) {
    for mode in [Mode::AutoCommit, Mode::OneOperationTransaction] {
        let mut runner = Runner::new(mode);
        if let Err(err) = goldenscript::run(&mut runner, path) {
            panic!("{} ({mode:?}): {err}", path.display());
        }
    }
}

scripts!(
    "tests/scripts",
    run_script,
    [
        keys,
        overwrite_modes,
        revisions,
        multi_document,
        edges,
        transactions,
        snapshots,
        restart,
        version_attribute,
        unique_indexes,
    ]
);
