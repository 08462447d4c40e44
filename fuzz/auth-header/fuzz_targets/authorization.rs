//! Any bytes as an `Authorization` header value: parsing, Basic decoding and JWT verification
//! return an answer, never panic or hang; nothing but a token signed with the server's secret
//! verifies.
//!
//! The first byte picks what the rest is: 0 — a whole header value; 1 — the claims of a token
//! signed with the server's secret (so the claim checks after the signature are reached);
//! anything else — a token for `bearer` (header and signature as given). Modes 2 and 3 also
//! issue a user or superuser token for the rest as name and check that it verifies.
#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use base64::Engine;
use libfuzzer_sys::fuzz_target;

#[path = "../../../crates/quiver-server/src/auth/header.rs"]
mod header;
#[path = "../../../crates/quiver-server/src/auth/jwt.rs"]
mod jwt;

const SECRET: &[u8] = b"fuzzing secret";

fn secrets() -> &'static jwt::Secrets {
    static SECRETS: OnceLock<jwt::Secrets> = OnceLock::new();
    SECRETS.get_or_init(|| {
        jwt::Secrets::new(&[SECRET.to_vec(), b"passive secret".to_vec()]).expect("secrets")
    })
}

fn check_header(value: &str) {
    match header::parse(value) {
        header::Credentials::Basic(encoded) => {
            if let Some((name, _password)) = header::decode_basic(encoded) {
                assert!(!name.contains(':'), "the name ends at the first ':'");
                assert!(encoded.len() <= header::MAX_BASIC_LEN);
            }
        }
        header::Credentials::Bearer(token) => {
            // Random text never carries a valid signature under the secret.
            if let Some(bearer) = secrets().verify(token) {
                panic!("unsigned input verified as {bearer:?}: {token:?}");
            }
        }
        header::Credentials::Other => {}
    }
}

/// A token whose payload is `claims` (any bytes), signed with the active secret, so that
/// malformed claims reach the checks behind the signature.
fn signed_with_secret(claims: &[u8]) -> String {
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let head = engine.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let body = engine.encode(claims);
    let signing_input = format!("{head}.{body}");
    let key = jsonwebtoken::EncodingKey::from_secret(SECRET);
    let signature = jsonwebtoken::crypto::sign(
        signing_input.as_bytes(),
        &key,
        jsonwebtoken::Algorithm::HS256,
    )
    .expect("signing");
    format!("{signing_input}.{signature}")
}

/// The `iss` claim of a claims object; every other claim is skipped unchecked.
struct IssuerOnly(serde_json::Map<String, serde_json::Value>);

impl<'de> serde::Deserialize<'de> for IssuerOnly {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = IssuerOnly;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a claims object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<IssuerOnly, A::Error> {
                let mut out = serde_json::Map::new();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "iss" {
                        out.insert(key, map.next_value()?);
                    } else {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                Ok(IssuerOnly(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode {
        0 => {
            if let Ok(value) = std::str::from_utf8(rest) {
                check_header(value);
            }
        }
        1 => {
            let token = signed_with_secret(rest);
            if let Some(bearer) = secrets().verify(&token) {
                // Accepted claims name the right issuer. The claims the server does not know
                // are skipped unchecked (their UTF-8, the range of their numbers), as the
                // server's own parse skips them; only `iss` is read here.
                let claims: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str::<IssuerOnly>(&String::from_utf8_lossy(rest))
                        .map(|c| c.0)
                        .expect("verified claims are JSON");
                assert_eq!(claims["iss"], jwt::ISSUER, "{bearer:?}");
            }
        }
        _ => {
            if let Ok(token) = std::str::from_utf8(rest) {
                assert!(secrets().verify(token).is_none(), "{token:?}");
            }
        }
    }
    // Issuing and verifying round-trips for any user name or server id; only a name too long
    // for a token of at most MAX_TOKEN_LEN bytes is refused, and then at issuing.
    // The name's share of a token: its JSON string, base64-encoded; the rest of a token is
    // under 512 bytes.
    let too_long = |issued: &Result<String, _>, name: &str| {
        issued.is_err()
            && serde_json::to_string(name).expect("a string").len() * 4 / 3
                > jwt::MAX_TOKEN_LEN - 512
    };
    if let Ok(name) = std::str::from_utf8(rest) {
        if mode == 2 && !name.is_empty() {
            let issued = secrets().issue_user_token(name, Duration::from_secs(60));
            if !too_long(&issued, name) {
                let token = issued.expect("signing");
                assert_eq!(secrets().verify(&token), Some(jwt::Bearer::User(name.into())));
                // An issued token always carries its expiry.
                let (_, exp) = secrets().verify_with_expiry(&token).expect("verified");
                assert!(exp.is_some());
            }
        }
        if mode == 3 {
            let issued = secrets().issue_superuser_token(name, Duration::from_secs(60));
            if too_long(&issued, name) {
                return;
            }
            let token = issued.expect("signing");
            assert_eq!(secrets().verify(&token), Some(jwt::Bearer::Superuser));
            let (active, passive) = secrets().digests();
            assert_eq!((active.len(), passive.len()), (64, 1));
        }
    }
});
