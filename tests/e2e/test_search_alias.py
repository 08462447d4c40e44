"""Inverted indexes and search-alias views through the real binary with python-arango:
add_inverted_index, create_view(..., "search-alias"), update/replace of the index list, SEARCH
with the analyzer of the index definition and BM25, the errors, and a restart (the inverted
index is rebuilt from its collection and the view refers to it again)."""
import pytest
from arango.exceptions import IndexCreateError, ViewCreateError, ViewUpdateError

from conftest import Server, unique

SYNC = "OPTIONS {waitForSync: true}"


def keys(db, query, **bind):
    return sorted(db.aql.execute(query, bind_vars=bind))


def test_search_alias_view_with_python_arango(db):
    books = db.create_collection(unique("books"))
    books.insert_many(
        [
            {"_key": "b1", "title": "The quick brown fox", "year": 1990},
            {"_key": "b2", "title": "Quick thinking", "year": 2005},
            {"_key": "b3", "title": "Slow rivers", "year": 2020},
        ]
    )
    index = books.add_inverted_index(
        fields=[{"name": "title", "analyzer": "text_en"}, "year"], name="inv"
    )
    assert index["type"] == "inverted"
    assert index["name"] == "inv"
    listed = [i for i in books.indexes() if i["type"] == "inverted"]
    assert len(listed) == 1 and listed[0]["fields"] == [{"name": "title", "analyzer": "text_en"}, "year"]

    view = db.create_view(
        "alias", "search-alias", {"indexes": [{"collection": books.name, "index": "inv"}]}
    )
    assert view["type"] == "search-alias"
    assert view["indexes"] == [{"collection": books.name, "index": "inv"}]
    assert {v["name"]: v["type"] for v in db.views()} == {"alias": "search-alias"}

    # The index's analyzer applies without ANALYZER(): "quick" is a stemmed token of text_en.
    assert keys(db, f"FOR d IN alias SEARCH d.title == 'quick' {SYNC} RETURN d._key") == ["b1", "b2"]
    assert keys(db, "FOR d IN alias SEARCH PHRASE(d.title, 'brown fox') RETURN d._key") == ["b1"]
    ranked = list(
        db.aql.execute(
            "FOR d IN alias SEARCH d.title == 'quick' OR d.year > 2010 "
            "SORT BM25(d) DESC, d._key RETURN d._key"
        )
    )
    assert sorted(ranked) == ["b1", "b2", "b3"]
    # New writes reach the index.
    books.insert({"_key": "b4", "title": "quick quick quick"})
    assert keys(db, f"FOR d IN alias SEARCH d.title == 'quick' {SYNC} RETURN d._key") == ["b1", "b2", "b4"]

    # Update with "del", replace, errors.
    books.add_persistent_index(fields=["year"], name="by_year")
    with pytest.raises(ViewUpdateError) as err:
        db.update_view("alias", {"indexes": [{"collection": books.name, "index": "by_year"}]})
    assert err.value.error_code == 10
    updated = db.update_view(
        "alias", {"indexes": [{"collection": books.name, "index": "inv", "operation": "del"}]}
    )
    assert updated["indexes"] == []
    replaced = db.replace_view("alias", {"indexes": [{"collection": books.name, "index": "inv"}]})
    assert replaced["indexes"] == [{"collection": books.name, "index": "inv"}]
    with pytest.raises(ViewCreateError) as err:
        db.create_view("other", "search-alias", {"indexes": [{"collection": "nope", "index": "inv"}]})
    assert err.value.error_code == 10
    with pytest.raises(IndexCreateError) as err:
        books.add_inverted_index(fields=[{"name": "x", "analyzer": "no_such_analyzer"}])
    assert err.value.error_code == 10

    assert db.rename_view("alias", "alias2")
    assert db.delete_view("alias2")
    assert db.views() == []


def test_inverted_index_survives_restart(tmp_root):
    srv = Server(tmp_root / unique("inverted")).start()
    try:
        db = srv.client().db("_system", username="root", password="")
        coll = db.create_collection("texts")
        coll.insert_many([{"_key": str(i), "text": f"word{i % 10} common"} for i in range(300)])
        coll.add_inverted_index(fields=[{"name": "text", "analyzer": "text_en"}], name="inv")
        db.create_view("tv", "search-alias", {"indexes": [{"collection": "texts", "index": "inv"}]})
        query = f"FOR d IN tv SEARCH d.text == @w {SYNC} COLLECT WITH COUNT INTO n RETURN n"
        assert list(db.aql.execute(query, bind_vars={"w": "common"})) == [300]
        srv.restart()
        db = srv.client().db("_system", username="root", password="")
        assert db.view("tv")["indexes"] == [{"collection": "texts", "index": "inv"}]
        assert list(db.aql.execute(query, bind_vars={"w": "common"})) == [300]
        assert list(db.aql.execute(query, bind_vars={"w": "word3"})) == [30]
        # Dropping the collection drops its index and empties the view.
        db.delete_collection("texts")
        assert db.view("tv")["indexes"] == []
    finally:
        srv.stop()
