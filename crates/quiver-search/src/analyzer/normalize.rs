//! Case conversion and accent removal shared by the `norm`, `text` and `segmentation` types.
//! ICU's locale-specific case rules (Turkish dotted i, …) are not applied: conversion follows
//! the Unicode default case mappings of Rust's `str`.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

use super::Rejection;

/// Case conversion of a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Case {
    Lower,
    Upper,
    None,
}

impl Case {
    /// Parses `case` (`lower`, `upper`, `none`).
    pub(crate) fn parse(value: &str) -> Result<Case, Rejection> {
        match value {
            "lower" => Ok(Case::Lower),
            "upper" => Ok(Case::Upper),
            "none" => Ok(Case::None),
            _ => Err("'case' must be one of lower, upper, none".to_string()),
        }
    }

    /// The property value.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Case::Lower => "lower",
            Case::Upper => "upper",
            Case::None => "none",
        }
    }

    /// Applies the conversion.
    pub(crate) fn apply(self, text: &str) -> String {
        if text.is_ascii() {
            // The default mappings of ASCII letters are ASCII's.
            return match self {
                Case::Lower => text.to_ascii_lowercase(),
                Case::Upper => text.to_ascii_uppercase(),
                Case::None => text.to_string(),
            };
        }
        match self {
            Case::Lower => text.to_lowercase(),
            Case::Upper => text.to_uppercase(),
            Case::None => text.to_string(),
        }
    }
}

/// Removes diacritical marks: canonical decomposition, combining marks dropped, recomposed.
pub(crate) fn strip_accents(text: &str) -> String {
    if text.is_ascii() {
        return text.to_string();
    }
    text.nfd()
        .filter(|c| !is_combining_mark(*c))
        .nfc()
        .collect()
}

/// Accent removal (unless `keep_accents`) then case conversion, in ArangoDB's order.
pub(crate) fn normalize(text: &str, keep_accents: bool, case: Case) -> String {
    if keep_accents || text.is_ascii() {
        case.apply(text)
    } else {
        case.apply(&strip_accents(text))
    }
}
