//! A collection: its catalog entry (name, type, properties, key generator), its indexes, reads
//! and maintenance. Its document writes are in `document_writer.rs` (auto-commit writes,
//! `auto_commit.rs`); its storage options (`journalSize`, `waitForSync`, `doCompact`) are the
//! engine's, which validates and keeps them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use quiver_storage::{
    CollectionEntry, CollectionId, CollectionOptions, CompactionReport, Engine, Snapshot,
};
use quiver_types::Revision;
use serde_json::{json, Map, Value};

use crate::computed::{self, ComputeOn, ComputedValue};
use crate::document::{
    decode_stored, decode_with_id, escape_json_inner, item_key, revision_conflict,
    revision_matches, splice_id,
};
use crate::indexes::definition::{self, IndexDef, FIRST_USER_INDEX_ID};
use crate::indexes::edge::{EdgeDirection, EdgeHits, EdgeIndex, EdgeIndexStats, VertexSlot};
use crate::indexes::inverted::{InvertedIndex, SearchContext};
use crate::indexes::maintained::MaintainedIndex;
use crate::indexes::unique::UniqueIndex;
use crate::keygen::{KeyGenState, KeyOptions, Reservation};
use crate::options::{Committed, OverwriteMode, WriteOptions};
use crate::schema::Schema;
use crate::Settings;

/// ArangoDB's collection types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollectionType {
    /// Type 2: plain documents.
    Document,
    /// Type 3: edges with `_from` and `_to`.
    Edge,
}

impl CollectionType {
    /// ArangoDB's number (2 or 3).
    pub fn number(self) -> u64 {
        match self {
            CollectionType::Document => 2,
            CollectionType::Edge => 3,
        }
    }

    /// From ArangoDB's number; error 1218 "collection type invalid" otherwise.
    pub fn from_number(number: u64) -> Result<CollectionType> {
        match number {
            2 => Ok(CollectionType::Document),
            3 => Ok(CollectionType::Edge),
            _ => Err(Error::new(ErrorCode::CollectionTypeInvalid)),
        }
    }
}

/// Everything needed to create a collection.
#[derive(Clone, Debug)]
pub struct CollectionSpec {
    /// The name (checked against the database's naming convention).
    pub name: String,
    /// Document or edge collection.
    pub collection_type: CollectionType,
    /// System collection (name must start with `_`).
    pub is_system: bool,
    /// Every write waits for stable storage.
    pub wait_for_sync: bool,
    /// Journal size in bytes (None: engine default); the engine checks its bounds when the
    /// collection is created.
    pub journal_size: Option<u64>,
    /// Whether the compactor may rewrite this collection's datafiles.
    pub do_compact: bool,
    /// Key generator configuration.
    pub key_options: KeyOptions,
    /// The validation schema object as given (`None` = no schema). Stored and reported;
    /// see the crate docs for enforcement.
    pub schema: Option<Value>,
    /// `cacheEnabled` (reported only).
    pub cache_enabled: bool,
    /// `computedValues` as given (stored and reported).
    pub computed_values: Option<Value>,
}

impl CollectionSpec {
    /// A document collection with default properties.
    pub fn new(name: impl Into<String>) -> CollectionSpec {
        CollectionSpec {
            name: name.into(),
            collection_type: CollectionType::Document,
            is_system: false,
            wait_for_sync: false,
            journal_size: None,
            do_compact: true,
            key_options: KeyOptions::default(),
            schema: None,
            cache_enabled: false,
            computed_values: None,
        }
    }

    /// Parses the body of `POST /_api/collection`. Errors: not an object or no string `name`
    /// → 1208; `type` not 2/3 → 1218; bad `keyOptions` → 1232; bad `schema` → 1621;
    /// `journalSize` not a number → 10. Cluster-only attributes are ignored. Name rules and
    /// the bounds of `journalSize` (the engine's) are checked at creation.
    pub fn from_json(body: &Value) -> Result<CollectionSpec> {
        let Value::Object(object) = body else {
            return Err(Error::with_message(ErrorCode::IllegalName, "illegal name"));
        };
        let name = match object.get("name") {
            Some(Value::String(name)) => name.clone(),
            _ => return Err(Error::with_message(ErrorCode::IllegalName, "illegal name")),
        };
        let mut spec = CollectionSpec::new(name);
        match object.get("type") {
            None | Some(Value::Null) => {}
            Some(Value::Number(n)) => {
                spec.collection_type = CollectionType::from_number(n.as_u64().unwrap_or(0))?
            }
            Some(Value::String(s)) if s == "edge" || s == "3" => {
                spec.collection_type = CollectionType::Edge
            }
            Some(Value::String(s)) if s == "document" || s == "2" => {}
            Some(_) => return Err(Error::new(ErrorCode::CollectionTypeInvalid)),
        }
        spec.is_system = bool_attr(object, "isSystem")?.unwrap_or(false);
        spec.wait_for_sync = bool_attr(object, "waitForSync")?.unwrap_or(false);
        spec.do_compact = bool_attr(object, "doCompact")?.unwrap_or(true);
        spec.cache_enabled = bool_attr(object, "cacheEnabled")?.unwrap_or(false);
        spec.journal_size = journal_size_attr(object)?;
        spec.key_options = KeyOptions::from_json(object.get("keyOptions"))?;
        spec.schema = parse_schema(object.get("schema"))?;
        spec.computed_values = parse_computed_values(object.get("computedValues"))?;
        Ok(spec)
    }
}

impl CollectionSpec {
    /// The storage options the engine keeps for the new collection.
    pub(crate) fn storage_options(&self) -> CollectionOptions {
        CollectionOptions {
            journal_size: self.journal_size,
            wait_for_sync: self.wait_for_sync,
            do_compact: self.do_compact,
        }
    }
}

fn bool_attr(object: &Map<String, Value>, name: &str) -> Result<Option<bool>> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::Number(n)) => Ok(Some(n.as_f64().unwrap_or(0.0) != 0.0)),
        Some(_) => Err(Error::with_message(
            ErrorCode::BadParameter,
            format!("'{name}' must be a boolean"),
        )),
    }
}

/// `journalSize` as given; its bounds are the engine's (`Engine::create_collection` and
/// `Engine::update_collection` refuse a size out of them with 400/10).
fn journal_size_attr(object: &Map<String, Value>) -> Result<Option<u64>> {
    match object.get("journalSize") {
        None | Some(Value::Null) => Ok(None),
        // Negative and fractional sizes round to whole bytes here and fail the engine's check.
        Some(Value::Number(n)) => Ok(Some(n.as_f64().unwrap_or(0.0).max(0.0) as u64)),
        Some(_) => Err(Error::with_message(
            ErrorCode::BadParameter,
            "journalSize must be a number",
        )),
    }
}

fn bad_schema(message: &str) -> Error {
    Error::with_message(ErrorCode::ValidationBadParameter, message)
}

/// Checks a `schema` value: `null` or `{}` mean none; otherwise an object with an object `rule`,
/// an optional `level` (none/new/moderate/strict), `message` (string) and `type` ("json").
fn parse_schema(value: Option<&Value>) -> Result<Option<Value>> {
    let object = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(object)) if object.is_empty() => return Ok(None),
        Some(Value::Object(object)) => object,
        Some(_) => return Err(bad_schema("schema must be an object")),
    };
    match object.get("rule") {
        Some(Value::Object(_)) => {}
        _ => return Err(bad_schema("schema.rule must be an object")),
    }
    match object.get("level") {
        None => {}
        Some(Value::String(level))
            if ["none", "new", "moderate", "strict"].contains(&level.as_str()) => {}
        Some(_) => {
            return Err(bad_schema(
                "schema.level must be one of none, new, moderate, strict",
            ))
        }
    }
    match object.get("message") {
        None | Some(Value::String(_)) => {}
        Some(_) => return Err(bad_schema("schema.message must be a string")),
    }
    match object.get("type") {
        None => {}
        Some(Value::String(t)) if t == "json" => {}
        Some(_) => return Err(bad_schema("schema.type must be 'json'")),
    }
    let mut schema = object.clone();
    schema.entry("level").or_insert_with(|| "strict".into());
    schema.entry("message").or_insert_with(|| "".into());
    schema.entry("type").or_insert_with(|| "json".into());
    let schema = Value::Object(schema);
    Schema::compile(&schema)?;
    Ok(Some(schema))
}

fn parse_computed_values(value: Option<&Value>) -> Result<Option<Value>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) if items.is_empty() => Ok(None),
        Some(Value::Array(items)) => {
            computed::parse(items)?;
            Ok(Some(Value::Array(items.clone())))
        }
        Some(_) => Err(Error::with_message(
            ErrorCode::BadParameter,
            "'computedValues' must be an array",
        )),
    }
}

#[derive(Clone, Debug)]
pub(crate) struct CollectionMeta {
    pub name: Arc<str>,
    pub escaped_name: Arc<str>,
    pub collection_type: CollectionType,
    pub is_system: bool,
    pub globally_unique_id: String,
    pub key_options: KeyOptions,
    pub schema: Option<Value>,
    pub compiled_schema: Option<Arc<Schema>>,
    pub cache_enabled: bool,
    pub computed_values: Option<Value>,
    pub compiled_computed: Option<Arc<Vec<ComputedValue>>>,
    /// User-defined indexes in creation order.
    pub indexes: Vec<IndexDef>,
    pub next_index_id: u64,
}

fn compile_computed(values: &Option<Value>) -> Option<Arc<Vec<ComputedValue>>> {
    let items = values.as_ref()?.as_array()?;
    match computed::parse(items) {
        Ok(list) if !list.is_empty() => Some(Arc::new(list)),
        Ok(_) => None,
        Err(err) => {
            tracing::warn!(%err, "stored computed values do not parse; not applied");
            None
        }
    }
}

fn compile_schema(schema: &Option<Value>) -> Option<Arc<Schema>> {
    let schema = schema.as_ref()?;
    match Schema::compile(schema) {
        Ok(compiled) => Some(Arc::new(compiled)),
        Err(err) => {
            tracing::warn!(%err, "stored collection schema does not compile; not enforced");
            None
        }
    }
}

impl CollectionMeta {
    pub fn from_spec(spec: &CollectionSpec) -> CollectionMeta {
        let uuid = uuid::Uuid::new_v4().simple().to_string().to_uppercase();
        CollectionMeta {
            name: Arc::from(spec.name.as_str()),
            escaped_name: Arc::from(escape_json_inner(&spec.name)),
            collection_type: spec.collection_type,
            is_system: spec.is_system,
            globally_unique_id: format!("h{}", &uuid[..12]),
            key_options: spec.key_options.clone(),
            schema: spec.schema.clone(),
            compiled_schema: compile_schema(&spec.schema),
            cache_enabled: spec.cache_enabled,
            computed_values: spec.computed_values.clone(),
            compiled_computed: compile_computed(&spec.computed_values),
            indexes: Vec::new(),
            next_index_id: FIRST_USER_INDEX_ID,
        }
    }

    /// The opaque meta blob the engine keeps for the core.
    pub fn to_json(&self, key_reserved: u64) -> Value {
        json!({
            "name": &*self.name,
            "type": self.collection_type.number(),
            "isSystem": self.is_system,
            "globallyUniqueId": self.globally_unique_id,
            "keyOptions": self.key_options.to_meta(),
            "keyReserved": key_reserved,
            "schema": self.schema,
            "cacheEnabled": self.cache_enabled,
            "computedValues": self.computed_values,
            "indexes": self.indexes.iter().map(IndexDef::to_meta).collect::<Vec<_>>(),
            "nextIndexId": self.next_index_id,
        })
    }

    /// Rebuilds the meta of a recovered collection; `None` if the blob has no name.
    pub fn from_entry(entry: &CollectionEntry) -> Option<(CollectionMeta, u64)> {
        let meta = entry.meta.as_object()?;
        let name = meta.get("name")?.as_str()?.to_string();
        let collection_type = meta
            .get("type")
            .and_then(Value::as_u64)
            .and_then(|n| CollectionType::from_number(n).ok())
            .unwrap_or(CollectionType::Document);
        let not_null = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
        let schema = not_null(meta.get("schema"));
        Some((
            CollectionMeta {
                escaped_name: Arc::from(escape_json_inner(&name)),
                name: Arc::from(name.as_str()),
                collection_type,
                is_system: meta
                    .get("isSystem")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                globally_unique_id: meta
                    .get("globallyUniqueId")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("c{}", entry.id)),
                key_options: KeyOptions::from_meta(meta.get("keyOptions")),
                compiled_schema: compile_schema(&schema),
                schema,
                cache_enabled: meta
                    .get("cacheEnabled")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                compiled_computed: compile_computed(&not_null(meta.get("computedValues"))),
                computed_values: not_null(meta.get("computedValues")),
                indexes: meta
                    .get("indexes")
                    .and_then(Value::as_array)
                    .map(|defs| defs.iter().filter_map(IndexDef::from_meta).collect())
                    .unwrap_or_default(),
                next_index_id: meta
                    .get("nextIndexId")
                    .and_then(Value::as_u64)
                    .unwrap_or(FIRST_USER_INDEX_ID),
            },
            meta.get("keyReserved").and_then(Value::as_u64).unwrap_or(0),
        ))
    }
}

/// A collection of one database. Handles stay valid across renames; after a drop every
/// operation fails with 1203.
pub struct Collection {
    id: CollectionId,
    engine: Engine,
    meta: RwLock<CollectionMeta>,
    /// Serializes writers: held while checking preconditions and committing, never while
    /// waiting for durability. Readers never take it.
    pub(crate) write_lock: Mutex<()>,
    keygen: Mutex<KeyGenState>,
    /// Serializes catalog writes of this collection so that a newer meta never gets
    /// overwritten by an older one.
    persist_lock: Mutex<()>,
    /// The key reservation the catalog durably holds.
    durable_reserved: AtomicU64,
    dropped: AtomicBool,
    status: Option<Error>,
    /// The highest revision written through this handle (0 = not known yet).
    last_revision: AtomicU64,
    /// The commit tick of the newest write (see [`crate::data_version`]).
    data_version: crate::data_version::CollectionVersion,
    pub(crate) settings: Arc<Settings>,
    edge_index: Option<Arc<EdgeIndex>>,
    unique_indexes: RwLock<Arc<Vec<Arc<UniqueIndex>>>>,
    /// Indexes with an in-memory structure (persistent family), in creation order.
    maintained: RwLock<Arc<Vec<Arc<MaintainedIndex>>>>,
    /// The views linked to this collection and its inverted indexes (fed from its commits).
    pub(crate) views: Arc<crate::view_links::LinkedViews>,
    /// The open inverted indexes, in creation order.
    inverted: RwLock<Vec<Arc<InvertedIndex>>>,
    /// The database's analyzers and name (set by the database before any inverted index is
    /// opened).
    search_context: std::sync::OnceLock<SearchContext>,
}

/// The build context of index `index` of collection `cid`: where a vector index keeps its
/// quantizer, and whether the index exists already (start-up) or is being created.
fn quantizer_place(
    settings: &Settings,
    cid: CollectionId,
    index: u64,
    existing: bool,
) -> crate::indexes::vector::BuildContext {
    crate::indexes::vector::BuildContext {
        path: Some(
            settings
                .vector_directory
                .join(cid.to_string())
                .join(format!("{index}.ivf")),
        ),
        existing,
    }
}

/// Removes a file or directory that may not exist; other failures are logged (a leftover
/// quantizer file is harmless: the next index of that id trains and overwrites it).
fn remove_quietly(path: &std::path::Path, remove: fn(&std::path::Path) -> std::io::Result<()>) {
    if let Err(err) = remove(path) {
        if err.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!("cannot remove {}: {err}", path.display());
        }
    }
}

/// What a query planner needs to know about one index of a collection.
#[derive(Clone, Debug)]
pub struct IndexInfo {
    pub id: u64,
    pub name: String,
    /// The type as reported (`persistent`, `hash`, `skiplist`, ...).
    pub kind: String,
    pub fields: Vec<String>,
    pub unique: bool,
    pub sparse: bool,
    /// Share of distinct values among the entries (1 = all distinct).
    pub selectivity: f64,
    /// Built and usable by queries (an index being built in the background is not).
    pub ready: bool,
    /// Entries held (documents, or array elements for expanded fields; superseded versions
    /// not yet collected included).
    pub entries: usize,
    /// The index object of the HTTP API (with the current `selectivityEstimate`).
    pub description: Value,
}

impl std::fmt::Debug for Collection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collection")
            .field("id", &self.id)
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

impl Collection {
    pub(crate) fn new(
        id: CollectionId,
        engine: Engine,
        meta: CollectionMeta,
        key_last: u64,
        key_reserved: u64,
        status: Option<Error>,
        settings: Arc<Settings>,
    ) -> Collection {
        let keygen = KeyGenState::new(meta.key_options.clone(), key_last, key_reserved);
        let edge_index = (meta.collection_type == CollectionType::Edge)
            .then(|| Self::start_edge_index(id, &engine, status.is_none()));
        let unique: Vec<Arc<UniqueIndex>> = meta
            .indexes
            .iter()
            .filter(|d| d.enforces_uniqueness())
            .map(|d| Arc::new(UniqueIndex::new(d.uniqueness_def())))
            .collect();
        let maintained: Vec<Arc<MaintainedIndex>> = meta
            .indexes
            .iter()
            .filter_map(|d| MaintainedIndex::new(d, &quantizer_place(&settings, id, d.id, true)))
            .map(Arc::new)
            .collect();
        if !maintained.is_empty() && status.is_none() {
            // Index contents are not persisted: rebuild them in the background from a
            // snapshot taken now, before any write can reach this collection (it is not
            // published yet), so every later commit is recorded by the indexes themselves.
            let snapshot = engine.snapshot();
            let list = maintained.clone();
            let build_settings = Arc::clone(&settings);
            let spawned = std::thread::Builder::new()
                .name("quiver-index-build".into())
                .spawn(move || {
                    for ix in list {
                        // Plans cached while the index was building scan the collection; the
                        // ready index must invalidate them like any catalog change.
                        let _changed = crate::catalog_version::CatalogChange::of(&build_settings);
                        if let Err(err) = ix.build(id, &snapshot) {
                            tracing::warn!("building index {} failed: {err}", ix.def.name);
                        }
                    }
                });
            if let Err(err) = spawned {
                tracing::warn!("cannot start the index build thread: {err}");
            }
        }
        Collection {
            id,
            engine,
            meta: RwLock::new(meta),
            write_lock: Mutex::new(()),
            keygen: Mutex::new(keygen),
            persist_lock: Mutex::new(()),
            durable_reserved: AtomicU64::new(key_reserved),
            dropped: AtomicBool::new(false),
            status,
            last_revision: AtomicU64::new(0),
            data_version: Default::default(),
            settings,
            edge_index,
            unique_indexes: RwLock::new(Arc::new(unique)),
            maintained: RwLock::new(Arc::new(maintained)),
            views: Default::default(),
            inverted: RwLock::new(Vec::new()),
            search_context: std::sync::OnceLock::new(),
        }
    }

    /// The numeric id (reported as a string by the HTTP API).
    pub fn id(&self) -> CollectionId {
        self.id
    }

    /// The current name.
    pub fn name(&self) -> Arc<str> {
        Arc::clone(&self.meta.read().name)
    }

    /// The name JSON-escaped without quotes (what `_id` splicing needs).
    pub(crate) fn escaped_name(&self) -> Arc<str> {
        Arc::clone(&self.meta.read().escaped_name)
    }

    /// Document or edge collection.
    pub fn collection_type(&self) -> CollectionType {
        self.meta.read().collection_type
    }

    /// Whether this is an edge collection.
    pub fn is_edge(&self) -> bool {
        self.collection_type() == CollectionType::Edge
    }

    /// Whether this is a system collection.
    pub fn is_system(&self) -> bool {
        self.meta.read().is_system
    }

    /// The collection's `globallyUniqueId`.
    pub fn globally_unique_id(&self) -> String {
        self.meta.read().globally_unique_id.clone()
    }

    /// The collection-level `waitForSync` (kept by the engine, which applies it to every
    /// batch it commits for this collection).
    pub fn wait_for_sync(&self) -> bool {
        self.storage_options().wait_for_sync
    }

    /// The storage options the engine keeps for this collection (defaults once dropped).
    fn storage_options(&self) -> CollectionOptions {
        self.engine.collection_options(self.id).unwrap_or_default()
    }

    /// The key generator configuration.
    pub fn key_options(&self) -> KeyOptions {
        self.meta.read().key_options.clone()
    }

    /// The stored schema object, if any.
    pub fn schema(&self) -> Option<Value> {
        self.meta.read().schema.clone()
    }

    /// The edge index of an edge collection, registered before the collection is published
    /// (so every commit reaches it) and filled from a snapshot in the background when the
    /// collection already holds documents (startup).
    fn start_edge_index(id: CollectionId, engine: &Engine, usable: bool) -> Arc<EdgeIndex> {
        let snapshot = engine.snapshot();
        let empty = !usable || snapshot.count(id).map_or(true, |n| n == 0);
        let index = Arc::new(EdgeIndex::new(!empty));
        if empty {
            return index;
        }
        let building = Arc::clone(&index);
        let spawned = std::thread::Builder::new()
            .name("quiver-edge-index".into())
            .spawn(move || {
                // Failures are logged and reported to every reader by the index itself.
                let _ = building.build(id, &snapshot);
            });
        if let Err(err) = spawned {
            tracing::warn!("cannot start the edge index build thread: {err}");
            let _ = index.build(id, &engine.snapshot());
        }
        index
    }

    pub(crate) fn edge_index(&self) -> Option<&Arc<EdgeIndex>> {
        self.edge_index.as_ref()
    }

    /// Figures of the edge index (None for a document collection). Waits for a startup
    /// build to finish.
    pub fn edge_index_stats(&self) -> Result<Option<EdgeIndexStats>> {
        match &self.edge_index {
            Some(index) => {
                index.wait_ready()?;
                // Garbage is unlinked by commits as the horizon passes it; the last commits
                // may have run while a snapshot still saw it. Counting it would report edges
                // and vertices no snapshot can reach any more.
                index.collect(self.engine.horizon());
                Ok(Some(index.stats()))
            }
            None => Ok(None),
        }
    }

    /// Appends the edges of `vertex` that `snapshot` holds to `out` (see
    /// [`EdgeIndex::lookup`]). Error 1218 for a document collection.
    pub(crate) fn lookup_edges(
        &self,
        snapshot: &Snapshot,
        vertex: &str,
        direction: EdgeDirection,
        out: &mut EdgeHits,
    ) -> Result<()> {
        self.check_usable()?;
        let index = self.edge_index.as_ref().ok_or_else(|| {
            Error::with_message(
                ErrorCode::CollectionTypeInvalid,
                format!("collection '{}' is not an edge collection", self.name()),
            )
        })?;
        index.lookup(vertex, direction, snapshot.tick(), out, &mut |key, rev| {
            let held = snapshot.revision(self.id, key)?;
            Ok(match rev {
                Some(rev) => held == Some(rev),
                None => held.is_some(),
            })
        })
    }

    /// Records in this edge collection's index that vertex `vertex` was found alive under
    /// `epoch`, the existence epoch of the vertex's collection (see
    /// [`EdgeIndex::mark_vertex_alive`]); edge hits then carry it as `other_mark`. Nothing
    /// happens for a document collection.
    pub fn mark_vertex_alive(&self, vertex: &str, slot: VertexSlot, epoch: u64) {
        if let Some(index) = &self.edge_index {
            index.mark_vertex_alive(vertex, slot, epoch);
        }
    }

    /// About how many edges `vertex` has in `direction` (None for a document collection or
    /// while the edge index is being built). For search planning, never for results.
    pub fn edge_degree_hint(&self, vertex: &str, direction: EdgeDirection) -> Option<usize> {
        self.edge_index.as_ref()?.degree_hint(vertex, direction)
    }

    /// The edges touching `vertex` (`/_api/edges/{collection}?vertex=…&direction=…`):
    /// outbound, inbound, or both when `direction` is None (an edge from the vertex to itself
    /// is listed once). Documents with `_id`, read from one snapshot. Error 1218 for a
    /// document collection.
    pub fn edges(&self, vertex: &str, direction: Option<EdgeDirection>) -> Result<Vec<Value>> {
        let mut hits = EdgeHits::new();
        let directions: &[EdgeDirection] = match direction {
            Some(EdgeDirection::Outbound) => &[EdgeDirection::Outbound],
            Some(EdgeDirection::Inbound) => &[EdgeDirection::Inbound],
            None => &[EdgeDirection::Outbound, EdgeDirection::Inbound],
        };
        let snapshot = self.engine.snapshot();
        for d in directions {
            self.lookup_edges(&snapshot, vertex, *d, &mut hits)?;
        }
        let name = self.name();
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for hit in hits.iter() {
            if !seen.insert(hit.key) {
                continue;
            }
            if let Some(doc) = snapshot.get(self.id, hit.key)? {
                out.push(decode_with_id(&doc.body, &name, hit.key)?);
            }
        }
        Ok(out)
    }

    /// Applies the collection's computed values for `op` to `doc`, when it has any and an
    /// evaluator is registered.
    pub(crate) fn apply_computed(
        &self,
        op: ComputeOn,
        key: &str,
        doc: &mut Map<String, Value>,
    ) -> Result<()> {
        let Some(values) = self.meta.read().compiled_computed.clone() else {
            return Ok(());
        };
        let Some(evaluator) = self.settings.evaluator.read().clone() else {
            return Ok(());
        };
        let id = format!("{}/{key}", self.name());
        computed::apply(&values, &evaluator, op, (key, &id), doc)
    }

    /// Whether a write to this collection must go through a write set and the index hooks
    /// (edge index, unique constraints, maintained indexes). Read under `write_lock`: index
    /// creation registers under it.
    pub(crate) fn has_write_hooks(&self) -> bool {
        self.edge_index.is_some()
            || !self.views.is_empty()
            || !self.unique_indexes.read().is_empty()
            || !self.maintained.read().is_empty()
    }

    /// Whether the collection has unique indexes to check on writes.
    pub(crate) fn has_unique_indexes(&self) -> bool {
        !self.unique_indexes.read().is_empty()
    }

    /// Whether an insert can store an encoded body without building its attributes as
    /// values ([`DocumentWriter::insert_encoded`](crate::DocumentWriter)): no computed values,
    /// no schema to apply, no unique index, and `overwrite_mode` conflict or replace (a
    /// replaced document goes through the value rules under the writer lock). Callers may
    /// skip encoding when this is false.
    pub fn takes_encoded(&self, opts: &WriteOptions) -> bool {
        let mode = matches!(
            opts.overwrite_mode,
            OverwriteMode::Conflict | OverwriteMode::Replace
        );
        if !mode || self.has_unique_indexes() {
            return false;
        }
        let meta = self.meta.read();
        meta.compiled_computed.is_none()
            && (meta.compiled_schema.is_none() || opts.skip_document_validation)
            && !meta
                .indexes
                .iter()
                .any(|d| d.kind == "vector" || definition::is_mdi_kind(&d.kind))
    }

    /// Checks a document about to be written against the collection's vector and mdi indexes
    /// (`vector_index::check_document`: 10 when a non-sparse index's attribute is missing,
    /// 17 when it is not a vector of the index's dimension; `mdi_index::check_document`: 1561
    /// when a dimension is not a number).
    pub(crate) fn check_index_values(&self, key: &str, doc: &Map<String, Value>) -> Result<()> {
        let meta = self.meta.read();
        for def in &meta.indexes {
            if def.kind == "vector" {
                crate::indexes::vector::check_document(def, key, doc)?;
            } else if definition::is_mdi_kind(&def.kind) {
                crate::indexes::mdi::check_document(def, doc)?;
            }
        }
        Ok(())
    }

    pub(crate) fn unique_indexes(&self) -> Arc<Vec<Arc<UniqueIndex>>> {
        Arc::clone(&self.unique_indexes.read())
    }

    pub(crate) fn maintained_indexes(&self) -> Arc<Vec<Arc<MaintainedIndex>>> {
        Arc::clone(&self.maintained.read())
    }

    pub(crate) fn maintained_index(&self, id: u64) -> Result<Arc<MaintainedIndex>> {
        self.maintained
            .read()
            .iter()
            .find(|ix| ix.def.id == id)
            .cloned()
            .ok_or_else(|| Error::new(ErrorCode::IndexNotFound))
    }

    /// A user index's description with its live selectivity estimate.
    fn describe_index(&self, def: &IndexDef, collection: &str) -> Value {
        let mut description = def.describe(collection);
        if let Some(ix) = self.maintained.read().iter().find(|ix| ix.def.id == def.id) {
            if definition::is_mdi_kind(&def.kind) && !def.unique && def.kind != "mdi-prefixed" {
                // An mdi index without prefix keeps no estimate (as ArangoDB).
            } else if def.kind == "vector" {
                // No estimate (as ArangoDB); 3.12.9's training state instead.
                let state = if ix.is_ready() { "ready" } else { "training" };
                description["trainingState"] = state.into();
            } else {
                description["selectivityEstimate"] = round_estimate(ix.selectivity()).into();
            }
        }
        description
    }

    /// The collection's indexes as a query planner sees them (primary and edge indexes are
    /// not listed: the planner knows them).
    pub fn query_indexes(&self) -> Vec<IndexInfo> {
        let meta = self.meta.read();
        let maintained = self.maintained.read();
        meta.indexes
            .iter()
            .map(|def| {
                let ix = maintained.iter().find(|ix| ix.def.id == def.id);
                let selectivity = ix.map_or(1.0, |ix| ix.selectivity());
                let mut description = def.describe(&meta.name);
                let no_estimate = def.kind == "vector"
                    || (definition::is_mdi_kind(&def.kind)
                        && !def.unique
                        && def.kind != "mdi-prefixed");
                if ix.is_some() && !no_estimate {
                    description["selectivityEstimate"] = round_estimate(selectivity).into();
                }
                IndexInfo {
                    id: def.id,
                    name: def.name.clone(),
                    kind: def.kind.clone(),
                    fields: def.fields.clone(),
                    unique: def.unique,
                    sparse: def.sparse,
                    selectivity,
                    ready: ix.is_some_and(|ix| ix.is_ready()),
                    entries: ix.map_or(0, |ix| ix.read(|cur, _| cur.len())),
                    description,
                }
            })
            .collect()
    }

    /// Waits (at most `timeout`) until every index finished building; returns whether they
    /// all did.
    pub fn wait_for_indexes(&self, timeout: std::time::Duration) -> bool {
        let list = self.maintained_indexes();
        list.iter().all(|ix| ix.wait_ready(timeout))
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Every index (`GET /_api/index?collection=…`) in creation order: the primary index,
    /// the edge index of edge collections, then user indexes.
    pub fn indexes(&self) -> Result<Vec<Value>> {
        self.check_usable()?;
        let meta = self.meta.read();
        let mut out = vec![definition::primary_description(&meta.name)];
        if meta.collection_type == CollectionType::Edge {
            out.push(definition::edge_description(&meta.name));
        }
        out.extend(
            meta.indexes
                .iter()
                .map(|d| self.describe_index(d, &meta.name)),
        );
        Ok(out)
    }

    /// One index by handle: `collection/123`, `123` or its name. Error 1212 if unknown.
    pub fn index(&self, handle: &str) -> Result<Value> {
        self.check_usable()?;
        let meta = self.meta.read();
        let (prefix, rest) = definition::parse_handle(handle);
        let not_found = || Error::new(ErrorCode::IndexNotFound);
        if prefix.is_some_and(|p| p != &*meta.name && p != self.id.to_string()) {
            return Err(not_found());
        }
        let is_edge = meta.collection_type == CollectionType::Edge;
        if rest == "primary" || rest == definition::PRIMARY_INDEX_ID.to_string() {
            return Ok(definition::primary_description(&meta.name));
        }
        if is_edge && (rest == "edge" || rest == definition::EDGE_INDEX_ID.to_string()) {
            return Ok(definition::edge_description(&meta.name));
        }
        meta.indexes
            .iter()
            .find(|d| d.name == rest || d.id.to_string() == rest)
            .map(|d| self.describe_index(d, &meta.name))
            .ok_or_else(not_found)
    }

    /// Creates an index (`POST /_api/index`). Returns its description and whether it is new:
    /// an equivalent existing index is returned with `false`. A unique persistent index is
    /// built from the current data first (400/1210 if the data violates it) and enforced on
    /// every later write. Errors: 10 invalid definitions (see the index types), a second ttl
    /// index, 1207 a name taken by a different index, 1214 an illegal name.
    ///
    /// A persistent index is registered first (so every later commit records into it) and then
    /// filled from a snapshot without holding the writer lock: writers and readers go on while
    /// a large collection is indexed; only this request waits. Queries use it once it is built.
    pub fn create_index(&self, body: &Value) -> Result<(Value, bool)> {
        self.create_index_as(body, None)
    }

    /// [`Collection::create_index`] keeping a dumped index id (`restore-indexes`): `id` is
    /// used when no index of the collection has it, a new id otherwise; later ids continue
    /// past it.
    pub fn restore_index(&self, body: &Value, id: u64) -> Result<(Value, bool)> {
        self.create_index_as(body, Some(id))
    }

    fn create_index_as(&self, body: &Value, restored_id: Option<u64>) -> Result<(Value, bool)> {
        let _changed = crate::catalog_version::CatalogChange::of(&self.settings);
        self.check_usable()?;
        // Writers wait while a unique constraint is checked, so that no commit slips in
        // between the scan and the registration.
        let writers = self.write_lock.lock();
        let next_id = {
            let meta = self.meta.read();
            match restored_id {
                Some(id)
                    if id >= FIRST_USER_INDEX_ID && !meta.indexes.iter().any(|d| d.id == id) =>
                {
                    id
                }
                _ => meta.next_index_id,
            }
        };
        let def = IndexDef::parse(body, next_id)?;
        assert_eq!(def.id, next_id, "an index takes the id it is parsed with");
        {
            let meta = self.meta.read();
            if let Some(existing) = meta.indexes.iter().find(|d| d.equivalent(&def)) {
                if body.get("name").is_none() || existing.name == def.name {
                    return Ok((existing.describe(&meta.name), false));
                }
            }
            if meta.indexes.iter().any(|d| d.name == def.name)
                || def.name == "primary"
                || def.name == "edge"
            {
                return Err(Error::with_message(
                    ErrorCode::DuplicateName,
                    format!("duplicate index name '{}'", def.name),
                ));
            }
            if def.kind == "ttl" && meta.indexes.iter().any(|d| d.kind == "ttl") {
                return Err(Error::with_message(
                    ErrorCode::BadParameter,
                    "there can only be one ttl index per collection",
                ));
            }
        }
        if def.kind == "inverted" {
            let context = self.search_context()?;
            let link = crate::indexes::inverted::link_definition(&def, &context.database)?;
            crate::indexes::inverted::check_analyzers(&link, context)?;
        }
        let unique = if def.enforces_uniqueness() {
            let index = Arc::new(UniqueIndex::new(def.uniqueness_def()));
            index.ensure_built(self.id, &self.engine.snapshot())?;
            Some(index)
        } else {
            None
        };
        {
            let mut meta = self.meta.write();
            meta.indexes.push(def.clone());
            meta.next_index_id = meta.next_index_id.max(next_id + 1);
        }
        if let Some(index) = unique {
            let mut list = self.unique_indexes.write();
            let mut next: Vec<Arc<UniqueIndex>> = list.iter().cloned().collect();
            next.push(index);
            *list = Arc::new(next);
        }
        let maintained = MaintainedIndex::new(
            &def,
            &quantizer_place(&self.settings, self.id, def.id, false),
        )
        .map(Arc::new);
        if let Some(ix) = &maintained {
            let mut list = self.maintained.write();
            let mut next: Vec<Arc<MaintainedIndex>> = list.iter().cloned().collect();
            next.push(Arc::clone(ix));
            *list = Arc::new(next);
        }
        // Taken after the registration, under the writer lock: every commit is either in
        // this snapshot or recorded by the index (or both, which is harmless).
        let snapshot = self.engine.snapshot();
        drop(writers);
        let built = match &maintained {
            Some(ix) => ix.build(self.id, &snapshot),
            None => Ok(()),
        };
        drop(snapshot);
        let opened = built
            .and_then(|()| self.persist())
            .and_then(|()| self.open_inverted_index(&def, false));
        if let Err(err) = opened {
            let _writers = self.write_lock.lock();
            self.meta.write().indexes.retain(|d| d.id != def.id);
            self.unregister_index(def.id);
            if def.kind == "inverted" {
                // The catalog may already hold the index: write it again without.
                let _ = self.persist();
            }
            return Err(err);
        }
        Ok((self.describe_index(&def, &self.name()), true))
    }

    fn unregister_index(&self, id: u64) {
        {
            let mut list = self.unique_indexes.write();
            let next: Vec<Arc<UniqueIndex>> =
                list.iter().filter(|u| u.def.id != id).cloned().collect();
            *list = Arc::new(next);
        }
        let mut list = self.maintained.write();
        let next: Vec<Arc<MaintainedIndex>> =
            list.iter().filter(|u| u.def.id != id).cloned().collect();
        *list = Arc::new(next);
    }

    /// Drops a user index by handle; returns its id (`collection/123`). Errors: 1212 unknown,
    /// 403/11 for the primary and edge indexes.
    pub fn drop_index(&self, handle: &str) -> Result<String> {
        let _changed = crate::catalog_version::CatalogChange::of(&self.settings);
        self.check_usable()?;
        let description = self.index(handle)?;
        let kind = description["type"].as_str().unwrap_or("");
        if kind == "primary" || kind == "edge" {
            return Err(Error::with_message(
                ErrorCode::Forbidden,
                "cannot drop the primary or edge index",
            ));
        }
        let id_text = description["id"].as_str().unwrap_or("").to_string();
        let id = id_text
            .rsplit('/')
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| Error::new(ErrorCode::IndexNotFound))?;
        let _writers = self.write_lock.lock();
        let removed = {
            let mut meta = self.meta.write();
            let position = meta
                .indexes
                .iter()
                .position(|d| d.id == id)
                .ok_or_else(|| Error::new(ErrorCode::IndexNotFound))?;
            meta.indexes.remove(position)
        };
        if let Err(err) = self.persist() {
            self.meta.write().indexes.push(removed);
            return Err(err);
        }
        self.unregister_index(id);
        if removed.kind == "inverted" {
            self.close_inverted_index(id);
        }
        if removed.kind == "vector" {
            if let Some(path) = quantizer_place(&self.settings, self.id, id, false).path {
                remove_quietly(&path, |p| std::fs::remove_file(p));
            }
        }
        Ok(id_text)
    }

    /// Removes the documents whose ttl timestamp plus `expireAfter` is not after `now`
    /// (seconds), at most `limit`; returns how many were removed. Nothing without a ttl index.
    pub(crate) fn expire_ttl(self: &Arc<Self>, now: f64, limit: usize) -> Result<usize> {
        let (field, expire_after) = {
            let meta = self.meta.read();
            let Some(def) = meta.indexes.iter().find(|d| d.kind == "ttl") else {
                return Ok(0);
            };
            let expire_after = def
                .extra
                .get("expireAfter")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            let Some(field) = def.fields.first() else {
                return Ok(0);
            };
            (field.clone(), expire_after)
        };
        self.check_usable()?;
        let path: Vec<&str> = field.split('.').collect();
        let mut victims = Vec::new();
        for item in self.engine.snapshot().scan(self.id)? {
            let (key, doc) = item?;
            let Ok(map) = serde_json::from_slice::<Map<String, Value>>(&doc.body) else {
                continue;
            };
            let mut value = map.get(path[0]);
            for part in &path[1..] {
                value = value.and_then(|v| v.get(*part));
            }
            let expired = value
                .and_then(crate::indexes::ttl::timestamp_seconds)
                .is_some_and(|ts| ts + expire_after <= now);
            if expired {
                victims.push(json!({"_key": key, "_rev": doc.rev.encode()}));
                if victims.len() >= limit {
                    break;
                }
            }
        }
        if victims.is_empty() {
            return Ok(0);
        }
        let opts = WriteOptions {
            ignore_revs: false,
            ..WriteOptions::new()
        };
        let results = self.remove_many(&victims, &opts)?.wait()?;
        Ok(results.iter().filter(|r| r.is_ok()).count())
    }

    pub(crate) fn compiled_schema(&self) -> Option<Arc<Schema>> {
        self.meta.read().compiled_schema.clone()
    }

    /// Whether the collection was dropped (handles outlive drops).
    pub fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    pub(crate) fn mark_dropped(&self) {
        self.dropped.store(true, Ordering::Release);
        // Its inverted indexes go with it.
        let inverted: Vec<Arc<InvertedIndex>> = std::mem::take(&mut *self.inverted.write());
        for ix in inverted {
            ix.drop_index(&self.views);
        }
        remove_quietly(
            &self.settings.inverted_directory.join(self.id.to_string()),
            |p| std::fs::remove_dir_all(p),
        );
        // The trained quantizers of its vector indexes go with it.
        let dir = self.settings.vector_directory.join(self.id.to_string());
        remove_quietly(&dir, |p| std::fs::remove_dir_all(p));
    }

    /// Sets the database's analyzers and name and opens the collection's inverted indexes,
    /// each caught up with (or rebuilt from) the collection in the background (start-up, new
    /// collection).
    pub(crate) fn open_search(&self, context: SearchContext) {
        if self.search_context.set(context).is_err() || self.status.is_some() {
            return;
        }
        let defs: Vec<IndexDef> = self
            .meta
            .read()
            .indexes
            .iter()
            .filter(|d| d.kind == "inverted")
            .cloned()
            .collect();
        for def in defs {
            if let Err(err) = self.open_inverted_index(&def, true) {
                tracing::error!(
                    "inverted index {} of collection {} could not be opened: {}",
                    def.name,
                    self.name(),
                    err.message
                );
            }
        }
    }

    fn search_context(&self) -> Result<&SearchContext> {
        self.search_context.get().ok_or_else(|| {
            Error::with_message(
                ErrorCode::Internal,
                "inverted indexes need the collection's database",
            )
        })
    }

    /// Opens inverted index `def` (nothing for other types); `reopening`: it existed before
    /// (start-up), so what its directory holds is caught up rather than rebuilt.
    fn open_inverted_index(&self, def: &IndexDef, reopening: bool) -> Result<()> {
        if def.kind != "inverted" {
            return Ok(());
        }
        let dir = self
            .settings
            .inverted_directory
            .join(self.id.to_string())
            .join(def.id.to_string());
        let ix = InvertedIndex::open(
            dir,
            self.id,
            def,
            self.search_context()?,
            &self.engine,
            &self.views,
            reopening,
        )?;
        self.inverted.write().push(ix);
        Ok(())
    }

    fn close_inverted_index(&self, id: u64) {
        let removed: Vec<Arc<InvertedIndex>> = {
            let mut list = self.inverted.write();
            let (gone, kept) = std::mem::take(&mut *list)
                .into_iter()
                .partition(|ix| ix.id == id);
            *list = kept;
            gone
        };
        for ix in removed {
            ix.drop_index(&self.views);
        }
    }

    /// The open inverted index named `name_or_id` (its name or numeric id).
    pub(crate) fn inverted_index(&self, name_or_id: &str) -> Option<Arc<InvertedIndex>> {
        self.inverted
            .read()
            .iter()
            .find(|ix| ix.name == name_or_id || ix.id.to_string() == name_or_id)
            .cloned()
    }

    /// The open inverted index with id `id`.
    pub(crate) fn inverted_index_by_id(&self, id: u64) -> Option<Arc<InvertedIndex>> {
        self.inverted.read().iter().find(|ix| ix.id == id).cloned()
    }

    /// The keys of the documents inverted index `id` finds for `query` (conditions without an
    /// analyzer take the field's analyzer of the definition); with `read`, in the order of the
    /// index's primary sort and cut to its limit (`ViewIndex::search_sorted`); with
    /// `wait_for_sync` after every write acknowledged before the call is searchable. 1212 for
    /// an unknown index.
    pub fn search_inverted_index(
        &self,
        id: u64,
        query: &quiver_search::index::SearchQuery,
        read: Option<&quiver_search::index::SortedRead>,
        wait_for_sync: bool,
    ) -> Result<Vec<String>> {
        let Some(ix) = self.inverted_index_by_id(id) else {
            return Err(Error::with_message(
                ErrorCode::IndexNotFound,
                format!(
                    "inverted index {id} of collection '{}' not found",
                    self.name()
                ),
            ));
        };
        let hits = match read {
            None => ix.search(query, &[], wait_for_sync)?,
            Some(read) => ix.search_sorted(query, &[], read, wait_for_sync)?,
        };
        Ok(hits.into_iter().map(|hit| hit.key).collect())
    }

    /// Every open inverted index.
    pub(crate) fn open_inverted_indexes(&self) -> Vec<Arc<InvertedIndex>> {
        self.inverted.read().clone()
    }

    /// Stops the inverted indexes' indexers after they committed what they hold (shutdown).
    pub(crate) fn stop_search(&self) {
        for ix in self.inverted.read().iter() {
            ix.stop();
        }
    }

    /// Ok when the collection can be used: 1203 after a drop, the engine's error (e.g. 1002
    /// corrupted collection) when its files failed to load.
    pub fn check_usable(&self) -> Result<()> {
        if self.is_dropped() {
            return Err(Error::new(ErrorCode::DataSourceNotFound));
        }
        if let Some(err) = &self.status {
            return Err(err.clone());
        }
        Ok(())
    }

    pub(crate) fn set_name(&self, name: &str) {
        let mut meta = self.meta.write();
        meta.name = Arc::from(name);
        meta.escaped_name = Arc::from(escape_json_inner(name));
    }

    pub(crate) fn next_revision(&self) -> Revision {
        self.engine.hlc().next()
    }

    /// The revision of a write: `given` (a restored document's dumped `_rev`, restore mode
    /// only) unless it is the revision of the version being replaced — one revision names one
    /// version of a key, which the secondary indexes rely on — otherwise a new one. The clock
    /// is raised past a given revision, so later writes get larger ones.
    pub(crate) fn revision_for(
        &self,
        given: Option<Revision>,
        replaced: Option<Revision>,
    ) -> Revision {
        match given {
            Some(rev) if rev.0 != 0 && Some(rev) != replaced => {
                self.engine.hlc().observe(rev);
                rev
            }
            _ => self.next_revision(),
        }
    }

    /// Writes the catalog entry (options, meta and the durable key generator reservation).
    pub(crate) fn persist(&self) -> Result<()> {
        self.persist_reservation(0).map(|_| ())
    }

    /// Writes the catalog entry with a key reservation of at least `target`; returns the
    /// reservation now durable. Serialized and monotonic: a smaller request never overwrites
    /// a larger reservation already written.
    fn persist_reservation(&self, target: u64) -> Result<u64> {
        let _serial = self.persist_lock.lock();
        let reserved = target.max(self.durable_reserved.load(Ordering::Acquire));
        let meta = self.meta.read().to_json(reserved);
        self.engine
            .update_collection(self.id, self.storage_options(), meta)?;
        self.durable_reserved.store(reserved, Ordering::Release);
        Ok(reserved)
    }

    /// Acts on what the key generator asked for. A required reservation is written while the
    /// generator lock is held (no key beyond the durable reservation may be handed out); a
    /// refill runs on a short-lived thread so that writers never wait for the catalog fsyncs.
    fn handle_reservation(
        self: &Arc<Self>,
        keygen: &mut parking_lot::MutexGuard<'_, KeyGenState>,
        reservation: Reservation,
    ) -> Result<()> {
        match reservation {
            Reservation::Unchanged => Ok(()),
            Reservation::Required(target) => {
                let reserved = self.persist_reservation(target)?;
                keygen.reserved_up_to(reserved);
                Ok(())
            }
            Reservation::Refill(target) => {
                let coll = Arc::clone(self);
                let spawned = std::thread::Builder::new()
                    .name("quiver-keygen".into())
                    .spawn(move || {
                        let result = coll.persist_reservation(target);
                        let mut keygen = coll.keygen.lock();
                        keygen.refill_pending = false;
                        match result {
                            Ok(reserved) => keygen.reserved_up_to(reserved),
                            Err(err) if !coll.is_dropped() => {
                                tracing::warn!(%err, "refilling the key reservation failed")
                            }
                            Err(_) => {}
                        }
                    });
                if spawned.is_err() {
                    keygen.refill_pending = false;
                }
                Ok(())
            }
        }
    }

    pub(crate) fn generate_key(self: &Arc<Self>) -> Result<String> {
        let mut keygen = self.keygen.lock();
        let (key, reservation) = keygen.generate()?;
        self.handle_reservation(&mut keygen, reservation)?;
        Ok(key)
    }

    pub(crate) fn track_key(self: &Arc<Self>, key: &str) -> Result<()> {
        let mut keygen = self.keygen.lock();
        let reservation = keygen.track(key);
        self.handle_reservation(&mut keygen, reservation)
    }

    /// Sets the key generator's last value to at least `last_value` (arangorestore's
    /// `keyOptions.lastValue`), persisting a reservation beyond it when needed. Error 1203
    /// after a drop.
    pub fn restore_key_generator(self: &Arc<Self>, last_value: u64) -> Result<()> {
        self.check_usable()?;
        let mut keygen = self.keygen.lock();
        let reservation = keygen.raise_last(last_value);
        self.handle_reservation(&mut keygen, reservation)
    }

    /// Called after a write of revision `rev`, committed at `tick`, became visible.
    pub(crate) fn note_revision(&self, rev: Revision, tick: u64) {
        self.last_revision.fetch_max(rev.0, Ordering::AcqRel);
        self.data_version.written(tick);
    }

    /// The commit tick of the newest write to this collection through this handle (0: none
    /// yet); a snapshot whose tick is at least this saw every write (see
    /// [`crate::data_version`]).
    pub fn data_version(&self) -> u64 {
        self.data_version.get()
    }

    fn last_key_value(&self) -> u64 {
        self.keygen.lock().last
    }

    // ----- descriptions -----

    /// The basic description of §4.1: `id`, `name`, `status`, `type`, `isSystem`,
    /// `globallyUniqueId`.
    pub fn basic_info(&self) -> Value {
        let meta = self.meta.read();
        json!({
            "id": self.id.to_string(),
            "name": &*meta.name,
            "status": 3,
            "type": meta.collection_type.number(),
            "isSystem": meta.is_system,
            "globallyUniqueId": meta.globally_unique_id,
        })
    }

    /// The properties object of §4.1 (basic info plus `statusString`, `waitForSync`,
    /// `keyOptions`, `schema`, `computedValues`, `journalSize`, `doCompact`, …).
    pub fn properties(&self) -> Value {
        let last_value = self.last_key_value();
        let options = self.storage_options();
        let meta = self.meta.read();
        json!({
            "id": self.id.to_string(),
            "name": &*meta.name,
            "status": 3,
            "statusString": "loaded",
            "type": meta.collection_type.number(),
            "isSystem": meta.is_system,
            "globallyUniqueId": meta.globally_unique_id,
            "waitForSync": options.wait_for_sync,
            "keyOptions": meta.key_options.to_json(last_value),
            "schema": meta.schema,
            "computedValues": meta.computed_values,
            "cacheEnabled": meta.cache_enabled,
            "syncByRevision": true,
            "usesRevisionsAsDocumentIds": true,
            "isSmartChild": false,
            "isDisjoint": false,
            "internalValidatorType": 0,
            "writeConcern": 1,
            "objectId": self.id.to_string(),
            "journalSize": options.journal_size.unwrap_or(self.settings.default_journal_size),
            "doCompact": options.do_compact,
            "isVolatile": false,
        })
    }

    /// Changes properties (`PUT /_api/collection/{c}/properties`): `waitForSync`,
    /// `journalSize` (within the engine's bounds, new journals only), `doCompact`, `cacheEnabled`, `schema`
    /// (`null`/`{}` removes), `computedValues` (`null`/`[]` clears). Other attributes are
    /// ignored. Errors: 10 for wrong types or a too small journal size, 1621 for a bad schema,
    /// 1203 after a drop. Returns the new properties.
    pub fn set_properties(&self, body: &Value) -> Result<Value> {
        self.check_usable()?;
        let Value::Object(object) = body else {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                "properties must be an object",
            ));
        };
        let wait_for_sync = bool_attr(object, "waitForSync")?;
        let do_compact = bool_attr(object, "doCompact")?;
        let cache_enabled = bool_attr(object, "cacheEnabled")?;
        let journal_size = journal_size_attr(object)?;
        let schema = match object.get("schema") {
            Some(value) => Some(parse_schema(Some(value))?),
            None => None,
        };
        let computed = match object.get("computedValues") {
            Some(value) => Some(parse_computed_values(Some(value))?),
            None => None,
        };
        if let Some(values) = &computed {
            computed::check_expressions(values.as_ref(), self.settings.evaluator.read().as_ref())?;
        }
        let apply = |meta: &mut CollectionMeta| {
            if let Some(v) = cache_enabled {
                meta.cache_enabled = v;
            }
            if let Some(v) = &schema {
                meta.compiled_schema = compile_schema(v);
                meta.schema = v.clone();
            }
            if let Some(v) = &computed {
                meta.compiled_computed = compile_computed(v);
                meta.computed_values = v.clone();
            }
        };
        {
            // The engine validates the storage options (journalSize bounds) and stores both;
            // only what it accepted takes effect here.
            let _serial = self.persist_lock.lock();
            let mut options = self.storage_options();
            if let Some(v) = wait_for_sync {
                options.wait_for_sync = v;
            }
            if let Some(v) = do_compact {
                options.do_compact = v;
            }
            if let Some(v) = journal_size {
                options.journal_size = Some(v);
            }
            let mut candidate = self.meta.read().clone();
            apply(&mut candidate);
            let reserved = self.durable_reserved.load(Ordering::Acquire);
            self.engine
                .update_collection(self.id, options, candidate.to_json(reserved))?;
            apply(&mut self.meta.write());
        }
        Ok(self.properties())
    }

    // ----- statistics -----

    /// Number of documents.
    pub fn count(&self) -> Result<u64> {
        self.check_usable()?;
        self.engine.snapshot().count(self.id)
    }

    /// ArangoDB's `figures` object (MMFiles shape: `alive`, `dead`, `datafiles`, `journals`,
    /// `compactors`, `revisions`, `indexes`, `lastTick`, `uncollectedLogfileEntries`,
    /// `documentReferences`, `waitingFor`, `compactionStatus`, plus the RocksDB-era
    /// `documentsSize`, `cacheInUse`, `cacheSize`, `cacheUsage`).
    pub fn figures(&self) -> Result<Value> {
        self.check_usable()?;
        let f = self.engine.figures(self.id)?;
        let index_count = {
            let meta = self.meta.read();
            1 + usize::from(meta.collection_type == CollectionType::Edge) + meta.indexes.len()
        };
        // The edge index's own bytes (its structure, not allocator overhead).
        let edge_index_size = self
            .edge_index
            .as_ref()
            .map_or(0, |index| index.stats().memory_bytes as u64);
        Ok(json!({
            "alive": {"count": f.alive_count, "size": f.alive_size},
            "dead": {"count": f.dead_count, "size": f.dead_size, "deletion": f.dead_deletion},
            "datafiles": {"count": f.datafiles.count, "fileSize": f.datafiles.file_size},
            "journals": {"count": f.journals.count, "fileSize": f.journals.file_size},
            "compactors": {"count": f.compactors.count, "fileSize": f.compactors.file_size},
            "revisions": {"count": f.alive_count, "size": f.alive_size},
            "indexes": {"count": index_count, "size": f.index_memory + edge_index_size},
            "documentReferences": 0,
            "waitingFor": "-",
            "compactionStatus": {"message": f.compaction_status, "time": chrono_free_now()},
            "lastTick": f.last_tick,
            "uncollectedLogfileEntries": f.uncollected_logfile_entries,
            "journalSize": f.journal_size,
            "documentsSize": f.alive_size,
            "cacheInUse": false,
            "cacheSize": 0,
            "cacheUsage": 0,
        }))
    }

    /// The collection's revision: the highest revision written to it (ArangoDB reports it as
    /// a string via [`Revision::encode`]). Computed by one scan the first time after a
    /// restart, then tracked.
    pub fn revision(&self) -> Result<Revision> {
        self.check_usable()?;
        let known = self.last_revision.load(Ordering::Acquire);
        if known != 0 {
            return Ok(Revision(known));
        }
        let mut max = 0u64;
        for item in self.engine.snapshot().scan(self.id)? {
            let (_, doc) = item?;
            max = max.max(doc.rev.0);
        }
        self.last_revision.fetch_max(max, Ordering::AcqRel);
        Ok(Revision(self.last_revision.load(Ordering::Acquire)))
    }

    /// [`Collection::revision`] as the HTTP API reports it: the encoded revision, `"0"` for a
    /// collection that was never written.
    pub fn revision_string(&self) -> Result<String> {
        let rev = self.revision()?;
        Ok(if rev.0 == 0 {
            "0".to_string()
        } else {
            rev.encode()
        })
    }

    /// ArangoDB's collection checksum: an XOR over all documents of a hash of the key, plus
    /// the revision when `with_revisions`, plus the user attributes when `with_data`. "0" for
    /// an empty collection. Returns the checksum (decimal string) and the revision.
    pub fn checksum(&self, with_revisions: bool, with_data: bool) -> Result<(String, Revision)> {
        self.check_usable()?;
        let snapshot = self.engine.snapshot();
        let mut total = 0u64;
        for item in snapshot.scan(self.id)? {
            let (key, doc) = item?;
            let mut hash = fnv1a(FNV_OFFSET, key.as_bytes());
            if with_revisions {
                hash = fnv1a(hash, doc.rev.encode().as_bytes());
            }
            if with_data {
                let mut map = decode_stored(&doc.body)?;
                for system in ["_key", "_id", "_rev", "_from", "_to"] {
                    if let Some(value) = map.shift_remove(system) {
                        if system == "_from" || system == "_to" {
                            hash = fnv1a(hash, value.as_str().unwrap_or("").as_bytes());
                        }
                    }
                }
                hash ^= canonical_hash(&Value::Object(map));
            }
            // Never let a single document hash to 0, so a non-empty collection never reports
            // the empty collection's "0".
            total ^= hash.max(1);
        }
        if total == 0 && snapshot.count(self.id)? > 0 {
            total = 1;
        }
        let revision = self.revision()?;
        Ok((total.to_string(), revision))
    }

    // ----- maintenance -----

    /// Removes every document atomically. Returns once visible; wait on the result for
    /// durability.
    pub fn truncate(&self, wait_for_sync: bool) -> Result<Committed<()>> {
        self.check_usable()?;
        let guard = self.write_lock.lock();
        if let Some(index) = &self.edge_index {
            index.wait_ready()?;
            index.begin_truncate();
        }
        // The engine joins the collection's waitForSync to the request's.
        let ticket = match self.engine.truncate(self.id, wait_for_sync) {
            Ok(ticket) => ticket,
            Err(err) => {
                if let Some(index) = &self.edge_index {
                    index.end_truncate(None, self.engine.horizon());
                }
                return Err(err);
            }
        };
        for index in self.maintained_indexes().iter() {
            index.truncate(ticket.tick);
        }
        if let Some(index) = &self.edge_index {
            index.end_truncate(Some(ticket.tick), self.engine.horizon());
        }
        for index in self.unique_indexes().iter() {
            index.truncated();
        }
        if !self.views.is_empty() {
            let change = crate::view_feed::Change::RemoveAll {
                collection: self.id,
                tick: Some(ticket.tick),
            };
            for feed in self.views.feeds() {
                feed.changes(vec![change.clone()]);
            }
        }
        self.note_revision(self.engine.hlc().next(), ticket.tick);
        drop(guard);
        Ok(Committed::new((), Some(ticket), || wait_for_sync))
    }

    /// Compacts the collection's datafiles now.
    pub fn compact(&self) -> Result<CompactionReport> {
        self.check_usable()?;
        self.engine.compact(self.id)
    }

    // ----- reads -----

    /// A document as response-ready JSON (`_key`, `_id`, `_rev`, …) with its revision,
    /// without parsing it. `if_match` (an `If-Match` value: bare, `"…"` or `'…'`) must equal
    /// the stored revision. Errors: 1202 not found; 412/1200 with `_id`,`_key`,`_rev` on a
    /// mismatch; 1221 for an illegal key; 1203 after a drop. `If-None-Match` is the caller's
    /// comparison of the returned revision.
    pub fn get_raw(&self, key: &str, if_match: Option<&str>) -> Result<(Revision, Bytes)> {
        self.check_usable()?;
        if quiver_types::validate_key(key).is_err() {
            return Err(Error::new(ErrorCode::DocumentNotFound));
        }
        let doc = self
            .engine
            .snapshot()
            .get(self.id, key)?
            .ok_or_else(|| Error::new(ErrorCode::DocumentNotFound))?;
        if let Some(expected) = if_match {
            if !revision_matches(expected, doc.rev) {
                return Err(revision_conflict(&self.name(), key, doc.rev));
            }
        }
        Ok((doc.rev, splice_id(&doc.body, key, &self.escaped_name())))
    }

    /// A document as a JSON value with `_id`; errors as [`Collection::get_raw`].
    pub fn get(&self, key: &str, if_match: Option<&str>) -> Result<Value> {
        let (_, raw) = self.get_raw(key, if_match)?;
        serde_json::from_slice(&raw)
            .map_err(|e| Error::with_message(ErrorCode::CorruptedDatafile, e.to_string()))
    }

    /// Reads many documents from one snapshot (`PUT /_api/document/{c}?onlyget=true`). Each
    /// item is a key, a `collection/key` handle or an object with `_key` (and `_rev`, checked
    /// when `ignore_revs` is false). Per-item errors: 1202 missing, 1200 revision mismatch,
    /// 1205/1221 malformed item.
    pub fn get_many(&self, items: &[Value], ignore_revs: bool) -> Result<Vec<Result<Value>>> {
        self.check_usable()?;
        let snapshot = self.engine.snapshot();
        let name = self.name();
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let one = || -> Result<Value> {
                let (key, rev) = item_key(item)?;
                let doc = snapshot
                    .get(self.id, &key)?
                    .ok_or_else(|| Error::new(ErrorCode::DocumentNotFound))?;
                if let (false, Some(expected)) = (ignore_revs, rev.as_deref()) {
                    if !revision_matches(expected, doc.rev) {
                        return Err(revision_conflict(&name, &key, doc.rev));
                    }
                }
                decode_with_id(&doc.body, &name, &key)
            };
            out.push(one());
        }
        Ok(out)
    }
}

/// The current time as ArangoDB prints it in `compactionStatus.time`, without a date library.
fn chrono_free_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a: a tiny, stable hash. The checksum must be identical across restarts and builds,
/// which rules out std's randomly seeded hasher; no dependency is needed for 6 lines.
fn fnv1a(mut hash: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        hash ^= b as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// A hash of a JSON value that ignores attribute order (objects hash as the XOR of their
/// members), so equal documents give equal checksums however they were written.
fn canonical_hash(value: &Value) -> u64 {
    match value {
        Value::Object(map) => {
            let mut acc = fnv1a(FNV_OFFSET, b"{");
            for (k, v) in map {
                acc ^= fnv1a(canonical_hash(v), k.as_bytes());
            }
            acc
        }
        Value::Array(items) => {
            let mut acc = fnv1a(FNV_OFFSET, b"[");
            for item in items {
                acc = fnv1a(acc, &canonical_hash(item).to_le_bytes());
            }
            acc
        }
        other => fnv1a(FNV_OFFSET, other.to_string().as_bytes()),
    }
}

/// Estimates are reported with a few digits, as ArangoDB's are.
fn round_estimate(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}
