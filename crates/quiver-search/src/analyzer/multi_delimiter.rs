//! `multi_delimiter`: splits at any of several delimiter strings (none a prefix of another);
//! no quoting, and empty fields are skipped.

use quiver_errors::Result;
use serde_json::{json, Value};

use super::props::{object, string_array};
use super::{Built, Rejection, Token, TokenStream};

#[derive(Debug)]
struct MultiDelimiter {
    delimiters: Vec<String>,
}

impl MultiDelimiter {
    /// The first delimiter match in `data` (the one that ends first): (start, length).
    fn find(&self, data: &str) -> Option<(usize, usize)> {
        let bytes = data.as_bytes();
        for end in 1..=bytes.len() {
            for delim in &self.delimiters {
                let d = delim.as_bytes();
                if d.len() <= end && &bytes[end - d.len()..end] == d {
                    return Some((end - d.len(), d.len()));
                }
            }
        }
        None
    }
}

impl TokenStream for MultiDelimiter {
    fn analyze(&self, input: &str, _strict: bool, out: &mut Vec<Token>) -> Result<()> {
        let mut offset = 0;
        let mut position = 0;
        while offset < input.len() {
            let rest = &input[offset..];
            let (size, skip) = self.find(rest).unwrap_or((rest.len(), 0));
            if size > 0 {
                out.push(Token::new(&rest[..size], position, offset, offset + size));
                position += 1;
            }
            debug_assert!(size + skip > 0, "the scan must advance");
            offset += size + skip;
        }
        Ok(())
    }
}

/// `{"delimiters": [string, …]}` (required; no empty string, none a prefix of another).
pub(crate) fn build(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let delimiters = string_array(props, "delimiters", false)?;
    for (i, delim) in delimiters.iter().enumerate() {
        if delim.is_empty() {
            return Err("Delimiter list contains an empty string.".to_string());
        }
        if let Some(other) = delimiters[..i]
            .iter()
            .find(|known| delim.starts_with(known.as_str()) || known.starts_with(delim.as_str()))
        {
            return Err(format!(
                "Some delimiters are a prefix of others. See `{other}` and `{delim}`"
            ));
        }
    }
    Ok(Built {
        properties: json!({ "delimiters": delimiters }),
        stream: Box::new(MultiDelimiter { delimiters }),
    })
}
