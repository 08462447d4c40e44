//! The operator of an mdi `IndexNode` (`mdi_select`). Per input row it turns the prefix
//! values and dimension bounds into a box — with AQL's order between numbers and other types,
//! so the answer is the removed filter's — and produces the documents the index finds in it.
//! Without the index (a source that cannot use it) it scans the collection and keeps the
//! documents in the box.

use std::collections::VecDeque;

use quiver_core::mdi_index::{encode, in_box, point_of, MdiBox};
use quiver_errors::Result;
use serde_json::Value;

use super::{ExecCtx, Op, Operator, Row};
use crate::plan::{IndexScan, MdiSearch};

pub(super) struct MdiScanOp {
    input: Op,
    scan: IndexScan,
    search: MdiSearch,
    row: Option<Row>,
    buffer: VecDeque<Value>,
}

/// One bound's effect on a dimension: a number bounds it, a value every number passes leaves
/// it open, a value no number passes empties the box.
enum Limit {
    At(u64),
    Open,
    Empty,
}

/// `x > v` / `x >= v` for numbers `x`: null and booleans sort before every number, strings,
/// arrays and objects after.
fn lower_limit(v: &Value, inclusive: bool) -> Limit {
    match v {
        Value::Number(n) => {
            let c = encode(n.as_f64().unwrap_or(0.0));
            match if inclusive { Some(c) } else { c.checked_add(1) } {
                Some(c) => Limit::At(c),
                None => Limit::Empty,
            }
        }
        Value::Null | Value::Bool(_) => Limit::Open,
        _ => Limit::Empty,
    }
}

/// `x < v` / `x <= v` for numbers `x`.
fn upper_limit(v: &Value, inclusive: bool) -> Limit {
    match v {
        Value::Number(n) => {
            let c = encode(n.as_f64().unwrap_or(0.0));
            match if inclusive { Some(c) } else { c.checked_sub(1) } {
                Some(c) => Limit::At(c),
                None => Limit::Empty,
            }
        }
        Value::Null | Value::Bool(_) => Limit::Empty,
        _ => Limit::Open,
    }
}

impl MdiScanOp {
    pub fn new(input: Op, mut scan: IndexScan) -> MdiScanOp {
        let search = *scan.mdi.take().expect("an mdi scan carries its search");
        MdiScanOp {
            input,
            scan,
            search,
            row: None,
            buffer: VecDeque::new(),
        }
    }

    /// The box of one input row; None when no document can be in it.
    fn make_box(&self, ctx: &mut ExecCtx, row: &Row) -> Result<Option<MdiBox>> {
        let mut prefix = Vec::with_capacity(self.search.prefix.len());
        for e in &self.search.prefix {
            prefix.push(ctx.eval(e, row)?);
        }
        let (mut lo, mut hi) = (Vec::new(), Vec::new());
        for dim in &self.search.dims {
            let (mut l, mut h) = (0u64, u64::MAX);
            for (e, inclusive) in &dim.lower {
                match lower_limit(&ctx.eval(e, row)?, *inclusive) {
                    Limit::At(c) => l = l.max(c),
                    Limit::Open => {}
                    Limit::Empty => return Ok(None),
                }
            }
            for (e, inclusive) in &dim.upper {
                match upper_limit(&ctx.eval(e, row)?, *inclusive) {
                    Limit::At(c) => h = h.min(c),
                    Limit::Open => {}
                    Limit::Empty => return Ok(None),
                }
            }
            if l > h {
                return Ok(None);
            }
            lo.push(l);
            hi.push(h);
        }
        Ok(Some(MdiBox { prefix, lo, hi }))
    }

    /// The documents in `b`: through the index, else by a scan checked the same way.
    fn documents(&self, ctx: &mut ExecCtx, b: &MdiBox) -> Result<Vec<Value>> {
        if let Some(found) = ctx
            .txn
            .mdi_lookup(&self.scan.collection, self.scan.index.id, b)?
        {
            ctx.stats.scanned_index += found.len() as u64;
            return Ok(found);
        }
        let s = &self.search;
        let mut out = Vec::new();
        for doc in ctx.txn.scan(&self.scan.collection)? {
            ctx.check()?;
            ctx.stats.scanned_full += 1;
            let doc = doc?;
            let Some(map) = doc.as_object() else { continue };
            let Some((prefix, point)) = point_of(&s.fields, &s.prefix_fields, s.sparse, map) else {
                continue;
            };
            let same_prefix = prefix.len() == b.prefix.len()
                && prefix
                    .iter()
                    .zip(&b.prefix)
                    .all(|(a, w)| crate::value::compare(a, w).is_eq());
            if same_prefix && in_box(&point, b) {
                out.push(doc);
            }
        }
        Ok(out)
    }
}

impl Operator for MdiScanOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let (Some(row), Some(doc)) = (&self.row, self.buffer.pop_front()) {
                let mut r = row.clone();
                r[self.scan.out] = doc;
                return Ok(Some(r));
            }
            match self.input.next(ctx)? {
                Some(row) => {
                    self.buffer.clear();
                    if let Some(b) = self.make_box(ctx, &row)? {
                        self.buffer.extend(self.documents(ctx, &b)?);
                    }
                    self.row = Some(row);
                }
                None => return Ok(None),
            }
        }
    }
}
