// Small assertions shared by the tests.
package godriver

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/arangodb/go-driver/v2/arangodb/shared"
)

// equal fails the test when got and want differ.
func equal[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: got %s, want %s", what, show(got), show(want))
	}
}

// show is v as JSON (pointers show what they point to), or Go syntax when it is no JSON.
func show(v any) string {
	if b, err := json.Marshal(v); err == nil {
		return fmt.Sprintf("%s (%T)", b, v)
	}
	return fmt.Sprintf("%#v", v)
}

// check fails the test when cond is false.
func check(t *testing.T, cond bool, what string, args ...any) {
	t.Helper()
	if !cond {
		t.Fatalf(what, args...)
	}
}

// arangoError returns err as the driver's ArangoDB error, failing the test when it is none.
func arangoError(t *testing.T, err error, what string) shared.ArangoError {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want an error", what)
	}
	var ae shared.ArangoError
	if !errors.As(err, &ae) {
		t.Fatalf("%s: %v (%T) is not an ArangoDB error", what, err, err)
	}
	return ae
}

// wantStatus fails the test unless err is an ArangoDB error with this HTTP status. For the
// driver calls that report only the status of a refusal (they do not read the error body:
// Database.Remove, Collection.Index, ClientAsyncJob.AsyncJobDelete).
func wantStatus(t *testing.T, err error, code int, what string) {
	t.Helper()
	if ae := arangoError(t, err, what); ae.Code != code {
		t.Fatalf("%s: got status %d (%s), want %d", what, ae.Code, ae.ErrorMessage, code)
	}
}

// wantError fails the test unless err is ArangoDB's error with this HTTP status and number.
func wantError(t *testing.T, err error, code, errorNum int, what string) shared.ArangoError {
	t.Helper()
	ae := arangoError(t, err, what)
	if ae.Code != code || ae.ErrorNum != errorNum {
		t.Fatalf("%s: got %d/%d (%s), want %d/%d", what, ae.Code, ae.ErrorNum, ae.ErrorMessage, code, errorNum)
	}
	return ae
}
