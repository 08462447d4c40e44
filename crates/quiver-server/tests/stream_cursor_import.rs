//! Handler tests (no socket): AQL cursors and imports inside stream transactions
//! (`x-arango-trx-id` on `POST /_api/cursor` and `POST /_api/import`).

use std::sync::Arc;

use http::Method;
use quiver_core::{Core, CoreOptions};
use quiver_server::api::cursor::{try_inline, Inline};
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
    let f = Fixture {
        state: ServerState::new(config, core).unwrap(),
        _dir: dir,
    };
    for name in ["c", "other"] {
        let r = f.call(
            None,
            Method::POST,
            "/_api/collection",
            Some(json!({"name": name})),
        );
        assert_eq!(r.status.as_u16(), 200, "{r:?}");
    }
    f
}

impl Fixture {
    fn call(
        &self,
        trx: Option<&str>,
        method: Method,
        target: &str,
        body: Option<Value>,
    ) -> Response {
        let mut req = Request::build(method, target);
        if let Some(id) = trx {
            req = req.with_header("x-arango-trx-id", id);
        }
        if let Some(b) = body {
            req = req.with_body(serde_json::to_vec(&b).unwrap());
        }
        handle(&self.state, req).settle_blocking()
    }

    fn raw(&self, trx: Option<&str>, target: &str, body: &str) -> Response {
        let mut req = Request::build(Method::POST, target).with_body(body.to_string());
        if let Some(id) = trx {
            req = req.with_header("x-arango-trx-id", id);
        }
        handle(&self.state, req).settle_blocking()
    }

    fn begin(&self, write: &[&str]) -> String {
        let r = self.call(
            None,
            Method::POST,
            "/_api/transaction/begin",
            Some(json!({"collections": {"write": write}})),
        );
        assert_eq!(r.status.as_u16(), 201, "{r:?}");
        body(&r)["result"]["id"].as_str().unwrap().to_string()
    }

    fn query(&self, trx: Option<&str>, query: &str) -> Response {
        self.call(
            trx,
            Method::POST,
            "/_api/cursor",
            Some(json!({"query": query})),
        )
    }

    fn keys(&self, trx: Option<&str>) -> Value {
        let r = self.query(trx, "FOR d IN c SORT d._key RETURN d._key");
        assert_eq!(r.status.as_u16(), 201, "{r:?}");
        body(&r)["result"].clone()
    }

    fn status(&self, trx: &str) -> String {
        let r = self.call(None, Method::GET, &format!("/_api/transaction/{trx}"), None);
        body(&r)["result"]["status"].as_str().unwrap().to_string()
    }

    fn commit(&self, trx: &str) {
        let r = self.call(None, Method::PUT, &format!("/_api/transaction/{trx}"), None);
        assert_eq!(r.status.as_u16(), 200, "{r:?}");
    }
}

fn body(r: &Response) -> Value {
    r.body_json().unwrap_or_else(|| panic!("not JSON: {r:?}"))
}

#[track_caller]
fn assert_error(r: &Response, status: u16, num: u32) {
    assert_eq!(r.status.as_u16(), status, "{r:?}");
    assert_eq!(body(r)["errorNum"], num, "{r:?}");
}

#[test]
fn queries_read_and_write_inside_the_transaction() {
    let f = fixture();
    let trx = f.begin(&["c"]);
    let t = Some(trx.as_str());
    // A document-API write and an AQL write join the same transaction.
    let r = f.call(
        t,
        Method::POST,
        "/_api/document/c",
        Some(json!({"_key": "a"})),
    );
    assert_eq!(r.status.as_u16(), 202, "{r:?}");
    let r = f.query(t, "INSERT {_key: 'b'} INTO c RETURN NEW._key");
    assert_eq!(r.status.as_u16(), 201, "{r:?}");
    assert_eq!(body(&r)["result"], json!(["b"]));
    // The query sees the transaction's writes, others do not.
    assert_eq!(f.keys(t), json!(["a", "b"]));
    assert_eq!(f.keys(None), json!([]));
    let r = f.call(t, Method::GET, "/_api/document/c/b", None);
    assert_eq!(r.status.as_u16(), 200, "{r:?}");
    // A small batch size still returns everything (materialized), also with stream: true.
    let r = f.call(
        t,
        Method::POST,
        "/_api/cursor",
        Some(json!({"query": "FOR d IN c RETURN 1", "batchSize": 1, "stream": true})),
    );
    assert_eq!(r.status.as_u16(), 201, "{r:?}");
    let id = body(&r)["id"].as_str().unwrap().to_string();
    let r = f.call(t, Method::POST, &format!("/_api/cursor/{id}"), None);
    assert_eq!(r.status.as_u16(), 200, "{r:?}");
    assert_eq!(body(&r)["hasMore"], false);
    f.commit(&trx);
    assert_eq!(f.keys(None), json!(["a", "b"]));
}

#[test]
fn a_failed_query_keeps_or_aborts_the_transaction() {
    let f = fixture();
    let trx = f.begin(&["c"]);
    let t = Some(trx.as_str());
    let r = f.query(t, "INSERT {_key: 'a'} INTO c");
    assert_eq!(r.status.as_u16(), 201, "{r:?}");
    // Failures that staged nothing leave the transaction running and intact.
    assert_error(&f.query(t, "FOR"), 400, 1501);
    assert_error(&f.query(t, "INSERT {_key: 'a'} INTO c"), 409, 1210);
    assert_error(&f.query(t, "INSERT {} INTO other"), 400, 1652);
    assert_eq!(f.status(&trx), "running");
    assert_eq!(f.keys(t), json!(["a"]));
    // A query that fails after staging writes aborts the whole transaction.
    assert_error(
        &f.query(t, "FOR k IN ['b', 'c', 'a'] INSERT {_key: k} INTO c"),
        409,
        1210,
    );
    assert_eq!(f.status(&trx), "aborted");
    assert_error(&f.query(t, "RETURN 1"), 410, 1654);
    assert_eq!(f.keys(None), json!([]));
}

#[test]
fn imports_join_the_transaction() {
    let f = fixture();
    let trx = f.begin(&["c"]);
    let t = Some(trx.as_str());
    let r = f.raw(
        t,
        "/_api/import?collection=c&type=documents&details=true",
        "{\"_key\":\"a\"}\n{\"_key\":\"b\"}\n{\"_key\":\"a\"}\n",
    );
    assert_eq!(r.status.as_u16(), 201, "{r:?}");
    let b = body(&r);
    assert_eq!(
        (b["created"].clone(), b["errors"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(f.keys(t), json!(["a", "b"]));
    assert_eq!(f.keys(None), json!([]));
    // complete=true: all documents or none; a failing first document leaves the
    // transaction as it was.
    let r = f.raw(
        t,
        "/_api/import?collection=c&type=documents&complete=true",
        "{\"_key\":\"e\"}\n{\"_key\":\"f\"}\n",
    );
    assert_eq!(body(&r)["created"], 2, "{r:?}");
    assert_error(
        &f.raw(
            t,
            "/_api/import?collection=c&type=documents&complete=true",
            "{\"_key\":\"a\"}\n",
        ),
        409,
        1210,
    );
    assert_eq!(f.keys(t), json!(["a", "b", "e", "f"]));
    // overwrite=true truncates inside the transaction too.
    let r = f.raw(
        t,
        "/_api/import?collection=c&type=documents&overwrite=true",
        "{\"_key\":\"z\"}\n",
    );
    assert_eq!(r.status.as_u16(), 201, "{r:?}");
    assert_eq!(f.keys(t), json!(["z"]));
    let r = f.raw(t, "/_api/import?collection=other&type=documents", "{}\n");
    assert_eq!(body(&r)["errors"], 1, "{r:?}");
    f.commit(&trx);
    assert_eq!(f.keys(None), json!(["z"]));
}

#[test]
fn a_failed_complete_import_aborts_the_transaction() {
    let f = fixture();
    let trx = f.begin(&["c"]);
    let t = Some(trx.as_str());
    let r = f.raw(
        t,
        "/_api/import?collection=c&type=documents&complete=true",
        "{\"_key\":\"a\"}\n{\"_key\":\"a\"}\n",
    );
    assert_error(&r, 409, 1210);
    assert_eq!(f.status(&trx), "aborted");
    assert_eq!(f.keys(None), json!([]));
}

#[test]
fn trivial_queries_are_answered_inline_like_the_full_route() {
    let f = fixture();
    let build = || {
        Request::build(Method::POST, "/_api/cursor")
            .with_body(r#"{"query":"FOR i IN 1..3 RETURN i * 2","count":true}"#.to_string())
    };
    // Not cached yet: the full route answers (and caches the plan).
    assert!(!matches!(
        try_inline(&f.state, &build()),
        Inline::Answered(_)
    ));
    // The plan cache is keyed by a process-wide catalog version that DDL in the other tests of
    // this binary (running in parallel) bumps, which can drop the plan between the two calls:
    // retry a bounded number of times; an inline path that never answers still fails.
    let (full, inline) = (0..50)
        .find_map(|_| {
            let full = handle(&f.state, build()).settle_blocking();
            match try_inline(&f.state, &build()) {
                Inline::Answered(inline) => Some((full, inline)),
                _ => None,
            }
        })
        .expect("the inline path answers once the plan is cached");
    assert_eq!((full.status.as_u16(), inline.status.as_u16()), (201, 201));
    let (mut a, mut b) = (body(&full), body(&inline));
    for v in [&mut a, &mut b] {
        v["extra"]["stats"]["executionTime"] = json!(0);
    }
    assert_eq!(a, b);
    assert_eq!(b["result"], json!([2, 4, 6]));
    assert_eq!(b["count"], 3);
    // Inside a stream transaction, or for an unknown database, never inline.
    let trx = build().with_header("x-arango-trx-id", "12345");
    assert!(matches!(try_inline(&f.state, &trx), Inline::Elsewhere));
    let other_db = Request::build(Method::POST, "/_db/nope/_api/cursor")
        .with_body(r#"{"query":"FOR i IN 1..3 RETURN i * 2","count":true}"#.to_string());
    assert!(matches!(try_inline(&f.state, &other_db), Inline::Elsewhere));
}

#[test]
fn queries_of_brief_texts_may_run_on_the_worker() {
    let f = fixture();
    let query = |n: u32| {
        Request::build(Method::POST, "/_api/cursor").with_body(format!(
            r#"{{"query":"FOR d IN _graphs FILTER d.n == @n RETURN d","bindVars":{{"n":{n}}}}}"#
        ))
    };
    assert!(matches!(try_inline(&f.state, &query(0)), Inline::Elsewhere));
    // Two brief runs of the text (any bind values) make it brief. DDL in the other tests of
    // this binary (running in parallel) changes the catalog version, which starts the history
    // over, and a run may lose its core on a loaded machine: retry a bounded number of times.
    let brief = (0..50).any(|n| {
        let r = handle(&f.state, query(n)).settle_blocking();
        assert_eq!(r.status.as_u16(), 201);
        matches!(try_inline(&f.state, &query(n + 1000)), Inline::Brief)
    });
    assert!(brief, "the text becomes brief after brief runs");
    // A stream transaction's query never runs there.
    let trx = query(1).with_header("x-arango-trx-id", "12345");
    assert!(matches!(try_inline(&f.state, &trx), Inline::Elsewhere));
}
