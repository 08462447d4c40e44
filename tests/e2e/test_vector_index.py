"""Vector indexes through python-arango: creation as the driver sends it, nearest-neighbour
queries (APPROX_NEAR_COSINE / _L2 / _INNER_PRODUCT) checked against an exact ranking computed
here, writes after training, and the trained index surviving a kill -9 restart."""

import math
import random
import time

import pytest
from arango.exceptions import AQLQueryExecuteError, DocumentInsertError, IndexCreateError

from conftest import Server, unique

DIM = 16


def clustered(n, seed):
    """n vectors around 20 random centres, as embeddings tend to be."""
    rng = random.Random(seed)
    centres = [[rng.uniform(-1, 1) for _ in range(DIM)] for _ in range(20)]
    out = []
    for i in range(n):
        c = centres[i % len(centres)]
        out.append([x + rng.gauss(0, 0.1) for x in c])
    return out


def cosine(a, b):
    na = math.sqrt(sum(x * x for x in a)) or 1.0
    nb = math.sqrt(sum(x * x for x in b)) or 1.0
    return sum(x * y for x, y in zip(a, b)) / (na * nb)


def exact_top(docs, q, k, score, descending):
    ranked = sorted(docs, key=lambda d: (-score(d["v"], q) if descending else score(d["v"], q), d["_key"]))
    return [d["_key"] for d in ranked[:k]]


def l2(a, b):
    return math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))


@pytest.fixture()
def filled(db):
    coll = db.create_collection(unique("vec"))
    docs = [{"_key": f"d{i:04d}", "v": v, "n": i} for i, v in enumerate(clustered(1000, 7))]
    coll.import_bulk(docs)
    return coll, docs


def test_the_driver_creates_vector_indexes_and_gets_arangodbs_description(db, filled):
    coll, _ = filled
    index = coll.add_index(
        {"type": "vector", "name": "emb", "fields": ["v"], "params": {"metric": "cosine", "dimension": DIM, "nLists": 10}}
    )
    assert index["type"] == "vector"
    assert index["name"] == "emb"
    assert index["params"] == {
        "metric": "cosine",
        "dimension": DIM,
        "nLists": 10,
        "defaultNProbe": 1,
        "trainingIterations": 25,
    }
    listed = [i for i in coll.indexes() if i["type"] == "vector"]
    assert len(listed) == 1 and listed[0]["name"] == "emb"
    assert listed[0]["training_state"] == "ready"
    with pytest.raises(IndexCreateError) as err:
        coll.add_index({"type": "vector", "fields": ["v"], "params": {"metric": "cosine", "dimension": DIM, "nLists": 5000}})
    assert err.value.error_code == 10
    assert coll.delete_index("emb")


def test_queries_find_the_nearest_documents_with_every_metric(db, filled):
    coll, docs = filled
    for metric, fn, descending, score in [
        ("cosine", "APPROX_NEAR_COSINE", True, cosine),
        ("l2", "APPROX_NEAR_L2", False, l2),
        ("innerProduct", "APPROX_NEAR_INNER_PRODUCT", True, lambda a, b: sum(x * y for x, y in zip(a, b))),
    ]:
        coll.add_index({"type": "vector", "name": metric, "fields": ["v"], "params": {"metric": metric, "dimension": DIM, "nLists": 16}})
        order = "DESC" if descending else "ASC"
        # A point near the data (queries are embeddings of the same kind).
        q = [x + 0.05 for x in docs[17]["v"]]
        # Probing every list is exact: the same ranking as computed here, with the values.
        rows = list(
            db.aql.execute(
                f"FOR d IN @@c LET s = {fn}(d.v, @q, {{nProbe: 16}}) SORT s {order} LIMIT 10 RETURN {{k: d._key, s}}",
                bind_vars={"@c": coll.name, "q": q},
            )
        )
        assert [r["k"] for r in rows] == exact_top(docs, q, 10, score, descending), metric
        for r in rows:
            expected = score(next(d["v"] for d in docs if d["_key"] == r["k"]), q)
            assert abs(r["s"] - expected) < 1e-3 * max(1.0, abs(expected)), (metric, r)
        # The default single probe still finds most of the true neighbours of clustered data.
        approx = list(
            db.aql.execute(
                f"FOR d IN @@c SORT {fn}(d.v, @q) {order} LIMIT 10 RETURN d._key",
                bind_vars={"@c": coll.name, "q": q},
            )
        )
        assert len(set(approx) & set(r["k"] for r in rows)) >= 5, (metric, approx)
        plan = db.aql.explain(
            f"FOR d IN @@c SORT {fn}(d.v, @q) {order} LIMIT 10 RETURN d._key", bind_vars={"@c": coll.name, "q": q}
        )
        assert "EnumerateNearVectorNode" in [n["type"] for n in plan["nodes"]]
        coll.delete_index(metric)


def test_filters_writes_and_errors(db, filled):
    coll, docs = filled
    coll.add_index({"type": "vector", "fields": ["v"], "params": {"metric": "l2", "dimension": DIM, "nLists": 8}})
    q = docs[5]["v"]
    # A document written after training is found (its list is its nearest centroid).
    coll.insert({"_key": "fresh", "v": q, "n": -1})
    first = list(db.aql.execute("FOR d IN @@c SORT APPROX_NEAR_L2(d.v, @q) LIMIT 2 RETURN d._key", bind_vars={"@c": coll.name, "q": q}))
    assert set(first) == {"fresh", "d0005"}
    # One FILTER is applied to the candidates.
    odd = list(
        db.aql.execute(
            "FOR d IN @@c FILTER d.n % 2 == 1 SORT APPROX_NEAR_L2(d.v, @q, {nProbe: 8}) LIMIT 5 RETURN d",
            bind_vars={"@c": coll.name, "q": q},
        )
    )
    expected = exact_top([d for d in docs if d["n"] % 2 == 1], q, 5, l2, False)
    assert [d["_key"] for d in odd] == expected
    with pytest.raises(DocumentInsertError) as err:
        coll.insert({"v": [1, 2, 3]})
    assert err.value.error_code == 17
    with pytest.raises(AQLQueryExecuteError) as err:
        list(db.aql.execute("FOR d IN @@c SORT APPROX_NEAR_L2(d.v, @q) DESC LIMIT 2 RETURN d", bind_vars={"@c": coll.name, "q": q}))
    assert err.value.error_code == 1554
    with pytest.raises(AQLQueryExecuteError) as err:
        list(db.aql.execute("FOR d IN @@c SORT APPROX_NEAR_L2(d.v, [1]) LIMIT 2 RETURN d", bind_vars={"@c": coll.name}))
    assert err.value.error_code == 1542


def test_the_trained_index_survives_kill_9(tmp_root):
    srv = Server(tmp_root / unique("vecrestart")).start()
    try:
        db = srv.client().db("_system", username="root", password="")
        coll = db.create_collection("emb")
        docs = [{"_key": f"d{i:04d}", "v": v} for i, v in enumerate(clustered(600, 3))]
        coll.import_bulk(docs)
        coll.add_index({"type": "vector", "fields": ["v"], "params": {"metric": "cosine", "dimension": DIM, "nLists": 12}})
        coll.insert({"_key": "late", "v": docs[0]["v"]})
        query = "FOR d IN emb SORT APPROX_NEAR_COSINE(d.v, @q) DESC LIMIT 10 RETURN d._key"
        probes = [clustered(5, 11)[i] for i in range(5)]
        before = [list(db.aql.execute(query, bind_vars={"q": q})) for q in probes]
        srv.kill()
        srv.start()
        db = srv.client().db("_system", username="root", password="")
        # Until the rebuilt index is ready, searches are exact scans; wait for it.
        deadline = time.time() + 30
        while time.time() < deadline:
            states = [i.get("training_state") for i in db.collection("emb").indexes() if i["type"] == "vector"]
            if states == ["ready"]:
                break
            time.sleep(0.1)
        assert states == ["ready"]
        after = [list(db.aql.execute(query, bind_vars={"q": q})) for q in probes]
        # Same centroids after the restart: one probe reads the same list, same answers.
        assert after == before
        assert "late" in list(db.aql.execute(query, bind_vars={"q": docs[0]["v"]}))[:2]
    finally:
        srv.stop()
