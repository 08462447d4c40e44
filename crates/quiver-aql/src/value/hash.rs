//! Hashing consistent with [`equals`](super::equals), for `RETURN DISTINCT`, `COLLECT`,
//! `UNIQUE`, `INTERSECTION` and friends.
//!
//! Equal values must hash equally: numbers hash by their double value (1 and 1.0 are equal),
//! arrays ignore trailing nulls (`[1]` equals `[1, null]`), and objects ignore null attributes
//! and key order (`{a: 1}` equals `{a: 1, b: null}`).

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::Value;

use super::equals;

/// Feeds `value` into `state` so that `equals(a, b)` implies equal hashes.
pub fn hash_value<H: Hasher>(value: &Value, state: &mut H) {
    match value {
        Value::Null => state.write_u8(0),
        Value::Bool(b) => {
            state.write_u8(1);
            b.hash(state);
        }
        Value::Number(n) => {
            state.write_u8(2);
            let f = n.as_f64().unwrap_or(0.0);
            // -0.0 == 0.0
            let f = if f == 0.0 { 0.0 } else { f };
            state.write_u64(f.to_bits());
        }
        Value::String(s) => {
            state.write_u8(3);
            s.hash(state);
        }
        Value::Array(items) => {
            state.write_u8(4);
            let len = items
                .iter()
                .rposition(|v| !v.is_null())
                .map_or(0, |p| p + 1);
            state.write_usize(len);
            for item in &items[..len] {
                hash_value(item, state);
            }
        }
        Value::Object(map) => {
            state.write_u8(5);
            // Order-independent: combine per-attribute hashes commutatively.
            let mut acc: u64 = 0;
            let mut count: u64 = 0;
            for (k, v) in map {
                if v.is_null() {
                    continue;
                }
                let mut h = DefaultHasher::new();
                k.hash(&mut h);
                hash_value(v, &mut h);
                acc = acc.wrapping_add(h.finish());
                count += 1;
            }
            state.write_u64(acc);
            state.write_u64(count);
        }
    }
}

/// A value usable as a `HashMap`/`HashSet` key with AQL equality.
#[derive(Clone, Debug)]
pub struct ValueKey(pub Value);

impl PartialEq for ValueKey {
    fn eq(&self, other: &Self) -> bool {
        equals(&self.0, &other.0)
    }
}

impl Eq for ValueKey {}

impl Hash for ValueKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_value(&self.0, state);
    }
}

/// A borrowed value usable as a `HashMap`/`HashSet` key with AQL equality, so that set
/// operations over arrays need not clone their elements.
#[derive(Clone, Copy, Debug)]
pub struct ValueRef<'a>(pub &'a Value);

impl PartialEq for ValueRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        equals(self.0, other.0)
    }
}

impl Eq for ValueRef<'_> {}

impl Hash for ValueRef<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_value(self.0, state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashSet;

    fn h(v: &Value) -> u64 {
        let mut s = DefaultHasher::new();
        hash_value(v, &mut s);
        s.finish()
    }

    #[test]
    fn equal_values_hash_equally() {
        let pairs = [
            (json!(1), json!(1.0)),
            (json!(0), json!(-0.0)),
            (json!([1]), json!([1, null])),
            (json!({"a": 1, "b": 2}), json!({"b": 2, "a": 1})),
            (json!({"a": 1}), json!({"a": 1, "b": null})),
            (json!([{"x": [2.0]}]), json!([{"x": [2]}])),
        ];
        for (a, b) in pairs {
            assert!(equals(&a, &b), "{a} == {b}");
            assert_eq!(h(&a), h(&b), "{a} vs {b}");
        }
    }

    #[test]
    fn distinct_values_usually_differ() {
        assert_ne!(h(&json!(1)), h(&json!("1")));
        assert_ne!(h(&json!(null)), h(&json!(false)));
        assert_ne!(h(&json!([1, 2])), h(&json!([2, 1])));
        assert_ne!(h(&json!({"a": 1})), h(&json!({"a": 2})));
    }

    #[test]
    fn borrowed_keys_agree_with_owned_ones() {
        let values = [
            json!(1),
            json!(1.0),
            json!({"a": [1]}),
            json!({"a": [1.0, null]}),
        ];
        let set: HashSet<ValueRef<'_>> = values.iter().map(ValueRef).collect();
        assert_eq!(set.len(), 2);
        assert!(set.contains(&ValueRef(&json!(1))));
    }

    #[test]
    fn works_as_set_key() {
        let set: HashSet<ValueKey> = [
            json!(1),
            json!(1.0),
            json!("1"),
            json!([1, null]),
            json!([1]),
        ]
        .into_iter()
        .map(ValueKey)
        .collect();
        assert_eq!(set.len(), 3);
    }
}
