//! Request-body JSON: parsed once, strictly (ArangoDB rejects duplicate attribute names with
//! 400/600, which serde_json's own `Value` would silently resolve to the last one).

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use quiver_core::EncodedDocument;
use quiver_errors::{Error, ErrorCode, Result};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Nesting deeper than this is refused: bounds the recursion of the parser.
pub const MAX_DEPTH: usize = 128;

/// ArangoDB prints integral doubles without a fraction (`1.0` is read back as `1`); storing
/// them as integers gives the same output everywhere a document is rendered. Only where the
/// integer is exact (|v| < 2^53), and -0.0 keeps its sign.
fn integral(v: f64) -> Option<i64> {
    (v == v.trunc() && v.abs() < 9_007_199_254_740_992.0 && !(v == 0.0 && v.is_sign_negative()))
        .then_some(v as i64)
}

struct StrictValue {
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for StrictValue {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictValue {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Value, E> {
        if let Some(i) = integral(v) {
            return Ok(Value::Number(i.into()));
        }
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Value, A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(de::Error::custom("too deeply nested"));
        }
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(v) = seq.next_element_seed(StrictValue {
            depth: self.depth + 1,
        })? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(de::Error::custom("too deeply nested"));
        }
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(StrictValue {
                depth: self.depth + 1,
            })?;
            // One hash and probe per attribute instead of a lookup followed by an insert.
            match out.entry(key) {
                serde_json::map::Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                serde_json::map::Entry::Occupied(slot) => {
                    return Err(de::Error::custom(format!(
                        "duplicate attribute name '{}'",
                        slot.key()
                    )));
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// Parses JSON text strictly; errors are 400/600 with the parser's message.
pub fn parse(bytes: &[u8]) -> Result<Value> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    // serde_json's own recursion limit (128) also applies; ours gives a clearer message.
    let value = StrictValue { depth: 0 }
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|_| v))
        .map_err(corrupted)?;
    Ok(value)
}

/// Reads a JSON array element by element, each parsed by the rules of [`parse`] and handed
/// to `each` before the next is read, so that only one element is built at a time. `Ok(false)`
/// when the text is not an array (nothing handed over); a syntax error after some elements
/// were handed over is still an error (400/600), as is the first error `each` returns.
pub fn for_each_element(bytes: &[u8], each: &mut dyn FnMut(Value) -> Result<()>) -> Result<bool> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first != Some(&b'[') {
        return Ok(false);
    }
    let mut stopped = None;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let outcome = de::Deserializer::deserialize_seq(
        &mut de,
        Elements {
            each,
            stopped: &mut stopped,
        },
    )
    .and_then(|()| de.end());
    if let Some(e) = stopped {
        return Err(e);
    }
    outcome.map_err(corrupted)?;
    Ok(true)
}

/// The visitor of [`for_each_element`]: the elements one at a time, at depth 1.
struct Elements<'a> {
    each: &'a mut dyn FnMut(Value) -> Result<()>,
    stopped: &'a mut Option<Error>,
}

impl<'de> Visitor<'de> for Elements<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while let Some(v) = seq.next_element_seed(StrictValue { depth: 1 })? {
            if let Err(e) = (self.each)(v) {
                *self.stopped = Some(e);
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

fn corrupted(e: serde_json::Error) -> Error {
    Error::with_message(
        ErrorCode::HttpCorruptedJson,
        format!("VPackError error: {e}"),
    )
}

/// Parses a JSON object and encodes it for an insert in the same pass (no `Value` is built
/// for the attributes the insert does not look at), by exactly the rules of [`parse`]: the
/// same errors, and `members` are the bytes serde_json writes for the attributes [`parse`]
/// returns. The caller checked that the text starts with `{` (after whitespace).
pub fn encode_document(bytes: &[u8]) -> Result<EncodedDocument> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let mut doc = EncodedDocument {
        // Compact output is rarely longer than the text (only numbers such as `1e9` grow).
        members: Vec::with_capacity(bytes.len()),
        ..EncodedDocument::default()
    };
    de::Deserializer::deserialize_map(&mut de, TopLevel { doc: &mut doc })
        .and_then(|()| de.end())
        .map_err(corrupted)?;
    Ok(doc)
}

/// An attribute name, borrowed from the input unless it holds escapes.
struct Name<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Name<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct NameVisitor;
        impl<'de> Visitor<'de> for NameVisitor {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an attribute name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Name<'de>, E> {
                Ok(Name(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> std::result::Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(v)))
            }
        }
        d.deserialize_str(NameVisitor)
    }
}

/// The attribute names of one object seen so far, for the duplicate check: a linear scan
/// while the object is small (cheaper than hashing a few dozen names), a hash set past that,
/// so that an object of n attributes is checked in O(n), never O(n²).
#[derive(Default)]
struct NameSet<'de> {
    few: Vec<Name<'de>>,
    many: HashSet<Cow<'de, str>>,
}

impl<'de> NameSet<'de> {
    /// Objects up to this many attributes are checked by a linear scan.
    const SCAN_LIMIT: usize = 16;

    fn is_empty(&self) -> bool {
        self.few.is_empty() && self.many.is_empty()
    }

    /// Adds `name`; gives it back if it was seen before.
    fn insert(&mut self, name: Name<'de>) -> Option<Name<'de>> {
        if self.many.is_empty() {
            if self.few.iter().any(|seen| seen.0 == name.0) {
                return Some(name);
            }
            if self.few.len() < Self::SCAN_LIMIT {
                self.few.push(name);
                return None;
            }
            self.many = self.few.drain(..).map(|seen| seen.0).collect();
        }
        if self.many.contains(&name.0) {
            return Some(name);
        }
        self.many.insert(name.0);
        None
    }
}

fn duplicate<E: de::Error>(name: &str) -> E {
    E::custom(format!("duplicate attribute name '{name}'"))
}

/// The top-level object of [`encode_document`].
struct TopLevel<'a> {
    doc: &'a mut EncodedDocument,
}

impl<'de> Visitor<'de> for TopLevel<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<(), A::Error> {
        read_document(self.doc, map, 1).map(drop)
    }
}

/// Reads the attributes of a document object into `doc` (values at nesting `depth`): `_key`,
/// `_from`, `_to` and `_rev` as values, every attribute but `_key`, `_id` and `_rev` encoded
/// into `members`. Returns how many attributes the object has.
fn read_document<'de, A: MapAccess<'de>>(
    doc: &mut EncodedDocument,
    mut map: A,
    depth: usize,
) -> std::result::Result<usize, A::Error> {
    let mut names = NameSet::default();
    let mut count = 0;
    while let Some(name) = map.next_key::<Name<'de>>()? {
        // As in [`StrictValue`], the value is read before the name is checked, so that a
        // body with both a duplicate and a later syntax error reports the same error.
        read_attribute(doc, &name.0, &mut map, depth)?;
        if let Some(name) = names.insert(name) {
            return Err(duplicate(&name.0));
        }
        count += 1;
    }
    Ok(count)
}

/// Reads the value of the attribute `name` of a document into `doc` (see [`read_document`]).
fn read_attribute<'de, A: MapAccess<'de>>(
    doc: &mut EncodedDocument,
    name: &str,
    map: &mut A,
    depth: usize,
) -> std::result::Result<(), A::Error> {
    match name {
        "_key" | "_id" | "_rev" => {
            let value = map.next_value_seed(StrictValue { depth })?;
            if name == "_key" {
                doc.key = Some(value);
            } else if name == "_rev" {
                doc.rev = Some(value);
            }
        }
        "_from" | "_to" => {
            let value = map.next_value_seed(StrictValue { depth })?;
            write_name(&mut doc.members, name);
            // Writing into a Vec cannot fail and a Value always serializes.
            let _ = serde_json::to_writer(&mut doc.members, &value);
            if name == "_from" {
                doc.from = Some(value);
            } else {
                doc.to = Some(value);
            }
        }
        _ => {
            write_name(&mut doc.members, name);
            map.next_value_seed(Transcode {
                out: &mut doc.members,
                depth,
            })?;
        }
    }
    Ok(())
}

/// One line of a dump's data read by [`encode_dump_line`].
#[derive(Debug, PartialEq)]
pub enum DumpLine {
    /// A plain document line.
    Document(EncodedDocument),
    /// An envelope of the format before 3.8, `{"type":<marker>,"data":{…}}`: the marker and
    /// the enveloped document.
    Envelope(u64, EncodedDocument),
}

/// Reads one line of a dump's data in one pass, as [`encode_document`] reads a document: a
/// plain document, or an envelope (an object of at most 3 attributes whose `type` is an
/// unsigned integer and whose `data` is an object) with its `data` encoded. The rules are
/// those of [`parse`]; an error here means the line is to be read by [`parse`] (which words
/// the error), and so does a document that is no envelope but has an object `data`
/// attribute (then read again by [`encode_document`]).
pub fn encode_dump_line(bytes: &[u8]) -> Result<DumpLine> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let mut line = DumpTop {
        doc: EncodedDocument {
            members: Vec::with_capacity(bytes.len()),
            ..EncodedDocument::default()
        },
        data: None,
        marker: None,
        count: 0,
    };
    de::Deserializer::deserialize_map(&mut de, &mut line)
        .and_then(|()| de.end())
        .map_err(corrupted)?;
    match (line.marker, line.data) {
        (Some(marker), Some(data)) if line.count <= 3 => Ok(DumpLine::Envelope(marker, data)),
        (_, Some(_)) => encode_document(bytes).map(DumpLine::Document),
        (_, None) => Ok(DumpLine::Document(line.doc)),
    }
}

/// The top-level object of [`encode_dump_line`]: the line as a document, and besides what an
/// envelope needs (`type` as a marker, `data` when it is an object).
struct DumpTop {
    doc: EncodedDocument,
    data: Option<EncodedDocument>,
    marker: Option<u64>,
    count: usize,
}

impl<'de> Visitor<'de> for &mut DumpTop {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let mut names = NameSet::default();
        while let Some(name) = map.next_key::<Name<'de>>()? {
            match &*name.0 {
                "type" => {
                    let at = self.doc.members.len();
                    read_attribute(&mut self.doc, "type", &mut map, 1)?;
                    // The value as written: an unsigned integer prints as its digits only.
                    let written = &self.doc.members[at + b",\"type\":".len()..];
                    self.marker = std::str::from_utf8(written)
                        .ok()
                        .and_then(|t| t.parse().ok());
                }
                "data" => {
                    write_name(&mut self.doc.members, "data");
                    map.next_value_seed(DataValue {
                        out: &mut self.doc.members,
                        data: &mut self.data,
                    })?;
                }
                other => read_attribute(&mut self.doc, other, &mut map, 1)?,
            }
            if let Some(name) = names.insert(name) {
                return Err(duplicate(&name.0));
            }
            self.count += 1;
        }
        Ok(())
    }
}

/// The value of a top-level `data` attribute: an object is read as an enveloped document,
/// anything else encoded as a member of the line's document.
struct DataValue<'a> {
    out: &'a mut Vec<u8>,
    data: &'a mut Option<EncodedDocument>,
}

impl<'a> DataValue<'a> {
    /// The value as a member of the line's document (a top-level attribute's value).
    fn members(self) -> Transcode<'a> {
        Transcode {
            out: self.out,
            depth: 1,
        }
    }
}

impl<'de> DeserializeSeed<'de> for DataValue<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for DataValue<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<(), E> {
        self.members().visit_bool(v)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<(), E> {
        self.members().visit_i64(v)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<(), E> {
        self.members().visit_u64(v)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<(), E> {
        self.members().visit_f64(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<(), E> {
        self.members().visit_str(v)
    }
    fn visit_unit<E: de::Error>(self) -> std::result::Result<(), E> {
        self.members().visit_unit()
    }
    fn visit_none<E: de::Error>(self) -> std::result::Result<(), E> {
        self.members().visit_none()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<(), A::Error> {
        self.members().visit_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<(), A::Error> {
        // Its attributes are at the depth of the members of a top-level object's value.
        let mut data = EncodedDocument::default();
        read_document(&mut data, map, 2)?;
        *self.data = Some(data);
        Ok(())
    }
}

/// Writes `,"name":` (the name escaped as serde_json escapes it).
fn write_name(out: &mut Vec<u8>, name: &str) {
    out.push(b',');
    let _ = serde_json::to_writer(&mut *out, name);
    out.push(b':');
}

/// Copies one JSON value into `out` in compact form while checking it as [`StrictValue`] does
/// (duplicate names, nesting depth, integral doubles as integers).
struct Transcode<'a> {
    out: &'a mut Vec<u8>,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for Transcode<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Transcode<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<(), E> {
        self.out
            .extend_from_slice(if v { b"true" as &[u8] } else { b"false" });
        Ok(())
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<(), E> {
        let _ = serde_json::to_writer(&mut *self.out, &v);
        Ok(())
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<(), E> {
        let _ = serde_json::to_writer(&mut *self.out, &v);
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<(), E> {
        if let Some(i) = integral(v) {
            return self.visit_i64(i);
        }
        let number = Number::from_f64(v).ok_or_else(|| E::custom("number out of range"))?;
        let _ = serde_json::to_writer(&mut *self.out, &number);
        Ok(())
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<(), E> {
        let _ = serde_json::to_writer(&mut *self.out, v);
        Ok(())
    }
    fn visit_unit<E>(self) -> std::result::Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_none<E>(self) -> std::result::Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(de::Error::custom("too deeply nested"));
        }
        self.out.push(b'[');
        let mut first = true;
        loop {
            // The separator goes in before we know whether an element follows; taken back at
            // the end.
            let mark = self.out.len();
            if !first {
                self.out.push(b',');
            }
            let element = Transcode {
                out: &mut *self.out,
                depth: self.depth + 1,
            };
            if seq.next_element_seed(element)?.is_none() {
                self.out.truncate(mark);
                break;
            }
            first = false;
        }
        self.out.push(b']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(de::Error::custom("too deeply nested"));
        }
        self.out.push(b'{');
        let mut names = NameSet::default();
        while let Some(name) = map.next_key::<Name<'de>>()? {
            if !names.is_empty() {
                self.out.push(b',');
            }
            let _ = serde_json::to_writer(&mut *self.out, &*name.0);
            self.out.push(b':');
            map.next_value_seed(Transcode {
                out: &mut *self.out,
                depth: self.depth + 1,
            })?;
            if let Some(name) = names.insert(name) {
                return Err(duplicate(&name.0));
            }
        }
        self.out.push(b'}');
        Ok(())
    }
}

/// Parses a request body that must be JSON; an empty body is `None`.
pub fn parse_body(body: &[u8]) -> Result<Option<Value>> {
    if body.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(None);
    }
    parse(body).map(Some)
}

/// Serializes a value (infallible for `Value`).
pub fn to_bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_refused() {
        let err = parse(br#"{"a":1,"a":2}"#).unwrap_err();
        assert_eq!(err.code, ErrorCode::HttpCorruptedJson);
        assert!(parse(br#"{"a":{"b":1},"b":{"b":2}}"#).is_ok());
        assert!(parse(br#"[{"a":1},{"a":1,"x":{"y":1,"y":2}}]"#).is_err());
    }

    /// `{"a0":0,"a1":1,…}` with `n` attributes, then `tail` (e.g. a repeated name).
    fn wide_object(n: usize, tail: &str) -> String {
        let mut text = String::from("{");
        for i in 0..n {
            text.push_str(&format!("\"a{i}\":{i},"));
        }
        text.push_str(tail);
        text.push('}');
        text
    }

    #[test]
    fn wide_objects_are_checked_in_linear_time() {
        // 200,000 names: a pairwise comparison would take 2·10¹⁰ string comparisons (minutes
        // in a debug build); the hash set takes well under a second.
        let n = 200_000;
        let started = std::time::Instant::now();
        let unique = wide_object(n, "\"last\":1");
        assert!(encode_document(unique.as_bytes()).is_ok());
        assert!(parse(unique.as_bytes()).is_ok());
        let nested = format!("{{\"outer\":{unique}}}");
        assert!(encode_document(nested.as_bytes()).is_ok());
        let repeated = wide_object(n, "\"a7\":1");
        let err = encode_document(repeated.as_bytes()).unwrap_err();
        assert!(
            err.message.contains("duplicate attribute name 'a7'"),
            "{}",
            err.message
        );
        let nested = format!("{{\"outer\":{repeated}}}");
        let err = encode_document(nested.as_bytes()).unwrap_err();
        assert!(
            err.message.contains("duplicate attribute name 'a7'"),
            "{}",
            err.message
        );
        assert!(parse(repeated.as_bytes()).is_err());
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "took {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn duplicates_found_on_both_sides_of_the_scan_limit() {
        for n in [1, 15, 16, 17, 40] {
            for repeat in [0, n / 2, n - 1] {
                let text = wide_object(n, &format!("\"a{repeat}\":1"));
                assert!(encode_document(text.as_bytes()).is_err(), "{n} {repeat}");
                let nested = format!("{{\"x\":{text}}}");
                assert!(encode_document(nested.as_bytes()).is_err(), "{n} {repeat}");
            }
            assert!(encode_document(wide_object(n, "\"b\":1").as_bytes()).is_ok());
        }
    }

    #[test]
    fn order_preserved_and_numbers_kept() {
        let v = parse(br#"{"z":1,"a":2.5,"m":-3}"#).unwrap();
        assert_eq!(to_bytes(&v), br#"{"z":1,"a":2.5,"m":-3}"#);
    }

    #[test]
    fn integral_doubles_read_back_as_integers() {
        let v = parse(br#"{"a":1.0,"b":-2.0,"c":2.5,"d":1e2,"e":-0.0,"f":1e300}"#).unwrap();
        assert_eq!(
            to_bytes(&v),
            br#"{"a":1,"b":-2,"c":2.5,"d":100,"e":-0.0,"f":1e+300}"#
        );
    }

    /// What [`encode_document`] must produce: [`parse`]'s object with the managed attributes
    /// split off, the rest serialized as members.
    fn via_value(bytes: &[u8]) -> Result<EncodedDocument> {
        let Value::Object(map) = parse(bytes)? else {
            panic!("test bodies are objects");
        };
        let mut doc = EncodedDocument::default();
        for (name, value) in map {
            match name.as_str() {
                "_key" => doc.key = Some(value),
                "_rev" => doc.rev = Some(value),
                "_id" => {}
                _ => {
                    write_name(&mut doc.members, &name);
                    doc.members.extend(to_bytes(&value));
                    match name.as_str() {
                        "_from" => doc.from = Some(value),
                        "_to" => doc.to = Some(value),
                        _ => {}
                    }
                }
            }
        }
        Ok(doc)
    }

    fn same_as_parse(bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        match (encode_document(bytes), via_value(bytes)) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
            (Err(a), Err(b)) => assert_eq!((a.code, a.message), (b.code, b.message), "{text}"),
            (a, b) => panic!("{text}: one pass {a:?}, via a value {b:?}"),
        }
    }

    #[test]
    fn one_pass_encoding_matches_parse_then_serialize() {
        let bodies: &[&str] = &[
            r#"{}"#,
            r#" { "name" : "Alice" , "age" : 34 , "tags" : [ "a" , "b" ] , "active" : true } "#,
            r#"{"_key":"k1","_id":"x/y","_rev":"abc","a":null,"b":[],"c":{}}"#,
            r#"{"_from":"v/1","_to":"v/2","w":1.5,"_key":7}"#,
            r#"{"n":[1.0,-2.0,2.5,1e2,-0.0,1e300,18446744073709551615,-9223372036854775808]}"#,
            r#"{"big":123456789012345678901234567890,"tiny":1e-320,"neg":-1.25e-7}"#,
            r#"{"s":"\u00e9\n\t\"\\\/ \ud83d\ude00","\u0061":1,"esc\"aped":2}"#,
            r#"{"o":{"a":{"b":{"c":[{"d":[[],[{}]]}]}}},"x":[null,true,false]}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"_key":"a","_key":"b"}"#,
            r#"{"_id":1,"x":2,"_id":3}"#,
            r#"{"a":1,"\u0061":2}"#,
            r#"{"o":{"y":1,"y":2}}"#,
            r#"{"a":[{"y":1},{"y":1,"z":{"q":1,"q":[}}]}"#,
            r#"{"a":1,"a":[1,"#,
            r#"{"a":1} x"#,
            r#"{"a":1,}"#,
            r#"{"a" 1}"#,
            r#"{"a":1e400}"#,
            r#"{"a":"unterminated}"#,
            r#"{"a":tru}"#,
            r#"{"_key":{"a":1,"a":2}}"#,
            "{\"a\":\"\u{7f}\u{80}\"}",
        ];
        for body in bodies {
            same_as_parse(body.as_bytes());
        }
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(130), "]".repeat(130));
        same_as_parse(deep.as_bytes());
        let deep_enough = format!("{{\"a\":{}{}}}", "[".repeat(120), "]".repeat(120));
        same_as_parse(deep_enough.as_bytes());
        // Invalid UTF-8 inside a string.
        same_as_parse(b"{\"a\":\"\xff\"}");
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| Value::Number(n.into())),
            any::<u64>().prop_map(|n| Value::Number(n.into())),
            any::<f64>()
                .prop_filter_map("finite", Number::from_f64)
                .prop_map(Value::Number),
            "[a-z_\"\\\\\u{e9}\u{1F600}\n]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::vec(("[a-c_]{0,3}", inner), 0..6)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
    }

    fn attribute_name() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just("_key".to_string()),
            Just("_from".to_string()),
            Just("_rev".to_string()),
            "[a-d]{1,2}",
        ]
    }

    proptest::proptest! {
        #[test]
        fn one_pass_encoding_matches_for_generated_objects(
            pairs in proptest::collection::vec((attribute_name(), json_value()), 0..8),
            pretty in proptest::bool::ANY,
            cut in 0usize..400,
        ) {
            // Written by hand so that duplicate names survive into the text.
            let mut text = String::from("{");
            for (i, (name, value)) in pairs.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                if pretty {
                    text.push_str("\n  ");
                }
                text.push_str(&serde_json::to_string(name).unwrap());
                text.push_str(": ");
                let value = if pretty {
                    serde_json::to_string_pretty(value).unwrap()
                } else {
                    serde_json::to_string(value).unwrap()
                };
                text.push_str(&value);
            }
            text.push('}');
            same_as_parse(text.as_bytes());
            // Cut short (almost always malformed): the same error.
            let cut = cut.min(text.len()).max(1);
            same_as_parse(&text.as_bytes()[..cut]);
        }
    }

    /// What [`encode_dump_line`] must produce: [`parse`]'s reading of the line, an envelope
    /// as restore-data recognizes it (at most 3 attributes, an unsigned `type`, an object
    /// `data`) or a document; an error exactly when [`parse`] fails.
    fn same_dump_line_as_parse(bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let expected = parse(bytes).map(|value| {
            let map = value.as_object().expect("test lines are objects");
            match (map.get("type"), map.get("data")) {
                (Some(Value::Number(n)), Some(data @ Value::Object(_)))
                    if map.len() <= 3 && n.is_u64() =>
                {
                    let data = via_value(data.to_string().as_bytes()).unwrap();
                    DumpLine::Envelope(n.as_u64().unwrap(), data)
                }
                _ => DumpLine::Document(via_value(bytes).unwrap()),
            }
        });
        match (encode_dump_line(bytes), expected) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
            (Err(_), Err(_)) => {}
            (a, b) => panic!("{text}: one pass {a:?}, via a value {b:?}"),
        }
    }

    #[test]
    fn dump_lines_read_as_parse_reads_them() {
        let lines: &[&str] = &[
            r#"{"_key":"1","_id":"e/1","_rev":"_mf7RRsy---","_from":"v/1","_to":"v/2"}"#,
            r#"{"type":2300,"data":{"_key":"1","_id":"e/1","_rev":"_a","_from":"v/1","n":[1.0]}}"#,
            r#"{"data":{"_key":"1"},"type":2302}"#,
            r#"{"type":2300.0,"data":{"_key":"1"},"x":1}"#,
            r#"{"type":2300,"data":{"_key":"1"},"x":1,"y":2}"#,
            r#"{"type":"2300","data":{"_key":"1"}}"#,
            r#"{"type":-2300,"data":{"_key":"1"}}"#,
            r#"{"type":2300.5,"data":{"_key":"1"}}"#,
            r#"{"type":2300,"data":[1,{"a":1}]}"#,
            r#"{"type":2300,"data":"x"}"#,
            r#"{"data":{"a":{"b":1}},"n":1}"#,
            r#"{"type":2300,"data":{"a":1,"a":2}}"#,
            r#"{"type":2300,"data":{"a":1},"type":1}"#,
            r#"{"type":2300,"data":{"a":1},"data":{}}"#,
            r#"{"type":2300,"data":{"_key":"1"} x"#,
            r#"{"type":2300,"data":{"_key":"1""#,
            r#"{"type":{"a":1,"a":2},"data":{}}"#,
            r#"{"type":18446744073709551615,"data":{}}"#,
        ];
        for line in lines {
            same_dump_line_as_parse(line.as_bytes());
        }
        let deep = format!(
            "{{\"type\":2300,\"data\":{{\"a\":{}{}}}}}",
            "[".repeat(126),
            "]".repeat(126)
        );
        same_dump_line_as_parse(deep.as_bytes());
        let deeper = deep.replace("[", "[[").replace("]", "]]");
        same_dump_line_as_parse(deeper.as_bytes());
    }

    fn dump_attribute_name() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just("type".to_string()),
            Just("data".to_string()),
            Just("_key".to_string()),
            Just("_rev".to_string()),
            "[a-b]{1}",
        ]
    }

    fn dump_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        prop_oneof![
            (2299u64..2304).prop_map(|n| Value::Number(n.into())),
            json_value(),
            proptest::collection::vec((attribute_name(), json_value()), 0..4)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    }

    proptest::proptest! {
        #[test]
        fn dump_lines_match_for_generated_objects(
            pairs in proptest::collection::vec((dump_attribute_name(), dump_value()), 0..5),
        ) {
            let mut text = String::from("{");
            for (i, (name, value)) in pairs.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                text.push_str(&serde_json::to_string(name).unwrap());
                text.push(':');
                text.push_str(&serde_json::to_string(value).unwrap());
            }
            text.push('}');
            same_dump_line_as_parse(text.as_bytes());
        }
    }

    #[test]
    fn malformed_and_trailing_and_empty() {
        assert!(parse(b"{").is_err());
        assert!(parse(b"{} x").is_err());
        assert_eq!(parse_body(b"  \n").unwrap(), None);
        let deep = "[".repeat(10_000);
        assert!(parse(deep.as_bytes()).is_err());
    }
}
