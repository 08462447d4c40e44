//! The views a collection is linked to, as the write path sees them: one flag read on every
//! commit (no view linked → nothing more), and the feeds that receive the collection's
//! committed changes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::view_feed::ViewFeed;

#[derive(Default, Debug)]
pub(crate) struct LinkedViews {
    any: AtomicBool,
    feeds: RwLock<Vec<Arc<ViewFeed>>>,
}

impl LinkedViews {
    /// Whether no view is linked (the one check the write path makes).
    #[inline]
    pub fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Acquire)
    }

    /// Links `feed` (once).
    pub fn add(&self, feed: &Arc<ViewFeed>) {
        let mut feeds = self.feeds.write();
        if !feeds.iter().any(|f| Arc::ptr_eq(f, feed)) {
            feeds.push(Arc::clone(feed));
        }
        self.any.store(true, Ordering::Release);
    }

    /// Unlinks `feed`.
    pub fn remove(&self, feed: &Arc<ViewFeed>) {
        let mut feeds = self.feeds.write();
        feeds.retain(|f| !Arc::ptr_eq(f, feed));
        self.any.store(!feeds.is_empty(), Ordering::Release);
    }

    /// The linked feeds.
    pub fn feeds(&self) -> Vec<Arc<ViewFeed>> {
        self.feeds.read().clone()
    }
}
