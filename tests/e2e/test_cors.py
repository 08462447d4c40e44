"""CORS with --http.trusted-origin over raw HTTP, authentication on: only a trusted origin
gets Access-Control-Allow-Credentials: true, and a cross-origin request without credentials
(a form-style text/plain POST) is refused with 401 and writes nothing."""

import requests

from conftest import ROOT, Server, unique

TRUSTED = "http://app.test"
UNTRUSTED = "http://evil.test"


def test_trusted_and_untrusted_origins(tmp_root):
    srv = Server(tmp_root / "cors", ["--http.trusted-origin", TRUSTED + "/"]).start()
    try:
        coll = unique("cors")
        r = requests.post(srv.url + "/_api/collection", json={"name": coll}, auth=ROOT)
        assert r.status_code == 200, r.text

        for origin, credentials in [(UNTRUSTED, "false"), (TRUSTED, "true")]:
            r = requests.options(
                f"{srv.url}/_api/document/{coll}",
                headers={
                    "Origin": origin,
                    "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "authorization, content-type",
                },
            )
            assert r.status_code == 200
            assert r.headers["Access-Control-Allow-Origin"] == origin
            assert r.headers["Access-Control-Allow-Credentials"] == credentials
            assert r.headers["Access-Control-Allow-Headers"] == "authorization, content-type"
            assert r.headers["Access-Control-Max-Age"] == "1800"
            assert "POST" in r.headers["Access-Control-Allow-Methods"]

        r = requests.post(
            f"{srv.url}/_api/document/{coll}",
            data='{"_key": "forged"}',
            headers={"Origin": UNTRUSTED, "Content-Type": "text/plain"},
        )
        assert r.status_code == 401, r.text
        assert r.json()["errorNum"] == 11
        assert r.headers["Access-Control-Allow-Credentials"] == "false"
        assert "Access-Control-Allow-Methods" not in r.headers

        for key, origin, credentials in [("a", UNTRUSTED, "false"), ("b", TRUSTED, "true")]:
            r = requests.post(
                f"{srv.url}/_api/document/{coll}",
                json={"_key": key},
                headers={"Origin": origin},
                auth=ROOT,
            )
            assert r.status_code == 202, r.text
            assert r.headers["Access-Control-Allow-Origin"] == origin
            assert r.headers["Access-Control-Allow-Credentials"] == credentials

        r = requests.get(f"{srv.url}/_api/collection/{coll}/count", auth=ROOT)
        assert r.json()["count"] == 2
    finally:
        srv.stop()


def test_all_trusts_every_origin(tmp_root):
    srv = Server(tmp_root / "cors-all", ["--http.trusted-origin", "all"]).start()
    try:
        r = requests.get(srv.url + "/_api/version", headers={"Origin": "http://any.test"}, auth=ROOT)
        assert r.status_code == 200
        assert r.headers["Access-Control-Allow-Credentials"] == "true"
        r = requests.get(srv.url + "/_api/version", auth=ROOT)
        assert "Access-Control-Allow-Credentials" not in r.headers
    finally:
        srv.stop()
