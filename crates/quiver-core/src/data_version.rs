//! A collection's data version: the commit tick of the newest write to it, so that a cached
//! query result can tell whether it is stale (the AQL query results cache).
//!
//! A reader whose snapshot has tick `s` saw every write to a collection whose data version is
//! at most `s`; a version above `s` means a write landed after its snapshot. The version is
//! raised *after* the write became visible, so a result stored under an older version is found
//! stale as soon as the write's version is recorded, before the writer is answered.

use std::sync::atomic::{AtomicU64, Ordering};

/// One collection's data version (0: no write through this handle yet).
#[derive(Debug, Default)]
pub(crate) struct CollectionVersion(AtomicU64);

impl CollectionVersion {
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }

    /// Called after a write committed at `tick` became visible.
    pub(crate) fn written(&self, tick: u64) {
        self.0.fetch_max(tick, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_the_newest_commit_tick() {
        let v = CollectionVersion::default();
        assert_eq!(v.get(), 0);
        v.written(7);
        v.written(5);
        assert_eq!(
            v.get(),
            7,
            "a commit finishing late never lowers the version"
        );
        v.written(9);
        assert_eq!(v.get(), 9);
    }
}
