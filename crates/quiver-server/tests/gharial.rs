//! Handler tests (no socket) for `/_api/gharial`: graph definitions in `_graphs`, definition
//! changes, vertex and edge CRUD through a graph, and vertex removal with its edges.

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
        self.call_with(method, target, body, &[])
    }

    fn call_with(
        &self,
        method: Method,
        target: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Response {
        let mut req = Request::build(method, target);
        for (k, v) in headers {
            req = req.with_header(k, v);
        }
        if let Some(b) = body {
            req = req.with_body(serde_json::to_vec(&b).unwrap());
        }
        handle(&self.state, req).settle_blocking()
    }

    /// The social graph: `relation` edges between `female` and `male`, orphan `city`.
    fn social(&self) -> Value {
        let r = self.call(
            Method::POST,
            "/_api/gharial",
            Some(json!({
                "name": "social",
                "edgeDefinitions": [
                    {"collection": "relation", "from": ["male", "female"], "to": ["female", "male"]}
                ],
                "orphanCollections": ["city"]
            })),
        );
        assert_status(&r, 202);
        body(&r)
    }

    fn count(&self, collection: &str) -> u64 {
        let r = self.call(
            Method::GET,
            &format!("/_api/collection/{collection}/count"),
            None,
        );
        assert_status(&r, 200);
        body(&r)["count"].as_u64().unwrap()
    }
}

fn body(r: &Response) -> Value {
    r.body_json().unwrap_or_else(|| panic!("not JSON: {:?}", r))
}

#[track_caller]
fn assert_status(r: &Response, status: u16) {
    assert_eq!(r.status.as_u16(), status, "{:?}", r);
}

#[track_caller]
fn assert_error(r: &Response, status: u16, num: u32) {
    assert_eq!(r.status.as_u16(), status, "{:?}", r);
    let b = body(r);
    assert_eq!(b["error"], true, "{b}");
    assert_eq!(b["errorNum"], num, "{b}");
    assert_eq!(b["code"], status, "{b}");
}

#[test]
fn create_stores_arangodb_format_and_creates_collections() {
    let f = fixture();
    let created = f.social();
    let graph = &created["graph"];
    assert_eq!(created["error"], false);
    assert_eq!(created["code"], 202);
    assert_eq!(graph["_id"], "_graphs/social");
    assert_eq!(graph["_key"], "social");
    assert_eq!(graph["name"], "social");
    assert_eq!(
        graph["edgeDefinitions"],
        json!([{"collection": "relation", "from": ["female", "male"], "to": ["female", "male"]}])
    );
    assert_eq!(graph["orphanCollections"], json!(["city"]));
    assert_eq!(graph["isSmart"], false);
    assert_eq!(graph["numberOfShards"], 1);
    // The collections exist with the right types.
    for (name, kind) in [("relation", 3), ("male", 2), ("female", 2), ("city", 2)] {
        let r = f.call(Method::GET, &format!("/_api/collection/{name}"), None);
        assert_status(&r, 200);
        assert_eq!(body(&r)["type"], kind, "{name}");
    }
    // The stored document is exactly ArangoDB's format (what AQL `GRAPH` reads).
    let r = f.call(Method::GET, "/_api/document/_graphs/social", None);
    assert_status(&r, 200);
    let doc = body(&r);
    assert_eq!(doc["edgeDefinitions"], graph["edgeDefinitions"]);
    assert_eq!(doc["orphanCollections"], json!(["city"]));
    assert_eq!(doc["_rev"], graph["_rev"]);
    assert!(doc.get("name").is_none(), "{doc}");
    // Get and list.
    let r = f.call(Method::GET, "/_api/gharial/social", None);
    assert_status(&r, 200);
    assert_eq!(body(&r)["graph"], *graph);
    let r = f.call(Method::GET, "/_api/gharial", None);
    assert_eq!(body(&r)["graphs"], json!([graph]));
    // waitForSync answers 201 and carries the revision as a bare ETag.
    let r = f.call(
        Method::POST,
        "/_api/gharial?waitForSync=true",
        Some(json!({"name": "empty"})),
    );
    assert_status(&r, 201);
    let rev = body(&r)["graph"]["_rev"].as_str().unwrap().to_string();
    assert_eq!(r.header("etag"), Some(rev.as_str()));
}

#[test]
fn create_errors_use_arangodb_numbers() {
    let f = fixture();
    f.social();
    let def = |c: &str, from: &str, to: &str| json!({"collection": c, "from": [from], "to": [to]});
    let cases = [
        (json!({}), 400, 1922),
        (json!({"name": "social"}), 409, 1925),
        (
            json!({"name": "g", "edgeDefinitions": [{"collection": "e"}]}),
            400,
            1923,
        ),
        (
            json!({"name": "g", "edgeDefinitions": [def("e", "a", "b"), def("e", "a", "c")]}),
            400,
            1920,
        ),
        // `relation` is defined differently in `social`.
        (
            json!({"name": "g", "edgeDefinitions": [def("relation", "male", "city")]}),
            400,
            1921,
        ),
        (json!({"name": "g", "orphanCollections": [1]}), 400, 1943),
        // An edge definition's collection that exists as a document collection.
        (
            json!({"name": "g", "edgeDefinitions": [def("city", "a", "b")]}),
            400,
            1944,
        ),
    ];
    for (input, status, num) in cases {
        let r = f.call(Method::POST, "/_api/gharial", Some(input.clone()));
        assert_error(&r, status, num);
    }
    // Nothing of the failed attempts was created.
    for name in ["e", "a", "b", "g"] {
        let r = f.call(Method::GET, &format!("/_api/collection/{name}"), None);
        assert_error(&r, 404, 1203);
    }
    // The same definition in a second graph is fine.
    let r = f.call(
        Method::POST,
        "/_api/gharial",
        Some(json!({"name": "second", "edgeDefinitions": [
            {"collection": "relation", "from": ["female", "male"], "to": ["male", "female"]}
        ]})),
    );
    assert_status(&r, 202);
    let r = f.call(Method::GET, "/_api/gharial/nope", None);
    assert_error(&r, 404, 1924);
    assert!(body(&r)["errorMessage"].as_str().unwrap().contains("nope"));
    let r = f.call(Method::GET, "/_api/gharial/nope/vertex/male/1", None);
    assert_error(&r, 404, 1924);
    let r = f.call(Method::GET, "/_api/gharial/social/bogus", None);
    assert_error(&r, 404, 404);
    let r = f.call(Method::PUT, "/_api/gharial/social", None);
    assert_error(&r, 405, 405);
}

#[test]
fn vertex_and_edge_definitions_change() {
    let f = fixture();
    f.social();
    let r = f.call(Method::GET, "/_api/gharial/social/vertex", None);
    assert_eq!(body(&r)["collections"], json!(["city", "female", "male"]));
    let r = f.call(Method::GET, "/_api/gharial/social/edge", None);
    assert_eq!(body(&r)["collections"], json!(["relation"]));

    // Orphans: add (created when missing), duplicates, removal.
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/vertex",
        Some(json!({"collection": "country"})),
    );
    assert_status(&r, 202);
    assert_eq!(
        body(&r)["graph"]["orphanCollections"],
        json!(["city", "country"])
    );
    assert_eq!(f.count("country"), 0);
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/vertex",
        Some(json!({"collection": "country"})),
    );
    assert_error(&r, 400, 1938);
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/vertex",
        Some(json!({"collection": "male"})),
    );
    assert_error(&r, 400, 1929);

    // Edge definitions: add one that turns the orphan `city` into a vertex collection.
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/edge",
        Some(json!({"collection": "lives", "from": ["male", "female"], "to": ["city"]})),
    );
    assert_status(&r, 202);
    let g = body(&r)["graph"].clone();
    assert_eq!(g["orphanCollections"], json!(["country"]));
    assert_eq!(g["edgeDefinitions"][0]["collection"], "lives");
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/edge",
        Some(json!({"collection": "lives", "from": ["male"], "to": ["city"]})),
    );
    assert_error(&r, 400, 1920);

    // Replace: `city` no longer used, so it is an orphan again.
    let r = f.call(
        Method::PUT,
        "/_api/gharial/social/edge/lives",
        Some(json!({"collection": "lives", "from": ["male"], "to": ["country"]})),
    );
    assert_status(&r, 202);
    let g = body(&r)["graph"].clone();
    assert_eq!(g["orphanCollections"], json!(["city"]));
    assert_eq!(
        g["edgeDefinitions"][0],
        json!({"collection": "lives", "from": ["male"], "to": ["country"]})
    );
    let r = f.call(
        Method::PUT,
        "/_api/gharial/social/edge/nothere",
        Some(json!({"collection": "nothere", "from": ["a"], "to": ["b"]})),
    );
    assert_error(&r, 404, 1930);

    // Remove with dropCollections: the edge collection goes, its vertices stay as orphans.
    let r = f.call(
        Method::DELETE,
        "/_api/gharial/social/edge/lives?dropCollections=true",
        None,
    );
    assert_status(&r, 202);
    assert_eq!(
        body(&r)["graph"]["orphanCollections"],
        json!(["city", "country"])
    );
    let r = f.call(Method::GET, "/_api/collection/lives", None);
    assert_error(&r, 404, 1203);
    let r = f.call(Method::DELETE, "/_api/gharial/social/edge/lives", None);
    assert_error(&r, 404, 1930);

    // A collection of a graph cannot be dropped on its own (3.12).
    let r = f.call(Method::DELETE, "/_api/collection/country", None);
    assert_error(&r, 400, 1942);
    // Removing an orphan that is not one, then a real one with dropCollection.
    let r = f.call(Method::DELETE, "/_api/gharial/social/vertex/male", None);
    assert_error(&r, 400, 1928);
    let r = f.call(
        Method::DELETE,
        "/_api/gharial/social/vertex/country?dropCollection=true",
        None,
    );
    assert_status(&r, 202);
    assert_eq!(body(&r)["graph"]["orphanCollections"], json!(["city"]));
    let r = f.call(Method::GET, "/_api/collection/country", None);
    assert_error(&r, 404, 1203);
}

#[test]
fn edge_collection_as_orphan_is_rejected() {
    let f = fixture();
    f.social();
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/vertex",
        Some(json!({"collection": "relation"})),
    );
    // `relation` is an edge collection that exists: not a vertex collection.
    assert_error(&r, 400, 1927);
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/vertex?createCollection=false",
        Some(json!({"collection": "missing"})),
    );
    assert_error(&r, 404, 1926);
}

#[test]
fn vertex_crud_with_revisions() {
    let f = fixture();
    f.social();
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/vertex/male?returnNew=true",
        Some(json!({"_key": "bob", "age": 30})),
    );
    assert_status(&r, 202);
    let b = body(&r);
    assert_eq!(b["vertex"]["_id"], "male/bob");
    assert_eq!(b["new"]["age"], 30);
    let rev = b["vertex"]["_rev"].as_str().unwrap().to_string();
    assert_eq!(r.header("etag"), Some(rev.as_str()));
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/vertex/male",
        Some(json!({"_key": "bob"})),
    );
    assert_error(&r, 409, 1210);
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/vertex/relation",
        Some(json!({})),
    );
    assert_error(&r, 404, 1949);
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/vertex/male",
        Some(json!([1])),
    );
    assert_error(&r, 400, 1227);

    let r = f.call(Method::GET, "/_api/gharial/social/vertex/male/bob", None);
    assert_status(&r, 200);
    assert_eq!(body(&r)["vertex"]["age"], 30);
    assert_eq!(r.header("etag"), Some(rev.as_str()));
    let r = f.call_with(
        Method::GET,
        "/_api/gharial/social/vertex/male/bob",
        None,
        &[("if-none-match", &rev)],
    );
    assert_status(&r, 304);
    let r = f.call_with(
        Method::GET,
        "/_api/gharial/social/vertex/male/bob",
        None,
        &[("if-match", "_nope")],
    );
    assert_error(&r, 412, 1200);
    let r = f.call(Method::GET, "/_api/gharial/social/vertex/male/nobody", None);
    assert_error(&r, 404, 1202);

    // PATCH with keepNull=false and returnOld/returnNew, waitForSync → 200.
    let r = f.call_with(
        Method::PATCH,
        "/_api/gharial/social/vertex/male/bob?keepNull=false&returnOld=true&returnNew=true&waitForSync=true",
        Some(json!({"age": null, "name": "Bob"})),
        &[("if-match", &rev)],
    );
    assert_status(&r, 200);
    let b = body(&r);
    assert_eq!(b["vertex"]["_oldRev"], rev.as_str());
    assert_eq!(b["old"]["age"], 30);
    assert_eq!(
        b["new"],
        json!({"_key": "bob", "_id": "male/bob", "_rev": b["vertex"]["_rev"], "name": "Bob"})
    );
    let r = f.call_with(
        Method::PUT,
        "/_api/gharial/social/vertex/male/bob",
        Some(json!({"x": 1})),
        &[("if-match", &rev)],
    );
    assert_error(&r, 412, 1200);
    let r = f.call(
        Method::PUT,
        "/_api/gharial/social/vertex/male/bob?rev=_stale",
        Some(json!({"x": 1})),
    );
    assert_error(&r, 412, 1200);
    let r = f.call(
        Method::PUT,
        "/_api/gharial/social/vertex/male/bob",
        Some(json!({"x": 1})),
    );
    assert_status(&r, 202);
    let r = f.call(Method::GET, "/_api/gharial/social/vertex/male/bob", None);
    assert_eq!(body(&r)["vertex"]["x"], 1);
    assert!(body(&r)["vertex"].get("name").is_none());
}

#[test]
fn edges_are_checked_against_the_graph() {
    let f = fixture();
    f.social();
    for (coll, key) in [("male", "bob"), ("female", "alice")] {
        let r = f.call(
            Method::POST,
            &format!("/_api/gharial/social/vertex/{coll}"),
            Some(json!({"_key": key})),
        );
        assert_status(&r, 202);
    }
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/edge/relation?returnNew=true",
        Some(json!({"_key": "e1", "_from": "male/bob", "_to": "female/alice", "type": "friend"})),
    );
    assert_status(&r, 202);
    let b = body(&r);
    assert_eq!(b["edge"]["_id"], "relation/e1");
    assert_eq!(b["new"]["_from"], "male/bob");

    let cases = [
        // `_to` missing.
        (json!({"_from": "male/bob"}), 400, 1233),
        // Not a handle.
        (json!({"_from": "bob", "_to": "female/alice"}), 400, 1233),
        // A collection outside the graph.
        (
            json!({"_from": "nowhere/x", "_to": "female/alice"}),
            404,
            1947,
        ),
        (json!({"_from": "male/bob", "_to": "nowhere/x"}), 404, 1947),
        // The vertex must exist.
        (
            json!({"_from": "male/ghost", "_to": "female/alice"}),
            404,
            1202,
        ),
    ];
    for (doc, status, num) in cases {
        let r = f.call(
            Method::POST,
            "/_api/gharial/social/edge/relation",
            Some(doc.clone()),
        );
        assert_error(&r, status, num);
    }
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/edge/other",
        Some(json!({"_from": "male/bob", "_to": "female/alice"})),
    );
    assert_error(&r, 404, 1930);
    assert_eq!(f.count("relation"), 1);

    // PATCH checks whichever end it changes.
    let r = f.call(
        Method::PATCH,
        "/_api/gharial/social/edge/relation/e1",
        Some(json!({"_to": "nowhere/x"})),
    );
    assert_error(&r, 404, 1947);
    let r = f.call(
        Method::PATCH,
        "/_api/gharial/social/edge/relation/e1?returnOld=true",
        Some(json!({"type": "married"})),
    );
    assert_status(&r, 202);
    assert_eq!(body(&r)["old"]["type"], "friend");
    // PUT needs both ends.
    let r = f.call(
        Method::PUT,
        "/_api/gharial/social/edge/relation/e1",
        Some(json!({"type": "x"})),
    );
    assert_error(&r, 400, 1233);
    let r = f.call(Method::GET, "/_api/gharial/social/edge/relation/e1", None);
    assert_status(&r, 200);
    assert_eq!(body(&r)["edge"]["type"], "married");
    let r = f.call(
        Method::DELETE,
        "/_api/gharial/social/edge/relation/e1?returnOld=true",
        None,
    );
    assert_status(&r, 202);
    assert_eq!(body(&r)["removed"], true);
    assert_eq!(body(&r)["old"]["_key"], "e1");
    assert_eq!(f.count("relation"), 0);
}

#[test]
fn removing_a_vertex_removes_its_edges_in_every_graph() {
    let f = fixture();
    f.social();
    // A second graph sharing `male` through another edge collection.
    let r = f.call(
        Method::POST,
        "/_api/gharial",
        Some(json!({"name": "clubs", "edgeDefinitions": [
            {"collection": "member", "from": ["male"], "to": ["club"]}
        ]})),
    );
    assert_status(&r, 202);
    for (g, coll, key) in [
        ("social", "male", "bob"),
        ("social", "male", "carl"),
        ("social", "female", "alice"),
        ("clubs", "club", "chess"),
    ] {
        let r = f.call(
            Method::POST,
            &format!("/_api/gharial/{g}/vertex/{coll}"),
            Some(json!({"_key": key})),
        );
        assert_status(&r, 202);
    }
    for (g, coll, from, to) in [
        ("social", "relation", "male/bob", "female/alice"),
        ("social", "relation", "female/alice", "male/bob"),
        ("social", "relation", "male/bob", "male/bob"),
        ("social", "relation", "male/carl", "female/alice"),
        ("clubs", "member", "male/bob", "club/chess"),
        ("clubs", "member", "male/carl", "club/chess"),
    ] {
        let r = f.call(
            Method::POST,
            &format!("/_api/gharial/{g}/edge/{coll}"),
            Some(json!({"_from": from, "_to": to})),
        );
        assert_status(&r, 202);
    }
    // A stale revision removes nothing at all.
    let r = f.call_with(
        Method::DELETE,
        "/_api/gharial/social/vertex/male/bob",
        None,
        &[("if-match", "_stale")],
    );
    assert_error(&r, 412, 1200);
    assert_eq!(f.count("relation"), 4);
    assert_eq!(f.count("member"), 2);

    let r = f.call(
        Method::DELETE,
        "/_api/gharial/social/vertex/male/bob?returnOld=true&waitForSync=true",
        None,
    );
    assert_status(&r, 200);
    let b = body(&r);
    assert_eq!(
        b,
        json!({"error": false, "code": 200, "removed": true, "old": b["old"]})
    );
    assert_eq!(b["old"]["_key"], "bob");
    // bob's three relations (one a self-loop) and his membership are gone; carl's stay.
    assert_eq!(f.count("relation"), 1);
    assert_eq!(f.count("member"), 1);
    assert_eq!(f.count("male"), 1);
    let r = f.call(Method::DELETE, "/_api/gharial/social/vertex/male/bob", None);
    assert_error(&r, 404, 1202);
}

#[test]
fn vertex_writes_join_stream_transactions() {
    let f = fixture();
    f.social();
    let r = f.call(
        Method::POST,
        "/_api/transaction/begin",
        Some(json!({"collections": {"write": ["male", "female", "relation"]}})),
    );
    assert_status(&r, 201);
    let trx = body(&r)["result"]["id"].as_str().unwrap().to_string();
    let headers = [("x-arango-trx-id", trx.as_str())];
    let r = f.call_with(
        Method::POST,
        "/_api/gharial/social/vertex/male",
        Some(json!({"_key": "tom"})),
        &headers,
    );
    assert_status(&r, 202);
    // Visible inside the transaction, not outside.
    let r = f.call_with(
        Method::GET,
        "/_api/gharial/social/vertex/male/tom",
        None,
        &headers,
    );
    assert_status(&r, 200);
    let r = f.call(Method::GET, "/_api/gharial/social/vertex/male/tom", None);
    assert_error(&r, 404, 1202);
    let r = f.call(Method::PUT, &format!("/_api/transaction/{trx}"), None);
    assert_status(&r, 200);
    let r = f.call(Method::GET, "/_api/gharial/social/vertex/male/tom", None);
    assert_status(&r, 200);
}

#[test]
fn drop_graph_with_and_without_collections() {
    let f = fixture();
    f.social();
    let r = f.call(
        Method::POST,
        "/_api/gharial",
        Some(json!({"name": "other", "edgeDefinitions": [
            {"collection": "likes", "from": ["male"], "to": ["thing"]}
        ]})),
    );
    assert_status(&r, 202);
    let r = f.call(
        Method::DELETE,
        "/_api/gharial/other?dropCollections=true",
        None,
    );
    assert_status(&r, 202);
    assert_eq!(
        body(&r),
        json!({"error": false, "code": 202, "removed": true})
    );
    // `likes` and `thing` were only used by `other`; `male` is still used by `social`.
    for (name, status) in [("likes", 404), ("thing", 404), ("male", 200)] {
        let r = f.call(Method::GET, &format!("/_api/collection/{name}"), None);
        assert_status(&r, status);
    }
    let r = f.call(Method::DELETE, "/_api/gharial/other", None);
    assert_error(&r, 404, 1924);
    let r = f.call(Method::DELETE, "/_api/gharial/social", None);
    assert_status(&r, 202);
    // Without dropCollections the collections stay, and can now be dropped on their own.
    let r = f.call(Method::DELETE, "/_api/collection/relation", None);
    assert_status(&r, 200);
    let r = f.call(Method::GET, "/_api/gharial", None);
    assert_eq!(body(&r)["graphs"], json!([]));
}

#[test]
fn renamed_collections_stay_in_their_graphs() {
    let f = fixture();
    f.social();
    for (old, new) in [("male", "men"), ("relation", "relations"), ("city", "town")] {
        let r = f.call(
            Method::PUT,
            &format!("/_api/collection/{old}/rename"),
            Some(json!({"name": new})),
        );
        assert_status(&r, 200);
    }
    let r = f.call(Method::GET, "/_api/gharial/social", None);
    let g = body(&r)["graph"].clone();
    assert_eq!(
        g["edgeDefinitions"],
        json!([{"collection": "relations", "from": ["female", "men"], "to": ["female", "men"]}])
    );
    assert_eq!(g["orphanCollections"], json!(["town"]));
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/vertex/men",
        Some(json!({"_key": "bob"})),
    );
    assert_status(&r, 202);
}

#[test]
fn concurrent_vertex_updates_are_serialized_not_rejected() {
    let f = fixture();
    f.social();
    let r = f.call(
        Method::POST,
        "/_api/gharial/social/vertex/male",
        Some(json!({"_key": "hot"})),
    );
    assert_status(&r, 202);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let state = Arc::clone(&f.state);
            std::thread::spawn(move || {
                for i in 0..25 {
                    let req = Request::build(Method::PATCH, "/_api/gharial/social/vertex/male/hot")
                        .with_body(serde_json::to_vec(&json!({ format!("a{t}_{i}"): i })).unwrap());
                    let r = handle(&state, req).settle_blocking();
                    assert_eq!(r.status.as_u16(), 202, "{r:?}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let r = f.call(Method::GET, "/_api/gharial/social/vertex/male/hot", None);
    let doc = body(&r)["vertex"].clone();
    // _key, _id, _rev and every thread's 25 attributes: no update was lost.
    assert_eq!(doc.as_object().unwrap().len(), 3 + 100, "{doc}");
}
