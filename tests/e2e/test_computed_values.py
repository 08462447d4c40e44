"""Computed values through the real binary: expressions over @doc applied on the writes their
computeOn names, overwrite, keepNull and failOnWarning as ArangoDB documents them,
expressions that read data refused when a collection is created or changed, and restores
that run no expression."""
import pytest
from arango.exceptions import DocumentInsertError

from conftest import unique


def test_computed_values_follow_compute_on_overwrite_and_keep_null(db):
    coll = db.create_collection(unique("people"), computedValues=[
        {"name": "fullName", "expression": "RETURN CONCAT(@doc.firstName, ' ', @doc.lastName)",
         "overwrite": True, "computeOn": ["insert", "update", "replace"]},
        {"name": "initial", "expression": "RETURN LEFT(@doc.firstName, 1)",
         "overwrite": False, "computeOn": ["insert"]},
        {"name": "nickname", "expression": "RETURN @doc.nick ? UPPER(@doc.nick) : null",
         "keepNull": False, "computeOn": ["insert", "update"]},
        {"name": "created", "expression": "RETURN DATE_ISO8601(0)", "computeOn": ["insert"]},
        {"name": "ident", "expression": "RETURN [@doc._key, @doc._id]", "computeOn": ["insert"]},
    ])
    coll.insert({"_key": "ada", "firstName": "Ada", "lastName": "Lovelace"})
    doc = coll.get("ada")
    assert doc["fullName"] == "Ada Lovelace"
    assert doc["initial"] == "A"
    assert "nickname" not in doc, "keepNull false drops a null result"
    assert doc["created"] == "1970-01-01T00:00:00.000Z"
    assert doc["ident"] == ["ada", f"{coll.name}/ada"], "@doc holds _key and _id"
    generated = coll.insert({"firstName": "Gen", "lastName": "Erated"})
    assert coll.get(generated["_key"])["ident"] == [generated["_key"], generated["_id"]]

    coll.update({"_key": "ada", "lastName": "King", "nick": "countess"})
    doc = coll.get("ada")
    assert doc["fullName"] == "Ada King", "recomputed on update"
    assert doc["nickname"] == "COUNTESS"
    assert doc["initial"] == "A", "computeOn insert only: kept"

    coll.replace({"_key": "ada", "firstName": "Augusta", "lastName": "Byron"})
    doc = coll.get("ada")
    assert doc["fullName"] == "Augusta Byron"
    assert "initial" not in doc and "nickname" not in doc, "not computed on replace"

    coll.insert({"_key": "given", "firstName": "Grace", "lastName": "Hopper", "initial": "X",
                 "fullName": "given"})
    doc = coll.get("given")
    assert doc["initial"] == "X", "overwrite false keeps a given value"
    assert doc["fullName"] == "Grace Hopper", "overwrite true replaces it"

    # AQL writes apply them too.
    db.aql.execute(f"INSERT {{_key: 'aql', firstName: 'Alan', lastName: 'Turing'}} INTO {coll.name}")
    assert coll.get("aql")["fullName"] == "Alan Turing"


def test_expressions_that_read_data_are_refused_and_warnings_follow_fail_on_warning(db, http):
    other = db.create_collection(unique("other"))
    for expression in [f"RETURN LENGTH(FOR d IN {other.name} RETURN d)",
                       f"RETURN DOCUMENT('{other.name}/x')", "FOR v IN @doc.list RETURN v",
                       "LET x = 1 RETURN x", "RETURN @other"]:
        r = http.post(f"/_db/{db.name}/_api/collection", json={
            "name": unique("refused"), "computedValues": [{"name": "v", "expression": expression}]})
        assert (r.status_code, r.json()["errorNum"]) == (400, 10), expression
        assert "invalid 'computedValues' entry" in r.json()["errorMessage"]
    coll = db.create_collection(unique("later"))
    r = http.put(f"/_db/{db.name}/_api/collection/{coll.name}/properties", json={
        "computedValues": [{"name": "v", "expression": "RETURN DOCUMENT('a/b')"}]})
    assert (r.status_code, r.json()["errorNum"]) == (400, 10)

    lenient = db.create_collection(unique("lenient"), computedValues=[
        {"name": "ratio", "expression": "RETURN @doc.a / @doc.b", "overwrite": True}])
    lenient.insert({"_key": "z", "a": 1, "b": 0})
    assert lenient.get("z")["ratio"] is None, "a warning gives null"
    strict = db.create_collection(unique("strict"), computedValues=[
        {"name": "ratio", "expression": "RETURN @doc.a / @doc.b", "overwrite": True,
         "failOnWarning": True}])
    strict.insert({"_key": "ok", "a": 1, "b": 4})
    assert strict.get("ok")["ratio"] == 0.25
    with pytest.raises(DocumentInsertError):
        strict.insert({"_key": "z", "a": 1, "b": 0})
    assert strict.count() == 1


def test_restored_documents_keep_their_dumped_attributes(db, http):
    """ArangoDB: "no expressions are executed when restoring dumps"; documents come back as
    they are in the dump."""
    coll = db.create_collection(unique("restored"), computedValues=[
        {"name": "stamp", "expression": "RETURN 'computed'", "overwrite": True}])
    lines = '{"_key": "a", "_rev": "_h0000000-", "stamp": "dumped"}\n{"_key": "b"}\n'
    r = http.put(f"/_db/{db.name}/_api/replication/restore-data?collection={coll.name}",
                 data=lines.encode())
    assert r.status_code == 200, r.text
    assert coll.get("a")["stamp"] == "dumped"
    assert "stamp" not in coll.get("b")
    coll.insert({"_key": "c", "stamp": "given"})
    assert coll.get("c")["stamp"] == "computed", "an ordinary insert computes it"
