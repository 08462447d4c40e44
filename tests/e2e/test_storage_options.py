"""Collection storage options over HTTP: journalSize within 1 MiB ..= 1 GiB is used as given,
outside it is refused with error 10 (400) whether creating a collection or changing its
properties; a server started with a default journal size outside the bounds refuses to start."""
import subprocess
import tempfile

from conftest import quiver_bin, unique

MIB = 1024 * 1024
GIB = 1024 * MIB


def test_journal_size_in_range_is_used_as_given_and_out_of_range_is_refused(http):
    name = unique("journal")
    for bad in (MIB // 2, GIB + 1, 2 * GIB):
        r = http.post("/_api/collection", json={"name": name, "journalSize": bad})
        assert r.status_code == 400, (bad, r.text)
        assert r.json()["errorNum"] == 10, (bad, r.text)
    r = http.post("/_api/collection", json={"name": name, "journalSize": 3 * MIB})
    assert r.status_code == 200, r.text
    assert r.json()["journalSize"] == 3 * MIB
    r = http.put(f"/_api/collection/{name}/properties", json={"journalSize": GIB})
    assert r.status_code == 200, r.text
    assert r.json()["journalSize"] == GIB
    for bad in (MIB - 1, GIB + 1):
        r = http.put(f"/_api/collection/{name}/properties", json={"journalSize": bad})
        assert r.status_code == 400, (bad, r.text)
        assert r.json()["errorNum"] == 10, (bad, r.text)
    assert http.delete(f"/_api/collection/{name}").status_code == 200


def test_a_default_journal_size_below_the_minimum_stops_the_server():
    with tempfile.TemporaryDirectory() as data:
        out = subprocess.run(
            [
                quiver_bin(),
                "serve",
                "--server.endpoint",
                "tcp://127.0.0.1:0",
                "--database.directory",
                data,
                "--database.maximal-journal-size",
                "100KiB",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert out.returncode != 0, out.stdout + out.stderr
    assert "--database.maximal-journal-size" in out.stdout + out.stderr
