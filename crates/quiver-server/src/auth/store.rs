//! The users of the server: every user in memory (the map requests read), each change written
//! through to the `_system` database's `_users` collection before the map is updated, so a
//! change applies to the next request and survives a restart.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use quiver_core::{
    Collection, Committed, Core, DocumentReader, InsertOptions, OpResult, OverwriteMode,
    RemoveOptions,
};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::level::Level;
use super::user::{AccessToken, DatabaseGrants, UserRecord, SYSTEM_DATABASE, WILDCARD};

/// The system collection holding the users.
pub const USERS_COLLECTION: &str = "_users";
/// The built-in administrator.
pub const ROOT: &str = "root";
/// Most users the server keeps (each is a few hundred bytes in memory).
pub const MAX_USERS: usize = 100_000;
/// Most access tokens one user may hold.
pub const MAX_TOKENS_PER_USER: usize = 64;
/// Longest accepted user name in bytes (ArangoDB's limit).
pub const MAX_NAME_BYTES: usize = 254;

/// A change of a user's data (`PUT`/`PATCH /_api/user/{user}`): `None` leaves a field as is.
#[derive(Clone, Debug, Default)]
pub struct UserChange {
    /// New password hash.
    pub password_hash: Option<String>,
    /// New `active`.
    pub active: Option<bool>,
    /// New `extra` (replaces the object, or is merged into it for an update).
    pub extra: Option<Value>,
    /// Merge `extra` into the stored one instead of replacing it.
    pub merge_extra: bool,
    /// Drop every grant (a replace does, as ArangoDB's does).
    pub reset_grants: bool,
}

/// The users, in memory and in `_system/_users`.
pub struct UserStore {
    core: Arc<Core>,
    users: RwLock<HashMap<String, Arc<UserRecord>>>,
    /// Bumped after every change to `users` (what remembered credentials are checked
    /// against, `recent.rs`).
    generation: AtomicU64,
    /// Serializes changes: each is read-modify-write of one record plus its `_users` write.
    writer: Mutex<()>,
}

/// The `_key` of a user's document: its name may hold characters keys may not.
fn key_for(name: &str) -> String {
    let digest = Sha256::digest(name.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// ArangoDB's rule for user names: 1 to 254 bytes, no control characters.
pub fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_BYTES || name.chars().any(char::is_control) {
        return Err(Error::new(ErrorCode::UserInvalidName));
    }
    Ok(())
}

impl UserStore {
    /// Loads every user of `_system/_users`; creates `root` (password `root_password`, `rw` on
    /// every database and collection) if it is missing, as ArangoDB does on first start.
    pub fn open(core: Arc<Core>, root_password: &str) -> Result<UserStore> {
        let store = UserStore {
            core,
            users: RwLock::new(HashMap::new()),
            generation: AtomicU64::new(0),
            writer: Mutex::new(()),
        };
        let collection = store.collection()?;
        let db = store.core.database(SYSTEM_DATABASE)?;
        let view = db.read_view();
        let mut users = HashMap::new();
        for doc in view.scan(&collection)? {
            let record = UserRecord::from_document(&doc?)?;
            assert!(
                users.len() < MAX_USERS,
                "more users stored than the server keeps"
            );
            users.insert(record.name.clone(), Arc::new(record));
        }
        *store.users.write() = users;
        store.generation.fetch_add(1, Ordering::Release);
        if store.get(ROOT).is_none() {
            let mut grants = DatabaseGrants {
                level: Some(Level::ReadWrite),
                ..DatabaseGrants::default()
            };
            grants
                .collections
                .insert(WILDCARD.to_owned(), Level::ReadWrite);
            let record = UserRecord {
                name: ROOT.to_owned(),
                key: key_for(ROOT),
                active: true,
                extra: json!({}),
                password_hash: super::password::hash(root_password)?,
                databases: [(WILDCARD.to_owned(), grants)].into_iter().collect(),
                tokens: Vec::new(),
            };
            store.create(record)?.wait()?;
        }
        Ok(store)
    }

    fn collection(&self) -> Result<Arc<Collection>> {
        self.core
            .database(SYSTEM_DATABASE)?
            .collection(USERS_COLLECTION)
    }

    /// Counts the changes to the users: any change to a user, a grant or a token raises it
    /// (after the change is visible to [`UserStore::get`]).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The current record of `name`.
    pub fn get(&self, name: &str) -> Option<Arc<UserRecord>> {
        self.users.read().get(name).cloned()
    }

    /// Every user, by name.
    pub fn list(&self) -> Vec<Arc<UserRecord>> {
        let mut all: Vec<_> = self.users.read().values().cloned().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Builds a new user record (not stored yet).
    pub fn new_record(name: &str, password_hash: String, active: bool, extra: Value) -> UserRecord {
        UserRecord {
            name: name.to_owned(),
            key: key_for(name),
            active,
            extra,
            password_hash,
            databases: Default::default(),
            tokens: Vec::new(),
        }
    }

    /// Adds an access token to a user (404/1703 unknown user, 409 for a name the user already
    /// gave a token, 400 beyond [`MAX_TOKENS_PER_USER`]).
    pub fn add_token(
        &self,
        name: &str,
        token: AccessToken,
    ) -> Result<(Arc<UserRecord>, Committed<OpResult>)> {
        let mut refused = None;
        let result = self.modify(name, |record| {
            if record.tokens.iter().any(|t| t.name == token.name) {
                refused = Some(Error::with_message(
                    ErrorCode::HttpConflict,
                    format!("duplicate access token name '{}'", token.name),
                ));
            } else if record.tokens.len() >= MAX_TOKENS_PER_USER {
                refused = Some(Error::with_message(
                    ErrorCode::BadParameter,
                    format!("at most {MAX_TOKENS_PER_USER} access tokens per user"),
                ));
            } else {
                record.tokens.push(token);
            }
        });
        match refused {
            Some(err) => Err(err),
            None => result,
        }
    }

    /// Removes an access token (404 when the user has none with this id).
    pub fn remove_token(
        &self,
        name: &str,
        id: u64,
    ) -> Result<(Arc<UserRecord>, Committed<OpResult>)> {
        let current = self
            .get(name)
            .ok_or_else(|| Error::new(ErrorCode::UserNotFound))?;
        if !current.tokens.iter().any(|t| t.id == id) {
            return Err(Error::with_message(
                ErrorCode::HttpNotFound,
                "access token not found",
            ));
        }
        self.modify(name, |record| record.tokens.retain(|t| t.id != id))
    }

    /// Stores a new user (409/1702 if the name is taken).
    pub fn create(&self, record: UserRecord) -> Result<Committed<OpResult>> {
        validate_name(&record.name)?;
        let _writer = self.writer.lock();
        if self.users.read().contains_key(&record.name) {
            return Err(Error::new(ErrorCode::UserDuplicate));
        }
        if self.users.read().len() >= MAX_USERS {
            return Err(Error::with_message(
                ErrorCode::ResourceLimit,
                format!("at most {MAX_USERS} users"),
            ));
        }
        self.write(record)
    }

    /// Changes a user's data (404/1703 if unknown).
    pub fn change(
        &self,
        name: &str,
        change: UserChange,
    ) -> Result<(Arc<UserRecord>, Committed<OpResult>)> {
        self.modify(name, |record| {
            if let Some(hash) = change.password_hash {
                record.password_hash = hash;
            }
            if let Some(active) = change.active {
                record.active = active;
            }
            match (change.extra, change.merge_extra, &mut record.extra) {
                (Some(Value::Object(new)), true, Value::Object(old)) => old.extend(new),
                (Some(extra), _, stored) => *stored = extra,
                (None, _, _) => {}
            }
            if change.reset_grants {
                record.databases.clear();
            }
        })
    }

    /// Sets (`Some`) or clears (`None`) a database level of a user.
    pub fn set_database_level(
        &self,
        name: &str,
        db: &str,
        level: Option<Level>,
    ) -> Result<(Arc<UserRecord>, Committed<OpResult>)> {
        self.modify(name, |record| {
            let grants = record.databases.entry(db.to_owned()).or_default();
            grants.level = level;
            if grants.level.is_none() && grants.collections.is_empty() {
                record.databases.remove(db);
            }
        })
    }

    /// Sets (`Some`) or clears (`None`) a collection level of a user.
    pub fn set_collection_level(
        &self,
        name: &str,
        db: &str,
        collection: &str,
        level: Option<Level>,
    ) -> Result<(Arc<UserRecord>, Committed<OpResult>)> {
        self.modify(name, |record| {
            let grants = record.databases.entry(db.to_owned()).or_default();
            match level {
                Some(level) => {
                    grants.collections.insert(collection.to_owned(), level);
                }
                None => {
                    grants.collections.remove(collection);
                }
            }
            if grants.level.is_none() && grants.collections.is_empty() {
                record.databases.remove(db);
            }
        })
    }

    /// Drops every user's grants on database `db` (after the database was dropped).
    pub fn forget_database(&self, db: &str) -> Result<Vec<Committed<OpResult>>> {
        let holders: Vec<String> = self
            .users
            .read()
            .values()
            .filter(|u| u.databases.contains_key(db))
            .map(|u| u.name.clone())
            .collect();
        let mut written = Vec::with_capacity(holders.len());
        for name in holders {
            match self.modify(&name, |record| {
                record.databases.remove(db);
            }) {
                Ok((_, committed)) => written.push(committed),
                // Removed meanwhile: nothing to forget.
                Err(e) if e.code == ErrorCode::UserNotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(written)
    }

    /// Removes a user (404/1703 if unknown).
    pub fn remove(&self, name: &str) -> Result<Committed<OpResult>> {
        let _writer = self.writer.lock();
        let Some(record) = self.get(name) else {
            return Err(Error::new(ErrorCode::UserNotFound));
        };
        let opts = RemoveOptions {
            wait_for_sync: true,
            ..RemoveOptions::default()
        };
        let committed = self.collection()?.remove(&record.key, &opts)?;
        self.users.write().remove(name);
        self.generation.fetch_add(1, Ordering::Release);
        Ok(committed)
    }

    fn modify(
        &self,
        name: &str,
        apply: impl FnOnce(&mut UserRecord),
    ) -> Result<(Arc<UserRecord>, Committed<OpResult>)> {
        let _writer = self.writer.lock();
        let Some(current) = self.get(name) else {
            return Err(Error::new(ErrorCode::UserNotFound));
        };
        let mut record = (*current).clone();
        apply(&mut record);
        let committed = self.write(record)?;
        let stored = self
            .get(name)
            .expect("a user written under the writer lock is present");
        Ok((stored, committed))
    }

    /// Writes `record` to `_users`, then into the map. Called with the writer lock held.
    fn write(&self, record: UserRecord) -> Result<Committed<OpResult>> {
        let opts = InsertOptions {
            wait_for_sync: true,
            overwrite_mode: OverwriteMode::Replace,
            silent: true,
            ..InsertOptions::default()
        };
        let committed = self.collection()?.insert(record.to_document(), &opts)?;
        self.users
            .write()
            .insert(record.name.clone(), Arc::new(record));
        self.generation.fetch_add(1, Ordering::Release);
        Ok(committed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quiver_core::CoreOptions;

    fn core(dir: &std::path::Path) -> Arc<Core> {
        Arc::new(Core::open(dir, CoreOptions::default()).unwrap())
    }

    #[test]
    fn users_and_grants_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let core = core(dir.path());
            let store = UserStore::open(core.clone(), "pw").unwrap();
            let root = store.get(ROOT).unwrap();
            assert!(super::super::password::verify("pw", &root.password_hash));
            assert_eq!(root.database_level("any"), Level::ReadWrite);
            let hash = super::super::password::hash("x").unwrap();
            store
                .create(UserStore::new_record("ann b", hash, true, json!({"k": 1})))
                .unwrap()
                .wait()
                .unwrap();
            assert_eq!(
                store
                    .create(UserStore::new_record(
                        "ann b",
                        String::new(),
                        true,
                        json!({})
                    ))
                    .err()
                    .unwrap()
                    .code,
                ErrorCode::UserDuplicate
            );
            let (_, c) = store
                .set_database_level("ann b", "shop", Some(Level::ReadOnly))
                .unwrap();
            c.wait().unwrap();
            let (_, c) = store
                .set_collection_level("ann b", "shop", "orders", Some(Level::ReadWrite))
                .unwrap();
            c.wait().unwrap();
            store
                .create(UserStore::new_record(
                    "gone",
                    String::new(),
                    true,
                    json!({}),
                ))
                .unwrap()
                .wait()
                .unwrap();
            store.remove("gone").unwrap().wait().unwrap();
            core.shutdown().unwrap();
        }
        let core = core(dir.path());
        // The root password of a later start does not replace the stored one.
        let store = UserStore::open(core.clone(), "other").unwrap();
        assert!(super::super::password::verify(
            "pw",
            &store.get(ROOT).unwrap().password_hash
        ));
        let ann = store.get("ann b").unwrap();
        assert_eq!(ann.extra, json!({"k": 1}));
        assert_eq!(ann.database_level("shop"), Level::ReadOnly);
        assert_eq!(ann.collection_level("shop", "orders"), Level::ReadWrite);
        assert_eq!(ann.collection_level("shop", "other"), Level::ReadOnly);
        assert!(store.get("gone").is_none());
        assert_eq!(store.list().len(), 2);
        // Clearing the last grant of a database drops its entry.
        let (_, c) = store
            .set_collection_level("ann b", "shop", "orders", None)
            .unwrap();
        c.wait().unwrap();
        let (ann, _) = store.set_database_level("ann b", "shop", None).unwrap();
        assert!(ann.databases.is_empty());
        core.shutdown().unwrap();
    }

    #[test]
    fn names_follow_the_rule() {
        assert!(validate_name("a").is_ok());
        assert!(validate_name("admin@example x").is_ok());
        assert!(validate_name("").is_err());
        assert!(validate_name("a\nb").is_err());
        assert!(validate_name(&"x".repeat(255)).is_err());
    }
}
