"""Diagnostics endpoints against the real binary, through python-arango where the pinned driver
has a method: support-info, the deployment id (kept across a restart), the recordings of API
calls and AQL queries, the structured log parameters, and that a user without administrative
access to `_system` is refused them as ArangoDB refuses them."""

import uuid

import pytest
import requests
from arango.exceptions import DatabaseSupportInfoError, ServerAPICallsError

from conftest import ROOT, Server, unique


def test_support_info_describes_the_single_server(sys_db, http, db):
    info = sys_db.support_info()
    assert info["deployment"]["type"] == "single"
    host = info["host"]
    assert host["role"] == "SINGLE"
    assert host["numberOfCores"]["value"] > 0
    assert host["physicalMemory"]["value"] > 0
    assert host["processStats"]["residentSetSize"] > 0
    assert info["date"].endswith("Z")
    # `_system` only, as in ArangoDB.
    with pytest.raises(DatabaseSupportInfoError) as refused:
        db.support_info()
    assert refused.value.http_code == 403
    assert refused.value.error_code == 1230


def test_deployment_id_is_kept_across_a_restart(tmp_root):
    server = Server(tmp_root / unique("deployment")).start()
    try:
        first = requests.get(f"{server.url}/_admin/deployment/id", auth=ROOT, timeout=30)
        assert first.status_code == 200, first.text
        deployment = first.json()["id"]
        uuid.UUID(deployment)
        server.restart()
        again = requests.get(f"{server.url}/_admin/deployment/id", auth=ROOT, timeout=30)
        assert again.json() == {"id": deployment}
        info = server.client().db("_system", username="root", password="").support_info()
        assert info["deployment"]["id"] == deployment
    finally:
        server.stop()


def test_api_calls_are_recorded_newest_first(sys_db, db):
    collection = unique("calls")
    db.create_collection(collection)
    db.collection(collection).insert({"_key": "a"})
    calls = sys_db.api_calls()["calls"]
    assert calls[0]["path"] == "/_admin/server/api-calls"
    assert calls[0]["database"] == "_system"
    inserted = next(c for c in calls if c["path"] == f"/_api/document/{collection}")
    assert inserted["requestType"] == "POST"
    assert inserted["database"] == db.name
    assert inserted["timeStamp"].endswith("Z")
    assert calls.index(inserted) < next(
        i for i, c in enumerate(calls) if c["path"] == "/_api/collection" and c["database"] == db.name
    ), "newest first"


def test_aql_queries_are_recorded_with_their_bind_parameters(sys_db, db):
    marker = unique("q")
    assert list(db.aql.execute("RETURN [@x, @m]", bind_vars={"x": 7, "m": marker})) == [[7, marker]]
    queries = sys_db.aql.history()["queries"]
    mine = next(q for q in queries if q["bindVars"].get("m") == marker)
    assert mine["query"] == "RETURN [@x, @m]"
    assert mine["bindVars"] == {"x": 7, "m": marker}
    assert mine["database"] == db.name
    assert mine["timeStamp"].endswith("Z")


def test_structured_log_parameters_are_set_and_show_in_the_request_log(tmp_path):
    log_file = tmp_path / "quiver.log"
    server = Server(
        tmp_path / "data",
        extra_args=[f"--log.output=file://{log_file}", "--log.level=requests=debug"],
    ).start()
    try:
        sys_db = server.client().db("_system", username="root", password="")
        assert sys_db.log_settings() == {}
        assert sys_db.set_log_settings(database=True, url=True) == {"database": True, "url": True}
        assert sys_db.log_settings() == {"database": True, "url": True}
        sys_db.version()
        assert sys_db.set_log_settings(url=False, username=True) == {"database": True, "username": True}
        sys_db.version()
    finally:
        server.stop()
    lines = [line for line in log_file.read_text().splitlines() if "/_api/version" in line]
    assert any("[database: _system]" in line and "[url: /_api/version]" in line for line in lines), lines
    assert any("[username: root]" in line and "[url:" not in line for line in lines), lines


def test_a_user_without_admin_access_is_refused(sys_db, client, db):
    user = unique("u")
    sys_db.create_user(user, "pw")
    try:
        sys_db.update_permission(user, "rw", db.name)
        sys_db.update_permission(user, "ro", "_system")
        as_user_system = client.db("_system", username=user, password="pw")
        with pytest.raises(ServerAPICallsError) as refused:
            as_user_system.api_calls()
        assert refused.value.http_code == 403
        with pytest.raises(DatabaseSupportInfoError) as refused:
            as_user_system.support_info()
        assert refused.value.http_code == 403
        base = f"{client.hosts[0]}/_db/_system"
        for method, path in [
            ("GET", "/_admin/server/aql-queries"),
            ("GET", "/_admin/log/structured"),
            ("PUT", "/_admin/log/structured"),
        ]:
            r = requests.request(method, base + path, auth=(user, "pw"), json={}, timeout=30)
            assert r.status_code == 403, (path, r.text)
            assert r.json()["error"] is True
        # Read access is enough for the deployment id and the public options.
        for path in ["/_admin/deployment/id", "/_admin/options-public"]:
            r = requests.get(base + path, auth=(user, "pw"), timeout=30)
            assert r.status_code == 200, (path, r.text)
    finally:
        sys_db.delete_user(user, ignore_missing=True)
