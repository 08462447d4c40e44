//! Checked credentials, so that a request with a known `Authorization: Basic` header costs a
//! SHA-256 of the header and a map lookup instead of an Argon2 hash.
//!
//! Keyed by the SHA-256 of the header value (no password is kept), each entry remembers the
//! user record it was checked against (`None` if the user did not exist). A verified entry
//! counts while the store holds that very record, or else while the user's current record
//! still has the password hash it matched and is active; a refused entry counts only while the
//! store holds that very record (or still no user). So a password change, a deactivation, a
//! reactivation or a new user applies to the next request. Refused credentials are kept too:
//! repeating the same wrong password costs no hash and is not another guess for the login
//! throttle. Bounded: when full, the cache is emptied and refills from the next requests.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use parking_lot::RwLock;
use sha2::{Digest, Sha256};

/// Most credentials kept.
pub const CAPACITY: usize = 16_384;

/// The cache key of a credential: SHA-256 of the whole header value.
pub type CredentialKey = [u8; 32];

/// A credential that was checked once.
#[derive(Clone, Debug)]
pub struct Verified {
    /// The user it names.
    pub user: Arc<str>,
    /// The password hash a verified credential matched.
    pub password_hash: Option<Arc<str>>,
    /// Whether it matched.
    pub matched: bool,
    /// The access token it matched (instead of the password), by id: it counts only while
    /// the user still holds that token and it has not expired.
    pub token: Option<u64>,
    /// The user's record it was checked against: while the store still holds this very
    /// record (`Arc::ptr_eq`), nothing about the user changed and the credential needs no
    /// further comparison.
    pub record: Option<Arc<crate::auth::UserRecord>>,
}

/// Hashes a [`CredentialKey`] by its first eight bytes: the key is already a SHA-256 digest,
/// uniformly distributed, so hashing it again (SipHash) would only cost time.
#[derive(Default)]
pub struct DigestHasher(u64);

impl Hasher for DigestHasher {
    fn write(&mut self, bytes: &[u8]) {
        // `[u8; 32]` hashes as its length (through `write_usize`) and then its bytes.
        let mut first = [0u8; 8];
        let n = bytes.len().min(8);
        first[..n].copy_from_slice(&bytes[..n]);
        self.0 ^= u64::from_le_bytes(first);
    }

    fn write_usize(&mut self, _length: usize) {}

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The cache.
#[derive(Default)]
pub struct CredentialCache {
    entries: RwLock<HashMap<CredentialKey, Verified, BuildHasherDefault<DigestHasher>>>,
}

impl CredentialCache {
    /// The key of a header value.
    pub fn key(header: &str) -> CredentialKey {
        Sha256::digest(header.as_bytes()).into()
    }

    /// The verified credential under `key`, if any.
    pub fn get(&self, key: &CredentialKey) -> Option<Verified> {
        self.entries.read().get(key).cloned()
    }

    /// Remembers a verified credential.
    pub fn insert(&self, key: CredentialKey, verified: Verified) {
        let mut entries = self.entries.write();
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        entries.insert(key, verified);
        debug_assert!(entries.len() <= CAPACITY);
    }

    /// Forgets a credential (it no longer matches its user).
    pub fn remove(&self, key: &CredentialKey) {
        self.entries.write().remove(key);
    }

    /// How many credentials are kept.
    pub fn len(&self) -> usize {
        self.entries.read().len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_keyed_by_digest() {
        let cache = CredentialCache::default();
        let verified = Verified {
            user: "u".into(),
            password_hash: Some("h".into()),
            matched: true,
            token: None,
            record: None,
        };
        for i in 0..CAPACITY + 10 {
            cache.insert(
                CredentialCache::key(&format!("Basic {i}")),
                verified.clone(),
            );
            assert!(cache.len() <= CAPACITY);
        }
        let key = CredentialCache::key("Basic x");
        assert_ne!(key, CredentialCache::key("Basic y"));
        cache.insert(key, verified);
        assert_eq!(&*cache.get(&key).unwrap().user, "u");
        cache.remove(&key);
        assert!(cache.get(&key).is_none());
    }

    #[test]
    fn digest_hasher_takes_the_digest_bytes() {
        use std::hash::BuildHasher;
        let build = BuildHasherDefault::<DigestHasher>::default();
        let hash = |key: &CredentialKey| build.hash_one(key);
        let a = CredentialCache::key("Basic a");
        let b = CredentialCache::key("Basic b");
        assert_eq!(hash(&a), u64::from_le_bytes(a[..8].try_into().unwrap()));
        assert_ne!(hash(&a), hash(&b));
    }
}
