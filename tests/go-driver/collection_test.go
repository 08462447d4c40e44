// Collections: create (document and edge), properties read and changed, figures with their
// numbers decoded into the driver's numeric types, count, revision, truncate, drop.
package godriver

import (
	"testing"

	"github.com/arangodb/go-driver/v2/arangodb"
	"github.com/arangodb/go-driver/v2/utils"
)

func TestCollectionPropertiesFiguresTruncateCount(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		col := e.collection(t, db, &arangodb.CreateCollectionPropertiesV2{
			WaitForSync: utils.NewType(true),
			KeyOptions:  &arangodb.CollectionKeyOptions{Type: arangodb.KeyGeneratorAutoIncrement, Increment: 5, Offset: 10},
		})

		props, err := col.Properties(e.ctx)
		must(t, err, "properties")
		equal(t, "name", props.Name, col.Name())
		equal(t, "type", props.Type, arangodb.CollectionTypeDocument)
		equal(t, "waitForSync", props.WaitForSync, true)
		equal(t, "status", props.Status, arangodb.CollectionStatusLoaded)
		equal(t, "isSystem", props.IsSystem, false)
		equal(t, "keyOptions.type", props.KeyOptions.Type, arangodb.KeyGeneratorAutoIncrement)
		equal(t, "keyOptions.allowUserKeys", props.KeyOptions.AllowUserKeys, true)
		check(t, props.ID != "" && props.GloballyUniqueId != "", "id %q, globallyUniqueId %q", props.ID, props.GloballyUniqueId)

		must(t, col.SetPropertiesV2(e.ctx, arangodb.SetCollectionPropertiesOptionsV2{WaitForSync: utils.NewType(false)}), "set waitForSync false")
		props, err = col.Properties(e.ctx)
		must(t, err, "properties after the change")
		equal(t, "waitForSync after the change", props.WaitForSync, false)

		_, err = db.CreateCollectionV2(e.ctx, col.Name(), nil)
		wantError(t, err, 409, 1207, "create the same collection again")
		_, err = db.GetCollection(e.ctx, "missing", nil)
		wantError(t, err, 404, 1203, "get a missing collection")

		before, err := col.Revision(e.ctx)
		must(t, err, "revision of the empty collection")
		for i := 0; i < 3; i++ {
			meta, err := col.CreateDocument(e.ctx, map[string]any{"n": i})
			must(t, err, "insert %d", i)
			equal(t, "generated key", meta.Key, []string{"10", "15", "20"}[i])
		}
		count, err := col.Count(e.ctx)
		must(t, err, "count")
		equal(t, "count", count, int64(3))
		after, err := col.Revision(e.ctx)
		must(t, err, "revision")
		check(t, after.Revision != "" && after.Revision != before.Revision, "revision %q after writes, %q before", after.Revision, before.Revision)

		figures, err := col.Statistics(e.ctx, true)
		must(t, err, "figures")
		equal(t, "figures count", figures.Count, int64(3))
		equal(t, "figures name", figures.Name, col.Name())
		check(t, figures.Figures.Indexes.Count >= 1, "figures.indexes.count %d", figures.Figures.Indexes.Count)
		check(t, figures.Figures.LastTick >= 0, "figures.lastTick %d", figures.Figures.LastTick)

		must(t, col.Truncate(e.ctx), "truncate")
		count, err = col.Count(e.ctx)
		must(t, err, "count after truncate")
		equal(t, "count after truncate", count, int64(0))
		figures, err = col.Statistics(e.ctx, false)
		must(t, err, "figures after truncate")
		equal(t, "figures count after truncate", figures.Count, int64(0))

		edges := e.collection(t, db, &arangodb.CreateCollectionPropertiesV2{Type: utils.NewType(arangodb.CollectionTypeEdge)})
		props, err = edges.Properties(e.ctx)
		must(t, err, "edge collection properties")
		equal(t, "edge collection type", props.Type, arangodb.CollectionTypeEdge)
		figures, err = edges.Statistics(e.ctx, true)
		must(t, err, "edge collection figures")
		check(t, figures.Figures.Indexes.Count >= 2, "an edge collection has the primary and the edge index: %d", figures.Figures.Indexes.Count)

		must(t, edges.Remove(e.ctx), "drop the edge collection")
		exists, err := db.CollectionExists(e.ctx, edges.Name())
		must(t, err, "collection exists")
		check(t, !exists, "the dropped collection still exists")
		wantError(t, edges.Remove(e.ctx), 404, 1203, "drop the dropped collection")
	})
}
