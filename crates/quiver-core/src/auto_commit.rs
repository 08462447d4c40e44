//! Auto-commit writes: a document operation outside an explicit transaction is a transaction
//! of one operation (or of one request's operations) that commits at once. It takes the
//! collection's writer mutex, reads a fresh snapshot under it (so no conflict check is needed
//! at commit), runs the document rules (`document_rules.rs`) into a write set, commits it
//! (`commit.rs`) and releases the mutex; durability is awaited by the caller afterwards, never
//! under the mutex.
//!
//! For a lone plain insert (`overwriteMode` conflict) the transaction picks a cheaper commit
//! strategy: everything that depends only on the request is prepared before the mutex
//! ([`document_rules::prepare_insert`]); under it a collection without index hooks hands the
//! document straight to `Engine::insert_new`, which refuses a live key and installs the new
//! one in one index descent, without a write set or a registered snapshot.

use std::sync::Arc;

use parking_lot::MutexGuard;
use quiver_errors::Result;

use crate::collection::Collection;
use crate::commit::commit_staged;
use crate::document::unique_violation;
use crate::document_rules::{self, PreparedInsert, StagedInsert};
use crate::options::{Committed, OpResult, WriteOptions};
use crate::staging::Staging;

impl Collection {
    /// Runs `run` as a transaction of this collection that commits at once: writer mutex, a
    /// fresh snapshot under it, `run` staging its operations, the commit. An error from `run`
    /// writes nothing.
    pub(crate) fn auto_commit<T>(
        self: &Arc<Self>,
        wait_for_sync: bool,
        run: impl FnOnce(&mut Staging) -> Result<T>,
    ) -> Result<Committed<T>> {
        self.check_usable()?;
        let guard = self.write_lock.lock();
        self.commit_locked(guard, wait_for_sync, run)
    }

    /// [`Collection::auto_commit`] with the writer mutex already held (`guard`).
    fn commit_locked<T>(
        self: &Arc<Self>,
        guard: MutexGuard<'_, ()>,
        wait_for_sync: bool,
        run: impl FnOnce(&mut Staging) -> Result<T>,
    ) -> Result<Committed<T>> {
        let mut staging =
            Staging::new(self.engine().snapshot(), self.settings.max_transaction_size);
        staging.locked = true;
        staging.sync = wait_for_sync;
        let value = run(&mut staging)?;
        let ticket = commit_staged(self.engine(), &staging, std::slice::from_ref(self))?;
        drop(guard);
        Ok(Committed::new(value, ticket, || {
            self.sync_without_batch(wait_for_sync)
        }))
    }

    /// Whether an auto-commit write that stored nothing (an ignored insert, a
    /// `versionAttribute` no-op, every item failed) reports itself synced: as a written batch
    /// of this collection would be. The only place outside the engine where the collection's
    /// `waitForSync` joins the request's.
    fn sync_without_batch(&self, requested: bool) -> bool {
        requested || self.wait_for_sync()
    }

    /// The lone plain insert under the writer mutex: the existence and unique checks, the
    /// revision and the commit of a prepared document.
    pub(crate) fn commit_prepared_insert(
        self: &Arc<Self>,
        mut prepared: PreparedInsert,
        opts: &WriteOptions,
    ) -> Result<Committed<OpResult>> {
        let guard = self.write_lock.lock();
        if self.has_write_hooks() {
            // The edge index and secondary indexes see the insert through a write set.
            return self
                .commit_locked(guard, opts.wait_for_sync, |st| {
                    document_rules::stage_new(st, self, &mut prepared, true)
                })?
                .try_map(|(rev, body)| {
                    document_rules::created(
                        self,
                        std::mem::take(&mut prepared.key),
                        rev,
                        &body,
                        opts,
                    )
                });
        }
        // No hooks and no other writer: the newest state is all the existence check needs,
        // without registering a snapshot. A prepared error still loses to a unique violation,
        // as in a write set.
        if let Some(err) = prepared.deferred.take() {
            if self
                .engine()
                .latest_revision(self.id(), &prepared.key)?
                .is_some()
            {
                return Err(unique_violation(&prepared.key));
            }
            return Err(err);
        }
        // Taken under the mutex so that revisions keep increasing in commit order.
        let rev = self.revision_for(prepared.given_rev, None);
        let body = prepared.finish(rev)?;
        // The engine checks that the key is not alive in the same index descent that installs
        // it, and joins the collection's waitForSync to the request's.
        let Some(ticket) =
            self.engine()
                .insert_new(self.id(), &prepared.key, rev, &body, opts.wait_for_sync)?
        else {
            return Err(unique_violation(&prepared.key));
        };
        self.note_revision(rev, ticket.tick);
        drop(guard);
        let result =
            document_rules::created(self, std::mem::take(&mut prepared.key), rev, &body, opts)?;
        Ok(Committed::new(result, Some(ticket), || opts.wait_for_sync))
    }

    /// Prepared inserts of many documents (`overwriteMode` conflict, or replace for encoded
    /// bodies: [`document_rules::stage_prepared`]) in one commit: every item is prepared
    /// before the writer mutex, as a lone insert is, then staged under it over one snapshot
    /// (a duplicate key within the request is a conflict, or replaces the earlier item).
    /// Items fail independently unless `opts.all_or_nothing`.
    pub(crate) fn commit_prepared_inserts(
        self: &Arc<Self>,
        prepared: Vec<Result<PreparedInsert>>,
        opts: &WriteOptions,
    ) -> Result<Committed<Vec<Result<OpResult>>>> {
        // The edge index's vertex lookups for the new ends happen before the writer mutex;
        // under it the edges are appended to the vertices found.
        let vertex_hints = self.edge_index().map(|index| {
            let ends = prepared
                .iter()
                .filter_map(|p| p.as_ref().ok().and_then(|p| p.edge.as_ref()));
            (self.id(), index.resolve(ends))
        });
        let staged = self.auto_commit(opts.wait_for_sync, |st| {
            st.vertex_hints = vertex_hints;
            st.entries.reserve(prepared.len());
            let mut out = Vec::with_capacity(prepared.len());
            for item in prepared {
                let one = item.and_then(|p| document_rules::stage_prepared(st, self, p, opts));
                match one {
                    Err(err) if opts.all_or_nothing => return Err(err),
                    one => out.push(one),
                }
            }
            Ok(out)
        })?;
        // Results of new documents are built after the writer mutex is released.
        Ok(staged.map(|items| {
            items
                .into_iter()
                .map(|one| {
                    one.and_then(|staged| match staged {
                        StagedInsert::Created(key, rev, body) => {
                            document_rules::created(self, key, rev, &body, opts)
                        }
                        StagedInsert::Written(result) => Ok(result),
                    })
                })
                .collect()
        }))
    }
}
