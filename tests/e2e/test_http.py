"""Raw HTTP for what the driver does not cover: batch API, import formats, pipelining,
chunked and compressed bodies, malformed input, limits, CORS, async jobs, headers."""
import gzip
import json
import socket
import time
import zlib

import pytest

from conftest import ROOT, ROOT_AUTHORIZATION, Server, unique, with_root_credentials

JSON_CT = "application/json; charset=utf-8"


def is_error(resp, status, num):
    body = resp.json()
    assert resp.status_code == status, (resp.status_code, resp.text)
    assert body["error"] is True and body["errorNum"] == num and body["code"] == status
    assert isinstance(body["errorMessage"], str)


@pytest.fixture()
def coll(http):
    name = unique()
    r = http.post("/_api/collection", json={"name": name})
    assert r.status_code == 200
    yield name
    http.delete(f"/_api/collection/{name}")


# ---------------------------------------------------------------- protocol basics


def test_common_headers_and_envelopes(http):
    r = http.get("/_api/version")
    assert r.status_code == 200
    assert r.headers["Content-Type"] == JSON_CT
    assert r.headers["Server"] == "ArangoDB"
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert "errorNum" not in r.json()
    is_error(http.get("/_api/non-existing"), 404, 404)
    is_error(http.get("/xxxx/yyyy"), 404, 404)
    is_error(http.get("/_db/nonexisting_db/_api/version"), 404, 1228)
    is_error(http.get("/_api/batch"), 405, 405)
    is_error(http.patch("/_api/batch"), 405, 405)
    r = http.options("/_api/anything")
    assert r.status_code == 200 and r.text == ""
    assert "PATCH" in r.headers["Allow"]


def test_malformed_json_and_types(http, coll):
    is_error(http.post(f"/_api/document/{coll}", data=b"{ not json"), 400, 600)
    is_error(http.post(f"/_api/document/{coll}", data=b'{"a":1,"a":2}'), 400, 600)
    is_error(http.post(f"/_api/document/{coll}", data=b'"just a string"'), 400, 1227)
    is_error(http.post("/_api/collection", data=b"[1,2"), 400, 600)
    is_error(http.post("/_api/document", data=b"{}"), 400, 1204)
    is_error(http.put(f"/_api/document/{coll}", data=b"{}"), 400, 1227)
    is_error(http.post("/_api/document/nope_nope", data=b"{}"), 404, 1203)
    # Nothing above may have stored anything.
    assert http.get(f"/_api/collection/{coll}/count").json()["count"] == 0


def test_document_headers_etag_location_and_preconditions(http, coll):
    r = http.post(f"/_api/document/{coll}?waitForSync=true", json={"_key": "k1", "v": 1})
    assert r.status_code == 201
    rev = r.json()["_rev"]
    assert r.headers["ETag"] == f'"{rev}"'
    assert r.headers["Location"] == f"/_db/_system/_api/document/{coll}/k1"
    r = http.post(f"/_api/document/{coll}", json={"_key": "k2"})
    assert r.status_code == 202

    r = http.get(f"/_api/document/{coll}/k1", headers={"If-None-Match": f'"{rev}"'})
    assert r.status_code == 304 and r.text == ""
    r = http.get(f"/_api/document/{coll}/k1", headers={"If-Match": "*abcd"})
    is_error(r, 412, 1200)
    assert r.json()["_rev"] == rev and r.json()["_key"] == "k1"
    r = http.head(f"/_api/document/{coll}/k1")
    assert r.status_code == 200 and r.text == "" and int(r.headers["Content-Length"]) > 0
    assert http.head(f"/_api/document/{coll}/zzz").status_code == 404
    r = http.put(f"/_api/document/{coll}/k1", json={"v": 2}, headers={"If-Match": rev})
    assert r.status_code == 202 and r.json()["_oldRev"] == rev
    is_error(http.patch(f"/_api/document/{coll}/k1", json={"v": 3}, headers={"If-Match": rev}), 412, 1200)
    r = http.delete(f"/_api/document/{coll}/k1?waitForSync=true")
    assert r.status_code == 200
    assert http.post(f"/_api/document/{coll}?silent=true", json={}).json() == {}


def test_document_read_header_set_and_encoded_keys(http, coll):
    """The headers of the read path (built from a shared template plus the ETag) and keys
    that need percent-encoding in the URL and in Location."""
    r = http.post(f"/_api/document/{coll}", json={"_key": "x%y:1"})
    assert r.status_code == 202
    rev = r.json()["_rev"]
    assert r.headers["Location"] == f"/_db/_system/_api/document/{coll}/x%25y:1"
    for method in (http.get, http.head):
        for prefix in ("", "/_db/_system"):
            r = method(f"{prefix}/_api/document/{coll}/x%25y:1")
            assert r.status_code == 200, (method, prefix, r.status_code)
            assert r.headers["ETag"] == f'"{rev}"'
            assert r.headers["Content-Type"] == "application/json; charset=utf-8"
            assert r.headers["Server"] == "ArangoDB"
            assert r.headers["X-Content-Type-Options"] == "nosniff"
            assert r.headers["Connection"] == "Keep-Alive"
            assert r.headers["x-arango-queue-time-seconds"] == "0.000000"
            assert int(r.headers["Content-Length"]) > 0
    assert http.get(f"/_api/document/{coll}/x%25y:1").json()["_id"] == f"{coll}/x%y:1"
    r = http.get(f"/_api/document/{coll}/x%25y:1", headers={"If-None-Match": f'"{rev}"'})
    assert r.status_code == 304 and r.text == ""
    assert r.headers["ETag"] == f'"{rev}"' and "Content-Type" not in r.headers
    r = http.get(f"/_api/document/{coll}/x%25y:1", headers={"If-None-Match": '"_other"'})
    assert r.status_code == 200 and r.json()["_key"] == "x%y:1"
    # A malformed escape in the path is a bad request, not a lookup.
    is_error(http.get(f"/_api/document/{coll}/%FF"), 400, 400)


def test_multi_document_error_codes_header(http, coll):
    r = http.post(f"/_api/document/{coll}", json=[{"_key": "a"}, {"_key": "a"}, {"_key": "b c"}])
    assert r.status_code == 202
    body = r.json()
    assert body[0]["_key"] == "a"
    assert body[1]["errorNum"] == 1210 and body[2]["errorNum"] == 1221
    assert json.loads(r.headers["X-Arango-Error-Codes"]) == {"1210": 1, "1221": 1}
    r = http.post(f"/_api/document/{coll}?silent=true", json=[{"_key": "c"}, {"_key": "a"}])
    assert [e["errorNum"] for e in r.json()] == [1210]
    r = http.put(f"/_api/document/{coll}?onlyget=true", json=["a", "c", "missing"])
    assert r.status_code == 200
    got = r.json()
    assert got[0]["_key"] == "a" and got[2]["errorNum"] == 1202
    # The legacy form with ?collection=.
    r = http.post(f"/_api/document?collection={coll}", json={"_key": "legacy"})
    assert r.status_code == 202 and r.json()["_id"] == f"{coll}/legacy"


def test_boolean_query_parameters(http, coll):
    for value in ["true", "yes", "on", "1", "Y"]:
        r = http.post(f"/_api/document/{coll}?returnNew={value}", json={})
        assert "new" in r.json(), value
    for value in ["false", "0", "no", "undefined", "junk"]:
        r = http.post(f"/_api/document/{coll}?returnNew={value}", json={})
        assert "new" not in r.json(), value


# ---------------------------------------------------------------- transport


def raw_exchange(server, payload, expect_responses, timeout=10):
    """Sends raw bytes and reads until `expect_responses` complete responses arrived."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    s.sendall(with_root_credentials(payload))
    data = b""
    deadline = time.time() + timeout
    while data.count(b"HTTP/1.1 ") < expect_responses or not _complete(data, expect_responses):
        if time.time() > deadline:
            break
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return data


def _complete(data, n):
    # Every response here has a Content-Length; check the last one is complete.
    parts = data.split(b"HTTP/1.1 ")[1:]
    if len(parts) < n:
        return False
    last = parts[-1]
    head, _, body = last.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return True


def test_pipelining_keeps_order(server, http, coll):
    reqs = b""
    for i in range(5):
        body = json.dumps({"_key": f"p{i}"}).encode()
        reqs += (
            f"POST /_api/document/{coll} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
    for i in range(5):
        reqs += f"GET /_api/document/{coll}/p{i} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    data = raw_exchange(server, reqs, 10)
    assert data.count(b"HTTP/1.1 202") == 5 and data.count(b"HTTP/1.1 200") == 5
    positions = [data.index(f'"_key":"p{i}","_id"'.encode()) for i in range(5)]
    assert positions == sorted(positions)


def test_chunked_request_body(server, coll):
    body = json.dumps({"_key": "chunky", "v": 1}).encode()
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 5]), body[i:i + 5]) for i in range(0, len(body), 5))
    payload = (
        f"POST /_api/document/{coll} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        + chunks
        + b"0\r\n\r\n"
    )
    data = raw_exchange(server, payload, 1)
    assert b"HTTP/1.1 202" in data and b'"_key":"chunky"' in data


def test_compressed_request_bodies(http, coll):
    doc = json.dumps({"_key": "gz", "pad": "x" * 1000}).encode()
    r = http.post(f"/_api/document/{coll}", data=gzip.compress(doc), headers={"Content-Encoding": "gzip"})
    assert r.status_code == 202, r.text
    doc = json.dumps({"_key": "zl"}).encode()
    r = http.post(f"/_api/document/{coll}", data=zlib.compress(doc), headers={"Content-Encoding": "deflate"})
    assert r.status_code == 202, r.text
    r = http.post(f"/_api/document/{coll}", data=b"not gzip at all", headers={"Content-Encoding": "gzip"})
    assert r.status_code == 400
    assert http.get(f"/_api/document/{coll}/gz").json()["pad"] == "x" * 1000


def test_cors(http):
    r = http.options("/_api/version", headers={"oRiGiN": "http://example.com", "Access-Control-Request-Headers": "x-a, x-b"})
    assert r.headers["Access-Control-Allow-Origin"] == "http://example.com"
    assert r.headers["Access-Control-Allow-Credentials"] == "false"
    assert r.headers["Access-Control-Allow-Headers"] == "x-a, x-b"
    assert r.headers["Access-Control-Max-Age"] == "1800"
    assert "PUT" in r.headers["Access-Control-Allow-Methods"]
    r = http.get("/_api/version", headers={"Origin": "http://a"})
    assert r.headers["Access-Control-Allow-Origin"] == "http://a"
    assert "Access-Control-Allow-Methods" not in r.headers
    assert "Access-Control-Allow-Origin" not in http.get("/_api/version").headers


def test_max_body_size_answers_413(tmp_root):
    srv = Server(tmp_root / "small", ["--server.max-body-size", "1024"]).start()
    try:
        import requests

        r = requests.post(srv.url + "/_api/document/x", data=b"{" + b" " * 5000 + b"}", auth=ROOT)
        is_error(r, 413, 413)
        big = gzip.compress(json.dumps({"pad": "y" * 100000}).encode())
        assert len(big) < 1024
        r = requests.post(srv.url + "/_api/collection", data=big, headers={"Content-Encoding": "gzip"}, auth=ROOT)
        is_error(r, 413, 413)
        # The server is still fine.
        assert requests.get(srv.url + "/_api/version", auth=ROOT).status_code == 200
    finally:
        srv.stop()


# ---------------------------------------------------------------- batch


def batch_body(boundary, parts):
    out = b""
    for i, (method, path, body) in enumerate(parts):
        out += f"--{boundary}\r\nContent-Type: application/x-arango-batchpart\r\nContent-Id: part{i}\r\n\r\n".encode()
        out += f"{method} {path} HTTP/1.1\r\n\r\n".encode()
        if body is not None:
            out += body.encode() if isinstance(body, str) else body
        out += b"\r\n"
    out += f"--{boundary}--\r\n".encode()
    return out


def parse_batch(resp):
    ct = resp.headers["Content-Type"]
    boundary = ct.split("boundary=")[1]
    parts = resp.content.split(f"--{boundary}".encode())[1:-1]
    out = []
    for p in parts:
        _, _, http_msg = p.partition(b"\r\n\r\n")
        status_line = http_msg.split(b"\r\n", 1)[0]
        body = http_msg.partition(b"\r\n\r\n")[2].rstrip(b"\r\n")
        out.append((int(status_line.split()[1]), p, body))
    return out


def test_batch_api(http, coll):
    parts = [
        ("POST", f"/_api/document/{coll}", '{"_key":"b1","v":1}'),
        ("POST", f"/_api/document/{coll}", '{"_key":"b1"}'),
        ("GET", f"/_api/document/{coll}/b1", None),
        ("PATCH", f"/_api/document/{coll}/b1", '{"w":2}'),
        ("GET", "/_api/nonexisting", None),
        ("POST", "/_api/batch", "nested"),
    ]
    r = http.post("/_api/batch", data=batch_body("SomeBoundary", parts),
                  headers={"Content-Type": "multipart/form-data; boundary=SomeBoundary"})
    assert r.status_code == 200
    assert r.headers["x-arango-errors"] == "3"
    results = parse_batch(r)
    assert [s for s, _, _ in results] == [202, 409, 200, 202, 404, 400]
    assert b"Content-Id: part2" in results[2][1]
    assert json.loads(results[2][2])["v"] == 1
    assert http.get(f"/_api/document/{coll}/b1").json()["w"] == 2


def test_batch_malformed(http):
    def post(body, ct):
        headers = {} if ct is None else {"Content-Type": ct}
        return http.post("/_api/batch", data=body, headers=headers)

    good = batch_body("XXX", [("GET", "/_api/version", None)])
    assert post(good, "multipart/form-data; boundary=XXX").status_code == 200
    assert post(good, 'multipart/form-data; boundary="XXX"').status_code == 200
    for ct in [None, "xxx/xxx", "application/json", "multipart/form-data", "multipart/form-data; boundary=a"]:
        assert post(good, ct).status_code == 400, ct
    for body in [b"", b"garbage", b"--XXX--", good.replace(b"--XXX--", b"--YYY--"),
                 b"--XXX\r\nContent-Type: text/plain\r\n\r\nGET / HTTP/1.1\r\n\r\n\r\n--XXX--"]:
        assert post(body, "multipart/form-data; boundary=XXX").status_code == 400, body
    # A broken embedded request is a per-part error.
    body = b"--XXX\r\nContent-Type: application/x-arango-batchpart\r\n\r\nNOT-A-REQUEST\r\n\r\n\r\n--XXX--\r\n"
    r = post(body, "multipart/form-data; boundary=XXX")
    assert r.status_code == 200 and r.headers["x-arango-errors"] == "1"


# ---------------------------------------------------------------- import


def imp(http, coll, body, **params):
    q = "&".join(f"{k}={v}" for k, v in params.items())
    return http.post(f"/_api/import?collection={coll}&{q}", data=body)


def test_import_formats(http, coll):
    r = imp(http, coll, '{"_key":"j1"}\n\n{"_key":"j2"}\r\nnot json\n[1]\n', type="documents", details="true")
    body = r.json()
    assert r.status_code == 201
    assert (body["created"], body["errors"], body["empty"]) == (2, 2, 1)
    assert len(body["details"]) == 2 and "at position" in body["details"][0]

    r = imp(http, coll, '[{"_key":"a1"},{"_key":"a2"}, 5]', type="array")
    assert (r.json()["created"], r.json()["errors"]) == (2, 1)
    assert "details" not in r.json()
    r = imp(http, coll, '[{"_key":"l1"}]', type="list")
    assert r.json()["created"] == 1
    r = imp(http, coll, '  [{"_key":"auto1"}]', type="auto")
    assert r.json()["created"] == 1
    r = imp(http, coll, '{"_key":"auto2"}\n{"_key":"auto3"}', type="auto")
    assert r.json()["created"] == 2
    r = imp(http, coll, '["_key","v"]\n["t1",1]\n["t2",2]\n["t3"]\n')
    assert (r.json()["created"], r.json()["errors"]) == (2, 1)
    assert http.get(f"/_api/document/{coll}/t2").json()["v"] == 2
    r = imp(http, coll, "[]", type="array")
    assert r.status_code == 201 and r.json()["created"] == 0

    is_error(imp(http, coll, "[{", type="array"), 400, 400)
    is_error(imp(http, coll, "", type="array"), 400, 400)
    is_error(imp(http, coll, '\n["_key"]\n["x"]'), 400, 400)
    is_error(http.post("/_api/import?type=documents", data="{}"), 400, 1204)
    is_error(http.post("/_api/import?type=documents&collection=nope_nope", data="{}"), 404, 1203)


def test_import_on_duplicate_complete_overwrite(http, coll):
    imp(http, coll, '{"_key":"d","v":1,"keep":true}', type="documents")
    r = imp(http, coll, '{"_key":"d","v":2}', type="documents")
    assert r.json()["errors"] == 1
    r = imp(http, coll, '{"_key":"d","v":2}', type="documents", onDuplicate="update")
    assert r.json()["updated"] == 1
    assert http.get(f"/_api/document/{coll}/d").json()["keep"] is True
    r = imp(http, coll, '{"_key":"d","v":3}', type="documents", onDuplicate="replace")
    assert r.json()["updated"] == 1
    assert "keep" not in http.get(f"/_api/document/{coll}/d").json()
    r = imp(http, coll, '{"_key":"d","v":4}\n{"_key":"new1"}', type="documents", onDuplicate="ignore")
    assert (r.json()["ignored"], r.json()["created"]) == (1, 1)
    r = imp(http, coll, '{"_key":"fresh"}\n{"_key":"d"}', type="documents", complete="true")
    is_error(r, 409, 1210)
    assert http.get(f"/_api/document/{coll}/fresh").status_code == 404
    r = imp(http, coll, '{"_key":"only"}', type="documents", overwrite="true")
    assert r.json()["created"] == 1
    assert http.get(f"/_api/collection/{coll}/count").json()["count"] == 1


def test_import_edges_with_prefixes(http):
    name = unique("e")
    assert http.post("/_api/collection", json={"name": name, "type": 3}).status_code == 200
    try:
        r = imp(http, name, '{"_from":"a","_to":"b"}\n{"_from":"x/a","_to":"b"}\n{"_to":"b"}',
                type="documents", fromPrefix="v", toPrefix="w", details="true")
        body = r.json()
        assert (body["created"], body["errors"]) == (2, 1)
        docs = http.put(f"/_api/document/{name}?onlyget=true", json=[]).json()
        assert docs == []
    finally:
        http.delete(f"/_api/collection/{name}")


# ---------------------------------------------------------------- async jobs


def test_async_jobs(http, coll):
    r = http.post(f"/_api/document/{coll}", json={"_key": "fire"}, headers={"x-arango-async": "true"})
    assert r.status_code == 202 and r.text == "" and "x-arango-async-id" not in r.headers
    r = http.post(f"/_api/document/{coll}", json={"_key": "stored"}, headers={"x-arango-async": "store"})
    assert r.status_code == 202
    job = r.headers["x-arango-async-id"]
    for _ in range(100):
        if http.get(f"/_api/job/{job}").status_code == 200:
            break
        time.sleep(0.05)
    assert job in http.get("/_api/job/done").json()
    r = http.put(f"/_api/job/{job}")
    assert r.status_code == 202 and r.json()["_key"] == "stored"
    assert r.headers["x-arango-async-id"] == job
    is_error(http.put(f"/_api/job/{job}"), 404, 404)
    is_error(http.get("/_api/job/123456789"), 404, 404)
    is_error(http.put("/_api/job/123456789/cancel"), 404, 404)
    r = http.get("/_api/version", headers={"x-arango-async": "store"})
    job = r.headers["x-arango-async-id"]
    time.sleep(0.2)
    assert http.delete(f"/_api/job/{job}").json() == {"result": True}
    assert http.delete("/_api/job/all").json() == {"result": True}
    is_error(http.get("/_db/no_such_db/_api/version", headers={"x-arango-async": "store"}), 404, 1228)
    for _ in range(100):
        if http.get(f"/_api/document/{coll}/fire").status_code == 200:
            break
        time.sleep(0.05)
    assert http.get(f"/_api/document/{coll}/fire").status_code == 200


def test_connection_close_and_http10(server):
    data = raw_exchange(server, b"GET /_api/version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 1)
    assert b"HTTP/1.1 200" in data and b"connection: close" in data.lower()
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    s.sendall(b"GET /_api/version HTTP/1.0\r\n" + ROOT_AUTHORIZATION + b"\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break  # the server closed the connection after answering
        data += chunk
    s.close()
    assert b" 200 OK" in data and b'"server":"arango"' in data


def test_garbage_never_kills_the_server(server, http, coll):
    import random

    rng = random.Random(7)
    payloads = [
        b"\x00\x01\x02\r\n\r\n",
        b"GET\r\n\r\n",
        b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n",
        b"POST /_api/document/" + coll.encode() + b" HTTP/1.1\r\nContent-Length: 5\r\n\r\n{\"a\"",
        b"POST /_api/batch HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=XX\r\nContent-Length: 10\r\n\r\n--XX\r\n\r\n\r\n",
        b"PUT /_api/import?collection=" + coll.encode() + b" HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"GET /_db/%FF%FE/_api/version HTTP/1.1\r\n\r\n",
        b"GET /_api/document/" + coll.encode() + b"/%00 HTTP/1.1\r\n\r\n",
    ] + [bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300))) for _ in range(30)]
    for p in payloads:
        try:
            s = socket.create_connection(("127.0.0.1", server.port), timeout=2)
            s.sendall(p)
            s.settimeout(0.5)
            try:
                s.recv(65536)
            except OSError:
                pass
            s.close()
        except OSError:
            pass
    assert http.get("/_api/version").status_code == 200
    assert http.get(f"/_api/collection/{coll}/count").json()["count"] == 0


def test_non_ascii_is_escaped_in_responses(http, coll):
    r = http.post(f"/_api/document/{coll}?returnNew=true", data='{"_key":"u","t":"Grüß Gott 😀"}'.encode())
    assert r.status_code == 202
    assert "\\u00FC\\u00DF" in r.text and "\\uD83D\\uDE00" in r.text
    r = http.get(f"/_api/document/{coll}/u")
    assert '"Gr\\u00FC\\u00DF Gott \\uD83D\\uDE00"' in r.text
    assert r.json()["t"] == "Grüß Gott 😀"
    head = http.head(f"/_api/document/{coll}/u")
    assert int(head.headers["Content-Length"]) == len(r.content)
