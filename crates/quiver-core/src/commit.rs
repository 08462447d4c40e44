//! Committing a write set: one engine batch with the index hooks around the engine commit.
//! Every staged write goes through [`commit_staged`], whether it belongs to an explicit
//! transaction (`Transaction::commit`) or to an auto-commit write (a one-operation
//! transaction, `auto_commit.rs`).

use std::sync::Arc;

use quiver_errors::Result;
use quiver_storage::{CollectionId, CommitTicket, Engine};

use crate::collection::Collection;
use crate::indexes::{edge, maintained};
use crate::staging::Staging;
use crate::view_feed::Change;

/// Commits everything `staging` holds as one engine batch: secondary-index and edge-index
/// entries of the new versions go in before the engine commit (and are taken back if it
/// fails), the unique indexes and the collections' revisions learn about it after. None when
/// nothing is staged.
///
/// The caller holds the writer lock of every collection in `colls` (all collections
/// `staging` wrote) and has checked every precondition against the current state: a
/// snapshot taken under those locks, or its own conflict checks.
pub(crate) fn commit_staged(
    engine: &Engine,
    staging: &Staging,
    colls: &[Arc<Collection>],
) -> Result<Option<CommitTicket>> {
    if staging.is_empty() {
        return Ok(None);
    }
    debug_assert!(
        staging
            .written
            .keys()
            .all(|cid| colls.iter().any(|c| c.id() == *cid)),
        "every written collection is locked for the commit"
    );
    let coll_of = |cid: CollectionId| colls.iter().find(|c| c.id() == cid).cloned();
    let batch = staging.to_batch();
    let indexes_of = |cid: CollectionId| coll_of(cid).map(|c| c.maintained_indexes());
    let pending = maintained::before_commit(&staging.entries, &staging.snapshot, indexes_of)?;
    let edge_index_of = |cid: CollectionId| coll_of(cid).and_then(|c| c.edge_index().cloned());
    let edges = match edge::before_commit(
        &staging.entries,
        &staging.snapshot,
        edge_index_of,
        staging.vertex_hints.as_ref(),
    ) {
        Ok(edges) => edges,
        Err(err) => {
            pending.failed();
            return Err(err);
        }
    };
    let ticket = match engine.commit(batch) {
        Ok(ticket) => ticket,
        Err(err) => {
            pending.failed();
            edges.failed();
            return Err(err);
        }
    };
    let horizon = engine.horizon();
    pending.committed(ticket.tick, horizon);
    edges.committed(ticket.tick, horizon);
    crate::staging::record_indexes(&staging.entries, coll_of);
    feed_views(staging, colls, ticket.tick);
    for coll in colls {
        let newest = staging
            .entries
            .iter()
            .filter(|((cid, _), _)| *cid == coll.id())
            .map(|(_, e)| e.current.as_ref().map_or(e.removal_rev, |(rev, _)| *rev))
            .max();
        if let Some(rev) = newest {
            coll.note_revision(rev, ticket.tick);
        }
    }
    Ok(Some(ticket))
}

/// Hands the changes of collections with linked views, committed at `tick`, to the views'
/// feeds (only after the engine commit succeeded, so no uncommitted write ever reaches a
/// view). One flag read per collection when no view is linked.
fn feed_views(staging: &Staging, colls: &[Arc<Collection>], tick: u64) {
    for coll in colls {
        if coll.views.is_empty() {
            continue;
        }
        let changes: Vec<Change> = staging
            .entries
            .iter()
            .filter(|((cid, _), _)| *cid == coll.id())
            .map(|((cid, key), entry)| match &entry.current {
                Some((rev, body)) => Change::Put {
                    collection: *cid,
                    key: key.clone(),
                    rev: rev.0,
                    body: body.clone(),
                    tick,
                    // The commit checked that a document absent from the staging's snapshot
                    // is still absent (a second insert of the key fails).
                    new_key: entry.prior.is_none(),
                },
                None => Change::Remove {
                    collection: *cid,
                    key: key.clone(),
                    tick,
                },
            })
            .collect();
        let feeds = coll.views.feeds();
        if let Some((last, others)) = feeds.split_last() {
            for feed in others {
                feed.changes(changes.clone());
            }
            last.changes(changes);
        }
    }
}
