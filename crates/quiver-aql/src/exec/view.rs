//! The EnumerateViewNode: per input row, the SEARCH condition's operands are evaluated into the
//! index query, the view is searched and each hit's document is read from the query's snapshot
//! (a hit whose document the snapshot does not hold is skipped: the view lags the collections
//! or is ahead of an old snapshot), with its scores in the scorer variables.

use std::collections::VecDeque;

use quiver_errors::Result;
use serde_json::Value;

use super::{ExecCtx, Op, Operator, Row};
use crate::plan::ViewNode;
use crate::source::{SearchQuery, ViewHit};

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
            let hits = ctx.txn.search_view(
                &self.node.view,
                &query,
                self.node.collections.as_deref(),
                &scorers,
                self.node.wait_for_sync,
            )?;
            self.hits = hits.into();
            self.query = query;
            self.row = Some(row);
        }
    }
}
