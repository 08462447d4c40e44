//! Nested search in SEARCH: `d.dims[? quantifier FILTER cond]` over a `nested` field of the
//! view. The parser writes the question mark operator with the constructs FILTER evaluates
//! (`ANY|ALL|NONE` as an array comparison of `TO_BOOL(cond)` per element with `true`,
//! counts as `LENGTH(d.dims[* FILTER cond])` compared with the count); those forms over an
//! attribute of the view variable are read back here as one nested condition. Inside it
//! `CURRENT` is the element: `CURRENT.type` names `dims[?].type`, the attribute of the
//! field's elements (`quiver_search` indexes the elements of a nested field apart).

use quiver_errors::Result;
use quiver_search::index::ElementCount;
use serde_json::Value;

use super::view_search::SearchCond;
use super::{Plan, Planner};
use crate::ast::{BinOp, Expr, ObjectKey, Quantifier};
use crate::expr::{CExpr, Slot};

/// What follows a nested field's path in the paths of its elements' attributes: `CURRENT`
/// of a nested condition is `d.dims["[?]"]` to the path reader.
pub(super) const ELEMENT_MARK: &str = "[?]";

/// The quantifier of a nested condition, its operands compiled.
#[derive(Clone, Debug)]
pub enum NestedCount {
    Any,
    All,
    None,
    /// `AT LEAST (n)`.
    AtLeast(CExpr),
    /// `n`: exactly n.
    Exactly(CExpr),
    /// `low..high`, both included.
    Between(CExpr, CExpr),
}

impl NestedCount {
    /// Calls `f` for every slot an operand reads.
    pub fn visit_vars(&self, f: &mut dyn FnMut(Slot)) {
        match self {
            NestedCount::AtLeast(n) | NestedCount::Exactly(n) => n.visit_vars(f),
            NestedCount::Between(lo, hi) => {
                lo.visit_vars(f);
                hi.visit_vars(f);
            }
            _ => {}
        }
    }

    /// The count for one input row (a count that is no number, or a fraction no whole
    /// number satisfies, matches nothing).
    pub fn to_count(
        &self,
        eval: &mut dyn FnMut(&CExpr) -> Result<Value>,
    ) -> Result<Option<ElementCount>> {
        let number = |v: Value| v.as_f64().filter(|n| !n.is_nan());
        Ok(match self {
            NestedCount::Any => Some(ElementCount::Between { min: 1, max: None }),
            NestedCount::All => Some(ElementCount::All),
            NestedCount::None => Some(ElementCount::Between {
                min: 0,
                max: Some(0),
            }),
            NestedCount::AtLeast(n) => number(eval(n)?).map(|n| ElementCount::Between {
                min: n.ceil().max(0.0) as usize,
                max: None,
            }),
            NestedCount::Exactly(n) => number(eval(n)?)
                .filter(|n| n.fract() == 0.0 && *n >= 0.0)
                .map(|n| ElementCount::Between {
                    min: n as usize,
                    max: Some(n as usize),
                }),
            NestedCount::Between(lo, hi) => match (number(eval(lo)?), number(eval(hi)?)) {
                (Some(lo), Some(hi)) if hi.floor() >= lo.ceil().max(0.0) => {
                    Some(ElementCount::Between {
                        min: lo.ceil().max(0.0) as usize,
                        max: Some(hi.floor() as usize),
                    })
                }
                _ => None,
            },
        })
    }
}

/// The question mark operator as the parser writes it: (input, condition, count form).
enum Question<'a> {
    Quantified(Quantifier),
    AtLeast(&'a Expr),
    Exactly(&'a Expr),
    Between(&'a Expr, &'a Expr),
}

/// `e` as a question mark operator: its input, its condition and its quantifier.
fn question(e: &Expr) -> Option<(&Expr, &Expr, Question<'_>)> {
    match e {
        Expr::ArrayCompare(q, BinOp::Eq, elements, yes)
            if matches!(**yes, Expr::Literal(Value::Bool(true))) =>
        {
            let Expr::Expansion {
                input,
                depth: 1,
                filter: None,
                limit: None,
                project: Some(project),
            } = &**elements
            else {
                return None;
            };
            match &**project {
                Expr::Call(name, args) if name == "TO_BOOL" && args.len() == 1 => {
                    Some((input, &args[0], Question::Quantified(*q)))
                }
                _ => None,
            }
        }
        Expr::Binary(op @ (BinOp::Ge | BinOp::Eq | BinOp::In), length, n) => {
            let Expr::Call(name, args) = &**length else {
                return None;
            };
            let [Expr::Expansion {
                input,
                depth: 1,
                filter: Some(cond),
                limit: None,
                project: None,
            }] = args.as_slice()
            else {
                return None;
            };
            if name != "LENGTH" {
                return None;
            }
            let count = match (op, &**n) {
                (BinOp::Ge, n) => Question::AtLeast(n),
                (BinOp::Eq, n) => Question::Exactly(n),
                (BinOp::In, Expr::Range(lo, hi)) => Question::Between(lo, hi),
                _ => return None,
            };
            Some((input, cond, count))
        }
        _ => None,
    }
}

/// `e` with `CURRENT` replaced by `element`, except inside expansions (whose `CURRENT` is
/// their own element; their input is outside and is replaced).
fn with_current(e: &Expr, element: &Expr) -> Expr {
    let go = |x: &Expr| Box::new(with_current(x, element));
    match e {
        Expr::Current => element.clone(),
        Expr::Attribute(inner, name) => Expr::Attribute(go(inner), name.clone()),
        Expr::Index(inner, index) => Expr::Index(go(inner), go(index)),
        Expr::Array(items) => Expr::Array(items.iter().map(|x| with_current(x, element)).collect()),
        Expr::Object(entries) => Expr::Object(
            entries
                .iter()
                .map(|(k, v)| {
                    let key = match k {
                        ObjectKey::Computed(x) => ObjectKey::Computed(with_current(x, element)),
                        k => k.clone(),
                    };
                    (key, with_current(v, element))
                })
                .collect(),
        ),
        Expr::Expansion {
            input,
            depth,
            filter,
            limit,
            project,
        } => Expr::Expansion {
            input: go(input),
            depth: *depth,
            filter: filter.clone(),
            limit: limit.clone(),
            project: project.clone(),
        },
        Expr::Unary(op, x) => Expr::Unary(*op, go(x)),
        Expr::Binary(op, a, b) => Expr::Binary(*op, go(a), go(b)),
        Expr::ArrayCompare(q, op, a, b) => Expr::ArrayCompare(*q, *op, go(a), go(b)),
        Expr::ArrayAtLeast(n, op, a, b) => Expr::ArrayAtLeast(go(n), *op, go(a), go(b)),
        Expr::Ternary(c, t, f) => Expr::Ternary(go(c), t.as_ref().map(|t| go(t)), go(f)),
        Expr::Range(a, b) => Expr::Range(go(a), go(b)),
        Expr::Call(name, args) => Expr::Call(
            name.clone(),
            args.iter().map(|x| with_current(x, element)).collect(),
        ),
        other => other.clone(),
    }
}

impl Planner<'_> {
    /// `e` as a nested condition when it is a question mark operator over an attribute of
    /// the view variable (or of an element of a nested condition); None otherwise.
    pub(super) fn nested_cond(
        &mut self,
        e: &Expr,
        view: Slot,
        analyzer: &str,
        plan: &mut Plan,
    ) -> Result<Option<SearchCond>> {
        let Some((input, cond, count)) = question(e) else {
            return Ok(None);
        };
        let Some(path) = self.view_path(input, view).filter(|p| !p.is_empty()) else {
            return Ok(None);
        };
        let element = Expr::Index(
            Box::new(input.clone()),
            Box::new(Expr::Literal(Value::String(ELEMENT_MARK.into()))),
        );
        let inner = self.search_cond(&with_current(cond, &element), view, analyzer, plan)?;
        let count = match count {
            Question::Quantified(Quantifier::Any) => NestedCount::Any,
            Question::Quantified(Quantifier::All) => NestedCount::All,
            Question::Quantified(Quantifier::None) => NestedCount::None,
            Question::AtLeast(n) => NestedCount::AtLeast(self.operand(n, view, plan)?),
            Question::Exactly(n) => NestedCount::Exactly(self.operand(n, view, plan)?),
            Question::Between(lo, hi) => {
                NestedCount::Between(self.operand(lo, view, plan)?, self.operand(hi, view, plan)?)
            }
        };
        Ok(Some(SearchCond::Nested {
            path: format!("{path}{ELEMENT_MARK}"),
            count,
            cond: Box::new(inner),
        }))
    }
}
