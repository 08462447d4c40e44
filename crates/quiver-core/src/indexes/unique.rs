//! Enforcement of unique persistent indexes.
//!
//! Each unique index keeps, in memory, `indexed value → [(key, revision)]`. Like the edge
//! index, entries are only added at commit time and an entry counts for a reader exactly when
//! the reader's snapshot holds that key at that revision, so one map serves every snapshot.
//! The map is built (and rebuilt once superseded entries dominate) from a snapshot while the
//! collection's writer lock is held, and commits only record into it under that same lock, so
//! a build and a commit never interleave.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use quiver_errors::{Error, ErrorCode, Result};
use quiver_storage::{CollectionId, Snapshot};
use quiver_types::Revision;
use serde_json::{Map, Number, Value};

use crate::indexes::definition::IndexDef;

/// Superseded entries tolerated before a rebuild is considered.
const REBUILD_MIN_GARBAGE: usize = if cfg!(test) { 8 } else { 10_000 };

/// The most values one document may contribute to one index (array expansion).
const MAX_VALUES_PER_DOCUMENT: usize = 10_000;

#[derive(Default)]
struct State {
    built: bool,
    map: HashMap<String, Vec<(Arc<str>, Revision)>>,
    entries: usize,
    superseded: usize,
}

/// One unique index's runtime state.
pub(crate) struct UniqueIndex {
    pub def: IndexDef,
    state: Mutex<State>,
}

impl std::fmt::Debug for UniqueIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UniqueIndex")
            .field("name", &self.def.name)
            .finish_non_exhaustive()
    }
}

/// Numbers compare by value in ArangoDB (`1 == 1.0`); objects by their attributes in any
/// order. This canonical form makes equal values equal strings.
pub(crate) fn canonical(value: &Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => {
                Value::Number(Number::from(f as i64))
            }
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), canonical(&map[k]));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn lookup<'a>(doc: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut current = doc.get(first)?;
    for part in rest {
        current = current.as_object()?.get(part)?;
    }
    Some(current)
}

/// The values one field contributes: one value, or each array element for `a[*]` / `a[*].b`.
pub(crate) fn field_values(doc: &Map<String, Value>, field: &str) -> Vec<Value> {
    match field.split_once("[*]") {
        None => {
            let path: Vec<String> = field.split('.').map(str::to_string).collect();
            vec![lookup(doc, &path).cloned().unwrap_or(Value::Null)]
        }
        Some((base, rest)) => {
            let path: Vec<String> = base.split('.').map(str::to_string).collect();
            let rest: Vec<String> = rest
                .trim_start_matches('.')
                .split('.')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            match lookup(doc, &path) {
                Some(Value::Array(items)) => {
                    let mut out: Vec<Value> = Vec::new();
                    for item in items.iter().take(MAX_VALUES_PER_DOCUMENT) {
                        let value = if rest.is_empty() {
                            Some(item.clone())
                        } else {
                            item.as_object().and_then(|o| lookup(o, &rest)).cloned()
                        };
                        let value = value.unwrap_or(Value::Null);
                        // A document never conflicts with itself: duplicates within one
                        // array count once.
                        if !out.contains(&value) {
                            out.push(value);
                        }
                    }
                    out
                }
                // Not an array: nothing to index for this field.
                _ => Vec::new(),
            }
        }
    }
}

impl UniqueIndex {
    pub fn new(def: IndexDef) -> UniqueIndex {
        UniqueIndex {
            def,
            state: Mutex::new(State::default()),
        }
    }

    /// The canonical index values of a document (empty when a sparse index skips it).
    pub fn values(&self, doc: &Map<String, Value>) -> Vec<String> {
        let mut combos: Vec<Vec<Value>> = vec![Vec::new()];
        for field in &self.def.fields {
            let values = field_values(doc, field);
            if values.is_empty() {
                return Vec::new();
            }
            let mut next = Vec::new();
            for combo in &combos {
                for value in &values {
                    if next.len() >= MAX_VALUES_PER_DOCUMENT {
                        break;
                    }
                    let mut c = combo.clone();
                    c.push(value.clone());
                    next.push(c);
                }
            }
            combos = next;
        }
        combos
            .into_iter()
            .filter(|combo| !(self.def.sparse && combo.iter().any(Value::is_null)))
            .map(|combo| canonical(&Value::Array(combo)).to_string())
            .collect()
    }

    /// The 1210 error naming `key` as the holder of the value.
    pub fn conflict_error(&self, key: &str) -> Error {
        self.violation(key)
    }

    fn violation(&self, key: &str) -> Error {
        Error::with_message(
            ErrorCode::UniqueConstraintViolated,
            format!(
                "unique constraint violated - in index {} of type {} over '{}'; conflicting key: {key}",
                self.def.name,
                self.def.kind,
                self.def.fields.join(", ")
            ),
        )
    }

    /// Builds the map from `snapshot` if it is not built (or is due for a rebuild). The caller
    /// holds the collection's writer lock. Error 1210 if the data already violates the index.
    pub fn ensure_built(&self, cid: CollectionId, snapshot: &Snapshot) -> Result<()> {
        let mut state = self.state.lock();
        if state.built && !Self::rebuild_due(&state) {
            return Ok(());
        }
        let mut fresh = State {
            built: true,
            ..State::default()
        };
        for item in snapshot.scan(cid)? {
            let (key, doc) = item?;
            let Ok(map) = serde_json::from_slice::<Map<String, Value>>(&doc.body) else {
                continue;
            };
            let key: Arc<str> = Arc::from(key.as_str());
            for value in self.values(&map) {
                let slot = fresh.map.entry(value).or_default();
                if let Some((other, _)) = slot.first() {
                    return Err(self.violation(other).with_status(400));
                }
                slot.push((Arc::clone(&key), doc.rev));
                fresh.entries += 1;
            }
        }
        *state = fresh;
        Ok(())
    }

    /// Whether the map must be built or rebuilt before it can be used (building needs the
    /// writer lock).
    pub fn needs_build(&self) -> bool {
        let state = self.state.lock();
        !state.built || Self::rebuild_due(&state)
    }

    fn rebuild_due(state: &State) -> bool {
        state.superseded > REBUILD_MIN_GARBAGE && state.superseded * 2 > state.entries
    }

    /// Finds a document other than `key` that holds `value` as `visible` sees it
    /// (`visible(key, rev)` tells whether the reader's state holds that version).
    pub fn conflict(
        &self,
        value: &str,
        key: &str,
        mut visible: impl FnMut(&str, Revision) -> Result<bool>,
    ) -> Result<Option<Error>> {
        let candidates: Vec<(Arc<str>, Revision)> = {
            let state = self.state.lock();
            match state.map.get(value) {
                Some(entries) => entries.clone(),
                None => return Ok(None),
            }
        };
        for (other, rev) in candidates {
            if &*other != key && visible(&other, rev)? {
                return Ok(Some(self.violation(&other)));
            }
        }
        Ok(None)
    }

    /// Records a committed version (the caller holds the writer lock).
    pub fn record(&self, key: &str, rev: Option<Revision>, values: &[String], replaced: bool) {
        let mut state = self.state.lock();
        if !state.built {
            return;
        }
        if replaced {
            state.superseded += 1;
        }
        if let Some(rev) = rev {
            let key: Arc<str> = Arc::from(key);
            for value in values {
                state
                    .map
                    .entry(value.clone())
                    .or_default()
                    .push((Arc::clone(&key), rev));
                state.entries += 1;
            }
        }
    }

    /// Every entry became garbage (truncate).
    pub fn truncated(&self) {
        let mut state = self.state.lock();
        state.superseded = state.entries.max(REBUILD_MIN_GARBAGE + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn index(fields: &[&str], sparse: bool) -> UniqueIndex {
        let def = IndexDef::parse(
            &json!({"type": "persistent", "fields": fields, "unique": true, "sparse": sparse}),
            2,
        )
        .unwrap();
        UniqueIndex::new(def)
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn values_follow_paths_sparseness_and_expansion() {
        let plain = index(&["a", "b.c"], false);
        assert_eq!(
            plain.values(&obj(json!({"a": 1.0, "b": {"c": "x"}}))),
            vec![r#"[1,"x"]"#]
        );
        assert_eq!(plain.values(&obj(json!({"a": 1}))), vec!["[1,null]"]);
        let sparse = index(&["a", "b.c"], true);
        assert!(sparse.values(&obj(json!({"a": 1}))).is_empty());
        let expanded = index(&["tags[*]"], false);
        let mut values = expanded.values(&obj(json!({"tags": ["x", "y", "x"]})));
        values.sort();
        assert_eq!(values, vec![r#"["x"]"#, r#"["y"]"#]);
        assert!(expanded.values(&obj(json!({"tags": "x"}))).is_empty());
        let nested = index(&["items[*].id"], false);
        assert_eq!(
            nested
                .values(&obj(json!({"items": [{"id": 1}, {"id": 2}]})))
                .len(),
            2
        );
        let objects = index(&["o"], false);
        assert_eq!(
            objects.values(&obj(json!({"o": {"b": 1, "a": 2}}))),
            objects.values(&obj(json!({"o": {"a": 2.0, "b": 1}})))
        );
    }
}
