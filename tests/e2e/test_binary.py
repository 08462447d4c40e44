"""The `quiver` binary itself: grouped --help, configuration file, startup line, clean
shutdown on SIGINT and SIGTERM."""
import re
import signal
import subprocess

import requests

from conftest import ROOT, Server, quiver_bin


def test_help_lists_grouped_arangodb_options():
    out = subprocess.run([quiver_bin(), "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0
    for option in [
        "--server.endpoint",
        "--database.directory",
        "--database.maximal-journal-size",
        "--wal.sync-interval",
        "--log.level",
        "--configuration",
        "--server.max-body-size",
        "--database.ignore-datafile-errors",
    ]:
        assert option in out.stdout, option
    for group in ["Server:", "Database:", "Write-ahead log:", "Logging:"]:
        assert group in out.stdout, group
    bad = subprocess.run([quiver_bin(), "--no-such-option"], capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0


def test_configuration_file_and_clean_shutdown(tmp_root):
    data = tmp_root / "configured"
    conf = tmp_root / "quiver.conf"
    # Port 0, read back from the startup line: a port picked here could be taken by another
    # process (other test runs share the machine) before the server binds it.
    conf.write_text(
        "# ArangoDB-style configuration\n"
        "[server]\n"
        "endpoint = tcp://127.0.0.1:0\n"
        "\n[database]\n"
        f"directory = {data}\n"
        "maximal-journal-size = 4MiB\n"
        "\n[wal]\nsync-interval = 50\n"
    )
    proc = subprocess.Popen(
        [quiver_bin(), "--configuration", str(conf), "--log.level", "warning"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        match = re.search(r"listening on tcp://127\.0\.0\.1:(\d+)", line)
        assert match and str(data) in line, line
        port = int(match.group(1))
        assert port != 8529, "the endpoint comes from the file, not the default"
        r = requests.post(f"http://127.0.0.1:{port}/_api/collection", json={"name": "c"}, auth=ROOT, timeout=10)
        assert r.status_code == 200
        assert data.is_dir()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        rest = proc.stdout.read()
        assert "shutdown complete" in rest, rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # The same directory opens again with the collection in it (SIGTERM path this time).
    srv = Server(data).start()
    try:
        assert requests.get(f"{srv.url}/_api/collection/c", auth=ROOT, timeout=10).status_code == 200
    finally:
        assert srv.stop() == 0


def test_http_threads_serve_concurrent_clients(tmp_root):
    """`--server.threads 3`: connections spread over three single-worker runtimes. Twelve
    clients on their own keep-alive connections insert and read concurrently (python-arango,
    one connection pool each), every write lands exactly once, and a clean shutdown follows."""
    from concurrent.futures import ThreadPoolExecutor

    srv = Server(tmp_root / "threads", extra_args=["--server.threads", "3"]).start()
    try:
        db = srv.client().db("_system", username="root", password="")
        db.create_collection("spread")

        def worker(n):
            own = srv.client().db("_system", username="root", password="")
            coll = own.collection("spread")
            for i in range(40):
                meta = coll.insert({"_key": f"w{n}-{i}", "n": n, "i": i})
                assert coll.get(meta["_key"])["i"] == i
            # A duplicate is refused by whichever runtime serves this connection.
            try:
                coll.insert({"_key": f"w{n}-0"})
            except Exception as e:  # python-arango's DocumentInsertError
                assert getattr(e, "error_code", None) == 1210, e
            else:
                raise AssertionError("duplicate key accepted")
            return n

        with ThreadPoolExecutor(max_workers=12) as pool:
            assert sorted(pool.map(worker, range(12))) == list(range(12))
        assert db.collection("spread").count() == 12 * 40
        cursor = db.aql.execute("FOR d IN spread COLLECT n = d.n WITH COUNT INTO c RETURN c")
        assert list(cursor) == [40] * 12
    finally:
        assert srv.stop() == 0
