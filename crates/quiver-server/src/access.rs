//! Authorization in one place: the access each route needs ([`need`], one table for every
//! route family of [`crate::api::route`]) and the check of a request's identity against it
//! ([`admit`]), called by [`crate::handle`] before routing, by the batch API for every part
//! and by the transport before the inline cursor path. Handlers never check rights
//! themselves, except the user API, which filters what a non-administrator may see. Rights
//! that depend on the body or on stored state (a query's collections, a view's links) are
//! worked out here too.

use http::{HeaderName, Method};
use quiver_aql::source::checked::CollectionAccess;
use quiver_errors::{Error, ErrorCode, Result};

use crate::auth::{unauthorized, Identity, Level, Outcome, UserRecord};
use crate::query_access::{collections_of, QueryCollections};
use crate::{Request, Response, ServerState};

/// `x-omit-www-authenticate`: a 401 without `WWW-Authenticate` (no browser dialog).
pub static X_OMIT_WWW_AUTHENTICATE: HeaderName = HeaderName::from_static("x-omit-www-authenticate");

/// Where a route names its collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollectionAt {
    /// Path segment `n` (`/_api/document/{c}` is segment 2).
    Segment(usize),
    /// A query parameter (`?collection=c`).
    Param(&'static str),
}

/// The access a route needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Nothing: no credentials needed (`/_open/*`, availability).
    Open,
    /// Any authenticated caller; the handler shows only the caller's own data.
    Authenticated,
    /// The request's database at this level.
    Database(Level),
    /// The request's database at least `ro` and the collection at this level.
    Collection(CollectionAt, Level),
    /// The request's database at `rw` and the collection at `rw` (index changes).
    DatabaseAndCollection(CollectionAt),
    /// An AQL query: the database `ro`, and every collection it may read `ro`, every one it
    /// may write `rw` ([`crate::query_access`]).
    Query,
    /// A graph change that writes collections the path does not name: removing a vertex
    /// (its edges go too; the database at `ro`) or dropping a graph with `dropCollections`
    /// (the database at `rw`); every collection written at `rw`.
    GraphRemoval,
    /// A view's links: the database at this level, and `ro` on every collection the body
    /// links (`links` of an arangosearch view, `indexes` of a search-alias view) and, for a
    /// view the path names, on every collection it links now ([`view_link_rights`]).
    View(Level),
    /// Server administration: `rw` on `_system`.
    Admin,
    /// The named user (path segment `n`) themself, or an administrator.
    SelfOrAdmin(usize),
    /// Only the superuser (a JWT signed with the server's secret).
    Superuser,
    /// A path this table does not list: checked as [`Need::Admin`], so a route added to the
    /// router without an entry here is refused to everyone but administrators (who get the
    /// router's answer, e.g. 404 for unknown paths). The route table test fails on it.
    Unlisted,
}

/// The access `req` needs ([`Need::Unlisted`] for paths outside the table).
pub fn need(req: &Request, system_only: bool) -> Need {
    use CollectionAt::{Param, Segment};
    use Level::{ReadOnly as RO, ReadWrite as RW};
    let seg = |i: usize| req.segments.get(i);
    let read = matches!(req.method, Method::GET | Method::HEAD);
    let first = seg(0).unwrap_or("");
    if system_only && !first.starts_with('_') {
        // Not a system API (`--server.authentication-system-only`).
        return Need::Open;
    }
    match (first, seg(1)) {
        ("_open", Some(_)) => Need::Open,
        // The web interface: its redirect and its static files (docs/design/webui.md).
        ("", None) | ("_admin", Some("aardvark")) => Need::Open,
        ("_admin", Some("server")) => match seg(2) {
            Some("availability") => Need::Open,
            Some("jwt") => Need::Superuser,
            // Reloading the TLS keyfile: superusers only, as ArangoDB; reading it: any caller.
            Some("tls") if req.method == Method::POST => Need::Superuser,
            Some("tls" | "encryption") => Need::Database(RO),
            Some("mode") if !read => Need::Admin,
            Some("role" | "id" | "mode") => Need::Database(RO),
            // `--log.recording-api-enabled true` (ArangoDB's default): administrators.
            Some("api-calls" | "aql-queries") => Need::Admin,
            _ => Need::Unlisted,
        },
        ("_admin", Some("version" | "time" | "status" | "echo")) => Need::Database(RO),
        // Metrics and statistics: read access to any database (ArangoDB without
        // `--server.harden`).
        ("_admin", Some("metrics" | "statistics" | "statistics-description")) => Need::Database(RO),
        ("_admin", Some("database")) if seg(2) == Some("target-version") => Need::Database(RO),
        ("_admin", Some("deployment" | "options-public" | "usage-metrics")) => Need::Database(RO),
        // `--server.support-info-api admin` (ArangoDB's default), crash dumps and
        // activities: administrators.
        ("_admin", Some("support-info" | "crashes" | "activities")) => Need::Admin,
        // `--log.api-enabled true`: administrators.
        ("_admin", Some("log")) => Need::Admin,
        // Hot backups copy every database: administrators (ArangoDB: `rw` on `_system`).
        ("_admin", Some("backup")) => Need::Admin,
        // `--server.options-api jwt` (ArangoDB's default): superuser JWTs only.
        ("_admin", Some("options" | "options-description")) => Need::Superuser,
        ("_admin", Some("license")) if read => Need::Database(RO),
        ("_admin", Some("license")) => Need::Admin,
        // Stopping the server: administrators; compacting every database: the superuser,
        // as ArangoDB.
        ("_admin", Some("shutdown")) => Need::Admin,
        ("_admin", Some("compact")) => Need::Superuser,
        ("_admin", _) => Need::Unlisted,
        ("_api", Some(family)) => match family {
            "version" | "engine" | "key-generators" | "endpoint" => Need::Database(RO),
            // Every part of a batch is checked on its own.
            "batch" => Need::Database(RO),
            "job" => Need::Database(RO),
            "database" => match (seg(2), read) {
                (Some("user"), true) => Need::Authenticated,
                (Some("current"), true) => Need::Database(RO),
                _ => Need::Admin,
            },
            "collection" => match (seg(2), seg(3), &req.method) {
                (None, _, &Method::POST) => Need::Database(RW),
                (None, _, _) => Need::Database(RO),
                (Some(_), Some("truncate"), _) => Need::Collection(Segment(2), RW),
                (Some(_), _, _) if read => Need::Collection(Segment(2), RO),
                // properties, rename, load, unload, compact, drop …
                (Some(_), _, _) => Need::DatabaseAndCollection(Segment(2)),
            },
            "document" => {
                let at = if seg(2).is_some() {
                    Segment(2)
                } else {
                    Param("collection")
                };
                let only_get = req.method == Method::PUT && req.bool_param("onlyget", false);
                Need::Collection(at, if read || only_get { RO } else { RW })
            }
            "import" => Need::Collection(Param("collection"), RW),
            // arangodump reads through batches; arangorestore creates collections, indexes
            // and documents.
            "replication" => match seg(2) {
                Some("dump" | "revisions") => Need::Collection(Param("collection"), RO),
                Some("restore-data") => Need::Collection(Param("collection"), RW),
                Some("restore-collection" | "restore-indexes" | "restore-view") => {
                    Need::Database(RW)
                }
                _ => Need::Database(RO),
            },
            // The parallel dump reads any collection it is given: administrators only (ArangoDB
            // lets administrators dump everything and checks other users per collection).
            "dump" => Need::Admin,
            // WAL access: read access to the database and administrate access to `_system`.
            "wal" => Need::Admin,
            "edges" => Need::Collection(Segment(2), RO),
            "index" => match (seg(2), read) {
                (None, true) => Need::Collection(Param("collection"), RO),
                (None, false) => Need::DatabaseAndCollection(Param("collection")),
                (Some(_), true) if seg(3).is_some() => Need::Collection(Segment(2), RO),
                (Some(_), true) => Need::Database(RO),
                (Some(_), false) if seg(3).is_some() => Need::DatabaseAndCollection(Segment(2)),
                (Some(_), false) => Need::Database(RW),
            },
            "gharial"
                if req.method == Method::DELETE
                    && ((seg(3) == Some("vertex") && seg(5).is_some())
                        || (seg(3).is_none() && req.bool_param("dropCollections", false))) =>
            {
                Need::GraphRemoval
            }
            "gharial" => match (seg(3), seg(4)) {
                (Some("vertex" | "edge"), Some(_)) if seg(5).is_some() || !read => {
                    Need::Collection(Segment(4), if read { RO } else { RW })
                }
                _ if read => Need::Database(RO),
                _ => Need::Database(RW),
            },
            "transaction" => match (seg(2), &req.method) {
                // JavaScript transactions (501) would run arbitrary code.
                (None, &Method::POST) => Need::Database(RW),
                _ => Need::Database(RO),
            },
            "cursor" => match (seg(2), &req.method) {
                (None, &Method::POST) => Need::Query,
                _ => Need::Database(RO),
            },
            // Analyzers of `_system` need `ro` there too; the handler asks `may_read_system`.
            "analyzer" if read => Need::Database(RO),
            "analyzer" => Need::Database(RW),
            "explain" => Need::Database(RO),
            "query" => match seg(2) {
                None => Need::Database(RO),
                Some(_) if read => Need::Database(RO),
                Some(_) => Need::Database(RW),
            },
            // A user's access tokens: the user themself or an administrator.
            "token" => Need::SelfOrAdmin(2),
            // The simple-query API runs AQL: checked per collection as queries are.
            "simple" => Need::Query,
            "query-plan-cache" if read => Need::Database(RO),
            "query-plan-cache" => Need::Database(RW),
            "query-cache" if read => Need::Database(RO),
            "query-cache" => Need::Database(RW),
            // Views: reading needs read access to the database, changes need write access.
            // Creating one, reading or changing its properties and dropping it also need read
            // access to the collections it links (ArangoDB's link rights).
            "view" => match (seg(2), seg(3), read) {
                (None, _, true) => Need::Database(RO),
                (None, _, false) => Need::View(RW),
                (Some(_), None, false) if req.method == Method::DELETE => Need::View(RW),
                (Some(_), Some("properties"), true) => Need::View(RO),
                (Some(_), Some("properties"), false) => Need::View(RW),
                (_, _, true) => Need::Database(RO),
                (_, _, false) => Need::Database(RW),
            },
            "user" => match (seg(2), seg(3), read) {
                (None, _, true) => Need::Authenticated,
                (Some(_), None, _) if req.method == Method::PUT || req.method == Method::PATCH => {
                    Need::SelfOrAdmin(2)
                }
                (Some(_), _, true) => Need::SelfOrAdmin(2),
                _ => Need::Admin,
            },
            _ => Need::Unlisted,
        },
        _ => Need::Unlisted,
    }
}

/// Authenticates `request` (unless it already carries an identity: batch parts and queued
/// jobs carry their outer request's) and checks it against what its route needs. Returns
/// the refusal to send, if any: 401 (no or wrong credentials, no access to the database) or 403
/// (not enough rights), with ArangoDB's error envelope.
pub fn admit(state: &ServerState, request: &mut Request) -> Option<Response> {
    let auth = &state.auth;
    let need = need(request, auth.config().system_only);
    let mut record = None;
    if request.identity.is_none() {
        let header = request.header(http::header::AUTHORIZATION);
        let (outcome, found) = auth.authenticate_with_record(header, request.peer);
        match outcome {
            Outcome::Authenticated(identity) => {
                state.statistics.caller(&identity);
                request.identity = Some(identity);
                record = found;
            }
            // Open routes serve callers without (valid) credentials.
            _ if need == Need::Open => return None,
            _ => return Some(refusal(request, unauthorized())),
        }
    }
    check(state, request, need, record.as_deref())
        .err()
        .map(|e| refusal(request, e))
}

/// [`admit`] for a part of a batch: the part runs as the batch's caller, whatever its own
/// headers say.
pub fn admit_part(state: &ServerState, outer: &Request, part: Result<Request>) -> Result<Request> {
    let mut part = part?;
    part.identity = outer.identity.clone();
    part.peer = outer.peer;
    if part.identity.is_none() {
        // The batch itself was admitted, so it has an identity; anything else is a bug.
        return Err(Error::with_message(
            ErrorCode::Internal,
            "batch part without a caller",
        ));
    }
    let need = need(&part, state.auth.config().system_only);
    check(state, &part, need, None)?;
    Ok(part)
}

fn refusal(request: &Request, err: Error) -> Response {
    let response = Response::from(err);
    if response.status.as_u16() != 401 || request.headers.contains_key(&X_OMIT_WWW_AUTHENTICATE) {
        return response;
    }
    response
        .with_header(http::header::WWW_AUTHENTICATE, "Basic, realm=\"ArangoDB\"")
        .with_header(
            http::header::WWW_AUTHENTICATE,
            "Bearer, token_type=\"JWT\", realm=\"ArangoDB\"",
        )
}

fn forbidden() -> Error {
    Error::new(ErrorCode::Forbidden)
}

/// The refusal of `min` rights on `collection` to a caller who has `level` there: a write
/// with `ro` rights is 403/1004 (ArangoDB's transactions answer so), anything else 403/11.
fn collection_refusal(collection: &str, level: Level, min: Level) -> Error {
    if min == Level::ReadWrite && level == Level::ReadOnly {
        Error::with_message(
            ErrorCode::ReadOnly,
            format!("read only: {collection} [write]"),
        )
    } else {
        forbidden()
    }
}

/// Checks an authenticated request against `need`, then against the server's read-only mode.
/// `record` is the caller's user record if authenticating this very request just found it
/// (otherwise it is looked up).
fn check(
    state: &ServerState,
    req: &Request,
    need: Need,
    record: Option<&UserRecord>,
) -> Result<()> {
    check_rights(state, req, need, record)?;
    // With authentication off ArangoDB gives every caller read-only rights in read-only mode;
    // with it on, the superuser (a superuser JWT) is not limited.
    let limited = matches!(req.identity, Some(Identity::User(_))) || !state.auth.enabled();
    if state.mode.is_read_only() && limited {
        check_read_only(state, req, need)?;
    }
    Ok(())
}

/// Read-only mode (`PUT /_admin/server/mode`), as ArangoDB: it caps the rights of users and,
/// with authentication off, of every caller (the superuser JWT is not limited). Document writes
/// (documents, imports, truncation, graph elements, AQL queries that write) fail with 403/1004;
/// creating, changing or dropping databases, collections, indexes, views, analyzers, graphs
/// and users fails with 403/11. Reads, and server administration such as switching the mode
/// back, go on.
fn check_read_only(state: &ServerState, req: &Request, need: Need) -> Result<()> {
    let read_only = || Error::with_message(ErrorCode::ReadOnly, "server is in read-only mode");
    let ddl = || Error::with_message(ErrorCode::Forbidden, "server is in read-only mode");
    let read = matches!(req.method, Method::GET | Method::HEAD);
    let family = match (req.segments.first(), req.segments.get(1)) {
        (Some("_api"), Some(family)) => family,
        _ => "",
    };
    match need {
        Need::Collection(_, Level::ReadWrite) | Need::GraphRemoval => Err(read_only()),
        Need::DatabaseAndCollection(_) | Need::View(Level::ReadWrite) => Err(ddl()),
        Need::Database(Level::ReadWrite)
            if matches!(
                family,
                "collection" | "index" | "view" | "analyzer" | "gharial" | "replication"
            ) =>
        {
            Err(ddl())
        }
        Need::Admin | Need::SelfOrAdmin(_) if !read && matches!(family, "database" | "user") => {
            Err(ddl())
        }
        // The simple-query API's removal builds its query itself.
        Need::Query if family == "simple" && req.segments.get(2) == Some("remove-by-keys") => {
            Err(read_only())
        }
        Need::Query => match query_collections(state, req) {
            Some(found) if found.written.is_empty() => Ok(()),
            _ => Err(read_only()),
        },
        _ => Ok(()),
    }
}

/// Checks an authenticated request's rights against `need`.
fn check_rights(
    state: &ServerState,
    req: &Request,
    need: Need,
    record: Option<&UserRecord>,
) -> Result<()> {
    let user = match &req.identity {
        None if need == Need::Open => return Ok(()),
        None => return Err(unauthorized()),
        Some(Identity::Superuser) => return Ok(()),
        Some(Identity::User(name)) => name,
    };
    if need == Need::Open {
        return Ok(());
    }
    let looked_up;
    let record = match record {
        Some(record) => {
            debug_assert_eq!(record.name, **user);
            record
        }
        None => {
            let Some(found) = state.auth.users().get(user) else {
                // Removed since it authenticated (a queued job, a long batch).
                return Err(unauthorized());
            };
            looked_up = found;
            &*looked_up
        }
    };
    let db = &*req.database;
    let database = |min: Level| {
        let level = record.database_level(db);
        if level == Level::None {
            // ArangoDB answers a database the user may not use with 401.
            Err(unauthorized())
        } else if level < min {
            Err(forbidden())
        } else {
            Ok(())
        }
    };
    let collection_name = |at: CollectionAt| -> Option<&str> {
        match at {
            CollectionAt::Segment(i) => req.segments.get(i),
            CollectionAt::Param(name) => req.param(name),
        }
        .map(|c| c.split('/').next().unwrap_or(c))
    };
    // A document write with `ro` rights is refused as ArangoDB's transactions refuse it
    // (`data`); a change of the collection itself always with 403/11.
    let collection = |at: CollectionAt, min: Level, data: bool| match collection_name(at) {
        // Without a collection the handler fails with 400/404; the database check suffices.
        None => Ok(()),
        Some(c) => {
            let level = record.collection_level(db, c);
            if level >= min {
                Ok(())
            } else if data {
                Err(collection_refusal(c, level, min))
            } else {
                Err(forbidden())
            }
        }
    };
    match need {
        Need::Open | Need::Authenticated => Ok(()),
        Need::Database(min) => database(min),
        Need::Collection(at, min) => {
            database(Level::ReadOnly)?;
            collection(at, min, true)
        }
        Need::DatabaseAndCollection(at) => {
            database(Level::ReadWrite)?;
            collection(at, Level::ReadWrite, false)
        }
        Need::Query => {
            database(Level::ReadOnly)?;
            // Working out a query's collections costs a parse of the body and of the query
            // (a fixed cost of every small query); skipped when no answer could refuse it.
            if record.writes_every_collection(db) && !may_name_fixed_rule_collection(&req.body) {
                return Ok(());
            }
            let collections = query_collections(state, req).ok_or_else(forbidden)?;
            for name in &collections.read {
                let min = if collections.written.contains(name) {
                    Level::ReadWrite
                } else {
                    Level::ReadOnly
                };
                let level = record.collection_level(db, name);
                if level < min {
                    return Err(collection_refusal(name, level, min));
                }
            }
            Ok(())
        }
        Need::GraphRemoval => {
            // A vertex is a document write (the database `ro` suffices); dropping a graph is
            // a database change.
            database(if req.segments.get(3).is_some() {
                Level::ReadOnly
            } else {
                Level::ReadWrite
            })?;
            for name in graph_removal_writes(state, req) {
                let level = record.collection_level(db, &name);
                if level < Level::ReadWrite {
                    return Err(collection_refusal(&name, level, Level::ReadWrite));
                }
            }
            Ok(())
        }
        Need::View(min) => {
            database(min)?;
            view_link_rights(state, req, |name| {
                record.collection_level(db, name) >= Level::ReadOnly
            })
        }
        Need::Admin | Need::Unlisted if record.is_admin() => Ok(()),
        Need::Admin | Need::Unlisted => Err(forbidden()),
        Need::SelfOrAdmin(at) if record.is_admin() || req.segments.get(at) == Some(user) => Ok(()),
        Need::SelfOrAdmin(_) => Err(forbidden()),
        Need::Superuser => Err(forbidden()),
    }
}

/// Checks, for a [`Need::View`] request, that `readable` holds for every existing collection
/// the body links and, when the path names a view, for every collection that view links, as
/// ArangoDB checks them: the body's first (403/11 "while validating arangosearch link
/// definition"), then the view's ("while updating arangosearch definition" for a change of
/// its properties, plain 403/11 for reading them or dropping the view). A body that is not
/// JSON, or a view that does not exist, is left to the handler's 400 or 404.
fn view_link_rights(
    state: &ServerState,
    req: &Request,
    readable: impl Fn(&str) -> bool,
) -> Result<()> {
    let Ok(db) = state.database(&req.database) else {
        return Ok(());
    };
    let exists = |name: &str| db.collection(name).is_ok();
    if matches!(req.method, Method::POST | Method::PUT | Method::PATCH) {
        let body = crate::json::parse_body(&req.body).ok().flatten();
        for name in body.as_ref().map(body_link_collections).unwrap_or_default() {
            if exists(&name) && !readable(&name) {
                return Err(Error::with_message(
                    ErrorCode::Forbidden,
                    format!(
                        "while validating arangosearch link definition, error: collection \
                         '{name}' not authorized for read access"
                    ),
                ));
            }
        }
    }
    let Some(view) = req.segments.get(2).and_then(|name| db.view(name).ok()) else {
        return Ok(());
    };
    for id in view.linked_collections() {
        let Ok(collection) = db.collection_by_id(id) else {
            continue;
        };
        let name = collection.name();
        if readable(&name) {
            continue;
        }
        return Err(if matches!(req.method, Method::PUT | Method::PATCH) {
            Error::with_message(
                ErrorCode::Forbidden,
                format!(
                    "while updating arangosearch definition, error: collection '{name}' not \
                     authorized for read access"
                ),
            )
        } else {
            forbidden()
        });
    }
    Ok(())
}

/// The collections a view definition's body names: the keys of an arangosearch view's
/// `links` (a link being removed, `null`, included) and the `collection` of each entry of a
/// search-alias view's `indexes`.
fn body_link_collections(body: &serde_json::Value) -> Vec<String> {
    let mut names: Vec<String> = body
        .get("links")
        .and_then(serde_json::Value::as_object)
        .map(|links| links.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(indexes) = body.get("indexes").and_then(serde_json::Value::as_array) {
        names.extend(
            indexes
                .iter()
                .filter_map(|i| i.get("collection")?.as_str())
                .map(str::to_owned),
        );
    }
    names
}

/// Whether the caller of `req` may read `_system` (analyzers of `_system` are listed and read
/// from other databases only then, as ArangoDB does).
pub fn may_read_system(state: &ServerState, req: &Request) -> bool {
    match &req.identity {
        Some(Identity::Superuser) => true,
        Some(Identity::User(name)) => state.auth.users().get(name).is_some_and(|record| {
            record.database_level(quiver_core::SYSTEM_DATABASE) >= Level::ReadOnly
        }),
        None => false,
    }
}

/// The check during execution of the collections an AQL query of `req`'s caller reads and
/// writes (`None` for the superuser): the grants as they are when the query starts, asked at
/// every collection the query touches, including those it names only through computed
/// strings or reaches over edges, which the check before execution cannot see.
pub fn query_access(state: &ServerState, req: &Request) -> Option<CollectionAccess> {
    let Some(Identity::User(name)) = &req.identity else {
        return None;
    };
    // A user removed since it authenticated can touch nothing.
    let record = state.auth.users().get(name);
    let database = req.database.to_string();
    // Read-only mode as the query starts: no writes for users (the check before execution
    // already refused the writes it could see).
    let writes_allowed = !state.mode.is_read_only();
    Some(CollectionAccess::new(move |collection, write| {
        if write && !writes_allowed {
            return false;
        }
        let min = if write {
            Level::ReadWrite
        } else {
            Level::ReadOnly
        };
        record
            .as_ref()
            .is_some_and(|r| r.collection_level(&database, collection) >= min)
    }))
}

/// The collections a [`Need::GraphRemoval`] request writes: for a vertex, its collection and
/// every edge collection whose edges go with it (`quiver_core::graphs::removal_write_set`); for
/// a graph dropped with its collections, all of them. Empty when the graph does not exist (the
/// handler answers 404).
fn graph_removal_writes(state: &ServerState, req: &Request) -> Vec<String> {
    let graph = state.database(&req.database).ok().and_then(|db| {
        Some((
            quiver_core::graphs::get(&db, req.segments.get(2)?).ok()?,
            db,
        ))
    });
    let Some((graph, db)) = graph else {
        return Vec::new();
    };
    match req.segments.get(4) {
        Some(collection) => {
            quiver_core::graphs::removal_write_set(&db, &graph, collection).unwrap_or_default()
        }
        None => {
            let mut all: Vec<String> = graph.vertex_collections().into_iter().collect();
            all.extend(graph.edge_collections());
            all
        }
    }
}

/// The collections the query of a cursor request may read and write
/// ([`crate::query_access`]); an empty set for a body without a query (the handler answers
/// 400), `None` for a query that cannot be tokenized.
/// Whether a query request's body may name a system collection with fixed rules (`_users`,
/// `_queues`), in its query or its bind parameters: it contains the name, or a `\u` escape
/// that could spell it.
fn may_name_fixed_rule_collection(body: &[u8]) -> bool {
    ["_users", "_queues", "\\u"]
        .iter()
        .any(|name| memchr::memmem::find(body, name.as_bytes()).is_some())
}

fn query_collections(state: &ServerState, req: &Request) -> Option<QueryCollections> {
    let body = match crate::json::parse_body(&req.body) {
        Ok(Some(body)) => body,
        _ => return Some(QueryCollections::default()),
    };
    let Some(query) = body.get("query").and_then(|q| q.as_str()) else {
        return Some(QueryCollections::default());
    };
    let db = state.database(&req.database).ok();
    collections_of(
        query,
        body.get("bindVars"),
        |name| db.as_ref().is_some_and(|db| db.collection(name).is_ok()),
        |graph| {
            let graph = quiver_core::graphs::get(db.as_ref()?, graph).ok()?;
            let mut members: Vec<String> = graph.vertex_collections().into_iter().collect();
            members.extend(graph.edge_collections());
            Some(members)
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use Level::{ReadOnly as RO, ReadWrite as RW};

    fn need_of(method: Method, target: &str) -> Need {
        need(&Request::build(method, target), true)
    }

    /// The quoted words of `source` between `from` and `to`.
    fn quoted_between(source: &str, from: &str, to: &str) -> Vec<String> {
        let start = source.find(from).expect("start marker") + from.len();
        let end = start + source[start..].find(to).expect("end marker");
        source[start..end]
            .split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    /// Every API family the router knows, and every `/_admin` route, has an entry in the
    /// table: adding a route without one fails here.
    #[test]
    fn every_routed_family_is_in_the_table() {
        let router = include_str!("api/mod.rs");
        let families = quoted_between(
            router,
            "Some(family)) => match family {",
            "_ => return not_found",
        );
        assert!(families.len() >= 18, "{families:?}");
        let admin = include_str!("api/admin.rs");
        let start = admin.find("match rest.as_slice() {").expect("admin router");
        let admin_routes: Vec<String> = admin[start..]
            .lines()
            .map(str::trim)
            .take_while(|l| !l.starts_with("_ => not_found"))
            .filter(|l| l.starts_with("[\""))
            .map(|l| {
                l[1..l.find(']').expect("pattern end")]
                    .replace(['"', ' '], "")
                    .replace(',', "/")
            })
            .collect();
        assert!(admin_routes.len() >= 8, "{admin_routes:?}");
        let methods = [
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ];
        for family in &families {
            for tail in ["", "/x", "/x/y", "/x/y/z/w"] {
                for method in &methods {
                    let target = format!("/_api/{family}{tail}");
                    assert_ne!(
                        need_of(method.clone(), &target),
                        Need::Unlisted,
                        "{method} {target}"
                    );
                }
            }
        }
        for route in &admin_routes {
            for method in &methods {
                let target = format!("/_admin/{route}");
                assert_ne!(
                    need_of(method.clone(), &target),
                    Need::Unlisted,
                    "{method} {target}"
                );
            }
        }
        assert_eq!(need_of(Method::GET, "/_api/nonexistent"), Need::Unlisted);
        assert_eq!(need_of(Method::GET, "/_admin/nonexistent"), Need::Unlisted);
    }

    #[test]
    fn open_routes_are_exactly_the_documented_ones() {
        assert_eq!(need_of(Method::POST, "/_open/auth"), Need::Open);
        assert_eq!(
            need_of(Method::GET, "/_admin/server/availability"),
            Need::Open
        );
        assert_eq!(need_of(Method::GET, "/_db/x/_open/auth"), Need::Open);
        // With authentication for system APIs only, other paths need none.
        assert_eq!(need_of(Method::GET, "/myapp/x"), Need::Open);
        assert_eq!(need_of(Method::GET, "/"), Need::Open);
        assert_eq!(
            need(&Request::build(Method::GET, "/myapp/x"), false),
            Need::Unlisted
        );
        for (method, target) in [
            (Method::GET, "/_api/version"),
            (Method::GET, "/_admin/status"),
            (Method::GET, "/_api/database/user"),
            (Method::GET, "/_api/user"),
        ] {
            assert_ne!(need_of(method, target), Need::Open, "{target}");
        }
    }

    #[test]
    fn route_families_map_to_their_rights() {
        use CollectionAt::{Param, Segment};
        let cases = [
            (
                Method::GET,
                "/_api/document/c/k",
                Need::Collection(Segment(2), RO),
            ),
            (
                Method::POST,
                "/_api/document/c",
                Need::Collection(Segment(2), RW),
            ),
            (
                Method::POST,
                "/_api/document?collection=c",
                Need::Collection(Param("collection"), RW),
            ),
            (
                Method::PUT,
                "/_api/document/c?onlyget=true",
                Need::Collection(Segment(2), RO),
            ),
            (
                Method::DELETE,
                "/_api/document/c/k",
                Need::Collection(Segment(2), RW),
            ),
            (
                Method::POST,
                "/_api/import?collection=c",
                Need::Collection(Param("collection"), RW),
            ),
            (Method::POST, "/_api/collection", Need::Database(RW)),
            (Method::GET, "/_api/collection", Need::Database(RO)),
            (
                Method::PUT,
                "/_api/collection/c/truncate",
                Need::Collection(Segment(2), RW),
            ),
            (
                Method::DELETE,
                "/_api/collection/c",
                Need::DatabaseAndCollection(Segment(2)),
            ),
            (
                Method::GET,
                "/_api/collection/c/count",
                Need::Collection(Segment(2), RO),
            ),
            (
                Method::POST,
                "/_api/index?collection=c",
                Need::DatabaseAndCollection(Param("collection")),
            ),
            (Method::POST, "/_api/cursor", Need::Query),
            (Method::PUT, "/_api/cursor/1", Need::Database(RO)),
            (Method::POST, "/_api/database", Need::Admin),
            (Method::DELETE, "/_api/database/x", Need::Admin),
            (Method::GET, "/_api/database", Need::Admin),
            (Method::GET, "/_api/database/user", Need::Authenticated),
            (Method::POST, "/_api/user", Need::Admin),
            (Method::GET, "/_api/user/ann", Need::SelfOrAdmin(2)),
            (Method::PATCH, "/_api/user/ann", Need::SelfOrAdmin(2)),
            (Method::DELETE, "/_api/user/ann", Need::Admin),
            (Method::PUT, "/_api/user/ann/database/db", Need::Admin),
            (Method::GET, "/_api/user/ann/database", Need::SelfOrAdmin(2)),
            (Method::GET, "/_admin/server/jwt", Need::Superuser),
            (Method::POST, "/_api/token/ann", Need::SelfOrAdmin(2)),
            (Method::DELETE, "/_api/token/ann/12", Need::SelfOrAdmin(2)),
            (Method::POST, "/_admin/server/jwt", Need::Superuser),
            (Method::PUT, "/_admin/server/mode", Need::Admin),
            (Method::POST, "/_api/replication/batch", Need::Database(RO)),
            (Method::POST, "/_api/dump/start", Need::Admin),
            (
                Method::GET,
                "/_api/replication/inventory",
                Need::Database(RO),
            ),
            (
                Method::GET,
                "/_api/replication/dump?collection=c",
                Need::Collection(Param("collection"), RO),
            ),
            (
                Method::PUT,
                "/_api/replication/revisions/ranges?collection=c",
                Need::Collection(Param("collection"), RO),
            ),
            (
                Method::POST,
                "/_api/replication/revisions/tree?collection=c",
                Need::Collection(Param("collection"), RO),
            ),
            (
                Method::PUT,
                "/_api/replication/restore-collection",
                Need::Database(RW),
            ),
            (
                Method::PUT,
                "/_api/replication/restore-data?collection=c",
                Need::Collection(Param("collection"), RW),
            ),
            (
                Method::POST,
                "/_api/gharial/g/vertex/v",
                Need::Collection(Segment(4), RW),
            ),
            (
                Method::GET,
                "/_api/gharial/g/vertex/v/k",
                Need::Collection(Segment(4), RO),
            ),
            (Method::POST, "/_api/gharial", Need::Database(RW)),
            (Method::GET, "/_api/gharial", Need::Database(RO)),
        ];
        for (method, target, expected) in cases {
            assert_eq!(
                need_of(method.clone(), target),
                expected,
                "{method} {target}"
            );
        }
    }
}
