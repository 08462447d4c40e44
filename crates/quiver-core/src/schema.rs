//! Collection schema validation: ArangoDB's `schema` property (JSON Schema draft-4 `rule`,
//! `level`, `message`).
//!
//! Hand-written rather than a general JSON Schema crate because ArangoDB's contract is narrow
//! (draft-4 keywords, no remote references, system attributes ignored, four levels) and the
//! full-featured crates pull in a large dependency tree (HTTP clients for remote references,
//! format validators) that this crate must not carry. The rule is compiled once when the
//! schema is set (invalid rules fail with 1621) and evaluated on every write.

use quiver_errors::{Error, ErrorCode, Result};
use regex::Regex;
use serde_json::{Map, Value};

/// When validation applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    None,
    New,
    Moderate,
    Strict,
}

/// A compiled `schema` property.
#[derive(Debug)]
pub(crate) struct Schema {
    rule: Node,
    level: Level,
    message: String,
}

#[derive(Debug)]
enum Additional {
    Forbidden,
    Schema(Box<Node>),
}

#[derive(Debug)]
enum Items {
    Each(Box<Node>),
    Tuple(Vec<Node>),
}

#[derive(Debug, Default)]
struct Node {
    types: Option<Vec<String>>,
    enumeration: Option<Vec<Value>>,
    constant: Option<Value>,
    properties: Vec<(String, Node)>,
    pattern_properties: Vec<(Regex, Node)>,
    additional_properties: Option<Additional>,
    required: Vec<String>,
    min_properties: Option<usize>,
    max_properties: Option<usize>,
    items: Option<Items>,
    additional_items: Option<Additional>,
    min_items: Option<usize>,
    max_items: Option<usize>,
    unique_items: bool,
    min_length: Option<usize>,
    max_length: Option<usize>,
    pattern: Option<Regex>,
    minimum: Option<(f64, bool)>,
    maximum: Option<(f64, bool)>,
    multiple_of: Option<f64>,
    all_of: Vec<Node>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
    not: Option<Box<Node>>,
}

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::ValidationBadParameter, message.into())
}

fn count(value: &Value, keyword: &str) -> Result<usize> {
    value
        .as_u64()
        .map(|n| n as usize)
        .ok_or_else(|| bad(format!("'{keyword}' must be a non-negative integer")))
}

fn number(value: &Value, keyword: &str) -> Result<f64> {
    value
        .as_f64()
        .ok_or_else(|| bad(format!("'{keyword}' must be a number")))
}

fn schema_list(value: &Value, keyword: &str) -> Result<Vec<Node>> {
    match value {
        Value::Array(items) if !items.is_empty() => items.iter().map(compile).collect(),
        _ => Err(bad(format!(
            "'{keyword}' must be a non-empty array of schemas"
        ))),
    }
}

fn regex(value: &Value, keyword: &str) -> Result<Regex> {
    let text = value
        .as_str()
        .ok_or_else(|| bad(format!("'{keyword}' must be a string")))?;
    Regex::new(text).map_err(|e| bad(format!("invalid regular expression in '{keyword}': {e}")))
}

fn additional(value: &Value, keyword: &str) -> Result<Option<Additional>> {
    match value {
        Value::Bool(true) => Ok(None),
        Value::Bool(false) => Ok(Some(Additional::Forbidden)),
        Value::Object(_) => Ok(Some(Additional::Schema(Box::new(compile(value)?)))),
        _ => Err(bad(format!("'{keyword}' must be a boolean or a schema"))),
    }
}

const TYPES: &[&str] = &[
    "null", "boolean", "object", "array", "number", "integer", "string",
];

fn compile(value: &Value) -> Result<Node> {
    let Value::Object(object) = value else {
        return Err(bad("a schema must be an object"));
    };
    let mut node = Node::default();
    for (keyword, arg) in object {
        match keyword.as_str() {
            "type" => {
                let names: Vec<String> = match arg {
                    Value::String(name) => vec![name.clone()],
                    Value::Array(names) => names
                        .iter()
                        .map(|n| n.as_str().map(str::to_string))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| bad("'type' must be a string or an array of strings"))?,
                    _ => return Err(bad("'type' must be a string or an array of strings")),
                };
                if let Some(unknown) = names.iter().find(|n| !TYPES.contains(&n.as_str())) {
                    return Err(bad(format!("unknown type '{unknown}'")));
                }
                node.types = Some(names);
            }
            "enum" => match arg {
                Value::Array(values) => node.enumeration = Some(values.clone()),
                _ => return Err(bad("'enum' must be an array")),
            },
            "const" => node.constant = Some(arg.clone()),
            "properties" => {
                let props = arg
                    .as_object()
                    .ok_or_else(|| bad("'properties' must be an object"))?;
                for (name, schema) in props {
                    node.properties.push((name.clone(), compile(schema)?));
                }
            }
            "patternProperties" => {
                let props = arg
                    .as_object()
                    .ok_or_else(|| bad("'patternProperties' must be an object"))?;
                for (pattern, schema) in props {
                    let re = regex(&Value::String(pattern.clone()), "patternProperties")?;
                    node.pattern_properties.push((re, compile(schema)?));
                }
            }
            "additionalProperties" => {
                node.additional_properties = additional(arg, "additionalProperties")?
            }
            "required" => {
                node.required = arg
                    .as_array()
                    .and_then(|names| {
                        names
                            .iter()
                            .map(|n| n.as_str().map(str::to_string))
                            .collect::<Option<Vec<_>>>()
                    })
                    .ok_or_else(|| bad("'required' must be an array of strings"))?
            }
            "minProperties" => node.min_properties = Some(count(arg, keyword)?),
            "maxProperties" => node.max_properties = Some(count(arg, keyword)?),
            "items" => {
                node.items = Some(match arg {
                    Value::Array(list) => {
                        Items::Tuple(list.iter().map(compile).collect::<Result<_>>()?)
                    }
                    _ => Items::Each(Box::new(compile(arg)?)),
                })
            }
            "additionalItems" => node.additional_items = additional(arg, "additionalItems")?,
            "minItems" => node.min_items = Some(count(arg, keyword)?),
            "maxItems" => node.max_items = Some(count(arg, keyword)?),
            "uniqueItems" => node.unique_items = arg.as_bool().unwrap_or(false),
            "minLength" => node.min_length = Some(count(arg, keyword)?),
            "maxLength" => node.max_length = Some(count(arg, keyword)?),
            "pattern" => node.pattern = Some(regex(arg, keyword)?),
            "minimum" => node.minimum = Some((number(arg, keyword)?, false)),
            "maximum" => node.maximum = Some((number(arg, keyword)?, false)),
            "multipleOf" => {
                let step = number(arg, keyword)?;
                if step <= 0.0 {
                    return Err(bad("'multipleOf' must be greater than 0"));
                }
                node.multiple_of = Some(step);
            }
            "allOf" => node.all_of = schema_list(arg, keyword)?,
            "anyOf" => node.any_of = schema_list(arg, keyword)?,
            "oneOf" => node.one_of = schema_list(arg, keyword)?,
            "not" => node.not = Some(Box::new(compile(arg)?)),
            "$ref" => {
                return Err(bad(
                    "'$ref' is not supported in schema rules (remote and local references are disabled)",
                ))
            }
            // exclusiveMinimum/Maximum are applied below (draft-4 booleans or draft-6 numbers);
            // unknown keywords (format, title, description, …) are ignored as JSON Schema says.
            _ => {}
        }
    }
    for (keyword, slot) in [
        ("exclusiveMinimum", &mut node.minimum),
        ("exclusiveMaximum", &mut node.maximum),
    ] {
        match object.get(keyword) {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => match slot {
                Some((_, exclusive)) => *exclusive = true,
                None => return Err(bad(format!("'{keyword}' needs the matching bound"))),
            },
            Some(Value::Number(n)) => *slot = Some((n.as_f64().unwrap_or(0.0), true)),
            Some(_) => return Err(bad(format!("'{keyword}' must be a boolean or a number"))),
        }
    }
    Ok(node)
}

/// JSON equality with numbers compared by value (`1 == 1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "string" => value.is_string(),
        _ => false,
    }
}

fn additional_ok(rule: &Option<Additional>, value: &Value) -> bool {
    match rule {
        None => true,
        Some(Additional::Forbidden) => false,
        Some(Additional::Schema(node)) => node.accepts(value),
    }
}

impl Node {
    fn accepts(&self, value: &Value) -> bool {
        if let Some(types) = &self.types {
            if !types.iter().any(|t| type_matches(t, value)) {
                return false;
            }
        }
        if let Some(options) = &self.enumeration {
            if !options.iter().any(|o| json_eq(o, value)) {
                return false;
            }
        }
        if let Some(constant) = &self.constant {
            if !json_eq(constant, value) {
                return false;
            }
        }
        let ok = match value {
            Value::Object(map) => self.accepts_object(map),
            Value::Array(items) => self.accepts_array(items),
            Value::String(text) => self.accepts_string(text),
            Value::Number(n) => self.accepts_number(n.as_f64().unwrap_or(0.0)),
            _ => true,
        };
        ok && self.all_of.iter().all(|n| n.accepts(value))
            && (self.any_of.is_empty() || self.any_of.iter().any(|n| n.accepts(value)))
            && (self.one_of.is_empty()
                || self.one_of.iter().filter(|n| n.accepts(value)).count() == 1)
            && !self.not.as_ref().is_some_and(|n| n.accepts(value))
    }

    fn accepts_object(&self, map: &Map<String, Value>) -> bool {
        if self.required.iter().any(|name| !map.contains_key(name)) {
            return false;
        }
        if self.min_properties.is_some_and(|min| map.len() < min)
            || self.max_properties.is_some_and(|max| map.len() > max)
        {
            return false;
        }
        for (name, value) in map {
            let mut matched = false;
            if let Some((_, node)) = self.properties.iter().find(|(n, _)| n == name) {
                matched = true;
                if !node.accepts(value) {
                    return false;
                }
            }
            for (re, node) in &self.pattern_properties {
                if re.is_match(name) {
                    matched = true;
                    if !node.accepts(value) {
                        return false;
                    }
                }
            }
            if !matched && !additional_ok(&self.additional_properties, value) {
                return false;
            }
        }
        true
    }

    fn accepts_array(&self, items: &[Value]) -> bool {
        if self.min_items.is_some_and(|min| items.len() < min)
            || self.max_items.is_some_and(|max| items.len() > max)
        {
            return false;
        }
        if self.unique_items {
            for (i, a) in items.iter().enumerate() {
                if items[i + 1..].iter().any(|b| json_eq(a, b)) {
                    return false;
                }
            }
        }
        match &self.items {
            None => true,
            Some(Items::Each(node)) => items.iter().all(|item| node.accepts(item)),
            Some(Items::Tuple(nodes)) => {
                items
                    .iter()
                    .enumerate()
                    .all(|(i, item)| match nodes.get(i) {
                        Some(node) => node.accepts(item),
                        None => additional_ok(&self.additional_items, item),
                    })
            }
        }
    }

    fn accepts_string(&self, text: &str) -> bool {
        let length = || text.chars().count();
        !(self.min_length.is_some_and(|min| length() < min)
            || self.max_length.is_some_and(|max| length() > max)
            || self.pattern.as_ref().is_some_and(|re| !re.is_match(text)))
    }

    fn accepts_number(&self, n: f64) -> bool {
        if let Some((min, exclusive)) = self.minimum {
            if n < min || (exclusive && n == min) {
                return false;
            }
        }
        if let Some((max, exclusive)) = self.maximum {
            if n > max || (exclusive && n == max) {
                return false;
            }
        }
        if let Some(step) = self.multiple_of {
            let ratio = n / step;
            if (ratio - ratio.round()).abs() > 1e-9 {
                return false;
            }
        }
        true
    }
}

/// The attributes the schema never sees.
const SYSTEM_ATTRIBUTES: &[&str] = &["_key", "_id", "_rev", "_from", "_to"];

/// `SCHEMA_VALIDATE()`: checks `doc` against a schema object's rule whatever its level (the
/// function asks "is this valid", not "would this write be refused"); None when valid, else
/// the schema's message. Error 1621 for an invalid rule.
pub fn validate_with_schema(schema: &Value, doc: &Map<String, Value>) -> Result<Option<String>> {
    let schema = Schema::compile(schema)?;
    Ok((!schema.valid(doc)).then(|| schema.message.clone()))
}

impl Schema {
    /// Compiles a normalized schema object (`rule`, `level`, `message`); error 1621 for an
    /// invalid rule.
    pub fn compile(schema: &Value) -> Result<Schema> {
        let rule = compile(schema.get("rule").unwrap_or(&Value::Null))?;
        let level = match schema
            .get("level")
            .and_then(Value::as_str)
            .unwrap_or("strict")
        {
            "none" => Level::None,
            "new" => Level::New,
            "moderate" => Level::Moderate,
            _ => Level::Strict,
        };
        let message = schema
            .get("message")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .unwrap_or("Schema validation failed")
            .to_string();
        Ok(Schema {
            rule,
            level,
            message,
        })
    }

    fn valid(&self, doc: &Map<String, Value>) -> bool {
        if SYSTEM_ATTRIBUTES.iter().any(|a| doc.contains_key(*a)) {
            let mut user = doc.clone();
            for attribute in SYSTEM_ATTRIBUTES {
                user.shift_remove(*attribute);
            }
            self.rule.accepts(&Value::Object(user))
        } else {
            self.rule.accepts(&Value::Object(doc.clone()))
        }
    }

    fn failure(&self) -> Error {
        Error::with_message(ErrorCode::ValidationFailed, self.message.clone())
    }

    /// Checks a newly inserted document (levels new, moderate, strict); error 1620.
    pub fn check_insert(&self, doc: &Map<String, Value>) -> Result<()> {
        if self.level != Level::None && !self.valid(doc) {
            return Err(self.failure());
        }
        Ok(())
    }

    /// Checks a modified document: strict always, moderate unless the stored document was
    /// already invalid (`old` is parsed only then); error 1620.
    pub fn check_modify(
        &self,
        new: &Map<String, Value>,
        old: impl FnOnce() -> Result<Map<String, Value>>,
    ) -> Result<()> {
        match self.level {
            Level::None | Level::New => Ok(()),
            Level::Strict => {
                if self.valid(new) {
                    Ok(())
                } else {
                    Err(self.failure())
                }
            }
            Level::Moderate => {
                if self.valid(new) || !self.valid(&old()?) {
                    Ok(())
                } else {
                    Err(self.failure())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(rule: Value, level: &str) -> Schema {
        Schema::compile(&json!({"rule": rule, "level": level, "message": "nope"})).unwrap()
    }

    fn obj(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn arangodb_documentation_example() {
        let s = schema(
            json!({
                "properties": {"nums": {"type": "array", "items": {"type": "number", "maximum": 6}}},
                "additionalProperties": {"type": "string"},
                "required": ["nums"]
            }),
            "moderate",
        );
        assert!(s
            .check_insert(&obj(
                json!({"_key": "x", "_rev": "y", "nums": [1, 2, 6], "name": "a"})
            ))
            .is_ok());
        for bad in [
            json!({"nums": [7]}),
            json!({"nums": [1], "other": 1}),
            json!({"name": "a"}),
            json!({"nums": "1"}),
        ] {
            let err = s.check_insert(&obj(bad)).unwrap_err();
            assert_eq!(
                (err.code, err.message.as_str()),
                (ErrorCode::ValidationFailed, "nope")
            );
        }
    }

    #[test]
    fn keywords() {
        let cases = [
            (json!({"type": "integer"}), json!(3), json!(3.5)),
            (json!({"type": ["string", "null"]}), json!(null), json!(1)),
            (json!({"enum": [1, "a"]}), json!(1.0), json!("b")),
            (
                json!({"minLength": 2, "maxLength": 3}),
                json!("äö"),
                json!("abcd"),
            ),
            (json!({"pattern": "^a+$"}), json!("aaa"), json!("ab")),
            (
                json!({"minimum": 1, "exclusiveMinimum": true}),
                json!(1.5),
                json!(1),
            ),
            (json!({"exclusiveMaximum": 5}), json!(4), json!(5)),
            (json!({"multipleOf": 0.5}), json!(2.5), json!(2.3)),
            (
                json!({"minItems": 1, "uniqueItems": true}),
                json!([1, 2]),
                json!([1, 1.0]),
            ),
            (
                json!({"items": [{"type": "string"}], "additionalItems": false}),
                json!(["a"]),
                json!(["a", 1]),
            ),
            (
                json!({"minProperties": 1, "patternProperties": {"^n": {"type": "number"}}}),
                json!({"n1": 1}),
                json!({"n1": "x"}),
            ),
            (
                json!({"anyOf": [{"type": "string"}, {"type": "number"}]}),
                json!(1),
                json!(null),
            ),
            (
                json!({"oneOf": [{"minimum": 0}, {"maximum": 10}]}),
                json!(-1),
                json!(5),
            ),
            (
                json!({"allOf": [{"minimum": 0}, {"maximum": 10}]}),
                json!(5),
                json!(11),
            ),
            (json!({"not": {"type": "string"}}), json!(1), json!("s")),
            (
                json!({"const": {"a": [1]}}),
                json!({"a": [1.0]}),
                json!({"a": [2]}),
            ),
        ];
        for (rule, good, bad) in cases {
            let s = schema(json!({"properties": {"v": rule.clone()}}), "strict");
            assert!(
                s.check_insert(&obj(json!({"v": good}))).is_ok(),
                "{rule} accepts {good}"
            );
            assert!(
                s.check_insert(&obj(json!({"v": bad}))).is_err(),
                "{rule} rejects {bad}"
            );
        }
    }

    #[test]
    fn invalid_rules_are_1621() {
        for rule in [
            json!(1),
            json!({"type": "foo"}),
            json!({"pattern": "("}),
            json!({"required": "a"}),
            json!({"minLength": -1}),
            json!({"$ref": "http://example.com/schema"}),
            json!({"anyOf": []}),
            json!({"multipleOf": 0}),
        ] {
            let err = Schema::compile(&json!({"rule": rule})).unwrap_err();
            assert_eq!(err.code, ErrorCode::ValidationBadParameter, "{rule}");
        }
    }

    #[test]
    fn levels() {
        let rule = json!({"properties": {"n": {"type": "number"}}});
        let invalid = obj(json!({"n": "x"}));
        let valid = obj(json!({"n": 1}));
        let none = schema(rule.clone(), "none");
        assert!(none.check_insert(&invalid).is_ok());
        let new = schema(rule.clone(), "new");
        assert!(new.check_insert(&invalid).is_err());
        assert!(new.check_modify(&invalid, || Ok(valid.clone())).is_ok());
        let moderate = schema(rule.clone(), "moderate");
        assert!(moderate
            .check_modify(&invalid, || Ok(valid.clone()))
            .is_err());
        assert!(moderate
            .check_modify(&invalid, || Ok(invalid.clone()))
            .is_ok());
        let strict = schema(rule, "strict");
        assert!(strict
            .check_modify(&invalid, || Ok(invalid.clone()))
            .is_err());
        assert!(strict.check_modify(&valid, || Ok(invalid.clone())).is_ok());
    }
}
