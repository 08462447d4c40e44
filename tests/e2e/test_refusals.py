"""Features refused on purpose answer what ArangoDB 3.12 answers without them, through the
real python-arango driver: the JavaScript features (Foxx, tasks, user-defined AQL
functions, routing reload, execute) 501 with error 9 as a server without a JavaScript
engine, the cluster administration 403 with error 11, the coordinator endpoint list 501
with error 9 and the cluster inventory 403 with error 1471 as a single server."""
import pytest
from arango.exceptions import ArangoServerError


def refused(call):
    with pytest.raises(ArangoServerError) as err:
        call()
    return err.value.http_code, err.value.error_code


def test_javascript_features_are_refused(db):
    assert refused(lambda: db.foxx.services()) == (501, 9)
    assert refused(lambda: db.foxx.create_service("/mount", "/nowhere.zip")) == (501, 9)
    assert refused(lambda: db.tasks()) == (501, 9)
    assert refused(lambda: db.create_task(name="t", command="return 1", period=1)) == (501, 9)
    assert refused(lambda: db.aql.functions()) == (501, 9)
    assert refused(lambda: db.aql.create_function("my::f", "function () { return 1; }")) == (
        501,
        9,
    )
    assert refused(lambda: db.reload_routing()) == (501, 9)
    assert refused(lambda: db.execute("return 1")) == (501, 9)
    # The server stays up and serves the rest.
    assert db.version().startswith("3.12")


def test_cluster_routes_are_refused_on_a_single_server(sys_db):
    assert refused(lambda: sys_db.cluster.health()) == (403, 11)
    assert refused(lambda: sys_db.cluster.server_statistics("PRMR-1")) == (403, 11)
    assert refused(lambda: sys_db.cluster.toggle_maintenance_mode("on")) == (403, 11)
    assert refused(lambda: sys_db.cluster.endpoints()) == (501, 9)
    # A single server has no cluster inventory: only a coordinator answers it.
    assert refused(lambda: sys_db.replication.cluster_inventory()) == (403, 1471)
    assert sys_db.role() == "SINGLE"

