"""`quiver export` end to end: a collection as a JSON array, JSON lines, CSV (with --fields)
and XML, a custom query with bind variables, a named graph or given collections as XGMML; an
existing directory needs --overwrite."""
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


def test_collection_as_xml(server, db, tmp_path):
    import xml.etree.ElementTree as ET

    coll = db.create_collection("things")
    coll.insert_many([
        {"_key": "a", "n": 1, "f": 2.5, "b": False, "z": None, "s": "x < y & \"z\"",
         "l": [1, "two"], "o": {"k": "v"}},
        {"_key": "b", "n": 2},
    ])
    out = tmp_path / "xml"
    proc = run_export(server, db, "--collection", "things", "--type", "xml",
                      "--output-directory", str(out))
    assert proc.returncode == 0, proc.stderr
    root = ET.parse(out / "things.xml").getroot()
    assert root.tag == "collection" and root.get("name") == "things"
    docs = {d.get("key"): d for d in root.findall("doc")}
    assert set(docs) == {"a", "b"}
    atts = {a.get("name"): a for a in docs["a"].findall("att")}
    assert (atts["n"].get("type"), atts["n"].get("value")) == ("integer", "1")
    assert (atts["f"].get("type"), atts["f"].get("value")) == ("real", "2.5")
    assert (atts["b"].get("type"), atts["b"].get("value")) == ("boolean", "false")
    assert (atts["z"].get("type"), atts["z"].get("value")) == ("string", "null")
    assert atts["s"].get("value") == "x < y & \"z\""
    assert atts["_key"].get("value") == "a"
    assert atts["l"].get("type") == "list"
    assert [i.get("value") for i in atts["l"].findall("att")] == ["1", "two"]
    assert [(i.get("name"), i.get("value")) for i in atts["o"].findall("att")] == [("k", "v")]


def test_graph_as_xgmml(server, db, tmp_path):
    import xml.etree.ElementTree as ET

    db.create_collection("people")
    db.create_collection("knows", edge=True)
    db.create_graph("social", edge_definitions=[
        {"edge_collection": "knows", "from_vertex_collections": ["people"],
         "to_vertex_collections": ["people"]}])
    db.collection("people").insert_many([
        {"_key": "ann", "name": "Ann", "age": 30, "tags": ["a", ["nested"]]},
        {"_key": "bob", "name": "Bob"},
    ])
    db.collection("knows").insert({"_from": "people/ann", "_to": "people/bob", "name": "friend"})
    ns = "{http://www.cs.rpi.edu/XGMML}"

    out = tmp_path / "named"
    proc = run_export(server, db, "--type", "xgmml", "--graph-name", "social",
                      "--xgmml-label-attribute", "name", "--output-directory", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "skipped 1 deep nested" in proc.stderr
    root = ET.parse(out / "social.xgmml").getroot()
    assert root.tag == f"{ns}graph" and root.get("label") == "social" and root.get("directed") == "1"
    nodes = {n.get("id"): n for n in root.findall(f"{ns}node")}
    assert set(nodes) == {"people/ann", "people/bob"}
    assert nodes["people/ann"].get("label") == "Ann"
    atts = {a.get("name"): a for a in nodes["people/ann"].findall(f"{ns}att")}
    assert "_key" not in atts and "_rev" not in atts
    assert (atts["age"].get("type"), atts["age"].get("value")) == ("integer", "30")
    assert [a.get("value") for a in atts["tags"].findall(f"{ns}att")] == ["a"]
    edges = root.findall(f"{ns}edge")
    assert [(e.get("source"), e.get("target"), e.get("label")) for e in edges] == [
        ("people/ann", "people/bob", "friend")]

    # Collections instead of the named graph's, labels only.
    out = tmp_path / "unnamed"
    proc = run_export(server, db, "--type", "xgmml", "--graph-name", "mine", "--collection", "people",
                      "--xgmml-label-only", "true", "--output-directory", str(out))
    assert proc.returncode == 0, proc.stderr
    root = ET.parse(out / "mine.xgmml").getroot()
    assert len(root.findall(f"{ns}node")) == 2 and not root.findall(f"{ns}edge")
    assert all(n.get("label") == "Default-Label" and not list(n) for n in root.findall(f"{ns}node"))

    # xgmml needs a graph name; an unknown graph fails.
    proc = run_export(server, db, "--type", "xgmml", "--collection", "people",
                      "--output-directory", str(tmp_path / "x"))
    assert proc.returncode == 1 and "--graph-name" in proc.stderr
    proc = run_export(server, db, "--type", "xgmml", "--graph-name", "nope",
                      "--output-directory", str(tmp_path / "y"))
    assert proc.returncode == 1 and "1924" in proc.stderr
