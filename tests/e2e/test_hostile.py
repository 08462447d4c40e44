"""Hostile-client test: throw malformed, oversized and contradictory input at every route family
of the real binary and check that no input crashes the server or corrupts stored data
(docs/http-api-claims.md, A31) — bad input gets a clear ArangoDB error
envelope with a sensible status, the server stays up, and nothing stored is lost (also across a
restart).

Everything is seeded (HOSTILE_SEED, default 1) and bounded: each phase sends a fixed number of
requests, raw sockets have timeouts, and the whole module runs in well under a minute.
"""
import json
import os
import random
import socket
import threading
import uuid

import pytest
import requests

from conftest import ROOT, Server, with_root_credentials

SEED = int(os.environ.get("HOSTILE_SEED", "1"))
TIMEOUT = 20

CONTROL_DB = "hostile_ctl"
CONTROL_COLL = "control"
CONTROL_DOCS = {f"k{i}": {"_key": f"k{i}", "n": i, "s": "x" * i, "f": i / 3} for i in range(50)}


class Hostile:
    """Raw access to one server, recording every answer that breaks the contract."""

    def __init__(self, server):
        self.server = server
        self.session = requests.Session()
        self.session.auth = ROOT
        self.problems = []

    # -- transports -------------------------------------------------------------------------
    def raw(self, data: bytes, timeout=TIMEOUT):
        """Send raw bytes on a fresh connection; return (status, body bytes) or None on a
        connection reset / empty answer (that is a crash symptom)."""
        data = with_root_credentials(data)
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=timeout) as s:
            s.sendall(data)
            chunks = []
            try:
                while True:
                    c = s.recv(65536)
                    if not c:
                        break
                    chunks.append(c)
            except (ConnectionResetError, socket.timeout):
                pass
        resp = b"".join(chunks)
        if not resp.startswith(b"HTTP/1."):
            return None
        head, _, body = resp.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        headers = {}
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            headers[k.strip().lower()] = v.strip()
        if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            body = _dechunk(body)
        return status, body

    def raw_request(self, method, path, body=b"", headers=None, what=None):
        if isinstance(path, str):
            path = path.encode()
        if isinstance(body, str):
            body = body.encode()
        lines = [method.encode() + b" " + path + b" HTTP/1.1", b"Host: 127.0.0.1"]
        for k, v in (headers or {}).items():
            lines.append((k.encode() if isinstance(k, str) else k) + b": " + (v.encode() if isinstance(v, str) else v))
        lines.append(b"Content-Length: " + str(len(body)).encode())
        lines.append(b"Connection: close")
        data = b"\r\n".join(lines) + b"\r\n\r\n" + body
        got = self.raw(data)
        label = what or f"{method} {path[:80]!r} body={body[:60]!r}"
        if got is None:
            self.problems.append(f"no HTTP answer (connection dropped): {label}")
            return None
        status, rbody = got
        self.check(status, rbody, label)
        return status, rbody

    def req(self, method, path, what=None, ok_statuses=None, **kw):
        kw.setdefault("timeout", TIMEOUT)
        label = what or f"{method} {path[:100]} {str(kw.get('data') or kw.get('json'))[:80]}"
        try:
            r = self.session.request(method, self.server.url + path, **kw)
        except requests.RequestException as e:
            self.problems.append(f"transport failure {e.__class__.__name__}: {label}")
            return None
        self.check(r.status_code, r.content, label, ok_statuses)
        return r

    # -- the contract -----------------------------------------------------------------------
    def check(self, status, body, label, ok_statuses=None):
        if status >= 500 and status not in (ok_statuses or ()) and status not in (501, 503):
            # ArangoDB itself answers 500 for a resource limit (errorNum 32, e.g. a RANGE() or a
            # query over its memory limit); every other 500 is a bug.
            if not (status == 500 and b'"errorNum":32' in body.replace(b" ", b"")):
                self.problems.append(f"status {status}: {label}: {body[:200]!r}")
                return
        if status < 400 or not body:
            return
        try:
            env = json.loads(body)
        except ValueError:
            # Batch answers are multipart; their envelope is checked by the batch phase.
            if b"--" in body[:8]:
                return
            self.problems.append(f"non-JSON error body ({status}): {label}: {body[:200]!r}")
            return
        if not (
            isinstance(env, dict)
            and env.get("error") is True
            and isinstance(env.get("errorNum"), int)
            and isinstance(env.get("errorMessage"), str)
            and env.get("code") == status
        ):
            self.problems.append(f"bad error envelope ({status}): {label}: {body[:200]!r}")

    def alive(self, phase):
        assert self.server.proc.poll() is None, f"server exited during {phase}"
        r = self.session.get(self.server.url + "/_api/version", timeout=TIMEOUT)
        assert r.status_code == 200, f"version after {phase}: {r.status_code}"

    def control_intact(self, phase):
        r = self.session.put(
            self.server.url + f"/_db/{CONTROL_DB}/_api/simple/all",
            json={"collection": CONTROL_COLL},
            timeout=TIMEOUT,
        )
        if r.status_code == 404:
            r = self.session.post(
                self.server.url + f"/_db/{CONTROL_DB}/_api/cursor",
                json={"query": f"FOR d IN {CONTROL_COLL} RETURN d", "batchSize": 1000},
                timeout=TIMEOUT,
            )
        assert r.status_code in (200, 201), f"control read after {phase}: {r.status_code} {r.text[:200]}"
        docs = r.json()["result"]
        got = {d["_key"]: {k: v for k, v in d.items() if not k.startswith("_") or k == "_key"} for d in docs}
        assert got == CONTROL_DOCS, f"control collection changed after {phase}"

    def settle(self, phase):
        self.alive(phase)
        self.control_intact(phase)
        problems, self.problems = self.problems, []
        assert not problems, f"{phase}: {len(problems)} problems:\n" + "\n".join(problems[:30])


def _dechunk(body):
    out = []
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out.append(rest[:size])
        body = rest[size + 2 :]
    return b"".join(out)


@pytest.fixture(scope="module")
def hostile(tmp_root):
    srv = Server(tmp_root / ("hostile-" + uuid.uuid4().hex[:6])).start()
    h = Hostile(srv)
    s = h.session
    assert s.post(srv.url + "/_api/database", json={"name": CONTROL_DB}).status_code == 201
    assert s.post(srv.url + f"/_db/{CONTROL_DB}/_api/collection", json={"name": CONTROL_COLL}).status_code == 200
    r = s.post(srv.url + f"/_db/{CONTROL_DB}/_api/document/{CONTROL_COLL}", json=list(CONTROL_DOCS.values()))
    assert r.status_code in (201, 202) and not any("error" in x for x in r.json())
    # A scratch database and collections the attack may damage freely.
    assert s.post(srv.url + "/_api/database", json={"name": "hx"}).status_code == 201
    assert s.post(srv.url + "/_db/hx/_api/collection", json={"name": "v"}).status_code == 200
    assert s.post(srv.url + "/_db/hx/_api/collection", json={"name": "e", "type": 3}).status_code == 200
    s.post(srv.url + "/_db/hx/_api/document/v", json=[{"_key": str(i), "a": i} for i in range(20)])
    yield h
    srv.stop()


# Values of the wrong type for any field: the server must refuse them or coerce them, never
# fail with a 500 or drop the connection.
ODD_VALUES = [
    None, True, False, 0, -1, -0.0, 1.5, 2**64, -(2**63) - 1, 10**30, "", "x", "1", "-0", "1e400",
    "NaN", "Infinity", [], [1, "a"], {}, {"a": {"b": []}}, "\u0000", "ä\u202e", "/" * 300,
    "x" * 5000,
]
# JSON texts the json module cannot produce.
ODD_TOKENS = [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400", b"-0", b"1e-400",
              b"123456789012345678901234567890", b"0x10", b"01", b"+1", b".5", b"1.", b"'a'",
              b"\"\\ud800\"", b"\"\\udc00\\ud800\"", b"\"\\u0000\"", b"\"\xff\xfe\"",
              b"\"\xc0\xaf\"", b"\"\xed\xa0\x80\"", b"true false", b"[1,]", b"{\"a\":1,}",
              b"{\"a\" 1}", b"{\"a\":1,\"a\":2}", b"", b" ", b"nul", b"[", b"{", b"\"abc"]


def odd_bodies(rng, template):
    """Bodies derived from a valid template object: each field replaced by odd values and odd
    raw tokens, plus truncations of the valid text."""
    out = []
    text = json.dumps(template)
    for cut in sorted(rng.sample(range(1, len(text)), min(4, len(text) - 1))):
        out.append(text[:cut].encode())
    for key in template:
        for v in rng.sample(ODD_VALUES, 6):
            out.append(json.dumps({**template, key: v}).encode())
        for tok in rng.sample(ODD_TOKENS, 3):
            other = {k: v for k, v in template.items() if k != key}
            prefix = json.dumps(other)[:-1]
            sep = ", " if other else ""
            out.append(prefix.encode() + sep.encode() + json.dumps(key).encode() + b": " + tok + b"}")
    out += [b"[]", b"[[]]", b"null", b"42", b"\"s\"", json.dumps([template] * 3).encode()]
    return out


def test_01_malformed_bodies_every_family(hostile):
    rng = random.Random(SEED)
    targets = [
        ("POST", "/_api/database", {"name": "hz", "options": {}, "users": []}),
        ("POST", "/_db/hx/_api/collection", {"name": "cz", "type": 2, "keyOptions": {"type": "autoincrement", "increment": 1, "offset": 0}, "waitForSync": False, "schema": None}),
        ("PUT", "/_db/hx/_api/collection/v/properties", {"waitForSync": True, "journalSize": 1048576, "schema": None}),
        ("PUT", "/_db/hx/_api/collection/v/rename", {"name": "v"}),
        ("POST", "/_db/hx/_api/document/v", {"_key": "new1", "a": 1}),
        ("POST", "/_db/hx/_api/document/v?overwriteMode=update", {"_key": "1", "a": 2}),
        ("PATCH", "/_db/hx/_api/document/v/2", {"a": 3, "_rev": "x"}),
        ("PUT", "/_db/hx/_api/document/v/3", {"a": 4}),
        ("PUT", "/_db/hx/_api/document/v?onlyget=true", {"k": 1}),
        ("DELETE", "/_db/hx/_api/document/v", {"_key": "4"}),
        ("POST", "/_db/hx/_api/document/e", {"_from": "v/1", "_to": "v/2"}),
        ("POST", "/_db/hx/_api/cursor", {"query": "FOR d IN v FILTER d.a > @x RETURN d", "bindVars": {"x": 1}, "batchSize": 2, "count": True, "ttl": 30, "options": {"fullCount": True, "stream": False, "maxRuntime": 5}}),
        ("POST", "/_db/hx/_api/explain", {"query": "FOR d IN v RETURN d", "bindVars": {}, "options": {"allPlans": False}}),
        ("POST", "/_db/hx/_api/query", {"query": "RETURN 1"}),
        ("POST", "/_db/hx/_api/index?collection=v", {"type": "persistent", "fields": ["a"], "unique": False, "sparse": False, "name": "ia"}),
        ("POST", "/_db/hx/_api/transaction/begin", {"collections": {"write": ["v"], "read": "v"}, "lockTimeout": 1, "waitForSync": False}),
        ("POST", "/_db/hx/_api/gharial", {"name": "gz", "edgeDefinitions": [{"collection": "e", "from": ["v"], "to": ["v"]}], "orphanCollections": []}),
        ("POST", "/_db/hx/_api/import?collection=v&type=list", {"a": 1}),
        ("PUT", "/_db/hx/_api/simple/all", {"collection": "v", "limit": 2}),
    ]
    for method, path, template in targets:
        for body in odd_bodies(rng, template):
            hostile.raw_request(method, path, body, {"Content-Type": "application/json"})
    hostile.settle("malformed bodies")


def test_02_deep_nesting_json_and_aql(hostile):
    deep = [b"[" * 10000 + b"]" * 10000, b"{\"a\":" * 10000 + b"1" + b"}" * 10000,
            b"[" * 200000, b"{\"a\":[" * 5000 + b"]}" * 5000]
    for body in deep:
        hostile.raw_request("POST", "/_db/hx/_api/document/v", body)
        hostile.raw_request("POST", "/_db/hx/_api/cursor", b"{\"query\":\"RETURN @x\",\"bindVars\":{\"x\":" + body + b"}}")
        hostile.raw_request("POST", "/_db/hx/_api/import?collection=v&type=documents", body + b"\n" + body)
        hostile.raw_request("POST", "/_api/batch", body, {"Content-Type": "multipart/form-data; boundary=XX"})
    queries = [
        "RETURN " + "(" * 5000 + "1" + ")" * 5000,
        "RETURN " + "(" * 100000,
        "RETURN " + " + ".join(["1"] * 20000),
        "RETURN " + " && ".join(["true"] * 20000),
        "RETURN " + "-" * 20000 + "1",
        "RETURN " + "!" * 20000 + "true",
        "RETURN " + "[" * 5000 + "]" * 5000,
        "RETURN " + "{a:" * 5000 + "1" + "}" * 5000,
        "RETURN " + "1 ? " * 5000 + "1" + " : 1" * 5000,
        "RETURN " + "NOT " * 20000 + "true",
        "RETURN x" + ".a" * 20000,
        "RETURN [1][0]" + "[0]" * 20000,
        "LET a = 1 " * 3000 + "RETURN 1",
        "FOR i IN 1..2 " * 500 + "RETURN 1",
        "RETURN " + "LENGTH(" * 5000 + "[]" + ")" * 5000,
        "RETURN (" + "RETURN " * 5000 + "1)",
        "RETURN " + "(FOR x IN [1] RETURN " * 2000 + "1" + ")" * 2000,
        "RETURN [1,2,3]" + "[*]" * 10000,
        "RETURN [1,2,3]" + "[**]" * 10000,
        "RETURN 1 " + "IN [1] " * 10000,
        "RETURN 1..2..3..4",
        "RETURN '" + "\\" * 10001,
        "RETURN /* " + "x" * 100000,
        "RETURN 1e400", "RETURN -1e400", "RETURN 9999999999999999999999999999", "RETURN 0x",
        "RETURN 0b2", "RETURN 1/0", "RETURN -0", "RETURN 1 % 0", "RETURN RANGE(1, 1e12)",
        "RETURN REPEAT('x', 1e12)", "FOR i IN 1..1e15 LIMIT 1 RETURN i",
        "RETURN CONCAT_SEPARATOR('x', RANGE(1,10))", "RETURN @", "RETURN @@", "RETURN @1a",
        "FOR d IN @@c RETURN d", "RETURN \u0000", "RETURN '\ud7ff'",
        "RETURN SUBSTRING('abc', 9223372036854775807, -9223372036854775808)",
        "RETURN SLICE([1,2], -9223372036854775808, 9223372036854775807)",
        "RETURN NTH([1], 9223372036854775807)", "RETURN [1][9223372036854775807]",
        "RETURN [1][-9223372036854775808]", "RETURN LEFT('abc', 1e30)", "RETURN RIGHT('abc', -1e30)",
        "RETURN DATE_ADD(0, 1e30, 'year')", "RETURN DATE_TIMESTAMP(1e30)", "RETURN DATE_ISO8601(-1e30)",
        "RETURN ROUND(1e308 * 10)", "RETURN POW(10, 400)", "RETURN BIT_SHIFT_LEFT(1, 1e10)",
        "RETURN TO_NUMBER('1e400')", "RETURN LOG(-1)", "RETURN SQRT(-1)", "RETURN 1 << 100",
        "RETURN RANDOM_TOKEN(1e9)", "RETURN FLATTEN([[1]], 1e9)", "RETURN ZIP([1], [])",
        "RETURN SPLIT('abc', '', 1e20)", "RETURN REGEX_TEST('a', '(')", "RETURN 'a' =~ '(((('",
        "RETURN 'a' LIKE '" + "%" * 5000 + "b'", "RETURN REGEX_REPLACE('aaaa', '(a*)*b', 'x')",
        # 100k x 100k characters runs O(n*m) for minutes, as in ArangoDB (known, not bounded).
        "RETURN LEVENSHTEIN_DISTANCE(REPEAT('a', 2000), REPEAT('b', 2000))",
        "RETURN DOCUMENT('v/1/2')", "RETURN DOCUMENT('nope/1')", "RETURN DOCUMENT(['v/1', 1, null, {}])",
        "INSERT {_key: 'a/b'} INTO v", "INSERT {_key: ''} INTO v", "INSERT {_from: 1} INTO e",
        "UPDATE '999' WITH {} IN v", "REMOVE {} IN v", "UPSERT {} INSERT {} UPDATE {} IN v OPTIONS {indexHint: 1}",
        "FOR d IN v COLLECT a = d.a INTO g = d AGGREGATE n = SUM(1) RETURN 1",
        "FOR d IN v WINDOW {preceding: 1e30, following: -1} AGGREGATE s = SUM(d.a) RETURN s",
        "FOR d IN v SORT d.a LIMIT -1 RETURN d", "FOR d IN v LIMIT 1e30 RETURN d",
        "FOR d IN v LIMIT 9223372036854775807, 9223372036854775807 RETURN d",
        "FOR v, e IN 1..1e9 OUTBOUND 'v/1' e RETURN v", "FOR v IN 1000000..1000000000 OUTBOUND 'v/1' e RETURN v",
        "FOR p IN OUTBOUND K_SHORTEST_PATHS 'v/1' TO 'v/2' e LIMIT 1e20 RETURN p",
        "FOR v IN ANY 'v/1' e OPTIONS {bfs: 'x', uniqueVertices: 7, weightAttribute: []} RETURN v",
        "FOR v IN OUTBOUND SHORTEST_PATH 'v/1' TO 'nope/2' e RETURN v",
        "FOR v IN OUTBOUND 'v/1' GRAPH 'nope' RETURN v", "FOR v IN OUTBOUND {} e RETURN v",
    ]
    for q in queries:
        hostile.req("POST", "/_db/hx/_api/cursor", json={"query": q, "bindVars": {}, "options": {"maxRuntime": 10}}, what=f"cursor {q[:80]}")
        hostile.req("POST", "/_db/hx/_api/explain", json={"query": q}, what=f"explain {q[:80]}")
        hostile.req("POST", "/_db/hx/_api/query", json={"query": q}, what=f"parse {q[:80]}")
    hostile.settle("deep nesting")


def test_03_paths_headers_utf8_and_encoding(hostile):
    paths = [
        b"/_db/hx/_api/document/v/%2F", b"/_db/hx/_api/document/v%2F1", b"/_db/hx/_api/document/v/%00",
        b"/_db/hx/_api/document/v/..", b"/_db/hx/_api/document/v/../../../etc/passwd",
        b"/_db/hx/_api/document/%2E%2E/1", b"/_db/%2E%2E/_api/version", b"/_db/../_api/version",
        b"/_db/hx/_api/document/v/%", b"/_db/hx/_api/document/v/%zz", b"/_db/hx/_api/document/v/%c0%af",
        b"/_db/hx/_api/document/v/%ff%fe", b"/_db/hx/_api/document/v/\xff\xfe",
        b"/_db/hx/_api/document/v/%ed%a0%80", b"/_db/\xc3\x28/_api/version", b"/_db/%ff/_api/collection",
        b"/_db/hx/_api/collection/%00", b"/_db/hx/_api/collection/" + b"a" * 100000,
        b"/_db/hx/_api/document/v/" + b"k" * 300, b"/_db/" + b"d" * 5000 + b"/_api/version",
        b"/_db//_api/version", b"/_db/", b"/_db", b"//_api/version", b"/_api//version",
        b"/_api/version?" + b"&".join(b"a%d=1" % i for i in range(5000)),
        b"/_api/version?details=%ff", b"/_db/hx/_api/document/v/1?rev=%00", b"*", b"http://x/_api/version",
        b"/_db/hx/_api/cursor/%00", b"/_db/hx/_api/cursor/99999999999999999999999",
        b"/_db/hx/_api/cursor/-1", b"/_db/hx/_api/job/%00", b"/_db/hx/_api/index/v/%2F",
        b"/_db/hx/_api/index/v%2Fx/1", b"/_db/hx/_api/gharial/%00/vertex/v",
        b"/_db/hx/_api/gharial/g/vertex/%2F/1", b"/_db/hx/_api/edges/%00?vertex=v/1",
        b"/_db/hx/_api/edges/e?vertex=%00&direction=sideways", b"/_db/hx/_api/import?collection=%00&type=zzz",
        b"/_db/hx/_api/simple/all", b"/_db/hx/_api/transaction/%00",
        b"/_db/hx/_api/transaction/99999999999999999999", b"/_db/hx/_api/document/v?returnNew=%ff",
    ]
    # Bytes that break HTTP/1.1 itself (non-ASCII or control bytes in the request line, a
    # request-target over hyper's 64 KiB limit) are refused by hyper's parser before any
    # handler runs; the transport still answers with ArangoDB's error envelope (400, or 414
    # for a URI that is too long) before it closes the connection.
    protocol_violations = [p for p in paths if any(b > 0x7E or b < 0x21 for b in p) or len(p) > 65000]
    for p in protocol_violations:
        for m in (b"GET", b"POST"):
            got = hostile.raw(m + b" " + p + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert got is not None and 400 <= got[0] < 500 and got[1], (p[:60], got)
            hostile.check(got[0], got[1], f"protocol violation {p[:60]!r}")
    for p in paths:
        if p in protocol_violations:
            continue
        for m in ("GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS"):
            got = hostile.raw_request(m, p, b"{}", {"Content-Type": "application/json"})
            if got and m != "HEAD":
                assert got[0] != 200 or b"/etc" not in p or b"root:" not in got[1]
    bad_headers = [
        {"If-Match": "\"\xff\""}, {"If-None-Match": "*" * 10000}, {"If-Match": ""},
        {"x-arango-async": "maybe"}, {"Content-Encoding": "gzip"},
        {"Content-Encoding": "deflate"}, {"Content-Encoding": "br"}, {"Content-Encoding": "gzip, gzip"},
        {"Content-Type": "multipart/form-data; boundary="}, {"Authorization": "Basic %%%"},
        {"Authorization": "Bearer " + "a" * 10000}, {"x-arango-trx-id": "abc"},
        {"x-arango-trx-id": "99999999999999999999999"}, {"x-arango-trx-id": "-1"},
        {"Accept-Encoding": "gzip;q=NaN"}, {"X-Long": "v" * 60000},
    ]
    for h in bad_headers:
        for m, p in (("GET", b"/_db/hx/_api/document/v/1"), ("POST", b"/_db/hx/_api/document/v"),
                     ("PATCH", b"/_db/hx/_api/document/v/1"), ("POST", b"/_db/hx/_api/cursor")):
            body = b"{\"query\":\"RETURN 1\"}" if p.endswith(b"cursor") else b"{\"z\":1}"
            hostile.raw_request(m, p, body, {k: v.encode("latin-1", "replace") if isinstance(v, str) else v for k, v in h.items()})
    # Invalid UTF-8 in keys and values of JSON bodies and in header names.
    for body in [b"{\"_key\":\"\xff\"}", b"{\"\xff\":1}", b"{\"a\":\"\xc0\x80\"}", b"{\"a\":\"\xf4\x90\x80\x80\"}",
                 b"{\"_key\":\"\\ud800\"}", b"{\"_key\":\"a\\u0000b\"}", b"{\"_from\":\"v/\\ud800\",\"_to\":\"v/1\"}"]:
        hostile.raw_request("POST", "/_db/hx/_api/document/v", body)
        hostile.raw_request("POST", "/_db/hx/_api/document/e", body)
        hostile.raw_request("POST", "/_db/hx/_api/import?collection=v&type=documents", body + b"\n" + body)
    hostile.raw(b"GET /_api/version HTTP/1.1\r\nHost: x\r\n\xff\xfe: 1\r\nConnection: close\r\n\r\n")
    hostile.raw(b"GET /_api/version HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\nConnection: close\r\n\r\n")
    hostile.raw(b"POST /_api/version HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\nConnection: close\r\n\r\n")
    hostile.raw(b"POST /_api/cursor HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n", timeout=2)
    hostile.raw(b"POST /_api/cursor HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\nConnection: close\r\n\r\n{\"query\":", timeout=2)
    hostile.raw(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)))
    hostile.raw(b"GARBAGE\r\n\r\n")
    hostile.settle("paths, headers, UTF-8")


def test_03b_unparsable_requests_get_an_error_envelope(hostile):
    """What hyper's parser refuses (malformed request line or header, headers over the 1 MiB
    limit, a URI over 16 KiB) is answered with ArangoDB's status and error envelope before the
    connection closes, never with silence."""
    cases = [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET /_api/version HTTP/9.9\r\nHost: x\r\n\r\n", 400),
        (b"GET /_api/version HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n", 400),
        (b"GET /_api/version HTTP/1.1\r\nHost: x\r\n\xff\xfe: 1\r\n\r\n", 400),
        (b"GET /_api/version HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (2 << 20) + b"\r\n\r\n", 431),
        (b"GET /_api/version?" + b"a" * 70000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
        # Under hyper's own limit, over ArangoDB's: answered by the transport, keep-alive.
        (b"GET /_api/version?" + b"a" * 20000 + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 414),
    ]
    for data, status in cases:
        got = hostile.raw(data)
        assert got is not None, data[:60]
        assert got[0] == status, (data[:60], got[0], got[1][:200])
        env = json.loads(got[1])
        assert env["error"] is True and env["code"] == status and env["errorNum"] == status, env
        assert isinstance(env["errorMessage"], str) and env["errorMessage"], env
    # A URI just under the limit is served normally.
    got = hostile.raw(b"GET /_api/version?" + b"a" * 15000 + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert got is not None and got[0] == 200, got
    hostile.settle("unparsable requests")


def test_04_bind_vars_and_cursor_ids(hostile):
    many = {f"v{i}": i for i in range(50000)}
    q = "RETURN [" + ", ".join(f"@v{i}" for i in range(0, 50000, 7)) + "]"
    hostile.req("POST", "/_db/hx/_api/cursor", json={"query": q, "bindVars": many})
    hostile.req("POST", "/_db/hx/_api/cursor", json={"query": "RETURN 1", "bindVars": many})
    for bv in [[], "x", 1, None, {"": 1}, {"@": 1}, {"@c": 1}, {"@c": "nope"}, {"@c": "v/1"}, {"@c": ["v"]},
               {"x": float("1e308")}, {"@c": "_users"}]:
        hostile.req("POST", "/_db/hx/_api/cursor", json={"query": "FOR d IN @@c RETURN @x", "bindVars": bv})
    # A cursor of database hx must not be reachable from another database.
    r = hostile.req("POST", "/_db/hx/_api/cursor", json={"query": "FOR i IN 1..10 RETURN i", "batchSize": 2})
    cid = r.json()["id"]
    r2 = hostile.req("PUT", f"/_db/{CONTROL_DB}/_api/cursor/{cid}")
    assert r2.status_code == 404 and r2.json()["errorNum"] == 1600
    r2 = hostile.req("DELETE", f"/_db/{CONTROL_DB}/_api/cursor/{cid}")
    assert r2.status_code == 404
    assert hostile.req("PUT", f"/_db/hx/_api/cursor/{cid}").status_code == 200
    for bad in ["0", "1", "-1", "abc", "1e3", str(2**64), "%00", "1/2", "1/abc", str(cid) + "/99999999"]:
        for m in ("PUT", "POST", "DELETE", "GET"):
            hostile.req(m, f"/_db/hx/_api/cursor/{bad}")
    hostile.req("DELETE", f"/_db/hx/_api/cursor/{cid}")
    hostile.req("PUT", f"/_db/hx/_api/cursor/{cid}")
    hostile.settle("bind variables and cursor ids")


def _multipart(parts, boundary="B0"):
    out = b""
    for p in parts:
        out += b"--" + boundary.encode() + b"\r\nContent-Type: application/x-arango-batchpart\r\n\r\n" + p + b"\r\n"
    return out + b"--" + boundary.encode() + b"--\r\n"


def test_05_batch_and_import(hostile):
    ok = b"GET /_api/version HTTP/1.1\r\n\r\n"
    post = b"POST /_db/hx/_api/document/v HTTP/1.1\r\n\r\n{\"b\":1}"
    bodies = [
        _multipart([ok, post]), _multipart([ok] * 5000), _multipart([b""]), _multipart([b"\r\n\r\n"]),
        _multipart([b"GET"]), _multipart([b"GET / HTTP/9.9\r\n\r\n"]), _multipart([b"\xff\xfe\r\n\r\n"]),
        _multipart([b"POST /_api/batch HTTP/1.1\r\nContent-Type: multipart/form-data; boundary=B0\r\n\r\n" + _multipart([ok])]),
        _multipart([b"POST /_db/hx/_api/batch HTTP/1.1\r\n\r\n"]),
        _multipart([ok]).replace(b"--B0--", b""), _multipart([ok])[:-10], b"--B0\r\n", b"--B0--", b"--B0",
        _multipart([ok], boundary="B1"), b"--B0\r\nContent-Type: application/x-arango-batchpart\r\n" + b"X: y\r\n" * 20000,
        _multipart([b"GET /_api/version HTTP/1.1\r\nContent-Length: 99999\r\n\r\nab"]),
        _multipart([b"GET /_api/version HTTP/1.1\r\nContent-Length: -1\r\n\r\n"]),
        _multipart([b"GET /_api/version HTTP/1.1\r\nx-arango-async: store\r\n\r\n"]),
        _multipart([b"GET \xff HTTP/1.1\r\n\r\n"]),
    ]
    for body in bodies:
        for ct in ("multipart/form-data; boundary=B0", "multipart/form-data", "multipart/form-data; boundary=\"B0\"",
                   "text/plain", "multipart/form-data; boundary=" + "x" * 5000):
            hostile.raw_request("POST", "/_db/hx/_api/batch", body, {"Content-Type": ct}, what=f"batch {ct[:40]} {body[:60]!r}")
    imports = [
        ("documents", b"{\"a\":1}\n[1,2]\n\"x\"\n\n{\"_key\":\"/\"}\n{bad\n" + b"\xff\n"),
        ("list", b"[{\"a\":1}, 1, \"x\", null, [], {\"_key\":1}]"),
        ("array", b"{\"a\":1}\n{\"b\":2}"),
        ("auto", b"[\"a\",\"b\"]\n[1,2]\n[1]\n[1,2,3]\n{\"a\":1}\nnull\n"),
        ("auto", b"[{\"a\":1}]\n{\"b\":1}"),
        ("", b"[\"_key\",\"_key\"]\n[\"q1\",\"q2\"]\n"),
        ("", b"[1,2]\n[3,4]\n"), ("", b"[]\n[]\n"), ("", b"[\"a\"]\n" + b"[1]\n" * 20000),
        ("documents", b"{\"_key\":\"d1\"}\n" * 3 + b"{\"_key\":\"d1\",\"_rev\":\"zz\"}"),
        ("zzz", b"{}"), ("documents", b""), ("list", b""), ("list", b"{}"),
    ]
    for typ, body in imports:
        for extra in ("", "&onDuplicate=update", "&onDuplicate=zzz", "&complete=true", "&details=true&onDuplicate=replace",
                      "&fromPrefix=%00&toPrefix=" + "x" * 300, "&overwrite=true"):
            for coll in ("v", "e", "nope"):
                q = f"/_db/hx/_api/import?collection={coll}" + (f"&type={typ}" if typ else "") + extra
                hostile.raw_request("POST", q, body, {"Content-Type": "application/json"})
    hostile.settle("batch and import")


def test_06_gharial_and_indexes(hostile):
    s = hostile
    defs = [
        {"name": "g1", "edgeDefinitions": [{"collection": "e", "from": ["v"], "to": ["v"]}, {"collection": "e", "from": ["v"], "to": ["v"]}]},
        {"name": "g2", "edgeDefinitions": [{"collection": "e", "from": ["e"], "to": ["e"]}]},
        {"name": "g3", "edgeDefinitions": [{"collection": "v", "from": ["v"], "to": ["v"]}]},
        {"name": "g4", "edgeDefinitions": [{"collection": "e4", "from": ["v4"], "to": ["v4"]}], "orphanCollections": ["v4", "e4"]},
        {"name": "g5", "edgeDefinitions": [{"collection": "e5", "from": ["e5"], "to": ["v5"]}]},
        {"name": "g6", "edgeDefinitions": [{"collection": "e6", "from": [], "to": []}]},
        {"name": "g7", "edgeDefinitions": [{"collection": "e7", "from": ["v7", "v7"], "to": ["v7"]}], "orphanCollections": ["v7"]},
        {"name": "g8", "edgeDefinitions": [{"collection": "", "from": [""], "to": ["/"]}]},
        {"name": "g9", "edgeDefinitions": [{"collection": "e9", "from": "v9", "to": {"x": 1}}]},
        {"name": "g10", "edgeDefinitions": [{"collection": "e10", "from": ["v10"], "to": ["v10"]}], "orphanCollections": ["e10", "o10", "o10"]},
        {"name": "g11", "edgeDefinitions": [{"collection": "_users", "from": ["_graphs"], "to": ["_graphs"]}]},
        {"name": "g12", "edgeDefinitions": [{"collection": "e12", "from": ["v12"], "to": ["v12"]}] * 1000},
        {"name": "g13", "edgeDefinitions": [{"collection": f"e13_{i}", "from": ["v13"], "to": ["v13"]} for i in range(60)]},
        {"name": "g14", "edgeDefinitions": [{"collection": "e14", "from": ["v14"], "to": ["v14"]}], "options": {"satellites": 1, "numberOfShards": -1}},
        {"name": "g1/x", "edgeDefinitions": []}, {"name": "", "edgeDefinitions": []}, {"name": "g15"},
        {"name": "g16", "edgeDefinitions": None}, {"name": "g17", "edgeDefinitions": [None, 1, "x"]},
    ]
    for d in defs:
        s.req("POST", "/_db/hx/_api/gharial", json=d, what=f"gharial {str(d)[:100]}")
    # Self-referencing edge definition: edges whose collection is also their vertex collection.
    s.req("POST", "/_db/hx/_api/gharial/g5/edge/e5", json={"_from": "e5/x", "_to": "v5/y"})
    s.req("POST", "/_db/hx/_api/gharial/g5/vertex/v5", json={"_key": "y"})
    s.req("POST", "/_db/hx/_api/gharial/g5/edge/e5", json={"_from": "v5/y", "_to": "v5/y"})
    for path in ["/_db/hx/_api/gharial/g5/edge/e5", "/_db/hx/_api/gharial/g5/edge", "/_db/hx/_api/gharial/g5/vertex",
                 "/_db/hx/_api/gharial/g5/vertex/v5?dropCollection=true", "/_db/hx/_api/gharial/g5/edge/e5?dropCollections=true",
                 "/_db/hx/_api/gharial/g4?dropCollections=true", "/_db/hx/_api/gharial/g5?dropCollections=true"]:
        for m, body in (("POST", {"collection": "v5", "from": ["v5"], "to": ["v5"]}), ("PUT", {"collection": "e5", "from": "v5", "to": ["v5"]}),
                        ("DELETE", None), ("GET", None), ("PATCH", {"x": 1})):
            s.req(m, path, json=body)
    s.req("POST", "/_db/hx/_api/collection", json={"name": "iv"})
    s.req("POST", "/_db/hx/_api/document/iv", json=[{"a": [1, {"b": i}], "c": {"d": [i]}} for i in range(20)])
    idefs = [
        {"type": "persistent", "fields": []}, {"type": "persistent", "fields": ["a[*]"]},
        {"type": "persistent", "fields": ["a[*].b"]}, {"type": "persistent", "fields": ["[*]"]},
        {"type": "persistent", "fields": ["a[*][*]"]}, {"type": "persistent", "fields": ["a[*].b[*]"]},
        {"type": "persistent", "fields": ["a.[*]"]}, {"type": "persistent", "fields": ["a[*"]},
        {"type": "persistent", "fields": ["a", "a"]}, {"type": "persistent", "fields": [f"f{i}" for i in range(1000)]},
        {"type": "persistent", "fields": [""]}, {"type": "persistent", "fields": ["."]}, {"type": "persistent", "fields": ["a..b"]},
        {"type": "persistent", "fields": [1]}, {"type": "persistent", "fields": "a"}, {"type": "persistent", "fields": None},
        {"type": "persistent", "fields": ["_key"], "unique": True}, {"type": "persistent", "fields": ["_id"]},
        {"type": "persistent", "fields": ["c.d[*]"], "unique": True, "sparse": "yes"},
        {"type": "persistent", "fields": ["a"], "storedValues": ["a", "a", 1]}, {"type": "persistent", "fields": ["a"], "name": "/"},
        {"type": "persistent", "fields": ["a"], "name": "x" * 1000}, {"type": "persistent", "fields": ["a"], "estimates": "no"},
        {"type": "hash", "fields": ["a"]}, {"type": "skiplist", "fields": ["a"]}, {"type": "primary", "fields": ["_key"]},
        {"type": "edge", "fields": ["_from"]}, {"type": "ttl", "fields": ["t"], "expireAfter": -1},
        {"type": "ttl", "fields": ["t", "u"], "expireAfter": 1}, {"type": "geo", "fields": ["a", "b", "c"]},
        {"type": "geo", "fields": ["a[*]"]}, {"type": "fulltext", "fields": ["a", "b"]}, {"type": "fulltext", "fields": ["a"], "minLength": -5},
        {"type": "zkd", "fields": ["a"]}, {"type": "inverted", "fields": [{"name": 1}]}, {"type": "", "fields": ["a"]},
        {"type": None}, {"fields": ["a"]}, {"type": "persistent", "fields": ["a"], "inBackground": "x", "deduplicate": 3},
    ]
    for d in idefs:
        s.req("POST", "/_db/hx/_api/index?collection=iv", json=d, what=f"index {str(d)[:100]}")
    s.req("POST", "/_db/hx/_api/document/iv", json=[{"a": [1, {"b": i}], "c": {"d": [i, i]}} for i in range(5)])
    s.req("POST", "/_db/hx/_api/cursor", json={"query": "FOR d IN iv FILTER 1 IN d.a[*] AND d.c.d[*] ANY == 3 SORT d.a RETURN d"})
    r = s.req("GET", "/_db/hx/_api/index?collection=iv")
    for idx in r.json().get("indexes", []):
        s.req("GET", "/_db/hx/_api/index/" + idx["id"])
    for bad in ["iv/0", "iv/abc", "iv/", "nope/1", "iv/99999999999999999999", "x", "iv/1/2"]:
        s.req("GET", "/_db/hx/_api/index/" + bad)
        s.req("DELETE", "/_db/hx/_api/index/" + bad)
    s.settle("gharial and indexes")


def test_07_concurrent_drops_while_writing(hostile):
    s = hostile
    url = s.server.url
    stop = threading.Event()
    errors = []

    def writer(db, coll, seed):
        sess = requests.Session()
        sess.auth = ROOT
        rng = random.Random(seed)
        for i in range(300):
            if stop.is_set():
                return
            try:
                op = rng.randrange(5)
                if op == 0:
                    r = sess.post(f"{url}/_db/{db}/_api/document/{coll}", json=[{"i": i}] * 10, timeout=TIMEOUT)
                elif op == 1:
                    r = sess.post(f"{url}/_db/{db}/_api/cursor", json={"query": f"FOR i IN 1..20 INSERT {{i}} INTO {coll} RETURN NEW._key"}, timeout=TIMEOUT)
                elif op == 2:
                    r = sess.post(f"{url}/_db/{db}/_api/import?collection={coll}&type=documents", data=b"{\"a\":1}\n" * 20, timeout=TIMEOUT)
                elif op == 3:
                    r = sess.post(f"{url}/_db/{db}/_api/cursor", json={"query": f"FOR d IN {coll} LIMIT 50 RETURN d", "batchSize": 5}, timeout=TIMEOUT)
                    if r.status_code == 201 and r.json().get("hasMore"):
                        r = sess.put(f"{url}/_db/{db}/_api/cursor/{r.json()['id']}", timeout=TIMEOUT)
                else:
                    r = sess.post(f"{url}/_db/{db}/_api/index?collection={coll}", json={"type": "persistent", "fields": ["i"]}, timeout=TIMEOUT)
                if r.status_code >= 500:
                    errors.append(f"{r.status_code} {r.text[:200]}")
            except requests.RequestException as e:
                errors.append(f"transport {e}")

    for round_ in range(3):
        dbn = f"hd{round_}"
        requests.post(f"{url}/_api/database", json={"name": dbn}, auth=ROOT, timeout=TIMEOUT)
        for c in ("a", "b"):
            requests.post(f"{url}/_db/{dbn}/_api/collection", json={"name": c}, auth=ROOT, timeout=TIMEOUT)
        threads = [threading.Thread(target=writer, args=(dbn, c, SEED * 100 + round_ * 10 + k)) for k, c in enumerate(("a", "b", "a"))]
        for t in threads:
            t.start()
        sess = requests.Session()
        for _ in range(5):
            for c in ("a", "b"):
                s.req("PUT", f"/_db/{dbn}/_api/collection/{c}/truncate")
                s.req("DELETE", f"/_db/{dbn}/_api/collection/{c}")
                s.req("POST", f"/_db/{dbn}/_api/collection", json={"name": c})
        s.req("DELETE", f"/_api/database/{dbn}")
        s.req("POST", "/_api/database", json={"name": dbn})
        s.req("DELETE", f"/_api/database/{dbn}")
        stop.set()
        for t in threads:
            t.join(60)
            assert not t.is_alive(), "writer hung"
        stop.clear()
        sess.close()
    assert not errors, "\n".join(errors[:20])
    s.settle("concurrent drops")


def test_08_restart_keeps_control(hostile):
    hostile.server.restart()
    hostile.session = requests.Session()
    hostile.session.auth = ROOT
    hostile.settle("restart")


def test_09_integral_doubles_render_like_arangodb(hostile):
    # ArangoDB prints the double 1.0 as `1` in document reads and AQL results.
    url = hostile.server.url
    r = requests.post(url + "/_db/hx/_api/document/v", data=b'{"_key":"dbl","x":1.0,"y":2.5}', auth=ROOT, timeout=TIMEOUT)
    assert r.status_code in (201, 202), r.text
    r = requests.get(url + "/_db/hx/_api/document/v/dbl", auth=ROOT, timeout=TIMEOUT)
    assert b'"x":1,' in r.content and b'"y":2.5' in r.content, r.content
    r = requests.post(url + "/_db/hx/_api/cursor", data=b'{"query":"RETURN [1.0, @v]","bindVars":{"v":4.0}}', auth=ROOT, timeout=TIMEOUT)
    assert b'"result":[[1,4]]' in r.content, r.content


# -- HTTP/1.1 framing and connection limits ---------------------------------------------------

def _read_responses(sock, limit=10):
    """Reads complete HTTP/1.1 responses (Content-Length or chunked) from `sock` until it
    closes, times out or `limit` responses arrived; returns [(status, headers, body)]."""
    buf = b""
    out = []
    closed = False

    def fill():
        nonlocal buf, closed
        try:
            c = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            c = b""
        if not c:
            closed = True
        buf += c

    while len(out) < limit:
        while b"\r\n\r\n" not in buf and not closed:
            fill()
        if b"\r\n\r\n" not in buf:
            break
        head, _, rest = buf.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        headers = {}
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            headers[k.strip().lower()] = v.strip()
        if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            while b"\r\n0\r\n\r\n" not in rest and not rest.startswith(b"0\r\n\r\n") and not closed:
                buf = head + b"\r\n\r\n" + rest
                fill()
                head, _, rest = buf.partition(b"\r\n\r\n")
            end = rest.find(b"0\r\n\r\n") + 5 if rest.startswith(b"0\r\n\r\n") else rest.find(b"\r\n0\r\n\r\n") + 7
            body, buf = _dechunk(rest[:end]), rest[end:]
        else:
            length = int(headers.get(b"content-length", b"0"))
            while len(rest) < length and not closed:
                buf = head + b"\r\n\r\n" + rest
                fill()
                head, _, rest = buf.partition(b"\r\n\r\n")
            body, buf = rest[:length], rest[length:]
        out.append((status, headers, body))
    return out


def _connect(server, timeout=TIMEOUT):
    return socket.create_connection(("127.0.0.1", server.port), timeout=timeout)


def _post(path, body, extra=b""):
    return (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\n" + extra
            + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def test_10_pipelined_answers_come_before_the_refusal(hostile):
    """Every pipelined request that was executed is answered, in order, before the 400 for a
    malformed one that follows it in the same packet, and before the close."""
    key = "pipelined-" + uuid.uuid4().hex[:8]
    for closing in (b"", b"Connection: close\r\n"):
        data = with_root_credentials(
            _post(b"/_db/hx/_api/document/v", json.dumps({"_key": key + str(len(closing))}).encode())
            + b"GET /_api/version HTTP/1.1\r\nHost: x\r\n\r\n"
        ) + b"GET /_api/version HTTP/1.1\r\nBad Header\r\n" + closing + b"\r\n"
        with _connect(hostile.server) as s:
            s.sendall(data)
            got = _read_responses(s)
        assert [g[0] for g in got] == [202, 200, 400], [(g[0], g[2][:100]) for g in got]
        assert json.loads(got[0][2])["_key"] == key + str(len(closing))
        assert json.loads(got[1][2])["server"] == "arango"
        env = json.loads(got[2][2])
        assert env["error"] is True and env["code"] == 400, env
    hostile.settle("pipelined before malformed")


def test_11_half_close_after_a_complete_request_is_answered(hostile):
    for data in (b"GET /_api/version HTTP/1.1\r\nHost: x\r\n\r\n",
                 _post(b"/_db/hx/_api/cursor", b'{"query":"RETURN SLEEP(0.2) || 7"}')):
        with _connect(hostile.server) as s:
            s.sendall(with_root_credentials(data))
            s.shutdown(socket.SHUT_WR)
            got = _read_responses(s)
        assert len(got) == 1 and got[0][0] in (200, 201), got


def test_12_invalid_chunk_size_is_answered_400(hostile):
    for chunks in (b"zz\r\nabc\r\n0\r\n\r\n", b"3\r\n{}}xx\r\n0\r\n\r\n", b"ffffffffffffffffffff\r\n"):
        data = with_root_credentials(
            b"POST /_db/hx/_api/cursor HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        ) + chunks
        with _connect(hostile.server) as s:
            s.sendall(data)
            got = _read_responses(s)
        assert len(got) == 1 and got[0][0] == 400, (chunks, got)
        env = json.loads(got[0][2])
        assert env["error"] is True and env["errorNum"] == 400, env
    hostile.settle("invalid chunk size")


def test_13_too_many_header_fields_get_a_true_message(hostile):
    headers = b"".join(b"X-H%d: v\r\n" % i for i in range(150))
    with _connect(hostile.server) as s:
        s.sendall(with_root_credentials(b"GET /_api/version HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n"))
        got = _read_responses(s)
    assert len(got) == 1 and got[0][0] == 431, got
    env = json.loads(got[0][2])
    assert env["errorNum"] == 431 and "header fields" in env["errorMessage"], env
    assert "bytes" not in env["errorMessage"], env
    hostile.settle("too many headers")


def test_14_slow_and_idle_connections_are_closed(tmp_root):
    """With short timeouts set by flags: 200 connections dribbling a request head
    (slowloris), an idle keep-alive connection, a silent new connection and a stalled body
    are all closed after their timeout, and the server keeps serving."""
    srv = Server(tmp_root / ("timeouts-" + uuid.uuid4().hex[:6]), extra_args=[
        "--http.keep-alive-timeout", "1.5",
        "--http.request-header-timeout", "1",
        "--http.request-body-timeout", "1",
    ]).start()
    try:
        import time
        # Slowloris: a head begun and never finished, one more header every 0.2 s.
        dribblers = [_connect(srv, timeout=5) for _ in range(200)]
        for s in dribblers:
            s.sendall(with_root_credentials(b"GET /_api/version HTTP/1.1\r\nHost: x\r\n"))
        started = time.time()
        open_ = set(range(len(dribblers)))
        while open_ and time.time() - started < 8:
            for i in list(open_):
                try:
                    dribblers[i].sendall(b"X-Slow: 1\r\n")
                except OSError:
                    open_.discard(i)
            time.sleep(0.2)
        took = time.time() - started
        for s in dribblers:
            s.close()
        assert not open_, f"{len(open_)} dribbling connections still open after {took:.1f} s"
        assert took >= 0.9, took

        # An idle keep-alive connection: answered, then closed after the keep-alive timeout.
        with _connect(srv) as s:
            s.sendall(with_root_credentials(b"GET /_api/version HTTP/1.1\r\nHost: x\r\n\r\n"))
            got = _read_responses(s, limit=1)
            assert got and got[0][0] == 200, got
            idle_from = time.time()
            assert s.recv(1) == b""
            idle = time.time() - idle_from
        assert 1.2 <= idle <= 6, idle

        # A new connection that sends nothing.
        with _connect(srv) as s:
            silent_from = time.time()
            assert s.recv(1) == b""
            assert time.time() - silent_from <= 6

        # A body that stalls: 408, then the close.
        with _connect(srv) as s:
            s.sendall(with_root_credentials(
                b"POST /_db/_system/_api/cursor HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"query\":"))
            got = _read_responses(s)
        assert len(got) == 1 and got[0][0] == 408, got
        assert json.loads(got[0][2])["errorNum"] == 408

        # The server still answers normally.
        r = requests.get(srv.url + "/_api/version", auth=ROOT, timeout=TIMEOUT)
        assert r.status_code == 200
    finally:
        srv.stop()


def test_15_accept_failures_back_off_and_log_once(tmp_root):
    """When the server runs out of file descriptors, failed accepts are logged once for the
    burst (and once when accepting works again), not many times a second, and the server
    recovers when descriptors are free again."""
    import shutil
    import subprocess
    import time
    if not shutil.which("prlimit"):
        pytest.fail("prlimit (util-linux) is needed for this test")
    srv = Server(tmp_root / ("emfile-" + uuid.uuid4().hex[:6])).start()
    try:
        open_fds = len(os.listdir(f"/proc/{srv.proc.pid}/fd"))
        limit = open_fds + 20
        subprocess.run(["prlimit", "--pid", str(srv.proc.pid), f"--nofile={limit}:{limit}"], check=True)
        held = []
        for _ in range(60):
            try:
                held.append(_connect(srv, timeout=2))
            except OSError:
                break
        # The kernel keeps accepting into the backlog; the server's accepts fail meanwhile.
        time.sleep(3)
        failures = [line for line in srv.output if "accept failed" in line]
        assert len(failures) == 1, failures
        for s in held:
            s.close()
        time.sleep(2.5)
        r = requests.get(srv.url + "/_api/version", auth=ROOT, timeout=TIMEOUT)
        assert r.status_code == 200
        assert any("accepting connections again after" in line for line in srv.output), srv.output[-5:]
        # Draining the backlog may start one more short burst; each burst is logged once
        # when it starts and once when it ends, never per failed accept.
        bursts = len([line for line in srv.output if "accept failed" in line])
        recoveries = len([line for line in srv.output if "accepting connections again after" in line])
        assert 1 <= bursts <= recoveries + 1 and bursts <= 3, srv.output[-8:]
    finally:
        srv.stop()


def _memory_mib(srv, field):
    status = open(f"/proc/{srv.proc.pid}/status").read()
    return int(status.split(field + ":")[1].split()[0]) // 1024


def test_16_held_results_stay_under_their_caps(tmp_root):
    """Cursors left open, async results never fetched and one large import of tiny documents
    (docs/benchmarks/reliability.md "Held results"): with small caps set by flags, the
    requests past a cap get 500/32 while another user is still served, and what the import
    holds above the stored documents stays a small multiple of its body."""
    import time
    srv = Server(tmp_root / ("held-" + uuid.uuid4().hex[:6]), extra_args=[
        "--query.cursors-memory-limit-per-user", "40MiB",
        "--server.async-results-memory-limit-per-user", "2MiB",
    ]).start()
    s = requests.Session()
    s.auth = ROOT
    u = srv.url
    try:
        # 500,000 documents of 8 bytes (4 MB): the import used to peak at about 80 times that.
        s.post(u + "/_api/collection", json={"name": "tiny"}, timeout=TIMEOUT)
        before = _memory_mib(srv, "VmRSS")
        body = b'{"a":1}\n' * 500_000
        r = s.post(u + "/_api/import", params={"collection": "tiny", "type": "documents"},
                   data=body, timeout=300)
        assert r.status_code == 201 and r.json()["created"] == 500_000, r.text
        # What the stored documents keep (index, mapped log) stays; what the request held
        # alone is the peak above that.
        transient = _memory_mib(srv, "VmHWM") - _memory_mib(srv, "VmRSS")
        assert transient < 25 * len(body) // (1 << 20), f"the request held {transient} MiB for a 4 MB body"
        assert _memory_mib(srv, "VmRSS") > before

        # 1,000,000 numbers are estimated at 16 MB: root can keep two such cursors open.
        got = []
        for _ in range(4):
            r = s.post(u + "/_api/cursor", json={"query": "FOR i IN 1..1000000 RETURN i", "batchSize": 1},
                       timeout=120)
            got.append((r.status_code, r.json().get("errorNum")))
        assert got[:2] == [(201, None), (201, None)], got
        assert got[2:] == [(500, 32), (500, 32)], got
        r = s.post(u + "/_api/user", json={"user": "ann", "passwd": "ann"}, timeout=TIMEOUT)
        assert r.status_code == 201, r.text
        r = s.put(u + "/_api/user/ann/database/_system", json={"grant": "rw"}, timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        r = requests.post(u + "/_api/cursor", auth=("ann", "ann"), timeout=120,
                          json={"query": "FOR i IN 1..1000000 RETURN i", "batchSize": 1})
        assert r.status_code == 201, "another user is not blocked"

        # Async results of about 700 KB: the third does not fit in 2 MiB and answers 32.
        ids = []
        for _ in range(4):
            r = s.post(u + "/_api/cursor", headers={"x-arango-async": "store"}, timeout=TIMEOUT,
                       json={"query": "RETURN (FOR i IN 1000000..1100000 RETURN i)"})
            assert r.status_code == 202, r.text
            ids.append(r.headers["x-arango-async-id"])
            deadline = time.time() + 60
            while s.get(u + f"/_api/job/{ids[-1]}", timeout=TIMEOUT).status_code != 200:
                assert time.time() < deadline
                time.sleep(0.05)
        answers = [s.put(u + f"/_api/job/{i}", timeout=TIMEOUT) for i in ids]
        assert [a.status_code for a in answers[:2]] == [201, 201]
        assert [(a.status_code, a.json()["errorNum"]) for a in answers[2:]] == [(500, 32)] * 2

    finally:
        srv.stop()
