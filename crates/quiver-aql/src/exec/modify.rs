//! Data modification (`InsertNode` … `UpsertNode`): addresses documents, applies `OPTIONS`
//! and produces `NEW`/`OLD`.

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{Map, Value};

use super::{ExecCtx, Op, Operator, Row};
use crate::ast::ModifyKind;
use crate::plan::ModifySpec;
use crate::source::WriteOutcome;
use crate::value::{self};

pub(super) struct ModifyOp {
    pub(super) input: Op,
    pub(super) spec: Box<ModifySpec>,
}

/// The document (with `_key`) that UPDATE/REPLACE/REMOVE address: `key_or_doc` may be a key
/// string, an `_id`, or an object with `_key`.
pub(super) fn addressed(
    key_or_doc: &Value,
    patch: Option<&Value>,
    collection: &str,
) -> Result<Value> {
    let bad_key = || Error::with_message(ErrorCode::DocumentKeyMissing, "missing document key");
    let key = match key_or_doc {
        Value::String(s) => match s.split_once('/') {
            Some((c, k)) if c == collection => k.to_string(),
            Some(_) => return Err(Error::new(ErrorCode::DocumentHandleBad)),
            None => s.clone(),
        },
        Value::Object(m) => match m.get("_key") {
            Some(Value::String(k)) => k.clone(),
            _ => match m
                .get("_id")
                .and_then(Value::as_str)
                .and_then(|id| id.split_once('/'))
            {
                Some((_, k)) => k.to_string(),
                None => return Err(bad_key()),
            },
        },
        _ => return Err(Error::new(ErrorCode::DocumentKeyBad)),
    };
    let mut doc = match patch.unwrap_or(key_or_doc) {
        Value::Object(m) => m.clone(),
        Value::String(_) if patch.is_none() => Map::new(),
        _ => return Err(Error::new(ErrorCode::DocumentTypeInvalid)),
    };
    if patch.is_some() {
        // With `WITH`, a `_rev` in the key document is the one to check.
        if let Some(rev) = key_or_doc.get("_rev") {
            doc.entry("_rev").or_insert(rev.clone());
        }
    }
    doc.insert("_key".into(), Value::String(key));
    Ok(Value::Object(doc))
}

/// Whether `doc` has every attribute of `example` with an equal value (UPSERT's search).
pub(super) fn matches_example(doc: &Value, example: &Map<String, Value>) -> bool {
    example.iter().all(|(k, v)| match (doc.get(k), v) {
        (Some(Value::Object(d)), Value::Object(e)) => matches_example(&Value::Object(d.clone()), e),
        (Some(d), v) => value::equals(d, v),
        (None, Value::Null) => true,
        (None, _) => false,
    })
}

impl ModifyOp {
    /// UPSERT once the search is done: inserts the INSERT document when nothing was `found`,
    /// else updates (or replaces) the found document with the UPDATE expression (`OLD` bound).
    fn upsert_found(
        &self,
        row: &mut Row,
        ctx: &mut ExecCtx,
        coll: &str,
        found: Option<Value>,
    ) -> Result<WriteOutcome> {
        let spec = &self.spec;
        match found {
            None => {
                let doc = spec.second.map_or(Value::Null, |s| row[s].clone());
                if !doc.is_object() {
                    return Err(Error::new(ErrorCode::DocumentTypeInvalid));
                }
                ctx.txn.insert(coll, doc, &spec.options)
            }
            Some(old) => {
                if let Some(slot) = spec.out_old {
                    row[slot] = old.clone();
                }
                let update = match &spec.upsert_update {
                    Some(e) => ctx.eval(e, row)?,
                    None => Value::Object(Map::new()),
                };
                let doc = addressed(&old, Some(&update), coll)?;
                if spec.upsert_replace {
                    ctx.txn.replace(coll, doc, &spec.options)
                } else {
                    ctx.txn.update(coll, doc, &spec.options)
                }
            }
        }
    }

    fn apply(&mut self, row: &mut Row, ctx: &mut ExecCtx) -> Result<()> {
        let spec = &self.spec;
        let coll = spec.collection.as_str();
        let first = row[spec.first].clone();
        let outcome = match spec.kind {
            ModifyKind::Insert => {
                if !first.is_object() {
                    return Err(Error::new(ErrorCode::DocumentTypeInvalid));
                }
                ctx.txn.insert(coll, first, &spec.options)?
            }
            ModifyKind::Update | ModifyKind::Replace => {
                let doc = addressed(&first, spec.second.map(|s| &row[s]), coll)?;
                if spec.kind == ModifyKind::Update {
                    ctx.txn.update(coll, doc, &spec.options)?
                } else {
                    ctx.txn.replace(coll, doc, &spec.options)?
                }
            }
            ModifyKind::Remove => {
                let doc = addressed(&first, None, coll)?;
                ctx.txn.remove(coll, doc, &spec.options)?
            }
            ModifyKind::Upsert if spec.upsert_filter.is_some() => {
                let condition = spec.upsert_filter.as_ref().expect("checked by the guard");
                let mut found = None;
                let mut iter = ctx.txn.scan(coll)?;
                for doc in iter.by_ref() {
                    let doc = doc?;
                    ctx.stats.scanned_full += 1;
                    let holds = ctx.eval_with_current(condition, row, Some(&doc))?;
                    if crate::value::to_bool(&holds) {
                        found = Some(doc);
                        break;
                    }
                }
                drop(iter);
                self.upsert_found(row, ctx, coll, found)?
            }
            ModifyKind::Upsert => {
                let Value::Object(example) = &first else {
                    return Err(Error::with_message(
                        ErrorCode::QueryParse,
                        "AQL: UPSERT search document must be an object",
                    ));
                };
                let mut found = None;
                if let Some(Value::String(k)) = example.get("_key") {
                    found = ctx
                        .txn
                        .get(coll, k)?
                        .filter(|d| matches_example(d, example));
                } else {
                    let mut iter = ctx.txn.scan(coll)?;
                    for doc in iter.by_ref() {
                        let doc = doc?;
                        ctx.stats.scanned_full += 1;
                        if matches_example(&doc, example) {
                            found = Some(doc);
                            break;
                        }
                    }
                }
                self.upsert_found(row, ctx, coll, found)?
            }
        };
        if outcome.new.is_none() && outcome.old.is_none() {
            ctx.stats.writes_ignored += 1;
        } else {
            ctx.stats.writes_executed += 1;
        }
        if let Some(slot) = spec.out_new {
            row[slot] = outcome.new.unwrap_or(Value::Null);
        }
        if let Some(slot) = spec.out_old {
            row[slot] = outcome.old.unwrap_or(Value::Null);
        }
        Ok(())
    }
}

impl Operator for ModifyOp {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            let Some(mut row) = self.input.next(ctx)? else {
                return Ok(None);
            };
            ctx.check()?;
            match self.apply(&mut row, ctx) {
                Ok(()) => return Ok(Some(row)),
                Err(e) if self.spec.ignore_errors && e.code != ErrorCode::QueryKilled => {
                    ctx.stats.writes_ignored += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}
