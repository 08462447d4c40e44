//! The terms one document contributes to a view under one link: every indexed attribute path
//! with its values' terms, positions per (path, analyzer) for PHRASE, and the markers EXISTS
//! and the scorers read (see `encode.rs`).

use std::collections::HashMap;

use quiver_geo::cells::Covering;
use serde_json::{json, Value};

use super::encode;
use super::link::{LinkDefinition, Resolved, MAX_FIELD_DEPTH};
use crate::analyzer::{GeoAnalyzer, ReturnType};

/// Positions left free between two values of one path (array elements without
/// `trackListPositions`), so that a phrase never runs from one value into the next.
pub const VALUE_POSITION_GAP: u32 = 256;

/// Turns analyzer names and text into tokens (term, position). Implemented over the analyzer
/// catalog by the core; None when the analyzer is unknown.
pub trait AnalyzerSource: Send + Sync {
    fn tokens(&self, analyzer: &str, input: &str) -> Option<Vec<(String, u32)>>;

    /// Calls `visit` with each of [`AnalyzerSource::tokens`]' tokens (term, position), in
    /// order; false when the analyzer is unknown. Sources that can lend their terms
    /// override it: indexing copies each term once, into the index's term.
    fn visit_tokens(&self, analyzer: &str, input: &str, visit: &mut dyn FnMut(&str, u32)) -> bool {
        let Some(tokens) = self.tokens(analyzer, input) else {
            return false;
        };
        for (term, position) in &tokens {
            visit(term, *position);
        }
        true
    }

    /// The tokens with their byte offsets, for `OFFSET_INFO`; None unless the analyzer is
    /// known and has the `offset` feature.
    fn offset_tokens(&self, analyzer: &str, input: &str) -> Option<Vec<crate::analyzer::Token>> {
        let _ = (analyzer, input);
        None
    }

    /// The configuration of `analyzer` when it is a geo analyzer (`geojson`, `geopoint`),
    /// which indexes JSON values (objects, arrays) rather than text.
    fn geo(&self, analyzer: &str) -> Option<GeoAnalyzer> {
        let _ = analyzer;
        None
    }

    /// The data type of `analyzer`'s tokens: strings unless it is an `aql` analyzer (or a
    /// pipeline ending in one) whose `returnType` is `number` or `bool`.
    fn return_type(&self, analyzer: &str) -> ReturnType {
        let _ = analyzer;
        ReturnType::String
    }

    /// The definition of `analyzer` (type, properties, features) as JSON, which decides the
    /// terms it produces: recorded with an index's commits so that a reopened index whose
    /// analyzer changed meanwhile is rebuilt. None when unknown (or for sources whose
    /// analyzers never change).
    fn definition(&self, analyzer: &str) -> Option<serde_json::Value> {
        let _ = analyzer;
        None
    }
}

/// One term occurrence of a document.
#[derive(Clone, Debug, PartialEq)]
pub struct TermAt {
    pub term: String,
    pub position: u32,
}

/// Every term occurrence of `doc` under `link`, sorted by position (positions of one term
/// increase, as the index needs). Attributes `_id` and `_rev` are never indexed.
pub fn document_terms(
    doc: &Value,
    link: &LinkDefinition,
    analyzers: &dyn AnalyzerSource,
) -> Vec<TermAt> {
    let link_analyzers = link.root_analyzers();
    let mut out = Collector {
        terms: Vec::new(),
        next_position: HashMap::new(),
        key: String::new(),
        analyzers,
        element: None,
        next_element: 0,
        lengths: Vec::new(),
    };
    if let Value::Object(map) = doc {
        let root = link.resolved_root();
        for (name, value) in map {
            if name == "_id" || name == "_rev" {
                continue;
            }
            if let Some(spec) = root.child(name, &link_analyzers) {
                out.value(value, name.clone(), spec, &link_analyzers, 0);
            }
        }
    }
    // One field-length term per (path, analyzer) with tokens, at the first position.
    for (path, analyzer, tokens) in std::mem::take(&mut out.lengths) {
        if tokens > 0 {
            out.terms.push(TermAt {
                term: encode::length_term(&path, analyzer.as_str(), tokens),
                position: 0,
            });
        }
    }
    out.terms.sort_by_key(|t| t.position);
    out.terms
}

struct Collector<'a> {
    terms: Vec<TermAt>,
    /// `path␟analyzer` (analyzer "" for the value markers) → the first position the next
    /// value gets.
    next_position: HashMap<String, u32>,
    /// The key of `next_position` looked up last (reused, so a lookup allocates nothing).
    key: String,
    analyzers: &'a dyn AnalyzerSource,
    /// The nested element whose attributes are being indexed (its first position).
    element: Option<u32>,
    /// The number the next nested element gets.
    next_element: u32,
    /// Tokens per (path, analyzer) so far: the field lengths (few per document).
    lengths: Vec<(String, String, u32)>,
}

impl Collector<'_> {
    /// Where a term at `position` of the current value goes: inside an element, into the
    /// element's range (positions past it are kept at its end).
    fn place(&self, position: u32) -> u32 {
        place(self.element, position)
    }

    /// Indexes each value of `items` as an element of the nested field `path` whose
    /// elements' settings are `element` (the attributes of objects; other values are elements
    /// without attributes).
    fn elements(
        &mut self,
        items: &[Value],
        path: &str,
        element: Resolved<'_>,
        link_analyzers: &[String],
        depth: usize,
    ) {
        let element_path = format!("{path}{}", encode::ELEMENT_MARK);
        for item in items {
            if self.next_element >= encode::MAX_ELEMENTS {
                return;
            }
            let base = self.next_element * encode::ELEMENT_STRIDE;
            self.next_element += 1;
            let outer_positions = std::mem::take(&mut self.next_position);
            let outer_element = self.element.replace(base);
            self.terms.push(TermAt {
                term: encode::element_term(&element_path),
                position: base,
            });
            // Other values than objects are elements without attributes.
            let no_attributes = serde_json::Map::new();
            let map = item.as_object().unwrap_or(&no_attributes);
            for (name, child) in map {
                if let Some(child_spec) = element.child(name, link_analyzers) {
                    self.value(
                        child,
                        format!("{element_path}.{name}"),
                        child_spec,
                        link_analyzers,
                        depth + 1,
                    );
                }
            }
            self.element = outer_element;
            self.next_position = outer_positions;
        }
    }

    fn value(
        &mut self,
        value: &Value,
        path: String,
        spec: Resolved<'_>,
        link_analyzers: &[String],
        depth: usize,
    ) {
        if depth > MAX_FIELD_DEPTH {
            return;
        }
        if matches!(value, Value::Object(_) | Value::Array(_)) {
            let analyzers = if spec.analyzers.is_empty() {
                link_analyzers
            } else {
                spec.analyzers
            };
            for analyzer in analyzers {
                if let Some(geo) = self.analyzers.geo(analyzer) {
                    self.geo_value(value, &path, analyzer, &geo);
                }
            }
        }
        if let (Value::Array(items), Some(element)) = (value, spec.element()) {
            self.elements(items, &path, element, link_analyzers, depth);
        }
        match value {
            Value::Object(map) => {
                for (name, child) in map {
                    if let Some(child_spec) = spec.child(name, link_analyzers) {
                        self.value(
                            child,
                            format!("{path}.{name}"),
                            child_spec,
                            link_analyzers,
                            depth + 1,
                        );
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let item_path = if spec.track_list_positions {
                        format!("{path}[{i}]")
                    } else {
                        path.clone()
                    };
                    self.value(item, item_path, spec, link_analyzers, depth + 1);
                }
            }
            Value::String(s) => {
                let analyzers = if spec.analyzers.is_empty() {
                    link_analyzers
                } else {
                    spec.analyzers
                };
                self.marker(&path, encode::type_term(&path, "string"));
                for analyzer in analyzers {
                    self.string_value(&path, analyzer, s);
                }
            }
            Value::Number(n) => {
                let v = n.as_f64().unwrap_or(0.0);
                self.marker(&path, encode::type_term(&path, "number"));
                self.scalar(&path, encode::number_term(&path, v));
            }
            Value::Bool(b) => {
                self.marker(&path, encode::type_term(&path, "bool"));
                self.scalar(&path, encode::bool_term(&path, *b));
            }
            Value::Null => {
                self.marker(&path, encode::type_term(&path, "null"));
                self.scalar(&path, encode::null_term(&path));
            }
        }
        if !matches!(value, Value::Object(_) | Value::Array(_)) {
            self.marker(&path, encode::exists_term(&path));
        }
    }

    /// The tokens of string `s` at `path` under `analyzer`, with the analyzer's marker and
    /// field length (nothing for an unknown analyzer, nor for a geo analyzer, which reads
    /// geometries, not text).
    fn string_value(&mut self, path: &str, analyzer: &str, s: &str) {
        match self.analyzers.return_type(analyzer) {
            ReturnType::String => {}
            typed => return self.typed_value(path, analyzer, s, typed),
        }
        let before = self.terms.len();
        self.marker(path, encode::analyzer_term(path, analyzer));
        let with_marker = self.terms.len();
        let base = self.next_position(path, analyzer).map_or(0, |next| *next);
        let prefix = encode::string_prefix(path, analyzer);
        let mut span = 0u32;
        let (terms, element) = (&mut self.terms, self.element);
        let known = self
            .analyzers
            .visit_tokens(analyzer, s, &mut |token: &str, position: u32| {
                span = span.max(position.saturating_add(1));
                let mut term = String::with_capacity(prefix.len() + token.len());
                term.push_str(&prefix);
                term.push_str(token);
                terms.push(TermAt {
                    term,
                    position: place(element, base.saturating_add(position)),
                });
            });
        let tokens = self.terms.len() - with_marker;
        if !known || (tokens == 0 && self.analyzers.geo(analyzer).is_some()) {
            self.terms.truncate(before);
            return;
        }
        self.advance_positions(path, analyzer, base, span);
        self.count_tokens(path, analyzer, tokens);
    }

    /// The tokens of string `s` at `path` under an analyzer that makes numbers or booleans:
    /// indexed as the values they are, where the document's own numbers and booleans of
    /// `path` go (ArangoDB's typed analyzer output is found by `doc.path == 5` without
    /// `ANALYZER()`), with their type markers; no analyzer marker, positions or field length,
    /// which only strings have.
    fn typed_value(&mut self, path: &str, analyzer: &str, s: &str, typed: ReturnType) {
        let mut values = Vec::new();
        self.analyzers
            .visit_tokens(analyzer, s, &mut |token: &str, _position: u32| {
                values.push(match typed {
                    ReturnType::Number => ReturnType::number_of(token)
                        .map(|v| ("number", encode::number_term(path, v))),
                    ReturnType::Bool => {
                        ReturnType::bool_of(token).map(|b| ("bool", encode::bool_term(path, b)))
                    }
                    ReturnType::String => None,
                });
            });
        let mut marked = false;
        for (kind, term) in values.into_iter().flatten() {
            if !marked {
                self.marker(path, encode::type_term(path, kind));
                marked = true;
            }
            self.scalar(path, term);
        }
    }

    /// The cell terms and the stored shape of a geometry a geo analyzer reads at `path`.
    fn geo_value(&mut self, value: &Value, path: &str, analyzer: &str, geo: &GeoAnalyzer) {
        let Some(shape) = geo.shape(value) else {
            return;
        };
        self.marker(path, encode::analyzer_term(path, analyzer));
        for term in geo_index_terms(path, analyzer, geo, &shape) {
            self.marker(path, term);
        }
        // A point is stored as `[lng, lat]`; other shapes as given.
        let stored = if shape.kind == quiver_geo::ShapeKind::Point {
            let (lat, lng) = shape.coords[0][0];
            json!([lng, lat]).to_string()
        } else {
            value.to_string()
        };
        self.marker(
            path,
            encode::geo_stored(path, analyzer, geo.legacy(), &stored),
        );
    }

    /// Adds `tokens` to the field length of (path, analyzer) in this document.
    fn count_tokens(&mut self, path: &str, analyzer: &str, tokens: usize) {
        let tokens = u32::try_from(tokens).unwrap_or(u32::MAX);
        match self
            .lengths
            .iter_mut()
            .find(|(p, a, _)| p == path && a == analyzer)
        {
            Some((_, _, n)) => *n = n.saturating_add(tokens),
            None => self
                .lengths
                .push((path.to_string(), analyzer.to_string(), tokens)),
        }
    }

    /// The first position the next value of (path, analyzer) gets, once it has one.
    fn next_position(&mut self, path: &str, analyzer: &str) -> Option<&mut u32> {
        self.key.clear();
        self.key.push_str(path);
        self.key.push(encode::SEP);
        self.key.push_str(analyzer);
        self.next_position.get_mut(self.key.as_str())
    }

    /// Records that the value of (path, analyzer) at `base` spans `span` positions.
    fn advance_positions(&mut self, path: &str, analyzer: &str, base: u32, span: u32) {
        let next = base.saturating_add(span).saturating_add(VALUE_POSITION_GAP);
        match self.next_position(path, analyzer) {
            Some(known) => *known = next,
            None => {
                self.next_position.insert(self.key.clone(), next);
            }
        }
    }

    /// The base position of a new value of (path, analyzer) holding `tokens`.
    fn take_positions(&mut self, path: &str, analyzer: &str, tokens: &[(String, u32)]) -> u32 {
        let span = tokens.iter().map(|t| t.1).max().map_or(0, |m| m + 1);
        let base = self.next_position(path, analyzer).map_or(0, |next| *next);
        self.advance_positions(path, analyzer, base, span);
        base
    }

    fn scalar(&mut self, path: &str, term: String) {
        let position = self.take_positions(path, "", &[(String::new(), 0)]);
        let position = self.place(position);
        self.terms.push(TermAt { term, position });
    }

    fn marker(&mut self, _path: &str, term: String) {
        let position = self.place(0);
        self.terms.push(TermAt { term, position });
    }
}

/// Where a term at `position` of a value goes: inside the element starting at `element`,
/// into the element's range (positions past it are kept at its end).
fn place(element: Option<u32>, position: u32) -> u32 {
    match element {
        Some(base) => base + position.min(encode::ELEMENT_STRIDE - 1),
        None => position,
    }
}

/// The cell terms a shape is indexed under by a geo analyzer: each cell of its covering, and
/// the "holds part of a shape" term of those cells and of every cell holding them (see
/// `encode.rs`). Sorted, without repetitions.
pub(crate) fn geo_index_terms(
    path: &str,
    analyzer: &str,
    geo: &GeoAnalyzer,
    shape: &quiver_geo::Shape,
) -> Vec<String> {
    geo_cell_tokens(geo, shape)
        .iter()
        .map(|token| encode::geo_term(path, analyzer, token))
        .collect()
}

/// The cell tokens a geo analyzer indexes a shape under, without the field and analyzer the
/// index prefixes them with: `c<cell>` for each cell of its covering, `a<cell>` for those
/// cells and every cell holding them down to `minLevel`, or `w` alone for a shape spanning
/// too many cells (`Cell::key` writes `<cell>` as `level/row/column` in hexadecimal). Sorted,
/// without repetitions. These are what `TOKENS()` reports for a geo value.
pub fn geo_cell_tokens(geo: &GeoAnalyzer, shape: &quiver_geo::Shape) -> Vec<String> {
    let mut out = Vec::new();
    match geo.cover.cover_shape(shape) {
        Covering::World => out.push(encode::GEO_WORLD_TOKEN.to_string()),
        Covering::Cells(cells) => {
            for cell in cells {
                out.push(encode::geo_cell_token(&cell, true));
                for holder in geo.cover.ancestors(cell) {
                    out.push(encode::geo_cell_token(&holder, false));
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// What `TOKENS()` reports for one token of an analyzer that makes numbers or booleans: the
/// value part of the term the index files it under (a number's 16 hexadecimal digits, `1` or
/// `0` for a boolean; ArangoDB reports its own index's encodings, base64), or None for a
/// token that spells no value of the type (the index leaves such a token out).
pub fn typed_token_terms(typed: ReturnType, token: &str) -> Option<String> {
    match typed {
        ReturnType::Number => {
            ReturnType::number_of(token).map(|v| format!("{:016x}", encode::sortable_bits(v)))
        }
        ReturnType::Bool => {
            ReturnType::bool_of(token).map(|b| if b { "1" } else { "0" }.to_string())
        }
        ReturnType::String => Some(token.to_string()),
    }
}

/// The identity analyzer: the whole string is one token. Always available, also as the
/// fallback a test uses.
#[derive(Clone, Copy, Debug, Default)]
pub struct IdentityOnly;

impl AnalyzerSource for IdentityOnly {
    fn tokens(&self, analyzer: &str, input: &str) -> Option<Vec<(String, u32)>> {
        (analyzer == "identity").then(|| vec![(input.to_string(), 0)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn terms(doc: Value, link: Value) -> Vec<String> {
        let link = LinkDefinition::from_json(&link).unwrap();
        document_terms(&doc, &link, &IdentityOnly)
            .into_iter()
            .map(|t| t.term.replace(encode::SEP, "|"))
            .collect()
    }

    #[test]
    fn listed_fields_only_unless_include_all() {
        let t = terms(
            json!({"_key": "k", "_rev": "r", "a": "x", "b": "y"}),
            json!({"fields": {"a": {}}}),
        );
        assert!(t.contains(&"s|a|identity|x".to_string()));
        assert!(!t.iter().any(|t| t.contains("|b|")));
        let t = terms(
            json!({"a": {"b": [1, true, null]}}),
            json!({"includeAllFields": true}),
        );
        assert!(t.contains(&"b|a.b|1".to_string()), "{t:?}");
        assert!(t.contains(&"z|a.b".to_string()));
        assert!(t.contains(&"e|a.b".to_string()));
    }

    /// `num` spells each word as a number token (typed), `yes` says whether the input is
    /// "y" (typed bool), `identity` as usual.
    struct Typed;

    impl AnalyzerSource for Typed {
        fn tokens(&self, analyzer: &str, input: &str) -> Option<Vec<(String, u32)>> {
            match analyzer {
                "num" => Some(
                    input
                        .split(' ')
                        .zip(0..)
                        .map(|(w, i)| (w.to_string(), i))
                        .collect(),
                ),
                "yes" => Some(vec![((input == "y").to_string(), 0)]),
                "identity" => Some(vec![(input.to_string(), 0)]),
                _ => None,
            }
        }

        fn return_type(&self, analyzer: &str) -> ReturnType {
            match analyzer {
                "num" => ReturnType::Number,
                "yes" => ReturnType::Bool,
                _ => ReturnType::String,
            }
        }
    }

    #[test]
    fn typed_analyzer_tokens_are_indexed_as_numbers_and_booleans() {
        let link = LinkDefinition::from_json(&json!({"fields": {
            "a": {"analyzers": ["num", "identity"]}, "b": {"analyzers": ["yes"]}}}))
        .unwrap();
        let all: Vec<String> = document_terms(&json!({"a": "5 x 2.5", "b": "y"}), &link, &Typed)
            .into_iter()
            .map(|t| t.term)
            .collect();
        let has = |term: String| all.contains(&term);
        // The numbers the tokens spell, where a document's own numbers of the path go; a
        // token that spells no number is left out.
        assert!(has(encode::number_term("a", 5.0)), "{all:?}");
        assert!(has(encode::number_term("a", 2.5)));
        assert_eq!(all.iter().filter(|t| t.starts_with("n\u{1f}a")).count(), 2);
        assert!(has(encode::type_term("a", "number")));
        assert!(has(encode::bool_term("b", true)));
        assert!(has(encode::type_term("b", "bool")));
        // The string analyzer of the same path indexes the text as before; the typed one
        // leaves no string terms, analyzer marker or field length.
        assert!(has(encode::string_term("a", "identity", "5 x 2.5")));
        let names = |t: &String, analyzer: &str| t.split('\u{1f}').nth(2) == Some(analyzer);
        assert!(!all.iter().any(|t| names(t, "num")), "{all:?}");
        assert!(!all.iter().any(|t| names(t, "yes")), "{all:?}");
    }

    #[test]
    fn one_length_term_per_field_holds_its_token_count() {
        let t = terms(
            json!({"a": ["x", "y", "z"], "b": "w", "c": []}),
            json!({"includeAllFields": true}),
        );
        let lengths: Vec<&String> = t.iter().filter(|t| t.starts_with("l|")).collect();
        assert_eq!(lengths, ["l|a|identity|3", "l|b|identity|1"]);
    }

    #[test]
    fn list_positions_only_when_tracked() {
        let t = terms(json!({"a": ["x", "y"]}), json!({"fields": {"a": {}}}));
        assert!(t.contains(&"s|a|identity|y".to_string()));
        let t = terms(
            json!({"a": ["x", "y"]}),
            json!({"fields": {"a": {"trackListPositions": true}}}),
        );
        assert!(t.contains(&"s|a[1]|identity|y".to_string()), "{t:?}");
    }

    #[test]
    fn nested_elements_own_position_ranges() {
        let link = LinkDefinition::from_json(&json!({"fields": {"d": {"nested": {
            "t": {}, "m": {"nested": {"v": {}}}}}}}))
        .unwrap();
        let doc = json!({"d": [{"t": "a", "m": [{"v": 1}, {"v": 2}]}, 7, {"t": "b"}]});
        let all = document_terms(&doc, &link, &IdentityOnly);
        let at = |term: &str| -> Vec<u32> {
            all.iter()
                .filter(|t| t.term == term)
                .map(|t| t.position / encode::ELEMENT_STRIDE)
                .collect()
        };
        // Elements in depth-first order: d[0] = 0, its m elements 1 and 2, d[1] = 3, d[2] = 4.
        assert_eq!(at(&encode::element_term("d[?]")), [0, 3, 4]);
        assert_eq!(at(&encode::element_term("d[?].m[?]")), [1, 2]);
        assert_eq!(at(&encode::string_term("d[?].t", "identity", "b")), [4]);
        assert_eq!(at(&encode::number_term("d[?].m[?].v", 2.0)), [2]);
        // Not indexed as plain sub-attributes.
        assert!(!all.iter().any(|t| t.term.contains("d.t")));
    }

    #[test]
    fn array_values_get_separate_position_ranges() {
        let link = LinkDefinition::from_json(&json!({"fields": {"a": {}}})).unwrap();
        let all = document_terms(&json!({"a": ["x", "y"]}), &link, &IdentityOnly);
        let pos = |term: &str| {
            all.iter()
                .find(|t| t.term == encode::string_term("a", "identity", term))
                .unwrap()
                .position
        };
        assert!(pos("y") >= pos("x") + VALUE_POSITION_GAP);
    }
}
