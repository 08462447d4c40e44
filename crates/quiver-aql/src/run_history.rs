//! How long the recent runs of each query text took: whether a query is expected to be brief
//! enough to run on the thread that received it (the HTTP worker) rather than after handing
//! that thread's other work elsewhere.
//!
//! Kept per database and query text, whatever the bind values: a traversal from another start
//! vertex, or a lookup of another key, is the same work shape. A text counts as brief after
//! [`BRIEF_STREAK`] runs in a row that each took at most [`BRIEF_RUN`] (from the request's
//! arrival at the query service to its first batch) and wrote nothing (a write may wait for a
//! collection's writer, which no limit check interrupts), under the current catalog version
//! (a new or dropped index or collection changes the work, and a first use after such a change
//! may build an index); one longer or writing run ends the streak. Texts are
//! told apart by a 64-bit keyed hash (a collision only merges two histories, which decides
//! where a query runs, never what it answers). At most [`MAX_TEXTS`] texts are remembered;
//! when full, the history starts over.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::time::Duration;

use parking_lot::Mutex;

/// A run counts as brief up to this long.
pub const BRIEF_RUN: Duration = Duration::from_micros(500);

/// Brief runs in a row after which a text is expected to be brief.
pub const BRIEF_STREAK: u8 = 2;

/// Texts remembered at most.
const MAX_TEXTS: usize = 4096;

/// A query text's place in the history: its database and text, hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TextKey(u64);

/// The recent runs of every query text (see the module documentation).
#[derive(Default)]
pub struct RunHistory {
    hasher: std::collections::hash_map::RandomState,
    /// Brief runs in a row, by text, and the catalog version they ran under.
    streaks: Mutex<HashMap<TextKey, (u8, u64)>>,
}

impl RunHistory {
    /// The key of `query` in `database`.
    pub fn key(&self, database: &str, query: &str) -> TextKey {
        let mut h = self.hasher.build_hasher();
        database.hash(&mut h);
        query.hash(&mut h);
        TextKey(h.finish())
    }

    /// Whether the recent runs of the text were all brief, under catalog `version`.
    pub fn brief(&self, key: TextKey, version: u64) -> bool {
        self.streaks
            .lock()
            .get(&key)
            .is_some_and(|&(streak, v)| streak >= BRIEF_STREAK && v == version)
    }

    /// Records a run of the text under catalog `version`: `brief` if it took at most
    /// [`BRIEF_RUN`] and wrote nothing.
    pub fn record(&self, key: TextKey, brief: bool, version: u64) {
        let mut streaks = self.streaks.lock();
        if !brief {
            if let Some(entry) = streaks.get_mut(&key) {
                entry.0 = 0;
            }
            return;
        }
        if streaks.len() >= MAX_TEXTS && !streaks.contains_key(&key) {
            streaks.clear();
        }
        let entry = streaks.entry(key).or_insert((0, version));
        if entry.1 != version {
            *entry = (0, version);
        }
        entry.0 = entry.0.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brief_after_a_streak_of_brief_runs() {
        let h = RunHistory::default();
        let k = h.key("db", "RETURN 1");
        assert!(!h.brief(k, 1), "unknown texts are not brief");
        h.record(k, true, 1);
        assert!(!h.brief(k, 1));
        h.record(k, true, 1);
        assert!(h.brief(k, 1));
        assert!(!h.brief(h.key("other", "RETURN 1"), 1), "kept per database");
        assert!(!h.brief(h.key("db", "RETURN 2"), 1), "kept per text");
    }

    #[test]
    fn one_long_run_ends_the_streak() {
        let h = RunHistory::default();
        let k = h.key("db", "q");
        for _ in 0..10 {
            h.record(k, true, 1);
        }
        h.record(k, false, 1);
        assert!(!h.brief(k, 1));
        h.record(k, true, 1);
        assert!(!h.brief(k, 1));
        h.record(k, true, 1);
        assert!(h.brief(k, 1));
    }

    #[test]
    fn a_catalog_change_starts_over() {
        let h = RunHistory::default();
        let k = h.key("db", "q");
        for _ in 0..10 {
            h.record(k, true, 1);
        }
        assert!(!h.brief(k, 2), "not brief under another catalog version");
        h.record(k, true, 2);
        assert!(!h.brief(k, 2));
        h.record(k, true, 2);
        assert!(h.brief(k, 2));
    }

    #[test]
    fn long_runs_of_unknown_texts_take_no_room() {
        let h = RunHistory::default();
        h.record(h.key("db", "slow"), false, 1);
        assert!(h.streaks.lock().is_empty());
    }

    #[test]
    fn bounded() {
        let h = RunHistory::default();
        for i in 0..MAX_TEXTS + 10 {
            h.record(h.key("db", &format!("RETURN {i}")), true, 1);
        }
        assert!(h.streaks.lock().len() <= MAX_TEXTS);
    }
}
