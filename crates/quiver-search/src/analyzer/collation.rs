//! `collation`: the whole input as one token, the locale's collation sort key, so that the
//! byte order of indexed terms is the language's alphabetical order and range queries
//! (`ANALYZER(doc.text < TOKENS("c", "collation_sv")[0], "collation_sv")`) follow it.
//!
//! The sort key comes from ICU4X (`icu_collator`, CLDR's collation data compiled in), as
//! ArangoDB's comes from ICU4C; the two libraries' keys are not byte for byte the same, so
//! only terms made by this analyzer compare with each other, which is all ArangoDB promises
//! (sorting by `TOKENS()` of a collation analyzer "doesn't produce meaningful results").
//!
//! A term is a string: each byte of the key becomes the character of the same number
//! (U+0001..U+00FF). UTF-8 orders code points as numbers, so the terms keep the keys' byte
//! order. The crate version is pinned in the workspace: a new ICU4X may change the keys, and
//! indexed terms would then disagree with the keys of new queries.

use icu_collator::options::CollatorOptions;
use icu_collator::{Collator, CollatorBorrowed, CollatorPreferences};
use icu_locale_core::Locale;
use quiver_errors::Result;
use serde_json::{json, Value};

use super::props::{object, required_string};
use super::{Built, Rejection, Token, TokenStream};

struct Collation {
    collator: CollatorBorrowed<'static>,
}

impl std::fmt::Debug for Collation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collation").finish_non_exhaustive()
    }
}

impl Collation {
    /// The term of `input`: its sort key, one character per byte.
    fn term(&self, input: &str) -> String {
        let mut key = Vec::with_capacity(input.len() * 2 + 4);
        let Ok(()) = self.collator.write_sort_key_to(input, &mut key);
        key.iter().map(|&b| char::from(b)).collect()
    }
}

impl TokenStream for Collation {
    fn analyze(&self, input: &str, _strict: bool, out: &mut Vec<Token>) -> Result<()> {
        out.push(Token::new(self.term(input), 0, 0, input.len()));
        Ok(())
    }
}

/// `{"locale": string}` (required). ArangoDB hands the locale to ICU unchecked, and an
/// invalid one does not prevent the creation: here a locale ICU4X cannot read falls back to
/// its language, then to the root collation.
pub(crate) fn build(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let given = required_string(props, "locale")?;
    let locale = given.split('.').next().unwrap_or("").to_string();
    let collator = Collator::try_new(preferences(&locale), CollatorOptions::default())
        .or_else(|_| Collator::try_new(Locale::UNKNOWN.into(), CollatorOptions::default()))
        .map_err(|e| format!("no collation data: {e}"))?;
    Ok(Built {
        stream: Box::new(Collation { collator }),
        properties: json!({ "locale": locale }),
    })
}

/// The collator preferences of an ICU-style locale (`language[_COUNTRY][_VARIANT][@keywords]`).
fn preferences(locale: &str) -> CollatorPreferences {
    let bcp47 = bcp47(locale);
    let parsed = Locale::try_from_str(&bcp47)
        .or_else(|_| Locale::try_from_str(bcp47.split('-').next().unwrap_or("")))
        .unwrap_or(Locale::UNKNOWN);
    CollatorPreferences::from(&parsed)
}

/// An ICU-style locale as a BCP 47 tag: `de_DE@collation=phonebook` → `de-DE-u-co-phonebk`,
/// `es__TRADITIONAL` → `es-u-co-trad`. Parts it cannot place are left out.
fn bcp47(locale: &str) -> String {
    let (base, keywords) = locale.split_once('@').unwrap_or((locale, ""));
    let mut parts = base.split(['_', '-']);
    let mut tag = parts.next().unwrap_or("").to_ascii_lowercase();
    let mut collation = None;
    for part in parts.filter(|p| !p.is_empty()) {
        let is_alpha = part.bytes().all(|b| b.is_ascii_alphabetic());
        match part.len() {
            4 if is_alpha => tag.push_str(&format!("-{part}")),
            2 if is_alpha => tag.push_str(&format!("-{}", part.to_ascii_uppercase())),
            3 if part.bytes().all(|b| b.is_ascii_digit()) => tag.push_str(&format!("-{part}")),
            _ if part.eq_ignore_ascii_case("traditional") => collation = Some("trad".to_string()),
            5..=8 if part.bytes().all(|b| b.is_ascii_alphanumeric()) => {
                tag.push_str(&format!("-{}", part.to_ascii_lowercase()))
            }
            _ => {}
        }
    }
    for keyword in keywords.split(';') {
        if let Some((name, value)) = keyword.split_once('=') {
            if name.trim().eq_ignore_ascii_case("collation") {
                collation = Some(collation_type(value.trim()));
            }
        }
    }
    if let Some(co) = collation {
        tag.push_str("-u-co-");
        tag.push_str(&co);
    }
    tag
}

/// The BCP 47 name of an ICU collation type (`phonebook` → `phonebk`).
fn collation_type(value: &str) -> String {
    match value.to_ascii_lowercase().as_str() {
        "phonebook" => "phonebk".to_string(),
        "traditional" => "trad".to_string(),
        "dictionary" => "dict".to_string(),
        "gb2312han" => "gb2312".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(locale: &str, input: &str) -> String {
        let built = build(&json!({ "locale": locale })).unwrap();
        let mut out = Vec::new();
        built.stream.analyze(input, true, &mut out).unwrap();
        assert_eq!(out.len(), 1);
        out.remove(0).term
    }

    #[test]
    fn swedish_puts_a_ring_after_z_and_english_after_a() {
        // ArangoDB's documented example: letters before "c".
        for (locale, before_c) in [("en", vec!["a", "å", "b"]), ("sv", vec!["a", "b"])] {
            let c = term(locale, "c");
            let found: Vec<&str> = ["a", "å", "b", "z"]
                .into_iter()
                .filter(|l| term(locale, l) < c)
                .collect();
            assert_eq!(found, before_c, "{locale}");
        }
        assert!(term("sv", "z") < term("sv", "å"));
        assert!(term("en", "å") < term("en", "b"));
    }

    #[test]
    fn terms_keep_the_byte_order_of_the_keys() {
        let built = build(&json!({ "locale": "de" })).unwrap();
        let mut words = [
            "Äpfel", "apfel", "Zebra", "zebra", "Öl", "ol", "straße", "strasse",
        ];
        words.sort_by(|a, b| {
            let key = |w: &str| {
                let mut out = Vec::new();
                built.stream.analyze(w, true, &mut out).unwrap();
                out.remove(0).term
            };
            key(a).cmp(&key(b))
        });
        // German: case and umlauts are lower-level differences than the base letters.
        let position = |w: &str| words.iter().position(|x| *x == w).unwrap();
        assert!(position("apfel") < position("ol"));
        assert!(position("Äpfel") < position("ol"));
        assert!(position("Öl") < position("zebra"));
    }

    #[test]
    fn locales_in_icu_form_are_read() {
        assert_eq!(bcp47("en_US"), "en-US");
        assert_eq!(bcp47("de_DE@collation=phonebook"), "de-DE-u-co-phonebk");
        assert_eq!(bcp47("es__TRADITIONAL"), "es-u-co-trad");
        assert_eq!(bcp47("zh_Hant_TW"), "zh-Hant-TW");
        // The phone book order sorts "ü" as "ue": "Müller" before "Muf"; the standard order
        // as "u": after it.
        let book = "de@collation=phonebook";
        assert!(term(book, "Müller") < term(book, "Muf"));
        assert!(term("de", "Muf") < term("de", "Müller"));
    }

    #[test]
    fn an_invalid_locale_still_builds_and_reports_what_was_given() {
        let built = build(&json!({ "locale": "%%%_not a locale" })).unwrap();
        assert_eq!(built.properties, json!({ "locale": "%%%_not a locale" }));
        let built = build(&json!({ "locale": "en_US.UTF-8" })).unwrap();
        assert_eq!(built.properties, json!({ "locale": "en_US" }));
        assert!(build(&json!({})).is_err());
        assert!(build(&json!({ "locale": 1 })).is_err());
    }
}
