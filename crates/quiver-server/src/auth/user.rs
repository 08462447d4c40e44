//! One user: name, password hash, `active`, `extra`, and the database and collection grants
//! with ArangoDB's resolution order (docs/design/security.md "Resolution order").

use std::collections::BTreeMap;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Map, Value};

use super::level::Level;

/// The wildcard database or collection name of a grant.
pub const WILDCARD: &str = "*";
/// The system database, whose `rw` grant makes a user a server administrator.
pub const SYSTEM_DATABASE: &str = "_system";

/// The grants of one user on one database (or on `*`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DatabaseGrants {
    /// The database level; `None` when only collection levels are set.
    pub level: Option<Level>,
    /// Collection levels by collection name (`*` is the default for the database).
    pub collections: BTreeMap<String, Level>,
}

/// An access token of a user (3.12's `/_api/token`): usable as the password. Only its
/// SHA-256 is kept (it has 256 random bits, so a fast hash suffices).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessToken {
    /// Identifier for revoking it.
    pub id: u64,
    /// The user's name for it (unique per user).
    pub name: String,
    /// Unix time (seconds) it stops working.
    pub valid_until: i64,
    /// Unix time (seconds) it was created.
    pub created_at: i64,
    /// `v1...` and the token's last six characters.
    pub fingerprint: String,
    /// SHA-256 of the token, hex.
    pub digest: String,
}

impl AccessToken {
    /// The metadata the API shows (never the token itself).
    pub fn describe(&self, now: i64) -> Value {
        json!({
            "id": self.id,
            "name": self.name,
            "valid_until": self.valid_until,
            "created_at": self.created_at,
            "fingerprint": self.fingerprint,
            "active": now < self.valid_until,
        })
    }
}

/// A user as kept in memory and stored in `_system/_users`. Immutable: a change builds a new
/// record.
#[derive(Clone, Debug, PartialEq)]
pub struct UserRecord {
    /// The user name (`user`).
    pub name: String,
    /// The `_key` of its `_users` document.
    pub key: String,
    /// Whether the user may log in.
    pub active: bool,
    /// Free-form `extra` object.
    pub extra: Value,
    /// Argon2id PHC string of the password.
    pub password_hash: String,
    /// Grants by database name (`*` is the default for every database).
    pub databases: BTreeMap<String, DatabaseGrants>,
    /// Access tokens.
    pub tokens: Vec<AccessToken>,
}

impl UserRecord {
    /// The database level: the grant for `db`; without one, the higher of the wildcard
    /// database grant and the grant on `_system`.
    pub fn database_level(&self, db: &str) -> Level {
        if let Some(level) = self.databases.get(db).and_then(|g| g.level) {
            return level;
        }
        let wildcard = self
            .databases
            .get(WILDCARD)
            .and_then(|g| g.level)
            .unwrap_or(Level::None);
        let system = self
            .databases
            .get(SYSTEM_DATABASE)
            .and_then(|g| g.level)
            .unwrap_or(Level::None);
        wildcard.max(system)
    }

    /// The collection level: system collections follow fixed rules (`_users` in `_system`
    /// none, `_queues` ro, `_frontend` rw, others the database level); otherwise the first
    /// defined of `db/coll`, `db/*`, `*/coll`, `*/*`, and without any, the database level.
    pub fn collection_level(&self, db: &str, collection: &str) -> Level {
        if collection.starts_with('_') {
            return match collection {
                "_users" if db == SYSTEM_DATABASE => Level::None,
                "_queues" => Level::ReadOnly,
                "_frontend" => Level::ReadWrite,
                _ => self.database_level(db),
            };
        }
        let lookup = |database: &str, name: &str| {
            self.databases
                .get(database)
                .and_then(|g| g.collections.get(name).copied())
        };
        lookup(db, collection)
            .or_else(|| lookup(db, WILDCARD))
            .or_else(|| lookup(WILDCARD, collection))
            .or_else(|| lookup(WILDCARD, WILDCARD))
            .unwrap_or_else(|| self.database_level(db))
    }

    /// Whether every collection of `db` is `rw` for this user, the system collections with
    /// fixed rules (`_users`, `_queues`; see [`UserRecord::collection_level`]) aside: then
    /// the collections a query names cannot get it refused unless it names one of those.
    pub fn writes_every_collection(&self, db: &str) -> bool {
        // An unlisted name resolves through the wildcard grants, as `*` itself does.
        let mut listed = [db, WILDCARD]
            .into_iter()
            .filter_map(|d| self.databases.get(d))
            .flat_map(|g| g.collections.keys());
        self.database_level(db) == Level::ReadWrite
            && self.collection_level(db, WILDCARD) == Level::ReadWrite
            && listed.all(|c| self.collection_level(db, c) == Level::ReadWrite)
    }

    /// Server administration (users, databases): `rw` on `_system`.
    pub fn is_admin(&self) -> bool {
        self.database_level(SYSTEM_DATABASE) == Level::ReadWrite
    }

    /// The `_users` document.
    pub fn to_document(&self) -> Value {
        let mut databases = Map::new();
        for (db, grants) in &self.databases {
            let mut entry = Map::new();
            if let Some(level) = grants.level {
                entry.insert("permissions".into(), level.to_permissions());
            }
            let collections: Map<String, Value> = grants
                .collections
                .iter()
                .map(|(c, level)| (c.clone(), json!({"permissions": level.to_permissions()})))
                .collect();
            entry.insert("collections".into(), Value::Object(collections));
            databases.insert(db.clone(), Value::Object(entry));
        }
        json!({
            "_key": self.key,
            "user": self.name,
            "source": "LOCAL",
            "authData": {"active": self.active, "argon2": {"hash": self.password_hash}},
            "databases": databases,
            "extra": self.extra,
            "accessTokens": self.tokens.iter().map(|t| json!({
                "id": t.id,
                "name": t.name,
                "valid_until": t.valid_until,
                "created_at": t.created_at,
                "fingerprint": t.fingerprint,
                "sha256": t.digest,
            })).collect::<Vec<_>>(),
        })
    }

    /// Reads a `_users` document (500/4 if it is not one of ours).
    pub fn from_document(doc: &Value) -> Result<UserRecord> {
        let corrupt = |what: &str| {
            Error::with_message(
                ErrorCode::Internal,
                format!("corrupt user document in _users: {what}"),
            )
        };
        let name = doc["user"].as_str().ok_or_else(|| corrupt("user"))?;
        let key = doc["_key"].as_str().ok_or_else(|| corrupt("_key"))?;
        let auth = &doc["authData"];
        let password_hash = auth["argon2"]["hash"]
            .as_str()
            .ok_or_else(|| corrupt("authData.argon2.hash"))?;
        let mut databases = BTreeMap::new();
        if let Some(map) = doc["databases"].as_object() {
            for (db, entry) in map {
                let level = entry.get("permissions").map(Level::from_permissions);
                let collections = entry["collections"]
                    .as_object()
                    .map(|cs| {
                        cs.iter()
                            .map(|(c, v)| (c.clone(), Level::from_permissions(&v["permissions"])))
                            .collect()
                    })
                    .unwrap_or_default();
                databases.insert(db.clone(), DatabaseGrants { level, collections });
            }
        }
        Ok(UserRecord {
            name: name.to_owned(),
            key: key.to_owned(),
            active: auth["active"].as_bool().unwrap_or(true),
            extra: match &doc["extra"] {
                v @ Value::Object(_) => v.clone(),
                _ => json!({}),
            },
            password_hash: password_hash.to_owned(),
            databases,
            tokens: doc["accessTokens"]
                .as_array()
                .map(|ts| {
                    ts.iter()
                        .map(|t| {
                            Ok(AccessToken {
                                id: t["id"].as_u64().ok_or_else(|| corrupt("token id"))?,
                                name: t["name"].as_str().unwrap_or_default().to_owned(),
                                valid_until: t["valid_until"].as_i64().unwrap_or(0),
                                created_at: t["created_at"].as_i64().unwrap_or(0),
                                fingerprint: t["fingerprint"]
                                    .as_str()
                                    .unwrap_or_default()
                                    .to_owned(),
                                digest: t["sha256"]
                                    .as_str()
                                    .ok_or_else(|| corrupt("token sha256"))?
                                    .to_owned(),
                            })
                        })
                        .collect::<Result<Vec<_>>>()
                })
                .transpose()?
                .unwrap_or_default(),
        })
    }

    /// The public description: `{user, active, extra}`.
    pub fn describe(&self) -> Value {
        json!({"user": self.name, "active": self.active, "extra": self.extra})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database, its level and its collections' levels.
    type Grant<'a> = (&'a str, Option<Level>, &'a [(&'a str, Level)]);

    fn user(grants: &[Grant<'_>]) -> UserRecord {
        UserRecord {
            name: "u".into(),
            key: "k".into(),
            active: true,
            extra: json!({}),
            password_hash: String::new(),
            databases: grants
                .iter()
                .map(|(db, level, cs)| {
                    (
                        db.to_string(),
                        DatabaseGrants {
                            level: *level,
                            collections: cs.iter().map(|(c, l)| (c.to_string(), *l)).collect(),
                        },
                    )
                })
                .collect(),
            tokens: Vec::new(),
        }
    }

    use Level::{None as N, ReadOnly as RO, ReadWrite as RW};

    #[test]
    fn database_levels_follow_specific_then_wildcard_or_system() {
        let u = user(&[
            ("*", Some(RO), &[]),
            ("shop1", Some(RW), &[]),
            ("shop2", Some(N), &[]),
        ]);
        assert_eq!(u.database_level("shop1"), RW);
        assert_eq!(u.database_level("shop2"), N);
        assert_eq!(u.database_level("other"), RO);
        assert!(!u.is_admin());
        // An rw grant on _system raises every database without a grant of its own.
        let admin = user(&[("_system", Some(RW), &[]), ("shop2", Some(N), &[])]);
        assert!(admin.is_admin());
        assert_eq!(admin.database_level("any"), RW);
        assert_eq!(admin.database_level("shop2"), N);
        assert_eq!(user(&[]).database_level("x"), N);
    }

    #[test]
    fn collection_levels_follow_the_documented_example() {
        let u = user(&[
            ("*", Some(RO), &[("*", RW)]),
            ("shop1", None, &[("products", RO), ("*", N)]),
            ("shop2", None, &[("*", RO)]),
        ]);
        assert_eq!(u.collection_level("shop1", "products"), RO);
        assert_eq!(u.collection_level("shop1", "customers"), N);
        assert_eq!(u.collection_level("shop2", "reviews"), RO);
        assert_eq!(u.collection_level("something", "else"), RW);
    }

    #[test]
    fn collections_without_grants_take_the_database_level() {
        let u = user(&[
            ("shop", Some(RW), &[("audit", RO)]),
            ("view", Some(RO), &[]),
        ]);
        assert_eq!(u.collection_level("shop", "orders"), RW);
        assert_eq!(u.collection_level("shop", "audit"), RO);
        assert_eq!(u.collection_level("view", "orders"), RO);
        assert_eq!(u.collection_level("none", "orders"), N);
        // A `*/coll` grant comes before the database level.
        let u = user(&[("shop", Some(RW), &[]), ("*", None, &[("orders", RO)])]);
        assert_eq!(u.collection_level("shop", "orders"), RO);
    }

    #[test]
    fn writing_every_collection_needs_rw_on_every_grant_that_applies() {
        let root = user(&[("*", Some(RW), &[("*", RW)])]);
        assert!(root.writes_every_collection("shop"));
        assert!(root.writes_every_collection("_system"));
        let db_only = user(&[("shop", Some(RW), &[])]);
        assert!(db_only.writes_every_collection("shop"));
        assert!(!db_only.writes_every_collection("other"));
        // One collection below rw, in the database or through `*/coll`.
        let u = user(&[("shop", Some(RW), &[("audit", RO)])]);
        assert!(!u.writes_every_collection("shop"));
        let u = user(&[("shop", Some(RW), &[]), ("*", None, &[("orders", RO)])]);
        assert!(!u.writes_every_collection("shop"));
        // The collection default below the database level.
        let u = user(&[("shop", Some(RW), &[("*", RO)])]);
        assert!(!u.writes_every_collection("shop"));
        let u = user(&[("*", Some(RW), &[("*", RO)]), ("shop", None, &[("*", RW)])]);
        assert!(u.writes_every_collection("shop"));
        assert!(!u.writes_every_collection("other"));
    }

    #[test]
    fn system_collections_have_fixed_rules() {
        let root = user(&[("*", Some(RW), &[("*", RW)])]);
        assert_eq!(root.collection_level("_system", "_users"), N);
        assert_eq!(root.collection_level("shop", "_users"), RW);
        assert_eq!(root.collection_level("shop", "_graphs"), RW);
        let reader = user(&[("shop", Some(RO), &[("*", RW)])]);
        assert_eq!(reader.collection_level("shop", "_graphs"), RO);
        assert_eq!(reader.collection_level("shop", "_queues"), RO);
        assert_eq!(reader.collection_level("shop", "_frontend"), RW);
    }

    #[test]
    fn documents_round_trip() {
        let mut u = user(&[
            ("*", Some(RO), &[("*", RW)]),
            ("shop1", None, &[("products", RO)]),
        ]);
        u.password_hash = "$argon2id$x".into();
        u.active = false;
        u.extra = json!({"a": 1});
        u.tokens.push(AccessToken {
            id: 7,
            name: "svc".into(),
            valid_until: 2_000_000_000,
            created_at: 1_700_000_000,
            fingerprint: "v1...abcdef".into(),
            digest: "00ff".into(),
        });
        let back = UserRecord::from_document(&u.to_document()).unwrap();
        assert_eq!(back, u);
        assert!(UserRecord::from_document(&json!({"user": "x"})).is_err());
    }
}
