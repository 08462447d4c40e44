//! `norm`: case conversion and accent removal of the whole input as one token.

use quiver_errors::Result;
use serde_json::{json, Value};

use super::normalize::{normalize, Case};
use super::props::{bool_or, canonical_locale, object, optional_string, required_string};
use super::{Built, Rejection, Token, TokenStream};

#[derive(Debug)]
struct Norm {
    keep_accents: bool,
    case: Case,
}

impl TokenStream for Norm {
    fn analyze(&self, input: &str, _strict: bool, out: &mut Vec<Token>) -> Result<()> {
        out.push(Token::new(
            normalize(input, self.keep_accents, self.case),
            0,
            0,
            input.len(),
        ));
        Ok(())
    }
}

/// `{"locale": string, "case": "none"|"lower"|"upper" = "none", "accent": bool = true}`.
pub(crate) fn build(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let locale = canonical_locale(required_string(props, "locale")?);
    let case = Case::parse(optional_string(props, "case")?.unwrap_or("none"))?;
    let keep_accents = bool_or(props, "accent", true)?;
    Ok(Built {
        properties: json!({ "locale": locale, "case": case.name(), "accent": keep_accents }),
        stream: Box::new(Norm { keep_accents, case }),
    })
}
