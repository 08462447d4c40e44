"""Analyzers through the real binary: python-arango's analyzer API, raw HTTP, TOKENS() in AQL,
per-database visibility, rights and persistence across a restart."""

import pytest
import requests
from arango.exceptions import (
    AnalyzerCreateError,
    AnalyzerDeleteError,
    AnalyzerGetError,
)

from conftest import ROOT, Server, unique


def names(db):
    return {a["name"] for a in db.analyzers()}


def test_create_list_get_delete(db):
    name = unique("csv")
    created = db.create_analyzer(
        name, "delimiter", {"delimiter": ","}, ["frequency", "norm", "position"]
    )
    full = f"{db.name}::{name}"
    assert created["name"] == full
    assert created["type"] == "delimiter"
    assert created["properties"] == {"delimiter": ","}
    assert created["features"] == ["frequency", "position", "norm"]
    assert full in names(db)
    assert {"identity", "text_en", "text_zh"} <= names(db)
    got = db.analyzer(name)
    assert got["name"] == full and got["properties"] == {"delimiter": ","}
    # The same definition again is accepted, another one under the name is a collision.
    assert db.create_analyzer(name, "delimiter", {"delimiter": ","}, ["frequency", "norm", "position"])
    with pytest.raises(AnalyzerCreateError) as err:
        db.create_analyzer(name, "delimiter", {"delimiter": ";"}, [])
    assert err.value.error_code == 10
    with pytest.raises(AnalyzerDeleteError) as err:
        db.delete_analyzer("text_en")
    assert err.value.http_code == 403 and err.value.error_code == 11
    assert db.delete_analyzer(name, force=True)
    with pytest.raises(AnalyzerGetError) as err:
        db.analyzer(name)
    assert err.value.http_code == 404 and err.value.error_code == 1202
    assert db.delete_analyzer(name, ignore_missing=True) is False


def test_bad_definitions_over_http(server, db):
    base = f"{server.url}/_db/{db.name}/_api/analyzer"
    cases = [
        ({}, 400, 600),
        ({"name": "x1", "type": "nonsense"}, 501, 9),
        ({"name": "x2", "type": "ngram", "properties": {"min": -1, "max": 4, "preserveOriginal": False}}, 400, 10),
        ({"name": "x3", "type": "text", "properties": {"locale": "en"}, "features": ["offset"]}, 400, 10),
        ({"name": "x4", "type": "collation", "properties": {}}, 400, 10),
    ]
    for body, status, num in cases:
        r = requests.post(base, json=body, auth=ROOT, timeout=30)
        assert (r.status_code, r.json()["errorNum"]) == (status, num), body
    r = requests.post(base, json={"name": "x5", "type": "norm", "properties": {"locale": "en", "case": "upper"}}, auth=ROOT, timeout=30)
    assert r.status_code == 201
    assert r.json()["properties"] == {"locale": "en", "case": "upper", "accent": True}


def test_tokens_in_aql(db):
    name = unique("edge")
    db.create_analyzer(
        name,
        "text",
        {"edgeNgram": {"min": 3, "max": 8, "preserveOriginal": True}, "locale": "en",
         "case": "lower", "accent": False, "stemming": False, "stopwords": ["the"]},
        [],
    )
    cursor = db.aql.execute(
        "RETURN TOKENS('The quick brown fox jumps over the dogWithAVeryLongName', @a)",
        bind_vars={"a": name},
    )
    assert list(cursor) == [[
        "qui", "quic", "quick", "bro", "brow", "brown", "fox", "jum", "jump", "jumps",
        "ove", "over", "dog", "dogw", "dogwi", "dogwit", "dogwith", "dogwitha",
        "dogwithaverylongname",
    ]]
    cursor = db.aql.execute("RETURN TOKENS(['Crazy fast', ['NoSQL-database!']], 'text_en')")
    assert list(cursor) == [[["crazi", "fast"], [["nosql", "databas"]]]]


def test_visibility_between_databases(sys_db, db):
    name = unique("glob")
    sys_db.create_analyzer(name, "norm", {"locale": "en", "case": "upper"}, [])
    try:
        assert f"_system::{name}" in names(db)
        assert db.analyzer(f"::{name}")["name"] == f"_system::{name}"
        assert list(db.aql.execute(f"RETURN TOKENS('abc', '_system::{name}')")) == [["ABC"]]
        # A plain name means the current database.
        with pytest.raises(Exception):
            list(db.aql.execute(f"RETURN TOKENS('abc', '{name}')"))
        with pytest.raises(AnalyzerCreateError) as err:
            db.create_analyzer(f"_system::{unique('x')}", "identity", {}, [])
        assert err.value.http_code == 403
        local = unique("loc")
        db.create_analyzer(local, "identity", {}, [])
        with pytest.raises(AnalyzerGetError) as err:
            sys_db.analyzer(f"{db.name}::{local}")
        assert err.value.http_code == 403
    finally:
        sys_db.delete_analyzer(name, force=True, ignore_missing=True)


def test_rights(server, sys_db, db):
    user = unique("u")
    sys_db.create_user(user, "pw")
    try:
        sys_db.update_permission(user, "ro", db.name)
        base = f"{server.url}/_db/{db.name}/_api/analyzer"
        r = requests.get(base, auth=(user, "pw"), timeout=30)
        assert r.status_code == 200
        r = requests.post(base, json={"name": "ro_try", "type": "identity"}, auth=(user, "pw"), timeout=30)
        assert r.status_code == 403
        r = requests.delete(base + "/text_en", auth=(user, "pw"), timeout=30)
        assert r.status_code == 403
    finally:
        sys_db.delete_user(user)


def test_analyzers_survive_restart(tmp_root):
    srv = Server(tmp_root / unique("restart")).start()
    try:
        sys_db = srv.client().db("_system", username="root", password="")
        sys_db.create_database("shop")
        shop = srv.client().db("shop", username="root", password="")
        shop.create_analyzer("csv", "delimiter", {"delimiter": ","}, ["frequency"])
        srv.restart()
        shop = srv.client().db("shop", username="root", password="")
        assert shop.analyzer("csv")["properties"] == {"delimiter": ","}
        assert list(shop.aql.execute("RETURN TOKENS('a,b', 'csv')")) == [["a", "b"]]
        stored = list(shop.aql.execute("FOR a IN _analyzers RETURN a"))
        assert [(a["name"], a["type"]) for a in stored] == [("csv", "delimiter")]
    finally:
        srv.stop()
