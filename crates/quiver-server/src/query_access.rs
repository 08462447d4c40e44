//! The collections an AQL query may read and write, found from its tokens, for the access
//! check of `POST /_api/cursor` ([`crate::access`]).
//!
//! An over-approximation, so that the check refuses rather than misses: every identifier or
//! `@@bind` collection parameter that names an existing collection counts as read (unless it
//! is an attribute name after `.` or an object key before `:`), as does a string literal that
//! is a document handle (`"c/key"`, e.g. for `DOCUMENT()`) of an existing collection or a
//! function's first argument naming one (`COLLECTION_COUNT("c")`); once a query has a data
//! modification keyword, every collection after a later `IN` or `INTO` counts as written.
//! A named graph (`GRAPH "g"`, `GRAPH @g`) of a traversal, shortest path or k-paths query
//! counts with every vertex collection (orphans included) and edge collection of its
//! definition as read. Collections reached only through computed strings
//! (`DOCUMENT(CONCAT(...))`) or over edges whose vertices lie in collections the query does
//! not name are invisible here; the query's transaction checks those while it runs
//! ([`crate::access::query_access`]).

use std::collections::BTreeSet;

use quiver_aql::lexer::{tokenize, Kw, Tok};
use serde_json::Value;

/// Collections a query reads and writes.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct QueryCollections {
    /// Read (includes every written one).
    pub read: BTreeSet<String>,
    /// Written.
    pub written: BTreeSet<String>,
}

/// Most tokens looked at; a longer query is refused by the caller (counted as unreadable).
const MAX_TOKENS: usize = 1 << 20;

/// The collections of `query` (with `bind_vars` for `@@name` and `@name`) among those `exists`
/// knows, with the collections `graph` gives for each named graph (`None` for a graph that
/// does not exist: the query fails on it); `None` if the query cannot be tokenized or is too
/// long (it would fail anyway).
pub fn collections_of(
    query: &str,
    bind_vars: Option<&Value>,
    exists: impl Fn(&str) -> bool,
    graph: impl Fn(&str) -> Option<Vec<String>>,
) -> Option<QueryCollections> {
    let tokens = tokenize(query).ok()?;
    if tokens.len() > MAX_TOKENS {
        return None;
    }
    let mut out = QueryCollections::default();
    let mut modifies = false;
    let mut target_next = false;
    for (i, token) in tokens.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| &tokens[p].tok);
        let next = tokens.get(i + 1).map(|t| &t.tok);
        let attribute = prev == Some(&Tok::Sym(".")) || next == Some(&Tok::Sym(":"));
        let name = match &token.tok {
            Tok::Kw(Kw::Insert | Kw::Update | Kw::Replace | Kw::Remove | Kw::Upsert)
                if !attribute =>
            {
                modifies = true;
                None
            }
            Tok::Kw(Kw::Graph) if !attribute => {
                let graph_name = match next {
                    Some(Tok::Str(n) | Tok::Ident(n) | Tok::QuotedIdent(n)) => Some(n.as_str()),
                    Some(Tok::Bind(n)) => bind_vars.and_then(|b| b.get(n)).and_then(|v| v.as_str()),
                    _ => None,
                };
                let members = graph_name.and_then(&graph).unwrap_or_default();
                out.read.extend(members.into_iter().filter(|n| exists(n)));
                None
            }
            Tok::Kw(Kw::In | Kw::Into) if modifies => {
                target_next = true;
                continue;
            }
            Tok::Ident(n) | Tok::QuotedIdent(n) if !attribute => Some(n.clone()),
            Tok::BindColl(n) => bind_vars
                .and_then(|b| b.get(format!("@{n}")))
                .and_then(|v| v.as_str())
                .map(str::to_owned),
            Tok::Str(s) => {
                let handle = s.split_once('/').map(|(c, _)| c);
                match handle {
                    Some(c) => Some(c.to_owned()),
                    None if prev == Some(&Tok::Sym("(")) => Some(s.clone()),
                    None => None,
                }
            }
            _ => None,
        };
        if let Some(name) = name.filter(|n| exists(n)) {
            if target_next {
                out.written.insert(name.clone());
            }
            out.read.insert(name);
        }
        target_next = false;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(query: &str) -> QueryCollections {
        let known = ["orders", "secret", "users", "edges"];
        collections_of(
            query,
            Some(&json!({"@c": "secret", "g": "social"})),
            |n| known.contains(&n),
            |g| (g == "social").then(|| vec!["users".to_owned(), "edges".to_owned()]),
        )
        .unwrap()
    }

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn reads_and_writes_are_found() {
        let q = of("FOR d IN orders FILTER d.secret == 1 RETURN {users: d}");
        assert_eq!(q.read, set(&["orders"]));
        assert!(q.written.is_empty());
        let q = of("FOR d IN orders INSERT d INTO secret");
        assert_eq!(
            (q.read, q.written),
            (set(&["orders", "secret"]), set(&["secret"]))
        );
        let q = of("INSERT {a: (FOR x IN users RETURN x)} INTO orders");
        assert_eq!(
            q.written,
            set(&["users", "orders"]),
            "over-approximated, never missed"
        );
        let q = of("UPSERT {a: 1} INSERT {a: 1} UPDATE {b: 2} IN `orders`");
        assert_eq!(q.written, set(&["orders"]));
        let q = of("FOR d IN @@c REMOVE d IN @@c");
        assert_eq!(q.written, set(&["secret"]));
        let q = of("FOR v IN 1..2 OUTBOUND 'users/1' edges RETURN v");
        assert_eq!(q.read, set(&["users", "edges"]));
        let q = of("WITH users RETURN DOCUMENT(\"secret/s1\")");
        assert_eq!(q.read, set(&["users", "secret"]));
        let q = of("RETURN COLLECTION_COUNT('secret')");
        assert_eq!(q.read, set(&["secret"]));
        let q = of("RETURN {update: 1, remove: 2}");
        assert!(q.read.is_empty() && q.written.is_empty());
        let q = of("FOR d IN orders FILTER d.kind == 'secret' RETURN d.update");
        assert_eq!(q.read, set(&["orders"]));
        assert!(q.written.is_empty());
        assert!(collections_of("FOR d IN 'unterminated", None, |_| true, |_| None).is_none());
        // Named graphs: every collection of the definition, by name or bind parameter.
        for query in [
            "FOR v IN 1..3 OUTBOUND 'orders/1' GRAPH 'social' RETURN v",
            "FOR v IN OUTBOUND SHORTEST_PATH 'orders/1' TO 'orders/2' GRAPH @g RETURN v",
            "FOR p IN 1..2 OUTBOUND K_PATHS 'orders/1' TO 'orders/2' GRAPH \"social\" RETURN p",
        ] {
            let q = of(query);
            assert_eq!(q.read, set(&["orders", "users", "edges"]), "{query}");
            assert!(q.written.is_empty(), "{query}");
        }
        let q = of("FOR v IN 1..3 OUTBOUND 'orders/1' GRAPH 'unknown' RETURN v");
        assert_eq!(
            q.read,
            set(&["orders"]),
            "a missing graph fails the query itself"
        );
        let q = of("FOR d IN orders RETURN d.graph");
        assert_eq!(q.read, set(&["orders"]));
    }
}
