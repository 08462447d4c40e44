//! `stem`: Snowball stemming of the whole input as one token. Languages Snowball supports
//! but the rust-stemmers crate lacks (Armenian, Basque, Catalan, Hindi, Indonesian, Irish,
//! Lithuanian, Nepali, Serbian, Yiddish) and unknown locales pass the input through
//! unchanged, as ArangoDB does for a locale without a stemmer.

use quiver_errors::Result;
use rust_stemmers::{Algorithm, Stemmer};
use serde_json::{json, Value};

use super::props::{canonical_locale, language, object, required_string};
use super::{Built, Rejection, Token, TokenStream};

/// The Snowball stemmer for a language code.
pub(crate) fn stemmer_for(language: &str) -> Option<Stemmer> {
    let algorithm = match language {
        "ar" => Algorithm::Arabic,
        "da" => Algorithm::Danish,
        "nl" => Algorithm::Dutch,
        "en" => Algorithm::English,
        "fi" => Algorithm::Finnish,
        "fr" => Algorithm::French,
        "de" => Algorithm::German,
        "el" => Algorithm::Greek,
        "hu" => Algorithm::Hungarian,
        "it" => Algorithm::Italian,
        "no" | "nb" | "nn" => Algorithm::Norwegian,
        "pt" => Algorithm::Portuguese,
        "ro" => Algorithm::Romanian,
        "ru" => Algorithm::Russian,
        "es" => Algorithm::Spanish,
        "sv" => Algorithm::Swedish,
        "ta" => Algorithm::Tamil,
        "tr" => Algorithm::Turkish,
        _ => return None,
    };
    Some(Stemmer::create(algorithm))
}

struct Stem {
    stemmer: Option<Stemmer>,
}

impl std::fmt::Debug for Stem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stem")
            .field("stemmer", &self.stemmer.is_some())
            .finish()
    }
}

impl TokenStream for Stem {
    fn analyze(&self, input: &str, _strict: bool, out: &mut Vec<Token>) -> Result<()> {
        let term = match &self.stemmer {
            Some(stemmer) => stemmer.stem(input).into_owned(),
            None => input.to_string(),
        };
        out.push(Token::new(term, 0, 0, input.len()));
        Ok(())
    }
}

/// `{"locale": string}` (required; only its language part picks the stemmer).
pub(crate) fn build(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let locale = canonical_locale(required_string(props, "locale")?);
    Ok(Built {
        stream: Box::new(Stem {
            stemmer: stemmer_for(&language(&locale)),
        }),
        properties: json!({ "locale": locale }),
    })
}
