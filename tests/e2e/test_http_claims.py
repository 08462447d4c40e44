"""HTTP API claims: behaviours checked claim by claim against ArangoDB 3.12 that the other e2e
files did not pin (see docs/http-api-claims.md)."""
import json
import re
import signal
import subprocess
import time

import pytest
import requests
from arango.exceptions import DocumentInsertError, DocumentRevisionError

from conftest import ROOT, Server, quiver_bin


def test_duplicate_key_error_body_is_the_plain_envelope(db):
    col = db.create_collection("dup")
    col.insert({"_key": "a"})
    with pytest.raises(DocumentInsertError) as err:
        col.insert({"_key": "a"})
    resp = err.value.response
    # python-arango's own test_exception compares the body exactly.
    assert resp.status_code == 409 and resp.status_text == "Conflict"
    assert json.loads(resp.raw_body) == {
        "code": 409,
        "error": True,
        "errorNum": 1210,
        "errorMessage": err.value.error_message,
    }
    assert err.value.error_message.startswith("unique constraint violated")


def test_multi_document_revision_conflicts_are_item_errors_for_the_driver(db):
    col = db.create_collection("many")
    metas = col.insert_many([{"_key": "a", "v": 1}, {"_key": "b", "v": 1}])
    stale = [{"_key": m["_key"], "_rev": "_stalestale-", "v": 2} for m in metas]

    # With check_rev the driver sends ignoreRevs=false; each conflicting item must come back
    # as an error object the driver turns into DocumentRevisionError (an item carrying `_id`
    # would be taken for a success and break the driver's `_oldRev` handling).
    for result in (col.replace_many(stale, check_rev=True), col.update_many(stale, check_rev=True)):
        assert len(result) == 2
        for item in result:
            assert isinstance(item, DocumentRevisionError), item
            assert item.error_code == 1200
    result = col.delete_many(stale, check_rev=True)
    assert all(isinstance(item, DocumentRevisionError) for item in result), result
    # get_many keeps only real documents.
    assert col.get_many(["a", "missing"]) == [col.get("a")]
    assert sorted(d["v"] for d in col.all()) == [1, 1]


def test_sigterm_after_unsynced_writes_shuts_down_cleanly_and_keeps_them(tmp_root):
    # `--configuration none` is arangod's "no configuration file"; it must not be read as a path.
    srv = Server(tmp_root / "sigterm", extra_args=["--configuration", "none"]).start()
    try:
        # Started on port 0: /_api/endpoint names the port actually bound.
        assert requests.get(f"{srv.url}/_api/endpoint", auth=ROOT, timeout=10).json() == [
            {"endpoint": f"http://127.0.0.1:{srv.port}"}
        ]
        db = srv.client().db("_system", username="root", password="")
        col = db.create_collection("unsynced")
        col.insert_many([{"_key": str(i)} for i in range(500)], sync=False)
    finally:
        assert srv.stop() == 0
    deadline = time.time() + 5
    while "shutdown complete\n" not in srv.output and time.time() < deadline:
        time.sleep(0.05)
    assert "shutdown complete\n" in srv.output, srv.output
    srv.start()
    try:
        db = srv.client().db("_system", username="root", password="")
        assert db.collection("unsynced").count() == 500
    finally:
        assert srv.stop() == 0


def test_an_arangod_conf_starts_the_server(tmp_root):
    """An arangod-style configuration: `@include`, a dotted key inside a section, an
    enterprise-only section, and options QuiverDB does not have (skipped with a warning)."""
    data = tmp_root / "arangod-conf"
    (tmp_root / "logging.conf").write_text("[log]\nlevel = warning\n")
    conf = tmp_root / "arangod.conf"
    conf.write_text(
        "# as shipped with ArangoDB, trimmed\n"
        "@include logging\n"
        "[server]\n"
        # Port 0 (a free port, read back from the startup line): a port picked by the test
        # could be taken by another process before the server binds it.
        "endpoint = tcp://127.0.0.1:0\n"
        "authentication = false\n"
        f"database.directory = {data}\n"
        "database.maximal-journal-size = 2MiB\n"
        "[javascript]\nstartup-directory = /usr/share/arangodb3/js\n"
        "[server:enterprise]\nendpoint = tcp://127.0.0.1:1\n"
    )
    proc = subprocess.Popen(
        [quiver_bin(), "-c", str(conf)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        lines = []
        while True:
            line = proc.stdout.readline()
            assert line, "".join(lines)
            lines.append(line)
            if "listening on" in line:
                break
        match = re.search(r"listening on tcp://127\.0\.0\.1:(\d+)", line)
        assert match and str(data) in line, line
        port = int(match.group(1))
        assert port not in (0, 1, 8529), "the file's endpoint, not the enterprise one or the default"
        warning = "".join(lines)
        assert "ignoring options" in warning and "server.authentication" not in warning, warning
        assert "javascript.startup-directory" in warning, warning
        base = f"http://127.0.0.1:{port}"
        assert requests.get(f"{base}/_api/version", timeout=10).status_code == 200
        # The default journal size of new collections comes from the file.
        created = requests.post(f"{base}/_api/collection", json={"name": "j"}, timeout=10).json()
        assert created["journalSize"] == 2 * 1024 * 1024, created
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_failed_import_with_overwrite_keeps_the_collection(db):
    col = db.create_collection("bulk")
    col.insert_many([{"_key": "old1"}, {"_key": "old2"}])
    # python-arango's import_bulk sends complete=true (halt_on_error) by default.
    with pytest.raises(DocumentInsertError) as err:
        col.import_bulk([{"_key": "n1"}, {"_key": "n1"}], overwrite=True)
    assert err.value.error_code == 1210
    assert sorted(col.keys()) == ["old1", "old2"]
    result = col.import_bulk([{"_key": "n1"}, {"_key": "n2"}], overwrite=True)
    assert result["created"] == 2
    assert sorted(col.keys()) == ["n1", "n2"]


def test_sigterm_right_after_the_startup_line_is_a_clean_shutdown(tmp_root):
    # The signal handlers are installed before the startup line is printed; a SIGTERM sent as
    # soon as the line is read used to hit the default action now and then (exit -15).
    for attempt in range(10):
        srv = Server(tmp_root / "early-sigterm").start()
        assert srv.stop() == 0, f"attempt {attempt}"


def test_preconditions_on_head_and_delete(http):
    http.post("/_api/collection", json={"name": "pre_c"})
    rev = http.post("/_api/document/pre_c", json={"_key": "k"}).json()["_rev"]
    tag = f'"{rev}"'
    r = http.head("/_api/document/pre_c/k", headers={"If-Match": '"_nottherev-"'})
    assert r.status_code == 412 and r.text == "" and r.headers["ETag"] == tag
    r = http.head("/_api/document/pre_c/k", headers={"If-None-Match": tag})
    assert r.status_code == 304 and r.text == "" and r.headers["ETag"] == tag
    r = http.head("/_api/document/pre_c/k", headers={"If-None-Match": '"_other-----"'})
    assert r.status_code == 200 and r.text == ""
    r = http.delete("/_api/document/pre_c/k", headers={"If-Match": "'_nottherev-'"})
    assert r.status_code == 412
    assert r.json() == {
        "code": 412, "error": True, "errorNum": 1200,
        "errorMessage": r.json()["errorMessage"],
        "_id": "pre_c/k", "_key": "k", "_rev": rev,
    }
    r = http.delete("/_api/document/pre_c/k", headers={"If-Match": rev})
    assert r.status_code in (200, 202) and r.json()["_rev"] == rev
    http.delete("/_api/collection/pre_c")
