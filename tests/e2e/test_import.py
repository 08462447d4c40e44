"""`quiver import` end to end: CSV with conversion, renamed and removed columns; JSON lines
with a malformed line (reported, non-zero exit, the rest imported), and with `--complete`
(the line named, nothing stored); a CSV row the server refuses with `--complete` (nothing
stored); a gzip JSON array from
standard input; edges with collection prefixes into a created edge collection."""
import gzip
import subprocess

from conftest import quiver_bin


def run_import(server, db, *args, stdin=None):
    return subprocess.run(
        [quiver_bin(), "import", "--server.endpoint", f"tcp://127.0.0.1:{server.port}",
         "--server.database", db.name, "--progress", "false", *args],
        input=stdin, capture_output=True, timeout=120,
    )


def test_csv_with_conversion_translation_and_removal(server, db, tmp_path):
    path = tmp_path / "people.csv"
    path.write_text(
        "exported by a tool\n"
        "id,name,age,vip,note,junk\n"
        'a,"Ann, the first",31,true,null,x\n'
        "b,Bob,2.5,false,,y\n"
    )
    proc = run_import(
        server, db, "--file", str(path), "--type", "csv", "--collection", "people",
        "--create-collection", "true", "--skip-lines", "1", "--translate", "id=_key",
        "--remove-attribute", "junk",
    )
    assert proc.returncode == 0, proc.stderr
    assert b"created: 2" in proc.stderr
    coll = db.collection("people")
    ann = coll.get("a")
    assert (ann["name"], ann["age"], ann["vip"], ann["note"]) == ("Ann, the first", 31, True, None)
    assert "junk" not in ann
    bob = coll.get("b")
    assert (bob["age"], bob["vip"]) == (2.5, False) and "note" not in bob
    # Again with --on-duplicate update: both are updated, nothing created.
    proc = run_import(
        server, db, "--file", str(path), "--type", "csv", "--collection", "people",
        "--skip-lines", "1", "--translate", "id=_key", "--on-duplicate", "update", "--convert", "false",
    )
    assert proc.returncode == 0, proc.stderr
    assert b"updated/replaced: 2" in proc.stderr
    assert coll.get("a")["age"] == "31"


def test_jsonl_reports_a_malformed_line_and_fails(server, db, tmp_path):
    db.create_collection("items")
    path = tmp_path / "items.jsonl"
    path.write_text('{"_key":"one"}\n{"_key": broken\n\n{"_key":"two"}\n')
    proc = run_import(server, db, "--file", str(path), "--type", "jsonl", "--collection", "items")
    assert proc.returncode == 1
    assert b"created: 2" in proc.stderr and b"warnings/errors: 1" in proc.stderr
    assert b"broken" in proc.stderr
    assert db.collection("items").count() == 2


def test_complete_stores_nothing_and_names_the_line(server, db, tmp_path):
    items = db.create_collection("whole")
    path = tmp_path / "whole.jsonl"
    path.write_text('{"_key":"one"}\n\n{"_key":"two"}\n{"_key": broken\n{"_key":"three"}\n')
    proc = run_import(
        server, db, "--file", str(path), "--type", "jsonl", "--collection", "whole",
        "--complete", "true",
    )
    assert proc.returncode == 1, proc.stderr
    assert b"line 4 of" in proc.stderr, proc.stderr
    assert items.count() == 0
    # A document the server refuses (a duplicate key) fails the one request: nothing stays.
    table = tmp_path / "whole.csv"
    table.write_text("_key,n\na,1\nb,2\na,3\n")
    proc = run_import(
        server, db, "--file", str(table), "--type", "csv", "--collection", "whole",
        "--complete",
    )
    assert proc.returncode == 1, proc.stderr
    assert b"error 1210" in proc.stderr, proc.stderr
    assert items.count() == 0
    path.write_text('{"_key":"one"}\n{"_key":"two"}\n')
    proc = run_import(
        server, db, "--file", str(path), "--type", "jsonl", "--collection", "whole", "--complete",
    )
    assert proc.returncode == 0, proc.stderr
    assert b"created: 2" in proc.stderr
    assert items.count() == 2


def test_gzip_json_array_from_stdin_and_tsv(server, db, tmp_path):
    db.create_collection("arr")
    body = gzip.compress(b'[{"_key":"x","v":[1,2]},{"_key":"y","v":{"a":null}}]')
    path = tmp_path / "data.json.gz"
    path.write_bytes(body)
    proc = run_import(server, db, "--file", str(path), "--collection", "arr")
    assert proc.returncode == 0, proc.stderr
    assert db.collection("arr").get("y")["v"] == {"a": None}
    proc = run_import(
        server, db, "--file", "-", "--type", "tsv", "--collection", "arr", "--overwrite", "true",
        stdin=b"_key\tv\nz\t7\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert db.collection("arr").count() == 1 and db.collection("arr").get("z")["v"] == 7


def test_edges_with_collection_prefixes(server, db, tmp_path):
    path = tmp_path / "edges.jsonl"
    path.write_text('{"_from":"a","_to":"b"}\n{"_from":"other/c","_to":"d"}\n')
    proc = run_import(
        server, db, "--file", str(path), "--type", "jsonl", "--collection", "links",
        "--create-collection", "true", "--create-collection-type", "edge",
        "--from-collection-prefix", "people", "--to-collection-prefix", "places",
    )
    assert proc.returncode == 0, proc.stderr
    edges = sorted((e["_from"], e["_to"]) for e in db.collection("links").all())
    assert edges == [("other/c", "places/d"), ("people/a", "places/b")]
    assert db.collection("links").properties()["type"] in (3, "edge")
