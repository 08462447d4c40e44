//! Transactions (many operations on several collections of one database, committed as one
//! engine batch) and read views (a consistent snapshot for queries).

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use quiver_errors::{Error, ErrorCode, Result};
use quiver_storage::{CollectionId, Snapshot};
use quiver_types::Revision;
use serde_json::Value;

use crate::collection::Collection;
use crate::commit::commit_staged;
use crate::database::Database;
use crate::document::decode_with_id;
use crate::document_rules;
use crate::indexes::edge::{EdgeDirection, EdgeHits};
use crate::indexes::persistent::IndexRange;
use crate::lookup::{staged_lookup, IndexScan};
use crate::options::{Committed, WriteOptions};
use crate::staging::Staging;

/// Transactions and read views over one database.
impl Database {
    /// A consistent read view over all collections of this database (an engine snapshot).
    pub fn read_view(self: &Arc<Self>) -> ReadView {
        ReadView::new(Arc::clone(self), self.engine().snapshot())
    }

    /// Starts a transaction over collections of this database. Errors: 1203 for an unknown
    /// declared collection, 1228 after a drop.
    pub fn begin_transaction(self: &Arc<Self>, options: TransactionOptions) -> Result<Transaction> {
        self.check_usable()?;
        Transaction::begin(Arc::clone(self), options)
    }
}

/// An iterator over documents (JSON values with `_id`), owning everything it needs (it can be
/// kept across requests, e.g. by a cursor).
pub struct DocumentIter {
    inner: Box<dyn Iterator<Item = Result<Value>> + Send>,
}

impl DocumentIter {
    fn new(inner: impl Iterator<Item = Result<Value>> + Send + 'static) -> DocumentIter {
        DocumentIter {
            inner: Box::new(inner),
        }
    }
}

impl Iterator for DocumentIter {
    type Item = Result<Value>;
    fn next(&mut self) -> Option<Result<Value>> {
        self.inner.next()
    }
}

impl std::fmt::Debug for DocumentIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DocumentIter")
    }
}

/// Read access shared by [`ReadView`] and [`Transaction`], so query code works with either.
pub trait DocumentReader {
    /// The database read from.
    fn database(&self) -> &Arc<Database>;

    /// A collection of the database by name or id (1203 otherwise; in a transaction that does
    /// not allow implicit collections, 1652 for an undeclared one).
    fn collection(&self, name: &str) -> Result<Arc<Collection>>;

    /// A stored document's revision and response-ready JSON (with `_id`), or None.
    fn get_raw(&self, coll: &Collection, key: &str) -> Result<Option<(Revision, Bytes)>>;

    /// A document as a value with `_id`, or None.
    fn get(&self, coll: &Collection, key: &str) -> Result<Option<Value>> {
        match self.get_raw(coll, key)? {
            Some((_, raw)) => serde_json::from_slice(&raw)
                .map(Some)
                .map_err(|e| Error::with_message(ErrorCode::CorruptedDatafile, e.to_string())),
            None => Ok(None),
        }
    }

    /// Number of documents.
    fn count(&self, coll: &Collection) -> Result<u64>;

    /// Every document, in no particular order.
    fn scan(&self, coll: &Collection) -> Result<DocumentIter>;

    /// Appends the edges of edge collection `coll` whose `_from` (outbound) or `_to`
    /// (inbound) is `vertex`, as this reader sees them, to `out`: key, revision and the vertex
    /// at the other end, without reading the edge documents (fetch them with `get` when
    /// needed). Uses the collection's edge index. Error 1218 for a document collection.
    fn edges(
        &self,
        coll: &Collection,
        vertex: &str,
        direction: EdgeDirection,
        out: &mut EdgeHits,
    ) -> Result<()>;

    /// The documents of `coll` found through its persistent index `index` (an id from
    /// [`Collection::query_indexes`]) in `ranges`, range after range, each in index order
    /// (descending when `reverse`), as this reader sees them. A document indexed under several
    /// values (array expansion) is produced once. Errors: 1212 for an unknown index, 10 for an
    /// index type without range lookups.
    fn index_lookup(
        &self,
        coll: &Collection,
        index: u64,
        ranges: Vec<IndexRange>,
        reverse: bool,
    ) -> Result<DocumentIter>;

    /// Like [`DocumentReader::index_lookup`], but the documents hold only the top-level
    /// attributes `attrs`, built from the index entries and the index's `storedValues`
    /// without reading the documents. None when the index does not cover `attrs` (or, in a
    /// transaction, when it staged writes in `coll`): the caller uses `index_lookup`.
    fn index_lookup_covering(
        &self,
        coll: &Collection,
        index: u64,
        ranges: Vec<IndexRange>,
        reverse: bool,
        attrs: &[String],
    ) -> Result<Option<DocumentIter>>;

    /// The documents of `coll` that its geo index `index` files under cells meeting `rect`,
    /// as this reader sees them (a superset of the documents whose shape meets `rect`: the
    /// caller re-checks each exactly). Errors: 1212 for an unknown index, 10 for another type.
    fn geo_lookup(
        &self,
        coll: &Collection,
        index: u64,
        rect: &crate::geo::Rect,
    ) -> Result<Vec<Value>>;

    /// The documents of `coll` that its fulltext index `index` names for `query`, as this
    /// reader sees them (a superset of the matches: the caller re-checks each exactly).
    /// Errors: 1212 for an unknown index, 10 for another type.
    fn fulltext_lookup(
        &self,
        coll: &Collection,
        index: u64,
        query: &crate::indexes::fulltext::Query,
    ) -> Result<Vec<Value>>;

    /// At most `limit` documents of `coll` nearest to `query` (of the index's dimension)
    /// through its vector index `index`, best first with the metric's value, as this reader
    /// sees them: the entries of the `n_probe` lists nearest to the query. Errors: 1212 for
    /// an unknown index, 10 for another type.
    fn vector_lookup(
        &self,
        coll: &Collection,
        index: u64,
        query: &[f32],
        n_probe: usize,
        limit: usize,
    ) -> Result<Vec<(f64, Value)>>;

    /// The documents of `coll` that lie in box `b` of its mdi index `index`, as this reader
    /// sees them (exactly those). Errors: 1212 for an unknown index, 10 for another type.
    fn mdi_lookup(
        &self,
        coll: &Collection,
        index: u64,
        b: &crate::indexes::mdi::MdiBox,
    ) -> Result<Vec<Value>>;
}

fn scan_snapshot(
    snapshot: &Snapshot,
    coll: &Collection,
    skip: HashSet<String>,
) -> Result<impl Iterator<Item = Result<Value>> + Send + 'static> {
    let name = coll.name();
    let iter = snapshot.scan(coll.id())?;
    Ok(iter.filter_map(move |item| match item {
        Ok((key, doc)) => {
            if skip.contains(&key) {
                None
            } else {
                Some(decode_with_id(&doc.body, &name, &key))
            }
        }
        Err(err) => Some(Err(err)),
    }))
}

fn raw_with_id(coll: &Collection, key: &str, rev: Revision, body: &Bytes) -> (Revision, Bytes) {
    (
        rev,
        crate::document::splice_id(body, key, &coll.escaped_name()),
    )
}

/// A consistent, read-only view of one database at one point in time (an engine snapshot):
/// every read sees exactly the batches committed before it was taken. Cheap to create; holding
/// it keeps old document versions alive, so drop it when done.
#[derive(Clone)]
pub struct ReadView {
    db: Arc<Database>,
    snapshot: Snapshot,
}

impl std::fmt::Debug for ReadView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadView")
            .field("database", &self.db.name())
            .field("tick", &self.snapshot.tick())
            .finish()
    }
}

impl ReadView {
    pub(crate) fn new(db: Arc<Database>, snapshot: Snapshot) -> ReadView {
        ReadView { db, snapshot }
    }

    /// The engine snapshot.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }
}

impl DocumentReader for ReadView {
    fn database(&self) -> &Arc<Database> {
        &self.db
    }

    fn collection(&self, name: &str) -> Result<Arc<Collection>> {
        self.db.collection(name)
    }

    fn get_raw(&self, coll: &Collection, key: &str) -> Result<Option<(Revision, Bytes)>> {
        coll.check_usable()?;
        Ok(self
            .snapshot
            .get(coll.id(), key)?
            .map(|doc| raw_with_id(coll, key, doc.rev, &doc.body)))
    }

    fn count(&self, coll: &Collection) -> Result<u64> {
        coll.check_usable()?;
        self.snapshot.count(coll.id())
    }

    fn scan(&self, coll: &Collection) -> Result<DocumentIter> {
        coll.check_usable()?;
        Ok(DocumentIter::new(scan_snapshot(
            &self.snapshot,
            coll,
            HashSet::new(),
        )?))
    }

    fn edges(
        &self,
        coll: &Collection,
        vertex: &str,
        direction: EdgeDirection,
        out: &mut EdgeHits,
    ) -> Result<()> {
        coll.lookup_edges(&self.snapshot, vertex, direction, out)
    }

    fn index_lookup(
        &self,
        coll: &Collection,
        index: u64,
        ranges: Vec<IndexRange>,
        reverse: bool,
    ) -> Result<DocumentIter> {
        coll.check_usable()?;
        if index == crate::key_range::PRIMARY_INDEX_ID {
            let scan = || Ok(Box::new(self.scan(coll)?) as crate::key_range::Documents);
            let found = crate::key_range::primary_lookup(
                scan,
                &self.snapshot,
                coll,
                false,
                ranges,
                reverse,
            )?;
            return Ok(DocumentIter::new(found));
        }
        let scan = IndexScan::new(
            coll,
            index,
            self.snapshot.clone(),
            ranges,
            reverse,
            Arc::new(HashSet::new()),
        )?;
        Ok(DocumentIter::new(scan))
    }

    fn index_lookup_covering(
        &self,
        coll: &Collection,
        index: u64,
        ranges: Vec<IndexRange>,
        reverse: bool,
        attrs: &[String],
    ) -> Result<Option<DocumentIter>> {
        coll.check_usable()?;
        if index == crate::key_range::PRIMARY_INDEX_ID {
            return Ok(None);
        }
        let scan = IndexScan::new(
            coll,
            index,
            self.snapshot.clone(),
            ranges,
            reverse,
            Arc::new(HashSet::new()),
        )?;
        Ok(scan.covering(attrs).map(DocumentIter::new))
    }

    fn geo_lookup(
        &self,
        coll: &Collection,
        index: u64,
        rect: &crate::geo::Rect,
    ) -> Result<Vec<Value>> {
        coll.check_usable()?;
        crate::lookup::geo_candidates(coll, index, &self.snapshot, rect, None)
    }

    fn fulltext_lookup(
        &self,
        coll: &Collection,
        index: u64,
        query: &crate::indexes::fulltext::Query,
    ) -> Result<Vec<Value>> {
        coll.check_usable()?;
        crate::lookup::fulltext_candidates(coll, index, &self.snapshot, query, None)
    }

    fn vector_lookup(
        &self,
        coll: &Collection,
        index: u64,
        query: &[f32],
        n_probe: usize,
        limit: usize,
    ) -> Result<Vec<(f64, Value)>> {
        coll.check_usable()?;
        crate::lookup::vector_nearest(coll, index, &self.snapshot, query, n_probe, limit, None)
    }

    fn mdi_lookup(
        &self,
        coll: &Collection,
        index: u64,
        b: &crate::indexes::mdi::MdiBox,
    ) -> Result<Vec<Value>> {
        coll.check_usable()?;
        crate::lookup::mdi_candidates(coll, index, &self.snapshot, b, None)
    }
}

/// Which collections a transaction uses and how.
#[derive(Clone, Debug, Default)]
pub struct TransactionOptions {
    /// Collections only read.
    pub read: Vec<String>,
    /// Collections written.
    pub write: Vec<String>,
    /// Collections written exclusively (treated like `write`: writers are serialized per
    /// collection at commit anyway).
    pub exclusive: Vec<String>,
    /// Whether undeclared collections may be read (ArangoDB's default: true).
    pub allow_implicit: bool,
    /// Commit waits for stable storage.
    pub wait_for_sync: bool,
    /// Limit on staged bytes (default: the core's `max_transaction_size`).
    pub max_transaction_size: Option<usize>,
}

impl TransactionOptions {
    /// A transaction that may write `write` and read anything.
    pub fn writing(write: &[&str]) -> TransactionOptions {
        TransactionOptions {
            write: write.iter().map(|s| s.to_string()).collect(),
            allow_implicit: true,
            ..TransactionOptions::default()
        }
    }
}

/// A transaction: reads see the snapshot taken at `begin` plus the transaction's own writes;
/// writes are staged in memory and committed all at once as one engine batch (all or nothing,
/// visible at once). Dropping it without commit aborts it.
///
/// Isolation is snapshot isolation with first-committer-wins: at commit the written
/// collections are locked in id order and every written document is checked to be unchanged
/// since the snapshot; otherwise the commit fails with 409/1200 (write-write conflict) and
/// nothing is written.
pub struct Transaction {
    db: Arc<Database>,
    staging: Staging,
    read_set: HashSet<CollectionId>,
    allow_implicit: bool,
    /// Its place in the transaction counts (an abort unless marked committed).
    counted: crate::txn_stats::Counted,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("database", &self.db.name())
            .field("staged", &self.staging.entries.len())
            .finish()
    }
}

impl Transaction {
    pub(crate) fn begin(db: Arc<Database>, options: TransactionOptions) -> Result<Transaction> {
        let mut write_set = HashSet::new();
        for name in options.write.iter().chain(&options.exclusive) {
            write_set.insert(db.collection(name)?.id());
        }
        let mut read_set = HashSet::new();
        for name in &options.read {
            read_set.insert(db.collection(name)?.id());
        }
        let max = options
            .max_transaction_size
            .unwrap_or(db.settings.max_transaction_size);
        let mut staging = Staging::new(db.engine().snapshot(), max);
        staging.sync = options.wait_for_sync;
        staging.writable = Some(write_set);
        Ok(Transaction {
            db,
            staging,
            read_set,
            allow_implicit: options.allow_implicit,
            counted: crate::txn_stats::Counted::start(),
        })
    }

    fn check_read(&self, coll: &Collection) -> Result<()> {
        coll.check_usable()?;
        if self.allow_implicit
            || self.read_set.contains(&coll.id())
            || self.staging.may_write(coll.id())
        {
            Ok(())
        } else {
            Err(Error::with_message(
                ErrorCode::TransactionUnregisteredCollection,
                format!(
                    "collection '{}' not registered for read in transaction",
                    coll.name()
                ),
            ))
        }
    }

    /// Number of documents staged so far.
    pub fn staged(&self) -> usize {
        self.staging.entries.len()
    }

    /// How many staging calls this transaction has seen (each operation that changed its
    /// write set adds one).
    pub fn staged_operations(&self) -> u64 {
        self.staging.operations
    }

    /// Runs one operation over the write set (`document_writer.rs`; the document rules refuse
    /// collections not declared for writing with 1652, per item); `wait_for_sync` makes the
    /// commit wait for stable storage.
    pub(crate) fn stage_op<T>(
        &mut self,
        wait_for_sync: bool,
        op: impl FnOnce(&mut Staging) -> Result<T>,
    ) -> Result<T> {
        if wait_for_sync {
            self.staging.sync = true;
        }
        op(&mut self.staging)
    }

    /// Removes every document of `coll` as seen by this transaction.
    pub fn truncate(&mut self, coll: &Arc<Collection>) -> Result<()> {
        self.staging.check_write(coll)?;
        let keys: Vec<String> = {
            let mut keys = Vec::new();
            for item in self.staging.snapshot.scan(coll.id())? {
                keys.push(item?.0);
            }
            for ((cid, key), entry) in &self.staging.entries {
                if *cid == coll.id() && entry.current.is_some() && entry.prior.is_none() {
                    keys.push(key.clone());
                }
            }
            keys
        };
        let opts = WriteOptions::new();
        for key in keys {
            match document_rules::remove(&mut self.staging, coll, &Value::String(key), &opts, None)
            {
                Ok(_) => {}
                Err(err) if err.code == ErrorCode::DocumentNotFound => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// Commits: all staged writes become visible at once and durable together. Errors: 409/1200
    /// when a written document was changed by someone else since `begin` (nothing is
    /// written), 1203 when a written collection was dropped, engine errors.
    pub fn commit(self) -> Result<Committed<()>> {
        let staging = self.staging;
        let counted = self.counted;
        if staging.is_empty() {
            counted.commit();
            return Ok(Committed::new((), None, || staging.sync));
        }
        let mut colls: Vec<Arc<Collection>> = staging.written.values().cloned().collect();
        colls.sort_by_key(|c| c.id());
        // Fixed lock order (collection id) rules out deadlocks between transactions.
        let guards: Vec<_> = colls.iter().map(|c| c.write_lock.lock()).collect();
        for coll in &colls {
            coll.check_usable()?;
        }
        let fresh = self.db.engine().snapshot();
        for ((cid, key), entry) in &staging.entries {
            let now = fresh.revision(*cid, key)?;
            if now != entry.prior {
                return Err(Error::with_message(
                    ErrorCode::ArangoConflict,
                    format!("write-write conflict on key '{key}'"),
                ));
            }
        }
        // Unique values claimed at operation time may have been taken by commits since the
        // snapshot: check them again against the current state.
        for ((cid, key), entry) in &staging.entries {
            if entry.unique.is_empty() {
                continue;
            }
            let Some(coll) = colls.iter().find(|c| c.id() == *cid) else {
                continue;
            };
            for index in coll.unique_indexes().iter() {
                index.ensure_built(*cid, &fresh)?;
                for (_, value) in entry.unique.iter().filter(|(id, _)| *id == index.def.id) {
                    let conflict = index.conflict(value, key, |other, rev| {
                        if staging.entries.contains_key(&(*cid, other.to_string())) {
                            return Ok(false);
                        }
                        Ok(fresh.revision(*cid, other)? == Some(rev))
                    })?;
                    if let Some(err) = conflict {
                        return Err(err);
                    }
                }
            }
        }
        let ticket = commit_staged(self.db.engine(), &staging, &colls)?;
        drop(guards);
        counted.commit();
        Ok(Committed::new((), ticket, || staging.sync))
    }

    /// Discards every staged write.
    pub fn abort(self) {}
}

impl DocumentReader for Transaction {
    fn database(&self) -> &Arc<Database> {
        &self.db
    }

    fn collection(&self, name: &str) -> Result<Arc<Collection>> {
        let coll = self.db.collection(name)?;
        self.check_read(&coll)?;
        Ok(coll)
    }

    fn get_raw(&self, coll: &Collection, key: &str) -> Result<Option<(Revision, Bytes)>> {
        self.check_read(coll)?;
        Ok(self
            .staging
            .lookup(coll.id(), key)?
            .map(|(rev, body)| raw_with_id(coll, key, rev, &body)))
    }

    fn count(&self, coll: &Collection) -> Result<u64> {
        self.check_read(coll)?;
        let base = self.staging.snapshot.count(coll.id())? as i64;
        Ok((base + self.staging.count_delta(coll.id())).max(0) as u64)
    }

    fn scan(&self, coll: &Collection) -> Result<DocumentIter> {
        self.check_read(coll)?;
        let cid = coll.id();
        let mut skip = HashSet::new();
        let mut staged = Vec::new();
        let name = coll.name();
        for ((c, key), entry) in &self.staging.entries {
            if *c != cid {
                continue;
            }
            skip.insert(key.clone());
            if let Some((_, body)) = &entry.current {
                staged.push(decode_with_id(body, &name, key));
            }
        }
        let base = scan_snapshot(&self.staging.snapshot, coll, skip)?;
        Ok(DocumentIter::new(base.chain(staged)))
    }

    fn edges(
        &self,
        coll: &Collection,
        vertex: &str,
        direction: EdgeDirection,
        out: &mut EdgeHits,
    ) -> Result<()> {
        self.check_read(coll)?;
        let start = out.len();
        coll.lookup_edges(&self.staging.snapshot, vertex, direction, out)?;
        let cid = coll.id();
        let entries = &self.staging.entries;
        if entries.is_empty() {
            return Ok(());
        }
        // Staged versions replace what the snapshot holds for their keys.
        out.retain_from(start, |hit| {
            !entries.contains_key(&(cid, hit.key.to_string()))
        });
        for ((c, key), entry) in entries {
            if *c != cid {
                continue;
            }
            if let (Some((rev, _)), Some((from, to))) = (&entry.current, &entry.edge) {
                let (here, other) = match direction {
                    EdgeDirection::Outbound => (from, to),
                    EdgeDirection::Inbound => (to, from),
                };
                if &**here == vertex {
                    out.push(key, *rev, other);
                }
            }
        }
        Ok(())
    }

    fn index_lookup(
        &self,
        coll: &Collection,
        index: u64,
        ranges: Vec<IndexRange>,
        reverse: bool,
    ) -> Result<DocumentIter> {
        self.check_read(coll)?;
        let cid = coll.id();
        let staged_here = self.staging.entries.keys().any(|(c, _)| *c == cid);
        if index == crate::key_range::PRIMARY_INDEX_ID {
            let scan = || Ok(Box::new(self.scan(coll)?) as crate::key_range::Documents);
            let found = crate::key_range::primary_lookup(
                scan,
                &self.staging.snapshot,
                coll,
                staged_here,
                ranges,
                reverse,
            )?;
            return Ok(DocumentIter::new(found));
        }
        if !staged_here {
            let scan = IndexScan::new(
                coll,
                index,
                self.staging.snapshot.clone(),
                ranges,
                reverse,
                Arc::new(HashSet::new()),
            )?;
            return Ok(DocumentIter::new(scan));
        }
        let items = staged_lookup(coll, index, &self.staging, ranges, reverse)?;
        Ok(DocumentIter::new(items.into_iter()))
    }

    fn index_lookup_covering(
        &self,
        coll: &Collection,
        index: u64,
        ranges: Vec<IndexRange>,
        reverse: bool,
        attrs: &[String],
    ) -> Result<Option<DocumentIter>> {
        self.check_read(coll)?;
        let cid = coll.id();
        // Staged versions are merged in from their bodies: the plain lookup does that.
        if index == crate::key_range::PRIMARY_INDEX_ID
            || self.staging.entries.keys().any(|(c, _)| *c == cid)
        {
            return Ok(None);
        }
        let scan = IndexScan::new(
            coll,
            index,
            self.staging.snapshot.clone(),
            ranges,
            reverse,
            Arc::new(HashSet::new()),
        )?;
        Ok(scan.covering(attrs).map(DocumentIter::new))
    }

    fn geo_lookup(
        &self,
        coll: &Collection,
        index: u64,
        rect: &crate::geo::Rect,
    ) -> Result<Vec<Value>> {
        self.check_read(coll)?;
        crate::lookup::geo_candidates(
            coll,
            index,
            &self.staging.snapshot,
            rect,
            Some(&self.staging),
        )
    }

    fn fulltext_lookup(
        &self,
        coll: &Collection,
        index: u64,
        query: &crate::indexes::fulltext::Query,
    ) -> Result<Vec<Value>> {
        self.check_read(coll)?;
        crate::lookup::fulltext_candidates(
            coll,
            index,
            &self.staging.snapshot,
            query,
            Some(&self.staging),
        )
    }

    fn vector_lookup(
        &self,
        coll: &Collection,
        index: u64,
        query: &[f32],
        n_probe: usize,
        limit: usize,
    ) -> Result<Vec<(f64, Value)>> {
        self.check_read(coll)?;
        crate::lookup::vector_nearest(
            coll,
            index,
            &self.staging.snapshot,
            query,
            n_probe,
            limit,
            Some(&self.staging),
        )
    }

    fn mdi_lookup(
        &self,
        coll: &Collection,
        index: u64,
        b: &crate::indexes::mdi::MdiBox,
    ) -> Result<Vec<Value>> {
        self.check_read(coll)?;
        crate::lookup::mdi_candidates(coll, index, &self.staging.snapshot, b, Some(&self.staging))
    }
}
