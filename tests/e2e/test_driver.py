"""Databases, collections, documents and edges through the real python-arango driver."""
import pytest
from arango.exceptions import (
    CollectionCreateError,
    CollectionDeleteError,
    CollectionRenameError,
    DatabaseCreateError,
    DatabaseDeleteError,
    DocumentDeleteError,
    DocumentGetError,
    DocumentInsertError,
    DocumentReplaceError,
    DocumentRevisionError,
    DocumentUpdateError,
)

from conftest import unique


def test_server_endpoints(sys_db):
    assert sys_db.version().startswith("3.12")
    details = sys_db.version(details=True)
    assert details["details"]["server-version"].startswith("3.12")
    assert sys_db.engine()["name"] == "rocksdb"
    assert sys_db.role() == "SINGLE"
    status = sys_db.status()
    assert status["server_info"]["read_only"] is False and status["operation_mode"] == "server"
    assert isinstance(sys_db.time().timestamp(), float)


def test_databases_lifecycle_and_isolation(sys_db, client):
    names = ["abc123", "maçã", "😀", unique("plain")]
    for n in names:
        assert sys_db.create_database(n) is True
        assert sys_db.has_database(n)
    listed = sys_db.databases()
    assert "_system" in listed and all(n in listed for n in names)

    a = client.db(names[0])
    b = client.db(names[3])
    a.create_collection("shared_name")
    assert a.has_collection("shared_name")
    assert not b.has_collection("shared_name")
    b.create_collection("shared_name")
    a.collection("shared_name").insert({"_key": "k", "in": "a"})
    assert b.collection("shared_name").get("k") is None
    assert a.properties()["name"] == names[0]

    with pytest.raises(DatabaseCreateError) as e:
        sys_db.create_database(names[0])
    assert e.value.error_code == 1207
    with pytest.raises(DatabaseCreateError) as e:
        sys_db.create_database("_bad")
    assert e.value.error_code == 1229
    for bad in ["..", ".hidden", "x/../..", "a:b", "1db", " db"]:
        with pytest.raises(DatabaseCreateError) as e:
            sys_db.create_database(bad)
        assert e.value.error_code == 1229, bad
    with pytest.raises(DatabaseCreateError) as e:
        a.create_database("from_non_system")
    assert e.value.error_code == 1230

    for n in names:
        assert sys_db.delete_database(n) is True
        assert not sys_db.has_database(n)
    with pytest.raises(DatabaseDeleteError) as e:
        sys_db.delete_database(names[0])
    assert e.value.error_code == 1228
    assert sys_db.delete_database(names[0], ignore_missing=True) is False
    with pytest.raises(DatabaseDeleteError):
        sys_db.delete_database("_system")


def test_collections(db):
    col = db.create_collection("docs", sync=False)
    assert col.properties()["edge"] is False
    edge = db.create_collection("links", edge=True)
    assert edge.properties()["edge"] is True
    names = {c["name"] for c in db.collections()}
    assert {"docs", "links"} <= names
    assert any(c["system"] for c in db.collections())

    with pytest.raises(CollectionCreateError) as e:
        db.create_collection("docs")
    assert e.value.error_code == 1207
    for bad in ["1abc", "", "a/b"]:
        with pytest.raises(CollectionCreateError) as e:
            db.create_collection(bad)
        assert e.value.error_code == 1208

    props = col.configure(sync=True)
    assert props["sync"] is True
    assert col.properties()["sync"] is True

    col.insert_many([{"v": i} for i in range(5)])
    assert col.count() == 5
    assert "indexes" in col.statistics() or isinstance(col.statistics(), dict)
    assert isinstance(col.revision(), str)
    checksum = col.checksum()
    assert checksum not in ("0", 0)
    assert col.truncate() is True
    assert col.count() == 0
    assert str(col.checksum()) == "0"

    col.rename("docs2")
    assert db.has_collection("docs2") and not db.has_collection("docs")
    db.collection("docs2").rename("docs2")  # same name is fine
    db.create_collection("other")
    with pytest.raises(CollectionRenameError) as e:
        db.collection("docs2").rename("other")
    assert e.value.error_code == 1207

    assert db.delete_collection("docs2") is True
    with pytest.raises(CollectionDeleteError) as e:
        db.delete_collection("docs2")
    assert e.value.error_code == 1203
    with pytest.raises(CollectionDeleteError):
        db.delete_collection("_graphs")


def test_key_generators(db):
    auto = db.create_collection("auto", key_generator="autoincrement", key_increment=5, key_offset=100)
    keys = [auto.insert({})["_key"] for _ in range(3)]
    nums = [int(k) for k in keys]
    assert nums == sorted(nums) and nums[1] - nums[0] == 5
    uuidc = db.create_collection("uu", key_generator="uuid")
    assert len(uuidc.insert({})["_key"]) == 36
    padded = db.create_collection("pad", key_generator="padded")
    k1, k2 = padded.insert({})["_key"], padded.insert({})["_key"]
    assert len(k1) == len(k2) == 16 and k1 < k2
    strict = db.create_collection("strict", user_keys=False)
    with pytest.raises(DocumentInsertError) as e:
        strict.insert({"_key": "mine"})
    assert e.value.error_code == 1222
    with pytest.raises(CollectionCreateError) as e:
        db.create_collection("badgen", key_generator="nonsense")
    assert e.value.error_code == 1232


def test_document_crud_and_options(db):
    col = db.create_collection("people")
    meta = col.insert({"_key": "alice", "age": 30, "nested": {"a": 1, "b": 2}})
    assert meta["_id"] == "people/alice" and meta["_key"] == "alice" and meta["_rev"]
    doc = col.get("alice")
    assert doc["age"] == 30 and doc["_id"] == "people/alice"
    assert col.has("alice") and not col.has("bob")
    assert col.get("bob") is None

    with pytest.raises(DocumentInsertError) as e:
        col.insert({"_key": "alice"})
    assert e.value.error_code == 1210 and e.value.http_code == 409
    for bad_key in ["a b", "ä", "x/y", "a" * 255]:
        with pytest.raises(DocumentInsertError) as e:
            col.insert({"_key": bad_key})
        assert e.value.error_code == 1221

    new = col.insert({"_key": "bob", "x": 1}, return_new=True)
    assert new["new"]["x"] == 1 and new["new"]["_key"] == "bob"
    silent = col.insert({"_key": "carol"}, silent=True)
    assert silent is True

    upd = col.update({"_key": "alice", "age": 31, "nested": {"b": None, "c": 3}}, keep_none=False, return_old=True, return_new=True)
    assert upd["old"]["age"] == 30 and upd["new"]["age"] == 31
    assert upd["new"]["nested"] == {"a": 1, "c": 3}
    upd = col.update({"_key": "alice", "nested": {"z": 1}}, merge=False)
    assert col.get("alice")["nested"] == {"z": 1}
    rep = col.replace({"_key": "alice", "only": True})
    assert rep["_key"] == "alice"
    doc = col.get("alice")
    assert doc["only"] is True and "age" not in doc

    # Revision checks: stale _rev with check_rev → 412/1200.
    stale = dict(doc)
    col.update({"_key": "alice", "bump": 1})
    with pytest.raises(DocumentRevisionError) as e:
        col.update(stale, check_rev=True)
    assert e.value.error_code == 1200 and e.value.http_code == 412
    with pytest.raises(DocumentRevisionError):
        col.replace(stale, check_rev=True)
    with pytest.raises(DocumentRevisionError):
        col.get("alice", rev=stale["_rev"])
    with pytest.raises(DocumentRevisionError):
        col.delete(stale, check_rev=True)
    current = col.get("alice")
    assert col.get("alice", rev=current["_rev"])["_key"] == "alice"

    # Overwrite modes.
    col.insert({"_key": "bob", "y": 2}, overwrite_mode="update")
    assert col.get("bob")["x"] == 1 and col.get("bob")["y"] == 2
    col.insert({"_key": "bob", "z": 3}, overwrite_mode="replace")
    assert "x" not in col.get("bob")
    ign = col.insert({"_key": "bob", "w": 4}, overwrite_mode="ignore", return_new=True)
    assert "new" not in ign and "w" not in col.get("bob")
    with pytest.raises(DocumentInsertError) as e:
        col.insert({"_key": "bob"}, overwrite_mode="conflict")
    assert e.value.error_code == 1210
    col.insert({"_key": "bob", "v": 5}, overwrite=True)
    assert col.get("bob")["v"] == 5

    with pytest.raises(DocumentUpdateError) as e:
        col.update({"_key": "nobody", "a": 1})
    assert e.value.error_code == 1202
    with pytest.raises(DocumentReplaceError) as e:
        col.replace({"_key": "nobody", "a": 1})
    assert e.value.error_code == 1202

    old = col.delete("bob", return_old=True)
    assert old["old"]["v"] == 5
    assert col.delete("bob", ignore_missing=True) is False
    with pytest.raises(DocumentDeleteError) as e:
        col.delete("bob")
    assert e.value.error_code == 1202
    with pytest.raises(DocumentGetError) as e:
        db.collection("missing_coll").get("x")
    assert e.value.error_code == 1203


def test_multi_document_operations(db):
    col = db.create_collection("many")
    res = col.insert_many([{"_key": "a"}, {"_key": "b"}, {"_key": "a"}, {"_key": "bad key"}])
    assert res[0]["_key"] == "a" and res[1]["_key"] == "b"
    assert res[2].error_code == 1210
    assert res[3].error_code == 1221
    assert col.count() == 2

    got = col.get_many(["a", "many/b", "zzz"])
    assert sorted(d["_key"] for d in got) == ["a", "b"]

    upd = col.update_many([{"_key": "a", "x": 1}, {"_key": "nope", "x": 2}])
    assert upd[0]["_key"] == "a" and upd[1].error_code == 1202
    rep = col.replace_many([{"_key": "b", "y": 1}])
    assert rep[0]["_key"] == "b"
    assert col.get("b") == {"_key": "b", "_id": "many/b", "_rev": col.get("b")["_rev"], "y": 1}
    dele = col.delete_many(["a", {"_key": "b"}, "ghost"])
    assert dele[0]["_key"] == "a" and dele[1]["_key"] == "b" and dele[2].error_code == 1202
    assert col.count() == 0


def test_edges(db):
    db.create_collection("v")
    e = db.create_collection("e", edge=True)
    meta = e.insert({"_from": "v/a", "_to": "v/b", "w": 1})
    edge = e.get(meta["_key"])
    assert edge["_from"] == "v/a" and edge["_to"] == "v/b"
    for bad in [{"_to": "v/b"}, {"_from": "v/a"}, {"_from": "test", "_to": "v/b"}, {"_from": "v/a", "_to": "1"}, {"_from": "c/r/o", "_to": "v/b"}]:
        with pytest.raises(DocumentInsertError) as err:
            e.insert(bad)
        assert err.value.error_code == 1233
    # Dangling edges are fine: vertices need not exist.
    e.insert({"_from": "nowhere/1", "_to": "v/zzz"})
    assert e.count() == 2
    # In a document collection _from/_to are ordinary attributes.
    db.collection("v").insert({"_key": "x", "_from": "whatever"})


def test_persistence_across_restart(tmp_root):
    from conftest import Server

    srv = Server(tmp_root / "restart").start()
    try:
        client = srv.client()
        sys_db = client.db("_system")
        sys_db.create_database("keep")
        db = client.db("keep")
        col = db.create_collection("things", key_generator="autoincrement")
        edges = db.create_collection("rel", edge=True)
        metas = col.insert_many([{"n": i} for i in range(50)])
        col.insert({"_key": "special", "nested": {"deep": [1, 2, 3]}}, sync=True)
        col.update({"_key": "special", "extra": "yes"})
        col.delete(metas[0]["_key"])
        edges.insert({"_from": "things/1", "_to": "things/2"})
        db.collection("things").configure(sync=True)
        last_key = max(int(m["_key"]) for m in metas)

        assert srv.stop() == 0
        srv.start()
        client = srv.client()
        assert "keep" in client.db("_system").databases()
        db = client.db("keep")
        col = db.collection("things")
        assert col.count() == 50
        assert col.get("special")["nested"] == {"deep": [1, 2, 3]}
        assert col.get("special")["extra"] == "yes"
        assert col.get(metas[0]["_key"]) is None
        assert col.properties()["sync"] is True
        assert db.collection("rel").count() == 1
        assert db.collection("rel").properties()["edge"] is True
        new_key = int(col.insert({})["_key"])
        assert new_key > last_key
    finally:
        srv.stop()


def test_aql_cursor_through_driver(db):
    col = db.create_collection("nums")
    col.insert_many([{"v": i} for i in range(25)])
    cursor = db.aql.execute("FOR d IN nums FILTER d.v >= @min SORT d.v RETURN d.v", bind_vars={"min": 5}, batch_size=7, count=True)
    assert cursor.count() == 20
    assert list(cursor) == list(range(5, 25))
    db.aql.execute("FOR d IN nums FILTER d.v < 5 REMOVE d IN nums")
    assert col.count() == 20
    plan = db.aql.explain("FOR d IN nums RETURN d")
    assert plan["nodes"], plan
