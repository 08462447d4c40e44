//! Analyzers: ArangoDB 3.12's analyzer types, each turning a string into a stream of tokens.
//!
//! An [`AnalyzerDefinition`] is what a client sends (`name`, `type`, `properties`,
//! `features`); [`Analyzer::from_definition`] validates it the way ArangoDB does (400/10 for
//! properties an analyzer type rejects, 501/9 for an unknown type) and keeps the
//! *normalized* definition (defaults filled in, unknown attributes dropped) that ArangoDB
//! reports back and stores. [`Analyzer::tokens`] runs it.
//!
//! One file per analyzer type; the shared pieces are [`props`] (reading properties),
//! [`normalize`] (case and accent conversion) and [`words`] (word segmentation).

mod aql;
mod builtin;
mod collation;
mod delimiter;
mod geo;
mod identity;
mod minhash;
mod multi_delimiter;
mod ngram;
mod norm;
mod normalize;
mod pipeline;
mod props;
mod return_type;
mod segmentation;
mod stem;
mod stopwords;
mod text;
mod wildcard;
mod word_cache;
mod words;

#[cfg(test)]
mod tests;

use std::fmt;

use quiver_errors::{Error, ErrorCode, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use aql::{set_aql_runtime, AqlAnalyzerRuntime};
pub use builtin::BUILTIN_NAMES;
pub use geo::{GeoAnalyzer, GeoInput, GeoJsonKind};
pub use return_type::ReturnType;

/// The largest accepted `properties` object, serialized (ArangoDB's limit).
pub const PROPERTIES_SIZE_MAX: usize = 1024 * 1024;

/// What an index keeps for each token of a field analyzed with an analyzer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Feature {
    /// How often a term occurs (PHRASE, BM25, TFIDF, NGRAM_MATCH).
    Frequency,
    /// The field length normalization factor (BM25, TFIDF).
    Norm,
    /// Token positions (PHRASE, NGRAM_MATCH); needs `frequency`.
    Position,
    /// Token byte offsets (OFFSET_INFO); needs `position`.
    Offset,
}

impl Feature {
    /// The feature's name in ArangoDB's JSON.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Frequency => "frequency",
            Feature::Norm => "norm",
            Feature::Position => "position",
            Feature::Offset => "offset",
        }
    }

    /// Parses a feature name.
    pub fn from_name(name: &str) -> Option<Feature> {
        match name {
            "frequency" => Some(Feature::Frequency),
            "norm" => Some(Feature::Norm),
            "position" => Some(Feature::Position),
            "offset" => Some(Feature::Offset),
            _ => None,
        }
    }

    /// The order ArangoDB reports features in: frequency, position, offset, norm.
    fn report_rank(self) -> u8 {
        match self {
            Feature::Frequency => 0,
            Feature::Position => 1,
            Feature::Offset => 2,
            Feature::Norm => 3,
        }
    }
}

/// An analyzer as ArangoDB's JSON describes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnalyzerDefinition {
    /// The name: a built-in's bare name or `db::name` (stored documents hold the bare name).
    pub name: String,
    /// The analyzer type (`identity`, `text`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// The type's properties (an object).
    #[serde(default = "empty_object")]
    pub properties: Value,
    /// The index features.
    #[serde(default)]
    pub features: Vec<Feature>,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

impl AnalyzerDefinition {
    /// The definition as ArangoDB's HTTP API reports it.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "name": self.name,
            "type": self.kind,
            "properties": self.properties,
            "features": self.features.iter().map(|f| f.name()).collect::<Vec<_>>(),
        })
    }

    /// Whether two definitions describe the same analyzer apart from the name (ArangoDB's
    /// "equal definition" test when a name is created twice).
    pub fn same_configuration(&self, other: &AnalyzerDefinition) -> bool {
        self.kind == other.kind
            && self.properties == other.properties
            && self.features == other.features
    }
}

/// One token: the term, its position in the stream and its byte offsets into the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// The term as indexed.
    pub term: String,
    /// The position (tokens of the same position are alternatives, e.g. edge n-grams).
    pub position: u32,
    /// Byte offset of the token's first byte in the input.
    pub start: u32,
    /// Byte offset after the token's last byte in the input.
    pub end: u32,
}

impl Token {
    pub(crate) fn new(term: impl Into<String>, position: usize, start: usize, end: usize) -> Token {
        debug_assert!(start <= end, "token offsets out of order");
        Token {
            term: term.into(),
            position: saturate(position),
            start: saturate(start),
            end: saturate(end),
        }
    }
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// What an analyzer type runs: appends the tokens of one input, positions counted from 0.
pub(crate) trait TokenStream: Send + Sync + fmt::Debug {
    /// Appends the tokens of `input` to `out`. With `strict`, fails where ArangoDB's
    /// `TOKENS()` fails (a binary n-gram that splits a multi-byte character); without, such a
    /// token is left out.
    fn analyze(&self, input: &str, strict: bool, out: &mut Vec<Token>) -> Result<()>;

    /// The data type of the tokens (see [`ReturnType`]): strings but for `aql` analyzers
    /// with another `returnType` (and pipelines that end in one).
    fn return_type(&self) -> ReturnType {
        ReturnType::String
    }

    /// Calls `visit` with the term and position of each token `analyze` gives without
    /// `strict`, in order. Types that can lend their terms without building each [`Token`]
    /// override it (indexing needs neither the offsets nor owned terms).
    fn visit(&self, input: &str, visit: &mut dyn FnMut(&str, u32)) {
        let mut out = Vec::new();
        let outcome = self.analyze(input, false, &mut out);
        debug_assert!(outcome.is_ok(), "lenient analysis cannot fail");
        for token in &out {
            visit(&token.term, token.position);
        }
    }
}

/// Why a type rejected its properties (turned into ArangoDB's 400/10 message).
pub(crate) type Rejection = String;

/// A built type: its stream and its normalized properties.
pub(crate) struct Built {
    pub stream: Box<dyn TokenStream>,
    pub properties: Value,
}

/// A validated analyzer, ready to run. Cheap to share (`Arc<Analyzer>`).
#[derive(Debug)]
pub struct Analyzer {
    definition: AnalyzerDefinition,
    stream: Box<dyn TokenStream>,
}

/// The types ArangoDB 3.12 knows that this build cannot run, with the reason given to clients.
fn unsupported_type(kind: &str) -> Option<&'static str> {
    match kind {
        "aql" if !aql::runtime_registered() => {
            Some("analyzer type 'aql' is not supported: no AQL engine runs in this process")
        }
        "geo_s2" | "classification" | "nearest_neighbors" => {
            Some("this analyzer type is only available in the Enterprise Edition of ArangoDB")
        }
        _ => None,
    }
}

/// Builds the stream of one type from its properties (used by pipelines and wildcards too).
pub(crate) fn build_type(kind: &str, properties: &Value) -> std::result::Result<Built, Rejection> {
    match kind {
        "identity" => Ok(identity::build()),
        "delimiter" => delimiter::build(properties),
        "multi_delimiter" => multi_delimiter::build(properties),
        "stem" => stem::build(properties),
        "collation" => collation::build(properties),
        "aql" => aql::build(properties),
        "norm" => norm::build(properties),
        "ngram" => ngram::build(properties),
        "text" => text::build(properties),
        "stopwords" => stopwords::build(properties),
        "segmentation" => segmentation::build(properties),
        "pipeline" => pipeline::build(properties),
        "wildcard" => wildcard::build(properties),
        "minhash" => minhash::build(properties),
        "geojson" => geo::build_geojson(properties),
        "geopoint" => geo::build_geopoint(properties),
        other => Err(format!("unknown analyzer type '{other}'")),
    }
}

/// Whether `kind` is a type this build can construct.
pub(crate) fn is_known_type(kind: &str) -> bool {
    matches!(
        kind,
        "identity"
            | "delimiter"
            | "multi_delimiter"
            | "stem"
            | "collation"
            | "aql"
            | "norm"
            | "ngram"
            | "text"
            | "stopwords"
            | "segmentation"
            | "pipeline"
            | "wildcard"
            | "minhash"
            | "geojson"
            | "geopoint"
    )
}

/// Validates a feature list as ArangoDB does and returns it deduplicated, in report order.
pub fn validate_features(kind: &str, features: &[Feature]) -> Result<Vec<Feature>> {
    let mut out: Vec<Feature> = features.to_vec();
    out.sort_by_key(|f| f.report_rank());
    out.dedup();
    let has = |f: Feature| out.contains(&f);
    if has(Feature::Offset) && !has(Feature::Position) {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            "missing feature 'position' required when 'offset' feature is specified",
        ));
    }
    if has(Feature::Position) && !has(Feature::Frequency) {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            "missing feature 'frequency' required when 'position' feature is specified",
        ));
    }
    if kind == "wildcard" && has(Feature::Offset) {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            "Unsupported index features are specified: the 'wildcard' analyzer cannot have \
             the 'offset' feature",
        ));
    }
    Ok(out)
}

/// Parses a `features` JSON value (absent: none) as ArangoDB's analyzer API does (400/10).
pub fn parse_features(value: Option<&Value>) -> Result<Vec<Feature>> {
    let Some(value) = value else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = value else {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            "invalid 'features', expecting body to be of the form { name: <string>, type: \
             <string>[, properties: <object>[, features: <string-array>]] }",
        ));
    };
    let mut out = Vec::with_capacity(items.len().min(4));
    for (index, item) in items.iter().enumerate() {
        let Value::String(name) = item else {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("array entry #{index} is not a string"),
            ));
        };
        let Some(feature) = Feature::from_name(name) else {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("failed to find feature '{name}' see array entry #{index}"),
            ));
        };
        out.push(feature);
    }
    Ok(out)
}

impl Analyzer {
    /// Validates `def` and builds the analyzer. Errors: unknown type 501/9 ("Not implemented
    /// analyzer type"), types this build cannot run 501/9 or 501/31 (Enterprise types) with
    /// the reason, bad features 400/10, properties the type rejects 400/10 with ArangoDB's
    /// message followed by the reason.
    pub fn from_definition(def: &AnalyzerDefinition) -> Result<Analyzer> {
        if let Some(reason) = unsupported_type(&def.kind) {
            let code = if def.kind == "aql" {
                ErrorCode::NotImplemented
            } else {
                ErrorCode::OnlyEnterprise
            };
            return Err(Error::with_message(code, reason));
        }
        if !is_known_type(&def.kind) {
            return Err(Error::with_message(
                ErrorCode::NotImplemented,
                format!("Not implemented analyzer type '{}'.", def.kind),
            ));
        }
        let features = validate_features(&def.kind, &def.features)?;
        let properties = match &def.properties {
            Value::Null => empty_object(),
            // ArangoDB accepts properties given as a string holding a JSON object.
            Value::String(text) => serde_json::from_str(text)
                .map_err(|_| rejected(def, "properties are not valid JSON"))?,
            other => other.clone(),
        };
        if serde_json::to_vec(&properties).map_or(0, |v| v.len()) > PROPERTIES_SIZE_MAX {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!(
                    "analyzer properties size exceeds the maximum allowed limit of \
                     '{PROPERTIES_SIZE_MAX}'"
                ),
            ));
        }
        if !properties.is_object() {
            return Err(rejected(def, "properties must be an object"));
        }
        let built = build_type(&def.kind, &properties).map_err(|reason| rejected(def, &reason))?;
        Ok(Analyzer {
            definition: AnalyzerDefinition {
                name: def.name.clone(),
                kind: def.kind.clone(),
                properties: built.properties,
                features,
            },
            stream: built.stream,
        })
    }

    /// One of ArangoDB's built-in analyzers (`identity`, `text_en`, …).
    pub fn builtin(name: &str) -> Option<Analyzer> {
        let def = builtin::definition(name)?;
        let analyzer = Analyzer::from_definition(&def);
        debug_assert!(analyzer.is_ok(), "built-in analyzer {name} must build");
        analyzer.ok()
    }

    /// The normalized definition (defaults filled in).
    pub fn definition(&self) -> &AnalyzerDefinition {
        &self.definition
    }

    /// The index features.
    pub fn features(&self) -> &[Feature] {
        &self.definition.features
    }

    /// The data type of the tokens: an `aql` analyzer's `returnType` (a pipeline's is its last
    /// member's); strings for every other type.
    pub fn return_type(&self) -> ReturnType {
        self.stream.return_type()
    }

    /// Whether this analyzer only accepts geo values (GeoJSON or coordinate pairs), not text.
    pub fn is_geo(&self) -> bool {
        matches!(self.definition.kind.as_str(), "geojson" | "geopoint")
    }

    /// The geo configuration of a `geojson` or `geopoint` analyzer (None for other types).
    pub fn geo(&self) -> Option<GeoAnalyzer> {
        GeoAnalyzer::from_properties(&self.definition.kind, &self.definition.properties)
    }

    /// The tokens of `input`, for indexing. A binary n-gram that would split a multi-byte
    /// character is left out (see [`Analyzer::try_tokens`]). The number of tokens is bounded
    /// by the input's length times the analyzer's own fan-out (n-gram range, edge n-grams).
    pub fn tokens(&self, input: &str) -> Vec<Token> {
        let mut out = Vec::new();
        let outcome = self.stream.analyze(input, false, &mut out);
        debug_assert!(outcome.is_ok(), "lenient analysis cannot fail");
        out
    }

    /// Calls `visit` with the term and position of each of [`Analyzer::tokens`]' tokens, in
    /// order, without building the tokens where the type can lend its terms (`text`).
    pub fn visit_tokens(&self, input: &str, visit: &mut dyn FnMut(&str, u32)) {
        self.stream.visit(input, visit);
    }

    /// The tokens of `input` as AQL's `TOKENS()` returns them: like [`Analyzer::tokens`], but a
    /// binary n-gram that splits a multi-byte character fails ("Invalid UTF-8 sequence").
    pub fn try_tokens(&self, input: &str) -> Result<Vec<Token>> {
        let mut out = Vec::new();
        self.stream.analyze(input, true, &mut out)?;
        Ok(out)
    }
}

fn rejected(def: &AnalyzerDefinition, reason: &str) -> Error {
    let properties = match &def.properties {
        Value::Null => " Init without properties".to_string(),
        other => format!(" Properties '{other}'"),
    };
    Error::with_message(
        ErrorCode::BadParameter,
        format!(
            "Failure initializing an arangosearch analyzer instance for name '{}' type '{}'.{} \
             was rejected by analyzer. Please check documentation for corresponding analyzer \
             type. ({reason})",
            def.name, def.kind, properties
        ),
    )
}
