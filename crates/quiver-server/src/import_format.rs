//! The input formats of `POST /_api/import` as ArangoDB's import handler reads them: JSON
//! lines (`type=documents`), one JSON array (`type=array`), and the tabular format (a header
//! line of attribute names, then one array of values per line). Each input item becomes a
//! document or the error and `details` text the handler reports for it. Fuzzed by
//! `fuzz/server-parsers` (`import`).

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{Map, Value};

/// One input item: a document, or why it cannot be one: the error `complete=true` answers
/// with and the `details` text after "at position N: ", worded as ArangoDB's import handler
/// words it.
pub(crate) enum Item {
    Doc(Value),
    Invalid(ErrorCode, String),
}

pub(crate) fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::HttpBadParameter, message)
}

/// The offending input as ArangoDB quotes it in `details`: at most 255 bytes, then "...".
pub(crate) fn snippet(text: &str) -> String {
    if text.len() <= 255 {
        return text.to_string();
    }
    let mut end = 255;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

fn parse_error(line: &str) -> Item {
    Item::Invalid(
        ErrorCode::HttpBadParameter,
        format!(
            "invalid JSON type (expecting object, probably parse error), offending context: {}",
            snippet(line)
        ),
    )
}

fn not_an_object(text: &str) -> Item {
    Item::Invalid(
        ErrorCode::DocumentTypeInvalid,
        format!(
            "invalid JSON type (expecting object), offending document: {}",
            snippet(text)
        ),
    )
}

/// Splits the body into lines, keeping CRLF and LF line ends apart from the content.
fn lines(body: &str) -> impl Iterator<Item = &str> {
    body.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// An item with its position as ArangoDB reports it in `details`: the 1-based line (blank
/// lines count) or array element.
pub(crate) type Numbered = (usize, Item);

pub(crate) fn parse_documents(body: &str, empty: &mut u64) -> Vec<Numbered> {
    let mut items = Vec::new();
    let mut all = lines(body).enumerate().peekable();
    while let Some((n, line)) = all.next() {
        if line.trim().is_empty() {
            // The final newline of the body does not end an extra, empty line.
            if all.peek().is_some() || !line.is_empty() {
                *empty += 1;
            }
            continue;
        }
        let item = match crate::json::parse(line.as_bytes()) {
            Ok(v @ Value::Object(_)) => Item::Doc(v),
            Ok(other) => not_an_object(&other.to_string()),
            Err(_) => parse_error(line),
        };
        items.push((n + 1, item));
    }
    items
}

pub(crate) fn parse_array(body: &str) -> Result<Vec<Numbered>> {
    let value = crate::json::parse(body.as_bytes()).map_err(|e| {
        bad(format!(
            "expecting a JSON array in the request: {}",
            e.message
        ))
    })?;
    let Value::Array(values) = value else {
        return Err(bad("expecting a JSON array in the request"));
    };
    Ok(values
        .into_iter()
        .enumerate()
        .map(|(i, v)| match v {
            v @ Value::Object(_) => (i + 1, Item::Doc(v)),
            other => (i + 1, not_an_object(&other.to_string())),
        })
        .collect())
}

pub(crate) fn parse_tabular(
    body: &str,
    ignore_missing: bool,
    empty: &mut u64,
) -> Result<Vec<Numbered>> {
    // The header is line 0, so the first line of values is position 1.
    let mut all = lines(body).enumerate().peekable();
    let header_line = all.next().map_or("", |(_, line)| line);
    if header_line.trim().is_empty() {
        return Err(bad("no JSON string array found in first line"));
    }
    let header = match crate::json::parse(header_line.as_bytes()) {
        Ok(Value::Array(names)) if !names.is_empty() => names,
        _ => return Err(bad("no JSON string array found in first line")),
    };
    let mut names = Vec::with_capacity(header.len());
    for n in header {
        match n {
            Value::String(s) => names.push(s),
            _ => return Err(bad("no JSON string array found in first line")),
        }
    }
    let mut items = Vec::new();
    while let Some((n, line)) = all.next() {
        if line.trim().is_empty() {
            if all.peek().is_some() || !line.is_empty() {
                *empty += 1;
            }
            continue;
        }
        let values = match crate::json::parse(line.as_bytes()) {
            Ok(Value::Array(values)) => values,
            Ok(_) => {
                items.push((
                    n,
                    Item::Invalid(
                        ErrorCode::HttpBadParameter,
                        "no valid JSON array data".into(),
                    ),
                ));
                continue;
            }
            Err(_) => {
                items.push((n, parse_error(line)));
                continue;
            }
        };
        if values.len() != names.len() && !(ignore_missing && values.len() < names.len()) {
            items.push((
                n,
                Item::Invalid(
                    ErrorCode::HttpBadParameter,
                    format!(
                        "wrong number of JSON values (got {}, expected {})",
                        values.len(),
                        names.len()
                    ),
                ),
            ));
            continue;
        }
        let mut doc = Map::with_capacity(names.len());
        for (name, value) in names.iter().zip(values) {
            doc.insert(name.clone(), value);
        }
        items.push((n, Item::Doc(Value::Object(doc))));
    }
    Ok(items)
}
