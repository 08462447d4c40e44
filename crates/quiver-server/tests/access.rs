//! Authentication and permissions through `quiver_server::handle` with authentication on:
//! the 401 answer, users and grants, batch parts running as the batch's caller, AQL
//! collection checks and job ownership.

use std::sync::Arc;

use base64::Engine;
use http::Method;
use quiver_core::{Core, CoreOptions};
use quiver_server::auth::AuthConfig;
use quiver_server::{handle, Request, Response, ServerConfig, ServerState};
use serde_json::{json, Value};

struct Fixture {
    state: Arc<ServerState>,
    _dir: tempfile::TempDir,
}

fn basic(user: &str, password: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {encoded}")
}

const ROOT: &str = "root";
const ROOT_PASSWORD: &str = "secret root";

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(&dir.path().join("db"), CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        async_queue_capacity: 4,
        async_workers: 1,
        auth: AuthConfig {
            initial_root_password: ROOT_PASSWORD.into(),
            ..AuthConfig::default()
        },
        ..ServerConfig::default()
    };
    Fixture {
        state: ServerState::new(config, core).unwrap(),
        _dir: dir,
    }
}

impl Fixture {
    fn call(
        &self,
        auth: Option<&str>,
        method: Method,
        target: &str,
        body: Option<Value>,
    ) -> Response {
        let mut req = Request::build(method, target);
        if let Some(auth) = auth {
            req = req.with_header("authorization", auth);
        }
        if let Some(b) = body {
            req = req.with_body(serde_json::to_vec(&b).unwrap());
        }
        handle(&self.state, req).settle_blocking()
    }

    fn root(&self, method: Method, target: &str, body: Option<Value>) -> Response {
        self.call(Some(&basic(ROOT, ROOT_PASSWORD)), method, target, body)
    }
}

fn json_of(r: &Response) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

#[test]
fn unauthenticated_requests_get_401_with_both_challenges() {
    let f = fixture();
    let r = f.call(None, Method::GET, "/_api/version", None);
    assert_eq!(r.status.as_u16(), 401);
    assert_eq!(
        json_of(&r),
        json!({"code": 401, "error": true, "errorMessage": "not authorized to execute this request", "errorNum": 11})
    );
    let challenges: Vec<_> = r
        .headers
        .iter()
        .filter(|(n, _)| n == http::header::WWW_AUTHENTICATE)
        .map(|(_, v)| v.to_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        challenges,
        [
            "Basic, realm=\"ArangoDB\"",
            "Bearer, token_type=\"JWT\", realm=\"ArangoDB\""
        ]
    );
    let omitted = handle(
        &f.state,
        Request::build(Method::GET, "/_api/version").with_header("x-omit-www-authenticate", "x"),
    );
    assert_eq!(omitted.status.as_u16(), 401);
    assert!(omitted
        .headers
        .iter()
        .all(|(n, _)| n != http::header::WWW_AUTHENTICATE));
    assert_eq!(
        f.call(Some(&basic(ROOT, "")), Method::GET, "/_api/version", None)
            .status
            .as_u16(),
        401
    );
    assert_eq!(
        f.root(Method::GET, "/_api/version", None).status.as_u16(),
        200
    );
    assert_eq!(
        f.call(None, Method::GET, "/_admin/server/availability", None)
            .status
            .as_u16(),
        200
    );
}

#[test]
fn grants_batch_parts_aql_and_jobs() {
    let f = fixture();
    assert_eq!(
        f.root(
            Method::POST,
            "/_api/database",
            Some(json!({"name": "shop"}))
        )
        .status
        .as_u16(),
        201
    );
    for c in ["orders", "secret"] {
        let r = f.root(
            Method::POST,
            "/_db/shop/_api/collection",
            Some(json!({"name": c})),
        );
        assert_eq!(r.status.as_u16(), 200);
    }
    let r = f.root(
        Method::POST,
        "/_api/user",
        Some(json!({"user": "ann", "passwd": "pw"})),
    );
    assert_eq!(r.status.as_u16(), 201);
    let ann = basic("ann", "pw");
    // No grant yet: the database is closed (401), then read-only, then orders read-write.
    assert_eq!(
        f.call(Some(&ann), Method::GET, "/_db/shop/_api/collection", None)
            .status
            .as_u16(),
        401
    );
    let r = f.root(
        Method::PUT,
        "/_api/user/ann/database/shop",
        Some(json!({"grant": "ro"})),
    );
    assert_eq!(
        (r.status.as_u16(), json_of(&r)["shop"].clone()),
        (200, json!("ro"))
    );
    assert_eq!(
        f.call(Some(&ann), Method::GET, "/_db/shop/_api/collection", None)
            .status
            .as_u16(),
        200
    );
    let insert = |auth: &str| {
        f.call(
            Some(auth),
            Method::POST,
            "/_db/shop/_api/document/orders",
            Some(json!({})),
        )
        .status
        .as_u16()
    };
    assert_eq!(insert(&ann), 403);
    // A write with `ro` rights on the collection: ArangoDB's read-only refusal, 403/1004.
    let r = f.call(
        Some(&ann),
        Method::POST,
        "/_db/shop/_api/document/orders",
        Some(json!({})),
    );
    assert_eq!(json_of(&r)["errorNum"], 1004, "{r:?}");
    let r = f.call(
        Some(&ann),
        Method::POST,
        "/_db/shop/_api/cursor",
        Some(json!({"query": "INSERT {} INTO orders"})),
    );
    assert_eq!(
        (r.status.as_u16(), json_of(&r)["errorNum"].clone()),
        (403, json!(1004))
    );
    let r = f.root(
        Method::PUT,
        "/_api/user/ann/database/shop/orders",
        Some(json!({"grant": "rw"})),
    );
    assert_eq!(r.status.as_u16(), 200);
    assert_eq!(insert(&ann), 202);
    f.root(
        Method::PUT,
        "/_api/user/ann/database/shop/secret",
        Some(json!({"grant": "none"})),
    );

    // Batch parts run as the batch's caller; their own Authorization headers change nothing.
    let root = basic(ROOT, ROOT_PASSWORD);
    let body = format!(
        "--XB\r\nContent-Type: application/x-arango-batchpart\r\n\r\nPOST /_api/document/secret HTTP/1.1\r\nAuthorization: {root}\r\n\r\n{{}}\r\n\
         --XB\r\nContent-Type: application/x-arango-batchpart\r\n\r\nPOST /_api/document/orders HTTP/1.1\r\n\r\n{{}}\r\n\
         --XB\r\nContent-Type: application/x-arango-batchpart\r\n\r\nPOST /_api/document/orders HTTP/1.1\r\n\r\n{{}}\r\n--XB--\r\n"
    );
    let req = Request::build(Method::POST, "/_db/shop/_api/batch")
        .with_header("authorization", &ann)
        .with_header("content-type", "multipart/form-data; boundary=XB")
        .with_body(body);
    let r = handle(&f.state, req).settle_blocking();
    let text = String::from_utf8_lossy(&r.body).to_string();
    let statuses: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("HTTP/1.1 "))
        .map(|l| &l[..3])
        .collect();
    assert_eq!(statuses, ["403", "202", "202"], "{text}");
    assert_eq!(r.header("x-arango-errors"), Some("1"));

    // AQL: every collection the query may read needs ro, every one it may write rw.
    let query = |q: &str| {
        f.call(
            Some(&ann),
            Method::POST,
            "/_db/shop/_api/cursor",
            Some(json!({"query": q})),
        )
        .status
        .as_u16()
    };
    assert_eq!(query("FOR d IN orders RETURN d"), 201);
    assert_eq!(query("INSERT {} INTO orders"), 201);
    assert_eq!(query("FOR d IN secret RETURN d"), 403);
    assert_eq!(query("FOR d IN orders INSERT d INTO secret"), 403);
    // Without any rights on the collection the refusal stays 403/11.
    let r = f.call(
        Some(&ann),
        Method::POST,
        "/_db/shop/_api/cursor",
        Some(json!({"query": "FOR d IN orders INSERT d INTO secret"})),
    );
    assert_eq!(json_of(&r)["errorNum"], 11, "{r:?}");
    assert_eq!(query("RETURN DOCUMENT('secret/x')"), 403);
    assert_eq!(query("WITH secret FOR d IN orders RETURN d"), 403);
    // Named graphs: every vertex and edge collection of the graph, before execution.
    for (graph, to) in [("hidden", "secret"), ("open", "orders")] {
        let r = f.root(
            Method::POST,
            "/_db/shop/_api/gharial",
            Some(json!({"name": graph, "edgeDefinitions": [
                {"collection": format!("{graph}_links"), "from": ["orders"], "to": [to]}
            ]})),
        );
        assert_eq!(r.status.as_u16(), 202, "{graph}");
    }
    for (graph, want) in [("hidden", 403), ("open", 201)] {
        for q in [
            format!("FOR v IN 1..2 OUTBOUND 'orders/x' GRAPH '{graph}' RETURN v"),
            format!("FOR v IN OUTBOUND SHORTEST_PATH 'orders/x' TO 'orders/y' GRAPH '{graph}' RETURN v"),
            format!("FOR p IN 1..2 OUTBOUND K_PATHS 'orders/x' TO 'orders/y' GRAPH \"{graph}\" RETURN p"),
        ] {
            assert_eq!(query(&q), want, "{q}");
        }
    }
    let r = f.call(
        Some(&ann),
        Method::POST,
        "/_db/shop/_api/cursor",
        Some(json!({"query": "FOR v IN ANY 'orders/x' GRAPH @g RETURN v", "bindVars": {"g": "hidden"}})),
    );
    assert_eq!(r.status.as_u16(), 403);
    // During execution: collections reached only through computed strings or over edges.
    for (collection, doc) in [
        ("secret", json!({"_key": "s1"})),
        ("orders", json!({"_key": "o1"})),
        (
            "hidden_links",
            json!({"_from": "orders/o1", "_to": "secret/s1"}),
        ),
        (
            "open_links",
            json!({"_from": "orders/o1", "_to": "orders/o1"}),
        ),
    ] {
        let r = f.root(
            Method::POST,
            &format!("/_db/shop/_api/document/{collection}"),
            Some(doc),
        );
        assert_eq!(r.status.as_u16(), 202, "{collection}");
    }
    assert_eq!(query("RETURN DOCUMENT(CONCAT('sec', 'ret/s1'))"), 403);
    assert_eq!(query("RETURN DOCUMENT(CONCAT('ord', 'ers/o1'))"), 201);
    assert_eq!(
        query("FOR v IN 1..1 OUTBOUND 'orders/o1' hidden_links RETURN v"),
        403
    );
    assert_eq!(
        query("FOR v IN 1..1 OUTBOUND 'orders/o1' open_links RETURN v"),
        201
    );
    let r = f.root(
        Method::POST,
        "/_db/shop/_api/cursor",
        Some(json!({"query": "RETURN DOCUMENT(CONCAT('sec', 'ret/s1'))._key"})),
    );
    assert_eq!(
        json_of(&r)["result"],
        json!(["s1"]),
        "root reads everything"
    );
    // Removing a vertex through a graph removes its edges too: every edge collection of the
    // graph needs rw, not only the vertex's.
    let remove_vertex = || {
        f.call(
            Some(&ann),
            Method::DELETE,
            "/_db/shop/_api/gharial/open/vertex/orders/o1",
            None,
        )
        .status
        .as_u16()
    };
    assert_eq!(remove_vertex(), 403);
    // The edges of every graph naming `orders` go too (ArangoDB's rule).
    for (edges, want) in [("open_links", 403), ("hidden_links", 202)] {
        let r = f.root(
            Method::PUT,
            &format!("/_api/user/ann/database/shop/{edges}"),
            Some(json!({"grant": "rw"})),
        );
        assert_eq!(r.status.as_u16(), 200);
        assert_eq!(remove_vertex(), want, "after rw on {edges}");
    }
    // Dropping a graph with its collections needs rw on all of them (ann may now write the
    // database, but not `secret`).
    let r = f.root(
        Method::PUT,
        "/_api/user/ann/database/shop",
        Some(json!({"grant": "rw"})),
    );
    assert_eq!(r.status.as_u16(), 200);
    let r = f.call(
        Some(&ann),
        Method::DELETE,
        "/_db/shop/_api/gharial/hidden?dropCollections=true",
        None,
    );
    assert_eq!(r.status.as_u16(), 403);

    // Async jobs: queued with the caller's rights, results only for the caller.
    let req = Request::build(Method::GET, "/_db/shop/_api/collection/orders/count")
        .with_header("authorization", &ann)
        .with_header("x-arango-async", "store");
    let r = handle(&f.state, req);
    assert_eq!(r.status.as_u16(), 202);
    let job = r.header("x-arango-async-id").unwrap().to_owned();
    let status = |auth: &str| {
        f.call(
            Some(auth),
            Method::GET,
            &format!("/_db/shop/_api/job/{job}"),
            None,
        )
        .status
        .as_u16()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while status(&ann) != 200 {
        assert!(std::time::Instant::now() < deadline, "job never finished");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(
        status(&root),
        404,
        "root is a user too: not the job's owner"
    );

    // Removing the user closes everything at once.
    assert_eq!(
        f.root(Method::DELETE, "/_api/user/ann", None)
            .status
            .as_u16(),
        202
    );
    assert_eq!(
        f.call(Some(&ann), Method::GET, "/_db/shop/_api/collection", None)
            .status
            .as_u16(),
        401
    );
}

/// A search over a view reads every collection linked to it: a user without read access to
/// one of them is refused (403/11), even when `collections` restricts the results to the
/// readable ones; with read access to all of them the search answers.
#[test]
fn view_search_needs_read_access_to_every_linked_collection() {
    let f = fixture();
    for c in ["open", "closed"] {
        let r = f.root(Method::POST, "/_api/collection", Some(json!({"name": c})));
        assert_eq!(r.status.as_u16(), 200);
        let r = f.root(
            Method::POST,
            &format!("/_api/document/{c}"),
            Some(json!({"_key": "k", "text": "hello"})),
        );
        assert_eq!(r.status.as_u16(), 202);
    }
    let r = f.root(
        Method::POST,
        "/_api/view",
        Some(json!({"name": "both", "type": "arangosearch", "links": {
            "open": {"includeAllFields": true},
            "closed": {"includeAllFields": true}
        }})),
    );
    assert_eq!(r.status.as_u16(), 201, "{}", json_of(&r));
    let r = f.root(
        Method::POST,
        "/_api/user",
        Some(json!({"user": "bob", "passwd": "pw"})),
    );
    assert_eq!(r.status.as_u16(), 201);
    f.root(
        Method::PUT,
        "/_api/user/bob/database/_system",
        Some(json!({"grant": "ro"})),
    );
    f.root(
        Method::PUT,
        "/_api/user/bob/database/_system/closed",
        Some(json!({"grant": "none"})),
    );
    let bob = basic("bob", "pw");
    let search = |auth: &str, options: &str| {
        let r = f.call(
            Some(auth),
            Method::POST,
            "/_api/cursor",
            Some(json!({"query": format!(
                "FOR d IN both SEARCH d.text == 'hello' OPTIONS {options} SORT d._id RETURN d._id"
            )})),
        );
        (r.status.as_u16(), json_of(&r))
    };
    for options in [
        "{waitForSync: true}",
        "{waitForSync: true, collections: ['open']}",
    ] {
        let (status, body) = search(&bob, options);
        assert_eq!(status, 403, "{options}: {body}");
        assert_eq!(body["errorNum"], json!(11), "{body}");
    }
    let (status, body) = search(&basic(ROOT, ROOT_PASSWORD), "{waitForSync: true}");
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["result"], json!(["closed/k", "open/k"]));
    f.root(
        Method::PUT,
        "/_api/user/bob/database/_system/closed",
        Some(json!({"grant": "ro"})),
    );
    let (status, body) = search(&bob, "{waitForSync: true}");
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["result"], json!(["closed/k", "open/k"]));
}

#[test]
fn revision_replication_needs_read_access_to_the_collection() {
    let f = fixture();
    f.root(
        Method::POST,
        "/_api/database",
        Some(json!({"name": "shop"})),
    );
    for c in ["orders", "secret"] {
        f.root(
            Method::POST,
            "/_db/shop/_api/collection",
            Some(json!({"name": c})),
        );
    }
    f.root(
        Method::POST,
        "/_api/user",
        Some(json!({"user": "ann", "passwd": "pw"})),
    );
    f.root(
        Method::PUT,
        "/_api/user/ann/database/shop",
        Some(json!({"grant": "ro"})),
    );
    f.root(
        Method::PUT,
        "/_api/user/ann/database/shop/secret",
        Some(json!({"grant": "none"})),
    );
    let ann = basic("ann", "pw");
    // A database reader may start a batch (as for arangodump) ...
    let r = f.call(
        Some(&ann),
        Method::POST,
        "/_db/shop/_api/replication/batch",
        Some(json!({"ttl": 30})),
    );
    assert_eq!(r.status.as_u16(), 200);
    let batch = json_of(&r)["id"].as_str().unwrap().to_string();
    // ... and read the revisions of a collection it may read, not of one it may not.
    let status = |method: Method, what: &str, coll: &str, body: Option<Value>| {
        f.call(
            Some(&ann),
            method,
            &format!(
                "/_db/shop/_api/replication/revisions/{what}?collection={coll}&batchId={batch}"
            ),
            body,
        )
        .status
        .as_u16()
    };
    assert_eq!(status(Method::GET, "tree", "orders", None), 200);
    assert_eq!(
        status(Method::PUT, "ranges", "orders", Some(json!([]))),
        200
    );
    assert_eq!(status(Method::GET, "tree", "secret", None), 403);
    assert_eq!(status(Method::POST, "tree", "secret", None), 403);
    assert_eq!(
        status(Method::PUT, "ranges", "secret", Some(json!([]))),
        403
    );
    assert_eq!(
        status(Method::PUT, "documents", "secret", Some(json!([]))),
        403
    );
}
