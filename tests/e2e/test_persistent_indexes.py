"""Persistent indexes through python-arango against the real binary: creation options,
queries that use them (explain shows the IndexNode), estimates, unique violations, stream
transactions reading their own writes through an index, and rebuilding after a restart."""
import time

import pytest
from arango.exceptions import DocumentInsertError

from conftest import unique


def index_nodes(db, query, bind_vars=None):
    plan = db.aql.explain(query, bind_vars=bind_vars or {})
    return [n for n in plan["nodes"] if n["type"] == "IndexNode"], plan


def test_persistent_index_serves_queries(db):
    coll = db.create_collection(unique("people"))
    coll.insert_many([{"_key": str(i), "age": i % 10, "city": "c%d" % (i % 3)} for i in range(200)])
    made = coll.add_persistent_index(
        fields=["age", "city"],
        name="age_city",
        in_background=True,
        storedValues=["city"],
        cacheEnabled=True,
    )
    assert made["new"] is True and made["type"] == "persistent"
    raw = coll.get_index("age_city")
    assert raw["fields"] == ["age", "city"]
    # 30 distinct (age, city) pairs among 200 documents.
    assert abs(raw["selectivity"] - 30 / 200) < 0.001
    assert raw["storedValues"] == ["city"] and raw["cacheEnabled"] is True

    query = "FOR p IN @@c FILTER p.age == 3 && p.city >= 'c1' SORT p.city RETURN p._key"
    nodes, plan = index_nodes(db, query, {"@c": coll.name})
    assert len(nodes) == 1
    index = nodes[0]["indexes"][0]
    assert index["name"] == "age_city" and index["type"] == "persistent"
    assert index["id"] == made["id"].split("/")[-1]
    assert "use-index-for-sort" in plan["rules"]
    assert not any(n["type"] == "SortNode" for n in plan["nodes"])
    got = list(db.aql.execute(query, bind_vars={"@c": coll.name}))
    want = [str(i) for i in sorted(range(200), key=lambda i: ("c%d" % (i % 3), str(i)))
            if i % 10 == 3 and "c%d" % (i % 3) >= "c1"]
    assert got == want

    # The same query without the index gives the same answer through a full scan.
    coll.delete_index("age_city")
    nodes, _ = index_nodes(db, query, {"@c": coll.name})
    assert nodes == []
    # Ties on `city` come in scan order now, so compare as sets.
    assert sorted(db.aql.execute(query, bind_vars={"@c": coll.name})) == sorted(want)


def test_aliases_sparse_and_arrays(db):
    coll = db.create_collection(unique("tags"))
    coll.insert_many([
        {"_key": "a", "tags": ["x", "y"], "s": 1},
        {"_key": "b", "tags": ["y"]},
        {"_key": "c", "tags": ["x"], "s": 2},
    ])
    h = coll.add_index({"type": "hash", "fields": ["tags[*]"], "name": "tags"})
    s = coll.add_index({"type": "skiplist", "fields": ["s"], "sparse": True, "name": "sparse_s"})
    assert (h["type"], s["type"], s["sparse"]) == ("hash", "skiplist", True)
    types = [i["type"] for i in coll.indexes()]
    assert types == ["primary", "hash", "skiplist"]
    q = "FOR d IN @@c FILTER 'x' IN d.tags SORT d._key RETURN d._key"
    assert [n["indexes"][0]["name"] for n in index_nodes(db, q, {"@c": coll.name})[0]] == ["tags"]
    assert list(db.aql.execute(q, bind_vars={"@c": coll.name})) == ["a", "c"]
    # A sparse index cannot answer a condition that admits null.
    q = "FOR d IN @@c FILTER d.s < 2 SORT d._key RETURN d._key"
    # (the primary index serves the SORT)
    assert [n["indexes"][0]["name"] for n in index_nodes(db, q, {"@c": coll.name})[0]] == ["primary"]
    assert list(db.aql.execute(q, bind_vars={"@c": coll.name})) == ["a", "b"]
    q = "FOR d IN @@c FILTER d.s >= 2 RETURN d._key"
    assert len(index_nodes(db, q, {"@c": coll.name})[0]) == 1
    assert list(db.aql.execute(q, bind_vars={"@c": coll.name})) == ["c"]


def test_unique_violation_changes_nothing(db):
    coll = db.create_collection(unique("u"))
    coll.add_persistent_index(fields=["email"], unique=True, name="by_email")
    coll.insert({"_key": "ann", "email": "a@x"})
    with pytest.raises(DocumentInsertError) as e:
        coll.insert({"_key": "bob", "email": "a@x"})
    assert e.value.error_code == 1210 and e.value.http_code == 409
    assert "ann" in e.value.error_message
    assert coll.count() == 1 and not coll.has("bob")
    q = "FOR d IN @@c FILTER d.email == 'a@x' RETURN d._key"
    assert list(db.aql.execute(q, bind_vars={"@c": coll.name})) == ["ann"]
    assert coll.get_index("by_email")["selectivity"] == 1


def test_stream_transaction_reads_its_writes_through_the_index(db):
    coll = db.create_collection(unique("trx"))
    coll.add_persistent_index(fields=["v"], name="by_v")
    coll.insert({"_key": "old", "v": 1})
    trx = db.begin_transaction(write=[coll.name])
    try:
        trx.collection(coll.name).insert({"_key": "new", "v": 1})
        trx.collection(coll.name).update({"_key": "old", "v": 2})
        q = "FOR d IN @@c FILTER d.v == 1 RETURN d._key"
        assert list(trx.aql.execute(q, bind_vars={"@c": coll.name})) == ["new"]
        assert list(db.aql.execute(q, bind_vars={"@c": coll.name})) == ["old"]
        trx.abort_transaction()
    finally:
        if trx.transaction_status() == "running":
            trx.abort_transaction()
    assert list(db.aql.execute(q, bind_vars={"@c": coll.name})) == ["old"]


def test_index_contents_are_rebuilt_after_restart(tmp_root):
    from conftest import Server

    srv = Server(tmp_root / unique("rebuild")).start()
    try:
        db = srv.client().db("_system")
        coll = db.create_collection("scores")
        coll.insert_many([{"_key": str(i), "score": i} for i in range(500)])
        coll.add_persistent_index(fields=["score"], name="by_score")
        coll.delete({"_key": "7"})
        srv.restart()
        db = srv.client().db("_system")
        q = "FOR d IN scores FILTER d.score >= 5 && d.score < 10 RETURN d._key"
        # The rebuild runs in the background after start-up; queries scan until it is done.
        deadline = time.time() + 30
        while not index_nodes(db, q)[0] and time.time() < deadline:
            time.sleep(0.1)
        assert index_nodes(db, q)[0], "index not used after restart"
        assert list(db.aql.execute(q)) == ["5", "6", "8", "9"]
        listed = db.collection("scores").get_index("by_score")
        assert listed["selectivity"] == 1
    finally:
        srv.stop()


def test_stored_values_cover_projections(db):
    coll = db.create_collection(unique("covered"))
    coll.insert_many([{"_key": str(i), "age": i % 10, "city": "c%d" % (i % 3), "bio": "x" * 100} for i in range(100)])
    coll.add_index({"type": "persistent", "fields": ["age"], "storedValues": ["city"], "name": "age_sv"})
    query = "FOR p IN @@c FILTER p.age == 4 SORT p._key RETURN [p._key, p.city]"
    nodes, _ = index_nodes(db, query, {"@c": coll.name})
    assert nodes[0]["indexes"][0]["name"] == "age_sv"
    assert nodes[0]["indexCoversProjections"] is True
    assert sorted(nodes[0]["projections"]) == ["_key", "city"]
    rows = list(db.aql.execute(query, bind_vars={"@c": coll.name}))
    assert rows == [[str(i), "c%d" % (i % 3)] for i in sorted(range(4, 100, 10), key=str)]
    # Reading an attribute outside the index needs the documents.
    nodes, _ = index_nodes(db, "FOR p IN @@c FILTER p.age == 4 RETURN p.bio", {"@c": coll.name})
    assert nodes[0]["indexCoversProjections"] is False
