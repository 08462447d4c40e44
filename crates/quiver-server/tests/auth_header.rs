//! Properties of the `Authorization` header parser and the JWT verifier over arbitrary input
//! (the bounded companion of `fuzz/auth-header`): no panic, Basic credentials round-trip,
//! nothing but a token signed with one of the secrets verifies, and any change to a signed
//! token's header or claims makes it fail.

use std::time::Duration;

use base64::Engine;
use proptest::prelude::*;
use quiver_server::auth::header::{self, Credentials};
use quiver_server::auth::jwt::{Bearer, Secrets};

fn secrets() -> Secrets {
    Secrets::new(&[b"active secret".to_vec(), b"passive secret".to_vec()]).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_header_parses_without_panic(value in "\\PC{0,200}", bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        for text in [value.clone(), String::from_utf8_lossy(&bytes).into_owned()] {
            match header::parse(&text) {
                Credentials::Basic(encoded) => {
                    prop_assert!(text.contains(encoded));
                    if let Some((name, _)) = header::decode_basic(encoded) {
                        prop_assert!(!name.contains(':'));
                    }
                }
                Credentials::Bearer(token) => {
                    prop_assert!(text.contains(token));
                    prop_assert_eq!(secrets().verify(token), None);
                }
                Credentials::Other => {}
            }
        }
    }

    #[test]
    fn basic_credentials_round_trip(name in "[^:\\x00]{0,40}", password in "\\PC{0,40}", scheme in "[bB][aA][sS][iI][cC]", pad in " {1,3}") {
        let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{name}:{password}"));
        let value = format!("{scheme}{pad}{encoded} ");
        prop_assert_eq!(header::parse(&value), Credentials::Basic(encoded.as_str()));
        prop_assert_eq!(header::decode_basic(&encoded), Some((name, password)));
    }

    #[test]
    fn arbitrary_tokens_never_verify(parts in proptest::collection::vec("[A-Za-z0-9_-]{0,60}", 0..5)) {
        let token = parts.join(".");
        prop_assert_eq!(secrets().verify(&token), None);
    }

    #[test]
    fn changed_tokens_fail(user in "[a-z]{1,12}", position in any::<prop::sample::Index>(), replacement in "[A-Za-z0-9_-]") {
        let secrets = secrets();
        let token = secrets.issue_user_token(&user, Duration::from_secs(60)).unwrap();
        prop_assert_eq!(secrets.verify(&token), Some(Bearer::User(user.as_str().into())));
        // Change one character of the signed part (header and claims), never the '.'.
        let signed_len = token.rfind('.').unwrap();
        let candidates: Vec<usize> = token[..signed_len]
            .char_indices()
            .filter(|(_, c)| *c != '.')
            .map(|(i, _)| i)
            .collect();
        let at = candidates[position.index(candidates.len())];
        let replacement = replacement.chars().next().unwrap();
        prop_assume!(token.as_bytes()[at] as char != replacement);
        let mut changed = token.clone();
        changed.replace_range(at..at + 1, &replacement.to_string());
        prop_assert_eq!(secrets.verify(&changed), None, "{} -> {}", token, changed);
        // Signed with a secret the server does not hold: refused.
        let other = Secrets::new(&[b"someone else".to_vec()]).unwrap();
        let forged = other.issue_user_token(&user, Duration::from_secs(60)).unwrap();
        prop_assert_eq!(secrets.verify(&forged), None);
    }
}
