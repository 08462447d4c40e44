"""`quiver dump` and `quiver restore` end to end: a database with every collection type, key
generator, index type, a named graph and documents of every JSON type goes through a dump into
an empty server and comes back identical; a dump taken during writes is a consistent snapshot;
a dump written by hand in ArangoDB 3.12's format restores, and the project's own dump of it
matches it file by file."""
import gzip
import hashlib
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import REPO, Server, quiver_bin

FIXTURE = REPO / "tests" / "fixtures" / "dump-3.12"

# Index attributes that are the server's own (ids, estimates) and not part of a definition.
INDEX_NOISE = {"id", "selectivityEstimate", "figures", "isNewlyCreated"}
# Collection properties that identify one server's collection rather than describe it.
PROPERTY_NOISE = {"id", "globallyUniqueId", "objectId", "global_id", "object_id"}


def run_tool(*args, check=True):
    proc = subprocess.run(
        [quiver_bin(), *args], capture_output=True, text=True, timeout=300
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def endpoint(server):
    return f"tcp://127.0.0.1:{server.port}"


def md5(name):
    return hashlib.md5(name.encode()).hexdigest()


@pytest.fixture()
def target(tmp_path):
    srv = Server(tmp_path / "target-data").start()
    yield srv
    srv.stop()


def documents(db, name):
    return sorted(
        ({k: v for k, v in d.items() if k != "_rev"} for d in db.collection(name).all()),
        key=lambda d: d["_key"],
    )


def indexes(db, name):
    return sorted(
        (
            {k: v for k, v in ix.items() if k not in INDEX_NOISE}
            for ix in db.collection(name).indexes()
            if ix["type"] not in ("primary", "edge")
        ),
        key=lambda ix: ix["name"],
    )


REV_ALPHABET = "-_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def decode_rev(text):
    value = 0
    for ch in text:
        value = value * 64 + REV_ALPHABET.index(ch)
    return value


def revisions(db, name):
    return {d["_key"]: d["_rev"] for d in db.collection(name).all()}


def index_ids(db, name):
    return {ix["name"]: ix["id"].split("/")[-1] for ix in db.collection(name).indexes()}


def properties(db, name):
    props = db.collection(name).properties()
    return {k: v for k, v in props.items() if k not in PROPERTY_NOISE}


def raw_indexes(sys_http, db_name, coll):
    r = sys_http.get(f"/_db/{db_name}/_api/index", params={"collection": coll})
    assert r.status_code == 200, r.text
    return r.json()["indexes"]


EVERY_JSON_TYPE = {
    "null": None,
    "true": True,
    "false": False,
    "int": 42,
    "negative": -7,
    "big": 9007199254740991,
    "float": 3.25,
    "string": "Grüße, 世界 🌍 \"quoted\" \\ \n",
    "array": [1, "two", None, [3], {"four": 4}],
    "object": {"nested": {"deep": [True, False]}, "empty": {}},
    "empty_array": [],
}


def build_source(db):
    docs = db.create_collection("docs", sync=True)
    docs.insert({"_key": "all-types", **EVERY_JSON_TYPE})
    # Every character ArangoDB allows in a key besides letters and digits.
    docs.insert({"_key": "a_b-c:d.e@f(g)h+i,j=k;l$m!n*o'p%q", "unicode": "ключ ✓"})
    docs.insert({"_key": "large", "blob": "x" * (1536 * 1024)})
    docs.insert_many([{"n": i, "name": f"name-{i}", "loc": [i % 90, i % 180]} for i in range(300)])
    docs.add_index({"type": "persistent", "fields": ["name"], "unique": True, "sparse": True, "name": "by_name"})
    docs.add_index({"type": "hash", "fields": ["n"], "sparse": True, "name": "by_n_hash"})
    docs.add_index({"type": "skiplist", "fields": ["n", "name"], "name": "by_n_skiplist"})
    docs.add_index({"type": "geo", "fields": ["loc"], "geoJson": False, "name": "by_loc"})
    docs.add_index({"type": "fulltext", "fields": ["name"], "minLength": 3, "name": "by_text"})
    docs.add_index({"type": "ttl", "fields": ["expires"], "expireAfter": 3600, "name": "by_ttl"})

    auto = db.create_collection(
        "auto", key_generator="autoincrement", key_increment=10, key_offset=5
    )
    for i in range(3):
        auto.insert({"i": i})
    padded = db.create_collection("padded", key_generator="padded")
    for i in range(3):
        padded.insert({"i": i})
    uuids = db.create_collection("uuids", key_generator="uuid")
    uuids.insert({"u": 1})
    traditional = db.create_collection("traditional")
    for i in range(5):
        traditional.insert({"i": i})
    # A removed document: the generator still continues after it.
    traditional.delete(traditional.insert({"i": 99})["_key"])

    db.create_collection("people")
    db.create_collection("knows", edge=True)
    graph = db.create_graph(
        "social",
        edge_definitions=[
            {"edge_collection": "knows", "from_vertex_collections": ["people"],
             "to_vertex_collections": ["people"]}
        ],
    )
    people = graph.vertex_collection("people")
    for name in ("ann", "bob", "cid"):
        people.insert({"_key": name})
    knows = graph.edge_collection("knows")
    knows.insert({"_from": "people/ann", "_to": "people/bob", "since": 2020})
    knows.insert({"_from": "people/bob", "_to": "people/cid", "since": 2021})


COLLECTIONS = ["docs", "auto", "padded", "uuids", "traditional", "people", "knows"]


def test_round_trip_into_an_empty_server(server, db, target, tmp_path, http):
    build_source(db)
    out = tmp_path / "dump"
    run_tool(
        "dump", "--server.endpoint", endpoint(server), "--server.database", db.name,
        "--output-directory", str(out), "--include-system-collections", "true",
    )
    # The directory format: dump.json, ENCRYPTION, per collection a structure file and a
    # gzip data file named after the md5 of the collection name.
    assert (out / "ENCRYPTION").read_text() == "none"
    meta = json.loads((out / "dump.json").read_text())
    assert meta["database"] == db.name and meta["useEnvelope"] is False
    for name in COLLECTIONS + ["_graphs"]:
        structure = json.loads((out / f"{name}_{md5(name)}.structure.json").read_text())
        assert structure["parameters"]["name"] == name
        with gzip.open(out / f"{name}_{md5(name)}.data.json.gz", "rt") as f:
            lines = [json.loads(line) for line in f if line.strip()]
        assert len(lines) == db.collection(name).count()

    run_tool(
        "restore", "--server.endpoint", endpoint(target), "--server.database", db.name,
        "--create-database", "true", "--input-directory", str(out),
        "--include-system-collections", "true",
    )
    restored = target.client().db(db.name, username="root", password="")
    for name in COLLECTIONS:
        assert documents(restored, name) == documents(db, name), name
        assert indexes(restored, name) == indexes(db, name), name
        assert properties(restored, name) == properties(db, name), name
    # Every document keeps its dumped revision and every index its id (arangorestore's
    # behaviour); a later write gets a larger revision than any restored one.
    for name in COLLECTIONS:
        assert revisions(restored, name) == revisions(db, name), name
        assert index_ids(restored, name) == index_ids(db, name), name
    newest = max(decode_rev(r) for r in revisions(restored, "traditional").values())
    first = min(revisions(restored, "traditional"))
    updated = restored.collection("traditional").update({"_key": first, "i": -1})
    assert decode_rev(updated["_rev"]) > newest
    # The named graph came back through _graphs.
    assert restored.graph("social").edge_definitions() == db.graph("social").edge_definitions()
    assert restored.collection("knows").properties()["type"] in (3, "edge")
    # Key generators continue where the dumped collections stopped.
    for name in ("auto", "padded", "traditional"):
        assert restored.collection(name).insert({})["_key"] == db.collection(name).insert({})["_key"], name


def test_restore_refuses_an_incomplete_dump_and_reports_failure(server, tmp_path):
    incomplete = tmp_path / "incomplete"
    incomplete.mkdir()
    (incomplete / "ENCRYPTION").write_text("none")
    proc = run_tool(
        "restore", "--server.endpoint", endpoint(server), "--input-directory", str(incomplete),
        check=False,
    )
    assert proc.returncode == 1
    assert "not a complete dump" in proc.stderr


def test_dump_refuses_an_existing_directory_without_overwrite(server, db, tmp_path):
    db.create_collection("c").insert({"a": 1})
    out = tmp_path / "dump"
    args = ["dump", "--server.endpoint", endpoint(server), "--server.database", db.name,
            "--output-directory", str(out)]
    run_tool(*args)
    proc = run_tool(*args, check=False)
    assert proc.returncode == 1 and "--overwrite true" in proc.stderr
    run_tool(*args, "--overwrite", "true")


def test_dump_during_writes_is_a_snapshot_per_collection(server, db, tmp_path):
    pairs = db.create_collection("pairs")
    pairs.import_bulk(
        [{"_key": f"s{i}{side}", "pair": f"s{i}", "pad": "p" * 200}
         for i in range(3000) for side in "ab"]
    )
    stop = threading.Event()
    written = []

    def writer():
        i = 0
        while not stop.is_set():
            # One request, one commit: both halves of a pair or neither.
            pairs.insert_many([{"_key": f"w{i}a", "pair": f"w{i}"}, {"_key": f"w{i}b", "pair": f"w{i}"}])
            written.append(i)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        out = tmp_path / "dump"
        run_tool(
            "dump", "--server.endpoint", endpoint(server), "--server.database", db.name,
            "--output-directory", str(out), "--compress-output", "false",
            "--initial-batch-size", "131072", "--batch-size", "131072",
        )
    finally:
        stop.set()
        thread.join()
    assert written, "the writer made no progress during the dump"
    lines = (out / f"pairs_{md5('pairs')}.data.json").read_text().splitlines()
    seen = {}
    for line in lines:
        doc = json.loads(line)
        seen.setdefault(doc["pair"], set()).add(doc["_key"][-1])
    assert all(halves == {"a", "b"} for halves in seen.values())
    assert sum(1 for p in seen if p.startswith("s")) == 3000


def read_dump(directory):
    files = {}
    for path in sorted(Path(directory).iterdir()):
        if path.name.endswith(".data.json"):
            docs = [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
            files[path.name] = sorted(
                # `_rev` stays: a restore keeps the dumped revisions.
                ({k: v for k, v in d.items() if k != "_id"} for d in docs),
                key=lambda d: d["_key"],
            )
        elif path.name == "ENCRYPTION":
            files[path.name] = path.read_text()
        else:
            files[path.name] = json.loads(path.read_text())
    return files


# What legitimately differs between two servers' dumps of the same data: the tick at dump
# start, database and collection ids (not index ids or document revisions), plus the attributes only one of the servers reports
# (a cluster's sharding attributes in ArangoDB's, the storage options in QuiverDB's).
def comparable_structure(structure):
    keep = ("name", "type", "isSystem", "waitForSync", "keyOptions", "schema", "computedValues")
    return {
        "parameters": {k: structure["parameters"].get(k) for k in keep},
        "indexes": sorted(
            # Index ids stay too.
            ({k: ix.get(k) for k in ("id", "type", "name", "fields", "unique", "sparse")}
             for ix in structure["indexes"]),
            key=lambda ix: ix["name"],
        ),
    }


def test_hand_written_3_12_dump_restores_and_the_project_dump_matches_it(server, sys_db, client, tmp_path):
    name = "fixture_" + os.urandom(4).hex()
    run_tool(
        "restore", "--server.endpoint", endpoint(server), "--server.database", name,
        "--create-database", "true", "--input-directory", str(FIXTURE),
    )
    try:
        db = client.db(name, username="root", password="")
        assert db.collection("customers").get("alice")["city"] == "Köln"
        assert db.collection("orders").get("o1")["_from"] == "customers/alice"
        assert db.collection("counters").insert({})["_key"] == "130"
        assert [ix["name"] for ix in indexes(db, "customers")] == ["by_email"]

        out = tmp_path / "again"
        run_tool(
            "dump", "--server.endpoint", endpoint(server), "--server.database", name,
            "--output-directory", str(out), "--compress-output", "false",
        )
        # counters got one more document above; drop it from the comparison.
        ours, theirs = read_dump(out), read_dump(FIXTURE)
        assert sorted(ours) == sorted(theirs)
        ours["counters_" + md5("counters") + ".data.json"] = [
            d for d in ours["counters_" + md5("counters") + ".data.json"] if d["_key"] != "130"
        ]
        for file_name, content in theirs.items():
            if file_name == "dump.json":
                assert set(ours[file_name]) >= {"database", "lastTickAtDumpStart", "properties", "useEnvelope"}
                assert ours[file_name]["useEnvelope"] == content["useEnvelope"]
            elif file_name.endswith(".structure.json"):
                expected = comparable_structure(content)
                got = comparable_structure(ours[file_name])
                if file_name.startswith("counters_"):
                    # The generator moved on by the insert above.
                    expected["parameters"]["keyOptions"]["lastValue"] = 130
                assert got == expected, file_name
            else:
                assert ours[file_name] == content, file_name
    finally:
        sys_db.delete_database(name, ignore_missing=True)


def test_ctrl_c_stops_a_restore_cleanly(server, db, target, tmp_path):
    coll = db.create_collection("many")
    for start in range(0, 40000, 10000):
        coll.import_bulk([{"_key": f"k{i}", "v": i} for i in range(start, start + 10000)])
    out = tmp_path / "dump"
    run_tool("dump", "--server.endpoint", endpoint(server), "--server.database", db.name,
             "--output-directory", str(out))
    proc = subprocess.Popen(
        [quiver_bin(), "restore", "--server.endpoint", endpoint(target),
         "--server.database", db.name, "--create-database", "true",
         "--input-directory", str(out), "--batch-size", "1024", "--progress", "false"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    restored = target.client().db("_system", username="root", password="")
    # Interrupt once the restore is under way (its collection exists and data arrives).
    for _ in range(600):
        if restored.has_database(db.name):
            tdb = target.client().db(db.name, username="root", password="")
            if tdb.has_collection("many") and tdb.collection("many").count() > 0:
                break
        threading.Event().wait(0.05)
    proc.send_signal(2)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1, stderr
    assert "interrupted" in stderr
    tdb = target.client().db(db.name, username="root", password="")
    assert 0 < tdb.collection("many").count() < 40000


def test_views_and_analyzers_round_trip(server, db, target, tmp_path):
    """Custom analyzers travel in `_analyzers` (restored first), views in `<name>.view.json`
    (restored last) with their links; searches work on the restored server."""
    db.create_analyzer("csv_split", "delimiter", {"delimiter": ","}, ["frequency", "norm", "position"])
    db.create_collection("books").insert_many(
        [{"_key": "b1", "tags": "red,blue"}, {"_key": "b2", "tags": "green"}]
    )
    db.create_arangosearch_view(
        "books_view",
        properties={"links": {"books": {"fields": {"tags": {"analyzers": ["csv_split"]}}}}},
    )
    out = tmp_path / "dump"
    run_tool(
        "dump", "--server.endpoint", endpoint(server), "--server.database", db.name,
        "--output-directory", str(out), "--include-system-collections", "true",
    )
    view_file = json.loads((out / "books_view.view.json").read_text())
    assert view_file["name"] == "books_view" and view_file["type"] == "arangosearch"
    assert view_file["links"]["books"]["fields"]["tags"]["analyzers"] in (
        ["csv_split"], [f"{db.name}::csv_split"]
    )
    with gzip.open(out / f"_analyzers_{md5('_analyzers')}.data.json.gz", "rt") as f:
        assert any(json.loads(line)["name"] == "csv_split" for line in f if line.strip())

    run_tool(
        "restore", "--server.endpoint", endpoint(target), "--server.database", db.name,
        "--create-database", "true", "--input-directory", str(out),
        "--include-system-collections", "true",
    )
    restored = target.client().db(db.name, username="root", password="")
    analyzer = restored.analyzer("csv_split")
    assert analyzer["type"] == "delimiter" and analyzer["properties"]["delimiter"] == ","
    source_view = db.view("books_view")
    restored_view = restored.view("books_view")
    assert restored_view["links"] == source_view["links"]
    query = (
        "FOR b IN books_view SEARCH ANALYZER(b.tags == 'blue', 'csv_split') "
        "OPTIONS {waitForSync: true} RETURN b._key"
    )
    assert list(restored.aql.execute(query)) == ["b1"]
    # Restoring again over it with --overwrite replaces the view and the analyzers.
    run_tool(
        "restore", "--server.endpoint", endpoint(target), "--server.database", db.name,
        "--input-directory", str(out), "--include-system-collections", "true",
        "--overwrite", "true",
    )
    assert [v["name"] for v in restored.views()] == ["books_view"]
    assert list(restored.aql.execute(query)) == ["b1"]


def test_replication_logger_state_through_the_driver(db):
    """python-arango's `replication.logger_state()` reads `serverId` and the state members."""
    first = db.replication.logger_state()
    assert first["state"]["running"] is True
    assert int(first["server"]["server_id"]) > 0
    assert first["clients"] == []
    db.create_collection("logged").insert({"a": 1})
    second = db.replication.logger_state()
    assert int(second["state"]["last_log_tick"]) > int(first["state"]["last_log_tick"])
    assert second["state"]["total_events"] > first["state"]["total_events"]
    assert second["server"]["server_id"] == first["server"]["server_id"]


def test_vector_indexes_are_retrained_on_restore(server, db, target, tmp_path):
    """A dump holds the vector index's definition, not its training (as arangodump); the
    restore creates it after the data, which trains it on the restored vectors."""
    coll = db.create_collection("emb")
    coll.import_bulk([{"_key": f"k{i}", "v": [i % 7, i % 11, i % 13]} for i in range(300)])
    coll.add_index({"type": "vector", "name": "near", "fields": ["v"], "sparse": True,
                    "params": {"metric": "l2", "dimension": 3, "nLists": 4, "defaultNProbe": 4}})
    query = "FOR d IN emb SORT APPROX_NEAR_L2(d.v, [3, 5, 8]) LIMIT 5 RETURN d._key"
    expected = list(db.aql.execute(query))
    out = tmp_path / "dump"
    run_tool("dump", "--server.endpoint", endpoint(server), "--server.database", db.name,
             "--output-directory", str(out))
    run_tool("restore", "--server.endpoint", endpoint(target), "--server.database", db.name,
             "--create-database", "true", "--input-directory", str(out))
    tdb = target.client().db(db.name, username="root", password="")
    restored = [i for i in tdb.collection("emb").indexes() if i["type"] == "vector"]
    assert len(restored) == 1
    assert restored[0]["name"] == "near" and restored[0]["sparse"] is True
    assert restored[0]["params"]["nLists"] == 4
    # Every list probed: the exact answer, the same on both servers.
    assert list(tdb.aql.execute(query)) == expected


def test_a_collection_restores_on_several_connections(server, db, target, tmp_path):
    """Plain lines go out on --threads connections: many small requests of one collection,
    every document back with its revision."""
    coll = db.create_collection("wide")
    for start in range(0, 20000, 5000):
        coll.import_bulk([{"_key": f"k{i}", "v": i, "s": "x" * (i % 50)}
                          for i in range(start, start + 5000)])
    out = tmp_path / "dump"
    run_tool("dump", "--server.endpoint", endpoint(server), "--server.database", db.name,
             "--output-directory", str(out), "--compress-output", "false")
    run_tool("restore", "--server.endpoint", endpoint(target), "--server.database", db.name,
             "--create-database", "true", "--input-directory", str(out),
             "--batch-size", "4096", "--threads", "4", "--progress", "false")
    restored = target.client().db(db.name, username="root", password="")
    assert restored.collection("wide").count() == 20000
    assert documents(restored, "wide") == documents(db, "wide")
    assert revisions(restored, "wide") == revisions(db, "wide")


def test_an_enveloped_dump_restores_in_order(server, db, target, tmp_path):
    """Enveloped lines may remove what earlier lines inserted: with --threads 4 and requests
    of a few lines, every removal still comes after its insert."""
    coll = db.create_collection("churn")
    coll.import_bulk([{"_key": f"k{i}", "v": i} for i in range(2000)])
    out = tmp_path / "dump"
    run_tool("dump", "--server.endpoint", endpoint(server), "--server.database", db.name,
             "--output-directory", str(out), "--compress-output", "false",
             "--envelope", "true")
    assert json.loads((out / "dump.json").read_text())["useEnvelope"] is True
    # Each insert followed by its removal (but every 100th): about a hundred pairs straddle
    # two requests, which would race on separate connections.
    data = out / f"churn_{md5('churn')}.data.json"
    inserts = [line for line in data.read_text().splitlines() if line.strip()]
    assert len(inserts) == 2000
    with open(data, "w") as f:
        for line in inserts:
            f.write(line + "\n")
            key = json.loads(line)["data"]["_key"]
            if int(key[1:]) % 100:
                f.write(json.dumps({"type": 2302, "data": {"_key": key}}) + "\n")
    run_tool("restore", "--server.endpoint", endpoint(target), "--server.database", db.name,
             "--create-database", "true", "--input-directory", str(out),
             "--batch-size", "1024", "--threads", "4", "--progress", "false")
    restored = target.client().db(db.name, username="root", password="")
    assert sorted(d["_key"] for d in restored.collection("churn").all()) == sorted(
        f"k{i}" for i in range(0, 2000, 100))
