"""Indexes (/_api/index), edges (/_api/edges) and stream transactions through python-arango
against the real binary."""
import pytest
from arango.exceptions import (
    DocumentInsertError,
    EdgeListError,
    IndexCreateError,
    IndexDeleteError,
    IndexGetError,
    IndexListError,
)

from conftest import unique


def edge_api(db, name):
    """The driver exposes /_api/edges on EdgeCollection, which is normally reached through a
    named graph (/_api/gharial is not routed yet); the method itself needs no graph."""
    from arango.collection import EdgeCollection

    return EdgeCollection(db._conn, db._executor, "no_graph", name)


def test_index_lifecycle(db):
    coll = db.create_collection(unique("idx"))
    indexes = coll.indexes()
    assert [i["type"] for i in indexes] == ["primary"]
    assert indexes[0]["id"] == "0" and indexes[0]["selectivity"] == 1

    created = coll.add_index({"type": "persistent", "fields": ["a"], "unique": True})
    assert created["isNewlyCreated"] is True
    assert created["type"] == "persistent" and created["unique"] is True
    again = coll.add_index({"type": "persistent", "fields": ["a"], "unique": True})
    assert again["isNewlyCreated"] is False and again["id"] == created["id"]

    hashed = coll.add_index({"type": "hash", "fields": ["b"], "name": "by_b"})
    assert hashed["type"] == "hash" and hashed["name"] == "by_b"
    ttl = coll.add_index({"type": "ttl", "fields": ["t"], "expireAfter": 3600})
    assert ttl["expireAfter"] == 3600
    geo = coll.add_index({"type": "geo", "fields": ["loc"], "geoJson": True})
    assert geo["type"] == "geo"
    listed = coll.indexes()
    assert [i["name"] for i in listed][-3:] == ["by_b", ttl["name"], geo["name"]]

    # Handles: by number and by name.
    assert coll.get_index(created["id"])["fields"] == ["a"]
    assert coll.get_index("by_b")["type"] == "hash"

    coll.insert({"_key": "x", "a": 1})
    with pytest.raises(DocumentInsertError) as e:
        coll.insert({"_key": "y", "a": 1})
    assert e.value.error_code == 1210

    assert coll.delete_index(created["id"]) is True
    coll.insert({"_key": "y", "a": 1})
    assert coll.delete_index(created["id"], ignore_missing=True) is False
    with pytest.raises(IndexDeleteError) as e:
        coll.delete_index(created["id"])
    assert e.value.error_code == 1212
    with pytest.raises(IndexGetError) as e:
        coll.get_index(created["id"])
    assert e.value.error_code == 1212
    assert all(i["id"] != created["id"] for i in coll.indexes())


def test_index_errors(db):
    coll = db.create_collection(unique("idx"))
    with pytest.raises(IndexCreateError) as e:
        coll.add_index({"type": "nonsense", "fields": ["a"]})
    assert e.value.error_code == 10 and e.value.http_code == 400
    with pytest.raises(IndexCreateError) as e:
        coll.add_index({"type": "geo", "fields": ["a", "b", "c"]})
    assert e.value.error_code == 10
    coll.insert_many([{"d": 1}, {"d": 1}])
    with pytest.raises(IndexCreateError) as e:
        coll.add_index({"type": "persistent", "fields": ["d"], "unique": True})
    assert e.value.error_code == 1210
    with pytest.raises(IndexListError) as e:
        db.collection("missing_" + unique()).indexes()
    assert e.value.error_code == 1203
    with pytest.raises(IndexDeleteError) as e:
        coll.delete_index("0")
    assert e.value.http_code == 403


def test_indexes_survive_restart(tmp_root):
    from conftest import Server

    srv = Server(tmp_root / unique("restart")).start()
    try:
        db = srv.client().db("_system")
        coll = db.create_collection("keeps")
        made = coll.add_index({"type": "persistent", "fields": ["u"], "unique": True, "name": "u1"})
        coll.insert({"u": 1})
        srv.restart()
        coll = srv.client().db("_system").collection("keeps")
        assert coll.get_index("u1")["id"] == made["id"]
        with pytest.raises(DocumentInsertError) as e:
            coll.insert({"u": 1})
        assert e.value.error_code == 1210
    finally:
        srv.stop()


def test_edges(db):
    db.create_collection("v")
    edges = db.create_collection("e", edge=True)
    edges.insert_many(
        [
            {"_key": "1", "_from": "v/a", "_to": "v/b"},
            {"_key": "2", "_from": "v/b", "_to": "v/c"},
            {"_key": "3", "_from": "v/a", "_to": "v/a"},
        ]
    )

    def keys(vertex, direction=None):
        out = edge_api(db, "e").edges(vertex, direction=direction)
        assert set(out["stats"]) == {"filtered", "scanned_index"}
        return sorted(e["_key"] for e in out["edges"])

    assert keys("v/a", "out") == ["1", "3"]
    assert keys("v/b", "in") == ["1"]
    assert keys("v/b") == ["1", "2"]
    assert keys({"_id": "v/c"}) == ["2"]
    assert keys("v/none") == []
    full = edge_api(db, "e").edges("v/c", direction="in")["edges"][0]
    assert full["_id"] == "e/2" and full["_from"] == "v/b" and "_rev" in full
    edges.delete("2")
    assert keys("v/b") == ["1"]
    with pytest.raises(EdgeListError) as e:
        edge_api(db, "e").edges("v/a", direction="sideways")
    assert e.value.http_code == 400
    with pytest.raises(EdgeListError) as e:
        edge_api(db, "v").edges("v/a")
    assert e.value.error_code == 1218


def test_edges_raw_errors(http, db):
    db.create_collection("e2", edge=True)
    base = f"/_db/{db.name}/_api/edges"
    r = http.get(f"{base}/e2")
    assert r.status_code == 400 and r.json()["errorNum"] == 1205
    r = http.get(f"{base}/nope?vertex=v/a")
    assert r.status_code == 404 and r.json()["errorNum"] == 1203
