//! Cursors and stream transactions belong to the user who created them: only that user (or
//! the superuser) may read on, commit, abort or run requests in them (`x-arango-trx-id`).
//!
//! The dispatcher records the owner from the creating response (`POST /_api/cursor` with an
//! `id`, `POST /_api/transaction/begin`) and checks every later use before routing; a cursor
//! or transaction of another user looks unknown (404/1600, 404/1655). Only users' ids are
//! recorded: the superuser may use everything, and an id without a recorded owner is refused
//! to users (fail closed). Each map holds at most [`CAPACITY`] ids; past that the oldest go
//! (their cursors or transactions stay usable by the superuser only).

use std::collections::{HashMap, VecDeque};

use http::Method;
use parking_lot::Mutex;
use quiver_errors::{Error, ErrorCode};

use crate::auth::Identity;
use crate::request::X_ARANGO_TRX_ID;
use crate::{Request, Response};

/// Most ids remembered per kind.
pub const CAPACITY: usize = 65_536;

#[derive(Default)]
struct Owners {
    by_id: HashMap<String, Identity>,
    order: VecDeque<String>,
}

impl Owners {
    fn record(&mut self, id: String, owner: Identity) {
        if self.by_id.insert(id.clone(), owner).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > CAPACITY {
            if let Some(oldest) = self.order.pop_front() {
                self.by_id.remove(&oldest);
            }
        }
        debug_assert!(self.by_id.len() <= CAPACITY);
    }

    fn owned_by(&self, id: &str, caller: &Identity) -> bool {
        self.by_id.get(id) == Some(caller)
    }
}

/// Cursor and transaction ids are numbers; anything else is the handler's to refuse (400).
fn is_id(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// The owners of cursors and stream transactions.
#[derive(Default)]
pub struct Ownership {
    cursors: Mutex<Owners>,
    transactions: Mutex<Owners>,
}

impl Ownership {
    /// Refuses a request that uses another user's cursor or stream transaction.
    pub fn check(&self, req: &Request) -> Result<(), Error> {
        let Some(caller @ Identity::User(_)) = &req.identity else {
            return Ok(());
        };
        if let Some(trx) = req
            .header(&X_ARANGO_TRX_ID)
            .map(str::trim)
            .filter(|t| is_id(t))
        {
            if !self.transactions.lock().owned_by(trx, caller) {
                return Err(Error::new(ErrorCode::TransactionNotFound));
            }
        }
        let seg = |i| req.segments.get(i);
        match (seg(0), seg(1), seg(2), seg(3)) {
            (Some("_api"), Some("cursor"), Some(id), None)
                if is_id(id) && !self.cursors.lock().owned_by(id, caller) =>
            {
                Err(Error::new(ErrorCode::CursorNotFound))
            }
            (Some("_api"), Some("transaction"), Some(id), None)
                if is_id(id) && !self.transactions.lock().owned_by(id, caller) =>
            {
                Err(Error::new(ErrorCode::TransactionNotFound))
            }
            _ => Ok(()),
        }
    }

    /// Records the owner of a cursor or stream transaction a response just created.
    pub fn record(&self, req: &Request, response: &Response) {
        let Some(owner @ Identity::User(_)) = &req.identity else {
            return;
        };
        if req.method != Method::POST || response.status.as_u16() != 201 {
            return;
        }
        let seg = |i| req.segments.get(i);
        let (owners, pointer) = match (seg(0), seg(1), seg(2)) {
            (Some("_api"), Some("cursor"), None) => (&self.cursors, "/id"),
            (Some("_api"), Some("transaction"), Some("begin")) => {
                (&self.transactions, "/result/id")
            }
            _ => return,
        };
        // Most cursors are answered whole, without an id: skip parsing their results.
        if !response.body.windows(5).any(|w| w == b"\"id\":") {
            return;
        }
        let Ok(body) = serde_json::from_slice::<serde_json::Value>(&response.body) else {
            return;
        };
        if let Some(id) = body.pointer(pointer).and_then(|v| v.as_str()) {
            owners.lock().record(id.to_owned(), owner.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> Identity {
        Identity::User(name.into())
    }

    fn as_user(mut req: Request, name: &str) -> Request {
        req.identity = Some(user(name));
        req
    }

    #[test]
    fn only_the_creator_continues() {
        let o = Ownership::default();
        let begin = as_user(
            Request::build(Method::POST, "/_api/transaction/begin"),
            "ann",
        );
        o.record(
            &begin,
            &Response::json_bytes(
                201,
                r#"{"error":false,"code":201,"result":{"id":"77","status":"running"}}"#,
            ),
        );
        let cursor = as_user(Request::build(Method::POST, "/_api/cursor"), "ann");
        o.record(
            &cursor,
            &Response::json_bytes(201, r#"{"result":[1],"hasMore":true,"id":"12"}"#),
        );
        for target in ["/_api/cursor/12", "/_api/transaction/77"] {
            assert!(o
                .check(&as_user(Request::build(Method::PUT, target), "ann"))
                .is_ok());
            let err = o
                .check(&as_user(Request::build(Method::PUT, target), "bob"))
                .unwrap_err();
            assert_eq!(err.http_status(), 404);
            let mut su = Request::build(Method::PUT, target);
            su.identity = Some(Identity::Superuser);
            assert!(o.check(&su).is_ok());
        }
        let in_trx = |name| {
            as_user(
                Request::build(Method::GET, "/_api/document/c/k")
                    .with_header("x-arango-trx-id", "77"),
                name,
            )
        };
        assert!(o.check(&in_trx("ann")).is_ok());
        assert_eq!(
            o.check(&in_trx("bob")).unwrap_err().code,
            ErrorCode::TransactionNotFound
        );
        // Unknown ids are refused to users.
        assert!(o
            .check(&as_user(
                Request::build(Method::PUT, "/_api/cursor/99"),
                "ann"
            ))
            .is_err());
        // Beginning and listing are not uses of an id.
        assert!(o
            .check(&as_user(
                Request::build(Method::POST, "/_api/transaction/begin"),
                "bob"
            ))
            .is_ok());
        assert!(o
            .check(&as_user(
                Request::build(Method::GET, "/_api/transaction"),
                "bob"
            ))
            .is_ok());
    }

    #[test]
    fn bounded() {
        let mut owners = Owners::default();
        for i in 0..CAPACITY + 10 {
            owners.record(i.to_string(), user("u"));
        }
        assert_eq!(owners.by_id.len(), CAPACITY);
        assert!(!owners.owned_by("0", &user("u")));
        assert!(owners.owned_by(&(CAPACITY + 9).to_string(), &user("u")));
    }
}
