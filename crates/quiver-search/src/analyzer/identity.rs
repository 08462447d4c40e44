//! `identity`: the input unchanged, as one token. Ignores its properties.

use quiver_errors::Result;
use serde_json::{json, Value};

use super::{Built, Token, TokenStream};

#[derive(Debug)]
struct Identity;

impl TokenStream for Identity {
    fn analyze(&self, input: &str, _strict: bool, out: &mut Vec<Token>) -> Result<()> {
        out.push(Token::new(input, 0, 0, input.len()));
        Ok(())
    }
}

/// The identity stream; its normalized properties are always `{}`.
pub(crate) fn build() -> Built {
    let properties: Value = json!({});
    Built {
        stream: Box::new(Identity),
        properties,
    }
}
