"""The data tools over an ssl:// endpoint of the real binary (certificate generated here, as
in test_tls.py): a dump restored into another database (whose revision tree then equals the
original's), an import exported again and a backup listed, all through `--server.endpoint ssl://…` with root's credentials over TLS; wrong
credentials, a wrong scheme and a handshake that cannot succeed each end with a clear
message and exit status 1 (2 for an unknown --ssl.protocol)."""
import json
import re
import subprocess

import pytest
import requests

from conftest import ROOT, Server, quiver_bin, unique
from test_tls import write_certificates


def run_tool(*args):
    return subprocess.run([quiver_bin(), *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def tls_server(tmp_root):
    root = tmp_root / ("tools-tls-" + unique())
    root.mkdir()
    keyfile, _ca = write_certificates(root)
    srv = Server(
        root / "data",
        ["--server.endpoint", "ssl://127.0.0.1:0", "--ssl.keyfile", str(keyfile)],
    ).start()
    line = next(l for l in srv.startup if "listening on" in l)
    srv.ssl_port = int(re.search(r"ssl://127\.0\.0\.1:(\d+)", line).group(1))
    yield srv
    assert srv.stop() == 0


def ssl_endpoint(srv):
    return ["--server.endpoint", f"ssl://127.0.0.1:{srv.ssl_port}"]


def test_dump_and_restore_round_trip_over_tls(tls_server, tmp_path):
    sys_db = tls_server.client().db("_system", username=ROOT[0], password=ROOT[1])
    source, target = unique("src"), unique("dst")
    sys_db.create_database(source)
    db = tls_server.client().db(source, username=ROOT[0], password=ROOT[1])
    people = db.create_collection("people")
    people.add_index({"type": "persistent", "fields": ["age"], "name": "by_age"})
    people.insert_many([{"_key": f"p{i}", "age": i, "tags": ["a", i]} for i in range(500)])
    knows = db.create_collection("knows", edge=True)
    knows.insert_many([{"_from": f"people/p{i}", "_to": f"people/p{i + 1}"} for i in range(99)])

    dump_dir = tmp_path / "dump"
    done = run_tool("dump", *ssl_endpoint(tls_server), "--server.database", source,
                    "--server.username", "root", "--server.password", "",
                    "--output-directory", str(dump_dir), "--progress", "false")
    assert done.returncode == 0, done.stderr
    assert "2 collection(s), wrote 599 document(s)" in done.stderr
    done = run_tool("restore", *ssl_endpoint(tls_server), "--server.database", target,
                    "--create-database", "true", "--input-directory", str(dump_dir),
                    "--progress", "false")
    assert done.returncode == 0, done.stderr

    copy = tls_server.client().db(target, username=ROOT[0], password=ROOT[1])
    for name in ("people", "knows"):
        original = {d["_key"]: d for d in db.collection(name).all()}
        restored = {d["_key"]: d for d in copy.collection(name).all()}
        assert restored == original  # _rev included: restore keeps the dumped revisions
    assert any(ix.get("name") == "by_age" for ix in copy.collection("people").indexes())
    # Same documents with the same revisions: the same revision tree in both databases.
    assert revision_tree(tls_server, source, "people") == revision_tree(tls_server, target, "people")
    assert revision_tree(tls_server, source, "people")["count"] == 500


def revision_tree(srv, database, collection):
    base = f"{srv.url}/_db/{database}/_api/replication"
    batch = requests.post(f"{base}/batch", json={"ttl": 60}, auth=ROOT, timeout=30).json()["id"]
    try:
        tree = requests.get(f"{base}/revisions/tree", auth=ROOT, timeout=60,
                            params={"collection": collection, "batchId": batch,
                                    "onlyPopulated": "true"})
        assert tree.status_code == 200, tree.text
        return tree.json()
    finally:
        requests.delete(f"{base}/batch/{batch}", auth=ROOT, timeout=30)


def test_credentials_travel_over_tls(tls_server, tmp_path):
    wrong = run_tool("dump", *ssl_endpoint(tls_server), "--server.password", "not-root's",
                     "--output-directory", str(tmp_path / "a"), "--progress", "false")
    assert wrong.returncode == 1
    assert "401" in wrong.stderr or "not authorized" in wrong.stderr.lower(), wrong.stderr
    anonymous = run_tool("dump", *ssl_endpoint(tls_server), "--server.authentication", "false",
                         "--output-directory", str(tmp_path / "b"), "--progress", "false")
    assert anonymous.returncode == 1, anonymous.stderr
    # A user token from /_open/auth works as --server.jwt over TLS.
    token = requests.post(f"{tls_server.url}/_open/auth", timeout=30,
                          json={"username": ROOT[0], "password": ROOT[1]}).json()["jwt"]
    listed = run_tool("backup", "list", *ssl_endpoint(tls_server), "--server.jwt", token)
    assert listed.returncode == 0, listed.stderr


def test_import_and_export_over_tls(tls_server, tmp_path):
    name = unique("imp")
    source = tmp_path / "in.jsonl"
    rows = [{"_key": str(i), "n": i, "s": f"row {i}"} for i in range(250)]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = run_tool("import", *ssl_endpoint(tls_server), "--file", str(source), "--type", "jsonl",
                    "--collection", name, "--create-collection", "true", "--progress", "false")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "export"
    done = run_tool("export", *ssl_endpoint(tls_server), "--collection", name, "--type", "jsonl",
                    "--output-directory", str(out), "--progress", "false")
    assert done.returncode == 0, done.stderr
    exported = [json.loads(l) for l in (out / f"{name}.jsonl").read_text().splitlines()]
    assert sorted(({k: d[k] for k in ("_key", "n", "s")} for d in exported),
                  key=lambda d: d["n"]) == rows


def test_backup_create_and_list_over_tls(tls_server):
    created = run_tool("backup", "create", *ssl_endpoint(tls_server), "--label", "overtls")
    assert created.returncode == 0, created.stderr
    listed = run_tool("backup", "list", *ssl_endpoint(tls_server))
    assert listed.returncode == 0, listed.stderr
    assert "overtls" in listed.stdout + listed.stderr


def test_wrong_scheme_or_handshake_fails_clearly(tls_server, tmp_path):
    out = ["--output-directory", str(tmp_path / "x"), "--progress", "false"]
    # TLS to the plain endpoint: the server answers in plain HTTP, the handshake fails.
    tls_to_plain = run_tool("dump", "--server.endpoint", f"ssl://127.0.0.1:{tls_server.port}", *out)
    assert tls_to_plain.returncode == 1
    assert "TLS" in tls_to_plain.stderr and "ssl:// endpoint" in tls_to_plain.stderr, tls_to_plain.stderr
    # Plain HTTP to the TLS endpoint: the server closes the connection.
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"n": 1}\n')
    plain_to_tls = run_tool("import", "--server.endpoint", f"tcp://127.0.0.1:{tls_server.ssl_port}",
                            "--file", str(rows), "--type", "jsonl", "--collection", "c")
    assert plain_to_tls.returncode == 1
    assert "--server.endpoint ssl://" in plain_to_tls.stderr, plain_to_tls.stderr
    # https:// is not ArangoDB's syntax; the message names ssl://.
    https = run_tool("export", "--server.endpoint", f"https://127.0.0.1:{tls_server.ssl_port}",
                     "--collection", "c", *out)
    assert https.returncode == 1
    assert "use ssl://host:port" in https.stderr, https.stderr
    # SSLv2 is refused as ArangoDB's tools refuse it; an unknown number is a usage error.
    sslv2 = run_tool("dump", *ssl_endpoint(tls_server), "--ssl.protocol", "1", *out)
    assert sslv2.returncode == 1 and "SSLv2" in sslv2.stderr, sslv2.stderr
    unknown = run_tool("dump", *ssl_endpoint(tls_server), "--ssl.protocol", "7", *out)
    assert unknown.returncode == 2, unknown.stderr
    # Every accepted number negotiates TLS 1.2 or 1.3 with the server.
    for protocol in ("5", "6", "9"):
        listed = run_tool("backup", "list", *ssl_endpoint(tls_server), "--ssl.protocol", protocol)
        assert listed.returncode == 0, (protocol, listed.stderr)
