//! The operators that start or widen the row stream: the singleton row, a plan that can
//! produce nothing, the full collection scan (`EnumerateCollectionNode`), the primary-index
//! lookup (`IndexNode` on `_key`/`_id`) and iteration over an array or range
//! (`EnumerateListNode`).

use std::collections::{HashSet, VecDeque};

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use super::{ExecCtx, Op, Operator, Row};
use crate::expr::eval::{range_bounds, RangeIter};
use crate::expr::Slot;
use crate::plan::ListSource;
use crate::source::DocIter;
use crate::value::{self, ValueKey};

pub(super) struct SingletonOp {
    pub(super) row: Option<Row>,
}

impl Operator for SingletonOp {
    fn next(&mut self, _ctx: &mut ExecCtx) -> Result<Option<Row>> {
        Ok(self.row.take())
    }
}

pub(super) struct NoResultsOp;

impl Operator for NoResultsOp {
    fn next(&mut self, _ctx: &mut ExecCtx) -> Result<Option<Row>> {
        Ok(None)
    }
}

pub(super) struct ScanOp {
    pub(super) input: Op,
    pub(super) out: Slot,
    pub(super) collection: String,
    pub(super) projections: Option<Vec<String>>,
    pub(super) row: Option<Row>,
    pub(super) iter: Option<DocIter>,
}

impl Operator for ScanOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let (Some(row), Some(iter)) = (&self.row, &mut self.iter) {
                if let Some(doc) = iter.next() {
                    let doc = doc?;
                    ctx.check()?;
                    ctx.stats.scanned_full += 1;
                    let mut r = row.clone();
                    r[self.out] = doc;
                    return Ok(Some(r));
                }
            }
            match self.input.next(ctx)? {
                Some(row) => {
                    self.iter = Some(match &self.projections {
                        Some(attrs) => ctx.txn.scan_projected(&self.collection, attrs)?,
                        None => ctx.txn.scan(&self.collection)?,
                    });
                    self.row = Some(row);
                }
                None => return Ok(None),
            }
        }
    }
}

pub(super) struct IndexOp {
    pub(super) input: Op,
    pub(super) out: Slot,
    pub(super) collection: String,
    pub(super) lookup: crate::expr::CExpr,
    pub(super) multi: bool,
    pub(super) row: Option<Row>,
    pub(super) pending: VecDeque<Value>,
}

impl IndexOp {
    /// The key a lookup value designates in this collection (keys, `_id`s and documents are
    /// accepted, as the primary index does).
    fn key_of(&self, v: &Value) -> Option<String> {
        let handle = match v {
            Value::String(s) => s.as_str(),
            Value::Object(m) => match (m.get("_key"), m.get("_id")) {
                (Some(Value::String(k)), _) => return Some(k.clone()),
                (_, Some(Value::String(id))) => id.as_str(),
                _ => return None,
            },
            _ => return None,
        };
        match handle.split_once('/') {
            Some((coll, key)) if coll == self.collection => Some(key.to_string()),
            Some(_) => None,
            None => Some(handle.to_string()),
        }
    }
}

impl Operator for IndexOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let Some(row) = &self.row {
                while let Some(v) = self.pending.pop_front() {
                    let Some(key) = self.key_of(&v) else { continue };
                    ctx.stats.document_lookups += 1;
                    if let Some(doc) = ctx.txn.get(&self.collection, &key)? {
                        ctx.stats.scanned_index += 1;
                        let mut r = row.clone();
                        r[self.out] = doc;
                        return Ok(Some(r));
                    }
                }
            }
            match self.input.next(ctx)? {
                Some(row) => {
                    let v = ctx.eval(&self.lookup, &row)?;
                    self.pending.clear();
                    if self.multi {
                        if let Value::Array(items) = v {
                            // IN lists may repeat keys; the index returns each document once.
                            let mut seen = HashSet::new();
                            for i in items {
                                if seen.insert(ValueKey(i.clone())) {
                                    self.pending.push_back(i);
                                }
                            }
                        }
                    } else {
                        self.pending.push_back(v);
                    }
                    self.row = Some(row);
                }
                None => return Ok(None),
            }
        }
    }
}

pub(super) enum ListItems {
    None,
    Values(std::vec::IntoIter<Value>),
    Range(RangeIter),
}

pub(super) struct ListOp {
    pub(super) input: Op,
    pub(super) out: Slot,
    pub(super) source: ListSource,
    pub(super) row: Option<Row>,
    pub(super) items: ListItems,
}

impl Operator for ListOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let Some(row) = &self.row {
                let item = match &mut self.items {
                    ListItems::None => None,
                    ListItems::Values(it) => it.next(),
                    ListItems::Range(it) => it.next().map(Value::from),
                };
                if let Some(item) = item {
                    ctx.check()?;
                    let mut r = row.clone();
                    r[self.out] = item;
                    return Ok(Some(r));
                }
            }
            let Some(row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            self.items = match &self.source {
                ListSource::Range(a, b) => {
                    let from = ctx.eval(a, &row)?;
                    let to = ctx.eval(b, &row)?;
                    let (from, to) = range_bounds(&from, &to);
                    ListItems::Range(RangeIter::new(from, to))
                }
                ListSource::Slot(s) => match &row[*s] {
                    Value::Array(items) => ListItems::Values(items.clone().into_iter()),
                    other => {
                        return Err(Error::with_message(
                            ErrorCode::QueryArrayExpected,
                            format!(
                                "AQL: collection or array expected as operand to FOR loop; you provided a value of type '{}' (while executing)",
                                value::type_name(other)
                            ),
                        ))
                    }
                },
            };
            self.row = Some(row);
        }
    }
}
