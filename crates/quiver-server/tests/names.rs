//! ArangoDB's name rules through the HTTP handlers: database creation, collection creation
//! and rename, under the extended (default) and the traditional naming convention.

use std::sync::Arc;

use http::Method;
use quiver_core::{Core, CoreOptions, NamingConvention};
use quiver_server::{handle, Request, Response, ServerConfig, ServerState};
use serde_json::{json, Value};

struct Fixture {
    state: Arc<ServerState>,
    _dir: tempfile::TempDir,
}

fn fixture(naming: NamingConvention) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let options = CoreOptions {
        naming,
        ..CoreOptions::default()
    };
    let core = Arc::new(Core::open(dir.path(), options).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        async_workers: 1,
        // Names, not authentication (tests/access.rs covers that).
        auth: quiver_server::auth::AuthConfig::disabled(),
        ..ServerConfig::default()
    };
    Fixture {
        state: ServerState::new(config, core).unwrap(),
        _dir: dir,
    }
}

impl Fixture {
    fn call(&self, method: Method, target: &str, body: Value) -> Response {
        let req = Request::build(method, target).with_body(serde_json::to_vec(&body).unwrap());
        handle(&self.state, req).settle_blocking()
    }
}

#[track_caller]
fn assert_status(r: &Response, status: u16, error_num: Option<u32>) {
    assert_eq!(r.status.as_u16(), status, "{r:?}");
    let body = r.body_json().unwrap();
    match error_num {
        Some(num) => {
            assert_eq!(body["error"], true, "{r:?}");
            assert_eq!(body["errorNum"], num, "{r:?}");
        }
        None => assert!(body.get("errorNum").is_none(), "{r:?}"),
    }
}

#[test]
fn database_names_follow_arangodb_rules() {
    let f = fixture(NamingConvention::Extended);
    for bad in [
        "..", ".hidden", "x/../..", "a:b", "1db", "_db", " db", "db ", "a\u{1}b",
    ] {
        let r = f.call(Method::POST, "/_api/database", json!({ "name": bad }));
        assert_status(&r, 400, Some(1229));
    }
    let long = "d".repeat(129);
    let r = f.call(Method::POST, "/_api/database", json!({ "name": long }));
    assert_status(&r, 400, Some(1229));
    // A decomposed "é" is valid UTF-8 but not NFC: 1208 saying so.
    let r = f.call(
        Method::POST,
        "/_api/database",
        json!({"name": "cafe\u{301}"}),
    );
    assert_status(&r, 400, Some(1208));
    assert!(r.body_json().unwrap()["errorMessage"]
        .as_str()
        .unwrap()
        .contains("NFC"));
    // ArangoDB's extended names allow these; `%2F` is text, not a slash.
    for good in ["x%2F..%2F..", "a.b", "Ünïcödé", "d".repeat(128).as_str()] {
        let r = f.call(Method::POST, "/_api/database", json!({ "name": good }));
        assert_status(&r, 201, None);
    }
    let r = f.call(Method::GET, "/_db/x%252F..%252F../_api/version", json!({}));
    assert_status(&r, 200, None);
}

#[test]
fn traditional_names_are_ascii() {
    let f = fixture(NamingConvention::Traditional);
    for bad in ["Ünïcödé", "a.b", "a b", "x%2F", "-db"] {
        let r = f.call(Method::POST, "/_api/database", json!({ "name": bad }));
        assert_status(&r, 400, Some(1229));
        let r = f.call(Method::POST, "/_api/collection", json!({ "name": bad }));
        assert_status(&r, 400, Some(1208));
    }
    let r = f.call(Method::POST, "/_api/database", json!({"name": "db-1_x"}));
    assert_status(&r, 201, None);
    let r = f.call(
        Method::POST,
        "/_api/database",
        json!({"name": "d".repeat(65)}),
    );
    assert_status(&r, 400, Some(1229));
}

#[test]
fn collection_names_follow_arangodb_rules() {
    let f = fixture(NamingConvention::Extended);
    for bad in ["..", ".hidden", "x/../..", "1c", "_c", " c", "c ", "a\nb"] {
        let r = f.call(Method::POST, "/_api/collection", json!({ "name": bad }));
        assert_status(&r, 400, Some(1208));
    }
    let r = f.call(
        Method::POST,
        "/_api/collection",
        json!({"name": "c".repeat(257)}),
    );
    assert_status(&r, 400, Some(1208));
    for good in ["a:b", "Möbel", "c.d", "x%2F..%2F.."] {
        let r = f.call(Method::POST, "/_api/collection", json!({ "name": good }));
        assert_status(&r, 200, None);
    }
    for bad in ["..", ".hidden", "a/b"] {
        let r = f.call(
            Method::PUT,
            "/_api/collection/c.d/rename",
            json!({ "name": bad }),
        );
        assert_status(&r, 400, Some(1208));
    }
    let r = f.call(
        Method::PUT,
        "/_api/collection/c.d/rename",
        json!({"name": "c.e"}),
    );
    assert_status(&r, 200, None);
}
