//! How ArangoSearch's values become terms of the view's one tantivy text field.
//!
//! Every term carries its kind, the attribute path and (for analyzed strings) the analyzer, so
//! terms of different paths, analyzers and value types never meet: `s␟path␟analyzer␟token`,
//! `n␟path␟<16 hex digits>` (numbers, order-preserving), `b␟path␟0|1`, `z␟path` (null), and the
//! markers `e␟path` (any value), `t␟path␟type`, `a␟path␟analyzer` and
//! `l␟path␟analyzer␟<tokens>` (once per document: the field length BM25 and TFIDF normalise
//! by, the number of tokens of the field in decimal). `␟` is U+001F.
//!
//! The objects of a `nested` field's array are elements of their own: their attributes are
//! indexed under `field[?].attribute` at positions that say which element holds them
//! ([`ELEMENT_STRIDE`]), and each element leaves one `o␟field[?]` at its first position.
//!
//! Geo analyzers index cells (`quiver_geo::cells`): `g␟path␟analyzer␟c<cell>` for each cell
//! of a shape's covering, `g␟path␟analyzer␟a<cell>` for those cells and every cell holding
//! them (down to the analyzer's minimum level), `g␟path␟analyzer␟w` for a shape too large to
//! list. The shape itself is kept for the exact check as a *stored* value,
//! `G␟path␟analyzer␟0|1␟<GeoJSON>` (1: legacy polygons), which the index stores with the
//! document instead of indexing it (`view_index.rs`).

use quiver_geo::cells::Cell;

/// Separates the parts of a term.
pub(crate) const SEP: char = '\u{1f}';

/// `kind` followed by each part after a separator: the terms are built once per value
/// indexed, so without `format!`'s machinery.
fn joined(kind: char, parts: &[&str]) -> String {
    let mut term = String::with_capacity(1 + parts.iter().map(|p| p.len() + 1).sum::<usize>());
    term.push(kind);
    for part in parts {
        term.push(SEP);
        term.push_str(part);
    }
    term
}

/// A token of a string analyzed by `analyzer` at `path`.
pub(crate) fn string_term(path: &str, analyzer: &str, token: &str) -> String {
    let mut term = string_prefix(path, analyzer);
    term.push_str(token);
    term
}

/// What every string term of `path` under `analyzer` starts with.
pub(crate) fn string_prefix(path: &str, analyzer: &str) -> String {
    joined('s', &[path, analyzer, ""])
}

/// A number at `path`; integers and doubles of equal value are one term.
pub(crate) fn number_term(path: &str, value: f64) -> String {
    format!("{}{:016x}", number_prefix(path), sortable_bits(value))
}

/// What every number term of `path` starts with.
pub(crate) fn number_prefix(path: &str) -> String {
    joined('n', &[path, ""])
}

/// A boolean at `path`.
pub(crate) fn bool_term(path: &str, value: bool) -> String {
    joined('b', &[path, if value { "1" } else { "0" }])
}

/// `null` at `path`.
pub(crate) fn null_term(path: &str) -> String {
    joined('z', &[path])
}

/// Marks that `path` holds some indexed value.
pub(crate) fn exists_term(path: &str) -> String {
    joined('e', &[path])
}

/// Marks that `path` holds a value of type `kind` (`string`, `number`, `bool`, `null`).
pub(crate) fn type_term(path: &str, kind: &str) -> String {
    joined('t', &[path, kind])
}

/// Marks that `path` holds a string indexed by `analyzer`.
pub(crate) fn analyzer_term(path: &str, analyzer: &str) -> String {
    joined('a', &[path, analyzer])
}

/// The field length of `path` under `analyzer` in one document: `tokens` tokens.
pub(crate) fn length_term(path: &str, analyzer: &str, tokens: u32) -> String {
    let mut term = length_prefix(path, analyzer);
    term.push_str(itoa::Buffer::new().format(tokens));
    term
}

/// What every field-length term of `path` under `analyzer` starts with.
pub(crate) fn length_prefix(path: &str, analyzer: &str) -> String {
    joined('l', &[path, analyzer, ""])
}

/// The token count a term starting with [`length_prefix`] records (None for other text).
pub(crate) fn length_of(term: &str, prefix: &str) -> Option<u32> {
    term.strip_prefix(prefix)?.parse().ok()
}

/// What a nested field's path is followed by in the paths of its elements' attributes
/// (`dims[?].type`).
pub(crate) const ELEMENT_MARK: &str = "[?]";

/// Positions each element of a nested field owns in its document: element `n` holds the
/// positions `n · ELEMENT_STRIDE ..< (n + 1) · ELEMENT_STRIDE`.
pub(crate) const ELEMENT_STRIDE: u32 = 1 << 16;

/// Elements of nested fields (at every level together) one document may have; later ones are
/// not indexed.
pub(crate) const MAX_ELEMENTS: u32 = u32::MAX / ELEMENT_STRIDE;

/// One element of the nested field whose element path is `path` (`dims[?]`).
pub(crate) fn element_term(path: &str) -> String {
    joined('o', &[path])
}

/// A geo cell term of `path` under `analyzer`: `covering` for a cell of a shape's covering,
/// otherwise the "holds part of a shape" term of a cell.
pub(crate) fn geo_cell_term(path: &str, analyzer: &str, cell: &Cell, covering: bool) -> String {
    geo_term(path, analyzer, &geo_cell_token(cell, covering))
}

/// The geo term of a shape covering the whole sphere.
pub(crate) fn geo_world_term(path: &str, analyzer: &str) -> String {
    geo_term(path, analyzer, GEO_WORLD_TOKEN)
}

/// The geo term of `path` under `analyzer` for a cell token ([`geo_cell_token`],
/// [`GEO_WORLD_TOKEN`]).
pub(crate) fn geo_term(path: &str, analyzer: &str, token: &str) -> String {
    format!("g{SEP}{path}{SEP}{analyzer}{SEP}{token}")
}

/// The part of a geo term naming a cell: `c<cell>` for a cell of a shape's covering,
/// `a<cell>` for the "holds part of a shape" term (`Cell::key` gives `<cell>`).
pub(crate) fn geo_cell_token(cell: &Cell, covering: bool) -> String {
    let kind = if covering { 'c' } else { 'a' };
    format!("{kind}{}", cell.key())
}

/// The part of the geo term of a shape covering the whole sphere.
pub(crate) const GEO_WORLD_TOKEN: &str = "w";

/// What every stored geo value starts with.
pub(crate) const GEO_STORED_KIND: &str = "G\u{1f}";

/// The stored (not indexed) geo value of `path` under `analyzer`.
pub(crate) fn geo_stored(path: &str, analyzer: &str, legacy: bool, geojson: &str) -> String {
    format!(
        "G{SEP}{path}{SEP}{analyzer}{SEP}{}{SEP}{geojson}",
        u8::from(legacy)
    )
}

/// The prefix of the stored geo values of `path` under `analyzer`.
pub(crate) fn geo_stored_prefix(path: &str, analyzer: &str) -> String {
    format!("G{SEP}{path}{SEP}{analyzer}{SEP}")
}

/// The bits of `value` reordered so that unsigned order is numeric order (`-0.0` is `0.0`).
pub(crate) fn sortable_bits(value: f64) -> u64 {
    let value = if value == 0.0 { 0.0 } else { value };
    let bits = value.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_terms_sort_as_numbers() {
        let values = [-1e300, -2.5, -1.0, -0.0, 0.0, 1e-9, 1.0, 2.0, 10.0, 1e300];
        let terms: Vec<String> = values.iter().map(|v| number_term("x", *v)).collect();
        for pair in terms.windows(2) {
            assert!(pair[0] <= pair[1], "{pair:?}");
        }
        assert_eq!(number_term("x", -0.0), number_term("x", 0.0));
        assert_eq!(number_term("x", 1.0), number_term("x", 1.0_f64.round()));
    }

    #[test]
    fn kinds_and_paths_stay_apart() {
        assert_ne!(string_term("a", "identity", "1"), number_term("a", 1.0));
        assert_ne!(
            string_term("a", "identity", "x"),
            string_term("a", "text_en", "x")
        );
        assert!(string_term("a", "identity", "x").starts_with(&string_prefix("a", "identity")));
        assert!(!string_term("ab", "identity", "x").starts_with(&string_prefix("a", "identity")));
    }

    #[test]
    fn terms_spell_kind_path_and_parts() {
        let spelled = |t: String| t.replace(SEP, "|");
        assert_eq!(
            spelled(string_term("a.b", "text_en", "fox")),
            "s|a.b|text_en|fox"
        );
        assert_eq!(
            spelled(length_term("a", "identity", 120)),
            "l|a|identity|120"
        );
        assert_eq!(spelled(bool_term("a", true)), "b|a|1");
        assert_eq!(spelled(bool_term("a", false)), "b|a|0");
        assert_eq!(spelled(null_term("a")), "z|a");
        assert_eq!(spelled(exists_term("a")), "e|a");
        assert_eq!(spelled(type_term("a", "string")), "t|a|string");
        assert_eq!(spelled(analyzer_term("a", "identity")), "a|a|identity");
        assert_eq!(spelled(element_term("d[?]")), "o|d[?]");
        assert_eq!(spelled(number_prefix("a")), "n|a|");
        assert_eq!(
            length_of(&length_term("a", "x", 7), &length_prefix("a", "x")),
            Some(7)
        );
    }
}
