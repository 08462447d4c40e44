// AQL cursors: results in several batches (batchSize), count, fullCount, statistics, the
// retry of a batch of an allowRetry cursor (nextBatchId), and query errors.
package godriver

import (
	"fmt"
	"slices"
	"testing"

	"github.com/arangodb/go-driver/v2/arangodb"
	"github.com/arangodb/go-driver/v2/arangodb/shared"
)

// filled is a collection with documents {n: 0} … {n: count-1}.
func filled(t *testing.T, e *env, db arangodb.Database, count int) arangodb.Collection {
	t.Helper()
	col := e.collection(t, db, nil)
	docs := make([]map[string]any, count)
	for i := range docs {
		docs[i] = map[string]any{"n": i}
	}
	reader, err := col.CreateDocuments(e.ctx, docs)
	must(t, err, "fill")
	_, errs := reader.ReadAll()
	for _, err := range errs {
		must(t, err, "fill item")
	}
	return col
}

func TestCursorBatchesCountFullCount(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		col := filled(t, e, db, 10)
		query := fmt.Sprintf("FOR d IN `%s` SORT d.n RETURN d.n", col.Name())

		cursor, err := db.Query(e.ctx, query, &arangodb.QueryOptions{BatchSize: 3, Count: true})
		must(t, err, "query")
		equal(t, "count", cursor.Count(), int64(10))
		var got []int
		for cursor.HasMore() {
			var n int
			_, err := cursor.ReadDocument(e.ctx, &n)
			must(t, err, "read document %d", len(got))
			got = append(got, n)
		}
		equal(t, "results over four batches", got, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
		var n int
		_, err = cursor.ReadDocument(e.ctx, &n)
		check(t, shared.IsNoMoreDocuments(err), "read past the end: %v", err)
		must(t, cursor.Close(), "close the exhausted cursor")

		var batch []int
		batches, err := db.QueryBatch(e.ctx, query, &arangodb.QueryOptions{BatchSize: 4}, &batch)
		must(t, err, "query in batches")
		sizes := []int{len(batch)}
		for batches.HasMoreBatches() {
			must(t, batches.ReadNextBatch(e.ctx, &batch), "next batch")
			sizes = append(sizes, len(batch))
		}
		equal(t, "batch sizes", sizes, []int{4, 4, 2})
		equal(t, "last batch", batch, []int{8, 9})
		equal(t, "count without asking for it", batches.Count(), int64(0))

		limitedQuery := fmt.Sprintf("FOR d IN `%s` SORT d.n LIMIT 2 RETURN d", col.Name())
		limited, err := db.Query(e.ctx, limitedQuery, nil)
		must(t, err, "query with LIMIT")
		equal(t, "fullCount without asking for it", limited.Statistics().FullCountInt, uint64(0))
		limited, err = db.Query(e.ctx, limitedQuery, &arangodb.QueryOptions{Options: arangodb.QuerySubOptions{FullCount: true}})
		must(t, err, "query with LIMIT and fullCount")
		stats := limited.Statistics()
		equal(t, "fullCount", stats.FullCountInt, uint64(10))
		equal(t, "scannedFull", stats.ScannedFullInt, uint64(10))

		write, err := db.Query(e.ctx, fmt.Sprintf("FOR i IN 1..5 INSERT {n: 100 + i} INTO `%s`", col.Name()), nil)
		must(t, err, "writing query")
		equal(t, "writesExecuted", write.Statistics().WritesExecutedInt, uint64(5))
		count, err := col.Count(e.ctx)
		must(t, err, "count")
		equal(t, "count after the writing query", count, int64(15))
	})
}

func TestCursorAllowRetry(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		col := filled(t, e, db, 7)
		query := fmt.Sprintf("FOR d IN `%s` SORT d.n RETURN d.n", col.Name())

		var batch []int
		cursor, err := db.QueryBatch(e.ctx, query, &arangodb.QueryOptions{
			BatchSize: 3, Count: true, Options: arangodb.QuerySubOptions{AllowRetry: true},
		}, &batch)
		must(t, err, "query with allowRetry")
		equal(t, "count", cursor.Count(), int64(7))
		equal(t, "first batch", batch, []int{0, 1, 2})
		var all [][]int
		for cursor.HasMoreBatches() {
			must(t, cursor.ReadNextBatch(e.ctx, &batch), "next batch")
			var again []int
			must(t, cursor.RetryReadBatch(e.ctx, &again), "retry the batch just read")
			equal(t, "retried batch", again, batch)
			must(t, cursor.RetryReadBatch(e.ctx, &again), "retry it once more")
			equal(t, "batch retried twice", again, batch)
			all = append(all, slices.Clone(batch))
		}
		equal(t, "batches after the first", all, [][]int{{3, 4, 5}, {6}})
		must(t, cursor.Close(), "close")
	})
}

func TestQueryErrors(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		_, err := db.Query(e.ctx, "FOR d IN RETURN d", nil)
		wantError(t, err, 400, 1501, "syntax error")
		_, err = db.Query(e.ctx, "RETURN @missing", nil)
		wantError(t, err, 400, 1551, "missing bind parameter")
		_, err = db.Query(e.ctx, "FOR d IN nowhere RETURN d", nil)
		wantError(t, err, 404, 1203, "unknown collection")
		must(t, db.ValidateQuery(e.ctx, "FOR d IN nowhere RETURN d"), "parse only")
		wantError(t, db.ValidateQuery(e.ctx, "RETURN ("), 400, 1501, "parse a syntax error")
	})
}
