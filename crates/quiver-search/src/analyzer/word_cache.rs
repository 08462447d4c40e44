//! What a `text` analyzer made of each word it saw lately: the word as segmented, to its term
//! after accent removal, case conversion and stemming, or to nothing for a stop word. Natural
//! text repeats its words, so most words are looked up instead of normalized and stemmed
//! again.
//!
//! Hand-written rather than a map of strings because the lookup is most of an analysis: a
//! hash map of `String` to `Box<str>` costs three cache misses per word (bucket, key, term)
//! and two allocations per new word, and had to be emptied when full. Here a word and its
//! term live inline in one 64-byte slot, two slots per set side by side ([`Set`]): a lookup
//! reads one set, a new word replaces the older of the set's two slots, and nothing is
//! allocated per word. The table starts at [`FIRST_SETS`] sets at the first lookup (an
//! analyzer that is never used costs nothing) and doubles, its words carried over, whenever
//! it has taken in more new words than it has sets, up to [`SETS`]: an analyzer built for one
//! query (`TOKENS()` in AQL builds one per query) analyzes a few words and must not pay for
//! clearing the whole table, while a view's analyzer reaches the full size after a few
//! thousand words. Bounded by construction: [`SETS`] × 2 words. Words or terms longer than a
//! slot holds ([`INLINE`]) are analyzed every time.

use std::hash::{BuildHasher, Hasher};

use parking_lot::{Mutex, MutexGuard};
use rustc_hash::FxBuildHasher;

/// Sets in the full table (a power of two); two words per set.
const SETS: usize = 1 << 15;

/// Sets in the table at its first lookup (a power of two, at most [`SETS`]).
const FIRST_SETS: usize = 1 << 6;

/// Bytes a slot holds of a word and of its term.
const INLINE: usize = 29;

/// [`Slot::term_len`] of a stop word (no term).
const STOP_WORD: u8 = u8::MAX;

/// One word and its term. `tag` 0 is an empty slot.
#[derive(Clone, Copy)]
#[repr(C)]
struct Slot {
    /// The word's hash, high half, never 0 for a used slot.
    tag: u32,
    word_len: u8,
    /// The term's length, or [`STOP_WORD`].
    term_len: u8,
    word: [u8; INLINE],
    term: [u8; INLINE],
}

const EMPTY: Slot = Slot {
    tag: 0,
    word_len: 0,
    term_len: 0,
    word: [0; INLINE],
    term: [0; INLINE],
};

/// Two slots on one 128-byte line pair: `slots[0]` is the newer.
#[derive(Clone, Copy)]
#[repr(C, align(128))]
struct Set {
    slots: [Slot; 2],
}

const _: () = assert!(std::mem::size_of::<Slot>() == 64);
const _: () = assert!(std::mem::size_of::<Set>() == 128);
const _: () = assert!(SETS.is_power_of_two() && FIRST_SETS.is_power_of_two());
const _: () = assert!(FIRST_SETS <= SETS);

#[derive(Default)]
pub(crate) struct WordCache {
    table: Mutex<Table>,
}

/// The sets, and how many new words the table took in since it last grew.
#[derive(Default)]
struct Table {
    /// Empty until the first lookup, then a power of two from [`FIRST_SETS`] to [`SETS`].
    sets: Vec<Set>,
    inserted: usize,
}

impl Table {
    /// Where `word` (its hash) belongs: the set's index and the slot's tag.
    fn place(&self, word: &[u8]) -> (usize, u32) {
        let mut hasher = FxBuildHasher.build_hasher();
        hasher.write(word);
        let hash = hasher.finish();
        debug_assert!(self.sets.len().is_power_of_two());
        (
            (hash as usize) & (self.sets.len() - 1),
            ((hash >> 32) as u32) | 1,
        )
    }

    /// Makes the table `sets` sets large, keeping the words it holds (the newer of two that
    /// meet in one set of the new table first).
    fn grow_to(&mut self, sets: usize) {
        assert!(sets.is_power_of_two() && sets <= SETS && sets > self.sets.len());
        let old = std::mem::replace(&mut self.sets, vec![Set { slots: [EMPTY; 2] }; sets]);
        self.inserted = 0;
        for way in [1, 0] {
            for set in &old {
                let slot = set.slots[way];
                if slot.tag != 0 {
                    let (index, _) = self.place(slot.word_bytes());
                    self.put(index, slot);
                }
            }
        }
    }

    /// Puts `slot` into set `index` as its newer slot.
    fn put(&mut self, index: usize, slot: Slot) {
        let set = &mut self.sets[index];
        set.slots[1] = set.slots[0];
        set.slots[0] = slot;
    }
}

impl std::fmt::Debug for WordCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WordCache").finish_non_exhaustive()
    }
}

/// The cache, locked for one analysis.
pub(crate) struct LockedWords<'a> {
    table: MutexGuard<'a, Table>,
    /// The term of the last word that could not be kept.
    uncached: Option<String>,
}

impl WordCache {
    pub(crate) fn lock(&self) -> LockedWords<'_> {
        LockedWords {
            table: self.table.lock(),
            uncached: None,
        }
    }
}

impl Slot {
    fn holds(&self, tag: u32, word: &[u8]) -> bool {
        self.tag == tag && self.word_bytes() == word
    }

    fn word_bytes(&self) -> &[u8] {
        &self.word[..usize::from(self.word_len)]
    }

    fn term(&self) -> Option<&str> {
        if self.term_len == STOP_WORD {
            return None;
        }
        let bytes = &self.term[..usize::from(self.term_len)];
        // Only `LockedWords::term` fills a slot, with the whole bytes of a `&str`.
        Some(std::str::from_utf8(bytes).expect("a cached term is a whole string"))
    }
}

impl LockedWords<'_> {
    /// The term of `word` (None: a stop word), computed by `analyze` unless known.
    pub(crate) fn term(
        &mut self,
        word: &str,
        analyze: impl FnOnce(&str) -> Option<String>,
    ) -> Option<&str> {
        if word.len() > INLINE {
            self.uncached = analyze(word);
            return self.uncached.as_deref();
        }
        let table = &mut *self.table;
        if table.sets.is_empty() {
            table.grow_to(FIRST_SETS);
        }
        let bytes = word.as_bytes();
        let (set_index, tag) = table.place(bytes);
        let found = table.sets[set_index]
            .slots
            .iter()
            .position(|slot| slot.holds(tag, bytes));
        if let Some(way) = found {
            return self.table.sets[set_index].slots[way].term();
        }
        let term = analyze(word);
        if term.as_ref().is_some_and(|t| t.len() > INLINE) {
            self.uncached = term;
            return self.uncached.as_deref();
        }
        let mut slot = Slot {
            tag,
            word_len: word.len() as u8,
            term_len: STOP_WORD,
            ..EMPTY
        };
        slot.word[..bytes.len()].copy_from_slice(bytes);
        if let Some(term) = &term {
            slot.term_len = term.len() as u8;
            slot.term[..term.len()].copy_from_slice(term.as_bytes());
        }
        let table = &mut *self.table;
        let set_index = if table.inserted >= table.sets.len() && table.sets.len() < SETS {
            table.grow_to(table.sets.len() * 2);
            table.place(bytes).0
        } else {
            set_index
        };
        table.inserted += 1;
        table.put(set_index, slot);
        table.sets[set_index].slots[0].term()
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
        let long = "X".repeat(INLINE + 1);
        assert_eq!(words.term(&long, analyze), Some(&*long.to_lowercase()));
        words.term(&long, analyze);
        assert_eq!(calls.get(), 4);
        drop(words);
        // Kept across analyses.
        assert_eq!(cache.lock().term("Word", analyze), Some("word"));
        assert_eq!(calls.get(), 4);
    }

    #[test]
    fn words_and_terms_of_every_length_a_slot_holds_come_back() {
        let cache = WordCache::default();
        let mut words = cache.lock();
        for n in 1..=INLINE {
            let word = "é".repeat(n / 2) + &"a".repeat(n % 2);
            let term = format!("{word}-");
            let expected = (term.len() <= INLINE).then(|| term.clone());
            assert_eq!(words.term(&word, |_| Some(term.clone())), Some(&*term));
            // Known unless the term was too long to keep.
            let again = words
                .term(&word, |_| Some(term.clone()))
                .map(str::to_string);
            assert_eq!(again.as_deref(), Some(&*term));
            if let Some(expected) = expected {
                assert_eq!(words.term(&word, |_| panic!("known")), Some(&*expected));
            }
        }
        // A term longer than a slot is computed every time.
        let long_term = "t".repeat(INLINE + 1);
        let calls = std::cell::Cell::new(0);
        for _ in 0..3 {
            let term = words.term("short", |_| {
                calls.set(calls.get() + 1);
                Some(long_term.clone())
            });
            assert_eq!(term, Some(&*long_term));
        }
        assert_eq!(calls.get(), 3);
    }

    #[test]
    fn many_words_stay_correct_when_slots_are_replaced() {
        // Four times as many words as slots: every answer is still the word's own term, and
        // the table never grows.
        let cache = WordCache::default();
        let mut words = cache.lock();
        let n = SETS * 2 * 4;
        for round in 0..2 {
            for i in 0..n {
                let word = format!("w{i}");
                let term = words.term(&word, |w| (i % 7 != 0).then(|| w.to_uppercase()));
                let expected = (i % 7 != 0).then(|| word.to_uppercase());
                assert_eq!(
                    term.map(str::to_string),
                    expected,
                    "round {round}, word {word}"
                );
            }
        }
        assert_eq!(words.table.sets.len(), SETS);
        // The last words seen are still known.
        for i in n - 100..n {
            let word = format!("w{i}");
            let expected = (i % 7 != 0).then(|| word.to_uppercase());
            let term = words.term(&word, |_| panic!("w{i} was seen last"));
            assert_eq!(term.map(str::to_string), expected);
        }
    }

    #[test]
    fn an_unused_cache_allocates_nothing() {
        let cache = WordCache::default();
        assert!(cache.lock().table.sets.is_empty());
    }

    #[test]
    fn the_table_starts_small_and_grows_keeping_its_words() {
        let cache = WordCache::default();
        let mut words = cache.lock();
        words.term("one", |w| Some(w.to_uppercase()));
        assert_eq!(words.table.sets.len(), FIRST_SETS);
        // A query's few words stay in the first table.
        for i in 0..FIRST_SETS / 2 {
            words.term(&format!("q{i}"), |w| Some(w.to_uppercase()));
        }
        assert_eq!(words.table.sets.len(), FIRST_SETS);
        // Each doubling carries the words over: the last words seen before it stay known.
        let mut sizes = vec![words.table.sets.len()];
        for i in 0..SETS * 2 {
            let word = format!("w{i}");
            words.term(&word, |w| Some(w.to_uppercase()));
            let size = words.table.sets.len();
            if size != *sizes.last().unwrap() {
                sizes.push(size);
                for back in i.saturating_sub(8)..i {
                    let known = format!("w{back}");
                    let term = words.term(&known, |_| panic!("{known} was carried over"));
                    assert_eq!(term, Some(&*known.to_uppercase()));
                }
            }
        }
        let expected: Vec<usize> = (FIRST_SETS.trailing_zeros()..=SETS.trailing_zeros())
            .map(|shift| 1 << shift)
            .collect();
        assert_eq!(sizes, expected);
    }
}
