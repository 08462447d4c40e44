//! Handler tests (no socket) for the hot-backup API `/_admin/backup/*`: create, list, a
//! server opened on the copy, restore's answer, upload and download refused, delete, unknown
//! ids and bad labels.

use std::path::Path;
use std::sync::Arc;

use http::Method;
use quiver_core::{Core, CoreOptions};
use quiver_server::{handle, Request, ServerConfig, ServerState};
use serde_json::{json, Value};

fn state(dir: &Path) -> Arc<ServerState> {
    let core = Arc::new(Core::open(dir, CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.to_path_buf(),
        async_queue_capacity: 4,
        async_workers: 1,
        auth: quiver_server::auth::AuthConfig::disabled(),
        ..ServerConfig::default()
    };
    ServerState::new(config, core).unwrap()
}

fn call(state: &ServerState, method: Method, target: &str, body: Value) -> (u16, Value) {
    let req = Request::build(method, target).with_body(serde_json::to_vec(&body).unwrap());
    let r = handle(state, req).settle_blocking();
    (r.status.as_u16(), r.body_json().unwrap_or(Value::Null))
}

#[test]
fn backups_are_created_listed_opened_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let server = state(dir.path());
    let (s, b) = call(
        &server,
        Method::POST,
        "/_api/collection",
        json!({"name": "c"}),
    );
    assert_eq!(s, 200, "{b}");
    for i in 0..50 {
        let (s, b) = call(
            &server,
            Method::POST,
            "/_api/document/c",
            json!({"_key": format!("k{i}")}),
        );
        assert!(matches!(s, 201 | 202), "{b}");
    }

    let (s, b) = call(
        &server,
        Method::POST,
        "/_admin/backup/create",
        json!({"label": "first"}),
    );
    assert_eq!(s, 201, "{b}");
    let id = b["result"]["id"].as_str().unwrap().to_string();
    assert!(id.ends_with("Z_first"), "{id}");
    assert_eq!(id.len(), "2026-11-26T19.30.00Z_first".len(), "{id}");
    assert!(b["result"]["nrFiles"].as_u64().unwrap() > 0, "{b}");

    let (s, b) = call(&server, Method::POST, "/_admin/backup/list", json!({}));
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["result"]["list"][&id]["id"], json!(id));
    let (s, b) = call(
        &server,
        Method::POST,
        "/_admin/backup/list",
        json!({"id": "nope"}),
    );
    assert_eq!((s, b["errorNum"].clone()), (404, json!(404)), "{b}");

    // Restoring is starting a server on the copy; the running one says so.
    let (s, b) = call(
        &server,
        Method::POST,
        "/_admin/backup/restore",
        json!({"id": id}),
    );
    assert_eq!((s, b["errorNum"].clone()), (501, json!(9)), "{b}");
    let copy_dir = dir.path().join("backups").join(&id);
    assert!(b["errorMessage"]
        .as_str()
        .unwrap()
        .contains(copy_dir.to_str().unwrap()));
    {
        let copy = state(&copy_dir);
        let (s, b) = call(&copy, Method::GET, "/_api/collection/c/count", json!(null));
        assert_eq!((s, b["count"].clone()), (200, json!(50)), "{b}");
    }

    let (s, b) = call(
        &server,
        Method::POST,
        "/_admin/backup/create",
        json!({"label": "../x"}),
    );
    assert_eq!((s, b["errorNum"].clone()), (400, json!(400)), "{b}");
    let (s, _) = call(&server, Method::GET, "/_admin/backup/list", json!({}));
    assert_eq!(s, 405);
    let (s, b) = call(&server, Method::POST, "/_admin/backup/restore", json!({}));
    assert_eq!((s, b["errorNum"].clone()), (501, json!(9)), "{b}");
    for op in ["upload", "download"] {
        let (s, b) = call(
            &server,
            Method::POST,
            &format!("/_admin/backup/{op}"),
            json!({"id": id}),
        );
        assert_eq!((s, b["errorNum"].clone()), (501, json!(31)), "{op} {b}");
    }

    let (s, b) = call(
        &server,
        Method::POST,
        "/_admin/backup/delete",
        json!({"id": id}),
    );
    assert_eq!(s, 200, "{b}");
    assert!(!copy_dir.exists());
    let (s, b) = call(
        &server,
        Method::POST,
        "/_admin/backup/delete",
        json!({"id": id}),
    );
    assert_eq!((s, b["errorNum"].clone()), (404, json!(404)), "{b}");
    let (s, b) = call(&server, Method::POST, "/_admin/backup/list", json!({}));
    assert_eq!(b["result"]["list"], json!({}), "{s} {b}");
}
