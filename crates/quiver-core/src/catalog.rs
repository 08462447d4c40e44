//! The catalog: the core, which opens one data directory and owns every database in it
//! (create, look up, list, drop), with the services that span databases (stream
//! transactions, ttl expiry, analyzer resolution for views). Each database is `database.rs`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use quiver_storage::{DatabaseId, Engine, EngineOptions};
use quiver_types::{validate_database_name, NamingConvention};
use serde_json::{json, Value};

use crate::catalog_version::CatalogChange;
use crate::collection::{Collection, CollectionMeta};
use crate::database::{Database, SYSTEM_DATABASE};
use crate::streams::StreamTransactions;
use crate::ttl::TtlWorker;
use crate::views::ViewCatalog;
use crate::{ComputedValuesEvaluator, Settings};

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
    /// The nice value of the search indexes' background threads (`--arangosearch.nice`,
    /// `search_priority.rs`; 0: the process's priority). Process-wide.
    pub search_nice: i32,
}

impl Default for CoreOptions {
    fn default() -> CoreOptions {
        CoreOptions {
            engine: EngineOptions::default(),
            naming: NamingConvention::Extended,
            max_transaction_size: 512 * 1024 * 1024,
            ttl_frequency: std::time::Duration::from_secs(30),
            search_nice: crate::search_priority::DEFAULT_SEARCH_NICE,
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
        crate::search_priority::set_search_nice(options.search_nice);
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
            let db = Database::new(
                entry.id,
                name,
                engine.clone(),
                entry
                    .meta
                    .get("options")
                    .cloned()
                    .unwrap_or_else(|| json!({})),
                Arc::clone(&settings),
                ViewCatalog::new(
                    views_directory(dir, entry.id),
                    crate::view_analyzers::analyzer_source(name, Arc::clone(&databases)),
                ),
            );
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
        let db = Arc::new(Database::new(
            id,
            name,
            self.engine.clone(),
            options,
            Arc::clone(&self.settings),
            ViewCatalog::new(
                views_directory(&self.directory, id),
                crate::view_analyzers::analyzer_source(name, Arc::clone(&self.databases)),
            ),
        ));
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
        self.engine.drop_database(db.id())?;
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

/// Where the indexes of a database's views live.
fn views_directory(data: &Path, db: DatabaseId) -> std::path::PathBuf {
    data.join("views").join(db.to_string())
}
