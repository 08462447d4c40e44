"""`quiver export` end to end: a collection as a JSON array, JSON lines and CSV (with
--fields), and a custom query with bind variables; an existing directory needs --overwrite."""
import csv
import json
import subprocess

from conftest import quiver_bin


def run_export(server, db, *args):
    return subprocess.run(
        [quiver_bin(), "export", "--server.endpoint", f"tcp://127.0.0.1:{server.port}",
         "--server.database", db.name, "--progress", "false", *args],
        capture_output=True, text=True, timeout=120,
    )


def test_collection_as_json_jsonl_and_csv(server, db, tmp_path):
    coll = db.create_collection("things")
    coll.import_bulk([{"_key": f"k{i}", "n": i, "s": f"a,\"{i}\"", "o": {"x": i}} for i in range(2500)])
    out = tmp_path / "json"
    proc = run_export(server, db, "--collection", "things", "--output-directory", str(out),
                      "--documents-per-batch", "700")
    assert proc.returncode == 0, proc.stderr
    docs = json.loads((out / "things.json").read_text())
    assert sorted(d["n"] for d in docs) == list(range(2500))

    out = tmp_path / "jsonl"
    proc = run_export(server, db, "--collection", "things", "--type", "jsonl",
                      "--fields", "_key,o", "--output-directory", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(l) for l in (out / "things.jsonl").read_text().splitlines()]
    assert len(lines) == 2500 and all(set(l) == {"_key", "o"} for l in lines)

    out = tmp_path / "csv"
    proc = run_export(server, db, "--collection", "things", "--type", "csv",
                      "--fields", "_key,n,s,o,missing", "--output-directory", str(out))
    assert proc.returncode == 0, proc.stderr
    with open(out / "things.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["_key", "n", "s", "o", "missing"]
    row = next(r for r in rows[1:] if r[0] == "k7")
    assert row == ["k7", "7", 'a,"7"', '{"x":7}', ""]
    proc = run_export(server, db, "--collection", "things", "--type", "csv", "--output-directory", str(tmp_path / "x"))
    assert proc.returncode == 1 and "--fields" in proc.stderr


def test_custom_query_with_bind_variables(server, db, tmp_path):
    db.create_collection("c").import_bulk([{"v": i} for i in range(10)])
    out = tmp_path / "q"
    proc = run_export(
        server, db, "--custom-query", "FOR d IN c FILTER d.v >= @min SORT d.v RETURN d.v",
        "--custom-query-bindvars", '{"min": 7}', "--type", "jsonl", "--output-directory", str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert (out / "query.jsonl").read_text().split() == ["7", "8", "9"]
    proc = run_export(server, db, "--collection", "c", "--output-directory", str(out))
    assert proc.returncode == 1 and "--overwrite true" in proc.stderr
