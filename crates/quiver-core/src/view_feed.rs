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

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use quiver_search::index::{document_terms, AnalyzerSource, LinkDefinition, ViewIndex};
use quiver_storage::CollectionId;

/// Messages the queue holds at most; a writer waits for room beyond (back-pressure).
pub(crate) const QUEUE_CAPACITY: usize = 4096;

/// The longest a `waitForSync` search waits for the index to catch up.
const SYNC_WAIT: Duration = Duration::from_secs(60);

/// One committed change of a linked collection.
#[derive(Clone)]
pub(crate) enum Change {
    /// The document's new stored body, committed at `tick`; `new_key`: the key did not exist
    /// before this commit (an insert).
    Put {
        collection: CollectionId,
        key: String,
        body: Bytes,
        tick: u64,
        new_key: bool,
    },
    Remove {
        collection: CollectionId,
        key: String,
    },
    /// Every document of the collection went (truncate, dropped link or collection).
    RemoveAll { collection: CollectionId },
}

/// The documents of a collection (key, stored body) in one snapshot, and that snapshot's tick.
pub(crate) type SnapshotDocuments = (u64, Box<dyn Iterator<Item = Result<(String, Bytes)>>>);

/// Produces the documents of a collection for a link's (re)build; run by the indexer so that
/// it is ordered with the changes around it.
pub(crate) type DocumentSource = Box<dyn FnOnce() -> Result<SnapshotDocuments> + Send>;

enum Message {
    Changes(u64, Vec<Change>),
    /// Index every document of the collection (a new link, or a rebuild at startup).
    Build(u64, CollectionId, DocumentSource),
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
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for ViewFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewFeed")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl ViewFeed {
    /// Starts the indexer of `index`.
    pub fn start(
        name: &str,
        index: Arc<ViewIndex>,
        analyzers: Arc<dyn AnalyzerSource>,
        commit_interval_ms: u64,
    ) -> Result<Arc<ViewFeed>> {
        let (tx, rx) = sync_channel(QUEUE_CAPACITY);
        let links = Arc::new(RwLock::new(HashMap::new()));
        let committed = Arc::new((Mutex::new(0u64), Condvar::new()));
        let interval = Arc::new(AtomicU64::new(commit_interval_ms));
        let indexer = Indexer {
            index: Arc::clone(&index),
            links: Arc::clone(&links),
            analyzers,
            committed: Arc::clone(&committed),
            interval: Arc::clone(&interval),
            built_at: HashMap::new(),
        };
        let thread = std::thread::Builder::new()
            .name(format!("quiver-view-{name}"))
            .spawn(move || indexer.run(rx))
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

    /// Queues the committed changes of one batch.
    pub fn changes(&self, changes: Vec<Change>) {
        if !changes.is_empty() {
            self.send(|seq| Message::Changes(seq, changes));
        }
    }

    /// Sets (or replaces) the link of `collection` and indexes its documents from `source`.
    pub fn link(&self, collection: CollectionId, link: LinkDefinition, source: DocumentSource) {
        self.links.write().insert(collection, Arc::new(link));
        self.send(|seq| Message::Build(seq, collection, source));
    }

    /// Removes the link of `collection` and its documents from the index.
    pub fn unlink(&self, collection: CollectionId) {
        self.links.write().remove(&collection);
        self.send(|seq| Message::Changes(seq, vec![Change::RemoveAll { collection }]));
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

    /// Stops the indexer after it has applied and committed everything queued.
    pub fn stop(&self) {
        {
            let mut sender = self.sender.lock();
            if let Some(tx) = sender.1.take() {
                let _ = tx.send(Message::Stop);
            }
        }
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ViewFeed {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Indexer {
    index: Arc<ViewIndex>,
    links: Arc<RwLock<HashMap<CollectionId, Arc<LinkDefinition>>>>,
    analyzers: Arc<dyn AnalyzerSource>,
    committed: Arc<(Mutex<u64>, Condvar)>,
    interval: Arc<AtomicU64>,
    /// The snapshot tick of each collection's last build: documents committed at or before it
    /// may be in the index through the build, later ones only through their own changes.
    built_at: HashMap<CollectionId, u64>,
}

impl Indexer {
    fn run(mut self, rx: Receiver<Message>) {
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
                Some(Message::Changes(seq, changes)) => {
                    for change in changes {
                        self.apply(change);
                    }
                    applied = seq;
                }
                Some(Message::Build(seq, collection, source)) => {
                    self.build(collection, source);
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
                match self.index.commit("{}") {
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

    /// Whether a change committed at `tick` to `collection` came after the snapshot the
    /// collection's last build read (false without a build).
    fn after_build(&self, collection: CollectionId, tick: u64) -> bool {
        self.built_at
            .get(&collection)
            .is_some_and(|built| tick > *built)
    }

    fn apply(&self, change: Change) {
        match change {
            Change::Put {
                collection,
                key,
                body,
                tick,
                new_key,
            } => {
                // An inserted key committed after the build's snapshot has no earlier version
                // in the index: every earlier one was removed by a change queued before it.
                let replaces = !(new_key && self.after_build(collection, tick));
                self.put(collection, &key, &body, replaces);
            }
            Change::Remove { collection, key } => self.index.remove(collection, &key),
            Change::RemoveAll { collection } => self.index.remove_collection(collection),
        }
    }

    /// Indexes one document; `replaces`: the index may hold an earlier version of it.
    fn put(&self, collection: CollectionId, key: &str, body: &[u8], replaces: bool) {
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
        let done = if replaces {
            self.index.put(collection, key, terms, &doc)
        } else {
            self.index.insert(collection, key, terms, &doc)
        };
        if let Err(err) = done {
            tracing::error!(key, "indexing a document failed: {}", err.message);
        }
    }

    fn build(&mut self, collection: CollectionId, source: DocumentSource) {
        self.index.remove_collection(collection);
        self.built_at.remove(&collection);
        let (tick, docs) = match source() {
            Ok(docs) => docs,
            Err(err) => {
                tracing::error!("reading a linked collection failed: {}", err.message);
                return;
            }
        };
        self.built_at.insert(collection, tick);
        for item in docs {
            match item {
                // The collection's documents were all removed just before.
                Ok((key, body)) => self.put(collection, &key, &body, false),
                Err(err) => {
                    tracing::error!("reading a linked collection failed: {}", err.message);
                    return;
                }
            }
        }
    }
}
