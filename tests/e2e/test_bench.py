"""End-to-end: `quiver bench` against the real `quiver` server binary.

Every test case runs briefly against a fresh server; the test checks the exit code, the JSON
report (no failures, no verification problems, the operation count) and, where the test case
leaves documents behind, the collection's count as the server reports it.

Binaries: QUIVER_BIN (the server; default target/debug/quiver); the client is `$QUIVER_BIN bench` when the server
binary has that command, otherwise QUIVER_BENCH_BIN or target/debug/quiver-bench.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _server_bin():
    path = os.environ.get("QUIVER_BIN") or str(REPO / "target" / "debug" / "quiver")
    if not os.path.exists(path):
        pytest.fail(f"quiver binary not found at {path}; build it or set QUIVER_BIN")
    return path


def _client_cmd():
    server = _server_bin()
    probe = subprocess.run([server, "bench", "--help"], capture_output=True, timeout=30)
    if probe.returncode == 0 and b"--test-case" in probe.stdout:
        return [server, "bench"]
    path = os.environ.get("QUIVER_BENCH_BIN")
    if not path:
        target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
        path = str(target / "debug" / "quiver-bench")
    if not Path(path).exists():
        pytest.fail(f"no bench client: {path} missing and {server} has no bench command")
    return [path]


@pytest.fixture(scope="module")
def bench_port():
    """A server of its own (fresh data directory), so benchmark collections never meet other
    tests' data; yields its port."""
    data = tempfile.mkdtemp(prefix="quiver-e2e-bench-")
    log_path = Path(data) / "server.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [_server_bin(), "--server.endpoint", "tcp://127.0.0.1:0", "--database.directory", str(Path(data) / "db")],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    port = None
    deadline = time.time() + 30
    while time.time() < deadline and port is None:
        match = re.search(r"listening on tcp://127\.0\.0\.1:(\d+)", log_path.read_text())
        if match:
            port = int(match.group(1))
        elif proc.poll() is not None:
            break
        else:
            time.sleep(0.1)
    if port is None:
        proc.kill()
        pytest.fail("server did not start: " + log_path.read_text())
    yield port
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
    shutil.rmtree(data, ignore_errors=True)


def bench(port, *args, timeout=120):
    report = Path(tempfile.mkdtemp(prefix="quiver-e2e-report-")) / "report.json"
    cmd = _client_cmd() + [
        "--server.endpoint", f"tcp://127.0.0.1:{port}",
        "--json-report-file", str(report),
        "--quiet", "true",
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    data = json.loads(report.read_text()) if report.exists() else None
    shutil.rmtree(report.parent, ignore_errors=True)
    return proc, data


def _status(port, method, path, body):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), method=method,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def require_route(port, case):
    """Skips (with the reason shown) a test case whose server route is not built yet: the
    server answers 501 Not Implemented or 404 "unknown path". Any other answer runs the test,
    so these tests start checking as soon as the route exists."""
    probes = {
        "aqlinsert": ("POST", "/_api/cursor", {"query": "RETURN 1"}),
        "custom-query": ("POST", "/_api/cursor", {"query": "RETURN 1"}),
        "persistent-index": ("GET", "/_api/index?collection=_probe_missing", None),
    }
    if case not in probes:
        return
    method, path, body = probes[case]
    status, text = _status(port, method, path, body)
    if status == 501 or (status == 404 and b"unknown path" in text):
        pytest.skip(f"server does not implement {method} {path.split('?')[0]} yet ({status})")


def count(port, collection):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_api/collection/{collection}/count", timeout=10) as r:
        return json.loads(r.read())["count"]


# (test case, requests, documents left behind or None)
CASES = [
    ("version", 100, None),
    ("document", 100, 100),
    ("import-document", 20, 60),
    ("collection", 10, None),
    ("crud", 103, 1),
    ("crud-append", 100, 25),
    ("crud-write-read", 100, 50),
    ("edge-crud", 100, 25),
    ("persistent-index", 100, 25),
    ("shapes", 100, 1),
    ("shapes-append", 100, 50),
    ("random-shapes", 99, 0),
    ("aqlinsert", 50, 50),
    ("document-get", 50, 50),
    ("document-update", 50, 50),
    ("document-remove", 50, 0),
]


@pytest.mark.parametrize("case,requests,left", CASES, ids=[c[0] for c in CASES])
def test_case_runs_and_verifies(bench_port, case, requests, left):
    require_route(bench_port, case)
    collection = "e2e_" + case.replace("-", "_")
    proc, report = bench(
        bench_port,
        "--test-case", case,
        "--requests", str(requests),
        "--concurrency", "2",
        "--complexity", "3",
        "--collection", collection,
    )
    assert report is not None, proc.stdout + proc.stderr
    results = report["results"]
    assert results["failures"] == 0, proc.stdout + proc.stderr
    assert results["incompleteResults"] == 0
    assert results["verificationProblems"] == [], proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["testCase"] == case
    assert report["totalNumberOfOperations"] == requests
    assert report["concurrencyLevel"] == 2
    assert results["operationsPerSecondRate"] > 0
    for key in ("histogram", "keepAlive", "async", "batchSize", "waitForSync", "complexity", "min", "avg", "max"):
        assert key in report
    if left is not None:
        assert count(bench_port, collection) == left


def test_custom_query(bench_port):
    require_route(bench_port, "custom-query")
    proc, report = bench(
        bench_port,
        "--test-case", "custom-query",
        "--custom-query", "FOR i IN 1..@n RETURN i",
        "--custom-query-bindvars", '{"n": 3}',
        "--requests", "50",
    )
    assert report is not None and report["results"]["failures"] == 0, proc.stdout + proc.stderr
    assert proc.returncode == 0


def test_batches(bench_port):
    proc, report = bench(
        bench_port,
        "--test-case", "document", "--requests", "200", "--batch-size", "16",
        "--concurrency", "2", "--collection", "e2e_batch",
    )
    assert report is not None and report["results"]["failures"] == 0, proc.stdout + proc.stderr
    assert proc.returncode == 0
    # 100 operations per connection in batches of 16 -> 7 requests each.
    assert report["results"]["httpRequests"] == 14
    assert count(bench_port, "e2e_batch") == 200


def test_async(bench_port):
    proc, report = bench(
        bench_port,
        "--test-case", "document", "--requests", "100", "--async", "true", "--collection", "e2e_async",
    )
    assert report is not None and report["results"]["failures"] == 0, proc.stdout + proc.stderr
    assert proc.returncode == 0
    assert count(bench_port, "e2e_async") == 100


def test_wait_for_sync_and_runs(bench_port):
    proc, report = bench(
        bench_port,
        "--test-case", "document", "--requests", "30", "--wait-for-sync", "true",
        "--runs", "2", "--collection", "e2e_sync",
    )
    assert report is not None and report["success"] is True, proc.stdout + proc.stderr
    assert report["waitForSync"] is True
    assert len(report["allRuns"]) == 2
    assert proc.returncode == 0


def test_failed_operations_make_the_exit_code_non_zero(bench_port):
    # An existing but empty collection: every read of a preloaded key answers 404.
    status, text = _status(bench_port, "POST", "/_api/collection", {"name": "e2e_empty"})
    assert status == 200, text
    proc, report = bench(
        bench_port,
        "--test-case", "document-get", "--requests", "20", "--create-collection", "false",
        "--collection", "e2e_empty",
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert report["results"]["failures"] == 20
    assert report["success"] is False
    assert "unexpected status 404" in proc.stdout
