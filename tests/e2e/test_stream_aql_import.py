"""AQL queries and imports inside stream transactions (x-arango-trx-id on /_api/cursor and
/_api/import) through python-arango's TransactionDatabase."""
import pytest
from arango.exceptions import AQLQueryExecuteError, TransactionCommitError

from conftest import unique


def keys(db, name):
    return list(db.aql.execute(f"FOR d IN {name} SORT d._key RETURN d._key"))


def test_aql_and_import_in_transaction(db):
    name = unique("c")
    db.create_collection(name)
    tdb = db.begin_transaction(write=[name])
    tdb.aql.execute(f"FOR k IN ['a', 'b'] INSERT {{_key: k}} INTO {name}")
    result = tdb.collection(name).import_bulk([{"_key": "c"}, {"_key": "d"}])
    assert result["created"] == 2 and result["errors"] == 0
    # The transaction sees its own writes; nobody else does before the commit.
    assert keys(tdb, name) == ["a", "b", "c", "d"]
    assert list(tdb.aql.execute(f"FOR d IN {name} FILTER d._key == 'c' RETURN d._key")) == ["c"]
    assert keys(db, name) == []
    tdb.commit_transaction()
    assert keys(db, name) == ["a", "b", "c", "d"]


def test_aborted_transaction_discards_query_writes(db):
    name = unique("c")
    db.create_collection(name)
    tdb = db.begin_transaction(write=[name])
    tdb.aql.execute(f"INSERT {{_key: 'x'}} INTO {name}")
    tdb.abort_transaction()
    assert keys(db, name) == []


def test_failing_query_after_writes_aborts_the_transaction(db):
    name = unique("c")
    db.create_collection(name)
    tdb = db.begin_transaction(write=[name])
    tdb.aql.execute(f"INSERT {{_key: 'x'}} INTO {name}")
    with pytest.raises(AQLQueryExecuteError) as e:
        tdb.aql.execute("FOR")
    assert e.value.error_code == 1501
    assert tdb.transaction_status() == "running"
    with pytest.raises(AQLQueryExecuteError) as e:
        tdb.aql.execute(f"FOR k IN ['y', 'x'] INSERT {{_key: k}} INTO {name}")
    assert e.value.error_code == 1210
    assert tdb.transaction_status() == "aborted"
    with pytest.raises(TransactionCommitError) as e:
        tdb.commit_transaction()
    assert e.value.error_code == 1653
    assert keys(db, name) == []
