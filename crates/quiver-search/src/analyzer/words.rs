//! Word segmentation after Unicode Standard Annex #29 (ArangoDB uses ICU's word break
//! iterator; unicode-segmentation implements the same default rules, without ICU's
//! dictionary-based segmentation of Thai, Chinese or Japanese runs, which UAX #29 splits per
//! character).

use unicode_segmentation::UnicodeSegmentation;

/// One segment of the input between two word boundaries, with its byte offset.
pub(crate) struct Segment<'a> {
    pub start: usize,
    pub text: &'a str,
}

impl Segment<'_> {
    /// Whether the segment is a word: it holds a letter or a number (ICU's word rule statuses
    /// letter, number, kana, ideograph).
    pub(crate) fn is_word(&self) -> bool {
        self.text.chars().any(char::is_alphanumeric)
    }
}

/// Every segment of `input` (words, spaces, punctuation), in order.
pub(crate) fn segments(input: &str) -> impl Iterator<Item = Segment<'_>> {
    input
        .split_word_bound_indices()
        .map(|(start, text)| Segment { start, text })
}
