//! The HTTP status of document writes against ArangoDB 3.12's rule: 201 (200 for removals)
//! when the request asks for `waitForSync`, or when the collection has the property and at
//! least one item was stored; 202 otherwise, including every-item-failed writes and
//! ignored inserts on a `waitForSync` collection.

use std::sync::Arc;

use http::Method;
use quiver_core::{Core, CoreOptions};
use quiver_server::{handle, Request, Response, ServerConfig, ServerState};
use serde_json::{json, Value};

struct Fixture {
    state: Arc<ServerState>,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        auth: quiver_server::auth::AuthConfig::disabled(),
        ..ServerConfig::default()
    };
    let f = Fixture {
        state: ServerState::new(config, core).unwrap(),
        _dir: dir,
    };
    let synced = json!({"name": "synced", "waitForSync": true});
    assert_eq!(f.call(Method::POST, "/_api/collection", synced).status, 200);
    let plain = json!({"name": "plain"});
    assert_eq!(f.call(Method::POST, "/_api/collection", plain).status, 200);
    f
}

impl Fixture {
    fn call(&self, method: Method, target: &str, body: Value) -> Response {
        let req = Request::build(method, target).with_body(serde_json::to_vec(&body).unwrap());
        handle(&self.state, req).settle_blocking()
    }

    /// Stores `{_key: k}` for every key in `keys` (answers checked elsewhere).
    fn seed(&self, coll: &str, keys: &[&str]) {
        let docs: Vec<Value> = keys.iter().map(|k| json!({"_key": k})).collect();
        let r = self.call(Method::POST, &format!("/_api/document/{coll}"), json!(docs));
        let items: Value = r.body_json().unwrap();
        assert!(
            items
                .as_array()
                .unwrap()
                .iter()
                .all(|i| i.get("error").is_none()),
            "{items}"
        );
    }
}

/// Calls and checks the status and, for writes with failing items, the per-item errors and
/// the `X-Arango-Error-Codes` header.
#[track_caller]
fn expect(f: &Fixture, method: Method, target: &str, body: Value, status: u16, errors: usize) {
    let r = f.call(method, target, body);
    assert_eq!(r.status.as_u16(), status, "{target}: {r:?}");
    let items: Value = r.body_json().unwrap();
    let failed = items
        .as_array()
        .unwrap_or_else(|| panic!("{target}: not an array: {items}"))
        .iter()
        .filter(|i| i["error"] == true)
        .count();
    assert_eq!(failed, errors, "{target}: {items}");
    assert_eq!(
        r.header("x-arango-error-codes").is_some(),
        errors > 0,
        "{r:?}"
    );
}

#[test]
fn insert_status_follows_stored_items() {
    let f = fixture();
    f.seed("synced", &["a"]);
    f.seed("plain", &["a"]);
    let dup = json!([{"_key": "a"}, {"_key": "a"}]);
    let bad = json!([{"_key": "a"}, {"_key": "fresh1"}]);
    // Every item fails: nothing stored, so the collection's property does not count.
    expect(
        &f,
        Method::POST,
        "/_api/document/synced",
        dup.clone(),
        202,
        2,
    );
    // Some items fail: the stored one makes the write synchronous.
    expect(&f, Method::POST, "/_api/document/synced", bad, 201, 1);
    expect(
        &f,
        Method::POST,
        "/_api/document/synced",
        json!([{}]),
        201,
        0,
    );
    // An empty array stores nothing.
    expect(&f, Method::POST, "/_api/document/synced", json!([]), 202, 0);
    // The request's waitForSync counts whatever happens to the items.
    let target = "/_api/document/plain?waitForSync=true";
    expect(&f, Method::POST, target, dup.clone(), 201, 2);
    expect(&f, Method::POST, "/_api/document/plain", dup, 202, 2);
    let some = json!([{"_key": "a"}, {"_key": "fresh2"}]);
    expect(&f, Method::POST, "/_api/document/plain", some, 202, 1);
    // An ignored insert stores nothing; a replacing one does.
    let ignore = "/_api/document/synced?overwriteMode=ignore";
    expect(&f, Method::POST, ignore, json!([{"_key": "a"}]), 202, 0);
    let replace = "/_api/document/synced?overwriteMode=replace";
    expect(&f, Method::POST, replace, json!([{"_key": "a"}]), 201, 0);
}

#[test]
fn single_insert_status_follows_the_same_rule() {
    let f = fixture();
    f.seed("synced", &["a"]);
    let r = f.call(Method::POST, "/_api/document/synced", json!({"_key": "b"}));
    assert_eq!(r.status.as_u16(), 201, "{r:?}");
    let ignore = "/_api/document/synced?overwriteMode=ignore";
    let r = f.call(Method::POST, ignore, json!({"_key": "a"}));
    assert_eq!(r.status.as_u16(), 202, "{r:?}");
    let r = f.call(
        Method::POST,
        &format!("{ignore}&waitForSync=true"),
        json!({"_key": "a"}),
    );
    assert_eq!(r.status.as_u16(), 201, "{r:?}");
    let r = f.call(Method::DELETE, "/_api/document/synced/b", json!(null));
    assert_eq!(r.status.as_u16(), 200, "{r:?}");
}

#[test]
fn replace_update_remove_status_follows_stored_items() {
    let f = fixture();
    f.seed("synced", &["a", "b", "c"]);
    f.seed("plain", &["a"]);
    for method in [Method::PUT, Method::PATCH] {
        let missing = json!([{"_key": "nope1", "v": 1}, {"_key": "nope2", "v": 1}]);
        expect(
            &f,
            method.clone(),
            "/_api/document/synced",
            missing.clone(),
            202,
            2,
        );
        let some = json!([{"_key": "a", "v": 2}, {"_key": "nope", "v": 2}]);
        expect(
            &f,
            method.clone(),
            "/_api/document/synced",
            some.clone(),
            201,
            1,
        );
        expect(&f, method.clone(), "/_api/document/plain", some, 202, 1);
        let target = "/_api/document/plain?waitForSync=true";
        expect(&f, method.clone(), target, missing.clone(), 201, 2);
        expect(&f, method.clone(), "/_api/document/plain", missing, 202, 2);
    }
    let missing = json!(["nope1", "nope2"]);
    expect(
        &f,
        Method::DELETE,
        "/_api/document/synced",
        missing.clone(),
        202,
        2,
    );
    let target = "/_api/document/plain?waitForSync=true";
    expect(&f, Method::DELETE, target, missing.clone(), 200, 2);
    expect(&f, Method::DELETE, "/_api/document/plain", missing, 202, 2);
    let some = json!(["b", "nope"]);
    expect(&f, Method::DELETE, "/_api/document/synced", some, 200, 1);
    expect(
        &f,
        Method::DELETE,
        "/_api/document/synced",
        json!(["c"]),
        200,
        0,
    );
    expect(
        &f,
        Method::DELETE,
        "/_api/document/plain",
        json!(["a"]),
        202,
        0,
    );
}
