"""A really full disk: the real binary on a 64 MB file system (tmpfs) with its default 32 MiB
WAL segments. Writes run until the disk is full (error 1104); dropping a collection must then
work (the disk reserve gives the catalog its space), free the space at once, and let writes go
on; the data that was kept survives a restart.

Mounting a file system needs root (CI runs as root); elsewhere the test cannot run.
"""

import os
import subprocess
import time

import pytest
import requests

from conftest import Server, unique

MIB = 1 << 20


@pytest.fixture()
def small_fs(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a 64 MB tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(base, name, limit=40_000):
    """Inserts batches of 100 documents of 2 KB until one fails; returns (stored, error)."""
    doc = {"pad": "x" * 2000}
    stored = 0
    while stored < limit:
        r = requests.post(f"{base}/_api/document/{name}", json=[doc] * 100, timeout=60)
        body = r.json()
        if r.status_code >= 400:
            return stored, body
        failed = [d for d in body if d.get("error")]
        if failed:
            return stored, failed[0]
        stored += 100
    return stored, None


def metric(base, name):
    text = requests.get(f"{base}/_admin/metrics/v2", timeout=30).text
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"metric {name} not found")


def test_a_full_disk_can_be_freed_by_dropping_a_collection(small_fs):
    data = small_fs / "data"
    srv = Server(data, extra_args=["--server.authentication", "false"]).start()
    try:
        base = srv.url
        assert (data / "RESERVE").stat().st_size >= MIB
        big, keep = unique("big"), unique("keep")
        for name in (keep, big):
            assert requests.post(f"{base}/_api/collection", json={"name": name}, timeout=30).ok
        kept = requests.post(f"{base}/_api/document/{keep}", json={"_key": "k", "v": 1}, timeout=30)
        assert kept.status_code in (201, 202), kept.text

        stored, error = fill(base, big)
        assert error is not None, "the 64 MB file system never filled up"
        assert error["errorNum"] == 1104, error
        assert stored > 10_000, stored

        # The way out: the drop needs a catalog write, which the reserve makes possible.
        dropped = requests.delete(f"{base}/_api/collection/{big}", timeout=60)
        assert dropped.status_code == 200, dropped.text
        assert metric(base, "quiver_storage_disk_reserve_releases_total") >= 1

        # The dropped documents' space (datafiles and WAL segments) comes back within seconds.
        deadline = time.time() + 30
        while free_bytes(small_fs) < 40 * MIB and time.time() < deadline:
            time.sleep(0.2)
        assert free_bytes(small_fs) >= 40 * MIB, free_bytes(small_fs)

        # Writes go on, and the reserve is taken again once there is room.
        again = unique("again")
        assert requests.post(f"{base}/_api/collection", json={"name": again}, timeout=30).ok
        stored_again, _ = fill(base, again, limit=5_000)
        assert stored_again == 5_000
        deadline = time.time() + 10
        while not (data / "RESERVE").exists() and time.time() < deadline:
            time.sleep(0.2)
        assert (data / "RESERVE").exists()
        assert metric(base, "quiver_storage_disk_reserve_bytes") >= MIB

        srv.restart()
        base = srv.url
        r = requests.get(f"{base}/_api/document/{keep}/k", timeout=30)
        assert r.status_code == 200 and r.json()["v"] == 1, r.text
        count = requests.get(f"{base}/_api/collection/{again}/count", timeout=30).json()["count"]
        assert count == 5_000
        assert requests.get(f"{base}/_api/collection/{big}", timeout=30).status_code == 404
    finally:
        srv.stop()


def test_a_server_restarted_on_a_full_disk_recovers_and_frees_space(small_fs):
    data = small_fs / "data"
    srv = Server(data, extra_args=["--server.authentication", "false"]).start()
    try:
        base = srv.url
        name = unique("fill")
        assert requests.post(f"{base}/_api/collection", json={"name": name}, timeout=30).ok
        stored, error = fill(base, name)
        assert error is not None and error["errorNum"] == 1104, error
        srv.kill()
        # Startup on the full disk gives the reserve back before recovery.
        srv.start()
        base = srv.url
        count = requests.get(f"{base}/_api/collection/{name}/count", timeout=60).json()["count"]
        assert count >= stored, (count, stored)
        truncated = requests.put(f"{base}/_api/collection/{name}/truncate", timeout=60)
        assert truncated.status_code == 200, truncated.text
        deadline = time.time() + 30
        while free_bytes(small_fs) < 30 * MIB and time.time() < deadline:
            time.sleep(0.2)
        assert free_bytes(small_fs) >= 30 * MIB, free_bytes(small_fs)
        ok = requests.post(f"{base}/_api/document/{name}", json={"_key": "after"}, timeout=30)
        assert ok.status_code in (201, 202), ok.text
    finally:
        srv.stop()
