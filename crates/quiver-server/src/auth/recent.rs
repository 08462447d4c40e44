//! The credential each thread accepted last.
//!
//! A client on a keep-alive connection sends the same `Authorization` header with every
//! request, and a tokio worker serves a connection's requests one after another, so a
//! thread's next request nearly always carries the header it has just accepted. Remembering
//! that one outcome per thread skips the credential cache (a SHA-256 of the header and two
//! locked map lookups) for such requests.
//!
//! - No credential is kept: the header is remembered by a 128-bit SipHash under a key drawn
//!   at random for each authenticator, so neither the password nor anything that tests a
//!   guess against it is stored, and a header that collides cannot be found without the key.
//! - An outcome counts only while the authenticator's generation is the one it was reached
//!   under ([`crate::auth::UserStore::generation`] and the secrets' reloads), so any change
//!   to a user, a grant, an access token or the secrets applies to the next request, and
//!   only until its own expiry (a JWT's `exp`).
//! - Only accepted credentials are remembered; a refused one always takes the full path
//!   (and the login throttle).

use std::cell::RefCell;
use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use siphasher::sip128::{Hasher128, SipHasher13};

use super::{Identity, UserRecord};

/// Tells one authenticator's remembered outcomes from another's in the same process (tests
/// run several servers in one process, on the same threads).
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

/// What a thread remembers.
struct Last {
    owner: u64,
    digest: u128,
    generation: (u64, u64),
    /// Seconds since the epoch after which the outcome no longer counts (`u64::MAX`: none).
    valid_until: u64,
    identity: Identity,
    record: Option<Arc<UserRecord>>,
}

thread_local! {
    static LAST: RefCell<Option<Last>> = const { RefCell::new(None) };
}

/// One authenticator's view of the per-thread memory: its owner id and its hash key.
pub struct Recent {
    owner: u64,
    key: [u8; 16],
}

/// An accepted credential as remembered: who, with which record, until when.
pub struct Accepted {
    pub identity: Identity,
    pub record: Option<Arc<UserRecord>>,
}

impl Default for Recent {
    fn default() -> Recent {
        Recent::new()
    }
}

impl Recent {
    /// A fresh owner with a random key.
    pub fn new() -> Recent {
        let mut key = [0u8; 16];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut key);
        Recent {
            owner: NEXT_OWNER.fetch_add(1, Ordering::Relaxed),
            key,
        }
    }

    /// The keyed digest of a header value.
    pub fn digest(&self, header: &str) -> u128 {
        let mut hasher = SipHasher13::new_with_key(&self.key);
        hasher.write(header.as_bytes());
        hasher.finish128().as_u128()
    }

    /// The outcome this thread accepted last for `digest`, if it was reached under
    /// `generation` and has not expired by `now` (seconds, read only when the outcome
    /// expires at all).
    pub fn get(
        &self,
        digest: u128,
        generation: (u64, u64),
        now: impl FnOnce() -> u64,
    ) -> Option<Accepted> {
        LAST.with(|last| {
            let last = last.borrow();
            let last = last.as_ref()?;
            if last.owner != self.owner || last.digest != digest || last.generation != generation {
                return None;
            }
            if last.valid_until != u64::MAX && now() > last.valid_until {
                return None;
            }
            Some(Accepted {
                identity: last.identity.clone(),
                record: last.record.clone(),
            })
        })
    }

    /// Remembers an accepted credential on this thread. `generation` must have been read
    /// before the credential was checked, so that a change made meanwhile is never hidden.
    pub fn put(&self, digest: u128, generation: (u64, u64), valid_until: u64, accepted: &Accepted) {
        LAST.with(|last| {
            *last.borrow_mut() = Some(Last {
                owner: self.owner,
                digest,
                generation,
                valid_until,
                identity: accepted.identity.clone(),
                record: accepted.record.clone(),
            });
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Accepted {
        Accepted {
            identity: Identity::User("alice".into()),
            record: None,
        }
    }

    #[test]
    fn counts_for_the_same_header_owner_and_generation_until_it_expires() {
        let recent = Recent::new();
        let digest = recent.digest("Basic YWxpY2U6");
        recent.put(digest, (1, 1), 100, &alice());
        let hit = recent.get(digest, (1, 1), || 100).expect("remembered");
        assert_eq!(hit.identity, Identity::User("alice".into()));
        // Another header, a changed generation, an expired outcome: not remembered.
        assert!(recent
            .get(recent.digest("Basic Ym9iOg=="), (1, 1), || 100)
            .is_none());
        assert!(recent.get(digest, (2, 1), || 100).is_none());
        assert!(recent.get(digest, (1, 2), || 100).is_none());
        assert!(recent.get(digest, (1, 1), || 101).is_none());
        // Another authenticator (another server in this process) has its own key and owner.
        let other = Recent::new();
        assert_ne!(other.digest("Basic YWxpY2U6"), digest);
        assert!(other.get(digest, (1, 1), || 100).is_none());
    }

    #[test]
    fn an_outcome_without_expiry_never_reads_the_clock() {
        let recent = Recent::new();
        let digest = recent.digest("bearer t");
        recent.put(digest, (0, 0), u64::MAX, &alice());
        assert!(recent
            .get(digest, (0, 0), || panic!("clock read"))
            .is_some());
    }
}
