"""Geo and fulltext indexes through python-arango against the real binary: index creation
with the driver's helpers, geo/fulltext AQL functions, and the errors without an index."""
import pytest
from arango.exceptions import AQLQueryExecuteError

from conftest import unique


def run(db, query, **bind):
    return list(db.aql.execute(query, bind_vars=bind))


def test_geo_index_and_queries(db):
    coll = db.create_collection(unique("geo"))
    coll.insert_many(
        [
            {"_key": "berlin", "lat": 52.5163, "lng": 13.3777},
            {"_key": "cologne", "lat": 50.9322, "lng": 6.94},
            {"_key": "paris", "lat": 48.8566, "lng": 2.3522},
            {"_key": "nyc", "lat": 40.78, "lng": -73.97},
        ]
    )
    with pytest.raises(AQLQueryExecuteError) as e:
        run(db, "RETURN NEAR(@@c, 50, 8)", **{"@c": coll.name})
    assert e.value.error_code == 1570

    with pytest.warns(DeprecationWarning):
        index = coll.add_geo_index(fields=["lat", "lng"])
    assert index["type"] == "geo" and index["fields"] == ["lat", "lng"]
    assert index["new"] is True

    near = run(db, "RETURN NEAR(@@c, 50, 8, 2, 'd')", **{"@c": coll.name})[0]
    assert [d["_key"] for d in near] == ["cologne", "paris"]
    assert 100_000 < near[0]["d"] < 200_000

    within = run(db, "RETURN WITHIN(@@c, 50, 8, 500000)", **{"@c": coll.name})[0]
    assert [d["_key"] for d in within] == ["cologne", "paris", "berlin"]

    sorted_keys = run(
        db,
        "FOR d IN @@c SORT DISTANCE(d.lat, d.lng, 50, 8) LIMIT 3 RETURN d._key",
        **{"@c": coll.name},
    )
    assert sorted_keys == ["cologne", "paris", "berlin"]

    germany = run(
        db,
        """LET germany = GEO_POLYGON([[5.9, 47.3], [15.0, 47.3], [15.0, 55.0], [5.9, 55.0], [5.9, 47.3]])
           FOR d IN @@c FILTER GEO_CONTAINS(germany, [d.lng, d.lat]) SORT d._key RETURN d._key""",
        **{"@c": coll.name},
    )
    assert germany == ["berlin", "cologne"]


def test_geojson_index_and_functions(db):
    coll = db.create_collection(unique("geojson"))
    index = coll.add_index({"type": "geo", "fields": ["geometry"], "geoJson": True})
    assert index.get("geo_json", index.get("geoJson")) is True
    coll.insert({"_key": "a", "geometry": {"type": "Point", "coordinates": [6.94, 50.9322]}})
    coll.insert({"_key": "b", "geometry": [2.3522, 48.8566]})
    near = run(db, "RETURN NEAR(@@c, 50.9, 7.0, 1)", **{"@c": coll.name})[0]
    assert [d["_key"] for d in near] == ["a"]
    area = run(
        db,
        "RETURN GEO_AREA(GEO_POLYGON([[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]), 'wgs84')",
    )[0]
    assert 12.2e9 < area < 12.4e9


def test_fulltext_index_and_query(db):
    coll = db.create_collection(unique("ft"))
    with pytest.raises(AQLQueryExecuteError) as e:
        run(db, "RETURN FULLTEXT(@@c, 'text', 'x')", **{"@c": coll.name})
    assert e.value.error_code == 1571
    # The pinned driver dropped add_fulltext_index with ArangoDB's deprecation of the type;
    # the generic call is what clients use now.
    index = coll.add_index({"type": "fulltext", "fields": ["text"], "minLength": 3})
    assert index["type"] == "fulltext" and index.get("min_length", index.get("minLength")) == 3
    coll.insert_many(
        [
            {"_key": "1", "text": "The quick brown fox"},
            {"_key": "2", "text": "A quick start guide"},
            {"_key": "3", "text": "Nothing to see"},
        ]
    )
    found = run(
        db,
        "FOR d IN FULLTEXT(@@c, 'text', 'quick,-fox') RETURN d._key",
        **{"@c": coll.name},
    )
    assert found == ["2"]
    found = run(
        db,
        "FOR d IN FULLTEXT(@@c, 'text', 'prefix:qui') SORT d._key RETURN d._key",
        **{"@c": coll.name},
    )
    assert found == ["1", "2"]


def index_nodes(db, query, bind_vars=None):
    plan = db.aql.explain(query, bind_vars=bind_vars or {})
    return [n for n in plan["nodes"] if n["type"] == "IndexNode"], plan


def test_geo_queries_use_the_index_in_explain(db):
    coll = db.create_collection(unique("geoplan"))
    coll.insert_many(
        [{"_key": str(i), "lat": -60 + i * 0.6, "lng": -170 + i * 1.7, "loc": [-170 + i * 1.7, -60 + i * 0.6]}
         for i in range(200)]
    )
    coll.add_index({"type": "geo", "fields": ["lat", "lng"], "name": "pair"})
    coll.add_index({"type": "geo", "fields": ["loc"], "geoJson": True, "name": "gj"})
    bind = {"@c": coll.name}
    cases = [
        ("FOR d IN @@c SORT DISTANCE(d.lat, d.lng, 10, 20) LIMIT 5 RETURN d._key", "pair"),
        ("FOR d IN @@c SORT GEO_DISTANCE([20, 10], d.loc) LIMIT 5 RETURN d._key", "gj"),
        ("FOR d IN @@c FILTER GEO_DISTANCE([20, 10], d.loc) <= 2000000 RETURN d._key", "gj"),
        ("FOR d IN @@c FILTER GEO_CONTAINS(GEO_POLYGON([[0, 0], [40, 0], [40, 30], [0, 30], [0, 0]]), d.loc) RETURN d._key", "gj"),
    ]
    for query, name in cases:
        nodes, plan = index_nodes(db, query, bind)
        assert [n["indexes"][0]["name"] for n in nodes] == [name], query
        assert "geo-index-optimizer" in plan["rules"], query
        with_index = list(db.aql.execute(query, bind_vars=bind))
        without = list(
            db.aql.execute(query, bind_vars=bind, optimizer_rules=["-geo-index-optimizer"])
        )
        assert sorted(with_index) == sorted(without), query
        if "SORT" in query:
            assert with_index == without, query
    # Without a LIMIT the sort is not served.
    nodes, _ = index_nodes(db, "FOR d IN @@c SORT DISTANCE(d.lat, d.lng, 10, 20) RETURN d._key", bind)
    assert nodes == []


def test_fulltext_index_follows_writes_and_survives_restart(tmp_root):
    from conftest import Server

    srv = Server(tmp_root / unique("ftrestart")).start()
    try:
        db = srv.client().db("_system")
        coll = db.create_collection("texts")
        coll.insert_many([{"_key": str(i), "text": "word%d common" % (i % 50)} for i in range(500)])
        coll.add_index({"type": "fulltext", "fields": ["text"], "minLength": 3, "name": "ft"})

        def find(q):
            return sorted(db.aql.execute("FOR d IN FULLTEXT(texts, 'text', @q) RETURN d._key", bind_vars={"q": q}))

        assert find("word7") == ["107", "157", "207", "257", "307", "357", "407", "457", "57", "7"]
        coll.insert({"_key": "new", "text": "Brand new words"})
        coll.update({"_key": "7", "text": "changed"})
        coll.delete({"_key": "57"})
        assert find("brand") == ["new"]
        assert find("word7") == ["107", "157", "207", "257", "307", "357", "407", "457"]
        assert find("changed") == ["7"]
        assert len(find("prefix:word4")) == 110
        srv.restart()
        db = srv.client().db("_system")
        # The index is rebuilt in the background; FULLTEXT answers the same meanwhile (it
        # scans until the index is ready).
        assert find("brand") == ["new"]
        assert find("word7,-word17") == ["107", "157", "207", "257", "307", "357", "407", "457"]
        assert find("word7,-prefix:chan") == find("word7")
        assert find("changed,|brand") == ["7", "new"]
        listed = db.collection("texts").get_index("ft")
        assert listed.get("min_length", listed.get("minLength")) == 3
    finally:
        srv.stop()
