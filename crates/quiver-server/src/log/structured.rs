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

    /// The parameters that are on, each `true` (ArangoDB lists only those):
    /// `{"database": true, "url": true}`.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        for (i, name) in NAMES.iter().enumerate() {
            if self.on[i].load(Ordering::Relaxed) {
                map.insert((*name).to_owned(), Value::Bool(true));
            }
        }
        Value::Object(map)
    }

    /// Applies `{"name": bool, …}`: as ArangoDB does, unknown names and values that are
    /// not booleans are ignored, and names left out keep their setting.
    pub fn apply(&self, body: &Map<String, Value>) {
        for (name, value) in body {
            let (Some(i), Some(on)) = (NAMES.iter().position(|n| n == name), value.as_bool())
            else {
                continue;
            };
            self.on[i].store(on, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn apply_sets_known_booleans_and_lists_what_is_on() {
        let params = StructuredParams::default();
        assert_eq!(params.to_json(), json!({}));
        let body = json!({"database": true, "other": true});
        params.apply(body.as_object().unwrap());
        assert!(params.snapshot().database && !params.snapshot().url);
        assert_eq!(params.to_json(), json!({"database": true}));
        let mixed = json!({"url": true, "username": "yes"});
        params.apply(mixed.as_object().unwrap());
        assert_eq!(params.to_json(), json!({"database": true, "url": true}));
        params.apply(json!({"database": false}).as_object().unwrap());
        assert_eq!(params.to_json(), json!({"url": true}));
    }
}
