//! Caps on what the server holds for clients between requests, through
//! `quiver_server::handle`: open cursors (count and estimated bytes, per user and overall),
//! stored async job results, the responses a batch request collects, and imports read item
//! by item.

use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use http::Method;
use quiver_aql::held::HoldCaps;
use quiver_core::{Core, CoreOptions};
use quiver_server::auth::AuthConfig;
use quiver_server::{handle, Request, Response, ServerConfig, ServerState};
use serde_json::{json, Value};

const ROOT_PASSWORD: &str = "root password";

struct Fixture {
    state: Arc<ServerState>,
    _dir: tempfile::TempDir,
}

fn basic(user: &str, password: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {encoded}")
}

fn fixture(config: ServerConfig) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(&dir.path().join("db"), CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        async_workers: 1,
        auth: AuthConfig {
            initial_root_password: ROOT_PASSWORD.into(),
            ..AuthConfig::default()
        },
        ..config
    };
    let f = Fixture {
        state: ServerState::new(config, core).unwrap(),
        _dir: dir,
    };
    for user in ["ann", "bob"] {
        let r = f.as_user(
            "root",
            Method::POST,
            "/_api/user",
            Some(json!({"user": user, "passwd": user})),
        );
        assert_eq!(r.status.as_u16(), 201, "{}", body_text(&r));
        let r = f.as_user(
            "root",
            Method::PUT,
            &format!("/_api/user/{user}/database/_system"),
            Some(json!({"grant": "rw"})),
        );
        assert_eq!(r.status.as_u16(), 200, "{}", body_text(&r));
    }
    f
}

fn body_text(r: &Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

fn json_of(r: &Response) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

impl Fixture {
    fn request(&self, user: &str, method: Method, target: &str, body: Option<Value>) -> Request {
        let password = if user == "root" { ROOT_PASSWORD } else { user };
        let mut req =
            Request::build(method, target).with_header("authorization", &basic(user, password));
        if let Some(b) = body {
            req = req.with_body(serde_json::to_vec(&b).unwrap());
        }
        req
    }

    fn as_user(&self, user: &str, method: Method, target: &str, body: Option<Value>) -> Response {
        handle(&self.state, self.request(user, method, target, body)).settle_blocking()
    }

    /// Opens a cursor of `rows` numbers read one per batch; the answer.
    fn open_cursor(&self, user: &str, rows: u64) -> Response {
        self.as_user(
            user,
            Method::POST,
            "/_api/cursor",
            Some(json!({"query": "FOR i IN 1..@n RETURN i", "bindVars": {"n": rows}, "batchSize": 1})),
        )
    }
}

fn assert_resource_limit(r: &Response) {
    assert_eq!(r.status.as_u16(), 500, "{}", body_text(r));
    assert_eq!(json_of(r)["errorNum"], 32, "{}", body_text(r));
}

#[test]
fn one_users_cursors_neither_block_another_nor_grow_without_bound() {
    let f = fixture(ServerConfig {
        cursor_caps: HoldCaps {
            count: 5,
            bytes: 1 << 30,
            count_per_user: 3,
            bytes_per_user: 1 << 20,
        },
        ..ServerConfig::default()
    });
    let mut ids = Vec::new();
    for _ in 0..3 {
        let r = f.open_cursor("ann", 100);
        assert_eq!(r.status.as_u16(), 201, "{}", body_text(&r));
        ids.push(json_of(&r)["id"].as_str().unwrap().to_string());
    }
    // Ann is at her count; Bob is not blocked by her cursors.
    let r = f.open_cursor("ann", 100);
    assert_resource_limit(&r);
    assert!(
        json_of(&r)["errorMessage"]
            .as_str()
            .unwrap()
            .contains("of user 'ann'"),
        "{}",
        body_text(&r)
    );
    assert_eq!(f.open_cursor("bob", 100).status.as_u16(), 201);
    assert_eq!(f.state.queries.cursor_holdings(Some("ann")).0, 3);
    // Deleting one gives its place back.
    let r = f.as_user(
        "ann",
        Method::DELETE,
        &format!("/_api/cursor/{}", ids[0]),
        None,
    );
    assert_eq!(r.status.as_u16(), 202);
    assert_eq!(f.open_cursor("ann", 100).status.as_u16(), 201);
    // The server-wide count: 5 open (3 ann, 1 bob, 1 more of bob's fits), then none.
    assert_eq!(f.open_cursor("bob", 100).status.as_u16(), 201);
    assert_resource_limit(&f.open_cursor("bob", 100));

    // Memory: 200,000 numbers (about 3.2 MB estimated) are more than ann may hold (1 MiB),
    // whichever of her cursors are open.
    let f = fixture(ServerConfig {
        cursor_caps: HoldCaps {
            count: 100,
            bytes: 1 << 30,
            count_per_user: 100,
            bytes_per_user: 1 << 20,
        },
        ..ServerConfig::default()
    });
    let r = f.open_cursor("ann", 200_000);
    assert_resource_limit(&r);
    assert!(
        json_of(&r)["errorMessage"]
            .as_str()
            .unwrap()
            .contains("would hold more memory than allowed"),
        "{}",
        body_text(&r)
    );
    assert_eq!(f.state.queries.cursor_holdings(Some("ann")), (0, 0));
    // Under the cap: open, and what it holds is counted.
    let r = f.open_cursor("ann", 20_000);
    assert_eq!(r.status.as_u16(), 201, "{}", body_text(&r));
    let (count, bytes) = f.state.queries.cursor_holdings(Some("ann"));
    assert_eq!(count, 1);
    assert!(bytes > 300_000, "{bytes}");
    // Bob still has his own budget.
    assert_eq!(f.open_cursor("bob", 20_000).status.as_u16(), 201);
}

#[test]
fn cursor_memory_is_given_back_as_batches_are_read() {
    let f = fixture(ServerConfig::default());
    let r = f.as_user(
        "ann",
        Method::POST,
        "/_api/cursor",
        Some(json!({"query": "FOR i IN 1..10000 RETURN {i}", "batchSize": 2500})),
    );
    assert_eq!(r.status.as_u16(), 201);
    let id = json_of(&r)["id"].as_str().unwrap().to_string();
    let (_, full) = f.state.queries.cursor_holdings(Some("ann"));
    assert!(full > 0);
    let mut held = vec![full];
    loop {
        let r = f.as_user("ann", Method::POST, &format!("/_api/cursor/{id}"), None);
        assert_eq!(r.status.as_u16(), 200);
        held.push(f.state.queries.cursor_holdings(Some("ann")).1);
        if json_of(&r)["hasMore"] == false {
            break;
        }
    }
    assert!(
        held.windows(2).all(|w| w[1] < w[0]),
        "held bytes shrink with every batch: {held:?}"
    );
    assert_eq!(f.state.queries.cursor_holdings(Some("ann")), (0, 0));
    assert_eq!(f.state.queries.cursor_holdings(None), (0, 0));
}

#[test]
fn a_result_too_large_to_keep_fails_the_query_before_its_writes_commit() {
    let f = fixture(ServerConfig {
        cursor_caps: HoldCaps {
            count: 100,
            bytes: 100_000,
            count_per_user: 100,
            bytes_per_user: 0,
        },
        ..ServerConfig::default()
    });
    let r = f.as_user(
        "root",
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "c"})),
    );
    assert_eq!(r.status.as_u16(), 200);
    let r = f.as_user(
        "ann",
        Method::POST,
        "/_api/cursor",
        Some(json!({"query": "FOR i IN 1..20000 INSERT {i} INTO c RETURN NEW", "batchSize": 10})),
    );
    assert_resource_limit(&r);
    let r = f.as_user("ann", Method::GET, "/_api/collection/c/count", None);
    assert_eq!(
        json_of(&r)["count"],
        0,
        "nothing of the failed query is written"
    );
}

fn wait_done(f: &Fixture, user: &str, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = f.as_user(user, Method::GET, &format!("/_api/job/{id}"), None);
        if r.status.as_u16() == 200 {
            return;
        }
        assert!(Instant::now() < deadline, "job {id} did not finish");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn submit(f: &Fixture, user: &str) -> Response {
    let req = f
        .request(
            user,
            Method::POST,
            "/_api/cursor",
            Some(json!({"query": "RETURN (FOR i IN 10000..14999 RETURN i)"})),
        )
        .with_header("x-arango-async", "store");
    handle(&f.state, req).settle_blocking()
}

fn job_id(r: &Response) -> String {
    assert_eq!(r.status.as_u16(), 202, "{}", body_text(r));
    r.headers
        .iter()
        .find(|(n, _)| n.as_str() == "x-arango-async-id")
        .map(|(_, v)| v.to_str().unwrap().to_string())
        .unwrap()
}

#[test]
fn stored_async_results_are_capped_per_user_and_given_back_when_fetched() {
    // Each result is about 30 KB (5,000 five-digit numbers and the envelope).
    let f = fixture(ServerConfig {
        async_queue_capacity: 64,
        async_result_caps: HoldCaps {
            count: 0,
            bytes: 1 << 30,
            count_per_user: 4,
            bytes_per_user: 70_000,
        },
        ..ServerConfig::default()
    });
    let first = job_id(&submit(&f, "ann"));
    wait_done(&f, "ann", &first);
    let second = job_id(&submit(&f, "ann"));
    wait_done(&f, "ann", &second);
    let (count, bytes) = f.state.jobs.held(Some("ann"));
    assert_eq!(count, 2);
    assert!((60_000..70_000).contains(&bytes), "{bytes}");
    // The third result does not fit: its job answers 32 instead.
    let third = job_id(&submit(&f, "ann"));
    wait_done(&f, "ann", &third);
    let r = f.as_user("ann", Method::PUT, &format!("/_api/job/{third}"), None);
    assert_resource_limit(&r);
    // Four stored jobs at most (the third was fetched): two more are taken, then no more.
    job_id(&submit(&f, "ann"));
    job_id(&submit(&f, "ann"));
    assert_resource_limit(&submit(&f, "ann"));
    // Bob is not blocked.
    let bobs = job_id(&submit(&f, "bob"));
    wait_done(&f, "bob", &bobs);
    // Fetching a result gives its place and its bytes back.
    let r = f.as_user("ann", Method::PUT, &format!("/_api/job/{first}"), None);
    assert_eq!(r.status.as_u16(), 201, "{}", body_text(&r));
    assert_eq!(json_of(&r)["result"][0].as_array().unwrap().len(), 5000);
    job_id(&submit(&f, "ann"));
    let r = f.as_user("ann", Method::DELETE, "/_api/job/all", None);
    assert_eq!(r.status.as_u16(), 200);
    let deadline = Instant::now() + Duration::from_secs(30);
    while f.state.jobs.held(Some("ann")).0 > 0 {
        // A job still running when the store was cleared is kept until it finishes.
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
        f.as_user("ann", Method::DELETE, "/_api/job/all", None);
    }
    assert_eq!(f.state.jobs.held(Some("ann")), (0, 0));
}

#[test]
fn batch_parts_past_the_response_limit_are_refused_unexecuted() {
    let f = fixture(ServerConfig {
        batch_response_limit: 2_000,
        ..ServerConfig::default()
    });
    let r = f.as_user(
        "root",
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "c"})),
    );
    assert_eq!(r.status.as_u16(), 200);
    // Alternating query strings: a run of identical plain inserts would be one grouped commit
    // (at most 1,024 parts of small answers), checked against the limit as one step.
    let mut body = String::new();
    for i in 0..40 {
        body.push_str("--BB\r\nContent-Type: application/x-arango-batchpart\r\n\r\n");
        body.push_str(&format!(
            "POST /_api/document/c?returnNew={} HTTP/1.1\r\n\r\n{{\"_key\":\"k{i}\",\"pad\":\"{}\"}}\r\n",
            i % 2 == 0,
            "x".repeat(100)
        ));
    }
    body.push_str("--BB--\r\n");
    let req = f
        .request("ann", Method::POST, "/_api/batch", None)
        .with_header("content-type", "multipart/form-data; boundary=BB")
        .with_body(body.into_bytes());
    let r = handle(&f.state, req).settle_blocking();
    assert_eq!(r.status.as_u16(), 200, "{}", body_text(&r));
    let text = body_text(&r);
    let refused = text.matches("\"errorNum\":32").count();
    assert!(refused > 0 && refused < 40, "{refused} parts refused");
    let errors: usize = r
        .headers
        .iter()
        .find(|(n, _)| n.as_str() == "x-arango-errors")
        .map(|(_, v)| v.to_str().unwrap().parse().unwrap())
        .unwrap();
    assert_eq!(errors, refused);
    // Executed parts' answers up to the limit and one more, then a short refusal per part.
    let refusals = refused * 400;
    assert!(
        text.len() < 2_000 + 2 * 1024 + refusals,
        "{} bytes held",
        text.len()
    );
    let r = f.as_user("ann", Method::GET, "/_api/collection/c/count", None);
    assert_eq!(
        json_of(&r)["count"],
        40 - refused,
        "refused parts were not executed"
    );
}

fn import(f: &Fixture, query: &str, body: String) -> Response {
    let req = f
        .request("ann", Method::POST, &format!("/_api/import?{query}"), None)
        .with_body(body.into_bytes());
    handle(&f.state, req).settle_blocking()
}

#[test]
fn imports_read_item_by_item_keep_their_answers() {
    let f = fixture(ServerConfig::default());
    let r = f.as_user(
        "root",
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "c"})),
    );
    assert_eq!(r.status.as_u16(), 200);
    // 25,000 lines: three chunks; an input error in the first chunk and a duplicate key in
    // the last; input errors are listed first.
    let mut lines: Vec<String> = (0..25_000)
        .map(|i| format!("{{\"_key\":\"k{i}\"}}"))
        .collect();
    lines[5] = "not json".into();
    lines[24_000] = "{\"_key\":\"k1\"}".into();
    let r = import(
        &f,
        "collection=c&type=documents&details=true",
        lines.join("\n"),
    );
    assert_eq!(r.status.as_u16(), 201, "{}", body_text(&r));
    let answer = json_of(&r);
    assert_eq!(answer["created"], 24_998);
    assert_eq!(answer["errors"], 2);
    let details = answer["details"].as_array().unwrap();
    assert!(details[0]
        .as_str()
        .unwrap()
        .starts_with("at position 6: invalid JSON type"));
    assert!(
        details[1]
            .as_str()
            .unwrap()
            .starts_with("at position 23999: creating document failed"),
        "{details:?}"
    );

    // complete=true: an input error at the very end writes nothing, also in the array format.
    let mut docs: Vec<String> = (0..15_000)
        .map(|i| format!("{{\"_key\":\"n{i}\"}}"))
        .collect();
    docs.push("[1]".into());
    let r = import(
        &f,
        "collection=c&type=documents&complete=true",
        docs.join("\n"),
    );
    assert_eq!(r.status.as_u16(), 400, "{}", body_text(&r));
    let array = format!("[{}]", docs.join(","));
    let r = import(&f, "collection=c&type=array&complete=true", array);
    assert_eq!(json_of(&r)["errorNum"], 1227, "{}", body_text(&r));
    // A malformed array writes nothing either, whatever `complete` says.
    let broken = format!("[{},]", docs[..15_000].join(","));
    let r = import(&f, "collection=c&type=array", broken);
    assert_eq!(r.status.as_u16(), 400, "{}", body_text(&r));
    assert!(json_of(&r)["errorMessage"]
        .as_str()
        .unwrap()
        .starts_with("expecting a JSON array in the request: "));
    let r = f.as_user("ann", Method::GET, "/_api/collection/c/count", None);
    assert_eq!(json_of(&r)["count"], 24_998);
    // complete=true that succeeds: everything in one transaction.
    let array = format!("[{}]", docs[..15_000].join(","));
    let r = import(&f, "collection=c&type=array&complete=true", array);
    assert_eq!(r.status.as_u16(), 201, "{}", body_text(&r));
    assert_eq!(json_of(&r)["created"], 15_000);
}
