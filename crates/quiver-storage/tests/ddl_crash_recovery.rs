//! DDL is durable when it returns: a crash at any point between DDL calls recovers exactly
//! the acknowledged catalog.

mod harness;

use std::collections::BTreeMap;

use harness::*;
use quiver_storage::{CollectionOptions, Engine};

/// (db id, collection id) -> (options, meta) as the engine reports it.
fn catalog_of(e: &Engine) -> BTreeMap<(u64, u64), (CollectionOptions, serde_json::Value)> {
    let mut out = BTreeMap::new();
    for db in e.catalog() {
        out.insert((db.id, 0), (CollectionOptions::default(), db.meta.clone()));
        for c in db.collections {
            out.insert((db.id, c.id), (c.options, c.meta));
        }
    }
    out
}

type Step = Box<dyn Fn(&Engine, &mut Vec<u64>)>;

#[test]
fn crash_after_every_ddl_step_recovers_exactly_the_acknowledged_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let e = open(dir.path());
    let mut steps: Vec<Step> = Vec::new();
    steps.push(Box::new(|e, ids| ids.push(new_db(e))));
    steps.push(Box::new(|e, ids| {
        let db = ids[0];
        ids.push(new_col(e, db));
        ids.push(new_col(e, db));
    }));
    steps.push(Box::new(|e, ids| {
        e.update_collection(
            ids[1],
            CollectionOptions {
                journal_size: Some(64 * 1024),
                wait_for_sync: true,
                do_compact: false,
            },
            serde_json::json!({"name": "renamed"}),
        )
        .unwrap();
        put(e, ids[1], "doc", "in a waitForSync collection");
    }));
    steps.push(Box::new(|e, ids| {
        e.update_database(ids[0], serde_json::json!({"name": "db2"}))
            .unwrap();
        e.drop_collection(ids[2]).unwrap();
    }));
    steps.push(Box::new(|e, ids| {
        let db = new_db(e);
        let c = new_col(e, db);
        put(e, c, "x", "y");
        e.drop_database(db).unwrap();
        ids.push(db);
    }));
    let mut ids = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        step(&e, &mut ids);
        let expected = catalog_of(&e);
        let crashed = tempfile::tempdir().unwrap();
        copy_dir(dir.path(), crashed.path());
        let e2 = open(crashed.path());
        assert_eq!(catalog_of(&e2), expected, "after step {i}");
        if i >= 2 {
            assert_eq!(
                get(&e2, ids[1], "doc").as_deref(),
                Some("in a waitForSync collection")
            );
        }
        // New ids never collide with anything that existed before the crash.
        let db = new_db(&e2);
        assert!(!ids.contains(&db), "id {db} reused after restart");
    }
}
