"""AQL functions that read the database catalog: COLLECTIONS(), SCHEMA_GET() and
SCHEMA_VALIDATE(), through python-arango, also inside a stream transaction."""
import pytest
from arango.exceptions import AQLQueryExecuteError

RULE = {
    "type": "object",
    "properties": {"n": {"type": "number"}},
    "required": ["n"],
}


def one(db, query, **bind):
    return list(db.aql.execute(query, bind_vars=bind))[0]


def test_collections_lists_this_database_only(db, sys_db):
    db.create_collection("alpha")
    db.create_collection("beta", edge=True)
    listed = one(db, "RETURN COLLECTIONS()")
    ids = {c["name"]: c["_id"] for c in listed}
    assert ids["alpha"] == db.collection("alpha").properties()["id"]
    assert ids["beta"] == db.collection("beta").properties()["id"]
    assert all(set(c) == {"_id", "name"} for c in listed)
    assert [c["name"] for c in listed] == sorted(c["name"] for c in listed)
    # Other databases do not see them.
    assert "alpha" not in {c["name"] for c in one(sys_db, "RETURN COLLECTIONS()")}
    # A stream transaction's queries run on a lent transaction: same answer.
    tdb = db.begin_transaction(read=["alpha"])
    assert {c["name"] for c in one(tdb, "RETURN COLLECTIONS()")} == set(ids)
    tdb.abort_transaction()


def test_schema_get_and_validate(db):
    db.create_collection(
        "typed", schema={"rule": RULE, "level": "moderate", "message": "need a number n"}
    )
    db.create_collection("free")
    schema = one(db, "RETURN SCHEMA_GET('typed')")
    assert schema["rule"] == RULE
    assert schema["level"] == "moderate"
    assert schema["message"] == "need a number n"
    assert one(db, "RETURN SCHEMA_GET('free')") is None
    assert one(db, "RETURN SCHEMA_VALIDATE({n: 1}, SCHEMA_GET('typed'))") == {"valid": True}
    assert one(db, "RETURN SCHEMA_VALIDATE({n: 'x'}, SCHEMA_GET('typed'))") == {
        "valid": False,
        "errorMessage": "need a number n",
    }
    # The level does not matter: the function asks whether the document is valid.
    assert one(
        db, "RETURN SCHEMA_VALIDATE({}, MERGE(SCHEMA_GET('typed'), {level: 'none'}))"
    )["valid"] is False
    assert one(db, "RETURN SCHEMA_VALIDATE({}, SCHEMA_GET('free'))") == {"valid": True}


def test_schema_get_of_a_missing_collection_is_an_error(db):
    with pytest.raises(AQLQueryExecuteError) as err:
        one(db, "RETURN SCHEMA_GET('nope')")
    assert err.value.error_code == 1203
