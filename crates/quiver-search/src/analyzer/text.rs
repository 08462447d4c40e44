//! `text`: words (UAX #29 word segmentation), then accent removal, case conversion, stop
//! word removal and Snowball stemming, in ArangoDB's fixed order, optionally expanded into
//! edge n-grams. Stop words come only from the `stopwords` list: `stopwordsPath` (files read
//! from the server's file system) is refused.

use std::collections::HashSet;

use quiver_errors::Result;
use rust_stemmers::Stemmer;
use serde_json::{json, Map, Value};

use super::normalize::{normalize, Case};
use super::props::{
    bool_or, canonical_locale, language, object, optional_string, required_string, string_array,
    unsigned,
};
use super::stem::stemmer_for;
use super::word_cache::WordCache;
use super::words;
use super::{Built, Rejection, Token, TokenStream};

#[derive(Debug)]
struct EdgeNgram {
    min: usize,
    max: usize,
    preserve_original: bool,
}

struct Text {
    keep_accents: bool,
    case: Case,
    stopwords: HashSet<String>,
    stemmer: Option<Stemmer>,
    edge: Option<EdgeNgram>,
    /// The terms of words analyzed lately.
    words: WordCache,
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Text")
            .field("case", &self.case)
            .field("keep_accents", &self.keep_accents)
            .field("stemming", &self.stemmer.is_some())
            .field("edge", &self.edge)
            .finish_non_exhaustive()
    }
}

impl Text {
    /// The term of one word: accents, case, stemming; None for a stop word.
    fn word_term(&self, text: &str) -> Option<String> {
        let word = normalize(text, self.keep_accents, self.case);
        if self.stopwords.contains(&word) {
            return None;
        }
        Some(match &self.stemmer {
            Some(stemmer) => stemmer.stem(&word).into_owned(),
            None => word,
        })
    }
}

impl Text {
    /// Calls `emit(term, position, start, end)` for each token of `input`, in order.
    fn each(&self, input: &str, mut emit: impl FnMut(&str, usize, usize, usize)) {
        let mut position = 0;
        let mut words = self.words.lock();
        for segment in words::words(input) {
            let Some(term) = words.term(segment.text, |text| self.word_term(text)) else {
                continue;
            };
            let (start, end) = (segment.start, segment.start + segment.text.len());
            match &self.edge {
                None => emit(term, position, start, end),
                Some(edge) => {
                    let chars: Vec<usize> = term
                        .char_indices()
                        .map(|(i, _)| i)
                        .chain(std::iter::once(term.len()))
                        .collect();
                    let length = chars.len() - 1;
                    for n in edge.min.max(1)..=edge.max.min(length) {
                        emit(&term[..chars[n]], position, start, end);
                    }
                    if edge.preserve_original && (length < edge.min || length > edge.max) {
                        emit(term, position, start, end);
                    }
                }
            }
            position += 1;
        }
    }
}

impl TokenStream for Text {
    fn analyze(&self, input: &str, _strict: bool, out: &mut Vec<Token>) -> Result<()> {
        self.each(input, |term, position, start, end| {
            out.push(Token::new(term, position, start, end));
        });
        Ok(())
    }

    fn visit(&self, input: &str, visit: &mut dyn FnMut(&str, u32)) {
        self.each(input, |term, position, _, _| {
            visit(term, u32::try_from(position).unwrap_or(u32::MAX));
        });
    }
}

fn edge_ngram(value: Option<&Value>) -> Result<Option<(EdgeNgram, Value)>, Rejection> {
    let props = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(props)) => props,
        Some(_) => return Err("'edgeNgram' must be an object".to_string()),
    };
    let limit = u64::from(u32::MAX);
    let min = unsigned(props, "min", Some(0), limit)?;
    let max = unsigned(props, "max", Some(limit), limit)?;
    if min > max {
        return Err("'edgeNgram.min' must not be greater than 'edgeNgram.max'".to_string());
    }
    let preserve_original = bool_or(props, "preserveOriginal", false)?;
    let mut normalized = Map::new();
    if props.contains_key("min") {
        normalized.insert("min".into(), json!(min));
    }
    if props.contains_key("max") {
        normalized.insert("max".into(), json!(max));
    }
    normalized.insert("preserveOriginal".into(), json!(preserve_original));
    let to_usize = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    Ok(Some((
        EdgeNgram {
            min: to_usize(min),
            max: to_usize(max),
            preserve_original,
        },
        Value::Object(normalized),
    )))
}

/// `{"locale": string, "case": "lower", "accent": false, "stemming": true, "stopwords": [],
/// "edgeNgram": {"min", "max", "preserveOriginal"}}` (only `locale` required).
pub(crate) fn build(properties: &Value) -> Result<Built, Rejection> {
    let props = object(properties);
    let locale = canonical_locale(required_string(props, "locale")?);
    let case = Case::parse(optional_string(props, "case")?.unwrap_or("lower"))?;
    let keep_accents = bool_or(props, "accent", false)?;
    let stemming = bool_or(props, "stemming", true)?;
    let stopwords = string_array(props, "stopwords", true)?;
    if props
        .get("stopwordsPath")
        .is_some_and(|path| !path.is_null())
    {
        return Err(
            "'stopwordsPath' is not supported: give the stop words in 'stopwords'".to_string(),
        );
    }
    let edge = edge_ngram(props.get("edgeNgram"))?;
    let mut normalized = Map::new();
    normalized.insert("locale".into(), json!(locale));
    normalized.insert("case".into(), json!(case.name()));
    normalized.insert("stopwords".into(), json!(stopwords));
    normalized.insert("accent".into(), json!(keep_accents));
    normalized.insert("stemming".into(), json!(stemming));
    let edge = edge.map(|(edge, json)| {
        normalized.insert("edgeNgram".into(), json);
        edge
    });
    let stemmer = if stemming {
        stemmer_for(&language(&locale))
    } else {
        None
    };
    Ok(Built {
        properties: Value::Object(normalized),
        stream: Box::new(Text {
            keep_accents,
            case,
            stopwords: stopwords.into_iter().collect(),
            stemmer,
            edge,
            words: WordCache::default(),
        }),
    })
}
