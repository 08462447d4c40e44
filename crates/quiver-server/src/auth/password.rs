//! Password hashes: Argon2id (memory-hard) with a random salt per hash, in the PHC string
//! format (`$argon2id$v=19$m=…,t=…,p=…$salt$hash`), verified in constant time by the argon2
//! crate. Nothing here logs or keeps a password.

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use quiver_errors::{Error, ErrorCode, Result};
use rand::RngCore;

/// Hashes `password` with a fresh 16-byte salt (Argon2id, the crate's recommended
/// parameters: 19 MiB, 2 passes, 1 lane).
pub fn hash(password: &str) -> Result<String> {
    let mut salt = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut salt);
    let salt = SaltString::encode_b64(&salt)
        .map_err(|e| Error::with_message(ErrorCode::Internal, format!("password salt: {e}")))?;
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| Error::with_message(ErrorCode::Internal, format!("password hash: {e}")))
}

/// Whether `password` matches a stored hash. A malformed stored hash matches nothing.
pub fn verify(password: &str, stored: &str) -> bool {
    match PasswordHash::new(stored) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_salted_and_verify_only_the_right_password() {
        let a = hash("secret").unwrap();
        let b = hash("secret").unwrap();
        assert!(a.starts_with("$argon2id$"), "{a}");
        assert_ne!(a, b, "each hash has its own salt");
        assert!(!a.contains("secret"));
        assert!(verify("secret", &a) && verify("secret", &b));
        assert!(!verify("Secret", &a));
        assert!(!verify("", &a));
        assert!(verify("", &hash("").unwrap()));
        assert!(!verify("secret", "not a hash"));
    }
}
