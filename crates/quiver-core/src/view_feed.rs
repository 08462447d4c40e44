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
//!
//! A full queue does not hold up inserts: when a batch that only inserts new keys into a
//! collection finds no room, the collection's inserts are left out of the queue from that
//! commit on, and one `ReadBack` message takes their place. When the indexer gets to it, it
//! takes a snapshot, ends the leaving out (atomically with the snapshot), and reads back
//! from the collection every document written after the last queued tick. Any other change
//! of that collection (an update, a replace, a removal, a truncate) waits until the read-back
//! is taken, so it reaches the queue after the `ReadBack` and in commit order; the indexer
//! skips the inserts at or below the read-back's tick that come after it (the read-back
//! indexed their key's state) and applies the other puts among them as replacements. So the
//! bytes queued stay bounded, the writers of a bulk load go on at their own pace, and the
//! index ends at the collection's state all the same.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
    /// The collection the change belongs to.
    fn collection(&self) -> CollectionId {
        match self {
            Change::Put { collection, .. }
            | Change::Remove { collection, .. }
            | Change::RemoveAll { collection, .. } => *collection,
        }
    }

    /// The commit tick of the change (none for a dropped link or collection).
    fn tick(&self) -> Option<u64> {
        match self {
            Change::Put { tick, .. } | Change::Remove { tick, .. } => Some(*tick),
            Change::RemoveAll { tick, .. } => *tick,
        }
    }

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

    /// Whether `bytes` more would have to wait for room.
    fn is_full(&self, bytes: usize, limit: usize) -> bool {
        let state = self.state.lock();
        state.0 > 0 && state.0 + bytes > limit && !state.1
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

/// The collections whose inserts are left out of the queue until the indexer reads them back
/// (see the module's documentation).
#[derive(Default)]
struct LeftOut {
    state: Mutex<LeftOutState>,
    /// Signalled when a collection's inserts are read back (or the indexer is gone).
    read_back: Condvar,
}

#[derive(Default)]
struct LeftOutState {
    /// The engine the links read from (set by [`ViewFeed::link`]).
    engine: Option<Engine>,
    /// Per collection: its inserts committed after this tick may be missing from the queue.
    after: HashMap<CollectionId, u64>,
    /// The indexer is gone: nothing is left out any more, and nobody waits.
    closed: bool,
}

impl LeftOut {
    fn close(&self) {
        let mut state = self.state.lock();
        state.closed = true;
        state.after.clear();
        self.read_back.notify_all();
    }
}

/// Closes the backlog and ends any leaving out when the indexer's thread ends, however it
/// ends.
struct CloseOnExit(Arc<Backlog>, Arc<LeftOut>);

impl Drop for CloseOnExit {
    fn drop(&mut self) {
        self.0.close();
        self.1.close();
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
    /// The collection's inserts committed after the tick were left out of the queue: read
    /// them back from the engine.
    ReadBack(u64, CollectionId, u64, Engine),
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
    left_out: Arc<LeftOut>,
    /// Shared with the indexer ([`Indexer::damaged`]); tests record a lost write through it.
    #[cfg(test)]
    damaged: Arc<AtomicBool>,
    /// What the indexer did up to its last commit ([`Indexer::committed_counts`]).
    #[cfg(test)]
    counts: Arc<Mutex<FeedCounts>>,
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
        let left_out = Arc::new(LeftOut::default());
        let damaged = Arc::new(AtomicBool::new(false));
        let links = Arc::new(RwLock::new(HashMap::new()));
        let committed = Arc::new((Mutex::new(0u64), Condvar::new()));
        let interval = Arc::new(AtomicU64::new(commit_interval_ms));
        let analyzed = Arc::new(AtomicU64::new(0));
        let committed_counts = Arc::new(Mutex::new(FeedCounts::default()));
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
            left_out: Arc::clone(&left_out),
            built_at: HashMap::new(),
            read_back_at: HashMap::new(),
            damaged: Arc::clone(&damaged),
            committed_collections: Vec::new(),
            counts: FeedCounts::default(),
            committed_counts: Arc::clone(&committed_counts),
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
            left_out,
            #[cfg(test)]
            damaged,
            #[cfg(test)]
            counts: committed_counts,
            thread: Mutex::new(Some(thread)),
        }))
    }

    fn send(&self, make: impl FnOnce(u64) -> Message) {
        let mut sender = self.sender.lock();
        self.send_locked(&mut sender, make);
    }

    fn send_locked(
        &self,
        sender: &mut (u64, Option<SyncSender<Message>>),
        make: impl FnOnce(u64) -> Message,
    ) {
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

    /// Queues the committed changes of one batch of one collection, sent in commit order
    /// (under the collection's writer lock). A batch that only inserts new keys is left out
    /// when the queue holds more than [`QUEUE_BYTES`] (read back later, see the module's
    /// documentation); any other batch waits for room, and for a read-back of its collection
    /// still pending.
    pub fn changes(&self, changes: Vec<Change>) {
        let Some(first) = changes.first() else {
            return;
        };
        let collection = first.collection();
        assert!(
            changes.iter().all(|c| c.collection() == collection),
            "one batch of changes per collection"
        );
        let bytes = changes.iter().map(Change::queued_bytes).sum();
        let inserts_only = changes
            .iter()
            .all(|c| matches!(c, Change::Put { new_key: true, .. }));
        let mut sender = self.sender.lock();
        if sender.1.is_none() {
            return;
        }
        {
            let mut left_out = self.left_out.state.lock();
            if inserts_only && !left_out.closed {
                if left_out.after.contains_key(&collection) {
                    // Read back with the others when the indexer gets to the `ReadBack`.
                    return;
                }
                let tick = first.tick().expect("an insert has a commit tick");
                if let Some(engine) = left_out.engine.clone() {
                    if self.backlog.is_full(bytes, self.backlog_limit) {
                        // Every earlier change of the collection was sent before (commit
                        // order), so all at or below `tick - 1` is queued.
                        let after = tick.saturating_sub(1);
                        left_out.after.insert(collection, after);
                        drop(left_out);
                        self.send_locked(&mut sender, |seq| {
                            Message::ReadBack(seq, collection, after, engine)
                        });
                        return;
                    }
                }
            } else {
                // Bounded: the indexer takes the read-back when it gets to its message, which
                // is already queued.
                while left_out.after.contains_key(&collection) && !left_out.closed {
                    self.left_out.read_back.wait(&mut left_out);
                }
            }
        }
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
        self.left_out.state.lock().engine = Some(engine.clone());
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

    /// What the indexer did up to its last commit.
    #[cfg(test)]
    pub(crate) fn counts(&self) -> FeedCounts {
        *self.counts.lock()
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

/// What the indexer did since the feed started, for the `views` debug log at each commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FeedCounts {
    /// Documents added without a deletion of an earlier version (inserted keys).
    pub inserted: u64,
    /// Documents added with a deletion of an earlier version (updates, replaces, and puts
    /// that may find their key in the index).
    pub replaced: u64,
    /// Documents removed.
    pub removed: u64,
    /// Queued changes skipped: at or below the snapshot the collection was built or caught up
    /// from.
    pub skipped_built: u64,
    /// Queued inserts skipped: a read-back indexed their key's state already.
    pub skipped_read_back: u64,
    /// Read-backs run.
    pub read_backs: u64,
    /// Documents the read-backs indexed.
    pub read_back_documents: u64,
    /// Keys the read-backs walked (the collection's count in each read-back's snapshot).
    pub read_back_keys: u64,
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
    left_out: Arc<LeftOut>,
    /// The snapshot tick each collection was last built or caught up from: its changes at or
    /// below it are already in the index (or superseded there) and are skipped.
    built_at: HashMap<CollectionId, u64>,
    /// The snapshot tick of each collection's last read-back: a queued change at or below it
    /// may find its document in the index already, so a put replaces.
    read_back_at: HashMap<CollectionId, u64>,
    /// What the index holds of each collection after the messages applied so far: the
    /// payload of the next commit.
    covered: CommitRecord,
    /// What the reopened index held, until the links attached at open are served.
    reopened: Option<Reopened>,
    /// A write to the index failed since its last commit: the writes since are not all in it,
    /// so instead of committing, the index is rolled back and its links rebuilt
    /// ([`Indexer::commit`]).
    damaged: Arc<AtomicBool>,
    /// The collections the last commit held documents of.
    committed_collections: Vec<CollectionId>,
    /// What the indexer did so far.
    counts: FeedCounts,
    /// [`Indexer::counts`] as of the last commit (for tests).
    committed_counts: Arc<Mutex<FeedCounts>>,
}

impl Indexer {
    fn run(mut self, rx: Receiver<Message>) {
        let _close = CloseOnExit(Arc::clone(&self.backlog), Arc::clone(&self.left_out));
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
                Some(Message::ReadBack(seq, collection, after, engine)) => {
                    self.read_back(collection, after, &engine);
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
                match self.commit() {
                    Ok(()) => {
                        committed = applied;
                        *self.committed_counts.lock() = self.counts;
                        tracing::debug!(
                            "{}: committed; since the start {:?}",
                            self.what,
                            self.counts
                        );
                        let (lock, cv) = &*self.committed;
                        *lock.lock() = committed;
                        cv.notify_all();
                    }
                    Err(err) => {
                        // Tried again at the next commit; `waitForSync` searches keep waiting.
                        self.damaged.store(true, Ordering::Release);
                        tracing::error!("{}: committing failed: {}", self.what, err.message)
                    }
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

    /// Commits what the index holds. If a write failed since the last commit, or the commit
    /// fails, the writes since the last commit are not all there: the index is rolled back
    /// to its last commit, and every linked collection is rebuilt from a snapshot taken now
    /// (the collections the last commit held and no link has now are removed), and that is
    /// committed — never a commit that covers writes the index lost.
    fn commit(&mut self) -> Result<()> {
        if !self.damaged.swap(false, Ordering::AcqRel) {
            match self.index.commit(&self.covered.to_payload()) {
                Ok(()) => {
                    self.committed_collections = self.covered.collections.keys().copied().collect();
                    return Ok(());
                }
                Err(err) => tracing::error!(
                    "{}: committing failed, rebuilding from its collections: {}",
                    self.what,
                    err.message
                ),
            }
        } else {
            tracing::error!(
                "{}: a write to the index failed, rebuilding from its collections",
                self.what
            );
        }
        self.index.rollback()?;
        for collection in &self.committed_collections {
            if !self.built_at.contains_key(collection) {
                self.index.remove_collection(*collection);
            }
        }
        let engine = self.left_out.state.lock().engine.clone();
        let collections: Vec<CollectionId> = self.built_at.keys().copied().collect();
        if let Some(engine) = engine {
            for collection in collections {
                let snapshot = engine.snapshot();
                let tick = snapshot.tick();
                self.build(collection, &snapshot)?;
                self.built_at.insert(collection, tick);
                self.read_back_at.remove(&collection);
                if let Some(record) = self.covered.collections.get_mut(&collection) {
                    record.tick = tick;
                }
            }
        }
        if self.damaged.swap(false, Ordering::AcqRel) {
            return Err(Error::with_message(
                ErrorCode::Internal,
                "a write to the index failed again while rebuilding it",
            ));
        }
        self.index.commit(&self.covered.to_payload())?;
        self.committed_collections = self.covered.collections.keys().copied().collect();
        Ok(())
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
                    self.counts.skipped_built += 1;
                    return;
                }
                // An inserted key committed after the build's snapshot has no earlier version
                // in the index: every earlier one was removed by a change queued before it —
                // unless a read-back that came after it in the queue indexed it already.
                let read_back = self
                    .read_back_at
                    .get(&collection)
                    .is_some_and(|at| tick <= *at);
                if new_key && read_back {
                    // Its key was new after the read-back's `after` tick, so the read-back
                    // indexed the key's state at its snapshot (a later update or removal at
                    // or below it comes as its own change).
                    self.counts.skipped_read_back += 1;
                    self.covers(collection, tick);
                    return;
                }
                self.put(collection, &key, rev, &body, !new_key || read_back);
                self.covers(collection, tick);
            }
            Change::Remove {
                collection,
                key,
                tick,
            } => {
                if !self.after_build(collection, tick) {
                    self.counts.skipped_built += 1;
                    return;
                }
                self.counts.removed += 1;
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
                self.read_back_at.remove(&collection);
                self.covered.collections.remove(&collection);
            }
        }
    }

    /// Indexes one document; `replaces`: the index may hold an earlier version of it.
    fn put(&mut self, collection: CollectionId, key: &str, rev: u64, body: &[u8], replaces: bool) {
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
            self.counts.replaced += 1;
            self.index.put(collection, key, rev, terms, &doc)
        } else {
            self.counts.inserted += 1;
            self.index.insert(collection, key, rev, terms, &doc)
        };
        if let Err(err) = done {
            self.damaged.store(true, Ordering::Release);
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

    /// Reads back the inserts of `collection` left out of the queue after tick `after`: ends
    /// the leaving out together with a snapshot (so every later change is queued), and indexes
    /// every document the snapshot holds that was written after `after` (or after the
    /// collection's last build, if later) — the left-out inserts and the documents of changes
    /// still queued behind this message, which then replace them. A document written after
    /// `after` by an update has no change queued before this message (the update waited for
    /// it), so its earlier version, still in the index, is replaced when that change comes.
    fn read_back(&mut self, collection: CollectionId, after: u64, engine: &Engine) {
        let snapshot = {
            let mut left_out = self.left_out.state.lock();
            let snapshot = engine.snapshot();
            left_out.after.remove(&collection);
            self.left_out.read_back.notify_all();
            snapshot
        };
        let Some(built) = self.built_at.get(&collection).copied() else {
            // Unlinked meanwhile (or not built yet: its build will read everything).
            return;
        };
        let tick = snapshot.tick();
        assert!(
            tick >= after,
            "a read-back's snapshot precedes what it reads back"
        );
        self.read_back_at.insert(collection, tick);
        let started = Instant::now();
        let read = (|| -> Result<u64> {
            let mut n = 0u64;
            for item in snapshot.scan_written_after(collection, after.max(built))? {
                let (key, doc) = item?;
                // Inserted while left out: no version of the key in the index, or an updated
                // document whose queued change replaces both (see above).
                self.put(collection, &key, doc.rev.0, &doc.body, false);
                n += 1;
            }
            Ok(n)
        })();
        match read {
            Ok(n) => {
                let keys = snapshot.count(collection).unwrap_or(0);
                self.counts.read_backs += 1;
                self.counts.read_back_documents += n;
                self.counts.read_back_keys += keys;
                tracing::debug!(
                    "{}: read back {n} documents of collection {collection} written after tick \
                     {after} (of {keys} keys, snapshot tick {tick}) in {:?}",
                    self.what,
                    started.elapsed()
                );
                self.covers(collection, tick)
            }
            Err(err) => {
                tracing::error!(
                    "{}: reading back the inserts of collection {} failed, rebuilding it: {}",
                    self.what,
                    collection,
                    err.message
                );
                self.attach(collection, engine);
            }
        }
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

    /// A replacement of `key` (not an insert: those are left out of a full queue instead).
    fn put(collection: CollectionId, key: &str, tick: u64, body_len: usize) -> Change {
        let body = json!({ "_key": key, "text": "x".repeat(body_len) });
        Change::Put {
            collection,
            key: key.to_string(),
            rev: tick,
            body: Bytes::from(serde_json::to_vec(&body).unwrap()),
            tick,
            new_key: false,
        }
    }

    /// An engine with one collection, linked (all fields) to a view whose feed commits every
    /// `commit_ms` and holds at most `backlog_limit` bytes of queued changes; built and synced.
    fn linked_feed(
        dir: &std::path::Path,
        commit_ms: u64,
        backlog_limit: usize,
    ) -> (Engine, CollectionId, Arc<ViewFeed>) {
        let engine = Engine::open(&dir.join("engine"), EngineOptions::default()).unwrap();
        let db = engine.create_database(json!({ "name": "db" })).unwrap();
        let cid = engine
            .create_collection(db, CollectionOptions::default(), json!({}))
            .unwrap();
        let (index, _) = ViewIndex::open(&dir.join("index")).unwrap();
        let feed = ViewFeed::start_with_backlog_limit(
            "view 'db/v'",
            Arc::new(index),
            Arc::new(IdentityOnly),
            commit_ms,
            None,
            backlog_limit,
        )
        .unwrap();
        let link = LinkDefinition::from_json(&json!({ "includeAllFields": true })).unwrap();
        feed.link(cid, link, engine.clone());
        feed.wait_synced().unwrap();
        (engine, cid, feed)
    }

    /// While the indexer cannot get on, writers of changes other than inserts wait once the
    /// queued changes exceed the byte bound, and go on as it catches up; everything queued is
    /// indexed in the end.
    #[test]
    fn a_writer_waits_while_the_backlog_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let limit = 64 << 10;
        let (engine, cid, feed) = linked_feed(dir.path(), 10, limit);
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

    /// A small random generator (xorshift), so the model test needs no crate.
    struct Xorshift(u64);

    impl Xorshift {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// What the index holds of `collection`: key → revision; fails on a key held twice.
    fn indexed(
        feed: &ViewFeed,
        collection: CollectionId,
    ) -> std::collections::BTreeMap<String, u64> {
        let mut held = std::collections::BTreeMap::new();
        feed.index
            .for_each_identity(collection, |key, rev| {
                assert!(
                    held.insert(key.to_string(), rev).is_none(),
                    "{key} is indexed twice"
                );
                Ok(())
            })
            .unwrap();
        held
    }

    /// Inserts left out of a full queue are read back, and the changes around them (updates,
    /// removals, inserts of removed keys, truncates) land in commit order: after every sync
    /// the index holds exactly the collection's documents at their current revisions, while
    /// the indexer stalls now and then so that the queue fills.
    #[test]
    fn left_out_inserts_are_read_back_in_order_with_the_other_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, cid, feed) = linked_feed(dir.path(), 5, 16 << 10);

        let mut rng = Xorshift(0x9e37_79b9_7f4a_7c15);
        let mut live: std::collections::BTreeMap<String, u64> = Default::default();
        let mut removed: Vec<String> = Vec::new();
        let mut next = 0u64;
        let mut left_out_seen = false;
        for round in 0..40 {
            // The indexer stalls for a while in most rounds (it waits for the links), so the
            // queue fills and inserts are left out; the stall ends on its own, as a writer
            // waiting for a read-back needs the indexer.
            let stall = {
                let links = Arc::clone(&feed.links);
                let ms = rng.below(40);
                std::thread::spawn(move || {
                    let held = links.write();
                    std::thread::sleep(Duration::from_millis(ms));
                    drop(held);
                })
            };
            for _ in 0..60 {
                let kind = rng.below(10);
                let mut batch = quiver_storage::WriteBatch::new();
                let mut changes = Vec::new();
                let ops = 1 + rng.below(4);
                let mut in_batch = std::collections::BTreeSet::new();
                for _ in 0..ops {
                    // Mostly inserts of new keys (some of removed ones), then updates and
                    // removals of live ones.
                    let (key, new_key) = if kind < 6 || live.is_empty() {
                        if !removed.is_empty() && rng.below(4) == 0 {
                            (
                                removed.swap_remove(rng.below(removed.len() as u64) as usize),
                                true,
                            )
                        } else {
                            next += 1;
                            (format!("k{next}"), true)
                        }
                    } else {
                        let i = rng.below(live.len() as u64) as usize;
                        (live.keys().nth(i).unwrap().clone(), false)
                    };
                    if !in_batch.insert(key.clone()) {
                        continue;
                    }
                    let tick_placeholder = 0;
                    if !new_key && kind == 9 {
                        let rev = engine.hlc().next();
                        batch.remove(cid, &key, rev);
                        live.remove(&key);
                        removed.push(key.clone());
                        changes.push(Change::Remove {
                            collection: cid,
                            key,
                            tick: tick_placeholder,
                        });
                    } else {
                        let rev = engine.hlc().next();
                        let body = json!({ "_key": key, "text": "y".repeat(1 + rng.below(3000) as usize) });
                        let body = Bytes::from(serde_json::to_vec(&body).unwrap());
                        batch.put(cid, &key, rev, body.clone());
                        live.insert(key.clone(), rev.0);
                        changes.push(Change::Put {
                            collection: cid,
                            key,
                            rev: rev.0,
                            body,
                            tick: tick_placeholder,
                            new_key,
                        });
                    }
                }
                if changes.is_empty() {
                    continue;
                }
                let tick = engine.commit(batch).unwrap().tick;
                if rng.below(6) == 0 {
                    // A writer slow to send what it committed: a read-back taken meanwhile
                    // holds its documents already.
                    std::thread::sleep(Duration::from_millis(1 + rng.below(3)));
                }
                for change in &mut changes {
                    match change {
                        Change::Put { tick: t, .. } | Change::Remove { tick: t, .. } => *t = tick,
                        Change::RemoveAll { .. } => unreachable!(),
                    }
                }
                feed.changes(changes);
                left_out_seen |= feed.left_out.state.lock().after.contains_key(&cid);
            }
            if round % 13 == 12 {
                // A truncate, as the collection commits it.
                let tick = engine.truncate(cid, false).unwrap().tick;
                removed.extend(std::mem::take(&mut live).into_keys());
                feed.changes(vec![Change::RemoveAll {
                    collection: cid,
                    tick: Some(tick),
                }]);
            }
            stall.join().unwrap();
            if round % 4 == 3 {
                feed.wait_synced().unwrap();
                assert_eq!(indexed(&feed, cid), live, "round {round}");
            }
        }
        feed.wait_synced().unwrap();
        assert_eq!(indexed(&feed, cid), live);
        assert!(
            left_out_seen,
            "the queue never filled: the test tests nothing"
        );
        feed.stop();
    }

    /// A read-back indexes each left-out insert once and nothing that was queued: the feed's
    /// counts show every document inserted without a deletion, none replaced, and the
    /// read-back's documents exactly the inserts that found the queue full.
    #[test]
    fn a_read_back_indexes_only_the_left_out_inserts() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, cid, feed) = linked_feed(dir.path(), 5, 16 << 10);
        let insert = |i: usize| {
            let key = format!("k{i}");
            let rev = engine.hlc().next();
            let body = json!({ "_key": key, "text": "z".repeat(1000) });
            let body = Bytes::from(serde_json::to_vec(&body).unwrap());
            let mut batch = quiver_storage::WriteBatch::new();
            batch.put(cid, &key, rev, body.clone());
            let tick = engine.commit(batch).unwrap().tick;
            feed.changes(vec![Change::Put {
                collection: cid,
                key,
                rev: rev.0,
                body,
                tick,
                new_key: true,
            }]);
        };
        // The indexer stalls (it waits for the links) while 100 inserts of about 1 KiB come:
        // the first ones fill the 16 KiB queue, the others are left out.
        let held = feed.links.write();
        let mut queued = None;
        for i in 0..100 {
            insert(i);
            if queued.is_none() && feed.left_out.state.lock().after.contains_key(&cid) {
                queued = Some(i as u64);
            }
        }
        let queued = queued.expect("the queue filled");
        assert!(queued > 0 && queued < 20, "{queued} queued");
        drop(held);
        feed.wait_synced().unwrap();
        // Later inserts are queued again.
        for i in 100..110 {
            insert(i);
        }
        feed.wait_synced().unwrap();
        assert_eq!(indexed(&feed, cid).len(), 110);
        let counts = feed.counts();
        assert_eq!(counts.read_backs, 1, "{counts:?}");
        assert_eq!(counts.read_back_keys, 100, "{counts:?}");
        assert_eq!(counts.read_back_documents, 100 - queued, "{counts:?}");
        assert_eq!(counts.inserted, 110, "{counts:?}");
        assert_eq!(counts.replaced, 0, "{counts:?}");
        assert_eq!(
            counts.skipped_read_back + counts.skipped_built,
            0,
            "{counts:?}"
        );
        assert_eq!(feed.documents_analyzed(), 110);
        feed.stop();
    }

    /// A write the index lost (a failed tantivy indexing thread takes its documents with it)
    /// is never committed over: the feed rolls the index back and rebuilds its links, so a
    /// `waitForSync` search then sees every document.
    #[test]
    fn a_failed_write_rolls_back_and_rebuilds_instead_of_committing() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(&dir.path().join("engine"), EngineOptions::default()).unwrap();
        let db = engine.create_database(json!({ "name": "db" })).unwrap();
        let cid = engine
            .create_collection(db, CollectionOptions::default(), json!({}))
            .unwrap();
        let other = engine
            .create_collection(db, CollectionOptions::default(), json!({}))
            .unwrap();
        let (index, _) = ViewIndex::open(&dir.path().join("index")).unwrap();
        let feed = ViewFeed::start(
            "view 'db/v'",
            Arc::new(index),
            Arc::new(IdentityOnly),
            5,
            None,
        )
        .unwrap();
        let link = LinkDefinition::from_json(&json!({ "includeAllFields": true })).unwrap();
        feed.link(cid, link.clone(), engine.clone());
        feed.link(other, link, engine.clone());
        let write = |key: &str| {
            let rev = engine.hlc().next();
            let body = Bytes::from(serde_json::to_vec(&json!({ "_key": key })).unwrap());
            let mut batch = quiver_storage::WriteBatch::new();
            batch.put(cid, key, rev, body.clone());
            let tick = engine.commit(batch).unwrap().tick;
            feed.changes(vec![Change::Put {
                collection: cid,
                key: key.to_string(),
                rev: rev.0,
                body,
                tick,
                new_key: true,
            }]);
            (key.to_string(), rev.0)
        };
        let mut expected: std::collections::BTreeMap<String, u64> =
            ["a", "b", "c"].into_iter().map(write).collect();
        let rev = engine.hlc().next();
        let mut batch = quiver_storage::WriteBatch::new();
        batch.put(other, "o", rev, Bytes::from_static(b"{}"));
        let tick = engine.commit(batch).unwrap().tick;
        feed.changes(vec![Change::Put {
            collection: other,
            key: "o".into(),
            rev: rev.0,
            body: Bytes::from_static(b"{}"),
            tick,
            new_key: true,
        }]);
        feed.wait_synced().unwrap();
        assert_eq!(indexed(&feed, cid), expected);

        // A write lost: "b" leaves the index without a change saying so, and the failure is
        // recorded as a failed write records it. The link of `other` goes meanwhile.
        feed.index.remove(cid, "b");
        feed.damaged.store(true, Ordering::Release);
        feed.unlink(other);
        let (key, rev) = write("d");
        expected.insert(key, rev);
        feed.wait_synced().unwrap();
        assert_eq!(indexed(&feed, cid), expected);
        assert!(
            indexed(&feed, other).is_empty(),
            "the unlinked collection stays out"
        );
        feed.stop();
    }
}
