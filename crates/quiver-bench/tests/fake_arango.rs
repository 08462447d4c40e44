//! Runs every test case against a small in-test fake of ArangoDB's HTTP API (in-memory
//! collections, documents, import, cursor INSERT, batch, async) and checks exit codes, JSON
//! reports and the state the fake ends up in. Fault injection (collections named `flaky*`
//! fail every 7th write, `lossy*` acknowledge inserts without storing them) checks that
//! failures and verification problems are reported and make the exit code non-zero.
//!
//! The end-to-end test against the real `quiver` binary is tests/e2e/test_bench.py.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

#[derive(Default)]
struct Collection {
    kind: u64,
    wait_for_sync: bool,
    docs: HashMap<String, Value>,
    indexes: Vec<Value>,
    writes: u64,
}

#[derive(Default)]
struct Fake {
    collections: Mutex<BTreeMap<String, Collection>>,
    databases: Mutex<Vec<String>>,
    requests: AtomicU64,
    batches: AtomicU64,
    key_seq: AtomicU64,
}

struct Reply {
    status: u16,
    body: Value,
}

fn reply(status: u16, body: Value) -> Reply {
    Reply { status, body }
}

fn error(status: u16, num: u64, message: &str) -> Reply {
    reply(
        status,
        json!({"error": true, "code": status, "errorNum": num, "errorMessage": message}),
    )
}

fn query_param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then_some(v)
    })
}

impl Fake {
    /// Dispatches one request (database prefix already stripped).
    fn handle(&self, method: &str, path: &str, query: &str, body: &[u8]) -> Reply {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let json_body = || serde_json::from_slice::<Value>(body).ok();
        let mut cols = self.collections.lock().unwrap();
        match (method, segments.as_slice()) {
            ("GET", ["_api", "version"]) => reply(
                200,
                json!({"server": "fake", "version": "3.12.0", "license": "community"}),
            ),
            ("POST", ["_api", "database"]) => {
                let name = json_body()
                    .and_then(|v| v["name"].as_str().map(str::to_string))
                    .unwrap_or_default();
                let mut dbs = self.databases.lock().unwrap();
                if dbs.contains(&name) {
                    return error(409, 1207, "duplicate name");
                }
                dbs.push(name);
                reply(201, json!({"result": true}))
            }
            ("GET", ["_api", "collection"]) => {
                let list: Vec<Value> = cols.keys().map(|n| json!({"name": n})).collect();
                reply(200, json!({"result": list}))
            }
            ("POST", ["_api", "collection"]) => {
                let Some(v) = json_body() else {
                    return error(400, 600, "bad json");
                };
                let name = v["name"].as_str().unwrap_or("").to_string();
                if cols.contains_key(&name) {
                    return error(409, 1207, "duplicate name");
                }
                let kind = v["type"].as_u64().unwrap_or(2);
                // `nosync*` collections ignore waitForSync, to test that the bench notices.
                let wait_for_sync =
                    v["waitForSync"].as_bool().unwrap_or(false) && !name.starts_with("nosync");
                cols.insert(
                    name.clone(),
                    Collection {
                        kind,
                        wait_for_sync,
                        ..Collection::default()
                    },
                );
                reply(200, json!({"name": name, "type": kind}))
            }
            ("DELETE", ["_api", "collection", name]) => match cols.remove(*name) {
                Some(_) => reply(200, json!({"id": "1"})),
                None => error(404, 1203, "collection or view not found"),
            },
            ("GET", ["_api", "collection", name]) => match cols.get(*name) {
                Some(c) => reply(200, json!({"name": name, "type": c.kind})),
                None => error(404, 1203, "collection or view not found"),
            },
            ("GET", ["_api", "collection", name, "properties"]) => match cols.get(*name) {
                Some(c) => reply(
                    200,
                    json!({"name": name, "type": c.kind, "waitForSync": c.wait_for_sync}),
                ),
                None => error(404, 1203, "collection or view not found"),
            },
            ("GET", ["_api", "collection", name, "count"]) => match cols.get(*name) {
                Some(c) => reply(200, json!({"count": c.docs.len()})),
                None => error(404, 1203, "collection or view not found"),
            },
            ("POST", ["_api", "index"]) => {
                let name = query_param(query, "collection").unwrap_or("");
                let Some(c) = cols.get_mut(name) else {
                    return error(404, 1203, "not found");
                };
                let Some(mut v) = json_body() else {
                    return error(400, 600, "bad json");
                };
                v["id"] = json!(format!("{name}/{}", c.indexes.len() + 1));
                c.indexes.push(v.clone());
                reply(201, v)
            }
            ("GET", ["_api", "index"]) => {
                let name = query_param(query, "collection").unwrap_or("");
                let Some(c) = cols.get(name) else {
                    return error(404, 1203, "not found");
                };
                let mut list = vec![json!({"type": "primary", "fields": ["_key"]})];
                list.extend(c.indexes.iter().cloned());
                reply(200, json!({"indexes": list}))
            }
            ("POST", ["_api", "document"]) => {
                let name = query_param(query, "collection").unwrap_or("").to_string();
                let Some(doc) = json_body() else {
                    return error(400, 600, "bad json");
                };
                self.insert(&mut cols, &name, doc)
            }
            ("GET", ["_api", "document", name, key]) => {
                match cols.get(*name).and_then(|c| c.docs.get(*key)) {
                    Some(doc) => reply(200, doc.clone()),
                    None => error(404, 1202, "document not found"),
                }
            }
            ("PATCH", ["_api", "document", name, key]) => {
                let Some(patch) = json_body() else {
                    return error(400, 600, "bad json");
                };
                let Some(c) = cols.get_mut(*name) else {
                    return error(404, 1203, "not found");
                };
                c.writes += 1;
                if name.starts_with("flaky") && c.writes % 7 == 0 {
                    return error(500, 4, "injected failure");
                }
                match c.docs.get_mut(*key) {
                    Some(doc) => {
                        if let (Some(d), Some(p)) = (doc.as_object_mut(), patch.as_object()) {
                            for (k, v) in p {
                                d.insert(k.clone(), v.clone());
                            }
                        }
                        reply(202, json!({"_key": key}))
                    }
                    None => error(404, 1202, "document not found"),
                }
            }
            ("DELETE", ["_api", "document", name, key]) => {
                match cols.get_mut(*name).and_then(|c| c.docs.remove(*key)) {
                    Some(_) => reply(202, json!({"_key": key})),
                    None => error(404, 1202, "document not found"),
                }
            }
            ("POST", ["_api", "import"]) => {
                let name = query_param(query, "collection").unwrap_or("").to_string();
                let text = String::from_utf8_lossy(body).into_owned();
                let (mut created, mut errors) = (0, 0);
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    match serde_json::from_str::<Value>(line) {
                        Ok(doc) => {
                            if self.insert(&mut cols, &name, doc).status < 300 {
                                created += 1
                            } else {
                                errors += 1
                            }
                        }
                        _ => errors += 1,
                    }
                }
                reply(
                    201,
                    json!({"error": false, "created": created, "errors": errors, "empty": 0}),
                )
            }
            ("POST", ["_api", "cursor"]) => {
                let Some(v) = json_body() else {
                    return error(400, 600, "bad json");
                };
                let q = v["query"].as_str().unwrap_or("");
                if let Some(rest) = q.strip_prefix("INSERT @data INTO ") {
                    let name = rest.trim().trim_matches('`').to_string();
                    let doc = v["bindVars"]["data"].clone();
                    let r = self.insert(&mut cols, &name, doc);
                    if r.status >= 300 {
                        return r;
                    }
                    return reply(
                        201,
                        json!({"result": [], "hasMore": false, "error": false, "code": 201}),
                    );
                }
                if q.starts_with("RETURN") || q.starts_with("FOR") {
                    return reply(
                        201,
                        json!({"result": [v["bindVars"].clone()], "hasMore": false, "error": false, "code": 201}),
                    );
                }
                error(400, 1501, "syntax error")
            }
            _ => error(404, 404, "unknown path"),
        }
    }

    fn insert(&self, cols: &mut BTreeMap<String, Collection>, name: &str, mut doc: Value) -> Reply {
        let Some(c) = cols.get_mut(name) else {
            return error(404, 1203, "collection or view not found");
        };
        c.writes += 1;
        if name.starts_with("flaky") && c.writes % 7 == 0 {
            return error(500, 4, "injected failure");
        }
        let key = match doc.get("_key").and_then(Value::as_str) {
            Some(k) => k.to_string(),
            None => {
                let k = self.key_seq.fetch_add(1, Ordering::Relaxed).to_string();
                doc["_key"] = json!(k);
                k
            }
        };
        if c.kind == 3 && (doc.get("_from").is_none() || doc.get("_to").is_none()) {
            return error(400, 1233, "edge attribute missing or invalid");
        }
        if c.docs.contains_key(&key) {
            return error(409, 1210, "unique constraint violated");
        }
        if !name.starts_with("lossy") {
            c.docs.insert(key.clone(), doc);
        }
        reply(202, json!({"_key": key, "_id": format!("{name}/{key}")}))
    }

    fn batch(&self, content_type: &str, body: &[u8]) -> (u16, Vec<(String, String)>, Vec<u8>) {
        self.batches.fetch_add(1, Ordering::Relaxed);
        let boundary = content_type
            .split("boundary=")
            .nth(1)
            .unwrap_or("")
            .trim()
            .to_string();
        let text = String::from_utf8_lossy(body).into_owned();
        let delimiter = format!("--{boundary}");
        let mut out = Vec::new();
        let mut failures = 0;
        for part in text.split(delimiter.as_str()).skip(1) {
            if part.starts_with("--") {
                break;
            }
            let part = part.strip_prefix("\r\n").unwrap_or(part);
            let part = part.strip_suffix("\r\n").unwrap_or(part);
            let Some((_part_headers, request)) = part.split_once("\r\n\r\n") else {
                continue;
            };
            let (head, req_body) = request.split_once("\r\n\r\n").unwrap_or((request, ""));
            let line = head.lines().next().unwrap_or("");
            let mut words = line.split(' ');
            let method = words.next().unwrap_or("");
            let target = words.next().unwrap_or("");
            let (path, query) = target.split_once('?').unwrap_or((target, ""));
            let r = self.handle(method, path, query, req_body.as_bytes());
            if r.status >= 400 {
                failures += 1;
            }
            let body = r.body.to_string();
            out.extend_from_slice(
                format!(
                    "{delimiter}\r\nContent-Type: application/x-arango-batchpart\r\n\r\nHTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}\r\n",
                    r.status,
                    body.len()
                )
                .as_bytes(),
            );
        }
        out.extend_from_slice(format!("{delimiter}--\r\n").as_bytes());
        (
            200,
            vec![
                (
                    "content-type".into(),
                    format!("multipart/form-data; boundary={boundary}"),
                ),
                ("x-arango-errors".into(), failures.to_string()),
            ],
            out,
        )
    }
}

async fn serve(
    fake: Arc<Fake>,
    req: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = req.method().as_str().to_string();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let is_async = req.headers().get("x-arango-async").is_some();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let path = match path.strip_prefix("/_db/") {
        Some(rest) => match rest.find('/') {
            Some(i) => rest[i..].to_string(),
            None => "/".to_string(),
        },
        None => path,
    };
    let (status, headers, bytes) = if path == "/_api/batch" && method == "POST" {
        fake.batch(&content_type, &body)
    } else {
        let r = fake.handle(&method, &path, &query, &body);
        (r.status, vec![], r.body.to_string().into_bytes())
    };
    let mut builder = Response::builder();
    if is_async {
        builder = builder.status(202);
        return Ok(builder.body(Full::new(Bytes::new())).unwrap());
    }
    builder = builder
        .status(status)
        .header("content-type", "application/json");
    for (k, v) in headers {
        builder = builder.header(k, v);
    }
    Ok(builder.body(Full::new(Bytes::from(bytes))).unwrap())
}

/// Starts the fake on a free port in its own thread; returns its address and state.
fn start_fake() -> (SocketAddr, Arc<Fake>) {
    let fake = Arc::new(Fake::default());
    let (tx, rx) = std::sync::mpsc::channel();
    let state = Arc::clone(&fake);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let fake = Arc::clone(&state);
                tokio::spawn(async move {
                    let _ = http1::Builder::new()
                        .serve_connection(
                            TokioIo::new(stream),
                            service_fn(move |req| serve(Arc::clone(&fake), req)),
                        )
                        .await;
                });
            }
        });
    });
    (rx.recv().unwrap(), fake)
}

struct Outcome {
    code: i32,
    report: Value,
}

fn run(addr: SocketAddr, args: &[&str]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let mut argv: Vec<String> = vec![
        "--server.endpoint".into(),
        format!("tcp://{addr}"),
        "--json-report-file".into(),
        report.display().to_string(),
        "--quiet".into(),
    ];
    argv.extend(args.iter().map(|s| s.to_string()));
    let code = quiver_bench::run_cli(argv);
    let report = std::fs::read(&report)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    Outcome { code, report }
}

fn count(fake: &Fake, collection: &str) -> usize {
    fake.collections
        .lock()
        .unwrap()
        .get(collection)
        .map(|c| c.docs.len())
        .unwrap_or(usize::MAX)
}

#[test]
fn every_test_case_runs_and_verifies() {
    let (addr, fake) = start_fake();
    // (test case, requests, expected documents left in the collection)
    let cases: &[(&str, u64, Option<usize>)] = &[
        ("version", 50, None),
        ("document", 60, Some(60)),
        ("import-document", 10, Some(30)),
        ("collection", 12, None),
        ("crud", 103, Some(1)),
        ("crud-append", 60, Some(15)),
        ("crud-write-read", 60, Some(30)),
        ("edge-crud", 60, Some(15)),
        ("persistent-index", 60, Some(15)),
        ("shapes", 61, Some(1)),
        ("shapes-append", 60, Some(30)),
        ("random-shapes", 60, Some(0)),
        ("aqlinsert", 40, Some(40)),
        ("document-get", 40, Some(40)),
        ("document-update", 40, Some(40)),
        ("document-remove", 40, Some(0)),
    ];
    for (case, requests, left) in cases {
        let collection = format!("c_{}", case.replace('-', "_"));
        let out = run(
            addr,
            &[
                "--test-case",
                case,
                "--requests",
                &requests.to_string(),
                "--concurrency",
                "3",
                "--complexity",
                "3",
                "--collection",
                &collection,
            ],
        );
        assert_eq!(out.code, 0, "{case}: {}", out.report);
        assert_eq!(out.report["testCase"], *case);
        assert_eq!(out.report["results"]["failures"], 0, "{case}");
        assert_eq!(out.report["totalNumberOfOperations"], *requests, "{case}");
        assert_eq!(out.report["concurrencyLevel"], 3);
        assert!(
            out.report["results"]["operationsPerSecondRate"]
                .as_f64()
                .unwrap()
                > 0.0
        );
        if let Some(left) = left {
            assert_eq!(count(&fake, &collection), *left, "{case}");
        }
    }
    // The collection test dropped what it created.
    assert!(!fake
        .collections
        .lock()
        .unwrap()
        .keys()
        .any(|k| k.starts_with("c_collection")));
    // persistent-index created its index; edge-crud an edge collection.
    let cols = fake.collections.lock().unwrap();
    assert_eq!(
        cols["c_persistent_index"].indexes[0]["fields"],
        json!(["value"])
    );
    assert_eq!(cols["c_edge_crud"].kind, 3);
}

#[test]
fn custom_query_and_runs() {
    let (addr, _fake) = start_fake();
    let out = run(
        addr,
        &[
            "--test-case",
            "custom-query",
            "--custom-query",
            "RETURN @x",
            "--custom-query-bindvars",
            "{\"x\":1}",
            "--requests",
            "30",
            "--runs",
            "3",
        ],
    );
    assert_eq!(out.code, 0);
    assert_eq!(out.report["allRuns"].as_array().unwrap().len(), 3);
    let fastest = out.report["fastestResults"]["timeSinceStart"]
        .as_f64()
        .unwrap();
    let slowest = out.report["slowestResults"]["timeSinceStart"]
        .as_f64()
        .unwrap();
    let median = out.report["results"]["timeSinceStart"].as_f64().unwrap();
    assert!(fastest <= median && median <= slowest);
}

#[test]
fn batches_pack_operations_into_one_request() {
    let (addr, fake) = start_fake();
    let out = run(
        addr,
        &[
            "--test-case",
            "document",
            "--requests",
            "100",
            "--batch-size",
            "16",
            "--concurrency",
            "1",
            "--collection",
            "b",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.report);
    assert_eq!(count(&fake, "b"), 100);
    // ceil(100 / 16) batch requests from one connection.
    assert_eq!(fake.batches.load(Ordering::Relaxed), 7);
    assert_eq!(out.report["results"]["httpRequests"], 7);
    assert_eq!(out.report["results"]["operations"], 100);

    let out = run(
        addr,
        &[
            "--test-case",
            "crud",
            "--requests",
            "100",
            "--batch-size",
            "8",
            "--concurrency",
            "2",
            "--collection",
            "bc",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.report);
    assert_eq!(count(&fake, "bc"), 0);
}

#[test]
fn failures_make_the_exit_code_non_zero() {
    let (addr, _fake) = start_fake();
    let out = run(
        addr,
        &[
            "--test-case",
            "document",
            "--requests",
            "70",
            "--collection",
            "flaky1",
        ],
    );
    assert_eq!(out.code, 1);
    assert_eq!(out.report["results"]["failures"], 10);
    assert_eq!(out.report["success"], false);

    // Failed parts inside batches are counted per operation.
    let out = run(
        addr,
        &[
            "--test-case",
            "document",
            "--requests",
            "70",
            "--batch-size",
            "10",
            "--collection",
            "flaky2",
        ],
    );
    assert_eq!(out.code, 1);
    assert_eq!(out.report["results"]["failures"], 10);
}

#[test]
fn verification_catches_lost_writes() {
    let (addr, _fake) = start_fake();
    let out = run(
        addr,
        &[
            "--test-case",
            "document",
            "--requests",
            "20",
            "--collection",
            "lossy1",
        ],
    );
    assert_eq!(out.code, 1);
    assert_eq!(out.report["results"]["failures"], 0);
    let problems = out.report["results"]["verificationProblems"]
        .as_array()
        .unwrap();
    assert!(
        problems[0].as_str().unwrap().contains("expected 20"),
        "{problems:?}"
    );
}

#[test]
fn wait_for_sync_is_checked() {
    let (addr, fake) = start_fake();
    let out = run(
        addr,
        &[
            "--test-case",
            "document",
            "--requests",
            "10",
            "--wait-for-sync",
            "true",
            "--collection",
            "s1",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.report);
    assert!(fake.collections.lock().unwrap()["s1"].wait_for_sync);
    let out = run(
        addr,
        &[
            "--test-case",
            "document",
            "--requests",
            "10",
            "--wait-for-sync",
            "true",
            "--collection",
            "nosync1",
        ],
    );
    assert_eq!(out.code, 1);
    let problems = out.report["results"]["verificationProblems"]
        .as_array()
        .unwrap();
    assert!(
        problems[0].as_str().unwrap().contains("waitForSync"),
        "{problems:?}"
    );
}

#[test]
fn async_and_duration_modes() {
    let (addr, fake) = start_fake();
    let out = run(
        addr,
        &[
            "--test-case",
            "document",
            "--requests",
            "40",
            "--async",
            "true",
            "--collection",
            "a",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.report);
    assert_eq!(count(&fake, "a"), 40);

    let out = run(
        addr,
        &[
            "--test-case",
            "crud",
            "--duration",
            "1",
            "--concurrency",
            "2",
            "--collection",
            "d",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.report);
    let ops = out.report["totalNumberOfOperations"].as_u64().unwrap();
    assert!(ops > 10, "{ops}");
    let elapsed = out.report["results"]["timeSinceStart"].as_f64().unwrap();
    assert!((0.9..3.0).contains(&elapsed), "{elapsed}");
}

#[test]
fn keep_alive_reuses_one_connection_per_client() {
    let (addr, _fake) = start_fake();
    let out = run(addr, &["--requests", "20", "--concurrency", "2"]);
    assert_eq!(out.code, 0);
    assert_eq!(out.report["results"]["connectionsOpened"], 2);
    // Without keep-alive: the connection check plus one connection per request.
    let out = run(
        addr,
        &[
            "--requests",
            "20",
            "--concurrency",
            "2",
            "--keep-alive",
            "false",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.report);
    assert_eq!(out.report["results"]["connectionsOpened"], 22);
}

#[test]
fn unreachable_server_and_bad_options() {
    // A port nobody listens on.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let out = run(addr, &["--test-case", "version", "--requests", "5"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        quiver_bench::run_cli(vec!["--test-case".into(), "bogus".into()]),
        2
    );
    // An existing JSON report is refused before anything is sent.
    let dir = tempfile::tempdir().unwrap();
    let existing = dir.path().join("r.json");
    std::fs::write(&existing, "{}").unwrap();
    let (fake_addr, fake) = start_fake();
    let code = quiver_bench::run_cli(vec![
        "--server.endpoint".into(),
        format!("tcp://{fake_addr}"),
        "--json-report-file".into(),
        existing.display().to_string(),
    ]);
    assert_eq!(code, 1);
    assert_eq!(fake.requests.load(Ordering::Relaxed), 0);
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "{}");
    assert_eq!(
        quiver_bench::run_cli(vec!["--concurrency".into(), "zero".into()]),
        2
    );
}

#[test]
fn create_database_and_junit() {
    let (addr, fake) = start_fake();
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("junit.xml");
    let code = quiver_bench::run_cli(vec![
        "--server.endpoint".into(),
        format!("tcp://{addr}"),
        "--server.database".into(),
        "benchdb".into(),
        "--create-database".into(),
        "true".into(),
        "--requests".into(),
        "10".into(),
        "--quiet".into(),
        "--junit-report-file".into(),
        junit.display().to_string(),
    ]);
    assert_eq!(code, 0);
    assert_eq!(*fake.databases.lock().unwrap(), vec!["benchdb".to_string()]);
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains("<testsuite name=\"arangobench\" tests=\"1\" skipped=\"0\" failures=\"0\"")
    );
    assert!(xml.contains("<testcase name=\"version\" classname=\"BenchTest\""));
    // As in arangobench, --create-database fails when the database exists already.
    let again = quiver_bench::run_cli(vec![
        "--server.endpoint".into(),
        format!("tcp://{addr}"),
        "--server.database".into(),
        "benchdb".into(),
        "--create-database".into(),
        "--requests".into(),
        "10".into(),
    ]);
    assert_eq!(again, 1);
    assert_eq!(fake.databases.lock().unwrap().len(), 1);
}

#[test]
fn delay_waits_ten_seconds_outside_the_measured_time() {
    let (addr, fake) = start_fake();
    let started = std::time::Instant::now();
    let out = run(addr, &["--requests", "10", "--delay", "true"]);
    let wall = started.elapsed().as_secs_f64();
    assert_eq!(out.code, 0, "{}", out.report);
    assert!(wall >= 10.0, "{wall}");
    let measured = out.report["results"]["timeSinceStart"].as_f64().unwrap();
    assert!(measured < 5.0, "{measured}");
    assert!(fake.requests.load(Ordering::Relaxed) >= 10);
}
