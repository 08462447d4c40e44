//! `_key` ranges through the primary index (index id [`PRIMARY_INDEX_ID`]): the documents
//! whose keys lie in an AQL range, in AQL's string order, as the persistent-index lookups
//! answer theirs.
//!
//! The engine keeps keys in byte order (`Snapshot::key_range`), AQL compares strings with a
//! collation (`quiver_types::compare_strings`: "B" < "a" in bytes, "a" < "B" in AQL). The two
//! agree on keys made of `-`, digits and lower-case letters (`binary_ordered_key`), which is
//! what the key generators produce. So a range is read lazily from the engine when the
//! collection never held another key and the bounds are such strings; otherwise (and for a
//! transaction with staged writes in the collection) the documents the reader sees are
//! filtered and sorted in AQL order. Both give the same documents in the same order.

use std::ops::Bound;

use quiver_errors::Result;
use quiver_storage::binary_ordered_key;
use serde_json::Value;

use crate::document::decode_with_id;
use crate::indexes::persistent::{lookup_documents, IndexRange};
use quiver_storage::Snapshot;

use crate::collection::Collection;

pub use crate::indexes::definition::PRIMARY_INDEX_ID;

/// The byte-order bounds equal to `ranges` under AQL order, if the engine can serve them.
fn binary_bounds(ranges: &[IndexRange]) -> Option<(Bound<String>, Bound<String>)> {
    let [range] = ranges else { return None };
    let safe = |v: &Value| match v {
        Value::String(s) if binary_ordered_key(s) => Some(s.clone()),
        _ => None,
    };
    match range.eq.as_slice() {
        [] => {}
        [v] if range.lower.is_none() && range.upper.is_none() => {
            let s = safe(v)?;
            return Some((Bound::Included(s.clone()), Bound::Included(s)));
        }
        _ => return None,
    }
    let side = |b: &Option<(Value, bool)>| -> Option<Bound<String>> {
        Some(match b {
            None => Bound::Unbounded,
            Some((v, true)) => Bound::Included(safe(v)?),
            Some((v, false)) => Bound::Excluded(safe(v)?),
        })
    };
    Some((side(&range.lower)?, side(&range.upper)?))
}

/// Documents, one by one.
pub(crate) type Documents = Box<dyn Iterator<Item = Result<Value>> + Send>;

/// The documents of `coll` in `ranges` of `_key`, as a reader sees them (`snapshot` is its
/// snapshot, `scan` its scan of `coll`; `staged` says it staged writes in `coll`), in AQL
/// order, descending when `reverse`.
pub(crate) fn primary_lookup(
    scan: impl FnOnce() -> Result<Documents>,
    snapshot: &Snapshot,
    coll: &Collection,
    staged: bool,
    ranges: Vec<IndexRange>,
    reverse: bool,
) -> Result<Documents> {
    if !staged && snapshot.keys_binary_ordered(coll.id())? {
        if let Some(bounds) = binary_bounds(&ranges) {
            let name = coll.name();
            let iter = snapshot.key_range(coll.id(), bounds, reverse)?;
            return Ok(Box::new(iter.map(move |item| {
                let (key, doc) = item?;
                decode_with_id(&doc.body, &name, &key)
            })));
        }
    }
    let mut docs = Vec::new();
    for doc in scan()? {
        let doc = doc?;
        let key = doc
            .get("_key")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        docs.push((key, doc));
    }
    let found = lookup_documents(
        &["_key".to_string()],
        false,
        docs.into_iter(),
        &ranges,
        reverse,
    );
    Ok(Box::new(found.into_iter().map(Ok)))
}
