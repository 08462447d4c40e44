"""Multi-dimensional (mdi) indexes through python-arango: FILTERs bounding several attributes
answered through the index, checked against the same queries with index use switched off,
over random boxes (bind parameters, strict and inclusive bounds, prefix equality), and the
index kept across a restart."""

import random

from conftest import Server, unique

BOX = (
    "FOR d IN @@c FILTER d.x {lo_op} @x1 && d.x {hi_op} @x2 && d.y {lo_op} @y1 && d.y {hi_op} @y2 "
    "RETURN d._key"
)


def run(db, query, bind, indexes=True):
    opts = {} if indexes else {"optimizer_rules": ["-use-indexes"]}
    return sorted(db.aql.execute(query, bind_vars=bind, **opts))


def test_random_boxes_answer_like_a_scan(db):
    coll = db.create_collection(unique("pts"))
    rng = random.Random(4)
    coll.import_bulk(
        [{"_key": f"p{i}", "x": rng.randint(-50, 50) / 2, "y": rng.uniform(-25, 25), "c": rng.choice("abc")}
         for i in range(2000)]
    )
    coll.add_index({"type": "mdi", "fields": ["x", "y"], "fieldValueTypes": "double", "name": "xy"})
    coll.add_index({"type": "mdi-prefixed", "fields": ["x", "y"], "prefixFields": ["c"],
                    "fieldValueTypes": "double", "name": "cxy"})
    plan = db.aql.explain(BOX.format(lo_op=">=", hi_op="<="),
                          bind_vars={"@c": coll.name, "x1": 0, "x2": 1, "y1": 0, "y2": 1})
    index_nodes = [n for n in plan["nodes"] if n["type"] == "IndexNode"]
    assert [n["indexes"][0]["type"] for n in index_nodes] == ["mdi"]
    for i in range(60):
        x1, x2 = sorted(rng.uniform(-30, 30) for _ in range(2))
        y1, y2 = sorted(rng.uniform(-30, 30) for _ in range(2))
        lo_op, hi_op = rng.choice([(">=", "<="), (">", "<"), (">=", "<")])
        bind = {"@c": coll.name, "x1": round(x1), "x2": round(x2), "y1": y1, "y2": y2}
        query = BOX.format(lo_op=lo_op, hi_op=hi_op)
        assert run(db, query, bind) == run(db, query, bind, indexes=False), (query, bind)
        prefixed = "FOR d IN @@c FILTER d.c == @c && d.x >= @x1 RETURN d._key"
        pbind = {"@c": coll.name, "c": "abc"[i % 3], "x1": round(x1)}
        assert run(db, prefixed, pbind) == run(db, prefixed, pbind, indexes=False)


def test_the_index_serves_queries_after_a_restart(tmp_root):
    srv = Server(tmp_root / unique("mdirestart")).start()
    try:
        db = srv.client().db("_system", username="root", password="")
        coll = db.create_collection("pts")
        coll.import_bulk([{"_key": f"k{i}", "x": i % 10, "y": i // 10} for i in range(100)])
        coll.add_index({"type": "zkd", "fields": ["x", "y"], "fieldValueTypes": "double"})
        query = "FOR d IN pts FILTER d.x >= 2 && d.x <= 3 && d.y >= 5 && d.y <= 6 RETURN d._key"
        before = sorted(db.aql.execute(query))
        assert before == ["k52", "k53", "k62", "k63"]
        srv.kill()
        srv.start()
        db = srv.client().db("_system", username="root", password="")
        assert [i["type"] for i in db.collection("pts").indexes()] == ["primary", "zkd"]
        assert sorted(db.aql.execute(query)) == before
    finally:
        srv.stop()
