//! docs/api-coverage.md and the router agree: every row of the inventory of ArangoDB 3.12's
//! HTTP API is sent through the transport-free dispatcher (`quiver_server::handle`) with its
//! method and a concrete path. A row marked `served` must reach a handler (no "unknown path"
//! 404, no 405, no 501) and name a test that exists; a row marked `refused` must get exactly
//! the status and error number the row gives; a row marked `missing` must get the router's
//! "unknown path" 404 (or 405 for a method a known path does not have) and name the issue that
//! will bring it. Serving a new endpoint, or dropping one, therefore fails this test until the
//! table says so.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use http::Method;
use quiver_core::{Core, CoreOptions};
use quiver_server::{handle, Request, Response, ServerConfig, ServerState};
use serde_json::{json, Value};

/// The issues a `missing` row may name (15 security, 17 search, 18 data tools, 19 web UI and
/// observability, 21 parity).
const ISSUES: &[u32] = &[15, 17, 18, 19];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[derive(Debug, PartialEq)]
enum Status {
    Served,
    Refused { status: u16, error_num: u64 },
    Missing,
}

#[derive(Debug)]
struct Row {
    line: usize,
    method: Method,
    path: String,
    status: Status,
    proof: String,
}

/// The table rows of docs/api-coverage.md: `| METHOD | `path` | status | proof | options |`.
fn rows(text: &str) -> Vec<Row> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // A leading and a trailing empty cell around the five columns.
        if cells.len() < 7 || !cells[2].starts_with('`') {
            continue;
        }
        let Ok(method) = cells[1].parse::<Method>() else {
            continue;
        };
        let path = cells[2].trim_matches('`').to_string();
        let proof = cells[4].to_string();
        let status = match cells[3] {
            "served" => Status::Served,
            "missing" => Status::Missing,
            "refused" => {
                let code = proof.split_whitespace().next().unwrap_or("");
                let (status, num) = code
                    .trim_matches('`')
                    .split_once('/')
                    .unwrap_or_else(|| panic!("line {}: refused needs STATUS/ERRNUM", i + 1));
                Status::Refused {
                    status: status.parse().expect("status"),
                    error_num: num.parse().expect("error number"),
                }
            }
            other => panic!("line {}: unknown status {other:?}", i + 1),
        };
        out.push(Row {
            line: i + 1,
            method,
            path,
            status,
            proof,
        });
    }
    out
}

/// The documented path with its placeholders replaced by objects the fixture creates.
fn concrete(path: &str) -> String {
    let path = path.split('#').next().unwrap_or(path);
    let edge_context = path.contains("/edge/{collection}") || path.starts_with("/_api/edges/");
    let mut out = String::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').expect("closing brace") + start;
        let name = &rest[start + 1..end];
        out.push_str(match name {
            "database-name" => "coverage_db",
            "collection-name" | "collection" if edge_context => "coverage_edges",
            "collection-name" | "collection" => "coverage",
            "key" | "vertex" => "k",
            "edge" => "e",
            "graph" => "coverage_graph",
            "index-id" => "coverage/0",
            "name" if path.starts_with("/_api/aqlfunction") => "coverage::f",
            "user" => "root",
            "dbname" => "_system",
            "analyzer-name" => "text_en",
            "view-name" => "coverage_view",
            "DB-Server-ID" => "PRMR-1",
            // Numeric identifiers of jobs, cursors, batches, queries, transactions, tasks,
            // tokens, crash dumps.
            _ => "1",
        });
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

struct Fixture {
    state: Arc<ServerState>,
    _dir: tempfile::TempDir,
}

/// HTTP Basic for root with the empty password a fresh data directory starts with.
const ROOT_BASIC: &str = "Basic cm9vdDo=";

/// A server state built with the configuration's defaults (authentication on), with a database, a document and an edge collection with one
/// document each, and a named graph over them.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        // Authentication on, as the binary's default; every request is root's (empty password).
        async_queue_capacity: 4,
        async_workers: 1,
        ..ServerConfig::default()
    };
    let f = Fixture {
        state: ServerState::new(config, core).unwrap(),
        _dir: dir,
    };
    let setup: [(&str, Value); 5] = [
        ("/_api/database", json!({"name": "coverage_db"})),
        ("/_api/collection", json!({"name": "coverage"})),
        (
            "/_api/collection",
            json!({"name": "coverage_edges", "type": 3}),
        ),
        ("/_api/document/coverage", json!({"_key": "k"})),
        (
            "/_api/document/coverage_edges",
            json!({"_key": "e", "_from": "coverage/k", "_to": "coverage/k"}),
        ),
    ];
    for (path, body) in setup {
        let r = f.call(Method::POST, path, Some(&body));
        assert!(r.status.is_success(), "fixture {path}: {r:?}");
    }
    let graph = json!({"name": "coverage_graph", "edgeDefinitions": [
        {"collection": "coverage_edges", "from": ["coverage"], "to": ["coverage"]}]});
    let r = f.call(Method::POST, "/_api/gharial", Some(&graph));
    assert!(r.status.is_success(), "fixture graph: {r:?}");
    f
}

impl Fixture {
    /// Whether every object [`fixture`] created is still there as created.
    fn intact(&self) -> bool {
        let ok = |path: &str| self.call(Method::GET, path, None).status.as_u16() == 200;
        let graph = self
            .call(Method::GET, "/_api/gharial/coverage_graph", None)
            .body_json()
            .unwrap_or(Value::Null);
        ok("/_db/coverage_db/_api/version")
            && ok("/_api/document/coverage/k")
            && ok("/_api/document/coverage_edges/e")
            && graph["graph"]["edgeDefinitions"].as_array().map(Vec::len) == Some(1)
            && graph["graph"]["orphanCollections"].as_array().map(Vec::len) == Some(0)
    }

    fn call(&self, method: Method, target: &str, body: Option<&Value>) -> Response {
        let mut req = Request::build(method, target).with_header("authorization", ROOT_BASIC);
        if let Some(b) = body {
            req = req.with_body(serde_json::to_vec(b).unwrap());
        }
        handle(&self.state, req).settle_blocking()
    }
}

/// The router's own answers for a request no handler takes: 404 "unknown path" (lib.rs
/// `not_found`) or 405 for a method a known path does not have.
fn unrouted(r: &Response) -> bool {
    let body = r.body_json().unwrap_or(Value::Null);
    let num = body["errorNum"].as_u64();
    let message = body["errorMessage"].as_str().unwrap_or("");
    (r.status.as_u16() == 404 && num == Some(404) && message.starts_with("unknown path"))
        || (r.status.as_u16() == 405 && num == Some(405))
}

/// The tests a `scripts!(dir, run, [name, …])` invocation generates: one per listed script.
fn script_tests(text: &str) -> Vec<&str> {
    let Some(start) = text.find("scripts!(") else {
        return Vec::new();
    };
    let rest = &text[start..];
    let (Some(open), Some(close)) = (rest.find('['), rest.find(']')) else {
        return Vec::new();
    };
    rest[open + 1..close]
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .collect()
}

/// Whether `text` (a test file's source) defines the test `name`: a Rust `fn`, a Python `def`,
/// a Go `func Test…(t *testing.T)`, or a script listed in the file's `scripts!`.
fn defines_test(text: &str, name: &str) -> bool {
    text.contains(&format!("fn {name}("))
        || text.contains(&format!("def {name}("))
        || (name.starts_with("Test") && text.contains(&format!("func {name}(t *testing.T)")))
        || script_tests(text).contains(&name)
}

/// `file::name` references in backticks, each resolved to a test that exists (see
/// [`defines_test`]) in the server's tests, the Python end-to-end tests or the Go driver tests.
fn check_proof(row: &Row) -> Result<(), String> {
    let root = repo_root();
    let mut found = 0;
    for piece in row.proof.split('`').skip(1).step_by(2) {
        let Some((file, name)) = piece.split_once("::") else {
            continue;
        };
        let candidates = [
            root.join("crates/quiver-server/tests").join(file),
            root.join("tests/e2e").join(file),
            root.join("tests/go-driver").join(file),
        ];
        let Some(text) = candidates
            .iter()
            .find_map(|p| std::fs::read_to_string(p).ok())
        else {
            return Err(format!("test file {file} not found"));
        };
        if !defines_test(&text, name) {
            return Err(format!("{file} has no test {name}"));
        }
        found += 1;
    }
    if found == 0 {
        return Err("a served row names the test that proves it (`file::test`)".into());
    }
    Ok(())
}

fn check_issue(row: &Row) -> Result<(), String> {
    let named = row
        .proof
        .split("issue ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<u32>().ok());
    match named {
        Some(n) if ISSUES.contains(&n) => Ok(()),
        _ => Err(format!("a missing row names its issue (one of {ISSUES:?})")),
    }
}

fn check(row: &Row, r: &Response) -> Result<(), String> {
    let body = r.body_json().unwrap_or(Value::Null);
    match row.status {
        Status::Served => {
            if unrouted(r) || r.status.as_u16() == 501 {
                return Err("marked served, but the server does not serve it".into());
            }
            check_proof(row)
        }
        Status::Refused { status, error_num } => {
            if r.status.as_u16() != status || body["errorNum"].as_u64() != Some(error_num) {
                return Err(format!("marked refused with {status}/{error_num}"));
            }
            Ok(())
        }
        Status::Missing => {
            if !unrouted(r) {
                return Err("marked missing, but a handler answers it".into());
            }
            check_issue(row)
        }
    }
}

#[test]
fn the_coverage_table_matches_the_router() {
    let path = repo_root().join("docs/api-coverage.md");
    let text = std::fs::read_to_string(&path).expect("docs/api-coverage.md");
    let rows = rows(&text);
    assert!(rows.len() > 200, "only {} rows parsed", rows.len());
    // One fixture, rebuilt whenever a request changed one of its objects (a removed
    // document, a dropped graph or database, a truncated collection).
    let mut f = fixture();
    let mut failures = Vec::new();
    for row in &rows {
        if !f.intact() {
            f = fixture();
        }
        let target = concrete(&row.path);
        let r = f.call(row.method.clone(), &target, None);
        if let Err(why) = check(row, &r) {
            failures.push(format!(
                "line {}: {} {} -> {} {}: {why}",
                row.line,
                row.method,
                row.path,
                r.status.as_u16(),
                String::from_utf8_lossy(&r.body)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} rows disagree with the server:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

#[test]
fn every_endpoint_is_listed_once() {
    let text = std::fs::read_to_string(repo_root().join("docs/api-coverage.md")).unwrap();
    let rows = rows(&text);
    let mut seen = std::collections::HashSet::new();
    for row in &rows {
        assert!(
            seen.insert((row.method.clone(), row.path.clone())),
            "line {}: {} {} listed twice",
            row.line,
            row.method,
            row.path
        );
    }
}

/// The summary's counts are those of the table's documented rows (the ones above the
/// undocumented routes), so the summary cannot drift from the rows beneath it.
#[test]
fn the_summary_counts_the_documented_rows() {
    let text = std::fs::read_to_string(repo_root().join("docs/api-coverage.md")).unwrap();
    let beyond = text
        .lines()
        .position(|l| l.starts_with("## Beyond the documentation"))
        .map_or(usize::MAX, |i| i + 1);
    let documented: Vec<Row> = rows(&text)
        .into_iter()
        .filter(|r| r.line < beyond)
        .collect();
    let count = |f: fn(&Status) -> bool| documented.iter().filter(|r| f(&r.status)).count();
    let expected = format!(
        "{} documented endpoints: {} served, {} refused, {} missing;",
        documented.len(),
        count(|s| matches!(s, Status::Served)),
        count(|s| matches!(s, Status::Refused { .. })),
        count(|s| matches!(s, Status::Missing)),
    );
    let summary = text
        .lines()
        .find(|l| l.contains("documented endpoints:"))
        .expect("a summary line");
    assert!(
        summary.starts_with(&expected),
        "the summary says {summary:?}, the table counts {expected:?}"
    );
}

#[test]
fn citations_name_tests_of_each_language() {
    let rust = "#[test]\nfn inserts_a_document() {}";
    let python = "def test_insert(db):\n    pass";
    let go = "func TestInsert(t *testing.T) {\n}\nfunc helper(t *testing.T) {}";
    assert!(defines_test(rust, "inserts_a_document"));
    assert!(defines_test(python, "test_insert"));
    assert!(defines_test(go, "TestInsert"));
    // A Go helper is no test, and a prefix of a name is not the name.
    assert!(!defines_test(go, "helper"));
    assert!(!defines_test(go, "TestIns"));
    assert!(!defines_test(rust, "inserts_a"));
}

#[test]
fn placeholders_become_fixture_objects() {
    assert_eq!(
        concrete("/_api/gharial/{graph}/edge/{collection}/{edge}"),
        "/_api/gharial/coverage_graph/edge/coverage_edges/e"
    );
    assert_eq!(
        concrete("/_api/document/{collection}#multiple"),
        "/_api/document/coverage"
    );
    assert_eq!(concrete("/_api/job/{job-id}/cancel"), "/_api/job/1/cancel");
    let row = rows("| PUT | `/_x` | refused | `501/9` Foxx | |");
    assert_eq!(
        row[0].status,
        Status::Refused {
            status: 501,
            error_num: 9
        }
    );
}
