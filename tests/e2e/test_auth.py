"""End-to-end: authentication, users and permissions against the real binary.

One server of its own (root password from ARANGODB_DEFAULT_ROOT_PASSWORD, secrets from a
folder) drives a permission matrix: route families x callers, with raw HTTP, batch parts and
AQL included; python-arango logs in with a password, with a JWT from /_open/auth and with a
superuser JWT; users and grants survive a restart; the JWT secrets rotate through the folder
and the reload endpoint.
"""
import base64
import hashlib
import time
import uuid

import jwt
import pytest
import requests
from arango import ArangoClient
from arango.exceptions import ArangoServerError

from conftest import Server

ROOT_PASSWORD = "r00t-pw"
SECRET_1 = "first-secret-of-the-e2e-server-0123456789"
SECRET_2 = "second-secret-of-the-e2e-server-0123456789"


def printed(srv, text, wait=5.0):
    """Whether the server printed `text` (its startup line or, within `wait` seconds, after)."""
    deadline = time.time() + wait
    while True:
        if any(text in line for line in srv.startup + srv.output):
            return True
        if time.time() > deadline:
            return False
        time.sleep(0.1)


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def token(secret, **claims):
    now = int(time.time())
    payload = {"iss": "arangodb", "iat": now, "exp": now + 3600, **claims}
    return jwt.encode(payload, secret, algorithm="HS256")


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    root = tmp_path_factory.mktemp("auth")
    folder = root / "secrets"
    folder.mkdir()
    (folder / "a").write_text(SECRET_1 + "\n")
    srv = Server(
        root / "db",
        extra_args=["--server.jwt-secret-folder", str(folder)],
        env={"ARANGODB_DEFAULT_ROOT_PASSWORD": ROOT_PASSWORD},
    ).start()
    srv.secret_folder = folder
    yield srv
    srv.stop()


def call(srv, method, path, auth=None, **kw):
    headers = kw.pop("headers", {})
    if auth:
        headers["Authorization"] = auth
    return requests.request(method, srv.url + path, headers=headers, timeout=30, **kw)


def test_unauthenticated_requests_get_arangodb_s_401(secured):
    r = call(secured, "GET", "/_api/version")
    assert r.status_code == 401
    assert r.json() == {
        "code": 401,
        "error": True,
        "errorMessage": "not authorized to execute this request",
        "errorNum": 11,
    }
    challenges = r.raw.headers.getlist("WWW-Authenticate")
    assert challenges == ['Basic, realm="ArangoDB"', 'Bearer, token_type="JWT", realm="ArangoDB"']
    r = call(secured, "GET", "/_api/version", headers={"x-omit-www-authenticate": "1"})
    assert r.status_code == 401 and "WWW-Authenticate" not in r.headers
    # Wrong credentials are answered the same way, whatever is wrong.
    for auth in [basic("root", "nope"), basic("nobody", ""), "Bearer x.y.z", "Digest abc", "Basic %%%"]:
        r = call(secured, "GET", "/_api/version", auth=auth)
        assert r.status_code == 401 and r.json()["errorNum"] == 11, auth
    # The root password came from the environment; the empty one is wrong.
    assert call(secured, "GET", "/_api/version", auth=basic("root", "")).status_code == 401
    assert call(secured, "GET", "/_api/version", auth=basic("root", ROOT_PASSWORD)).status_code == 200
    assert not printed(secured, "empty password", wait=0.5)


def test_open_endpoints_need_no_credentials(secured):
    # The documented list (docs/design/security.md): /_open/*, availability, OPTIONS.
    assert call(secured, "GET", "/_admin/server/availability").status_code == 200
    assert call(secured, "GET", "/_admin/server/availability", auth=basic("x", "y")).status_code == 200
    assert call(secured, "OPTIONS", "/_api/document/x").status_code == 200
    r = call(secured, "POST", "/_open/auth", json={"username": "root", "password": "bad"})
    assert r.status_code == 401 and r.json()["errorNum"] == 401
    assert call(secured, "POST", "/_open/auth", json={"username": "root"}).status_code == 400
    r = call(secured, "POST", "/_open/auth", json={"username": "root", "password": ROOT_PASSWORD})
    assert r.status_code == 200
    claims = jwt.decode(r.json()["jwt"], SECRET_1, algorithms=["HS256"])
    assert claims["preferred_username"] == "root" and claims["iss"] == "arangodb"
    assert claims["exp"] - claims["iat"] == 3600
    bearer = "bearer " + r.json()["jwt"]
    assert call(secured, "GET", "/_api/version", auth=bearer).status_code == 200
    # Everything else needs credentials.
    for method, path in [("GET", "/_admin/status"), ("GET", "/_api/database/user"),
                         ("GET", "/_api/user"), ("POST", "/_api/cursor"), ("GET", "/_admin/server/jwt")]:
        assert call(secured, method, path).status_code == 401, path


@pytest.fixture(scope="module")
def matrix_setup(secured):
    sys_db = ArangoClient(hosts=secured.url).db("_system", username="root", password=ROOT_PASSWORD)
    sys_db.create_database("shop")
    shop = ArangoClient(hosts=secured.url).db("shop", username="root", password=ROOT_PASSWORD)
    shop.create_collection("orders").insert({"_key": "k1", "x": 1})
    shop.create_collection("secret").insert({"_key": "s1"})
    for name in ["none_u", "ro_u", "rw_u", "mixed_u"]:
        sys_db.create_user(name, "pw")
    sys_db.update_permission("ro_u", "ro", "shop")
    sys_db.update_permission("rw_u", "rw", "shop")
    # Database access, read-write on orders only, nothing on secret.
    sys_db.update_permission("mixed_u", "ro", "shop")
    sys_db.update_permission("mixed_u", "rw", "shop", "orders")
    sys_db.update_permission("mixed_u", "none", "shop", "secret")
    # A graph that reaches the hidden collection through its edge definition.
    shop.create_graph("hidden_graph", edge_definitions=[{
        "edge_collection": "hidden_links", "from_vertex_collections": ["orders"],
        "to_vertex_collections": ["secret"]}])
    shop.collection("hidden_links").insert({"_from": "orders/k1", "_to": "secret/s1"})
    # A vertex with an edge, removed through the graph by the matrix.
    shop.collection("orders").insert({"_key": "v9"})
    shop.collection("hidden_links").insert({"_from": "orders/v9", "_to": "orders/k1"})
    now = int(time.time())
    return {
        "none": basic("none_u", "pw"),
        "ro": basic("ro_u", "pw"),
        "rw": basic("rw_u", "pw"),
        "mixed": basic("mixed_u", "pw"),
        "admin": basic("root", ROOT_PASSWORD),
        "superuser": "bearer " + token(SECRET_1, server_id="e2e"),
        "wrong password": basic("rw_u", "nope"),
        "expired token": "bearer "
        + jwt.encode({"iss": "arangodb", "iat": now - 7200, "exp": now - 3600,
                      "preferred_username": "rw_u"}, SECRET_1, algorithm="HS256"),
        "forged token": "bearer " + token("not-the-secret-of-the-e2e-server-0123456789", preferred_username="root"),
        "no credentials": None,
    }


def batch_body(*parts):
    out = []
    for i, part in enumerate(parts):
        out.append(f"--XB\r\nContent-Type: application/x-arango-batchpart\r\nContent-Id: {i}\r\n\r\n{part}\r\n")
    return "".join(out) + "--XB--\r\n"


def part_statuses(response):
    return [int(line.split(" ")[1]) for line in response.text.split("\r\n") if line.startswith("HTTP/1.1 ")]


def unique_name(prefix):
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


# Route family -> (method, path, body) and the expected status per caller; callers missing
# from a row get 401 (no or bad credentials). "none" has no access to shop.
# 403 with ArangoDB's READ_ONLY (1004): a document write with `ro` rights on the collection.
RO_WRITE = (403, 1004)
ALLOWED_ALL = {"none": 401, "ro": 200, "rw": 200, "mixed": 200, "admin": 200, "superuser": 200}
MATRIX = [
    ("version", "GET", "/_db/shop/_api/version", None, ALLOWED_ALL),
    ("admin status", "GET", "/_db/shop/_admin/status", None, ALLOWED_ALL),
    ("list collections", "GET", "/_db/shop/_api/collection", None, ALLOWED_ALL),
    ("create collection", "POST", "/_db/shop/_api/collection", lambda: {"name": unique_name("c")},
     {"none": 401, "ro": 403, "rw": 200, "mixed": 403, "admin": 200, "superuser": 200}),
    ("collection count", "GET", "/_db/shop/_api/collection/orders/count", None, ALLOWED_ALL),
    ("count of a hidden collection", "GET", "/_db/shop/_api/collection/secret/count", None,
     {"none": 401, "ro": 200, "rw": 200, "mixed": 403, "admin": 200, "superuser": 200}),
    ("read document", "GET", "/_db/shop/_api/document/orders/k1", None, ALLOWED_ALL),
    ("read hidden document", "GET", "/_db/shop/_api/document/secret/s1", None,
     {"none": 401, "ro": 200, "rw": 200, "mixed": 403, "admin": 200, "superuser": 200}),
    # After the reads of secret/s1, which it removes.
    # A write with `ro` rights on the collection is 403/1004 (READ_ONLY); without any
    # rights 403/11.
    ("truncate", "PUT", "/_db/shop/_api/collection/secret/truncate", None,
     {"none": 401, "ro": RO_WRITE, "rw": 200, "mixed": 403, "admin": 200, "superuser": 200}),
    ("insert document", "POST", "/_db/shop/_api/document/orders", lambda: {"v": 1},
     {"none": 401, "ro": RO_WRITE, "rw": 202, "mixed": 202, "admin": 202, "superuser": 202}),
    ("insert via ?collection=", "POST", "/_db/shop/_api/document?collection=secret", lambda: {"v": 1},
     {"none": 401, "ro": RO_WRITE, "rw": 202, "mixed": 403, "admin": 202, "superuser": 202}),
    ("import", "POST", "/_db/shop/_api/import?collection=orders&type=documents", lambda: {"v": 2},
     {"none": 401, "ro": RO_WRITE, "rw": 201, "mixed": 201, "admin": 201, "superuser": 201}),
    ("list indexes", "GET", "/_db/shop/_api/index?collection=orders", None, ALLOWED_ALL),
    ("create index", "POST", "/_db/shop/_api/index?collection=orders",
     lambda: {"type": "persistent", "fields": ["v"]},
     # rw creates it (201); later callers find it (200).
     {"none": 401, "ro": 403, "rw": 201, "mixed": 403, "admin": 200, "superuser": 200}),
    ("read query", "POST", "/_db/shop/_api/cursor", lambda: {"query": "FOR d IN orders LIMIT 1 RETURN 1"},
     {"none": 401, "ro": 201, "rw": 201, "mixed": 201, "admin": 201, "superuser": 201}),
    # Database access and read-write on the collection suffice to write with AQL.
    ("modification query", "POST", "/_db/shop/_api/cursor",
     lambda: {"query": "INSERT {v: 3} INTO orders RETURN NEW._key"},
     {"none": 401, "ro": RO_WRITE, "rw": 201, "mixed": 201, "admin": 201, "superuser": 201}),
    ("query reading a hidden collection", "POST", "/_db/shop/_api/cursor",
     lambda: {"query": "FOR d IN orders FOR s IN secret RETURN s"},
     {"none": 401, "ro": 201, "rw": 201, "mixed": 403, "admin": 201, "superuser": 201}),
    ("query writing into a hidden collection", "POST", "/_db/shop/_api/cursor",
     lambda: {"query": "FOR d IN @@c INSERT {} INTO @@c", "bindVars": {"@c": "secret"}},
     {"none": 401, "ro": RO_WRITE, "rw": 201, "mixed": 403, "admin": 201, "superuser": 201}),
    ("DOCUMENT() of a hidden collection", "POST", "/_db/shop/_api/cursor",
     lambda: {"query": "RETURN DOCUMENT('secret/s1')"},
     {"none": 401, "ro": 201, "rw": 201, "mixed": 403, "admin": 201, "superuser": 201}),
    ("WITH a hidden collection", "POST", "/_db/shop/_api/cursor",
     lambda: {"query": "WITH secret FOR d IN orders LIMIT 1 RETURN d._key"},
     {"none": 401, "ro": 201, "rw": 201, "mixed": 403, "admin": 201, "superuser": 201}),
    ("traversal over a graph with a hidden vertex collection", "POST", "/_db/shop/_api/cursor",
     lambda: {"query": "FOR v IN 1..2 OUTBOUND 'orders/k1' GRAPH 'hidden_graph' RETURN v"},
     {"none": 401, "ro": 201, "rw": 201, "mixed": 403, "admin": 201, "superuser": 201}),
    ("shortest path over a graph with a hidden vertex collection", "POST", "/_db/shop/_api/cursor",
     lambda: {"query": "FOR v IN OUTBOUND SHORTEST_PATH 'orders/k1' TO 'orders/k1' GRAPH @g RETURN v",
              "bindVars": {"g": "hidden_graph"}},
     {"none": 401, "ro": 201, "rw": 201, "mixed": 403, "admin": 201, "superuser": 201}),
    ("k paths over a graph with a hidden vertex collection", "POST", "/_db/shop/_api/cursor",
     lambda: {"query": "FOR p IN 1..2 OUTBOUND K_PATHS 'orders/k1' TO 'orders/k1' GRAPH 'hidden_graph' RETURN p"},
     {"none": 401, "ro": 201, "rw": 201, "mixed": 403, "admin": 201, "superuser": 201}),
    # Checked while the query runs: collections named only by computed strings or reached
    # over the edges of an anonymous traversal.
    ("DOCUMENT() of a computed handle", "POST", "/_db/shop/_api/cursor",
     lambda: {"query": "RETURN DOCUMENT(CONCAT('sec', 'ret/s1'))"},
     {"none": 401, "ro": 201, "rw": 201, "mixed": 403, "admin": 201, "superuser": 201}),
    ("anonymous traversal into a hidden collection", "POST", "/_db/shop/_api/cursor",
     lambda: {"query": "FOR v IN 1..1 OUTBOUND 'orders/k1' hidden_links RETURN v"},
     {"none": 401, "ro": 201, "rw": 201, "mixed": 403, "admin": 201, "superuser": 201}),
    ("query reading _users", "POST", "/_api/cursor", lambda: {"query": "FOR u IN _users RETURN u"},
     # Callers without access to _system get 401; nobody but the superuser reads _users.
     {"none": 401, "ro": 401, "rw": 401, "mixed": 401, "admin": 403, "superuser": 201}),
    ("constant query", "POST", "/_db/shop/_api/cursor", lambda: {"query": "RETURN 1"},
     {"none": 401, "ro": 201, "rw": 201, "mixed": 201, "admin": 201, "superuser": 201}),
    ("graphs", "GET", "/_db/shop/_api/gharial", None, ALLOWED_ALL),
    ("create graph", "POST", "/_db/shop/_api/gharial", lambda: {"name": unique_name("g")},
     {"none": 401, "ro": 403, "rw": 202, "mixed": 403, "admin": 202, "superuser": 202}),
    ("begin stream transaction", "POST", "/_db/shop/_api/transaction/begin",
     lambda: {"collections": {"read": ["orders"]}},
     {"none": 401, "ro": 201, "rw": 201, "mixed": 201, "admin": 201, "superuser": 201}),
    ("create database", "POST", "/_api/database", lambda: {"name": unique_name("d")},
     {"none": 403, "ro": 403, "rw": 403, "mixed": 403, "admin": 201, "superuser": 201}),
    ("list databases", "GET", "/_api/database", None,
     {"none": 403, "ro": 403, "rw": 403, "mixed": 403, "admin": 200, "superuser": 200}),
    ("databases of the caller", "GET", "/_api/database/user", None,
     {"none": 200, "ro": 200, "rw": 200, "mixed": 200, "admin": 200, "superuser": 200}),
    ("create user", "POST", "/_api/user", lambda: {"user": unique_name("u"), "passwd": "x"},
     {"none": 403, "ro": 403, "rw": 403, "mixed": 403, "admin": 201, "superuser": 201}),
    ("grant", "PUT", "/_api/user/none_u/database/_system", lambda: {"grant": "none"},
     {"none": 403, "ro": 403, "rw": 403, "mixed": 403, "admin": 200, "superuser": 200}),
    ("read own user", "GET", "/_api/user/ro_u", None,
     {"none": 403, "ro": 200, "rw": 403, "mixed": 403, "admin": 200, "superuser": 200}),
    ("jwt secrets", "GET", "/_admin/server/jwt", None,
     {"none": 403, "ro": 403, "rw": 403, "mixed": 403, "admin": 403, "superuser": 200}),
    ("server mode change", "PUT", "/_admin/server/mode", lambda: {"mode": "default"},
     {"none": 403, "ro": 403, "rw": 403, "mixed": 403, "admin": 200, "superuser": 200}),
    # Removing a vertex through a graph removes its edges: mixed may write orders but not the
    # edge collection. rw removes it; later callers find it gone.
    ("remove a vertex with read-only edges", "DELETE", "/_db/shop/_api/gharial/hidden_graph/vertex/orders/v9", None,
     {"none": 401, "ro": RO_WRITE, "rw": 202, "mixed": RO_WRITE, "admin": 404, "superuser": 404}),
]


@pytest.mark.parametrize("family,method,path,body,expected", MATRIX, ids=[row[0] for row in MATRIX])
def test_permission_matrix(secured, matrix_setup, family, method, path, body, expected):
    failures = []
    for caller, auth in matrix_setup.items():
        want = expected.get(caller, 401)
        # A refusal is 403/11 (or 401/11) unless the row names another error number.
        want, want_num = want if isinstance(want, tuple) else (want, 11)
        kw = {"json": body()} if body else {}
        r = call(secured, method, path, auth=auth, **kw)
        if r.status_code != want:
            failures.append(f"{caller}: {r.status_code} (want {want}) {r.text[:160]}")
        elif want in (401, 403) and r.json()["errorNum"] != want_num:
            failures.append(f"{caller}: errorNum {r.json()['errorNum']} (want {want_num}) {r.text[:160]}")
    assert not failures, f"{method} {path}\n" + "\n".join(failures)


def test_batch_parts_run_with_the_callers_rights(secured, matrix_setup):
    insert = "POST /_api/document/orders HTTP/1.1\r\n\r\n{\"b\":1}"
    read = "GET /_api/document/orders/k1 HTTP/1.1\r\n\r\n"
    hidden = "GET /_api/collection/secret/count HTTP/1.1\r\n\r\n"
    # A part's own Authorization header does not raise the caller's rights.
    escalate = f"POST /_api/document/secret HTTP/1.1\r\nAuthorization: {matrix_setup['admin']}\r\n\r\n{{}}"
    body = batch_body(insert, read, hidden, escalate, insert, insert)
    headers = {"Content-Type": "multipart/form-data; boundary=XB"}
    want = {
        "ro": [403, 200, 200, 403, 403, 403],
        "rw": [202, 200, 200, 202, 202, 202],
        "mixed": [202, 200, 403, 403, 202, 202],
        "admin": [202, 200, 200, 202, 202, 202],
    }
    for caller, statuses in want.items():
        r = call(secured, "POST", "/_db/shop/_api/batch", auth=matrix_setup[caller], data=body, headers=dict(headers))
        assert r.status_code == 200, (caller, r.text)
        assert part_statuses(r) == statuses, (caller, r.text)
    for caller in ["none", "no credentials", "forged token"]:
        r = call(secured, "POST", "/_db/shop/_api/batch", auth=matrix_setup[caller], data=body, headers=dict(headers))
        assert r.status_code == 401, caller


def test_async_jobs_run_with_the_callers_rights(secured, matrix_setup):
    r = call(secured, "POST", "/_db/shop/_api/document/orders", auth=matrix_setup["ro"],
             json={}, headers={"x-arango-async": "store"})
    assert r.status_code == 403
    r = call(secured, "POST", "/_db/shop/_api/document/orders", auth=matrix_setup["rw"],
             json={"_key": "async1"}, headers={"x-arango-async": "store"})
    assert r.status_code == 202
    for _ in range(100):
        if call(secured, "GET", "/_db/shop/_api/document/orders/async1", auth=matrix_setup["rw"]).status_code == 200:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the async insert never happened")
    # A stored job's result is only for the caller that queued it.
    r = call(secured, "GET", "/_db/shop/_api/document/orders/k1", auth=matrix_setup["rw"],
             headers={"x-arango-async": "store"})
    assert r.status_code == 202
    job = r.headers["x-arango-async-id"]
    for _ in range(100):
        if call(secured, "GET", f"/_db/shop/_api/job/{job}", auth=matrix_setup["rw"]).status_code == 200:
            break
        time.sleep(0.05)
    assert job in call(secured, "GET", "/_db/shop/_api/job/done", auth=matrix_setup["rw"]).json()
    assert job not in call(secured, "GET", "/_db/shop/_api/job/done", auth=matrix_setup["mixed"]).json()
    for method in ["GET", "PUT", "DELETE"]:
        r = call(secured, method, f"/_db/shop/_api/job/{job}", auth=matrix_setup["mixed"])
        assert r.status_code == 404, (method, r.text)
    call(secured, "DELETE", "/_db/shop/_api/job/all", auth=matrix_setup["mixed"])
    r = call(secured, "PUT", f"/_db/shop/_api/job/{job}", auth=matrix_setup["rw"])
    assert r.status_code == 200 and r.json()["x"] == 1
    # The superuser sees every job.
    r = call(secured, "GET", "/_db/shop/_api/document/orders/k1", auth=matrix_setup["rw"],
             headers={"x-arango-async": "store"})
    job = r.headers["x-arango-async-id"]
    for _ in range(100):
        if call(secured, "GET", f"/_db/shop/_api/job/{job}", auth=matrix_setup["superuser"]).status_code == 200:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the superuser does not see the job")


def test_database_user_lists_only_accessible_databases(secured, matrix_setup):
    def names(caller):
        return call(secured, "GET", "/_api/database/user", auth=matrix_setup[caller]).json()["result"]
    assert names("none") == []
    assert names("ro") == ["shop"]
    assert "_system" in names("admin") and "shop" in names("admin")
    # A non-administrator sees only themself in the user list.
    users = call(secured, "GET", "/_api/user", auth=matrix_setup["ro"]).json()["result"]
    assert [u["user"] for u in users] == ["ro_u"]
    everyone = call(secured, "GET", "/_api/user", auth=matrix_setup["admin"]).json()["result"]
    assert {"root", "ro_u", "rw_u"} <= {u["user"] for u in everyone}
    assert all("passwd" not in u and "authData" not in u for u in everyone)
    # Nobody reads the users collection as documents.
    r = call(secured, "GET", "/_api/collection/_users/count", auth=matrix_setup["admin"])
    assert r.status_code == 403


def test_changes_apply_to_the_next_request(secured, matrix_setup):
    sys_db = ArangoClient(hosts=secured.url).db("_system", username="root", password=ROOT_PASSWORD)
    sys_db.create_user("flip", "one")
    auth = basic("flip", "one")
    assert call(secured, "GET", "/_db/shop/_api/version", auth=auth).status_code == 401
    sys_db.update_permission("flip", "ro", "shop")
    assert call(secured, "GET", "/_db/shop/_api/version", auth=auth).status_code == 200
    sys_db.update_user("flip", password="two")
    assert call(secured, "GET", "/_db/shop/_api/version", auth=auth).status_code == 401
    assert call(secured, "GET", "/_db/shop/_api/version", auth=basic("flip", "two")).status_code == 200
    sys_db.update_user("flip", active=False)
    assert call(secured, "GET", "/_db/shop/_api/version", auth=basic("flip", "two")).status_code == 401
    sys_db.delete_user("flip")
    assert call(secured, "GET", "/_db/shop/_api/version", auth=basic("flip", "two")).status_code == 401


def test_python_arango_logs_in_three_ways(secured, matrix_setup):
    client = ArangoClient(hosts=secured.url)
    # Username and password (HTTP Basic).
    shop = client.db("shop", username="rw_u", password="pw", verify=True)
    assert shop.collection("orders").has("k1")
    # A JWT from /_open/auth, which python-arango fetches and renews.
    shop_jwt = client.db("shop", username="rw_u", password="pw", auth_method="jwt")
    assert shop_jwt.collection("orders").get("k1")["x"] == 1
    with pytest.raises(ArangoServerError) as err:
        client.db("shop", username="ro_u", password="pw", auth_method="jwt").collection("orders").insert({})
    assert err.value.http_code == 403
    # A superuser JWT signed with the server's secret.
    su = client.db("_system", superuser_token=token(SECRET_1, server_id="e2e"))
    assert "shop" in su.databases()
    with pytest.raises(ArangoServerError) as err:
        client.db("_system", superuser_token=token("other-secret-not-known-to-the-server-0123", server_id="e2e")).databases()
    assert err.value.http_code == 401


def test_user_api_round_trip(secured, matrix_setup):
    sys_db = ArangoClient(hosts=secured.url).db("_system", username="root", password=ROOT_PASSWORD)
    created = sys_db.create_user("ann", "pw", active=True, extra={"team": "a"})
    assert created == {"username": "ann", "active": True, "extra": {"team": "a"}}
    with pytest.raises(ArangoServerError) as err:
        sys_db.create_user("ann", "pw")
    assert err.value.http_code == 409 and err.value.error_code == 1702
    sys_db.update_permission("ann", "rw", "shop")
    sys_db.update_permission("ann", "ro", "shop", "orders")
    assert sys_db.permission("ann", "shop") == "rw"
    assert sys_db.permission("ann", "shop", "orders") == "ro"
    assert sys_db.permission("ann", "shop", "secret") == "rw"
    full = call(secured, "GET", "/_api/user/ann/database?full=true", auth=matrix_setup["admin"]).json()["result"]
    assert full["shop"]["permission"] == "rw"
    assert full["shop"]["collections"]["orders"] == "ro"
    assert full["shop"]["collections"]["*"] == "undefined"
    assert full["_system"]["permission"] == "none"
    sys_db.reset_permission("ann", "shop", "orders")
    assert sys_db.permission("ann", "shop", "orders") == "rw"
    r = call(secured, "PUT", "/_api/user/ann/database/shop", auth=matrix_setup["admin"], json={"grant": "all"})
    assert r.status_code == 400
    r = call(secured, "PUT", "/_api/user/ann/database/nodb", auth=matrix_setup["admin"], json={"grant": "ro"})
    assert r.status_code == 404 and r.json()["errorNum"] == 1228
    r = call(secured, "GET", "/_api/user/ghost", auth=matrix_setup["admin"])
    assert r.status_code == 404 and r.json()["errorNum"] == 1703
    r = call(secured, "POST", "/_api/user", auth=matrix_setup["admin"], json={"user": ""})
    assert r.status_code == 400 and r.json()["errorNum"] == 1700
    # A user may change their own password, not their rights.
    r = call(secured, "PATCH", "/_api/user/ann", auth=basic("ann", "pw"), json={"passwd": "pw2"})
    assert r.status_code == 200
    r = call(secured, "PUT", "/_api/user/ann/database/_system", auth=basic("ann", "pw2"), json={"grant": "rw"})
    assert r.status_code == 403
    assert sys_db.delete_user("ann") is True


def test_users_and_grants_survive_a_restart(tmp_path):
    srv = Server(tmp_path / "db").start()
    try:
        assert printed(srv, "empty password"), srv.startup + srv.output
        sys_db = srv.client().db("_system", username="root", password="")
        sys_db.create_database("keep")
        sys_db.create_user("bob", "pw", extra={"k": 1})
        sys_db.update_permission("bob", "ro", "keep")
        sys_db.update_permission("bob", "rw", "keep", "c")
        sys_db.update_user("root", password="new-root")
        secret = (tmp_path / "db" / "jwt-secret").read_text()
        su = token(secret, server_id="e2e")
        srv.restart()
        # The generated secret was kept: the same superuser token works after the restart.
        assert call(srv, "GET", "/_api/database", auth="bearer " + su).status_code == 200
        assert not printed(srv, "empty password", wait=0.5)
        sys_db = srv.client().db("_system", username="root", password="new-root")
        assert sys_db.user("bob")["extra"] == {"k": 1}
        assert sys_db.permission("bob", "keep") == "ro"
        assert sys_db.permission("bob", "keep", "c") == "rw"
        assert call(srv, "GET", "/_db/keep/_api/version", auth=basic("bob", "pw")).status_code == 200
        assert call(srv, "GET", "/_api/version", auth=basic("root", "")).status_code == 401
    finally:
        srv.stop()


def test_jwt_secret_rotation_through_the_folder(secured, matrix_setup):
    def digest(secret):
        return hashlib.sha256(secret.encode()).hexdigest()

    su1 = "bearer " + token(SECRET_1, server_id="e2e")
    user2 = "bearer " + token(SECRET_2, preferred_username="rw_u")
    r = call(secured, "GET", "/_admin/server/jwt", auth=su1)
    assert r.json()["result"] == {"active": {"sha256": digest(SECRET_1)}, "passive": []}
    assert call(secured, "GET", "/_db/shop/_api/version", auth=user2).status_code == 401
    # A second secret verifies once reloaded; the first (by file name) still signs.
    (secured.secret_folder / "b").write_text(SECRET_2)
    r = call(secured, "POST", "/_admin/server/jwt", auth=su1)
    assert r.status_code == 200
    assert r.json()["result"] == {"active": {"sha256": digest(SECRET_1)}, "passive": [{"sha256": digest(SECRET_2)}]}
    assert call(secured, "GET", "/_db/shop/_api/version", auth=user2).status_code == 200
    # Only administrators with a superuser token may reload.
    assert call(secured, "POST", "/_admin/server/jwt", auth=matrix_setup["admin"]).status_code == 403
    # Retire the first secret: its tokens stop working, new logins are signed with the second.
    (secured.secret_folder / "a").unlink()
    assert call(secured, "POST", "/_admin/server/jwt", auth=su1).status_code == 200
    assert call(secured, "GET", "/_api/version", auth=su1).status_code == 401
    issued = call(secured, "POST", "/_open/auth", json={"username": "rw_u", "password": "pw"}).json()["jwt"]
    assert jwt.decode(issued, SECRET_2, algorithms=["HS256"])["preferred_username"] == "rw_u"
    # Restore for the other tests of the module.
    (secured.secret_folder / "a").write_text(SECRET_1)
    (secured.secret_folder / "b").unlink()
    su2 = "bearer " + token(SECRET_2, server_id="e2e")
    assert call(secured, "POST", "/_admin/server/jwt", auth=su2).status_code == 200


def test_login_throttle_refuses_a_guessing_client(tmp_path):
    srv = Server(tmp_path / "db").start()
    try:
        srv.client().db("_system", username="root", password="").create_user("victim", "right")
        # Repeating one wrong password is a single guess: it does not trip the throttle.
        for _ in range(20):
            assert call(srv, "GET", "/_api/database/user", auth=basic("victim", "same")).status_code == 401
        r = call(srv, "POST", "/_open/auth", json={"username": "victim", "password": "right"})
        assert r.status_code == 200
        for guess in range(10):
            r = call(srv, "GET", "/_api/database/user", auth=basic("victim", f"wrong{guess}"))
            assert r.status_code == 401
        # Now even the right password is refused from this client for a while.
        assert call(srv, "GET", "/_api/database/user", auth=basic("victim", "right")).status_code == 401
        r = call(srv, "POST", "/_open/auth", json={"username": "victim", "password": "right"})
        assert r.status_code == 401
        # Credentials verified before the guessing keep working (cached, no new check).
        assert call(srv, "GET", "/_api/database/user", auth=basic("root", "")).status_code == 200
    finally:
        srv.stop()


def test_authentication_off_serves_everyone(tmp_path):
    srv = Server(tmp_path / "db", extra_args=["--server.authentication", "false"]).start()
    try:
        assert call(srv, "GET", "/_api/version").status_code == 200
        assert call(srv, "POST", "/_api/database", json={"name": "open"}).status_code == 201
        # No token service without authentication (ArangoDB answers 404).
        r = call(srv, "POST", "/_open/auth", json={"username": "root", "password": ""})
        assert r.status_code == 404
        assert not printed(srv, "empty password", wait=0.5)
    finally:
        srv.stop()


def test_access_tokens(secured, matrix_setup):
    sys_db = ArangoClient(hosts=secured.url).db("_system", username="root", password=ROOT_PASSWORD)
    sys_db.create_user("svc", "pw")
    sys_db.update_permission("svc", "ro", "shop")
    own = basic("svc", "pw")
    now = int(time.time())
    r = call(secured, "POST", "/_api/token/svc", auth=own, json={"name": "ci", "valid_until": now + 3600})
    assert r.status_code == 200, r.text
    created = r.json()
    secret = created["token"]
    assert created["name"] == "ci" and created["active"] is True and created["valid_until"] == now + 3600
    assert created["fingerprint"] == "v1..." + secret[-6:]
    # The token is the password: Basic, and /_open/auth for a JWT.
    assert call(secured, "GET", "/_db/shop/_api/version", auth=basic("svc", secret)).status_code == 200
    issued = call(secured, "POST", "/_open/auth", json={"username": "svc", "password": secret})
    assert issued.status_code == 200
    assert call(secured, "GET", "/_db/shop/_api/version", auth="bearer " + issued.json()["jwt"]).status_code == 200
    # Listing shows metadata only; names are unique per user; bad bodies are 400.
    listed = call(secured, "GET", "/_api/token/svc", auth=own).json()["tokens"]
    assert listed == [{k: v for k, v in created.items() if k != "token"}]
    r = call(secured, "POST", "/_api/token/svc", auth=own, json={"name": "ci", "valid_until": now + 60})
    assert r.status_code == 409
    for body in [{"name": "x"}, {"name": "", "valid_until": now + 60}, {"name": "x", "valid_until": now - 1}]:
        assert call(secured, "POST", "/_api/token/svc", auth=own, json=body).status_code == 400, body
    # Other users' tokens are for administrators only.
    assert call(secured, "GET", "/_api/token/svc", auth=matrix_setup["ro"]).status_code == 403
    assert call(secured, "GET", "/_api/token/svc", auth=matrix_setup["admin"]).status_code == 200
    assert call(secured, "GET", "/_api/token/ghost", auth=matrix_setup["admin"]).status_code == 404
    # Expiry is honoured, also for a credential that was already accepted (and cached).
    short = call(secured, "POST", "/_api/token/svc", auth=own, json={"name": "short", "valid_until": now + 2}).json()
    assert call(secured, "GET", "/_db/shop/_api/version", auth=basic("svc", short["token"])).status_code == 200
    time.sleep(max(0.0, now + 2.2 - time.time()))
    assert call(secured, "GET", "/_db/shop/_api/version", auth=basic("svc", short["token"])).status_code == 401
    listed = {t["name"]: t for t in call(secured, "GET", "/_api/token/svc", auth=own).json()["tokens"]}
    assert listed["short"]["active"] is False and listed["ci"]["active"] is True
    # Revoking takes effect at once.
    r = call(secured, "DELETE", f"/_api/token/svc/{created['id']}", auth=own)
    assert r.status_code == 200 and r.content == b""
    assert call(secured, "GET", "/_db/shop/_api/version", auth=basic("svc", secret)).status_code == 401
    assert call(secured, "DELETE", f"/_api/token/svc/{created['id']}", auth=own).status_code == 404
    # The password still works.
    assert call(secured, "GET", "/_db/shop/_api/version", auth=own).status_code == 200


def test_database_users_option_and_grants_of_dropped_databases(secured, matrix_setup):
    sys_db = ArangoClient(hosts=secured.url).db("_system", username="root", password=ROOT_PASSWORD)
    sys_db.create_user("carol", "pw")
    assert sys_db.create_database("team", users=[
        {"username": "dave", "password": "pw2"},
        {"username": "carol", "password": "pw"},
    ])
    # Listed users (created when missing) administrate the new database.
    for user, password in [("dave", "pw2"), ("carol", "pw")]:
        assert sys_db.permission(user, "team") == "rw"
        db = ArangoClient(hosts=secured.url).db("team", username=user, password=password)
        db.create_collection(unique_name("c"))
    # Dropping the database drops its grants: a new one of the same name starts closed.
    sys_db.delete_database("team")
    sys_db.create_database("team")
    assert sys_db.permission("carol", "team") == "none"
    assert call(secured, "GET", "/_db/team/_api/version", auth=basic("carol", "pw")).status_code == 401
    r = call(secured, "POST", "/_api/database", auth=matrix_setup["admin"],
             json={"name": "bad_users", "users": [{"username": ""}]})
    assert r.status_code == 400
    assert "bad_users" not in sys_db.databases()


def test_cursors_and_stream_transactions_belong_to_their_creator(secured, matrix_setup):
    rw, other = matrix_setup["rw"], matrix_setup["mixed"]
    r = call(secured, "POST", "/_db/shop/_api/cursor", auth=rw,
             json={"query": "FOR i IN 1..10 RETURN i", "batchSize": 2})
    assert r.status_code == 201 and r.json()["hasMore"] is True
    cursor = r.json()["id"]
    r = call(secured, "POST", f"/_db/shop/_api/cursor/{cursor}", auth=other)
    assert r.status_code == 404 and r.json()["errorNum"] == 1600
    assert call(secured, "DELETE", f"/_db/shop/_api/cursor/{cursor}", auth=other).status_code == 404
    r = call(secured, "POST", f"/_db/shop/_api/cursor/{cursor}", auth=rw)
    assert r.status_code == 200 and r.json()["result"] == [3, 4]
    # Stream transactions: status, operations inside, commit and abort.
    r = call(secured, "POST", "/_db/shop/_api/transaction/begin", auth=rw,
             json={"collections": {"write": ["orders"]}})
    assert r.status_code == 201
    trx = r.json()["result"]["id"]
    assert call(secured, "GET", f"/_db/shop/_api/transaction/{trx}", auth=other).status_code == 404
    r = call(secured, "POST", "/_db/shop/_api/document/orders", auth=other, json={"in": "trx"},
             headers={"x-arango-trx-id": trx})
    assert r.status_code == 404 and r.json()["errorNum"] == 1655
    assert call(secured, "DELETE", f"/_db/shop/_api/transaction/{trx}", auth=other).status_code == 404
    r = call(secured, "POST", "/_db/shop/_api/document/orders", auth=rw, json={"_key": "in_trx"},
             headers={"x-arango-trx-id": trx})
    assert r.status_code in (201, 202), r.text
    r = call(secured, "PUT", f"/_db/shop/_api/transaction/{trx}", auth=rw)
    assert r.status_code == 200 and r.json()["result"]["status"] == "committed"
    assert call(secured, "GET", "/_db/shop/_api/document/orders/in_trx", auth=rw).status_code == 200
    # The superuser may use anything.
    r = call(secured, "POST", "/_db/shop/_api/cursor", auth=rw, json={"query": "FOR i IN 1..4 RETURN i", "batchSize": 1})
    r = call(secured, "POST", f"/_db/shop/_api/cursor/{r.json()['id']}", auth=matrix_setup["superuser"])
    assert r.status_code == 200
