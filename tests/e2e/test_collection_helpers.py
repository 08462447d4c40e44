"""End-to-end: python-arango's collection helpers that are built on AQL (`find`,
`find_in_range`, `find_near`, `find_in_radius`, `find_in_box`, `find_by_text`, `has`, the
`*_match` and `*_many` methods) against the real binary, with the results ArangoDB gives."""

import pytest
from arango.exceptions import DocumentRevisionError

from conftest import unique

# GeoJSON order ([longitude, latitude]), as find_in_box reads the field: along the equator.
POINTS = {f"k{i}": [float(i - 1), 0.0] for i in range(1, 6)}
TEXTS = {"k1": "hello world", "k2": "help wanted", "k3": "goodbye", "k4": "hello again", "k5": "other"}


@pytest.fixture
def col(db):
    c = db.create_collection(unique("helpers"))
    c.insert_many(
        [{"_key": k, "n": i, "loc": POINTS[k], "text": TEXTS[k]} for i, k in enumerate(sorted(POINTS), 1)]
    )
    c.add_index({"type": "geo", "fields": ["loc"], "geoJson": True})
    c.add_index({"type": "fulltext", "fields": ["text"], "minLength": 3})
    return c


def keys(cursor):
    return sorted(d["_key"] for d in cursor)


def test_find_and_find_in_range_filter_skip_and_limit(col):
    assert keys(col.find({"n": 3})) == ["k3"]
    assert keys(col.find({"loc": [1.0, 0.0]})) == ["k2"]
    assert len(list(col.find({}, skip=1, limit=2))) == 2
    assert list(col.find({}, limit=0)) == []
    assert len(list(col.find({}, skip=4))) == 1
    # The upper bound is exclusive.
    assert keys(col.find_in_range("n", 2, 4)) == ["k2", "k3"]
    assert len(list(col.find_in_range("n", 1, 6, skip=1, limit=2))) == 2


def test_geo_helpers_order_by_distance_and_bound_by_radius_or_box(col):
    near = [d["_key"] for d in col.find_near(0.0, 0.1, limit=2)]
    assert near == ["k1", "k2"]
    assert [d["_key"] for d in col.find_near(0.0, 4.2, limit=3)] == ["k5", "k4", "k3"]
    within = list(col.find_in_radius(0.0, 0.0, 120_000, distance_field="dist"))
    assert sorted(d["_key"] for d in within) == ["k1", "k2"]
    dist = {d["_key"]: d["dist"] for d in within}
    assert dist["k1"] == pytest.approx(0.0, abs=1.0)
    assert dist["k2"] == pytest.approx(111_195, rel=0.01)
    assert keys(col.find_in_box(-1.0, -0.5, 1.0, 2.5)) == ["k1", "k2", "k3"]
    assert len(list(col.find_in_box(-1.0, -0.5, 1.0, 2.5, limit=2))) == 2


def test_find_by_text_matches_words_and_prefixes(col):
    assert keys(col.find_by_text("text", "hello")) == ["k1", "k4"]
    assert keys(col.find_by_text("text", "prefix:hel")) == ["k1", "k2", "k4"]
    assert len(list(col.find_by_text("text", "prefix:hel", limit=1))) == 1


def test_has_and_the_match_and_many_writers(col):
    assert col.has("k1") is True
    assert col.has("nope") is False
    rev = col.get("k1")["_rev"]
    assert col.has({"_key": "k1", "_rev": rev}) is True
    with pytest.raises(DocumentRevisionError):
        col.has({"_key": "k1", "_rev": "_not_a_rev_"}, check_rev=True)

    assert col.update_match({"n": 1}, {"m": 1}) == 1
    assert col.get("k1")["m"] == 1
    assert col.replace_match({"n": 2}, {"n": 2, "r": True}) == 1
    assert "text" not in col.get("k2")
    assert col.delete_match({"text": "other"}, limit=1) == 1
    assert col.has("k5") is False

    results = col.insert_many([{"_key": "k6"}, {"_key": "k1"}])
    assert results[0]["_key"] == "k6"
    assert results[1].error_code == 1210
    results = col.update_many([{"_key": "k6", "u": 1}, {"_key": "missing", "u": 1}])
    assert results[0]["_key"] == "k6"
    assert results[1].error_code == 1202
    results = col.delete_many([{"_key": "k6"}, {"_key": "missing"}])
    assert results[0]["_key"] == "k6"
    assert results[1].error_code == 1202
    assert keys(col.get_many(["k1", "missing", "k2"])) == ["k1", "k2"]
