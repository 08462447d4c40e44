// Indexes: persistent (unique), geo, TTL and inverted indexes created through the driver's
// Ensure calls (created, then found), listed, read by name, enforced, dropped.
package godriver

import (
	"slices"
	"testing"

	"github.com/arangodb/go-driver/v2/arangodb"
	"github.com/arangodb/go-driver/v2/utils"
)

func TestIndexes(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		col := e.collection(t, db, nil)

		persistent, created, err := col.EnsurePersistentIndex(e.ctx, []string{"name"},
			&arangodb.CreatePersistentIndexOptions{Name: "by_name", Unique: utils.NewType(true)})
		must(t, err, "persistent index")
		check(t, created, "the persistent index was not reported as created")
		equal(t, "persistent type", persistent.Type, arangodb.PersistentIndexType)
		equal(t, "persistent name", persistent.Name, "by_name")
		equal(t, "persistent fields", persistent.RegularIndex.Fields, []string{"name"})
		equal(t, "persistent unique", *persistent.Unique, true)
		check(t, len(persistent.ID) > len(col.Name())+1 && persistent.ID[:len(col.Name())+1] == col.Name()+"/", "index id %q", persistent.ID)
		again, created, err := col.EnsurePersistentIndex(e.ctx, []string{"name"},
			&arangodb.CreatePersistentIndexOptions{Name: "by_name", Unique: utils.NewType(true)})
		must(t, err, "the same persistent index again")
		check(t, !created, "the existing index was reported as created")
		equal(t, "same index id", again.ID, persistent.ID)

		_, err = col.CreateDocument(e.ctx, map[string]any{"name": "x"})
		must(t, err, "first document")
		_, err = col.CreateDocument(e.ctx, map[string]any{"name": "x"})
		wantError(t, err, 409, 1210, "unique constraint")

		geo, created, err := col.EnsureGeoIndex(e.ctx, []string{"loc"}, &arangodb.CreateGeoIndexOptions{GeoJSON: utils.NewType(true)})
		must(t, err, "geo index")
		check(t, created, "geo index not created")
		equal(t, "geo type", geo.Type, arangodb.GeoIndexType)
		equal(t, "geo geoJson", *geo.RegularIndex.GeoJSON, true)

		ttl, created, err := col.EnsureTTLIndex(e.ctx, []string{"expires"}, 3600, nil)
		must(t, err, "ttl index")
		check(t, created, "ttl index not created")
		equal(t, "ttl type", ttl.Type, arangodb.TTLIndexType)
		equal(t, "ttl expireAfter", *ttl.RegularIndex.ExpireAfter, 3600)
		_, _, err = col.EnsureTTLIndex(e.ctx, []string{"other"}, 60, nil)
		wantError(t, err, 400, 10, "a second ttl index")

		inverted, created, err := col.EnsureInvertedIndex(e.ctx, &arangodb.InvertedIndexOptions{
			Name:   "words",
			Fields: []arangodb.InvertedIndexField{{Name: "text"}},
		})
		must(t, err, "inverted index")
		check(t, created, "inverted index not created")
		equal(t, "inverted type", inverted.Type, arangodb.InvertedIndexType)
		equal(t, "inverted fields", len(inverted.InvertedIndex.Fields), 1)
		equal(t, "inverted field", inverted.InvertedIndex.Fields[0].Name, "text")

		all, err := col.Indexes(e.ctx)
		must(t, err, "list indexes")
		var types []arangodb.IndexType
		for _, idx := range all {
			types = append(types, idx.Type)
		}
		slices.Sort(types)
		equal(t, "index types", types, []arangodb.IndexType{"geo", "inverted", "persistent", "primary", "ttl"})

		byName, err := col.Index(e.ctx, "by_name")
		must(t, err, "index by name")
		equal(t, "index by name", byName.ID, persistent.ID)
		must(t, col.DeleteIndex(e.ctx, "by_name"), "drop index")
		_, err = col.Index(e.ctx, "by_name")
		wantStatus(t, err, 404, "the dropped index")
		_, err = col.CreateDocument(e.ctx, map[string]any{"name": "x"})
		must(t, err, "a duplicate once the unique index is gone")
	})
}
