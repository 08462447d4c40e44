//! The catalog: the core (all databases) and each database's collections.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use quiver_storage::{CollectionId, DatabaseId, Engine, EngineOptions};
use quiver_types::{validate_collection_name, validate_database_name, NamingConvention};
use serde_json::{json, Value};

use crate::catalog_version::CatalogChange;
use crate::collection::{Collection, CollectionMeta, CollectionSpec, CollectionType};
use crate::keygen::KeyGenState;
use crate::streams::StreamTransactions;
use crate::ttl::TtlWorker;
use crate::txn::{ReadView, Transaction, TransactionOptions};
use crate::views::{View, ViewCatalog, ViewHost};
use crate::{ComputedValuesEvaluator, Settings};

/// The name of the database that always exists.
pub const SYSTEM_DATABASE: &str = "_system";

/// System collections created in every database.
pub const SYSTEM_COLLECTIONS: &[&str] = &[
    "_analyzers",
    "_appbundles",
    "_apps",
    "_aqlfunctions",
    "_frontend",
    "_graphs",
    "_jobs",
    "_queues",
];

/// System collections created only in `_system`.
pub const SYSTEM_DATABASE_COLLECTIONS: &[&str] = &["_users"];

/// Startup options of the core.
#[derive(Clone, Debug)]
pub struct CoreOptions {
    /// Options passed to the storage engine.
    pub engine: EngineOptions,
    /// Naming convention for database and collection names (ArangoDB 3.12 defaults to
    /// extended names).
    pub naming: NamingConvention,
    /// Upper bound on the bytes one transaction (or multi-document request) may stage;
    /// exceeding it fails with 32 "resource limit exceeded".
    pub max_transaction_size: usize,
    /// How often documents of ttl indexes are expired (`--ttl.frequency`, default 30 s).
    pub ttl_frequency: std::time::Duration,
}

impl Default for CoreOptions {
    fn default() -> CoreOptions {
        CoreOptions {
            engine: EngineOptions::default(),
            naming: NamingConvention::Extended,
            max_transaction_size: 512 * 1024 * 1024,
            ttl_frequency: std::time::Duration::from_secs(30),
        }
    }
}

/// The database server's data: every database, opened from one directory.
///
/// Thread-safe; share it as `Arc<Core>`.
pub struct Core {
    directory: std::path::PathBuf,
    engine: Engine,
    settings: Arc<Settings>,
    databases: Arc<RwLock<BTreeMap<String, Arc<Database>>>>,
    ddl: Mutex<()>,
    ttl: TtlWorker,
    streams: StreamTransactions,
}

impl Drop for Core {
    fn drop(&mut self) {
        self.ttl.signal();
    }
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core").finish_non_exhaustive()
    }
}

impl Core {
    /// The version of this server's catalog: bumped after every change of what queries plan
    /// against (databases, collections, their names, indexes and views), so that cached query
    /// plans can tell they are stale. Read it *before* looking at the catalog: a change that
    /// lands meanwhile bumps it after it became visible, so a plan built from the older state
    /// is never stored under the newer version. One counter for all databases: catalog changes
    /// are rare, and a spurious re-plan is cheap while a missed one would be wrong.
    pub fn catalog_version(&self) -> u64 {
        self.settings.catalog_version.load(Ordering::Acquire)
    }

    /// Opens (creating on first start) the data directory `dir`: recovers the engine, rebuilds
    /// the catalog, and creates `_system` with its system collections if missing. Errors are
    /// the engine's (e.g. 1019 directory locked, 25 I/O error).
    pub fn open(dir: &Path, options: CoreOptions) -> Result<Core> {
        let engine = Engine::open(dir, options.engine.clone())?;
        let settings = Arc::new(Settings {
            naming: options.naming,
            max_transaction_size: options.max_transaction_size,
            default_journal_size: options.engine.journal_size_default,
            evaluator: RwLock::new(None),
            analyzer_usage: RwLock::new(None),
            vector_directory: dir.join("vector-indexes"),
            catalog_version: AtomicU64::new(1),
            inverted_directory: dir.join("inverted-indexes"),
        });
        // Shared from the start: views resolve analyzers (their own database's and
        // `_system`'s) through it while they rebuild in the background.
        let databases: crate::view_analyzers::DatabaseMap = Arc::new(RwLock::new(BTreeMap::new()));
        *settings.analyzer_usage.write() =
            Some(Arc::new(crate::view_analyzers::ViewsUsingAnalyzers {
                databases: Arc::clone(&databases),
            }));
        for entry in engine.catalog() {
            let Some(name) = entry.meta.get("name").and_then(Value::as_str) else {
                tracing::warn!(
                    id = entry.id,
                    "database without a name in the catalog; skipped"
                );
                continue;
            };
            let db = Database {
                id: entry.id,
                name: name.to_string(),
                engine: engine.clone(),
                options: entry
                    .meta
                    .get("options")
                    .cloned()
                    .unwrap_or_else(|| json!({})),
                collections: RwLock::new(CollectionMaps::default()),
                ddl: Mutex::new(()),
                dropped: AtomicBool::new(false),
                settings: Arc::clone(&settings),
                views: ViewCatalog::new(
                    views_directory(dir, entry.id),
                    crate::view_analyzers::analyzer_source(name, Arc::clone(&databases)),
                ),
            };
            {
                let mut maps = db.collections.write();
                for centry in &entry.collections {
                    let Some((meta, reserved)) = CollectionMeta::from_entry(centry) else {
                        tracing::warn!(
                            id = centry.id,
                            "collection without a name in the catalog; skipped"
                        );
                        continue;
                    };
                    let status = centry.status.clone().err();
                    let coll = Arc::new(Collection::new(
                        centry.id,
                        engine.clone(),
                        meta,
                        reserved,
                        reserved,
                        status,
                        Arc::clone(&settings),
                    ));
                    maps.insert(coll);
                }
            }
            let db = Arc::new(db);
            databases.write().insert(name.to_string(), Arc::clone(&db));
            // Inverted indexes open before the views: search-alias views refer to them.
            for coll in db.collections() {
                coll.open_search(db.search_context());
            }
            db.views.load(db.as_ref(), entry.meta.get("views"));
        }
        let ttl = TtlWorker::spawn(Arc::downgrade(&databases), options.ttl_frequency);
        let core = Core {
            directory: dir.to_path_buf(),
            engine,
            settings,
            databases,
            ddl: Mutex::new(()),
            ttl,
            streams: StreamTransactions::default(),
        };
        if core.database(SYSTEM_DATABASE).is_err() {
            core.create_database_unchecked(SYSTEM_DATABASE, json!({}))?;
        }
        for db in core.databases() {
            db.ensure_system_collections()?;
        }
        Ok(core)
    }

    /// The storage engine underneath (for figures, sync and tests).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The data directory.
    pub fn directory(&self) -> &Path {
        &self.directory
    }

    /// Registers the evaluator that computes `computedValues` on writes (normally the AQL
    /// engine's). Until one is registered, computed values are not applied.
    pub fn set_computed_values_evaluator(&self, evaluator: Arc<dyn ComputedValuesEvaluator>) {
        *self.settings.evaluator.write() = Some(evaluator);
    }

    /// Registers who answers "which views use this analyzer" (normally the views catalog);
    /// dropping an analyzer without `force` fails while it is in use.
    pub fn set_analyzer_usage(&self, usage: Arc<dyn crate::analyzer_usage::AnalyzerUsage>) {
        *self.settings.analyzer_usage.write() = Some(usage);
    }

    /// The naming convention in effect.
    pub fn naming(&self) -> NamingConvention {
        self.settings.naming
    }

    /// Syncs and closes the engine. The core must not be used afterwards.
    pub fn shutdown(&self) -> Result<()> {
        self.ttl.stop();
        for db in self.databases() {
            db.views.stop_all();
            for coll in db.collections() {
                coll.stop_search();
            }
        }
        self.engine.shutdown()
    }

    /// The registry of stream transactions (`/_api/transaction/begin`, `x-arango-trx-id`).
    pub fn stream_transactions(&self) -> &StreamTransactions {
        &self.streams
    }

    /// Runs one ttl expiry round now (the background thread does this every
    /// `CoreOptions::ttl_frequency`); returns the number of documents removed.
    pub fn expire_ttl_now(&self) -> usize {
        crate::ttl::run_round(&self.databases)
    }

    /// Creates a database with its system collections. `options` (sharding, replicationFactor,
    /// …) is stored and reported back; users are the server's business. Errors: 1229 illegal
    /// name (1208 for names that are not NFC-normalized), 1207 existing name. Whether the
    /// caller may create databases (only from `_system`, 1230) is checked by the caller.
    pub fn create_database(&self, name: &str, options: Value) -> Result<Arc<Database>> {
        let _changed = CatalogChange::of(&self.settings);
        validate_database_name(name, self.settings.naming)?;
        if name == SYSTEM_DATABASE {
            return Err(Error::new(ErrorCode::DuplicateName));
        }
        let db = self.create_database_unchecked(name, options)?;
        db.ensure_system_collections()?;
        Ok(db)
    }

    fn create_database_unchecked(&self, name: &str, options: Value) -> Result<Arc<Database>> {
        let _ddl = self.ddl.lock();
        if self.databases.read().contains_key(name) {
            return Err(Error::with_message(
                ErrorCode::DuplicateName,
                "duplicate database name",
            ));
        }
        let options = if options.is_object() {
            options
        } else {
            json!({})
        };
        let id = self
            .engine
            .create_database(json!({"name": name, "options": options}))?;
        let db = Arc::new(Database {
            id,
            name: name.to_string(),
            engine: self.engine.clone(),
            options,
            collections: RwLock::new(CollectionMaps::default()),
            ddl: Mutex::new(()),
            dropped: AtomicBool::new(false),
            settings: Arc::clone(&self.settings),
            views: ViewCatalog::new(
                views_directory(&self.directory, id),
                crate::view_analyzers::analyzer_source(name, Arc::clone(&self.databases)),
            ),
        });
        if name == SYSTEM_DATABASE {
            db.ensure_system_collections()?;
        }
        self.databases
            .write()
            .insert(name.to_string(), Arc::clone(&db));
        Ok(db)
    }

    /// Drops a database and everything in it. Errors: 1228 unknown; 1230 (403) for `_system`.
    pub fn drop_database(&self, name: &str) -> Result<()> {
        let _changed = CatalogChange::of(&self.settings);
        if name == SYSTEM_DATABASE {
            return Err(Error::with_message(
                ErrorCode::UseSystemDatabase,
                "the _system database cannot be dropped",
            )
            .with_status(403));
        }
        let _ddl = self.ddl.lock();
        let db = self.database(name)?;
        self.engine.drop_database(db.id)?;
        db.dropped.store(true, Ordering::Release);
        db.views.drop_all(&*db);
        for coll in db.collections() {
            coll.mark_dropped();
        }
        self.databases.write().remove(name);
        Ok(())
    }

    /// A database by name; 1228 "database not found" otherwise.
    pub fn database(&self, name: &str) -> Result<Arc<Database>> {
        self.databases
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::new(ErrorCode::DatabaseNotFound))
    }

    /// Whether database `name` exists: [`Core::database`] without taking a reference to it,
    /// for the check every request makes before routing.
    pub fn has_database(&self, name: &str) -> bool {
        self.databases.read().contains_key(name)
    }

    /// Every database, sorted by name.
    pub fn databases(&self) -> Vec<Arc<Database>> {
        self.databases.read().values().cloned().collect()
    }

    /// Every database name, sorted.
    pub fn database_names(&self) -> Vec<String> {
        self.databases.read().keys().cloned().collect()
    }
}

#[derive(Default)]
struct CollectionMaps {
    by_name: HashMap<Arc<str>, Arc<Collection>>,
    by_id: HashMap<CollectionId, Arc<Collection>>,
}

impl CollectionMaps {
    fn insert(&mut self, coll: Arc<Collection>) {
        self.by_name.insert(coll.name(), Arc::clone(&coll));
        self.by_id.insert(coll.id(), coll);
    }
}

/// One database: an isolated namespace of collections.
pub struct Database {
    id: DatabaseId,
    name: String,
    engine: Engine,
    options: Value,
    collections: RwLock<CollectionMaps>,
    ddl: Mutex<()>,
    dropped: AtomicBool,
    pub(crate) settings: Arc<Settings>,
    views: ViewCatalog,
}

/// Where the indexes of a database's views live.
fn views_directory(data: &Path, db: DatabaseId) -> std::path::PathBuf {
    data.join("views").join(db.to_string())
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("id", &self.id)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Database {
    /// The engine's numeric id (reported as a string by `/_api/database/current`).
    pub fn id(&self) -> DatabaseId {
        self.id
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this is `_system`.
    pub fn is_system(&self) -> bool {
        self.name == SYSTEM_DATABASE
    }

    /// The creation options as given (object).
    pub fn options(&self) -> &Value {
        &self.options
    }

    /// Whether the database was dropped (handles outlive drops).
    pub fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    fn check_usable(&self) -> Result<()> {
        if self.is_dropped() {
            Err(Error::new(ErrorCode::DatabaseNotFound))
        } else {
            Ok(())
        }
    }

    fn ensure_system_collections(&self) -> Result<()> {
        let extra: &[&str] = if self.is_system() {
            SYSTEM_DATABASE_COLLECTIONS
        } else {
            &[]
        };
        for name in SYSTEM_COLLECTIONS.iter().chain(extra) {
            if self.collection(name).is_err() {
                let mut spec = CollectionSpec::new(*name);
                spec.is_system = true;
                match self.create_collection(spec) {
                    Ok(_) => {}
                    Err(err) if err.code == ErrorCode::DuplicateName => {}
                    Err(err) => return Err(err),
                }
            }
        }
        Ok(())
    }

    /// Creates a collection. Errors: 1208 illegal name (a leading `_` needs `is_system`),
    /// 1207 name taken, 1228 database dropped, engine errors.
    pub fn create_collection(&self, spec: CollectionSpec) -> Result<Arc<Collection>> {
        let _changed = CatalogChange::of(&self.settings);
        self.check_usable()?;
        validate_collection_name(&spec.name, spec.is_system, self.settings.naming)?;
        let mut spec = spec;
        if !spec.name.starts_with('_') {
            // ArangoDB derives isSystem from the name.
            spec.is_system = false;
        }
        let _ddl = self.ddl.lock();
        if self
            .collections
            .read()
            .by_name
            .contains_key(spec.name.as_str())
            || self.views.contains(&spec.name)
        {
            return Err(Error::with_message(
                ErrorCode::DuplicateName,
                "duplicate name",
            ));
        }
        let meta = CollectionMeta::from_spec(&spec);
        let reserved = KeyGenState::initial_reservation(&meta.key_options);
        let id = self.engine.create_collection(
            self.id,
            spec.storage_options(),
            meta.to_json(reserved),
        )?;
        let coll = Arc::new(Collection::new(
            id,
            self.engine.clone(),
            meta,
            0,
            reserved,
            None,
            Arc::clone(&self.settings),
        ));
        coll.open_search(self.search_context());
        self.collections.write().insert(Arc::clone(&coll));
        Ok(coll)
    }

    /// What the collections' inverted indexes need: the database's analyzers and name.
    fn search_context(&self) -> crate::inverted_index::SearchContext {
        crate::inverted_index::SearchContext {
            analyzers: self.views.analyzers(),
            database: self.name.clone(),
        }
    }

    /// A collection by name or by numeric id (as a decimal string); 1203 otherwise.
    pub fn collection(&self, name_or_id: &str) -> Result<Arc<Collection>> {
        let maps = self.collections.read();
        if let Some(coll) = maps.by_name.get(name_or_id) {
            return Ok(Arc::clone(coll));
        }
        if !name_or_id.is_empty() && name_or_id.bytes().all(|b| b.is_ascii_digit()) {
            if let Some(coll) = name_or_id
                .parse::<u64>()
                .ok()
                .and_then(|id| maps.by_id.get(&id))
            {
                return Ok(Arc::clone(coll));
            }
        }
        Err(Error::new(ErrorCode::DataSourceNotFound))
    }

    /// A collection by numeric id; 1203 otherwise.
    pub fn collection_by_id(&self, id: CollectionId) -> Result<Arc<Collection>> {
        self.collections
            .read()
            .by_id
            .get(&id)
            .cloned()
            .ok_or_else(|| Error::new(ErrorCode::DataSourceNotFound))
    }

    /// Every collection, sorted by name.
    pub fn collections(&self) -> Vec<Arc<Collection>> {
        let mut all: Vec<Arc<Collection>> =
            self.collections.read().by_id.values().cloned().collect();
        all.sort_by_key(|c| c.name());
        all
    }

    /// Drops a collection. System collections need `is_system_flag` (403/11 otherwise).
    /// Returns the dropped collection's id. Errors: 1203 unknown.
    pub fn drop_collection(&self, name_or_id: &str, is_system_flag: bool) -> Result<CollectionId> {
        let _changed = CatalogChange::of(&self.settings);
        self.check_usable()?;
        let _ddl = self.ddl.lock();
        let coll = self.collection(name_or_id)?;
        if coll.is_system() && !is_system_flag {
            return Err(Error::with_message(
                ErrorCode::Forbidden,
                "cannot drop system collection without isSystem=true",
            ));
        }
        {
            // Let in-flight writers finish before the files go away.
            let _writers = coll.write_lock.lock();
            self.engine.drop_collection(coll.id())?;
            coll.mark_dropped();
        }
        {
            let mut maps = self.collections.write();
            maps.by_name.remove(&*coll.name());
            maps.by_id.remove(&coll.id());
        }
        self.views.collection_dropped(self, coll.id())?;
        Ok(coll.id())
    }

    /// Renames a collection. Renaming to the current name succeeds. Errors: 1208 illegal new
    /// name, 1207 name taken, 1203 unknown, 403/11 for system collections.
    pub fn rename_collection(&self, name_or_id: &str, new_name: &str) -> Result<Arc<Collection>> {
        let _changed = CatalogChange::of(&self.settings);
        self.check_usable()?;
        let _ddl = self.ddl.lock();
        let coll = self.collection(name_or_id)?;
        coll.check_usable()?;
        let old_name = coll.name();
        if &*old_name == new_name {
            return Ok(coll);
        }
        if coll.is_system() {
            return Err(Error::with_message(
                ErrorCode::Forbidden,
                "system collections cannot be renamed",
            ));
        }
        validate_collection_name(new_name, false, self.settings.naming)?;
        if self.collections.read().by_name.contains_key(new_name) || self.views.contains(new_name) {
            return Err(Error::with_message(
                ErrorCode::DuplicateName,
                "duplicate name",
            ));
        }
        coll.set_name(new_name);
        if let Err(err) = coll.persist() {
            coll.set_name(&old_name);
            return Err(err);
        }
        let mut maps = self.collections.write();
        maps.by_name.remove(&*old_name);
        maps.by_name.insert(coll.name(), Arc::clone(&coll));
        Ok(coll)
    }

    /// A consistent read view over all collections of this database (an engine snapshot).
    pub fn read_view(self: &Arc<Self>) -> ReadView {
        ReadView::new(Arc::clone(self), self.engine.snapshot())
    }

    /// Starts a transaction over collections of this database. Errors: 1203 for an unknown
    /// declared collection, 1228 after a drop.
    pub fn begin_transaction(self: &Arc<Self>, options: TransactionOptions) -> Result<Transaction> {
        self.check_usable()?;
        Transaction::begin(Arc::clone(self), options)
    }

    /// Whether the database holds an edge collection of this name (a convenience for graph
    /// code).
    pub fn is_edge_collection(&self, name: &str) -> bool {
        self.collection(name)
            .map(|c| c.collection_type() == CollectionType::Edge)
            .unwrap_or(false)
    }
}

/// Views: `/_api/view` and AQL's `FOR … IN view SEARCH …` (see `views.rs`).
impl Database {
    /// Creates a view (`type` must be `arangosearch`). Errors: 1208 bad name, 1207 taken by a
    /// view or collection, 10 bad properties or link, 1203 unknown linked collection.
    pub fn create_view(&self, name: &str, view_type: &str, body: &Value) -> Result<Arc<View>> {
        let _changed = CatalogChange::of(&self.settings);
        self.check_usable()?;
        self.views.create(self, name, view_type, body)
    }

    /// A view by name or id; 1203 otherwise.
    pub fn view(&self, name_or_id: &str) -> Result<Arc<View>> {
        self.check_usable()?;
        self.views.get(name_or_id)
    }

    /// Every view, sorted by name.
    pub fn views(&self) -> Vec<Arc<View>> {
        self.views.list()
    }

    /// Replaces (`partial` false) or partially updates a view's properties and links.
    pub fn update_view(&self, name_or_id: &str, body: &Value, partial: bool) -> Result<Arc<View>> {
        let _changed = CatalogChange::of(&self.settings);
        self.check_usable()?;
        self.views.update(self, name_or_id, body, partial)
    }

    /// Renames a view. Errors: 1203, 1208, 1207.
    pub fn rename_view(&self, name_or_id: &str, new_name: &str) -> Result<Arc<View>> {
        let _changed = CatalogChange::of(&self.settings);
        self.check_usable()?;
        self.views.rename(self, name_or_id, new_name)
    }

    /// Drops a view. Errors: 1203.
    pub fn drop_view(&self, name_or_id: &str) -> Result<()> {
        let _changed = CatalogChange::of(&self.settings);
        self.check_usable()?;
        self.views.drop_view(self, name_or_id)
    }

    /// A view's properties with its links by collection name.
    pub fn view_properties(&self, view: &View) -> Value {
        self.views.properties_json(self, view)
    }
}

impl ViewHost for Database {
    fn collection_id(&self, name: &str) -> Result<CollectionId> {
        Ok(self.collection(name)?.id())
    }

    fn collection_name(&self, id: CollectionId) -> Option<String> {
        self.collections
            .read()
            .by_id
            .get(&id)
            .map(|c| c.name().to_string())
    }

    fn linked_views(&self, id: CollectionId) -> Option<Arc<crate::view_links::LinkedViews>> {
        self.collections
            .read()
            .by_id
            .get(&id)
            .map(|c| Arc::clone(&c.views))
    }

    fn has_collection_named(&self, name: &str) -> bool {
        self.collections.read().by_name.contains_key(name)
    }

    fn persist_views(&self, views: Value) -> Result<()> {
        self.engine.update_database(
            self.id,
            json!({"name": self.name, "options": self.options, "views": views}),
        )
    }

    fn engine(&self) -> &Engine {
        &self.engine
    }

    fn naming(&self) -> NamingConvention {
        self.settings.naming
    }

    fn database_name(&self) -> &str {
        &self.name
    }

    fn inverted_index(
        &self,
        cid: CollectionId,
        name_or_id: &str,
    ) -> Option<Arc<crate::inverted_index::InvertedIndex>> {
        self.collection_by_id(cid).ok()?.inverted_index(name_or_id)
    }

    fn inverted_index_by_id(
        &self,
        cid: CollectionId,
        index: u64,
    ) -> Option<Arc<crate::inverted_index::InvertedIndex>> {
        self.collection_by_id(cid).ok()?.inverted_index_by_id(index)
    }
}
