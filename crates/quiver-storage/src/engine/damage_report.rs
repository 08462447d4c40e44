//! Damage found while the engine runs (a marker whose checksum fails when a document is
//! read, scanned, compacted or verified): counted for monitoring
//! (`EngineStats::checksum_failures`) and logged once per location with the file's path and
//! offset, however often the damaged document is asked for. The caller answers error 1000
//! (corrupted datafile), never the damaged bytes.
//!
//! Invariant: the set of locations already logged is bounded ([`LOGGED_LOCATIONS_MAX`]);
//! past it failures are still counted, and logged once more per location only if the set
//! was emptied to make room.

use quiver_errors::Error;
use std::collections::HashSet;

use super::counters::EngineCounters;
use super::Inner;

/// Most distinct damaged locations remembered as "already logged".
const LOGGED_LOCATIONS_MAX: usize = 4096;

/// Locations (file slot, offset) already logged.
#[derive(Default)]
pub(super) struct LoggedDamage {
    seen: HashSet<(u32, u64)>,
}

impl LoggedDamage {
    /// Whether `(slot, offset)` is new (and remembers it).
    fn first_time(&mut self, slot: u32, offset: u64) -> bool {
        if self.seen.len() >= LOGGED_LOCATIONS_MAX && !self.seen.contains(&(slot, offset)) {
            self.seen.clear();
        }
        let new = self.seen.insert((slot, offset));
        assert!(self.seen.len() <= LOGGED_LOCATIONS_MAX);
        new
    }
}

impl Inner {
    /// Counts a checksum failure at `offset` of the file in slot `slot` of the file table and
    /// logs it the first time; returns `err` (the caller's error 1000) unchanged.
    pub(super) fn checksum_failure(&self, slot: u32, offset: u64, err: Error) -> Error {
        EngineCounters::bump(&self.counters.checksum_failures, 1);
        if self.damage_logged.lock().first_time(slot, offset) {
            let path = self
                .file(slot)
                .map(|f| f.path().display().to_string())
                .unwrap_or_else(|| format!("the file in slot {slot} (since removed)"));
            tracing::error!(
                "checksum failure in {path} at offset {offset}: {}",
                err.message
            );
        }
        err
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_location_is_new_once_and_the_set_stays_bounded() {
        let mut d = LoggedDamage::default();
        assert!(d.first_time(1, 8));
        assert!(!d.first_time(1, 8));
        assert!(d.first_time(1, 16));
        for i in 0..(LOGGED_LOCATIONS_MAX as u64 * 2) {
            d.first_time(2, i * 8);
            assert!(d.seen.len() <= LOGGED_LOCATIONS_MAX);
        }
    }
}
