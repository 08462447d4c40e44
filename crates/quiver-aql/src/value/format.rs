//! Number and JSON text exactly as ArangoDB prints them.
//!
//! ArangoDB prints doubles with the shortest round-trip digits and its own choice between plain
//! and exponent notation (velocypack's `fpconv_dtoa`): plain integers unless there are eight or
//! more trailing zeros, plain decimals for exponents down to -7 (or short mantissas), otherwise
//! `d.ddde±x`. Integers print as integers. Reproducing this matters because `TO_STRING`,
//! string concatenation and `CONCAT` results are visible to clients.

use serde_json::{Number, Value};
use std::fmt::Write as _;

/// A JSON number in ArangoDB's notation.
pub fn format_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    format_f64(n.as_f64().unwrap_or(0.0))
}

/// A double in ArangoDB's notation (see the module comment). NaN/infinity never reach here in
/// AQL (they become null) but are printed like ArangoDB does for completeness.
pub fn format_f64(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    let mut out = String::with_capacity(24);
    if f.is_sign_negative() {
        out.push('-');
    }
    let a = f.abs();
    if a.is_infinite() {
        out.push_str("inf");
        return out;
    }
    if a == 0.0 {
        out.push('0');
        return out;
    }
    // Shortest round-trip digits from the standard library: "d.ddde<exp>".
    let sci = format!("{a:e}");
    let (mantissa, exp_text) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let point_exp: i32 = exp_text.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let digits = digits.as_bytes();
    let ndigits = digits.len() as i32;
    // value = digits * 10^k
    let k = point_exp - (ndigits - 1);
    let exp = (k + ndigits - 1).abs();

    if k >= 0 && exp < ndigits + 7 {
        push_ascii(&mut out, digits);
        for _ in 0..k {
            out.push('0');
        }
        return out;
    }
    if k < 0 && (k > -7 || exp < 4) {
        let offset = ndigits - k.abs();
        if offset <= 0 {
            out.push_str("0.");
            for _ in 0..-offset {
                out.push('0');
            }
            push_ascii(&mut out, digits);
        } else {
            let offset = offset as usize;
            push_ascii(&mut out, &digits[..offset]);
            out.push('.');
            push_ascii(&mut out, &digits[offset..]);
        }
        return out;
    }
    out.push(digits[0] as char);
    if digits.len() > 1 {
        out.push('.');
        push_ascii(&mut out, &digits[1..]);
    }
    out.push('e');
    out.push(if k + ndigits - 1 < 0 { '-' } else { '+' });
    let _ = write!(out, "{exp}");
    out
}

fn push_ascii(out: &mut String, bytes: &[u8]) {
    for &b in bytes {
        out.push(b as char);
    }
}

/// Compact JSON text of a value with ArangoDB's number notation and without escaping `/` or
/// non-ASCII characters.
pub fn to_json_string(value: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, value);
    out
}

/// Appends the compact JSON text of `value` to `out`.
pub fn write_json(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&format_number(n)),
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                write_json(out, v);
            }
            out.push('}');
        }
    }
}

fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn doubles_like_arangodb() {
        let cases = [
            (1.0, "1"),
            (1.5, "1.5"),
            (-1.23, "-1.23"),
            (0.1, "0.1"),
            (0.30000000000000004, "0.30000000000000004"),
            (1.0 / 3.0, "0.3333333333333333"),
            (0.0000002, "2e-7"),
            (0.000002, "0.000002"),
            (0.0001234, "1.234e-4"),
            (0.001234, "0.001234"),
            (1.234e-7, "1.234e-7"),
            (12345678.0, "12345678"),
            (10000000.0, "10000000"),
            (100000000.0, "1e+8"),
            (1.5e9, "1.5e+9"),
            (123456789012.0, "123456789012"),
            (1e21, "1e+21"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (-0.0, "-0"),
            (0.0, "0"),
            (2.71, "2.71"),
            (123.456e-10, "1.23456e-8"),
        ];
        for (f, expected) in cases {
            assert_eq!(format_f64(f), expected, "{f:e}");
        }
    }

    #[test]
    fn integers_print_plainly() {
        assert_eq!(format_number(&Number::from(100000000i64)), "100000000");
        assert_eq!(
            format_number(&Number::from(u64::MAX)),
            "18446744073709551615"
        );
        assert_eq!(format_number(&Number::from(-5i64)), "-5");
    }

    #[test]
    fn json_text() {
        let v = json!({"a": [1, 2.5, null, true], "b/c": "x\"y\\z\n\u{1}é"});
        assert_eq!(
            to_json_string(&v),
            "{\"a\":[1,2.5,null,true],\"b/c\":\"x\\\"y\\\\z\\n\\u0001é\"}"
        );
        assert_eq!(to_json_string(&json!([])), "[]");
        assert_eq!(to_json_string(&json!({})), "{}");
    }
}
