//! `stopwords`: drops the input when it equals one of the stop words (byte for byte),
//! otherwise returns it as one token. With `hex`, the stop words are hex-encoded bytes.

use std::collections::HashSet;

use quiver_errors::Result;
use serde_json::{json, Value};

use super::props::{bool_or, object, string_array};
use super::{Built, Rejection, Token, TokenStream};

#[derive(Debug)]
struct Stopwords {
    words: HashSet<Vec<u8>>,
}

impl TokenStream for Stopwords {
    fn analyze(&self, input: &str, _strict: bool, out: &mut Vec<Token>) -> Result<()> {
        if !self.words.contains(input.as_bytes()) {
            out.push(Token::new(input, 0, 0, input.len()));
        }
        Ok(())
    }
}

/// `{"stopwords": [string, …]}` (required), `"hex": bool = false`.
pub(crate) fn build(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let stopwords = string_array(props, "stopwords", false)?;
    let is_hex = bool_or(props, "hex", false)?;
    let mut words = HashSet::with_capacity(stopwords.len());
    for word in &stopwords {
        let bytes = if is_hex {
            hex::decode(word).map_err(|_| format!("stop word '{word}' is not valid hex"))?
        } else {
            word.as_bytes().to_vec()
        };
        words.insert(bytes);
    }
    Ok(Built {
        properties: json!({ "stopwords": stopwords, "hex": is_hex }),
        stream: Box::new(Stopwords { words }),
    })
}
