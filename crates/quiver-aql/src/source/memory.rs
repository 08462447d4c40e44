//! An in-memory [`DataSource`] for unit and golden tests: a map of databases, each a map of
//! collections holding documents by key. A transaction works on a copy-on-write snapshot
//! (collections are `Arc`s) and installs the modified collections on commit.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{Map, Value};

use super::{
    CollectionInfo, DataSource, DocIter, EdgeHits, Transaction, WriteOptions, WriteOutcome,
};

#[derive(Clone, Debug, Default)]
struct MemCollection {
    is_edge: bool,
    docs: Arc<BTreeMap<String, Value>>,
    /// Persistent index definitions: (id, parsed definition as given).
    indexes: Vec<(u64, Value)>,
}

type Collections = BTreeMap<String, MemCollection>;

/// Test data source.
#[derive(Default)]
pub struct MemorySource {
    databases: RwLock<HashMap<String, Arc<RwLock<Collections>>>>,
    revision: Arc<AtomicU64>,
    key: Arc<AtomicU64>,
    /// Bumped after every create call (the plan cache's catalog version).
    catalog: AtomicU64,
}

impl MemorySource {
    /// A source with one empty database `_system`.
    pub fn new() -> MemorySource {
        let source = MemorySource::default();
        source.create_database("_system");
        source
    }

    pub fn create_database(&self, name: &str) {
        self.databases.write().entry(name.to_string()).or_default();
        self.catalog.fetch_add(1, Ordering::AcqRel);
    }

    /// Creates (or empties) a collection and fills it; documents without `_key` get
    /// sequential keys "1", "2", ....
    pub fn create_collection(
        &self,
        database: &str,
        name: &str,
        is_edge: bool,
        docs: Vec<Value>,
    ) -> Result<()> {
        let db = self.database(database)?;
        let mut collection = MemCollection {
            is_edge,
            docs: Arc::default(),
            indexes: Vec::new(),
        };
        let mut next = 0u64;
        let map = Arc::make_mut(&mut collection.docs);
        for doc in docs {
            let Value::Object(mut obj) = doc else {
                return Err(Error::new(ErrorCode::DocumentTypeInvalid));
            };
            let key = match obj.get("_key") {
                Some(Value::String(k)) => k.clone(),
                _ => {
                    next += 1;
                    next.to_string()
                }
            };
            let rev = self.revision.fetch_add(1, Ordering::Relaxed) + 1;
            let mut out = Map::new();
            out.insert("_key".into(), Value::String(key.clone()));
            out.insert("_id".into(), Value::String(format!("{name}/{key}")));
            out.insert("_rev".into(), Value::String(format!("_{rev}")));
            obj.remove("_key");
            obj.remove("_id");
            obj.remove("_rev");
            out.extend(obj);
            map.insert(key, Value::Object(out));
        }
        db.write().insert(name.to_string(), collection);
        self.catalog.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Adds a persistent index definition (`type` persistent/hash/skiplist, `fields`,
    /// optional `unique`, `sparse`, `name`); lookups answer as a real index would (computed
    /// from the documents). Returns its id.
    pub fn create_index(&self, database: &str, name: &str, definition: Value) -> Result<u64> {
        let db = self.database(database)?;
        let mut guard = db.write();
        let collection = guard.get_mut(name).ok_or_else(|| not_found(name))?;
        let kind = definition.get("type").and_then(Value::as_str).unwrap_or("");
        // Geo, fulltext and ttl definitions are kept so that plans and index functions see
        // them; lookups through them fall back to scans (the in-memory source keeps no
        // structures for them).
        if !matches!(
            kind,
            "persistent" | "hash" | "skiplist" | "geo" | "fulltext" | "ttl"
        ) {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("the in-memory source has no '{kind}' indexes"),
            ));
        }
        let id = collection.indexes.len() as u64 + 2;
        collection.indexes.push((id, definition));
        self.catalog.fetch_add(1, Ordering::AcqRel);
        Ok(id)
    }

    /// All documents of a collection ordered by key (for test assertions).
    pub fn documents(&self, database: &str, name: &str) -> Result<Vec<Value>> {
        let db = self.database(database)?;
        let guard = db.read();
        let collection = guard.get(name).ok_or_else(|| not_found(name))?;
        Ok(collection.docs.values().cloned().collect())
    }

    fn database(&self, name: &str) -> Result<Arc<RwLock<Collections>>> {
        self.databases
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::new(ErrorCode::DatabaseNotFound))
    }
}

fn not_found(name: &str) -> Error {
    Error::with_message(
        ErrorCode::DataSourceNotFound,
        format!("collection or view not found: {name}"),
    )
}

impl DataSource for MemorySource {
    fn catalog_version(&self) -> Option<u64> {
        Some(self.catalog.load(Ordering::Acquire))
    }

    fn begin(&self, database: &str, _writes: &[String]) -> Result<Box<dyn Transaction>> {
        let db = self.database(database)?;
        let snapshot = db.read().clone();
        Ok(Box::new(MemoryTransaction {
            db,
            snapshot,
            touched: Vec::new(),
            revision: self.revision.clone(),
            key: self.key.clone(),
        }))
    }
}

struct MemoryTransaction {
    db: Arc<RwLock<Collections>>,
    snapshot: Collections,
    touched: Vec<String>,
    revision: Arc<AtomicU64>,
    key: Arc<AtomicU64>,
}

impl MemoryTransaction {
    fn coll(&self, name: &str) -> Result<&MemCollection> {
        self.snapshot.get(name).ok_or_else(|| not_found(name))
    }

    fn docs_mut(&mut self, name: &str) -> Result<&mut BTreeMap<String, Value>> {
        if !self.touched.iter().any(|t| t == name) {
            self.touched.push(name.to_string());
        }
        let coll = self.snapshot.get_mut(name).ok_or_else(|| not_found(name))?;
        Ok(Arc::make_mut(&mut coll.docs))
    }

    fn next_rev(&self) -> String {
        format!("_{}", self.revision.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn key_of(doc: &Value) -> Result<String> {
        match doc.get("_key") {
            Some(Value::String(k)) => Ok(k.clone()),
            Some(_) => Err(Error::new(ErrorCode::DocumentKeyBad)),
            None => Err(Error::new(ErrorCode::DocumentKeyMissing)),
        }
    }

    /// `versionAttribute`: the write is a no-op (the stored document is both OLD and NEW), as
    /// in the core.
    fn version_keeps(old: &Value, incoming: &Map<String, Value>, options: &WriteOptions) -> bool {
        match (&options.version_attribute, old.as_object()) {
            (Some(attribute), Some(stored)) => {
                quiver_core::version_keeps_stored(attribute, incoming, stored)
            }
            _ => false,
        }
    }

    fn check_rev(old: &Value, doc: &Value, options: &WriteOptions) -> Result<()> {
        if options.ignore_revs {
            return Ok(());
        }
        if let Some(rev) = doc.get("_rev").and_then(Value::as_str) {
            if old.get("_rev").and_then(Value::as_str) != Some(rev) {
                return Err(Error::new(ErrorCode::ArangoConflict));
            }
        }
        Ok(())
    }

    fn finish(
        &mut self,
        collection: &str,
        key: &str,
        body: Map<String, Value>,
        is_edge: bool,
    ) -> Result<Value> {
        if is_edge {
            for attr in ["_from", "_to"] {
                match body.get(attr) {
                    Some(Value::String(s)) if s.contains('/') => {}
                    _ => return Err(Error::new(ErrorCode::InvalidEdgeAttribute)),
                }
            }
        }
        let mut out = Map::new();
        out.insert("_key".into(), Value::String(key.to_string()));
        out.insert("_id".into(), Value::String(format!("{collection}/{key}")));
        out.insert("_rev".into(), Value::String(self.next_rev()));
        for (k, v) in body {
            if !matches!(k.as_str(), "_key" | "_id" | "_rev") {
                out.insert(k, v);
            }
        }
        let doc = Value::Object(out);
        self.docs_mut(collection)?
            .insert(key.to_string(), doc.clone());
        Ok(doc)
    }
}

fn merge_patch(target: &mut Map<String, Value>, patch: Map<String, Value>, options: &WriteOptions) {
    for (k, v) in patch {
        match v {
            Value::Null if !options.keep_null => {
                target.remove(&k);
            }
            Value::Object(inner) if options.merge_objects => match target.get_mut(&k) {
                Some(Value::Object(existing)) => merge_patch(existing, inner, options),
                _ => {
                    let mut fresh = Map::new();
                    merge_patch(&mut fresh, inner, options);
                    target.insert(k, Value::Object(fresh));
                }
            },
            other => {
                target.insert(k, other);
            }
        }
    }
}

impl Transaction for MemoryTransaction {
    fn collection(&self, name: &str) -> Result<CollectionInfo> {
        let coll = self.coll(name)?;
        Ok(CollectionInfo {
            name: name.to_string(),
            is_edge: coll.is_edge,
        })
    }

    fn count(&self, collection: &str) -> Result<u64> {
        Ok(self.coll(collection)?.docs.len() as u64)
    }

    fn get(&self, collection: &str, key: &str) -> Result<Option<Value>> {
        Ok(self.coll(collection)?.docs.get(key).cloned())
    }

    fn scan(&self, collection: &str) -> Result<DocIter> {
        let docs: Vec<Value> = self.coll(collection)?.docs.values().cloned().collect();
        Ok(Box::new(docs.into_iter().map(Ok)))
    }

    fn edges(
        &self,
        collection: &str,
        vertex: &str,
        outbound: bool,
        out: &mut EdgeHits,
    ) -> Result<()> {
        let (here, there) = if outbound {
            ("_from", "_to")
        } else {
            ("_to", "_from")
        };
        let mut found = Vec::new();
        for doc in self.coll(collection)?.docs.values() {
            if doc.get(here).and_then(Value::as_str) != Some(vertex) {
                continue;
            }
            let field = |name: &str| doc.get(name).and_then(Value::as_str);
            if let (Some(key), Some(other)) = (field("_key"), field(there)) {
                // Revisions count up ("_1", "_2", ...): ordering by them gives the order in
                // which the edges were written, which is the order of quiver-core's (and
                // ArangoDB's) edge index.
                let rev: u64 = field("_rev")
                    .and_then(|r| r.trim_start_matches('_').parse().ok())
                    .unwrap_or(0);
                found.push((rev, key, other));
            }
        }
        found.sort_by_key(|(rev, _, _)| *rev);
        for (rev, key, other) in found {
            out.push(key, quiver_types::Revision(rev), other);
        }
        Ok(())
    }

    fn secondary_indexes(&self, collection: &str) -> Result<Vec<super::IndexMeta>> {
        let coll = self.coll(collection)?;
        Ok(coll
            .indexes
            .iter()
            .map(|(id, def)| {
                let (fields, unique, sparse) = index_shape(def);
                let selectivity = if unique {
                    1.0
                } else {
                    quiver_core::selectivity_of(
                        &fields,
                        sparse,
                        coll.docs.iter().map(|(k, d)| (k.as_str(), d)),
                    )
                };
                let kind = def["type"].as_str().unwrap_or("persistent").to_string();
                let name = def
                    .get("name")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("idx_{id}"), str::to_string);
                let estimate = (selectivity * 10_000.0).round() / 10_000.0;
                let mut description = serde_json::json!({
                    "id": format!("{collection}/{id}"), "name": name, "type": kind,
                    "fields": fields, "unique": unique, "sparse": sparse,
                    "selectivityEstimate": estimate,
                });
                // Type-specific options the planner reads (how a geo index reads documents).
                for option in ["geoJson", "legacyPolygons", "minLength"] {
                    if let Some(v) = def.get(option) {
                        description[option] = v.clone();
                    }
                }
                super::IndexMeta {
                    id: *id,
                    description,
                    name,
                    kind,
                    fields,
                    unique,
                    sparse,
                    selectivity,
                }
            })
            .collect())
    }

    fn indexes(&self, collection: &str) -> Result<Vec<Value>> {
        let mut out = vec![serde_json::json!({
            "id": format!("{collection}/0"), "name": "primary", "type": "primary",
            "fields": ["_key"], "unique": true, "sparse": false,
        })];
        out.extend(
            self.secondary_indexes(collection)?
                .into_iter()
                .map(|ix| ix.description),
        );
        Ok(out)
    }

    fn index_lookup(
        &self,
        collection: &str,
        index: u64,
        ranges: Vec<super::IndexRange>,
        reverse: bool,
    ) -> Result<DocIter> {
        let coll = self.coll(collection)?;
        if index == quiver_core::PRIMARY_INDEX_ID {
            let docs = quiver_core::lookup_documents(
                &["_key".to_string()],
                false,
                coll.docs.iter().map(|(k, d)| (k.clone(), d.clone())),
                &ranges,
                reverse,
            );
            return Ok(Box::new(docs.into_iter().map(Ok)));
        }
        let (_, def) = coll
            .indexes
            .iter()
            .find(|(id, _)| *id == index)
            .ok_or_else(|| Error::new(ErrorCode::IndexNotFound))?;
        let (fields, _, sparse) = index_shape(def);
        let docs = quiver_core::lookup_documents(
            &fields,
            sparse,
            coll.docs.iter().map(|(k, d)| (k.clone(), d.clone())),
            &ranges,
            reverse,
        );
        Ok(Box::new(docs.into_iter().map(Ok)))
    }

    fn insert(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome> {
        let is_edge = self.coll(collection)?.is_edge;
        let Value::Object(body) = doc else {
            return Err(Error::new(ErrorCode::DocumentTypeInvalid));
        };
        let key = match body.get("_key") {
            Some(Value::String(k)) if quiver_types::validate_key(k).is_ok() => k.clone(),
            Some(_) => return Err(Error::new(ErrorCode::DocumentKeyBad)),
            None => format!("k{}", self.key.fetch_add(1, Ordering::Relaxed) + 1),
        };
        if let Some(old) = self.coll(collection)?.docs.get(&key).cloned() {
            let overwrites = matches!(
                options.overwrite_mode.as_deref(),
                Some("replace" | "update")
            );
            if overwrites && Self::version_keeps(&old, &body, options) {
                return Ok(WriteOutcome {
                    old: Some(old.clone()),
                    new: Some(old),
                });
            }
            return match options.overwrite_mode.as_deref() {
                Some("ignore") => Ok(WriteOutcome { old: None, new: None }),
                Some("replace") => {
                    let new = self.finish(collection, &key, body, is_edge)?;
                    Ok(WriteOutcome { old: Some(old), new: Some(new) })
                }
                Some("update") => {
                    let mut merged = old.as_object().cloned().unwrap_or_default();
                    merge_patch(&mut merged, body, options);
                    let new = self.finish(collection, &key, merged, is_edge)?;
                    Ok(WriteOutcome { old: Some(old), new: Some(new) })
                }
                _ => Err(Error::with_message(
                    ErrorCode::UniqueConstraintViolated,
                    format!("unique constraint violated - in index primary of type primary over '_key'; conflicting key: {key}"),
                )),
            };
        }
        let new = self.finish(collection, &key, body, is_edge)?;
        Ok(WriteOutcome {
            old: None,
            new: Some(new),
        })
    }

    fn update(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome> {
        let is_edge = self.coll(collection)?.is_edge;
        let key = Self::key_of(&doc)?;
        let old = self
            .get(collection, &key)?
            .ok_or_else(|| Error::new(ErrorCode::DocumentNotFound))?;
        Self::check_rev(&old, &doc, options)?;
        let mut merged = old.as_object().cloned().unwrap_or_default();
        let Value::Object(patch) = doc else {
            return Err(Error::new(ErrorCode::DocumentTypeInvalid));
        };
        if Self::version_keeps(&old, &patch, options) {
            return Ok(WriteOutcome {
                old: Some(old.clone()),
                new: Some(old),
            });
        }
        merge_patch(&mut merged, patch, options);
        let new = self.finish(collection, &key, merged, is_edge)?;
        Ok(WriteOutcome {
            old: Some(old),
            new: Some(new),
        })
    }

    fn replace(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome> {
        let is_edge = self.coll(collection)?.is_edge;
        let key = Self::key_of(&doc)?;
        let old = self
            .get(collection, &key)?
            .ok_or_else(|| Error::new(ErrorCode::DocumentNotFound))?;
        Self::check_rev(&old, &doc, options)?;
        let Value::Object(body) = doc else {
            return Err(Error::new(ErrorCode::DocumentTypeInvalid));
        };
        if Self::version_keeps(&old, &body, options) {
            return Ok(WriteOutcome {
                old: Some(old.clone()),
                new: Some(old),
            });
        }
        let new = self.finish(collection, &key, body, is_edge)?;
        Ok(WriteOutcome {
            old: Some(old),
            new: Some(new),
        })
    }

    fn remove(
        &mut self,
        collection: &str,
        doc: Value,
        options: &WriteOptions,
    ) -> Result<WriteOutcome> {
        let key = Self::key_of(&doc)?;
        let old = self
            .get(collection, &key)?
            .ok_or_else(|| Error::new(ErrorCode::DocumentNotFound))?;
        Self::check_rev(&old, &doc, options)?;
        self.docs_mut(collection)?.remove(&key);
        Ok(WriteOutcome {
            old: Some(old),
            new: None,
        })
    }

    fn commit(self: Box<Self>) -> Result<()> {
        let mut guard = self.db.write();
        for name in &self.touched {
            if let Some(coll) = self.snapshot.get(name) {
                guard.insert(name.clone(), coll.clone());
            }
        }
        Ok(())
    }
}

fn index_shape(def: &Value) -> (Vec<String>, bool, bool) {
    let fields = def["fields"]
        .as_array()
        .map(|f| {
            f.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let flag = |k: &str| def.get(k).and_then(Value::as_bool).unwrap_or(false);
    (fields, flag("unique"), flag("sparse"))
}
