// Named graphs: create with an edge definition and an orphan collection, list, read; vertex
// and edge create, read, update, replace, delete (a vertex's edges go with it); an edge to a
// vertex that does not exist; drop with the collections.
package godriver

import (
	"testing"

	"github.com/arangodb/go-driver/v2/arangodb"
	"github.com/arangodb/go-driver/v2/arangodb/shared"
)

type person struct {
	Key  string `json:"_key,omitempty"`
	Name string `json:"name,omitempty"`
	Age  int    `json:"age,omitempty"`
}

type knows struct {
	Key   string `json:"_key,omitempty"`
	From  string `json:"_from,omitempty"`
	To    string `json:"_to,omitempty"`
	Since int    `json:"since,omitempty"`
}

func TestNamedGraph(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		people, edges, orphans := e.name("people"), e.name("knows"), e.name("places")
		name := e.name("g")
		graph, err := db.CreateGraph(e.ctx, name, &arangodb.GraphDefinition{
			EdgeDefinitions:   []arangodb.EdgeDefinition{{Collection: edges, From: []string{people}, To: []string{people}}},
			OrphanCollections: []string{orphans},
		}, nil)
		must(t, err, "create graph")
		equal(t, "graph name", graph.Name(), name)
		equal(t, "edge definitions", graph.EdgeDefinitions(), []arangodb.EdgeDefinition{{Collection: edges, From: []string{people}, To: []string{people}}})
		equal(t, "orphans", graph.OrphanCollections(), []string{orphans})
		_, err = db.CreateGraph(e.ctx, name, &arangodb.GraphDefinition{}, nil)
		wantError(t, err, 409, 1925, "create the same graph again")

		exists, err := db.GraphExists(e.ctx, name)
		must(t, err, "graph exists")
		check(t, exists, "the graph does not exist")
		graphs, err := db.Graphs(e.ctx)
		must(t, err, "list graphs")
		var names []string
		for {
			g, err := graphs.Read()
			if shared.IsNoMoreDocuments(err) {
				break
			}
			must(t, err, "read the list of graphs")
			names = append(names, g.Name())
		}
		equal(t, "graphs", names, []string{name})
		read, err := db.Graph(e.ctx, name, nil)
		must(t, err, "read graph")
		equal(t, "read edge definitions", read.EdgeDefinitions(), graph.EdgeDefinitions())
		_, err = db.Graph(e.ctx, "missing", nil)
		wantError(t, err, 404, 1924, "read a missing graph")

		vertices, err := graph.VertexCollection(e.ctx, people)
		must(t, err, "vertex collection")
		for _, p := range []person{{Key: "ann", Name: "Ann", Age: 30}, {Key: "bo", Name: "Bo", Age: 40}} {
			var created person
			meta, err := vertices.CreateVertex(e.ctx, p, &arangodb.CreateVertexOptions{NewObject: &created})
			must(t, err, "create vertex %s", p.Key)
			equal(t, "vertex id", string(meta.ID), people+"/"+p.Key)
			equal(t, "new vertex", created, p)
		}
		var ann person
		must(t, vertices.GetVertex(e.ctx, "ann", &ann, nil), "read vertex")
		equal(t, "read vertex", ann, person{Key: "ann", Name: "Ann", Age: 30})
		_, err = vertices.UpdateVertex(e.ctx, "ann", map[string]any{"age": 31}, nil)
		must(t, err, "update vertex")
		must(t, vertices.GetVertex(e.ctx, "ann", &ann, nil), "read updated vertex")
		equal(t, "updated vertex", ann, person{Key: "ann", Name: "Ann", Age: 31})
		_, err = vertices.ReplaceVertex(e.ctx, "bo", person{Name: "Bob"}, nil)
		must(t, err, "replace vertex")
		var bo person
		must(t, vertices.GetVertex(e.ctx, "bo", &bo, nil), "read replaced vertex")
		equal(t, "replaced vertex", bo, person{Key: "bo", Name: "Bob"})
		wantError(t, vertices.GetVertex(e.ctx, "nobody", &bo, nil), 404, 1202, "read a missing vertex")

		edgeCol, err := graph.EdgeDefinition(e.ctx, edges)
		must(t, err, "edge definition")
		meta, err := edgeCol.CreateEdge(e.ctx, knows{Key: "e1", From: people + "/ann", To: people + "/bo", Since: 2020}, nil)
		must(t, err, "create edge")
		equal(t, "edge id", string(meta.ID), edges+"/e1")
		_, err = edgeCol.CreateEdge(e.ctx, knows{From: people + "/ann", To: people + "/nobody"}, nil)
		wantError(t, err, 404, 1202, "an edge to a missing vertex")
		_, err = edgeCol.CreateEdge(e.ctx, knows{From: "elsewhere/x", To: people + "/bo"}, nil)
		wantError(t, err, 404, 1947, "an edge from a collection outside the graph")
		var edge knows
		must(t, edgeCol.GetEdge(e.ctx, "e1", &edge, nil), "read edge")
		equal(t, "read edge", edge, knows{Key: "e1", From: people + "/ann", To: people + "/bo", Since: 2020})
		_, err = edgeCol.UpdateEdge(e.ctx, "e1", map[string]any{"since": 2021}, nil)
		must(t, err, "update edge")
		must(t, edgeCol.GetEdge(e.ctx, "e1", &edge, nil), "read updated edge")
		equal(t, "updated since", edge.Since, 2021)
		_, err = edgeCol.ReplaceEdge(e.ctx, "e1", knows{From: people + "/bo", To: people + "/ann", Since: 1999}, nil)
		must(t, err, "replace edge")
		must(t, edgeCol.GetEdge(e.ctx, "e1", &edge, nil), "read replaced edge")
		equal(t, "replaced edge", edge, knows{Key: "e1", From: people + "/bo", To: people + "/ann", Since: 1999})
		_, err = edgeCol.CreateEdge(e.ctx, knows{Key: "e2", From: people + "/ann", To: people + "/ann"}, nil)
		must(t, err, "second edge")
		_, err = edgeCol.DeleteEdge(e.ctx, "e2", nil)
		must(t, err, "delete edge")
		wantError(t, edgeCol.GetEdge(e.ctx, "e2", &edge, nil), 404, 1202, "read the deleted edge")

		// Removing a vertex removes the edges that touch it.
		_, err = vertices.DeleteVertex(e.ctx, "ann", nil)
		must(t, err, "delete vertex")
		wantError(t, vertices.GetVertex(e.ctx, "ann", &ann, nil), 404, 1202, "read the deleted vertex")
		wantError(t, edgeCol.GetEdge(e.ctx, "e1", &edge, nil), 404, 1202, "the deleted vertex's edge")

		must(t, graph.Remove(e.ctx, &arangodb.RemoveGraphOptions{DropCollections: true}), "drop graph with its collections")
		exists, err = db.GraphExists(e.ctx, name)
		must(t, err, "graph exists after the drop")
		check(t, !exists, "the dropped graph still exists")
		for _, c := range []string{people, edges, orphans} {
			exists, err := db.CollectionExists(e.ctx, c)
			must(t, err, "collection %s exists", c)
			check(t, !exists, "collection %s survived the drop of its graph", c)
		}
	})
}
