// Async jobs (x-arango-async: store) through the driver's async connection: a request answered
// 202 with a job id, the pending and done lists (with count), the stored result fetched once,
// deletion of one job, of expired jobs and of all jobs, with the lists' sizes after each.
package godriver

import (
	"slices"
	"testing"
	"time"

	"github.com/arangodb/go-driver/v2/arangodb"
	"github.com/arangodb/go-driver/v2/connection"
)

// jobID is the id of the job a request sent with connection.WithAsync became.
func jobID(t *testing.T, err error, what string) string {
	t.Helper()
	id, ok := connection.IsAsyncJobInProgress(err)
	check(t, ok && id != "", "%s: want a job in progress, got %v", what, err)
	return id
}

// waitForJobs polls the list of `status` jobs until it has exactly `want` ids (at most 10 s).
func waitForJobs(t *testing.T, e *env, status arangodb.AsyncJobStatusType, want int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		jobs, err := e.client.AsyncJobList(e.ctx, status, nil)
		must(t, err, "list %s jobs", status)
		if len(jobs) == want {
			return jobs
		}
		check(t, time.Now().Before(deadline), "%s jobs: %v after 10 s, want %d", status, jobs, want)
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAsyncJobs(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		async := arangodb.NewClient(connection.NewConnectionAsyncWrapper(e.connect("root", "")))
		queue := connection.WithAsync(e.ctx)
		removed, err := e.client.AsyncJobDelete(e.ctx, arangodb.DeleteAllJobs, nil)
		must(t, err, "delete all jobs first")
		check(t, removed, "delete all: result false")
		waitForJobs(t, e, arangodb.JobDone, 0)

		_, err = async.Version(queue)
		first := jobID(t, err, "first async request")
		_, err = async.Version(queue)
		second := jobID(t, err, "second async request")
		check(t, first != second, "two jobs with the same id %s", first)
		done := waitForJobs(t, e, arangodb.JobDone, 2)
		slices.Sort(done)
		want := []string{first, second}
		slices.Sort(want)
		equal(t, "done jobs", done, want)
		limited, err := e.client.AsyncJobList(e.ctx, arangodb.JobDone, &arangodb.AsyncJobListOptions{Count: 1})
		must(t, err, "list done jobs with count 1")
		equal(t, "done jobs with count 1", len(limited), 1)
		status, err := e.client.AsyncJobStatus(e.ctx, first)
		must(t, err, "status of a done job")
		equal(t, "status", status, arangodb.JobDone)

		// The stored result is handed out once.
		v, err := async.Version(connection.WithAsyncID(e.ctx, first))
		must(t, err, "fetch the first job's result")
		equal(t, "stored result", v.Server, "arango")
		waitForJobs(t, e, arangodb.JobDone, 1)
		_, err = async.Version(connection.WithAsyncID(e.ctx, first))
		wantError(t, err, 404, 404, "fetch the same result again")

		removed, err = e.client.AsyncJobDelete(e.ctx, arangodb.DeleteSingleJob, &arangodb.AsyncJobDeleteOptions{JobID: second})
		must(t, err, "delete the second job")
		check(t, removed, "delete single: result false")
		waitForJobs(t, e, arangodb.JobDone, 0)
		_, err = e.client.AsyncJobDelete(e.ctx, arangodb.DeleteSingleJob, &arangodb.AsyncJobDeleteOptions{JobID: second})
		wantStatus(t, err, 404, "delete the deleted job")

		// A job that runs a while is pending, then done.
		db := e.database(t)
		asyncDB, err := async.GetDatabase(e.ctx, db.Name(), &arangodb.GetDatabaseOptions{SkipExistCheck: true})
		must(t, err, "the database through the async client")
		_, err = asyncDB.Query(queue, "RETURN SLEEP(1.5)", nil)
		slow := jobID(t, err, "async query")
		pending := waitForJobs(t, e, arangodb.JobPending, 1)
		equal(t, "pending job", pending[0], slow)
		_, err = asyncDB.Query(connection.WithAsyncID(e.ctx, slow), "RETURN SLEEP(1.5)", nil)
		equal(t, "fetch a pending job's result", jobID(t, err, "fetch while pending"), slow)
		done = waitForJobs(t, e, arangodb.JobDone, 1)
		equal(t, "done after running", done[0], slow)
		waitForJobs(t, e, arangodb.JobPending, 0)
		cursor, err := asyncDB.Query(connection.WithAsyncID(e.ctx, slow), "RETURN SLEEP(1.5)", nil)
		must(t, err, "fetch the query's result")
		var result any
		_, err = cursor.ReadDocument(e.ctx, &result)
		must(t, err, "read the query's result")
		equal(t, "SLEEP's result", result, any(nil))
		waitForJobs(t, e, arangodb.JobDone, 0)

		// Expired: jobs done before the stamp go, later ones stay.
		_, err = async.Version(queue)
		jobID(t, err, "async request before the stamp")
		waitForJobs(t, e, arangodb.JobDone, 1)
		removed, err = e.client.AsyncJobDelete(e.ctx, arangodb.DeleteExpiredJobs, &arangodb.AsyncJobDeleteOptions{Stamp: time.Now().Add(-time.Hour)})
		must(t, err, "delete jobs expired an hour ago")
		check(t, removed, "delete expired: result false")
		waitForJobs(t, e, arangodb.JobDone, 1)
		removed, err = e.client.AsyncJobDelete(e.ctx, arangodb.DeleteExpiredJobs, &arangodb.AsyncJobDeleteOptions{Stamp: time.Now().Add(time.Hour)})
		must(t, err, "delete jobs expired by an hour from now")
		check(t, removed, "delete expired: result false")
		waitForJobs(t, e, arangodb.JobDone, 0)

		_, err = async.Version(queue)
		jobID(t, err, "async request")
		_, err = async.Version(queue)
		jobID(t, err, "async request")
		waitForJobs(t, e, arangodb.JobDone, 2)
		removed, err = e.client.AsyncJobDelete(e.ctx, arangodb.DeleteAllJobs, nil)
		must(t, err, "delete all jobs")
		check(t, removed, "delete all: result false")
		waitForJobs(t, e, arangodb.JobDone, 0)
	})
}
