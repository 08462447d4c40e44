//! Feeding one view from committed writes: a bounded queue of changes (filled by
//! `commit.rs::commit_staged` after the engine commit succeeded, under the written
//! collection's writer mutex) and a background indexer thread that applies them to the view's
//! tantivy index and commits it every `commitIntervalMsec`, or at once when a query with
//! `waitForSync` asks. Uncommitted and rolled-back writes never reach the queue: nothing is
//! sent before the engine has installed the batch.
//!
//! Every message carries a sequence number taken in queue order; `committed` is the number of
//! the last message whose effects the index has committed, so "every write acknowledged before
//! now is searchable" is `committed >= enqueued` as read now.
//!
//! Each commit records what it covers (`view_record.rs`): per linked collection, the commit
//! tick up to which its writes are in the index. The changes of one collection reach the
//! queue in commit order (they are sent under its writer mutex), and a change at or below the
//! tick of the snapshot the collection was last built or caught up from is skipped (that
//! snapshot already holds it or a later state), so the committed index holds of each
//! collection exactly its state at the recorded tick. Attaching a link to a reopened index
//! therefore only re-feeds what changed after that tick (`catch_up`); anything that does not
//! add up is rebuilt.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use quiver_search::index::{document_terms, AnalyzerSource, LinkDefinition, Opened, ViewIndex};
use quiver_storage::{CollectionId, Engine, Snapshot};

use crate::view_record::{link_shape, CommitRecord, LinkRecord};

/// Messages the queue holds at most; a writer waits for room beyond (back-pressure).
pub(crate) const QUEUE_CAPACITY: usize = 4096;

/// Bytes of queued changes (their keys and document bodies, [`Change::queued_bytes`]) the
/// queue holds at most; a writer waits for room beyond, so memory stays bounded however far
/// the indexer falls behind. A batch larger than this still goes through when the queue is
/// empty (the write set that produced it was in memory already).
pub(crate) const QUEUE_BYTES: usize = 64 << 20;

/// The longest a `waitForSync` search waits for the index to catch up.
const SYNC_WAIT: Duration = Duration::from_secs(60);

/// One committed change of a linked collection, with the tick of the commit.
#[derive(Clone)]
pub(crate) enum Change {
    /// The document's new stored body (revision `rev`); `new_key`: the key did not exist
    /// before this commit (an insert).
    Put {
        collection: CollectionId,
        key: String,
        rev: u64,
        body: Bytes,
        tick: u64,
        new_key: bool,
    },
    Remove {
        collection: CollectionId,
        key: String,
        tick: u64,
    },
    /// Every document of the collection went: a truncate committed at `Some(tick)`, or a
    /// dropped link or collection (`None`).
    RemoveAll {
        collection: CollectionId,
        tick: Option<u64>,
    },
}

impl Change {
    /// What the change holds in the queue, in bytes (approximate: its key, its body and
    /// itself).
    fn queued_bytes(&self) -> usize {
        std::mem::size_of::<Change>()
            + match self {
                Change::Put { key, body, .. } => key.len() + body.len(),
                Change::Remove { key, .. } => key.len(),
                Change::RemoveAll { .. } => 0,
            }
    }
}

/// The bytes of changes queued and not yet applied ([`QUEUE_BYTES`]): writers add theirs
/// before sending and wait for room, the indexer takes them off after applying a batch.
#[derive(Default)]
struct Backlog {
    /// Queued bytes, and whether the indexer has stopped (nobody takes bytes off any more).
    state: Mutex<(usize, bool)>,
    room: Condvar,
}

impl Backlog {
    /// Waits until `bytes` more fit (or the queue holds nothing, or the indexer is gone) and
    /// adds them.
    fn reserve(&self, bytes: usize, limit: usize) {
        let mut state = self.state.lock();
        while state.0 > 0 && state.0 + bytes > limit && !state.1 {
            self.room.wait(&mut state);
        }
        state.0 += bytes;
    }

    fn release(&self, bytes: usize) {
        let mut state = self.state.lock();
        state.0 = state.0.saturating_sub(bytes);
        self.room.notify_all();
    }

    /// The indexer is gone: writers no longer wait for room.
    fn close(&self) {
        self.state.lock().1 = true;
        self.room.notify_all();
    }

    #[cfg(test)]
    fn queued(&self) -> usize {
        self.state.lock().0
    }
}

/// Closes the backlog when the indexer's thread ends, however it ends.
struct CloseOnExit(Arc<Backlog>);

impl Drop for CloseOnExit {
    fn drop(&mut self) {
        self.0.close();
    }
}

enum Message {
    /// A batch of changes and the bytes it holds ([`Change::queued_bytes`]).
    Changes(u64, Vec<Change>, usize),
    /// Bring the index in line with the collection, read from the engine when the indexer
    /// gets there (so in order with the changes around it): caught up from the reopened
    /// index's record when that covers the link, otherwise every document is indexed (a new
    /// link, or a rebuild).
    Attach(u64, CollectionId, Engine),
    /// The reopened index's record has served every link attached at open: the recorded
    /// collections no link was attached for leave the index.
    EndOpen(u64),
    /// Commit now (a `waitForSync` search is waiting).
    Flush,
    Stop,
}

/// The feed of one view: its index, its links by collection id and its indexer.
pub(crate) struct ViewFeed {
    pub index: Arc<ViewIndex>,
    links: Arc<RwLock<HashMap<CollectionId, Arc<LinkDefinition>>>>,
    sender: Mutex<(u64, Option<SyncSender<Message>>)>,
    /// The sequence number of the last message sent.
    enqueued: AtomicU64,
    /// The sequence number of the last message whose effects are committed in the index.
    committed: Arc<(Mutex<u64>, Condvar)>,
    commit_interval_ms: Arc<AtomicU64>,
    /// Documents analyzed and handed to the index since the feed started.
    analyzed: Arc<AtomicU64>,
    backlog: Arc<Backlog>,
    /// [`QUEUE_BYTES`], smaller in tests.
    backlog_limit: usize,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for ViewFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewFeed")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

/// What the index held when it was opened, for the links attached at open.
enum Reopened {
    /// The record of its last commit.
    Recorded(CommitRecord),
    /// Nothing usable, and why: every link is rebuilt.
    Unusable(String),
}

impl ViewFeed {
    /// Starts the indexer of `index` (`what`: "view 'name'" or "inverted index 'name'", for
    /// the log). `opened` is what [`ViewIndex::open`] found; a new view or index passes
    /// `None` (its links are built without a word in the log).
    pub fn start(
        what: &str,
        index: Arc<ViewIndex>,
        analyzers: Arc<dyn AnalyzerSource>,
        commit_interval_ms: u64,
        opened: Option<Opened>,
    ) -> Result<Arc<ViewFeed>> {
        Self::start_with_backlog_limit(
            what,
            index,
            analyzers,
            commit_interval_ms,
            opened,
            QUEUE_BYTES,
        )
    }

    /// [`ViewFeed::start`] with another bound on the bytes of queued changes.
    pub(crate) fn start_with_backlog_limit(
        what: &str,
        index: Arc<ViewIndex>,
        analyzers: Arc<dyn AnalyzerSource>,
        commit_interval_ms: u64,
        opened: Option<Opened>,
        backlog_limit: usize,
    ) -> Result<Arc<ViewFeed>> {
        let (tx, rx) = sync_channel(QUEUE_CAPACITY);
        let backlog = Arc::new(Backlog::default());
        let links = Arc::new(RwLock::new(HashMap::new()));
        let committed = Arc::new((Mutex::new(0u64), Condvar::new()));
        let interval = Arc::new(AtomicU64::new(commit_interval_ms));
        let analyzed = Arc::new(AtomicU64::new(0));
        let reopened = opened.map(|opened| match opened {
            Opened::Created => Reopened::Unusable("its directory held no usable index".into()),
            Opened::Existing(payload) => match CommitRecord::parse(payload.as_deref()) {
                Ok(record) => Reopened::Recorded(record),
                Err(reason) => Reopened::Unusable(reason),
            },
        });
        let indexer = Indexer {
            what: what.to_string(),
            index: Arc::clone(&index),
            links: Arc::clone(&links),
            analyzers,
            committed: Arc::clone(&committed),
            interval: Arc::clone(&interval),
            analyzed: Arc::clone(&analyzed),
            backlog: Arc::clone(&backlog),
            built_at: HashMap::new(),
            covered: CommitRecord::default(),
            reopened,
        };
        let thread = std::thread::Builder::new()
            .name(format!("quiver-view-{}", what.replace('\'', "")))
            .spawn(move || {
                // Request handling comes first: the index catches up on what the writes leave.
                crate::search_priority::lower_current_thread();
                indexer.run(rx);
            })
            .map_err(|e| {
                Error::with_message(ErrorCode::Internal, format!("starting a view indexer: {e}"))
            })?;
        Ok(Arc::new(ViewFeed {
            index,
            links,
            sender: Mutex::new((0, Some(tx))),
            enqueued: AtomicU64::new(0),
            committed,
            commit_interval_ms: interval,
            analyzed,
            backlog,
            backlog_limit,
            thread: Mutex::new(Some(thread)),
        }))
    }

    fn send(&self, make: impl FnOnce(u64) -> Message) {
        let mut sender = self.sender.lock();
        let seq = sender.0 + 1;
        let Some(tx) = &sender.1 else {
            return;
        };
        // Blocks while the queue is full: writers slow down to the indexer's pace.
        if tx.send(make(seq)).is_ok() {
            sender.0 = seq;
            self.enqueued.store(seq, Ordering::Release);
        }
    }

    /// Queues the committed changes of one batch; waits while the queue holds more than
    /// [`QUEUE_BYTES`] (or [`QUEUE_CAPACITY`] batches).
    pub fn changes(&self, changes: Vec<Change>) {
        if changes.is_empty() {
            return;
        }
        let bytes = changes.iter().map(Change::queued_bytes).sum();
        let mut sender = self.sender.lock();
        let seq = sender.0 + 1;
        let Some(tx) = &sender.1 else {
            return;
        };
        // Under the sender's mutex, so batches enter the queue in the order they got room.
        self.backlog.reserve(bytes, self.backlog_limit);
        if tx.send(Message::Changes(seq, changes, bytes)).is_ok() {
            sender.0 = seq;
            self.enqueued.store(seq, Ordering::Release);
        } else {
            self.backlog.release(bytes);
        }
    }

    /// Bytes of changes queued and not yet applied (at most about [`QUEUE_BYTES`]).
    #[cfg(test)]
    pub fn queued_bytes(&self) -> usize {
        self.backlog.queued()
    }

    /// Sets (or replaces) the link of `collection` and brings the index in line with the
    /// collection's documents in `engine` (caught up or rebuilt, see [`Message::Attach`]).
    /// The feed must be registered with the collection's linked views before.
    pub fn link(&self, collection: CollectionId, link: LinkDefinition, engine: Engine) {
        self.links.write().insert(collection, Arc::new(link));
        self.send(|seq| Message::Attach(seq, collection, engine));
    }

    /// Every link the reopened index serves is attached: recorded collections without one
    /// leave the index.
    pub fn end_open(&self) {
        self.send(Message::EndOpen);
    }

    /// Removes the link of `collection` and its documents from the index.
    pub fn unlink(&self, collection: CollectionId) {
        self.links.write().remove(&collection);
        self.send(|seq| {
            Message::Changes(
                seq,
                vec![Change::RemoveAll {
                    collection,
                    tick: None,
                }],
                0,
            )
        });
    }

    /// Documents analyzed and handed to the index since the feed started (a reopened index
    /// that was caught up analyzed only what changed).
    pub fn documents_analyzed(&self) -> u64 {
        self.analyzed.load(Ordering::Relaxed)
    }

    pub fn set_commit_interval(&self, ms: u64) {
        self.commit_interval_ms.store(ms, Ordering::Relaxed);
    }

    /// Waits until everything queued before this call is committed in the index (the
    /// `waitForSync` of a search). Error 4 if the indexer does not get there within a minute.
    pub fn wait_synced(&self) -> Result<()> {
        let target = self.enqueued.load(Ordering::Acquire);
        let (lock, cv) = &*self.committed;
        if *lock.lock() >= target {
            return Ok(());
        }
        {
            // A flush without its own sequence number: it only asks for a commit.
            let sender = self.sender.lock();
            if let Some(tx) = &sender.1 {
                let _ = tx.send(Message::Flush);
            }
        }
        let deadline = Instant::now() + SYNC_WAIT;
        let mut done = lock.lock();
        while *done < target {
            if cv.wait_until(&mut done, deadline).timed_out() {
                return Err(Error::with_message(
                    ErrorCode::Internal,
                    "timed out waiting for the view to index committed writes",
                ));
            }
        }
        Ok(())
    }

    /// Whether everything queued so far is committed in the index (and its reader reloaded).
    pub fn is_synced(&self) -> bool {
        let target = self.enqueued.load(Ordering::Acquire);
        *self.committed.0.lock() >= target
    }

    /// Stops the indexer after it has applied and committed everything queued, and closes
    /// the index's writer (releasing its directory).
    pub fn stop(&self) {
        {
            let mut sender = self.sender.lock();
            if let Some(tx) = sender.1.take() {
                let _ = tx.send(Message::Stop);
            }
        }
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
            self.index.close();
        }
    }
}

impl Drop for ViewFeed {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What catching a collection up did.
struct CatchUp {
    /// Documents indexed again: written after the recorded tick, or held at a stale revision.
    refed: u64,
    /// Documents the index held that the collection no longer has.
    removed: u64,
}

struct Indexer {
    /// "view 'name'" or "inverted index 'name'", for the log.
    what: String,
    index: Arc<ViewIndex>,
    links: Arc<RwLock<HashMap<CollectionId, Arc<LinkDefinition>>>>,
    analyzers: Arc<dyn AnalyzerSource>,
    committed: Arc<(Mutex<u64>, Condvar)>,
    interval: Arc<AtomicU64>,
    analyzed: Arc<AtomicU64>,
    backlog: Arc<Backlog>,
    /// The snapshot tick each collection was last built or caught up from: its changes at or
    /// below it are already in the index (or superseded there) and are skipped.
    built_at: HashMap<CollectionId, u64>,
    /// What the index holds of each collection after the messages applied so far: the
    /// payload of the next commit.
    covered: CommitRecord,
    /// What the reopened index held, until the links attached at open are served.
    reopened: Option<Reopened>,
}

impl Indexer {
    fn run(mut self, rx: Receiver<Message>) {
        let _close = CloseOnExit(Arc::clone(&self.backlog));
        let mut applied = 0u64;
        let mut committed = 0u64;
        let mut due: Option<Instant> = None;
        loop {
            let wait = due.map_or(Duration::from_secs(3600), |d| {
                d.saturating_duration_since(Instant::now())
            });
            let message = match rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => Some(Message::Stop),
            };
            let mut commit_now = false;
            let mut stop = false;
            match message {
                Some(Message::Changes(seq, changes, bytes)) => {
                    for change in changes {
                        self.apply(change);
                    }
                    self.backlog.release(bytes);
                    applied = seq;
                }
                Some(Message::Attach(seq, collection, engine)) => {
                    self.attach(collection, &engine);
                    applied = seq;
                }
                Some(Message::EndOpen(seq)) => {
                    self.end_open();
                    applied = seq;
                }
                Some(Message::Flush) => commit_now = true,
                Some(Message::Stop) => {
                    commit_now = true;
                    stop = true;
                }
                None => commit_now = true,
            }
            if applied > committed && due.is_none() {
                due = Some(
                    Instant::now() + Duration::from_millis(self.interval.load(Ordering::Relaxed)),
                );
            }
            if due.is_some_and(|d| Instant::now() >= d) {
                commit_now = true;
            }
            if commit_now && applied > committed {
                match self.index.commit(&self.covered.to_payload()) {
                    Ok(()) => {
                        committed = applied;
                        let (lock, cv) = &*self.committed;
                        *lock.lock() = committed;
                        cv.notify_all();
                    }
                    Err(err) => tracing::error!("committing a view index failed: {}", err.message),
                }
                due = None;
            } else if commit_now && applied == committed {
                due = None;
                let (lock, cv) = &*self.committed;
                *lock.lock() = committed;
                cv.notify_all();
            }
            if stop {
                return;
            }
        }
    }

    /// Whether a change committed at `tick` to `collection` is not yet in the index: it came
    /// after the snapshot the collection was last built or caught up from (false before
    /// the collection's first build: that build's snapshot will hold it).
    fn after_build(&self, collection: CollectionId, tick: u64) -> bool {
        self.built_at
            .get(&collection)
            .is_some_and(|built| tick > *built)
    }

    /// The commit at `tick` of `collection` is in the index now.
    fn covers(&mut self, collection: CollectionId, tick: u64) {
        if let Some(record) = self.covered.collections.get_mut(&collection) {
            record.tick = record.tick.max(tick);
        }
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::Put {
                collection,
                key,
                rev,
                body,
                tick,
                new_key,
            } => {
                if !self.after_build(collection, tick) {
                    return;
                }
                // An inserted key committed after the build's snapshot has no earlier version
                // in the index: every earlier one was removed by a change queued before it.
                self.put(collection, &key, rev, &body, !new_key);
                self.covers(collection, tick);
            }
            Change::Remove {
                collection,
                key,
                tick,
            } => {
                if !self.after_build(collection, tick) {
                    return;
                }
                self.index.remove(collection, &key);
                self.covers(collection, tick);
            }
            Change::RemoveAll {
                collection,
                tick: Some(tick),
            } => {
                if !self.after_build(collection, tick) {
                    return;
                }
                self.index.remove_collection(collection);
                self.covers(collection, tick);
            }
            Change::RemoveAll {
                collection,
                tick: None,
            } => {
                self.index.remove_collection(collection);
                self.built_at.remove(&collection);
                self.covered.collections.remove(&collection);
            }
        }
    }

    /// Indexes one document; `replaces`: the index may hold an earlier version of it.
    fn put(&self, collection: CollectionId, key: &str, rev: u64, body: &[u8], replaces: bool) {
        let Some(link) = self.links.read().get(&collection).cloned() else {
            return;
        };
        let doc: serde_json::Value = match serde_json::from_slice(body) {
            Ok(doc) => doc,
            Err(err) => {
                tracing::error!(key, "a stored document is not JSON; not indexed: {err}");
                return;
            }
        };
        let terms = document_terms(&doc, &link, &*self.analyzers);
        self.analyzed.fetch_add(1, Ordering::Relaxed);
        let done = if replaces {
            self.index.put(collection, key, rev, terms, &doc)
        } else {
            self.index.insert(collection, key, rev, terms, &doc)
        };
        if let Err(err) = done {
            tracing::error!(key, "indexing a document failed: {}", err.message);
        }
    }

    /// Brings the index in line with `collection` as of a snapshot taken now: caught up from
    /// the reopened index's record when it was made with the same link shape, otherwise
    /// rebuilt. At open, says in the log which of the two happened and why.
    fn attach(&mut self, collection: CollectionId, engine: &Engine) {
        let Some(link) = self.links.read().get(&collection).cloned() else {
            // Unlinked meanwhile.
            return;
        };
        let shape = link_shape(&link, &*self.analyzers);
        let snapshot = engine.snapshot();
        let tick = snapshot.tick();
        let rebuild_reason = match &mut self.reopened {
            None => None,
            Some(Reopened::Unusable(reason)) => Some(reason.clone()),
            Some(Reopened::Recorded(record)) => match record.collections.remove(&collection) {
                None => Some("its last commit does not cover the collection".to_string()),
                Some(recorded) if recorded.shape != shape => {
                    Some("the link or its analyzers changed since its last commit".to_string())
                }
                Some(recorded) => match self.catch_up(collection, &snapshot, recorded.tick) {
                    Ok(done) => {
                        tracing::info!(
                            "{}: caught up {} documents ({} removed) of collection {} since its \
                             last commit, not rebuilt",
                            self.what,
                            done.refed,
                            done.removed,
                            collection
                        );
                        None
                    }
                    Err(reason) => Some(reason),
                },
            },
        };
        let caught_up =
            matches!(&self.reopened, Some(Reopened::Recorded(_))) && rebuild_reason.is_none();
        if !caught_up {
            let built = self.build(collection, &snapshot);
            if let Some(reason) = rebuild_reason {
                match built {
                    Ok(n) => tracing::warn!(
                        "{}: rebuilt from collection {} ({} documents): {}",
                        self.what,
                        collection,
                        n,
                        reason
                    ),
                    Err(err) => tracing::error!(
                        "{}: rebuilding from collection {} failed: {}",
                        self.what,
                        collection,
                        err.message
                    ),
                }
            } else if let Err(err) = built {
                tracing::error!("reading a linked collection failed: {}", err.message);
            }
        }
        self.built_at.insert(collection, tick);
        self.covered
            .collections
            .insert(collection, LinkRecord { tick, shape });
    }

    /// Indexes every document of `collection` in `snapshot` after removing what the index
    /// held of it. Returns how many were indexed.
    fn build(&mut self, collection: CollectionId, snapshot: &Snapshot) -> Result<u64> {
        self.index.remove_collection(collection);
        let mut n = 0u64;
        for item in snapshot.scan(collection)? {
            let (key, doc) = item?;
            // The collection's documents were all removed just before.
            self.put(collection, &key, doc.rev.0, &doc.body, false);
            n += 1;
        }
        Ok(n)
    }

    /// Brings the reopened index's documents of `collection`, which were its state at commit
    /// tick `recorded`, to its state in `snapshot` without analyzing unchanged documents:
    /// every document the index holds is looked up in the snapshot (gone: removed from the
    /// index; another revision written at or below `recorded`: indexed again), and every
    /// document written after `recorded` is indexed again. Then the documents held must be
    /// exactly the collection's (counted); if not — or if the index claims writes the engine
    /// does not have — why, and the caller rebuilds.
    fn catch_up(
        &mut self,
        collection: CollectionId,
        snapshot: &Snapshot,
        recorded: u64,
    ) -> std::result::Result<CatchUp, String> {
        if recorded > snapshot.tick() {
            return Err(format!(
                "its last commit covers tick {recorded}, beyond the engine's newest tick {}",
                snapshot.tick()
            ));
        }
        let failed = |err: Error| format!("catching up failed: {}", err.message);
        let mut held = 0u64;
        let mut held_and_rewritten = 0u64;
        let mut removed = 0u64;
        let mut stale = Vec::new();
        self.index
            .for_each_identity(collection, |key, rev| {
                match snapshot.revision_and_tick(collection, key)? {
                    None => {
                        self.index.remove(collection, key);
                        removed += 1;
                    }
                    Some((current, written)) => {
                        held += 1;
                        if written > recorded {
                            held_and_rewritten += 1;
                        } else if current.0 != rev {
                            stale.push(key.to_string());
                        }
                    }
                }
                Ok(())
            })
            .map_err(failed)?;
        let mut refed = 0u64;
        for key in &stale {
            if let Some(doc) = snapshot.get(collection, key).map_err(failed)? {
                self.put(collection, key, doc.rev.0, &doc.body, true);
                refed += 1;
            }
        }
        let mut written = 0u64;
        for item in snapshot
            .scan_written_after(collection, recorded)
            .map_err(failed)?
        {
            let (key, doc) = item.map_err(failed)?;
            self.put(collection, &key, doc.rev.0, &doc.body, true);
            written += 1;
        }
        let count = snapshot.count(collection).map_err(failed)?;
        let indexed = held + written - held_and_rewritten;
        if indexed != count {
            return Err(format!(
                "after catching up it would hold {indexed} documents of the collection's {count}"
            ));
        }
        Ok(CatchUp {
            refed: refed + written,
            removed,
        })
    }

    /// The links attached at open are served: recorded collections that got none leave the
    /// index, and later links are built as new ones.
    fn end_open(&mut self) {
        if let Some(Reopened::Recorded(record)) = self.reopened.take() {
            for collection in record.collections.keys() {
                if !self.covered.collections.contains_key(collection) {
                    self.index.remove_collection(*collection);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quiver_search::index::IdentityOnly;
    use quiver_storage::{CollectionOptions, EngineOptions};
    use serde_json::json;

    fn put(collection: CollectionId, key: &str, tick: u64, body_len: usize) -> Change {
        let body = json!({ "_key": key, "text": "x".repeat(body_len) });
        Change::Put {
            collection,
            key: key.to_string(),
            rev: tick,
            body: Bytes::from(serde_json::to_vec(&body).unwrap()),
            tick,
            new_key: true,
        }
    }

    /// While the indexer cannot get on, writers wait once the queued changes exceed the byte
    /// bound, and go on as it catches up; everything queued is indexed in the end.
    #[test]
    fn a_writer_waits_while_the_backlog_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(&dir.path().join("engine"), EngineOptions::default()).unwrap();
        let db = engine.create_database(json!({ "name": "db" })).unwrap();
        let cid = engine
            .create_collection(db, CollectionOptions::default(), json!({}))
            .unwrap();
        let (index, _) = ViewIndex::open(&dir.path().join("index")).unwrap();
        let limit = 64 << 10;
        let feed = ViewFeed::start_with_backlog_limit(
            "view 'db/v'",
            Arc::new(index),
            Arc::new(IdentityOnly),
            10,
            None,
            limit,
        )
        .unwrap();
        let link = LinkDefinition::from_json(&json!({ "includeAllFields": true })).unwrap();
        feed.link(cid, link, engine.clone());
        feed.wait_synced().unwrap();
        // The collection was built at the engine's tick; later changes are applied.
        let tick = engine.snapshot().tick();

        // The indexer blocks on the links while a writer holds them.
        let links = Arc::clone(&feed.links);
        let held = links.write();
        // ~40 KiB each: the first goes in (and stalls the indexer), the second fits, the
        // third must wait.
        feed.changes(vec![put(cid, "a", tick + 1, 40 << 10)]);
        feed.changes(vec![put(cid, "b", tick + 2, 20 << 10)]);
        let sent = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let feed = Arc::clone(&feed);
            let sent = Arc::clone(&sent);
            std::thread::spawn(move || {
                feed.changes(vec![put(cid, "c", tick + 3, 40 << 10)]);
                sent.store(true, Ordering::SeqCst);
            })
        };
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !sent.load(Ordering::SeqCst),
            "the third batch waits for room"
        );
        assert!(feed.queued_bytes() <= limit, "{}", feed.queued_bytes());
        assert!(feed.queued_bytes() > 60 << 10);
        drop(held);
        writer.join().unwrap();
        assert!(sent.load(Ordering::SeqCst));
        feed.wait_synced().unwrap();
        assert_eq!(feed.queued_bytes(), 0);
        assert_eq!(feed.documents_analyzed(), 3);

        // A batch larger than the bound goes through alone.
        feed.changes(vec![put(cid, "d", tick + 4, 100 << 10)]);
        feed.wait_synced().unwrap();
        assert_eq!(feed.documents_analyzed(), 4);
        feed.stop();
    }
}
