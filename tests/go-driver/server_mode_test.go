// Read-only server mode (PUT /_admin/server/mode): document writes refused with 403/1004,
// changes of databases and collections with 403/11, reads go on; back to default, writes work.
package godriver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/arangodb/go-driver/v2/arangodb"
)

func TestServerModeReadOnly(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		col := e.collection(t, db, nil)
		_, err := col.CreateDocument(e.ctx, map[string]any{"_key": "before"})
		must(t, err, "write before")

		mode, err := e.client.ServerMode(e.ctx)
		must(t, err, "server mode")
		equal(t, "mode at start", mode, arangodb.ServerModeDefault)
		must(t, e.client.SetServerMode(e.ctx, arangodb.ServerModeReadOnly), "switch to read-only")
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := e.client.SetServerMode(ctx, arangodb.ServerModeDefault); err != nil {
				t.Errorf("back to the default mode: %v", err)
			}
		})
		mode, err = e.client.ServerMode(e.ctx)
		must(t, err, "server mode after the switch")
		equal(t, "mode", mode, arangodb.ServerModeReadOnly)

		_, err = col.CreateDocument(e.ctx, map[string]any{"_key": "during"})
		wantError(t, err, 403, 1004, "insert in read-only mode")
		_, err = col.UpdateDocument(e.ctx, "before", map[string]any{"x": 1})
		wantError(t, err, 403, 1004, "update in read-only mode")
		_, err = col.DeleteDocument(e.ctx, "before")
		wantError(t, err, 403, 1004, "delete in read-only mode")
		wantError(t, col.Truncate(e.ctx), 403, 1004, "truncate in read-only mode")
		_, err = db.Query(e.ctx, fmt.Sprintf("INSERT {} INTO `%s`", col.Name()), nil)
		wantError(t, err, 403, 1004, "writing query in read-only mode")
		_, err = db.CreateCollectionV2(e.ctx, e.name("c"), nil)
		wantError(t, err, 403, 11, "create a collection in read-only mode")
		_, err = e.client.CreateDatabase(e.ctx, e.name("db"), nil)
		wantError(t, err, 403, 11, "create a database in read-only mode")

		var doc map[string]any
		_, err = col.ReadDocument(e.ctx, "before", &doc)
		must(t, err, "read in read-only mode")
		cursor, err := db.Query(e.ctx, fmt.Sprintf("FOR d IN `%s` RETURN d._key", col.Name()), nil)
		must(t, err, "reading query in read-only mode")
		var key string
		_, err = cursor.ReadDocument(e.ctx, &key)
		must(t, err, "read the query's result")
		equal(t, "key", key, "before")

		must(t, e.client.SetServerMode(e.ctx, arangodb.ServerModeDefault), "back to default")
		mode, err = e.client.ServerMode(e.ctx)
		must(t, err, "server mode after switching back")
		equal(t, "mode after switching back", mode, arangodb.ServerModeDefault)
		_, err = col.CreateDocument(e.ctx, map[string]any{"_key": "after"})
		must(t, err, "write after switching back")
	})
}
