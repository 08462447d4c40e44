//! ArangoDB's structured log parameters (`database`, `username`, `url`): which facts about
//! the request the request log adds to its lines, switched on and off at run time through
//! `/_admin/log/structured`. All are off at start, as in ArangoDB.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};

/// The parameter names, in the order they are shown.
pub const NAMES: [&str; 3] = ["database", "username", "url"];

/// Which structured parameters are on.
#[derive(Debug, Default)]
pub struct StructuredParams {
    on: [AtomicBool; 3],
}

/// A reading of [`StructuredParams`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StructuredSnapshot {
    pub database: bool,
    pub username: bool,
    pub url: bool,
}

impl StructuredSnapshot {
    /// Whether any parameter is on.
    pub fn any(&self) -> bool {
        self.database || self.username || self.url
    }
}

impl StructuredParams {
    /// The settings now.
    pub fn snapshot(&self) -> StructuredSnapshot {
        let get = |i: usize| self.on[i].load(Ordering::Relaxed);
        StructuredSnapshot {
            database: get(0),
            username: get(1),
            url: get(2),
        }
    }

    /// `{"database": bool, "username": bool, "url": bool}`.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        for (i, name) in NAMES.iter().enumerate() {
            map.insert(
                (*name).to_owned(),
                self.on[i].load(Ordering::Relaxed).into(),
            );
        }
        Value::Object(map)
    }

    /// Applies `{"name": bool, …}`: unknown names are ignored (as ArangoDB does); a value
    /// that is not a boolean fails and changes nothing.
    pub fn apply(&self, body: &Map<String, Value>) -> Result<(), String> {
        let mut changes = Vec::new();
        for (name, value) in body {
            let Some(i) = NAMES.iter().position(|n| n == name) else {
                continue;
            };
            let on = value.as_bool().ok_or_else(|| {
                format!("the value of structured log parameter '{name}' must be a boolean")
            })?;
            changes.push((i, on));
        }
        for (i, on) in changes {
            self.on[i].store(on, Ordering::Relaxed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn apply_sets_known_names_and_rejects_non_booleans_whole() {
        let params = StructuredParams::default();
        assert_eq!(
            params.to_json(),
            json!({"database": false, "username": false, "url": false})
        );
        let body = json!({"database": true, "other": 1});
        params.apply(body.as_object().unwrap()).unwrap();
        assert!(params.snapshot().database && !params.snapshot().url);
        let bad = json!({"url": true, "username": "yes"});
        assert!(params.apply(bad.as_object().unwrap()).is_err());
        assert!(!params.snapshot().url, "a failed change changes nothing");
    }
}
