//! `wildcard`: n-grams of every token of an optional inner analyzer, for `LIKE` patterns.
//! Each token is framed with U+FFFD on both sides and cut into windows of `ngramSize`
//! characters, the last ones shorter: one start gram, the inner grams and `ngramSize - 1`
//! end grams.

use quiver_errors::Result;
use serde_json::{json, Map, Value};

use super::pipeline::build_string_member;
use super::props::{object, unsigned};
use super::{Built, Rejection, Token, TokenStream};

const MARKER: char = '\u{FFFD}';

#[derive(Debug)]
struct Wildcard {
    size: usize,
    inner: Option<Box<dyn TokenStream>>,
}

impl Wildcard {
    fn grams(&self, token: &Token, position: &mut usize, out: &mut Vec<Token>) {
        let framed: Vec<char> = std::iter::once(MARKER)
            .chain(token.term.chars())
            .chain(std::iter::once(MARKER))
            .collect();
        for i in 0..framed.len() - 1 {
            let end = (i + self.size).min(framed.len());
            let gram: String = framed[i..end].iter().collect();
            out.push(Token {
                term: gram,
                position: u32::try_from(*position).unwrap_or(u32::MAX),
                start: token.start,
                end: token.end,
            });
            *position += 1;
        }
    }
}

impl TokenStream for Wildcard {
    fn analyze(&self, input: &str, strict: bool, out: &mut Vec<Token>) -> Result<()> {
        let mut tokens = Vec::new();
        match &self.inner {
            Some(inner) => inner.analyze(input, strict, &mut tokens)?,
            None => tokens.push(Token::new(input, 0, 0, input.len())),
        }
        let mut position = 0;
        for token in &tokens {
            self.grams(token, &mut position, out);
        }
        Ok(())
    }
}

/// `{"ngramSize": uint >= 2}` (required), `"analyzer": {"type", "properties"}` (optional).
pub(crate) fn build(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let size = unsigned(props, "ngramSize", None, u64::from(u32::MAX))?;
    if size < 2 {
        return Err("'ngramSize' must be at least 2".to_string());
    }
    let mut normalized = Map::new();
    normalized.insert("ngramSize".into(), json!(size));
    let inner = match props.get("analyzer") {
        None | Some(Value::Null) => None,
        Some(member) => {
            let (stream, json) = build_string_member(member)?;
            normalized.insert("analyzer".into(), json);
            Some(stream)
        }
    };
    Ok(Built {
        properties: Value::Object(normalized),
        stream: Box::new(Wildcard {
            size: usize::try_from(size).unwrap_or(usize::MAX),
            inner,
        }),
    })
}
