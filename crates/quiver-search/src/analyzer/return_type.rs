//! The data type of an analyzer's tokens: strings, or — for an `aql` analyzer with
//! `returnType` `number` or `bool` — numbers or booleans.
//!
//! Typed tokens travel as their canonical text ([`ReturnType::text_of_number`], `true` /
//! `false`) through the same token streams as strings; a view indexes them as the numbers and
//! booleans they spell (`index/document.rs`), so that `doc.field == 5` or `doc.field == true`
//! finds them without `ANALYZER()`, as in ArangoDB.

/// The data type of an analyzer's tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReturnType {
    String,
    Number,
    Bool,
}

impl ReturnType {
    /// The name in an `aql` analyzer's `returnType`.
    pub fn name(self) -> &'static str {
        match self {
            ReturnType::String => "string",
            ReturnType::Number => "number",
            ReturnType::Bool => "bool",
        }
    }

    /// Parses a `returnType` name.
    pub fn from_name(name: &str) -> Option<ReturnType> {
        match name {
            "string" => Some(ReturnType::String),
            "number" => Some(ReturnType::Number),
            "bool" => Some(ReturnType::Bool),
            _ => None,
        }
    }

    /// The token text of a number: the shortest text that reads back as the same `f64`.
    /// AQL numbers are finite; anything else is spelled as 0, as AQL's `TO_NUMBER` gives it.
    pub fn text_of_number(value: f64) -> String {
        // `-0` and `0` are one number to AQL and to the index.
        if value.is_finite() && value != 0.0 {
            format!("{value}")
        } else {
            "0".to_string()
        }
    }

    /// The number a number token spells (None for text that is not one).
    pub fn number_of(token: &str) -> Option<f64> {
        token.parse::<f64>().ok().filter(|v| v.is_finite())
    }

    /// The boolean a bool token spells (None for text that is not one).
    pub fn bool_of(token: &str) -> Option<bool> {
        match token {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ReturnType;

    #[test]
    fn number_tokens_read_back_as_the_same_number() {
        for v in [
            0.0,
            -0.0,
            1.0,
            -2.5,
            0.1,
            1e21,
            1.5e-300,
            f64::MAX,
            f64::MIN_POSITIVE,
        ] {
            let text = ReturnType::text_of_number(v);
            assert_eq!(ReturnType::number_of(&text), Some(v), "{v} as {text}");
        }
        assert_eq!(ReturnType::text_of_number(-0.0), "0");
        assert_eq!(ReturnType::text_of_number(5.0), "5");
        assert_eq!(ReturnType::text_of_number(f64::NAN), "0");
        assert_eq!(ReturnType::number_of("x"), None);
        assert_eq!(ReturnType::number_of("inf"), None);
        assert_eq!(ReturnType::bool_of("true"), Some(true));
        assert_eq!(ReturnType::bool_of("1"), None);
        for t in [ReturnType::String, ReturnType::Number, ReturnType::Bool] {
            assert_eq!(ReturnType::from_name(t.name()), Some(t));
        }
        assert_eq!(ReturnType::from_name("object"), None);
    }
}
