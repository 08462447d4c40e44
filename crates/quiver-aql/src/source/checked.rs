//! A transaction that asks, before every read or write, whether the query's caller may touch
//! the collection: the check during execution that complements the server's check of the
//! collections a query names (ArangoDB checks a collection a query reaches only at run time —
//! a handle computed by an expression, the far vertex of an edge — when it adds it).

use std::sync::Arc;

use quiver_core::analyzers::Analyzer;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use super::{
    CollectionInfo, DocIter, EdgeHits, IndexMeta, IndexRange, ScoreOrder, Scorer, SearchQuery,
    SortedRead, StoredColumns, Transaction, ViewHit, WriteOptions, WriteOutcome,
};

/// The rule: given a collection and whether the access writes, whether it is allowed.
type Allows = dyn Fn(&str, bool) -> bool + Send + Sync;

/// Whether the caller may read (`write` false) or write (`write` true) a collection.
#[derive(Clone)]
pub struct CollectionAccess(Arc<Allows>);

impl CollectionAccess {
    /// An access rule from a predicate over (collection, write).
    pub fn new(allows: impl Fn(&str, bool) -> bool + Send + Sync + 'static) -> CollectionAccess {
        CollectionAccess(Arc::new(allows))
    }

    /// Nothing unless the rule refuses the access: a write to a collection the rule lets
    /// the caller read is 403/1004 (ArangoDB's answer to a write with `ro` rights), any other
    /// refusal 403/11.
    pub fn check(&self, collection: &str, write: bool) -> Result<()> {
        if (self.0)(collection, write) {
            Ok(())
        } else if write && (self.0)(collection, false) {
            Err(Error::with_message(
                ErrorCode::ReadOnly,
                format!("read only: {collection} [write]"),
            ))
        } else {
            Err(Error::with_message(
                ErrorCode::Forbidden,
                format!(
                    "not authorized to {} collection '{collection}'",
                    if write { "write to" } else { "read from" }
                ),
            ))
        }
    }
}

impl std::fmt::Debug for CollectionAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CollectionAccess")
    }
}

/// `inner` with every collection access checked against `access` first.
pub struct CheckedTransaction {
    inner: Box<dyn Transaction>,
    access: CollectionAccess,
}

impl CheckedTransaction {
    /// Wraps `inner`.
    pub fn new(inner: Box<dyn Transaction>, access: CollectionAccess) -> CheckedTransaction {
        CheckedTransaction { inner, access }
    }

    fn read(&self, collection: &str) -> Result<()> {
        self.access.check(collection, false)
    }

    /// A search reads every linked collection, whatever `collections` restricts the results
    /// to (ArangoDB adds them all to the query's read set).
    fn check_view_read(&self, view: &str, collections: Option<&[String]>) -> Result<()> {
        for collection in self.inner.view_collections(view)? {
            self.read(&collection)?;
        }
        for collection in collections.unwrap_or_default() {
            self.read(collection)?;
        }
        Ok(())
    }
}

impl Transaction for CheckedTransaction {
    fn snapshot_tick(&self) -> Option<u64> {
        self.inner.snapshot_tick()
    }

    fn collection(&self, name: &str) -> Result<CollectionInfo> {
        self.read(name)?;
        self.inner.collection(name)
    }

    fn count(&self, collection: &str) -> Result<u64> {
        self.read(collection)?;
        self.inner.count(collection)
    }

    fn get(&self, collection: &str, key: &str) -> Result<Option<Value>> {
        self.read(collection)?;
        self.inner.get(collection, key)
    }

    fn get_json(&self, collection: &str, key: &str) -> Result<Option<String>> {
        self.read(collection)?;
        self.inner.get_json(collection, key)
    }

    fn scan(&self, collection: &str) -> Result<DocIter> {
        self.read(collection)?;
        self.inner.scan(collection)
    }

    fn is_view(&self, name: &str) -> bool {
        self.inner.is_view(name)
    }

    fn view_collections(&self, view: &str) -> Result<Vec<String>> {
        self.inner.view_collections(view)
    }

    fn search_view(
        &self,
        view: &str,
        query: &SearchQuery,
        collections: Option<&[String]>,
        scorers: &[Scorer],
        wait_for_sync: bool,
    ) -> Result<Vec<ViewHit>> {
        self.check_view_read(view, collections)?;
        self.inner
            .search_view(view, query, collections, scorers, wait_for_sync)
    }

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
        self.check_view_read(view, collections)?;
        self.inner
            .search_view_top(view, query, collections, scorers, order, k, wait_for_sync)
    }

    fn view_stored_columns(&self, view: &str) -> Result<StoredColumns> {
        self.inner.view_stored_columns(view)
    }

    fn search_view_sorted(
        &self,
        view: &str,
        query: &SearchQuery,
        collections: Option<&[String]>,
        scorers: &[Scorer],
        read: &SortedRead,
        wait_for_sync: bool,
    ) -> Result<Vec<ViewHit>> {
        self.check_view_read(view, collections)?;
        self.inner
            .search_view_sorted(view, query, collections, scorers, read, wait_for_sync)
    }

    fn count_view(
        &self,
        view: &str,
        query: &SearchQuery,
        collections: Option<&[String]>,
        wait_for_sync: bool,
    ) -> Result<Option<u64>> {
        self.check_view_read(view, collections)?;
        self.inner
            .count_view(view, query, collections, wait_for_sync)
    }

    fn view_offset_info(
        &self,
        view: &str,
        doc: &Value,
        query: &SearchQuery,
        rules: &[super::OffsetRule],
    ) -> Result<Value> {
        self.inner.view_offset_info(view, doc, query, rules)
    }

    fn secondary_indexes(&self, collection: &str) -> Result<Vec<IndexMeta>> {
        self.read(collection)?;
        self.inner.secondary_indexes(collection)
    }

    fn index_lookup(
        &self,
        collection: &str,
        index: u64,
        ranges: Vec<IndexRange>,
        reverse: bool,
    ) -> Result<DocIter> {
        self.read(collection)?;
        self.inner.index_lookup(collection, index, ranges, reverse)
    }

    fn index_lookup_covering(
        &self,
        collection: &str,
        index: u64,
        ranges: Vec<IndexRange>,
        reverse: bool,
        attrs: &[String],
    ) -> Result<Option<DocIter>> {
        self.read(collection)?;
        self.inner
            .index_lookup_covering(collection, index, ranges, reverse, attrs)
    }

    fn scan_projected(&self, collection: &str, attrs: &[String]) -> Result<DocIter> {
        self.read(collection)?;
        self.inner.scan_projected(collection, attrs)
    }

    fn count_by_attribute(
        &self,
        collection: &str,
        attr: &str,
        check: &(dyn Fn(u64) -> Result<()> + Sync),
    ) -> Result<Vec<(Value, u64)>> {
        self.read(collection)?;
        self.inner.count_by_attribute(collection, attr, check)
    }

    fn edges(
        &self,
        collection: &str,
        vertex: &str,
        outbound: bool,
        out: &mut EdgeHits,
    ) -> Result<()> {
        self.read(collection)?;
        self.inner.edges(collection, vertex, outbound, out)
    }

    fn edge_degree_hint(&self, collection: &str, vertex: &str, outbound: bool) -> Option<usize> {
        // A planning hint, no data: refused collections fail on the read that follows.
        self.inner.edge_degree_hint(collection, vertex, outbound)
    }

    fn exists(&self, collection: &str, key: &str) -> Result<bool> {
        self.read(collection)?;
        self.inner.exists(collection, key)
    }

    fn existence_epoch(&self, collection: &str) -> Option<u64> {
        // Only for a collection the user may read: otherwise the probe answers (and fails).
        self.read(collection).ok()?;
        self.inner.existence_epoch(collection)
    }

    fn mark_vertex_alive(
        &self,
        edge_collection: &str,
        vertex: &str,
        slot: quiver_core::VertexSlot,
        epoch: u64,
    ) {
        if self.read(edge_collection).is_ok() {
            self.inner
                .mark_vertex_alive(edge_collection, vertex, slot, epoch);
        }
    }

    fn indexes(&self, collection: &str) -> Result<Vec<Value>> {
        self.read(collection)?;
        self.inner.indexes(collection)
    }

    fn collections(&self) -> Result<Vec<(String, String)>> {
        self.inner.collections()
    }

    fn analyzer(&self, name: &str) -> Result<Arc<Analyzer>> {
        self.inner.analyzer(name)
    }

    fn collection_schema(&self, collection: &str) -> Result<Value> {
        self.read(collection)?;
        self.inner.collection_schema(collection)
    }

    fn geo_lookup(
        &self,
        collection: &str,
        index: u64,
        rect: &quiver_core::geo::Rect,
    ) -> Result<Option<Vec<Value>>> {
        self.read(collection)?;
        self.inner.geo_lookup(collection, index, rect)
    }

    fn fulltext_lookup(
        &self,
        collection: &str,
        index: u64,
        query: &quiver_core::fulltext::Query,
    ) -> Result<Option<Vec<Value>>> {
        self.read(collection)?;
        self.inner.fulltext_lookup(collection, index, query)
    }

    fn inverted_search(
        &self,
        collection: &str,
        index: u64,
        query: &super::SearchQuery,
        read: Option<&SortedRead>,
        wait_for_sync: bool,
    ) -> Result<Vec<String>> {
        self.read(collection)?;
        self.inner
            .inverted_search(collection, index, query, read, wait_for_sync)
    }

    fn mdi_lookup(
        &self,
        collection: &str,
        index: u64,
        b: &quiver_core::mdi_index::MdiBox,
    ) -> Result<Option<Vec<Value>>> {
        self.read(collection)?;
        self.inner.mdi_lookup(collection, index, b)
    }

    fn vector_lookup(
        &self,
        collection: &str,
        index: u64,
        query: &[f32],
        n_probe: usize,
        limit: usize,
    ) -> Result<Option<Vec<(f64, Value)>>> {
        self.read(collection)?;
        self.inner
            .vector_lookup(collection, index, query, n_probe, limit)
    }

    fn insert(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome> {
        self.access.check(collection, true)?;
        self.inner.insert(collection, doc, options)
    }

    fn update(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome> {
        self.access.check(collection, true)?;
        self.inner.update(collection, doc, options)
    }

    fn replace(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome> {
        self.access.check(collection, true)?;
        self.inner.replace(collection, doc, options)
    }

    fn remove(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome> {
        self.access.check(collection, true)?;
        self.inner.remove(collection, doc, options)
    }

    fn commit(self: Box<Self>) -> Result<()> {
        self.inner.commit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::memory::MemorySource;
    use crate::source::DataSource;
    use serde_json::json;

    #[test]
    fn refused_collections_fail_every_access_and_others_pass() {
        let source = MemorySource::new();
        for name in ["open", "hidden"] {
            source
                .create_collection("_system", name, false, vec![json!({"_key": "a"})])
                .unwrap();
        }
        let access = CollectionAccess::new(|c, write| c == "open" || (c == "hidden" && !write));
        let mut txn = CheckedTransaction::new(
            source.begin("_system", &["open".to_owned()]).unwrap(),
            access,
        );
        assert!(txn.get("open", "a").unwrap().is_some());
        assert!(txn.get("hidden", "a").unwrap().is_some(), "read allowed");
        // Readable but not writable: ArangoDB's read-only refusal.
        let err = txn
            .insert("hidden", json!({}), &WriteOptions::default())
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::ReadOnly);
        txn.insert("open", json!({"_key": "b"}), &WriteOptions::default())
            .unwrap();
        let closed = CollectionAccess::new(|c, _| c == "open");
        let txn = CheckedTransaction::new(source.begin("_system", &[]).unwrap(), closed);
        for err in [
            txn.get("hidden", "a").err(),
            txn.scan("hidden").err(),
            txn.count("hidden").err(),
            txn.exists("hidden", "a").err(),
        ] {
            assert_eq!(err.map(|e| e.code), Some(ErrorCode::Forbidden));
        }
        assert_eq!(txn.count("open").unwrap(), 1);
    }
}
