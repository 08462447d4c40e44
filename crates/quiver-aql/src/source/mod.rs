//! The narrow data-access contract the query engine needs. Keeping it this small lets the
//! executor run over quiver-core in production and over [`memory::MemorySource`] in unit and
//! golden tests; index access (persistent, geo, fulltext, edge) is part of the same contract.

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

pub mod checked;
pub mod core;
pub mod memory;
pub mod skim;

/// What the planner needs to know about a collection.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectionInfo {
    pub name: String,
    pub is_edge: bool,
}

/// A secondary (persistent-family) index as the planner sees it; only indexes that are
/// built and usable are listed.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexMeta {
    pub id: u64,
    pub name: String,
    /// The type as reported (`persistent`, `hash`, `skiplist`).
    pub kind: String,
    pub fields: Vec<String>,
    pub unique: bool,
    pub sparse: bool,
    /// Share of distinct values among the entries (1 = all distinct).
    pub selectivity: f64,
    /// The index object shown in explain output.
    pub description: Value,
}

pub use quiver_core::IndexRange;

/// One document a view search found: its collection, key and one score per scorer.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewHit {
    pub collection: String,
    pub key: String,
    pub scores: Vec<f64>,
    /// The view's primary sort and stored values (`StoredColumns::value_paths`), when the
    /// search asked for them.
    pub values: Vec<Value>,
}

pub use quiver_search::index::{
    OffsetRule, ScoreOrder, Scorer, SearchQuery, SortedRead, StoredColumns,
};

/// Per-operation options of INSERT/UPDATE/REPLACE/REMOVE/UPSERT (`OPTIONS {...}`).
#[derive(Clone, Debug, PartialEq)]
pub struct WriteOptions {
    pub wait_for_sync: bool,
    pub keep_null: bool,
    pub merge_objects: bool,
    pub ignore_revs: bool,
    /// `overwriteMode` of INSERT: "conflict" (None), "ignore", "replace", "update".
    pub overwrite_mode: Option<String>,
    /// `versionAttribute` of INSERT (overwriting), UPDATE, REPLACE and UPSERT: external
    /// versioning, see `quiver_core::ModifyOptions::version_attribute`.
    pub version_attribute: Option<String>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            wait_for_sync: false,
            keep_null: true,
            merge_objects: true,
            ignore_revs: true,
            overwrite_mode: None,
            version_attribute: None,
        }
    }
}

/// The documents before and after one write.
#[derive(Clone, Debug, PartialEq)]
pub struct WriteOutcome {
    pub old: Option<Value>,
    pub new: Option<Value>,
}

/// An owned stream of documents (no borrow of the transaction, so streaming cursors can keep
/// it across HTTP requests).
pub type DocIter = Box<dyn Iterator<Item = Result<Value>> + Send>;

/// Edges found by [`Transaction::edges`] (key, revision, vertex at the other end), in
/// reusable buffers: the core's type, so its edge index writes straight into them.
pub use quiver_core::EdgeHits;

/// Entry point: one implementation per storage backend.
pub trait DataSource: Send + Sync {
    /// Starts a query transaction that may write `writes` (empty for read-only queries).
    /// Fails with 1228 if the database does not exist.
    fn begin(&self, database: &str, writes: &[String]) -> Result<Box<dyn Transaction>>;

    /// A number that changes after every change of the catalog (databases, collections,
    /// indexes): query plans cached under one version are stale under another. `None` when
    /// the source cannot tell, which turns the plan cache off.
    fn catalog_version(&self) -> Option<u64> {
        None
    }

    /// The id of collection `name` of `database` and the commit tick of its newest write (0:
    /// none since it was opened): a snapshot whose tick ([`Transaction::snapshot_tick`]) is at
    /// least this saw every write to it. `None` for a name that is no collection (a view, a
    /// missing collection) or when the source cannot tell: results read from it are not kept
    /// in the query results cache.
    fn collection_data_version(&self, _database: &str, _name: &str) -> Option<(u64, u64)> {
        None
    }
}

/// One query's view of a database: every read sees the same consistent state (plus the
/// query's own writes), and all writes become visible atomically on `commit`. Dropping the
/// transaction without committing discards the writes.
pub trait Transaction: Send {
    /// The commit tick of a read-only transaction's snapshot (`None` for one that writes, or
    /// when the source cannot tell): it saw exactly the commits up to this tick.
    fn snapshot_tick(&self) -> Option<u64> {
        None
    }

    /// Fails with 1203 if the collection does not exist.
    fn collection(&self, name: &str) -> Result<CollectionInfo>;
    fn count(&self, collection: &str) -> Result<u64>;
    fn get(&self, collection: &str, key: &str) -> Result<Option<Value>>;
    fn scan(&self, collection: &str) -> Result<DocIter>;
    /// Whether `name` is a view of the query's database (a backend without views has none).
    fn is_view(&self, name: &str) -> bool {
        let _ = name;
        false
    }
    /// The names of the collections linked to view `view` (what a search over it reads);
    /// a backend without views has none.
    fn view_collections(&self, view: &str) -> Result<Vec<String>> {
        let _ = view;
        Ok(Vec::new())
    }
    /// The documents of view `view` matching `query` (restricted to the linked collections
    /// named in `collections` when given), with one score per scorer; with `wait_for_sync`
    /// after every write acknowledged before the call is searchable. 1203 for an unknown view.
    fn search_view(
        &self,
        view: &str,
        query: &SearchQuery,
        collections: Option<&[String]>,
        scorers: &[Scorer],
        wait_for_sync: bool,
    ) -> Result<Vec<ViewHit>> {
        let _ = (query, collections, scorers, wait_for_sync);
        Err(Error::with_message(
            ErrorCode::DataSourceNotFound,
            format!("AQL: collection or view not found: {view}"),
        ))
    }
    /// The first `k` hits [`Transaction::search_view`] gives once sorted stably by `order`
    /// over `scorers` (`SORT BM25(d) DESC LIMIT k` after a view loop), in that order. The
    /// default sorts the full search; a backend may keep the best `k` inside the index.
    #[allow(clippy::too_many_arguments)]
    fn search_view_top(
        &self,
        view: &str,
        query: &SearchQuery,
        collections: Option<&[String]>,
        scorers: &[Scorer],
        order: &ScoreOrder,
        k: usize,
        wait_for_sync: bool,
    ) -> Result<Vec<ViewHit>> {
        let mut hits = self.search_view(view, query, collections, scorers, wait_for_sync)?;
        hits.sort_by(|a, b| order.compare(&a.scores, &b.scores));
        hits.truncate(k);
        Ok(hits)
    }
    /// The primary sort and stored fields of view `view` (none for a backend without them).
    fn view_stored_columns(&self, view: &str) -> Result<StoredColumns> {
        let _ = view;
        Ok(StoredColumns::default())
    }
    /// The hits [`Transaction::search_view`] gives, ordered stably by the first
    /// `read.buckets` fields of the view's primary sort, the first `read.limit` of them, each
    /// with the view's primary sort and stored values when `read.values`. A backend without
    /// primary sort or stored values gives the search's hits cut to the limit.
    fn search_view_sorted(
        &self,
        view: &str,
        query: &SearchQuery,
        collections: Option<&[String]>,
        scorers: &[Scorer],
        read: &SortedRead,
        wait_for_sync: bool,
    ) -> Result<Vec<ViewHit>> {
        let mut hits = self.search_view(view, query, collections, scorers, wait_for_sync)?;
        if let Some(k) = read.limit {
            hits.truncate(k);
        }
        Ok(hits)
    }
    /// How many hits [`Transaction::search_view`] would give whose documents this
    /// transaction sees, counted without looking at the hits — or None when the backend
    /// cannot count so exactly (then the caller checks each hit).
    fn count_view(
        &self,
        view: &str,
        query: &SearchQuery,
        collections: Option<&[String]>,
        wait_for_sync: bool,
    ) -> Result<Option<u64>> {
        let _ = (view, query, collections, wait_for_sync);
        Ok(None)
    }
    /// `OFFSET_INFO(doc, rules)` for a document view `view` found with `query`.
    fn view_offset_info(
        &self,
        view: &str,
        doc: &Value,
        query: &SearchQuery,
        rules: &[OffsetRule],
    ) -> Result<Value> {
        let _ = (doc, query, rules);
        Err(Error::with_message(
            ErrorCode::DataSourceNotFound,
            format!("AQL: collection or view not found: {view}"),
        ))
    }
    /// The keys of the documents of `collection` inverted index `index` (numeric id) finds
    /// for `query` (conditions without an analyzer take the field's analyzer of the index
    /// definition); with `wait_for_sync` after every write acknowledged before the call is
    /// searchable. 1212 when the collection has no such inverted index.
    fn inverted_search(
        &self,
        collection: &str,
        index: u64,
        query: &SearchQuery,
        read: Option<&SortedRead>,
        wait_for_sync: bool,
    ) -> Result<Vec<String>> {
        let _ = (query, read, wait_for_sync);
        Err(Error::with_message(
            ErrorCode::IndexNotFound,
            format!(
                "index {index} of collection {collection} is no inverted index of this data source"
            ),
        ))
    }
    /// The usable secondary indexes of a collection (none for a backend without them).
    fn secondary_indexes(&self, collection: &str) -> Result<Vec<IndexMeta>> {
        let _ = collection;
        Ok(Vec::new())
    }
    /// Documents found through index `index` in `ranges` (range after range, each in index
    /// order, descending when `reverse`; a document at most once).
    fn index_lookup(
        &self,
        collection: &str,
        index: u64,
        ranges: Vec<IndexRange>,
        reverse: bool,
    ) -> Result<DocIter> {
        let _ = (collection, index, ranges, reverse);
        Err(quiver_errors::Error::with_message(
            quiver_errors::ErrorCode::NotImplemented,
            "this data source has no secondary indexes",
        ))
    }
    /// Like `index_lookup`, but the documents hold just the top-level attributes `attrs`,
    /// built from the index alone (`storedValues` and indexed fields). None when the source
    /// cannot (the index does not cover them, staged writes, no such support): the caller
    /// uses `index_lookup`.
    fn index_lookup_covering(
        &self,
        collection: &str,
        index: u64,
        ranges: Vec<IndexRange>,
        reverse: bool,
        attrs: &[String],
    ) -> Result<Option<DocIter>> {
        let _ = (collection, index, ranges, reverse, attrs);
        Ok(None)
    }
    /// Like `scan`, but the documents need only carry the top-level attributes `attrs` (the
    /// query reads nothing else), so a backend may skip decoding the rest.
    fn scan_projected(&self, collection: &str, attrs: &[String]) -> Result<DocIter> {
        let _ = attrs;
        self.scan(collection)
    }
    /// For `FOR d IN coll COLLECT g = d.attr WITH COUNT INTO n`: every distinct value of
    /// top-level attribute `attr` (`null` for documents without it) with the number of
    /// documents holding it, in no particular order; values equal in AQL (`1` and `1.0`) form
    /// one group. `check(bytes)` is called every few thousand documents with the bytes the
    /// calling worker holds for its groups; its error (query killed, memory limit) ends the
    /// scan. A backend may count on several threads; each calls `check` for its own share.
    fn count_by_attribute(
        &self,
        collection: &str,
        attr: &str,
        check: &(dyn Fn(u64) -> Result<()> + Sync),
    ) -> Result<Vec<(Value, u64)>> {
        count_by_attribute_generic(
            self.scan_projected(collection, &[attr.to_string()])?,
            attr,
            check,
        )
    }
    /// Appends the edges of edge collection `collection` whose `_from` (`outbound`) or `_to`
    /// (inbound) is `vertex` to `out`, in the order they were written (revision order), as
    /// this transaction sees them. The
    /// default scans the collection (fine for small test data); backends with an edge index
    /// override it.
    fn edges(
        &self,
        collection: &str,
        vertex: &str,
        outbound: bool,
        out: &mut EdgeHits,
    ) -> Result<()> {
        let (here, there) = if outbound {
            ("_from", "_to")
        } else {
            ("_to", "_from")
        };
        for doc in self.scan(collection)? {
            let doc = doc?;
            if doc.get(here).and_then(Value::as_str) != Some(vertex) {
                continue;
            }
            if let (Some(key), Some(other)) = (
                doc.get("_key").and_then(Value::as_str),
                doc.get(there).and_then(Value::as_str),
            ) {
                out.push(key, quiver_types::Revision(0), other);
            }
        }
        Ok(())
    }

    /// About how many edges [`Transaction::edges`] would report (None when unknown). Only
    /// used to decide which end of a bidirectional search to expand.
    fn edge_degree_hint(&self, collection: &str, vertex: &str, outbound: bool) -> Option<usize> {
        let _ = (collection, vertex, outbound);
        None
    }

    /// A document as JSON text (with `_id`), for results that pass documents through
    /// without looking inside them. The text parses to what [`Transaction::get`] returns.
    fn get_json(&self, collection: &str, key: &str) -> Result<Option<String>> {
        match self.get(collection, key)? {
            Some(doc) => serde_json::to_string(&doc)
                .map(Some)
                .map_err(|e| Error::with_message(ErrorCode::Internal, e.to_string())),
            None => Ok(None),
        }
    }

    /// Whether a document exists, without necessarily reading it (graph operations check
    /// vertices they only need the `_id` of).
    fn exists(&self, collection: &str, key: &str) -> Result<bool> {
        Ok(self.get(collection, key)?.is_some())
    }

    /// The existence epoch of document collection `collection` if it describes the keys
    /// alive at this transaction's snapshot and nothing of its own changes them (see
    /// `quiver_storage::Snapshot::existence_epoch`), else None. An edge hit whose
    /// `EdgeHit::other_mark` is this epoch of the other end's collection reaches a vertex
    /// that exists here. The default knows no epochs.
    fn existence_epoch(&self, collection: &str) -> Option<u64> {
        let _ = collection;
        None
    }

    /// Records that vertex `vertex` (an `_id`) was found to exist under `epoch` (from
    /// [`Transaction::existence_epoch`] of its collection) in the index of edge collection
    /// `edge_collection`, whose later hits then carry it as their `other_mark`. `slot` is the
    /// `other_slot` of the hit that reached the vertex in that index (or the default). The
    /// default records nothing.
    fn mark_vertex_alive(
        &self,
        edge_collection: &str,
        vertex: &str,
        slot: quiver_core::VertexSlot,
        epoch: u64,
    ) {
        let _ = (edge_collection, vertex, slot, epoch);
    }

    /// The index descriptions of `collection` as `/_api/index` lists them (the geo and
    /// fulltext functions need to know which indexes exist). A source without secondary
    /// indexes has none to report.
    fn indexes(&self, collection: &str) -> Result<Vec<Value>> {
        self.collection(collection)?;
        Ok(Vec::new())
    }
    /// Every collection of the query's database as `(id, name)`, sorted by name, system
    /// collections included (`COLLECTIONS()`). A source without a catalog cannot list them.
    fn collections(&self) -> Result<Vec<(String, String)>> {
        Err(Error::with_message(
            ErrorCode::NotImplemented,
            "COLLECTIONS() is not available for this data source",
        ))
    }
    /// The analyzer `name` as the transaction's database resolves it (`TOKENS()`); a source
    /// without an analyzer catalog knows only the built-ins. Errors: 404/1202 when unknown.
    fn analyzer(&self, name: &str) -> Result<std::sync::Arc<quiver_core::analyzers::Analyzer>> {
        quiver_core::analyzers::builtin(name)
    }
    /// The `schema` property of `collection` (`SCHEMA_GET()`): null when it has none; 1203 when
    /// the collection does not exist. A source without schemas has none to report.
    fn collection_schema(&self, collection: &str) -> Result<Value> {
        self.collection(collection)?;
        Ok(Value::Null)
    }
    /// The documents that geo index `index` (numeric id) of `collection` files under cells
    /// meeting `rect`, a superset of those whose shape meets it (callers re-check). None when
    /// the source cannot answer through that index (not built yet, no such structure): the
    /// caller scans the collection instead.
    fn geo_lookup(
        &self,
        collection: &str,
        index: u64,
        rect: &quiver_core::geo::Rect,
    ) -> Result<Option<Vec<Value>>> {
        let _ = (collection, index, rect);
        Ok(None)
    }
    /// The documents that fulltext index `index` (numeric id) of `collection` names as
    /// candidates for `query`, a superset of the matches (callers re-check). None when the
    /// source cannot answer through that index (not built yet, no such structure): the caller
    /// scans the collection instead.
    fn fulltext_lookup(
        &self,
        collection: &str,
        index: u64,
        query: &quiver_core::fulltext::Query,
    ) -> Result<Option<Vec<Value>>> {
        let _ = (collection, index, query);
        Ok(None)
    }
    /// The documents of `collection` in box `b` of mdi index `index` (numeric id), exactly.
    /// None when the source cannot answer through that index (not built yet, no such
    /// structure): the caller scans the collection instead.
    fn mdi_lookup(
        &self,
        collection: &str,
        index: u64,
        b: &quiver_core::mdi_index::MdiBox,
    ) -> Result<Option<Vec<Value>>> {
        let _ = (collection, index, b);
        Ok(None)
    }
    /// At most `limit` documents of `collection` nearest to `query` through vector index
    /// `index` (numeric id), best first with the metric's value: the entries of the
    /// `n_probe` lists nearest to the query. None when the source cannot answer through
    /// that index (not built yet, no such structure): the caller searches exactly instead.
    fn vector_lookup(
        &self,
        collection: &str,
        index: u64,
        query: &[f32],
        n_probe: usize,
        limit: usize,
    ) -> Result<Option<Vec<(f64, Value)>>> {
        let _ = (collection, index, query, n_probe, limit);
        Ok(None)
    }
    fn insert(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome>;
    /// `doc` carries `_key` (and `_rev` when revisions are checked).
    fn update(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome>;
    fn replace(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome>;
    fn remove(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome>;
    fn commit(self: Box<Self>) -> Result<()>;
}

/// [`Transaction::count_by_attribute`] over any document stream (documents need only carry
/// `attr`).
pub fn count_by_attribute_generic(
    docs: DocIter,
    attr: &str,
    check: &(dyn Fn(u64) -> Result<()> + Sync),
) -> Result<Vec<(Value, u64)>> {
    use crate::value::ValueKey;
    let mut groups: std::collections::HashMap<ValueKey, u64> = std::collections::HashMap::new();
    let mut held = 0u64;
    for (i, doc) in docs.enumerate() {
        if i % 4096 == 4095 {
            check(held)?;
        }
        let v = doc?.get(attr).cloned().unwrap_or(Value::Null);
        *groups.entry(ValueKey(v)).or_insert_with_key(|k| {
            held += crate::value::estimate_size(&k.0) * 2 + 64;
            0
        }) += 1;
    }
    Ok(groups.into_iter().map(|(k, n)| (k.0, n)).collect())
}
