//! One database: its collections (create, look up by name or id, rename, drop), its views,
//! and the system collections every database has. The core above (`catalog.rs`) opens and
//! lists the databases; transactions and read views over one (`txn.rs`) build on it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use quiver_storage::{CollectionId, DatabaseId, Engine};
use quiver_types::{validate_collection_name, NamingConvention};
use serde_json::{json, Value};

use crate::catalog_version::CatalogChange;
use crate::collection::{Collection, CollectionMeta, CollectionSpec, CollectionType};
use crate::keygen::KeyGenState;
use crate::view_host::ViewHost;
use crate::views::{View, ViewCatalog};
use crate::Settings;

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

#[derive(Default)]
pub(crate) struct CollectionMaps {
    by_name: HashMap<Arc<str>, Arc<Collection>>,
    by_id: HashMap<CollectionId, Arc<Collection>>,
}

impl CollectionMaps {
    pub(crate) fn insert(&mut self, coll: Arc<Collection>) {
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
    pub(crate) collections: RwLock<CollectionMaps>,
    ddl: Mutex<()>,
    pub(crate) dropped: AtomicBool,
    pub(crate) settings: Arc<Settings>,
    pub(crate) views: ViewCatalog,
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
    /// A database handle without collections (the core adds the stored ones, then its views
    /// load): `views` keeps its view definitions and resolves their analyzers.
    pub(crate) fn new(
        id: DatabaseId,
        name: &str,
        engine: Engine,
        options: Value,
        settings: Arc<Settings>,
        views: ViewCatalog,
    ) -> Database {
        Database {
            id,
            name: name.to_string(),
            engine,
            options,
            collections: RwLock::new(CollectionMaps::default()),
            ddl: Mutex::new(()),
            dropped: AtomicBool::new(false),
            settings,
            views,
        }
    }

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

    pub(crate) fn check_usable(&self) -> Result<()> {
        if self.is_dropped() {
            Err(Error::new(ErrorCode::DatabaseNotFound))
        } else {
            Ok(())
        }
    }

    pub(crate) fn ensure_system_collections(&self) -> Result<()> {
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
        crate::computed::check_expressions(
            spec.computed_values.as_ref(),
            self.settings.evaluator.read().as_ref(),
        )?;
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
    pub(crate) fn search_context(&self) -> crate::indexes::inverted::SearchContext {
        crate::indexes::inverted::SearchContext {
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
    ) -> Option<Arc<crate::indexes::inverted::InvertedIndex>> {
        self.collection_by_id(cid).ok()?.inverted_index(name_or_id)
    }

    fn inverted_index_by_id(
        &self,
        cid: CollectionId,
        index: u64,
    ) -> Option<Arc<crate::indexes::inverted::InvertedIndex>> {
        self.collection_by_id(cid).ok()?.inverted_index_by_id(index)
    }
}
