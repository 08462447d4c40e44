"""End-to-end: the AQL query results cache through python-arango against the real binary —
the startup options, the driver's cache API (properties, configure, entries, clear), cursors
answered from the cache, and that a kept result reaches only callers who may read what it
was read from."""

from arango import ArangoClient

from conftest import Server

QUERY = "FOR d IN secrets SORT d.n RETURN d.n"


def test_cache_through_the_driver_and_kept_results_respect_permissions(tmp_path):
    srv = Server(
        tmp_path / "data",
        ["--query.cache-mode", "demand", "--query.cache-entries", "5"],
        env={"ARANGODB_DEFAULT_ROOT_PASSWORD": "pw"},
    ).start()
    try:
        client = ArangoClient(hosts=srv.url)
        sys_db = client.db("_system", username="root", password="pw")
        props = sys_db.aql.cache.properties()
        assert props["mode"] == "demand"
        assert props["max_results"] == 5

        sys_db.create_database("shop")
        db = client.db("shop", username="root", password="pw")
        col = db.create_collection("secrets")
        col.insert_many([{"n": 1}, {"n": 2}])

        # demand: only queries that ask are kept.
        assert db.aql.execute(QUERY).cached() is False
        assert db.aql.execute(QUERY).cached() is False
        first = db.aql.execute(QUERY, cache=True)
        assert (first.cached(), list(first)) == (False, [1, 2])
        # The batch size is not part of the key (count is): the kept result comes in batches.
        again = db.aql.execute(QUERY, cache=True, batch_size=1)
        assert again.cached() is True
        assert list(again) == [1, 2]

        [entry] = db.aql.cache.entries()
        assert entry["query"] == QUERY
        assert entry["results"] == 2
        assert entry["hits"] >= 1
        assert entry["data_sources"] == ["secrets"]

        # A user who may not read the collection gets no kept result: the query runs and is
        # refused as it would be without the cache.
        sys_db.create_user("reader", "reader-pw")
        sys_db.update_permission("reader", "ro", "shop")
        sys_db.update_permission("reader", "none", "shop", "secrets")
        reader = client.db("shop", username="reader", password="reader-pw")
        try:
            reader.aql.execute(QUERY, cache=True)
            raise AssertionError("a reader without rights on the collection got its documents")
        except Exception as err:  # python-arango raises AQLQueryExecuteError
            assert getattr(err, "http_code", None) == 403, err
        # ... nor sees the entry in the listing.
        assert reader.aql.cache.entries() == []

        # A write makes the kept result stale; clear empties the database's cache.
        col.insert({"n": 3})
        assert db.aql.cache.entries() == []
        fresh = db.aql.execute(QUERY, cache=True)
        assert (fresh.cached(), list(fresh)) == (False, [1, 2, 3])
        assert db.aql.execute(QUERY, cache=True).cached() is True
        assert db.aql.cache.clear() is True
        assert db.aql.cache.entries() == []

        # configure through the driver; a new mode empties the cache.
        db.aql.execute(QUERY, cache=True)
        changed = db.aql.cache.configure(mode="on", max_results=10, include_system=True)
        assert (changed["mode"], changed["max_results"], changed["include_system"]) == (
            "on",
            10,
            True,
        )
        assert db.aql.cache.entries() == []
        assert db.aql.execute(QUERY).cached() is False
        assert db.aql.execute(QUERY).cached() is True
    finally:
        srv.stop()
