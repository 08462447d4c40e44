// Stream transactions: begin, writes and reads inside (documents and AQL) that stay invisible
// outside until the commit, abort, status, listing, an unknown transaction id.
package godriver

import (
	"fmt"
	"slices"
	"testing"

	"github.com/arangodb/go-driver/v2/arangodb"
)

func TestStreamTransactions(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		col := e.collection(t, db, nil)

		trx, err := db.BeginTransaction(e.ctx, arangodb.TransactionCollections{Write: []string{col.Name()}}, nil)
		must(t, err, "begin")
		status, err := trx.Status(e.ctx)
		must(t, err, "status")
		equal(t, "status", status.Status, arangodb.TransactionRunning)
		list, err := db.ListTransactions(e.ctx)
		must(t, err, "list transactions")
		check(t, slices.ContainsFunc(list, func(x arangodb.Transaction) bool { return x.ID() == trx.ID() }), "the running transaction is not listed")

		inside, err := trx.GetCollection(e.ctx, col.Name(), nil)
		must(t, err, "the collection inside the transaction")
		_, err = inside.CreateDocument(e.ctx, map[string]any{"_key": "t1", "v": 1})
		must(t, err, "insert inside")
		var doc map[string]any
		_, err = inside.ReadDocument(e.ctx, "t1", &doc)
		must(t, err, "read inside")
		_, err = col.ReadDocument(e.ctx, "t1", &doc)
		wantError(t, err, 404, 1202, "read outside before the commit")
		n, err := inside.Count(e.ctx)
		must(t, err, "count inside")
		equal(t, "count inside", n, int64(1))
		n, err = col.Count(e.ctx)
		must(t, err, "count outside")
		equal(t, "count outside", n, int64(0))
		cursor, err := trx.Query(e.ctx, fmt.Sprintf("FOR d IN `%s` RETURN d._key", col.Name()), nil)
		must(t, err, "query inside")
		var key string
		_, err = cursor.ReadDocument(e.ctx, &key)
		must(t, err, "read the query's result")
		equal(t, "key seen by the query inside", key, "t1")

		must(t, trx.Commit(e.ctx, nil), "commit")
		status, err = trx.Status(e.ctx)
		must(t, err, "status after commit")
		equal(t, "status after commit", status.Status, arangodb.TransactionCommitted)
		_, err = col.ReadDocument(e.ctx, "t1", &doc)
		must(t, err, "read outside after the commit")

		aborted, err := db.BeginTransaction(e.ctx, arangodb.TransactionCollections{Write: []string{col.Name()}}, nil)
		must(t, err, "begin a second")
		inside, err = aborted.GetCollection(e.ctx, col.Name(), nil)
		must(t, err, "the collection inside the second")
		_, err = inside.CreateDocument(e.ctx, map[string]any{"_key": "t2"})
		must(t, err, "insert inside the second")
		_, err = inside.DeleteDocument(e.ctx, "t1")
		must(t, err, "delete inside the second")
		must(t, aborted.Abort(e.ctx, nil), "abort")
		status, err = aborted.Status(e.ctx)
		must(t, err, "status after abort")
		equal(t, "status after abort", status.Status, arangodb.TransactionAborted)
		_, err = col.ReadDocument(e.ctx, "t2", &doc)
		wantError(t, err, 404, 1202, "the aborted insert")
		_, err = col.ReadDocument(e.ctx, "t1", &doc)
		must(t, err, "the aborted delete left the document")

		_, err = db.Transaction(e.ctx, "12345")
		wantError(t, err, 404, 1655, "an unknown transaction")
		_, err = db.BeginTransaction(e.ctx, arangodb.TransactionCollections{Write: []string{"missing"}}, nil)
		wantError(t, err, 404, 1203, "begin on a missing collection")
	})
}
