//! AQL's total order over values.
//!
//! Types order as null < bool < number < string < array < object. Arrays compare element by
//! element, a missing element counting as null. Objects compare over the sorted union of both
//! key sets, a missing attribute counting as null. Strings compare with a localized collation
//! (ArangoDB uses ICU with the server language); see [`compare_strings`].

use std::cmp::Ordering;

use serde_json::{Map, Number, Value};
use unicode_normalization::char::{decompose_canonical, is_combining_mark};

static NULL: Value = Value::Null;

/// The rank of a value's type in AQL's type order.
pub fn type_weight(value: &Value) -> u8 {
    match value {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    }
}

/// AQL comparison (used by `==`, `<`, `SORT`, `MIN`, `SORTED`, ...).
pub fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Null, Value::Null) => Ordering::Equal,
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        (Value::String(x), Value::String(y)) => compare_strings(x, y),
        (Value::Array(x), Value::Array(y)) => {
            let n = x.len().max(y.len());
            for i in 0..n {
                let l = x.get(i).unwrap_or(&NULL);
                let r = y.get(i).unwrap_or(&NULL);
                let c = compare(l, r);
                if c != Ordering::Equal {
                    return c;
                }
            }
            Ordering::Equal
        }
        (Value::Object(x), Value::Object(y)) => compare_objects(x, y),
        _ => type_weight(a).cmp(&type_weight(b)),
    }
}

/// AQL equality (`==`, `IN`, `POSITION`, ...): `compare(a, b) == Equal`.
pub fn equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        // Fast paths that cannot disagree with `compare`.
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Ordering::Equal,
        _ => compare(a, b) == Ordering::Equal,
    }
}

fn compare_numbers(x: &Number, y: &Number) -> Ordering {
    if let (Some(a), Some(b)) = (x.as_i64(), y.as_i64()) {
        return a.cmp(&b);
    }
    if let (Some(a), Some(b)) = (x.as_u64(), y.as_u64()) {
        return a.cmp(&b);
    }
    let a = x.as_f64().unwrap_or(0.0);
    let b = y.as_f64().unwrap_or(0.0);
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

fn compare_objects(x: &Map<String, Value>, y: &Map<String, Value>) -> Ordering {
    // The union of keys in collation order; missing attributes read as null.
    let mut keys: Vec<&str> = x.keys().map(String::as_str).collect();
    for k in y.keys() {
        if !x.contains_key(k) {
            keys.push(k.as_str());
        }
    }
    keys.sort_unstable_by(|a, b| compare_strings(a, b));
    for k in keys {
        let l = x.get(k).unwrap_or(&NULL);
        let r = y.get(k).unwrap_or(&NULL);
        let c = compare(l, r);
        if c != Ordering::Equal {
            return c;
        }
    }
    Ordering::Equal
}

/// Collation weights of one character: (primary, secondary, tertiary).
///
/// ArangoDB compares strings with ICU's collator for the server language (default English /
/// root). Linking ICU is heavy, so this approximates the root collation's three levels for
/// the common cases: primary = base letter ignoring case and accents, with whitespace <
/// punctuation and symbols < digits < letters; secondary = accents; tertiary = case, upper
/// case first (ArangoDB sets ICU's `UCOL_CASE_FIRST` to `UCOL_UPPER_FIRST`). Equal strings at all three levels fall back to binary order so that the order
/// stays total and `equals` means byte equality.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Weights {
    primary: u32,
    secondary: u32,
    tertiary: u8,
}

fn weights(c: char) -> Weights {
    if c.is_ascii() {
        let b = c as u8;
        let (primary, tertiary) = if b.is_ascii_lowercase() {
            (0x40_0000 + u32::from(b), 1)
        } else if b.is_ascii_uppercase() {
            (0x40_0000 + u32::from(b.to_ascii_lowercase()), 0)
        } else if b.is_ascii_digit() {
            (0x30_0000 + u32::from(b), 0)
        } else if matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ') {
            (0x10_0000 + u32::from(b), 0)
        } else if b < 0x20 || b == 0x7f {
            // Other control characters are completely ignorable in ICU.
            (0, 0)
        } else {
            // ASCII punctuation and symbols in the root collation's order.
            const ORDER: &[u8] = b"_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";
            let rank = ORDER.iter().position(|&p| p == b).unwrap_or(ORDER.len());
            (0x20_0000 + rank as u32, 0)
        };
        return Weights {
            primary,
            secondary: 0,
            tertiary,
        };
    }
    if is_combining_mark(c) {
        // Ignorable at the primary level, an accent at the secondary level.
        return Weights {
            primary: 0,
            secondary: c as u32,
            tertiary: 0,
        };
    }
    let mut base = None;
    let mut accent = 0u32;
    decompose_canonical(c, |d| {
        if base.is_none() {
            base = Some(d);
        } else if accent == 0 {
            accent = d as u32;
        }
    });
    let base = base.unwrap_or(c);
    let lower = base.to_lowercase().next().unwrap_or(base);
    // ArangoDB configures ICU with upper case first ("A" < "a").
    let tertiary = u8::from(lower == base);
    let primary = if lower.is_alphabetic() {
        0x40_0000 + lower as u32
    } else if lower.is_numeric() {
        0x30_0000 + lower as u32
    } else if lower.is_whitespace() {
        0x10_0000 + lower as u32
    } else {
        0x20_0000 + lower as u32
    };
    Weights {
        primary,
        secondary: accent,
        tertiary,
    }
}

/// Localized string comparison (see [`Weights`] for the approximation of ICU's root
/// collation): the order is "A" < "a" < "B" < "b", not byte order.
pub fn compare_strings(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    // Pure ASCII strings without letters order the same under the approximation as bytewise
    // except for the punctuation/digit grouping, so no fast path skips the levels.
    let primary = a
        .chars()
        .map(weights)
        .filter(|w| w.primary != 0)
        .map(|w| w.primary)
        .cmp(
            b.chars()
                .map(weights)
                .filter(|w| w.primary != 0)
                .map(|w| w.primary),
        );
    if primary != Ordering::Equal {
        return primary;
    }
    // Completely ignorable characters (control characters) take part only in the final
    // binary comparison.
    let significant = |w: &Weights| w.primary != 0 || w.secondary != 0;
    let secondary = a
        .chars()
        .map(weights)
        .filter(significant)
        .map(|w| w.secondary)
        .cmp(
            b.chars()
                .map(weights)
                .filter(significant)
                .map(|w| w.secondary),
        );
    if secondary != Ordering::Equal {
        return secondary;
    }
    let tertiary = a
        .chars()
        .map(weights)
        .filter(significant)
        .map(|w| w.tertiary)
        .cmp(
            b.chars()
                .map(weights)
                .filter(significant)
                .map(|w| w.tertiary),
        );
    if tertiary != Ordering::Equal {
        return tertiary;
    }
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lt(a: Value, b: Value) {
        assert_eq!(compare(&a, &b), Ordering::Less, "{a} < {b}");
        assert_eq!(compare(&b, &a), Ordering::Greater, "{b} > {a}");
        assert!(!equals(&a, &b));
    }

    #[test]
    fn documented_type_order() {
        let ordered = [
            json!(null),
            json!(false),
            json!(true),
            json!(-1e300),
            json!(0),
            json!(1.5),
            json!(""),
            json!(" "),
            json!("0"),
            json!("abc"),
            json!([]),
            json!([0]),
            json!({}),
        ];
        for i in 0..ordered.len() {
            for j in i + 1..ordered.len() {
                lt(ordered[i].clone(), ordered[j].clone());
            }
        }
    }

    #[test]
    fn documented_array_order() {
        lt(json!([]), json!([0]));
        lt(json!([1]), json!([2]));
        lt(json!([1, 2]), json!([2]));
        lt(json!([99, 99]), json!([100]));
        lt(json!([false]), json!([true]));
        lt(json!([false, 1]), json!([false, ""]));
        // A missing element counts as null.
        assert_eq!(compare(&json!([1]), &json!([1, null])), Ordering::Equal);
    }

    #[test]
    fn documented_object_order() {
        lt(json!({}), json!({"a": 1}));
        lt(json!({"a": 1}), json!({"a": 2}));
        lt(json!({"a": 1}), json!({"a": 1, "b": 0}));
        lt(json!({"b": 1}), json!({"a": 1}));
        // Declaration order is irrelevant; a missing attribute reads as null.
        assert!(equals(&json!({"a": 1, "b": 2}), &json!({"b": 2, "a": 1})));
        assert!(equals(&json!({"a": 1}), &json!({"a": 1, "b": null})));
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(equals(&json!(1), &json!(1.0)));
        lt(json!(-5), json!(3u64));
        lt(json!(i64::MAX), json!(u64::MAX));
        lt(json!(0.1), json!(0.2));
        lt(json!(-0.5), json!(0));
    }

    #[test]
    fn strings_use_a_localized_order() {
        lt(json!("A"), json!("a"));
        lt(json!("a"), json!("B"));
        lt(json!("B"), json!("b"));
        lt(json!("Ä"), json!("ä"));
        lt(json!("abc"), json!("abd"));
        lt(json!("ab"), json!("abc"));
        lt(json!("a"), json!("ä"));
        lt(json!("ä"), json!("b"));
        lt(json!(" "), json!("!"));
        lt(json!("_"), json!("0"));
        lt(json!("_"), json!("-"));
        lt(json!("-"), json!(","));
        lt(json!("."), json!("'"));
        lt(json!("@"), json!("&"));
        lt(json!("~"), json!("$"));
        lt(json!("$"), json!("0"));
        assert_eq!(compare_strings("a\u{1}b", "ab"), Ordering::Less);
        lt(json!("9"), json!("a"));
        lt(json!("z"), json!("α"));
        assert!(equals(&json!("é"), &json!("é")));
        let mut words = vec!["b", "B", "a", "A", "c", "ab"];
        words.sort_by(|x, y| compare_strings(x, y));
        assert_eq!(words, ["A", "a", "ab", "B", "b", "c"]);
    }
}
