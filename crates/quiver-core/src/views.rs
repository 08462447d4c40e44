//! ArangoSearch views of one database: their catalog (properties and links per collection,
//! persisted in the database's catalog entry), their indexes under the data directory
//! (`views/<database id>-<view id>`) and their feeds. A new link's documents are indexed from
//! its collection; a view reopened at startup is caught up with its linked collections from
//! what its last index commit covers, or rebuilt when that does not add up (`view_feed.rs`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use quiver_search::index::{
    AnalyzerSource, Consolidation, Hit, LinkDefinition, ScoreOrder, Scorer, SearchQuery,
    SortedRead, StoredColumns, TierOptions,
};
use quiver_storage::CollectionId;
use quiver_types::validate_view_name;
use serde_json::{json, Map, Value};

use crate::indexes::inverted::{normalize_analyzer, InvertedIndex};
use crate::search_alias::{self, AliasIndexes, SEARCH_ALIAS};
use crate::view_feed::ViewFeed;
use crate::view_host::ViewHost;

/// The view types this server knows.
pub const ARANGOSEARCH: &str = "arangosearch";

/// The mutable and immutable settings of an arangosearch view (without its links).
#[derive(Clone, Debug, PartialEq)]
struct Settings {
    commit_interval_msec: u64,
    consolidation_interval_msec: u64,
    cleanup_interval_step: u64,
    consolidation_policy: Value,
    primary_sort: Value,
    primary_sort_compression: String,
    stored_values: Value,
    writebuffer_active: u64,
    writebuffer_idle: u64,
    writebuffer_size_max: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            commit_interval_msec: 1000,
            consolidation_interval_msec: 1000,
            cleanup_interval_step: 2,
            consolidation_policy: default_policy(),
            primary_sort: json!([]),
            primary_sort_compression: "lz4".into(),
            stored_values: json!([]),
            writebuffer_active: 0,
            writebuffer_idle: 64,
            writebuffer_size_max: 33_554_432,
        }
    }
}

fn default_policy() -> Value {
    json!({"type": "tier", "segmentsBytesFloor": 2097152, "segmentsBytesMax": 5368709120u64,
           "segmentsMax": 10, "segmentsMin": 1, "minScore": 0})
}

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message)
}

fn number(obj: &Map<String, Value>, name: &str, into: &mut u64) -> Result<()> {
    match obj.get(name) {
        None | Some(Value::Null) => Ok(()),
        Some(v) => match v.as_u64() {
            Some(n) => {
                *into = n;
                Ok(())
            }
            None => Err(bad(format!("'{name}' must be a non-negative integer"))),
        },
    }
}

impl Settings {
    /// Applies the mutable settings of `obj` over `self`; with `creating`, the immutable ones
    /// too (primarySort, storedValues, write buffers).
    fn apply(&mut self, obj: &Map<String, Value>, creating: bool) -> Result<()> {
        number(obj, "commitIntervalMsec", &mut self.commit_interval_msec)?;
        number(
            obj,
            "consolidationIntervalMsec",
            &mut self.consolidation_interval_msec,
        )?;
        number(obj, "cleanupIntervalStep", &mut self.cleanup_interval_step)?;
        if let Some(policy) = obj.get("consolidationPolicy").filter(|v| !v.is_null()) {
            self.consolidation_policy = parse_policy(policy)?;
        }
        if !creating {
            return Ok(());
        }
        if let Some(sort) = obj.get("primarySort").filter(|v| !v.is_null()) {
            let Some(list) = sort.as_array() else {
                return Err(bad("'primarySort' must be an array"));
            };
            let mut out = Vec::with_capacity(list.len());
            for item in list {
                let field = item.get("field").and_then(Value::as_str);
                let asc = match (
                    item.get("asc"),
                    item.get("direction").and_then(Value::as_str),
                ) {
                    (Some(Value::Bool(b)), _) => *b,
                    (_, Some(d)) if d.eq_ignore_ascii_case("asc") => true,
                    (_, Some(d)) if d.eq_ignore_ascii_case("desc") => false,
                    _ => {
                        return Err(bad(
                            "'primarySort' entries need 'field' and 'asc' or 'direction'",
                        ))
                    }
                };
                let Some(field) = field else {
                    return Err(bad(
                        "'primarySort' entries need 'field' and 'asc' or 'direction'",
                    ));
                };
                out.push(json!({"field": field, "asc": asc}));
            }
            self.primary_sort = Value::Array(out);
        }
        if let Some(c) = obj.get("primarySortCompression").filter(|v| !v.is_null()) {
            match c.as_str() {
                Some(s @ ("lz4" | "none")) => self.primary_sort_compression = s.to_string(),
                _ => return Err(bad("'primarySortCompression' must be \"lz4\" or \"none\"")),
            }
        }
        if let Some(stored) = obj.get("storedValues").filter(|v| !v.is_null()) {
            let Some(list) = stored.as_array() else {
                return Err(bad("'storedValues' must be an array"));
            };
            let mut out = Vec::with_capacity(list.len());
            for item in list {
                let fields = match item {
                    Value::Array(_) => item.clone(),
                    Value::Object(o) => o.get("fields").cloned().unwrap_or(json!([])),
                    _ => return Err(bad("'storedValues' entries must be arrays or objects")),
                };
                let compression = item
                    .get("compression")
                    .and_then(Value::as_str)
                    .unwrap_or("lz4");
                out.push(json!({"fields": fields, "compression": compression}));
            }
            self.stored_values = Value::Array(out);
        }
        number(obj, "writebufferActive", &mut self.writebuffer_active)?;
        number(obj, "writebufferIdle", &mut self.writebuffer_idle)?;
        number(obj, "writebufferSizeMax", &mut self.writebuffer_size_max)?;
        Ok(())
    }

    fn to_json(&self, out: &mut Map<String, Value>) {
        out.insert(
            "cleanupIntervalStep".into(),
            json!(self.cleanup_interval_step),
        );
        out.insert(
            "commitIntervalMsec".into(),
            json!(self.commit_interval_msec),
        );
        out.insert(
            "consolidationIntervalMsec".into(),
            json!(self.consolidation_interval_msec),
        );
        out.insert(
            "consolidationPolicy".into(),
            self.consolidation_policy.clone(),
        );
        out.insert("primarySort".into(), self.primary_sort.clone());
        out.insert(
            "primarySortCompression".into(),
            json!(self.primary_sort_compression),
        );
        out.insert("storedValues".into(), self.stored_values.clone());
        out.insert("writebufferActive".into(), json!(self.writebuffer_active));
        out.insert("writebufferIdle".into(), json!(self.writebuffer_idle));
        out.insert(
            "writebufferSizeMax".into(),
            json!(self.writebuffer_size_max),
        );
    }

    /// The merge policy of the index: `consolidationIntervalMsec` 0 turns merges off; a tier
    /// policy is ArangoDB's with its five parameters; `bytes_accum` merges as the default
    /// tier policy.
    fn consolidation(&self) -> Consolidation {
        if self.consolidation_interval_msec == 0 {
            return Consolidation::Off;
        }
        let mut options = TierOptions::default();
        let policy = &self.consolidation_policy;
        if policy.get("type").and_then(Value::as_str) == Some("tier") {
            let number = |name: &str| policy.get(name).and_then(Value::as_u64);
            if let Some(n) = number("segmentsMin") {
                options.segments_min = n as usize;
            }
            if let Some(n) = number("segmentsMax") {
                options.segments_max = n as usize;
            }
            if let Some(n) = number("segmentsBytesMax") {
                options.segments_bytes_max = n;
            }
            if let Some(n) = number("segmentsBytesFloor") {
                options.segments_bytes_floor = n;
            }
            if let Some(n) = number("minScore") {
                options.min_score = n as f64;
            }
        }
        Consolidation::Tiered(options)
    }
}

fn parse_policy(policy: &Value) -> Result<Value> {
    let Some(obj) = policy.as_object() else {
        return Err(bad("'consolidationPolicy' must be an object"));
    };
    match obj.get("type").and_then(Value::as_str).unwrap_or("tier") {
        "tier" => {
            let mut out = default_policy();
            for name in [
                "segmentsBytesFloor",
                "segmentsBytesMax",
                "segmentsMax",
                "segmentsMin",
                "minScore",
            ] {
                if let Some(v) = obj.get(name).filter(|v| !v.is_null()) {
                    if v.as_u64().is_none() {
                        return Err(bad(format!(
                            "consolidation policy '{name}' must be a non-negative integer"
                        )));
                    }
                    out[name] = v.clone();
                }
            }
            Ok(out)
        }
        "bytes_accum" => {
            let threshold = obj.get("threshold").cloned().unwrap_or(json!(0));
            match threshold.as_f64() {
                Some(t) if (0.0..=1.0).contains(&t) => {
                    Ok(json!({"type": "bytes_accum", "threshold": threshold}))
                }
                _ => Err(bad("consolidation policy 'threshold' must be in [0, 1]")),
            }
        }
        other => Err(bad(format!("unknown consolidation policy type '{other}'"))),
    }
}

/// One view: an arangosearch view or a search-alias view.
pub struct View {
    id: u64,
    name: RwLock<String>,
    globally_unique_id: String,
    kind: ViewKind,
    analyzers: Arc<dyn AnalyzerSource>,
    dropped: AtomicBool,
}

enum ViewKind {
    /// An arangosearch view: its own index, fed through its links.
    Search(Box<SearchParts>),
    /// A search-alias view: inverted indexes of collections.
    Alias(AliasIndexes),
}

/// What an arangosearch view holds.
struct SearchParts {
    settings: RwLock<Settings>,
    links: RwLock<BTreeMap<CollectionId, LinkDefinition>>,
    feed: Arc<ViewFeed>,
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View")
            .field("id", &self.id)
            .field("name", &*self.name.read())
            .finish_non_exhaustive()
    }
}

impl View {
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn name(&self) -> String {
        self.name.read().clone()
    }

    pub fn view_type(&self) -> &'static str {
        match self.kind {
            ViewKind::Search(_) => ARANGOSEARCH,
            ViewKind::Alias(_) => SEARCH_ALIAS,
        }
    }

    fn parts(&self) -> Option<&SearchParts> {
        match &self.kind {
            ViewKind::Search(parts) => Some(parts),
            ViewKind::Alias(_) => None,
        }
    }

    /// `{globallyUniqueId, id, name, type}` as `/_api/view` lists views.
    pub fn basic_json(&self) -> Value {
        json!({"globallyUniqueId": self.globally_unique_id, "id": self.id.to_string(),
               "name": self.name(), "type": self.view_type()})
    }

    /// The linked collections' ids (for a search-alias view: the collections of its indexes).
    pub fn linked_collections(&self) -> Vec<CollectionId> {
        match &self.kind {
            ViewKind::Search(parts) => parts.links.read().keys().copied().collect(),
            ViewKind::Alias(indexes) => indexes.collections(),
        }
    }

    /// Every analyzer name a link (or an index) of this view uses.
    pub fn analyzer_names(&self) -> Vec<String> {
        let parts = match &self.kind {
            ViewKind::Search(parts) => parts,
            ViewKind::Alias(indexes) => return indexes.analyzer_names(),
        };
        let mut out = Vec::new();
        for link in parts.links.read().values() {
            for name in link.analyzer_names() {
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        out
    }

    /// Finds the documents matching `query` in the linked collections (restricted to
    /// `collections` when given), each with one score per scorer. With `wait_for_sync`, first
    /// waits until every write acknowledged before the call is searchable.
    pub fn search(
        &self,
        query: &SearchQuery,
        collections: Option<&[CollectionId]>,
        scorers: &[Scorer],
        wait_for_sync: bool,
    ) -> Result<Vec<Hit>> {
        if self.dropped.load(Ordering::Acquire) {
            return Err(Error::new(ErrorCode::DataSourceNotFound));
        }
        let parts = match &self.kind {
            ViewKind::Search(parts) => parts,
            ViewKind::Alias(indexes) => {
                return indexes.search(query, collections, scorers, wait_for_sync)
            }
        };
        if wait_for_sync {
            parts.feed.wait_synced()?;
        }
        parts
            .feed
            .index
            .search(query, collections, scorers, &*self.analyzers)
    }

    /// The first `k` documents [`View::search`] gives once sorted (stably) by `order` over
    /// `scorers`, in that order. Each index keeps its best `k` and reads only their
    /// identities (a search-alias view merges its indexes' best, `AliasIndexes::search_top`).
    pub fn search_top(
        &self,
        query: &SearchQuery,
        collections: Option<&[CollectionId]>,
        scorers: &[Scorer],
        order: &ScoreOrder,
        k: usize,
        wait_for_sync: bool,
    ) -> Result<Vec<Hit>> {
        if self.dropped.load(Ordering::Acquire) {
            return Err(Error::new(ErrorCode::DataSourceNotFound));
        }
        let parts = match &self.kind {
            ViewKind::Search(parts) => parts,
            ViewKind::Alias(indexes) => {
                return indexes.search_top(query, collections, scorers, order, k, wait_for_sync)
            }
        };
        if wait_for_sync {
            parts.feed.wait_synced()?;
        }
        parts
            .feed
            .index
            .search_top(query, collections, scorers, order, k, &*self.analyzers)
    }

    /// The primary sort and stored fields of the view (for a search-alias view: those of its
    /// indexes, which agree; none without indexes).
    pub fn stored_columns(&self) -> StoredColumns {
        match &self.kind {
            ViewKind::Search(parts) => parts.feed.index.stored_columns(),
            ViewKind::Alias(indexes) => indexes.stored_columns(),
        }
    }

    /// The documents [`View::search`] gives, ordered by the first `read.buckets` primary sort
    /// fields (stably), the first `read.limit` of them, with the primary sort and stored
    /// values when `read.values` (`ViewIndex::search_sorted`; a search-alias view merges its
    /// indexes' lists, `AliasIndexes::search_sorted`).
    pub fn search_sorted(
        &self,
        query: &SearchQuery,
        collections: Option<&[CollectionId]>,
        scorers: &[Scorer],
        read: &SortedRead,
        wait_for_sync: bool,
    ) -> Result<Vec<Hit>> {
        if self.dropped.load(Ordering::Acquire) {
            return Err(Error::new(ErrorCode::DataSourceNotFound));
        }
        let parts = match &self.kind {
            ViewKind::Search(parts) => parts,
            ViewKind::Alias(indexes) => {
                return indexes.search_sorted(query, collections, scorers, read, wait_for_sync)
            }
        };
        if wait_for_sync {
            parts.feed.wait_synced()?;
        }
        parts
            .feed
            .index
            .search_sorted(query, collections, scorers, read, &*self.analyzers)
    }

    /// How many documents match `query` (restricted to `collections` when given) in a
    /// reader's snapshot at commit tick `snapshot_tick`, counted in the index alone — or None
    /// when the index cannot be shown to hold exactly what that snapshot holds of the linked
    /// collections (then the caller checks each hit against its snapshot). `linked` must be
    /// the handles of every linked collection.
    ///
    /// The proof, taken while holding every linked collection's writer lock (tried, never
    /// waited for, so no commit is half done): no collection was written after the snapshot
    /// (its data version is at most `snapshot_tick`), and everything the feed was given is
    /// committed in the index. The index state taken then is the snapshot's; later writes do
    /// not reach the state counted in.
    pub fn count_in_snapshot(
        &self,
        query: &SearchQuery,
        collections: Option<&[CollectionId]>,
        linked: &[Arc<crate::collection::Collection>],
        snapshot_tick: u64,
        wait_for_sync: bool,
    ) -> Result<Option<u64>> {
        if self.dropped.load(Ordering::Acquire) {
            return Err(Error::new(ErrorCode::DataSourceNotFound));
        }
        let ViewKind::Search(parts) = &self.kind else {
            return Ok(None);
        };
        if wait_for_sync {
            parts.feed.wait_synced()?;
        }
        let all_given = parts
            .links
            .read()
            .keys()
            .all(|cid| linked.iter().any(|c| c.id() == *cid));
        if !all_given {
            return Ok(None);
        }
        let state = {
            let mut writers = Vec::with_capacity(linked.len());
            for coll in linked {
                match coll.write_lock.try_lock() {
                    Some(guard) => writers.push(guard),
                    None => return Ok(None),
                }
            }
            if linked.iter().any(|c| c.data_version() > snapshot_tick) || !parts.feed.is_synced() {
                return Ok(None);
            }
            parts.feed.index.state()
        };
        parts
            .feed
            .index
            .count(&state, query, collections, &*self.analyzers)
            .map(Some)
    }

    /// Documents the view's indexer analyzed since the view was opened (None for a
    /// search-alias view): at startup only what changed since the index's last commit,
    /// unless it had to be rebuilt.
    pub fn documents_analyzed(&self) -> Option<u64> {
        self.parts().map(|parts| parts.feed.documents_analyzed())
    }

    /// The analyzers this view's links and searches use.
    pub fn analyzer_source(&self) -> &Arc<dyn AnalyzerSource> {
        &self.analyzers
    }

    fn catalog_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("id".into(), json!(self.id));
        obj.insert("name".into(), json!(self.name()));
        obj.insert("globallyUniqueId".into(), json!(self.globally_unique_id));
        let parts = match &self.kind {
            ViewKind::Search(parts) => parts,
            ViewKind::Alias(indexes) => {
                obj.insert("type".into(), json!(SEARCH_ALIAS));
                obj.insert("indexes".into(), indexes.catalog_json());
                return Value::Object(obj);
            }
        };
        parts.settings.read().to_json(&mut obj);
        let links: Map<String, Value> = parts
            .links
            .read()
            .iter()
            .map(|(cid, link)| (cid.to_string(), link.to_json()))
            .collect();
        obj.insert("links".into(), Value::Object(links));
        Value::Object(obj)
    }
}

/// The views of one database.
pub(crate) struct ViewCatalog {
    views: RwLock<BTreeMap<String, Arc<View>>>,
    directory: PathBuf,
    analyzers: Arc<dyn AnalyzerSource>,
    /// Serializes view DDL of this database.
    ddl: Mutex<()>,
}

impl std::fmt::Debug for ViewCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewCatalog")
            .field("views", &self.views.read().keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl ViewCatalog {
    pub fn new(directory: PathBuf, analyzers: Arc<dyn AnalyzerSource>) -> ViewCatalog {
        ViewCatalog {
            views: RwLock::new(BTreeMap::new()),
            directory,
            analyzers,
            ddl: Mutex::new(()),
        }
    }

    /// Opens the views stored in the catalog entry (`stored`: the array `catalog_json` wrote)
    /// and has each index caught up with (or rebuilt from) its linked collections in the
    /// background.
    pub fn load(&self, host: &dyn ViewHost, stored: Option<&Value>) {
        for entry in stored.and_then(Value::as_array).into_iter().flatten() {
            if let Err(err) = self.load_one(host, entry) {
                tracing::error!(
                    "a view of database '{}' could not be opened: {}",
                    host.database_name(),
                    err.message
                );
            }
        }
    }

    fn load_one(&self, host: &dyn ViewHost, entry: &Value) -> Result<()> {
        let id = entry
            .get("id")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("view id"))?;
        let name = entry
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("view name"))?;
        let guid = entry
            .get("globallyUniqueId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if entry.get("type").and_then(Value::as_str) == Some(SEARCH_ALIAS) {
            let indexes = search_alias::load(host, entry.get("indexes"));
            let view = self.alias_view(id, name, guid, indexes);
            self.views.write().insert(name.to_string(), view);
            return Ok(());
        }
        let mut settings = Settings::default();
        if let Some(obj) = entry.as_object() {
            settings.apply(obj, true)?;
        }
        let view = self.open_view(host, id, name, guid, settings, true)?;
        let parts = view.parts().expect("an arangosearch view");
        let mut links = BTreeMap::new();
        for (cid, link) in entry
            .get("links")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let Ok(cid) = cid.parse::<CollectionId>() else {
                continue;
            };
            if host.collection_name(cid).is_some() {
                links.insert(cid, LinkDefinition::from_json(link)?);
            }
        }
        // What the directory holds is caught up with each collection (or rebuilt), and
        // dropped for collections no longer linked.
        for (cid, link) in links {
            self.attach(host, parts, cid, link);
        }
        parts.feed.end_open();
        self.views.write().insert(name.to_string(), view);
        Ok(())
    }

    /// Opens the index of view `id`; `reopening`: the view existed before (startup), so what
    /// its directory holds is caught up rather than built anew.
    fn open_view(
        &self,
        host: &dyn ViewHost,
        id: u64,
        name: &str,
        guid: String,
        settings: Settings,
        reopening: bool,
    ) -> Result<Arc<View>> {
        let dir = self.directory.join(id.to_string());
        let (index, opened) = crate::search_priority::open_index(&dir)?;
        index.set_consolidation(settings.consolidation());
        index.set_stored_columns(StoredColumns::from_definitions(
            &settings.primary_sort,
            &settings.stored_values,
        ));
        if !reopening {
            index.clear()?;
        }
        let feed = ViewFeed::start(
            &format!("view '{}/{name}'", host.database_name()),
            Arc::new(index),
            Arc::clone(&self.analyzers),
            settings.commit_interval_msec,
            reopening.then_some(opened),
        )?;
        Ok(Arc::new(View {
            id,
            name: RwLock::new(name.to_string()),
            globally_unique_id: guid,
            kind: ViewKind::Search(Box::new(SearchParts {
                settings: RwLock::new(settings),
                links: RwLock::new(BTreeMap::new()),
                feed,
            })),
            analyzers: Arc::clone(&self.analyzers),
            dropped: AtomicBool::new(false),
        }))
    }

    fn alias_view(
        &self,
        id: u64,
        name: &str,
        guid: String,
        indexes: Vec<Arc<InvertedIndex>>,
    ) -> Arc<View> {
        Arc::new(View {
            id,
            name: RwLock::new(name.to_string()),
            globally_unique_id: guid,
            kind: ViewKind::Alias(AliasIndexes::new(indexes)),
            analyzers: Arc::clone(&self.analyzers),
            dropped: AtomicBool::new(false),
        })
    }

    /// Links `view` to collection `cid` (replacing an earlier link) and indexes its
    /// documents; the collection's commits reach the view from now on.
    fn attach(
        &self,
        host: &dyn ViewHost,
        view: &SearchParts,
        cid: CollectionId,
        link: LinkDefinition,
    ) {
        let Some(linked) = host.linked_views(cid) else {
            return;
        };
        // Registered before the documents are read (when the indexer gets to the link), so
        // no commit falls between the two.
        linked.add(&view.feed);
        view.feed.link(cid, link.clone(), host.engine().clone());
        view.links.write().insert(cid, link);
    }

    fn detach(&self, host: &dyn ViewHost, view: &SearchParts, cid: CollectionId) {
        if let Some(linked) = host.linked_views(cid) {
            linked.remove(&view.feed);
        }
        view.feed.unlink(cid);
        view.links.write().remove(&cid);
    }

    fn persist(&self, host: &dyn ViewHost) -> Result<()> {
        let list: Vec<Value> = self
            .views
            .read()
            .values()
            .map(|v| v.catalog_json())
            .collect();
        host.persist_views(Value::Array(list))
    }

    /// A view by name or id; 1203 otherwise.
    pub fn get(&self, name_or_id: &str) -> Result<Arc<View>> {
        let views = self.views.read();
        if let Some(v) = views.get(name_or_id) {
            return Ok(Arc::clone(v));
        }
        views
            .values()
            .find(|v| v.id.to_string() == name_or_id || v.globally_unique_id == name_or_id)
            .cloned()
            .ok_or_else(|| Error::with_message(ErrorCode::DataSourceNotFound, "view not found"))
    }

    /// The analyzers of this database's views (and of its collections' inverted indexes).
    pub fn analyzers(&self) -> Arc<dyn AnalyzerSource> {
        Arc::clone(&self.analyzers)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.views.read().contains_key(name)
    }

    /// Every view, sorted by name.
    pub fn list(&self) -> Vec<Arc<View>> {
        self.views.read().values().cloned().collect()
    }

    /// Parses the `links` object of a request into (collection id → link, or None to remove).
    fn parse_links(
        &self,
        host: &dyn ViewHost,
        links: Option<&Value>,
    ) -> Result<Vec<(CollectionId, Option<LinkDefinition>)>> {
        let mut out = Vec::new();
        let Some(links) = links.filter(|v| !v.is_null()) else {
            return Ok(out);
        };
        let Some(map) = links.as_object() else {
            return Err(bad("'links' must be an object"));
        };
        for (name, def) in map {
            let cid = host.collection_id(name)?;
            if def.is_null() {
                out.push((cid, None));
                continue;
            }
            let mut link = LinkDefinition::from_json(def)?;
            let db = host.database_name().to_string();
            link.map_analyzers(&|a| normalize_analyzer(a, &db));
            for analyzer in link.analyzer_names() {
                if self.analyzers.tokens(&analyzer, "").is_none() {
                    return Err(Error::with_message(
                        ErrorCode::BadParameter,
                        format!("analyzer '{analyzer}' not found for link to collection '{name}'"),
                    ));
                }
            }
            out.push((cid, Some(link)));
        }
        Ok(out)
    }

    /// Creates an arangosearch view from the body of `POST /_api/view`. Errors: 1208 bad name,
    /// 1207 name taken (by a view or a collection), 10 bad properties, 1203 unknown linked
    /// collection.
    pub fn create(
        &self,
        host: &dyn ViewHost,
        name: &str,
        view_type: &str,
        body: &Value,
    ) -> Result<Arc<View>> {
        if view_type != ARANGOSEARCH && view_type != SEARCH_ALIAS {
            return Err(bad(format!("invalid view type '{view_type}'")));
        }
        validate_view_name(name, false, host.naming())?;
        let _ddl = self.ddl.lock();
        if self.contains(name) || host.has_collection_named(name) {
            return Err(Error::with_message(
                ErrorCode::DuplicateName,
                "duplicate name",
            ));
        }
        let obj = body.as_object().cloned().unwrap_or_default();
        let id = host.engine().hlc().next().0;
        let guid = format!("h{id:x}/{id}");
        let view = if view_type == SEARCH_ALIAS {
            let indexes = search_alias::apply(host, Vec::new(), obj.get("indexes"))?;
            self.alias_view(id, name, guid, indexes)
        } else {
            let mut settings = Settings::default();
            settings.apply(&obj, true)?;
            let links = self.parse_links(host, obj.get("links"))?;
            let view = self.open_view(host, id, name, guid, settings, false)?;
            let parts = view.parts().expect("an arangosearch view");
            for (cid, link) in links {
                if let Some(link) = link {
                    self.attach(host, parts, cid, link);
                }
            }
            view
        };
        self.views
            .write()
            .insert(name.to_string(), Arc::clone(&view));
        if let Err(err) = self.persist(host) {
            self.views.write().remove(name);
            self.forget(host, &view);
            return Err(err);
        }
        Ok(view)
    }

    /// Replaces (`partial` false: PUT) or updates (PATCH) the properties of a view.
    pub fn update(
        &self,
        host: &dyn ViewHost,
        name_or_id: &str,
        body: &Value,
        partial: bool,
    ) -> Result<Arc<View>> {
        let _ddl = self.ddl.lock();
        let view = self.get(name_or_id)?;
        let Some(obj) = body.as_object() else {
            return Err(bad("view properties must be an object"));
        };
        let view_ref = &view;
        let view = match &view.kind {
            ViewKind::Search(parts) => parts,
            ViewKind::Alias(indexes) => {
                // PUT replaces the list (PATCH adds to it, or removes with "del"); a PATCH
                // without entries changes nothing.
                let current = if partial { indexes.live() } else { Vec::new() };
                let next = search_alias::apply(host, current, obj.get("indexes"))?;
                indexes.replace(next);
                self.persist(host)?;
                return Ok(Arc::clone(view_ref));
            }
        };
        let mut settings = view.settings.read().clone();
        if !partial {
            let immutable = settings.clone();
            settings = Settings::default();
            settings.primary_sort = immutable.primary_sort;
            settings.primary_sort_compression = immutable.primary_sort_compression;
            settings.stored_values = immutable.stored_values;
            settings.writebuffer_active = immutable.writebuffer_active;
            settings.writebuffer_idle = immutable.writebuffer_idle;
            settings.writebuffer_size_max = immutable.writebuffer_size_max;
        }
        settings.apply(obj, false)?;
        let changes = self.parse_links(host, obj.get("links"))?;
        view.feed.set_commit_interval(settings.commit_interval_msec);
        view.feed.index.set_consolidation(settings.consolidation());
        *view.settings.write() = settings;
        if !partial {
            let named: Vec<CollectionId> = changes.iter().map(|c| c.0).collect();
            for cid in view_ref.linked_collections() {
                if !named.contains(&cid) {
                    self.detach(host, view, cid);
                }
            }
        }
        for (cid, link) in changes {
            let current = view.links.read().get(&cid).cloned();
            match link {
                None => {
                    if current.is_some() {
                        self.detach(host, view, cid);
                    }
                }
                Some(link) if current.as_ref() == Some(&link) => {}
                Some(link) => self.attach(host, view, cid, link),
            }
        }
        self.persist(host)?;
        Ok(Arc::clone(view_ref))
    }

    /// Renames a view. Errors: 1203 unknown, 1208 bad name, 1207 taken.
    pub fn rename(
        &self,
        host: &dyn ViewHost,
        name_or_id: &str,
        new_name: &str,
    ) -> Result<Arc<View>> {
        let _ddl = self.ddl.lock();
        let view = self.get(name_or_id)?;
        let old = view.name();
        if old == new_name {
            return Ok(view);
        }
        validate_view_name(new_name, false, host.naming())?;
        if self.contains(new_name) || host.has_collection_named(new_name) {
            return Err(Error::with_message(
                ErrorCode::DuplicateName,
                "duplicate name",
            ));
        }
        {
            let mut views = self.views.write();
            views.remove(&old);
            *view.name.write() = new_name.to_string();
            views.insert(new_name.to_string(), Arc::clone(&view));
        }
        self.persist(host)?;
        Ok(view)
    }

    /// Drops a view and its index. Errors: 1203 unknown.
    pub fn drop_view(&self, host: &dyn ViewHost, name_or_id: &str) -> Result<()> {
        let _ddl = self.ddl.lock();
        let view = self.get(name_or_id)?;
        self.views.write().remove(&view.name());
        self.persist(host)?;
        self.forget(host, &view);
        Ok(())
    }

    /// Unlinks, stops and deletes a view that is no longer in the catalog.
    fn forget(&self, host: &dyn ViewHost, view: &Arc<View>) {
        view.dropped.store(true, Ordering::Release);
        let links = view.linked_collections();
        let Some(view) = view.parts() else {
            return;
        };
        for cid in links {
            if let Some(linked) = host.linked_views(cid) {
                linked.remove(&view.feed);
            }
        }
        view.feed.stop();
        let dir = view.feed.index.directory().to_path_buf();
        if let Err(err) = std::fs::remove_dir_all(&dir) {
            tracing::warn!(dir = %dir.display(), "removing a dropped view's index failed: {err}");
        }
    }

    /// Removes the links to a dropped collection from every view.
    pub fn collection_dropped(&self, host: &dyn ViewHost, cid: CollectionId) -> Result<()> {
        let _ddl = self.ddl.lock();
        let mut changed = false;
        for view in self.list() {
            let Some(view) = view.parts() else {
                // A search-alias view loses the collection's indexes with them.
                changed = true;
                continue;
            };
            if view.links.read().contains_key(&cid) {
                view.feed.unlink(cid);
                view.links.write().remove(&cid);
                changed = true;
            }
        }
        if changed {
            self.persist(host)?;
        }
        Ok(())
    }

    /// Drops every view (the database is dropped).
    pub fn drop_all(&self, host: &dyn ViewHost) {
        let views: Vec<Arc<View>> = std::mem::take(&mut *self.views.write())
            .into_values()
            .collect();
        for view in views {
            self.forget(host, &view);
        }
    }

    /// Stops every indexer after it has committed what it holds (shutdown).
    pub fn stop_all(&self) {
        for view in self.list() {
            if let Some(parts) = view.parts() {
                parts.feed.stop();
            }
        }
    }

    /// The properties of `view` as `/_api/view/{name}/properties` reports them (links by
    /// collection name).
    pub fn properties_json(&self, host: &dyn ViewHost, view: &View) -> Value {
        let mut obj = match view.basic_json() {
            Value::Object(o) => o,
            _ => Map::new(),
        };
        let view = match &view.kind {
            ViewKind::Search(parts) => parts,
            ViewKind::Alias(indexes) => {
                obj.insert("indexes".into(), indexes.properties_json(host));
                return Value::Object(obj);
            }
        };
        view.settings.read().to_json(&mut obj);
        let mut links = Map::new();
        for (cid, link) in view.links.read().iter() {
            if let Some(name) = host.collection_name(*cid) {
                links.insert(name, link.to_json());
            }
        }
        obj.insert("links".into(), Value::Object(links));
        Value::Object(obj)
    }
}
