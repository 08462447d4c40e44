//! Bounds of a collection's storage options: one validator, refused out of range with
//! error 10, used as given in range, checked at open for the engine's default.

mod common;

use common::*;
use quiver_errors::ErrorCode;
use quiver_storage::{
    CollectionOptions, Engine, EngineOptions, JOURNAL_SIZE_FLOOR, JOURNAL_SIZE_MAX,
    JOURNAL_SIZE_MIN,
};

fn with_size(size: u64) -> CollectionOptions {
    CollectionOptions {
        journal_size: Some(size),
        ..CollectionOptions::default()
    }
}

fn server_options() -> EngineOptions {
    EngineOptions {
        min_journal_size: JOURNAL_SIZE_MIN,
        journal_size_default: JOURNAL_SIZE_MIN,
        ..small_options()
    }
}

#[test]
fn journal_size_out_of_range_is_refused_and_in_range_is_used_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), server_options()).unwrap();
    let db = engine.create_database(serde_json::json!({})).unwrap();
    for bad in [JOURNAL_SIZE_MIN - 1, JOURNAL_SIZE_MAX + 1, 2 << 30] {
        let err = engine
            .validate_collection_options(&with_size(bad))
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::BadParameter, "{bad}");
        let err = engine
            .create_collection(db, with_size(bad), serde_json::json!({}))
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::BadParameter, "{bad}");
    }
    let cid = engine
        .create_collection(db, with_size(3 << 20), serde_json::json!({}))
        .unwrap();
    assert_eq!(engine.figures(cid).unwrap().journal_size, 3 << 20);
    // The largest size is used as given (it was clamped before being refused above 1 GiB).
    engine
        .update_collection(cid, with_size(JOURNAL_SIZE_MAX), serde_json::json!({}))
        .unwrap();
    assert_eq!(engine.figures(cid).unwrap().journal_size, JOURNAL_SIZE_MAX);
    let err = engine
        .update_collection(cid, with_size(4096), serde_json::json!({}))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::BadParameter);
    assert_eq!(
        engine.collection_options(cid).unwrap().journal_size,
        Some(JOURNAL_SIZE_MAX)
    );
    engine.shutdown().unwrap();
}

#[test]
fn open_refuses_a_default_journal_size_outside_the_bounds() {
    let dir = tempfile::tempdir().unwrap();
    for options in [
        EngineOptions {
            journal_size_default: JOURNAL_SIZE_MIN - 1,
            ..server_options()
        },
        EngineOptions {
            journal_size_default: JOURNAL_SIZE_MAX + 1,
            ..server_options()
        },
        EngineOptions {
            min_journal_size: JOURNAL_SIZE_FLOOR - 1,
            ..server_options()
        },
    ] {
        let err = Engine::open(dir.path(), options).unwrap_err();
        assert_eq!(err.code, ErrorCode::BadParameter, "{}", err.message);
    }
}

#[test]
fn a_stored_journal_size_below_the_bound_is_raised_to_it_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let engine = open(dir.path());
    let (_, cid) = setup(&engine);
    engine
        .update_collection(cid, with_size(8192), serde_json::json!({}))
        .unwrap();
    engine.shutdown().unwrap();
    drop(engine);
    let engine = Engine::open(dir.path(), server_options()).unwrap();
    assert_eq!(
        engine.collection_options(cid).unwrap().journal_size,
        Some(JOURNAL_SIZE_MIN)
    );
    assert_eq!(engine.figures(cid).unwrap().journal_size, JOURNAL_SIZE_MIN);
    engine.shutdown().unwrap();
}
