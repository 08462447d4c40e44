//! What a commit of a view's (or an inverted index's) tantivy index covers, stored as the
//! commit's payload and read back when the index is reopened: the index format
//! (`quiver_search::index::INDEX_FORMAT`) and, per linked collection, the commit tick up to
//! which the collection's committed writes are in the index and the *shape* of its link (the
//! link's JSON and the definitions of the analyzers it names, which decide the terms). A
//! reopened index whose recorded shape equals the current one is caught up from the tick
//! (`view_feed.rs`); anything else is rebuilt.

use std::collections::BTreeMap;

use quiver_search::index::{AnalyzerSource, LinkDefinition, INDEX_FORMAT};
use quiver_storage::CollectionId;
use serde_json::{json, Map, Value};

/// What the index holds of one linked collection.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LinkRecord {
    /// Every write of the collection committed at or below this tick is in the index, and
    /// nothing committed after it.
    pub tick: u64,
    /// [`link_shape`] of the link the documents were indexed with.
    pub shape: Value,
}

/// The payload of one commit: what it covers of each linked collection.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct CommitRecord {
    pub collections: BTreeMap<CollectionId, LinkRecord>,
}

impl CommitRecord {
    pub fn to_payload(&self) -> String {
        let collections: Map<String, Value> = self
            .collections
            .iter()
            .map(|(cid, r)| (cid.to_string(), json!({"tick": r.tick, "shape": r.shape})))
            .collect();
        json!({"format": INDEX_FORMAT, "collections": collections}).to_string()
    }

    /// The record of a commit payload, or why it cannot be used (no payload, another
    /// format, malformed).
    pub fn parse(payload: Option<&str>) -> Result<CommitRecord, String> {
        let Some(payload) = payload else {
            return Err("its last commit records nothing".into());
        };
        let value: Value = serde_json::from_str(payload)
            .map_err(|_| "its last commit's record is not JSON".to_string())?;
        let format = value.get("format").and_then(Value::as_u64);
        if format != Some(u64::from(INDEX_FORMAT)) {
            return Err(match format {
                Some(f) => format!("it was written in index format {f}, not {INDEX_FORMAT}"),
                None => "its last commit records no index format".into(),
            });
        }
        let malformed = || "its last commit's record is malformed".to_string();
        let mut collections = BTreeMap::new();
        for (cid, entry) in value
            .get("collections")
            .and_then(Value::as_object)
            .ok_or_else(malformed)?
        {
            let cid: CollectionId = cid.parse().map_err(|_| malformed())?;
            let tick = entry
                .get("tick")
                .and_then(Value::as_u64)
                .ok_or_else(malformed)?;
            let shape = entry.get("shape").cloned().ok_or_else(malformed)?;
            collections.insert(cid, LinkRecord { tick, shape });
        }
        Ok(CommitRecord { collections })
    }
}

/// What decides the terms `link` gives a document: the link's JSON and the definition of
/// each analyzer it names (null for one the source does not know).
pub(crate) fn link_shape(link: &LinkDefinition, analyzers: &dyn AnalyzerSource) -> Value {
    let mut names = link.analyzer_names();
    names.sort();
    names.dedup();
    let definitions: Map<String, Value> = names
        .into_iter()
        .map(|name| {
            let definition = analyzers.definition(&name).unwrap_or(Value::Null);
            (name, definition)
        })
        .collect();
    json!({"link": link.to_json(), "analyzers": definitions})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_refuse_other_formats() {
        let mut record = CommitRecord::default();
        record.collections.insert(
            12,
            LinkRecord {
                tick: 99,
                shape: json!({"link": {"includeAllFields": true}, "analyzers": {}}),
            },
        );
        let payload = record.to_payload();
        assert_eq!(CommitRecord::parse(Some(&payload)), Ok(record));
        assert!(CommitRecord::parse(None).is_err());
        assert!(CommitRecord::parse(Some("{}")).is_err());
        assert!(CommitRecord::parse(Some("not json")).is_err());
        let other = payload.replace(
            &format!("\"format\":{INDEX_FORMAT}"),
            &format!("\"format\":{}", INDEX_FORMAT + 1),
        );
        assert!(CommitRecord::parse(Some(&other))
            .unwrap_err()
            .contains("index format"));
    }
}
