"""Server administration through python-arango against the real binary: shutdown over HTTP
(`DELETE /_admin/shutdown`), compaction of every database (`PUT /_admin/compact`) and
read-only mode (`PUT /_admin/server/mode`)."""

import time

import jwt
import pytest
from arango import ArangoClient
from arango.exceptions import (
    CollectionCreateError,
    DatabaseCompactError,
    DocumentInsertError,
    ServerShutdownProgressError,
)

from conftest import Server

SECRET = "jwt-secret-of-the-admin-server-test-0123456789"


def superuser_token():
    now = int(time.time())
    return jwt.encode(
        {"iss": "arangodb", "iat": now, "exp": now + 3600, "server_id": "e2e"}, SECRET, algorithm="HS256"
    )


def test_delete_shutdown_stops_the_server(tmp_path):
    srv = Server(tmp_path / "data").start()
    try:
        sys_db = srv.client().db("_system", username="root", password="")
        col = sys_db.create_collection("kept")
        col.insert({"_key": "k", "v": 1})
        with pytest.raises(ServerShutdownProgressError) as progress:
            sys_db.shutdown_progress()
        assert progress.value.http_code == 405
        assert sys_db.shutdown() is True
        # The process ends by itself, cleanly, as on SIGTERM.
        assert srv.proc.wait(timeout=30) == 0
        srv.proc = None
        srv.start()
        sys_db = srv.client().db("_system", username="root", password="")
        assert sys_db.collection("kept").get("k")["v"] == 1
    finally:
        srv.stop()


def test_compact_is_for_the_superuser(tmp_path):
    srv = Server(tmp_path / "data", ["--server.jwt-secret", SECRET]).start()
    try:
        client = ArangoClient(hosts=srv.url, request_timeout=30)
        root = client.db("_system", username="root", password="")
        col = root.create_collection("c")
        col.insert_many([{"_key": str(i)} for i in range(100)])
        col.delete_many([{"_key": str(i)} for i in range(1, 100)])
        with pytest.raises(DatabaseCompactError) as refused:
            root.compact()
        assert refused.value.http_code == 403
        su = client.db("_system", superuser_token=superuser_token())
        assert su.compact(change_level=True, compact_bottom_most_level=True) == {}
        figures = col.statistics()
        assert figures["dead"]["count"] == 0
        assert figures["alive"]["count"] == 1
        assert col.count() == 1
    finally:
        srv.stop()


def test_read_only_mode_through_the_driver(tmp_path):
    srv = Server(tmp_path / "data").start()
    try:
        sys_db = srv.client().db("_system", username="root", password="")
        col = sys_db.create_collection("ro")
        col.insert({"_key": "a"})
        assert sys_db.mode() == "default"
        sys_db.set_mode("readonly")
        assert sys_db.mode() == "readonly"
        with pytest.raises(DocumentInsertError) as refused:
            col.insert({"_key": "b"})
        assert refused.value.http_code == 403 and refused.value.error_code == 1004
        with pytest.raises(CollectionCreateError) as refused:
            sys_db.create_collection("other")
        assert refused.value.error_code == 11
        assert col.get("a")["_key"] == "a"
        assert list(sys_db.aql.execute("FOR d IN ro RETURN d._key")) == ["a"]
        sys_db.set_mode("default")
        col.insert({"_key": "b"})
        assert col.count() == 2
    finally:
        srv.stop()
