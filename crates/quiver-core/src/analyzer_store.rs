//! The analyzer store: custom analyzers are documents of each database's `_analyzers`
//! system collection, stored as ArangoDB stores them (`name` without the database prefix,
//! `type`, `properties`, `features`; this catalog uses the name as `_key`, and finds documents
//! with any other key by their `name`, as restored from an ArangoDB dump). They survive
//! restarts and appear in inventories like any collection. Built-in analyzers are never
//! stored.
//!
//! Names as ArangoDB resolves them from a database `db`:
//! - a built-in name (`identity`, `text_en`, …) is the built-in;
//! - `name` is `db::name`; `::name` is `_system::name`;
//! - `db::name` and `_system::name` are reachable (for reading) from `db`; analyzers of other
//!   databases are not.
//!
//! Built analyzers are shared: [`lookup`] keeps the last built analyzers in a bounded map
//! keyed by their stored definition, so a repeated lookup costs a key read and a hash.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use quiver_search::analyzer::{parse_features, BUILTIN_NAMES};
pub use quiver_search::analyzer::{Analyzer, AnalyzerDefinition, Feature, Token};
use serde_json::{json, Map, Value};

use crate::collection::Collection;
use crate::database::{Database, SYSTEM_DATABASE};
use crate::options::{Committed, InsertOptions, RemoveOptions};
use crate::txn::DocumentReader;

/// The system collection holding a database's analyzers.
pub const ANALYZERS_COLLECTION: &str = "_analyzers";

/// The most built analyzers kept for reuse (the map is cleared when it is full).
const BUILT_CACHE_MAX: usize = 1024;

/// Serializes analyzer creation and removal (rare; one lock keeps "exists?" then "store"
/// race free).
static ANALYZER_DDL: Mutex<()> = parking_lot::const_mutex(());

/// Moves on after every stored analyzer is created or removed (once the write is committed):
/// caches of resolved names (a view's analyzers) compare it and start over when it moved.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The current analyzer generation (see [`GENERATION`]).
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Acquire)
}

/// Built analyzers by stored definition (see the module docs).
static BUILT: Mutex<Option<HashMap<String, Arc<Analyzer>>>> = parking_lot::const_mutex(None);

/// Whether `name` is one of ArangoDB's built-in analyzers.
pub fn is_builtin(name: &str) -> bool {
    BUILTIN_NAMES.contains(&name)
}

/// Splits `db::name` at the first `::`: (`Some(db)`, name), `Some("")` for `::name`, `None`
/// without a prefix.
pub fn split_name(name: &str) -> (Option<&str>, &str) {
    match name.find("::") {
        Some(at) => (Some(&name[..at]), &name[at + 2..]),
        None => (None, name),
    }
}

/// The database an analyzer name refers to from database `current`, and its bare name.
/// `None` as database for a built-in.
pub(crate) fn resolve<'a>(current: &'a str, name: &'a str) -> (Option<&'a str>, &'a str) {
    if is_builtin(name) {
        return (None, name);
    }
    match split_name(name) {
        (None, bare) => (Some(current), bare),
        (Some(""), bare) => (Some(SYSTEM_DATABASE), bare),
        (Some(db), bare) => (Some(db), bare),
    }
}

/// The normalized name (`db::name`, or the bare built-in name) of `name` seen from `current`.
pub fn normalize(current: &str, name: &str) -> String {
    match resolve(current, name) {
        (None, bare) => bare.to_string(),
        (Some(db), bare) => format!("{db}::{bare}"),
    }
}

fn analyzers_collection(db: &Database) -> Result<Arc<Collection>> {
    db.collection(ANALYZERS_COLLECTION)
}

/// The stored document of analyzer `bare` in `db`, if any.
fn find_stored(db: &Arc<Database>, bare: &str) -> Result<Option<Value>> {
    let coll = match analyzers_collection(db) {
        Ok(coll) => coll,
        Err(err) if err.code == ErrorCode::DataSourceNotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    let view = db.read_view();
    if quiver_types::validate_key(bare).is_ok() {
        if let Some(doc) = view.get(&coll, bare)? {
            if doc.get("name").and_then(Value::as_str) == Some(bare) {
                return Ok(Some(doc));
            }
        }
    }
    // A document with another key (an ArangoDB dump uses generated keys).
    for doc in view.scan(&coll)? {
        let doc = doc?;
        if doc.get("name").and_then(Value::as_str) == Some(bare) {
            return Ok(Some(doc));
        }
    }
    Ok(None)
}

/// The definition of a stored document, named `db::name`; `None` for a malformed document.
fn stored_definition(db_name: &str, doc: &Value) -> Option<AnalyzerDefinition> {
    let name = doc.get("name")?.as_str()?;
    let kind = doc.get("type")?.as_str()?;
    let properties = doc.get("properties").cloned().unwrap_or_else(|| json!({}));
    let features = parse_features(doc.get("features")).ok()?;
    Some(AnalyzerDefinition {
        name: format!("{db_name}::{name}"),
        kind: kind.to_string(),
        properties,
        features,
    })
}

/// Builds (or reuses) the analyzer of a stored definition.
fn build(def: &AnalyzerDefinition) -> Result<Arc<Analyzer>> {
    let key = def.to_json().to_string();
    if let Some(built) = BUILT.lock().as_ref().and_then(|m| m.get(&key)) {
        return Ok(Arc::clone(built));
    }
    let analyzer = Arc::new(Analyzer::from_definition(def)?);
    let mut cache = BUILT.lock();
    let map = cache.get_or_insert_with(HashMap::new);
    if map.len() >= BUILT_CACHE_MAX {
        map.clear();
    }
    map.insert(key, Arc::clone(&analyzer));
    Ok(analyzer)
}

fn not_found(normalized: &str) -> Error {
    Error::with_message(
        ErrorCode::DocumentNotFound,
        format!("unable to find analyzer: {normalized}"),
    )
}

/// An analyzer lookup (`analyzers::lookup`) over the core's map of databases (what a view's
/// analyzer source holds).
pub(crate) fn lookup_among(
    databases: &RwLock<BTreeMap<String, Arc<Database>>>,
    current: &str,
    name: &str,
) -> Result<Arc<Analyzer>> {
    lookup_with(current, name, |target| {
        databases.read().get(target).cloned()
    })
}

pub(crate) fn lookup_with(
    current: &str,
    name: &str,
    database: impl Fn(&str) -> Option<Arc<Database>>,
) -> Result<Arc<Analyzer>> {
    let normalized = normalize(current, name);
    match resolve(current, name) {
        (None, bare) => {
            let builtin = Analyzer::builtin(bare).ok_or_else(|| not_found(&normalized))?;
            Ok(Arc::new(builtin))
        }
        (Some(target), bare) => {
            if target != current && target != SYSTEM_DATABASE {
                return Err(not_found(&normalized));
            }
            let holder = database(target).ok_or_else(|| not_found(&normalized))?;
            let doc = find_stored(&holder, bare)?.ok_or_else(|| not_found(&normalized))?;
            let def = stored_definition(target, &doc).ok_or_else(|| not_found(&normalized))?;
            build(&def)
        }
    }
}

/// A built-in analyzer by name. Errors: 404/1202 for any other name.
pub fn builtin(name: &str) -> Result<Arc<Analyzer>> {
    Analyzer::builtin(name)
        .map(Arc::new)
        .ok_or_else(|| not_found(name))
}

/// The custom analyzers stored in `db`, sorted by name (malformed documents skipped).
pub fn stored(db: &Arc<Database>) -> Result<Vec<AnalyzerDefinition>> {
    let coll = match analyzers_collection(db) {
        Ok(coll) => coll,
        Err(err) if err.code == ErrorCode::DataSourceNotFound => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let mut out = Vec::new();
    for doc in db.read_view().scan(&coll)? {
        let doc = doc?;
        match stored_definition(db.name(), &doc) {
            Some(def) => match Analyzer::from_definition(&def) {
                Ok(analyzer) => out.push(analyzer.definition().clone()),
                Err(err) => tracing::warn!(
                    "skipping analyzer '{}' of database '{}': {}",
                    def.name,
                    db.name(),
                    err.message
                ),
            },
            None => tracing::warn!(
                "skipping a malformed document of '{ANALYZERS_COLLECTION}' in database '{}'",
                db.name()
            ),
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The built-in analyzers' definitions, in ArangoDB's order.
pub fn builtins() -> Vec<AnalyzerDefinition> {
    BUILTIN_NAMES
        .iter()
        .filter_map(|name| Analyzer::builtin(name))
        .map(|a| a.definition().clone())
        .collect()
}

fn request_form_error(what: &str) -> Error {
    Error::with_message(
        ErrorCode::BadParameter,
        format!(
            "{what}expecting body to be of the form {{ name: <string>, type: <string>[, \
             properties: <object|string>[, features: <string-array>]] }}"
        ),
    )
}

/// A created (or already existing, equal) analyzer.
#[derive(Debug)]
pub struct Created {
    /// The normalized definition, named `db::name`.
    pub definition: AnalyzerDefinition,
    /// False when an equal analyzer of that name existed (200 instead of 201).
    pub created: bool,
}

/// `POST /_api/analyzer` in database `db` with ArangoDB's body `{name, type, properties,
/// features}`. Errors: `{}` 400/600; malformed body 400/10; a name of another database
/// 403/11; invalid name 400/10; unknown type 501/9; rejected properties or features 400/10;
/// an existing name with another definition 400/10 ("Name collision detected …"). A new
/// analyzer is stored with `waitForSync`; the caller awaits the returned commit.
pub fn create(
    db: &Arc<Database>,
    body: &Value,
    naming: quiver_types::NamingConvention,
) -> Result<Committed<Created>> {
    let object = match body {
        Value::Object(object) if object.is_empty() => {
            return Err(Error::new(ErrorCode::HttpCorruptedJson))
        }
        Value::Object(object) => object,
        _ => return Err(request_form_error("")),
    };
    let Some(Value::String(name)) = object.get("name") else {
        return Err(request_form_error("invalid 'name', "));
    };
    let (prefix, bare) = split_name(name);
    let reachable = match prefix {
        None => true,
        Some("") => db.is_system(),
        Some(other) => other == db.name(),
    };
    if !reachable {
        return Err(Error::with_message(
            ErrorCode::Forbidden,
            "Database in analyzer name does not match current database",
        ));
    }
    let Some(Value::String(kind)) = object.get("type") else {
        return Err(request_form_error("invalid 'type', "));
    };
    let properties = match object.get("properties") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(text) {
            Ok(parsed @ Value::Object(_)) => parsed,
            _ => return Err(request_form_error("invalid 'properties', ")),
        },
        Some(props @ Value::Object(_)) => props.clone(),
        Some(_) => return Err(request_form_error("invalid 'properties', ")),
    };
    let features = parse_features(object.get("features"))?;
    let definition = AnalyzerDefinition {
        name: if prefix.is_none() && is_builtin(bare) {
            bare.to_string()
        } else {
            format!("{}::{bare}", db.name())
        },
        kind: kind.clone(),
        properties,
        features,
    };
    if !(prefix.is_none() && is_builtin(bare)) {
        quiver_types::names::validate_analyzer_name(bare, naming).map_err(|_| {
            Error::with_message(
                ErrorCode::BadParameter,
                format!("invalid characters in analyzer name '{bare}'"),
            )
        })?;
    }
    let analyzer = Analyzer::from_definition(&definition)?;
    let wanted = analyzer.definition().clone();
    if prefix.is_none() && is_builtin(bare) {
        let existing = Analyzer::builtin(bare).expect("a built-in name has a built-in");
        return equal_or_collision(&wanted, existing.definition())
            .map(|created| Committed::new(created, None, || true));
    }
    let _ddl = ANALYZER_DDL.lock();
    if let Some(doc) = find_stored(db, bare)? {
        if let Some(existing) = stored_definition(db.name(), &doc) {
            let existing = Analyzer::from_definition(&existing)
                .map(|a| a.definition().clone())
                .unwrap_or(existing);
            return equal_or_collision(&wanted, &existing)
                .map(|created| Committed::new(created, None, || true));
        }
    }
    let coll = analyzers_collection(db)?;
    let mut stored = Map::new();
    // The name is the key where it can be (extended names may not be valid keys).
    if quiver_types::validate_key(bare).is_ok() {
        stored.insert("_key".into(), json!(bare));
    }
    stored.insert("name".into(), json!(bare));
    stored.insert("type".into(), json!(wanted.kind));
    stored.insert("properties".into(), wanted.properties.clone());
    stored.insert(
        "features".into(),
        json!(wanted.features.iter().map(|f| f.name()).collect::<Vec<_>>()),
    );
    let mut options = InsertOptions::new();
    options.wait_for_sync = true;
    let committed = coll.insert(Value::Object(stored), &options)?;
    GENERATION.fetch_add(1, Ordering::AcqRel);
    Ok(committed.map(|_| Created {
        definition: wanted,
        created: true,
    }))
}

fn equal_or_collision(
    wanted: &AnalyzerDefinition,
    existing: &AnalyzerDefinition,
) -> Result<Created> {
    if wanted.same_configuration(existing) {
        return Ok(Created {
            definition: existing.clone(),
            created: false,
        });
    }
    Err(Error::with_message(
        ErrorCode::BadParameter,
        format!(
            "Name collision detected while registering an arangosearch analyzer.\nCurrent \
             definition is:\n{}\nPrevious definition was:\n{}",
            wanted.to_json(),
            existing.to_json()
        ),
    ))
}

/// `DELETE /_api/analyzer/{name}?force=` in database `db` under the naming convention
/// `naming`; returns the normalized name.
/// Errors: invalid name 400/10; another database's analyzer 403/11; a built-in 403/11;
/// unknown 404/1202; in use by a view without `force` 409/1200.
pub(crate) fn remove(
    db: &Arc<Database>,
    name: &str,
    force: bool,
    naming: quiver_types::NamingConvention,
) -> Result<Committed<String>> {
    let (prefix, bare) = split_name(name);
    quiver_types::names::validate_analyzer_name(bare, naming)
        .or_else(|err| if is_builtin(bare) { Ok(()) } else { Err(err) })
        .map_err(|_| {
            Error::with_message(
                ErrorCode::BadParameter,
                format!("Invalid characters in analyzer name '{bare}'."),
            )
        })?;
    let reachable = match prefix {
        None => true,
        Some("") => db.is_system(),
        Some(other) => other == db.name(),
    };
    if !reachable {
        return Err(Error::with_message(
            ErrorCode::Forbidden,
            "Database in analyzer name does not match current database",
        ));
    }
    let normalized = normalize(db.name(), bare);
    if prefix.is_none() && is_builtin(bare) {
        return Err(Error::with_message(
            ErrorCode::Forbidden,
            "built-in analyzers cannot be removed",
        ));
    }
    let _ddl = ANALYZER_DDL.lock();
    let Some(doc) = find_stored(db, bare)? else {
        return Err(Error::with_message(
            ErrorCode::DocumentNotFound,
            format!("failure to find analyzer while removing arangosearch analyzer '{normalized}'"),
        ));
    };
    if !force {
        let usage = db.settings.analyzer_usage.read().clone();
        if let Some(usage) = usage {
            let users = usage.users_of(&normalized);
            if !users.is_empty() {
                return Err(Error::with_message(
                    ErrorCode::ArangoConflict,
                    format!("analyzer in-use while removing arangosearch analyzer '{normalized}'"),
                ));
            }
        }
    }
    let key = doc.get("_key").and_then(Value::as_str).ok_or_else(|| {
        Error::with_message(ErrorCode::Internal, "analyzer document without _key")
    })?;
    let coll = analyzers_collection(db)?;
    let mut options = RemoveOptions::new();
    options.wait_for_sync = true;
    let committed = coll.remove(key, &options)?;
    GENERATION.fetch_add(1, Ordering::AcqRel);
    Ok(committed.map(|_| normalized))
}
