"""External versioning (ArangoDB 3.12 `versionAttribute`) through python-arango's
`version_attribute=`: only a higher version writes; a lower or equal one is a no-op write
that answers with the stored document's meta (`_rev == _old_rev`) and, when asked for, the
stored document as `old` and `new` (as arangod's transaction::Methods builds it)."""


def test_single_document_writes_follow_the_version(db):
    col = db.create_collection("versioned")
    meta = col.insert({"_key": "k", "ver": 5, "data": "v5"})
    rev = meta["_rev"]

    # Lower and equal versions: success, nothing written, meta of the stored document.
    for ver in (4, 5, 5.7):
        result = col.replace(
            {"_key": "k", "ver": ver, "data": "stale"}, version_attribute="ver"
        )
        assert (result["_rev"], result["_old_rev"]) == (rev, rev)
        result = col.update(
            {"_key": "k", "ver": ver, "data": "stale"},
            version_attribute="ver",
            return_new=True,
            return_old=True,
        )
        assert (result["_rev"], result["_old_rev"]) == (rev, rev)
        assert result["new"] == result["old"] == col.get("k")
        result = col.insert(
            {"_key": "k", "ver": ver, "data": "stale"},
            overwrite_mode="replace",
            version_attribute="ver",
        )
        assert result["_rev"] == rev
    assert col.get("k")["data"] == "v5"
    assert col.get("k")["_rev"] == rev

    # Higher: written.
    result = col.update({"_key": "k", "ver": 6, "data": "v6"}, version_attribute="ver")
    assert result["_old_rev"] == rev and result["_rev"] != rev
    assert col.get("k")["data"] == "v6"
    result = col.insert(
        {"_key": "k", "ver": 7, "data": "v7"},
        overwrite_mode="update",
        version_attribute="ver",
    )
    assert col.get("k")["data"] == "v7"

    # A version that is not a usable number never blocks.
    col.replace({"_key": "k", "ver": "1", "data": "text"}, version_attribute="ver")
    assert col.get("k")["data"] == "text"
    col.replace({"_key": "k", "ver": 3, "data": "after-text"}, version_attribute="ver")
    assert col.get("k")["data"] == "after-text"
    col.replace({"_key": "k", "ver": -1, "data": "negative"}, version_attribute="ver")
    assert col.get("k")["data"] == "negative"

    # Without the option the lower version is written as before.
    col.replace({"_key": "k", "ver": 1, "data": "unversioned"})
    assert col.get("k")["data"] == "unversioned"


def test_multi_document_writes_have_mixed_outcomes(db):
    col = db.create_collection("versioned_many")
    col.insert_many([{"_key": k, "ver": 5, "data": "v5"} for k in "abc"])
    before = {k: col.get(k)["_rev"] for k in "abc"}

    results = col.replace_many(
        [
            {"_key": "a", "ver": 6, "data": "new"},
            {"_key": "b", "ver": 5, "data": "new"},
            {"_key": "c", "ver": 1, "data": "new"},
        ],
        version_attribute="ver",
    )
    assert results[0]["_old_rev"] == before["a"] and results[0]["_rev"] != before["a"]
    assert (results[1]["_rev"], results[1]["_old_rev"]) == (before["b"], before["b"])
    assert (results[2]["_rev"], results[2]["_old_rev"]) == (before["c"], before["c"])
    assert [col.get(k)["data"] for k in "abc"] == ["new", "v5", "v5"]

    results = col.update_many(
        [{"_key": "b", "ver": 9, "data": "upd"}, {"_key": "c", "ver": 4, "data": "upd"}],
        version_attribute="ver",
    )
    assert results[0]["_rev"] != before["b"]
    assert results[1]["_rev"] == before["c"]

    results = col.insert_many(
        [{"_key": "a", "ver": 1, "data": "ins"}, {"_key": "d", "ver": 1, "data": "ins"}],
        overwrite_mode="replace",
        version_attribute="ver",
    )
    assert not any(isinstance(r, Exception) for r in results)
    assert [col.get(k)["data"] for k in "abcd"] == ["new", "upd", "v5", "ins"]


def test_aql_options_make_lower_versions_no_op_writes(db):
    col = db.create_collection("versioned_aql")
    col.insert_many([{"_key": "a", "ver": 5}, {"_key": "b", "ver": 5}])
    cursor = db.aql.execute(
        "FOR d IN @docs REPLACE d IN versioned_aql "
        "OPTIONS { versionAttribute: 'ver' } RETURN NEW",
        bind_vars={"docs": [{"_key": "a", "ver": 2}, {"_key": "b", "ver": 8}]},
    )
    new = list(cursor)
    # The skipped write returns the stored document and counts as executed, as in arangod
    # (writesExecuted = documents - errors).
    assert new[0] == col.get("a") and new[0]["ver"] == 5
    assert new[1]["ver"] == 8
    stats = cursor.statistics()
    assert (stats["modified"], stats["ignored"]) == (2, 0)
