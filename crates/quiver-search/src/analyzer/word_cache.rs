//! What a `text` analyzer made of each word it saw lately: the word as segmented, to its term
//! after accent removal, case conversion and stemming, or to nothing for a stop word. Natural
//! text repeats its words, so most words are looked up instead of normalized and stemmed
//! again. Bounded: past [`MAX_WORDS`] entries it starts over; words longer than
//! [`MAX_WORD_BYTES`] are not kept. One analysis locks the cache once ([`WordCache::lock`])
//! and lends the known terms out without copying them; a word is hashed and looked up once
//! (hashbrown's `entry_ref`), known or not.

use hashbrown::HashMap;
use parking_lot::{Mutex, MutexGuard};
use rustc_hash::FxBuildHasher;

/// Entries kept at most.
const MAX_WORDS: usize = 1 << 16;

/// Longer words are analyzed every time (rare, and they would crowd out the common ones).
const MAX_WORD_BYTES: usize = 64;

type Terms = HashMap<String, Option<Box<str>>, FxBuildHasher>;

#[derive(Debug, Default)]
pub(crate) struct WordCache {
    terms: Mutex<Terms>,
}

/// The cache, locked for one analysis.
pub(crate) struct LockedWords<'a> {
    terms: MutexGuard<'a, Terms>,
    /// The term of the last word that was not kept.
    uncached: Option<String>,
}

impl WordCache {
    pub(crate) fn lock(&self) -> LockedWords<'_> {
        LockedWords {
            terms: self.terms.lock(),
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
        if self.terms.len() >= MAX_WORDS && !self.terms.contains_key(word) {
            self.terms.clear();
        }
        self.terms
            .entry_ref(word)
            .or_insert_with(|| analyze(word).map(String::into_boxed_str))
            .as_deref()
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
    fn a_full_cache_starts_over_and_still_answers() {
        let cache = WordCache::default();
        let mut words = cache.lock();
        for i in 0..MAX_WORDS {
            let word = format!("w{i}");
            assert_eq!(
                words.term(&word, |w| Some(w.to_uppercase())),
                Some(&*word.to_uppercase())
            );
        }
        assert_eq!(words.terms.len(), MAX_WORDS);
        // A known word is still served from the full cache, a new one empties it first.
        assert_eq!(words.term("w7", |_| panic!("known")), Some("W7"));
        assert_eq!(words.terms.len(), MAX_WORDS);
        assert_eq!(words.term("new", |_| None), None);
        assert_eq!(words.terms.len(), 1);
        assert_eq!(words.term("w7", |w| Some(w.to_string())), Some("w7"));
    }
}
