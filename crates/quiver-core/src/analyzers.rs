//! Analyzers: ArangoDB's built-in analyzers and the custom ones stored in each database's
//! `_analyzers` collection (`analyzer_store.rs` keeps and resolves those), as the HTTP API and
//! AQL reach them. This module adds what needs the core: resolving a name whose analyzer lives
//! in another database (`_system::name`, reachable from every database) and the naming
//! convention a removal validates against.

use std::sync::Arc;

use quiver_errors::{Error, ErrorCode, Result};

pub use crate::analyzer_store::{
    builtin, builtins, create, generation, is_builtin, normalize, split_name, stored, Analyzer,
    AnalyzerDefinition, Created, Feature, Token, ANALYZERS_COLLECTION,
};
use crate::analyzer_store::{lookup_with, resolve};
use crate::catalog::Core;
use crate::database::{Database, SYSTEM_DATABASE};
use crate::options::Committed;

/// The analyzer `name` as seen from database `db` (built-ins, `name`, `::name`, `db::name`,
/// `_system::name`). Errors: 404/1202 when unknown or not reachable from `db`.
pub fn lookup(core: &Core, db: &Arc<Database>, name: &str) -> Result<Arc<Analyzer>> {
    lookup_with(db.name(), name, |target| {
        if target == db.name() {
            Some(Arc::clone(db))
        } else {
            core.database(target).ok()
        }
    })
}

/// `GET /_api/analyzer/{name}`: the definition as seen from `db`. Errors: 403/11 for an
/// analyzer of another database (not `_system`), 404/1202 when unknown.
pub fn get(core: &Core, db: &Arc<Database>, name: &str) -> Result<AnalyzerDefinition> {
    if let (Some(target), _) = resolve(db.name(), name) {
        if target != db.name() && target != SYSTEM_DATABASE {
            let mut message = format!(
                "Analyzer '{}' is not accessible. Only analyzers from current database ('{}')",
                normalize(db.name(), name),
                db.name()
            );
            if !db.is_system() {
                message.push_str(" or system database");
            }
            message.push_str(" are available");
            return Err(Error::with_message(ErrorCode::Forbidden, message));
        }
    }
    Ok(lookup(core, db, name)?.definition().clone())
}

/// `DELETE /_api/analyzer/{name}?force=` in database `db`; returns the normalized name.
/// Errors: invalid name 400/10; another database's analyzer 403/11; a built-in 403/11;
/// unknown 404/1202; in use by a view without `force` 409/1200.
pub fn remove(
    core: &Core,
    db: &Arc<Database>,
    name: &str,
    force: bool,
) -> Result<Committed<String>> {
    crate::analyzer_store::remove(db, name, force, core.naming())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer_usage::AnalyzerUsage;
    use crate::catalog::CoreOptions;
    use serde_json::{json, Value};

    fn open(dir: &tempfile::TempDir) -> Core {
        let mut options = CoreOptions::default();
        options.engine.journal_size_default = 1024 * 1024;
        options.engine.sync_interval = std::time::Duration::from_millis(10);
        Core::open(dir.path(), options).expect("open core")
    }

    fn create_ok(db: &Arc<Database>, body: Value) -> Created {
        create(db, &body, quiver_types::NamingConvention::Traditional)
            .unwrap_or_else(|e| panic!("create: {}", e.message))
            .wait()
            .unwrap()
    }

    struct InUse;
    impl AnalyzerUsage for InUse {
        fn users_of(&self, analyzer: &str) -> Vec<String> {
            if analyzer == "_system::used" {
                vec!["view".into()]
            } else {
                vec![]
            }
        }
    }

    #[test]
    fn create_get_list_remove_and_survive_restart() {
        let dir = tempfile::tempdir().unwrap();
        {
            let core = open(&dir);
            let system = core.database(SYSTEM_DATABASE).unwrap();
            let created = create_ok(
                &system,
                json!({"name": "csv", "type": "delimiter", "properties": {"delimiter": ","},
                       "features": ["norm", "frequency"]}),
            );
            assert!(created.created);
            assert_eq!(created.definition.name, "_system::csv");
            assert_eq!(created.definition.features.len(), 2);
            // The same definition again: 200, not a new analyzer.
            let again = create_ok(
                &system,
                json!({"name": "csv", "type": "delimiter", "properties": {"delimiter": ","},
                       "features": ["frequency", "norm"]}),
            );
            assert!(!again.created);
            // Another definition under the name: a collision.
            let err = create(
                &system,
                &json!({"name": "csv", "type": "delimiter", "properties": {"delimiter": ";"}}),
                quiver_types::NamingConvention::Traditional,
            )
            .unwrap_err();
            assert_eq!(err.code, ErrorCode::BadParameter);
            core.create_database("shop", json!({})).unwrap();
            let shop = core.database("shop").unwrap();
            create_ok(&shop, json!({"name": "local", "type": "identity"}));
            core.shutdown().unwrap();
        }
        let core = open(&dir);
        let system = core.database(SYSTEM_DATABASE).unwrap();
        let shop = core.database("shop").unwrap();
        // _system analyzers are visible from every database; others only from their own.
        let csv = lookup(&core, &shop, "_system::csv").unwrap();
        assert_eq!(csv.tokens("a,b").len(), 2);
        assert!(lookup(&core, &shop, "::csv").is_ok());
        assert_eq!(
            code(lookup(&core, &shop, "csv")),
            ErrorCode::DocumentNotFound
        );
        assert!(lookup(&core, &shop, "local").is_ok());
        assert_eq!(
            code(lookup(&core, &system, "shop::local")),
            ErrorCode::DocumentNotFound
        );
        assert_eq!(
            code(get(&core, &system, "shop::local")),
            ErrorCode::Forbidden
        );
        assert!(lookup(&core, &shop, "text_en").is_ok());
        assert_eq!(stored(&system).unwrap().len(), 1);
        // Removal rules.
        assert_eq!(
            code(remove(&core, &system, "text_en", false)),
            ErrorCode::Forbidden
        );
        assert_eq!(
            code(remove(&core, &shop, "_system::csv", false)),
            ErrorCode::Forbidden
        );
        assert_eq!(
            code(remove(&core, &system, "nope", false)),
            ErrorCode::DocumentNotFound
        );
        let removed = remove(&core, &system, "csv", false)
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(removed, "_system::csv");
        assert!(stored(&system).unwrap().is_empty());
    }

    #[test]
    fn in_use_analyzers_need_force() {
        let dir = tempfile::tempdir().unwrap();
        let core = open(&dir);
        core.set_analyzer_usage(Arc::new(InUse));
        let system = core.database(SYSTEM_DATABASE).unwrap();
        create_ok(&system, json!({"name": "used", "type": "identity"}));
        assert_eq!(
            code(remove(&core, &system, "used", false)),
            ErrorCode::ArangoConflict
        );
        remove(&core, &system, "used", true)
            .unwrap()
            .wait()
            .unwrap();
    }

    #[test]
    fn create_validates_names_and_bodies() {
        let dir = tempfile::tempdir().unwrap();
        let core = open(&dir);
        let system = core.database(SYSTEM_DATABASE).unwrap();
        let naming = quiver_types::NamingConvention::Traditional;
        let attempt = |body: Value| create(&system, &body, naming).map(|_| ());
        assert_eq!(code(attempt(json!({}))), ErrorCode::HttpCorruptedJson);
        assert_eq!(
            code(attempt(json!({"type": "identity"}))),
            ErrorCode::BadParameter
        );
        assert_eq!(
            code(attempt(json!({"name": "9x", "type": "identity"}))),
            ErrorCode::BadParameter
        );
        assert_eq!(
            code(attempt(json!({"name": "other::x", "type": "identity"}))),
            ErrorCode::Forbidden
        );
        assert_eq!(
            code(attempt(json!({"name": "x", "type": "nonsense"}))),
            ErrorCode::NotImplemented
        );
        // A built-in name with its own definition is "created" (200), another one collides.
        let same = create_ok(
            &system,
            json!({"name": "identity", "type": "identity", "features": ["frequency", "norm"]}),
        );
        assert!(!same.created);
        assert_eq!(
            code(attempt(json!({"name": "identity", "type": "identity"}))),
            ErrorCode::BadParameter
        );
    }

    fn code<T: std::fmt::Debug>(result: Result<T>) -> ErrorCode {
        result.expect_err("expected an error").code
    }
}
