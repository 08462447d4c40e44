// Documents: single-document create, read, update, replace, delete with their errors, and the
// many-document calls with per-item errors and the HTTP status of a partly failed call (202,
// or 201 on a waitForSync collection, with X-Arango-Error-Codes counting the item errors).
package godriver

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/arangodb/go-driver/v2/arangodb"
	"github.com/arangodb/go-driver/v2/connection"
	"github.com/arangodb/go-driver/v2/utils"
)

type item struct {
	Key   string `json:"_key,omitempty"`
	Name  string `json:"name,omitempty"`
	Count int    `json:"count,omitempty"`
	Extra string `json:"extra,omitempty"`
}

func TestDocumentSingleCRUD(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		col := e.collection(t, db, nil)

		var created item
		meta, err := col.CreateDocumentWithOptions(e.ctx, item{Key: "a", Name: "Ann", Count: 1},
			&arangodb.CollectionDocumentCreateOptions{NewObject: &created})
		must(t, err, "create")
		equal(t, "key", meta.Key, "a")
		equal(t, "id", string(meta.ID), col.Name()+"/a")
		check(t, meta.Rev != "", "no _rev")
		equal(t, "returned new", created, item{Key: "a", Name: "Ann", Count: 1})

		_, err = col.CreateDocument(e.ctx, item{Key: "a"})
		wantError(t, err, 409, 1210, "create a key that exists")
		_, err = col.CreateDocument(e.ctx, item{Key: "no/slash"})
		wantError(t, err, 400, 1221, "create with an illegal key")

		var read item
		readMeta, err := col.ReadDocument(e.ctx, "a", &read)
		must(t, err, "read")
		equal(t, "read", read, created)
		equal(t, "read _rev", readMeta.Rev, meta.Rev)
		_, err = col.ReadDocument(e.ctx, "missing", &read)
		wantError(t, err, 404, 1202, "read a missing document")

		var old, updated item
		up, err := col.UpdateDocumentWithOptions(e.ctx, "a", map[string]any{"extra": "x"},
			&arangodb.CollectionDocumentUpdateOptions{OldObject: &old, NewObject: &updated})
		must(t, err, "update")
		equal(t, "update _oldRev", up.OldRev, meta.Rev)
		equal(t, "update old", old, created)
		equal(t, "update new (merged)", updated, item{Key: "a", Name: "Ann", Count: 1, Extra: "x"})
		_, err = col.UpdateDocumentWithOptions(e.ctx, "a", map[string]any{"count": 2},
			&arangodb.CollectionDocumentUpdateOptions{IfMatch: meta.Rev})
		wantError(t, err, 412, 1200, "update with a stale If-Match")

		var replaced item
		rep, err := col.ReplaceDocumentWithOptions(e.ctx, "a", item{Name: "Bo"},
			&arangodb.CollectionDocumentReplaceOptions{NewObject: &replaced})
		must(t, err, "replace")
		equal(t, "replace _oldRev", rep.OldRev, up.Rev)
		equal(t, "replace new", replaced, item{Key: "a", Name: "Bo"})
		_, err = col.ReplaceDocument(e.ctx, "missing", item{Name: "x"})
		wantError(t, err, 404, 1202, "replace a missing document")

		var removed item
		del, err := col.DeleteDocumentWithOptions(e.ctx, "a", &arangodb.CollectionDocumentDeleteOptions{OldObject: &removed})
		must(t, err, "delete")
		equal(t, "delete _rev", del.Rev, rep.Rev)
		equal(t, "delete old", removed, item{Key: "a", Name: "Bo"})
		_, err = col.DeleteDocument(e.ctx, "a")
		wantError(t, err, 404, 1202, "delete the deleted document")
	})
}

// itemErrors is the ArangoDB error number of each item's error (0 for an item without one).
func itemErrors(t *testing.T, errs []error) []int {
	t.Helper()
	nums := make([]int, len(errs))
	for i, err := range errs {
		if err != nil {
			nums[i] = arangoError(t, err, "item error").ErrorNum
		}
	}
	return nums
}

func TestDocumentManyWithItemErrors(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		col := e.collection(t, db, nil)

		created, err := col.CreateDocuments(e.ctx, []item{{Key: "a", Count: 1}, {Key: "b", Count: 2}, {Key: "a", Count: 3}, {Key: "bad key!"}})
		must(t, err, "create many")
		metas, errs := created.ReadAll()
		equal(t, "items", len(metas), 4)
		equal(t, "item errors of create", itemErrors(t, errs), []int{0, 0, 1210, 1221})
		equal(t, "created keys", []string{metas[0].Key, metas[1].Key}, []string{"a", "b"})

		reader, err := col.ReadDocuments(e.ctx, []string{"a", "missing", "b"})
		must(t, err, "read many")
		var docs []item
		readMetas, errs := reader.ReadAll(&docs)
		equal(t, "item errors of read", itemErrors(t, errs), []int{0, 1202, 0})
		equal(t, "read keys", []string{readMetas[0].Key, readMetas[2].Key}, []string{"a", "b"})

		updates, err := col.UpdateDocuments(e.ctx, []item{{Key: "a", Extra: "u"}, {Key: "missing", Extra: "u"}})
		must(t, err, "update many")
		_, errs = updates.ReadAll()
		equal(t, "item errors of update", itemErrors(t, errs), []int{0, 1202})

		replaces, err := col.ReplaceDocuments(e.ctx, []item{{Key: "b", Name: "r"}, {Key: "missing", Name: "r"}})
		must(t, err, "replace many")
		_, errs = replaces.ReadAll()
		equal(t, "item errors of replace", itemErrors(t, errs), []int{0, 1202})

		var updated, replaced item
		_, err = col.ReadDocument(e.ctx, "a", &updated)
		must(t, err, "read after update many")
		equal(t, "updated by the many-call", updated, item{Key: "a", Count: 1, Extra: "u"})
		_, err = col.ReadDocument(e.ctx, "b", &replaced)
		must(t, err, "read after replace many")
		equal(t, "replaced by the many-call", replaced, item{Key: "b", Name: "r"})

		deletes, err := col.DeleteDocuments(e.ctx, []string{"a", "missing", "b"})
		must(t, err, "delete many")
		var olds []item
		_, errs = deletes.ReadAll(&olds)
		equal(t, "item errors of delete", itemErrors(t, errs), []int{0, 1202, 0})
		count, err := col.Count(e.ctx)
		must(t, err, "count")
		equal(t, "count after delete many", count, int64(0))
	})
}

// A many-call with item errors answers 201 on a waitForSync collection (or with
// waitForSync=true), 202 otherwise, and counts the item errors by number in
// X-Arango-Error-Codes.
func TestDocumentManyStatusWithItemErrors(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		synced := e.collection(t, db, &arangodb.CreateCollectionPropertiesV2{WaitForSync: utils.NewType(true)})
		plain := e.collection(t, db, nil)
		conn := e.client.Connection()
		post := func(col arangodb.Collection, mods ...connection.RequestModifier) connection.Response {
			t.Helper()
			body := []item{{Key: "k"}, {Key: "k"}, {Key: "k"}, {Key: "bad key!"}}
			var out []map[string]any
			resp, err := connection.CallPost(e.ctx, conn, connection.NewUrl("_db", db.Name(), "_api", "document", col.Name()), &out, body, mods...)
			must(t, err, "POST many")
			equal(t, "items", len(out), 4)
			equal(t, "first item", out[0]["_key"], any("k"))
			equal(t, "second item", out[1]["errorNum"], any(float64(1210)))
			equal(t, "fourth item", out[3]["errorNum"], any(float64(1221)))
			var codes map[string]int
			must(t, json.Unmarshal([]byte(resp.Header("X-Arango-Error-Codes")), &codes), "X-Arango-Error-Codes %q", resp.Header("X-Arango-Error-Codes"))
			equal(t, "X-Arango-Error-Codes", codes, map[string]int{"1210": 2, "1221": 1})
			return resp
		}
		equal(t, "status on a waitForSync collection", post(synced).Code(), http.StatusCreated)
		equal(t, "status without waitForSync", post(plain).Code(), http.StatusAccepted)
		must(t, plain.Truncate(e.ctx), "truncate")
		equal(t, "status with waitForSync=true", post(plain, connection.WithQuery("waitForSync", "true")).Code(), http.StatusCreated)

		// The driver's many-call accepts both statuses and reports the items.
		reader, err := synced.CreateDocumentsWithOptions(e.ctx, []item{{Key: "k"}, {Key: "n"}},
			&arangodb.CollectionDocumentCreateOptions{WithWaitForSync: utils.NewType(true)})
		must(t, err, "create many with waitForSync")
		_, errs := reader.ReadAll()
		equal(t, "item errors", itemErrors(t, errs), []int{1210, 0})
	})
}
