"""FILTER through an inverted index with python-arango: `FOR d IN coll OPTIONS {indexHint,
forceIndexHint, waitForSync}` finds what the full scan finds, explain shows the IndexNode with
the inverted index, a forced hint the index cannot serve is error 1577, and MINHASH_MATCH()
works outside SEARCH."""
import pytest
from arango.exceptions import AQLQueryExecuteError

from conftest import unique

HINT = "OPTIONS {indexHint: 'inv', forceIndexHint: true, waitForSync: true}"


def keys(db, query, **bind):
    return sorted(db.aql.execute(query, bind_vars=bind))


def test_filter_through_an_inverted_index(db):
    fruits = db.create_collection(unique("fruits"))
    names = ["apple", "pear", "peach", "plum", "banana", "grape"]
    docs = []
    for i in range(120):
        doc = {"_key": f"f{i}", "n": i % 10, "text": "red fox" if i % 4 == 0 else "blue dog"}
        if i % 7:
            doc["name"] = names[i % len(names)]
        docs.append(doc)
    fruits.insert_many(docs)
    fruits.add_index(
        {
            "type": "inverted",
            "name": "inv",
            "fields": ["name", "n", {"name": "text", "analyzer": "text_en"}],
        }
    )
    cases = [
        ("d.name == @v", {"v": "apple"}),
        ("d.name IN ['pear', 'plum'] AND d.n >= 3", {}),
        ("STARTS_WITH(d.name, 'pe') OR d.n > 8", {}),
        ("d.name != 'apple' AND d.n < 5 AND d.n > 1", {}),
        ("LIKE(d.name, '%an%')", {}),
    ]
    for condition, bind in cases:
        got = keys(db, f"FOR d IN {fruits.name} {HINT} FILTER {condition} RETURN d._key", **bind)
        want = keys(db, f"FOR d IN {fruits.name} FILTER {condition} RETURN d._key", **bind)
        assert want, condition
        assert got == want, condition
    # PHRASE has no meaning outside an index: only through it.
    phrase = keys(db, f"FOR d IN {fruits.name} {HINT} FILTER PHRASE(d.text, 'red fox') RETURN d._key")
    assert phrase == sorted(f"f{i}" for i in range(0, 120, 4))

    plan = db.aql.explain(f"FOR d IN {fruits.name} {HINT} FILTER d.name == 'apple' RETURN d")
    index_nodes = [n for n in plan["nodes"] if n["type"] == "IndexNode"]
    assert len(index_nodes) == 1
    assert index_nodes[0]["indexes"][0]["type"] == "inverted"
    assert index_nodes[0]["indexes"][0]["name"] == "inv"
    assert not [n for n in plan["nodes"] if n["type"] == "FilterNode"]

    with pytest.raises(AQLQueryExecuteError) as err:
        db.aql.execute(f"FOR d IN {fruits.name} {HINT} FILTER LENGTH(d.name) == 4 RETURN d")
    assert err.value.error_code == 1577


def test_minhash_match_outside_search(db):
    db.create_analyzer(
        "mh_e2e",
        "minhash",
        {"numHashes": 16, "analyzer": {"type": "segmentation", "properties": {"case": "lower"}}},
        [],
    )
    texts = db.create_collection(unique("texts"))
    texts.insert_many(
        [
            {"_key": "a", "text": "the quick brown fox"},
            {"_key": "b", "text": "lorem ipsum dolor"},
            {"_key": "c", "text": "the brown fox is quick"},
        ]
    )
    found = keys(
        db,
        f"FOR d IN {texts.name} FILTER MINHASH_MATCH(d.text, 'quick brown fox the', 1, 'mh_e2e') "
        "RETURN d._key",
    )
    assert found == ["a"]
    assert list(db.aql.execute("RETURN MINHASH_MATCH('a b', 'b a', 'mh_e2e')")) == [True]
