//! The description of an `IndexNode` over a secondary index, as the index-selection rules
//! (`index_select`, `geo_select`) build it and the index operators (`exec/index.rs`,
//! `exec/geo.rs`) run it, plus the `indexHint` options of a `FOR` that restrict the choice.

use serde_json::Value;

use super::geo_search::GeoSearch;
use super::inverted_search::InvertedSearch;
use super::mdi_search::MdiSearch;
use crate::expr::{CExpr, Slot};
use crate::source::IndexMeta;

/// `OPTIONS { indexHint, forceIndexHint, waitForSync }` of one `FOR` over a collection
/// (`waitForSync` only matters to an inverted index, which is used only when hinted).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexHint {
    pub names: Vec<String>,
    pub force: bool,
    pub wait_for_sync: bool,
}

impl IndexHint {
    /// Reads the hint from a constant `OPTIONS` object (None without `indexHint`).
    pub fn from_options(options: &Value) -> Option<IndexHint> {
        let names = match options.get("indexHint")? {
            Value::String(s) => vec![s.clone()],
            Value::Array(items) => items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => return None,
        };
        Some(IndexHint {
            names,
            force: options
                .get("forceIndexHint")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            wait_for_sync: options
                .get("waitForSync")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }
}

/// Equality on one leading index field: one value, or each element of an `IN` list.
#[derive(Clone, Debug)]
pub enum EqCond {
    Eq(CExpr),
    In(CExpr),
}

/// A lookup through a persistent index.
#[derive(Clone, Debug)]
pub struct IndexScan {
    pub out: Slot,
    pub collection: String,
    pub index: IndexMeta,
    /// Conditions on the first `eq.len()` fields.
    pub eq: Vec<EqCond>,
    /// Bounds (value, inclusive) on the field after them.
    pub lower: Option<(CExpr, bool)>,
    pub upper: Option<(CExpr, bool)>,
    /// Walk the index backwards (a descending SORT it replaced).
    pub reverse: bool,
    /// Whether a SORT was replaced by the index order.
    pub sorted: bool,
    /// The filter conjuncts the index serves (explain's `condition`).
    pub condition: Vec<CExpr>,
    /// Estimated documents per input row.
    pub estimated_items: f64,
    /// Set by `reduce-extraction-to-projection` when the query reads only these top-level
    /// attributes of the documents and the index covers them (`_key`, `_id`, indexed fields,
    /// `storedValues`): the documents are built from the index without being read.
    pub projections: Option<Vec<String>>,
    /// Set when the index is a geo index (rule `geo-index-optimizer`); the persistent-index
    /// fields above are then unused.
    pub geo: Option<Box<GeoSearch>>,
    /// Set when the index is an mdi index (`mdi_select`); the persistent-index fields above
    /// are then unused.
    pub mdi: Option<Box<MdiSearch>>,
    /// Set when the index is an inverted index (`inverted_select`); the persistent-index
    /// fields above are then unused.
    pub inverted: Option<Box<InvertedSearch>>,
}
