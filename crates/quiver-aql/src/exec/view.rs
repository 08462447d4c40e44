//! The EnumerateViewNode: per input row, the SEARCH condition's operands are evaluated into the
//! index query, the view is searched and each hit's document is read from the query's snapshot
//! (a hit whose document the snapshot does not hold is skipped: the view lags the collections
//! or is ahead of an old snapshot), with its scores in the scorer variables. With a
//! constrained sort (rule `arangosearch-constrained-sort`) the index gives only the best hits
//! in the sort's order, and more when documents of the snapshot are missing among them.

use std::collections::VecDeque;

use quiver_errors::Result;
use serde_json::Value;

use super::{ExecCtx, Op, Operator, Row};
use crate::plan::{ScorersSort, ViewNode};
use crate::source::{Scorer, SearchQuery, ViewHit};

pub(super) struct ViewOp {
    pub(super) input: Op,
    pub(super) node: ViewNode,
    pub(super) row: Option<Row>,
    /// The current row's index query (OFFSET_INFO reads it per document).
    pub(super) query: SearchQuery,
    pub(super) hits: VecDeque<ViewHit>,
}

impl ViewOp {
    pub(super) fn new(input: Op, node: ViewNode) -> ViewOp {
        ViewOp {
            input,
            node,
            row: None,
            query: SearchQuery::Nothing,
            hits: VecDeque::new(),
        }
    }
}

impl Operator for ViewOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let Some(row) = &self.row {
                while let Some(hit) = self.hits.pop_front() {
                    ctx.check()?;
                    ctx.stats.document_lookups += 1;
                    let Some(doc) = ctx.txn.get(&hit.collection, &hit.key)? else {
                        continue;
                    };
                    ctx.stats.scanned_index += 1;
                    let mut r = row.clone();
                    for (rules, slot) in &self.node.offset_infos {
                        r[*slot] =
                            ctx.txn
                                .view_offset_info(&self.node.view, &doc, &self.query, rules)?;
                    }
                    r[self.node.out] = doc;
                    for ((_, slot), score) in self.node.scorers.iter().zip(&hit.scores) {
                        r[*slot] = serde_json::Number::from_f64(*score)
                            .map(Value::Number)
                            .unwrap_or(Value::Null);
                    }
                    return Ok(Some(r));
                }
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            let query = match &self.node.condition {
                None => SearchQuery::All,
                Some(cond) => cond.to_query(&mut |e| ctx.eval(e, &row))?,
            };
            let scorers: Vec<_> = self.node.scorers.iter().map(|s| s.0.clone()).collect();
            let hits = match &self.node.scorers_sort {
                None => ctx.txn.search_view(
                    &self.node.view,
                    &query,
                    self.node.collections.as_deref(),
                    &scorers,
                    self.node.wait_for_sync,
                )?,
                Some(sort) => self.best_hits(ctx, &query, &scorers, sort)?,
            };
            self.hits = hits.into();
            self.query = query;
            self.row = Some(row);
        }
    }
}

impl ViewOp {
    /// The hits of the first `sort.limit` rows in the order of `sort`: the best hits the
    /// index keeps, as many more as needed when some of them name documents the query's
    /// snapshot does not hold (those rows are skipped, and the rows after them move up).
    fn best_hits(
        &self,
        ctx: &mut ExecCtx,
        query: &SearchQuery,
        scorers: &[Scorer],
        sort: &ScorersSort,
    ) -> Result<Vec<ViewHit>> {
        let limit = usize::try_from(sort.limit).unwrap_or(usize::MAX);
        let mut want = limit;
        loop {
            let mut hits = ctx.txn.search_view_top(
                &self.node.view,
                query,
                self.node.collections.as_deref(),
                scorers,
                &sort.order,
                want,
                self.node.wait_for_sync,
            )?;
            // Fewer than asked for: these are all the matches.
            let all = hits.len() < want;
            let mut present = 0;
            let mut cut = hits.len();
            for (i, hit) in hits.iter().enumerate() {
                if present == limit {
                    cut = i;
                    break;
                }
                ctx.check()?;
                if ctx.txn.exists(&hit.collection, &hit.key)? {
                    present += 1;
                }
            }
            if present == limit || all {
                hits.truncate(cut);
                return Ok(hits);
            }
            // Grows until all matches are asked for (then `all` ends the loop).
            want = want.saturating_mul(4).max(16);
        }
    }
}
