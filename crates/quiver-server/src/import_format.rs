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

/// How the body of an import is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// One JSON object per line (`type=documents`).
    Documents,
    /// One JSON array of objects (`type=array` or `list`).
    Array,
    /// A header line of attribute names, then one array of values per line (no `type`).
    Tabular { ignore_missing: bool },
}

impl Format {
    /// The format a `type` parameter names (`auto`: an array if the body starts with `[`).
    pub(crate) fn of(kind: &str, body: &str, ignore_missing: bool) -> Result<Format> {
        match kind {
            "documents" => Ok(Format::Documents),
            "array" | "list" => Ok(Format::Array),
            "auto" if body.trim_start().starts_with('[') => Ok(Format::Array),
            "auto" => Ok(Format::Documents),
            "" | "undefined" => Ok(Format::Tabular { ignore_missing }),
            other => Err(bad(format!("invalid value for 'type': '{other}'"))),
        }
    }
}

/// Reads `body` item by item, in order, into `each`, building one item at a time; blank lines
/// are counted in `empty`. Errors of the whole body (an array that is not one or is not
/// well-formed, a bad tabular header) come before any item is handed over: an array is read
/// twice, first only to check it, unless the caller already did (`checked`). The first error
/// `each` returns ends the reading and is returned.
pub(crate) fn read_items(
    body: &str,
    format: Format,
    empty: &mut u64,
    checked: bool,
    each: &mut dyn FnMut(Numbered) -> Result<()>,
) -> Result<()> {
    match format {
        Format::Documents => read_documents(body, empty, each),
        Format::Array => {
            if !checked {
                read_array(body, &mut |_| Ok(()))?;
            }
            read_array(body, each)
        }
        Format::Tabular { ignore_missing } => read_tabular(body, ignore_missing, empty, each),
    }
}

fn read_documents(
    body: &str,
    empty: &mut u64,
    each: &mut dyn FnMut(Numbered) -> Result<()>,
) -> Result<()> {
    for_each_line(body, empty, &mut |n, line| each((n, document_item(line))))
}

/// Hands every non-blank line of a JSON-lines body (`type=documents`) to `each` with its
/// 1-based line number, in order; blank lines are counted in `empty`. The first error `each`
/// returns ends the reading and is returned.
pub(crate) fn for_each_line<'a>(
    body: &'a str,
    empty: &mut u64,
    each: &mut dyn FnMut(usize, &'a str) -> Result<()>,
) -> Result<()> {
    let mut all = lines(body).enumerate().peekable();
    while let Some((n, line)) = all.next() {
        if line.trim().is_empty() {
            // The final newline of the body does not end an extra, empty line.
            if all.peek().is_some() || !line.is_empty() {
                *empty += 1;
            }
            continue;
        }
        each(n + 1, line)?;
    }
    Ok(())
}

/// The item of one non-blank line of a JSON-lines body.
pub(crate) fn document_item(line: &str) -> Item {
    match crate::json::parse(line.as_bytes()) {
        Ok(v @ Value::Object(_)) => Item::Doc(v),
        Ok(other) => not_an_object(&other.to_string()),
        Err(_) => parse_error(line),
    }
}

fn read_array(body: &str, each: &mut dyn FnMut(Numbered) -> Result<()>) -> Result<()> {
    let mut position = 0usize;
    let mut element = |v: Value| {
        position += 1;
        each(match v {
            v @ Value::Object(_) => (position, Item::Doc(v)),
            other => (position, not_an_object(&other.to_string())),
        })
    };
    let syntax = |e: Error| {
        if e.code == ErrorCode::HttpCorruptedJson {
            bad(format!(
                "expecting a JSON array in the request: {}",
                e.message
            ))
        } else {
            e
        }
    };
    if crate::json::for_each_element(body.as_bytes(), &mut element).map_err(syntax)? {
        return Ok(());
    }
    // Not an array: what it is only decides the message.
    crate::json::parse(body.as_bytes()).map_err(syntax)?;
    Err(bad("expecting a JSON array in the request"))
}

fn read_tabular(
    body: &str,
    ignore_missing: bool,
    empty: &mut u64,
    each: &mut dyn FnMut(Numbered) -> Result<()>,
) -> Result<()> {
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
                each((
                    n,
                    Item::Invalid(
                        ErrorCode::HttpBadParameter,
                        "no valid JSON array data".into(),
                    ),
                ))?;
                continue;
            }
            Err(_) => {
                each((n, parse_error(line)))?;
                continue;
            }
        };
        if values.len() != names.len() && !(ignore_missing && values.len() < names.len()) {
            each((
                n,
                Item::Invalid(
                    ErrorCode::HttpBadParameter,
                    format!(
                        "wrong number of JSON values (got {}, expected {})",
                        values.len(),
                        names.len()
                    ),
                ),
            ))?;
            continue;
        }
        let mut doc = Map::with_capacity(names.len());
        for (name, value) in names.iter().zip(values) {
            doc.insert(name.clone(), value);
        }
        each((n, Item::Doc(Value::Object(doc))))?;
    }
    Ok(())
}

/// Every item of `body` at once (for tests and the fuzz target).
pub(crate) fn collect_items(body: &str, format: Format, empty: &mut u64) -> Result<Vec<Numbered>> {
    let mut items = Vec::new();
    read_items(body, format, empty, false, &mut |item| {
        items.push(item);
        Ok(())
    })?;
    Ok(items)
}
