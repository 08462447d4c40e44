"""Geo functions through an inverted index with python-arango against the real binary: a
geojson analyzer on an inverted index field, FILTER with GEO_DISTANCE / GEO_IN_RANGE /
GEO_CONTAINS / GEO_INTERSECTS under `indexHint` + `forceIndexHint` finds what the full scan
finds, explain shows the IndexNode, SEARCH over a search-alias view of the index answers the
same, a field without a geo analyzer is error 1577 when forced, and TOKENS() of geo values."""
import pytest
from arango.exceptions import AQLQueryExecuteError

from conftest import unique

HINT = "OPTIONS {indexHint: 'inv', forceIndexHint: true, waitForSync: true}"

CITIES = {
    "berlin": (52.5163, 13.3777),
    "cologne": (50.9322, 6.94),
    "paris": (48.8566, 2.3522),
    "nyc": (40.78, -73.97),
    "suva": (-18.1416, 178.4419),
    "apia": (-13.8333, -171.7667),
}

GERMANY = {
    "type": "Polygon",
    "coordinates": [[[5.5, 47.0], [15.5, 47.0], [15.5, 55.0], [5.5, 55.0], [5.5, 47.0]]],
}


def keys(db, query, **bind):
    return sorted(db.aql.execute(query, bind_vars=bind))


def test_geo_filter_through_an_inverted_index_and_a_search_alias_view(db):
    assert db.create_analyzer("geo_json", "geojson", {"type": "shape"}, [])
    coll = db.create_collection(unique("places"))
    coll.insert_many(
        [
            {"_key": k, "location": {"type": "Point", "coordinates": [lng, lat]}, "name": k}
            for k, (lat, lng) in CITIES.items()
        ]
        + [
            {"_key": "rhine", "location": {"type": "LineString",
                                           "coordinates": [[6.9, 50.9], [8.2, 50.0]]}},
        ]
    )
    coll.add_index(
        {
            "type": "inverted",
            "name": "inv",
            "fields": [{"name": "location", "analyzer": "geo_json"}, "name"],
        }
    )
    coll.add_index({"type": "inverted", "name": "plain", "fields": ["location"]})
    cases = [
        ("GEO_DISTANCE(d.location, @p) < 600000", {"p": [6.94, 50.9322]}),
        ("GEO_DISTANCE(@p, d.location) >= 1000000", {"p": [6.94, 50.9322]}),
        ("GEO_IN_RANGE(d.location, @p, 100000, 900000, false, true)", {"p": [6.94, 50.9322]}),
        ("GEO_CONTAINS(@r, d.location)", {"r": GERMANY}),
        ("GEO_INTERSECTS(d.location, @r) AND d.name != 'berlin'", {"r": GERMANY}),
        ("GEO_DISTANCE(d.location, [179, -16]) < 1500000", {}),
    ]
    view = db.create_view(
        unique("alias"), "search-alias", {"indexes": [{"collection": coll.name, "index": "inv"}]}
    )
    for condition, bind in cases:
        want = keys(db, f"FOR d IN {coll.name} FILTER {condition} RETURN d._key", **bind)
        assert want, condition
        got = keys(db, f"FOR d IN {coll.name} {HINT} FILTER {condition} RETURN d._key", **bind)
        assert got == want, condition
        searched = keys(
            db,
            f"FOR d IN {view['name']} SEARCH {condition} OPTIONS {{waitForSync: true}} "
            "RETURN d._key",
            **bind,
        )
        assert searched == want, condition

    plan = db.aql.explain(
        f"FOR d IN {coll.name} {HINT} FILTER GEO_DISTANCE(d.location, [6.94, 50.93]) < 600000 "
        "RETURN d"
    )
    index_nodes = [n for n in plan["nodes"] if n["type"] == "IndexNode"]
    assert len(index_nodes) == 1
    assert index_nodes[0]["indexes"][0]["type"] == "inverted"
    assert index_nodes[0]["indexes"][0]["name"] == "inv"
    assert not [n for n in plan["nodes"] if n["type"] == "FilterNode"]

    # The identity analyzer indexes no geo terms: the index cannot serve a geo function.
    with pytest.raises(AQLQueryExecuteError) as err:
        db.aql.execute(
            f"FOR d IN {coll.name} OPTIONS {{indexHint: 'plain', forceIndexHint: true}} "
            "FILTER GEO_DISTANCE(d.location, [6.94, 50.93]) < 600000 RETURN d"
        )
    assert err.value.error_code == 1577


def test_tokens_of_geo_values(db):
    assert db.create_analyzer("geo_json", "geojson", {}, [])
    assert db.create_analyzer("geo_pair", "geopoint", {}, [])
    [point] = db.aql.execute(
        "RETURN TOKENS({type: 'Point', coordinates: [6.94, 50.93]}, 'geo_json')"
    )
    assert point and all(isinstance(t, str) for t in point)
    # One covering cell at maxLevel 23 (0x17), and its holders from minLevel 4 up.
    assert [t for t in point if t.startswith("c")] == [t for t in point if t.startswith("c17/")]
    assert len([t for t in point if t.startswith("c")]) == 1
    assert len([t for t in point if t.startswith("a")]) == 20
    [pair] = db.aql.execute("RETURN TOKENS([50.93, 6.94], 'geo_pair')")
    assert pair == point
    [text] = db.aql.execute("RETURN TOKENS('not a shape', 'geo_json')")
    assert text == []
