//! The `Authorization` header: its scheme and, for `Basic`, the name and password.
//!
//! Self-contained (std and base64 only) so that `fuzz/auth-header` compiles this file on its
//! own, next to `jwt.rs`, without building the storage and search engines.

use base64::Engine;

/// Longest base64 text of a `Basic` credential that is decoded.
pub const MAX_BASIC_LEN: usize = 4096;

/// What an `Authorization` header carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Credentials<'a> {
    /// `Basic <base64>` (scheme case-insensitive): the base64 text, not decoded yet (the
    /// credential cache is keyed by the whole header, so a known credential is never decoded).
    Basic(&'a str),
    /// `bearer <token>` (scheme case-insensitive): the token text.
    Bearer(&'a str),
    /// Any other scheme, or none.
    Other,
}

/// Splits a header value into its scheme and credential; surrounding whitespace and the
/// whitespace between them are ignored.
pub fn parse(header: &str) -> Credentials<'_> {
    let header = header.trim();
    let (scheme, value) = header.split_once(' ').unwrap_or((header, ""));
    let value = value.trim();
    if scheme.eq_ignore_ascii_case("basic") {
        Credentials::Basic(value)
    } else if scheme.eq_ignore_ascii_case("bearer") {
        Credentials::Bearer(value)
    } else {
        Credentials::Other
    }
}

/// Splits `base64(name:password)` at the first `:`; `None` when the text is longer than
/// [`MAX_BASIC_LEN`], not base64, not UTF-8 or has no `:`.
pub fn decode_basic(encoded: &str) -> Option<(String, String)> {
    if encoded.len() > MAX_BASIC_LEN {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (name, password) = text.split_once(':')?;
    Some((name.to_owned(), password.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_and_basic_credentials() {
        assert_eq!(parse("Basic cm9vdDo="), Credentials::Basic("cm9vdDo="));
        assert_eq!(
            parse("  bAsIc   cm9vdDo=  "),
            Credentials::Basic("cm9vdDo=")
        );
        assert_eq!(parse("bearer a.b.c"), Credentials::Bearer("a.b.c"));
        assert_eq!(parse("Bearer"), Credentials::Bearer(""));
        assert_eq!(parse("Digest x"), Credentials::Other);
        assert_eq!(parse(""), Credentials::Other);
        assert_eq!(
            decode_basic("cm9vdDo="),
            Some(("root".to_owned(), String::new()))
        );
        // "a:b:c": the password may hold ':'.
        assert_eq!(
            decode_basic("YTpiOmM="),
            Some(("a".to_owned(), "b:c".to_owned()))
        );
        assert_eq!(decode_basic("cm9vdA=="), None, "no ':'");
        assert_eq!(decode_basic("!!!"), None, "not base64");
        assert_eq!(decode_basic("/w=="), None, "not UTF-8");
        assert_eq!(
            decode_basic(&"QUFB".repeat(MAX_BASIC_LEN)),
            None,
            "too long"
        );
    }
}
