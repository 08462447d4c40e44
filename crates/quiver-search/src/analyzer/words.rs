//! Word segmentation after Unicode Standard Annex #29 (ArangoDB uses ICU's word break
//! iterator; unicode-segmentation implements the same default rules, without ICU's
//! dictionary-based segmentation of Thai, Chinese or Japanese runs, which UAX #29 splits per
//! character).
//!
//! [`words`] gives only the segments that are words. ASCII text, the common case, is
//! segmented by [`ascii_words`], the annex's rules restricted to ASCII (no table lookups);
//! other text goes through unicode-segmentation. A unit test checks both agree on every
//! ASCII string of the characters the rules name.

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

/// The segments of `input` that are words ([`Segment::is_word`]), in order.
pub(crate) fn words(input: &str) -> Words<'_> {
    if input.is_ascii() {
        Words::Ascii(AsciiWords {
            input: input.as_bytes(),
            text: input,
            at: 0,
        })
    } else {
        Words::Unicode(input.split_word_bound_indices())
    }
}

pub(crate) enum Words<'a> {
    Ascii(AsciiWords<'a>),
    Unicode(unicode_segmentation::UWordBoundIndices<'a>),
}

impl<'a> Iterator for Words<'a> {
    type Item = Segment<'a>;

    fn next(&mut self) -> Option<Segment<'a>> {
        match self {
            Words::Ascii(words) => words.next(),
            Words::Unicode(bounds) => bounds
                .map(|(start, text)| Segment { start, text })
                .find(Segment::is_word),
        }
    }
}

/// The word break property of an ASCII byte, as far as the annex's rules between words
/// need it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    /// ALetter: `A`–`Z`, `a`–`z`.
    Letter,
    /// Numeric: `0`–`9`.
    Digit,
    /// ExtendNumLet: `_`.
    Connector,
    /// MidLetter `:` (between letters only).
    MidLetter,
    /// MidNumLet `.` and Single_Quote `'` (between letters or between digits).
    MidNumLet,
    /// MidNum `,` `;` (between digits only).
    MidNum,
    /// Anything else: always a boundary on both sides.
    Other,
}

fn class(b: u8) -> Class {
    match b {
        b'a'..=b'z' | b'A'..=b'Z' => Class::Letter,
        b'0'..=b'9' => Class::Digit,
        b'_' => Class::Connector,
        b':' => Class::MidLetter,
        b'.' | b'\'' => Class::MidNumLet,
        b',' | b';' => Class::MidNum,
        _ => Class::Other,
    }
}

/// The words of ASCII text: maximal runs of letters, digits and `_` (WB5, WB8–WB10, WB13a/b),
/// also joined across one `:` `.` `'` between letters (WB6/7) and one `,` `;` `.` `'` between
/// digits (WB11/12). A run without a letter or digit (`___`) is no word.
pub(crate) struct AsciiWords<'a> {
    input: &'a [u8],
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for AsciiWords<'a> {
    type Item = Segment<'a>;

    fn next(&mut self) -> Option<Segment<'a>> {
        let input = self.input;
        loop {
            // Skip to the next letter, digit or connector.
            while self.at < input.len()
                && !matches!(
                    class(input[self.at]),
                    Class::Letter | Class::Digit | Class::Connector
                )
            {
                self.at += 1;
            }
            if self.at >= input.len() {
                return None;
            }
            let start = self.at;
            let mut alphanumeric = false;
            let mut i = start;
            loop {
                let c = class(input[i]);
                alphanumeric |= matches!(c, Class::Letter | Class::Digit);
                i += 1;
                let Some(&next) = input.get(i) else {
                    break;
                };
                match class(next) {
                    Class::Letter | Class::Digit | Class::Connector => continue,
                    Class::Other => break,
                    mid => {
                        // A middle character joins only like with like around it.
                        let after = input.get(i + 1).map(|b| class(*b));
                        let joins = matches!(
                            (c, mid, after),
                            (
                                Class::Letter,
                                Class::MidLetter | Class::MidNumLet,
                                Some(Class::Letter)
                            ) | (
                                Class::Digit,
                                Class::MidNum | Class::MidNumLet,
                                Some(Class::Digit)
                            )
                        );
                        if joins {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                }
            }
            self.at = i;
            if alphanumeric {
                return Some(Segment {
                    start,
                    text: &self.text[start..i],
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(input: &str) -> Vec<(usize, String)> {
        segments(input)
            .filter(Segment::is_word)
            .map(|s| (s.start, s.text.to_string()))
            .collect()
    }

    fn fast(input: &str) -> Vec<(usize, String)> {
        words(input)
            .map(|s| (s.start, s.text.to_string()))
            .collect()
    }

    #[test]
    fn ascii_words_follow_the_annex() {
        for input in [
            "The quick (\"brown\") fox can't jump 32.3 feet, right?",
            "e.g. 1,000,000 a:b 3;4 x_y __ _a a_ 1.a a.1 'tis don't. end.",
            "a..b 1..2 a.'b 1,.2 a: :a ,1 1, 12ab ab12 a_1_b",
            "\r\n\t  x\u{7f}y\u{0}z",
            "",
        ] {
            assert_eq!(fast(input), reference(input), "{input:?}");
        }
    }

    #[test]
    fn ascii_words_agree_with_unicode_segmentation_on_every_short_string() {
        // Every string of up to 5 characters over the classes the rules tell apart.
        let alphabet = b"aZ09_:.',; -\n";
        let mut input = Vec::new();
        for len in 0..=5u32 {
            for mut n in 0..alphabet.len().pow(len) {
                input.clear();
                for _ in 0..len {
                    input.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                let text = std::str::from_utf8(&input).unwrap();
                assert_eq!(fast(text), reference(text), "{text:?}");
            }
        }
    }

    #[test]
    fn non_ascii_text_takes_the_unicode_rules() {
        let input = "Größe café — naïve 東京 ١٢٣";
        assert_eq!(fast(input), reference(input));
    }
}
