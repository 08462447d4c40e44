//! Reading documents through a sorted (persistent) index, as one reader sees them.
//!
//! Candidates come from the index in bounded chunks (the index lock is held for one chunk at a
//! time, so writers never wait for a whole scan); each is kept only when the reader's snapshot
//! holds that key at exactly the recorded revision (see `indexes/maintained.rs`). A transaction hides
//! the index entries of the documents it staged and adds its staged versions that fall into
//! the ranges, so it reads its own writes in index order.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use quiver_errors::{Error, ErrorCode, Result};
use quiver_storage::{CollectionId, Snapshot};
use quiver_types::Revision;
use serde_json::{Map, Value};

use crate::collection::Collection;
use crate::document::decode_with_id;
use crate::indexes::maintained::MaintainedIndex;
use crate::indexes::persistent::{tuples, Candidate, EntryKey, IndexRange, SortedIndex};
use crate::staging::Staging;

/// Candidates fetched per index lock acquisition.
const CHUNK: usize = 256;

fn not_sorted() -> Error {
    Error::with_message(
        ErrorCode::BadParameter,
        "this index type does not support range lookups",
    )
}

/// Where a covered attribute's value comes from.
#[derive(Clone, Debug)]
enum Source {
    Field(usize),
    Stored(usize),
    Key,
    Id,
}

/// A projection answered from index entries alone (`storedValues` and the indexed fields).
#[derive(Clone, Debug)]
struct Cover {
    attrs: Vec<(String, Source)>,
    stored: bool,
}

impl Cover {
    /// None when an attribute is neither `_key`, `_id`, an indexed field nor a stored value
    /// (each a top-level attribute; an expanded index covers nothing, its entries hold array
    /// elements rather than the attribute).
    fn new(def: &crate::indexes::definition::IndexDef, attrs: &[String]) -> Option<Cover> {
        if def.fields.iter().any(|f| f.contains("[*]")) {
            return None;
        }
        let stored: Vec<&str> = def
            .extra
            .get("storedValues")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut out = Vec::with_capacity(attrs.len());
        for attr in attrs {
            let source = match attr.as_str() {
                "_key" => Source::Key,
                "_id" => Source::Id,
                a => {
                    if let Some(i) = def.fields.iter().position(|f| f == a) {
                        Source::Field(i)
                    } else {
                        Source::Stored(stored.iter().position(|s| *s == a)?)
                    }
                }
            };
            out.push((attr.clone(), source));
        }
        let stored = out.iter().any(|(_, s)| matches!(s, Source::Stored(_)));
        Some(Cover { attrs: out, stored })
    }
}

/// A lazy walk over some ranges of one index, keeping what `snapshot` sees.
pub(crate) struct IndexScan {
    ix: Arc<MaintainedIndex>,
    snapshot: Snapshot,
    cid: CollectionId,
    name: Arc<str>,
    ranges: Vec<IndexRange>,
    range_pos: usize,
    reverse: bool,
    resume: Option<EntryKey>,
    buffer: VecDeque<Candidate>,
    /// Keys whose index entries are not to be trusted (staged by the reading transaction).
    skip: Arc<HashSet<String>>,
    /// Keys already produced, when one document can sit under several entries (array
    /// expansion).
    seen: Option<HashSet<Arc<str>>>,
    /// Set when the documents are built from the entries (see [`IndexScan::covering`]).
    cover: Option<Cover>,
    /// The stored values of each buffered candidate's revisions (only with a cover that
    /// needs them), in step with `buffer`.
    stored_buffer: VecDeque<Vec<(Revision, Box<[Value]>)>>,
}

impl IndexScan {
    pub fn new(
        coll: &Collection,
        index: u64,
        snapshot: Snapshot,
        ranges: Vec<IndexRange>,
        reverse: bool,
        skip: Arc<HashSet<String>>,
    ) -> Result<IndexScan> {
        let ix = coll.maintained_index(index)?;
        if !ix.read(|cur, _| cur.as_any().is::<SortedIndex>()) {
            return Err(not_sorted());
        }
        let expanded = ix.def.fields.iter().any(|f| f.contains("[*]"));
        Ok(IndexScan {
            ix,
            snapshot,
            cid: coll.id(),
            name: coll.name(),
            ranges,
            range_pos: 0,
            reverse,
            resume: None,
            buffer: VecDeque::new(),
            skip,
            seen: expanded.then(HashSet::new),
            cover: None,
            stored_buffer: VecDeque::new(),
        })
    }

    /// Turns the scan into one that produces documents holding only `attrs`, built from the
    /// index entries and stored values without reading the documents (a snapshot probe still
    /// checks each entry's revision). None when the index does not cover `attrs`.
    pub fn covering(mut self, attrs: &[String]) -> Option<IndexScan> {
        self.cover = Some(Cover::new(&self.ix.def, attrs)?);
        Some(self)
    }

    /// Refills the buffer from the current range; false when every range is done.
    fn refill(&mut self) -> bool {
        while self.buffer.is_empty() {
            let Some(range) = self.ranges.get(self.range_pos) else {
                return false;
            };
            let tick = self.snapshot.tick();
            let mut out = Vec::new();
            let want_stored = self.cover.as_ref().is_some_and(|c| c.stored);
            let stored_buffer = &mut self.stored_buffer;
            let more = self.ix.read(|cur, retired| {
                let Some(sorted) = cur.as_any().downcast_ref::<SortedIndex>() else {
                    return false;
                };
                // Stored values are copied under the same lock as their entries; a version
                // only a retired structure still holds has none here, and the scan reads
                // that document instead.
                let mut with_stored = |out: &Vec<Candidate>, from: usize| {
                    if !want_stored {
                        return;
                    }
                    for (entry, revs) in &out[from..] {
                        let mut values = Vec::new();
                        if let Some(key) = entry.doc() {
                            for rev in revs {
                                if let Some(v) = sorted.stored_values(key, *rev) {
                                    values.push((*rev, v.to_vec().into_boxed_slice()));
                                }
                            }
                        }
                        stored_buffer.push_back(values);
                    }
                };
                // Structures retired by a truncate after this snapshot still hold what it
                // sees. Rare (a reader racing a truncate), so the range is read at once.
                let old: Vec<&SortedIndex> = retired
                    .iter()
                    .filter(|(t, _)| *t > tick)
                    .filter_map(|(_, s)| s.as_any().downcast_ref::<SortedIndex>())
                    .collect();
                if old.is_empty() {
                    let more =
                        sorted.walk(range, self.reverse, self.resume.as_ref(), CHUNK, &mut out);
                    with_stored(&out, 0);
                    return more;
                }
                sorted.walk(range, self.reverse, None, usize::MAX, &mut out);
                for s in old {
                    s.walk(range, self.reverse, None, usize::MAX, &mut out);
                }
                if self.reverse {
                    out.sort_by(|a, b| b.0.cmp(&a.0));
                } else {
                    out.sort_by(|a, b| a.0.cmp(&b.0));
                }
                with_stored(&out, 0);
                false
            });
            match out.last() {
                Some(last) if more => self.resume = Some(last.0.clone()),
                _ => {
                    self.resume = None;
                    self.range_pos += 1;
                }
            }
            if !more {
                self.resume = None;
            }
            self.buffer.extend(out);
        }
        true
    }

    /// The next visible document with the entry it was found under.
    pub fn next_entry(&mut self) -> Option<Result<(EntryKey, Value)>> {
        loop {
            if self.buffer.is_empty() && !self.refill() {
                return None;
            }
            let (entry, revs) = self.buffer.pop_front()?;
            let stored = self.stored_buffer.pop_front();
            let Some(key) = entry.doc().cloned() else {
                continue;
            };
            if !self.skip.is_empty() && self.skip.contains(&*key) {
                continue;
            }
            if self.seen.as_ref().is_some_and(|s| s.contains(&key)) {
                continue;
            }
            if let Some(cover) = &self.cover {
                let rev = match self.snapshot.revision(self.cid, &key) {
                    Ok(Some(rev)) => rev,
                    Ok(None) => continue,
                    Err(err) => return Some(Err(err)),
                };
                if !revs.contains(&rev) {
                    continue;
                }
                let values = stored
                    .and_then(|s| s.into_iter().find(|(r, _)| *r == rev))
                    .map(|(_, v)| v);
                if !cover.stored || values.is_some() {
                    let mut doc = Map::with_capacity(cover.attrs.len());
                    for (name, source) in &cover.attrs {
                        let value = match source {
                            Source::Key => Value::String(key.to_string()),
                            Source::Id => Value::String(format!("{}/{key}", self.name)),
                            Source::Field(i) => match entry.0.get(*i) {
                                Some(crate::indexes::persistent::KeyPart::Val(v)) => v.clone(),
                                _ => Value::Null,
                            },
                            Source::Stored(i) => values
                                .as_ref()
                                .and_then(|v| v.get(*i).cloned())
                                .unwrap_or(Value::Null),
                        };
                        doc.insert(name.clone(), value);
                    }
                    return Some(Ok((entry, Value::Object(doc))));
                }
            }
            let doc = match self.snapshot.get(self.cid, &key) {
                Ok(Some(doc)) => doc,
                Ok(None) => continue,
                Err(err) => return Some(Err(err)),
            };
            if !revs.contains(&doc.rev) {
                continue;
            }
            if let Some(seen) = &mut self.seen {
                seen.insert(Arc::clone(&key));
            }
            return Some(decode_with_id(&doc.body, &self.name, &key).map(|v| (entry, v)));
        }
    }
}

impl Iterator for IndexScan {
    type Item = Result<Value>;
    fn next(&mut self) -> Option<Result<Value>> {
        self.next_entry().map(|r| r.map(|(_, v)| v))
    }
}

/// The lookup for a transaction that staged writes in `coll`: per range, the snapshot's
/// documents minus the staged keys plus the staged versions in the range, in index order.
pub(crate) fn staged_lookup(
    coll: &Collection,
    index: u64,
    staging: &Staging,
    ranges: Vec<IndexRange>,
    reverse: bool,
) -> Result<Vec<Result<Value>>> {
    let cid = coll.id();
    let name = coll.name();
    let ix = coll.maintained_index(index)?;
    let mut skip = HashSet::new();
    let mut staged: Vec<(Arc<str>, Map<String, Value>, &bytes::Bytes)> = Vec::new();
    for ((c, key), entry) in &staging.entries {
        if *c != cid {
            continue;
        }
        skip.insert(key.clone());
        if let Some((_, body)) = &entry.current {
            if let Ok(map) = serde_json::from_slice::<Map<String, Value>>(body) {
                staged.push((Arc::from(key.as_str()), map, body));
            }
        }
    }
    let skip = Arc::new(skip);
    let expanded = ix.def.fields.iter().any(|f| f.contains("[*]"));
    let mut seen: HashSet<Arc<str>> = HashSet::new();
    let mut out = Vec::new();
    for range in ranges {
        let mut items: Vec<(EntryKey, Value)> = Vec::new();
        let mut scan = IndexScan::new(
            coll,
            index,
            staging.snapshot.clone(),
            vec![range.clone()],
            reverse,
            Arc::clone(&skip),
        )?;
        scan.seen = None;
        while let Some(item) = scan.next_entry() {
            items.push(item?);
        }
        for (key, map, body) in &staged {
            for tuple in tuples(&ix.def.fields, ix.def.sparse, map) {
                let mut parts: Vec<crate::indexes::persistent::KeyPart> = tuple
                    .into_iter()
                    .map(crate::indexes::persistent::KeyPart::Val)
                    .collect();
                parts.push(crate::indexes::persistent::KeyPart::Doc(Arc::clone(key)));
                let entry = EntryKey(parts.into_boxed_slice());
                if range.contains(&entry) {
                    items.push((entry, decode_with_id(body, &name, key)?));
                }
            }
        }
        if reverse {
            items.sort_by(|a, b| b.0.cmp(&a.0));
        } else {
            items.sort_by(|a, b| a.0.cmp(&b.0));
        }
        for (entry, doc) in items {
            if expanded {
                let Some(key) = entry.doc() else { continue };
                if !seen.insert(Arc::clone(key)) {
                    continue;
                }
            }
            out.push(Ok(doc));
        }
    }
    Ok(out)
}

/// The documents of `coll` whose geo index `index` entries meet `rect`, as `snapshot` sees
/// them, plus (for a transaction) every document it staged in `coll`: a superset of the
/// documents whose shape meets `rect`, which the caller re-checks exactly. Errors: 1212 for
/// an unknown index, 10 when `index` is not a geo index.
pub(crate) fn geo_candidates(
    coll: &Collection,
    index: u64,
    snapshot: &Snapshot,
    rect: &crate::geo::Rect,
    staging: Option<&Staging>,
) -> Result<Vec<Value>> {
    use crate::indexes::geo::GeoIndex;
    let ix = coll.maintained_index(index)?;
    let cid = coll.id();
    let name = coll.name();
    let candidates =
        structure_candidates(&ix, snapshot, "geo", |geo: &GeoIndex| geo.candidates(rect))?;
    let mut out = visible_documents(cid, &name, snapshot, candidates, staging)?;
    push_staged(&mut out, staging, cid, &name)?;
    Ok(out)
}

/// The documents of collection `cid` (named `name`) that `snapshot` holds at exactly the
/// revision an index entry names, each once, in the entries' order; keys a transaction
/// staged are left to its staged versions.
fn visible_documents(
    cid: CollectionId,
    name: &str,
    snapshot: &Snapshot,
    candidates: Vec<(Arc<str>, Revision)>,
    staging: Option<&Staging>,
) -> Result<Vec<Value>> {
    let staged =
        |key: &str| staging.is_some_and(|st| st.entries.contains_key(&(cid, key.to_string())));
    let mut out = Vec::new();
    let mut seen: HashSet<Arc<str>> = HashSet::new();
    for (key, rev) in candidates {
        if seen.contains(&key) || staged(&key) {
            continue;
        }
        if let Some(doc) = snapshot.get(cid, &key)? {
            if doc.rev == rev {
                out.push(decode_with_id(&doc.body, name, &key)?);
                seen.insert(key);
            }
        }
    }
    Ok(out)
}

/// The documents of `coll` nearest to `query` through its vector index `index`, best first,
/// each with the metric's value (`vector::Metric::score`), as `snapshot` sees them: the
/// entries of the `n_probe` lists nearest to the query, plus (for a transaction) the
/// documents it staged that hold a vector; at most `limit`. `query` must have the index's
/// dimension. Errors: 1212 for an unknown index, 10 when `index` is not a vector index.
pub(crate) fn vector_nearest(
    coll: &Collection,
    index: u64,
    snapshot: &Snapshot,
    query: &[f32],
    n_probe: usize,
    limit: usize,
    staging: Option<&Staging>,
) -> Result<Vec<(f64, Value)>> {
    use crate::indexes::vector::{VectorIndex, VectorParams};
    use crate::vector::ivf::Hit;
    let ix = coll.maintained_index(index)?;
    let params = VectorParams::of(&ix.def).ok_or_else(|| {
        Error::with_message(ErrorCode::BadParameter, "this index is not a vector index")
    })?;
    let field = ix.def.fields.first().cloned().unwrap_or_default();
    let mut prepared = query.to_vec();
    params.metric.prepare(&mut prepared);
    let cid = coll.id();
    let name = coll.name();
    let staged =
        |key: &str| staging.is_some_and(|st| st.entries.contains_key(&(cid, key.to_string())));
    // A transaction's staged documents that hold a vector, scored here.
    let mut staged_hits = Vec::new();
    let mut staged_docs = Vec::new();
    if let Some(st) = staging {
        for ((c, key), entry) in &st.entries {
            let Some((_, body)) = entry.current.as_ref().filter(|_| *c == cid) else {
                continue;
            };
            let doc = decode_with_id(body, &name, key)?;
            let vector = doc.as_object().and_then(|m| {
                crate::vector::vector_of(crate::vector::attribute(m, &field), params.dimension).ok()
            });
            if let Some(mut v) = vector {
                params.metric.prepare(&mut v);
                staged_hits.push(Hit {
                    key: Arc::from(key.as_str()),
                    rev: Revision(0),
                    score: params.metric.score(&v, &prepared),
                });
                staged_docs.push((key.clone(), doc));
            }
        }
    }
    // The index's best entries; some may be versions this reader does not see, so a first
    // round asks for a few more than `limit`, and a second one (rarely needed) for all.
    let mut want = limit.saturating_add(16);
    loop {
        let mut hits = structure_candidates(&ix, snapshot, "vector", |v: &VectorIndex| {
            v.search(&prepared, n_probe, want)
        })?;
        let exhausted = hits.len() < want;
        hits.retain(|h| !staged(&h.key));
        hits.extend(staged_hits.iter().cloned());
        // Retired structures and staged versions were appended after the current ones.
        params.metric.rank(&mut hits);
        let mut out = Vec::with_capacity(limit.min(hits.len()));
        let mut seen: HashSet<Arc<str>> = HashSet::new();
        for hit in hits {
            if out.len() >= limit {
                break;
            }
            if !seen.insert(Arc::clone(&hit.key)) {
                continue;
            }
            if let Some((_, doc)) = staged_docs.iter().find(|(k, _)| **k == *hit.key) {
                out.push((hit.score, doc.clone()));
                continue;
            }
            if let Some(doc) = snapshot.get(cid, &hit.key)? {
                if doc.rev == hit.rev {
                    out.push((hit.score, decode_with_id(&doc.body, &name, &hit.key)?));
                } else {
                    // An older version's entry: the key may still come with its current one.
                    seen.remove(&hit.key);
                }
            }
        }
        if out.len() >= limit || exhausted || want == usize::MAX {
            return Ok(out);
        }
        want = usize::MAX;
    }
}

/// The documents of `coll` whose mdi index `index` entries lie in `b` (its prefix values and
/// dimension bounds), as `snapshot` sees them, plus (for a transaction) the documents it
/// staged in `coll` that lie in `b`: exactly the documents in the box, in the index's Z order.
/// Errors: 1212 for an unknown index, 10 when `index` is not an mdi index.
pub(crate) fn mdi_candidates(
    coll: &Collection,
    index: u64,
    snapshot: &Snapshot,
    b: &crate::indexes::mdi::MdiBox,
    staging: Option<&Staging>,
) -> Result<Vec<Value>> {
    use crate::indexes::mdi::{in_box, point_of, MdiIndex};
    let ix = coll.maintained_index(index)?;
    let cid = coll.id();
    let name = coll.name();
    let candidates = structure_candidates(&ix, snapshot, "mdi", |m: &MdiIndex| m.search(b))?;
    let mut out = visible_documents(cid, &name, snapshot, candidates, staging)?;
    if let Some(st) = staging {
        let prefix_fields = ix.def.prefix_fields();
        let wanted: Vec<Value> = b
            .prefix
            .iter()
            .map(crate::indexes::unique::canonical)
            .collect();
        for ((c, key), entry) in &st.entries {
            let Some((_, body)) = entry.current.as_ref().filter(|_| *c == cid) else {
                continue;
            };
            let doc = decode_with_id(body, &name, key)?;
            let Some(map) = doc.as_object() else { continue };
            let Some((prefix, point)) =
                point_of(&ix.def.fields, &prefix_fields, ix.def.sparse, map)
            else {
                continue;
            };
            let prefix: Vec<Value> = prefix
                .iter()
                .map(crate::indexes::unique::canonical)
                .collect();
            if prefix == wanted && in_box(&point, b) {
                out.push(doc);
            }
        }
    }
    Ok(out)
}

/// What index structure `S` of `ix` names for a lookup (`find`), in the current structure and
/// in those a truncate retired after `snapshot` (they still hold what it sees). Error 10 when
/// the index is not of that kind.
fn structure_candidates<S: 'static, R: IntoIterator + Extend<R::Item>>(
    ix: &MaintainedIndex,
    snapshot: &Snapshot,
    kind: &str,
    find: impl Fn(&S) -> R,
) -> Result<R> {
    let tick = snapshot.tick();
    ix.read(|cur, retired| {
        let mut found = find(cur.as_any().downcast_ref::<S>()?);
        for (t, old) in retired {
            if *t > tick {
                if let Some(old) = old.as_any().downcast_ref::<S>() {
                    found.extend(find(old));
                }
            }
        }
        Some(found)
    })
    .ok_or_else(|| {
        Error::with_message(
            ErrorCode::BadParameter,
            format!("this index is not a {kind} index"),
        )
    })
}

/// Appends every document a transaction staged in collection `cid` (the index lookups above
/// only know committed versions).
fn push_staged(
    out: &mut Vec<Value>,
    staging: Option<&Staging>,
    cid: CollectionId,
    name: &str,
) -> Result<()> {
    if let Some(st) = staging {
        for ((c, key), entry) in &st.entries {
            if *c == cid {
                if let Some((_, body)) = &entry.current {
                    out.push(decode_with_id(body, name, key)?);
                }
            }
        }
    }
    Ok(())
}

/// The documents of `coll` that its fulltext index `index` names as candidates for `query`,
/// as `snapshot` sees them, plus (for a transaction) every document it staged in `coll`: a
/// superset of the matches, which the caller re-checks exactly (exclusions are applied only
/// there). Errors: 1212 for an unknown index, 10 when `index` is not a fulltext index.
pub(crate) fn fulltext_candidates(
    coll: &Collection,
    index: u64,
    snapshot: &Snapshot,
    query: &crate::indexes::fulltext::Query,
    staging: Option<&Staging>,
) -> Result<Vec<Value>> {
    use crate::indexes::fulltext::FulltextIndex;
    let ix = coll.maintained_index(index)?;
    let cid = coll.id();
    let name = coll.name();
    let candidates = structure_candidates(&ix, snapshot, "fulltext", |ft: &FulltextIndex| {
        ft.candidates(query)
    })?;
    let staged =
        |key: &str| staging.is_some_and(|st| st.entries.contains_key(&(cid, key.to_string())));
    let mut keys: Vec<Arc<str>> = candidates.into_iter().filter(|k| !staged(k)).collect();
    // Key order: deterministic results (and LIMIT) whatever the hash order.
    keys.sort();
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        if let Some(doc) = snapshot.get(cid, &key)? {
            out.push(decode_with_id(&doc.body, &name, &key)?);
        }
    }
    push_staged(&mut out, staging, cid, &name)?;
    Ok(out)
}
