"""Named graphs (/_api/gharial) through python-arango's graph API against the real binary."""
import pytest
from arango.exceptions import (
    DocumentDeleteError,
    DocumentInsertError,
    DocumentRevisionError,
    EdgeDefinitionCreateError,
    GraphCreateError,
    GraphDeleteError,
    VertexCollectionCreateError,
)

from conftest import unique


def make_social(db, name="social"):
    return db.create_graph(
        name,
        edge_definitions=[
            {
                "edge_collection": "relation",
                "from_vertex_collections": ["male", "female"],
                "to_vertex_collections": ["female", "male"],
            }
        ],
        orphan_collections=["city"],
    )


def test_graph_lifecycle(db):
    graph = make_social(db)
    assert db.has_graph("social")
    assert not db.has_graph("nope")
    props = graph.properties()
    assert props["id"] == "_graphs/social"
    assert props["name"] == "social"
    assert props["orphan_collections"] == ["city"]
    assert props["edge_definitions"] == [
        {
            "edge_collection": "relation",
            "from_vertex_collections": ["female", "male"],
            "to_vertex_collections": ["female", "male"],
        }
    ]
    assert [g["name"] for g in db.graphs()] == ["social"]
    assert sorted(graph.vertex_collections()) == ["city", "female", "male"]
    assert db.collection("relation").properties()["edge"] is True
    # The stored definition is ArangoDB's document format (what AQL GRAPH reads).
    stored = db.collection("_graphs").get("social")
    assert stored["edgeDefinitions"][0]["collection"] == "relation"
    assert stored["orphanCollections"] == ["city"]

    with pytest.raises(GraphCreateError) as e:
        make_social(db)
    assert e.value.error_code == 1925
    with pytest.raises(GraphCreateError) as e:
        db.create_graph(
            unique("g"),
            edge_definitions=[
                {
                    "edge_collection": "relation",
                    "from_vertex_collections": ["male"],
                    "to_vertex_collections": ["city"],
                }
            ],
        )
    assert e.value.error_code == 1921

    assert db.delete_graph("social", drop_collections=True)
    assert not db.has_graph("social")
    assert not db.has_collection("relation") and not db.has_collection("city")
    assert db.delete_graph("social", ignore_missing=True) is False
    with pytest.raises(GraphDeleteError) as e:
        db.delete_graph("social")
    assert e.value.error_code == 1924


def test_definitions(db):
    graph = make_social(db)
    graph.create_vertex_collection("country")
    assert "country" in graph.properties()["orphan_collections"]
    with pytest.raises(VertexCollectionCreateError) as e:
        graph.create_vertex_collection("country")
    assert e.value.error_code == 1938

    lives = graph.create_edge_definition("lives", ["male", "female"], ["city"])
    assert lives.name == "lives"
    props = graph.properties()
    assert props["orphan_collections"] == ["country"]
    assert graph.edge_collections() == ["lives", "relation"]
    with pytest.raises(EdgeDefinitionCreateError) as e:
        graph.create_edge_definition("lives", ["male"], ["city"])
    assert e.value.error_code == 1920

    graph.replace_edge_definition("lives", ["male"], ["country"])
    defs = {d["edge_collection"]: d for d in graph.edge_definitions()}
    assert defs["lives"]["to_vertex_collections"] == ["country"]
    assert graph.properties()["orphan_collections"] == ["city"]

    graph.delete_edge_definition("lives", purge=True)
    assert not db.has_collection("lives")
    assert sorted(graph.properties()["orphan_collections"]) == ["city", "country"]
    graph.delete_vertex_collection("country", purge=True)
    assert not db.has_collection("country")


def test_vertex_and_edge_crud(db):
    graph = make_social(db)
    males = graph.vertex_collection("male")
    females = graph.vertex_collection("female")
    bob = males.insert({"_key": "bob", "age": 30}, return_new=True)
    assert bob["vertex"]["_id"] == "male/bob" and bob["new"]["age"] == 30
    females.insert({"_key": "alice"})
    with pytest.raises(DocumentInsertError) as e:
        males.insert({"_key": "bob"})
    assert e.value.error_code == 1210

    assert males.get("bob")["age"] == 30
    assert males.get("nobody") is None
    males.update({"_key": "bob", "age": 31})
    assert males.get("bob")["age"] == 31
    stale = dict(males.get("bob"), _rev="_stale1234")
    with pytest.raises(DocumentRevisionError):
        males.replace(stale)
    males.replace({"_key": "bob", "name": "Bob"})
    assert "age" not in males.get("bob")

    relation = graph.edge_collection("relation")
    edge = relation.insert({"_key": "e1", "_from": "male/bob", "_to": "female/alice"})
    assert edge["_id"] == "relation/e1"
    assert relation.get("e1")["_to"] == "female/alice"
    with pytest.raises(DocumentInsertError) as e:
        relation.insert({"_from": "male/ghost", "_to": "female/alice"})
    assert e.value.error_code == 1202
    with pytest.raises(DocumentInsertError) as e:
        relation.insert({"_from": "elsewhere/x", "_to": "female/alice"})
    assert e.value.error_code == 1947
    relation.link("female/alice", "male/bob", data={"_key": "e2"})
    assert relation.update({"_key": "e2", "since": 2020})["_key"] == "e2"
    assert relation.get("e2")["since"] == 2020
    relation.delete("e2")
    assert relation.get("e2") is None

    # Removing bob removes his edge with him.
    relation.insert({"_key": "e3", "_from": "female/alice", "_to": "male/bob"})
    assert db.collection("relation").count() == 2
    assert males.delete("bob")
    assert db.collection("relation").count() == 0
    assert males.delete("bob", ignore_missing=True) is False
    with pytest.raises(DocumentDeleteError) as e:
        males.delete("bob")
    assert e.value.error_code == 1202


def test_graph_collection_cannot_be_dropped_alone(db):
    make_social(db)
    from arango.exceptions import CollectionDeleteError

    with pytest.raises(CollectionDeleteError) as e:
        db.delete_collection("male")
    assert e.value.error_code == 1942
    db.delete_graph("social")
    db.delete_collection("male")


def test_graphs_survive_restart(tmp_root):
    from conftest import Server

    srv = Server(tmp_root / unique("graphs")).start()
    try:
        db = srv.client().db("_system")
        graph = make_social(db, "keep")
        graph.vertex_collection("male").insert({"_key": "bob"})
        graph.vertex_collection("female").insert({"_key": "alice"})
        graph.edge_collection("relation").insert(
            {"_from": "male/bob", "_to": "female/alice"}
        )
        srv.restart()
        db = srv.client().db("_system")
        assert db.has_graph("keep")
        graph = db.graph("keep")
        assert graph.properties()["orphan_collections"] == ["city"]
        assert graph.vertex_collection("male").get("bob")["_key"] == "bob"
        graph.vertex_collection("female").delete("alice")
        assert db.collection("relation").count() == 0
    finally:
        srv.stop()
