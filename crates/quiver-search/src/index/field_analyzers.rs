//! The analyzer of each field of an inverted index: a search over a `search-alias` view names
//! no analyzer (`ANALYZER()` is not needed there), so the conditions that use the default
//! analyzer take the one the index definition gives the field they compare.

use super::link::LinkDefinition;
use super::query::SearchQuery;

/// The analyzer the condition of a `search-alias` view uses when none is named.
pub const DEFAULT_ANALYZER: &str = "identity";

/// The analyzer `link` indexes the attribute `path` (`a.b`, `a[1].b`) with, or None when the
/// path is not indexed.
pub fn analyzer_at(link: &LinkDefinition, path: &str) -> Option<String> {
    let link_analyzers = link.root_analyzers();
    let mut spec = link.resolved_root();
    for segment in path.split('.') {
        let name = segment.split('[').next().unwrap_or(segment);
        spec = spec.child(name, &link_analyzers)?;
        if segment.ends_with(super::encode::ELEMENT_MARK) {
            spec = spec.element()?;
        }
    }
    let list = if spec.analyzers.is_empty() {
        &link_analyzers[..]
    } else {
        spec.analyzers
    };
    list.first().cloned()
}

impl SearchQuery {
    /// This condition with every use of the default analyzer replaced by the analyzer `link`
    /// indexes the compared path with. Conditions naming another analyzer are kept: they
    /// match only what that analyzer indexed.
    pub fn with_field_analyzers(&self, link: &LinkDefinition) -> SearchQuery {
        let pick = |path: &str, analyzer: &String| -> String {
            if analyzer == DEFAULT_ANALYZER {
                analyzer_at(link, path).unwrap_or_else(|| analyzer.clone())
            } else {
                analyzer.clone()
            }
        };
        let mut out = self.clone();
        match &mut out {
            SearchQuery::Term { path, analyzer, .. }
            | SearchQuery::Range { path, analyzer, .. }
            | SearchQuery::Phrase { path, analyzer, .. }
            | SearchQuery::Prefix { path, analyzer, .. }
            | SearchQuery::Like { path, analyzer, .. }
            | SearchQuery::Levenshtein { path, analyzer, .. }
            | SearchQuery::NgramMatch { path, analyzer, .. }
            | SearchQuery::Geo { path, analyzer, .. } => *analyzer = pick(path, analyzer),
            SearchQuery::And(list) | SearchQuery::Or(list) | SearchQuery::MinMatch(list, _) => {
                for q in list.iter_mut() {
                    *q = q.with_field_analyzers(link);
                }
            }
            SearchQuery::Not(inner)
            | SearchQuery::Boost(inner, _)
            | SearchQuery::Nested { cond: inner, .. } => {
                **inner = inner.with_field_analyzers(link);
            }
            // Conditions without an analyzer (EXISTS, constants, and any other kind) keep theirs.
            #[allow(unreachable_patterns)]
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::SearchValue;
    use serde_json::json;

    fn link() -> LinkDefinition {
        LinkDefinition::from_json(&json!({
            "analyzers": ["text_en"],
            "fields": {"title": {}, "tag": {"analyzers": ["identity"]},
                       "a": {"fields": {"b": {"analyzers": ["norm_de"]}}}}
        }))
        .unwrap()
    }

    #[test]
    fn fields_take_their_own_or_the_inherited_analyzer() {
        let link = link();
        assert_eq!(analyzer_at(&link, "title").as_deref(), Some("text_en"));
        assert_eq!(analyzer_at(&link, "tag").as_deref(), Some("identity"));
        assert_eq!(analyzer_at(&link, "a.b").as_deref(), Some("norm_de"));
        assert_eq!(analyzer_at(&link, "a[2].b").as_deref(), Some("norm_de"));
        assert_eq!(analyzer_at(&link, "other"), None);
        let nested = LinkDefinition::from_json(&json!({
            "fields": {"d": {"nested": {"c": {"analyzers": ["text_en"]}}}}
        }))
        .unwrap();
        assert_eq!(analyzer_at(&nested, "d[?].c").as_deref(), Some("text_en"));
        assert_eq!(analyzer_at(&nested, "d.c"), None);
    }

    #[test]
    fn default_analyzer_conditions_take_the_field_analyzer() {
        let term = |path: &str, analyzer: &str| SearchQuery::Term {
            path: path.into(),
            analyzer: analyzer.into(),
            value: SearchValue::String("x".into()),
        };
        let query = SearchQuery::And(vec![
            term("title", "identity"),
            SearchQuery::Not(Box::new(term("a.b", "identity"))),
            term("title", "text_fr"),
            term("unknown", "identity"),
        ]);
        let expected = SearchQuery::And(vec![
            term("title", "text_en"),
            SearchQuery::Not(Box::new(term("a.b", "norm_de"))),
            term("title", "text_fr"),
            term("unknown", "identity"),
        ]);
        assert_eq!(query.with_field_analyzers(&link()), expected);
    }
}
