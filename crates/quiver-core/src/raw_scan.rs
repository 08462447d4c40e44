//! Whole-collection reads of response-ready document text: every document of a read view's
//! collection, in storage order, written as JSON lines into a caller's buffer without parsing
//! (the stored text with `_id` spliced in, as [`crate::Collection::get_raw`] serves one
//! document). The replication dump streams collections this way.

use std::sync::Arc;

use quiver_errors::Result;
use quiver_storage::OrderedScan;

use crate::collection::Collection;
use crate::document::append_with_id;
use crate::txn::ReadView;

/// The documents of one collection as a read view sees them, in storage order (no key
/// order, as `FOR d IN coll` promises none). Owns what it needs, so it can be kept across
/// requests.
pub struct RawScan {
    scan: OrderedScan,
    escaped_name: Arc<str>,
}

impl std::fmt::Debug for RawScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawScan")
            .field("collection", &self.escaped_name)
            .finish()
    }
}

impl ReadView {
    /// Every document of `coll` as this view sees it, as response-ready JSON text (1203 after
    /// a drop).
    pub fn scan_raw(&self, coll: &Collection) -> Result<RawScan> {
        coll.check_usable()?;
        Ok(RawScan {
            scan: self.snapshot().ordered_scan(coll.id())?,
            escaped_name: coll.escaped_name(),
        })
    }
}

impl RawScan {
    /// Appends the next document to `out` as one line of compact JSON (`_key`, `_id`,
    /// `_rev`, then the stored attributes; no line break added); false when none is left.
    pub fn append_next(&mut self, out: &mut Vec<u8>) -> Result<bool> {
        let Some(doc) = self.scan.next_raw() else {
            return Ok(false);
        };
        let doc = doc?;
        let start = out.len();
        append_with_id(out, doc.body, doc.key, &self.escaped_name);
        // Every writer stores compact JSON (serde_json's output), so a document is one line.
        debug_assert!(
            !out[start..].contains(&b'\n'),
            "stored document spans lines"
        );
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{CollectionSpec, Core, CoreOptions, DocumentReader, WriteOptions, SYSTEM_DATABASE};

    #[test]
    fn lines_are_what_a_parsed_document_serializes_to() {
        let dir = tempfile::tempdir().unwrap();
        let core = Core::open(dir.path(), CoreOptions::default()).unwrap();
        let db = core.database(SYSTEM_DATABASE).unwrap();
        let coll = db.create_collection(CollectionSpec::new("c-q")).unwrap();
        for i in 0..50 {
            coll.insert(
                json!({"_key": format!("k{i}"), "n": i, "s": "a\nb\u{e9}", "o": {"x": [1.5, null]}}),
                &WriteOptions::new(),
            )
            .unwrap()
            .wait()
            .unwrap();
        }
        let view = db.read_view();
        let mut expected: Vec<String> = view
            .scan(&coll)
            .unwrap()
            .map(|d| serde_json::to_string(&d.unwrap()).unwrap())
            .collect();
        // A write after the view was taken is not seen.
        coll.insert(json!({"_key": "late"}), &WriteOptions::new())
            .unwrap()
            .wait()
            .unwrap();
        let mut scan = view.scan_raw(&coll).unwrap();
        let mut out = Vec::new();
        let mut got = Vec::new();
        while scan.append_next(&mut out).unwrap() {
            got.push(String::from_utf8(std::mem::take(&mut out)).unwrap());
        }
        expected.sort();
        got.sort();
        assert_eq!(got.len(), 50);
        assert_eq!(got, expected);
        assert!(got.iter().all(|line| !line.contains('\n')));
        assert!(got[0].starts_with("{\"_key\":\"k0\",\"_id\":\"c-q/k0\",\"_rev\":\""));
    }
}
