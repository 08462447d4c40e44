//! The operator of an `IndexNode` over an inverted index (`inverted_select`): per input row the
//! served condition's operands are evaluated into the index query, the index is searched and
//! each found document is read from the query's snapshot (a key the snapshot does not hold is
//! skipped: the index lags the collection or is ahead of an old snapshot). A loop that replaced
//! a SORT by the index's primary sort gets the keys in that order, only the first
//! offset+count under a LIMIT (and more when the snapshot lacks some of them).

use std::collections::VecDeque;

use quiver_errors::Result;

use super::{ExecCtx, Op, Operator, Row};
use crate::plan::{IndexScan, InvertedSearch};
use crate::source::SortedRead;

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
            let keys = match self.search.sorted {
                None => ctx.txn.inverted_search(
                    &self.scan.collection,
                    self.scan.index.id,
                    &query,
                    None,
                    self.search.wait_for_sync,
                )?,
                Some(sorted) => {
                    let limit = sorted
                        .limit
                        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
                    let mut want = limit;
                    loop {
                        let read = SortedRead {
                            buckets: sorted.buckets,
                            limit: want,
                            values: false,
                        };
                        let mut keys = ctx.txn.inverted_search(
                            &self.scan.collection,
                            self.scan.index.id,
                            &query,
                            Some(&read),
                            self.search.wait_for_sync,
                        )?;
                        let (Some(limit), Some(asked)) = (limit, want) else {
                            break keys;
                        };
                        // Enough keys the snapshot holds, or all there are.
                        let mut present = 0;
                        let mut cut = keys.len();
                        for (i, key) in keys.iter().enumerate() {
                            if present == limit {
                                cut = i;
                                break;
                            }
                            if ctx.txn.exists(&self.scan.collection, key)? {
                                present += 1;
                            }
                        }
                        if present == limit || keys.len() < asked {
                            keys.truncate(cut);
                            break keys;
                        }
                        want = Some(asked.saturating_mul(4).max(16));
                    }
                }
            };
            self.keys = keys.into();
            self.row = Some(row);
        }
    }
}
