//! How a document's terms reach tantivy: written into one string (`push_term`) that the
//! `terms` field's tokenizer (`TermsTokenizer`) reads back term by term into one reused token.
//! Tantivy's own pre-tokenized text is stored in its document as JSON and parsed back by the
//! indexing thread; this way no token list is built, serialized or parsed per document.
//!
//! Each term is `<position>:<byte length>:<term>` in decimal: the length makes any term text
//! safe (separators, digits or `:` inside a term are read as text).

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The name the tokenizer is registered under with each index.
pub(super) const TOKENIZER: &str = "quiver_terms";

/// Appends one term at `position` to `out`.
pub(super) fn push_term(out: &mut String, position: u32, term: &str) {
    let mut digits = itoa::Buffer::new();
    out.push_str(digits.format(position));
    out.push(':');
    out.push_str(digits.format(term.len()));
    out.push(':');
    out.push_str(term);
}

/// Reads the terms [`push_term`] wrote.
#[derive(Clone, Default)]
pub(super) struct TermsTokenizer {
    token: Token,
}

impl Tokenizer for TermsTokenizer {
    type TokenStream<'a> = TermsStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> TermsStream<'a> {
        self.token.reset();
        TermsStream {
            rest: text,
            token: &mut self.token,
        }
    }
}

pub(super) struct TermsStream<'a> {
    rest: &'a str,
    token: &'a mut Token,
}

/// The decimal number before the first `:` of `text` (at least one digit, nothing else), and
/// what follows the `:`. A byte loop: this runs twice per term of every indexed document.
fn number(text: &str) -> Option<(usize, &str)> {
    let mut value: usize = 0;
    for (i, &byte) in text.as_bytes().iter().enumerate() {
        match byte {
            b'0'..=b'9' => {
                value = value
                    .checked_mul(10)?
                    .checked_add(usize::from(byte - b'0'))?;
            }
            // `:` is one byte, so `i + 1` is a character boundary.
            b':' if i > 0 => return Some((value, &text[i + 1..])),
            _ => return None,
        }
    }
    None
}

impl TokenStream for TermsStream<'_> {
    fn advance(&mut self) -> bool {
        // Only `push_term` writes this text; anything else ends the stream.
        let Some((position, rest)) = number(self.rest) else {
            return false;
        };
        let Some((length, rest)) = number(rest) else {
            return false;
        };
        let Some(term) = rest.get(..length) else {
            return false;
        };
        self.token.text.clear();
        self.token.text.push_str(term);
        self.token.position = position;
        self.token.position_length = 1;
        self.rest = &rest[length..];
        true
    }

    fn token(&self) -> &Token {
        self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_digits_before_a_colon() {
        assert_eq!(number("12:rest"), Some((12, "rest")));
        assert_eq!(number("0:"), Some((0, "")));
        assert_eq!(number("7:3:x"), Some((7, "3:x")));
        assert_eq!(number(":1"), None);
        assert_eq!(number("12"), None);
        assert_eq!(number("1a:2"), None);
        assert_eq!(number("+1:2"), None);
        assert_eq!(number(""), None);
        assert_eq!(number("99999999999999999999999:x"), None);
        let max = format!("{}:z", usize::MAX);
        assert_eq!(number(&max), Some((usize::MAX, "z")));
    }

    #[test]
    fn a_malformed_text_ends_the_stream() {
        for text in ["", "3", "3:", "3:x", "3:9:abc", "x:1:a"] {
            let mut tokenizer = TermsTokenizer::default();
            assert!(!tokenizer.token_stream(text).advance(), "{text:?}");
        }
    }

    #[test]
    fn terms_come_back_as_written() {
        let terms = [
            (0, "s\u{1f}text\u{1f}text_en\u{1f}quick"),
            (0, "l\u{1f}text\u{1f}text_en\u{1f}12"),
            (7, "12:3:odd"),
            (300, ""),
            (u32::MAX, "ünïcödé ✓"),
        ];
        let mut text = String::new();
        for (position, term) in terms {
            push_term(&mut text, position, term);
        }
        let mut tokenizer = TermsTokenizer::default();
        let mut stream = tokenizer.token_stream(&text);
        let mut back = Vec::new();
        while stream.advance() {
            let token = stream.token();
            back.push((token.position as u32, token.text.clone()));
        }
        let expected: Vec<(u32, String)> = terms.iter().map(|(p, t)| (*p, t.to_string())).collect();
        assert_eq!(back, expected);
    }
}
