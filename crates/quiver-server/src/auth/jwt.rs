//! ArangoDB's bearer tokens: HS256 JSON Web Tokens with `iss` = `arangodb`, signed with the
//! server's active secret and accepted under any of its secrets (active first, then the
//! passive ones of `--server.jwt-secret-folder`).
//!
//! Two forms: a user token (`preferred_username`, issued by `POST /_open/auth`, one hour by
//! default) and a superuser token (`server_id`, no `preferred_username`), which only someone
//! holding a secret can make.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use parking_lot::RwLock;
use quiver_errors::{Error, ErrorCode, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The issuer every token must name.
pub const ISSUER: &str = "arangodb";
/// Most secrets one server holds (a folder with more files is refused).
pub const MAX_SECRETS: usize = 64;
/// The longest token verified or issued (bytes of the compact form): a real token is a few
/// hundred bytes, and the bound keeps a hostile one from costing an HMAC per secret over
/// megabytes.
pub const MAX_TOKEN_LEN: usize = 8192;
/// How far in the future `iat` may lie (clock skew between issuer and server).
const IAT_SKEW_SECS: f64 = 60.0;

/// What a valid token says about its bearer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bearer {
    /// `server_id` without `preferred_username`.
    Superuser,
    /// `preferred_username` (shared, so a remembered token costs no allocation per request).
    User(Arc<str>),
}

/// The claims QuiverDB reads and writes.
#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    iss: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iat: Option<serde_json::Number>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exp: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    preferred_username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server_id: Option<String>,
}

/// Most verified tokens remembered by one set of secrets.
pub const VERIFIED_CAPACITY: usize = 16_384;

/// A token that passed [`Secrets::verify`] once: what it names and until when it counts.
#[derive(Clone)]
struct VerifiedToken {
    bearer: Bearer,
    exp: Option<u64>,
}

/// The secrets of the server: the first signs, all verify.
///
/// Verified tokens are remembered (keyed by the SHA-256 of the token, as Basic credentials are
/// in `cache.rs`), so a client that sends the same token with every request costs one hash and
/// a map lookup instead of base64, JSON and an HMAC per secret; a remembered token still
/// counts only until its `exp`. Reloading the secrets builds a new `Secrets`, so nothing
/// verified under a retired secret outlives it. Bounded: when full, the map is emptied and
/// refills from the next requests.
pub struct Secrets {
    keys: Vec<(EncodingKey, DecodingKey)>,
    digests: Vec<String>,
    validation: Validation,
    verified: RwLock<HashMap<[u8; 32], VerifiedToken>>,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Secrets {
    /// Builds the key set from secrets in order (the first is the active one).
    pub fn new(secrets: &[Vec<u8>]) -> Result<Secrets> {
        if secrets.is_empty() || secrets.len() > MAX_SECRETS {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("need 1 to {MAX_SECRETS} JWT secrets, got {}", secrets.len()),
            ));
        }
        if secrets.iter().any(|s| s.is_empty()) {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                "a JWT secret must not be empty",
            ));
        }
        let mut validation = Validation::new(Algorithm::HS256);
        validation.required_spec_claims = ["iss".to_owned()].into_iter().collect();
        validation.set_issuer(&[ISSUER]);
        validation.validate_exp = true;
        validation.leeway = 0;
        validation.validate_aud = false;
        Ok(Secrets {
            keys: secrets
                .iter()
                .map(|s| (EncodingKey::from_secret(s), DecodingKey::from_secret(s)))
                .collect(),
            digests: secrets
                .iter()
                .map(|s| {
                    Sha256::digest(s)
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect()
                })
                .collect(),
            validation,
            verified: RwLock::new(HashMap::new()),
        })
    }

    /// SHA-256 of the active secret and of the passive ones (`GET /_admin/server/jwt`).
    pub fn digests(&self) -> (&str, &[String]) {
        (&self.digests[0], &self.digests[1..])
    }

    /// A user token for `user` valid for `lifetime`; 400/10 for a name so long that the token
    /// would exceed [`MAX_TOKEN_LEN`] (the server never issues a token it would refuse).
    pub fn issue_user_token(&self, user: &str, lifetime: Duration) -> Result<String> {
        let now = now_secs();
        let claims = Claims {
            iss: ISSUER.to_owned(),
            iat: Some(now.into()),
            exp: Some(now + lifetime.as_secs()),
            preferred_username: Some(user.to_owned()),
            server_id: None,
        };
        self.sign(&claims)
    }

    /// A superuser token signed with the active secret (for tests and tools); 400/10 beyond
    /// [`MAX_TOKEN_LEN`].
    pub fn issue_superuser_token(&self, server_id: &str, lifetime: Duration) -> Result<String> {
        let now = now_secs();
        let claims = Claims {
            iss: ISSUER.to_owned(),
            iat: Some(now.into()),
            exp: Some(now + lifetime.as_secs()),
            preferred_username: None,
            server_id: Some(server_id.to_owned()),
        };
        self.sign(&claims)
    }

    fn sign(&self, claims: &Claims) -> Result<String> {
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &self.keys[0].0)
            .map_err(|e| {
            Error::with_message(ErrorCode::Internal, format!("signing a JWT: {e}"))
        })?;
        if token.len() > MAX_TOKEN_LEN {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("a token for this name would exceed {MAX_TOKEN_LEN} bytes"),
            ));
        }
        Ok(token)
    }

    /// Checks a token: signature under one of the secrets (HS256 only), `iss` = `arangodb`,
    /// `exp` (when present) not passed, `iat` (when present) a number not in the future, and
    /// either `preferred_username` or `server_id`. `None` for anything else.
    pub fn verify(&self, token: &str) -> Option<Bearer> {
        self.verify_at(token, now_secs()).map(|(bearer, _)| bearer)
    }

    /// [`Secrets::verify`], with the token's `exp` (seconds since the epoch) if it has one.
    pub fn verify_with_expiry(&self, token: &str) -> Option<(Bearer, Option<u64>)> {
        self.verify_at(token, now_secs())
    }

    /// [`Secrets::verify_with_expiry`] with the clock a remembered token's `exp` is compared
    /// with.
    fn verify_at(&self, token: &str, now: u64) -> Option<(Bearer, Option<u64>)> {
        // The signature check is the only costly step; a token is at most a few hundred
        // bytes, so bound it before trying every secret.
        if token.len() > MAX_TOKEN_LEN {
            return None;
        }
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(hit) = self.verified.read().get(&key) {
            // Expired since it was verified: refused by its own claim, nothing to recheck.
            return match hit.exp {
                Some(exp) if now > exp => None,
                _ => Some((hit.bearer.clone(), hit.exp)),
            };
        }
        let verified = self.verify_uncached(token)?;
        let mut map = self.verified.write();
        if map.len() >= VERIFIED_CAPACITY {
            map.clear();
        }
        map.insert(key, verified.clone());
        assert!(map.len() <= VERIFIED_CAPACITY);
        Some((verified.bearer, verified.exp))
    }

    /// The full check of a token not remembered yet.
    fn verify_uncached(&self, token: &str) -> Option<VerifiedToken> {
        let claims = self.keys.iter().find_map(|(_, key)| {
            jsonwebtoken::decode::<Claims>(token, key, &self.validation)
                .ok()
                .map(|data| data.claims)
        })?;
        if claims.iss != ISSUER {
            return None;
        }
        if let Some(iat) = &claims.iat {
            match iat.as_f64() {
                Some(iat) if iat <= now_secs() as f64 + IAT_SKEW_SECS => {}
                _ => return None,
            }
        }
        let bearer = match (claims.preferred_username, claims.server_id) {
            (Some(user), _) if !user.is_empty() => Bearer::User(user.into()),
            (None, Some(_)) => Bearer::Superuser,
            _ => return None,
        };
        Some(VerifiedToken {
            bearer,
            exp: claims.exp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verified_tokens_are_remembered_until_their_exp() {
        let secrets = Secrets::new(&[b"first secret".to_vec()]).unwrap();
        let token = secrets
            .issue_user_token("alice", Duration::from_secs(60))
            .unwrap();
        let now = now_secs();
        assert!(
            matches!(secrets.verify_at(&token, now), Some((Bearer::User(u), Some(exp))) if &*u == "alice" && (now + 59..=now + 60).contains(&exp))
        );
        assert_eq!(secrets.verified.read().len(), 1);
        // The remembered token answers without a new check, and stops at its exp.
        assert!(matches!(
            secrets.verify_at(&token, now + 60),
            Some((Bearer::User(_), Some(_)))
        ));
        assert!(secrets.verify_at(&token, now + 61).is_none());
        // A token under another secret is never remembered, nor accepted.
        let other = Secrets::new(&[b"other secret".to_vec()]).unwrap();
        let forged = other
            .issue_user_token("alice", Duration::from_secs(60))
            .unwrap();
        assert!(secrets.verify(&forged).is_none());
        assert_eq!(secrets.verified.read().len(), 1);
        // Bounded: a full map is emptied before the next token is remembered.
        for i in 0..VERIFIED_CAPACITY + 3 {
            let t = secrets
                .issue_user_token(&format!("u{i}"), Duration::from_secs(60))
                .unwrap();
            assert!(secrets.verify(&t).is_some());
            assert!(secrets.verified.read().len() <= VERIFIED_CAPACITY);
        }
    }
    use base64::Engine;

    fn sign(secret: &[u8], claims: serde_json::Value, alg: Algorithm) -> String {
        jsonwebtoken::encode(
            &Header::new(alg),
            &claims,
            &EncodingKey::from_secret(secret),
        )
        .unwrap()
    }

    #[test]
    fn user_and_superuser_tokens_verify() {
        let secrets = Secrets::new(&[b"one".to_vec(), b"two".to_vec()]).unwrap();
        let token = secrets
            .issue_user_token("ann", Duration::from_secs(3600))
            .unwrap();
        assert_eq!(secrets.verify(&token), Some(Bearer::User("ann".into())));
        let now = now_secs();
        // Signed with the passive secret: accepted.
        let su = sign(
            b"two",
            serde_json::json!({"iss": "arangodb", "server_id": "x", "iat": now, "exp": now + 60}),
            Algorithm::HS256,
        );
        assert_eq!(secrets.verify(&su), Some(Bearer::Superuser));
        // ArangoDB's superuser tokens may omit exp and iat; iat may be fractional.
        let bare = sign(
            b"one",
            serde_json::json!({"iss": "arangodb", "server_id": "x"}),
            Algorithm::HS256,
        );
        assert_eq!(secrets.verify(&bare), Some(Bearer::Superuser));
        let frac = sign(
            b"one",
            serde_json::json!({"iss": "arangodb", "preferred_username": "b", "iat": 1537789.557}),
            Algorithm::HS256,
        );
        assert_eq!(secrets.verify(&frac), Some(Bearer::User("b".into())));
    }

    #[test]
    fn bad_tokens_are_refused() {
        let secrets = Secrets::new(&[b"one".to_vec()]).unwrap();
        let now = now_secs();
        let good = serde_json::json!({"iss": "arangodb", "preferred_username": "ann", "iat": now, "exp": now + 60});
        let refused = [
            // Another secret.
            sign(b"other", good.clone(), Algorithm::HS256),
            // Another algorithm, same secret.
            sign(b"one", good.clone(), Algorithm::HS384),
            // Expired.
            sign(
                b"one",
                serde_json::json!({"iss": "arangodb", "preferred_username": "ann", "exp": now - 1}),
                Algorithm::HS256,
            ),
            // Wrong or missing issuer.
            sign(
                b"one",
                serde_json::json!({"iss": "other", "preferred_username": "ann"}),
                Algorithm::HS256,
            ),
            sign(
                b"one",
                serde_json::json!({"preferred_username": "ann"}),
                Algorithm::HS256,
            ),
            // Issued in the future.
            sign(
                b"one",
                serde_json::json!({"iss": "arangodb", "preferred_username": "ann", "iat": now + 3600}),
                Algorithm::HS256,
            ),
            // Neither a user nor a server.
            sign(
                b"one",
                serde_json::json!({"iss": "arangodb"}),
                Algorithm::HS256,
            ),
            sign(
                b"one",
                serde_json::json!({"iss": "arangodb", "preferred_username": ""}),
                Algorithm::HS256,
            ),
            // exp that is not a number.
            sign(
                b"one",
                serde_json::json!({"iss": "arangodb", "server_id": "x", "exp": "never"}),
                Algorithm::HS256,
            ),
        ];
        for token in &refused {
            assert_eq!(secrets.verify(token), None, "{token}");
        }
        // alg "none" with the signature stripped.
        let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"alg":"none","typ":"JWT"}"#);
        let body = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(good.to_string());
        assert_eq!(secrets.verify(&format!("{header}.{body}.")), None);
        for junk in ["", ".", "..", "a.b.c", "x", &"a".repeat(10_000)] {
            assert_eq!(secrets.verify(junk), None);
        }
    }

    #[test]
    fn secret_sets_are_bounded_and_digested() {
        assert!(Secrets::new(&[]).is_err());
        assert!(Secrets::new(&[Vec::new()]).is_err());
        assert!(Secrets::new(&vec![b"s".to_vec(); MAX_SECRETS + 1]).is_err());
        let s = Secrets::new(&[b"a".to_vec(), b"b".to_vec()]).unwrap();
        let (active, passive) = s.digests();
        assert_eq!(
            active,
            "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
        );
        assert_eq!(passive.len(), 1);
    }

    #[test]
    fn a_token_the_server_would_refuse_is_never_issued() {
        let secrets = Secrets::new(&[b"one".to_vec()]).unwrap();
        let lifetime = Duration::from_secs(60);
        // Short enough: issued and verified.
        let name = "n".repeat(4000);
        let token = secrets.issue_user_token(&name, lifetime).unwrap();
        assert!(token.len() <= MAX_TOKEN_LEN);
        assert_eq!(secrets.verify(&token), Some(Bearer::User(name.into())));
        // Control characters are escaped in the claims (six bytes each), so a name far below
        // the bound in bytes can still make a token above it: refused when issued.
        for name in ["n".repeat(7000), "\u{1}".repeat(1500)] {
            let err = secrets.issue_user_token(&name, lifetime).unwrap_err();
            assert_eq!(err.code, ErrorCode::BadParameter);
            let err = secrets.issue_superuser_token(&name, lifetime).unwrap_err();
            assert_eq!(err.code, ErrorCode::BadParameter);
        }
    }
}
