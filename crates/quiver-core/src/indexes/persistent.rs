//! The structure behind persistent indexes (and their aliases `hash` and `skiplist`): an
//! ordered map from the indexed values of a document (one tuple per document, or one per
//! array element for `a[*]` fields) plus the document key to the revisions that hold them.
//!
//! Values are ordered exactly as AQL compares them (`quiver_types::order`), so a range of the
//! map is a range of the query's condition and walking it forwards or backwards yields the
//! order a `SORT` over the indexed attributes would. Like the edge index, entries are tagged
//! with revisions and a reader keeps only those its snapshot holds (see `maintained.rs`).
//!
//! Hand-written rather than taken from a crate: the ordering is AQL's own (collation-ordered
//! strings, type order across kinds), which no ordered-map crate could supply through a byte
//! encoding without re-implementing the collation as sort keys.

use std::any::Any;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;

use quiver_types::order::compare;
use quiver_types::Revision;
use serde_json::{Map, Value};

use crate::indexes::definition::IndexDef;
use crate::indexes::structure::IndexStructure;
use crate::indexes::unique::field_values;

/// Array expansion can make one document contribute many tuples; beyond this many the rest
/// are not indexed (ArangoDB has no limit but also no use for such documents).
const MAX_TUPLES_PER_DOCUMENT: usize = 10_000;

/// One component of an entry key. `Doc` (the document key) only ever sits after the indexed
/// values; `Top` sorts after everything and exists only in search bounds.
#[derive(Clone, Debug)]
pub enum KeyPart {
    Val(Value),
    Doc(Arc<str>),
    Top,
}

impl KeyPart {
    fn rank(&self) -> u8 {
        match self {
            KeyPart::Val(_) => 0,
            KeyPart::Doc(_) => 1,
            KeyPart::Top => 2,
        }
    }
}

impl PartialEq for KeyPart {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for KeyPart {}
impl PartialOrd for KeyPart {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for KeyPart {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (KeyPart::Val(a), KeyPart::Val(b)) => compare(a, b),
            (KeyPart::Doc(a), KeyPart::Doc(b)) => a.as_bytes().cmp(b.as_bytes()),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

/// An entry key: the indexed values, then the document key. Compared part by part; a key
/// that is a prefix of another sorts first, so `[v]` starts the range of every entry whose
/// first value is `v`, and `[v, Top]` ends it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EntryKey(pub Box<[KeyPart]>);

impl EntryKey {
    fn of(values: &[Value], key: Option<&Arc<str>>, top: bool) -> EntryKey {
        let mut parts: Vec<KeyPart> = values.iter().cloned().map(KeyPart::Val).collect();
        if let Some(key) = key {
            parts.push(KeyPart::Doc(Arc::clone(key)));
        }
        if top {
            parts.push(KeyPart::Top);
        }
        EntryKey(parts.into_boxed_slice())
    }

    /// The document key of a stored entry.
    pub fn doc(&self) -> Option<&Arc<str>> {
        match self.0.last() {
            Some(KeyPart::Doc(k)) => Some(k),
            _ => None,
        }
    }
}

/// One contiguous stretch of an index: equality values for the first `eq.len()` fields, then
/// optionally bounds (value, inclusive) on the next field.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexRange {
    pub eq: Vec<Value>,
    pub lower: Option<(Value, bool)>,
    pub upper: Option<(Value, bool)>,
}

impl IndexRange {
    /// The whole index.
    pub fn all() -> IndexRange {
        IndexRange::default()
    }

    /// Equality on the leading fields.
    pub fn equal(values: Vec<Value>) -> IndexRange {
        IndexRange {
            eq: values,
            ..IndexRange::default()
        }
    }

    pub(crate) fn bounds(&self) -> (Bound<EntryKey>, Bound<EntryKey>) {
        let with = |v: &Value, top: bool| {
            let mut values = self.eq.clone();
            values.push(v.clone());
            EntryKey::of(&values, None, top)
        };
        let lower = match &self.lower {
            Some((v, true)) => Bound::Included(with(v, false)),
            Some((v, false)) => Bound::Included(with(v, true)),
            None if self.eq.is_empty() => Bound::Unbounded,
            None => Bound::Included(EntryKey::of(&self.eq, None, false)),
        };
        let upper = match &self.upper {
            Some((v, true)) => Bound::Included(with(v, true)),
            Some((v, false)) => Bound::Excluded(with(v, false)),
            None if self.eq.is_empty() => Bound::Unbounded,
            None => Bound::Included(EntryKey::of(&self.eq, None, true)),
        };
        (lower, upper)
    }

    /// Whether the entry key lies in this range.
    pub(crate) fn contains(&self, key: &EntryKey) -> bool {
        let (lower, upper) = self.bounds();
        let above = match &lower {
            Bound::Included(b) => key >= b,
            Bound::Excluded(b) => key > b,
            Bound::Unbounded => true,
        };
        let below = match &upper {
            Bound::Included(b) => key <= b,
            Bound::Excluded(b) => key < b,
            Bound::Unbounded => true,
        };
        above && below && !empty_bounds(&lower, &upper)
    }
}

/// A range whose lower bound lies above its upper bound selects nothing (and BTreeMap::range
/// would panic on it).
fn empty_bounds(lower: &Bound<EntryKey>, upper: &Bound<EntryKey>) -> bool {
    match (lower, upper) {
        (Bound::Included(l), Bound::Included(u)) => l > u,
        (Bound::Included(l), Bound::Excluded(u))
        | (Bound::Excluded(l), Bound::Included(u))
        | (Bound::Excluded(l), Bound::Excluded(u)) => l >= u,
        _ => false,
    }
}

/// A candidate produced by a range walk: the entry and the revisions recorded for it.
pub(crate) type Candidate = (EntryKey, Vec<Revision>);

/// The sorted index structure.
pub(crate) struct SortedIndex {
    fields: Vec<String>,
    sparse: bool,
    map: BTreeMap<EntryKey, Vec<Revision>>,
    /// Number of distinct value tuples among the entries (for the selectivity estimate).
    distinct: usize,
    /// The `storedValues` attribute paths.
    stored_fields: Vec<String>,
    /// Their values per indexed document version (kept beside the ordered map rather than in
    /// it: one copy per version, however many entries array expansion gives it), so a query
    /// reading only indexed and stored attributes needs no document.
    stored: HashMap<(Arc<str>, Revision), Box<[Value]>>,
}

impl SortedIndex {
    pub fn new(def: &IndexDef) -> SortedIndex {
        let stored_fields = def
            .extra
            .get("storedValues")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        SortedIndex {
            fields: def.fields.clone(),
            sparse: def.sparse,
            map: BTreeMap::new(),
            distinct: 0,
            stored_fields,
            stored: HashMap::new(),
        }
    }

    /// The `storedValues` of version `rev` of document `key`, in definition order.
    pub fn stored_values(&self, key: &Arc<str>, rev: Revision) -> Option<&[Value]> {
        self.stored
            .get(&(Arc::clone(key), rev))
            .map(|values| &**values)
    }

    /// The value tuples a document contributes (none when a sparse index skips it).
    pub fn tuples(&self, doc: &Map<String, Value>) -> Vec<Vec<Value>> {
        tuples(&self.fields, self.sparse, doc)
    }

    fn tuple_count(&self, values: &[Value], limit: usize) -> usize {
        self.map
            .range((
                Bound::Included(EntryKey::of(values, None, false)),
                Bound::Included(EntryKey::of(values, None, true)),
            ))
            .take(limit)
            .count()
    }

    /// Appends up to `limit` entries of `range` (after `resume`, exclusive) to `out`, in index
    /// order or reversed. Returns whether the range has more.
    pub fn walk(
        &self,
        range: &IndexRange,
        reverse: bool,
        resume: Option<&EntryKey>,
        limit: usize,
        out: &mut Vec<Candidate>,
    ) -> bool {
        let (mut lower, mut upper) = range.bounds();
        if let Some(resume) = resume {
            if reverse {
                upper = Bound::Excluded(resume.clone());
            } else {
                lower = Bound::Excluded(resume.clone());
            }
        }
        if empty_bounds(&lower, &upper) {
            return false;
        }
        let iter = self.map.range((lower, upper));
        let mut taken = 0;
        if reverse {
            for (k, revs) in iter.rev() {
                if taken == limit {
                    return true;
                }
                out.push((k.clone(), revs.clone()));
                taken += 1;
            }
        } else {
            for (k, revs) in iter {
                if taken == limit {
                    return true;
                }
                out.push((k.clone(), revs.clone()));
                taken += 1;
            }
        }
        false
    }
}

/// The value tuples of `doc` for an index over `fields`: the cartesian product of each
/// field's values (one value, or each distinct element of an expanded array).
pub(crate) fn tuples(fields: &[String], sparse: bool, doc: &Map<String, Value>) -> Vec<Vec<Value>> {
    let mut combos: Vec<Vec<Value>> = vec![Vec::with_capacity(fields.len())];
    for field in fields {
        let values = field_values(doc, field);
        if values.is_empty() {
            return Vec::new();
        }
        let mut next = Vec::with_capacity(combos.len() * values.len());
        'outer: for combo in &combos {
            for value in &values {
                if next.len() >= MAX_TUPLES_PER_DOCUMENT {
                    break 'outer;
                }
                let mut c = combo.clone();
                c.push(value.clone());
                next.push(c);
            }
        }
        combos = next;
    }
    if sparse {
        combos.retain(|c| !c.iter().any(Value::is_null));
    }
    combos
}

impl IndexStructure for SortedIndex {
    fn insert(&mut self, key: &Arc<str>, rev: Revision, doc: &Map<String, Value>) {
        let tuples = self.tuples(doc);
        if !self.stored_fields.is_empty() && !tuples.is_empty() {
            let values: Box<[Value]> = self
                .stored_fields
                .iter()
                .map(|f| {
                    field_values(doc, f)
                        .into_iter()
                        .next()
                        .unwrap_or(Value::Null)
                })
                .collect();
            self.stored.insert((Arc::clone(key), rev), values);
        }
        for tuple in tuples {
            let entry = EntryKey::of(&tuple, Some(key), false);
            match self.map.get_mut(&entry) {
                Some(revs) => {
                    if !revs.contains(&rev) {
                        revs.push(rev);
                    }
                }
                None => {
                    self.map.insert(entry, vec![rev]);
                    if self.tuple_count(&tuple, 2) == 1 {
                        self.distinct += 1;
                    }
                }
            }
        }
    }

    fn remove(&mut self, key: &str, rev: Revision, doc: &Map<String, Value>) {
        let key: Arc<str> = Arc::from(key);
        if !self.stored.is_empty() {
            self.stored.remove(&(Arc::clone(&key), rev));
        }
        for tuple in self.tuples(doc) {
            let entry = EntryKey::of(&tuple, Some(&key), false);
            let Some(revs) = self.map.get_mut(&entry) else {
                continue;
            };
            revs.retain(|r| *r != rev);
            if revs.is_empty() {
                self.map.remove(&entry);
                if self.tuple_count(&tuple, 1) == 0 {
                    self.distinct = self.distinct.saturating_sub(1);
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn selectivity(&self) -> Option<f64> {
        if self.map.is_empty() {
            return Some(1.0);
        }
        Some((self.distinct as f64 / self.map.len() as f64).clamp(0.0, 1.0))
    }

    fn fresh(&self) -> Box<dyn IndexStructure> {
        Box::new(SortedIndex {
            fields: self.fields.clone(),
            sparse: self.sparse,
            map: BTreeMap::new(),
            distinct: 0,
            stored_fields: self.stored_fields.clone(),
            stored: HashMap::new(),
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// What an index over `fields` would answer for `ranges`, computed from plain documents
/// (key, document) — for data sources without index structures (the in-memory test source),
/// so that they produce the same documents in the same order as a real index.
pub fn lookup_documents(
    fields: &[String],
    sparse: bool,
    docs: impl Iterator<Item = (String, Value)>,
    ranges: &[IndexRange],
    reverse: bool,
) -> Vec<Value> {
    let expanded = fields.iter().any(|f| f.contains("[*]"));
    let mut index = SortedIndex {
        fields: fields.to_vec(),
        sparse,
        map: BTreeMap::new(),
        distinct: 0,
        stored_fields: Vec::new(),
        stored: HashMap::new(),
    };
    let mut bodies = std::collections::HashMap::new();
    for (key, doc) in docs {
        if let Value::Object(map) = &doc {
            index.insert(&Arc::from(key.as_str()), Revision(0), map);
        }
        bodies.insert(key, doc);
    }
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for range in ranges {
        let mut found = Vec::new();
        index.walk(range, reverse, None, usize::MAX, &mut found);
        for (entry, _) in found {
            let Some(key) = entry.doc() else { continue };
            if (expanded || ranges.len() > 1) && !seen.insert(Arc::clone(key)) {
                continue;
            }
            if let Some(doc) = bodies.get(&**key) {
                out.push(doc.clone());
            }
        }
    }
    out
}

/// The selectivity estimate an index over `fields` would report for these documents.
pub fn selectivity_of<'a>(
    fields: &[String],
    sparse: bool,
    docs: impl Iterator<Item = (&'a str, &'a Value)>,
) -> f64 {
    let mut index = SortedIndex {
        fields: fields.to_vec(),
        sparse,
        map: BTreeMap::new(),
        distinct: 0,
        stored_fields: Vec::new(),
        stored: HashMap::new(),
    };
    for (key, doc) in docs {
        if let Value::Object(map) = doc {
            index.insert(&Arc::from(key), Revision(0), map);
        }
    }
    index.selectivity().unwrap_or(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn index(fields: &[&str], sparse: bool) -> SortedIndex {
        let def = IndexDef::parse(
            &json!({"type": "persistent", "fields": fields, "sparse": sparse}),
            2,
        )
        .unwrap();
        SortedIndex::new(&def)
    }

    fn doc(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn keys(ix: &SortedIndex, range: &IndexRange, reverse: bool) -> Vec<String> {
        let mut out = Vec::new();
        ix.walk(range, reverse, None, usize::MAX, &mut out);
        out.iter()
            .map(|(k, _)| k.doc().unwrap().to_string())
            .collect()
    }

    fn filled(fields: &[&str], sparse: bool, docs: &[(&str, Value)]) -> SortedIndex {
        let mut ix = index(fields, sparse);
        for (i, (k, d)) in docs.iter().enumerate() {
            ix.insert(&Arc::from(*k), Revision(i as u64 + 1), &doc(d.clone()));
        }
        ix
    }

    #[test]
    fn ranges_follow_aql_order() {
        let ix = filled(
            &["a"],
            false,
            &[
                ("n", json!({"a": null})),
                ("m", json!({})),
                ("t", json!({"a": true})),
                ("one", json!({"a": 1})),
                ("onef", json!({"a": 1.0})),
                ("two", json!({"a": 2})),
                ("s", json!({"a": "x"})),
                ("arr", json!({"a": [1]})),
            ],
        );
        assert_eq!(
            keys(&ix, &IndexRange::equal(vec![json!(1)]), false),
            ["one", "onef"]
        );
        assert_eq!(
            keys(&ix, &IndexRange::all(), false),
            ["m", "n", "t", "one", "onef", "two", "s", "arr"]
        );
        assert_eq!(
            keys(&ix, &IndexRange::all(), true),
            ["arr", "s", "two", "onef", "one", "t", "n", "m"]
        );
        // `a < 2` includes null and booleans, as the AQL comparison does.
        let below = IndexRange {
            upper: Some((json!(2), false)),
            ..IndexRange::default()
        };
        assert_eq!(keys(&ix, &below, false), ["m", "n", "t", "one", "onef"]);
        let between = IndexRange {
            lower: Some((json!(1), false)),
            upper: Some((json!("x"), true)),
            ..IndexRange::default()
        };
        assert_eq!(keys(&ix, &between, false), ["two", "s"]);
        let empty = IndexRange {
            lower: Some((json!(5), true)),
            upper: Some((json!(1), true)),
            ..IndexRange::default()
        };
        assert!(keys(&ix, &empty, false).is_empty());
        assert!(!empty.contains(&EntryKey::of(&[json!(3)], Some(&Arc::from("k")), false)));
    }

    #[test]
    fn prefixes_sparse_and_expansion() {
        let ix = filled(
            &["a", "b"],
            true,
            &[
                ("1", json!({"a": 1, "b": 2})),
                ("2", json!({"a": 1, "b": 1})),
                ("3", json!({"a": 1})),
                ("4", json!({"a": 2, "b": 0})),
            ],
        );
        assert_eq!(
            keys(&ix, &IndexRange::equal(vec![json!(1)]), false),
            ["2", "1"]
        );
        let after = IndexRange {
            eq: vec![json!(1)],
            lower: Some((json!(1), false)),
            upper: None,
        };
        assert_eq!(keys(&ix, &after, false), ["1"]);
        let tags = filled(
            &["tags[*]"],
            false,
            &[
                ("x", json!({"tags": ["a", "b", "a"]})),
                ("y", json!({"tags": ["b"]})),
                ("z", json!({"tags": "b"})),
            ],
        );
        assert_eq!(
            keys(&tags, &IndexRange::equal(vec![json!("b")]), false),
            ["x", "y"]
        );
        assert_eq!(tags.len(), 3);
    }

    #[test]
    fn estimates_and_removal() {
        let mut ix = filled(
            &["a"],
            false,
            &[
                ("1", json!({"a": 1})),
                ("2", json!({"a": 1})),
                ("3", json!({"a": 2})),
            ],
        );
        assert!((ix.selectivity().unwrap() - 2.0 / 3.0).abs() < 1e-9);
        ix.remove("3", Revision(3), &doc(json!({"a": 2})));
        assert_eq!(ix.selectivity(), Some(0.5));
        // Removing a revision that is not recorded leaves the entry.
        ix.remove("1", Revision(9), &doc(json!({"a": 1})));
        assert_eq!(ix.len(), 2);
        // Two versions of one key with the same value share an entry.
        ix.insert(&Arc::from("1"), Revision(7), &doc(json!({"a": 1})));
        let mut out = Vec::new();
        ix.walk(
            &IndexRange::equal(vec![json!(1)]),
            false,
            None,
            10,
            &mut out,
        );
        assert_eq!(out[0].1, vec![Revision(1), Revision(7)]);
        // Chunked walks resume after the last entry.
        let mut first = Vec::new();
        assert!(ix.walk(&IndexRange::all(), false, None, 1, &mut first));
        let mut rest = Vec::new();
        assert!(!ix.walk(&IndexRange::all(), false, Some(&first[0].0), 1, &mut rest));
        assert_eq!(rest.len(), 1);
        assert_ne!(first[0].0, rest[0].0);
    }
}
