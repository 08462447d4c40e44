//! Array functions. A non-array where an array is required gives `null` plus warning 1542;
//! `null` is accepted as an empty array by the functions that build arrays (PUSH, APPEND,
//! UNSHIFT). Set operations use AQL equality (see [`crate::value::ValueRef`]) and keep the
//! order of first occurrence.

use std::collections::{HashMap, HashSet};

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use super::string::int_arg;
use super::{arg, def, FunctionContext, FunctionDef, VARIADIC};
use crate::value::{self, compare, equals, ValueRef};

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    def("APPEND", 2, 3, append),
    def("CONTAINS_ARRAY", 2, 3, position),
    def("COUNT_DISTINCT", 1, 1, count_distinct),
    def("COUNT_UNIQUE", 1, 1, count_distinct),
    def("FIRST", 1, 1, first),
    def("FLATTEN", 1, 2, flatten),
    def("INTERLEAVE", 2, VARIADIC, interleave),
    def("INTERSECTION", 2, VARIADIC, intersection),
    def("JACCARD", 2, 2, jaccard),
    def("LAST", 1, 1, last),
    def("MINUS", 2, VARIADIC, minus),
    def("NTH", 2, 2, nth),
    def("OUTERSECTION", 2, VARIADIC, outersection),
    def("POP", 1, 1, pop),
    def("POSITION", 2, 3, position),
    def("PUSH", 2, 3, push),
    def("REMOVE_NTH", 2, 2, remove_nth),
    def("REPLACE_NTH", 3, 4, replace_nth),
    def("REMOVE_VALUE", 2, 3, remove_value),
    def("REMOVE_VALUES", 2, 2, remove_values),
    def("SHIFT", 1, 1, shift),
    def("SLICE", 2, 3, slice),
    def("SORTED", 1, 1, sorted),
    def("SORTED_UNIQUE", 1, 1, sorted_unique),
    def("UNION", 2, VARIADIC, union),
    def("UNION_DISTINCT", 2, VARIADIC, union_distinct),
    def("UNIQUE", 1, 1, unique),
    def("UNSHIFT", 2, 3, unshift),
];

/// Elements without duplicates, first occurrence kept.
pub(crate) fn dedup<'a>(items: impl IntoIterator<Item = &'a Value>) -> Vec<Value> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for v in items {
        if seen.insert(ValueRef(v)) {
            out.push(v.clone());
        }
    }
    out
}

/// All arguments as arrays, or None (after warning) if one is not.
fn all_arrays<'a>(
    ctx: &mut FunctionContext<'_>,
    args: &'a [Value],
    array_expected: bool,
) -> Option<Vec<&'a [Value]>> {
    let mut out = Vec::with_capacity(args.len());
    for a in args {
        match a {
            Value::Array(items) => out.push(items.as_slice()),
            _ => {
                if array_expected {
                    ctx.array_expected();
                } else {
                    ctx.invalid_argument();
                }
                return None;
            }
        }
    }
    Some(out)
}

/// The array argument, or return `null` with warning 1542 (`invalid`) or 1563 (`expected`),
/// whichever ArangoDB registers for the function at hand.
macro_rules! array_or_warn {
    ($ctx:ident, $v:expr) => {
        array_or_warn!($ctx, $v, invalid)
    };
    ($ctx:ident, $v:expr, invalid) => {
        match $v {
            Value::Array(items) => items,
            _ => return Ok($ctx.invalid_argument()),
        }
    };
    ($ctx:ident, $v:expr, expected) => {
        match $v {
            Value::Array(items) => items,
            _ => return Ok($ctx.array_expected()),
        }
    };
}

fn append(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let (list, to_append) = (arg(args, 0), arg(args, 1));
    // ArangoDB hands back the other operand unchanged when one side is empty.
    if to_append.is_null() || to_append.as_array().is_some_and(Vec::is_empty) {
        return Ok(list.clone());
    }
    let base = match list {
        Value::Null => return Ok(to_append.clone()),
        Value::Array(items) => items,
        _ => return Ok(ctx.invalid_argument()),
    };
    let added: &[Value] = match to_append {
        Value::Array(items) => items,
        other => std::slice::from_ref(other),
    };
    if value::to_bool(arg(args, 2)) {
        Ok(Value::Array(dedup(base.iter().chain(added.iter()))))
    } else {
        let mut out = base.clone();
        out.extend(added.iter().cloned());
        Ok(Value::Array(out))
    }
}

fn count_distinct(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let items = array_or_warn!(ctx, arg(args, 0), expected);
    let distinct: HashSet<ValueRef<'_>> = items.iter().map(ValueRef).collect();
    Ok(Value::from(distinct.len()))
}

fn first(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let items = array_or_warn!(ctx, arg(args, 0), expected);
    Ok(items.first().cloned().unwrap_or(Value::Null))
}

fn last(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let items = array_or_warn!(ctx, arg(args, 0), expected);
    Ok(items.last().cloned().unwrap_or(Value::Null))
}

fn flatten_into(out: &mut Vec<Value>, items: &[Value], depth: i64) {
    for item in items {
        match item {
            Value::Array(inner) if depth > 0 => flatten_into(out, inner, depth - 1),
            other => out.push(other.clone()),
        }
    }
}

fn flatten(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let items = array_or_warn!(ctx, arg(args, 0), expected);
    let depth = if arg(args, 1).is_null() {
        1
    } else {
        // Nesting of JSON values is bounded by the parser; cap anyway.
        let d = value::to_number(arg(args, 1));
        if d.is_nan() || d < 1.0 {
            1
        } else {
            d.min(1000.0) as i64
        }
    };
    let mut out = Vec::with_capacity(items.len());
    flatten_into(&mut out, items, depth);
    Ok(Value::Array(out))
}

fn interleave(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(arrays) = all_arrays(ctx, args, true) else {
        return Ok(Value::Null);
    };
    let longest = arrays.iter().map(|a| a.len()).max().unwrap_or(0);
    let mut out = Vec::with_capacity(arrays.iter().map(|a| a.len()).sum());
    for i in 0..longest {
        for a in &arrays {
            if let Some(v) = a.get(i) {
                out.push(v.clone());
            }
        }
    }
    Ok(Value::Array(out))
}

fn intersection(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(arrays) = all_arrays(ctx, args, true) else {
        return Ok(Value::Null);
    };
    let mut result = dedup(arrays[0].iter());
    for other in &arrays[1..] {
        let set: HashSet<ValueRef<'_>> = other.iter().map(ValueRef).collect();
        result.retain(|v| set.contains(&ValueRef(v)));
    }
    Ok(Value::Array(result))
}

fn jaccard(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(arrays) = all_arrays(ctx, args, false) else {
        return Ok(Value::Null);
    };
    let a: HashSet<ValueRef<'_>> = arrays[0].iter().map(ValueRef).collect();
    let b: HashSet<ValueRef<'_>> = arrays[1].iter().map(ValueRef).collect();
    let union = a.union(&b).count();
    if union == 0 {
        return Ok(Value::from(1));
    }
    let inter = a.intersection(&b).count();
    Ok(value::number(inter as f64 / union as f64))
}

fn minus(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(arrays) = all_arrays(ctx, args, false) else {
        return Ok(Value::Null);
    };
    let remove: HashSet<ValueRef<'_>> = arrays[1..]
        .iter()
        .flat_map(|a| a.iter().map(ValueRef))
        .collect();
    let mut result = dedup(arrays[0].iter());
    result.retain(|v| !remove.contains(&ValueRef(v)));
    Ok(Value::Array(result))
}

fn outersection(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(arrays) = all_arrays(ctx, args, true) else {
        return Ok(Value::Null);
    };
    let mut counts: HashMap<ValueRef<'_>, usize> = HashMap::new();
    let mut order = Vec::new();
    for v in arrays.iter().flat_map(|a| a.iter()) {
        let key = ValueRef(v);
        let c = counts.entry(key).or_insert(0);
        if *c == 0 {
            order.push(v);
        }
        *c += 1;
    }
    Ok(Value::Array(
        order
            .into_iter()
            .filter(|v| counts.get(&ValueRef(v)) == Some(&1))
            .cloned()
            .collect(),
    ))
}

fn nth(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let items = array_or_warn!(ctx, arg(args, 0), expected);
    let pos = int_arg(args, 1);
    if pos < 0 {
        return Ok(Value::Null);
    }
    Ok(items.get(pos as usize).cloned().unwrap_or(Value::Null))
}

fn pop(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    if arg(args, 0).is_null() {
        return Ok(Value::Null);
    }
    let items = array_or_warn!(ctx, arg(args, 0));
    Ok(Value::Array(
        items[..items.len().saturating_sub(1)].to_vec(),
    ))
}

fn shift(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    if arg(args, 0).is_null() {
        return Ok(Value::Null);
    }
    let items = array_or_warn!(ctx, arg(args, 0));
    Ok(Value::Array(items.iter().skip(1).cloned().collect()))
}

fn position(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let items = array_or_warn!(ctx, arg(args, 0), expected);
    let needle = arg(args, 1);
    let found = items.iter().position(|v| equals(v, needle));
    if value::to_bool(arg(args, 2)) {
        Ok(Value::from(found.map_or(-1, |p| p as i64)))
    } else {
        Ok(Value::Bool(found.is_some()))
    }
}

fn push(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let mut out = match arg(args, 0) {
        Value::Null => Vec::new(),
        Value::Array(items) => items.clone(),
        _ => return Ok(ctx.invalid_argument()),
    };
    let v = arg(args, 1);
    if !(value::to_bool(arg(args, 2)) && out.iter().any(|x| equals(x, v))) {
        out.push(v.clone());
    }
    Ok(Value::Array(out))
}

fn unshift(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let items: &[Value] = match arg(args, 0) {
        Value::Null => &[],
        Value::Array(items) => items,
        _ => return Ok(ctx.invalid_argument()),
    };
    let v = arg(args, 1);
    if value::to_bool(arg(args, 2)) && items.iter().any(|x| equals(x, v)) {
        return Ok(Value::Array(items.to_vec()));
    }
    let mut out = Vec::with_capacity(items.len() + 1);
    out.push(v.clone());
    out.extend(items.iter().cloned());
    Ok(Value::Array(out))
}

fn remove_nth(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    if arg(args, 0).is_null() {
        return Ok(Value::Array(Vec::new()));
    }
    let items = array_or_warn!(ctx, arg(args, 0));
    let count = items.len() as f64;
    let mut p = value::to_number(arg(args, 1));
    if p >= count || p < -count {
        return Ok(Value::Array(items.clone()));
    }
    if p < 0.0 {
        p += count;
    }
    let target = p as usize;
    Ok(Value::Array(
        items
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != target)
            .map(|(_, v)| v.clone())
            .collect(),
    ))
}

/// Elements REPLACE_NTH may pad with; beyond that the request is refused.
const MAX_PADDING: i64 = 1_000_000;

fn replace_nth(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let items = array_or_warn!(ctx, arg(args, 0));
    if arg(args, 1).is_null() {
        return Err(Error::with_message(
            ErrorCode::QueryFunctionArgumentTypeMismatch,
            "invalid argument type in call to function 'REPLACE_NTH()'",
        ));
    }
    let len = items.len() as i64;
    let mut pos = int_arg(args, 1);
    if pos < 0 {
        pos = (pos + len).max(0);
    }
    let replacement = arg(args, 2).clone();
    let mut out = items.to_vec();
    if pos < len {
        out[pos as usize] = replacement;
    } else {
        if pos > len && args.len() < 4 {
            return Err(Error::with_message(
                ErrorCode::QueryFunctionArgumentTypeMismatch,
                "invalid argument type in call to function 'REPLACE_NTH()'",
            ));
        }
        if pos - len > MAX_PADDING {
            return Err(Error::with_message(
                ErrorCode::ResourceLimit,
                "REPLACE_NTH() position too far beyond the end of the array",
            ));
        }
        let padding = arg(args, 3);
        while (out.len() as i64) < pos {
            out.push(padding.clone());
        }
        out.push(replacement);
    }
    Ok(Value::Array(out))
}

fn remove_value(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    if arg(args, 0).is_null() {
        return Ok(Value::Array(Vec::new()));
    }
    let items = array_or_warn!(ctx, arg(args, 0));
    let needle = arg(args, 1);
    // Without a limit everything matching goes; a negative limit never reaches zero and so
    // also removes everything, as in ArangoDB.
    let mut limit = if arg(args, 2).is_null() {
        None
    } else {
        Some(int_arg(args, 2))
    };
    let mut out = Vec::with_capacity(items.len());
    for v in items {
        if limit == Some(0) {
            out.push(v.clone());
        } else if equals(v, needle) {
            limit = limit.map(|l| l.saturating_sub(1));
        } else {
            out.push(v.clone());
        }
    }
    Ok(Value::Array(out))
}

fn remove_values(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let (list, values) = (arg(args, 0), arg(args, 1));
    if values.is_null() {
        return Ok(list.clone());
    }
    if list.is_null() {
        return Ok(Value::Array(Vec::new()));
    }
    let (Value::Array(items), Value::Array(remove)) = (list, values) else {
        return Ok(ctx.invalid_argument());
    };
    let remove: HashSet<ValueRef<'_>> = remove.iter().map(ValueRef).collect();
    Ok(Value::Array(
        items
            .iter()
            .filter(|v| !remove.contains(&ValueRef(v)))
            .cloned()
            .collect(),
    ))
}

fn slice(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let items = array_or_warn!(ctx, arg(args, 0));
    let len = items.len() as i64;
    let mut start = int_arg(args, 1);
    if start < 0 {
        start = (start + len).max(0);
    }
    let start = start.min(len);
    let end = if arg(args, 2).is_null() {
        len
    } else {
        let l = int_arg(args, 2);
        if l < 0 {
            (len + l).max(start)
        } else {
            start.saturating_add(l).min(len)
        }
    };
    Ok(Value::Array(
        items[start as usize..end.max(start) as usize].to_vec(),
    ))
}

fn sorted(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let items = array_or_warn!(ctx, arg(args, 0), expected);
    let mut out = items.clone();
    out.sort_by(compare);
    Ok(Value::Array(out))
}

fn sorted_unique(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let items = array_or_warn!(ctx, arg(args, 0), expected);
    let mut out = items.clone();
    out.sort_by(compare);
    out.dedup_by(|a, b| equals(a, b));
    Ok(Value::Array(out))
}

fn union(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(arrays) = all_arrays(ctx, args, false) else {
        return Ok(Value::Null);
    };
    Ok(Value::Array(
        arrays.iter().flat_map(|a| a.iter()).cloned().collect(),
    ))
}

fn union_distinct(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(arrays) = all_arrays(ctx, args, false) else {
        return Ok(Value::Null);
    };
    Ok(Value::Array(dedup(arrays.iter().flat_map(|a| a.iter()))))
}

fn unique(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let items = array_or_warn!(ctx, arg(args, 0), expected);
    Ok(Value::Array(dedup(items.iter())))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, invalid, ok, warns};
    use serde_json::json;

    #[test]
    fn building() {
        assert_eq!(
            ok("APPEND", vec![json!([1, 2, 3]), json!([5, 6, 9])]),
            json!([1, 2, 3, 5, 6, 9])
        );
        assert_eq!(
            ok(
                "APPEND",
                vec![json!([1, 2, 3]), json!([3, 4, 5, 2, 9]), json!(true)]
            ),
            json!([1, 2, 3, 4, 5, 9])
        );
        assert_eq!(ok("APPEND", vec![json!([1]), json!(2)]), json!([1, 2]));
        assert_eq!(ok("APPEND", vec![json!(null), json!([2])]), json!([2]));
        assert_eq!(ok("APPEND", vec![json!([1]), json!(null)]), json!([1]));
        invalid("APPEND", vec![json!("x"), json!([1])]);
        assert_eq!(
            ok("PUSH", vec![json!([1, 2, 3]), json!(4)]),
            json!([1, 2, 3, 4])
        );
        assert_eq!(
            ok("PUSH", vec![json!([1, 2, 2, 3]), json!(2), json!(true)]),
            json!([1, 2, 2, 3])
        );
        assert_eq!(ok("PUSH", vec![json!(null), json!(1)]), json!([1]));
        invalid("PUSH", vec![json!(1), json!(1)]);
        assert_eq!(
            ok("UNSHIFT", vec![json!([1, 2, 3]), json!(4)]),
            json!([4, 1, 2, 3])
        );
        assert_eq!(
            ok("UNSHIFT", vec![json!([1, 2, 3]), json!(2), json!(true)]),
            json!([1, 2, 3])
        );
        assert_eq!(ok("POP", vec![json!([1, 2, 3, 4])]), json!([1, 2, 3]));
        assert_eq!(ok("POP", vec![json!([1])]), json!([]));
        assert_eq!(ok("POP", vec![json!([])]), json!([]));
        assert_eq!(ok("SHIFT", vec![json!([1, 2, 3, 4])]), json!([2, 3, 4]));
        assert_eq!(ok("SHIFT", vec![json!([1])]), json!([]));
        assert_eq!(ok("SHIFT", vec![json!(null)]), json!(null));
        assert_eq!(ok("POP", vec![json!(null)]), json!(null));
        invalid("POP", vec![json!("x")]);
        assert_eq!(ok("APPEND", vec![json!("x"), json!([])]), json!("x"));
        assert_eq!(ok("APPEND", vec![json!(null), json!(3)]), json!(3));
    }

    #[test]
    fn access() {
        assert_eq!(ok("FIRST", vec![json!([1, 2, 3])]), json!(1));
        assert_eq!(ok("FIRST", vec![json!([])]), json!(null));
        warns("FIRST", vec![json!("abc")], 1563);
        warns("LAST", vec![json!(null)], 1563);
        warns("NTH", vec![json!({}), json!(0)], 1563);
        warns("POSITION", vec![json!(1), json!(0)], 1563);
        assert_eq!(ok("LAST", vec![json!([1, 2, 3, 4, 5])]), json!(5));
        assert_eq!(ok("LAST", vec![json!([])]), json!(null));
        assert_eq!(
            ok("NTH", vec![json!(["foo", "bar", "baz"]), json!(2)]),
            json!("baz")
        );
        assert_eq!(
            ok("NTH", vec![json!(["foo", "bar", "baz"]), json!(3)]),
            json!(null)
        );
        assert_eq!(
            ok("NTH", vec![json!(["foo", "bar", "baz"]), json!(-1)]),
            json!(null)
        );
        assert_eq!(
            ok("POSITION", vec![json!([2, 4, 6, 8]), json!(4)]),
            json!(true)
        );
        assert_eq!(
            ok("POSITION", vec![json!([2, 4, 6, 8]), json!(4), json!(true)]),
            json!(1)
        );
        assert_eq!(
            ok("POSITION", vec![json!([2, 4, 6, 8]), json!(5), json!(true)]),
            json!(-1)
        );
        assert_eq!(
            ok(
                "CONTAINS_ARRAY",
                vec![json!([[1], {"a": 1}]), json!({"a": 1.0})]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "FLATTEN",
                vec![json!([1, 2, [3, 4], 5, [6, 7], [8, [9, 10]]])]
            ),
            json!([1, 2, 3, 4, 5, 6, 7, 8, [9, 10]])
        );
        assert_eq!(
            ok(
                "FLATTEN",
                vec![json!([1, 2, [3, 4], 5, [6, 7], [8, [9, 10]]]), json!(2)]
            ),
            json!([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
        );
        assert_eq!(ok("FLATTEN", vec![json!([[[1]]]), json!(0)]), json!([[1]]));
        warns("FLATTEN", vec![json!(1)], 1563);
    }

    #[test]
    fn sets() {
        assert_eq!(
            ok(
                "INTERSECTION",
                vec![
                    json!([1, 2, 3, 4, 5]),
                    json!([2, 3, 4, 5, 6]),
                    json!([3, 4, 5, 6, 7])
                ]
            ),
            json!([3, 4, 5])
        );
        assert_eq!(
            ok(
                "INTERSECTION",
                vec![json!([2, 4, 6]), json!([8, 10, 12]), json!([14, 16, 18])]
            ),
            json!([])
        );
        warns("INTERSECTION", vec![json!([1]), json!(1)], 1563);
        invalid("UNION", vec![json!([1]), json!(1)]);
        invalid("MINUS", vec![json!(1), json!([1])]);
        assert_eq!(
            ok(
                "MINUS",
                vec![
                    json!([1, 2, 3, 4]),
                    json!([3, 4, 5, 6]),
                    json!([5, 6, 7, 8])
                ]
            ),
            json!([1, 2])
        );
        assert_eq!(
            ok(
                "OUTERSECTION",
                vec![json!([1, 2, 3]), json!([2, 3, 4]), json!([3, 4, 5])]
            ),
            json!([1, 5])
        );
        assert_eq!(
            ok("UNION", vec![json!([1, 2, 3]), json!([1, 2])]),
            json!([1, 2, 3, 1, 2])
        );
        assert_eq!(
            ok("UNION_DISTINCT", vec![json!([1, 2, 3]), json!([1, 2])]),
            json!([1, 2, 3])
        );
        assert_eq!(
            ok(
                "UNIQUE",
                vec![json!([1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 5])]
            ),
            json!([1, 2, 3, 4, 5])
        );
        assert_eq!(
            ok("UNIQUE", vec![json!([1, 1.0, "1", [1], [1, null]])]),
            json!([1, "1", [1]])
        );
        assert_eq!(ok("COUNT_DISTINCT", vec![json!([1, 2, 3])]), json!(3));
        assert_eq!(
            ok(
                "COUNT_UNIQUE",
                vec![json!(["yes", "no", "yes", "sauron", "no", "yes"])]
            ),
            json!(3)
        );
        assert_eq!(
            ok("JACCARD", vec![json!([1, 2, 3, 4]), json!([3, 4, 5, 6])]),
            json!(0.3333333333333333)
        );
        assert_eq!(
            ok(
                "JACCARD",
                vec![json!([1, 1, 2, 2, 2, 3]), json!([2, 2, 3, 4])]
            ),
            json!(0.5)
        );
        assert_eq!(ok("JACCARD", vec![json!([1, 2, 3]), json!([])]), json!(0));
        assert_eq!(ok("JACCARD", vec![json!([]), json!([])]), json!(1));
        assert_eq!(
            ok(
                "INTERLEAVE",
                vec![json!([1, 1, 1]), json!([2, 2, 2]), json!([3, 3, 3])]
            ),
            json!([1, 2, 3, 1, 2, 3, 1, 2, 3])
        );
        assert_eq!(
            ok(
                "INTERLEAVE",
                vec![json!([1]), json!([2, 2]), json!([3, 3, 3])]
            ),
            json!([1, 2, 3, 2, 3, 3])
        );
    }

    #[test]
    fn removing_and_replacing() {
        let abcde = json!(["a", "b", "c", "d", "e"]);
        assert_eq!(
            ok("REMOVE_NTH", vec![abcde.clone(), json!(1)]),
            json!(["a", "c", "d", "e"])
        );
        assert_eq!(
            ok("REMOVE_NTH", vec![abcde.clone(), json!(-2)]),
            json!(["a", "b", "c", "e"])
        );
        assert_eq!(ok("REMOVE_NTH", vec![abcde.clone(), json!(9)]), abcde);
        assert_eq!(ok("REMOVE_NTH", vec![json!(null), json!(0)]), json!([]));
        assert_eq!(ok("REMOVE_VALUE", vec![json!(null), json!(0)]), json!([]));
        assert_eq!(
            ok("REMOVE_VALUE", vec![json!([1, 1, 1]), json!(1), json!(-1)]),
            json!([])
        );
        assert_eq!(
            ok("REMOVE_VALUES", vec![json!([1]), json!(null)]),
            json!([1])
        );
        invalid("REMOVE_VALUES", vec![json!([1]), json!(1)]);
        assert_eq!(
            error("REPLACE_NTH", vec![json!([1]), json!(null), json!(2)]),
            1542
        );
        invalid("REPLACE_NTH", vec![json!(null), json!(0), json!(2)]);
        let abc = json!(["a", "b", "c"]);
        assert_eq!(
            ok("REPLACE_NTH", vec![abc.clone(), json!(1), json!("z")]),
            json!(["a", "z", "c"])
        );
        assert_eq!(
            ok("REPLACE_NTH", vec![abc.clone(), json!(3), json!("z")]),
            json!(["a", "b", "c", "z"])
        );
        assert_eq!(
            ok(
                "REPLACE_NTH",
                vec![abc.clone(), json!(6), json!("z"), json!("y")]
            ),
            json!(["a", "b", "c", "y", "y", "y", "z"])
        );
        assert_eq!(
            ok("REPLACE_NTH", vec![abc.clone(), json!(-1), json!("z")]),
            json!(["a", "b", "z"])
        );
        assert_eq!(
            ok("REPLACE_NTH", vec![abc.clone(), json!(-9), json!("z")]),
            json!(["z", "b", "c"])
        );
        assert_eq!(
            error("REPLACE_NTH", vec![abc.clone(), json!(6), json!("z")]),
            1542
        );
        assert_eq!(
            ok(
                "REMOVE_VALUE",
                vec![json!(["a", "b", "b", "a", "c"]), json!("a")]
            ),
            json!(["b", "b", "c"])
        );
        assert_eq!(
            ok(
                "REMOVE_VALUE",
                vec![json!(["a", "b", "b", "a", "c"]), json!("a"), json!(1)]
            ),
            json!(["b", "b", "a", "c"])
        );
        assert_eq!(
            ok(
                "REMOVE_VALUES",
                vec![
                    json!(["a", "a", "b", "c", "d", "e", "f"]),
                    json!(["a", "f", "d"])
                ]
            ),
            json!(["b", "c", "e"])
        );
    }

    #[test]
    fn slicing_and_sorting() {
        let a = json!([1, 2, 3, 4, 5]);
        assert_eq!(ok("SLICE", vec![a.clone(), json!(0), json!(1)]), json!([1]));
        assert_eq!(
            ok("SLICE", vec![a.clone(), json!(1), json!(2)]),
            json!([2, 3])
        );
        assert_eq!(ok("SLICE", vec![a.clone(), json!(3)]), json!([4, 5]));
        assert_eq!(
            ok("SLICE", vec![a.clone(), json!(1), json!(-1)]),
            json!([2, 3, 4])
        );
        assert_eq!(
            ok("SLICE", vec![a.clone(), json!(0), json!(-2)]),
            json!([1, 2, 3])
        );
        assert_eq!(
            ok("SLICE", vec![a.clone(), json!(-3), json!(2)]),
            json!([3, 4])
        );
        assert_eq!(ok("SLICE", vec![a.clone(), json!(10)]), json!([]));
        assert_eq!(
            ok("SLICE", vec![a.clone(), json!(1), json!(1e300)]),
            json!([2, 3, 4, 5])
        );
        assert_eq!(
            ok("REMOVE_VALUE", vec![json!([1, 1]), json!(1), json!(-1e300)]),
            json!([])
        );
        assert_eq!(ok("SLICE", vec![a.clone(), json!(4), json!(-3)]), json!([]));
        assert_eq!(
            ok("SORTED", vec![json!([8, 4, 2, 10, 6])]),
            json!([2, 4, 6, 8, 10])
        );
        assert_eq!(
            ok("SORTED", vec![json!(["b", null, 1, [], "A", {}, true])]),
            json!([null, true, 1, "A", "b", [], {}])
        );
        assert_eq!(
            ok("SORTED_UNIQUE", vec![json!([8, 4, 2, 10, 6, 2, 8, 6, 4])]),
            json!([2, 4, 6, 8, 10])
        );
        warns("SORTED", vec![json!({})], 1563);
        warns("UNIQUE", vec![json!("a")], 1563);
    }
}
