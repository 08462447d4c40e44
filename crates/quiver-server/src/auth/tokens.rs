//! Access tokens (ArangoDB 3.12's `/_api/token`): random secrets a user can use instead of the
//! password (HTTP Basic, `POST /_open/auth`) until they expire or are revoked.
//!
//! A token is `v1.` and 64 hex digits (256 random bits); only its SHA-256 is stored, in the
//! user's `_users` document, next to a name, an id, the creation and expiry times and a
//! fingerprint (`v1...` and its last six digits).

use rand::RngCore;
use sha2::{Digest, Sha256};

use super::user::{AccessToken, UserRecord};

/// What every token begins with.
pub const PREFIX: &str = "v1.";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of a token, hex.
pub fn digest(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// A new token: the secret (shown once) and its stored description.
pub fn generate(id: u64, name: &str, valid_until: i64, now: i64) -> (String, AccessToken) {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let secret = format!("{PREFIX}{}", hex(&bytes));
    let fingerprint = format!("v1...{}", &secret[secret.len() - 6..]);
    let token = AccessToken {
        id,
        name: name.to_owned(),
        valid_until,
        created_at: now,
        fingerprint,
        digest: digest(&secret),
    };
    (secret, token)
}

/// The id of the user's unexpired token equal to `candidate`, if any.
pub fn matching(user: &UserRecord, candidate: &str, now: i64) -> Option<u64> {
    let wanted = digest(candidate);
    // Digests of 256-bit random secrets: comparing them leaks nothing usable.
    user.tokens
        .iter()
        .find(|t| t.digest == wanted && now < t.valid_until)
        .map(|t| t.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_until_they_expire() {
        let (secret, token) = generate(3, "svc", 2_000, 1_000);
        assert!(secret.starts_with(PREFIX) && secret.len() == 67);
        assert_eq!(token.fingerprint, format!("v1...{}", &secret[61..]));
        assert_ne!(token.digest, secret);
        let user = UserRecord {
            name: "u".into(),
            key: "k".into(),
            active: true,
            extra: serde_json::json!({}),
            password_hash: String::new(),
            databases: Default::default(),
            tokens: vec![token],
        };
        assert_eq!(matching(&user, &secret, 1_999), Some(3));
        assert_eq!(matching(&user, &secret, 2_000), None, "expired");
        assert_eq!(matching(&user, "v1.00", 1_500), None);
        let (other, _) = generate(4, "x", 2_000, 1_000);
        assert_ne!(other, secret);
        assert_eq!(matching(&user, &other, 1_500), None);
    }
}
