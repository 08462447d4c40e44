//! Optimizer rules over the node pipeline, named as in ArangoDB so that `optimizer.rules`
//! (`["-all", "+use-indexes"]`) and explain output mean the same thing. Each rule is a
//! function from plan to plan that reports whether it changed anything; rules run on every
//! (sub)query pipeline.
//!
//! Index selection: rule `use-indexes` first lets [`use_indexes`] ask the
//! [`IndexCandidate`]s (the primary index: `_key`/`_id` equality and `IN`) to match filter
//! conditions against a collection loop, then [`crate::index_select`] picks a persistent
//! index for the remaining loops (filters and SORT), after rule `use-vector-index` turned
//! nearest-vector sorts into vector searches ([`crate::vector_select`]); then rule `geo-index-optimizer`
//! hands distance sorts and geo filters to [`crate::geo_select`]. Traversal filters are moved
//! by `optimize-traversals` (`optimizer/graph.rs`); view loops get their rules in
//! `optimizer/view_loop.rs`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use quiver_errors::{Error, Result};

use crate::ast::BinOp;
use crate::limits::Limits;

mod graph;
mod hoist;
mod view_loop;
use crate::expr::{CExpr, Slot};
use crate::index_select::{conjuncts, rebuild_and};
use crate::plan::{ListSource, Node, NodeKind, Plan, QueryPlan};

/// Every rule this optimizer knows, in the order they run.
pub const RULES: &[&str] = &[
    "move-calculations-up",
    "move-filters-up",
    "remove-unnecessary-filters",
    "use-vector-index",
    "use-indexes",
    "remove-filter-covered-by-index",
    "use-index-for-sort",
    "geo-index-optimizer",
    "optimize-traversals",
    "remove-unnecessary-calculations",
    "remove-redundant-sorts",
    "remove-collect-variables",
    "sort-limit",
    "handle-arangosearch-views",
    "arangosearch-constrained-sort",
    "reduce-extraction-to-projection",
    "no-document-materialization-arangosearch",
    "late-document-materialization-arangosearch",
    "optimize-count",
];

/// Which rules are enabled by an `optimizer.rules` list.
pub struct RuleSelection {
    disabled: HashSet<String>,
    all_disabled: bool,
    enabled: HashSet<String>,
}

impl RuleSelection {
    pub fn from_options(rules: &[String]) -> RuleSelection {
        let mut sel = RuleSelection {
            disabled: HashSet::new(),
            all_disabled: false,
            enabled: HashSet::new(),
        };
        for r in rules {
            if let Some(name) = r.strip_prefix('-') {
                if name == "all" {
                    sel.all_disabled = true;
                    sel.enabled.clear();
                } else {
                    sel.disabled.insert(name.to_string());
                    sel.enabled.remove(name);
                }
            } else {
                let name = r.strip_prefix('+').unwrap_or(r);
                if name == "all" {
                    sel.all_disabled = false;
                    sel.disabled.clear();
                } else {
                    sel.enabled.insert(name.to_string());
                    sel.disabled.remove(name);
                }
            }
        }
        sel
    }

    pub fn is_enabled(&self, rule: &str) -> bool {
        if self.enabled.contains(rule) {
            return true;
        }
        !self.all_disabled && !self.disabled.contains(rule)
    }
}

/// Options that change what the optimizer may do.
pub struct OptimizeOptions {
    pub rules: RuleSelection,
    pub full_count: bool,
    /// The secondary indexes of the collections read (empty: only the primary index is used).
    pub indexes: crate::index_select::IndexCatalog,
    /// The query's kill flag and `maxRuntime`, checked before each rule on each pipeline.
    pub limits: Limits,
}

/// Runs all enabled rules and records which ones fired in `plan.rules`; fails (1500) when the
/// query is killed or runs out of `maxRuntime` meanwhile.
pub fn optimize(plan: &mut QueryPlan, options: &OptimizeOptions) -> Result<()> {
    let result_slot = match plan.root.nodes.last().map(|n| &n.kind) {
        Some(NodeKind::Return { input, .. }) => Some(*input),
        _ => None,
    };
    let mut log = RuleLog::default();
    let root = std::mem::take(&mut plan.root);
    plan.root = optimize_pipeline(root, options, &mut log, result_slot)?;
    let fired = log.fired;
    graph::pass_stored_vertices(&mut plan.root);
    if options.full_count {
        if let Some(node) = plan
            .root
            .nodes
            .iter_mut()
            .rev()
            .find(|n| matches!(n.kind, NodeKind::Limit { .. }))
        {
            if let NodeKind::Limit { full_count, .. } = &mut node.kind {
                *full_count = true;
            }
        }
    }
    let mut seen = HashSet::new();
    plan.rules = RULES
        .iter()
        .filter(|r| fired.iter().any(|f| f == *r) && seen.insert(**r))
        .copied()
        .collect();
    plan.rule_seconds = RULES
        .iter()
        .filter_map(|r| log.seconds.get(r).map(|s| (*r, *s)))
        .collect();
    Ok(())
}

/// What the optimizer did: the rules that changed the plan (in firing order, repeats
/// included) and the seconds spent in each rule that ran (over all (sub)query pipelines).
#[derive(Default)]
struct RuleLog {
    fired: Vec<String>,
    seconds: HashMap<&'static str, f64>,
}

impl RuleLog {
    fn ran(&mut self, name: &'static str, since: Instant) {
        *self.seconds.entry(name).or_default() += since.elapsed().as_secs_f64();
    }
}

fn optimize_pipeline(
    mut plan: Plan,
    options: &OptimizeOptions,
    log: &mut RuleLog,
    _result: Option<Slot>,
) -> Result<Plan> {
    // Subqueries first, so the outer rules see their final variable usage.
    for node in &mut plan.nodes {
        if let NodeKind::Subquery { plan: sub, .. } = &mut node.kind {
            let inner = (**sub).clone();
            let result = match inner.nodes.last().map(|n| &n.kind) {
                Some(NodeKind::Return { input, .. }) => Some(*input),
                _ => None,
            };
            *sub = Arc::new(optimize_pipeline(inner, options, log, result)?);
        }
    }
    type Rule = fn(&mut Plan, &OptimizeOptions) -> bool;
    let run = |name: &'static str, plan: &mut Plan, rule: Rule, log: &mut RuleLog| {
        options.limits.check()?;
        if options.rules.is_enabled(name) {
            let started = Instant::now();
            if rule(plan, options) {
                log.fired.push(name.to_string());
            }
            log.ran(name, started);
        }
        Ok::<(), Error>(())
    };
    run("move-calculations-up", &mut plan, move_calculations_up, log)?;
    run("move-filters-up", &mut plan, move_filters_up, log)?;
    run(
        "remove-unnecessary-filters",
        &mut plan,
        remove_unnecessary_filters,
        log,
    )?;
    options.limits.check()?;
    if options.rules.is_enabled("use-vector-index") {
        let started = Instant::now();
        if crate::vector_select::use_vector_indexes(&mut plan, &options.indexes) {
            log.fired.push("use-vector-index".into());
        }
        log.ran("use-vector-index", started);
    }
    options.limits.check()?;
    if options.rules.is_enabled("use-indexes") {
        let started = Instant::now();
        // Hinted inverted indexes first: they are used only when named, and then before the
        // primary index takes a `_key` condition.
        let (mut changed, mut covered) =
            crate::inverted_select::use_inverted_indexes(&mut plan, &options.indexes);
        let (primary, primary_covered) = use_indexes(&mut plan);
        changed |= primary;
        covered |= primary_covered;
        let (secondary, secondary_covered, sort_removed) =
            crate::index_select::use_secondary_indexes(&mut plan, &options.indexes);
        changed |= secondary;
        covered |= secondary_covered;
        let (mdi, mdi_covered) = crate::mdi_select::use_mdi_indexes(&mut plan, &options.indexes);
        changed |= mdi;
        covered |= mdi_covered;
        let sort_removed = sort_removed
            || (options.rules.is_enabled("use-index-for-sort")
                && view_loop::inverted_primary_sort(&mut plan, options.full_count));
        if sort_removed {
            log.fired.push("use-index-for-sort".into());
        }
        if changed {
            log.fired.push("use-indexes".into());
        }
        log.ran("use-indexes", started);
        if covered && options.rules.is_enabled("remove-filter-covered-by-index") {
            let started = Instant::now();
            log.fired.push("remove-filter-covered-by-index".into());
            remove_unnecessary_filters(&mut plan, options);
            log.ran("remove-filter-covered-by-index", started);
        }
    }
    options.limits.check()?;
    if options.rules.is_enabled("geo-index-optimizer") {
        let started = Instant::now();
        if crate::geo_select::use_geo_indexes(&mut plan, &options.indexes) {
            log.fired.push("geo-index-optimizer".into());
            // Served conjuncts left `true` behind.
            remove_unnecessary_filters(&mut plan, options);
        }
        log.ran("geo-index-optimizer", started);
    }
    run(
        "optimize-traversals",
        &mut plan,
        graph::optimize_traversals,
        log,
    )?;
    run(
        "remove-unnecessary-calculations",
        &mut plan,
        remove_unnecessary_calculations,
        log,
    )?;
    run(
        "remove-redundant-sorts",
        &mut plan,
        remove_redundant_sorts,
        log,
    )?;
    run(
        "remove-collect-variables",
        &mut plan,
        remove_collect_variables,
        log,
    )?;
    run("sort-limit", &mut plan, sort_limit, log)?;
    // Cannot be disabled, as in ArangoDB: it fires for every plan reading a view.
    {
        options.limits.check()?;
        let started = Instant::now();
        // It runs (and counts in `rulesExecuted`) only for a plan that reads a view.
        if view_loop::primary_sort(&mut plan) {
            log.fired.push("handle-arangosearch-views".into());
            log.ran("handle-arangosearch-views", started);
        }
    }
    run(
        "arangosearch-constrained-sort",
        &mut plan,
        |plan, _| view_loop::constrained_sort(plan),
        log,
    )?;
    // After the constrained sort, which takes a LIMIT behind a SORT by scores for itself;
    // not with `fullCount` (its LIMIT is marked only after the pipelines are optimized, and
    // must see every row).
    if !options.full_count {
        view_loop::limited_read(&mut plan);
    }
    run("optimize-count", &mut plan, optimize_count, log)?;
    run(
        "reduce-extraction-to-projection",
        &mut plan,
        reduce_extraction_to_projection,
        log,
    )?;
    run(
        "no-document-materialization-arangosearch",
        &mut plan,
        |plan, _| view_loop::no_materialization(plan),
        log,
    )?;
    run(
        "late-document-materialization-arangosearch",
        &mut plan,
        |plan, _| view_loop::late_materialization(plan),
        log,
    )?;
    Ok(plan)
}

/// Slots read by nodes at positions `from..` (including subquery pipelines).
fn reads_after(plan: &Plan, from: usize) -> HashSet<Slot> {
    let mut set = HashSet::new();
    for n in &plan.nodes[from.min(plan.nodes.len())..] {
        set.extend(n.kind.reads());
    }
    set
}

fn move_calculations_up(plan: &mut Plan, _: &OptimizeOptions) -> bool {
    hoist::hoist(plan, |kind| match kind {
        NodeKind::Calculation { expr, .. } if expr.is_deterministic() => Some(expr.vars()),
        _ => None,
    })
}

fn move_filters_up(plan: &mut Plan, _: &OptimizeOptions) -> bool {
    hoist::hoist(plan, |kind| match kind {
        NodeKind::Filter { input } => Some([*input].into_iter().collect()),
        _ => None,
    })
}

fn const_of(plan: &Plan, slot: Slot) -> Option<&Value> {
    plan.nodes.iter().find_map(|n| match &n.kind {
        NodeKind::Calculation {
            out,
            expr: CExpr::Const(v),
        } if *out == slot => Some(v),
        _ => None,
    })
}

fn remove_unnecessary_filters(plan: &mut Plan, _: &OptimizeOptions) -> bool {
    let mut changed = false;
    let mut j = 1;
    while j < plan.nodes.len() {
        if let NodeKind::Filter { input } = plan.nodes[j].kind {
            if let Some(v) = const_of(plan, input) {
                if crate::value::to_bool(v) {
                    plan.nodes.remove(j);
                } else {
                    plan.nodes[j].kind = NodeKind::NoResults;
                    j += 1;
                }
                changed = true;
                continue;
            }
        }
        j += 1;
    }
    changed
}

/// A way to serve part of a filter condition from an index instead of a full scan.
pub trait IndexCandidate {
    /// If `conjunct` restricts `var` (a document of `collection`) so that this index can
    /// produce exactly the matching documents, the node kind that does so.
    fn try_match(
        &self,
        var: Slot,
        collection: &str,
        conjunct: &CExpr,
        available: &dyn Fn(&CExpr) -> bool,
    ) -> Option<NodeKind>;
}

/// The primary index: `doc._key == x`, `doc._id == x`, `doc._key IN list`.
pub struct PrimaryIndex;

impl IndexCandidate for PrimaryIndex {
    fn try_match(
        &self,
        var: Slot,
        collection: &str,
        conjunct: &CExpr,
        available: &dyn Fn(&CExpr) -> bool,
    ) -> Option<NodeKind> {
        let is_key_attr = |e: &CExpr| matches!(e, CExpr::Attribute(b, name) if matches!(**b, CExpr::Var(s) if s == var) && (name == "_key" || name == "_id"));
        let (op, value) = match conjunct {
            CExpr::Binary(BinOp::Eq, a, b) if is_key_attr(a) && available(b) => {
                (BinOp::Eq, (**b).clone())
            }
            CExpr::Binary(BinOp::Eq, a, b) if is_key_attr(b) && available(a) => {
                (BinOp::Eq, (**a).clone())
            }
            CExpr::Binary(BinOp::In, a, b) if is_key_attr(a) && available(b) => {
                (BinOp::In, (**b).clone())
            }
            _ => return None,
        };
        // `_key == 1` never matches (keys are strings); leave such filters alone.
        if let CExpr::Const(v) = &value {
            let ok = match op {
                BinOp::Eq => v.is_string(),
                _ => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            };
            if !ok {
                return None;
            }
        }
        Some(NodeKind::Index {
            out: var,
            collection: collection.to_string(),
            lookup: value,
            multi: op == BinOp::In,
        })
    }
}

/// Returns (an index replaced a scan, a filter condition became redundant).
fn use_indexes(plan: &mut Plan) -> (bool, bool) {
    let candidates: Vec<Box<dyn IndexCandidate>> = vec![Box::new(PrimaryIndex)];
    let mut changed = false;
    let mut covered = false;
    let mut i = 1;
    while i < plan.nodes.len() {
        let NodeKind::EnumerateCollection {
            out: var,
            collection,
            ..
        } = plan.nodes[i].kind.clone()
        else {
            i += 1;
            continue;
        };
        // Slots defined at or after the loop cannot feed its lookup.
        let mut later: HashSet<Slot> = HashSet::new();
        for n in &plan.nodes[i..] {
            later.extend(n.kind.writes());
        }
        let available = |e: &CExpr| e.is_deterministic() && e.vars().is_disjoint(&later);
        let mut replaced = false;
        for j in i + 1..plan.nodes.len() {
            match &plan.nodes[j].kind {
                NodeKind::Calculation { .. }
                | NodeKind::EnumerateList { .. }
                | NodeKind::EnumerateCollection { .. }
                | NodeKind::Index { .. }
                | NodeKind::IndexScan(_) => continue,
                NodeKind::Filter { input } => {
                    let input = *input;
                    let Some(ci) = plan.nodes[..j].iter().position(
                        |n| matches!(&n.kind, NodeKind::Calculation { out, .. } if *out == input),
                    ) else {
                        continue;
                    };
                    if ci < i {
                        continue;
                    }
                    let NodeKind::Calculation { expr, .. } = &plan.nodes[ci].kind else {
                        continue;
                    };
                    let mut parts = Vec::new();
                    conjuncts(expr, &mut parts);
                    let mut hit = None;
                    'outer: for (pi, part) in parts.iter().enumerate() {
                        for c in &candidates {
                            if let Some(kind) = c.try_match(var, &collection, part, &available) {
                                hit = Some((pi, kind));
                                break 'outer;
                            }
                        }
                    }
                    if let Some((pi, kind)) = hit {
                        // The lookup uses only values available before the loop, but the
                        // calculation holding it may sit after; the expression itself is
                        // copied into the index node, so that is fine.
                        plan.nodes[i].kind = kind;
                        parts.remove(pi);
                        let remaining = rebuild_and(parts);
                        if let NodeKind::Calculation { expr, .. } = &mut plan.nodes[ci].kind {
                            *expr = remaining;
                        }
                        covered = true;
                        changed = true;
                        replaced = true;
                    }
                    if replaced {
                        break;
                    }
                }
                _ => break,
            }
        }
        i += 1;
    }
    (changed, covered)
}

fn remove_unnecessary_calculations(plan: &mut Plan, _: &OptimizeOptions) -> bool {
    let result_slot = match plan.nodes.last().map(|n| &n.kind) {
        Some(NodeKind::Return { input, .. }) => Some(*input),
        _ => None,
    };
    let in_subplans = subplan_reads(plan);
    // One backward pass: a calculation goes when no node kept after it reads its result.
    // Dropping a calculation can make the ones feeding it unused too; walking backwards
    // sees those next, so this reaches the same end as removing one at a time until nothing
    // changes, in linear time.
    let mut read_later: HashSet<Slot> = HashSet::new();
    let mut keep = vec![true; plan.nodes.len()];
    for (j, node) in plan.nodes.iter().enumerate().skip(1).rev() {
        if let NodeKind::Calculation { out, expr } = &node.kind {
            if expr.is_deterministic()
                && Some(*out) != result_slot
                && !read_later.contains(out)
                && !in_subplans.contains(out)
            {
                keep[j] = false;
                continue;
            }
        }
        read_later.extend(node.kind.reads());
    }
    let changed = keep.contains(&false);
    let mut flags = keep.into_iter();
    plan.nodes.retain(|_| flags.next().unwrap_or(true));
    changed
}

/// Slots read by the nodes of any subquery pipeline (outer variables are visible inside).
fn subplan_reads(plan: &Plan) -> HashSet<Slot> {
    let mut set = HashSet::new();
    for n in &plan.nodes {
        if let NodeKind::Subquery { plan, .. } = &n.kind {
            for m in &plan.nodes {
                set.extend(m.kind.reads());
            }
        }
    }
    set
}

fn remove_redundant_sorts(plan: &mut Plan, _: &OptimizeOptions) -> bool {
    let mut changed = false;
    let mut j = 1;
    while j < plan.nodes.len() {
        if let NodeKind::Sort { keys, .. } = &plan.nodes[j].kind {
            // Sorting by constants does nothing.
            if keys.iter().all(|(s, _)| const_of(plan, *s).is_some()) {
                plan.nodes.remove(j);
                changed = true;
                continue;
            }
            // A later SORT before any node that depends on order overrides this one.
            let mut k = j + 1;
            let mut overridden = false;
            while k < plan.nodes.len() {
                match &plan.nodes[k].kind {
                    NodeKind::Calculation { expr, .. } if expr.is_deterministic() => k += 1,
                    NodeKind::Filter { .. } => k += 1,
                    NodeKind::Sort { .. } => {
                        overridden = true;
                        break;
                    }
                    _ => break,
                }
            }
            if overridden {
                plan.nodes.remove(j);
                changed = true;
                continue;
            }
        }
        j += 1;
    }
    changed
}

fn remove_collect_variables(plan: &mut Plan, _: &OptimizeOptions) -> bool {
    let mut changed = false;
    let in_subplans = subplan_reads(plan);
    let returned = match plan.nodes.last().map(|n| &n.kind) {
        Some(NodeKind::Return { input, .. }) => Some(*input),
        _ => None,
    };
    // Backwards, collecting what the nodes after each COLLECT read as we go.
    let mut read_later: HashSet<Slot> = HashSet::new();
    for node in plan.nodes.iter_mut().skip(1).rev() {
        if let NodeKind::Collect { into, .. } = &mut node.kind {
            if let Some((into_slot, _)) = into {
                let into_slot = *into_slot;
                if !read_later.contains(&into_slot)
                    && !in_subplans.contains(&into_slot)
                    && returned != Some(into_slot)
                {
                    *into = None;
                    changed = true;
                }
            }
        }
        read_later.extend(node.kind.reads());
    }
    changed
}

fn sort_limit(plan: &mut Plan, options: &OptimizeOptions) -> bool {
    let mut changed = false;
    for j in 1..plan.nodes.len().saturating_sub(1) {
        let (offset, count) = match &plan.nodes[j + 1].kind {
            NodeKind::Limit { offset, count, .. } => (*offset, *count),
            _ => continue,
        };
        if options.full_count {
            continue;
        }
        if let NodeKind::Sort { limit, .. } = &mut plan.nodes[j].kind {
            if limit.is_none() && count != u64::MAX {
                *limit = Some(offset.saturating_add(count));
                changed = true;
            }
        }
    }
    changed
}

/// Estimated items and cumulative cost per node (explain output), ArangoDB-like: loops
/// multiply by the collection size or list length, LIMIT caps.
pub fn estimates(plan: &Plan, counts: &dyn Fn(&str) -> u64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(plan.nodes.len());
    let (mut items, mut cost) = (1.0f64, 0.0f64);
    for n in &plan.nodes {
        match &n.kind {
            NodeKind::Singleton => cost = 1.0,
            NodeKind::EnumerateCollection { collection, .. } => {
                let c = counts(collection) as f64;
                items *= c;
                cost += items + 1.0;
            }
            NodeKind::EnumerateNearVectors(near) => {
                let c = counts(&near.collection) as f64;
                items *= ((near.offset + near.limit) as f64).min(c.max(1.0));
                cost += items * 1.5 + c.max(2.0).sqrt();
            }
            NodeKind::IndexScan(scan) => {
                items *= scan
                    .estimated_items
                    .max(if scan.eq.is_empty() { 0.0 } else { 1.0 });
                cost += items * 1.5 + (counts(&scan.collection).max(2) as f64).log2();
            }
            NodeKind::Index { lookup, multi, .. } => {
                let k = if *multi {
                    match lookup {
                        CExpr::Const(Value::Array(a)) => a.len() as f64,
                        _ => 10.0,
                    }
                } else {
                    1.0
                };
                items *= k;
                cost += items * 1.5 + 1.0;
            }
            NodeKind::EnumerateList { input, .. } => {
                let k = match input {
                    ListSource::Range(CExpr::Const(a), CExpr::Const(b)) => {
                        let (x, y) = crate::expr::eval::range_bounds(a, b);
                        ((y - x).abs() + 1) as f64
                    }
                    _ => 100.0,
                };
                items *= k;
                cost += items;
            }
            NodeKind::Limit { offset, count, .. } => {
                items = (items - *offset as f64).max(0.0).min(*count as f64);
                cost += items;
            }
            NodeKind::Collect { groups, .. } => {
                if groups.is_empty() {
                    items = 1.0;
                } else {
                    items = (items * 0.8).max(1.0).floor();
                }
                cost += items;
            }
            NodeKind::Sort { .. } => cost += items * (items.max(2.0)).log2(),
            NodeKind::NoResults => {
                items = 0.0;
                cost += 0.5;
            }
            _ => cost += items,
        }
        out.push((items, cost));
    }
    out
}

/// Node ids in execution order (for golden `plan` sections).
pub fn node_types(plan: &Plan) -> Vec<&'static str> {
    plan.nodes
        .iter()
        .map(|n: &Node| n.kind.type_name())
        .collect()
}

/// ArangoDB's default `maxProjections`.
const MAX_PROJECTIONS: usize = 5;

/// Collects the top-level attributes read from `slot` in `e`; false when the whole value is
/// used (anything but `slot.attr` / `slot["attr"]`).
fn attribute_uses(e: &CExpr, slot: Slot, names: &mut std::collections::BTreeSet<String>) -> bool {
    match e {
        CExpr::Attribute(base, name) if matches!(**base, CExpr::Var(s) if s == slot) => {
            names.insert(name.clone());
            true
        }
        CExpr::Index(base, key) if matches!(**base, CExpr::Var(s) if s == slot) => match &**key {
            CExpr::Const(Value::String(name)) => {
                names.insert(name.clone());
                true
            }
            _ => false,
        },
        CExpr::Var(s) => *s != slot,
        _ => e.all_children(|c| attribute_uses(c, slot, names)),
    }
}

/// Whether every use of `slot` in `nodes` (and their subqueries) is a top-level attribute
/// access; collects the attributes.
fn nodes_use_only_attributes(
    nodes: &[Node],
    slot: Slot,
    names: &mut std::collections::BTreeSet<String>,
) -> bool {
    for n in nodes {
        let ok = match &n.kind {
            NodeKind::Calculation { expr, .. } => attribute_uses(expr, slot, names),
            NodeKind::Index { lookup, .. } => attribute_uses(lookup, slot, names),
            NodeKind::Subquery { plan, .. } => nodes_use_only_attributes(&plan.nodes, slot, names),
            NodeKind::EnumerateList {
                input: ListSource::Range(a, b),
                ..
            } => attribute_uses(a, slot, names) && attribute_uses(b, slot, names),
            NodeKind::Modify(m) => {
                m.first != slot
                    && m.second != Some(slot)
                    && m.upsert_update
                        .as_ref()
                        .is_none_or(|e| attribute_uses(e, slot, names))
            }
            other => !other.reads().contains(&slot),
        };
        if !ok {
            return false;
        }
    }
    true
}

/// A collection loop whose documents are only read through a few top-level attributes
/// materializes just those attributes.
fn reduce_extraction_to_projection(plan: &mut Plan, _: &OptimizeOptions) -> bool {
    let mut changed = false;
    for i in 1..plan.nodes.len() {
        // A persistent-index loop whose index covers every attribute read builds its
        // documents from the index (ArangoDB's `indexCoversProjections`).
        if let NodeKind::IndexScan(scan) = &plan.nodes[i].kind {
            if scan.geo.is_some()
                || scan.mdi.is_some()
                || scan.inverted.is_some()
                || scan.projections.is_some()
            {
                continue;
            }
            let mut names = std::collections::BTreeSet::new();
            if nodes_use_only_attributes(&plan.nodes[i + 1..], scan.out, &mut names)
                && names.len() <= MAX_PROJECTIONS
                && crate::index_select::covers(&scan.index, &names)
            {
                if let NodeKind::IndexScan(scan) = &mut plan.nodes[i].kind {
                    scan.projections = Some(names.into_iter().collect());
                    changed = true;
                }
            }
            continue;
        }
        let NodeKind::EnumerateCollection {
            out,
            projections: None,
            ..
        } = &plan.nodes[i].kind
        else {
            continue;
        };
        let slot = *out;
        let mut names = std::collections::BTreeSet::new();
        if nodes_use_only_attributes(&plan.nodes[i + 1..], slot, &mut names)
            && names.len() <= MAX_PROJECTIONS
        {
            if let NodeKind::EnumerateCollection { projections, .. } = &mut plan.nodes[i].kind {
                *projections = Some(names.into_iter().collect());
                changed = true;
            }
        }
    }
    changed
}

/// `FOR d IN coll COLLECT WITH COUNT INTO n` as the first loop of a pipeline counts the
/// collection (in the query's snapshot) instead of reading every document.
fn optimize_count(plan: &mut Plan, _: &OptimizeOptions) -> bool {
    for i in 1..plan.nodes.len().saturating_sub(1) {
        let NodeKind::EnumerateCollection { collection, .. } = &plan.nodes[i].kind else {
            continue;
        };
        let first_loop = plan.nodes[..i].iter().all(|n| {
            !n.kind.is_loop()
                && !matches!(
                    n.kind,
                    NodeKind::Filter { .. } | NodeKind::Limit { .. } | NodeKind::NoResults
                )
        });
        let NodeKind::Collect {
            groups,
            aggregates,
            into: None,
            count: Some(out),
            ..
        } = &plan.nodes[i + 1].kind
        else {
            continue;
        };
        if !first_loop || !groups.is_empty() || !aggregates.is_empty() {
            continue;
        }
        let Some(def) = crate::functions::lookup("COLLECTION_COUNT") else {
            return false;
        };
        let expr = CExpr::Call(def, vec![CExpr::Const(Value::String(collection.clone()))]);
        let out = *out;
        plan.nodes[i + 1].kind = NodeKind::Calculation { out, expr };
        plan.nodes.remove(i);
        return true;
    }
    false
}
