//! Request-body JSON: parsed once, strictly (ArangoDB rejects duplicate attribute names with
//! 400/600, which serde_json's own `Value` would silently resolve to the last one).

use std::fmt;

use quiver_errors::{Error, ErrorCode, Result};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Nesting deeper than this is refused: bounds the recursion of the parser.
pub const MAX_DEPTH: usize = 128;

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
        // ArangoDB prints integral doubles without a fraction (`1.0` is read back as `1`);
        // storing them as integers gives the same output everywhere a document is rendered.
        // Only where the integer is exact (|v| < 2^53), and -0.0 keeps its sign.
        if v == v.trunc()
            && v.abs() < 9_007_199_254_740_992.0
            && !(v == 0.0 && v.is_sign_negative())
        {
            return Ok(Value::Number((v as i64).into()));
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
        .map_err(|e| {
            Error::with_message(
                ErrorCode::HttpCorruptedJson,
                format!("VPackError error: {e}"),
            )
        })?;
    Ok(value)
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

    #[test]
    fn malformed_and_trailing_and_empty() {
        assert!(parse(b"{").is_err());
        assert!(parse(b"{} x").is_err());
        assert_eq!(parse_body(b"  \n").unwrap(), None);
        let deep = "[".repeat(10_000);
        assert!(parse(deep.as_bytes()).is_err());
    }
}
