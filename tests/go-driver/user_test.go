// Users and permissions: create a user, grant it read-only access to a database; a client
// logged in as that user reads and is refused writes with ArangoDB's status and error number,
// is refused databases it has no grant for; the user's queries are listed under its name.
package godriver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/arangodb/go-driver/v2/arangodb"
	"github.com/arangodb/go-driver/v2/utils"
)

func TestUserWithReadOnlyGrant(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		col := e.collection(t, db, nil)
		_, err := col.CreateDocument(e.ctx, map[string]any{"_key": "k", "v": 1})
		must(t, err, "a document")
		closed := e.database(t)

		name := e.name("user")
		user, err := e.client.CreateUser(e.ctx, name, &arangodb.UserOptions{Password: "secret", Extra: map[string]any{"team": "go"}})
		must(t, err, "create user")
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := e.client.RemoveUser(ctx, name); err != nil {
				t.Errorf("remove user %s: %v", name, err)
			}
		})
		equal(t, "name", user.Name(), name)
		equal(t, "active", user.IsActive(), true)
		var extra map[string]any
		must(t, user.Extra(&extra), "extra")
		equal(t, "extra", extra, map[string]any{"team": "go"})
		_, err = e.client.CreateUser(e.ctx, name, &arangodb.UserOptions{Password: "x"})
		wantError(t, err, 409, 1702, "create the same user again")

		must(t, user.SetDatabaseAccess(e.ctx, db.Name(), arangodb.GrantReadOnly), "grant ro")
		grant, err := user.GetDatabaseAccess(e.ctx, db.Name())
		must(t, err, "read the grant")
		equal(t, "grant", grant, arangodb.GrantReadOnly)
		grant, err = user.GetCollectionAccess(e.ctx, db.Name(), col.Name())
		must(t, err, "read the collection's grant")
		equal(t, "collection grant (from the database)", grant, arangodb.GrantReadOnly)
		grant, err = user.GetDatabaseAccess(e.ctx, closed.Name())
		must(t, err, "read the grant of a database without one")
		equal(t, "no grant", grant, arangodb.GrantNone)

		_, err = db.UpdateQueryProperties(e.ctx, arangodb.QueryProperties{SlowQueryThreshold: utils.NewType(0.0)})
		must(t, err, "make every query slow")

		reader := e.clientAs(name, "secret")
		readerDB, err := reader.GetDatabase(e.ctx, db.Name(), nil)
		must(t, err, "the database as the user")
		readerCol, err := readerDB.GetCollection(e.ctx, col.Name(), nil)
		must(t, err, "the collection as the user")
		var doc map[string]any
		_, err = readerCol.ReadDocument(e.ctx, "k", &doc)
		must(t, err, "read as the user")
		equal(t, "read", doc["v"], any(float64(1)))
		query := fmt.Sprintf("FOR d IN `%s` RETURN d.v", col.Name())
		cursor, err := readerDB.Query(e.ctx, query, nil)
		must(t, err, "reading query as the user")
		var v float64
		_, err = cursor.ReadDocument(e.ctx, &v)
		must(t, err, "read the query's result")
		equal(t, "query result", v, 1.0)
		slow, err := db.ListOfSlowAQLQueries(e.ctx, nil)
		must(t, err, "slow queries")
		check(t, len(slow) > 0, "the user's query is not in the slow list")
		equal(t, "user of the listed query", *slow[len(slow)-1].User, name)

		_, err = readerCol.CreateDocument(e.ctx, map[string]any{"v": 2})
		wantError(t, err, 403, 1004, "insert as a read-only user")
		_, err = readerCol.UpdateDocument(e.ctx, "k", map[string]any{"v": 2})
		wantError(t, err, 403, 1004, "update as a read-only user")
		_, err = readerCol.DeleteDocument(e.ctx, "k")
		wantError(t, err, 403, 1004, "delete as a read-only user")
		_, err = readerDB.Query(e.ctx, fmt.Sprintf("INSERT {v: 3} INTO `%s`", col.Name()), nil)
		wantError(t, err, 403, 1004, "writing query as a read-only user")
		_, err = readerDB.CreateCollectionV2(e.ctx, e.name("c"), nil)
		wantError(t, err, 403, 11, "create a collection as a read-only user")
		_, err = reader.CreateDatabase(e.ctx, e.name("db"), nil)
		wantError(t, err, 403, 11, "create a database as a read-only user")
		_, err = reader.GetDatabase(e.ctx, closed.Name(), nil)
		wantError(t, err, 401, 11, "a database without a grant")
		_, err = e.clientAs(name, "wrong").Version(e.ctx)
		wantError(t, err, 401, 11, "a wrong password")

		must(t, user.SetDatabaseAccess(e.ctx, db.Name(), arangodb.GrantReadWrite), "grant rw")
		_, err = readerCol.CreateDocument(e.ctx, map[string]any{"v": 2})
		must(t, err, "insert after the grant of rw")
	})
}
