//! Computed values (`computedValues`): attributes the server sets on writes from an AQL
//! expression over the document. The expression language lives above this crate, so the core
//! defines the hook ([`ComputedValuesEvaluator`]) and applies the rules; whoever owns AQL
//! registers an evaluator with [`crate::Core::set_computed_values_evaluator`]. Without one,
//! computed values are stored and reported but not applied.

use std::sync::Arc;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{Map, Value};

/// Evaluates computed-value expressions.
pub trait ComputedValuesEvaluator: Send + Sync {
    /// Evaluates `expression` (AQL text starting with `RETURN`) with the bind parameter
    /// `@doc` set to `doc`. An error whose code is a warning-class problem is turned into
    /// `null` unless the computed value says `failOnWarning`.
    fn evaluate(&self, expression: &str, doc: &Value) -> Result<Value>;

    /// Why `expression` may not be a computed value (checked when a collection is created or
    /// its `computedValues` change), in ArangoDB's words after "invalid 'computedValues'
    /// entry: ".
    fn check(&self, expression: &str) -> std::result::Result<(), String> {
        let _ = expression;
        Ok(())
    }
}

/// Checks the expressions of `computed_values` (as [`parse`] accepted them) with `evaluator`,
/// when one is registered: 400/10 for the first it refuses.
pub(crate) fn check_expressions(
    computed_values: Option<&Value>,
    evaluator: Option<&Arc<dyn ComputedValuesEvaluator>>,
) -> Result<()> {
    let (Some(Value::Array(items)), Some(evaluator)) = (computed_values, evaluator) else {
        return Ok(());
    };
    for expression in items.iter().filter_map(|i| i.get("expression")?.as_str()) {
        evaluator
            .check(expression)
            .map_err(|reason| bad(format!("invalid 'computedValues' entry: {reason}")))?;
    }
    Ok(())
}

/// The write that triggers a computation (`computeOn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ComputeOn {
    Insert,
    Update,
    Replace,
}

#[derive(Clone, Debug)]
pub(crate) struct ComputedValue {
    name: String,
    expression: String,
    overwrite: bool,
    on: [bool; 3],
    keep_null: bool,
    fail_on_warning: bool,
}

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message.into())
}

/// Parses and checks `computedValues`: an array of objects with a non-system, unique `name`,
/// an `expression` starting with `RETURN`, optional booleans `overwrite`, `keepNull`,
/// `failOnWarning` and `computeOn` (a non-empty subset of insert/update/replace). Error 10.
pub(crate) fn parse(items: &[Value]) -> Result<Vec<ComputedValue>> {
    let mut out: Vec<ComputedValue> = Vec::with_capacity(items.len());
    for item in items {
        let object = item
            .as_object()
            .ok_or_else(|| bad("invalid 'computedValues' entry: expecting an object"))?;
        let name = object
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                bad("invalid 'computedValues' entry: 'name' must be a non-empty string")
            })?;
        if matches!(name, "_key" | "_id" | "_rev" | "_from" | "_to") {
            return Err(bad(format!(
                "invalid 'computedValues' entry: '{name}' is a system attribute"
            )));
        }
        if out.iter().any(|c| c.name == name) {
            return Err(bad(format!(
                "invalid 'computedValues' entry: duplicate attribute name '{name}'"
            )));
        }
        let expression = object
            .get("expression")
            .and_then(Value::as_str)
            .filter(|e| {
                e.trim_start()
                    .get(..6)
                    .is_some_and(|w| w.eq_ignore_ascii_case("RETURN"))
            })
            .ok_or_else(|| {
                bad("invalid 'computedValues' entry: 'expression' must be a string starting with RETURN")
            })?;
        let flag = |key: &str, default: bool| -> Result<bool> {
            match object.get(key) {
                None | Some(Value::Null) => Ok(default),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => Err(bad(format!(
                    "invalid 'computedValues' entry: '{key}' must be a boolean"
                ))),
            }
        };
        let on = match object.get("computeOn") {
            None | Some(Value::Null) => [true; 3],
            Some(Value::Array(ops)) if !ops.is_empty() => {
                let mut on = [false; 3];
                for op in ops {
                    match op.as_str() {
                        Some("insert") => on[0] = true,
                        Some("update") => on[1] = true,
                        Some("replace") => on[2] = true,
                        _ => {
                            return Err(bad(
                                "invalid 'computedValues' entry: 'computeOn' may hold insert, update, replace",
                            ))
                        }
                    }
                }
                on
            }
            Some(_) => {
                return Err(bad(
                    "invalid 'computedValues' entry: 'computeOn' must be a non-empty array",
                ))
            }
        };
        out.push(ComputedValue {
            name: name.to_string(),
            expression: expression.to_string(),
            overwrite: flag("overwrite", false)?,
            on,
            keep_null: flag("keepNull", true)?,
            fail_on_warning: flag("failOnWarning", false)?,
        });
    }
    Ok(out)
}

/// Applies the computed values for `op` to `doc` (before schema validation). The expressions
/// see the document with its `_key` and `_id` (ArangoDB's `@doc` holds the system attributes).
pub(crate) fn apply(
    values: &[ComputedValue],
    evaluator: &Arc<dyn ComputedValuesEvaluator>,
    op: ComputeOn,
    (key, id): (&str, &str),
    doc: &mut Map<String, Value>,
) -> Result<()> {
    let index = match op {
        ComputeOn::Insert => 0,
        ComputeOn::Update => 1,
        ComputeOn::Replace => 2,
    };
    let mut input: Option<Value> = None;
    for value in values {
        if !value.on[index] || (!value.overwrite && doc.contains_key(&value.name)) {
            continue;
        }
        let bound = input.get_or_insert_with(|| {
            let mut seen = doc.clone();
            seen.insert("_key".to_string(), Value::String(key.to_string()));
            seen.insert("_id".to_string(), Value::String(id.to_string()));
            Value::Object(seen)
        });
        let result = match evaluator.evaluate(&value.expression, bound) {
            Ok(result) => result,
            Err(err) if value.fail_on_warning => return Err(err),
            Err(_) => Value::Null,
        };
        if result.is_null() && !value.keep_null {
            doc.shift_remove(&value.name);
        } else {
            doc.insert(value.name.clone(), result);
        }
    }
    Ok(())
}
