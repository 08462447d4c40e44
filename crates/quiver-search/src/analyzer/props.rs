//! Reading an analyzer type's `properties` object: typed attributes with defaults, each
//! mistake a [`Rejection`] that names the attribute.

use serde_json::{Map, Value};

use super::Rejection;

/// The properties object (callers have checked it is one; anything else reads as empty).
pub(crate) fn object(properties: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    properties
        .as_object()
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

/// A required string attribute.
pub(crate) fn required_string<'a>(
    props: &'a Map<String, Value>,
    name: &str,
) -> Result<&'a str, Rejection> {
    match props.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("'{name}' must be a string")),
        None => Err(format!("missing required attribute '{name}'")),
    }
}

/// An optional string attribute.
pub(crate) fn optional_string<'a>(
    props: &'a Map<String, Value>,
    name: &str,
) -> Result<Option<&'a str>, Rejection> {
    match props.get(name) {
        Some(Value::String(s)) => Ok(Some(s)),
        Some(Value::Null) | None => Ok(None),
        Some(_) => Err(format!("'{name}' must be a string")),
    }
}

/// An optional boolean attribute with its default.
pub(crate) fn bool_or(
    props: &Map<String, Value>,
    name: &str,
    default: bool,
) -> Result<bool, Rejection> {
    match props.get(name) {
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::Null) | None => Ok(default),
        Some(_) => Err(format!("'{name}' must be a boolean")),
    }
}

/// An unsigned integer attribute (required when `default` is `None`), at most `max`.
pub(crate) fn unsigned(
    props: &Map<String, Value>,
    name: &str,
    default: Option<u64>,
    max: u64,
) -> Result<u64, Rejection> {
    match props.get(name) {
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if v <= max => Ok(v),
            _ => Err(format!(
                "'{name}' must be an unsigned integer of at most {max}"
            )),
        },
        Some(Value::Null) | None => {
            default.ok_or_else(|| format!("missing required attribute '{name}'"))
        }
        Some(_) => Err(format!("'{name}' must be an unsigned integer")),
    }
}

/// An array of strings (required when `default_empty` is false).
pub(crate) fn string_array(
    props: &Map<String, Value>,
    name: &str,
    default_empty: bool,
) -> Result<Vec<String>, Rejection> {
    match props.get(name) {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                _ => Err(format!("every entry of '{name}' must be a string")),
            })
            .collect(),
        None if default_empty => Ok(Vec::new()),
        None => Err(format!("missing required attribute '{name}'")),
        Some(_) => Err(format!("'{name}' must be an array of strings")),
    }
}

/// A string attribute restricted to `allowed`, with its default.
pub(crate) fn choice<'a>(
    props: &Map<String, Value>,
    name: &str,
    allowed: &[&'a str],
    default: &'a str,
) -> Result<&'a str, Rejection> {
    match props.get(name) {
        Some(Value::String(s)) => allowed
            .iter()
            .find(|a| **a == s.as_str())
            .copied()
            .ok_or_else(|| format!("'{name}' must be one of {}", allowed.join(", "))),
        Some(Value::Null) | None => Ok(default),
        Some(_) => Err(format!("'{name}' must be a string")),
    }
}

/// The language part of an ICU-style locale (`en_US.UTF-8@x` → `en`), lower-cased.
pub(crate) fn language(locale: &str) -> String {
    locale
        .split(['_', '-', '.', '@'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// A locale as ArangoDB reports it: the part before any `.encoding` or `@keywords`.
pub(crate) fn canonical_locale(locale: &str) -> String {
    locale.split(['.', '@']).next().unwrap_or("").to_string()
}
