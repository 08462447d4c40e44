// Every test runs twice: over HTTP/1.1 (the driver's HTTP connection) and over HTTP/2 (the
// driver's HTTP/2 connection, cleartext with prior knowledge), each time with root's Basic
// credentials through the driver's authentication.
package godriver

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arangodb/go-driver/v2/arangodb"
	"github.com/arangodb/go-driver/v2/connection"
)

// protocol is one way the driver connects.
type protocol struct {
	name  string
	major int // the HTTP major version every response must carry
	dial  func(endpoint connection.Endpoint) connection.Connection
}

var protocols = []protocol{
	{"http1", 1, func(e connection.Endpoint) connection.Connection {
		return connection.NewHttpConnection(connection.DefaultHTTPConfigurationWrapper(e, false))
	}},
	{"http2", 2, func(e connection.Endpoint) connection.Connection {
		return connection.NewHttp2Connection(connection.DefaultHTTP2ConfigurationWrapper(e, false))
	}},
}

// env is what a test body gets: a root client over one protocol and helpers.
type env struct {
	proto  protocol
	client arangodb.Client
	ctx    context.Context
}

// nameCounter makes every name a test creates unique across protocols and tests.
var nameCounter atomic.Int64

// name is a fresh database, collection, graph or user name starting with prefix.
func (e *env) name(prefix string) string {
	return fmt.Sprintf("%s_%s_%d", prefix, e.proto.name, nameCounter.Add(1))
}

// connect is a connection over this env's protocol with the given Basic credentials.
func (e *env) connect(user, password string) connection.Connection {
	conn := e.proto.dial(connection.NewRoundRobinEndpoints([]string{serverURL}))
	if err := conn.SetAuthentication(connection.NewBasicAuth(user, password)); err != nil {
		panic(err)
	}
	return conn
}

// clientAs is a client over this env's protocol logged in as user.
func (e *env) clientAs(user, password string) arangodb.Client {
	return arangodb.NewClient(e.connect(user, password))
}

// database creates a database for the test and drops it at the end.
func (e *env) database(t *testing.T) arangodb.Database {
	t.Helper()
	name := e.name("db")
	db, err := e.client.CreateDatabase(e.ctx, name, nil)
	must(t, err, "create database %s", name)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := db.Remove(ctx); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return db
}

// collection creates a collection in db with the given properties (nil: defaults).
func (e *env) collection(t *testing.T, db arangodb.Database, props *arangodb.CreateCollectionPropertiesV2) arangodb.Collection {
	t.Helper()
	name := e.name("c")
	col, err := db.CreateCollectionV2(e.ctx, name, props)
	must(t, err, "create collection %s", name)
	return col
}

// eachProtocol runs body once per protocol as a subtest, after checking that the driver's
// connection really speaks that protocol to the server.
func eachProtocol(t *testing.T, body func(t *testing.T, e *env)) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			e := &env{proto: p, ctx: ctx}
			e.client = e.clientAs("root", "")
			var version arangodb.VersionInfo
			resp, err := e.client.Get(ctx, &version, "_api", "version")
			must(t, err, "GET /_api/version")
			if got := resp.RawResponse().ProtoMajor; got != p.major {
				t.Fatalf("%s connection: the response came over HTTP/%d", p.name, got)
			}
			body(t, e)
		})
	}
}

func must(t *testing.T, err error, what string, args ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", fmt.Sprintf(what, args...), err)
	}
}
