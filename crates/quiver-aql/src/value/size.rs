//! The memory a value is charged to a query's budget with (`memoryLimit`).

use serde_json::Value;

/// Rough in-memory size of a value, for memory accounting. Deliberately cheap: strings and
/// containers are counted by length, not walked byte by byte.
pub fn estimate_size(v: &Value) -> u64 {
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => 16,
        Value::String(s) => 24 + s.len() as u64,
        Value::Array(a) => 24 + a.iter().map(estimate_size).sum::<u64>(),
        Value::Object(m) => {
            48 + m
                .iter()
                .map(|(k, v)| 24 + k.len() as u64 + estimate_size(v))
                .sum::<u64>()
        }
    }
}
