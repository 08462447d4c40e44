//! The operator of an `EnumerateNearVectorNode` (rule `use-vector-index`). Per input row it
//! evaluates the query point and the search options, asks the vector index for the nearest
//! documents (the entries of the `nProbe` nearest lists, best first) and produces each with
//! its similarity or distance, keeping only those that pass a pushed FILTER, at most
//! `offset + limit` of them.
//!
//! While the index is still being built, the same answer is computed exactly by a scan (every
//! document with a valid vector, ranked), so a query never fails for want of the index.

use std::collections::VecDeque;

use quiver_core::vector::{self, Metric};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use super::{ExecCtx, Op, Operator, Row};
use crate::plan::NearVectors;
use crate::value::{to_bool, type_name};

pub(super) struct NearVectorsOp {
    input: Op,
    near: NearVectors,
    row: Option<Row>,
    buffer: VecDeque<(f64, Value)>,
}

impl NearVectorsOp {
    pub fn new(input: Op, near: NearVectors) -> NearVectorsOp {
        NearVectorsOp {
            input,
            near,
            row: None,
            buffer: VecDeque::new(),
        }
    }

    /// The query point as a vector of the index's dimension (1542 otherwise).
    fn query(&self, ctx: &mut ExecCtx, row: &Row) -> Result<Vec<f32>> {
        let value = ctx.eval(&self.near.query, row)?;
        let dim = self.near.params.dimension;
        let mismatch = |message: String| {
            Error::with_message(ErrorCode::QueryFunctionArgumentTypeMismatch, message)
        };
        match vector::vector_of(Some(&value), dim) {
            Ok(v) => Ok(v),
            Err(vector::NotAVector::WrongDimension(found)) => Err(mismatch(format!(
                "a vector must be of dimension {dim}, but is {found}"
            ))),
            Err(_) if value.is_array() => Err(mismatch(
                "a vector must consist of numbers only".to_string(),
            )),
            Err(_) => Err(mismatch(format!(
                "query point must be a vector, but is a {}",
                type_name(&value)
            ))),
        }
    }

    /// `nProbe` from the call's options object (1501 when it is not a positive integer),
    /// else the index's `defaultNProbe`. A non-object third argument is ignored, as in
    /// ArangoDB.
    fn n_probe(&self, ctx: &mut ExecCtx, row: &Row) -> Result<usize> {
        let default = self.near.params.default_n_probe;
        let Some(options) = &self.near.options else {
            return Ok(default);
        };
        let Value::Object(options) = ctx.eval(options, row)? else {
            return Ok(default);
        };
        let parse_error = |message: &str| {
            Error::with_message(
                ErrorCode::QueryParse,
                format!("error parsing searchParameters: {message}!"),
            )
        };
        let mut n_probe = default;
        for (key, value) in &options {
            match key.as_str() {
                "nProbe" => {
                    n_probe = value
                        .as_u64()
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| parse_error("nProbe must be 1 or greater"))?
                        .try_into()
                        .unwrap_or(usize::MAX);
                }
                other => {
                    return Err(parse_error(&format!(
                        "Found unexpected attribute '{other}'"
                    )))
                }
            }
        }
        Ok(n_probe)
    }

    /// Best-first candidates for one input row: through the index, else exactly by a scan.
    fn candidates(
        &self,
        ctx: &mut ExecCtx,
        query: &[f32],
        n_probe: usize,
        wanted: usize,
    ) -> Result<Vec<(f64, Value)>> {
        if let Some(found) = ctx.txn.vector_lookup(
            &self.near.collection,
            self.near.index.id,
            query,
            n_probe,
            wanted,
        )? {
            ctx.stats.scanned_index += found.len() as u64;
            return Ok(found);
        }
        let metric: Metric = self.near.metric();
        let field = self.near.index.fields.first().cloned().unwrap_or_default();
        let mut prepared = query.to_vec();
        metric.prepare(&mut prepared);
        let mut scored: Vec<(f64, Value)> = Vec::new();
        for doc in ctx.txn.scan(&self.near.collection)? {
            ctx.check()?;
            ctx.stats.scanned_full += 1;
            let doc = doc?;
            let vector = doc.as_object().and_then(|m| {
                vector::vector_of(vector::attribute(m, &field), self.near.params.dimension).ok()
            });
            let Some(mut v) = vector else { continue };
            metric.prepare(&mut v);
            scored.push((metric.score(&v, &prepared), doc));
        }
        // Best first, ties by key: the order `Metric::rank` gives the index's hits.
        let key = |doc: &Value| doc.get("_key").and_then(Value::as_str).map(str::to_owned);
        scored.sort_by(|a, b| {
            metric
                .order(a.0, b.0)
                .then_with(|| key(&a.1).cmp(&key(&b.1)))
        });
        scored.truncate(wanted);
        Ok(scored)
    }

    /// Fills the buffer for a new input row.
    fn start(&mut self, ctx: &mut ExecCtx, row: &Row) -> Result<()> {
        let query = self.query(ctx, row)?;
        let n_probe = self.n_probe(ctx, row)?;
        let wanted =
            usize::try_from(self.near.offset.saturating_add(self.near.limit)).unwrap_or(usize::MAX);
        // A pushed filter may reject candidates: read every entry of the probed lists.
        let fetch = if self.near.filter.is_some() {
            usize::MAX
        } else {
            wanted
        };
        let found = self.candidates(ctx, &query, n_probe, fetch)?;
        self.buffer.clear();
        for (score, doc) in found {
            if self.buffer.len() >= wanted {
                break;
            }
            if let Some(filter) = &self.near.filter {
                ctx.check()?;
                let mut r = row.clone();
                r[self.near.out] = doc;
                if !to_bool(&ctx.eval(filter, &r)?) {
                    continue;
                }
                let doc = std::mem::take(&mut r[self.near.out]);
                self.buffer.push_back((score, doc));
            } else {
                self.buffer.push_back((score, doc));
            }
        }
        Ok(())
    }
}

impl Operator for NearVectorsOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let (Some(row), Some((score, doc))) = (&self.row, self.buffer.pop_front()) {
                let mut r = row.clone();
                r[self.near.out] = doc;
                r[self.near.distance_out] = serde_json::Number::from_f64(score)
                    .map(Value::Number)
                    .unwrap_or(Value::Null);
                return Ok(Some(r));
            }
            match self.input.next(ctx)? {
                Some(row) => {
                    self.start(ctx, &row)?;
                    self.row = Some(row);
                }
                None => return Ok(None),
            }
        }
    }
}
