//! Index definitions of a collection (`/_api/index`): the implicit primary and edge indexes
//! and user-defined persistent (with its legacy aliases hash and skiplist), ttl, geo, fulltext,
//! zkd/mdi and inverted indexes, with ArangoDB's validation, naming, ids and idempotent
//! creation. Unique persistent indexes are enforced on writes (see `unique.rs`).

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Map, Value};

/// Id of the implicit primary index.
pub const PRIMARY_INDEX_ID: u64 = 0;
/// Id of the implicit edge index of edge collections.
pub const EDGE_INDEX_ID: u64 = 1;
/// The first id handed to a user index.
pub(crate) const FIRST_USER_INDEX_ID: u64 = 2;

/// One user-defined index as stored in the collection's catalog entry.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct IndexDef {
    pub id: u64,
    pub name: String,
    /// The type as the client named it (`hash` and `skiplist` stay as given).
    pub kind: String,
    pub fields: Vec<String>,
    pub unique: bool,
    pub sparse: bool,
    /// Type-specific attributes, reported back as given or defaulted.
    pub extra: Map<String, Value>,
}

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message.into())
}

fn flag(body: &Map<String, Value>, key: &str, default: bool) -> Result<bool> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(bad(format!("'{key}' must be a boolean"))),
    }
}

fn string_fields(body: &Map<String, Value>) -> Result<Vec<String>> {
    let fields = body
        .get("fields")
        .and_then(Value::as_array)
        .filter(|f| !f.is_empty())
        .ok_or_else(|| bad("index definition must contain a non-empty 'fields' array"))?;
    fields
        .iter()
        .map(|f| {
            f.as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .ok_or_else(|| bad("index fields must be non-empty strings"))
        })
        .collect()
}

/// The `params` of a vector index with its defaults filled in (`defaultNProbe` 1,
/// `trainingIterations` 25). `factory` is kept as given when it names the index this build
/// makes (`IVF<nLists>,Flat`); other Faiss factory strings are refused.
fn vector_params(params: Option<&Value>) -> Result<Value> {
    let params = params
        .and_then(Value::as_object)
        .ok_or_else(|| bad("a vector index needs an object 'params'"))?;
    let metric = params
        .get("metric")
        .and_then(Value::as_str)
        .filter(|m| crate::vector::Metric::parse(m).is_some())
        .ok_or_else(|| bad("'params.metric' must be \"cosine\", \"l2\" or \"innerProduct\""))?;
    let positive = |key: &str, default: Option<u64>| -> Result<u64> {
        match params.get(key) {
            None | Some(Value::Null) => {
                default.ok_or_else(|| bad(format!("'params.{key}' is required")))
            }
            Some(v) => v
                .as_u64()
                .filter(|n| *n >= 1 && *n <= u64::from(u32::MAX))
                .ok_or_else(|| bad(format!("'params.{key}' must be a positive integer"))),
        }
    };
    let dimension = positive("dimension", None)?;
    let n_lists = positive("nLists", None)?;
    let mut out = Map::new();
    out.insert("metric".into(), metric.into());
    out.insert("dimension".into(), dimension.into());
    out.insert("nLists".into(), n_lists.into());
    out.insert(
        "defaultNProbe".into(),
        positive("defaultNProbe", Some(1))?.into(),
    );
    out.insert(
        "trainingIterations".into(),
        positive("trainingIterations", Some(25))?.into(),
    );
    match params.get("factory") {
        None | Some(Value::Null) => {}
        Some(Value::String(f)) if f.replace(' ', "") == format!("IVF{n_lists},Flat") => {
            out.insert("factory".into(), f.clone().into());
        }
        Some(Value::String(f)) if !f.starts_with("IVF") => {
            return Err(bad("Index definition not supported. Expected IVF index."))
        }
        Some(Value::String(f))
            if f[3..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                != Some(n_lists) =>
        {
            return Err(bad(format!(
                "The nLists parameter has to agree with the actual nlists implied by the \
                 factory string (which is {})",
                &f[3..]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .unwrap_or("")
            )))
        }
        Some(_) => {
            return Err(bad(format!(
                "'params.factory' must be \"IVF{n_lists},Flat\": QuiverDB's vector index is an \
                 inverted file of full vectors; other Faiss encodings are not supported"
            )))
        }
    }
    Ok(Value::Object(out))
}

/// Whether this type is a multi-dimensional index (`mdi`, `mdi-prefixed`, the older `zkd`).
pub(crate) fn is_mdi_kind(kind: &str) -> bool {
    matches!(kind, "mdi" | "mdi-prefixed" | "zkd")
}

/// Whether this type is enforced/maintained as a persistent (sorted) index.
pub(crate) fn is_persistent_kind(kind: &str) -> bool {
    matches!(kind, "persistent" | "hash" | "skiplist")
}

impl IndexDef {
    /// Parses a `POST /_api/index` body (the id is assigned by the caller). Errors: 10 for an
    /// unknown type, missing/invalid fields, wrong field counts (geo 1–2, fulltext and ttl
    /// exactly 1), `fieldValueTypes` other than "double", `_id` in persistent fields;
    /// 1214 for an illegal name.
    pub fn parse(body: &Value, id: u64) -> Result<IndexDef> {
        let body = body
            .as_object()
            .ok_or_else(|| bad("index definition must be an object"))?;
        let kind = body
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("index definition must contain a 'type'"))?
            .to_string();
        let name = match body.get("name") {
            None | Some(Value::Null) => format!("idx_{id}"),
            Some(Value::String(name)) if !name.is_empty() && name.len() <= 254 => {
                if name.contains('/') {
                    return Err(Error::with_message(
                        ErrorCode::IndexHandleBad,
                        "illegal index name",
                    ));
                }
                name.clone()
            }
            Some(_) => {
                return Err(Error::with_message(
                    ErrorCode::IndexHandleBad,
                    "illegal index name",
                ))
            }
        };
        let mut extra = Map::new();
        let (fields, unique, sparse) = match kind.as_str() {
            "persistent" | "hash" | "skiplist" => {
                let fields = string_fields(body)?;
                if fields.iter().any(|f| f == "_id") {
                    return Err(bad("_id attribute cannot be indexed"));
                }
                extra.insert(
                    "deduplicate".into(),
                    flag(body, "deduplicate", true)?.into(),
                );
                extra.insert("estimates".into(), flag(body, "estimates", true)?.into());
                extra.insert(
                    "cacheEnabled".into(),
                    flag(body, "cacheEnabled", false)?.into(),
                );
                if let Some(stored) = body.get("storedValues").filter(|v| !v.is_null()) {
                    extra.insert("storedValues".into(), stored.clone());
                }
                (
                    fields,
                    flag(body, "unique", false)?,
                    flag(body, "sparse", false)?,
                )
            }
            "ttl" => {
                let fields = string_fields(body)?;
                if fields.len() != 1 {
                    return Err(bad("ttl index must have exactly one field"));
                }
                let expire = body
                    .get("expireAfter")
                    .filter(|v| v.as_f64().is_some_and(|e| e >= 0.0))
                    .ok_or_else(|| bad("ttl index needs a non-negative number 'expireAfter'"))?;
                extra.insert("expireAfter".into(), expire.clone());
                (fields, false, true)
            }
            "geo" | "geo1" | "geo2" => {
                let fields = string_fields(body)?;
                if fields.is_empty() || fields.len() > 2 {
                    return Err(bad("geo index must have one or two fields"));
                }
                extra.insert("geoJson".into(), flag(body, "geoJson", false)?.into());
                extra.insert(
                    "legacyPolygons".into(),
                    flag(body, "legacyPolygons", false)?.into(),
                );
                extra.insert("bestIndexedLevel".into(), 17.into());
                extra.insert("worstIndexedLevel".into(), 4.into());
                extra.insert("maxNumCoverCells".into(), 8.into());
                (fields, false, true)
            }
            "fulltext" => {
                let fields = string_fields(body)?;
                if fields.len() != 1 {
                    return Err(bad("fulltext index must have exactly one field"));
                }
                let min_length = body.get("minLength").and_then(Value::as_u64).unwrap_or(2);
                extra.insert("minLength".into(), min_length.into());
                (fields, false, true)
            }
            "zkd" | "mdi" | "mdi-prefixed" => {
                match body.get("fieldValueTypes").and_then(Value::as_str) {
                    Some("double") => {}
                    _ => {
                        return Err(bad(format!(
                            "{kind} requires `fieldValueTypes` to be set to `double` - future \
                             releases might lift this requirement"
                        )))
                    }
                }
                let fields = string_fields(body)?;
                if fields.iter().any(|f| f == "_id" || f.ends_with("._id")) {
                    return Err(bad("_id attribute cannot be indexed"));
                }
                if fields.iter().any(|f| f.contains("[*]")) {
                    return Err(bad("an mdi index cannot index an expanded attribute"));
                }
                if fields
                    .iter()
                    .enumerate()
                    .any(|(i, f)| fields[..i].contains(f))
                {
                    return Err(bad("duplicate attribute name in index fields list"));
                }
                extra.insert("fieldValueTypes".into(), "double".into());
                let unique = flag(body, "unique", false)?;
                if kind == "mdi-prefixed" {
                    let prefix = body
                        .get("prefixFields")
                        .and_then(Value::as_array)
                        .filter(|p| {
                            !p.is_empty()
                                && p.iter().all(|f| f.as_str().is_some_and(|f| !f.is_empty()))
                        })
                        .ok_or_else(|| {
                            bad("when parsing prefix fields: prefixFields is required for \
                                 `mdi-prefixed`")
                        })?;
                    extra.insert("prefixFields".into(), Value::Array(prefix.clone()));
                    extra.insert("estimates".into(), flag(body, "estimates", true)?.into());
                } else if body.get("prefixFields").is_some() {
                    return Err(bad(format!(
                        "`{kind}` index does not support prefixed fields. use `mdi-prefixed` as \
                         type instead."
                    )));
                } else {
                    // ArangoDB keeps no estimate for an mdi index without prefix.
                    extra.insert("estimates".into(), unique.into());
                }
                if let Some(v) = body.get("storedValues").filter(|v| !v.is_null()) {
                    extra.insert("storedValues".into(), v.clone());
                }
                (fields, unique, flag(body, "sparse", false)?)
            }
            "inverted" => {
                let fields = body
                    .get("fields")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("inverted index needs 'fields'"))?;
                let mut names = Vec::with_capacity(fields.len());
                for field in fields {
                    match field {
                        Value::String(s) => names.push(s.clone()),
                        Value::Object(o) => match o.get("name").and_then(Value::as_str) {
                            Some(n) => names.push(n.to_string()),
                            None => return Err(bad("inverted index field objects need a 'name'")),
                        },
                        _ => return Err(bad("invalid inverted index field")),
                    }
                }
                // Reported as given, with ArangoSearch's defaults for what was left out.
                for (key, default) in [
                    ("analyzer", json!("identity")),
                    ("includeAllFields", json!(false)),
                    ("searchField", json!(false)),
                    ("trackListPositions", json!(false)),
                    ("primarySort", json!({"fields": [], "compression": "lz4"})),
                    ("storedValues", json!([])),
                    ("features", json!([])),
                ] {
                    extra.insert(key.into(), body.get(key).cloned().unwrap_or(default));
                }
                for key in [
                    "cache",
                    "primaryKeyCache",
                    "consolidationPolicy",
                    "writebufferSizeMax",
                ] {
                    if let Some(v) = body.get(key) {
                        extra.insert(key.into(), v.clone());
                    }
                }
                extra.insert("fieldDefinitions".into(), Value::Array(fields.clone()));
                (names, false, true)
            }
            "vector" => {
                let fields = string_fields(body)?;
                if fields.len() != 1 {
                    return Err(bad("invalid number of index attributes"));
                }
                if fields[0] == "_id" || fields[0].ends_with("._id") {
                    return Err(bad("_id attribute cannot be indexed"));
                }
                if fields[0].contains("[*]") {
                    return Err(bad("a vector index cannot index an expanded attribute"));
                }
                extra.insert("params".into(), vector_params(body.get("params"))?);
                // `parallelism` and `inBackground` are accepted and, as in ArangoDB, not
                // reported: training always uses two threads and never blocks writers.
                match body.get("parallelism") {
                    None | Some(Value::Null) => {}
                    Some(v) if v.as_u64().is_some_and(|n| n >= 1) => {}
                    Some(_) => return Err(bad("'parallelism' must be a positive integer")),
                }
                flag(body, "inBackground", false)?;
                if let Some(stored) = body.get("storedValues").filter(|v| !v.is_null()) {
                    let Some(paths) = stored.as_array() else {
                        return Err(bad(
                            "when parsing fields for stored values: storedValues must be an array",
                        ));
                    };
                    let ok = (1..=32).contains(&paths.len())
                        && paths
                            .iter()
                            .all(|f| f.as_str().is_some_and(|f| !f.is_empty() && f != "_id"));
                    if !ok {
                        return Err(bad(
                            "when parsing fields for stored values: invalid number of index \
                             attributes",
                        ));
                    }
                    extra.insert("storedValues".into(), stored.clone());
                }
                if flag(body, "unique", false)? {
                    return Err(bad("Vector index cannot be unique"));
                }
                (fields, false, flag(body, "sparse", false)?)
            }
            "primary" | "edge" => {
                return Err(bad(format!("cannot create an index of type '{kind}'")))
            }
            _ => return Err(bad(format!("invalid index type '{kind}'"))),
        };
        Ok(IndexDef {
            id,
            name,
            kind,
            fields,
            unique,
            sparse,
            extra,
        })
    }

    /// Whether `other` defines the same index (ArangoDB answers an equivalent creation with the
    /// existing index).
    pub fn equivalent(&self, other: &IndexDef) -> bool {
        let canonical = |k: &str| {
            if is_persistent_kind(k) {
                "persistent"
            } else if k == "zkd" {
                "mdi"
            } else {
                k
            }
            .to_string()
        };
        canonical(&self.kind) == canonical(&other.kind)
            && self.fields == other.fields
            && self.unique == other.unique
            && self.sparse == other.sparse
            && (self.kind != "vector" || self.extra.get("params") == other.extra.get("params"))
            && self.extra.get("prefixFields") == other.extra.get("prefixFields")
    }

    /// Whether writes must check this index for duplicates.
    pub fn enforces_uniqueness(&self) -> bool {
        self.unique
            && (is_persistent_kind(&self.kind) || is_mdi_kind(&self.kind))
            && !self.fields.is_empty()
    }

    /// The definition a unique constraint checks: the indexed fields, after the
    /// `prefixFields` of an mdi-prefixed index.
    pub fn uniqueness_def(&self) -> IndexDef {
        let mut def = self.clone();
        let mut fields = self.prefix_fields();
        fields.extend(self.fields.iter().cloned());
        def.fields = fields;
        def
    }

    /// The `prefixFields` of an mdi-prefixed index (none for other types).
    pub fn prefix_fields(&self) -> Vec<String> {
        self.extra
            .get("prefixFields")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The index object of the HTTP API.
    pub fn describe(&self, collection: &str) -> Value {
        let mut map = Map::new();
        map.insert("id".into(), format!("{collection}/{}", self.id).into());
        map.insert("name".into(), self.name.clone().into());
        map.insert("type".into(), self.kind.clone().into());
        if self.kind == "inverted" {
            map.insert(
                "fields".into(),
                self.extra
                    .get("fieldDefinitions")
                    .cloned()
                    .unwrap_or_else(|| json!(self.fields)),
            );
        } else {
            map.insert("fields".into(), json!(self.fields));
        }
        map.insert("unique".into(), self.unique.into());
        map.insert("sparse".into(), self.sparse.into());
        if is_persistent_kind(&self.kind) {
            map.insert("selectivityEstimate".into(), 1.into());
        }
        for (k, v) in &self.extra {
            if k != "fieldDefinitions" {
                map.insert(k.clone(), v.clone());
            }
        }
        Value::Object(map)
    }

    /// The stored form (the description without the collection prefix in `id`).
    pub fn to_meta(&self) -> Value {
        let mut value = self.describe("");
        value["id"] = self.id.into();
        if let Some(defs) = self.extra.get("fieldDefinitions") {
            value["fieldDefinitions"] = defs.clone();
            value["fields"] = json!(self.fields);
        }
        value
    }

    /// Rebuilds a stored definition.
    pub fn from_meta(value: &Value) -> Option<IndexDef> {
        let object = value.as_object()?;
        let id = object.get("id")?.as_u64()?;
        let mut extra = object.clone();
        for key in [
            "id",
            "name",
            "type",
            "fields",
            "unique",
            "sparse",
            "selectivityEstimate",
        ] {
            extra.remove(key);
        }
        Some(IndexDef {
            id,
            name: object.get("name")?.as_str()?.to_string(),
            kind: object.get("type")?.as_str()?.to_string(),
            fields: object
                .get("fields")?
                .as_array()?
                .iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect(),
            unique: object
                .get("unique")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            sparse: object
                .get("sparse")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            extra,
        })
    }
}

/// The implicit primary index.
pub(crate) fn primary_description(collection: &str) -> Value {
    json!({
        "id": format!("{collection}/{PRIMARY_INDEX_ID}"),
        "name": "primary",
        "type": "primary",
        "fields": ["_key"],
        "unique": true,
        "sparse": false,
        "selectivityEstimate": 1,
    })
}

/// The implicit edge index of edge collections.
pub(crate) fn edge_description(collection: &str) -> Value {
    json!({
        "id": format!("{collection}/{EDGE_INDEX_ID}"),
        "name": "edge",
        "type": "edge",
        "fields": ["_from", "_to"],
        "unique": false,
        "sparse": false,
        "selectivityEstimate": 1,
    })
}

/// Splits an index handle: `collection/123`, `123` or a name. Returns the id when numeric.
pub(crate) fn parse_handle(handle: &str) -> (Option<&str>, &str) {
    match handle.split_once('/') {
        Some((collection, rest)) => (Some(collection), rest),
        None => (None, handle),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: Value) -> Result<IndexDef> {
        IndexDef::parse(&body, 7)
    }

    #[test]
    fn persistent_aliases_keep_their_type_name() {
        for kind in ["persistent", "hash", "skiplist"] {
            let def = parse(json!({"type": kind, "fields": ["a", "b"], "unique": true, "sparse": true, "name": "n"})).unwrap();
            let d = def.describe("c");
            assert_eq!(
                (d["type"].clone(), d["id"].clone(), d["name"].clone()),
                (json!(kind), json!("c/7"), json!("n"))
            );
            assert_eq!(
                (
                    d["unique"].clone(),
                    d["sparse"].clone(),
                    d["deduplicate"].clone()
                ),
                (json!(true), json!(true), json!(true))
            );
            assert!(def.enforces_uniqueness());
            assert_eq!(IndexDef::from_meta(&def.to_meta()).unwrap(), def);
        }
        let default_name = parse(json!({"type": "persistent", "fields": ["a"]})).unwrap();
        assert_eq!(default_name.name, "idx_7");
        let hash = parse(json!({"type": "hash", "fields": ["a"]})).unwrap();
        assert!(hash.equivalent(&parse(json!({"type": "persistent", "fields": ["a"]})).unwrap()));
        assert!(!hash.equivalent(
            &parse(json!({"type": "persistent", "fields": ["a"], "sparse": true})).unwrap()
        ));
    }

    #[test]
    fn type_specific_rules() {
        let geo = parse(json!({"type": "geo", "fields": ["a"], "geoJson": true}))
            .unwrap()
            .describe("c");
        assert_eq!(
            (
                geo["sparse"].clone(),
                geo["unique"].clone(),
                geo["geoJson"].clone()
            ),
            (json!(true), json!(false), json!(true))
        );
        let ft = parse(json!({"type": "fulltext", "fields": ["a"], "minLength": 10}))
            .unwrap()
            .describe("c");
        assert_eq!(ft["minLength"], 10);
        let ttl = parse(json!({"type": "ttl", "fields": ["a"], "expireAfter": 1000}))
            .unwrap()
            .describe("c");
        assert_eq!(ttl["expireAfter"], 1000);
        let mdi = parse(json!({"type": "mdi", "fields": ["x", "y"], "fieldValueTypes": "double", "unique": true})).unwrap();
        assert!(mdi.unique && mdi.enforces_uniqueness());
        let inverted = parse(json!({"type": "inverted", "fields": [{"name": "a", "cache": true}], "includeAllFields": true})).unwrap().describe("c");
        for key in ["primarySort", "analyzer", "includeAllFields", "searchField"] {
            assert!(inverted.get(key).is_some(), "{key}");
        }
        assert_eq!(inverted["fields"], json!([{"name": "a", "cache": true}]));
        for bad_body in [
            json!({"type": "geo", "fields": ["a", "b", "c"]}),
            json!({"type": "fulltext", "fields": ["a", "b"]}),
            json!({"type": "ttl", "fields": ["a"]}),
            json!({"type": "zkd", "fields": ["x"], "fieldValueTypes": "integer"}),
            json!({"type": "persistent"}),
            json!({"type": "persistent", "fields": []}),
            json!({"type": "persistent", "fields": ["_id"]}),
            json!({"type": "nope", "fields": ["a"]}),
            json!({"type": "primary", "fields": ["_key"]}),
            json!({"fields": ["a"]}),
        ] {
            assert_eq!(
                parse(bad_body.clone()).unwrap_err().code,
                ErrorCode::BadParameter,
                "{bad_body}"
            );
        }
        assert_eq!(
            parse(json!({"type": "persistent", "fields": ["a"], "name": "a/b"}))
                .unwrap_err()
                .code,
            ErrorCode::IndexHandleBad
        );
    }
}
