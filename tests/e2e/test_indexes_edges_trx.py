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
    named graph; the method itself needs no graph."""
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


def test_stream_transaction_commit(db):
    from arango.exceptions import TransactionAbortError

    coll = db.create_collection(unique("trx"))
    db.create_collection("untouched")
    txn = db.begin_transaction(write=coll.name, sync=True)
    assert txn.transaction_id.isdigit()
    assert txn.transaction_status() == "running"
    assert {"id": txn.transaction_id, "state": "running"} in db.list_transactions()

    tcoll = txn.collection(coll.name)
    tcoll.insert({"_key": "a", "n": 1})
    tcoll.insert_many([{"_key": "b"}, {"_key": "c"}])
    tcoll.update({"_key": "a", "m": 2})
    tcoll.delete("c")
    assert tcoll.get("a")["m"] == 2
    assert tcoll.count() == 2
    assert tcoll.get("c") is None
    assert coll.get("a") is None and coll.count() == 0
    with pytest.raises(DocumentInsertError) as e:
        txn.collection("untouched").insert({})
    assert e.value.error_code == 1652

    assert txn.commit_transaction() is True
    assert txn.transaction_status() == "committed"
    assert coll.get("a")["n"] == 1 and coll.get("a")["m"] == 2
    assert sorted(d["_key"] for d in coll.all()) == ["a", "b"]
    assert all(t["id"] != txn.transaction_id for t in db.list_transactions())
    assert txn.commit_transaction() is True
    with pytest.raises(TransactionAbortError) as e:
        txn.abort_transaction()
    assert e.value.error_code == 1653


def test_stream_transaction_abort_and_conflict(db):
    from arango.exceptions import (
        DocumentGetError,
        TransactionCommitError,
        TransactionFetchError,
        TransactionInitError,
    )

    coll = db.create_collection(unique("trx"))
    txn = db.begin_transaction(write=[coll.name])
    txn.collection(coll.name).insert({"_key": "gone"})
    assert txn.abort_transaction() is True
    assert txn.transaction_status() == "aborted"
    assert coll.get("gone") is None
    with pytest.raises(DocumentGetError) as e:
        txn.collection(coll.name).get("gone")
    assert e.value.error_code == 1654 and e.value.http_code == 410
    with pytest.raises(TransactionCommitError) as e:
        txn.commit_transaction()
    assert e.value.error_code == 1653

    coll.insert({"_key": "d", "n": 0})
    txn = db.begin_transaction(write=coll.name)
    txn.collection(coll.name).update({"_key": "d", "n": 1})
    coll.update({"_key": "d", "n": 2})
    with pytest.raises(TransactionCommitError) as e:
        txn.commit_transaction()
    assert e.value.error_code == 1200
    assert txn.transaction_status() == "aborted"
    assert coll.get("d")["n"] == 2

    with pytest.raises(TransactionInitError) as e:
        db.begin_transaction(write="no_such_collection")
    assert e.value.error_code == 1203
    with pytest.raises(TransactionFetchError) as e:
        db.fetch_transaction("123456789")
    assert e.value.error_code == 1655


def test_stream_transaction_raw_http(http, db):
    db.create_collection("rc")
    base = f"/_db/{db.name}/_api"
    r = http.post(f"{base}/transaction/begin", json={"collections": {"write": "rc"}})
    assert r.status_code == 201
    tid = r.json()["result"]["id"]
    h = {"x-arango-trx-id": tid}
    r = http.post(f"{base}/document/rc", json={"_key": "k"}, headers=h)
    assert r.status_code in (201, 202)
    assert http.get(f"{base}/document/rc/k", headers=h).status_code == 200
    assert http.get(f"{base}/document/rc/k").status_code == 404
    r = http.put(f"{base}/transaction/{tid}")
    assert r.status_code == 200 and r.json()["result"] == {"id": tid, "status": "committed"}
    assert http.get(f"{base}/document/rc/k").status_code == 200
    r = http.get(f"{base}/transaction/illegal")
    assert r.status_code == 400 and r.json()["errorNum"] == 10


def test_ttl_expiry_and_idle_timeout_options(tmp_root):
    """--ttl.frequency drives the ttl index sweeper; --transaction.streaming-idle-timeout
    aborts idle stream transactions."""
    import time

    from conftest import Server

    srv = Server(
        tmp_root / unique("ttl"),
        extra_args=["--ttl.frequency", "200", "--transaction.streaming-idle-timeout", "1"],
    ).start()
    try:
        db = srv.client().db("_system")
        coll = db.create_collection("expiring")
        coll.add_index({"type": "ttl", "fields": ["at"], "expireAfter": 0})
        coll.insert_many([{"_key": "old", "at": time.time() - 10}, {"_key": "keep"}])
        deadline = time.time() + 15
        while coll.has("old") and time.time() < deadline:
            time.sleep(0.1)
        assert not coll.has("old")
        assert coll.has("keep")

        txn = db.begin_transaction(write="expiring")
        time.sleep(2.5)
        assert txn.transaction_status() == "aborted"
    finally:
        srv.stop()
