//! Expression evaluation (tree-walking over [`CExpr`]). AQL's rule is "warn and return null"
//! for runtime type problems and errors only where ArangoDB raises them; warnings collect in
//! the [`EvalEnv`].

use std::cmp::Ordering;
use std::collections::HashMap;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{Map, Value};

use crate::ast::{BinOp, Quantifier, UnaryOp};
use crate::expr::{CExpr, CKey};
use crate::functions::{DataAccess, FunctionContext};
use crate::source::Transaction;
use crate::value::{self, ArithOp, Warning};

/// Largest array a range expression may materialize (`1..n` inside an expression); FOR loops
/// over ranges stream and are not limited by this.
pub const MAX_RANGE_MATERIALIZE: f64 = 10_000_000.0;

/// At most this many compiled regular expressions are cached per query.
const REGEX_CACHE_LIMIT: usize = 64;

/// Per-query evaluation state that outlives single evaluations.
#[derive(Default)]
pub struct EnvState {
    pub warnings: Vec<Warning>,
    pub max_warnings: usize,
    pub fail_on_warning: bool,
    pub regexes: HashMap<String, Option<regex::Regex>>,
    /// The query's kill flag and `maxRuntime` deadline, handed to functions that run long
    /// on a single call (`SLEEP`, the Levenshtein and n-gram functions, geo scans).
    pub killed: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    pub deadline: Option<std::time::Instant>,
    /// The query's memory budget (bytes, estimated): a function that would build one value
    /// larger than this fails with 32 before it allocates (`FunctionContext::reserve`).
    pub memory_limit: Option<u64>,
}

impl EnvState {
    pub fn new(max_warnings: usize, fail_on_warning: bool) -> EnvState {
        EnvState {
            warnings: Vec::new(),
            max_warnings,
            fail_on_warning,
            regexes: HashMap::new(),
            killed: None,
            deadline: None,
            memory_limit: None,
        }
    }

    pub fn warn(&mut self, w: Warning) -> Result<()> {
        if self.fail_on_warning {
            return Err(Error::with_message(w.code, w.message));
        }
        if self.warnings.len() < self.max_warnings {
            self.warnings.push(w);
        }
        Ok(())
    }

    fn regex(&mut self, pattern: &str, case_insensitive: bool) -> Option<regex::Regex> {
        let cache_key = format!("{}{pattern}", if case_insensitive { 'i' } else { 's' });
        if let Some(r) = self.regexes.get(&cache_key) {
            return r.clone();
        }
        let compiled = regex::RegexBuilder::new(pattern)
            .case_insensitive(case_insensitive)
            .size_limit(1 << 20)
            .build()
            .ok();
        if self.regexes.len() < REGEX_CACHE_LIMIT {
            self.regexes.insert(cache_key, compiled.clone());
        }
        compiled
    }
}

/// Everything expression evaluation needs besides the row.
pub struct EvalEnv<'a> {
    pub txn: Option<&'a dyn Transaction>,
    pub database: &'a str,
    pub state: &'a mut EnvState,
}

impl EvalEnv<'_> {
    pub fn warn(&mut self, w: Warning) -> Result<()> {
        self.state.warn(w)
    }
}

struct TxnData<'a> {
    txn: &'a dyn Transaction,
    database: &'a str,
}

impl DataAccess for TxnData<'_> {
    fn document(&self, collection: &str, key: &str) -> Result<Option<Value>> {
        self.txn.get(collection, key)
    }

    fn collection_count(&self, collection: &str) -> Result<u64> {
        self.txn.count(collection)
    }

    fn database_name(&self) -> String {
        self.database.to_string()
    }

    fn indexes(&self, collection: &str) -> Result<Vec<Value>> {
        self.txn.indexes(collection)
    }

    fn collections(&self) -> Result<Vec<(String, String)>> {
        self.txn.collections()
    }

    fn collection_schema(&self, collection: &str) -> Result<Value> {
        self.txn.collection_schema(collection)
    }

    fn analyzer(&self, name: &str) -> Result<std::sync::Arc<quiver_core::analyzers::Analyzer>> {
        self.txn.analyzer(name)
    }

    fn scan(&self, collection: &str) -> Result<crate::source::DocIter> {
        self.txn.scan(collection)
    }

    fn geo_lookup(
        &self,
        collection: &str,
        index: u64,
        rect: &quiver_core::geo::Rect,
    ) -> Result<Option<Vec<Value>>> {
        self.txn.geo_lookup(collection, index, rect)
    }

    fn fulltext_lookup(
        &self,
        collection: &str,
        index: u64,
        query: &quiver_core::fulltext::Query,
    ) -> Result<Option<Vec<Value>>> {
        self.txn.fulltext_lookup(collection, index, query)
    }
}

/// Evaluates `e` over `row`; `current` is the element inside an array expansion.
pub fn eval(
    e: &CExpr,
    row: &[Value],
    current: Option<&Value>,
    env: &mut EvalEnv<'_>,
) -> Result<Value> {
    match e {
        // The hot leaves need no stack check.
        CExpr::Const(v) => Ok(v.clone()),
        CExpr::Var(s) => Ok(row.get(*s).cloned().unwrap_or(Value::Null)),
        _ => crate::deep(|| eval_inner(e, row, current, env)),
    }
}

/// For an array comparison `a <quantifier> op b`: how many elements of `a` compare true with
/// `b`, and how many elements there are; `None` when `a` is no array.
fn array_matches(
    op: BinOp,
    a: &CExpr,
    b: &CExpr,
    row: &[Value],
    current: Option<&Value>,
    env: &mut EvalEnv<'_>,
) -> Result<Option<(usize, usize)>> {
    let left = eval(a, row, current, env)?;
    let right = eval(b, row, current, env)?;
    let Value::Array(items) = left else {
        return Ok(None);
    };
    let mut matches = 0usize;
    for item in &items {
        if compare_op(op, item, &right, env)? {
            matches += 1;
        }
    }
    Ok(Some((matches, items.len())))
}

fn eval_inner(
    e: &CExpr,
    row: &[Value],
    current: Option<&Value>,
    env: &mut EvalEnv<'_>,
) -> Result<Value> {
    Ok(match e {
        CExpr::Const(v) => v.clone(),
        CExpr::Var(s) => row.get(*s).cloned().unwrap_or(Value::Null),
        CExpr::Current => current.cloned().unwrap_or(Value::Null),
        CExpr::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for i in items {
                out.push(eval(i, row, current, env)?);
            }
            Value::Array(out)
        }
        CExpr::Object(members) => {
            let mut map = Map::with_capacity(members.len());
            for (k, v) in members {
                let key = match k {
                    CKey::Static(s) => s.clone(),
                    CKey::Computed(k) => value::to_string(&eval(k, row, current, env)?),
                };
                let val = eval(v, row, current, env)?;
                map.insert(key, val);
            }
            Value::Object(map)
        }
        CExpr::Attribute(base, name) => {
            // Avoid cloning whole documents for `doc.attr`.
            if let CExpr::Var(s) = &**base {
                return Ok(row
                    .get(*s)
                    .map_or(Value::Null, |v| value::attribute(v, name).clone()));
            }
            let b = eval(base, row, current, env)?;
            value::attribute(&b, name).clone()
        }
        CExpr::Index(base, index) => {
            let i = eval(index, row, current, env)?;
            if let CExpr::Var(s) = &**base {
                return Ok(row
                    .get(*s)
                    .map_or(Value::Null, |v| value::access(v, &i).clone()));
            }
            let b = eval(base, row, current, env)?;
            value::access(&b, &i).clone()
        }
        CExpr::Expansion {
            input,
            depth,
            filter,
            limit,
            project,
        } => {
            let mut items = match eval(input, row, current, env)? {
                Value::Array(a) => a,
                _ => return Ok(Value::Array(Vec::new())),
            };
            for _ in 1..*depth {
                let mut flat = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Value::Array(inner) => flat.extend(inner),
                        other => flat.push(other),
                    }
                }
                items = flat;
            }
            let (mut skip, mut take) = (0u64, u64::MAX);
            if let Some((o, c)) = limit {
                skip = value::to_number(&eval(o, row, current, env)?).max(0.0) as u64;
                take = value::to_number(&eval(c, row, current, env)?).max(0.0) as u64;
            }
            let mut out = Vec::new();
            for item in items {
                if let Some(f) = filter {
                    if !value::to_bool(&eval(f, row, Some(&item), env)?) {
                        continue;
                    }
                }
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                if take == 0 {
                    break;
                }
                take -= 1;
                out.push(match project {
                    Some(p) => eval(p, row, Some(&item), env)?,
                    None => item,
                });
            }
            Value::Array(out)
        }
        CExpr::Unary(op, operand) => {
            let v = eval(operand, row, current, env)?;
            match op {
                UnaryOp::Not => Value::Bool(!value::to_bool(&v)),
                UnaryOp::Minus => value::negate(&v),
                UnaryOp::Plus => value::number(value::to_number(&v)),
            }
        }
        CExpr::Binary(op, a, b) => binary(*op, a, b, row, current, env)?,
        CExpr::ArrayCompare(q, op, a, b) => {
            let Some((matches, len)) = array_matches(*op, a, b, row, current, env)? else {
                return Ok(Value::Bool(false));
            };
            Value::Bool(match q {
                Quantifier::Any => matches > 0,
                Quantifier::All => matches == len,
                Quantifier::None => matches == 0,
            })
        }
        CExpr::ArrayAtLeast(n, op, a, b) => {
            let wanted = value::to_number(&eval(n, row, current, env)?);
            let Some((matches, _)) = array_matches(*op, a, b, row, current, env)? else {
                return Ok(Value::Bool(false));
            };
            Value::Bool(matches as f64 >= wanted)
        }
        CExpr::Ternary(c, t, f) => {
            let cond = eval(c, row, current, env)?;
            if value::to_bool(&cond) {
                match t {
                    Some(t) => eval(t, row, current, env)?,
                    None => cond,
                }
            } else {
                eval(f, row, current, env)?
            }
        }
        CExpr::Range(a, b) => {
            let (from, to) =
                range_bounds(&eval(a, row, current, env)?, &eval(b, row, current, env)?);
            if (to as f64 - from as f64).abs() >= MAX_RANGE_MATERIALIZE {
                return Err(Error::with_message(
                    ErrorCode::ResourceLimit,
                    "AQL: range too large to materialize in an expression (while executing)",
                ));
            }
            Value::Array(RangeIter::new(from, to).map(Value::from).collect())
        }
        CExpr::Call(def, args) => {
            let mut values = Vec::with_capacity(args.len());
            for a in args {
                values.push(eval(a, row, current, env)?);
            }
            let result = match env.txn {
                Some(txn) => {
                    let data = TxnData {
                        txn,
                        database: env.database,
                    };
                    let mut ctx = FunctionContext::with_data(&data);
                    ctx.max_warnings = env.state.max_warnings;
                    ctx.killed = env.state.killed.as_deref();
                    ctx.deadline = env.state.deadline;
                    ctx.memory_limit = env.state.memory_limit;
                    let r = def.invoke(&mut ctx, &values);
                    let warnings = ctx.take_warnings();
                    (r, warnings)
                }
                None => {
                    let mut ctx = FunctionContext::new();
                    ctx.killed = env.state.killed.as_deref();
                    ctx.deadline = env.state.deadline;
                    ctx.memory_limit = env.state.memory_limit;
                    let r = def.invoke(&mut ctx, &values);
                    (r, ctx.take_warnings())
                }
            };
            for w in result.1 {
                env.warn(w)?;
            }
            result.0?
        }
    })
}

/// Integer bounds of `a..b` (both cast to numbers and truncated, as ArangoDB does).
pub fn range_bounds(a: &Value, b: &Value) -> (i64, i64) {
    let clamp = |f: f64| f.clamp(-9.0e15, 9.0e15).trunc() as i64;
    (clamp(value::to_number(a)), clamp(value::to_number(b)))
}

/// Iterates `from..=to`, descending when `from > to`.
pub struct RangeIter {
    next: i64,
    to: i64,
    done: bool,
}

impl RangeIter {
    pub fn new(from: i64, to: i64) -> RangeIter {
        RangeIter {
            next: from,
            to,
            done: false,
        }
    }
}

impl Iterator for RangeIter {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        if self.done {
            return None;
        }
        let v = self.next;
        match v.cmp(&self.to) {
            Ordering::Less => self.next += 1,
            Ordering::Greater => self.next -= 1,
            Ordering::Equal => self.done = true,
        }
        Some(v)
    }
}

fn binary(
    op: BinOp,
    a: &CExpr,
    b: &CExpr,
    row: &[Value],
    current: Option<&Value>,
    env: &mut EvalEnv<'_>,
) -> Result<Value> {
    match op {
        // AQL's logical operators short-circuit and return an operand, not a boolean.
        BinOp::And => {
            let left = eval(a, row, current, env)?;
            if !value::to_bool(&left) {
                return Ok(left);
            }
            eval(b, row, current, env)
        }
        BinOp::Or => {
            let left = eval(a, row, current, env)?;
            if value::to_bool(&left) {
                return Ok(left);
            }
            eval(b, row, current, env)
        }
        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod => {
            let left = eval(a, row, current, env)?;
            let right = eval(b, row, current, env)?;
            let aop = match op {
                BinOp::Add => ArithOp::Add,
                BinOp::Sub => ArithOp::Sub,
                BinOp::Mul => ArithOp::Mul,
                BinOp::Div => ArithOp::Div,
                _ => ArithOp::Mod,
            };
            match value::arithmetic(aop, &left, &right) {
                Ok(v) => Ok(v),
                Err(w) => {
                    env.warn(w)?;
                    Ok(Value::Null)
                }
            }
        }
        _ => {
            let left = eval(a, row, current, env)?;
            let right = eval(b, row, current, env)?;
            Ok(Value::Bool(compare_op(op, &left, &right, env)?))
        }
    }
}

/// The comparison-like operators (==, <, IN, LIKE, =~ ...) on two values.
pub fn compare_op(op: BinOp, left: &Value, right: &Value, env: &mut EvalEnv<'_>) -> Result<bool> {
    Ok(match op {
        BinOp::Eq => value::equals(left, right),
        BinOp::Ne => !value::equals(left, right),
        BinOp::Lt => value::compare(left, right) == Ordering::Less,
        BinOp::Le => value::compare(left, right) != Ordering::Greater,
        BinOp::Gt => value::compare(left, right) == Ordering::Greater,
        BinOp::Ge => value::compare(left, right) != Ordering::Less,
        BinOp::In | BinOp::NotIn => {
            let found = match right {
                Value::Array(items) => items.iter().any(|i| value::equals(left, i)),
                _ => false,
            };
            found == (op == BinOp::In)
        }
        BinOp::Like | BinOp::NotLike => {
            let matched = value::like(&value::to_string(left), &value::to_string(right), false);
            matched == (op == BinOp::Like)
        }
        BinOp::RegexMatch | BinOp::RegexNotMatch => {
            let pattern = value::to_string(right);
            match env.state.regex(&pattern, false) {
                Some(re) => re.is_match(&value::to_string(left)) == (op == BinOp::RegexMatch),
                None => {
                    env.warn(Warning::new(
                        ErrorCode::QueryInvalidRegex,
                        format!("invalid regex value: {pattern}"),
                    ))?;
                    false
                }
            }
        }
        BinOp::And | BinOp::Or | BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod => {
            false
        }
    })
}
