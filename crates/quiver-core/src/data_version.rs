//! Data versions: numbers that change after every committed write, so that a cached query
//! result can tell it is stale (the AQL query results cache).
//!
//! One process-wide counter hands out every version, so a number is never reused: a
//! collection dropped and created again under the same name starts at a version its
//! predecessor never had. A collection's version is raised *after* its write became visible.
//! A reader that takes its version before its snapshot therefore never stores a result that
//! misses a write under a version taken after that write.

use std::sync::atomic::{AtomicU64, Ordering};

static DATA_VERSION: AtomicU64 = AtomicU64::new(1);

/// The newest version handed out: it changes after every committed write anywhere.
pub fn data_version() -> u64 {
    DATA_VERSION.load(Ordering::Acquire)
}

/// A version no collection had before.
pub(crate) fn next_data_version() -> u64 {
    DATA_VERSION.fetch_add(1, Ordering::AcqRel) + 1
}

/// One collection's data version.
#[derive(Debug)]
pub(crate) struct CollectionVersion(AtomicU64);

impl CollectionVersion {
    /// A fresh version for a collection handle just opened or created.
    pub(crate) fn new() -> CollectionVersion {
        CollectionVersion(AtomicU64::new(next_data_version()))
    }

    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Called after a write to the collection became visible.
    pub(crate) fn written(&self) {
        let v = next_data_version();
        let before = self.0.fetch_max(v, Ordering::AcqRel);
        debug_assert!(before < v, "data versions only grow");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_write_moves_the_collection_and_the_process_version() {
        let a = CollectionVersion::new();
        let b = CollectionVersion::new();
        assert_ne!(a.get(), b.get(), "no two handles share a version");
        let (before, global) = (a.get(), data_version());
        a.written();
        assert!(a.get() > before);
        assert!(data_version() > global);
        let b_before = b.get();
        a.written();
        assert_eq!(
            b.get(),
            b_before,
            "a write to one collection leaves the other"
        );
    }
}
