//! The stored document format and ArangoDB's attribute rules.
//!
//! A document is stored as UTF-8 JSON text that always starts with `{"_key":"<key>","_rev":"<rev>"`
//! followed by the user attributes (and `_from`/`_to` for edges) in the order the client sent
//! them. `_id` is never stored (a rename would otherwise rewrite every document); because the
//! stored prefix has a fixed shape, a response-ready document is made by splicing
//! `,"_id":"<collection>/<key>"` right after the key, without parsing the body.

use bytes::Bytes;
use quiver_errors::{Error, ErrorCode, Result};
use quiver_types::{validate_key, DocumentId, Revision};
use serde_json::{Map, Value};

/// The length of `{"_key":"` in the stored format.
const KEY_PREFIX_LEN: usize = 9;

/// Whether `name` is one of the attributes the server owns and never takes from a body
/// as-is (`_key` is validated separately; `_id` and `_rev` are ignored on writes).
fn is_managed(name: &str) -> bool {
    matches!(name, "_key" | "_id" | "_rev")
}

/// Checks an edge's `_from`/`_to`: both present, strings, and valid document handles
/// (error 1233 otherwise). The referenced documents need not exist.
pub(crate) fn validate_edge(doc: &Map<String, Value>) -> Result<()> {
    validate_edge_ends(doc.get("_from"), doc.get("_to"))
}

/// [`validate_edge`] for the two attributes given separately.
pub(crate) fn validate_edge_ends(from: Option<&Value>, to: Option<&Value>) -> Result<()> {
    for (attribute, value) in [("_from", from), ("_to", to)] {
        let ok = match value {
            Some(Value::String(handle)) => DocumentId::parse(handle).is_ok(),
            _ => false,
        };
        if !ok {
            return Err(Error::with_message(
                ErrorCode::InvalidEdgeAttribute,
                format!("edge attribute missing or invalid: '{attribute}'"),
            ));
        }
    }
    Ok(())
}

/// A document body already in the stored encoding, so that an insert need not build a
/// `Value` only to serialize it again: the HTTP layer parses and encodes a request body in one
/// pass (`quiver_server::json::encode_document`). The attributes the insert itself looks at
/// are kept as values besides.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EncodedDocument {
    /// `_key` when the body has one (checked by the insert as a `Value` body's would be).
    pub key: Option<Value>,
    /// `_from` when the body has one (it is also one of `members`).
    pub from: Option<Value>,
    /// `_to` when the body has one (it is also one of `members`).
    pub to: Option<Value>,
    /// `_rev` when the body has one (not one of `members`): the revision a restore keeps
    /// ([`WriteOptions::keep_revisions`](crate::WriteOptions)), ignored otherwise.
    pub rev: Option<Value>,
    /// Every top-level attribute except `_key`, `_id` and `_rev`, in the body's order, each
    /// as `,"name":value`: compact JSON exactly as serde_json writes a `Value`, names unique.
    /// The insert stores these bytes as they are, so they must be valid.
    pub members: Vec<u8>,
}

impl EncodedDocument {
    /// The body as an object (for the paths that need its attributes: computed values,
    /// schema, unique indexes, overwrite modes).
    pub fn into_value(self) -> Result<Value> {
        let mut text = Vec::with_capacity(self.members.len() + 2);
        text.push(b'{');
        text.extend_from_slice(self.members.get(1..).unwrap_or_default());
        text.push(b'}');
        let mut map = decode_stored(&text)?;
        if let Some(key) = self.key {
            map.insert("_key".into(), key);
        }
        if let Some(rev) = self.rev {
            map.insert("_rev".into(), rev);
        }
        Ok(Value::Object(map))
    }
}

/// Extracts and checks a `_key` value from a body: a string that is a legal key (error 1221).
pub(crate) fn key_of(value: &Value) -> Result<&str> {
    match value {
        Value::String(key) => {
            validate_key(key)?;
            Ok(key)
        }
        _ => Err(Error::new(ErrorCode::DocumentKeyBad)),
    }
}

/// Extracts the key a replace/update/remove item addresses: `_key`, or the key part of `_id`.
pub(crate) fn selector_key(map: &Map<String, Value>) -> Result<String> {
    if let Some(key) = map.get("_key") {
        return key_of(key).map(str::to_string);
    }
    if let Some(Value::String(id)) = map.get("_id") {
        let handle = DocumentId::parse(id)?;
        return Ok(handle.key.to_string());
    }
    Err(Error::new(ErrorCode::DocumentHandleBad))
}

/// Extracts the key from a remove / get-many item: a key string, a `collection/key` handle, or
/// an object with `_key` (or `_id`).
pub(crate) fn item_key(item: &Value) -> Result<(String, Option<String>)> {
    match item {
        Value::String(text) => {
            if let Some((_, key)) = text.split_once('/') {
                validate_key(key).map_err(|_| Error::new(ErrorCode::DocumentHandleBad))?;
                Ok((key.to_string(), None))
            } else {
                validate_key(text)?;
                Ok((text.clone(), None))
            }
        }
        Value::Object(map) => {
            let key = selector_key(map)?;
            let rev = map.get("_rev").and_then(Value::as_str).map(str::to_string);
            Ok((key, rev))
        }
        _ => Err(Error::new(ErrorCode::DocumentHandleBad)),
    }
}

/// Serializes a document in the stored format: `_key`, `_rev`, then every attribute of
/// `attributes` except `_key`, `_id` and `_rev`.
pub(crate) fn encode_stored(key: &str, rev: Revision, attributes: &Map<String, Value>) -> Bytes {
    Bytes::from(encode_stored_with(key, rev.encode().as_bytes(), attributes))
}

/// Writes `{"_key":"<key>","_rev":"<rev_text>"`, the fixed start of every stored body.
pub(crate) fn write_stored_prefix(out: &mut Vec<u8>, key: &str, rev_text: &[u8]) {
    out.extend_from_slice(b"{\"_key\":\"");
    // Legal keys never need JSON escaping (validate_key allows no quote, backslash or control
    // character), which is what makes the fixed-shape prefix possible.
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(REV_INFIX);
    out.extend_from_slice(rev_text);
    out.push(b'"');
}

/// Where the revision text starts in a body encoded for `key`.
pub(crate) fn stored_rev_offset(key: &str) -> usize {
    KEY_PREFIX_LEN + key.len() + REV_INFIX.len()
}

const REV_INFIX: &[u8] = b"\",\"_rev\":\"";

/// [`encode_stored`] with the revision given as its text, so that an insert can encode before
/// its revision is known (with a placeholder of the final length, overwritten in place at
/// [`stored_rev_offset`]).
pub(crate) fn encode_stored_with(
    key: &str,
    rev_text: &[u8],
    attributes: &Map<String, Value>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + key.len());
    write_stored_prefix(&mut out, key, rev_text);
    for (name, value) in attributes {
        if is_managed(name) {
            continue;
        }
        out.push(b',');
        // Writing into a Vec cannot fail and a serde_json::Value always serializes.
        let _ = serde_json::to_writer(&mut out, name);
        out.push(b':');
        let _ = serde_json::to_writer(&mut out, value);
    }
    out.push(b'}');
    out
}

/// The response-ready JSON of a stored document: `_id` spliced in after `_key`.
/// `escaped_collection` is the collection name JSON-escaped without quotes.
pub(crate) fn splice_id(stored: &[u8], key: &str, escaped_collection: &str) -> Bytes {
    let mut out = Vec::with_capacity(stored.len() + escaped_collection.len() + key.len() + 10);
    append_with_id(&mut out, stored, key, escaped_collection);
    Bytes::from(out)
}

/// [`splice_id`] appending to `out`: what whole-collection reads use to write many documents
/// into one buffer.
pub(crate) fn append_with_id(
    out: &mut Vec<u8>,
    stored: &[u8],
    key: &str,
    escaped_collection: &str,
) {
    let at = KEY_PREFIX_LEN + key.len() + 1;
    if stored.len() < at || !stored.starts_with(b"{\"_key\":\"") {
        // Not in the stored format (cannot happen for documents written by this crate);
        // fall back to a parse so the caller still gets a correct document.
        match serde_json::from_slice::<Map<String, Value>>(stored) {
            Ok(mut map) => {
                let id = format!("{}/{key}", unescape_name(escaped_collection));
                map.shift_insert(1.min(map.len()), "_id".into(), id.into());
                // Writing into a Vec cannot fail and a map of values always serializes.
                let _ = serde_json::to_writer(&mut *out, &map);
            }
            Err(_) => out.extend_from_slice(stored),
        }
        return;
    }
    out.reserve(stored.len() + escaped_collection.len() + key.len() + 10);
    out.extend_from_slice(&stored[..at]);
    out.extend_from_slice(b",\"_id\":\"");
    out.extend_from_slice(escaped_collection.as_bytes());
    out.push(b'/');
    out.extend_from_slice(key.as_bytes());
    out.push(b'"');
    out.extend_from_slice(&stored[at..]);
}

fn unescape_name(escaped: &str) -> String {
    serde_json::from_str::<String>(&format!("\"{escaped}\"")).unwrap_or_else(|_| escaped.into())
}

/// Parses a stored document into an object (without `_id`).
pub(crate) fn decode_stored(stored: &[u8]) -> Result<Map<String, Value>> {
    serde_json::from_slice(stored).map_err(|e| {
        Error::with_message(
            ErrorCode::CorruptedDatafile,
            format!("stored document is not valid JSON: {e}"),
        )
    })
}

/// Parses a stored document and adds `_id` as its second attribute (ArangoDB's order
/// `_key`, `_id`, `_rev`, …).
pub(crate) fn decode_with_id(stored: &[u8], collection: &str, key: &str) -> Result<Value> {
    let mut map = decode_stored(stored)?;
    let at = 1.min(map.len());
    map.shift_insert(
        at,
        "_id".into(),
        Value::String(format!("{collection}/{key}")),
    );
    Ok(Value::Object(map))
}

/// Removes `null` attributes from objects, recursively into nested objects (not arrays): what
/// `keepNull=false` does to the values an update brings.
pub(crate) fn strip_nulls(map: &mut Map<String, Value>) {
    map.retain(|_, value| !value.is_null());
    for value in map.values_mut() {
        if let Value::Object(inner) = value {
            strip_nulls(inner);
        }
    }
}

/// ArangoDB's update merge: attributes of `patch` overwrite those of `target`; with
/// `keep_null=false` a `null` removes the attribute; with `merge_objects` an object meets an
/// existing object by recursive merge, otherwise it replaces it. Existing attributes keep their
/// position; new ones are appended. `_key`, `_id` and `_rev` of the patch are ignored (the
/// caller sets them).
pub(crate) fn merge_patch(
    target: &mut Map<String, Value>,
    patch: Map<String, Value>,
    keep_null: bool,
    merge_objects: bool,
    top_level: bool,
) {
    for (name, value) in patch {
        if top_level && is_managed(&name) {
            continue;
        }
        match value {
            Value::Null if !keep_null => {
                target.shift_remove(&name);
            }
            Value::Object(mut inner) => {
                if merge_objects {
                    if let Some(Value::Object(existing)) = target.get_mut(&name) {
                        merge_patch(existing, inner, keep_null, merge_objects, false);
                        continue;
                    }
                }
                if !keep_null {
                    strip_nulls(&mut inner);
                }
                target.insert(name, Value::Object(inner));
            }
            other => {
                target.insert(name, other);
            }
        }
    }
}

/// Strips the optional quotes around an `If-Match` / `If-None-Match` value and compares it to
/// a stored revision. Values that are not revisions at all never match.
pub fn revision_matches(expected: &str, actual: Revision) -> bool {
    let trimmed = expected.trim();
    let unquoted = trimmed
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .or_else(|| {
            trimmed
                .strip_prefix('\'')
                .and_then(|s| s.strip_suffix('\''))
        })
        .unwrap_or(trimmed);
    Revision::decode(unquoted) == Some(actual)
}

/// The revision-conflict error: 412 with errorNum 1200 and the stored document's
/// `_id`, `_key` and `_rev` in the envelope.
pub(crate) fn revision_conflict(collection: &str, key: &str, current: Revision) -> Error {
    Error::with_message(
        ErrorCode::ArangoConflict,
        "conflict, _rev values do not match",
    )
    .with_status(412)
    .with_extra("_id", Value::String(format!("{collection}/{key}")))
    .with_extra("_key", Value::String(key.to_string()))
    .with_extra("_rev", Value::String(current.encode()))
}

/// The duplicate-key error (409/1210), worded as ArangoDB does. The envelope carries only the
/// four standard attributes, as ArangoDB's (python-arango compares the body exactly); the key is
/// named in the message.
pub(crate) fn unique_violation(key: &str) -> Error {
    Error::with_message(
        ErrorCode::UniqueConstraintViolated,
        format!(
            "unique constraint violated - in index primary of type primary over '_key'; conflicting key: {key}"
        ),
    )
}

/// A JSON-escaped string without its surrounding quotes.
pub(crate) fn escape_json_inner(text: &str) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_else(|_| format!("\"{text}\""));
    quoted[1..quoted.len() - 1].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn stored_format_and_splice() {
        let rev = Revision(123456789);
        let stored = encode_stored(
            "k1",
            rev,
            &obj(json!({"_id": "x/y", "_rev": "zzz", "_key": "other", "a": 1, "b": {"c": [1, 2]}})),
        );
        let text = std::str::from_utf8(&stored).unwrap();
        assert_eq!(
            text,
            format!(
                r#"{{"_key":"k1","_rev":"{}","a":1,"b":{{"c":[1,2]}}}}"#,
                rev.encode()
            )
        );
        let spliced = splice_id(&stored, "k1", "co\\\"ll");
        let value: Value = serde_json::from_slice(&spliced).unwrap();
        assert_eq!(value["_id"], "co\"ll/k1");
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["_key", "_id", "_rev", "a", "b"]);
        let decoded = decode_with_id(&stored, "coll", "k1").unwrap();
        assert_eq!(
            decoded,
            json!({"_key": "k1", "_id": "coll/k1", "_rev": rev.encode(), "a": 1, "b": {"c": [1, 2]}})
        );
    }

    #[test]
    fn merge_semantics() {
        let base = obj(json!({"a": 1, "o": {"x": 1, "y": 2}, "n": null, "z": 0}));
        let mut merged = base.clone();
        merge_patch(
            &mut merged,
            obj(json!({"o": {"y": null, "w": 3}, "a": null, "new": {"p": null}})),
            true,
            true,
            true,
        );
        assert_eq!(
            merged,
            obj(
                json!({"a": null, "o": {"x": 1, "y": null, "w": 3}, "n": null, "z": 0, "new": {"p": null}})
            )
        );

        let mut removed = base.clone();
        merge_patch(
            &mut removed,
            obj(json!({"o": {"y": null, "w": 3}, "a": null, "new": {"p": null, "q": [null]}})),
            false,
            true,
            true,
        );
        assert_eq!(
            removed,
            obj(json!({"o": {"x": 1, "w": 3}, "n": null, "z": 0, "new": {"q": [null]}}))
        );
        // Order of surviving attributes is preserved after a removal.
        let keys: Vec<&String> = removed.keys().collect();
        assert_eq!(keys, ["o", "n", "z", "new"]);

        let mut replaced = base;
        merge_patch(
            &mut replaced,
            obj(json!({"o": {"w": 3}, "_key": "evil", "_rev": "x"})),
            true,
            false,
            true,
        );
        assert_eq!(
            replaced,
            obj(json!({"a": 1, "o": {"w": 3}, "n": null, "z": 0}))
        );
    }

    #[test]
    fn edge_validation() {
        assert!(validate_edge(&obj(json!({"_from": "a/1", "_to": "b/2"}))).is_ok());
        for bad in [
            json!({"_to": "b/2"}),
            json!({"_from": "a/1"}),
            json!({"_from": "test", "_to": "b/2"}),
            json!({"_from": "a/1", "_to": "1"}),
            json!({"_from": "coll/rak/ov", "_to": "b/2"}),
            json!({"_from": 1, "_to": "b/2"}),
            json!({"_from": "a/1", "_to": "/2"}),
        ] {
            assert_eq!(
                validate_edge(&obj(bad.clone())).unwrap_err().code,
                ErrorCode::InvalidEdgeAttribute,
                "{bad}"
            );
        }
    }

    #[test]
    fn revision_preconditions() {
        let rev = Revision(987654321987);
        let text = rev.encode();
        assert!(revision_matches(&text, rev));
        assert!(revision_matches(&format!("\"{text}\""), rev));
        assert!(revision_matches(&format!("'{text}'"), rev));
        assert!(!revision_matches("*abcd", rev));
        assert!(!revision_matches("", rev));
        assert!(!revision_matches(&Revision(1).encode(), rev));
        let err = revision_conflict("c", "k", rev);
        assert_eq!((err.http_status(), err.number()), (412, 1200));
        assert_eq!(err.to_envelope()["_rev"], text);
    }

    #[test]
    fn key_values() {
        assert_eq!(key_of(&json!("abc")).unwrap(), "abc");
        for bad in [
            json!(1),
            json!(null),
            json!(""),
            json!("a b"),
            json!(["a"]),
            json!("öö"),
        ] {
            assert_eq!(key_of(&bad).unwrap_err().code, ErrorCode::DocumentKeyBad);
        }
    }
}
