//! Authentication: who a request runs as (docs/design/security.md).
//!
//! [`Authenticator::authenticate`] reads the `Authorization` header once per request:
//! `Basic` credentials are looked up in the credential cache (a SHA-256 of the header and a
//! map lookup; Argon2 only for a credential not seen before, under the login throttle),
//! `bearer` tokens are verified once with one HMAC per secret tried, then remembered until
//! their `exp` (`jwt::Secrets::verify`). What a caller may do is
//! decided by [`crate::access`].

pub mod cache;
pub mod config;
pub mod header;
pub mod identity;
pub mod jwt;
pub mod level;
pub mod password;
pub mod recent;
pub mod store;
pub mod throttle;
pub mod tokens;
pub mod user;

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use quiver_core::Core;
use quiver_errors::{Error, ErrorCode, Result};

pub use config::AuthConfig;
pub use identity::Identity;
pub use level::Level;
pub use store::UserStore;
pub use user::UserRecord;

use cache::{CredentialCache, Verified};
use jwt::{Bearer, Secrets};
use recent::{Accepted, Recent};
use throttle::Throttle;

/// What the `Authorization` header of a request established.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Valid credentials (or authentication is off).
    Authenticated(Identity),
    /// No `Authorization` header.
    Missing,
    /// Credentials that are wrong, expired, for an inactive or unknown user, malformed, or
    /// refused by the login throttle.
    Invalid,
}

/// Authentication state of a server.
pub struct Authenticator {
    config: AuthConfig,
    users: UserStore,
    secrets: RwLock<Arc<Secrets>>,
    data_dir: std::path::PathBuf,
    cache: CredentialCache,
    throttle: Throttle,
    /// The credential each thread accepted last (`recent.rs`).
    recent: Recent,
    /// Bumped after each reload of the secrets (half of the generation `recent` checks).
    secrets_generation: AtomicU64,
}

/// What checking one credential found: the outcome, the user's record on the way, and until
/// when an accepted outcome may be remembered (`None`: not at all; `u64::MAX`: no expiry).
struct Checked {
    outcome: Outcome,
    record: Option<Arc<UserRecord>>,
    remember_until: Option<u64>,
}

impl Checked {
    fn refused() -> Checked {
        Checked {
            outcome: Outcome::Invalid,
            record: None,
            remember_until: None,
        }
    }
}

impl Authenticator {
    /// Loads the users (creating `root` on first start) and the JWT secrets.
    pub fn new(config: AuthConfig, core: Arc<Core>, data_dir: &Path) -> Result<Authenticator> {
        let users = UserStore::open(core, &config.initial_root_password)?;
        let secrets = if config.enabled {
            config.load_secrets(data_dir)?
        } else {
            // Nothing verifies tokens; a throwaway secret keeps the type simple.
            let mut secret = vec![0u8; 32];
            rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut secret);
            vec![secret]
        };
        let secrets = Secrets::new(&secrets)?;
        Ok(Authenticator {
            config,
            users,
            secrets: RwLock::new(Arc::new(secrets)),
            data_dir: data_dir.to_owned(),
            cache: CredentialCache::default(),
            throttle: Throttle::default(),
            recent: Recent::new(),
            secrets_generation: AtomicU64::new(0),
        })
    }

    /// The settings.
    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// Whether authentication is on.
    pub fn enabled(&self) -> bool {
        self.config.enabled
    }

    /// The users.
    pub fn users(&self) -> &UserStore {
        &self.users
    }

    /// The current JWT secrets.
    pub fn secrets(&self) -> Arc<Secrets> {
        self.secrets.read().clone()
    }

    /// Re-reads the secret files (`POST /_admin/server/jwt`); 400/10 unless the secrets come
    /// from `--server.jwt-secret-keyfile` or `--server.jwt-secret-folder`.
    pub fn reload_secrets(&self) -> Result<Arc<Secrets>> {
        if !self.config.reloadable() {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                "JWT secrets can be reloaded only from --server.jwt-secret-keyfile or --server.jwt-secret-folder",
            ));
        }
        let secrets = Arc::new(Secrets::new(&self.config.load_secrets(&self.data_dir)?)?);
        *self.secrets.write() = secrets.clone();
        self.secrets_generation.fetch_add(1, Ordering::Release);
        Ok(secrets)
    }

    /// Whether `root` logs in with an empty password (the binary warns at startup).
    pub fn root_password_is_empty(&self) -> bool {
        self.users
            .get(store::ROOT)
            .is_some_and(|root| password::verify("", &root.password_hash))
    }

    /// Establishes who sends a request from its `Authorization` header; `client` is the peer
    /// address (for the login throttle).
    pub fn authenticate(&self, authorization: Option<&str>, client: Option<IpAddr>) -> Outcome {
        self.authenticate_with_record(authorization, client).0
    }

    /// [`Authenticator::authenticate`], with the user's record as it was found on the way (for
    /// a user caller), so that the access check of the same request need not look it up again.
    pub fn authenticate_with_record(
        &self,
        authorization: Option<&str>,
        client: Option<IpAddr>,
    ) -> (Outcome, Option<Arc<UserRecord>>) {
        if !self.config.enabled {
            return (Outcome::Authenticated(Identity::Superuser), None);
        }
        let Some(header) = authorization else {
            return (Outcome::Missing, None);
        };
        // Read before the credential is checked, so that a change made meanwhile leaves
        // what is remembered below out of date rather than hidden.
        let generation = (
            self.users.generation(),
            self.secrets_generation.load(Ordering::Acquire),
        );
        let digest = self.recent.digest(header);
        let now = || u64::try_from(now_secs()).unwrap_or(0);
        if let Some(hit) = self.recent.get(digest, generation, now) {
            return (Outcome::Authenticated(hit.identity), hit.record);
        }
        let checked = match header::parse(header) {
            header::Credentials::Basic(value) => self.basic(header.trim(), value, client),
            header::Credentials::Bearer(value) => self.bearer(value),
            header::Credentials::Other => Checked::refused(),
        };
        if let (Outcome::Authenticated(identity), Some(until)) =
            (&checked.outcome, checked.remember_until)
        {
            let accepted = Accepted {
                identity: identity.clone(),
                record: checked.record.clone(),
            };
            self.recent.put(digest, generation, until, &accepted);
        }
        (checked.outcome, checked.record)
    }

    fn basic(&self, header: &str, encoded: &str, client: Option<IpAddr>) -> Checked {
        let key = CredentialCache::key(header);
        if let Some(hit) = self.cache.get(&key) {
            let user = self.users.get(&hit.user);
            let unchanged = match (&user, &hit.record) {
                (Some(now), Some(then)) => Arc::ptr_eq(now, then),
                _ => false,
            };
            let still_valid = match (&user, hit.matched, hit.token) {
                // Verified with the password against this very record: nothing changed.
                (Some(_), true, None) if unchanged => true,
                // Verified with an access token: the user still holds it, unexpired.
                (Some(user), true, Some(id)) => {
                    user.active
                        && user
                            .tokens
                            .iter()
                            .any(|t| t.id == id && now_secs() < t.valid_until)
                }
                // Verified with the password: the password is unchanged.
                (Some(user), true, None) => {
                    user.active && Some(user.password_hash.as_str()) == hit.password_hash.as_deref()
                }
                // The same wrong credential again (no hash, no new guess), while the user is
                // the very record it was refused against (or still does not exist): any
                // change — a new password, reactivation, a new token — is checked anew.
                (_, false, _) => {
                    let same_user = match (&user, &hit.record) {
                        (None, None) => true,
                        (Some(now), Some(then)) => Arc::ptr_eq(now, then),
                        _ => false,
                    };
                    if same_user {
                        return Checked::refused();
                    }
                    false
                }
                (None, true, _) => false,
            };
            if still_valid {
                return Checked {
                    outcome: Outcome::Authenticated(Identity::User(hit.user)),
                    record: user,
                    // A password stays valid until the user changes; an access token
                    // expires on its own, and is checked on the full path every time.
                    remember_until: hit.token.is_none().then_some(u64::MAX),
                };
            }
            self.cache.remove(&key);
        }
        let Some((name, password)) = header::decode_basic(encoded) else {
            return Checked::refused();
        };
        // Taken before the check: if the user changes meanwhile, a refusal remembered
        // against this record no longer counts.
        let checked_against = self.users.get(&name);
        match self.login(&name, &password, client) {
            Ok((user, token)) => {
                let name: Arc<str> = user.name.as_str().into();
                self.cache.insert(
                    key,
                    Verified {
                        user: name.clone(),
                        password_hash: Some(user.password_hash.as_str().into()),
                        matched: true,
                        token,
                        record: Some(user.clone()),
                    },
                );
                Checked {
                    outcome: Outcome::Authenticated(Identity::User(name)),
                    record: Some(user),
                    remember_until: token.is_none().then_some(u64::MAX),
                }
            }
            Err(LoginRefused::Throttled) => Checked::refused(),
            Err(LoginRefused::Wrong) => {
                self.cache.insert(
                    key,
                    Verified {
                        user: name.as_str().into(),
                        password_hash: checked_against
                            .as_ref()
                            .map(|u| Arc::<str>::from(u.password_hash.as_str())),
                        matched: false,
                        token: None,
                        record: checked_against,
                    },
                );
                Checked::refused()
            }
        }
    }

    fn bearer(&self, token: &str) -> Checked {
        let Some((bearer, exp)) = self.secrets().verify_with_expiry(token) else {
            return Checked::refused();
        };
        let remember_until = Some(exp.unwrap_or(u64::MAX));
        match bearer {
            Bearer::Superuser => Checked {
                outcome: Outcome::Authenticated(Identity::Superuser),
                record: None,
                remember_until,
            },
            Bearer::User(name) => match self.users.get(&name) {
                Some(user) if user.active => Checked {
                    outcome: Outcome::Authenticated(Identity::User(name)),
                    record: Some(user),
                    remember_until,
                },
                _ => Checked::refused(),
            },
        }
    }

    /// Checks a user name and password (Basic credentials not cached yet, `POST /_open/auth`)
    /// under the login throttle. The password may be one of the user's unexpired access
    /// tokens; the result names the token then.
    pub fn login(
        &self,
        name: &str,
        password: &str,
        client: Option<IpAddr>,
    ) -> std::result::Result<(Arc<UserRecord>, Option<u64>), LoginRefused> {
        if !self.throttle.allows(client, name) {
            return Err(LoginRefused::Throttled);
        }
        let user = self.users.get(name);
        let token = match &user {
            Some(user) if password.starts_with(tokens::PREFIX) => {
                tokens::matching(user, password, now_secs())
            }
            _ => None,
        };
        // An unknown user costs a hash too, so timing does not tell which names exist.
        let ok = match &user {
            Some(user) => {
                user.active && (token.is_some() || password::verify(password, &user.password_hash))
            }
            None => {
                password::verify(password, DUMMY_HASH);
                false
            }
        };
        match (ok, user) {
            (true, Some(user)) => {
                self.throttle.succeeded(client);
                Ok((user, token))
            }
            _ => {
                self.throttle.failed(client, name);
                Err(LoginRefused::Wrong)
            }
        }
    }
}

/// Unix time in seconds.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Why [`Authenticator::login`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoginRefused {
    /// Unknown user, inactive user or wrong password.
    Wrong,
    /// Too many failures (the password was not checked).
    Throttled,
}

/// An Argon2id hash of a random password, verified against for unknown users.
const DUMMY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$2T6tT4FQ8NoD0lf4ymnVzZRMZzJZoXvdkBvmL1TbW0c";

/// 401 with errorNum 11, ArangoDB's answer to missing or wrong credentials.
pub fn unauthorized() -> Error {
    Error::with_message(
        ErrorCode::Forbidden,
        "not authorized to execute this request",
    )
    .with_status(401)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use quiver_core::CoreOptions;
    use store::UserChange;

    fn basic(user: &str, password: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        )
    }

    #[test]
    fn a_remembered_credential_stops_counting_at_the_next_change() {
        let dir = tempfile::tempdir().unwrap();
        let core = Arc::new(Core::open(&dir.path().join("db"), CoreOptions::default()).unwrap());
        let auth = Authenticator::new(AuthConfig::default(), core, dir.path()).unwrap();
        let alice = Outcome::Authenticated(Identity::User("alice".into()));
        let record = UserStore::new_record(
            "alice",
            password::hash("pw").unwrap(),
            true,
            serde_json::json!({}),
        );
        auth.users().create(record).unwrap().wait().unwrap();
        let header = basic("alice", "pw");
        // Accepted twice on this thread: the second time from the thread's memory, with the
        // record for the access check.
        assert_eq!(auth.authenticate(Some(&header), None), alice);
        let (outcome, record) = auth.authenticate_with_record(Some(&header), None);
        assert_eq!(outcome, alice);
        assert_eq!(record.expect("the user's record").name, "alice");
        // Deactivated: refused at the very next request, then accepted again once active.
        let active = |active| UserChange {
            active: Some(active),
            ..UserChange::default()
        };
        auth.users()
            .change("alice", active(false))
            .unwrap()
            .1
            .wait()
            .unwrap();
        assert_eq!(auth.authenticate(Some(&header), None), Outcome::Invalid);
        auth.users()
            .change("alice", active(true))
            .unwrap()
            .1
            .wait()
            .unwrap();
        assert_eq!(auth.authenticate(Some(&header), None), alice);
        // A new password: the old one is refused at once.
        let password = UserChange {
            password_hash: Some(password::hash("new").unwrap()),
            ..UserChange::default()
        };
        auth.users()
            .change("alice", password)
            .unwrap()
            .1
            .wait()
            .unwrap();
        assert_eq!(auth.authenticate(Some(&header), None), Outcome::Invalid);
        assert_eq!(auth.authenticate(Some(&basic("alice", "new")), None), alice);
        // A token remembered until its user is removed.
        let token = auth
            .secrets()
            .issue_user_token("alice", config::DEFAULT_SESSION_TIMEOUT)
            .unwrap();
        let bearer = format!("bearer {token}");
        assert_eq!(auth.authenticate(Some(&bearer), None), alice);
        assert_eq!(auth.authenticate(Some(&bearer), None), alice);
        auth.users().remove("alice").unwrap().wait().unwrap();
        assert_eq!(auth.authenticate(Some(&bearer), None), Outcome::Invalid);
    }

    #[test]
    fn basic_bearer_and_the_credential_cache() {
        let dir = tempfile::tempdir().unwrap();
        let core = Arc::new(Core::open(&dir.path().join("db"), CoreOptions::default()).unwrap());
        let config = AuthConfig {
            initial_root_password: "pw".into(),
            ..AuthConfig::default()
        };
        let auth = Authenticator::new(config, core.clone(), dir.path()).unwrap();
        assert!(!auth.root_password_is_empty());
        let root = Outcome::Authenticated(Identity::User("root".into()));
        assert_eq!(auth.authenticate(None, None), Outcome::Missing);
        assert_eq!(auth.authenticate(Some(&basic("root", "pw")), None), root);
        assert_eq!(auth.cache.len(), 1);
        assert_eq!(auth.authenticate(Some(&basic("root", "pw")), None), root);
        // The same wrong password, repeated, is one guess for the throttle (and one hash).
        let client = Some(IpAddr::from([10, 9, 9, 9]));
        for _ in 0..3 * throttle::CLIENT_LIMIT {
            assert_eq!(
                auth.authenticate(Some(&basic("root", "no")), client),
                Outcome::Invalid
            );
        }
        assert_eq!(
            auth.authenticate(Some(&basic("root", "pw ")), client),
            Outcome::Invalid
        );
        assert!(auth.login("root", "pw", client).is_ok());
        // An access token works as the password until it expires or is revoked, also from
        // the credential cache.
        let (secret, token) = tokens::generate(5, "svc", now_secs() + 3600, now_secs());
        auth.users()
            .add_token("root", token)
            .unwrap()
            .1
            .wait()
            .unwrap();
        let (_, used) = auth.login("root", &secret, None).unwrap();
        assert_eq!(used, Some(5));
        assert_eq!(auth.authenticate(Some(&basic("root", &secret)), None), root);
        assert_eq!(auth.authenticate(Some(&basic("root", &secret)), None), root);
        auth.users()
            .remove_token("root", 5)
            .unwrap()
            .1
            .wait()
            .unwrap();
        assert_eq!(
            auth.authenticate(Some(&basic("root", &secret)), None),
            Outcome::Invalid
        );
        let (expired, token) = tokens::generate(6, "old", now_secs() - 1, now_secs() - 10);
        auth.users()
            .add_token("root", token)
            .unwrap()
            .1
            .wait()
            .unwrap();
        assert!(auth.login("root", &expired, None).is_err());
        // A refused credential counts only until its user changes: here, until it exists.
        assert_eq!(
            auth.authenticate(Some(&basic("later", "x")), None),
            Outcome::Invalid
        );
        let later = UserStore::new_record(
            "later",
            password::hash("x").unwrap(),
            true,
            serde_json::json!({}),
        );
        auth.users().create(later).unwrap().wait().unwrap();
        assert_eq!(
            auth.authenticate(Some(&basic("later", "x")), None),
            Outcome::Authenticated(Identity::User("later".into()))
        );
        assert_eq!(
            auth.authenticate(Some(&basic("nobody", "pw")), None),
            Outcome::Invalid
        );
        assert_eq!(auth.authenticate(Some("Basic !!!"), None), Outcome::Invalid);
        assert_eq!(auth.authenticate(Some("Digest x"), None), Outcome::Invalid);
        let token = auth
            .secrets()
            .issue_user_token("root", config::DEFAULT_SESSION_TIMEOUT)
            .unwrap();
        assert_eq!(
            auth.authenticate(Some(&format!("bearer {token}")), None),
            root
        );
        let su = auth
            .secrets()
            .issue_superuser_token("t", config::DEFAULT_SESSION_TIMEOUT)
            .unwrap();
        assert_eq!(
            auth.authenticate(Some(&format!("Bearer {su}")), None),
            Outcome::Authenticated(Identity::Superuser)
        );
        // A password change makes the cached credential invalid at once.
        let change = store::UserChange {
            password_hash: Some(password::hash("new").unwrap()),
            ..Default::default()
        };
        auth.users()
            .change("root", change)
            .unwrap()
            .1
            .wait()
            .unwrap();
        assert_eq!(
            auth.authenticate(Some(&basic("root", "pw")), None),
            Outcome::Invalid
        );
        assert_eq!(auth.authenticate(Some(&basic("root", "new")), None), root);
        // Deactivation too, for Basic and for tokens.
        let change = store::UserChange {
            active: Some(false),
            ..Default::default()
        };
        auth.users()
            .change("root", change)
            .unwrap()
            .1
            .wait()
            .unwrap();
        assert_eq!(
            auth.authenticate(Some(&basic("root", "new")), None),
            Outcome::Invalid
        );
        assert_eq!(
            auth.authenticate(Some(&format!("bearer {token}")), None),
            Outcome::Invalid
        );
        core.shutdown().unwrap();
    }

    #[test]
    fn the_throttle_refuses_even_the_right_password() {
        let dir = tempfile::tempdir().unwrap();
        let core = Arc::new(Core::open(&dir.path().join("db"), CoreOptions::default()).unwrap());
        let auth = Authenticator::new(AuthConfig::default(), core.clone(), dir.path()).unwrap();
        assert!(auth.root_password_is_empty());
        let attacker = Some(IpAddr::from([10, 1, 1, 1]));
        for _ in 0..throttle::CLIENT_LIMIT {
            assert!(auth.login("root", "guess", attacker).is_err());
        }
        assert!(auth.login("root", "", attacker).is_err());
        // root from elsewhere is not locked out.
        assert!(auth
            .login("root", "", Some(IpAddr::from([10, 2, 2, 2])))
            .is_ok());
        core.shutdown().unwrap();
    }

    /// One authenticator for the property test (its data directory lives as long as the
    /// test binary).
    fn shared() -> &'static Authenticator {
        static SHARED: std::sync::OnceLock<(tempfile::TempDir, Authenticator)> =
            std::sync::OnceLock::new();
        &SHARED
            .get_or_init(|| {
                let dir = tempfile::tempdir().unwrap();
                let core =
                    Arc::new(Core::open(&dir.path().join("db"), CoreOptions::default()).unwrap());
                let config = AuthConfig {
                    initial_root_password: "pw".into(),
                    ..AuthConfig::default()
                };
                let auth = Authenticator::new(config, core, dir.path()).unwrap();
                (dir, auth)
            })
            .1
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// The Authorization header and JWT parsing: arbitrary text, arbitrary bytes behind
        /// each scheme, and tokens of three arbitrary base64url parts never panic and never
        /// authenticate.
        #[test]
        fn arbitrary_authorization_headers_never_authenticate(
            text in "\\PC{0,120}",
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..90),
            parts in proptest::collection::vec("[A-Za-z0-9_-]{0,40}", 3),
            scheme in proptest::sample::select(vec!["Basic ", "basic ", "Bearer ", "bearer ", "", "Basic"]),
        ) {
            let auth = shared();
            let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
            let headers = [
                text.clone(),
                format!("{scheme}{text}"),
                format!("{scheme}{encoded}"),
                format!("{scheme}{}", parts.join(".")),
            ];
            for header in &headers {
                let outcome = auth.authenticate(Some(header), Some(IpAddr::from([10, 7, 7, 7])));
                proptest::prop_assert_ne!(
                    std::mem::discriminant(&outcome),
                    std::mem::discriminant(&Outcome::Authenticated(Identity::Superuser)),
                    "{}", header
                );
            }
            proptest::prop_assert!(auth.secrets().verify(&text).is_none());
        }
    }

    #[test]
    fn disabled_means_superuser() {
        let dir = tempfile::tempdir().unwrap();
        let core = Arc::new(Core::open(&dir.path().join("db"), CoreOptions::default()).unwrap());
        let auth = Authenticator::new(AuthConfig::disabled(), core.clone(), dir.path()).unwrap();
        assert_eq!(
            auth.authenticate(Some("Basic garbage"), None),
            Outcome::Authenticated(Identity::Superuser)
        );
        core.shutdown().unwrap();
    }
}
