//! The EnumerateViewNode: per input row, the SEARCH condition's operands are evaluated into the
//! index query, the view is searched and each hit's document is read from the query's snapshot
//! (a hit whose document the snapshot does not hold is skipped: the view lags the collections
//! or is ahead of an old snapshot), with its scores in the scorer variables. With a
//! constrained sort (rule `arangosearch-constrained-sort`) the index gives only the best hits
//! in the sort's order, and more when documents of the snapshot are missing among them.
//! Without materialization (rule `no-document-materialization-arangosearch`) the snapshot is
//! only asked whether it holds each hit's document, or, when the rows carry nothing but their
//! number, the index counts them in the snapshot's state where it can prove it has it. With the
//! view's primary sort (rule `handle-arangosearch-views`) the index gives the hits in that
//! order, only the first offset+count of them under a LIMIT; with stored values (rules
//! `no-document-materialization-arangosearch`, `late-document-materialization-arangosearch`)
//! the rows carry the attributes the index keeps, and a MaterializeNode after the LIMIT reads
//! the documents of the rows left.

use std::collections::VecDeque;

use quiver_errors::Result;
use serde_json::{json, Value};

use super::{ExecCtx, Op, Operator, Row};
use crate::expr::Slot;
use crate::plan::{Materialize, ScorersSort, ViewNode, ViewValue};
use crate::source::{Scorer, SearchQuery, SortedRead, ViewHit};

pub(super) struct ViewOp {
    pub(super) input: Op,
    pub(super) node: ViewNode,
    pub(super) row: Option<Row>,
    /// The current row's index query (OFFSET_INFO reads it per document).
    pub(super) query: SearchQuery,
    pub(super) hits: VecDeque<ViewHit>,
    /// Rows still to produce for the current input row when the index counted them
    /// (nothing of a document is read, [`Transaction::count_view`]).
    ///
    /// [`Transaction::count_view`]: crate::source::Transaction::count_view
    pub(super) counted: u64,
}

impl ViewOp {
    pub(super) fn new(input: Op, node: ViewNode) -> ViewOp {
        ViewOp {
            input,
            node,
            row: None,
            query: SearchQuery::Nothing,
            hits: VecDeque::new(),
            counted: 0,
        }
    }

    /// Whether rows need nothing but their number: no document, score or offset is read.
    fn rows_only(&self) -> bool {
        self.node.materialize == Materialize::Nothing
            && self.node.scorers.is_empty()
            && self.node.offset_infos.is_empty()
            && self.node.scorers_sort.is_none()
    }

    /// Whether the hits must carry the index's primary sort and stored values.
    fn reads_values(&self) -> bool {
        match &self.node.materialize {
            Materialize::Values(values) | Materialize::Late(values) => {
                values.iter().any(|v| v.position.is_some())
            }
            _ => false,
        }
    }

    /// What the row's variable holds for `hit`; None when the query's snapshot does not hold
    /// the document.
    fn materialize(&self, ctx: &mut ExecCtx, hit: &ViewHit) -> Result<Option<Value>> {
        ctx.stats.document_lookups += 1;
        Ok(match &self.node.materialize {
            Materialize::Values(values) => ctx
                .txn
                .exists(&hit.collection, &hit.key)?
                .then(|| view_values(hit, values, false)),
            Materialize::Late(values) => ctx
                .txn
                .exists(&hit.collection, &hit.key)?
                .then(|| view_values(hit, values, true)),
            Materialize::Document => ctx.txn.get(&hit.collection, &hit.key)?,
            Materialize::Identity => ctx.txn.exists(&hit.collection, &hit.key)?.then(
                || json!({"_key": hit.key, "_id": format!("{}/{}", hit.collection, hit.key)}),
            ),
            Materialize::Nothing => ctx
                .txn
                .exists(&hit.collection, &hit.key)?
                .then_some(Value::Null),
        })
    }
}

impl Operator for ViewOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let Some(row) = &self.row {
                if self.counted > 0 {
                    self.counted -= 1;
                    ctx.check()?;
                    ctx.stats.scanned_index += 1;
                    let mut r = row.clone();
                    r[self.node.out] = Value::Null;
                    return Ok(Some(r));
                }
                while let Some(hit) = self.hits.pop_front() {
                    ctx.check()?;
                    let Some(doc) = self.materialize(ctx, &hit)? else {
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
            if self.rows_only() {
                if let Some(n) = ctx.txn.count_view(
                    &self.node.view,
                    &query,
                    self.node.collections.as_deref(),
                    self.node.wait_for_sync,
                )? {
                    self.counted = n;
                    self.hits.clear();
                    self.query = query;
                    self.row = Some(row);
                    continue;
                }
            }
            let scorers: Vec<_> = self.node.scorers.iter().map(|s| s.0.clone()).collect();
            let hits = match &self.node.scorers_sort {
                None if self.node.primary_sort.is_some()
                    || self.node.first.is_some()
                    || self.reads_values() =>
                {
                    self.sorted_hits(ctx, &query, &scorers)?
                }
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
        first_present(ctx, limit, |ctx, want| {
            ctx.txn.search_view_top(
                &self.node.view,
                query,
                self.node.collections.as_deref(),
                scorers,
                &sort.order,
                want,
                self.node.wait_for_sync,
            )
        })
    }

    /// The hits in the order of the view's primary sort when the loop reads in it, otherwise
    /// in the index's order (the first offset+count under a LIMIT, as many more as documents
    /// the snapshot lacks), with the index's values when the rows take attributes from them.
    fn sorted_hits(
        &self,
        ctx: &mut ExecCtx,
        query: &SearchQuery,
        scorers: &[Scorer],
    ) -> Result<Vec<ViewHit>> {
        let buckets = self.node.primary_sort.map_or(0, |p| p.buckets);
        let values = self.reads_values();
        let search = |ctx: &mut ExecCtx, limit: Option<usize>| {
            ctx.txn.search_view_sorted(
                &self.node.view,
                query,
                self.node.collections.as_deref(),
                scorers,
                &SortedRead {
                    buckets,
                    limit,
                    values,
                },
                self.node.wait_for_sync,
            )
        };
        let limit = match self.node.primary_sort {
            Some(read) => read.limit,
            None => self.node.first,
        };
        match limit {
            None => search(ctx, None),
            Some(limit) => {
                let limit = usize::try_from(limit).unwrap_or(usize::MAX);
                first_present(ctx, limit, |ctx, want| search(ctx, Some(want)))
            }
        }
    }
}

/// The hits of the first `limit` rows: `fetch(want)` gives the first `want` hits of an order;
/// as many more are asked for as name documents the query's snapshot does not hold (those
/// rows are skipped, and the rows after them move up).
fn first_present(
    ctx: &mut ExecCtx,
    limit: usize,
    mut fetch: impl FnMut(&mut ExecCtx, usize) -> Result<Vec<ViewHit>>,
) -> Result<Vec<ViewHit>> {
    let mut want = limit;
    loop {
        let mut hits = fetch(ctx, want)?;
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

/// The object a view loop without materialization puts into its variable: the attributes
/// read, from the hit's values (`_key`, `_id` from its identity; with `identity` always).
fn view_values(hit: &ViewHit, values: &[ViewValue], identity: bool) -> Value {
    let mut obj = serde_json::Map::with_capacity(values.len() + 2);
    if identity {
        obj.insert("_key".into(), json!(hit.key));
        obj.insert(
            "_id".into(),
            json!(format!("{}/{}", hit.collection, hit.key)),
        );
    }
    for v in values {
        let value = match (v.position, v.name.as_str()) {
            (Some(at), _) => hit.values.get(at).cloned().unwrap_or(Value::Null),
            (None, "_key") => json!(hit.key),
            (None, _) => json!(format!("{}/{}", hit.collection, hit.key)),
        };
        obj.insert(v.name.clone(), value);
    }
    Value::Object(obj)
}

/// The MaterializeNode of late materialization: replaces the `{_key, _id, …}` of a view
/// loop's variable by the document, read from the query's snapshot (rows whose document it
/// does not hold are dropped; the view loop already checked each).
pub(super) struct MaterializeOp {
    pub(super) input: Op,
    pub(super) var: Slot,
}

impl Operator for MaterializeOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            let Some(mut row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            ctx.check()?;
            let id = row[self.var].get("_id").and_then(Value::as_str);
            let Some((collection, key)) = id.and_then(|id| id.split_once('/')) else {
                return Ok(Some(row));
            };
            ctx.stats.document_lookups += 1;
            if let Some(doc) = ctx.txn.get(collection, key)? {
                row[self.var] = doc;
                return Ok(Some(row));
            }
        }
    }
}
