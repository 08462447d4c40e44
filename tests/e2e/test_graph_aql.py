"""AQL graph traversals and path searches through python-arango's cursor API against the
real binary."""
from conftest import unique


def make_graph(db):
    people = db.create_collection(unique("people"))
    knows = db.create_collection(unique("knows"), edge=True)
    for key in ["a", "b", "c", "d", "e"]:
        people.insert({"_key": key, "name": key.upper()})
    for i, (f, t) in enumerate([("a", "b"), ("b", "c"), ("c", "d"), ("a", "e"), ("e", "d")]):
        knows.insert({"_key": f"k{i}", "_from": f"{people.name}/{f}", "_to": f"{people.name}/{t}", "w": i + 1})
    return people.name, knows.name


def test_traversal_through_cursor(db):
    people, knows = make_graph(db)
    cursor = db.aql.execute(
        "FOR v, e, p IN 1..2 OUTBOUND @start @@knows OPTIONS {bfs: true, uniqueVertices: 'global'} "
        "RETURN {v: v.name, e: e._key, len: LENGTH(p.edges)}",
        bind_vars={"start": f"{people}/a", "@knows": knows},
    )
    assert list(cursor) == [
        {"v": "B", "e": "k0", "len": 1},
        {"v": "E", "e": "k3", "len": 1},
        {"v": "C", "e": "k1", "len": 2},
        {"v": "D", "e": "k4", "len": 2},
    ]
    # ids only (the benchmark's neighbors query) and a small batch size (several batches)
    cursor = db.aql.execute(
        "FOR v IN 1..3 OUTBOUND @start @@knows RETURN v._id",
        bind_vars={"start": f"{people}/a", "@knows": knows},
        batch_size=2,
    )
    assert sorted(cursor) == sorted(
        [f"{people}/{k}" for k in ["b", "c", "d", "e", "d"]]
    )


def test_shortest_path_through_cursor(db):
    people, knows = make_graph(db)
    cursor = db.aql.execute(
        "FOR v, e IN OUTBOUND SHORTEST_PATH @from TO @to @@knows RETURN [v._key, e._key]",
        bind_vars={"from": f"{people}/a", "to": f"{people}/d", "@knows": knows},
    )
    assert list(cursor) == [["a", None], ["e", "k3"], ["d", "k4"]]
    cursor = db.aql.execute(
        "FOR v IN OUTBOUND SHORTEST_PATH @from TO @to @@knows OPTIONS {weightAttribute: 'w'} RETURN v._key",
        bind_vars={"from": f"{people}/a", "to": f"{people}/d", "@knows": knows},
    )
    assert list(cursor) == ["a", "b", "c", "d"]
    # no connection: empty, quickly
    cursor = db.aql.execute(
        "FOR v IN OUTBOUND SHORTEST_PATH @from TO @to @@knows RETURN v",
        bind_vars={"from": f"{people}/d", "to": f"{people}/a", "@knows": knows},
    )
    assert list(cursor) == []
    cursor = db.aql.execute(
        "FOR p IN OUTBOUND K_SHORTEST_PATHS @from TO @to @@knows OPTIONS {weightAttribute: 'w'} "
        "RETURN [p.vertices[*]._key, p.weight]",
        bind_vars={"from": f"{people}/a", "to": f"{people}/d", "@knows": knows},
    )
    assert list(cursor) == [[["a", "b", "c", "d"], 6], [["a", "e", "d"], 9]]


def test_graph_explain_and_errors(db):
    people, knows = make_graph(db)
    plan = db.aql.explain(
        "FOR v IN 1..2 OUTBOUND @start @@knows RETURN v._id",
        bind_vars={"start": f"{people}/a", "@knows": knows},
    )
    types = [n["type"] for n in plan["nodes"]]
    assert "TraversalNode" in types
    node = next(n for n in plan["nodes"] if n["type"] == "TraversalNode")
    assert node["edgeCollections"] == [knows]
    assert node["vertexId"] == f"{people}/a"
    import pytest
    from arango.exceptions import AQLQueryExecuteError

    with pytest.raises(AQLQueryExecuteError) as err:
        db.aql.execute("FOR v IN 1..2 OUTBOUND 'x/y' GRAPH 'no_such_graph' RETURN v")
    assert err.value.error_code == 1924


def test_named_graph_from_gharial(db):
    name = unique("g")
    vertices = unique("v")
    edges = unique("e")
    graph = db.create_graph(
        name,
        edge_definitions=[{"edge_collection": edges, "from_vertex_collections": [vertices], "to_vertex_collections": [vertices]}],
    )
    vcoll = graph.vertex_collection(vertices)
    ecoll = graph.edge_collection(edges)
    for key in ["x", "y", "z"]:
        vcoll.insert({"_key": key})
    ecoll.insert({"_from": f"{vertices}/x", "_to": f"{vertices}/y"})
    ecoll.insert({"_from": f"{vertices}/y", "_to": f"{vertices}/z"})
    cursor = db.aql.execute(
        "FOR v IN 1..2 OUTBOUND @start GRAPH @g RETURN v._key",
        bind_vars={"start": f"{vertices}/x", "g": name},
    )
    assert list(cursor) == ["y", "z"]
    cursor = db.aql.execute(
        "FOR v IN ANY SHORTEST_PATH @a TO @b GRAPH @g RETURN v._key",
        bind_vars={"a": f"{vertices}/z", "b": f"{vertices}/x", "g": name},
    )
    assert list(cursor) == ["z", "y", "x"]
