//! `ngram`: every n-gram of the input with `min <= n <= max`, counted in bytes (`binary`) or
//! in characters (`utf8`), optionally with the original input and with markers on the grams
//! that touch the input's start or end.

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use super::props::{bool_or, choice, object, optional_string, unsigned};
use super::{Built, Rejection, Token, TokenStream};

#[derive(Debug)]
struct Ngram {
    min: usize,
    max: usize,
    preserve_original: bool,
    start_marker: String,
    end_marker: String,
    utf8: bool,
}

impl Ngram {
    /// The byte offsets of the units (bytes or characters) of `input`, with the end.
    fn boundaries(&self, input: &str) -> Vec<usize> {
        if self.utf8 {
            input
                .char_indices()
                .map(|(i, _)| i)
                .chain(std::iter::once(input.len()))
                .collect()
        } else {
            (0..=input.len()).collect()
        }
    }

    fn marked(&self, gram: &str, at_start: bool, at_end: bool) -> String {
        let mut term =
            String::with_capacity(gram.len() + self.start_marker.len() + self.end_marker.len());
        if at_start {
            term.push_str(&self.start_marker);
        }
        term.push_str(gram);
        if at_end {
            term.push_str(&self.end_marker);
        }
        term
    }
}

fn invalid_utf8() -> Error {
    Error::with_message(ErrorCode::BadParameter, "Invalid UTF-8 sequence")
}

impl TokenStream for Ngram {
    fn analyze(&self, input: &str, strict: bool, out: &mut Vec<Token>) -> Result<()> {
        let bounds = self.boundaries(input);
        let units = bounds.len() - 1;
        for i in 0..units {
            let mut emitted_whole = false;
            for n in self.min..=self.max.min(units - i) {
                let (from, to) = (bounds[i], bounds[i + n]);
                let Some(gram) = input.get(from..to) else {
                    // A binary gram that splits a multi-byte character.
                    if strict {
                        return Err(invalid_utf8());
                    }
                    continue;
                };
                let at_end = i + n == units;
                emitted_whole |= i == 0 && at_end;
                out.push(Token::new(self.marked(gram, i == 0, at_end), i, from, to));
            }
            if i == 0 && self.preserve_original {
                let no_markers = self.start_marker.is_empty() && self.end_marker.is_empty();
                if no_markers {
                    if !emitted_whole {
                        out.push(Token::new(input, 0, 0, input.len()));
                    }
                } else {
                    if !self.start_marker.is_empty() {
                        out.push(Token::new(
                            self.marked(input, true, false),
                            0,
                            0,
                            input.len(),
                        ));
                    }
                    if !self.end_marker.is_empty() {
                        out.push(Token::new(
                            self.marked(input, false, true),
                            0,
                            0,
                            input.len(),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// `{"min": uint, "max": uint, "preserveOriginal": bool}` (required, `1 <= min <= max`),
/// `"startMarker"`, `"endMarker"` (strings, default empty), `"streamType"`
/// (`binary` = default, `utf8`).
pub(crate) fn build(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let limit = u64::from(u32::MAX);
    let min = unsigned(props, "min", None, limit)?;
    let max = unsigned(props, "max", None, limit)?;
    if min == 0 {
        return Err("'min' must be at least 1".to_string());
    }
    if min > max {
        return Err("'min' must not be greater than 'max'".to_string());
    }
    if !props.contains_key("preserveOriginal") {
        return Err("missing required attribute 'preserveOriginal'".to_string());
    }
    let preserve_original = bool_or(props, "preserveOriginal", false)?;
    let start_marker = optional_string(props, "startMarker")?
        .unwrap_or("")
        .to_string();
    let end_marker = optional_string(props, "endMarker")?
        .unwrap_or("")
        .to_string();
    let stream_type = choice(props, "streamType", &["binary", "utf8"], "binary")?;
    let to_usize = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    Ok(Built {
        properties: json!({
            "min": min,
            "max": max,
            "preserveOriginal": preserve_original,
            "streamType": stream_type,
            "startMarker": start_marker,
            "endMarker": end_marker,
        }),
        stream: Box::new(Ngram {
            min: to_usize(min),
            max: to_usize(max),
            preserve_original,
            start_marker,
            end_marker,
            utf8: stream_type == "utf8",
        }),
    })
}
