//! Type check and cast functions.

use quiver_errors::Result;
use serde_json::Value;

use super::{arg, def, FunctionContext, FunctionDef};
use crate::value;

pub(super) const FUNCTIONS: &[FunctionDef] = &[
    def("TO_BOOL", 1, 1, to_bool),
    def("TO_NUMBER", 1, 1, to_number),
    def("TO_STRING", 1, 1, to_string),
    def("TO_ARRAY", 1, 1, to_array),
    def("TO_LIST", 1, 1, to_array),
    def("IS_NULL", 1, 1, is_null),
    def("IS_BOOL", 1, 1, is_bool),
    def("IS_NUMBER", 1, 1, is_number),
    def("IS_STRING", 1, 1, is_string),
    def("IS_ARRAY", 1, 1, is_array),
    def("IS_LIST", 1, 1, is_array),
    def("IS_OBJECT", 1, 1, is_object),
    def("IS_DOCUMENT", 1, 1, is_object),
    def("IS_DATESTRING", 1, 1, is_datestring),
    def("IS_KEY", 1, 1, is_key),
    def("TYPENAME", 1, 1, typename),
];

fn to_bool(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::Bool(value::to_bool(arg(args, 0))))
}

fn to_number(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    let a = arg(args, 0);
    if a.is_number() {
        return Ok(a.clone());
    }
    Ok(value::number(value::to_number(a)))
}

fn to_string(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::String(value::to_string(arg(args, 0))))
}

/// `TO_ARRAY` rules, shared with functions that accept "array or anything".
pub(crate) fn as_array(v: &Value) -> Vec<Value> {
    match v {
        Value::Null => Vec::new(),
        Value::Array(items) => items.clone(),
        Value::Object(map) => map.values().cloned().collect(),
        other => vec![other.clone()],
    }
}

fn to_array(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::Array(as_array(arg(args, 0))))
}

fn is_null(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::Bool(arg(args, 0).is_null()))
}

fn is_bool(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::Bool(arg(args, 0).is_boolean()))
}

fn is_number(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::Bool(arg(args, 0).is_number()))
}

fn is_string(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::Bool(arg(args, 0).is_string()))
}

fn is_array(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::Bool(arg(args, 0).is_array()))
}

fn is_object(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::Bool(arg(args, 0).is_object()))
}

fn is_datestring(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::Bool(match arg(args, 0) {
        Value::String(s) => super::date::is_date_string(s),
        _ => false,
    }))
}

/// ArangoDB's document key rules: 1 to 254 bytes of letters, digits and `_-:.@()+,=;$!*'%`.
pub(crate) fn valid_key(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 254
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'_' | b'-'
                        | b':'
                        | b'.'
                        | b'@'
                        | b'('
                        | b')'
                        | b'+'
                        | b','
                        | b'='
                        | b';'
                        | b'$'
                        | b'!'
                        | b'*'
                        | b'\''
                        | b'%'
                )
        })
}

fn is_key(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::Bool(match arg(args, 0) {
        Value::String(s) => valid_key(s),
        _ => false,
    }))
}

fn typename(_: &mut FunctionContext<'_>, args: &[Value]) -> Result<Value> {
    Ok(Value::String(value::type_name(arg(args, 0)).to_string()))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::ok;
    use serde_json::json;

    #[test]
    fn casts() {
        assert_eq!(ok("TO_BOOL", vec![json!("")]), json!(false));
        assert_eq!(ok("TO_BOOL", vec![json!([])]), json!(true));
        assert_eq!(ok("TO_NUMBER", vec![json!(" 12 ")]), json!(12));
        assert_eq!(ok("TO_NUMBER", vec![json!([8, 9])]), json!(0));
        assert_eq!(ok("TO_NUMBER", vec![json!("-1.5")]), json!(-1.5));
        assert_eq!(ok("TO_STRING", vec![json!(0.0000002)]), json!("2e-7"));
        assert_eq!(ok("TO_STRING", vec![json!(null)]), json!(""));
        assert_eq!(
            ok("TO_STRING", vec![json!({"foo": "bar", "baz": null})]),
            json!("{\"foo\":\"bar\",\"baz\":null}")
        );
        assert_eq!(ok("TO_ARRAY", vec![json!(null)]), json!([]));
        assert_eq!(ok("TO_LIST", vec![json!("foo")]), json!(["foo"]));
        assert_eq!(
            ok(
                "TO_ARRAY",
                vec![json!({"foo": 1, "bar": 2, "baz": [3, 4, 5]})]
            ),
            json!([1, 2, [3, 4, 5]])
        );
    }

    #[test]
    fn checks() {
        let values = [
            json!(null),
            json!(true),
            json!(1.5),
            json!("s"),
            json!([]),
            json!({}),
        ];
        let fns = [
            "IS_NULL",
            "IS_BOOL",
            "IS_NUMBER",
            "IS_STRING",
            "IS_ARRAY",
            "IS_OBJECT",
        ];
        for (i, f) in fns.iter().enumerate() {
            for (j, v) in values.iter().enumerate() {
                assert_eq!(ok(f, vec![v.clone()]), json!(i == j), "{f}({v})");
            }
        }
        assert_eq!(ok("IS_LIST", vec![json!([1])]), json!(true));
        assert_eq!(ok("IS_DOCUMENT", vec![json!({"a": 1})]), json!(true));
        assert_eq!(ok("TYPENAME", vec![json!(-4.56)]), json!("number"));
        assert_eq!(ok("TYPENAME", vec![json!({"foo": null})]), json!("object"));
    }

    #[test]
    fn keys_and_date_strings() {
        assert_eq!(
            ok("IS_KEY", vec![json!("abc-123_:.@()+,=;$!*'%")]),
            json!(true)
        );
        assert_eq!(ok("IS_KEY", vec![json!("")]), json!(false));
        assert_eq!(ok("IS_KEY", vec![json!("a/b")]), json!(false));
        assert_eq!(ok("IS_KEY", vec![json!("ä")]), json!(false));
        assert_eq!(ok("IS_KEY", vec![json!("x".repeat(255))]), json!(false));
        assert_eq!(ok("IS_KEY", vec![json!(1)]), json!(false));
        assert_eq!(ok("IS_DATESTRING", vec![json!("2015")]), json!(true));
        assert_eq!(ok("IS_DATESTRING", vec![json!("2015-10")]), json!(true));
        assert_eq!(ok("IS_DATESTRING", vec![json!("2015-02-31")]), json!(true));
        assert_eq!(
            ok("IS_DATESTRING", vec![json!("2015-10-11T12:13:14.123Z")]),
            json!(true)
        );
        assert_eq!(ok("IS_DATESTRING", vec![json!("foo")]), json!(false));
        assert_eq!(ok("IS_DATESTRING", vec![json!(1234)]), json!(false));
    }
}
