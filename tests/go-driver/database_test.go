// Databases (create, list, describe, drop) and what the server says about itself (version,
// role, storage engine), through the driver's calls.
package godriver

import (
	"slices"
	"testing"

	"github.com/arangodb/go-driver/v2/arangodb"
	"github.com/arangodb/go-driver/v2/utils"
)

func databaseNames(t *testing.T, dbs []arangodb.Database) []string {
	t.Helper()
	names := make([]string, 0, len(dbs))
	for _, db := range dbs {
		names = append(names, db.Name())
	}
	return names
}

func TestDatabaseCreateListDrop(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		name := e.name("db")
		db, err := e.client.CreateDatabase(e.ctx, name, nil)
		must(t, err, "create database")

		_, err = e.client.CreateDatabase(e.ctx, name, nil)
		wantError(t, err, 409, 1207, "create the same database again")
		_, err = e.client.CreateDatabase(e.ctx, "no/slash", nil)
		wantError(t, err, 400, 1229, "create a database with an illegal name")

		exists, err := e.client.DatabaseExists(e.ctx, name)
		must(t, err, "database exists")
		check(t, exists, "the new database does not exist")
		all, err := e.client.Databases(e.ctx)
		must(t, err, "list databases")
		check(t, slices.Contains(databaseNames(t, all), name), "%s not among %v", name, databaseNames(t, all))
		check(t, slices.Contains(databaseNames(t, all), "_system"), "_system not listed")
		mine, err := e.client.AccessibleDatabases(e.ctx)
		must(t, err, "list the databases root may use")
		check(t, slices.Contains(databaseNames(t, mine), name), "%s not accessible", name)

		info, err := db.Info(e.ctx)
		must(t, err, "database info")
		equal(t, "name", info.Name, name)
		equal(t, "isSystem", info.IsSystem, false)
		check(t, info.ID != "", "the database has no id")
		sys, err := e.client.GetDatabase(e.ctx, "_system", nil)
		must(t, err, "get _system")
		sysInfo, err := sys.Info(e.ctx)
		must(t, err, "_system info")
		equal(t, "_system isSystem", sysInfo.IsSystem, true)

		must(t, db.Remove(e.ctx), "drop database")
		exists, err = e.client.DatabaseExists(e.ctx, name)
		must(t, err, "database exists after the drop")
		check(t, !exists, "the dropped database still exists")
		_, err = e.client.GetDatabase(e.ctx, name, nil)
		wantError(t, err, 404, 1228, "get the dropped database")
		wantStatus(t, db.Remove(e.ctx), 404, "drop the dropped database")
	})
}

func TestServerVersionRoleEngine(t *testing.T) {
	eachProtocol(t, func(t *testing.T, e *env) {
		v, err := e.client.Version(e.ctx)
		must(t, err, "version")
		equal(t, "server", v.Server, "arango")
		equal(t, "major.minor", [2]int{v.Version.Major(), v.Version.Minor()}, [2]int{3, 12})
		equal(t, "license", v.License, "community")
		check(t, v.Details == nil, "details without asking for them: %v", v.Details)

		v, err = e.client.VersionWithOptions(e.ctx, &arangodb.GetVersionOptions{Details: utils.NewType(true)})
		must(t, err, "version with details")
		equal(t, "details.mode", v.Details["mode"], any("server"))
		equal(t, "details.role", v.Details["role"], any("SINGLE"))

		role, err := e.client.ServerRole(e.ctx)
		must(t, err, "server role")
		equal(t, "role", role, arangodb.ServerRoleSingle)

		var engine arangodb.EngineInfo
		_, err = e.client.Get(e.ctx, &engine, "_api", "engine")
		must(t, err, "engine")
		equal(t, "engine", engine.Type, arangodb.EngineTypeRocksDB)
	})
}
