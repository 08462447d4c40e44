//! `segmentation`: language-agnostic word segmentation (UAX #29) with case conversion,
//! keeping every segment (`all`), those with a letter or number (`alpha`), or those that are
//! not only horizontal whitespace (`graphic`).

use quiver_errors::Result;
use serde_json::{json, Value};

use super::normalize::Case;
use super::props::{choice, object, optional_string};
use super::words::segments;
use super::{Built, Rejection, Token, TokenStream};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Break {
    All,
    Alpha,
    Graphic,
}

/// The whitespace `graphic` drops (ArangoDB's list; line breaks other than U+2028 stay).
fn is_break_space(c: char) -> bool {
    matches!(
        c,
        '\u{0009}' | '\u{0020}' | '\u{0085}' | '\u{00A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

#[derive(Debug)]
struct Segmentation {
    mode: Break,
    case: Case,
}

impl TokenStream for Segmentation {
    fn analyze(&self, input: &str, _strict: bool, out: &mut Vec<Token>) -> Result<()> {
        let mut position = 0;
        for segment in segments(input) {
            let keep = match self.mode {
                Break::All => true,
                Break::Alpha => segment.is_word(),
                Break::Graphic => !segment.text.chars().all(is_break_space),
            };
            if keep {
                let end = segment.start + segment.text.len();
                out.push(Token::new(
                    self.case.apply(segment.text),
                    position,
                    segment.start,
                    end,
                ));
                position += 1;
            }
        }
        Ok(())
    }
}

/// `{"break": "all"|"alpha"|"graphic" = "alpha", "case": "lower"|"upper"|"none" = "lower"}`.
pub(crate) fn build(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let mode = match choice(props, "break", &["all", "alpha", "graphic"], "alpha")? {
        "all" => Break::All,
        "graphic" => Break::Graphic,
        _ => Break::Alpha,
    };
    let case = Case::parse(optional_string(props, "case")?.unwrap_or("lower"))?;
    let name = match mode {
        Break::All => "all",
        Break::Alpha => "alpha",
        Break::Graphic => "graphic",
    };
    Ok(Built {
        properties: json!({ "break": name, "case": case.name() }),
        stream: Box::new(Segmentation { mode, case }),
    })
}
