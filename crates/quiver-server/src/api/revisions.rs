//! Revision-based replication (`/_api/replication/revisions/*`) over a dump batch's
//! snapshot: the `tree` of a collection's revisions ([`crate::revision_tree`]), the revisions
//! within `ranges` of revision ids, and the `documents` of given revisions. A replica compares
//! its tree with this one, lists the revisions of the buckets that differ, and fetches the
//! documents it lacks; every answer reads the collection as of the batch (`batchId` from
//! `POST /_api/replication/batch`), so the three agree with each other while writers go on.
//!
//! As in ArangoDB: `collection` and `batchId` are required (400/10 and 404/10), revisions are
//! `_rev` strings, malformed bodies are 400/10. Each request passes over the collection's
//! documents once (no index by revision is kept); `ranges` keeps at most [`RANGES_LIMIT`] + 1
//! revisions in memory and `documents` answers at most [`DOCUMENTS_LIMIT`] bytes.

use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

use http::Method;
use quiver_core::{Collection, DocumentReader, Revision};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use crate::dump_batches::Batch;
use crate::revision_tree::{encode_revision, RevisionTree};
use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// Revisions one `ranges` answer lists at most (ArangoDB's limit); the rest follow through
/// `resume`.
pub const RANGES_LIMIT: usize = 64 * 1024;
/// Bytes of documents one `documents` answer holds at most (ArangoDB's limit; `chunkSize`
/// lowers it). At least one document is always answered.
pub const DOCUMENTS_LIMIT: usize = 16 * 1024 * 1024;

/// Routes `/_api/replication/revisions/{what}`.
pub fn route(state: &ServerState, req: &Request, what: &str) -> Result<Response> {
    match (what, &req.method) {
        ("tree", &Method::GET) => tree(state, req),
        ("tree", &Method::POST) => rebuild_tree(state, req),
        ("ranges", &Method::PUT) => ranges(state, req),
        ("documents", &Method::PUT) => documents(state, req),
        ("tree" | "ranges" | "documents", _) => Ok(method_not_allowed()),
        _ => Ok(not_found(req)),
    }
}

/// The batch and collection a request names.
struct Target {
    batch: Arc<Batch>,
    collection: Arc<Collection>,
}

fn target(state: &ServerState, req: &Request) -> Result<Target> {
    let name = match req.param("collection") {
        Some(name) if !name.is_empty() => name,
        _ => {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                "invalid collection parameter",
            ))
        }
    };
    let Some(batch_id) = req.param("batchId") else {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            "replication revision tree - request misses batchId",
        )
        .with_status(404));
    };
    let batch = state.dump_batches.get(&req.database, batch_id, None)?;
    let collection = batch.view().collection(name)?;
    Ok(Target { batch, collection })
}

impl Target {
    /// Every document's key and revision as of the batch, in no particular order.
    fn revisions(&self) -> Result<impl Iterator<Item = Result<(String, u64)>>> {
        let scan = self.batch.view().snapshot().scan(self.collection.id())?;
        Ok(scan.map(|item| item.map(|(key, doc)| (key, doc.rev.0))))
    }
}

/// `GET …/revisions/tree?collection&batchId[&onlyPopulated]`: the tree of the collection's
/// revisions as of the batch.
fn tree(state: &ServerState, req: &Request) -> Result<Response> {
    let target = target(state, req)?;
    let mut tree = RevisionTree::new();
    for item in target.revisions()? {
        tree.insert(item?.1);
    }
    let only_populated = req.bool_param("onlyPopulated", false);
    Ok(Response::json_bytes(
        200,
        tree.to_json_bytes(only_populated),
    ))
}

/// `POST …/revisions/tree?collection&batchId`: ArangoDB rebuilds its stored tree from the
/// documents. The tree here is never stored, every `GET` computes it from the documents, so
/// there is nothing stale to rebuild: the request is checked like a `GET` and answered 204.
fn rebuild_tree(state: &ServerState, req: &Request) -> Result<Response> {
    target(state, req)?;
    Ok(Response::empty(204))
}

/// A revision of a request body or parameter: a `_rev` string (`u64::MAX` is no revision).
fn revision_of(value: &Value) -> Option<u64> {
    let revision = Revision::decode(value.as_str()?)?.0;
    (revision != u64::MAX).then_some(revision)
}

fn bad_ranges() -> Error {
    Error::with_message(
        ErrorCode::BadParameter,
        "body needs to be an array of pairs of revisions",
    )
}

/// The body of a `ranges` request: pairs `[left, right]` with `left < right`, each starting
/// at or after the previous one's end.
fn parse_ranges(body: Option<Value>) -> Result<Vec<(u64, u64)>> {
    let Some(Value::Array(items)) = body else {
        return Err(bad_ranges());
    };
    let mut ranges = Vec::with_capacity(items.len());
    let mut previous_right = 0;
    for item in &items {
        let pair = match item.as_array() {
            Some(pair) if pair.len() == 2 => pair,
            _ => return Err(bad_ranges()),
        };
        let (Some(left), Some(right)) = (revision_of(&pair[0]), revision_of(&pair[1])) else {
            return Err(bad_ranges());
        };
        if left >= right || left < previous_right {
            return Err(bad_ranges());
        }
        previous_right = right;
        ranges.push((left, right));
    }
    Ok(ranges)
}

/// The first range an answer covers when resuming at `resume`: the last one that starts at
/// or before it, or the one after a range that ends before it.
fn first_range(ranges: &[(u64, u64)], resume: u64) -> usize {
    let mut current = 0;
    for (i, &(left, _)) in ranges.iter().enumerate() {
        if left <= resume || (i > 0 && ranges[i - 1].1 < resume) {
            current = i;
        }
    }
    current
}

/// One `ranges` answer: per range from [`first_range`] on, the revisions in `[left, right]`
/// (from `resume` on), at most `limit` in all; and where to resume when not every range is
/// done. `candidates` are the smallest revisions at or after `resume` that lie in those
/// ranges, ascending, at least `limit + 1` of them when there are that many (one more than
/// answered tells whether the range it stops in is complete).
pub fn answer_ranges(
    ranges: &[(u64, u64)],
    resume: u64,
    candidates: &[u64],
    limit: usize,
) -> (Vec<Vec<u64>>, Option<u64>) {
    let mut answered: Vec<Vec<u64>> = Vec::new();
    let Some(&(_, last_right)) = ranges.last() else {
        return (answered, None);
    };
    let mut next = candidates.iter().copied().peekable();
    let mut total = 0;
    let mut resume_next = resume;
    let mut index = first_range(ranges, resume);
    while total < limit && index < ranges.len() {
        let (left, right) = ranges[index];
        let low = left.max(resume);
        resume_next = left.max(resume.saturating_add(1));
        let mut found = Vec::new();
        while let Some(&revision) = next.peek() {
            if revision < low {
                next.next();
                continue;
            }
            if revision > right || total == limit {
                break;
            }
            found.push(revision);
            total += 1;
            resume_next = revision + 1;
            next.next();
        }
        answered.push(found);
        let complete = next.peek().is_none_or(|&revision| revision > right);
        if !complete {
            break;
        }
        resume_next = right + 1;
        index += 1;
    }
    let resume = (resume_next <= last_right).then_some(resume_next);
    (answered, resume)
}

/// `PUT …/revisions/ranges?collection&batchId[&resume]`: the revisions within each requested
/// range, as of the batch.
fn ranges(state: &ServerState, req: &Request) -> Result<Response> {
    let target = target(state, req)?;
    let resume = match req.param("resume") {
        None | Some("") => 0,
        Some(text) => Revision::decode(text).map(|r| r.0).ok_or_else(|| {
            Error::with_message(
                ErrorCode::BadParameter,
                format!("invalid resume revision '{text}'"),
            )
        })?,
    };
    let ranges = parse_ranges(super::body_json(req)?)?;
    let from = first_range(&ranges, resume);
    let wanted = &ranges[from.min(ranges.len())..];
    // The smallest RANGES_LIMIT + 1 revisions at or after `resume` inside a wanted range
    // (a max-heap of that many: memory stays bounded whatever the collection's size).
    let keep = RANGES_LIMIT + 1;
    let mut smallest: BinaryHeap<u64> = BinaryHeap::with_capacity(keep + 1);
    for item in target.revisions()? {
        let revision = item?.1;
        if revision < resume || !within(wanted, revision) {
            continue;
        }
        if smallest.len() < keep {
            smallest.push(revision);
        } else if smallest.peek().is_some_and(|&top| revision < top) {
            smallest.pop();
            smallest.push(revision);
        }
    }
    let candidates = smallest.into_sorted_vec();
    let (answered, resume_at) = answer_ranges(&ranges, resume, &candidates, RANGES_LIMIT);
    let mut body = serde_json::Map::new();
    body.insert(
        "ranges".into(),
        Value::Array(
            answered
                .into_iter()
                .map(|range| {
                    range
                        .into_iter()
                        .map(|r| Value::String(encode_revision(r)))
                        .collect::<Vec<Value>>()
                        .into()
                })
                .collect(),
        ),
    );
    if let Some(at) = resume_at {
        body.insert("resume".into(), encode_revision(at).into());
    }
    Ok(Response::json(200, &Value::Object(body)))
}

/// Whether `revision` lies in one of `ranges` (sorted, not overlapping).
fn within(ranges: &[(u64, u64)], revision: u64) -> bool {
    let after = ranges.partition_point(|&(left, _)| left <= revision);
    after > 0 && revision <= ranges[after - 1].1
}

/// `PUT …/revisions/documents?collection&batchId[&chunkSize]`: the documents of the requested
/// revisions as of the batch, in request order, `{}` for a revision no document has; the
/// answer stops before the document that would pass the size limit (at least one is given).
fn documents(state: &ServerState, req: &Request) -> Result<Response> {
    let target = target(state, req)?;
    let bad = || {
        Error::with_message(
            ErrorCode::BadParameter,
            "body needs to be an array of revisions",
        )
    };
    let Some(Value::Array(items)) = super::body_json(req)? else {
        return Err(bad());
    };
    let requested = items
        .iter()
        .map(|item| revision_of(item).ok_or_else(bad))
        .collect::<Result<Vec<u64>>>()?;
    let limit = match req.param("chunkSize") {
        Some(text) => text
            .parse::<u64>()
            .ok()
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0)
            .min(DOCUMENTS_LIMIT),
        None => DOCUMENTS_LIMIT,
    };
    // Which key holds each requested revision (bounded by the request's size).
    let mut keys: HashMap<u64, Option<String>> = requested.iter().map(|&r| (r, None)).collect();
    for item in target.revisions()? {
        let (key, revision) = item?;
        if let Some(slot @ None) = keys.get_mut(&revision) {
            *slot = Some(key);
        }
    }
    let view = target.batch.view();
    let mut body = Vec::with_capacity(1024);
    body.push(b'[');
    let mut size = 0;
    for (answered, revision) in requested.iter().enumerate() {
        let document = match keys.get(revision).cloned().flatten() {
            Some(key) => match view.get_raw(&target.collection, &key)? {
                Some((found, bytes)) if found.0 == *revision => bytes.to_vec(),
                _ => b"{}".to_vec(),
            },
            None => b"{}".to_vec(),
        };
        if size + document.len() > limit && size > 0 {
            break;
        }
        if answered > 0 {
            body.push(b',');
        }
        size += document.len();
        body.extend_from_slice(&document);
    }
    body.push(b']');
    Ok(Response::json_bytes(200, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_resume_where_the_limit_stopped() {
        // The documentation's example: ranges [1,3], [5,9], [12,15] over revisions
        // 5, 6, 8, 12, 13, two revisions per answer.
        let ranges = [(1, 3), (5, 9), (12, 15)];
        let all = [5, 6, 8, 12, 13];
        let (first, resume) = answer_ranges(&ranges, 0, &all, 2);
        assert_eq!(first, vec![vec![], vec![5, 6]]);
        assert_eq!(resume, Some(7));
        assert_eq!(first_range(&ranges, 7), 1);
        let (second, resume) = answer_ranges(&ranges, 7, &[8, 12, 13], 2);
        assert_eq!(second, vec![vec![8], vec![12]]);
        assert_eq!(resume, Some(13));
        let (third, resume) = answer_ranges(&ranges, 13, &[13], 2);
        assert_eq!(third, vec![vec![13]]);
        assert_eq!(resume, None);
        // Without a limit in the way: every range, empty ones included, and no resume.
        let (whole, resume) = answer_ranges(&ranges, 0, &all, 100);
        assert_eq!(whole, vec![vec![], vec![5, 6, 8], vec![12, 13]]);
        assert_eq!(resume, None);
        // A limit reached on a range's last revision closes that range.
        let (closed, resume) = answer_ranges(&ranges, 0, &all, 3);
        assert_eq!(closed, vec![vec![], vec![5, 6, 8]]);
        assert_eq!(resume, Some(10));
        assert_eq!(first_range(&ranges, 10), 2);
    }

    #[test]
    fn range_bodies_are_checked() {
        let rev = |n: u64| Value::String(Revision(n).encode());
        let ok = serde_json::json!([[rev(1), rev(3)], [rev(3), rev(9)]]);
        assert_eq!(parse_ranges(Some(ok)).unwrap(), vec![(1, 3), (3, 9)]);
        for bad in [
            serde_json::json!({}),
            serde_json::json!([[rev(3), rev(1)]]),
            serde_json::json!([[rev(1), rev(1)]]),
            serde_json::json!([[rev(1), rev(5)], [rev(4), rev(9)]]),
            serde_json::json!([[rev(1)]]),
            serde_json::json!([[1, 3]]),
            serde_json::json!([["not a revision!", rev(3)]]),
        ] {
            assert!(parse_ranges(Some(bad.clone())).is_err(), "{bad}");
        }
        assert!(parse_ranges(None).is_err());
        assert!(within(&[(1, 3), (5, 9)], 5));
        assert!(within(&[(1, 3), (5, 9)], 3));
        assert!(!within(&[(1, 3), (5, 9)], 4));
        assert!(!within(&[(1, 3), (5, 9)], 10));
        assert!(!within(&[(1, 3)], 0));
    }
}
