//! Handler tests without a socket: every route family through `quiver_server::handle`,
//! checking status, headers, envelope and error numbers.

use std::sync::Arc;
use std::time::Duration;

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
        async_queue_capacity: 4,
        async_workers: 1,
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

    fn raw(&self, req: Request) -> Response {
        handle(&self.state, req).settle_blocking()
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
    assert!(b["errorMessage"].is_string());
}

#[track_caller]
fn assert_success(r: &Response, status: u16) -> Value {
    assert_eq!(r.status.as_u16(), status, "{r:?}");
    let b = body(r);
    assert!(b.get("errorNum").is_none(), "{r:?}");
    b
}

#[test]
fn server_endpoints() {
    let f = fixture();
    let v = assert_success(&f.call(Method::GET, "/_api/version", None), 200);
    assert_eq!(v["server"], "arango");
    assert!(v.get("details").is_none());
    let v = assert_success(&f.call(Method::GET, "/_api/version?details=1", None), 200);
    assert!(v["details"]["server-version"].is_string());
    let r = f.call(Method::GET, "/_admin/version", None);
    assert_eq!(
        r.content_type.as_ref().unwrap(),
        quiver_server::JSON_CONTENT_TYPE
    );
    let e = assert_success(&f.call(Method::GET, "/_api/engine", None), 200);
    assert_eq!(e["name"], "rocksdb");
    // The engine lists every index type the index API accepts (python-arango reads it).
    let listed = e["supports"]["indexes"].as_array().unwrap();
    f.call(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "ix"})),
    );
    for kind in ["persistent", "ttl", "geo", "fulltext", "inverted"] {
        assert!(listed.contains(&json!(kind)), "{kind}");
        let field = if kind == "inverted" {
            json!({"name": "a"})
        } else {
            json!("a")
        };
        let mut def = json!({"type": kind, "fields": [field]});
        if kind == "ttl" {
            def["expireAfter"] = json!(10);
        }
        let r = f.call(Method::POST, "/_api/index?collection=ix", Some(def));
        assert!(r.status.is_success(), "{kind}: {r:?}");
    }
    let role = assert_success(&f.call(Method::GET, "/_admin/server/role", None), 200);
    assert_eq!(
        (role["role"].clone(), role["error"].clone()),
        (json!("SINGLE"), json!(false))
    );
    let s = assert_success(&f.call(Method::GET, "/_admin/status", None), 200);
    assert_eq!(s["serverInfo"]["readOnly"], false);
    let t = assert_success(&f.call(Method::GET, "/_admin/time", None), 200);
    assert!(t["time"].as_f64().unwrap() > 1.0e9);
    let l = assert_success(&f.call(Method::GET, "/_admin/license", None), 200);
    assert_eq!(l["license"], "none");
    assert_error(&f.call(Method::PUT, "/_admin/license", None), 501, 31);
    assert_error(&f.call(Method::POST, "/_api/version", None), 405, 405);
    assert_error(&f.call(Method::GET, "/_api/nonexisting", None), 404, 404);
    assert_error(&f.call(Method::GET, "/nothing/here", None), 404, 404);
    let opt = f.call(Method::OPTIONS, "/_api/whatever", None);
    assert_eq!(opt.status.as_u16(), 200);
    assert!(opt.header("allow").unwrap().contains("PATCH"));
    assert!(opt.body.is_empty());
}

fn multipart(boundary: &str, parts: &[&str]) -> String {
    let mut out = String::new();
    for (i, p) in parts.iter().enumerate() {
        out.push_str(&format!(
            "--{boundary}\r\nContent-Type: application/x-arango-batchpart\r\nContent-Id: {i}\r\n\r\n{p}\r\n"
        ));
    }
    out.push_str(&format!("--{boundary}--\r\n"));
    out
}

#[test]
fn batch() {
    let f = fixture();
    f.call(Method::POST, "/_api/collection", Some(json!({"name": "c"})));
    let first = multipart(
        "BB",
        &[
            "POST /_api/document/c HTTP/1.1\r\n\r\n{\"_key\":\"k\"}",
            "GET /_api/document/c/k HTTP/1.1\r\n\r\n",
            "POST /_api/document/c HTTP/1.1\r\n\r\n{\"_key\":\"k\"}",
            "POST /_api/batch HTTP/1.1\r\n\r\n",
        ],
    );
    let r = f.raw(
        Request::build(Method::POST, "/_api/batch")
            .with_header("content-type", "multipart/form-data; boundary=BB")
            .with_body(first),
    );
    assert_eq!(r.status.as_u16(), 200);
    assert_eq!(r.header("x-arango-errors"), Some("2"));
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    assert!(text.starts_with("--BB\r\nContent-Type: application/x-arango-batchpart\r\nContent-Id: 0\r\n\r\nHTTP/1.1 202 Accepted\r\n"));
    assert!(text.contains("HTTP/1.1 200 OK"));
    assert!(text.contains("HTTP/1.1 409 Conflict"));
    assert!(text.ends_with("--BB--\r\n"));

    // Consecutive inserts are committed together but answered one by one, as if sent alone.
    let parts = multipart(
        "BB",
        &[
            "POST /_api/document/c?returnNew=true HTTP/1.1\r\n\r\n{\"_key\":\"r1\"}",
            "POST /_api/document/c?returnNew=true HTTP/1.1\r\n\r\n{\"_key\":\"r1\"}",
            "POST /_api/document/c?returnNew=true HTTP/1.1\r\n\r\n{\"_key\":",
            "POST /_api/document/c?returnNew=true HTTP/1.1\r\n\r\n{\"_key\":\"bad key\"}",
            "POST /_api/document/c?returnNew=true HTTP/1.1\r\n\r\n{\"_key\":\"r2\",\"v\":2}",
            "POST /_api/document/nope HTTP/1.1\r\n\r\n{}",
            "POST /_api/document/nope HTTP/1.1\r\n\r\n{}",
            "POST /_api/document?collection=c HTTP/1.1\r\n\r\n{\"_key\":\"r3\"}",
            "POST /_api/document?collection=c HTTP/1.1\r\n\r\n{\"_key\":\"r3\"}",
        ],
    );
    let r = f.raw(
        Request::build(Method::POST, "/_api/batch")
            .with_header("content-type", "multipart/form-data; boundary=BB")
            .with_body(parts),
    );
    assert_eq!(r.header("x-arango-errors"), Some("6"));
    let text = String::from_utf8(r.body.to_vec()).unwrap();
    let statuses: Vec<&str> = text.split("HTTP/1.1 ").skip(1).map(|s| &s[..3]).collect();
    assert_eq!(
        statuses,
        ["202", "409", "400", "400", "202", "404", "404", "202", "409"]
    );
    assert!(text.contains("location: /_db/_system/_api/document/c/r2"));
    assert!(text.contains("\"new\":{\"_key\":\"r2\""));
    let doc = body(&f.call(Method::GET, "/_api/document/c/r2", None));
    assert_eq!(doc["v"], 2);

    let r = f.raw(
        Request::build(Method::POST, "/_api/batch")
            .with_body(multipart("BB", &["GET / HTTP/1.1\r\n\r\n"])),
    );
    assert_error(&r, 400, 400);
    assert_error(&f.call(Method::GET, "/_api/batch", None), 405, 405);
}

#[test]
fn import() {
    let f = fixture();
    f.call(Method::POST, "/_api/collection", Some(json!({"name": "c"})));
    let r = f.raw(
        Request::build(
            Method::POST,
            "/_api/import?collection=c&type=documents&details=true",
        )
        .with_body("{\"_key\":\"a\"}\n\n{\"_key\":\"a\"}\n[]\n"),
    );
    let b = assert_success(&r, 201);
    assert_eq!(
        (
            b["created"].clone(),
            b["errors"].clone(),
            b["empty"].clone()
        ),
        (json!(1), json!(2), json!(1))
    );
    assert_eq!(b["details"].as_array().unwrap().len(), 2);
    let r = f.raw(
        Request::build(
            Method::POST,
            "/_api/import?collection=c&type=array&onDuplicate=update",
        )
        .with_body("[{\"_key\":\"a\",\"v\":1}]"),
    );
    assert_eq!(assert_success(&r, 201)["updated"], 1);
    let r = f.raw(
        Request::build(Method::POST, "/_api/import?collection=c")
            .with_body("[\"_key\",\"v\"]\n[\"t\",1]\n"),
    );
    assert_eq!(assert_success(&r, 201)["created"], 1);
    let r = f.raw(
        Request::build(
            Method::POST,
            "/_api/import?collection=c&type=documents&complete=true",
        )
        .with_body("{\"_key\":\"n\"}\n{\"_key\":\"a\"}"),
    );
    assert_error(&r, 409, 1210);
    assert_error(
        &f.raw(Request::build(Method::POST, "/_api/import?type=documents").with_body("{}")),
        400,
        1204,
    );
    assert_error(
        &f.raw(
            Request::build(Method::POST, "/_api/import?collection=x&type=documents")
                .with_body("{}"),
        ),
        404,
        1203,
    );
    assert_error(
        &f.raw(
            Request::build(Method::POST, "/_api/import?collection=c&type=bogus").with_body("{}"),
        ),
        400,
        400,
    );
    assert_error(
        &f.call(Method::GET, "/_api/import?collection=c", None),
        405,
        405,
    );
}

#[test]
fn async_jobs_and_queue_bound() {
    let f = fixture();
    let r =
        f.raw(Request::build(Method::GET, "/_api/version").with_header("x-arango-async", "store"));
    assert_eq!(r.status.as_u16(), 202);
    let id = r.header("x-arango-async-id").unwrap().to_string();
    let mut done = false;
    for _ in 0..200 {
        if f.call(Method::GET, &format!("/_api/job/{id}"), None)
            .status
            .as_u16()
            == 200
        {
            done = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(done);
    let r = f.call(Method::PUT, &format!("/_api/job/{id}"), None);
    assert_eq!(body(&r)["server"], "arango");
    assert_eq!(r.header("x-arango-async-id"), Some(id.as_str()));
    assert_error(
        &f.call(Method::PUT, &format!("/_api/job/{id}"), None),
        404,
        404,
    );
    assert_error(&f.call(Method::GET, "/_api/job/nonsense", None), 400, 400);
    assert_eq!(
        assert_success(&f.call(Method::GET, "/_api/job/pending", None), 200),
        json!([])
    );
    assert_error(
        &f.raw(
            Request::build(Method::GET, "/_db/nope/_api/version")
                .with_header("x-arango-async", "true"),
        ),
        404,
        1228,
    );
    // "false" executes synchronously.
    let r =
        f.raw(Request::build(Method::GET, "/_api/version").with_header("x-arango-async", "false"));
    assert_eq!(r.status.as_u16(), 200);

    // Overflow: a queue of 4 (store capacity 16) cannot take 100 slow requests at once.
    f.call(Method::POST, "/_api/collection", Some(json!({"name": "c"})));
    let mut full = 0;
    for _ in 0..100 {
        let r = f.raw(
            Request::build(Method::POST, "/_api/import?collection=c&type=documents")
                .with_header("x-arango-async", "store")
                .with_body("{}\n".repeat(2000)),
        );
        if r.status.as_u16() == 503 {
            assert_error(&r, 503, 21003);
            full += 1;
        }
    }
    assert!(full > 0);
    assert_success(&f.call(Method::DELETE, "/_api/job/all", None), 200);
    assert_error(&f.call(Method::DELETE, "/_api/job/expired", None), 400, 400);
    assert_success(
        &f.call(Method::DELETE, "/_api/job/expired?stamp=1", None),
        200,
    );
}

#[test]
fn aql_routes() {
    let f = fixture();
    let b = assert_success(
        &f.call(
            Method::POST,
            "/_api/cursor",
            Some(json!({"query": "RETURN 1"})),
        ),
        201,
    );
    assert_eq!(b["result"], json!([1]));
    assert_eq!(b["hasMore"], false);
    f.call(Method::POST, "/_api/collection", Some(json!({"name": "c"})));
    f.call(
        Method::POST,
        "/_api/document/c",
        Some(json!([{"v": 1}, {"v": 2}, {"v": 3}])),
    );
    let b = assert_success(
        &f.call(
            Method::POST,
            "/_api/cursor",
            Some(json!({"query": "FOR d IN c SORT d.v RETURN d.v", "batchSize": 2, "count": true})),
        ),
        201,
    );
    assert_eq!(b["result"], json!([1, 2]));
    assert_eq!(b["count"], 3);
    let id = b["id"].as_str().unwrap().to_string();
    let b = assert_success(
        &f.call(Method::POST, &format!("/_api/cursor/{id}"), None),
        200,
    );
    assert_eq!(b["result"], json!([3]));
    assert_error(
        &f.call(Method::PUT, &format!("/_api/cursor/{id}"), None),
        404,
        1600,
    );
    assert_error(
        &f.call(Method::DELETE, "/_api/cursor/12345", None),
        404,
        1600,
    );
    assert_error(&f.call(Method::PUT, "/_api/cursor", None), 400, 400);
    assert_error(&f.call(Method::HEAD, "/_api/cursor", None), 405, 405);
    assert_error(
        &f.call(Method::POST, "/_api/cursor", Some(json!({"query": "FOR"}))),
        400,
        1501,
    );
    assert_error(
        &f.call(
            Method::POST,
            "/_api/cursor",
            Some(json!({"query": "FOR d IN nope RETURN d"})),
        ),
        404,
        1203,
    );
    let b = assert_success(
        &f.call(
            Method::POST,
            "/_api/explain",
            Some(json!({"query": "FOR d IN c RETURN d"})),
        ),
        200,
    );
    assert!(b["plan"].is_object());
    let b = assert_success(
        &f.call(
            Method::POST,
            "/_api/query",
            Some(json!({"query": "FOR d IN c RETURN d"})),
        ),
        200,
    );
    assert_eq!(b["collections"], json!(["c"]));
    assert_success(&f.call(Method::GET, "/_api/query/properties", None), 200);
    assert_error(&f.call(Method::GET, "/_api/query/bogus/x", None), 404, 404);
}

/// The keys of a JSON object, sorted.
fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

/// Error bodies carry exactly ArangoDB 3.12's attributes. A duplicate key is
/// the plain four-attribute envelope (python-arango compares it exactly); a multi-document
/// item error is `error`/`errorNum`/`errorMessage` only, also for revision conflicts
/// (python-arango counts an item with `_id` as a success).
#[test]
fn error_bodies_carry_exactly_arangodb_attributes() {
    let f = fixture();
    f.call(Method::POST, "/_api/collection", Some(json!({"name": "c"})));
    f.call(
        Method::POST,
        "/_api/index?collection=c",
        Some(json!({"type": "persistent", "fields": ["u"], "unique": true})),
    );
    let created = assert_success(
        &f.call(
            Method::POST,
            "/_api/document/c",
            Some(json!({"_key": "a", "u": 1})),
        ),
        202,
    );
    let envelope = ["code", "error", "errorMessage", "errorNum"];
    for doc in [json!({"_key": "a"}), json!({"_key": "b", "u": 1})] {
        let r = f.call(Method::POST, "/_api/document/c", Some(doc));
        assert_error(&r, 409, 1210);
        assert_eq!(keys(&body(&r)), envelope, "{r:?}");
        assert!(body(&r)["errorMessage"]
            .as_str()
            .unwrap()
            .starts_with("unique constraint violated"));
    }
    // A single-document revision conflict keeps `_id`, `_key`, `_rev` (412).
    let r = f.call(
        Method::PUT,
        "/_api/document/c/a?ignoreRevs=false",
        Some(json!({"_rev": "_xxxxxxxxx-", "u": 2})),
    );
    assert_error(&r, 412, 1200);
    assert_eq!(body(&r)["_rev"], created["_rev"]);

    let item = ["error", "errorMessage", "errorNum"];
    let multi = [
        (
            Method::POST,
            "/_api/document/c",
            json!([{"_key": "a"}, {"_key": "n1", "u": 1}]),
        ),
        (
            Method::PUT,
            "/_api/document/c?ignoreRevs=false",
            json!([{"_key": "a", "_rev": "_xxxxxxxxx-"}]),
        ),
        (
            Method::PATCH,
            "/_api/document/c?ignoreRevs=false",
            json!([{"_key": "a", "_rev": "_xxxxxxxxx-"}]),
        ),
        (
            Method::DELETE,
            "/_api/document/c?ignoreRevs=false",
            json!([{"_key": "a", "_rev": "_xxxxxxxxx-"}, "missing"]),
        ),
        (
            Method::PUT,
            "/_api/document/c?onlyget=true&ignoreRevs=false",
            json!([{"_key": "a", "_rev": "_xxxxxxxxx-"}, "missing"]),
        ),
    ];
    for (method, target, payload) in multi {
        let r = f.call(method.clone(), target, Some(payload));
        assert!(r.status.is_success(), "{method} {target}: {r:?}");
        assert!(r.header("x-arango-error-codes").is_some(), "{r:?}");
        for entry in body(&r).as_array().unwrap() {
            assert_eq!(keys(entry), item, "{method} {target}: {entry}");
            assert!(entry.get("_id").is_none());
        }
    }
    // Nothing above changed the stored document.
    let r = f.call(Method::GET, "/_api/document/c/a", None);
    assert_eq!(assert_success(&r, 200)["_rev"], created["_rev"]);
}

/// A collection that was never written reports revision "0" (`revision` and
/// `checksum`), as ArangoDB does; a written one an encoded `_rev`-style revision.
#[test]
fn never_written_collection_reports_revision_zero() {
    let f = fixture();
    f.call(Method::POST, "/_api/collection", Some(json!({"name": "c"})));
    let r = assert_success(
        &f.call(Method::GET, "/_api/collection/c/revision", None),
        200,
    );
    assert_eq!(r["revision"], "0");
    let r = assert_success(
        &f.call(Method::GET, "/_api/collection/c/checksum", None),
        200,
    );
    assert_eq!(
        (r["checksum"].clone(), r["revision"].clone()),
        (json!("0"), json!("0"))
    );
    let doc = assert_success(
        &f.call(Method::POST, "/_api/document/c", Some(json!({}))),
        202,
    );
    let r = assert_success(
        &f.call(Method::GET, "/_api/collection/c/revision", None),
        200,
    );
    assert_eq!(r["revision"], doc["_rev"]);
    let r = assert_success(
        &f.call(
            Method::GET,
            "/_api/collection/c/checksum?withData=true",
            None,
        ),
        200,
    );
    assert_eq!(r["revision"], doc["_rev"]);
    assert_ne!(r["checksum"], "0");
}

/// Import `details` are worded as ArangoDB's import handler words them, in its
/// order (input errors first, then refused inserts), and `complete=true` answers an input error
/// with that error's number.
#[test]
fn import_details_wording() {
    let f = fixture();
    f.call(Method::POST, "/_api/collection", Some(json!({"name": "c"})));
    f.call(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "e", "type": 3})),
    );
    f.call(Method::POST, "/_api/document/c", Some(json!({"_key": "a"})));
    let r = f.raw(
        Request::build(
            Method::POST,
            "/_api/import?collection=c&type=documents&details=true",
        )
        .with_body("{\"_key\":\"a\"}\nnot json\n[1]\n{\"_key\":\"ok\"}\n"),
    );
    let b = assert_success(&r, 201);
    assert_eq!(
        (b["created"].clone(), b["errors"].clone()),
        (json!(1), json!(3))
    );
    assert_eq!(
        b["details"],
        json!([
            "at position 2: invalid JSON type (expecting object, probably parse error), offending context: not json",
            "at position 3: invalid JSON type (expecting object), offending document: [1]",
            // A refused insert is numbered by its 0-based index among the documents that
            // reached the insert, as ArangoDB numbers it.
            "at position 0: creating document failed with error 'unique constraint violated', offending document: {\"_key\":\"a\"}",
        ])
    );
    let r = f.raw(
        Request::build(Method::POST, "/_api/import?collection=c&details=true")
            .with_body("[\"_key\",\"v\"]\n[\"t\"]\n7\n"),
    );
    assert_eq!(
        assert_success(&r, 201)["details"],
        json!([
            "at position 1: wrong number of JSON values (got 1, expected 2)",
            "at position 2: no valid JSON array data",
        ])
    );
    let r = f.raw(
        Request::build(
            Method::POST,
            "/_api/import?collection=e&type=documents&details=true&fromPrefix=v",
        )
        .with_body("{\"_from\":\"a\"}\n{\"_from\":\"a\",\"_to\":\"bad\"}\n{\"_from\":\"a\",\"_to\":\"w/b\"}\n"),
    );
    let b = assert_success(&r, 201);
    assert_eq!(
        (b["created"].clone(), b["errors"].clone()),
        (json!(1), json!(2))
    );
    assert_eq!(
        b["details"],
        json!([
            "at position 1: missing '_from' or '_to' attribute, offending document: {\"_from\":\"v/a\"}",
            "at position 0: creating document failed with error 'edge attribute missing or invalid', offending document: {\"_from\":\"v/a\",\"_to\":\"bad\"}",
        ])
    );
    // Blank lines count as lines, as in ArangoDB.
    let r = f.raw(
        Request::build(
            Method::POST,
            "/_api/import?collection=c&type=documents&details=true",
        )
        .with_body("{\"_key\":\"b1\"}\n\n \r\nnot json\n"),
    );
    assert_eq!(
        assert_success(&r, 201)["details"],
        json!(["at position 4: invalid JSON type (expecting object, probably parse error), offending context: not json"])
    );
    // The exact text the Go driver's TestImportDocumentsDetails expects from ArangoDB.
    f.call(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "go"})),
    );
    let r = f.raw(
        Request::build(
            Method::POST,
            "/_api/import?collection=go&type=documents&details=true",
        )
        .with_body("{\"_key\":\"jan\",\"name\":\"Jan\",\"age\":40}\n{\"_key\":\"jan\",\"name\":\"Jan2\"}\n"),
    );
    assert_eq!(
        assert_success(&r, 201)["details"],
        json!(["at position 1: creating document failed with error 'unique constraint violated', offending document: {\"_key\":\"jan\",\"name\":\"Jan2\"}"])
    );
    for (payload, status, num) in [
        ("[1]\n", 400, 1227),
        ("{\"_from\":\"v/a\"}\n", 400, 1233),
        ("nope\n", 400, 400),
    ] {
        let r = f.raw(
            Request::build(
                Method::POST,
                "/_api/import?collection=e&type=documents&complete=true",
            )
            .with_body(payload),
        );
        assert_error(&r, status, num);
    }
}

/// `PUT /_api/job/{id}/cancel` on a job still in the queue answers
/// `{"result":true}`, and fetching the job later gives 410/21 (canceled request) instead of
/// running it; a job that already ran keeps its result.
#[test]
fn async_job_cancelled_while_queued() {
    let f = fixture();
    f.call(Method::POST, "/_api/collection", Some(json!({"name": "c"})));
    // One worker: the later jobs wait behind the first, slow one.
    let ids: Vec<String> = (0..3)
        .map(|_| {
            let r = f.raw(
                Request::build(Method::POST, "/_api/import?collection=c&type=documents")
                    .with_header("x-arango-async", "store")
                    .with_body("{}\n".repeat(20_000)),
            );
            assert_eq!(r.status.as_u16(), 202, "{r:?}");
            r.header("x-arango-async-id").unwrap().to_string()
        })
        .collect();
    for id in &ids {
        let r = f.call(Method::PUT, &format!("/_api/job/{id}/cancel"), None);
        assert_eq!(assert_success(&r, 200), json!({"result": true}));
    }
    let mut cancelled = 0;
    for id in &ids {
        let mut waited = 0;
        let status = loop {
            let r = f.call(Method::PUT, &format!("/_api/job/{id}"), None);
            if r.status.as_u16() != 204 {
                break r;
            }
            waited += 1;
            assert!(waited < 3000, "job {id} still pending after a minute");
            std::thread::sleep(Duration::from_millis(20));
        };
        match status.status.as_u16() {
            410 => {
                assert_error(&status, 410, 21);
                cancelled += 1;
            }
            201 | 202 => assert_eq!(body(&status)["created"], 20_000),
            other => panic!("job {id}: unexpected {other}: {status:?}"),
        }
        // The result was consumed.
        assert_error(
            &f.call(Method::GET, &format!("/_api/job/{id}"), None),
            404,
            404,
        );
    }
    assert!(
        cancelled >= 1,
        "the last queued job was cancelled before it ran"
    );
}

/// Collection options and properties. `journalSize`/`doCompact` at creation,
/// the mutable properties (`waitForSync`, `journalSize`, `doCompact`, `cacheEnabled`,
/// `schema`, `computedValues`), immutable ones ignored as ArangoDB ignores them, ArangoDB's
/// error numbers for bad values, the `isSystem` rules, key generators' `increment`/`offset`
/// and padded keys that sort in insertion order.
#[test]
fn collection_options_properties_and_key_generators() {
    let f = fixture();
    let created = assert_success(
        &f.call(
            Method::POST,
            "/_api/collection",
            Some(
                json!({"name": "c", "journalSize": 4_194_304, "doCompact": false,
                        "waitForSync": true}),
            ),
        ),
        200,
    );
    assert_eq!(
        (
            created["journalSize"].clone(),
            created["doCompact"].clone(),
            created["waitForSync"].clone()
        ),
        (json!(4_194_304), json!(false), json!(true))
    );
    // A synced collection answers 201 even when the request does not ask for sync.
    assert_success(
        &f.call(
            Method::POST,
            "/_api/document/c?waitForSync=false",
            Some(json!({"_key": "a"})),
        ),
        201,
    );
    assert_error(
        &f.call(
            Method::POST,
            "/_api/collection",
            Some(json!({"name": "small", "journalSize": 1024})),
        ),
        400,
        10,
    );

    let changed = assert_success(
        &f.call(
            Method::PUT,
            "/_api/collection/c/properties",
            Some(json!({
                "waitForSync": false, "journalSize": 2_097_152, "doCompact": true,
                "cacheEnabled": true,
                "schema": {"rule": {"type": "object", "required": ["n"]}, "level": "strict"},
                // Immutable: ignored, as ArangoDB ignores them.
                "name": "other", "type": 3, "isSystem": true,
                "keyOptions": {"type": "uuid"},
            })),
        ),
        200,
    );
    assert_eq!(changed["name"], "c");
    assert_eq!(changed["type"], 2);
    assert_eq!(changed["isSystem"], false);
    assert_eq!(changed["keyOptions"]["type"], "traditional");
    assert_eq!(
        (
            changed["waitForSync"].clone(),
            changed["journalSize"].clone(),
            changed["doCompact"].clone(),
            changed["cacheEnabled"].clone(),
            changed["schema"]["level"].clone()
        ),
        (
            json!(false),
            json!(2_097_152),
            json!(true),
            json!(true),
            json!("strict")
        )
    );
    // The change is in force: the schema refuses, waitForSync is off (202).
    assert_error(
        &f.call(Method::POST, "/_api/document/c", Some(json!({}))),
        400,
        1620,
    );
    assert_success(
        &f.call(Method::POST, "/_api/document/c", Some(json!({"n": 1}))),
        202,
    );
    for (bad, num) in [
        (json!({"journalSize": 1}), 10),
        (json!({"waitForSync": "yes"}), 10),
        (json!({"schema": {"rule": 5}}), 1621),
        (json!([1]), 10),
    ] {
        assert_error(
            &f.call(Method::PUT, "/_api/collection/c/properties", Some(bad)),
            400,
            num,
        );
    }
    assert_error(
        &f.call(
            Method::PUT,
            "/_api/collection/nope/properties",
            Some(json!({})),
        ),
        404,
        1203,
    );

    // isSystem: a leading underscore needs isSystem; isSystem without one is an ordinary
    // collection; system collections are dropped only with isSystem=true and never renamed.
    assert_error(
        &f.call(
            Method::POST,
            "/_api/collection",
            Some(json!({"name": "_s"})),
        ),
        400,
        1208,
    );
    let sys = assert_success(
        &f.call(
            Method::POST,
            "/_api/collection",
            Some(json!({"name": "_s", "isSystem": true})),
        ),
        200,
    );
    assert_eq!(sys["isSystem"], true);
    let plain = assert_success(
        &f.call(
            Method::POST,
            "/_api/collection",
            Some(json!({"name": "plain", "isSystem": true})),
        ),
        200,
    );
    assert_eq!(plain["isSystem"], false);
    assert_error(
        &f.call(
            Method::PUT,
            "/_api/collection/_s/rename",
            Some(json!({"name": "_t"})),
        ),
        403,
        11,
    );
    assert_error(
        &f.call(
            Method::PUT,
            "/_api/collection/plain/rename",
            Some(json!({"name": "_t"})),
        ),
        400,
        1208,
    );
    assert_error(
        &f.call(Method::DELETE, "/_api/collection/_s", None),
        403,
        11,
    );
    assert_success(
        &f.call(Method::DELETE, "/_api/collection/_s?isSystem=true", None),
        200,
    );

    // Key generators.
    f.call(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "auto", "keyOptions": {"type": "autoincrement", "increment": 5, "offset": 10}})),
    );
    let keys: Vec<Value> = (0..3)
        .map(|_| {
            assert_success(
                &f.call(Method::POST, "/_api/document/auto", Some(json!({}))),
                202,
            )["_key"]
                .clone()
        })
        .collect();
    assert_eq!(keys, [json!("10"), json!("15"), json!("20")]);
    let props = assert_success(
        &f.call(Method::GET, "/_api/collection/auto/properties", None),
        200,
    );
    assert_eq!(
        props["keyOptions"],
        json!({"type": "autoincrement", "allowUserKeys": true, "increment": 5, "offset": 10, "lastValue": 20})
    );
    for bad in [
        json!({"type": "traditional", "increment": 2}),
        json!({"type": "autoincrement", "increment": 0}),
        json!({"type": "autoincrement", "increment": 65536}),
        json!({"type": "nope"}),
    ] {
        assert_error(
            &f.call(
                Method::POST,
                "/_api/collection",
                Some(json!({"name": "k", "keyOptions": bad})),
            ),
            400,
            1232,
        );
    }
    f.call(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "pad", "keyOptions": {"type": "padded"}})),
    );
    let padded: Vec<String> = (0..40)
        .map(|_| {
            assert_success(
                &f.call(Method::POST, "/_api/document/pad", Some(json!({}))),
                202,
            )["_key"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(padded.iter().all(|k| k.len() == 16));
    let mut sorted = padded.clone();
    sorted.sort();
    assert_eq!(sorted, padded, "padded keys sort in insertion order");
    let r = assert_success(
        &f.call(
            Method::POST,
            "/_api/cursor",
            Some(json!({"query": "FOR d IN pad SORT d._key RETURN d._key", "batchSize": 1000})),
        ),
        201,
    );
    assert_eq!(r["result"], json!(padded));
}

/// `checksum` covers the keys; `withRevisions` adds the revisions and `withData`
/// the user attributes, independent of insertion order and of the collection's name.
#[test]
fn checksum_flags_cover_keys_revisions_and_data() {
    let f = fixture();
    let sums = |name: &str| -> Vec<Value> {
        ["", "?withRevisions=true", "?withData=true"]
            .iter()
            .map(|q| {
                let target = format!("/_api/collection/{name}/checksum{q}");
                assert_success(&f.call(Method::GET, &target, None), 200)["checksum"].clone()
            })
            .collect()
    };
    for name in ["a", "b"] {
        f.call(
            Method::POST,
            "/_api/collection",
            Some(json!({"name": name})),
        );
    }
    f.call(
        Method::POST,
        "/_api/document/a",
        Some(json!([{"_key": "x", "v": 1}, {"_key": "y", "v": 2}])),
    );
    f.call(
        Method::POST,
        "/_api/document/b",
        Some(json!([{"_key": "y", "v": 2}, {"_key": "x", "v": 1}])),
    );
    let (a, b) = (sums("a"), sums("b"));
    assert_eq!(a[0], b[0], "keys only");
    assert_eq!(a[2], b[2], "keys and data");
    assert_ne!(a[1], b[1], "revisions differ between the two collections");
    f.call(Method::PATCH, "/_api/document/a/x", Some(json!({"v": 3})));
    let after = sums("a");
    assert_eq!(after[0], a[0], "an update keeps the key set");
    assert_ne!(after[1], a[1], "a new revision");
    assert_ne!(after[2], a[2], "new data");
    f.call(Method::PATCH, "/_api/document/a/x", Some(json!({"v": 1})));
    assert_eq!(sums("a")[2], b[2], "the same data again");
}

/// `/_api/key-generators` and the deprecated `/_api/endpoint` (`_system` only).
#[test]
fn key_generators_and_endpoint() {
    let f = fixture();
    let r = assert_success(&f.call(Method::GET, "/_api/key-generators", None), 200);
    assert_eq!(
        r,
        json!({"keyGenerators": ["traditional", "autoincrement", "uuid", "padded"]})
    );
    assert_error(
        &f.call(Method::POST, "/_api/key-generators", None),
        405,
        405,
    );
    let r = f.call(Method::GET, "/_api/endpoint", None);
    assert_eq!(r.status.as_u16(), 200);
    assert_eq!(body(&r), json!([{"endpoint": "http://127.0.0.1:8529"}]));
    f.call(
        Method::POST,
        "/_api/database",
        Some(json!({"name": "other"})),
    );
    assert_error(
        &f.call(Method::GET, "/_db/other/_api/endpoint", None),
        403,
        1230,
    );
}

/// `overwrite=true` with `complete=true` is all or nothing, truncate included
/// (ArangoDB runs both in one transaction); without `complete` the truncate and the good
/// documents stay, as in ArangoDB.
#[test]
fn import_overwrite_complete_is_atomic() {
    let f = fixture();
    f.call(Method::POST, "/_api/collection", Some(json!({"name": "c"})));
    f.call(
        Method::POST,
        "/_api/document/c",
        Some(json!([{"_key": "old1"}, {"_key": "old2"}])),
    );
    let count = |f: &Fixture| {
        assert_success(&f.call(Method::GET, "/_api/collection/c/count", None), 200)["count"].clone()
    };
    let import = |query: &str, body: &str| {
        f.raw(
            Request::build(
                Method::POST,
                &format!("/_api/import?collection=c&type=documents&{query}"),
            )
            .with_body(body.to_string()),
        )
    };
    let r = import(
        "overwrite=true&complete=true",
        "{\"_key\":\"n1\"}\n{\"_key\":\"n1\"}\n",
    );
    assert_error(&r, 409, 1210);
    assert_eq!(
        count(&f),
        2,
        "a failed complete import keeps the old documents"
    );
    assert_success(&f.call(Method::GET, "/_api/document/c/old1", None), 200);
    assert_error(&f.call(Method::GET, "/_api/document/c/n1", None), 404, 1202);

    let r = import(
        "overwrite=true&complete=true&waitForSync=true&details=true",
        "{\"_key\":\"n1\"}\n{\"_key\":\"n2\",\"v\":1}\n",
    );
    let b = assert_success(&r, 201);
    assert_eq!(
        (
            b["created"].clone(),
            b["errors"].clone(),
            b["details"].clone()
        ),
        (json!(2), json!(0), json!([]))
    );
    assert_eq!(count(&f), 2);
    assert_error(
        &f.call(Method::GET, "/_api/document/c/old1", None),
        404,
        1202,
    );

    let r = import("overwrite=true", "{\"_key\":\"m1\"}\n{\"_key\":\"m1\"}\n");
    let b = assert_success(&r, 201);
    assert_eq!(
        (b["created"].clone(), b["errors"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(count(&f), 1);
}

/// Single-document inserts parse and encode the body in one pass when the collection allows
/// it: the stored document, the answers and the errors are those of the parse-to-value path.
#[test]
fn single_insert_bodies_are_encoded_in_one_pass() {
    let f = fixture();
    f.call(Method::POST, "/_api/collection", Some(json!({"name": "c"})));
    f.call(
        Method::POST,
        "/_api/collection",
        Some(
            json!({"name": "typed", "schema": {"rule": {"properties": {"n": {"type": "number"}}}}}),
        ),
    );
    f.call(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "e", "type": 3})),
    );
    let post = |target: &str, text: &str| {
        f.raw(Request::build(Method::POST, target).with_body(text.as_bytes().to_vec()))
    };
    let r = post(
        "/_api/document/c?returnNew=true",
        " {\n \"_key\" : \"p\", \"n\" : 1.0, \"o\" : { \"a\" : [ 1e2, -0.0, 2.5 ] }, \"_id\": \"x/y\" }\n",
    );
    let b = assert_success(&r, 202);
    let rev = b["_rev"].as_str().unwrap().to_string();
    let stored = f.call(Method::GET, "/_api/document/c/p", None);
    assert_eq!(
        String::from_utf8(stored.body.to_vec()).unwrap(),
        format!(r#"{{"_key":"p","_id":"c/p","_rev":"{rev}","n":1,"o":{{"a":[100,-0.0,2.5]}}}}"#)
    );
    assert_eq!(b["new"], body(&stored));
    for bad in [
        r#"{"a":1,"a":2}"#,
        r#"{"o":{"y":1,"y":2}}"#,
        r#"{"a":1"#,
        r#"{"a":1} x"#,
    ] {
        assert_error(&post("/_api/document/c", bad), 400, 600);
    }
    assert_error(&post("/_api/document/c", r#"{"_key":"p"}"#), 409, 1210);
    assert_error(&post("/_api/document/c", r#"{"_key":7}"#), 400, 1221);
    assert_error(&post("/_api/document/typed", r#"{"n":"x"}"#), 400, 1620);
    assert_success(&post("/_api/document/typed", r#"{"n":2}"#), 202);
    assert_error(&post("/_api/document/e", r#"{"_from":"v/1"}"#), 400, 1233);
    let r = post("/_api/document/e", r#"{"_from":"v/1","_to":"v/2","w":1}"#);
    assert_success(&r, 202);
    // The old edge form takes `_from`/`_to` from the query.
    let r = post(
        "/_api/document?collection=e&from=v/3&to=v/4",
        r#"{"_key":"old","w":2}"#,
    );
    assert_success(&r, 202);
    let edge = body(&f.call(Method::GET, "/_api/document/e/old", None));
    assert_eq!(
        (edge["_from"].clone(), edge["_to"].clone()),
        (json!("v/3"), json!("v/4"))
    );
    // Overwrite modes and arrays keep their paths.
    let r = post(
        "/_api/document/c?overwriteMode=update",
        r#"{"_key":"p","m":3}"#,
    );
    assert_success(&r, 202);
    assert_eq!(
        body(&f.call(Method::GET, "/_api/document/c/p", None))["n"],
        1
    );
    let r = post("/_api/document/c", r#"[{"_key":"q"},{"_key":"q"}]"#);
    assert_eq!(r.status.as_u16(), 202);
    assert_eq!(r.header("x-arango-error-codes").unwrap(), r#"{"1210":1}"#);
}
