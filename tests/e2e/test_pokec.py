"""End-to-end: the Pokec benchmark pipeline (`quiver bench pokec generate | load | run`) at a
tiny scale against the real `quiver` binary.

Checks the generated files, that the import leaves exactly the generated counts in database
`pokec` (through python-arango), and that every workload either matches the checksums the
generator computed (neighbor counts, path lengths, aggregation total, read/write counts) or is
reported as not implemented by the server (501) — nothing may fail. The server keeps
authentication on; the bench client sends root's empty password, and a wrong one is refused.
"""
import json
import os
import subprocess
from pathlib import Path

import pytest
from arango import ArangoClient

REPO = Path(__file__).resolve().parents[2]
SCALE = "0.0003"  # 490 profiles, 9,187 relations


def pokec_cmd():
    server = os.environ.get("QUIVER_BIN") or str(REPO / "target" / "debug" / "quiver")
    if not os.path.exists(server):
        pytest.fail(f"quiver binary not found at {server}; build it or set QUIVER_BIN")
    return [server, "bench", "pokec"]


def run(args, timeout=120):
    proc = subprocess.run(pokec_cmd() + args, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("pokec")
    meta = json.loads(run(["generate", "--scale", SCALE, "--out", str(out), "--quiet"]))
    return out, meta


def test_generate_is_deterministic(dataset, tmp_path):
    out, meta = dataset
    assert meta["profiles"] == 490 and meta["relations"] == 9187
    again = json.loads(run(["generate", "--scale", SCALE, "--out", str(tmp_path), "--quiet"]))
    assert again == meta
    for name in ["profiles.jsonl", "relations.jsonl", "ids100000.json", "shortest1000.json"]:
        assert (out / name).read_bytes() == (tmp_path / name).read_bytes(), name
    assert len((out / "profiles.jsonl").read_text().splitlines()) == 490
    assert len(json.loads((out / "warmup1000.json").read_text())) == 49


def test_bad_scale_is_rejected(tmp_path):
    proc = subprocess.run(pokec_cmd() + ["generate", "--scale", "0", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    assert "scale must be" in proc.stderr and "error 10" in proc.stderr


@pytest.fixture()
def server(tmp_path):
    """A server of its own with authentication on (the default): `quiver bench pokec` sends
    root's empty password unless told otherwise (--server.username/--server.password)."""
    from conftest import Server

    srv = Server(tmp_path / "pokec-db").start()
    yield srv
    srv.stop()


def test_wrong_password_is_refused(dataset, server):
    out, _ = dataset
    endpoint = f"tcp://127.0.0.1:{server.port}"
    for sub in ["load", "run"]:
        proc = subprocess.run(pokec_cmd() + [sub, "--endpoint", endpoint, "--dir", str(out),
                                             "--server.password", "wrong"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1, (sub, proc.stdout, proc.stderr)
        assert "HTTP 401" in proc.stderr, (sub, proc.stderr)
    # Nothing was imported: the refused load could not create database `pokec`.
    sys_db = ArangoClient(hosts=server.url).db("_system", username="root", password="")
    assert not sys_db.has_database("pokec")


def test_load_and_run(dataset, server, tmp_path):
    out, meta = dataset
    endpoint = f"tcp://127.0.0.1:{server.port}"
    pid = str(server.proc.pid)
    load = json.loads(run(["load", "--endpoint", endpoint, "--dir", str(out), "--server-pid", pid,
                           "--connections", "3", "--batch-bytes", "65536"]))
    assert load["countsMatch"] is True
    assert load["profiles"]["documents"] == 490 and load["relations"]["documents"] == 9187
    assert load["profiles"]["requests"] > 1  # batches really were split
    assert load["peakRssKiB"] > 0

    db = ArangoClient(hosts=server.url).db("pokec", username="root", password="")
    assert db.collection("profiles").count() == 490
    relations = db.collection("relations")
    assert relations.count() == 9187
    assert relations.properties()["key_options"]["key_generator"] == "autoincrement"
    profile = db.collection("profiles").get("P1")
    assert profile["_key"] == "P1"
    assert {"public", "gender", "AGE", "region", "I_like_books", "more"} <= set(profile)
    assert isinstance(profile["AGE"], int)

    report_path = tmp_path / "run.json"
    csv_path = tmp_path / "run.csv"
    run(["run", "--endpoint", endpoint, "--dir", str(out), "--server-pid", pid,
         "--restrict", "200", "--report", str(report_path), "--csv", str(csv_path)])
    report = json.loads(report_path.read_text())
    by_name = {w["name"]: w for w in report["workloads"]}
    assert set(by_name) == {"warmup", "shortest", "neighbors", "neighbors2", "singleRead",
                            "singleWrite", "singleWriteSync", "aggregation", "hardPath",
                            "neighbors2data"}
    for name, w in by_name.items():
        assert w["status"] in ("ok", "not implemented"), (name, w)
        if w["status"] == "ok" and w["expected"] is not None:
            assert w["result"] == w["expected"], (name, w)
    # Document workloads exist today and must succeed with the exact counts.
    for name, want in [("singleRead", 200), ("singleWrite", 200), ("singleWriteSync", 200),
                       ("aggregation", 490)]:
        assert by_name[name]["status"] == "ok", by_name[name]
        assert by_name[name]["result"] == want
    assert db.collection("profiles_temp").count() == 200
    assert report["server"]["peakRssKiB"] > 0
    assert len(csv_path.read_text().splitlines()) == 1 + len(by_name)
