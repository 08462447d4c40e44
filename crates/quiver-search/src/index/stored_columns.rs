//! The attribute values an index keeps per document besides its terms: the `primarySort`
//! fields (in their declared order and directions) and the `storedValues` fields, read from
//! each indexed document and written into two byte columns of tantivy's columnar store (fast
//! fields), so that a search can order its matches by the primary sort and answer reads of
//! those attributes without the documents. Each column holds, per document, the JSON array of
//! the values at its paths (`null` where the document has none).

use std::cmp::Ordering;

use quiver_types::order::compare;
use serde_json::Value;

/// The columns of one index: the primary sort and the stored values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StoredColumns {
    /// `primarySort`: attribute path (dotted) and whether ascending.
    pub sort: Vec<(String, bool)>,
    /// `storedValues`: the attribute paths of every column, in definition order.
    pub stored: Vec<Vec<String>>,
}

impl StoredColumns {
    /// Reads ArangoDB's definitions: `primarySort` as a view's array of `{field, asc}` or
    /// `{field, direction}`, or an inverted index's `{fields: [...]}`; `storedValues` as an
    /// array whose columns are objects with `fields`, arrays of paths or single paths.
    /// Entries that are not of these forms are skipped (the definitions were validated when
    /// created).
    pub fn from_definitions(primary_sort: &Value, stored_values: &Value) -> StoredColumns {
        let sort_list = match primary_sort {
            Value::Array(list) => list.as_slice(),
            Value::Object(obj) => obj
                .get("fields")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice),
            _ => &[],
        };
        let sort = sort_list
            .iter()
            .filter_map(|item| {
                let field = item.get("field")?.as_str()?.to_string();
                let asc = match (item.get("asc"), item.get("direction")) {
                    (Some(Value::Bool(b)), _) => *b,
                    (_, Some(Value::String(d))) => !d.eq_ignore_ascii_case("desc"),
                    _ => true,
                };
                Some((field, asc))
            })
            .collect();
        let stored = stored_values
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|column| {
                let fields = match column {
                    Value::Object(obj) => obj.get("fields")?,
                    other => other,
                };
                let paths: Vec<String> = match fields {
                    Value::String(s) => vec![s.clone()],
                    Value::Array(list) => list
                        .iter()
                        .filter_map(|f| f.as_str().map(str::to_string))
                        .collect(),
                    _ => return None,
                };
                (!paths.is_empty()).then_some(paths)
            })
            .collect();
        StoredColumns { sort, stored }
    }

    /// Whether the index keeps no values at all.
    pub fn is_empty(&self) -> bool {
        self.sort.is_empty() && self.stored.is_empty()
    }

    /// Every path whose value a hit can carry, in the order of [`Hit::values`]: the primary
    /// sort fields, then each stored column's fields.
    ///
    /// [`Hit::values`]: super::Hit::values
    pub fn value_paths(&self) -> Vec<&str> {
        self.sort
            .iter()
            .map(|(p, _)| p.as_str())
            .chain(self.stored.iter().flatten().map(String::as_str))
            .collect()
    }

    /// The primary sort column of `doc` (JSON array), None without a primary sort.
    pub(super) fn sort_column(&self, doc: &Value) -> Option<Vec<u8>> {
        (!self.sort.is_empty()).then(|| {
            let values: Vec<Value> = self.sort.iter().map(|(p, _)| value_at(doc, p)).collect();
            serde_json::to_vec(&values).unwrap_or_default()
        })
    }

    /// The stored values column of `doc` (JSON array of every stored path's value), None
    /// without stored values.
    pub(super) fn stored_column(&self, doc: &Value) -> Option<Vec<u8>> {
        (!self.stored.is_empty()).then(|| {
            let values: Vec<Value> = self
                .stored
                .iter()
                .flatten()
                .map(|p| value_at(doc, p))
                .collect();
            serde_json::to_vec(&values).unwrap_or_default()
        })
    }

    /// AQL's order of two primary sort columns over their first `buckets` fields, each in its
    /// declared direction (a missing value is `null`).
    pub fn compare_sort(&self, a: &[Value], b: &[Value], buckets: usize) -> Ordering {
        for (i, (_, asc)) in self.sort.iter().enumerate().take(buckets) {
            let x = a.get(i).unwrap_or(&Value::Null);
            let y = b.get(i).unwrap_or(&Value::Null);
            let c = compare(x, y);
            if c != Ordering::Equal {
                return if *asc { c } else { c.reverse() };
            }
        }
        Ordering::Equal
    }
}

/// The value at a dotted attribute path of `doc`, descending through objects only (`null`
/// when missing, as AQL's attribute access gives).
pub fn value_at(doc: &Value, path: &str) -> Value {
    let mut at = doc;
    for name in path.split('.') {
        match at {
            Value::Object(obj) => match obj.get(name) {
                Some(v) => at = v,
                None => return Value::Null,
            },
            _ => return Value::Null,
        }
    }
    at.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn definitions_of_views_and_inverted_indexes_read_alike() {
        let view = StoredColumns::from_definitions(
            &json!([{"field": "a.b", "asc": false}, {"field": "c", "direction": "asc"}]),
            &json!([{"fields": ["x", "y"], "compression": "lz4"}, ["z"]]),
        );
        let inverted = StoredColumns::from_definitions(
            &json!({"fields": [{"field": "a.b", "direction": "desc"}, {"field": "c", "direction": "asc"}]}),
            &json!([{"fields": ["x", "y"]}, {"fields": ["z"]}]),
        );
        assert_eq!(view, inverted);
        assert_eq!(view.value_paths(), vec!["a.b", "c", "x", "y", "z"]);
        let doc = json!({"a": {"b": [1, 2]}, "x": "t"});
        assert_eq!(view.sort_column(&doc).unwrap(), br#"[[1,2],null]"#.to_vec());
        assert_eq!(
            view.stored_column(&doc).unwrap(),
            br#"["t",null,null]"#.to_vec()
        );
        assert_eq!(value_at(&json!({"a": [{"b": 1}]}), "a.b"), Value::Null);
    }

    #[test]
    fn sort_columns_compare_in_aql_order_with_directions() {
        let cols = StoredColumns::from_definitions(
            &json!([{"field": "a", "asc": true}, {"field": "b", "asc": false}]),
            &json!([]),
        );
        let rows = [
            json!([null, 1]),
            json!([false, 1]),
            json!([2, 1]),
            json!([10, 5]),
            json!([10, 1]),
            json!(["B", 1]),
            json!([[1], 1]),
            json!([{"x": 1}, 1]),
        ];
        for (i, a) in rows.iter().enumerate() {
            for (j, b) in rows.iter().enumerate() {
                let got = cols.compare_sort(a.as_array().unwrap(), b.as_array().unwrap(), 2);
                assert_eq!(got, i.cmp(&j), "{a} vs {b}");
            }
        }
        // One bucket: the second field does not count.
        assert_eq!(
            cols.compare_sort(&[json!(10), json!(5)], &[json!(10), json!(1)], 1),
            Ordering::Equal
        );
    }
}
