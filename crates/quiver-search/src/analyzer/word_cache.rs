//! What a `text` analyzer made of each word it saw lately: the word as segmented, to its term
//! after accent removal, case conversion and stemming, or to nothing for a stop word. Natural
//! text repeats its words, so most words are looked up instead of normalized and stemmed
//! again. Bounded: past [`MAX_WORDS`] entries a shard starts over; words longer than
//! [`MAX_WORD_BYTES`] are not kept. One analysis locks one shard of the cache once
//! ([`WordCache::lock`]) and lends the known terms out without copying them. The cache has
//! [`SHARDS`] shards so that analyses on several threads (a view's feeder,
//! `quiver-core/src/view_analysis.rs`) do not wait for each other: a thread keeps to its own
//! shard and takes another free one when that is busy.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::{Mutex, MutexGuard};
use rustc_hash::FxBuildHasher;

/// Entries one shard keeps at most.
const MAX_WORDS: usize = 1 << 15;

/// Shards of one cache: at least as many as threads analyze at once (a view's feeder uses up
/// to four).
const SHARDS: usize = 4;

/// Longer words are analyzed every time (rare, and they would crowd out the common ones).
const MAX_WORD_BYTES: usize = 64;

type Terms = HashMap<Box<str>, Option<Box<str>>, FxBuildHasher>;

#[derive(Debug, Default)]
pub(crate) struct WordCache {
    shards: [Mutex<Terms>; SHARDS],
}

/// The shard the next thread to analyze keeps to.
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The shard this thread keeps to (chosen round-robin at its first analysis).
    static OWN_SHARD: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The shard the calling thread keeps to.
fn own_shard() -> usize {
    OWN_SHARD.with(|own| {
        own.get().unwrap_or_else(|| {
            let shard = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
            own.set(Some(shard));
            shard
        })
    })
}

/// The cache, locked for one analysis.
pub(crate) struct LockedWords<'a> {
    terms: MutexGuard<'a, Terms>,
    /// The term of the last word that was not kept.
    uncached: Option<String>,
}

impl WordCache {
    /// Locks the calling thread's shard, or another one when that is busy (waits for its
    /// own only when all are).
    pub(crate) fn lock(&self) -> LockedWords<'_> {
        let own = own_shard();
        let terms = (0..SHARDS)
            .find_map(|i| self.shards[(own + i) % SHARDS].try_lock())
            .unwrap_or_else(|| self.shards[own].lock());
        LockedWords {
            terms,
            uncached: None,
        }
    }
}

impl LockedWords<'_> {
    /// The term of `word` (None: a stop word), computed by `analyze` unless known.
    pub(crate) fn term(
        &mut self,
        word: &str,
        analyze: impl FnOnce(&str) -> Option<String>,
    ) -> Option<&str> {
        if word.len() > MAX_WORD_BYTES {
            self.uncached = analyze(word);
            return self.uncached.as_deref();
        }
        if !self.terms.contains_key(word) {
            let term = analyze(word).map(String::into_boxed_str);
            if self.terms.len() >= MAX_WORDS {
                self.terms.clear();
            }
            self.terms.insert(word.into(), term);
        }
        self.terms.get(word).and_then(|t| t.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_word_is_not_analyzed_again() {
        let cache = WordCache::default();
        let calls = std::cell::Cell::new(0);
        let analyze = |w: &str| {
            calls.set(calls.get() + 1);
            (w != "the").then(|| w.to_lowercase())
        };
        let mut words = cache.lock();
        assert_eq!(words.term("Word", analyze), Some("word"));
        assert_eq!(words.term("Word", analyze), Some("word"));
        assert_eq!(words.term("the", analyze), None);
        assert_eq!(words.term("the", analyze), None);
        assert_eq!(calls.get(), 2);
        let long = "X".repeat(MAX_WORD_BYTES + 1);
        assert_eq!(words.term(&long, analyze), Some(&*long.to_lowercase()));
        words.term(&long, analyze);
        assert_eq!(calls.get(), 4);
        drop(words);
        // Kept across analyses.
        assert_eq!(cache.lock().term("Word", analyze), Some("word"));
        assert_eq!(calls.get(), 4);
    }

    #[test]
    fn a_thread_takes_another_shard_while_its_own_is_busy() {
        let cache = WordCache::default();
        let analyze = |w: &str| Some(w.to_lowercase());
        let mut held = cache.lock();
        assert_eq!(held.term("Word", analyze), Some("word"));
        // The same thread again, its own shard still locked: another shard, which does not
        // know the word yet, and no wait.
        let calls = std::cell::Cell::new(0);
        let counted = |w: &str| {
            calls.set(calls.get() + 1);
            Some(w.to_lowercase())
        };
        assert_eq!(cache.lock().term("Word", counted), Some("word"));
        assert_eq!(calls.get(), 1);
        drop(held);
        // Its own shard again once free: the word is known there.
        assert_eq!(cache.lock().term("Word", counted), Some("word"));
        assert_eq!(calls.get(), 1);
    }
}
