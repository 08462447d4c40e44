//! The analysis of documents for one view's index on several threads: the indexer
//! (`view_feed.rs`) collects the documents to index in write order, and each window of them is
//! parsed, analyzed and made into tantivy documents by as many threads as the machine has
//! cores, then handed to the index's writer in that same order on the indexer's thread. The
//! order matters where one key is written twice (a put replaces what an earlier put of the
//! key added), and removals are applied only after the window before them is handed over
//! ([`Analysis::flush`]).
//!
//! The helper threads are started by the indexer's thread for each window large enough to
//! share, so on Linux they inherit its background priority (`search_priority.rs`):
//! acknowledged writes still come first, the analysis takes what they leave.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::RwLock;
use quiver_search::index::{
    document_terms, AnalyzerSource, LinkDefinition, PreparedDocument, ViewIndex,
};
use quiver_storage::CollectionId;

/// Documents collected before they are analyzed and handed over together.
const WINDOW: usize = 2048;

/// Documents one thread takes from a window at a time.
const CHUNK: usize = 32;

/// A window shorter than this is analyzed on the indexer's thread alone (starting threads
/// costs more than it saves on a few documents: single-document writes stay on one thread).
const SHARED_WINDOW_MIN: usize = 4 * CHUNK;

/// Threads that analyze one window at most.
const MAX_THREADS: usize = 4;

/// One document version to index.
pub(crate) struct PendingPut {
    pub collection: CollectionId,
    pub key: String,
    pub rev: u64,
    pub body: Bytes,
    /// The index may hold an earlier version of the key (deleted first).
    pub replaces: bool,
}

/// The documents waiting to be analyzed and what analyzing them needs.
pub(crate) struct Analysis {
    index: Arc<ViewIndex>,
    links: Arc<RwLock<HashMap<CollectionId, Arc<LinkDefinition>>>>,
    analyzers: Arc<dyn AnalyzerSource>,
    /// Documents analyzed and handed to the index since the feed started.
    analyzed: Arc<AtomicU64>,
    threads: usize,
    pending: Vec<PendingPut>,
}

impl Analysis {
    pub fn new(
        index: Arc<ViewIndex>,
        links: Arc<RwLock<HashMap<CollectionId, Arc<LinkDefinition>>>>,
        analyzers: Arc<dyn AnalyzerSource>,
        analyzed: Arc<AtomicU64>,
    ) -> Analysis {
        let threads = std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .clamp(1, MAX_THREADS);
        Analysis {
            index,
            links,
            analyzers,
            analyzed,
            threads,
            pending: Vec::new(),
        }
    }

    /// Queues a document to index after those queued before it; a full window is analyzed
    /// and handed over at once.
    pub fn push(&mut self, put: PendingPut) {
        self.pending.push(put);
        if self.pending.len() >= WINDOW {
            self.flush();
        }
    }

    /// Analyzes every queued document and hands them to the index in the order queued.
    /// Called before any other change to the index (a removal, a commit), so the index sees
    /// the writes in their order.
    pub fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let prepared = self.prepare_all();
        for (put, doc) in self.pending.iter().zip(prepared) {
            let Some(doc) = doc else {
                continue;
            };
            if let Err(err) = self.index.add(doc, put.replaces) {
                tracing::error!(key = put.key, "indexing a document failed: {}", err.message);
            }
        }
        self.pending.clear();
    }

    /// The tantivy document of each queued document (None: not indexed — its link is gone
    /// or its body is not JSON), in the order queued.
    fn prepare_all(&self) -> Vec<Option<PreparedDocument>> {
        let puts = &self.pending;
        let threads = self.threads.min(puts.len() / CHUNK);
        if threads <= 1 || puts.len() < SHARED_WINDOW_MIN {
            return puts.iter().map(|put| self.prepare(put)).collect();
        }
        let next = AtomicUsize::new(0);
        let work = || {
            let mut done = Vec::new();
            loop {
                let start = next.fetch_add(CHUNK, Ordering::Relaxed);
                if start >= puts.len() {
                    return done;
                }
                let end = (start + CHUNK).min(puts.len());
                for (i, put) in puts[start..end].iter().enumerate() {
                    done.push((start + i, self.prepare(put)));
                }
            }
        };
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads)
                .filter_map(|_| {
                    std::thread::Builder::new()
                        .name("quiver-view-analysis".into())
                        .spawn_scoped(scope, work)
                        .map_err(|err| {
                            tracing::warn!("starting a view analysis thread failed: {err}")
                        })
                        .ok()
                })
                .collect();
            let mut prepared: Vec<Option<PreparedDocument>> =
                std::iter::repeat_with(|| None).take(puts.len()).collect();
            let mut place = |done: Vec<(usize, Option<PreparedDocument>)>| {
                for (i, doc) in done {
                    prepared[i] = doc;
                }
            };
            place(work());
            for helper in helpers {
                match helper.join() {
                    Ok(done) => place(done),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            prepared
        })
    }

    /// Parses and analyzes one document under its collection's link.
    fn prepare(&self, put: &PendingPut) -> Option<PreparedDocument> {
        let link = self.links.read().get(&put.collection).cloned()?;
        let doc: serde_json::Value = match serde_json::from_slice(&put.body) {
            Ok(doc) => doc,
            Err(err) => {
                tracing::error!(
                    key = put.key,
                    "a stored document is not JSON; not indexed: {err}"
                );
                return None;
            }
        };
        let terms = document_terms(&doc, &link, &*self.analyzers);
        self.analyzed.fetch_add(1, Ordering::Relaxed);
        Some(
            self.index
                .prepare(put.collection, &put.key, put.rev, &terms, &doc),
        )
    }
}
