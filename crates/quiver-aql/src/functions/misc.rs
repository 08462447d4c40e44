//! Miscellaneous functions: control flow, database access, hashing, dynamic calls, internal
//! helpers, and registry rows for functions that belong to later issues (geo, ArangoSearch,
//! schema validation) so that queries naming them get a clear "not implemented" error
//! instead of "unknown function".

use std::hash::Hasher as _;
use std::time::Duration;

use base64::Engine as _;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use super::{arg, def, lookup, reading, volatile, FunctionContext, FunctionDef, VARIADIC};
use crate::value::{self, compare, hash_value};

/// The ArangoDB version QuiverDB reports (kept equal to `GET /_api/version`).
pub const ARANGO_VERSION: &str = "3.12.4";

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    def("LENGTH", 1, 1, length),
    def("COUNT", 1, 1, length),
    def("NOT_NULL", 1, VARIADIC, not_null),
    def("FIRST_LIST", 1, VARIADIC, first_list),
    def("FIRST_DOCUMENT", 1, VARIADIC, first_document),
    def("MIN_MATCH", 2, VARIADIC, min_match),
    def("CHECK_DOCUMENT", 1, 1, check_document),
    reading("COLLECTION_COUNT", 1, 1, collection_count).with_collection_args(&[0]),
    reading("COLLECTIONS", 0, 0, collections),
    reading("CURRENT_DATABASE", 0, 0, current_database),
    reading("CURRENT_USER", 0, 0, current_user),
    def("DECODE_REV", 1, 1, decode_rev),
    reading("DOCUMENT", 1, 2, document).with_collection_args(&[0]),
    def("SHARD_ID", 2, 2, shard_id),
    def("HASH", 1, 1, hash),
    def("MINHASH", 2, 2, minhash),
    def("MINHASH_COUNT", 1, 1, minhash_count),
    def("MINHASH_ERROR", 1, 1, minhash_error),
    volatile("APPLY", 1, 2, apply),
    volatile("CALL", 1, VARIADIC, call),
    volatile("ASSERT", 2, 2, assert),
    volatile("WARN", 2, 2, warn),
    def("IN_RANGE", 5, 5, in_range),
    volatile("FAIL", 0, 1, fail),
    volatile("NOOPT", 1, 1, passthru),
    def("NOEVAL", 1, 1, passthru),
    def("PASSTHRU", 1, 1, passthru),
    def("V8", 1, 1, passthru),
    volatile("SLEEP", 1, 1, sleep),
    def("VERSION", 0, 0, version),
    // Deferred to later issues; see docs/aql-functions.md.
    reading("SCHEMA_GET", 1, 1, schema_get),
    reading("SCHEMA_VALIDATE", 2, 2, schema_validate),
    def("ANALYZER", 2, 2, not_implemented),
    def("BOOST", 2, 2, not_implemented),
    def("EXISTS", 1, 3, not_implemented),
    def("PHRASE", 2, VARIADIC, not_implemented),
    def("BM25", 1, 3, not_implemented),
    def("TFIDF", 1, 2, not_implemented),
    def("OFFSET_INFO", 2, 2, not_implemented),
    // Only an `EnumerateNearVectorNode` answers these (rule `use-vector-index`); evaluated
    // anywhere else they fail as in ArangoDB.
    def("APPROX_NEAR_COSINE", 2, 3, vector_search_not_applied),
    def("APPROX_NEAR_L2", 2, 3, vector_search_not_applied),
    def("APPROX_NEAR_INNER_PRODUCT", 2, 3, vector_search_not_applied),
];

fn vector_search_not_applied(_: &mut FunctionContext<'_>, _: &[Value]) -> Result<Value> {
    Err(Error::with_message(
        ErrorCode::QueryVectorSearchNotApplied,
        "Vector search could not be applied. Please ensure a vector index has been created \
         and that your query uses the correct syntax for vector search: FOR d IN coll \
         [FILTER …] SORT APPROX_NEAR_…(d.attr, @query) [DESC] LIMIT n, with one FILTER at \
         most, that does not use the similarity, and a matching index metric.",
    ))
}

fn not_implemented(ctx: &mut FunctionContext<'_>, _: &[Value]) -> Result<Value> {
    Err(Error::with_message(
        ErrorCode::NotImplemented,
        format!(
            "function '{}()' is not implemented yet in QuiverDB (it belongs to the geo, ArangoSearch or schema features)",
            ctx.function_name()
        ),
    ))
}

fn length(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::from(match arg(args, 0) {
        Value::Null => 0,
        Value::Bool(b) => usize::from(*b),
        // ArangoDB measures the double rendering (LENGTH(100000000) is 4, "1e+8").
        Value::Number(n) => value::format_f64(n.as_f64().unwrap_or(0.0)).len(),
        Value::String(s) => s.chars().count(),
        Value::Array(items) => items.len(),
        Value::Object(map) => map.len(),
    }))
}

fn first_matching(args: &[Value], pred: fn(&Value) -> bool) -> Value {
    args.iter()
        .find(|v| pred(v))
        .cloned()
        .unwrap_or(Value::Null)
}

fn not_null(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(first_matching(args, |v| !v.is_null()))
}

fn first_list(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(first_matching(args, Value::is_array))
}

fn first_document(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(first_matching(args, Value::is_object))
}

fn min_match(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let (count, exprs) = args
        .split_last()
        .map_or((&value::NULL, args), |(c, e)| (c, e));
    let needed = value::to_number(count);
    let matched = exprs.iter().filter(|v| value::to_bool(v)).count() as f64;
    Ok(Value::Bool(matched >= needed))
}

fn check_document(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    // Parsed JSON objects cannot hold duplicate attribute names, so every object is valid.
    Ok(Value::Bool(arg(args, 0).is_object()))
}

fn collection_name(ctx: &mut FunctionContext<'_>, v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        _ => {
            ctx.invalid_argument();
            None
        }
    }
}

fn collection_count(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let data = ctx.data()?;
    let Some(name) = collection_name(ctx, arg(args, 0)) else {
        return Ok(Value::Null);
    };
    Ok(Value::from(data.collection_count(&name)?))
}

fn collections(ctx: &mut FunctionContext<'_>, _: &[Value]) -> Result<Value> {
    let data = ctx.data()?;
    Ok(Value::Array(
        data.collections()?
            .into_iter()
            .map(|(id, name)| json!({"_id": id, "name": name}))
            .collect(),
    ))
}

fn current_database(ctx: &mut FunctionContext<'_>, _: &[Value]) -> Result<Value> {
    Ok(Value::String(ctx.data()?.database_name()))
}

fn current_user(ctx: &mut FunctionContext<'_>, _: &[Value]) -> Result<Value> {
    Ok(ctx
        .data
        .and_then(|d| d.current_user())
        .map_or(Value::Null, Value::String))
}

fn decode_rev(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Value::String(text) = arg(args, 0) else {
        return Ok(ctx.invalid_argument());
    };
    let Some(rev) = quiver_types::Revision::decode(text) else {
        return Ok(ctx.invalid_argument());
    };
    let millis = (rev.0 >> 20) as i64;
    let count = rev.0 & 0xF_FFFF;
    match super::date::iso_from_millis(millis) {
        Some(date) => Ok(json!({"date": date, "count": count})),
        None => Ok(ctx.invalid_argument()),
    }
}

/// Looks up one document handle (`coll/key`, or a key when `collection` is given).
fn fetch(
    ctx: &mut FunctionContext<'_>,
    collection: Option<&str>,
    id: &str,
) -> Result<Option<Value>> {
    let data = ctx.data()?;
    let (coll, key) = match (collection, id.split_once('/')) {
        (Some(c), Some((ic, k))) => {
            if ic != c {
                return Ok(None);
            }
            (c, k)
        }
        (Some(c), None) => (c, id),
        (None, Some((c, k))) => (c, k),
        (None, None) => return Ok(None),
    };
    if coll.is_empty() || key.is_empty() {
        return Ok(None);
    }
    match data.document(coll, key) {
        Ok(doc) => Ok(doc),
        // A collection that does not exist simply holds no documents for DOCUMENT().
        Err(e) if e.code == ErrorCode::DataSourceNotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn document(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    ctx.data()?;
    let (collection, ids) = if args.len() == 2 {
        match arg(args, 0) {
            Value::String(c) => (Some(c.as_str()), arg(args, 1)),
            _ => return Ok(ctx.invalid_argument()),
        }
    } else {
        (None, arg(args, 0))
    };
    match ids {
        Value::String(id) => Ok(fetch(ctx, collection, id)?.unwrap_or(Value::Null)),
        Value::Object(doc) => match doc.get("_id") {
            Some(Value::String(id)) => Ok(fetch(ctx, collection, id)?.unwrap_or(Value::Null)),
            _ => Ok(Value::Null),
        },
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                if let Value::String(id) = item {
                    if let Some(doc) = fetch(ctx, collection, id)? {
                        out.push(doc);
                    }
                }
            }
            Ok(Value::Array(out))
        }
        _ => Ok(Value::Null),
    }
}

fn schema_get(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let data = ctx.data()?;
    let Some(name) = collection_name(ctx, arg(args, 0)) else {
        return Ok(Value::Null);
    };
    data.collection_schema(&name)
}

fn schema_validate(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let doc = arg(args, 0);
    if !doc.is_object() {
        return Ok(ctx.invalid_argument());
    }
    let schema = arg(args, 1);
    // A null or empty schema accepts every object, as in ArangoDB.
    if schema.is_null() || schema.as_object().is_some_and(serde_json::Map::is_empty) {
        return Ok(json!({"valid": true}));
    }
    if !schema.is_object() {
        return Ok(ctx.invalid_argument());
    }
    let Value::Object(doc) = doc else {
        return Ok(ctx.invalid_argument());
    };
    match quiver_core::validate_with_schema(schema, doc)? {
        None => Ok(json!({"valid": true})),
        Some(message) => Ok(json!({"valid": false, "errorMessage": message})),
    }
}

fn shard_id(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    // On a single server the "shard" is the collection itself.
    match (arg(args, 0), arg(args, 1)) {
        (Value::String(c), Value::Object(_)) => Ok(Value::String(c.clone())),
        _ => Ok(ctx.invalid_argument()),
    }
}

/// A stable 64-bit hash of a value (SipHash with fixed keys over the AQL-equality-consistent
/// hash feed).
fn stable_hash(v: &Value, seed: u64) -> u64 {
    #[allow(deprecated)]
    let mut h = std::hash::SipHasher::new_with_keys(seed, 0x5157_4956_4552);
    hash_value(v, &mut h);
    h.finish()
}

fn hash(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    // ArangoDB keeps 51 bits so that the number survives clients with double precision.
    Ok(Value::from(
        stable_hash(arg(args, 0), 0) & 0x0007_FFFF_FFFF_FFFF,
    ))
}

fn minhash(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Value::Array(items) = arg(args, 0) else {
        return Ok(ctx.invalid_argument());
    };
    let n = match arg(args, 1).as_f64() {
        Some(n) if (1.0..=1_000_000.0).contains(&n) => n as u64,
        _ => return Ok(ctx.invalid_argument()),
    };
    // One hash per (element, signature slot): refuse work that would run for minutes.
    if (items.len() as u64).saturating_mul(n) > 100_000_000 {
        return Err(Error::with_message(
            ErrorCode::ResourceLimit,
            "MINHASH() input too large: elements times signature size exceeds 100000000",
        ));
    }
    let signature = (0..n)
        .map(|seed| {
            let min = items
                .iter()
                .map(|v| stable_hash(v, seed + 1))
                .min()
                .unwrap_or(u64::MAX);
            Value::String(base64::engine::general_purpose::STANDARD.encode(min.to_le_bytes()))
        })
        .collect();
    Ok(Value::Array(signature))
}

fn minhash_count(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match arg(args, 0).as_f64() {
        Some(e) if e > 0.0 && e < 1.0 => Ok(value::number((1.0 / (e * e)).ceil())),
        _ => Ok(ctx.invalid_argument()),
    }
}

fn minhash_error(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match arg(args, 0).as_f64() {
        Some(n) if n >= 1.0 => Ok(value::number(1.0 / n.trunc().sqrt())),
        _ => Ok(ctx.invalid_argument()),
    }
}

/// Dynamic invocation shared by CALL and APPLY.
fn dynamic_call(ctx: &mut FunctionContext<'_>, name: &Value, args: &[Value]) -> Result<Value> {
    let Value::String(name) = name else {
        // A non-string function name is an error (not a warning) in ArangoDB.
        return Err(Error::with_message(
            ErrorCode::QueryFunctionArgumentTypeMismatch,
            format!(
                "invalid argument type in call to function '{}()'",
                ctx.function_name()
            ),
        ));
    };
    let upper = name.to_ascii_uppercase();
    if upper.contains("::") {
        return Err(Error::with_message(
            ErrorCode::QueryFunctionNotFound,
            format!("user function '{name}()' not found"),
        ));
    }
    if upper == "CALL" || upper == "APPLY" {
        return Err(Error::with_message(
            ErrorCode::QueryDisallowedDynamicCall,
            format!("disallowed dynamic call to '{upper}'"),
        ));
    }
    let def = lookup(&upper).ok_or_else(|| {
        Error::with_message(
            ErrorCode::QueryFunctionNameUnknown,
            format!("usage of unknown function '{name}()'"),
        )
    })?;
    def.invoke(ctx, args)
}

fn call(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    dynamic_call(ctx, &args[0], &args[1..])
}

fn apply(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    match arg(args, 1) {
        Value::Null => dynamic_call(ctx, &args[0], &[]),
        Value::Array(items) => dynamic_call(ctx, &args[0], items),
        _ => Ok(ctx.invalid_argument()),
    }
}

fn assert(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Value::String(message) = arg(args, 1) else {
        return Ok(ctx.invalid_argument());
    };
    if value::to_bool(arg(args, 0)) {
        return Ok(Value::Bool(true));
    }
    Err(Error::with_message(
        ErrorCode::QueryUserAssert,
        message.clone(),
    ))
}

fn warn(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let Value::String(message) = arg(args, 1) else {
        return Ok(ctx.invalid_argument());
    };
    if value::to_bool(arg(args, 0)) {
        return Ok(Value::Bool(true));
    }
    let message = message.clone();
    ctx.warn(ErrorCode::QueryUserWarn, message);
    Ok(Value::Bool(false))
}

fn in_range(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    use std::cmp::Ordering::*;
    let v = arg(args, 0);
    let low = compare(v, arg(args, 1));
    let high = compare(v, arg(args, 2));
    let include_low = value::to_bool(arg(args, 3));
    let include_high = value::to_bool(arg(args, 4));
    let above = low == Greater || (include_low && low == Equal);
    let below = high == Less || (include_high && high == Equal);
    Ok(Value::Bool(above && below))
}

fn fail(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    // ArangoDB uses a string reason as the whole message; anything else gives the generic text.
    match arg(args, 0) {
        Value::String(reason) => Err(Error::with_message(
            ErrorCode::QueryFailCalled,
            reason.clone(),
        )),
        _ => Err(Error::with_message(
            ErrorCode::QueryFailCalled,
            "FAIL() called",
        )),
    }
}

fn passthru(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(arg(args, 0).clone())
}

/// Longest SLEEP() honoured, so a query cannot park a worker thread indefinitely.
const MAX_SLEEP: Duration = Duration::from_secs(300);

fn sleep(ctx: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let seconds = match arg(args, 0).as_f64() {
        Some(s) if s >= 0.0 => s,
        _ => return Ok(ctx.invalid_argument()),
    };
    let total = Duration::from_secs_f64(seconds.min(MAX_SLEEP.as_secs_f64()));
    let deadline = std::time::Instant::now() + total;
    // Sleep in slices so that a killed query stops promptly.
    loop {
        if ctx.is_killed() {
            return Err(Error::new(ErrorCode::QueryKilled));
        }
        let now = std::time::Instant::now();
        if now >= deadline {
            return Ok(Value::Null);
        }
        std::thread::sleep((deadline - now).min(Duration::from_millis(10)));
    }
}

fn version(_: &mut FunctionContext<'_>, _: &[Value]) -> Result<Value> {
    Ok(Value::String(ARANGO_VERSION.to_string()))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{error, invalid, ok, run};
    use super::super::{call, DataAccess, FunctionContext};
    use quiver_errors::{Error, ErrorCode, Result};
    use serde_json::{json, Value};
    use std::sync::atomic::{AtomicBool, Ordering};

    struct Store;

    impl DataAccess for Store {
        fn document(&self, collection: &str, key: &str) -> Result<Option<Value>> {
            match (collection, key) {
                ("persons", "alice") => Ok(Some(json!({"_id": "persons/alice", "_key": "alice"}))),
                ("persons", "bob") => Ok(Some(json!({"_id": "persons/bob", "_key": "bob"}))),
                ("persons", _) => Ok(None),
                _ => Err(Error::new(ErrorCode::DataSourceNotFound)),
            }
        }
        fn collection_count(&self, collection: &str) -> Result<u64> {
            match collection {
                "persons" => Ok(2),
                _ => Err(Error::new(ErrorCode::DataSourceNotFound)),
            }
        }
        fn database_name(&self) -> String {
            "mydb".into()
        }
    }

    fn with_store(name: &str, args: Vec<Value>) -> Result<Value> {
        let store = Store;
        let mut ctx = FunctionContext::with_data(&store);
        call(&mut ctx, name, &args)
    }

    #[test]
    fn length_of_everything() {
        assert_eq!(ok("LENGTH", vec![json!("🥑")]), json!(1));
        assert_eq!(ok("LENGTH", vec![json!(1234)]), json!(4));
        assert_eq!(ok("LENGTH", vec![json!(-1.5)]), json!(4));
        assert_eq!(ok("LENGTH", vec![json!(100_000_000)]), json!(4));
        assert_eq!(ok("LENGTH", vec![json!([1, 2, 3, 4, 5, 6, 7])]), json!(7));
        assert_eq!(ok("LENGTH", vec![json!(false)]), json!(0));
        assert_eq!(ok("LENGTH", vec![json!(true)]), json!(1));
        assert_eq!(ok("LENGTH", vec![json!(null)]), json!(0));
        assert_eq!(
            ok(
                "COUNT",
                vec![json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": {"f": 5, "g": 6}})]
            ),
            json!(5)
        );
    }

    #[test]
    fn control_flow() {
        assert_eq!(
            ok("NOT_NULL", vec![json!(null), json!(0), json!(1)]),
            json!(0)
        );
        assert_eq!(ok("NOT_NULL", vec![json!(null)]), json!(null));
        assert_eq!(
            ok("FIRST_LIST", vec![json!(1), json!({}), json!([2])]),
            json!([2])
        );
        assert_eq!(ok("FIRST_LIST", vec![json!(1)]), json!(null));
        assert_eq!(
            ok("FIRST_DOCUMENT", vec![json!([]), json!({"a": 1})]),
            json!({"a": 1})
        );
        assert_eq!(
            ok(
                "MIN_MATCH",
                vec![json!(true), json!(false), json!(true), json!(2)]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "MIN_MATCH",
                vec![json!(true), json!(false), json!(false), json!(2)]
            ),
            json!(false)
        );
        assert_eq!(
            ok(
                "IN_RANGE",
                vec![json!(4), json!(3), json!(5), json!(true), json!(true)]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "IN_RANGE",
                vec![json!(3), json!(3), json!(5), json!(false), json!(true)]
            ),
            json!(false)
        );
        assert_eq!(
            ok(
                "IN_RANGE",
                vec![json!(5), json!(3), json!(5), json!(false), json!(true)]
            ),
            json!(true)
        );
        assert_eq!(
            ok(
                "IN_RANGE",
                vec![
                    json!("fox grape"),
                    json!("fo"),
                    json!("fp"),
                    json!(true),
                    json!(false)
                ]
            ),
            json!(true)
        );
        assert_eq!(ok("CHECK_DOCUMENT", vec![json!({"a": 1})]), json!(true));
        assert_eq!(ok("CHECK_DOCUMENT", vec![json!([1])]), json!(false));
        assert_eq!(ok("PASSTHRU", vec![json!([1])]), json!([1]));
        assert_eq!(ok("NOOPT", vec![json!(2)]), json!(2));
        assert_eq!(ok("NOEVAL", vec![json!(2)]), json!(2));
        assert_eq!(ok("V8", vec![json!("x")]), json!("x"));
        assert_eq!(ok("VERSION", vec![]), json!("3.12.4"));
    }

    #[test]
    fn failing_asserting_warning() {
        let mut ctx = FunctionContext::new();
        let err = call(&mut ctx, "FAIL", &[json!("error")]).unwrap_err();
        assert_eq!(err.number(), 1569);
        assert_eq!(err.message, "error");
        let err = call(&mut ctx, "FAIL", &[]).unwrap_err();
        assert_eq!(
            (err.number(), err.message.as_str()),
            (1569, "FAIL() called")
        );
        invalid("ASSERT", vec![json!(false), json!(1)]);
        invalid("WARN", vec![json!(false), json!(null)]);
        assert_eq!(ok("ASSERT", vec![json!(true), json!("msg")]), json!(true));
        let err = call(
            &mut ctx,
            "ASSERT",
            &[json!(false), json!("i is not greater 0")],
        )
        .unwrap_err();
        assert_eq!(
            (err.number(), err.message.as_str()),
            (1593, "i is not greater 0")
        );
        let (v, w) = run("WARN", vec![json!(false), json!("careful")]);
        assert_eq!((v, w), (json!(false), vec![1594]));
        assert_eq!(ok("WARN", vec![json!(1), json!("x")]), json!(true));
    }

    #[test]
    fn dynamic_calls() {
        assert_eq!(
            ok(
                "APPLY",
                vec![json!("SUBSTRING"), json!(["this is a test", 0, 7])]
            ),
            json!("this is")
        );
        assert_eq!(
            ok(
                "CALL",
                vec![
                    json!("substring"),
                    json!("this is a test"),
                    json!(0),
                    json!(4)
                ]
            ),
            json!("this")
        );
        assert_eq!(error("CALL", vec![json!("NOPE")]), 1540);
        assert_eq!(error("CALL", vec![json!("CALL"), json!("X")]), 1578);
        assert_eq!(error("APPLY", vec![json!("my::fn"), json!([])]), 1582);
        assert_eq!(error("CALL", vec![json!("UPPER")]), 1541);
        assert_eq!(error("CALL", vec![json!(1)]), 1542);
        invalid("APPLY", vec![json!("UPPER"), json!("a")]);
    }

    #[test]
    fn hashing() {
        let a = ok("HASH", vec![json!({"a": 1, "b": [1, 2]})]);
        let b = ok("HASH", vec![json!({"b": [1, 2], "a": 1})]);
        assert_eq!(a, b);
        assert_ne!(ok("HASH", vec![json!(1)]), ok("HASH", vec![json!("1")]));
        assert!(a.as_u64().is_some_and(|h| h < (1 << 51)));
        let m = ok("MINHASH", vec![json!(["foo", "bar", "baz"]), json!(5)]);
        assert_eq!(m.as_array().map(Vec::len), Some(5));
        assert_eq!(
            m,
            ok("MINHASH", vec![json!(["baz", "foo", "bar"]), json!(5)])
        );
        invalid("MINHASH", vec![json!(["a"]), json!(0)]);
        assert_eq!(ok("MINHASH_COUNT", vec![json!(0.05)]), json!(400));
        assert_eq!(ok("MINHASH_ERROR", vec![json!(400)]), json!(0.05));
        invalid("MINHASH_COUNT", vec![json!(1)]);
    }

    #[test]
    fn revisions() {
        let rev = quiver_types::Revision((1_552_320_905_314u64 << 20) | 3).encode();
        assert_eq!(
            ok("DECODE_REV", vec![json!(rev)]),
            json!({"date": "2019-03-11T16:15:05.314Z", "count": 3})
        );
        invalid("DECODE_REV", vec![json!(1)]);
        invalid("DECODE_REV", vec![json!("!!")]);
    }

    #[test]
    fn data_access() {
        assert_eq!(
            with_store("DOCUMENT", vec![json!("persons"), json!("persons/alice")]).unwrap(),
            json!({"_id": "persons/alice", "_key": "alice"})
        );
        assert_eq!(
            with_store("DOCUMENT", vec![json!("persons"), json!("alice")]).unwrap()["_key"],
            json!("alice")
        );
        assert_eq!(
            with_store(
                "DOCUMENT",
                vec![json!("persons"), json!(["alice", "persons/bob", "nobody"])]
            )
            .unwrap()
            .as_array()
            .map(Vec::len),
            Some(2)
        );
        assert_eq!(
            with_store("DOCUMENT", vec![json!("persons/alice")]).unwrap()["_key"],
            json!("alice")
        );
        assert_eq!(
            with_store("DOCUMENT", vec![json!(["persons/alice", "persons/bob"])])
                .unwrap()
                .as_array()
                .map(Vec::len),
            Some(2)
        );
        assert_eq!(
            with_store("DOCUMENT", vec![json!("other"), json!("persons/alice")]).unwrap(),
            json!(null)
        );
        assert_eq!(
            with_store("DOCUMENT", vec![json!("nocoll/x")]).unwrap(),
            json!(null)
        );
        assert_eq!(
            with_store("DOCUMENT", vec![json!("alice")]).unwrap(),
            json!(null)
        );
        assert_eq!(
            with_store("COLLECTION_COUNT", vec![json!("persons")]).unwrap(),
            json!(2)
        );
        assert_eq!(
            with_store("COLLECTION_COUNT", vec![json!("nope")])
                .unwrap_err()
                .number(),
            1203
        );
        assert_eq!(
            with_store("CURRENT_DATABASE", vec![]).unwrap(),
            json!("mydb")
        );
        assert_eq!(with_store("CURRENT_USER", vec![]).unwrap(), json!(null));
        assert_eq!(with_store("COLLECTIONS", vec![]).unwrap_err().number(), 9);
        assert_eq!(error("DOCUMENT", vec![json!("a/b")]), 1583);
        assert_eq!(
            with_store("SHARD_ID", vec![json!("persons"), json!({"a": 1})]).unwrap(),
            json!("persons")
        );
    }

    #[test]
    fn sleeping_is_bounded_and_killable() {
        let start = std::time::Instant::now();
        assert_eq!(ok("SLEEP", vec![json!(0.02)]), json!(null));
        assert!(start.elapsed() >= std::time::Duration::from_millis(20));
        invalid("SLEEP", vec![json!(-1)]);
        let killed = AtomicBool::new(true);
        let mut ctx = FunctionContext::new();
        ctx.killed = Some(&killed);
        let start = std::time::Instant::now();
        let err = call(&mut ctx, "SLEEP", &[json!(100)]).unwrap_err();
        assert_eq!(err.number(), 1500);
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        killed.store(false, Ordering::Relaxed);
    }

    #[test]
    fn schema_functions() {
        assert_eq!(
            ok("SCHEMA_VALIDATE", vec![json!({"a": 1}), json!(null)]),
            json!({"valid": true})
        );
        assert_eq!(
            ok("SCHEMA_VALIDATE", vec![json!({"a": 1}), json!({})]),
            json!({"valid": true})
        );
        invalid("SCHEMA_VALIDATE", vec![json!(1), json!({})]);
        // Validation needs no data access: quiver-core's validator checks the rule.
        assert_eq!(
            ok(
                "SCHEMA_VALIDATE",
                vec![json!({"a": 1}), json!({"rule": {}})]
            ),
            json!({"valid": true})
        );
        let schema = json!({
            "rule": {"type": "object", "required": ["b"]},
            "level": "none",
            "message": "b is missing"
        });
        assert_eq!(
            ok("SCHEMA_VALIDATE", vec![json!({"a": 1}), schema.clone()]),
            json!({"valid": false, "errorMessage": "b is missing"})
        );
        assert_eq!(
            ok("SCHEMA_VALIDATE", vec![json!({"b": 1}), schema]),
            json!({"valid": true})
        );
        // A source without a catalog cannot answer SCHEMA_GET.
        assert_eq!(
            with_store("SCHEMA_GET", vec![json!("persons")])
                .unwrap_err()
                .number(),
            9
        );
    }
}
