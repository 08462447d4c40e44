//! AQL value semantics: type order and comparison, coercions, number formatting, arithmetic,
//! `LIKE` matching, attribute access and hashing.
//!
//! AQL values are plain [`serde_json::Value`]s (with preserved object key order). Everything
//! here follows ArangoDB 3.12's documented rules ("Type and value order", "Type check and cast
//! functions", "Operators"); where the documentation is silent, ArangoDB's implementation was
//! the reference.

mod arith;
mod format;
mod hash;
mod like;
mod size;

pub use arith::{arithmetic, negate, ArithOp};
// AQL's value order lives in quiver-types so that quiver-core's sorted indexes order values
// exactly as queries compare them.
pub use format::{format_f64, format_number, to_json_string, write_json};
pub use hash::{hash_value, ValueKey, ValueRef};
pub use like::like;
pub use quiver_types::order::{compare, compare_strings, equals, type_weight};
pub use size::estimate_size;

use quiver_errors::ErrorCode;
pub use serde_json::Value;

/// The shared `null`, for accessors that return references.
pub static NULL: Value = Value::Null;

/// A query warning (ArangoDB reports these in `extra.warnings` as `{code, message}`).
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    pub code: ErrorCode,
    pub message: String,
}

impl Warning {
    /// A warning with an explicit message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Warning {
        Warning {
            code,
            message: message.into(),
        }
    }

    /// A warning carrying the code's default message.
    pub fn from_code(code: ErrorCode) -> Warning {
        Warning {
            code,
            message: code.default_message().to_string(),
        }
    }

    /// `{"code": N, "message": "…"}` as in a cursor's `extra.warnings`.
    pub fn to_json(&self) -> Value {
        serde_json::json!({"code": self.code.number(), "message": self.message})
    }
}

/// AQL's name of a value's type, as `TYPENAME()` returns it.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// AQL truthiness (`TO_BOOL`): null, false, 0 and "" are false; arrays and objects are always
/// true, even when empty.
pub fn to_bool(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// AQL's numeric coercion (`TO_NUMBER`, unary plus, arithmetic operands). Never fails: values
/// without a numeric meaning become 0.
pub fn to_number(value: &Value) -> f64 {
    match value {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        Value::String(s) => parse_number(s).unwrap_or(0.0),
        Value::Array(items) if items.len() == 1 => to_number(&items[0]),
        Value::Array(_) | Value::Object(_) => 0.0,
    }
}

/// Parses a string as AQL does when it casts strings to numbers: surrounding whitespace is
/// allowed, the rest must be one complete number (decimal, optionally with exponent, or a
/// `0x` hexadecimal integer, the forms C's `strtod` accepts). Infinities and NaN are not
/// numbers in AQL. Returns None for anything else.
pub fn parse_number(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'));
    if t.is_empty() {
        return None;
    }
    let (neg, body) = match t.as_bytes()[0] {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let magnitude = if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        hex.bytes().fold(0.0f64, |acc, b| {
            acc * 16.0 + f64::from((b as char).to_digit(16).unwrap_or(0))
        })
    } else {
        if !is_decimal_literal(body) {
            return None;
        }
        body.parse::<f64>().ok()?
    };
    let v = if neg { -magnitude } else { magnitude };
    v.is_finite().then_some(v)
}

/// digits [. digits] [e [+-] digits], with at least one digit in the mantissa.
fn is_decimal_literal(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let mut mantissa_digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        mantissa_digits += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            mantissa_digits += 1;
        }
    }
    if mantissa_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    i == b.len()
}

/// AQL's string coercion (`TO_STRING`, string concatenation): null is "", numbers as ArangoDB
/// prints them, arrays and objects as compact JSON.
pub fn to_string(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Bool(b) => if *b { "true" } else { "false" }.to_string(),
        Value::Number(n) => format_number(n),
        Value::String(s) => s.clone(),
        Value::Array(_) | Value::Object(_) => to_json_string(value),
    }
}

/// Like [`to_string`] but borrows when the value already is a string.
pub fn to_str(value: &Value) -> std::borrow::Cow<'_, str> {
    match value {
        Value::String(s) => std::borrow::Cow::Borrowed(s.as_str()),
        other => std::borrow::Cow::Owned(to_string(other)),
    }
}

/// Largest integer magnitude that a double represents exactly.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_992.0;

/// Turns a computed double into an AQL value: NaN and infinities become null (AQL has no such
/// numbers). Integral results are stored as integers so that JSON output shows `2`, not `2.0` —
/// except where ArangoDB would print the double in exponent form (eight or more trailing zeros,
/// e.g. `1e+8`), which keeps `TO_STRING` identical to ArangoDB.
pub fn number(f: f64) -> Value {
    if !f.is_finite() {
        return Value::Null;
    }
    if f == f.trunc() && f.abs() < MAX_SAFE_INTEGER {
        // The cast is exact: |f| < 2^53.
        let i = f as i64;
        if i % 100_000_000 != 0 || i == 0 {
            return Value::from(i);
        }
    }
    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// An integer AQL value.
pub fn int(i: i64) -> Value {
    Value::from(i)
}

/// `value.name`: the attribute of an object, null for missing attributes and non-objects.
pub fn attribute<'a>(value: &'a Value, name: &str) -> &'a Value {
    match value {
        Value::Object(map) => map.get(name).unwrap_or(&NULL),
        _ => &NULL,
    }
}

/// `value[i]` for arrays: negative positions count from the end; out of range is null.
pub fn element(value: &Value, position: i64) -> &Value {
    match value {
        Value::Array(items) => {
            let len = items.len() as i64;
            let idx = if position < 0 {
                len + position
            } else {
                position
            };
            if (0..len).contains(&idx) {
                &items[idx as usize]
            } else {
                &NULL
            }
        }
        _ => &NULL,
    }
}

/// Dynamic access `value[key]`: objects are indexed by the key's string form, arrays by its
/// integer value (numeric strings included); everything else yields null.
pub fn access<'a>(value: &'a Value, key: &Value) -> &'a Value {
    match value {
        Value::Object(map) => match key {
            Value::String(s) => map.get(s.as_str()).unwrap_or(&NULL),
            Value::Number(_) | Value::Bool(_) => map.get(to_string(key).as_str()).unwrap_or(&NULL),
            _ => &NULL,
        },
        Value::Array(_) => {
            let position = match key {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => parse_number(s),
                _ => None,
            };
            match position {
                Some(p) if p.is_finite() => element(value, p.trunc() as i64),
                _ => &NULL,
            }
        }
        _ => &NULL,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_names() {
        assert_eq!(type_name(&json!(null)), "null");
        assert_eq!(type_name(&json!(false)), "bool");
        assert_eq!(type_name(&json!(-4.56)), "number");
        assert_eq!(type_name(&json!("")), "string");
        assert_eq!(type_name(&json!([])), "array");
        assert_eq!(type_name(&json!({"a": null})), "object");
    }

    #[test]
    fn bool_coercion_table() {
        let cases = [
            (json!(null), false),
            (json!(false), false),
            (json!(true), true),
            (json!(0), false),
            (json!(-0.0), false),
            (json!(0.1), true),
            (json!(-1), true),
            (json!(""), false),
            (json!(" "), true),
            (json!("0"), true),
            (json!([]), true),
            (json!({}), true),
        ];
        for (v, expected) in cases {
            assert_eq!(to_bool(&v), expected, "{v}");
        }
    }

    #[test]
    fn number_coercion_table() {
        let cases = [
            (json!(null), 0.0),
            (json!(false), 0.0),
            (json!(true), 1.0),
            (json!(-3.5), -3.5),
            (json!("12"), 12.0),
            (json!("  12 "), 12.0),
            (json!("\t-1.5e2\n"), -150.0),
            (json!(".5"), 0.5),
            (json!("5."), 5.0),
            (json!("+7"), 7.0),
            (json!("0x1A"), 26.0),
            (json!("abc"), 0.0),
            (json!("12abc"), 0.0),
            (json!(""), 0.0),
            (json!("1e"), 0.0),
            (json!("inf"), 0.0),
            (json!("NaN"), 0.0),
            (json!("1e999"), 0.0),
            (json!([]), 0.0),
            (json!([8]), 8.0),
            (json!(["8"]), 8.0),
            (json!([[true]]), 1.0),
            (json!([8, 9]), 0.0),
            (json!({}), 0.0),
            (json!({"a": 1}), 0.0),
        ];
        for (v, expected) in cases {
            assert_eq!(to_number(&v), expected, "{v}");
        }
    }

    #[test]
    fn string_coercion_table() {
        assert_eq!(to_string(&json!(null)), "");
        assert_eq!(to_string(&json!(true)), "true");
        assert_eq!(to_string(&json!(false)), "false");
        assert_eq!(to_string(&json!(123)), "123");
        assert_eq!(to_string(&json!(1.23)), "1.23");
        assert_eq!(to_string(&json!(-1.23)), "-1.23");
        assert_eq!(to_string(&json!(0.0000002)), "2e-7");
        assert_eq!(to_string(&json!([1, 2, 3])), "[1,2,3]");
        assert_eq!(
            to_string(&json!({"foo": "bar", "baz": null})),
            r#"{"foo":"bar","baz":null}"#
        );
        assert_eq!(to_str(&json!("x")), "x");
    }

    #[test]
    fn computed_numbers_are_normalized() {
        assert_eq!(number(2.0), json!(2));
        assert!(number(2.0).is_i64());
        assert_eq!(number(-0.0), json!(0));
        assert_eq!(number(0.5), json!(0.5));
        assert_eq!(number(f64::NAN), Value::Null);
        assert_eq!(number(f64::INFINITY), Value::Null);
        // ArangoDB prints 1e8 as a double in exponent form; keep it a double.
        assert!(number(1e8).is_f64());
        assert_eq!(to_string(&number(1e8)), "1e+8");
        assert_eq!(to_string(&number(123_456_789.0)), "123456789");
        assert!(number(1e300).is_f64());
    }

    #[test]
    fn accessors() {
        let doc = json!({"a": {"b": [10, 20, 30]}, "1": "one"});
        assert_eq!(attribute(&doc, "a")["b"], json!([10, 20, 30]));
        assert_eq!(attribute(&doc, "missing"), &Value::Null);
        assert_eq!(attribute(&json!([1]), "a"), &Value::Null);
        let arr = json!([10, 20, 30]);
        assert_eq!(element(&arr, 0), &json!(10));
        assert_eq!(element(&arr, -1), &json!(30));
        assert_eq!(element(&arr, -4), &Value::Null);
        assert_eq!(element(&arr, 3), &Value::Null);
        assert_eq!(element(&json!("abc"), 0), &Value::Null);
        assert_eq!(access(&arr, &json!(1)), &json!(20));
        assert_eq!(access(&arr, &json!("2")), &json!(30));
        assert_eq!(access(&arr, &json!(1.7)), &json!(20));
        assert_eq!(access(&arr, &json!("x")), &Value::Null);
        assert_eq!(access(&doc, &json!(1)), &json!("one"));
        assert_eq!(access(&doc, &json!(null)), &Value::Null);
    }

    #[test]
    fn warning_json() {
        let w = Warning::from_code(ErrorCode::QueryDivisionByZero);
        assert_eq!(
            w.to_json(),
            json!({"code": 1562, "message": "division by zero"})
        );
    }
}

/// Randomised checks that comparison is a total order consistent with equality and hashing;
/// SORT, COLLECT, DISTINCT and the set functions all rely on these laws.
#[cfg(test)]
mod laws {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use serde_json::json;
    use std::cmp::Ordering;
    use std::collections::hash_map::DefaultHasher;
    use std::hash::Hasher;

    fn random_value(rng: &mut StdRng, depth: u32) -> Value {
        let strings = [
            "", "a", "A", "b", "B", "ä", "Ä", "ab", "a b", "0", "_", "z", "é", "e",
        ];
        match rng.gen_range(0..if depth == 0 { 4 } else { 6 }) {
            0 => Value::Null,
            1 => Value::Bool(rng.gen()),
            2 => match rng.gen_range(0..3) {
                0 => json!(rng.gen_range(-3i64..3)),
                1 => json!(f64::from(rng.gen_range(-6i32..6)) / 2.0),
                _ => json!(rng.gen_range(-3i64..3) as f64),
            },
            3 => json!(strings[rng.gen_range(0..strings.len())]),
            4 => Value::Array(
                (0..rng.gen_range(0..3))
                    .map(|_| random_value(rng, depth - 1))
                    .collect(),
            ),
            _ => {
                let keys = ["a", "b", "_c"];
                let mut map = serde_json::Map::new();
                for _ in 0..rng.gen_range(0..3) {
                    map.insert(
                        keys[rng.gen_range(0..keys.len())].to_string(),
                        random_value(rng, depth - 1),
                    );
                }
                Value::Object(map)
            }
        }
    }

    fn hash_of(v: &Value) -> u64 {
        let mut h = DefaultHasher::new();
        hash_value(v, &mut h);
        h.finish()
    }

    #[test]
    fn compare_is_a_total_order_consistent_with_hashing() {
        let mut rng = StdRng::seed_from_u64(0x5eed);
        let values: Vec<Value> = (0..120).map(|_| random_value(&mut rng, 2)).collect();
        for a in &values {
            assert_eq!(compare(a, a), Ordering::Equal, "{a}");
            for b in &values {
                let ab = compare(a, b);
                assert_eq!(ab, compare(b, a).reverse(), "{a} vs {b}");
                assert_eq!(equals(a, b), ab == Ordering::Equal, "{a} vs {b}");
                if ab == Ordering::Equal {
                    assert_eq!(hash_of(a), hash_of(b), "{a} vs {b}");
                }
                for c in values.iter().step_by(7) {
                    if ab != Ordering::Greater && compare(b, c) != Ordering::Greater {
                        assert_ne!(compare(a, c), Ordering::Greater, "{a} <= {b} <= {c}");
                    }
                }
            }
        }
        // Sorting with the comparator must therefore never panic or disagree with itself.
        let mut sorted = values.clone();
        sorted.sort_by(compare);
        assert!(sorted
            .windows(2)
            .all(|w| compare(&w[0], &w[1]) != Ordering::Greater));
    }

    #[test]
    fn coercions_never_panic_and_round_trip_numbers() {
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..500 {
            let v = random_value(&mut rng, 3);
            let _ = (to_bool(&v), to_number(&v), to_string(&v), type_name(&v));
            let text = to_json_string(&v);
            let back: Value = serde_json::from_str(&text).expect("own JSON parses");
            assert!(equals(&back, &v), "{text}");
        }
        for _ in 0..2000 {
            let f: f64 = rng.gen::<f64>() * 10f64.powi(rng.gen_range(-30..30));
            let f = if rng.gen() { -f } else { f };
            let text = format_f64(f);
            assert_eq!(text.parse::<f64>().ok(), Some(f), "{text}");
        }
    }
}
