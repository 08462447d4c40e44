//! `search-alias` views: a named list of inverted indexes (`indexes/inverted.rs`) of one or
//! more collections, searched together by `FOR … IN view SEARCH …`. The view owns no index of
//! its own; it refers to the indexes, and an index dropped (alone or with its collection) leaves
//! the view. The rules a list must follow are ArangoDB's: every entry an inverted index, one
//! `primarySort` and `storedValues` for all, two indexes of one collection never index the
//! same field, and a field indexed in two collections has one analyzer and one `searchField`.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use parking_lot::RwLock;
use quiver_errors::{Error, ErrorCode, Result};
use quiver_search::index::{Hit, ScoreOrder, Scorer, SearchQuery, SortedRead, StoredColumns};
use quiver_storage::CollectionId;
use serde_json::{json, Value};

use crate::indexes::inverted::{FieldSummary, InvertedIndex};
use crate::view_host::ViewHost;

/// The type name of these views.
pub const SEARCH_ALIAS: &str = "search-alias";

fn bad(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::BadParameter, message)
}

/// The inverted indexes of one `search-alias` view, in the order they were added.
#[derive(Debug, Default)]
pub(crate) struct AliasIndexes {
    list: RwLock<Vec<Arc<InvertedIndex>>>,
}

impl AliasIndexes {
    pub fn new(list: Vec<Arc<InvertedIndex>>) -> AliasIndexes {
        AliasIndexes {
            list: RwLock::new(list),
        }
    }

    /// The indexes that still exist.
    pub fn live(&self) -> Vec<Arc<InvertedIndex>> {
        self.list
            .read()
            .iter()
            .filter(|ix| !ix.is_dropped())
            .cloned()
            .collect()
    }

    pub fn replace(&self, list: Vec<Arc<InvertedIndex>>) {
        *self.list.write() = list;
    }

    /// The collections the indexes belong to (each once).
    pub fn collections(&self) -> Vec<CollectionId> {
        let mut out = Vec::new();
        for ix in self.live() {
            if !out.contains(&ix.collection) {
                out.push(ix.collection);
            }
        }
        out
    }

    /// Every analyzer an index of the view uses.
    pub fn analyzer_names(&self) -> Vec<String> {
        let mut out = Vec::new();
        for ix in self.live() {
            for name in ix.analyzer_names() {
                if !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        out
    }

    /// The stored form: collection and index ids.
    pub fn catalog_json(&self) -> Value {
        Value::Array(
            self.live()
                .iter()
                .map(|ix| json!({"collection": ix.collection, "index": ix.id}))
                .collect(),
        )
    }

    /// `indexes` as `/_api/view/{name}/properties` reports it: collection and index names.
    pub fn properties_json(&self, host: &dyn ViewHost) -> Value {
        Value::Array(
            self.live()
                .iter()
                .filter_map(|ix| {
                    let collection = host.collection_name(ix.collection)?;
                    Some(json!({"collection": collection, "index": ix.name}))
                })
                .collect(),
        )
    }

    /// The documents of the indexed collections (restricted to `collections` when given)
    /// matching `query`, each once, with one score per scorer.
    pub fn search(
        &self,
        query: &SearchQuery,
        collections: Option<&[CollectionId]>,
        scorers: &[Scorer],
        wait_for_sync: bool,
    ) -> Result<Vec<Hit>> {
        let mut out = Vec::new();
        let mut seen: HashSet<(CollectionId, String)> = HashSet::new();
        for ix in self.live() {
            if collections.is_some_and(|ids| !ids.contains(&ix.collection)) {
                continue;
            }
            for hit in ix.search(query, scorers, wait_for_sync)? {
                if seen.insert((hit.collection, hit.key.clone())) {
                    out.push(hit);
                }
            }
        }
        Ok(out)
    }

    /// The first `k` documents [`AliasIndexes::search`] gives once sorted (stably) by `order`
    /// over `scorers`. That full result is the indexes' hits one index after the other, each
    /// document once; when no collection has two of the searched indexes no document repeats,
    /// so its first `k` are among the first `k` of each index, and a stable sort of those
    /// lists in index order gives them in the full result's order. Otherwise (a document may
    /// come from two indexes, and only its first counts) the full result is sorted.
    pub fn search_top(
        &self,
        query: &SearchQuery,
        collections: Option<&[CollectionId]>,
        scorers: &[Scorer],
        order: &ScoreOrder,
        k: usize,
        wait_for_sync: bool,
    ) -> Result<Vec<Hit>> {
        let searched: Vec<Arc<InvertedIndex>> = self
            .live()
            .into_iter()
            .filter(|ix| collections.is_none_or(|ids| ids.contains(&ix.collection)))
            .collect();
        let mut owners = HashSet::new();
        if !searched.iter().all(|ix| owners.insert(ix.collection)) {
            let hits = self.search(query, collections, scorers, wait_for_sync)?;
            return Ok(order.best(hits, k));
        }
        let mut candidates = Vec::new();
        for ix in &searched {
            candidates.extend(ix.search_top(query, scorers, order, k, wait_for_sync)?);
        }
        Ok(order.best(candidates, k))
    }
}

impl AliasIndexes {
    /// The primary sort and stored fields of the indexes (they agree; none without indexes).
    pub fn stored_columns(&self) -> StoredColumns {
        self.live()
            .first()
            .map(|ix| ix.stored_columns())
            .unwrap_or_default()
    }

    /// The documents [`AliasIndexes::search`] gives, ordered by the first `read.buckets`
    /// primary sort fields (stably), cut to `read.limit`, with the primary sort and stored
    /// values when `read.values`. As for [`AliasIndexes::search_top`]: when no collection has
    /// two of the searched indexes, each index's first hits of the order, merged stably in
    /// index order, hold the full result's first hits; otherwise every index's full list is
    /// merged, each document once, and then cut.
    pub fn search_sorted(
        &self,
        query: &SearchQuery,
        collections: Option<&[CollectionId]>,
        scorers: &[Scorer],
        read: &SortedRead,
        wait_for_sync: bool,
    ) -> Result<Vec<Hit>> {
        let searched: Vec<Arc<InvertedIndex>> = self
            .live()
            .into_iter()
            .filter(|ix| collections.is_none_or(|ids| ids.contains(&ix.collection)))
            .collect();
        let columns = self.stored_columns();
        let buckets = read.buckets.min(columns.sort.len());
        let mut owners = HashSet::new();
        let disjoint = searched.iter().all(|ix| owners.insert(ix.collection));
        let each = SortedRead {
            buckets,
            limit: if disjoint { read.limit } else { None },
            // The merge compares the primary sort values.
            values: read.values || buckets > 0,
        };
        let mut out = Vec::new();
        let mut seen: HashSet<(CollectionId, String)> = HashSet::new();
        for ix in &searched {
            for hit in ix.search_sorted(query, scorers, &each, wait_for_sync)? {
                if disjoint || seen.insert((hit.collection, hit.key.clone())) {
                    out.push(hit);
                }
            }
        }
        if buckets > 0 {
            out.sort_by(|a, b| columns.compare_sort(&a.values, &b.values, buckets));
        }
        if let Some(k) = read.limit {
            out.truncate(k);
        }
        if !read.values {
            for hit in &mut out {
                hit.values = Vec::new();
            }
        }
        Ok(out)
    }
}

/// The indexes of a stored view (collection and index ids) that still exist.
pub(crate) fn load(host: &dyn ViewHost, stored: Option<&Value>) -> Vec<Arc<InvertedIndex>> {
    let mut out = Vec::new();
    for entry in stored.and_then(Value::as_array).into_iter().flatten() {
        let cid = entry.get("collection").and_then(Value::as_u64);
        let iid = entry.get("index").and_then(Value::as_u64);
        if let (Some(cid), Some(iid)) = (cid, iid) {
            if let Some(ix) = host.inverted_index_by_id(cid, iid) {
                out.push(ix);
            }
        }
    }
    out
}

/// Applies the `indexes` of a request to `current` (PUT and POST: `current` is empty; PATCH:
/// entries with `operation: "del"` remove, others add) and checks the result. Errors are
/// ArangoDB's, all 400/10.
pub(crate) fn apply(
    host: &dyn ViewHost,
    mut current: Vec<Arc<InvertedIndex>>,
    indexes: Option<&Value>,
) -> Result<Vec<Arc<InvertedIndex>>> {
    let items = match indexes {
        None | Some(Value::Null) => return Ok(current),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(bad(
                "search-alias view optional field 'indexes' should be array",
            ))
        }
    };
    for item in items {
        let Some(collection) = item.get("collection").and_then(Value::as_str) else {
            return Err(bad("'index' should be a string"));
        };
        let Some(cid) = host.collection_id(collection).ok() else {
            return Err(bad("Cannot find collection"));
        };
        let operation = match item.get("operation") {
            None => "",
            Some(Value::String(s)) => s.as_str(),
            Some(_) => return Err(bad("Invalid type of operation")),
        };
        if !matches!(operation, "" | "add" | "del") {
            return Err(bad("Invalid type of operation"));
        }
        if operation == "del" && !current.iter().any(|ix| ix.collection == cid) {
            return Err(bad("Cannot find collection for index to delete"));
        }
        let Some(index) = item.get("index").and_then(Value::as_str) else {
            return Err(bad("'index' should be a string"));
        };
        let Some(found) = host.inverted_index(cid, index) else {
            return Err(bad("Cannot find index"));
        };
        if operation == "del" {
            let Some(at) = current.iter().position(|ix| Arc::ptr_eq(ix, &found)) else {
                return Err(bad("Cannot find index to delete"));
            };
            current.remove(at);
        } else {
            current.push(found);
        }
    }
    check(host, &current)?;
    Ok(current)
}

/// ArangoDB's rules for the indexes of one view.
fn check(host: &dyn ViewHost, list: &[Arc<InvertedIndex>]) -> Result<()> {
    let name_of = |ix: &InvertedIndex| host.collection_name(ix.collection).unwrap_or_default();
    let described = |error: String, ix: &InvertedIndex| {
        bad(format!(
            "{error}. Collection name '{}', index name '{}'.",
            name_of(ix),
            ix.name
        ))
    };
    if let Some(first) = list.first() {
        for ix in &list[1..] {
            if ix.primary_sort != first.primary_sort {
                return Err(described(
                    "index primary sort mismatches view primary sort".into(),
                    ix,
                ));
            }
            if ix.stored_values != first.stored_values {
                return Err(described(
                    "index stored values mismatches view stored values".into(),
                    ix,
                ));
            }
        }
    }
    // Two indexes of one collection: no field in common.
    let mut by_collection: BTreeMap<CollectionId, Vec<&Arc<InvertedIndex>>> = BTreeMap::new();
    for ix in list {
        by_collection.entry(ix.collection).or_default().push(ix);
    }
    for indexes in by_collection.values().filter(|l| l.len() > 1) {
        let mut merged: BTreeMap<String, FieldSummary> = BTreeMap::new();
        for (i, ix) in indexes.iter().enumerate() {
            if i > 0 {
                if let Some(error) = conflict(&merged, &ix.fields, true) {
                    return Err(bad(format!(
                        "You cannot add to view indexes to the same collection, if them index \
                         the same fields. Error for: {error}{}'",
                        name_of(ix)
                    )));
                }
            }
            merge(&mut merged, &ix.fields);
        }
    }
    // Across collections: a field has one analyzer and one searchField.
    let mut merged: BTreeMap<String, FieldSummary> = BTreeMap::new();
    for (i, ix) in list.iter().enumerate() {
        if i > 0 {
            if let Some(error) = conflict(&merged, &ix.fields, false) {
                return Err(described(error, ix));
            }
        }
        merge(&mut merged, &ix.fields);
    }
    Ok(())
}

fn merge(into: &mut BTreeMap<String, FieldSummary>, fields: &[FieldSummary]) {
    for field in fields {
        into.entry(field.path.clone())
            .and_modify(|f| f.include_all_fields |= field.include_all_fields)
            .or_insert_with(|| field.clone());
    }
}

/// The longest key of `fields` that is a prefix of `name` (`""` included).
fn longest_prefix<'a>(
    fields: &'a BTreeMap<String, FieldSummary>,
    name: &str,
) -> Option<&'a FieldSummary> {
    fields
        .iter()
        .filter(|(path, _)| name.starts_with(path.as_str()))
        .max_by_key(|(path, _)| path.len())
        .map(|(_, f)| f)
}

/// The first conflict between the view's fields and an index's, in both directions.
fn conflict(
    view: &BTreeMap<String, FieldSummary>,
    index: &[FieldSummary],
    same_collection: bool,
) -> Option<String> {
    let index_map: BTreeMap<String, FieldSummary> =
        index.iter().map(|f| (f.path.clone(), f.clone())).collect();
    let view_list: Vec<FieldSummary> = view.values().cloned().collect();
    one_way(view, index, same_collection, "Index", "view")
        .or_else(|| one_way(&index_map, &view_list, same_collection, "View", "index"))
}

fn one_way(
    lhs: &BTreeMap<String, FieldSummary>,
    rhs: &[FieldSummary],
    same_collection: bool,
    rhs_is: &str,
    lhs_is: &str,
) -> Option<String> {
    for field in rhs {
        let name = &field.path;
        let Some(found) = longest_prefix(lhs, name) else {
            continue;
        };
        let differs = found.search_field != field.search_field || found.analyzer != field.analyzer;
        if !(same_collection || differs) {
            continue;
        }
        if found.path.len() == name.len() {
            return Some(if same_collection {
                format!("same field '{name}', collection '")
            } else if found.search_field != field.search_field {
                format!(
                    "{rhs_is} field '{name}' searchField '{}' mismatches {lhs_is} field \
                     searchField '{}'",
                    field.search_field, found.search_field
                )
            } else {
                format!(
                    "{rhs_is} field '{name}' analyzer '{}' mismatches {lhs_is} field analyzer \
                     '{}'",
                    field.analyzer, found.analyzer
                )
            });
        }
        if found.include_all_fields {
            return Some(if same_collection {
                format!(
                    "field '{name}' and field '{}' with includeAllFields, collection '",
                    found.path
                )
            } else if found.search_field != field.search_field {
                format!(
                    "{rhs_is} field '{name}' searchField '{}' mismatches {lhs_is} field '{}' \
                     with includeAllFields searchField '{}'",
                    field.search_field, found.path, found.search_field
                )
            } else {
                format!(
                    "{rhs_is} field '{name}' analyzer '{}' mismatches {lhs_is} field '{}' with \
                     includeAllFields analyzer '{}'",
                    field.analyzer, found.path, found.analyzer
                )
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(path: &str, analyzer: &str, include_all: bool) -> FieldSummary {
        FieldSummary {
            path: path.into(),
            analyzer: analyzer.into(),
            include_all_fields: include_all,
            search_field: false,
        }
    }

    fn view(fields: &[FieldSummary]) -> BTreeMap<String, FieldSummary> {
        let mut out = BTreeMap::new();
        merge(&mut out, fields);
        out
    }

    #[test]
    fn one_collection_never_indexes_a_field_twice() {
        let first = view(&[field("a", "identity", false), field("b", "text_en", false)]);
        assert_eq!(
            conflict(&first, &[field("b", "text_en", false)], true).as_deref(),
            Some("same field 'b', collection '")
        );
        assert_eq!(
            conflict(&first, &[field("c", "identity", false)], true),
            None
        );
        // A field below another's includeAllFields is the same field.
        let all = view(&[field("x", "identity", true)]);
        assert_eq!(
            conflict(&all, &[field("x.y", "identity", false)], true).as_deref(),
            Some("field 'x.y' and field 'x' with includeAllFields, collection '")
        );
    }

    #[test]
    fn collections_agree_on_a_field_analyzer() {
        let first = view(&[field("title", "text_en", false)]);
        assert_eq!(
            conflict(&first, &[field("title", "text_en", false)], false),
            None
        );
        assert_eq!(
            conflict(&first, &[field("title", "identity", false)], false).as_deref(),
            Some(
                "Index field 'title' analyzer 'identity' mismatches view field analyzer 'text_en'"
            )
        );
        // The other direction: the index's includeAllFields covers a field of the view.
        let all = [field("", "identity", true)];
        assert_eq!(
            conflict(&first, &all, false).as_deref(),
            Some(
                "View field 'title' analyzer 'text_en' mismatches index field '' with \
                 includeAllFields analyzer 'identity'"
            )
        );
    }
}
