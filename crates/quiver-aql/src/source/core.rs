//! [`DataSource`] over quiver-core: read-only queries read from a [`ReadView`] (one engine
//! snapshot); data-modification queries run in one core [`quiver_core::Transaction`], which
//! gives read-your-own-writes and commits all writes as one atomic engine batch.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use quiver_core::{
    Collection, CollectionType, Core, DocumentReader, EdgeDirection, InsertOptions, ModifyOptions,
    OpResult, OverwriteMode, ReadView, RemoveOptions, TransactionOptions, WriteKind,
};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{Map, Value};

use super::skim;
use super::{
    CollectionInfo, DataSource, DocIter, EdgeHits, Transaction, WriteOptions, WriteOutcome,
};

/// The production data source.
pub struct CoreSource {
    core: Arc<Core>,
}

impl CoreSource {
    pub fn new(core: Arc<Core>) -> CoreSource {
        CoreSource { core }
    }
}

impl DataSource for CoreSource {
    fn catalog_version(&self) -> Option<u64> {
        Some(self.core.catalog_version())
    }

    fn collection_data_version(&self, database: &str, name: &str) -> Option<(u64, u64)> {
        let db = self.core.database(database).ok()?;
        let coll = db.collection(name).ok()?;
        Some((coll.id(), coll.data_version()))
    }

    fn begin(&self, database: &str, writes: &[String]) -> Result<Box<dyn Transaction>> {
        let db = self.core.database(database)?;
        let reader = if writes.is_empty() {
            Reader::View(db.read_view())
        } else {
            let names: Vec<&str> = writes.iter().map(String::as_str).collect();
            Reader::Txn(Box::new(
                db.begin_transaction(TransactionOptions::writing(&names))?,
            ))
        };
        Ok(Box::new(CoreTransaction {
            reader,
            collections: Mutex::new(HashMap::new()),
            analyzers: Some((Arc::clone(&self.core), db)),
        }))
    }
}

enum Reader {
    View(ReadView),
    Txn(Box<quiver_core::Transaction>),
    Leased(Lease),
}

/// Where a leased transaction goes back to (see [`leased`]).
pub type LeaseReturn = Arc<Mutex<Option<quiver_core::Transaction>>>;

/// A core transaction the query borrows from its owner (a stream transaction).
struct Lease {
    /// Always `Some` until the lease ends.
    trx: Option<Box<quiver_core::Transaction>>,
    back: LeaseReturn,
    /// Whether the query staged writes: a query that fails after writing must not hand back
    /// a transaction holding half of its writes.
    wrote: bool,
}

impl Lease {
    fn trx(&self) -> &quiver_core::Transaction {
        self.trx
            .as_deref()
            .expect("a lease holds its transaction until it ends")
    }

    fn hand_back(&mut self) {
        if let Some(trx) = self.trx.take() {
            *self.back.lock() = Some(*trx);
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Not committed: the query failed or was abandoned. Reads leave the transaction as
        // it was; staged writes of a failed query are dropped together with it, and the
        // owner, finding nothing handed back, must abort the transaction.
        if !self.wrote {
            self.hand_back();
        }
    }
}

/// A query transaction over `trx`, a core transaction owned elsewhere (the stream
/// transaction of `x-arango-trx-id`): reads see its snapshot and staged writes, writes are
/// staged in it, and `commit` does not commit but puts `trx`, with the query's writes, into
/// `back`. If the query fails before that, `back` stays empty when it had written anything
/// (its partial writes must not survive), and gets `trx` unchanged otherwise.
pub fn leased(trx: quiver_core::Transaction, back: LeaseReturn) -> Box<dyn Transaction> {
    Box::new(CoreTransaction {
        reader: Reader::Leased(Lease {
            trx: Some(Box::new(trx)),
            back,
            wrote: false,
        }),
        collections: Mutex::new(HashMap::new()),
        analyzers: None,
    })
}

struct CoreTransaction {
    reader: Reader,
    /// Resolved collection handles (a query touches a handful, looked up per row).
    collections: Mutex<HashMap<String, Arc<Collection>>>,
    /// Where analyzer names resolve (`TOKENS()`): the core and the query's database; a
    /// leased stream transaction knows only the built-ins.
    analyzers: Option<(Arc<Core>, Arc<quiver_core::Database>)>,
}

impl CoreTransaction {
    fn reader(&self) -> &dyn DocumentReader {
        match &self.reader {
            Reader::View(v) => v,
            Reader::Txn(t) => &**t,
            Reader::Leased(l) => l.trx(),
        }
    }

    /// View `view` of the query's database and the ids of the linked collections named in
    /// `collections` (unknown names are left out). 1203 for an unknown view.
    fn view_and_ids(
        &self,
        view: &str,
        collections: Option<&[String]>,
    ) -> Result<(Arc<quiver_core::View>, Option<Vec<u64>>)> {
        let db = self.reader().database();
        let v = db.view(view).map_err(|_| {
            Error::with_message(
                ErrorCode::DataSourceNotFound,
                format!("collection or view not found: {view}"),
            )
        })?;
        let ids: Option<Vec<u64>> = collections.map(|names| {
            names
                .iter()
                .filter_map(|n| db.collection(n).ok().map(|c| c.id()))
                .collect()
        });
        Ok((v, ids))
    }

    /// The index's hits with collection names; hits of collections gone are left out.
    fn view_hits(&self, hits: Vec<quiver_search::index::Hit>) -> Vec<super::ViewHit> {
        let db = self.reader().database();
        let mut names: HashMap<u64, Option<String>> = HashMap::new();
        let mut out = Vec::with_capacity(hits.len());
        for hit in hits {
            let name = names
                .entry(hit.collection)
                .or_insert_with(|| {
                    db.collection_by_id(hit.collection)
                        .ok()
                        .map(|c| c.name().to_string())
                })
                .clone();
            if let Some(collection) = name {
                out.push(super::ViewHit {
                    collection,
                    key: hit.key,
                    scores: hit.scores,
                    values: hit.values,
                });
            }
        }
        out
    }

    fn coll(&self, name: &str) -> Result<Arc<Collection>> {
        if let Some(c) = self.collections.lock().get(name) {
            return Ok(c.clone());
        }
        let c = self.reader().collection(name).map_err(|e| {
            if e.code == ErrorCode::DataSourceNotFound {
                Error::with_message(
                    ErrorCode::DataSourceNotFound,
                    format!("collection or view not found: {name}"),
                )
            } else {
                e
            }
        })?;
        let mut cache = self.collections.lock();
        if cache.len() < 1024 {
            cache.insert(name.to_string(), c.clone());
        }
        Ok(c)
    }

    /// Records a staged write (a leased transaction must not be handed back after a failed
    /// query that staged something).
    fn written(&mut self, result: Result<OpResult>) -> Result<WriteOutcome> {
        if result.is_ok() {
            if let Reader::Leased(l) = &mut self.reader {
                l.wrote = true;
            }
        }
        result.map(outcome)
    }

    fn txn(&mut self) -> Result<&mut quiver_core::Transaction> {
        match &mut self.reader {
            Reader::Txn(t) => Ok(t),
            Reader::Leased(l) => l
                .trx
                .as_deref_mut()
                .ok_or_else(|| Error::with_message(ErrorCode::Internal, "lease ended")),
            Reader::View(_) => Err(Error::with_message(
                ErrorCode::Internal,
                "write in a read-only query transaction",
            )),
        }
    }
}

fn outcome(r: OpResult) -> WriteOutcome {
    if r.kind == WriteKind::Ignored {
        return WriteOutcome {
            old: None,
            new: None,
        };
    }
    WriteOutcome {
        old: r.old,
        new: r.new,
    }
}

fn modify_options(o: &WriteOptions) -> ModifyOptions {
    let mut m = ModifyOptions::new();
    m.wait_for_sync = o.wait_for_sync;
    m.ignore_revs = o.ignore_revs;
    m.keep_null = o.keep_null;
    m.merge_objects = o.merge_objects;
    m.version_attribute = o.version_attribute.clone();
    m.return_new = true;
    m.return_old = true;
    m
}

fn key_of(doc: &Value) -> Result<String> {
    doc.get("_key")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Error::new(ErrorCode::DocumentKeyMissing))
}

impl Transaction for CoreTransaction {
    fn snapshot_tick(&self) -> Option<u64> {
        match &self.reader {
            Reader::View(view) => Some(view.snapshot().tick()),
            Reader::Txn(_) | Reader::Leased(_) => None,
        }
    }

    fn is_view(&self, name: &str) -> bool {
        self.reader().database().view(name).is_ok()
    }

    fn view_collections(&self, view: &str) -> Result<Vec<String>> {
        let db = self.reader().database();
        let v = db.view(view).map_err(|_| {
            Error::with_message(
                ErrorCode::DataSourceNotFound,
                format!("collection or view not found: {view}"),
            )
        })?;
        Ok(v.linked_collections()
            .into_iter()
            .filter_map(|id| db.collection_by_id(id).ok().map(|c| c.name().to_string()))
            .collect())
    }

    fn search_view(
        &self,
        view: &str,
        query: &super::SearchQuery,
        collections: Option<&[String]>,
        scorers: &[super::Scorer],
        wait_for_sync: bool,
    ) -> Result<Vec<super::ViewHit>> {
        let (v, ids) = self.view_and_ids(view, collections)?;
        let hits = v.search(query, ids.as_deref(), scorers, wait_for_sync)?;
        Ok(self.view_hits(hits))
    }

    fn search_view_top(
        &self,
        view: &str,
        query: &super::SearchQuery,
        collections: Option<&[String]>,
        scorers: &[super::Scorer],
        order: &super::ScoreOrder,
        k: usize,
        wait_for_sync: bool,
    ) -> Result<Vec<super::ViewHit>> {
        let (v, ids) = self.view_and_ids(view, collections)?;
        let hits = v.search_top(query, ids.as_deref(), scorers, order, k, wait_for_sync)?;
        Ok(self.view_hits(hits))
    }

    fn view_stored_columns(&self, view: &str) -> Result<super::StoredColumns> {
        let (v, _) = self.view_and_ids(view, None)?;
        Ok(v.stored_columns())
    }

    fn search_view_sorted(
        &self,
        view: &str,
        query: &super::SearchQuery,
        collections: Option<&[String]>,
        scorers: &[super::Scorer],
        read: &super::SortedRead,
        wait_for_sync: bool,
    ) -> Result<Vec<super::ViewHit>> {
        let (v, ids) = self.view_and_ids(view, collections)?;
        let hits = v.search_sorted(query, ids.as_deref(), scorers, read, wait_for_sync)?;
        Ok(self.view_hits(hits))
    }

    fn count_view(
        &self,
        view: &str,
        query: &super::SearchQuery,
        collections: Option<&[String]>,
        wait_for_sync: bool,
    ) -> Result<Option<u64>> {
        // Only a read view is one snapshot at a known tick; a transaction's own writes are
        // not in any index.
        let Reader::View(read_view) = &self.reader else {
            return Ok(None);
        };
        let (v, ids) = self.view_and_ids(view, collections)?;
        let db = read_view.database();
        let mut linked = Vec::new();
        for id in v.linked_collections() {
            match db.collection_by_id(id) {
                Ok(c) => linked.push(c),
                Err(_) => return Ok(None),
            }
        }
        v.count_in_snapshot(
            query,
            ids.as_deref(),
            &linked,
            read_view.snapshot().tick(),
            wait_for_sync,
        )
    }

    fn view_offset_info(
        &self,
        view: &str,
        doc: &Value,
        query: &super::SearchQuery,
        rules: &[super::OffsetRule],
    ) -> Result<Value> {
        let db = self.reader().database();
        let v = db.view(view).map_err(|_| {
            Error::with_message(
                ErrorCode::DataSourceNotFound,
                format!("collection or view not found: {view}"),
            )
        })?;
        quiver_search::index::offset_info(query, doc, rules, &**v.analyzer_source())
    }

    fn secondary_indexes(&self, collection: &str) -> Result<Vec<super::IndexMeta>> {
        let coll = self.coll(collection)?;
        Ok(coll
            .query_indexes()
            .into_iter()
            // A vector index still building answers exactly by a scan (`exec/vector.rs`),
            // so a nearest-vector query is planned for it all the same; an inverted index is
            // kept by its own indexer (eventually consistent, `waitForSync` to catch up).
            .filter(|ix| ix.ready || ix.kind == "vector" || ix.kind == "inverted")
            .map(|ix| super::IndexMeta {
                id: ix.id,
                name: ix.name,
                kind: ix.kind,
                fields: ix.fields,
                unique: ix.unique,
                sparse: ix.sparse,
                selectivity: ix.selectivity,
                description: ix.description,
            })
            .collect())
    }

    fn index_lookup(
        &self,
        collection: &str,
        index: u64,
        ranges: Vec<super::IndexRange>,
        reverse: bool,
    ) -> Result<DocIter> {
        let coll = self.coll(collection)?;
        Ok(Box::new(
            self.reader().index_lookup(&coll, index, ranges, reverse)?,
        ))
    }

    fn index_lookup_covering(
        &self,
        collection: &str,
        index: u64,
        ranges: Vec<super::IndexRange>,
        reverse: bool,
        attrs: &[String],
    ) -> Result<Option<DocIter>> {
        let coll = self.coll(collection)?;
        Ok(self
            .reader()
            .index_lookup_covering(&coll, index, ranges, reverse, attrs)?
            .map(|iter| Box::new(iter) as DocIter))
    }

    fn collection(&self, name: &str) -> Result<CollectionInfo> {
        let c = self.coll(name)?;
        Ok(CollectionInfo {
            name: c.name().to_string(),
            is_edge: c.collection_type() == CollectionType::Edge,
        })
    }

    fn count(&self, collection: &str) -> Result<u64> {
        let c = self.coll(collection)?;
        self.reader().count(&c)
    }

    fn get(&self, collection: &str, key: &str) -> Result<Option<Value>> {
        let c = self.coll(collection)?;
        if quiver_types::validate_key(key).is_err() {
            return Ok(None);
        }
        self.reader().get(&c, key)
    }

    fn get_json(&self, collection: &str, key: &str) -> Result<Option<String>> {
        let c = self.coll(collection)?;
        if quiver_types::validate_key(key).is_err() {
            return Ok(None);
        }
        match self.reader().get_raw(&c, key)? {
            // Stored bodies are JSON the server serialized itself: valid UTF-8 unless the
            // datafile is damaged, which is reported rather than passed on.
            Some((_, raw)) => String::from_utf8(raw.to_vec()).map(Some).map_err(|_| {
                Error::with_message(
                    ErrorCode::Internal,
                    format!("document '{collection}/{key}' is not valid UTF-8"),
                )
            }),
            None => Ok(None),
        }
    }

    fn scan(&self, collection: &str) -> Result<DocIter> {
        let c = self.coll(collection)?;
        Ok(Box::new(self.reader().scan(&c)?))
    }

    fn indexes(&self, collection: &str) -> Result<Vec<Value>> {
        self.coll(collection)?.indexes()
    }

    fn collections(&self) -> Result<Vec<(String, String)>> {
        Ok(self
            .reader()
            .database()
            .collections()
            .iter()
            .map(|c| (c.id().to_string(), c.name().to_string()))
            .collect())
    }

    fn collection_schema(&self, collection: &str) -> Result<Value> {
        Ok(self.coll(collection)?.schema().unwrap_or(Value::Null))
    }

    fn analyzer(&self, name: &str) -> Result<Arc<quiver_core::analyzers::Analyzer>> {
        match &self.analyzers {
            Some((core, db)) => quiver_core::analyzers::lookup(core, db, name),
            None => quiver_core::analyzers::builtin(name),
        }
    }

    fn geo_lookup(
        &self,
        collection: &str,
        index: u64,
        rect: &quiver_core::geo::Rect,
    ) -> Result<Option<Vec<Value>>> {
        let c = self.coll(collection)?;
        // An index still being built cannot answer yet; the caller scans instead.
        if !c.query_indexes().iter().any(|i| i.id == index && i.ready) {
            return Ok(None);
        }
        self.reader().geo_lookup(&c, index, rect).map(Some)
    }

    fn fulltext_lookup(
        &self,
        collection: &str,
        index: u64,
        query: &quiver_core::fulltext::Query,
    ) -> Result<Option<Vec<Value>>> {
        let c = self.coll(collection)?;
        // While the index is still being built the caller scans instead.
        if !c.query_indexes().iter().any(|i| i.id == index && i.ready) {
            return Ok(None);
        }
        self.reader().fulltext_lookup(&c, index, query).map(Some)
    }

    fn inverted_search(
        &self,
        collection: &str,
        index: u64,
        query: &super::SearchQuery,
        read: Option<&super::SortedRead>,
        wait_for_sync: bool,
    ) -> Result<Vec<String>> {
        let c = self.coll(collection)?;
        c.search_inverted_index(index, query, read, wait_for_sync)
    }

    fn mdi_lookup(
        &self,
        collection: &str,
        index: u64,
        b: &quiver_core::mdi_index::MdiBox,
    ) -> Result<Option<Vec<Value>>> {
        let c = self.coll(collection)?;
        if !c.query_indexes().iter().any(|i| i.id == index && i.ready) {
            return Ok(None);
        }
        self.reader().mdi_lookup(&c, index, b).map(Some)
    }

    fn vector_lookup(
        &self,
        collection: &str,
        index: u64,
        query: &[f32],
        n_probe: usize,
        limit: usize,
    ) -> Result<Option<Vec<(f64, Value)>>> {
        let c = self.coll(collection)?;
        // While the index is still being built the caller searches exactly instead.
        if !c.query_indexes().iter().any(|i| i.id == index && i.ready) {
            return Ok(None);
        }
        self.reader()
            .vector_lookup(&c, index, query, n_probe, limit)
            .map(Some)
    }

    fn scan_projected(&self, collection: &str, attrs: &[String]) -> Result<DocIter> {
        // Inside a write transaction staged documents must be merged in; the plain scan
        // does that. Read views go straight to the snapshot and decode only `attrs`, reading
        // the files in storage order (a full `FOR d IN coll` promises no order, in ArangoDB
        // neither), which turns random memory access into a sequential stream.
        let Reader::View(view) = &self.reader else {
            return self.scan(collection);
        };
        let c = self.coll(collection)?;
        c.check_usable()?;
        let name: Arc<str> = c.name();
        let projection = Projection::new(attrs);
        let mut scan = view.snapshot().ordered_scan(c.id())?;
        Ok(Box::new(std::iter::from_fn(move || {
            let doc = scan.next_raw()?;
            Some(doc.and_then(|d| projection.apply(d.body, d.key, &name)))
        })))
    }

    fn count_by_attribute(
        &self,
        collection: &str,
        attr: &str,
        check: &(dyn Fn(u64) -> Result<()> + Sync),
    ) -> Result<Vec<(Value, u64)>> {
        let Reader::View(view) = &self.reader else {
            let docs = self.scan_projected(collection, &[attr.to_string()])?;
            return super::count_by_attribute_generic(docs, attr, check);
        };
        let c = self.coll(collection)?;
        c.check_usable()?;
        let scan = view.snapshot().ordered_scan(c.id())?;
        // The machine's cores share the scan; each counts its part into its own table.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let finder = skim::AttributeFinder::new(attr);
        let parts = scan.for_each_parallel(threads, RawCounts::default, |counts, doc| {
            counts.seen += 1;
            if counts.seen % 4096 == 0 {
                check(counts.held)?;
            }
            let raw = finder
                .raw(doc.body)
                .map_err(|e| Error::with_message(ErrorCode::CorruptedDatafile, e.0))?;
            counts.add(raw);
            Ok(())
        })?;
        RawCounts::merge(parts)
    }

    fn edges(
        &self,
        collection: &str,
        vertex: &str,
        outbound: bool,
        out: &mut EdgeHits,
    ) -> Result<()> {
        let c = self.coll(collection)?;
        let direction = if outbound {
            EdgeDirection::Outbound
        } else {
            EdgeDirection::Inbound
        };
        let start = out.len();
        self.reader().edges(&c, vertex, direction, out)?;
        // ArangoDB's edge index (and therefore its traversal order) follows the order edges
        // were written in, which the ever-increasing revisions give. The index keeps its
        // lists in that order; a transaction's own edges come last.
        out.sort_by_rev_from(start);
        Ok(())
    }

    fn edge_degree_hint(&self, collection: &str, vertex: &str, outbound: bool) -> Option<usize> {
        let direction = if outbound {
            EdgeDirection::Outbound
        } else {
            EdgeDirection::Inbound
        };
        self.coll(collection)
            .ok()?
            .edge_degree_hint(vertex, direction)
    }

    fn exists(&self, collection: &str, key: &str) -> Result<bool> {
        if let Reader::View(view) = &self.reader {
            // A collection the query resolved before (a traversal checks every vertex it
            // reaches) is borrowed under the query's own cache lock: no reference count of
            // the shared collection is touched per vertex.
            let resolved = self.collections.lock();
            if let Some(c) = resolved.get(collection) {
                if quiver_types::validate_key(key).is_err() {
                    return Ok(false);
                }
                c.check_usable()?;
                return Ok(view.snapshot().revision(c.id(), key)?.is_some());
            }
        }
        let c = self.coll(collection)?;
        if quiver_types::validate_key(key).is_err() {
            return Ok(false);
        }
        match &self.reader {
            // A primary-index probe: the document body is neither read nor parsed.
            Reader::View(view) => {
                c.check_usable()?;
                Ok(view.snapshot().revision(c.id(), key)?.is_some())
            }
            Reader::Txn(_) | Reader::Leased(_) => Ok(self.reader().get_raw(&c, key)?.is_some()),
        }
    }

    fn existence_epoch(&self, collection: &str) -> Option<u64> {
        // A read view only: a transaction's own staged writes are not in any epoch.
        let Reader::View(view) = &self.reader else {
            return None;
        };
        let c = self.coll(collection).ok()?;
        c.check_usable().ok()?;
        view.snapshot().existence_epoch(c.id()).ok().flatten()
    }

    fn mark_vertex_alive(
        &self,
        edge_collection: &str,
        vertex: &str,
        slot: quiver_core::VertexSlot,
        epoch: u64,
    ) {
        if let Ok(c) = self.coll(edge_collection) {
            c.mark_vertex_alive(vertex, slot, epoch);
        }
    }

    fn insert(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome> {
        let c = self.coll(collection)?;
        let mut o = InsertOptions::new();
        o.wait_for_sync = options.wait_for_sync;
        o.keep_null = options.keep_null;
        o.merge_objects = options.merge_objects;
        o.overwrite_mode = match &options.overwrite_mode {
            Some(m) => OverwriteMode::parse(m)?,
            None => OverwriteMode::Conflict,
        };
        o.version_attribute = options.version_attribute.clone();
        o.return_new = true;
        o.return_old = true;
        let result = self.txn()?.insert(&c, doc, &o);
        self.written(result)
    }

    fn update(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome> {
        let c = self.coll(collection)?;
        let key = key_of(&doc)?;
        let result = self
            .txn()?
            .update(&c, Some(&key), doc, &modify_options(options));
        self.written(result)
    }

    fn replace(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome> {
        let c = self.coll(collection)?;
        let key = key_of(&doc)?;
        let result = self
            .txn()?
            .replace(&c, Some(&key), doc, &modify_options(options));
        self.written(result)
    }

    fn remove(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome> {
        let c = self.coll(collection)?;
        let mut o = RemoveOptions::new();
        o.wait_for_sync = options.wait_for_sync;
        o.ignore_revs = options.ignore_revs;
        o.return_old = true;
        let result = self.txn()?.remove(&c, &doc, &o);
        self.written(result)
    }

    fn commit(self: Box<Self>) -> Result<()> {
        match self.reader {
            Reader::View(_) => Ok(()),
            Reader::Txn(t) => t.commit()?.wait(),
            Reader::Leased(mut l) => {
                l.hand_back();
                Ok(())
            }
        }
    }
}

/// The attributes a projected scan materializes. `_key`/`_id` come from the index key, the
/// others from the stored body through the skimmer.
struct Projection {
    body_attrs: Vec<String>,
    key: bool,
    id: bool,
}

impl Projection {
    fn new(attrs: &[String]) -> Projection {
        Projection {
            body_attrs: attrs
                .iter()
                .filter(|a| *a != "_key" && *a != "_id")
                .cloned()
                .collect(),
            key: attrs.iter().any(|a| a == "_key"),
            id: attrs.iter().any(|a| a == "_id"),
        }
    }

    /// Other values of the body are skipped without being built, and the skim stops once all
    /// wanted ones were found (stored bodies never repeat a key: the core serializes them
    /// from a map).
    fn apply(&self, body: &[u8], key: &str, collection: &str) -> Result<Value> {
        let mut out = if self.body_attrs.is_empty() {
            Map::new()
        } else {
            skim::skim(body, &self.body_attrs, skim::Duplicates::Impossible)
                .map_err(|e| Error::with_message(ErrorCode::CorruptedDatafile, e.0))?
        };
        if self.key {
            out.insert("_key".into(), Value::String(key.to_string()));
        }
        if self.id {
            out.insert("_id".into(), Value::String(format!("{collection}/{key}")));
        }
        Ok(Value::Object(out))
    }
}

/// Documents counted per raw JSON text of one attribute (one table per scan thread).
/// Small non-negative integers — ages, years, ratings, the common case of a grouped count —
/// go to a dense array, everything else to a map keyed by the raw text. Distinct texts are
/// decoded once, at the end, and merged by AQL equality (`26` and `26.0` are one group).
#[derive(Default)]
struct RawCounts {
    small: Vec<u64>,
    other: HashMap<Box<[u8]>, u64>,
    /// Documents without the attribute or with `null` in it (one group).
    missing: u64,
    seen: u64,
    /// Estimated bytes of `other`'s keys and slots (memory accounting).
    held: u64,
}

/// Integers below this are counted in [`RawCounts::small`].
const SMALL_INTS: usize = 1024;

impl RawCounts {
    fn add(&mut self, raw: Option<&[u8]>) {
        // A missing attribute and `null` are the same group (AQL reads a missing one as null).
        let Some(raw) = raw.filter(|r| *r != b"null") else {
            self.missing += 1;
            return;
        };
        if let Some(n) = small_int(raw) {
            if self.small.is_empty() {
                self.small = vec![0; SMALL_INTS];
            }
            self.small[n] += 1;
        } else if let Some(c) = self.other.get_mut(raw) {
            *c += 1;
        } else {
            self.held += raw.len() as u64 + 64;
            self.other.insert(raw.into(), 1);
        }
    }

    fn merge(parts: Vec<RawCounts>) -> Result<Vec<(Value, u64)>> {
        let mut groups: HashMap<crate::value::ValueKey, u64> = HashMap::new();
        let mut add = |v: Value, n: u64| *groups.entry(crate::value::ValueKey(v)).or_insert(0) += n;
        for p in parts {
            if p.missing > 0 {
                add(Value::Null, p.missing);
            }
            for (i, &n) in p.small.iter().enumerate() {
                if n > 0 {
                    add(Value::from(i as u64), n);
                }
            }
            for (raw, n) in p.other {
                let v: Value = serde_json::from_slice(&raw).map_err(|_| {
                    Error::with_message(ErrorCode::CorruptedDatafile, "malformed attribute value")
                })?;
                add(v, n);
            }
        }
        Ok(groups.into_iter().map(|(k, n)| (k.0, n)).collect())
    }
}

/// `raw` as an integer below [`SMALL_INTS`] when it is written as one in canonical form
/// (digits only, no leading zero), as serde_json writes integers.
fn small_int(raw: &[u8]) -> Option<usize> {
    if raw.is_empty() || raw.len() > 4 || (raw.len() > 1 && raw[0] == b'0') {
        return None;
    }
    let mut n = 0usize;
    for &b in raw {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + (b - b'0') as usize;
    }
    (n < SMALL_INTS).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_ints_are_canonical_integers_below_the_table_size() {
        assert_eq!(small_int(b"0"), Some(0));
        assert_eq!(small_int(b"26"), Some(26));
        assert_eq!(small_int(b"1023"), Some(1023));
        for raw in [
            &b"1024"[..],
            b"10000",
            b"007",
            b"-1",
            b"1.0",
            b"2e1",
            b"",
            b"\"1\"",
        ] {
            assert_eq!(small_int(raw), None, "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn raw_counts_merge_equal_values_across_tables() {
        let mut a = RawCounts::default();
        let mut b = RawCounts::default();
        for raw in [&b"26"[..], b"26.0", b"\"26\"", b"null", b"[1,2]"] {
            a.add(Some(raw));
        }
        a.add(None);
        for raw in [&b"2.6e1"[..], b"[1, 2]", b"1500", b"26"] {
            b.add(Some(raw));
        }
        let mut got = RawCounts::merge(vec![a, b]).unwrap();
        got.sort_by(|x, y| crate::value::compare(&x.0, &y.0));
        let got: Vec<(String, u64)> = got.into_iter().map(|(v, n)| (v.to_string(), n)).collect();
        let want = [
            ("null", 2),
            ("26", 4),
            ("1500", 1),
            ("\"26\"", 1),
            ("[1,2]", 2),
        ];
        assert_eq!(got.len(), want.len(), "{got:?}");
        for ((v, n), (wv, wn)) in got.iter().zip(want) {
            // 26 may be represented by any of its spellings.
            if wv == "26" {
                assert_eq!(v.parse::<f64>().unwrap(), 26.0);
            } else {
                assert_eq!(v, wv);
            }
            assert_eq!(*n, wn, "{v}");
        }
        let bad = RawCounts {
            other: [(Box::from(&b"{"[..]), 1)].into_iter().collect(),
            ..RawCounts::default()
        };
        assert_eq!(
            RawCounts::merge(vec![bad]).unwrap_err().code,
            ErrorCode::CorruptedDatafile
        );
    }
}
