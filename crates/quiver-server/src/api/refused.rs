//! The features QuiverDB refuses on purpose, in one table: routes that run JavaScript in
//! ArangoDB (Foxx services, server tasks, user-defined AQL functions, routing reload,
//! `/_admin/execute`) and routes that exist only in a cluster. Each answers what ArangoDB 3.12
//! answers when the feature is absent: a server started with `--javascript.enabled false`
//! answers the JavaScript routes with 501 and error 9, a single server answers the cluster
//! administration routes with 403 and error 11 and `/_api/cluster/endpoints` with 501 and
//! error 9, and `/_api/replication/clusterInventory` with 403 and error 1471. The WAL's tick
//! ranges and tailing (`/_api/wal/range`, `/_api/wal/tail`) answer 501 and error 9: the
//! engine keeps no replication log to serve them from.

use quiver_errors::{Error, ErrorCode};

use crate::{Request, Response};

/// One refused feature: every method on every path that starts with `prefix`.
struct Refusal {
    prefix: &'static [&'static str],
    code: ErrorCode,
    message: &'static str,
}

const NO_JAVASCRIPT: &str = "JavaScript operations are disabled";

const NO_WAL_TAILING: &str = "the storage engine folds its write-ahead log into per-collection \
     datafiles and keeps no replication log to serve tick ranges or tail operations from";

const REFUSALS: &[Refusal] = &[
    Refusal {
        prefix: &["_api", "foxx"],
        code: ErrorCode::NotImplemented,
        message: NO_JAVASCRIPT,
    },
    Refusal {
        prefix: &["_api", "tasks"],
        code: ErrorCode::NotImplemented,
        message: NO_JAVASCRIPT,
    },
    Refusal {
        prefix: &["_api", "aqlfunction"],
        code: ErrorCode::NotImplemented,
        message: NO_JAVASCRIPT,
    },
    Refusal {
        prefix: &["_admin", "routing"],
        code: ErrorCode::NotImplemented,
        message: NO_JAVASCRIPT,
    },
    Refusal {
        prefix: &["_admin", "execute"],
        code: ErrorCode::NotImplemented,
        message: NO_JAVASCRIPT,
    },
    Refusal {
        prefix: &["_admin", "cluster"],
        code: ErrorCode::Forbidden,
        message: "only allowed on coordinators",
    },
    Refusal {
        prefix: &["_api", "wal", "range"],
        code: ErrorCode::NotImplemented,
        message: NO_WAL_TAILING,
    },
    Refusal {
        prefix: &["_api", "wal", "tail"],
        code: ErrorCode::NotImplemented,
        message: NO_WAL_TAILING,
    },
    Refusal {
        prefix: &["_api", "replication", "clusterInventory"],
        code: ErrorCode::ClusterOnlyOnCoordinator,
        message: "this operation is only valid on a coordinator in a cluster",
    },
    Refusal {
        prefix: &["_api", "cluster"],
        code: ErrorCode::NotImplemented,
        message: "cannot serve this request for this deployment type",
    },
];

/// The refusal for a request whose path falls under a refused feature, or `None`.
pub fn refusal(req: &Request) -> Option<Response> {
    let found = REFUSALS.iter().find(|r| {
        r.prefix.len() <= req.segments.len()
            && r.prefix
                .iter()
                .enumerate()
                .all(|(i, part)| req.segments.get(i) == Some(*part))
    })?;
    debug_assert!(
        matches!(
            found.code,
            ErrorCode::NotImplemented | ErrorCode::Forbidden | ErrorCode::ClusterOnlyOnCoordinator
        ),
        "a refusal answers 501/9, 403/11 or 403/1471"
    );
    Some(Error::with_message(found.code, found.message).into())
}
