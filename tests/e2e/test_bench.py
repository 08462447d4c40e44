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

# The bench server keeps authentication on; `quiver bench` sends root's empty password.
ROOT_BASIC = "Basic cm9vdDo="

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


def bench(port, *args, timeout=120, quiet=True):
    report = Path(tempfile.mkdtemp(prefix="quiver-e2e-report-")) / "report.json"
    cmd = _client_cmd() + [
        "--server.endpoint", f"tcp://127.0.0.1:{port}",
        "--json-report-file", str(report),
        "--quiet", "true" if quiet else "false",
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    data = json.loads(report.read_text()) if report.exists() else None
    shutil.rmtree(report.parent, ignore_errors=True)
    return proc, data


def _status(port, method, path, body):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(), method=method,
        headers={"Content-Type": "application/json", "Authorization": ROOT_BASIC},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def count(port, collection):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/_api/collection/{collection}/count", headers={"Authorization": ROOT_BASIC}
    )
    with urllib.request.urlopen(req, timeout=10) as r:
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
    # arangobench's percentile keys (C++ std::to_string) and default percentiles.
    for conn in ("0", "1", "all"):
        assert set(report["histogram"][conn]) == {
            "IntervalSize", "50.000000", "80.000000", "85.000000", "90.000000", "95.000000",
            "99.000000", "99.990000",
        }
    assert "fastestResults" not in report
    if left is not None:
        assert count(bench_port, collection) == left


def test_custom_query(bench_port):
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


def test_report_text_runs_and_quiet(bench_port):
    proc, report = bench(
        bench_port,
        "--test-case", "document", "--requests", "60", "--runs", "3", "--threads", "2",
        "--histogram.percentiles", "50", "--histogram.percentiles", "99.9",
        "--collection", "e2e_runs", quiet=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    # Status lines without --quiet, then arangobench's report in its order.
    expected = [
        "executing tests...",
        "Total number of operations: 60, runs: 3, keep alive: yes, async: no, batch size: 0",
        "concurrency level (threads): 2",
        "Test case: document, complexity: 1, database: '_system', collection: 'e2e_runs'",
        "Printing fastest result", "Printing slowest result", "Printing median result",
        "Total request/response duration (sum of all threads):",
        "Operations per second rate:",
        "Min request time:", "Avg request time:", "Max request time:",
        "Interval/Percentile:", "50.00%", "99.90%", "run 3 thread 1:",
    ]
    at = 0
    for text in expected:
        found = out.find(text, at)
        assert found >= 0, f"{text!r} missing (after byte {at}):\n{out}"
        at = found
    # Not a terminal: no progress bar (no carriage returns or escape sequences).
    assert "\r" not in out + proc.stderr and "\x1b[" not in out + proc.stderr
    assert report["concurrencyLevel"] == 2
    fastest, slowest = report["fastestResults"], report["slowestResults"]
    assert fastest["timeSinceStart"] <= report["results"]["timeSinceStart"] <= slowest["timeSinceStart"]
    assert set(report["histogram"]["0"]) == {"IntervalSize", "50.000000", "99.900000"}
    assert count(bench_port, "e2e_runs") == 60

    # --quiet drops the status lines, never the report.
    proc, report = bench(bench_port, "--test-case", "version", "--requests", "10")
    assert proc.returncode == 0
    assert "executing tests..." not in proc.stdout
    assert "Operations per second rate:" in proc.stdout


def test_junit_report(bench_port):
    import xml.etree.ElementTree as ET

    junit = Path(tempfile.mkdtemp(prefix="quiver-e2e-junit-")) / "junit.xml"
    try:
        proc, _ = bench(
            bench_port, "--test-case", "crud", "--requests", "50", "--collection", "e2e_junit",
            "--junit-report-file", str(junit),
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        suite = ET.parse(junit).getroot()
        assert suite.tag == "testsuite" and suite.get("name") == "arangobench"
        assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "0", "0")
        assert suite.get("timestamp") and suite.get("hostname")
        case = suite.find("testcase")
        assert case.get("name") == "crud" and case.get("classname") == "BenchTest"
        assert float(case.get("time")) > 0
        assert case.find("failure") is None
    finally:
        shutil.rmtree(junit.parent, ignore_errors=True)


def test_keep_alive_false_opens_a_connection_per_request(bench_port):
    proc, report = bench(
        bench_port, "--test-case", "version", "--requests", "20", "--concurrency", "2",
        "--keep-alive", "false",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["keepAlive"] is False
    # The connection check of each connection plus one connection per request.
    assert report["results"]["connectionsOpened"] == 22
    proc, report = bench(bench_port, "--test-case", "version", "--requests", "20", "--concurrency", "2")
    assert report["results"]["connectionsOpened"] == 2


def test_create_database(bench_port):
    args = ("--server.database", "e2e_benchdb", "--create-database", "true",
            "--test-case", "document", "--requests", "20", "--collection", "e2e_in_db")
    proc, report = bench(bench_port, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["database"] == "e2e_benchdb"
    with urllib.request.urlopen(
        urllib.request.Request(
            f"http://127.0.0.1:{bench_port}/_db/e2e_benchdb/_api/collection/e2e_in_db/count",
            headers={"Authorization": ROOT_BASIC},
        ),
        timeout=10,
    ) as r:
        assert json.loads(r.read())["count"] == 20
    # As in arangobench, an existing database makes --create-database fail.
    proc, report = bench(bench_port, *args)
    assert proc.returncode == 1
    assert report is None
    assert "exists already" in proc.stderr


def test_custom_query_file_and_priority(bench_port):
    folder = Path(tempfile.mkdtemp(prefix="quiver-e2e-query-"))
    try:
        good = folder / "good.aql"
        good.write_text("FOR i IN 1..@n RETURN i")
        proc, report = bench(
            bench_port, "--test-case", "custom-query", "--custom-query-file", str(good),
            "--custom-query-bindvars", '{"n": 2}', "--requests", "20",
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert report["results"]["failures"] == 0
        # --custom-query wins over --custom-query-file (here: a file with a syntax error).
        bad = folder / "bad.aql"
        bad.write_text("THIS IS NOT AQL")
        proc, report = bench(
            bench_port, "--test-case", "custom-query", "--custom-query-file", str(bad),
            "--custom-query", "RETURN 1", "--requests", "20",
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        proc, report = bench(
            bench_port, "--test-case", "custom-query", "--custom-query-file", str(bad),
            "--requests", "5",
        )
        assert proc.returncode == 1
        assert report["results"]["failures"] == 5
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_duration(bench_port):
    proc, report = bench(
        bench_port, "--test-case", "crud", "--duration", "1", "--concurrency", "2",
        "--collection", "e2e_duration",
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["duration"] == 1
    assert report["totalNumberOfOperations"] > 10
    assert report["totalNumberOfOperations"] == report["results"]["operations"]
    assert 0.9 < report["results"]["timeSinceStart"] < 10


def test_progress_bar_only_on_a_terminal(bench_port):
    import pty
    import select

    master, slave = pty.openpty()
    try:
        cmd = _client_cmd() + [
            "--server.endpoint", f"tcp://127.0.0.1:{bench_port}",
            "--test-case", "version", "--duration", "2", "--concurrency", "1",
        ]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, text=True)
        os.close(slave)
        slave = None
        drawn = b""
        deadline = time.time() + 30
        while time.time() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                drawn += chunk
            elif proc.poll() is not None:
                break
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out
        # The bar (drawn on the terminal) shows the operation count; the report stays on stdout.
        assert b"operations" in drawn, drawn
        assert "Operations per second rate:" in out
        assert "operations [" not in out
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
