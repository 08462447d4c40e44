"""HTTP/2 on the HTTP/1.1 port, driven by a real HTTP/2 client: curl (nghttp2) with prior
knowledge, as the Go and Java drivers connect, and through `Upgrade: h2c`. Inserts, reads, a
cursor, errors, a body over the limit, gzip bodies. Several streams on one connection are
covered by crates/quiver-server/tests/http2.rs: curl 7.88 cannot reuse a prior-knowledge
connection (curl/curl#10634, fixed in 7.89)."""
import gzip
import json
import subprocess

import pytest

from conftest import Server, unique

MAX_BODY = 64 * 1024


def curl(url, method="GET", body=None, headers=(), upgrade=False):
    """One request with curl over HTTP/2, with prior knowledge or (`upgrade`) through
    `Upgrade: h2c`; returns (HTTP version, status, JSON body or None)."""
    marker = "\n--curl-meta--"
    args = ["curl", "-sS", "-u", "root:", "-X", method, "-w", marker + "%{http_version} %{http_code}"]
    args.append("--http2" if upgrade else "--http2-prior-knowledge")
    for h in headers:
        args += ["-H", h]
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        args += ["--data-binary", "@-"]
    args.append(url)
    out = subprocess.run(args, input=data, capture_output=True, timeout=30, check=True).stdout
    text, meta = out.decode().rsplit(marker, 1)
    version, status = meta.split()
    return version, int(status), (json.loads(text) if text else None)


@pytest.fixture(scope="module")
def small_server(tmp_root):
    srv = Server(
        tmp_root / ("http2-" + unique()), ["--server.max-body-size", str(MAX_BODY)]
    ).start()
    yield srv
    srv.stop()


def test_curl_speaks_http2():
    features = subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout
    assert "HTTP2" in features, features


def test_documents_cursor_and_errors_over_http2(small_server):
    base = small_server.url
    name = unique()
    version, status, body = curl(f"{base}/_api/collection", "POST", {"name": name})
    assert (version, status) == ("2", 200), body
    version, status, body = curl(
        f"{base}/_api/document/{name}", "POST", [{"_key": "a", "n": 1}, {"_key": "b", "n": 2}]
    )
    assert (version, status) == ("2", 202), body
    assert [d["_key"] for d in body] == ["a", "b"]
    version, status, body = curl(f"{base}/_api/document/{name}/b")
    assert (version, status) == ("2", 200)
    assert body["n"] == 2
    version, status, body = curl(
        f"{base}/_api/cursor",
        "POST",
        {"query": f"FOR d IN {name} SORT d.n RETURN d.n", "batchSize": 1},
    )
    assert (version, status) == ("2", 201), body
    assert body["result"] == [1] and body["hasMore"] is True
    version, status, body = curl(f"{base}/_api/cursor/{body['id']}", "POST")
    assert (version, status) == ("2", 200), body
    assert body["result"] == [2] and body["hasMore"] is False

    # ArangoDB's error envelope.
    version, status, body = curl(f"{base}/_api/document/{name}/nope")
    assert (version, status) == ("2", 404)
    assert body["error"] is True and body["errorNum"] == 1202 and body["code"] == 404
    version, status, body = curl(f"{base}/_api/document/{name}", "POST", b"{")
    assert (status, body["errorNum"]) == (400, 600)

    # gzip bodies are inflated; a body over the limit is 413, and the server stays up.
    zipped = gzip.compress(json.dumps({"_key": "z"}).encode())
    version, status, body = curl(
        f"{base}/_api/document/{name}", "POST", zipped, ["Content-Encoding: gzip"]
    )
    assert (version, status) == ("2", 202), body
    # The 413 goes out while the client is still sending; the stream must end cleanly (not
    # with a reset the client reports as an error), every time.
    for _ in range(5):
        version, status, body = curl(
            f"{base}/_api/document/{name}", "POST", {"pad": "x" * (4 * MAX_BODY)}
        )
        assert (version, status) == ("2", 413)
        assert body["errorNum"] == 413
    version, status, body = curl(f"{base}/_api/collection/{name}/count")
    assert (version, status, body["count"]) == ("2", 200, 3)


def test_h2c_upgrade_switches_and_answers_the_request_on_stream_one(small_server):
    base = small_server.url
    name = unique()
    # curl --http2 on http:// sends the request with `Upgrade: h2c`; the answer comes over
    # HTTP/2 after 101 Switching Protocols.
    version, status, body = curl(f"{base}/_api/collection", "POST", {"name": name}, upgrade=True)
    assert (version, status) == ("2", 200), body
    version, status, body = curl(
        f"{base}/_api/document/{name}", "POST", {"_key": "u", "n": 1}, upgrade=True
    )
    assert (version, status) == ("2", 202), body
    version, status, body = curl(f"{base}/_api/document/{name}/u", upgrade=True)
    assert (version, status, body["n"]) == ("2", 200, 1)
    version, status, body = curl(f"{base}/_api/document/{name}/nope", upgrade=True)
    assert (version, status, body["errorNum"]) == ("2", 404, 1202)
    zipped = gzip.compress(json.dumps({"_key": "z"}).encode())
    version, status, body = curl(
        f"{base}/_api/document/{name}", "POST", zipped, ["Content-Encoding: gzip"], upgrade=True
    )
    assert (version, status) == ("2", 202), body
    # A body larger than one HTTP/2 frame is answered over HTTP/1.1 (the upgrade is
    # declined, as RFC 9113 allows), with the same result.
    version, status, body = curl(
        f"{base}/_api/document/{name}", "POST", {"_key": "big", "pad": "x" * 20000}, upgrade=True
    )
    assert (version, status) == ("1.1", 202), body
    version, status, body = curl(f"{base}/_api/collection/{name}/count", upgrade=True)
    assert (version, status, body["count"]) == ("2", 200, 3)
