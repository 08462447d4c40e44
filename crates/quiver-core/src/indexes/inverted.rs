//! Inverted indexes: an index of one collection kept by the same machinery as an
//! arangosearch view's link. The index definition (`fields` with `analyzer`,
//! `includeAllFields`, `trackListPositions`, `nested`) maps to a [`LinkDefinition`]; the index
//! has its own tantivy index (`<data directory>/inverted-indexes/<collection id>/<index id>/`)
//! and its own feed ([`ViewFeed`]), registered with the collection's linked feeds so its
//! committed writes reach it like a view's. As a view's, the index is built from the
//! collection when it is created and caught up with it (or rebuilt, `view_feed.rs`) when it
//! is reopened at start-up. `search-alias` views search it (`search_alias.rs`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use quiver_errors::{Error, ErrorCode, Result};
use quiver_search::index::{
    AnalyzerSource, Consolidation, Hit, LinkDefinition, ScoreOrder, Scorer, SearchQuery,
    SortedRead, StoredColumns, TierOptions,
};
use quiver_storage::{CollectionId, Engine};
use serde_json::{json, Map, Value};

use crate::indexes::definition::IndexDef;
use crate::view_feed::ViewFeed;
use crate::view_links::LinkedViews;

/// How often an inverted index commits what it indexed (ArangoDB's `commitIntervalMsec`
/// default).
const COMMIT_INTERVAL_MSEC: u64 = 1000;

/// `::name` and `<this database>::name` are the analyzer `name` of this database.
pub(crate) fn normalize_analyzer(name: &str, database: &str) -> String {
    if let Some(rest) = name.strip_prefix("::") {
        return rest.to_string();
    }
    match name.split_once("::") {
        Some((db, rest)) if db == database => rest.to_string(),
        _ => name.to_string(),
    }
}

/// What a collection needs to keep inverted indexes: its database's analyzers and name.
#[derive(Clone)]
pub(crate) struct SearchContext {
    pub analyzers: Arc<dyn AnalyzerSource>,
    pub database: String,
}

/// One indexed field as a `search-alias` view compares indexes: the path (`""` for the
/// index's own `includeAllFields`), its analyzer, `includeAllFields` and `searchField`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FieldSummary {
    pub path: String,
    pub analyzer: String,
    pub include_all_fields: bool,
    pub search_field: bool,
}

/// The link an inverted index definition amounts to, with analyzer names normalised for
/// `database`. Errors 400/10 for a definition that nests too deeply.
pub(crate) fn link_definition(def: &IndexDef, database: &str) -> Result<LinkDefinition> {
    let analyzer = def
        .extra
        .get("analyzer")
        .and_then(Value::as_str)
        .unwrap_or("identity");
    let mut root = Map::new();
    root.insert("analyzers".into(), json!([analyzer]));
    for key in ["includeAllFields", "trackListPositions"] {
        if let Some(b) = def.extra.get(key).and_then(Value::as_bool) {
            root.insert(key.into(), json!(b));
        }
    }
    let mut fields = Map::new();
    for field in field_definitions(def) {
        add_field(&mut fields, &field, 0)?;
    }
    root.insert("fields".into(), Value::Object(fields));
    let mut link = LinkDefinition::from_json(&Value::Object(root))?;
    link.map_analyzers(&|a| normalize_analyzer(a, database));
    Ok(link)
}

/// The `fields` of the definition as given (strings or objects).
fn field_definitions(def: &IndexDef) -> Vec<Value> {
    match def.extra.get("fieldDefinitions").and_then(Value::as_array) {
        Some(list) => list.clone(),
        None => def.fields.iter().map(|f| json!(f)).collect(),
    }
}

/// The attribute path of a field name: `a.b[*].c` is indexed as `a.b.c` (array elements are
/// indexed under the array's path).
fn path_segments(name: &str) -> Vec<String> {
    name.replace("[*]", "")
        .split('.')
        .map(str::to_string)
        .collect()
}

/// Adds field `field` (a name or an object) to the link's `fields` object `into`.
fn add_field(into: &mut Map<String, Value>, field: &Value, depth: usize) -> Result<()> {
    if depth > quiver_search::index::MAX_FIELD_DEPTH {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            "inverted index fields are nested too deeply",
        ));
    }
    let (name, settings) = match field {
        Value::String(s) => (s.as_str(), None),
        Value::Object(o) => (o.get("name").and_then(Value::as_str).unwrap_or(""), Some(o)),
        _ => return Ok(()),
    };
    let segments = path_segments(name);
    let mut level = into;
    for (i, segment) in segments.iter().enumerate() {
        let entry = level
            .entry(segment.clone())
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("a field entry is an object");
        if i + 1 == segments.len() {
            if let Some(o) = settings {
                if let Some(a) = o.get("analyzer").and_then(Value::as_str) {
                    entry.insert("analyzers".into(), json!([a]));
                }
                for key in ["includeAllFields", "trackListPositions"] {
                    if let Some(b) = o.get(key).and_then(Value::as_bool) {
                        entry.insert(key.into(), json!(b));
                    }
                }
                if let Some(nested) = o.get("nested").and_then(Value::as_array) {
                    // Each object of the field's array is an element of its own (nested
                    // search), as the link's `nested` says.
                    let mut sub = entry
                        .remove("nested")
                        .and_then(|v| match v {
                            Value::Object(m) => Some(m),
                            _ => None,
                        })
                        .unwrap_or_default();
                    for child in nested {
                        add_field(&mut sub, child, depth + 1)?;
                    }
                    entry.insert("nested".into(), Value::Object(sub));
                }
            }
            return Ok(());
        }
        let next = entry
            .entry("fields".to_string())
            .or_insert_with(|| json!({}));
        level = next.as_object_mut().expect("fields is an object");
    }
    Ok(())
}

/// The fields of the definition as a `search-alias` view compares them.
pub(crate) fn field_summaries(def: &IndexDef, database: &str) -> Vec<FieldSummary> {
    let root_analyzer = normalize_analyzer(
        def.extra
            .get("analyzer")
            .and_then(Value::as_str)
            .unwrap_or("identity"),
        database,
    );
    let root_search = def
        .extra
        .get("searchField")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut out = Vec::new();
    fn walk(
        fields: &[Value],
        prefix: &str,
        analyzer: &str,
        search: bool,
        database: &str,
        out: &mut Vec<FieldSummary>,
    ) {
        for field in fields {
            let (name, o) = match field {
                Value::String(s) => (s.as_str(), None),
                Value::Object(o) => (o.get("name").and_then(Value::as_str).unwrap_or(""), Some(o)),
                _ => continue,
            };
            let path = if prefix.is_empty() {
                path_segments(name).join(".")
            } else {
                format!("{prefix}.{}", path_segments(name).join("."))
            };
            let get_str = |k: &str| o.and_then(|o| o.get(k)).and_then(Value::as_str);
            let get_bool = |k: &str| o.and_then(|o| o.get(k)).and_then(Value::as_bool);
            let field_analyzer = get_str("analyzer")
                .map(|a| normalize_analyzer(a, database))
                .unwrap_or_else(|| analyzer.to_string());
            let field_search = get_bool("searchField").unwrap_or(search);
            out.push(FieldSummary {
                path: path.clone(),
                analyzer: field_analyzer.clone(),
                include_all_fields: get_bool("includeAllFields").unwrap_or(false),
                search_field: field_search,
            });
            if let Some(nested) = o.and_then(|o| o.get("nested")).and_then(Value::as_array) {
                walk(nested, &path, &field_analyzer, field_search, database, out);
            }
        }
    }
    walk(
        &field_definitions(def),
        "",
        &root_analyzer,
        root_search,
        database,
        &mut out,
    );
    if def
        .extra
        .get("includeAllFields")
        .and_then(Value::as_bool)
        .unwrap_or(false)
    {
        out.push(FieldSummary {
            path: String::new(),
            analyzer: root_analyzer,
            include_all_fields: true,
            search_field: root_search,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// Checks that every analyzer the definition names exists (400/10 otherwise).
pub(crate) fn check_analyzers(link: &LinkDefinition, context: &SearchContext) -> Result<()> {
    for analyzer in link.analyzer_names() {
        if context.analyzers.tokens(&analyzer, "").is_none() {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("analyzer '{analyzer}' not found for inverted index"),
            ));
        }
    }
    Ok(())
}

/// One open inverted index of a collection.
pub(crate) struct InvertedIndex {
    pub id: u64,
    pub name: String,
    pub collection: CollectionId,
    link: LinkDefinition,
    /// The fields as `search-alias` views compare them.
    pub fields: Vec<FieldSummary>,
    /// `primarySort` and `storedValues` of the definition (a view's indexes must agree).
    pub primary_sort: Value,
    pub stored_values: Value,
    feed: Arc<ViewFeed>,
    analyzers: Arc<dyn AnalyzerSource>,
    dropped: AtomicBool,
}

impl std::fmt::Debug for InvertedIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InvertedIndex")
            .field("id", &self.id)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl InvertedIndex {
    /// Opens index `def` of collection `cid` in `dir` and has its indexer bring it in line
    /// with the collection: built from it when new, caught up (or rebuilt) when `reopening`
    /// at start-up; commits of the collection reach it from now on (`linked`).
    pub fn open(
        dir: PathBuf,
        cid: CollectionId,
        def: &IndexDef,
        context: &SearchContext,
        engine: &Engine,
        linked: &LinkedViews,
        reopening: bool,
    ) -> Result<Arc<InvertedIndex>> {
        let link = link_definition(def, &context.database)?;
        let (index, opened) = crate::search_priority::open_index(&dir)?;
        index.set_consolidation(Consolidation::Tiered(TierOptions::default()));
        index.set_stored_columns(StoredColumns::from_definitions(
            def.extra.get("primarySort").unwrap_or(&Value::Null),
            def.extra.get("storedValues").unwrap_or(&Value::Null),
        ));
        if !reopening {
            index.clear()?;
        }
        let feed = ViewFeed::start(
            &format!("inverted index '{}'", def.name),
            Arc::new(index),
            Arc::clone(&context.analyzers),
            COMMIT_INTERVAL_MSEC,
            reopening.then_some(opened),
        )?;
        // Registered before the documents are read (when the indexer gets to the link), so
        // no commit falls between the two.
        linked.add(&feed);
        feed.link(cid, link.clone(), engine.clone());
        feed.end_open();
        Ok(Arc::new(InvertedIndex {
            id: def.id,
            name: def.name.clone(),
            collection: cid,
            link,
            fields: field_summaries(def, &context.database),
            primary_sort: def.extra.get("primarySort").cloned().unwrap_or(Value::Null),
            stored_values: def
                .extra
                .get("storedValues")
                .cloned()
                .unwrap_or(Value::Null),
            feed,
            analyzers: Arc::clone(&context.analyzers),
            dropped: AtomicBool::new(false),
        }))
    }

    /// Whether the index was dropped (alone or with its collection).
    pub fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    /// Every analyzer name the definition uses.
    pub fn analyzer_names(&self) -> Vec<String> {
        self.link.analyzer_names()
    }

    /// The documents matching `query` (conditions without an analyzer take the field's
    /// analyzer of the definition), each with one score per scorer. With `wait_for_sync`,
    /// first waits until every write acknowledged before the call is searchable.
    pub fn search(
        &self,
        query: &SearchQuery,
        scorers: &[Scorer],
        wait_for_sync: bool,
    ) -> Result<Vec<Hit>> {
        let Some(query) = self.prepare(query, wait_for_sync)? else {
            return Ok(Vec::new());
        };
        self.feed
            .index
            .search(&query, None, scorers, &*self.analyzers)
    }

    /// The first `k` documents [`InvertedIndex::search`] gives once sorted (stably) by
    /// `order` over `scorers`: the index keeps the best `k` and reads only their identities.
    pub fn search_top(
        &self,
        query: &SearchQuery,
        scorers: &[Scorer],
        order: &ScoreOrder,
        k: usize,
        wait_for_sync: bool,
    ) -> Result<Vec<Hit>> {
        let Some(query) = self.prepare(query, wait_for_sync)? else {
            return Ok(Vec::new());
        };
        self.feed
            .index
            .search_top(&query, None, scorers, order, k, &*self.analyzers)
    }

    /// The documents [`InvertedIndex::search`] gives, ordered by the first `read.buckets`
    /// primary sort fields (stably), cut to `read.limit`, with the primary sort and stored
    /// values when `read.values` (`ViewIndex::search_sorted`).
    pub fn search_sorted(
        &self,
        query: &SearchQuery,
        scorers: &[Scorer],
        read: &SortedRead,
        wait_for_sync: bool,
    ) -> Result<Vec<Hit>> {
        let Some(query) = self.prepare(query, wait_for_sync)? else {
            return Ok(Vec::new());
        };
        self.feed
            .index
            .search_sorted(&query, None, scorers, read, &*self.analyzers)
    }

    /// The primary sort and stored fields of the definition.
    pub fn stored_columns(&self) -> StoredColumns {
        self.feed.index.stored_columns()
    }

    /// `query` with the definition's field analyzers, after waiting for the index with
    /// `wait_for_sync`; None when the index was dropped (it finds nothing).
    fn prepare(&self, query: &SearchQuery, wait_for_sync: bool) -> Result<Option<SearchQuery>> {
        if self.is_dropped() {
            return Ok(None);
        }
        if wait_for_sync {
            self.feed.wait_synced()?;
        }
        Ok(Some(query.with_field_analyzers(&self.link)))
    }

    /// Stops the indexer after it committed what it holds (shutdown).
    pub fn stop(&self) {
        self.feed.stop();
    }

    /// Unregisters, stops and deletes the index (dropped alone or with its collection).
    pub fn drop_index(&self, linked: &LinkedViews) {
        self.dropped.store(true, Ordering::Release);
        linked.remove(&self.feed);
        self.feed.stop();
        let dir = self.feed.index.directory().to_path_buf();
        if let Err(err) = std::fs::remove_dir_all(&dir) {
            if err.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(dir = %dir.display(), "removing a dropped inverted index failed: {err}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(body: Value) -> IndexDef {
        IndexDef::parse(&body, 100).unwrap()
    }

    #[test]
    fn definitions_map_to_links() {
        let d = def(json!({"type": "inverted", "analyzer": "text_en",
            "fields": ["title", {"name": "tag", "analyzer": "identity"},
                       {"name": "a.b[*].c", "trackListPositions": true},
                       {"name": "items", "nested": [{"name": "x", "analyzer": "::norm"}]}]}));
        let link = link_definition(&d, "db").unwrap();
        assert_eq!(
            link.to_json()["fields"],
            json!({"title": {}, "tag": {"analyzers": ["identity"]},
                   "a": {"fields": {"b": {"fields": {"c": {"trackListPositions": true}}}}},
                   "items": {"nested": {"x": {"analyzers": ["norm"]}}}})
        );
        assert_eq!(link.root_analyzers(), ["text_en"]);
        use quiver_search::index::analyzer_at;
        assert_eq!(analyzer_at(&link, "title").as_deref(), Some("text_en"));
        assert_eq!(analyzer_at(&link, "items[?].x").as_deref(), Some("norm"));
    }

    #[test]
    fn summaries_list_fields_sorted_with_the_root_include_all() {
        let d = def(json!({"type": "inverted", "includeAllFields": true,
            "fields": [{"name": "b", "analyzer": "text_en", "searchField": true}, "a"]}));
        let summary = field_summaries(&d, "db");
        let paths: Vec<&str> = summary.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["", "a", "b"]);
        assert_eq!(summary[2].analyzer, "text_en");
        assert!(summary[2].search_field);
        assert_eq!(summary[1].analyzer, "identity");
        assert!(summary[0].include_all_fields);
    }
}
