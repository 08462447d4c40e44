//! Compiled expressions: what the planner makes of an AST expression (names resolved to
//! variable slots, bind parameters substituted, functions looked up) and their evaluation
//! ([`eval`]). The planner folds constants with the same evaluator the executor runs, so both
//! sit above this module and nothing here knows plans or operators.

use std::collections::HashSet;

use serde_json::Value;

use crate::ast::{BinOp, Quantifier, UnaryOp};
use crate::functions::FunctionDef;

pub mod eval;

/// Index of a variable in a row.
pub type Slot = usize;

/// A compiled expression: names resolved to slots, bind parameters substituted.
#[derive(Clone, Debug)]
pub enum CExpr {
    Const(Value),
    Var(Slot),
    Current,
    Array(Vec<CExpr>),
    Object(Vec<(CKey, CExpr)>),
    Attribute(Box<CExpr>, String),
    Index(Box<CExpr>, Box<CExpr>),
    Expansion {
        input: Box<CExpr>,
        depth: usize,
        filter: Option<Box<CExpr>>,
        limit: Option<(Box<CExpr>, Box<CExpr>)>,
        project: Option<Box<CExpr>>,
    },
    Unary(UnaryOp, Box<CExpr>),
    Binary(BinOp, Box<CExpr>, Box<CExpr>),
    ArrayCompare(Quantifier, BinOp, Box<CExpr>, Box<CExpr>),
    /// `left AT LEAST (count) op right`: (count, op, left, right).
    ArrayAtLeast(Box<CExpr>, BinOp, Box<CExpr>, Box<CExpr>),
    Ternary(Box<CExpr>, Option<Box<CExpr>>, Box<CExpr>),
    Range(Box<CExpr>, Box<CExpr>),
    Call(&'static FunctionDef, Vec<CExpr>),
}

#[derive(Clone, Debug)]
pub enum CKey {
    Static(String),
    Computed(CExpr),
}

/// The direct sub-expressions of `$expr` handed to `$f` in evaluation order, through `$iter`
/// (`iter` or `iter_mut`): one body for the shared and the mutable visitor.
macro_rules! visit_children {
    ($expr:expr, $f:ident, $iter:ident) => {
        match $expr {
            CExpr::Const(_) | CExpr::Current | CExpr::Var(_) => {}
            CExpr::Array(items) | CExpr::Call(_, items) => items.$iter().for_each(&mut *$f),
            CExpr::Object(members) => members.$iter().for_each(|(k, v)| {
                if let CKey::Computed(k) = k {
                    $f(k);
                }
                $f(v);
            }),
            CExpr::Attribute(e, _) | CExpr::Unary(_, e) => $f(e),
            CExpr::Index(a, b)
            | CExpr::Binary(_, a, b)
            | CExpr::ArrayCompare(_, _, a, b)
            | CExpr::Range(a, b) => {
                $f(a);
                $f(b);
            }
            CExpr::ArrayAtLeast(n, _, a, b) => {
                $f(n);
                $f(a);
                $f(b);
            }
            CExpr::Expansion {
                input,
                filter,
                limit,
                project,
                ..
            } => {
                $f(input);
                for e in [filter, project].into_iter().flatten() {
                    $f(e);
                }
                if let Some((a, b)) = limit {
                    $f(a);
                    $f(b);
                }
            }
            CExpr::Ternary(c, t, e) => {
                $f(c);
                if let Some(t) = t {
                    $f(t);
                }
                $f(e);
            }
        }
    };
}

impl CExpr {
    /// Calls `f` for every slot the expression reads.
    pub fn visit_vars(&self, f: &mut dyn FnMut(Slot)) {
        match self {
            CExpr::Const(_) | CExpr::Current => {}
            CExpr::Var(s) => f(*s),
            CExpr::Array(items) => items.iter().for_each(|e| e.visit_vars(f)),
            CExpr::Object(members) => members.iter().for_each(|(k, v)| {
                if let CKey::Computed(k) = k {
                    k.visit_vars(f);
                }
                v.visit_vars(f);
            }),
            CExpr::Attribute(e, _) | CExpr::Unary(_, e) => e.visit_vars(f),
            CExpr::Index(a, b)
            | CExpr::Binary(_, a, b)
            | CExpr::ArrayCompare(_, _, a, b)
            | CExpr::Range(a, b) => {
                a.visit_vars(f);
                b.visit_vars(f);
            }
            CExpr::ArrayAtLeast(n, _, a, b) => {
                n.visit_vars(f);
                a.visit_vars(f);
                b.visit_vars(f);
            }
            CExpr::Expansion {
                input,
                filter,
                limit,
                project,
                ..
            } => {
                input.visit_vars(f);
                if let Some(e) = filter {
                    e.visit_vars(f);
                }
                if let Some((a, b)) = limit {
                    a.visit_vars(f);
                    b.visit_vars(f);
                }
                if let Some(e) = project {
                    e.visit_vars(f);
                }
            }
            CExpr::Ternary(c, t, e) => {
                c.visit_vars(f);
                if let Some(t) = t {
                    t.visit_vars(f);
                }
                e.visit_vars(f);
            }
            CExpr::Call(_, args) => args.iter().for_each(|e| e.visit_vars(f)),
        }
    }

    pub fn vars(&self) -> HashSet<Slot> {
        let mut set = HashSet::new();
        self.visit_vars(&mut |s| {
            set.insert(s);
        });
        set
    }

    /// No side effects and same result for same inputs (so it may be moved, folded or
    /// dropped when unused).
    pub fn is_deterministic(&self) -> bool {
        let mut ok = true;
        self.walk(&mut |e| {
            if let CExpr::Call(def, _) = e {
                if !def.deterministic {
                    ok = false;
                }
            }
        });
        ok
    }

    pub(crate) fn walk(&self, f: &mut dyn FnMut(&CExpr)) {
        f(self);
        self.for_each_child(&mut |c| c.walk(f));
    }

    /// Calls `f` on each direct sub-expression, in evaluation order.
    pub fn for_each_child(&self, f: &mut dyn FnMut(&CExpr)) {
        visit_children!(self, f, iter)
    }

    /// Calls `f` on each direct sub-expression, mutably, in evaluation order.
    pub fn for_each_child_mut(&mut self, f: &mut dyn FnMut(&mut CExpr)) {
        visit_children!(self, f, iter_mut)
    }

    /// Whether `pred` holds for every direct sub-expression; stops at the first that fails.
    pub fn all_children(&self, mut pred: impl FnMut(&CExpr) -> bool) -> bool {
        let mut ok = true;
        self.for_each_child(&mut |c| ok = ok && pred(c));
        ok
    }
}
