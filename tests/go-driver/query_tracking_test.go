// Query tracking: the properties (GET, and PUT with members left null as the driver sends
// them), each database's own properties and slow-query list, running queries and their kill.
package godriver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/arangodb/go-driver/v2/arangodb"
	"github.com/arangodb/go-driver/v2/utils"
)

func TestQueryPropertiesAndSlowQueries(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		props, err := db.GetQueryProperties(e.ctx)
		must(t, err, "get query properties")
		defaults := arangodb.QueryProperties{
			Enabled:                     utils.NewType(true),
			TrackSlowQueries:            utils.NewType(true),
			TrackBindVars:               utils.NewType(true),
			MaxSlowQueries:              utils.NewType(64),
			SlowQueryThreshold:          utils.NewType(10.0),
			SlowStreamingQueryThreshold: utils.NewType(10.0),
			MaxQueryStringLength:        utils.NewType(4096),
		}
		equal(t, "defaults", props, defaults)

		// The driver sends every member it was not given as null: those stay as they are.
		props, err = db.UpdateQueryProperties(e.ctx, arangodb.QueryProperties{SlowStreamingQueryThreshold: utils.NewType(2.5)})
		must(t, err, "set slowStreamingQueryThreshold alone")
		want := defaults
		want.SlowStreamingQueryThreshold = utils.NewType(2.5)
		equal(t, "after setting slowStreamingQueryThreshold", props, want)
		props, err = db.GetQueryProperties(e.ctx)
		must(t, err, "get query properties again")
		equal(t, "read back", props, want)

		props, err = db.UpdateQueryProperties(e.ctx, arangodb.QueryProperties{
			SlowQueryThreshold: utils.NewType(0.0),
			MaxSlowQueries:     utils.NewType(3),
		})
		must(t, err, "make every query slow")
		equal(t, "slowQueryThreshold", *props.SlowQueryThreshold, 0.0)
		equal(t, "maxSlowQueries", *props.MaxSlowQueries, 3)

		// Another database keeps its own properties.
		other := e.database(t)
		otherProps, err := other.GetQueryProperties(e.ctx)
		must(t, err, "properties of another database")
		equal(t, "another database's properties", otherProps, defaults)

		for i := 0; i < 5; i++ {
			_, err := db.Query(e.ctx, "RETURN @n * 2", &arangodb.QueryOptions{BindVars: map[string]any{"n": i}})
			must(t, err, "query %d", i)
		}
		slow, err := db.ListOfSlowAQLQueries(e.ctx, nil)
		must(t, err, "list slow queries")
		equal(t, "slow queries kept (maxSlowQueries)", len(slow), 3)
		last := slow[len(slow)-1]
		equal(t, "query", *last.Query, "RETURN @n * 2")
		equal(t, "database", *last.Database, db.Name())
		equal(t, "user", *last.User, "root")
		equal(t, "state", *last.State, "finished")
		equal(t, "bindVars", *last.BindVars, map[string]any{"n": float64(4)})
		check(t, last.RunTime != nil && *last.RunTime >= 0, "runTime %v", last.RunTime)
		check(t, last.Id != nil && *last.Id != "", "no id")
		otherSlow, err := other.ListOfSlowAQLQueries(e.ctx, nil)
		must(t, err, "slow queries of another database")
		equal(t, "another database's slow queries", len(otherSlow), 0)

		must(t, db.ClearSlowAQLQueries(e.ctx, nil), "clear slow queries")
		slow, err = db.ListOfSlowAQLQueries(e.ctx, nil)
		must(t, err, "list slow queries after clearing")
		equal(t, "slow queries after clearing", len(slow), 0)
	})
}

func TestRunningQueryListedAndKilled(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		db := e.database(t)
		query := fmt.Sprintf("RETURN SLEEP(10) /* %s */", db.Name())
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := db.Query(ctx, query, nil)
			done <- err
		}()

		var running arangodb.RunningAQLQuery
		deadline := time.Now().Add(5 * time.Second)
		for running.Id == nil {
			check(t, time.Now().Before(deadline), "the query was not listed as running within 5 s")
			list, err := db.ListOfRunningAQLQueries(e.ctx, nil)
			must(t, err, "list running queries")
			for _, q := range list {
				if q.Query != nil && *q.Query == query {
					running = q
				}
			}
			if running.Id == nil {
				time.Sleep(20 * time.Millisecond)
			}
		}
		equal(t, "state", *running.State, "executing")
		equal(t, "database", *running.Database, db.Name())
		equal(t, "stream", *running.Stream, false)

		must(t, db.KillAQLQuery(e.ctx, *running.Id, nil), "kill")
		select {
		case err := <-done:
			wantError(t, err, 410, 1500, "the killed query")
		case <-time.After(5 * time.Second):
			t.Fatal("the killed query still runs after 5 s")
		}
		wantError(t, db.KillAQLQuery(e.ctx, *running.Id, nil), 404, 1591, "kill the finished query")
	})
}
