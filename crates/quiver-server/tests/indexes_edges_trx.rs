//! Handler tests (no socket) for `/_api/index`, `/_api/edges` and stream transactions.

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
    fixture_with(ServerConfig::default().stream_idle_timeout)
}

fn fixture_with(stream_idle_timeout: std::time::Duration) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        async_queue_capacity: 4,
        async_workers: 1,
        stream_idle_timeout,
        // These tests exercise the handlers, not authentication (tests/access.rs does).
        auth: quiver_server::auth::AuthConfig::disabled(),
        ..ServerConfig::default()
    };
    Fixture {
        state: ServerState::new(config, core).unwrap(),
        _dir: dir,
    }
}

impl Fixture {
    fn call(&self, method: Method, target: &str, body: Option<Value>) -> Response {
        let mut req = Request::build(method, target);
        if let Some(b) = body {
            req = req.with_body(serde_json::to_vec(&b).unwrap());
        }
        handle(&self.state, req).settle_blocking()
    }

    fn call_in(&self, trx: &str, method: Method, target: &str, body: Option<Value>) -> Response {
        let mut req = Request::build(method, target).with_header("x-arango-trx-id", trx);
        if let Some(b) = body {
            req = req.with_body(serde_json::to_vec(&b).unwrap());
        }
        handle(&self.state, req).settle_blocking()
    }

    fn raw_in(
        &self,
        trx: &str,
        method: Method,
        target: &str,
        headers: &[(&str, &str)],
    ) -> Response {
        let mut req = Request::build(method, target).with_header("x-arango-trx-id", trx);
        for (k, v) in headers {
            req = req.with_header(k, v);
        }
        handle(&self.state, req).settle_blocking()
    }

    fn collection(&self, name: &str, edge: bool) {
        let r = self.call(
            Method::POST,
            "/_api/collection",
            Some(json!({"name": name, "type": if edge { 3 } else { 2 }})),
        );
        assert_success(&r, 200);
    }
}

fn body(r: &Response) -> Value {
    r.body_json().unwrap_or_else(|| panic!("not JSON: {:?}", r))
}

#[track_caller]
fn assert_error(r: &Response, status: u16, num: u32) {
    assert_eq!(r.status.as_u16(), status, "{r:?}");
    let b = body(r);
    assert_eq!(b["error"], true, "{r:?}");
    assert_eq!(b["errorNum"], num, "{r:?}");
    assert_eq!(b["code"], status, "{r:?}");
}

#[track_caller]
fn assert_success(r: &Response, status: u16) -> Value {
    assert_eq!(r.status.as_u16(), status, "{r:?}");
    let b = body(r);
    assert!(b.get("errorNum").is_none(), "{r:?}");
    b
}

#[test]
fn index_list_create_get_drop() {
    let f = fixture();
    f.collection("c", false);
    let b = assert_success(&f.call(Method::GET, "/_api/index?collection=c", None), 200);
    assert_eq!(b["indexes"].as_array().unwrap().len(), 1);
    assert_eq!(b["indexes"][0]["type"], "primary");
    assert_eq!(b["indexes"][0]["selectivityEstimate"], 1);
    assert_eq!(b["identifiers"]["c/0"]["name"], "primary");

    let def = json!({"type": "persistent", "fields": ["a"], "unique": true});
    let created = assert_success(
        &f.call(Method::POST, "/_api/index?collection=c", Some(def.clone())),
        201,
    );
    assert_eq!(created["isNewlyCreated"], true);
    assert_eq!(created["type"], "persistent");
    assert_eq!(created["unique"], true);
    let id = created["id"].as_str().unwrap().to_string();
    let number = id.rsplit('/').next().unwrap().to_string();
    let again = assert_success(
        &f.call(Method::POST, "/_api/index?collection=c", Some(def)),
        200,
    );
    assert_eq!(again["isNewlyCreated"], false);
    assert_eq!(again["id"], id.as_str());

    let hash = assert_success(
        &f.call(
            Method::POST,
            "/_api/index?collection=c",
            Some(json!({"type": "hash", "fields": ["b"], "name": "by_b"})),
        ),
        201,
    );
    assert_eq!(hash["type"], "hash");
    let b = assert_success(&f.call(Method::GET, "/_api/index?collection=c", None), 200);
    let list = b["indexes"].as_array().unwrap();
    assert_eq!(list.len(), 3);
    assert_eq!(list[2]["name"], "by_b");

    // By number, by name, by full handle in one encoded segment.
    let one = assert_success(
        &f.call(Method::GET, &format!("/_api/index/c/{number}"), None),
        200,
    );
    assert_eq!(one["id"], id.as_str());
    assert_eq!(one["error"], false);
    let by_name = assert_success(&f.call(Method::GET, "/_api/index/c/by_b", None), 200);
    assert_eq!(by_name["type"], "hash");
    let encoded = assert_success(&f.call(Method::GET, "/_api/index/c%2F0", None), 200);
    assert_eq!(encoded["type"], "primary");

    // The unique index is enforced through the document API.
    assert_success(
        &f.call(Method::POST, "/_api/document/c", Some(json!({"a": 1}))),
        202,
    );
    assert_error(
        &f.call(Method::POST, "/_api/document/c", Some(json!({"a": 1}))),
        409,
        1210,
    );

    let dropped = assert_success(
        &f.call(Method::DELETE, &format!("/_api/index/c/{number}"), None),
        200,
    );
    assert_eq!(dropped["id"], id.as_str());
    assert_success(
        &f.call(Method::POST, "/_api/document/c", Some(json!({"a": 1}))),
        202,
    );
    assert_error(
        &f.call(Method::GET, &format!("/_api/index/c/{number}"), None),
        404,
        1212,
    );
    assert_error(
        &f.call(Method::DELETE, &format!("/_api/index/c/{number}"), None),
        404,
        1212,
    );
    let r = f.call(Method::DELETE, "/_api/index/c/0", None);
    assert_eq!(r.status.as_u16(), 403, "{r:?}");
}

#[test]
fn index_errors() {
    let f = fixture();
    f.collection("c", false);
    assert_error(&f.call(Method::GET, "/_api/index", None), 400, 1204);
    assert_error(
        &f.call(Method::GET, "/_api/index?collection=nope", None),
        404,
        1203,
    );
    assert_error(&f.call(Method::GET, "/_api/index/nope/0", None), 404, 1203);
    assert_error(
        &f.call(
            Method::POST,
            "/_api/index?collection=c",
            Some(json!({"type": "banana", "fields": ["a"]})),
        ),
        400,
        10,
    );
    assert_error(
        &f.call(
            Method::POST,
            "/_api/index?collection=c",
            Some(json!({"type": "persistent"})),
        ),
        400,
        10,
    );
    assert_error(
        &f.call(Method::POST, "/_api/index?collection=c", Some(json!([1]))),
        400,
        10,
    );
    assert_error(&f.call(Method::GET, "/_api/index/justone", None), 400, 1214);
    let r = f.call(Method::PATCH, "/_api/index?collection=c", None);
    assert_eq!(r.status.as_u16(), 405);
    // A unique index over duplicate data is refused.
    for _ in 0..2 {
        assert_success(
            &f.call(Method::POST, "/_api/document/c", Some(json!({"d": 5}))),
            202,
        );
    }
    assert_error(
        &f.call(
            Method::POST,
            "/_api/index?collection=c",
            Some(json!({"type": "persistent", "fields": ["d"], "unique": true})),
        ),
        400,
        1210,
    );
}

#[test]
fn index_types_ttl_geo_fulltext_edge() {
    let f = fixture();
    f.collection("e", true);
    let b = assert_success(&f.call(Method::GET, "/_api/index?collection=e", None), 200);
    assert_eq!(b["indexes"][1]["type"], "edge");
    let ttl = assert_success(
        &f.call(
            Method::POST,
            "/_api/index?collection=e",
            Some(json!({"type": "ttl", "fields": ["t"], "expireAfter": 10})),
        ),
        201,
    );
    assert_eq!(ttl["expireAfter"], 10);
    assert_error(
        &f.call(
            Method::POST,
            "/_api/index?collection=e",
            Some(json!({"type": "ttl", "fields": ["u"], "expireAfter": 5})),
        ),
        400,
        10,
    );
    let geo = assert_success(
        &f.call(
            Method::POST,
            "/_api/index?collection=e",
            Some(json!({"type": "geo", "fields": ["lat", "lng"]})),
        ),
        201,
    );
    assert_eq!(geo["type"], "geo");
    let ft = assert_success(
        &f.call(
            Method::POST,
            "/_api/index?collection=e",
            Some(json!({"type": "fulltext", "fields": ["text"]})),
        ),
        201,
    );
    assert_eq!(ft["type"], "fulltext");
    let r = f.call(Method::DELETE, "/_api/index/e/edge", None);
    assert_eq!(r.status.as_u16(), 403, "{r:?}");
}

#[test]
fn edges_by_direction() {
    let f = fixture();
    f.collection("v", false);
    f.collection("e", true);
    for (k, from, to) in [
        ("1", "v/a", "v/b"),
        ("2", "v/b", "v/c"),
        ("3", "v/a", "v/a"),
    ] {
        assert_success(
            &f.call(
                Method::POST,
                "/_api/document/e",
                Some(json!({"_key": k, "_from": from, "_to": to})),
            ),
            202,
        );
    }
    let keys = |target: &str| -> Vec<String> {
        let b = assert_success(&f.call(Method::GET, target, None), 200);
        assert!(b["stats"]["scannedIndex"].is_number());
        assert!(b["stats"]["filtered"].is_number());
        let mut keys: Vec<String> = b["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                assert!(e["_id"].is_string() && e["_from"].is_string());
                e["_key"].as_str().unwrap().to_string()
            })
            .collect();
        keys.sort();
        keys
    };
    assert_eq!(keys("/_api/edges/e?vertex=v/a&direction=out"), ["1", "3"]);
    assert_eq!(keys("/_api/edges/e?vertex=v/b&direction=in"), ["1"]);
    assert_eq!(keys("/_api/edges/e?vertex=v/b"), ["1", "2"]);
    assert_eq!(keys("/_api/edges/e?vertex=v/a&direction=any"), ["1", "3"]);
    assert_eq!(keys("/_api/edges/e?vertex=v/zzz"), Vec::<String>::new());

    assert_error(&f.call(Method::GET, "/_api/edges/e", None), 400, 1205);
    assert_error(
        &f.call(Method::GET, "/_api/edges/e?vertex=v/a&direction=up", None),
        400,
        400,
    );
    assert_error(
        &f.call(Method::GET, "/_api/edges/nope?vertex=v/a", None),
        404,
        1203,
    );
    assert_error(
        &f.call(Method::GET, "/_api/edges/v?vertex=v/a", None),
        400,
        1218,
    );
    let r = f.call(Method::POST, "/_api/edges/e?vertex=v/a", None);
    assert_eq!(r.status.as_u16(), 405);
}

fn begin(f: &Fixture, body: Value) -> String {
    let b = assert_success(
        &f.call(Method::POST, "/_api/transaction/begin", Some(body)),
        201,
    );
    assert_eq!(b["result"]["status"], "running");
    b["result"]["id"].as_str().unwrap().to_string()
}

#[test]
fn stream_transaction_commit_and_isolation() {
    let f = fixture();
    f.collection("c", false);
    f.collection("other", false);
    let id = begin(&f, json!({"collections": {"write": "c"}}));
    assert!(id.bytes().all(|b| b.is_ascii_digit()));

    let list = assert_success(&f.call(Method::GET, "/_api/transaction", None), 200);
    assert_eq!(
        list["transactions"],
        json!([{"id": id, "state": "running"}])
    );

    let r = f.call_in(
        &id,
        Method::POST,
        "/_api/document/c",
        Some(json!({"_key": "a", "v": 1})),
    );
    assert_success(&r, 202);
    let r = f.call_in(
        &id,
        Method::POST,
        "/_api/document/c",
        Some(json!([{"_key": "b"}, {"_key": "a"}])),
    );
    let items = assert_success(&r, 202);
    assert_eq!(items[0]["_key"], "b");
    assert_eq!(items[1]["errorNum"], 1210);
    assert_eq!(r.header("x-arango-error-codes"), Some("{\"1210\":1}"));
    // Own writes are visible inside, not outside.
    let inside = assert_success(
        &f.call_in(&id, Method::GET, "/_api/document/c/a", None),
        200,
    );
    assert_eq!(inside["v"], 1);
    assert_eq!(inside["_id"], "c/a");
    assert_error(&f.call(Method::GET, "/_api/document/c/a", None), 404, 1202);
    let count = assert_success(
        &f.call_in(&id, Method::GET, "/_api/collection/c/count", None),
        200,
    );
    assert_eq!(count["count"], 2);
    let count = assert_success(&f.call(Method::GET, "/_api/collection/c/count", None), 200);
    assert_eq!(count["count"], 0);

    let r = f.call_in(
        &id,
        Method::PATCH,
        "/_api/document/c/a",
        Some(json!({"w": 2})),
    );
    assert_success(&r, 202);
    let r = f.call_in(
        &id,
        Method::PUT,
        "/_api/document/c?onlyget=true",
        Some(json!(["a", {"_key": "zz"}])),
    );
    let got = assert_success(&r, 200);
    assert_eq!(got[0]["w"], 2);
    assert_eq!(got[1]["errorNum"], 1202);
    let r = f.call_in(&id, Method::DELETE, "/_api/document/c/b", None);
    assert_success(&r, 202);
    assert_error(
        &f.call_in(&id, Method::GET, "/_api/document/c/b", None),
        404,
        1202,
    );
    // An undeclared collection cannot be written; the transaction stays usable.
    assert_error(
        &f.call_in(&id, Method::POST, "/_api/document/other", Some(json!({}))),
        400,
        1652,
    );

    let done = assert_success(
        &f.call(Method::PUT, &format!("/_api/transaction/{id}"), None),
        200,
    );
    assert_eq!(done["result"], json!({"id": id, "status": "committed"}));
    let visible = assert_success(&f.call(Method::GET, "/_api/document/c/a", None), 200);
    assert_eq!(
        (visible["v"].clone(), visible["w"].clone()),
        (json!(1), json!(2))
    );
    assert_error(&f.call(Method::GET, "/_api/document/c/b", None), 404, 1202);
    let status = assert_success(
        &f.call(Method::GET, &format!("/_api/transaction/{id}"), None),
        200,
    );
    assert_eq!(status["result"]["status"], "committed");
    // Committing twice is harmless; aborting a committed one is refused; using it is 1653.
    assert_success(
        &f.call(Method::PUT, &format!("/_api/transaction/{id}"), None),
        200,
    );
    assert_error(
        &f.call(Method::DELETE, &format!("/_api/transaction/{id}"), None),
        400,
        1653,
    );
    assert_error(
        &f.call_in(&id, Method::POST, "/_api/document/c", Some(json!({}))),
        400,
        1653,
    );
    let list = assert_success(&f.call(Method::GET, "/_api/transaction", None), 200);
    assert_eq!(list["transactions"], json!([]));
}

#[test]
fn stream_transaction_abort_and_errors() {
    let f = fixture();
    f.collection("c", false);
    f.collection("e", true);
    let id = begin(&f, json!({"collections": {"write": ["c", "e"]}}));
    assert_success(
        &f.call_in(
            &id,
            Method::POST,
            "/_api/document/e",
            Some(json!({"_key": "x", "_from": "c/1", "_to": "c/2"})),
        ),
        202,
    );
    let edges = assert_success(
        &f.call_in(
            &id,
            Method::GET,
            "/_api/edges/e?vertex=c/1&direction=out",
            None,
        ),
        200,
    );
    assert_eq!(edges["edges"][0]["_key"], "x");
    let edges = assert_success(&f.call(Method::GET, "/_api/edges/e?vertex=c/1", None), 200);
    assert_eq!(edges["edges"], json!([]));
    assert_success(
        &f.call_in(
            &id,
            Method::POST,
            "/_api/document/c",
            Some(json!({"_key": "k"})),
        ),
        202,
    );
    assert_success(
        &f.call_in(&id, Method::PUT, "/_api/collection/c/truncate", None),
        200,
    );
    assert_error(
        &f.call_in(&id, Method::GET, "/_api/document/c/k", None),
        404,
        1202,
    );

    let aborted = assert_success(
        &f.call(Method::DELETE, &format!("/_api/transaction/{id}"), None),
        200,
    );
    assert_eq!(aborted["result"]["status"], "aborted");
    assert_error(&f.call(Method::GET, "/_api/document/e/x", None), 404, 1202);
    assert_error(
        &f.call(Method::PUT, &format!("/_api/transaction/{id}"), None),
        400,
        1653,
    );
    assert_error(
        &f.call_in(&id, Method::GET, "/_api/document/c/k", None),
        410,
        1654,
    );

    assert_error(
        &f.call(Method::GET, "/_api/transaction/99999", None),
        404,
        1655,
    );
    assert_error(
        &f.call(Method::GET, "/_api/transaction/illegal", None),
        400,
        10,
    );
    assert_error(
        &f.call_in("99999", Method::GET, "/_api/document/c/k", None),
        404,
        1655,
    );
    assert_error(
        &f.call(
            Method::POST,
            "/_api/transaction/begin",
            Some(json!({"collections": {"write": "nope"}})),
        ),
        404,
        1203,
    );
    assert_error(
        &f.call(
            Method::POST,
            "/_api/transaction/begin",
            Some(json!({"collections": 5})),
        ),
        400,
        10,
    );
    assert_error(
        &f.call(
            Method::POST,
            "/_api/transaction",
            Some(json!({"action": "x"})),
        ),
        501,
        9,
    );
    // A transaction belongs to its database.
    assert_success(
        &f.call(
            Method::POST,
            "/_api/database",
            Some(json!({"name": "other"})),
        ),
        201,
    );
    let id = begin(&f, json!({}));
    assert_error(
        &f.call(
            Method::GET,
            &format!("/_db/other/_api/transaction/{id}"),
            None,
        ),
        404,
        1655,
    );
}

#[test]
fn stream_transaction_if_match_and_conflict() {
    let f = fixture();
    f.collection("c", false);
    let r = f.call(
        Method::POST,
        "/_api/document/c",
        Some(json!({"_key": "d", "n": 0})),
    );
    let rev = assert_success(&r, 202)["_rev"]
        .as_str()
        .unwrap()
        .to_string();
    let id = begin(&f, json!({"collections": {"write": "c"}}));
    let r = f.raw_in(
        &id,
        Method::GET,
        "/_api/document/c/d",
        &[("if-match", "\"nope\"")],
    );
    assert_error(&r, 412, 1200);
    let r = f.raw_in(
        &id,
        Method::GET,
        "/_api/document/c/d",
        &[("if-none-match", &format!("\"{rev}\""))],
    );
    assert_eq!(r.status.as_u16(), 304);
    assert_success(
        &f.call_in(
            &id,
            Method::PATCH,
            "/_api/document/c/d",
            Some(json!({"n": 1})),
        ),
        202,
    );
    // Someone else changes the document first: the commit fails and aborts the transaction.
    assert_success(
        &f.call(Method::PATCH, "/_api/document/c/d", Some(json!({"n": 2}))),
        202,
    );
    let r = f.call(Method::PUT, &format!("/_api/transaction/{id}"), None);
    assert_eq!(body(&r)["errorNum"], 1200, "{r:?}");
    let status = assert_success(
        &f.call(Method::GET, &format!("/_api/transaction/{id}"), None),
        200,
    );
    assert_eq!(status["result"]["status"], "aborted");
    let d = assert_success(&f.call(Method::GET, "/_api/document/c/d", None), 200);
    assert_eq!(d["n"], 2);
}

#[test]
fn stream_transaction_idle_timeout_aborts() {
    let f = fixture_with(std::time::Duration::from_millis(100));
    f.collection("c", false);
    let id = begin(&f, json!({"collections": {"write": "c"}}));
    assert_success(
        &f.call_in(
            &id,
            Method::POST,
            "/_api/document/c",
            Some(json!({"_key": "k"})),
        ),
        202,
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let status = assert_success(
        &f.call(Method::GET, &format!("/_api/transaction/{id}"), None),
        200,
    );
    assert_eq!(status["result"]["status"], "aborted");
    assert_error(
        &f.call_in(&id, Method::POST, "/_api/document/c", Some(json!({}))),
        410,
        1654,
    );
    assert_error(&f.call(Method::GET, "/_api/document/c/k", None), 404, 1202);
}
