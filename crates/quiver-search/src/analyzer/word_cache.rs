//! What a `text` analyzer made of each word it saw lately: the word as segmented, to its term
//! after accent removal, case conversion and stemming, or to nothing for a stop word. Natural
//! text repeats its words, so most words are looked up instead of normalized and stemmed
//! again. Bounded: past [`MAX_WORDS`] entries it starts over; words longer than
//! [`MAX_WORD_BYTES`] are not kept.

use std::collections::HashMap;

use parking_lot::Mutex;

/// Entries kept at most.
const MAX_WORDS: usize = 1 << 16;

/// Longer words are analyzed every time (rare, and they would crowd out the common ones).
const MAX_WORD_BYTES: usize = 64;

#[derive(Debug, Default)]
pub(crate) struct WordCache {
    terms: Mutex<HashMap<String, Option<String>>>,
}

impl WordCache {
    /// The term of `word` (None: a stop word), computed by `analyze` unless known.
    pub(crate) fn term(
        &self,
        word: &str,
        analyze: impl FnOnce(&str) -> Option<String>,
    ) -> Option<String> {
        if word.len() > MAX_WORD_BYTES {
            return analyze(word);
        }
        if let Some(known) = self.terms.lock().get(word) {
            return known.clone();
        }
        let term = analyze(word);
        let mut terms = self.terms.lock();
        if terms.len() >= MAX_WORDS {
            terms.clear();
        }
        terms.insert(word.to_string(), term.clone());
        term
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
        assert_eq!(cache.term("Word", analyze), Some("word".to_string()));
        assert_eq!(cache.term("Word", analyze), Some("word".to_string()));
        assert_eq!(cache.term("the", analyze), None);
        assert_eq!(cache.term("the", analyze), None);
        assert_eq!(calls.get(), 2);
        let long = "x".repeat(MAX_WORD_BYTES + 1);
        cache.term(&long, analyze);
        cache.term(&long, analyze);
        assert_eq!(calls.get(), 4);
    }
}
