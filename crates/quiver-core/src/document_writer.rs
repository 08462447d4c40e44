//! [`DocumentWriter`]: the one write path for documents, next to `DocumentReader`. A write
//! inside an explicit transaction and an auto-commit write are the same thing: the auto-commit
//! write is a transaction of one operation (or of one request's operations) that commits at
//! once. Every operation runs the same document rules (`document_rules.rs`) into a write set
//! (`staging.rs`); only where the write set comes from and when it is committed differ.
//!
//! `Collection::insert`/`replace`/… (auto-commit) and `Transaction::insert`/`replace`/… are
//! the same operations reached through [`DocumentWriter::AutoCommit`] and
//! [`DocumentWriter::Transaction`].

use std::sync::Arc;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use crate::collection::Collection;
use crate::database::Database;
use crate::document::EncodedDocument;
use crate::document_rules;
use crate::options::{Committed, OpResult, OverwriteMode, WriteOptions};
use crate::staging::Staging;
use crate::txn::{DocumentReader, Transaction, TransactionOptions};

/// Where document writes go. Results come as [`Committed`] either way: for an auto-commit
/// write the commit's durability, for a write staged in a transaction nothing to wait for
/// (durability comes with the transaction's commit; [`Committed::synced`] is the request's
/// `waitForSync`).
#[derive(Debug)]
pub enum DocumentWriter<'t> {
    /// Outside explicit transactions: every call is a transaction of its own, committed
    /// before the call returns (serialized per collection by its writer mutex).
    AutoCommit,
    /// Inside an explicit transaction (a stream transaction, an AQL query): every call
    /// stages its writes there, visible to the transaction's own reads at once.
    Transaction(&'t mut Transaction),
}

/// The result of a staged insert: a new document's built from its stored body.
fn staged_result(
    coll: &Collection,
    staged: document_rules::StagedInsert,
    opts: &WriteOptions,
) -> Result<OpResult> {
    match staged {
        document_rules::StagedInsert::Created(key, rev, body) => {
            document_rules::created(coll, key, rev, &body, opts)
        }
        document_rules::StagedInsert::Written(result) => Ok(result),
    }
}

/// Runs `op` on every item; with `all_or_nothing` the first failure fails the whole call.
fn each<I, T>(
    items: impl IntoIterator<Item = I>,
    all_or_nothing: bool,
    mut op: impl FnMut(I) -> Result<T>,
) -> Result<Vec<Result<T>>> {
    let items = items.into_iter();
    let mut out = Vec::with_capacity(items.size_hint().0);
    for item in items {
        match op(item) {
            Err(err) if all_or_nothing => return Err(err),
            one => out.push(one),
        }
    }
    Ok(out)
}

impl DocumentWriter<'_> {
    /// Runs `op` over the write set of this writer: a one-request transaction of `coll`
    /// committed at once, or the explicit transaction (which must have declared `coll` for
    /// writing, 1652 otherwise).
    fn run<T>(
        &mut self,
        coll: &Arc<Collection>,
        opts: &WriteOptions,
        op: impl FnOnce(&mut Staging) -> Result<T>,
    ) -> Result<Committed<T>> {
        match self {
            DocumentWriter::AutoCommit => coll.auto_commit(opts.wait_for_sync, op),
            DocumentWriter::Transaction(trx) => {
                let value = trx.stage_op(opts.wait_for_sync, op)?;
                Ok(Committed::new(value, None, || opts.wait_for_sync))
            }
        }
    }

    /// Whether this writer may take the lone-insert commit strategy for `opts`.
    fn lone_insert(&self, opts: &WriteOptions) -> bool {
        matches!(self, DocumentWriter::AutoCommit) && opts.overwrite_mode == OverwriteMode::Conflict
    }

    /// Inserts one document (`POST /_api/document/{c}`). The body must be an object (1227);
    /// `_id`/`_rev` in it are ignored, `_key` must be legal (1221) and allowed (1222); edges
    /// need valid `_from`/`_to` (1233); an existing key follows `overwrite_mode` (1210 for
    /// conflict).
    ///
    /// An auto-commit plain insert (`overwrite_mode` conflict, the default) prepares
    /// everything that depends only on the request — key, computed values, schema, the stored
    /// encoding — before the collection's writer mutex is taken; the mutex covers only the
    /// existence and unique checks, the revision and the commit.
    pub fn insert(
        &mut self,
        coll: &Arc<Collection>,
        doc: Value,
        opts: &WriteOptions,
    ) -> Result<Committed<OpResult>> {
        if self.lone_insert(opts) {
            let prepared = document_rules::prepare_insert(coll, doc, opts)?;
            return coll.commit_prepared_insert(prepared, opts);
        }
        self.run(coll, opts, |st| document_rules::insert(st, coll, doc, opts))
    }

    /// [`DocumentWriter::insert`] for a body the caller has already encoded (same checks,
    /// errors and results). Stores the encoding as it is when
    /// [`Collection::takes_encoded`] says so, and builds the document as a value otherwise.
    pub fn insert_encoded(
        &mut self,
        coll: &Arc<Collection>,
        doc: EncodedDocument,
        opts: &WriteOptions,
    ) -> Result<Committed<OpResult>> {
        if !coll.takes_encoded(opts) {
            return self.insert(coll, doc.into_value()?, opts);
        }
        if self.lone_insert(opts) {
            let prepared = document_rules::prepare_encoded(coll, doc, opts)?;
            return coll.commit_prepared_insert(prepared, opts);
        }
        self.run(coll, opts, |st| {
            st.check_write(coll)?;
            let prepared = document_rules::prepare_encoded(coll, doc, opts)?;
            staged_result(
                coll,
                document_rules::stage_prepared(st, coll, prepared, opts)?,
                opts,
            )
        })
    }

    /// Inserts many documents, committed together; items fail independently (per-item errors
    /// as in [`DocumentWriter::insert`]) unless `opts.all_or_nothing`, where the first failing
    /// item's error is returned and nothing of this call is written. Later items see earlier
    /// ones (a duplicate key within the array is a conflict).
    pub fn insert_many(
        &mut self,
        coll: &Arc<Collection>,
        docs: Vec<Value>,
        opts: &WriteOptions,
    ) -> Result<Committed<Vec<Result<OpResult>>>> {
        if self.lone_insert(opts) {
            coll.check_usable()?;
            let prepared = docs
                .into_iter()
                .map(|doc| document_rules::prepare_insert(coll, doc, opts))
                .collect();
            return coll.commit_prepared_inserts(prepared, opts);
        }
        self.run(coll, opts, |st| {
            each(docs, opts.all_or_nothing, |doc| {
                document_rules::insert(st, coll, doc, opts)
            })
        })
    }

    /// [`DocumentWriter::insert_many`] for bodies the caller has already encoded (same checks,
    /// errors and results, items independent unless `opts.all_or_nothing`). Stores the
    /// encodings as they are when [`Collection::takes_encoded`] says so, and builds the
    /// documents as values otherwise.
    pub fn insert_many_encoded(
        &mut self,
        coll: &Arc<Collection>,
        docs: Vec<EncodedDocument>,
        opts: &WriteOptions,
    ) -> Result<Committed<Vec<Result<OpResult>>>> {
        if !coll.takes_encoded(opts) {
            let docs = docs
                .into_iter()
                .map(EncodedDocument::into_value)
                .collect::<Result<Vec<_>>>()?;
            return self.insert_many(coll, docs, opts);
        }
        if matches!(self, DocumentWriter::AutoCommit) {
            // Everything that depends only on the request is prepared before the writer
            // mutex (as for a lone insert); with `overwriteMode` replace too, the stored
            // documents being looked at only under it.
            coll.check_usable()?;
            let prepared = docs
                .into_iter()
                .map(|doc| document_rules::prepare_encoded(coll, doc, opts))
                .collect();
            return coll.commit_prepared_inserts(prepared, opts);
        }
        self.run(coll, opts, |st| {
            each(docs, opts.all_or_nothing, |doc| {
                st.check_write(coll)?;
                let prepared = document_rules::prepare_encoded(coll, doc, opts)?;
                staged_result(
                    coll,
                    document_rules::stage_prepared(st, coll, prepared, opts)?,
                    opts,
                )
            })
        })
    }

    /// Replaces the document `key` (the body's `_key`/`_id` when None): the new body's
    /// attributes replace all old ones. Errors: 1202 missing; 412/1200 on `if_match` (or body
    /// `_rev` with `ignore_revs=false`) mismatch; 1227 not an object; 1233 edge attributes.
    pub fn replace(
        &mut self,
        coll: &Arc<Collection>,
        key: Option<&str>,
        doc: Value,
        opts: &WriteOptions,
    ) -> Result<Committed<OpResult>> {
        self.run(coll, opts, |st| {
            document_rules::modify(st, coll, key, doc, opts, opts.if_match.as_deref(), false)
        })
    }

    /// Updates (merges into) the document `key` (the body's `_key`/`_id` when None),
    /// honouring `keep_null` and `merge_objects`; errors as [`DocumentWriter::replace`].
    pub fn update(
        &mut self,
        coll: &Arc<Collection>,
        key: Option<&str>,
        patch: Value,
        opts: &WriteOptions,
    ) -> Result<Committed<OpResult>> {
        self.run(coll, opts, |st| {
            document_rules::modify(st, coll, key, patch, opts, opts.if_match.as_deref(), true)
        })
    }

    /// Replaces (`merge` false) or updates many documents, each selected by its `_key` (or
    /// `_id`); per-item errors (1205 when an item has neither). `opts.if_match` does not apply.
    pub fn modify_many(
        &mut self,
        coll: &Arc<Collection>,
        docs: Vec<Value>,
        opts: &WriteOptions,
        merge: bool,
    ) -> Result<Committed<Vec<Result<OpResult>>>> {
        self.run(coll, opts, |st| {
            each(docs, false, |doc| {
                document_rules::modify(st, coll, None, doc, opts, None, merge)
            })
        })
    }

    /// Removes the document `key`. The result's `rev` is the removed revision. Errors: 1202
    /// missing (also for an illegal key); 412/1200 on an `if_match` mismatch.
    pub fn remove(
        &mut self,
        coll: &Arc<Collection>,
        key: &str,
        opts: &WriteOptions,
    ) -> Result<Committed<OpResult>> {
        if quiver_types::validate_key(key).is_err() {
            return Err(Error::new(ErrorCode::DocumentNotFound));
        }
        self.remove_item(coll, &Value::String(key.to_string()), opts)
    }

    /// Removes the document `item` addresses: a key, a `collection/key` handle or an object
    /// with `_key` (and `_rev`, checked when `ignore_revs` is false). `opts.if_match` applies.
    pub fn remove_item(
        &mut self,
        coll: &Arc<Collection>,
        item: &Value,
        opts: &WriteOptions,
    ) -> Result<Committed<OpResult>> {
        self.run(coll, opts, |st| {
            document_rules::remove(st, coll, item, opts, opts.if_match.as_deref())
        })
    }

    /// Removes many documents addressed as in [`DocumentWriter::remove_item`]; per-item
    /// errors. `opts.if_match` does not apply.
    pub fn remove_many(
        &mut self,
        coll: &Arc<Collection>,
        items: &[Value],
        opts: &WriteOptions,
    ) -> Result<Committed<Vec<Result<OpResult>>>> {
        self.run(coll, opts, |st| {
            each(items, false, |item| {
                document_rules::remove(st, coll, item, opts, None)
            })
        })
    }

    /// Runs `work` in a transaction that writes the collections `write` of `db`: the
    /// explicit transaction of this writer (which must have declared them), or a transaction
    /// begun here and committed when `work` succeeds (for operations that span collections,
    /// such as removing a vertex with its edges, or truncate-and-import).
    pub fn transaction<R>(
        &mut self,
        db: &Arc<Database>,
        write: Vec<String>,
        wait_for_sync: bool,
        work: impl FnOnce(&mut Transaction) -> Result<R>,
    ) -> Result<Committed<R>> {
        match self {
            DocumentWriter::AutoCommit => {
                let mut trx = db.begin_transaction(TransactionOptions {
                    write,
                    allow_implicit: true,
                    wait_for_sync,
                    ..TransactionOptions::default()
                })?;
                let value = work(&mut trx)?;
                Ok(trx.commit()?.map(|()| value))
            }
            DocumentWriter::Transaction(trx) => {
                let value = work(trx)?;
                Ok(Committed::new(value, None, || wait_for_sync))
            }
        }
    }

    /// Removes every document of `coll`: at once with the engine's truncate marker, or staged
    /// as removals in the explicit transaction.
    pub fn truncate(
        &mut self,
        coll: &Arc<Collection>,
        wait_for_sync: bool,
    ) -> Result<Committed<()>> {
        match self {
            DocumentWriter::AutoCommit => coll.truncate(wait_for_sync),
            DocumentWriter::Transaction(trx) => {
                trx.truncate(coll)?;
                Ok(Committed::new((), None, || wait_for_sync))
            }
        }
    }

    /// Runs `read` over what this writer's operations see: the explicit transaction (its
    /// snapshot plus its own writes), or a read view of `db` taken now.
    pub fn read<R>(
        &self,
        db: &Arc<Database>,
        read: impl FnOnce(&dyn DocumentReader) -> Result<R>,
    ) -> Result<R> {
        match self {
            DocumentWriter::AutoCommit => read(&db.read_view()),
            DocumentWriter::Transaction(trx) => read(&**trx),
        }
    }

    /// How many staging calls the explicit transaction has seen so far (0 for auto-commit):
    /// a caller that must undo a failed request can tell whether it staged anything.
    pub fn staged_operations(&self) -> u64 {
        match self {
            DocumentWriter::AutoCommit => 0,
            DocumentWriter::Transaction(trx) => trx.staged_operations(),
        }
    }
}

/// Auto-commit writes of one collection: [`DocumentWriter::AutoCommit`] applied to it.
impl Collection {
    /// [`DocumentWriter::insert`] committed at once.
    pub fn insert(
        self: &Arc<Self>,
        doc: Value,
        opts: &WriteOptions,
    ) -> Result<Committed<OpResult>> {
        DocumentWriter::AutoCommit.insert(self, doc, opts)
    }

    /// [`DocumentWriter::insert_encoded`] committed at once.
    pub fn insert_encoded(
        self: &Arc<Self>,
        doc: EncodedDocument,
        opts: &WriteOptions,
    ) -> Result<Committed<OpResult>> {
        DocumentWriter::AutoCommit.insert_encoded(self, doc, opts)
    }

    /// [`DocumentWriter::insert_many`] committed at once.
    pub fn insert_many(
        self: &Arc<Self>,
        docs: Vec<Value>,
        opts: &WriteOptions,
    ) -> Result<Committed<Vec<Result<OpResult>>>> {
        DocumentWriter::AutoCommit.insert_many(self, docs, opts)
    }

    /// [`DocumentWriter::replace`] of `key`, committed at once.
    pub fn replace(
        self: &Arc<Self>,
        key: &str,
        doc: Value,
        opts: &WriteOptions,
    ) -> Result<Committed<OpResult>> {
        DocumentWriter::AutoCommit.replace(self, Some(key), doc, opts)
    }

    /// [`DocumentWriter::modify_many`] (replace), committed at once.
    pub fn replace_many(
        self: &Arc<Self>,
        docs: Vec<Value>,
        opts: &WriteOptions,
    ) -> Result<Committed<Vec<Result<OpResult>>>> {
        DocumentWriter::AutoCommit.modify_many(self, docs, opts, false)
    }

    /// [`DocumentWriter::update`] of `key`, committed at once.
    pub fn update(
        self: &Arc<Self>,
        key: &str,
        patch: Value,
        opts: &WriteOptions,
    ) -> Result<Committed<OpResult>> {
        DocumentWriter::AutoCommit.update(self, Some(key), patch, opts)
    }

    /// [`DocumentWriter::modify_many`] (update), committed at once.
    pub fn update_many(
        self: &Arc<Self>,
        patches: Vec<Value>,
        opts: &WriteOptions,
    ) -> Result<Committed<Vec<Result<OpResult>>>> {
        DocumentWriter::AutoCommit.modify_many(self, patches, opts, true)
    }

    /// [`DocumentWriter::remove`] committed at once.
    pub fn remove(self: &Arc<Self>, key: &str, opts: &WriteOptions) -> Result<Committed<OpResult>> {
        DocumentWriter::AutoCommit.remove(self, key, opts)
    }

    /// [`DocumentWriter::remove_many`] committed at once.
    pub fn remove_many(
        self: &Arc<Self>,
        items: &[Value],
        opts: &WriteOptions,
    ) -> Result<Committed<Vec<Result<OpResult>>>> {
        DocumentWriter::AutoCommit.remove_many(self, items, opts)
    }
}

/// Writes staged in an explicit transaction: [`DocumentWriter::Transaction`] applied to it.
impl Transaction {
    /// [`DocumentWriter::insert`] staged here; 1652 if `coll` was not declared for writing.
    pub fn insert(
        &mut self,
        coll: &Arc<Collection>,
        doc: Value,
        opts: &WriteOptions,
    ) -> Result<OpResult> {
        Ok(DocumentWriter::Transaction(self)
            .insert(coll, doc, opts)?
            .into_value())
    }

    /// [`DocumentWriter::replace`] staged here. `key` None takes it from the body.
    pub fn replace(
        &mut self,
        coll: &Arc<Collection>,
        key: Option<&str>,
        doc: Value,
        opts: &WriteOptions,
    ) -> Result<OpResult> {
        Ok(DocumentWriter::Transaction(self)
            .replace(coll, key, doc, opts)?
            .into_value())
    }

    /// [`DocumentWriter::update`] staged here. `key` None takes it from the body.
    pub fn update(
        &mut self,
        coll: &Arc<Collection>,
        key: Option<&str>,
        patch: Value,
        opts: &WriteOptions,
    ) -> Result<OpResult> {
        Ok(DocumentWriter::Transaction(self)
            .update(coll, key, patch, opts)?
            .into_value())
    }

    /// [`DocumentWriter::remove_item`] staged here.
    pub fn remove(
        &mut self,
        coll: &Arc<Collection>,
        item: &Value,
        opts: &WriteOptions,
    ) -> Result<OpResult> {
        Ok(DocumentWriter::Transaction(self)
            .remove_item(coll, item, opts)?
            .into_value())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CollectionSpec, Core, CoreOptions, DocumentReader, WriteKind};
    use serde_json::json;

    /// The same requests through both writers: the results (kinds, errors) and the stored
    /// documents are the same, an explicit transaction just commits later.
    #[test]
    fn auto_commit_and_transaction_write_alike() {
        let dir = tempfile::tempdir().unwrap();
        let core = Core::open(dir.path(), CoreOptions::default()).unwrap();
        let db = core.database(crate::SYSTEM_DATABASE).unwrap();
        let run = |w: &mut DocumentWriter<'_>, coll: &Arc<Collection>| {
            let mut outcome = Vec::new();
            let mut note = |r: Result<Committed<OpResult>>| {
                outcome.push(r.map(|c| c.into_value().kind).map_err(|e| e.code));
            };
            let opts = WriteOptions::new();
            note(w.insert(coll, json!({"_key": "a", "n": 1}), &opts));
            note(w.insert(coll, json!({"_key": "a"}), &opts));
            let upsert = WriteOptions {
                overwrite_mode: OverwriteMode::Update,
                ..WriteOptions::new()
            };
            note(w.insert(coll, json!({"_key": "a", "m": 2}), &upsert));
            note(w.update(
                coll,
                Some("a"),
                json!({"n": null}),
                &WriteOptions {
                    keep_null: false,
                    ..WriteOptions::new()
                },
            ));
            let stale = WriteOptions {
                if_match: Some("_nope".into()),
                ..WriteOptions::new()
            };
            note(w.replace(coll, Some("a"), json!({"x": 1}), &stale));
            note(w.insert(coll, json!({"_key": "b"}), &opts));
            note(w.remove(coll, "b", &opts));
            note(w.remove(coll, "b", &opts));
            let many = w
                .insert_many(
                    coll,
                    vec![json!({"_key": "c"}), json!({"_key": "c"})],
                    &opts,
                )
                .unwrap()
                .into_value();
            outcome.extend(
                many.into_iter()
                    .map(|r| r.map(|op| op.kind).map_err(|e| e.code)),
            );
            outcome
        };
        let auto = db.create_collection(CollectionSpec::new("auto")).unwrap();
        let staged = db.create_collection(CollectionSpec::new("staged")).unwrap();
        let auto_outcome = run(&mut DocumentWriter::AutoCommit, &auto);
        let mut trx = db
            .begin_transaction(TransactionOptions::writing(&["staged"]))
            .unwrap();
        let staged_outcome = run(&mut DocumentWriter::Transaction(&mut trx), &staged);
        assert_eq!(
            staged.count().unwrap(),
            0,
            "nothing is visible before the commit"
        );
        trx.commit().unwrap().wait().unwrap();
        assert_eq!(auto_outcome, staged_outcome);
        assert_eq!(
            auto_outcome,
            [
                Ok(WriteKind::Created),
                Err(ErrorCode::UniqueConstraintViolated),
                Ok(WriteKind::Updated),
                Ok(WriteKind::Updated),
                Err(ErrorCode::ArangoConflict),
                Ok(WriteKind::Created),
                Ok(WriteKind::Removed),
                Err(ErrorCode::DocumentNotFound),
                Ok(WriteKind::Created),
                Err(ErrorCode::UniqueConstraintViolated),
            ]
        );
        let view = db.read_view();
        for coll in [&auto, &staged] {
            let a = view.get(coll, "a").unwrap().unwrap();
            assert_eq!((a.get("n"), &a["m"]), (None, &json!(2)));
            assert!(view.get(coll, "b").unwrap().is_none());
            assert_eq!(view.count(coll).unwrap(), 2);
        }
    }

    /// A transaction refuses writes to collections it did not declare, per item.
    #[test]
    fn undeclared_collections_fail_per_item() {
        let dir = tempfile::tempdir().unwrap();
        let core = Core::open(dir.path(), CoreOptions::default()).unwrap();
        let db = core.database(crate::SYSTEM_DATABASE).unwrap();
        let other = db.create_collection(CollectionSpec::new("other")).unwrap();
        db.create_collection(CollectionSpec::new("mine")).unwrap();
        let mut trx = db
            .begin_transaction(TransactionOptions::writing(&["mine"]))
            .unwrap();
        let mut writer = DocumentWriter::Transaction(&mut trx);
        let results = writer
            .insert_many(&other, vec![json!({}), json!({})], &WriteOptions::new())
            .unwrap()
            .into_value();
        assert!(results
            .iter()
            .all(|r| r.as_ref().unwrap_err().code == ErrorCode::TransactionUnregisteredCollection));
        assert_eq!(writer.staged_operations(), 0);
    }
}
