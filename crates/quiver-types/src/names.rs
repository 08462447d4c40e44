//! ArangoDB's naming rules for databases, collections, views, indexes and analyzers.
//!
//! Two conventions exist (`--database.extended-names`, on by default in ArangoDB 3.12):
//!
//! - traditional: ASCII only; the first byte a letter (or `_` where system names are allowed),
//!   then letters, digits, `_` and `-`;
//! - extended: any valid UTF-8 in NFC form except `/` (and `:` for databases and analyzers) and
//!   bytes below 32; no leading digit, `_` (unless a system name), `.` or space, no trailing
//!   space (the leading and trailing rules differ per kind, see each validator).
//!
//! Lengths are counted in bytes. A name that breaks the rules fails with the kind's error
//! (1229 for databases, 1208 otherwise); an extended name that is valid but not NFC-normalized
//! fails with 1208 and says so.

use quiver_errors::{Error, ErrorCode, Result};
use unicode_normalization::is_nfc;

/// How strictly names are checked: ArangoDB's traditional ASCII names or its extended
/// (UTF-8, NFC-normalized) names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamingConvention {
    /// Letters, digits, `_` and `-` only.
    Traditional,
    /// Most UTF-8 characters; see the module documentation.
    Extended,
}

/// The longest collection name, in bytes (both conventions).
pub const COLLECTION_NAME_LENGTH_MAX: usize = 256;
/// The longest database name in traditional naming, in bytes.
pub const DATABASE_NAME_LENGTH_MAX_TRADITIONAL: usize = 64;
/// The longest database name in extended naming, in bytes.
pub const DATABASE_NAME_LENGTH_MAX_EXTENDED: usize = 128;
/// The longest view name in traditional naming, in bytes.
pub const VIEW_NAME_LENGTH_MAX_TRADITIONAL: usize = 64;
/// The longest view name in extended naming, in bytes.
pub const VIEW_NAME_LENGTH_MAX_EXTENDED: usize = 256;
/// The longest index name, in bytes (both conventions).
pub const INDEX_NAME_LENGTH_MAX: usize = 256;
/// The longest analyzer name, in bytes (both conventions).
pub const ANALYZER_NAME_LENGTH_MAX: usize = 64;

/// What an extended name of one kind may not contain or start with.
struct ExtendedRules {
    /// `:` is forbidden too (databases and analyzers: it separates `db::analyzer`).
    no_colon: bool,
    /// A leading `.` is forbidden (databases, collections, views: hidden agency entries).
    no_leading_dot: bool,
    /// Leading and trailing spaces are forbidden (all kinds but analyzers).
    no_outer_space: bool,
}

const DATA_SOURCE: ExtendedRules = ExtendedRules {
    no_colon: false,
    no_leading_dot: true,
    no_outer_space: true,
};

fn extended_ok(name: &str, allow_system: bool, rules: &ExtendedRules) -> bool {
    let bytes = name.as_bytes();
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    let chars_ok = bytes
        .iter()
        .all(|&b| b >= 32 && b != b'/' && !(rules.no_colon && b == b':'));
    chars_ok
        && !first.is_ascii_digit()
        && (first != b'_' || allow_system)
        && !(rules.no_leading_dot && first == b'.')
        && !(rules.no_outer_space && (first == b' ' || last == b' '))
}

fn traditional_ok(name: &str, allow_system: bool) -> bool {
    let bytes = name.as_bytes();
    let Some(&first) = bytes.first() else {
        return false;
    };
    (first.is_ascii_alphabetic() || (first == b'_' && allow_system))
        && bytes[1..]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The shared check: the convention's characters, then the length, then (extended only) NFC.
fn check(
    name: &str,
    allow_system: bool,
    convention: NamingConvention,
    rules: &ExtendedRules,
    max_len: usize,
    invalid: impl FnOnce() -> Error,
    kind: &str,
) -> Result<()> {
    let allowed = name.len() <= max_len
        && match convention {
            NamingConvention::Traditional => traditional_ok(name, allow_system),
            NamingConvention::Extended => extended_ok(name, allow_system, rules),
        };
    if !allowed {
        return Err(invalid());
    }
    if convention == NamingConvention::Extended && !is_nfc(name) {
        return Err(Error::with_message(
            ErrorCode::IllegalName,
            format!("{kind} name is not properly UTF-8 NFC-normalized"),
        ));
    }
    Ok(())
}

/// Checks a collection name (error 1208 "illegal name" otherwise). System collections start
/// with `_` and are only allowed when `allow_system` is set.
pub fn validate_collection_name(
    name: &str,
    allow_system: bool,
    convention: NamingConvention,
) -> Result<()> {
    check(
        name,
        allow_system,
        convention,
        &DATA_SOURCE,
        COLLECTION_NAME_LENGTH_MAX,
        || Error::new(ErrorCode::IllegalName),
        "collection",
    )
}

/// Checks the name of a database to create (error 1229 "database name invalid" otherwise; 1208
/// for an extended name that is not NFC-normalized). `_system` itself passes; no other name may
/// start with `_`.
pub fn validate_database_name(name: &str, convention: NamingConvention) -> Result<()> {
    let max_len = match convention {
        NamingConvention::Traditional => DATABASE_NAME_LENGTH_MAX_TRADITIONAL,
        NamingConvention::Extended => DATABASE_NAME_LENGTH_MAX_EXTENDED,
    };
    let rules = ExtendedRules {
        no_colon: true,
        ..DATA_SOURCE
    };
    check(
        name,
        name == "_system",
        convention,
        &rules,
        max_len,
        || Error::new(ErrorCode::DatabaseNameInvalid),
        "database",
    )
}

/// Checks a view name (error 1208 otherwise); `_` first only when `allow_system` is set.
pub fn validate_view_name(
    name: &str,
    allow_system: bool,
    convention: NamingConvention,
) -> Result<()> {
    let max_len = match convention {
        NamingConvention::Traditional => VIEW_NAME_LENGTH_MAX_TRADITIONAL,
        NamingConvention::Extended => VIEW_NAME_LENGTH_MAX_EXTENDED,
    };
    check(
        name,
        allow_system,
        convention,
        &DATA_SOURCE,
        max_len,
        || Error::with_message(ErrorCode::IllegalName, "illegal name: view name invalid"),
        "view",
    )
}

/// Checks an index name (error 1208 otherwise). Index names never start with `_`
/// in traditional naming; in extended naming a leading `_` or `.` is allowed.
pub fn validate_index_name(name: &str, convention: NamingConvention) -> Result<()> {
    let rules = ExtendedRules {
        no_colon: false,
        no_leading_dot: false,
        no_outer_space: true,
    };
    check(
        name,
        convention == NamingConvention::Extended,
        convention,
        &rules,
        INDEX_NAME_LENGTH_MAX,
        || Error::with_message(ErrorCode::IllegalName, "illegal name: index name invalid"),
        "index",
    )
}

/// Checks the name part of an analyzer name (without `db::`; error 1208 otherwise). Extended
/// analyzer names may start with `_`, `.` or a space but not with a digit, and contain no `:`.
pub fn validate_analyzer_name(name: &str, convention: NamingConvention) -> Result<()> {
    let rules = ExtendedRules {
        no_colon: true,
        no_leading_dot: false,
        no_outer_space: false,
    };
    check(
        name,
        convention == NamingConvention::Extended,
        convention,
        &rules,
        ANALYZER_NAME_LENGTH_MAX,
        || Error::with_message(ErrorCode::IllegalName, "analyzer name invalid"),
        "analyzer",
    )
}

/// Whether a collection name denotes a system collection.
pub fn is_system_name(name: &str) -> bool {
    name.starts_with('_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use NamingConvention::{Extended, Traditional};

    const DECOMPOSED: &str = "Mo\u{0308}bel"; // "Möbel" with a combining diaeresis

    fn code(result: Result<()>) -> Option<ErrorCode> {
        result.err().map(|e| e.code)
    }

    #[test]
    fn database_names_follow_arangodb_rules() {
        let ok = None;
        let invalid = Some(ErrorCode::DatabaseNameInvalid);
        let illegal = Some(ErrorCode::IllegalName);
        let long_ext = "a".repeat(DATABASE_NAME_LENGTH_MAX_EXTENDED);
        let too_long_ext = "a".repeat(DATABASE_NAME_LENGTH_MAX_EXTENDED + 1);
        let long_trad = "a".repeat(DATABASE_NAME_LENGTH_MAX_TRADITIONAL);
        let too_long_trad = "a".repeat(DATABASE_NAME_LENGTH_MAX_TRADITIONAL + 1);
        let cases: &[(&str, NamingConvention, Option<ErrorCode>)] = &[
            ("_system", Traditional, ok),
            ("_system", Extended, ok),
            ("shop", Traditional, ok),
            ("shop-2_x", Traditional, ok),
            ("_shop", Traditional, invalid),
            ("_shop", Extended, invalid),
            ("1shop", Traditional, invalid),
            ("1shop", Extended, invalid),
            ("..", Extended, invalid),
            ("..", Traditional, invalid),
            (".hidden", Extended, invalid),
            ("x/../..", Extended, invalid),
            // Percent signs are ordinary characters: ArangoDB accepts this name as it is.
            ("x%2F..%2F..", Extended, ok),
            ("x%2F..%2F..", Traditional, invalid),
            ("a.b", Extended, ok),
            ("a:b", Extended, invalid),
            ("a\tb", Extended, invalid),
            ("a\u{7f}b", Extended, ok),
            (" shop", Extended, invalid),
            ("shop ", Extended, invalid),
            ("sh op", Extended, ok),
            ("", Extended, invalid),
            ("", Traditional, invalid),
            ("Ünïcödé", Extended, ok),
            ("Ünïcödé", Traditional, invalid),
            ("😀", Extended, ok),
            (DECOMPOSED, Extended, illegal),
            (&long_ext, Extended, ok),
            (&too_long_ext, Extended, invalid),
            (&long_trad, Traditional, ok),
            (&too_long_trad, Traditional, invalid),
        ];
        for (name, convention, expected) in cases {
            assert_eq!(
                code(validate_database_name(name, *convention)),
                *expected,
                "{name:?} {convention:?}"
            );
        }
    }

    #[test]
    fn collection_names_follow_arangodb_rules() {
        let ok = None;
        let illegal = Some(ErrorCode::IllegalName);
        let max = "c".repeat(COLLECTION_NAME_LENGTH_MAX);
        let too_long = "c".repeat(COLLECTION_NAME_LENGTH_MAX + 1);
        // (name, allow_system, convention, expected)
        let cases: &[(&str, bool, NamingConvention, Option<ErrorCode>)] = &[
            ("users", false, Traditional, ok),
            ("_graphs", true, Traditional, ok),
            ("_graphs", false, Traditional, illegal),
            ("_graphs", true, Extended, ok),
            ("_graphs", false, Extended, illegal),
            ("1abc", false, Traditional, illegal),
            ("1abc", false, Extended, illegal),
            ("a1", false, Traditional, ok),
            ("a/b", false, Extended, illegal),
            ("a:b", false, Extended, ok),
            ("..", false, Extended, illegal),
            (".hidden", false, Extended, illegal),
            ("x/../..", false, Extended, illegal),
            ("Möbel", false, Extended, ok),
            ("Möbel", false, Traditional, illegal),
            (DECOMPOSED, false, Extended, illegal),
            (" c", false, Extended, illegal),
            ("c ", false, Extended, illegal),
            ("c\n", false, Extended, illegal),
            ("", false, Extended, illegal),
            (&max, false, Extended, ok),
            (&too_long, false, Extended, illegal),
            (&too_long, false, Traditional, illegal),
        ];
        for (name, system, convention, expected) in cases {
            assert_eq!(
                code(validate_collection_name(name, *system, *convention)),
                *expected,
                "{name:?} {system} {convention:?}"
            );
        }
        let err = validate_collection_name(DECOMPOSED, false, Extended).unwrap_err();
        assert!(err.message.contains("NFC"), "{}", err.message);
    }

    #[test]
    fn view_index_and_analyzer_names() {
        assert!(validate_view_name("v", false, Traditional).is_ok());
        assert!(validate_view_name(&"v".repeat(65), false, Traditional).is_err());
        assert!(validate_view_name(&"v".repeat(256), false, Extended).is_ok());
        assert!(validate_view_name(&"v".repeat(257), false, Extended).is_err());
        assert!(validate_view_name(".v", false, Extended).is_err());
        assert!(validate_view_name("_v", false, Extended).is_err());
        assert!(validate_view_name("_v", true, Extended).is_ok());

        assert!(validate_index_name("idx_1", Traditional).is_ok());
        assert!(validate_index_name("_idx", Traditional).is_err());
        assert!(validate_index_name("_idx", Extended).is_ok());
        assert!(validate_index_name(".idx", Extended).is_ok());
        assert!(validate_index_name("1idx", Extended).is_err());
        assert!(validate_index_name("idx ", Extended).is_err());
        assert!(validate_index_name("a/b", Extended).is_err());

        assert!(validate_analyzer_name("text_en", Traditional).is_ok());
        assert!(validate_analyzer_name("_text", Traditional).is_err());
        assert!(validate_analyzer_name("_text", Extended).is_ok());
        assert!(validate_analyzer_name("db::text", Extended).is_err());
        assert!(validate_analyzer_name("9text", Extended).is_err());
        assert!(validate_analyzer_name(&"a".repeat(65), Extended).is_err());
        assert!(validate_analyzer_name(&"a".repeat(64), Traditional).is_ok());
        for err in [
            validate_view_name("", false, Extended),
            validate_index_name("", Extended),
            validate_analyzer_name("", Extended),
        ] {
            assert_eq!(code(err), Some(ErrorCode::IllegalName));
        }
    }
}
