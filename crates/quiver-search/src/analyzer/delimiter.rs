//! `delimiter`: splits at one delimiter string, RFC 4180 style without records: a field that
//! starts with `"` is quoted, a delimiter inside quotes does not split, and a well-formed
//! quoted field loses its quotes (`""` inside stands for `"`). Empty fields are tokens too.

use std::borrow::Cow;

use quiver_errors::Result;
use serde_json::{json, Value};

use super::props::{object, required_string};
use super::{Built, Rejection, Token, TokenStream};

#[derive(Debug)]
struct Delimiter {
    delimiter: String,
}

/// Where the field at the start of `data` ends: the first delimiter outside quotes.
fn field_length(data: &str, delimiter: &str) -> usize {
    let bytes = data.as_bytes();
    let delim = delimiter.as_bytes();
    let mut quoted = false;
    for i in 0..bytes.len() {
        if quoted {
            if bytes[i] == b'"' {
                quoted = false;
            }
            continue;
        }
        if bytes.len() - i < delim.len() {
            break;
        }
        // An empty delimiter never matches at the very start (every character is a field).
        if bytes[i..].starts_with(delim) && (i > 0 || !delim.is_empty()) && data.is_char_boundary(i)
        {
            return i;
        }
        if bytes[i] == b'"' {
            quoted = true;
        }
    }
    data.len()
}

/// The term of a field: a well-formed quoted field without its quotes, anything else as is.
fn unquote(field: &str) -> Cow<'_, str> {
    let bytes = field.as_bytes();
    if bytes.first() != Some(&b'"') {
        return Cow::Borrowed(field);
    }
    let mut out = String::new();
    let mut closed = false;
    let mut start = 1;
    for i in 1..bytes.len() {
        if bytes[i] != b'"' {
            continue;
        }
        if closed && start == i {
            // `""`: an escaped quote, kept as the first character of the next segment.
            closed = false;
            continue;
        }
        if closed {
            break; // text between a closing quote and another quote: not well-formed
        }
        out.push_str(&field[start..i]);
        closed = true;
        start = i + 1;
    }
    if start != 1 && start == bytes.len() {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(field)
    }
}

impl TokenStream for Delimiter {
    fn analyze(&self, input: &str, _strict: bool, out: &mut Vec<Token>) -> Result<()> {
        let mut offset = 0;
        let mut position = 0;
        loop {
            let rest = &input[offset..];
            let mut size = field_length(rest, &self.delimiter);
            if self.delimiter.is_empty() && size == rest.len() && !rest.is_empty() {
                // An empty delimiter splits after every character.
                size = rest.chars().next().map_or(0, char::len_utf8);
            }
            let field = &rest[..size];
            out.push(Token::new(unquote(field), position, offset, offset + size));
            position += 1;
            if size >= rest.len() {
                return Ok(());
            }
            // Always advance by at least one character, so the loop ends.
            let step = (size + self.delimiter.len()).max(1);
            debug_assert!(rest.is_char_boundary(step.min(rest.len())));
            offset += step.min(rest.len());
        }
    }
}

/// `{"delimiter": string}` (required).
pub(crate) fn build(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let delimiter = required_string(props, "delimiter")?.to_string();
    Ok(Built {
        properties: json!({ "delimiter": delimiter }),
        stream: Box::new(Delimiter { delimiter }),
    })
}
