//! ArangoDB's built-in analyzers: `identity` and the `text_*` analyzers of the languages
//! ArangoDB ships them for. They are available in every database and never stored.

use serde_json::json;

use super::{AnalyzerDefinition, Feature};

/// The names of the built-in analyzers, in ArangoDB's listing order.
pub const BUILTIN_NAMES: &[&str] = &[
    "identity", "text_de", "text_en", "text_es", "text_fi", "text_fr", "text_it", "text_nl",
    "text_no", "text_pt", "text_ru", "text_sv", "text_zh",
];

/// The definition of a built-in analyzer.
pub(crate) fn definition(name: &str) -> Option<AnalyzerDefinition> {
    if name == "identity" {
        return Some(AnalyzerDefinition {
            name: name.to_string(),
            kind: "identity".to_string(),
            properties: json!({}),
            features: vec![Feature::Frequency, Feature::Norm],
        });
    }
    let locale = name.strip_prefix("text_")?;
    if !BUILTIN_NAMES.contains(&name) {
        return None;
    }
    Some(AnalyzerDefinition {
        name: name.to_string(),
        kind: "text".to_string(),
        properties: json!({
            "locale": locale,
            "case": "lower",
            "stopwords": [],
            "accent": false,
            "stemming": true,
        }),
        features: vec![Feature::Frequency, Feature::Position, Feature::Norm],
    })
}
