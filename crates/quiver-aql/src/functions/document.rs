//! Document and object functions.

use quiver_errors::Result;
use serde_json::{Map, Value};

use super::{arg, def, FunctionContext, FunctionDef, VARIADIC};
use crate::value::{self, equals};

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    def("ATTRIBUTES", 1, 3, attributes),
    def("KEYS", 1, 3, attributes),
    def("ENTRIES", 1, 1, entries),
    def("HAS", 2, 2, has),
    def("IS_SAME_COLLECTION", 2, 2, is_same_collection).with_collection_args(&[0, 1]),
    def("KEEP", 2, VARIADIC, keep),
    def("KEEP_RECURSIVE", 2, VARIADIC, keep_recursive),
    def("MATCHES", 2, 3, matches),
    def("MERGE", 1, VARIADIC, merge),
    def("MERGE_RECURSIVE", 1, VARIADIC, merge_recursive),
    def("PARSE_COLLECTION", 1, 1, parse_collection),
    def("PARSE_IDENTIFIER", 1, 1, parse_identifier),
    def("PARSE_KEY", 1, 1, parse_key),
    def("TRANSLATE", 2, 3, translate),
    def("UNSET", 2, VARIADIC, unset),
    def("UNSET_RECURSIVE", 2, VARIADIC, unset_recursive),
    def("VALUE", 2, 2, value_at),
    def("VALUES", 1, 2, values),
    def("ZIP", 2, 2, zip),
];

macro_rules! object_or_warn {
    ($ctx:ident, $v:expr) => {
        match $v {
            Value::Object(map) => map,
            _ => return Ok($ctx.invalid_argument()),
        }
    };
}

fn attributes(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let map = object_or_warn!(ctx, arg(args, 0));
    let remove_system = value::to_bool(arg(args, 1));
    let mut keys: Vec<&String> = map
        .keys()
        .filter(|k| !(remove_system && k.starts_with('_')))
        .collect();
    if value::to_bool(arg(args, 2)) {
        // ArangoDB sorts attribute names with its string collation.
        keys.sort_by(|a, b| value::compare_strings(a, b));
    }
    Ok(Value::Array(
        keys.into_iter().map(|k| Value::String(k.clone())).collect(),
    ))
}

fn values(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let map = object_or_warn!(ctx, arg(args, 0));
    let remove_system = value::to_bool(arg(args, 1));
    Ok(Value::Array(
        map.iter()
            .filter(|(k, _)| !(remove_system && k.starts_with('_')))
            .map(|(_, v)| v.clone())
            .collect(),
    ))
}

fn entries(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let map = object_or_warn!(ctx, arg(args, 0));
    Ok(Value::Array(
        map.iter()
            .map(|(k, v)| Value::Array(vec![Value::String(k.clone()), v.clone()]))
            .collect(),
    ))
}

fn has(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::Bool(match arg(args, 0) {
        Value::Object(map) => map.contains_key(value::to_str(arg(args, 1)).as_ref()),
        _ => false,
    }))
}

/// The attribute names given either as separate arguments or as one array argument.
fn names(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Vec<String> {
    // As ArangoDB: strings name attributes, numbers are printed, arrays contribute their string
    // elements (other elements warn), anything else is ignored.
    let mut out = Vec::new();
    for v in args {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Number(n) => out.push(value::format_number(n)),
            Value::Array(items) => {
                for item in items {
                    match item {
                        Value::String(s) => out.push(s.clone()),
                        _ => {
                            ctx.invalid_argument();
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn keep(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let map = object_or_warn!(ctx, arg(args, 0));
    let names = names(ctx, &args[1..]);
    Ok(Value::Object(
        map.iter()
            .filter(|(k, _)| names.iter().any(|n| n == *k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    ))
}

fn unset(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let map = object_or_warn!(ctx, arg(args, 0));
    let names = names(ctx, &args[1..]);
    Ok(Value::Object(
        map.iter()
            .filter(|(k, _)| !names.iter().any(|n| n == *k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    ))
}

/// Applies KEEP/UNSET at every object level (arrays are descended into as well).
fn filter_recursive(v: &Value, names: &[String], keep: bool, depth: usize) -> Value {
    // Only nested objects are descended into (arrays are kept as they are), as in ArangoDB.
    // JSON nesting is bounded by the parser; the depth guard keeps recursion bounded anyway.
    match v {
        Value::Object(map) if depth <= 512 => Value::Object(
            map.iter()
                .filter(|(k, _)| names.iter().any(|n| n == *k) == keep)
                .map(|(k, v)| (k.clone(), filter_recursive(v, names, keep, depth + 1)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn keep_recursive(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let doc = arg(args, 0);
    if !doc.is_object() {
        return Ok(ctx.invalid_argument());
    }
    Ok(filter_recursive(doc, &names(ctx, &args[1..]), true, 0))
}

fn unset_recursive(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let doc = arg(args, 0);
    if !doc.is_object() {
        return Ok(ctx.invalid_argument());
    }
    Ok(filter_recursive(doc, &names(ctx, &args[1..]), false, 0))
}

fn matches(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Value::Object(doc) = arg(args, 0) else {
        return Ok(Value::Bool(false));
    };
    let examples: &[Value] = match arg(args, 1) {
        Value::Array(items) => items,
        single => std::slice::from_ref(single),
    };
    let return_index = value::to_bool(arg(args, 2));
    for (i, example) in examples.iter().enumerate() {
        let Value::Object(example) = example else {
            ctx.invalid_argument();
            continue;
        };
        // A null in the example also matches a missing attribute.
        let all = example
            .iter()
            .all(|(k, v)| equals(doc.get(k).unwrap_or(&value::NULL), v));
        if all {
            return Ok(if return_index {
                Value::from(i)
            } else {
                Value::Bool(true)
            });
        }
    }
    Ok(if return_index {
        Value::from(-1)
    } else {
        Value::Bool(false)
    })
}

/// The documents to merge: separate arguments, or one array argument.
fn merge_inputs<'a>(
    ctx: &mut FunctionContext<'_>,
    args: &'a [Value],
) -> Option<Vec<&'a Map<String, Value>>> {
    let items: Vec<&Value> = match args {
        [Value::Array(items)] => items.iter().collect(),
        rest => rest.iter().collect(),
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Object(map) => out.push(map),
            _ => {
                ctx.invalid_argument();
                return None;
            }
        }
    }
    Some(out)
}

fn merge(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(docs) = merge_inputs(ctx, args) else {
        return Ok(Value::Null);
    };
    let mut out = Map::new();
    for doc in docs {
        for (k, v) in doc {
            out.insert(k.clone(), v.clone());
        }
    }
    Ok(Value::Object(out))
}

fn merge_into(target: &mut Map<String, Value>, source: &Map<String, Value>, depth: usize) {
    for (k, v) in source {
        match (target.get_mut(k), v) {
            (Some(Value::Object(existing)), Value::Object(incoming)) if depth < 512 => {
                merge_into(existing, incoming, depth + 1);
            }
            _ => {
                target.insert(k.clone(), v.clone());
            }
        }
    }
}

fn merge_recursive(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Some(docs) = merge_inputs(ctx, args) else {
        return Ok(Value::Null);
    };
    let mut out = Map::new();
    for doc in docs {
        merge_into(&mut out, doc, 0);
    }
    Ok(Value::Object(out))
}

/// `collection/key` from an id string or a document's `_id`: exactly one `/` (either side may
/// be empty), as ArangoDB checks it.
fn split_identifier(v: &Value) -> Option<(&str, &str)> {
    let id = match v {
        Value::String(s) => s.as_str(),
        Value::Object(map) => map.get("_id")?.as_str()?,
        _ => return None,
    };
    let (collection, key) = id.split_once('/')?;
    (!key.contains('/')).then_some((collection, key))
}

fn parse_identifier(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match split_identifier(arg(args, 0)) {
        Some((collection, key)) => Ok(serde_json::json!({"collection": collection, "key": key})),
        None => Ok(ctx.invalid_argument()),
    }
}

fn parse_collection(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match split_identifier(arg(args, 0)) {
        Some((collection, _)) => Ok(Value::String(collection.to_string())),
        None => Ok(ctx.invalid_argument()),
    }
}

fn parse_key(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match split_identifier(arg(args, 0)) {
        Some((_, key)) => Ok(Value::String(key.to_string())),
        None => Ok(ctx.invalid_argument()),
    }
}

fn is_same_collection(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let collection = value::to_str(arg(args, 0));
    let id = match arg(args, 1) {
        Value::String(s) => s.as_str(),
        Value::Object(map) => match map.get("_id") {
            Some(Value::String(s)) => s.as_str(),
            _ => return Ok(ctx.invalid_argument()),
        },
        _ => return Ok(ctx.invalid_argument()),
    };
    let id_collection = id.split_once('/').map_or(id, |(c, _)| c);
    Ok(Value::Bool(id_collection == collection))
}

fn translate(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let lookup = object_or_warn!(ctx, arg(args, 1));
    let input = arg(args, 0);
    match lookup.get(value::to_str(input).as_ref()) {
        Some(found) => Ok(found.clone()),
        None if args.len() > 2 => Ok(arg(args, 2).clone()),
        None => Ok(input.clone()),
    }
}

fn value_at(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let doc = arg(args, 0);
    if !doc.is_object() {
        return Ok(ctx.invalid_argument());
    }
    let Value::Array(path) = arg(args, 1) else {
        return Ok(ctx.invalid_argument());
    };
    if path.is_empty() {
        return Ok(Value::Null);
    }
    let mut current = doc;
    for step in path {
        let next = match (step, current) {
            (Value::String(k), Value::Object(map)) => map.get(k),
            (Value::Number(n), Value::Array(items)) => n
                .as_f64()
                .filter(|f| *f >= 0.0)
                .and_then(|f| items.get(f as usize)),
            _ => None,
        };
        match next {
            Some(v) => current = v,
            None => return Ok(Value::Null),
        }
    }
    Ok(current.clone())
}

fn zip(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match (arg(args, 0), arg(args, 1)) {
        (Value::Array(keys), Value::Array(vals)) if keys.len() == vals.len() => {
            let mut out = serde_json::Map::with_capacity(keys.len());
            for (k, v) in keys.iter().zip(vals) {
                // The first occurrence of a duplicate key wins.
                out.entry(value::to_string(k)).or_insert_with(|| v.clone());
            }
            Ok(Value::Object(out))
        }
        _ => Ok(ctx.invalid_argument()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{invalid, ok};
    use serde_json::json;

    #[test]
    fn keys_values_entries() {
        let doc = json!({"foo": "bar", "_key": "123", "_custom": "yes"});
        assert_eq!(
            ok("ATTRIBUTES", vec![doc.clone()]),
            json!(["foo", "_key", "_custom"])
        );
        assert_eq!(
            ok("ATTRIBUTES", vec![doc.clone(), json!(true)]),
            json!(["foo"])
        );
        assert_eq!(
            ok("KEYS", vec![doc.clone(), json!(false), json!(true)]),
            json!(["_custom", "_key", "foo"])
        );
        invalid("ATTRIBUTES", vec![json!([1])]);
        let user = json!({"_id": "users/jane", "name": "Jane", "age": 35});
        assert_eq!(
            ok("VALUES", vec![user.clone()]),
            json!(["users/jane", "Jane", 35])
        );
        assert_eq!(
            ok("VALUES", vec![user.clone(), json!(true)]),
            json!(["Jane", 35])
        );
        assert_eq!(
            ok("ENTRIES", vec![json!({"foo": "bar", "_key": "123"})]),
            json!([["foo", "bar"], ["_key", "123"]])
        );
        assert_eq!(
            ok("HAS", vec![json!({"name": "Jane"}), json!("name")]),
            json!(true)
        );
        assert_eq!(
            ok("HAS", vec![json!({"name": "Jane"}), json!("age")]),
            json!(false)
        );
        assert_eq!(
            ok("HAS", vec![json!({"name": null}), json!("name")]),
            json!(true)
        );
        assert_eq!(ok("HAS", vec![json!("x"), json!("name")]), json!(false));
    }

    #[test]
    fn keep_and_unset() {
        let doc = json!({"foo": {"bar": {"foo": 1, "baz": 2}, "baz": 3}, "baz": 4});
        assert_eq!(
            ok("KEEP", vec![doc.clone(), json!("foo")]),
            json!({"foo": {"bar": {"foo": 1, "baz": 2}, "baz": 3}})
        );
        assert_eq!(ok("KEEP", vec![doc.clone(), json!("bar")]), json!({}));
        assert_eq!(
            ok("KEEP", vec![doc.clone(), json!("baz")]),
            json!({"baz": 4})
        );
        assert_eq!(
            ok("KEEP", vec![doc.clone(), json!(["foo", "baz"])]),
            doc.clone()
        );
        assert_eq!(
            ok("KEEP_RECURSIVE", vec![doc.clone(), json!("foo")]),
            json!({"foo": {}})
        );
        assert_eq!(
            ok(
                "KEEP_RECURSIVE",
                vec![doc.clone(), json!("foo"), json!("bar")]
            ),
            json!({"foo": {"bar": {"foo": 1}}})
        );
        assert_eq!(
            ok("KEEP_RECURSIVE", vec![doc.clone(), json!(["foo", "baz"])]),
            json!({"foo": {"baz": 3}, "baz": 4})
        );
        assert_eq!(
            ok("UNSET", vec![doc.clone(), json!("foo")]),
            json!({"baz": 4})
        );
        assert_eq!(ok("UNSET", vec![doc.clone(), json!("bar")]), doc.clone());
        assert_eq!(
            ok("UNSET", vec![doc.clone(), json!("foo"), json!("baz")]),
            json!({})
        );
        assert_eq!(
            ok("UNSET", vec![doc.clone(), json!(["foo", "bar"])]),
            json!({"baz": 4})
        );
        assert_eq!(
            ok("UNSET_RECURSIVE", vec![doc.clone(), json!("foo")]),
            json!({"baz": 4})
        );
        assert_eq!(
            ok("UNSET_RECURSIVE", vec![doc.clone(), json!("bar")]),
            json!({"foo": {"baz": 3}, "baz": 4})
        );
        assert_eq!(
            ok("UNSET_RECURSIVE", vec![doc.clone(), json!(["baz"])]),
            json!({"foo": {"bar": {"foo": 1}}})
        );
        invalid("KEEP", vec![json!(null), json!("a")]);
    }

    #[test]
    fn matching_and_merging() {
        let doc = json!({"name": "jane", "age": 27, "active": true});
        assert_eq!(
            ok(
                "MATCHES",
                vec![doc.clone(), json!({"age": 27, "active": true})]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "MATCHES",
                vec![
                    json!({"test": 1}),
                    json!([{"test": 1, "foo": "bar"}, {"foo": 1}, {"test": 1}]),
                    json!(true)
                ]
            ),
            json!(2)
        );
        assert_eq!(
            ok("MATCHES", vec![doc.clone(), json!({"missing": null})]),
            json!(true)
        );
        assert_eq!(ok("MATCHES", vec![doc.clone(), json!({})]), json!(true));
        assert_eq!(
            ok(
                "MATCHES",
                vec![doc.clone(), json!([{"age": 1}]), json!(true)]
            ),
            json!(-1)
        );
        assert_eq!(ok("MATCHES", vec![doc.clone(), json!([])]), json!(false));
        assert_eq!(ok("MATCHES", vec![json!(1), json!({})]), json!(false));
        let (v, w) =
            super::super::testutil::run("MATCHES", vec![doc.clone(), json!([1, {"age": 27}])]);
        assert_eq!((v, w), (json!(true), vec![1542]));
        assert_eq!(
            ok(
                "MERGE",
                vec![
                    json!({"user1": {"name": "Jane"}}),
                    json!({"user2": {"name": "Tom"}})
                ]
            ),
            json!({"user1": {"name": "Jane"}, "user2": {"name": "Tom"}})
        );
        assert_eq!(
            ok(
                "MERGE",
                vec![
                    json!({"users": {"name": "Jane"}}),
                    json!({"users": {"name": "Tom"}})
                ]
            ),
            json!({"users": {"name": "Tom"}})
        );
        assert_eq!(
            ok(
                "MERGE",
                vec![
                    json!([{"foo": "bar"}, {"quux": "quetzalcoatl", "ruled": true}, {"bar": "baz", "foo": "done"}])
                ]
            ),
            json!({"foo": "done", "quux": "quetzalcoatl", "ruled": true, "bar": "baz"})
        );
        invalid("MERGE", vec![json!({}), json!(1)]);
        assert_eq!(
            ok(
                "MERGE_RECURSIVE",
                vec![
                    json!({"user-1": {"name": "Jane", "livesIn": {"city": "LA"}}}),
                    json!({"user-1": {"age": 42, "livesIn": {"state": "CA"}}})
                ]
            ),
            json!({"user-1": {"name": "Jane", "livesIn": {"city": "LA", "state": "CA"}, "age": 42}})
        );
        assert_eq!(
            ok(
                "MERGE_RECURSIVE",
                vec![json!([
                    {"user-1": {"name": "Jane", "livesIn": {"city": "LA"}}},
                    {"user-1": {"age": 42, "livesIn": {"city": "NY"}}}
                ])]
            ),
            json!({"user-1": {"name": "Jane", "livesIn": {"city": "NY"}, "age": 42}})
        );
    }

    #[test]
    fn identifiers() {
        assert_eq!(
            ok("PARSE_IDENTIFIER", vec![json!("_users/my-user")]),
            json!({"collection": "_users", "key": "my-user"})
        );
        assert_eq!(
            ok(
                "PARSE_IDENTIFIER",
                vec![json!({"_id": "mycollection/mykey", "value": "some value"})]
            ),
            json!({"collection": "mycollection", "key": "mykey"})
        );
        assert_eq!(
            ok("PARSE_COLLECTION", vec![json!("_users/my-user")]),
            json!("_users")
        );
        assert_eq!(ok("PARSE_KEY", vec![json!({"_id": "c/k"})]), json!("k"));
        invalid("PARSE_IDENTIFIER", vec![json!("nokey")]);
        invalid("PARSE_IDENTIFIER", vec![json!("a/b/c")]);
        assert_eq!(ok("PARSE_KEY", vec![json!("c/")]), json!(""));
        invalid("PARSE_KEY", vec![json!({"x": 1})]);
        invalid("PARSE_COLLECTION", vec![json!(1)]);
        assert_eq!(
            ok(
                "IS_SAME_COLLECTION",
                vec![json!("_users"), json!("_users/my-user")]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "IS_SAME_COLLECTION",
                vec![json!("_users"), json!({"_id": "_users/my-user"})]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "IS_SAME_COLLECTION",
                vec![json!("_users"), json!("foobar/baz")]
            ),
            json!(false)
        );
        invalid("IS_SAME_COLLECTION", vec![json!("_users"), json!({"x": 1})]);
    }

    #[test]
    fn translate_value_zip() {
        let map = json!({"US": "United States", "UK": "United Kingdom", "FR": "France"});
        assert_eq!(
            ok("TRANSLATE", vec![json!("FR"), map.clone()]),
            json!("France")
        );
        assert_eq!(
            ok("TRANSLATE", vec![json!(42), json!({"foo": "bar"})]),
            json!(42)
        );
        assert_eq!(
            ok(
                "TRANSLATE",
                vec![json!(42), json!({"foo": "bar"}), json!("not found!")]
            ),
            json!("not found!")
        );
        assert_eq!(
            ok("TRANSLATE", vec![json!(42), json!({"42": true})]),
            json!(true)
        );
        assert_eq!(
            ok(
                "VALUE",
                vec![json!({"foo": {"bar": "baz"}}), json!(["foo", "bar"])]
            ),
            json!("baz")
        );
        assert_eq!(
            ok(
                "VALUE",
                vec![
                    json!({"foo": [{"bar": "baz"}, {"bar": {"inner": true}}]}),
                    json!(["foo", 1, "bar"])
                ]
            ),
            json!({"inner": true})
        );
        assert_eq!(
            ok("VALUE", vec![json!({"a": 1}), json!(["b", "c"])]),
            json!(null)
        );
        invalid("VALUE", vec![json!({"a": 1}), json!("a")]);
        assert_eq!(
            ok("VALUE", vec![json!({"a": [1]}), json!(["a", -1])]),
            json!(null)
        );
        assert_eq!(ok("VALUE", vec![json!({"a": 1}), json!([])]), json!(null));
        assert_eq!(
            ok("ZIP", vec![json!(["a", "a"]), json!([1, 2])]),
            json!({"a": 1})
        );
        assert_eq!(
            ok(
                "KEEP_RECURSIVE",
                vec![json!({"a": [{"b": 1}], "b": 2}), json!("a")]
            ),
            json!({"a": [{"b": 1}]})
        );
        assert_eq!(
            ok("UNSET", vec![json!({"1": 1, "x": 2}), json!(1)]),
            json!({"x": 2})
        );
        assert_eq!(
            ok(
                "ZIP",
                vec![
                    json!(["name", "active", "hobbies"]),
                    json!(["some user", true, ["swimming", "riding"]])
                ]
            ),
            json!({"name": "some user", "active": true, "hobbies": ["swimming", "riding"]})
        );
        invalid("ZIP", vec![json!(["a"]), json!([])]);
    }
}
