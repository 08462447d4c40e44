//! Plan templates: one optimized plan per query text for every string value of its vertex
//! parameters, filled in per query instead of planned again.
//!
//! Bind values are substituted as constants while planning and the planner and optimizer
//! read constants to make decisions (folding, index bounds, `LIMIT` values, traversal
//! depths...), so in general a plan is only valid for the values it was built from. One
//! position is different: a bind parameter that is the whole start or target vertex of a
//! graph operation (`FOR v IN OUTBOUND @start edges`, `SHORTEST_PATH @from TO @to`) is copied
//! into the graph node as it is and only read when the query runs. When every use of a
//! parameter is such a position ([`crate::plan::vertex_only_params`]) and its value is a
//! string, the plan is built once with a placeholder string in its place (a per-process
//! random token no query can spell) and each query gets a copy with its own value put where
//! the placeholder is. Other values (objects, numbers...) and all other parameters stay in
//! the plan cache key in full.
//!
//! A template is only used when the placeholders in the whole plan (its debug rendering) are
//! exactly the ones [`Substitution::apply`] replaces; a plan that copied a placeholder
//! elsewhere is planned the ordinary way.

use std::sync::{Arc, OnceLock};

use rand::Rng;
use serde_json::{Map, Value};

use crate::expr::CExpr;
use crate::plan::{NodeKind, Plan, QueryPlan};

/// The random part of every placeholder, fixed for the process.
fn token() -> &'static str {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN.get_or_init(|| format!("{:032x}", rand::thread_rng().gen::<u128>()))
}

/// The placeholder standing for parameter `name` in a template.
fn placeholder(name: &str) -> String {
    format!("\u{0}quiver-vertex-parameter\u{0}{}\u{0}{name}", token())
}

/// The bind values a template is planned and looked up with, and the values to put in.
pub struct Substitution {
    /// The query's bind values with every templated parameter's value replaced by its
    /// placeholder.
    pub template_binds: Map<String, Value>,
    /// (placeholder, the query's value) of every templated parameter.
    values: Vec<(String, Value)>,
}

impl Substitution {
    /// The substitution for a query whose `vertex_params` (see
    /// [`crate::plan::vertex_only_params`]) have `binds` as values; None when none of them
    /// has a string value (nothing to template).
    pub fn new(binds: &Map<String, Value>, vertex_params: &[String]) -> Option<Substitution> {
        let mut template_binds = binds.clone();
        let mut values = Vec::new();
        for name in vertex_params {
            if let Some(slot) = template_binds.get_mut(name) {
                if slot.is_string() {
                    let holder = placeholder(name);
                    let value = std::mem::replace(slot, Value::String(holder.clone()));
                    values.push((holder, value));
                }
            }
        }
        (!values.is_empty()).then_some(Substitution {
            template_binds,
            values,
        })
    }

    /// A copy of `template` with the query's values in place of the placeholders, and how
    /// many were replaced.
    pub fn apply(&self, template: &QueryPlan) -> (QueryPlan, usize) {
        let mut plan = template.clone();
        let replaced = self.fill(&mut plan.root);
        (plan, replaced)
    }

    /// Whether `template`'s placeholders are exactly those [`Substitution::apply`] replaces
    /// (none was copied to another place in the plan).
    pub fn covers(&self, template: &QueryPlan) -> bool {
        let (_, replaced) = self.apply(template);
        format!("{template:?}").matches(token()).count() == replaced
    }

    fn fill(&self, plan: &mut Plan) -> usize {
        let mut replaced = 0;
        for node in &mut plan.nodes {
            match &mut node.kind {
                NodeKind::Graph(g) => {
                    for e in std::iter::once(&mut g.start).chain(g.target.as_mut()) {
                        replaced += self.fill_vertex(e);
                    }
                }
                // Subquery plans are shared with the template: copied only when they hold
                // a placeholder.
                NodeKind::Subquery { plan, .. } if self.holds(plan) => {
                    replaced += self.fill(Arc::make_mut(plan))
                }
                _ => {}
            }
        }
        replaced
    }

    /// Whether a graph node of `plan` (or of its subqueries) has a placeholder as its start
    /// or target.
    fn holds(&self, plan: &Plan) -> bool {
        plan.nodes.iter().any(|node| match &node.kind {
            NodeKind::Graph(g) => std::iter::once(&g.start)
                .chain(g.target.as_ref())
                .any(|e| self.placeholder_of(e).is_some()),
            NodeKind::Subquery { plan, .. } => self.holds(plan),
            _ => false,
        })
    }

    /// The query's value for `e` if it is a placeholder.
    fn placeholder_of(&self, e: &CExpr) -> Option<&Value> {
        let CExpr::Const(Value::String(s)) = e else {
            return None;
        };
        self.values
            .iter()
            .find(|(holder, _)| holder == s)
            .map(|(_, value)| value)
    }

    fn fill_vertex(&self, e: &mut CExpr) -> usize {
        match self.placeholder_of(e) {
            Some(value) => {
                *e = CExpr::Const(value.clone());
                1
            }
            None => 0,
        }
    }
}
