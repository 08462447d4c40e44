"""Hot backups end to end: `quiver backup create` while writers run, `list`, `restore` copies
the backup into an empty directory and a second server started on it holds a state that
existed, `delete`; a user who is not an administrator gets 403, an unknown id 404."""
import subprocess
import threading

import requests

from conftest import ROOT, Server, quiver_bin

BATCH = 10


def backup_cli(server, *args):
    return subprocess.run(
        [quiver_bin(), "backup", *args, "--server.endpoint", f"tcp://127.0.0.1:{server.port}"],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_backup_during_writes_opens_on_a_second_server(tmp_path):
    server = Server(tmp_path / "data").start()
    copy = None
    try:
        s = requests.Session()
        s.auth = ROOT
        r = s.post(server.url + "/_api/collection", json={"name": "c"}, timeout=30)
        assert r.status_code == 200, r.text
        acknowledged = [0]
        stop = threading.Event()

        def write():
            for i in range(100_000):
                if stop.is_set():
                    return
                docs = [{"_key": f"t{i}_{j}", "i": i} for j in range(BATCH)]
                r = s.post(server.url + "/_api/document/c", json=docs, timeout=30)
                assert r.status_code in (201, 202), r.text
                acknowledged[0] = i + 1

        writer = threading.Thread(target=write)
        writer.start()
        try:
            while acknowledged[0] < 50 and writer.is_alive():
                stop.wait(0.01)
            before = acknowledged[0]
            created = backup_cli(server, "create", "--label", "during")
            after = acknowledged[0]
        finally:
            stop.set()
            writer.join()
        assert created.returncode == 0, created.stderr
        backup_id = created.stdout.split()[-1]
        assert backup_id.endswith("Z_during"), created.stdout

        listed = backup_cli(server, "list")
        assert listed.returncode == 0, listed.stderr
        assert backup_id in listed.stdout
        r = s.post(server.url + "/_admin/backup/list", json={}, timeout=30)
        assert backup_id in r.json()["result"]["list"]

        r = s.post(server.url + "/_admin/backup/restore", json={"id": backup_id}, timeout=30)
        assert (r.status_code, r.json()["errorNum"]) == (501, 9), r.text
        assert backup_id in r.json()["errorMessage"]
        restored = backup_cli(
            server,
            "restore",
            "--identifier",
            backup_id,
            "--database.directory",
            str(tmp_path / "data"),
            "--target-directory",
            str(tmp_path / "restored"),
        )
        assert restored.returncode == 0, restored.stderr
        again = backup_cli(
            server,
            "restore",
            "--identifier",
            backup_id,
            "--database.directory",
            str(tmp_path / "data"),
            "--target-directory",
            str(tmp_path / "restored"),
        )
        assert again.returncode != 0 and "not empty" in again.stderr, again
        copy = Server(tmp_path / "restored").start()
        c = requests.post(
            copy.url + "/_api/cursor",
            json={"query": "FOR d IN c COLLECT i = d.i WITH COUNT INTO n RETURN [i, n]"},
            auth=ROOT,
            timeout=30,
        )
        assert c.status_code == 201, c.text
        groups = dict(map(tuple, c.json()["result"]))
        assert set(groups.values()) <= {BATCH}, "each insert all or nothing"
        n = len(groups)
        assert sorted(groups) == list(range(n)), "a prefix of the acknowledged inserts"
        assert before <= n <= after, (before, n, after)
        copy.stop()
        copy = None

        deleted = backup_cli(server, "delete", "--identifier", backup_id)
        assert deleted.returncode == 0, deleted.stderr
        assert not (tmp_path / "data" / "backups" / backup_id).exists()
        r = s.post(server.url + "/_admin/backup/delete", json={"id": backup_id}, timeout=30)
        assert (r.status_code, r.json()["errorNum"]) == (404, 404), r.text
        r = s.post(server.url + "/_admin/backup/list", json={}, timeout=30)
        assert r.json()["result"]["list"] == {}

        r = s.post(server.url + "/_api/user", json={"user": "plain", "passwd": "pw"}, timeout=30)
        assert r.status_code == 201, r.text
        for op in ("create", "list", "delete", "restore"):
            r = requests.post(
                server.url + f"/_admin/backup/{op}", json={}, auth=("plain", "pw"), timeout=30
            )
            assert r.status_code == 403, (op, r.text)
    finally:
        if copy is not None:
            copy.stop()
        server.stop()
