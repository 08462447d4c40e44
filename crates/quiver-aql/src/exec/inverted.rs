//! The operator of an `IndexNode` over an inverted index (`inverted_select`): per input row the
//! served condition's operands are evaluated into the index query, the index is searched and
//! each found document is read from the query's snapshot (a key the snapshot does not hold is
//! skipped: the index lags the collection or is ahead of an old snapshot).

use std::collections::VecDeque;

use quiver_errors::Result;

use super::{ExecCtx, Op, Operator, Row};
use crate::plan::{IndexScan, InvertedSearch};

pub(super) struct InvertedScanOp {
    input: Op,
    scan: IndexScan,
    search: InvertedSearch,
    row: Option<Row>,
    keys: VecDeque<String>,
}

impl InvertedScanOp {
    pub fn new(input: Op, mut scan: IndexScan) -> InvertedScanOp {
        let search = *scan
            .inverted
            .take()
            .expect("an inverted-index scan carries its search");
        InvertedScanOp {
            input,
            scan,
            search,
            row: None,
            keys: VecDeque::new(),
        }
    }
}

impl Operator for InvertedScanOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let Some(row) = &self.row {
                while let Some(key) = self.keys.pop_front() {
                    ctx.check()?;
                    ctx.stats.document_lookups += 1;
                    let Some(doc) = ctx.txn.get(&self.scan.collection, &key)? else {
                        continue;
                    };
                    ctx.stats.scanned_index += 1;
                    let mut r = row.clone();
                    r[self.scan.out] = doc;
                    return Ok(Some(r));
                }
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            let query = self.search.condition.to_query(&mut |e| ctx.eval(e, &row))?;
            let keys = ctx.txn.inverted_search(
                &self.scan.collection,
                self.scan.index.id,
                &query,
                self.search.wait_for_sync,
            )?;
            self.keys = keys.into();
            self.row = Some(row);
        }
    }
}
