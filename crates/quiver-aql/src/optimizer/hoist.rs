//! Moving calculations and filters up, out of loops (rules `move-calculations-up` and
//! `move-filters-up`): each node, in order, goes to just after the last node before it that
//! defines one of its inputs or changes the row stream's meaning (LIMIT, COLLECT, WINDOW,
//! data modification, RETURN), provided a loop lies in between.
//!
//! Done in one pass over the pipeline without shifting a vector per move or walking back
//! per node: the nodes placed so far form a linked list whose order is kept in numeric
//! labels, the last barrier, the last loop and each slot's last writer are remembered, and a
//! node's place is the latest-labelled of its stops. A pipeline of n nodes costs O(n) plus a
//! relabelling of the list each time one gap between two labels is used up (after at least
//! 64 insertions at the same place). Hand-written because the ordering is this rule's own.

use std::collections::{HashMap, HashSet};

use crate::expr::Slot;
use crate::plan::{Node, NodeKind, Plan};

/// The space between the labels of neighbours after a relabelling.
const SPACING: u128 = 1 << 64;
/// No next node.
const END: usize = usize::MAX;

/// Whether nothing may move above `kind`: it changes which rows flow, or how many.
fn is_barrier(kind: &NodeKind) -> bool {
    matches!(
        kind,
        NodeKind::Limit { .. }
            | NodeKind::Collect { .. }
            | NodeKind::Window { .. }
            | NodeKind::Modify(_)
            | NodeKind::Return { .. }
            | NodeKind::NoResults
    )
}

/// The nodes placed so far, in their current order.
struct Placed {
    next: Vec<usize>,
    label: Vec<u128>,
    last: usize,
}

impl Placed {
    fn new(n: usize) -> Placed {
        Placed {
            next: vec![END; n],
            label: vec![0; n],
            last: 0,
        }
    }

    fn append(&mut self, node: usize) {
        self.label[node] = self.label[self.last] + SPACING;
        self.next[self.last] = node;
        self.last = node;
    }

    /// Places `node` right after `after`.
    fn insert_after(&mut self, after: usize, node: usize) {
        debug_assert_ne!(
            after, self.last,
            "an insertion after the last node is an append"
        );
        let mut following = self.next[after];
        if self.label[following] - self.label[after] < 2 {
            self.relabel();
            following = self.next[after];
        }
        self.label[node] = self.label[after] + (self.label[following] - self.label[after]) / 2;
        self.next[node] = following;
        self.next[after] = node;
        debug_assert!(self.label[after] < self.label[node]);
        debug_assert!(self.label[node] < self.label[following]);
    }

    fn relabel(&mut self) {
        let (mut at, mut value) = (0, 0u128);
        while at != END {
            self.label[at] = value;
            value += SPACING;
            at = self.next[at];
        }
    }
}

/// Moves every node for which `inputs` gives the slots it reads; returns whether one moved.
pub(super) fn hoist(plan: &mut Plan, inputs: impl Fn(&NodeKind) -> Option<HashSet<Slot>>) -> bool {
    let n = plan.nodes.len();
    if n < 3 {
        return false;
    }
    let mut placed = Placed::new(n);
    // Barriers and loops never move here, so the last one placed is also the last in order.
    let mut last_barrier: Option<usize> = None;
    let mut last_loop: Option<usize> = None;
    let mut writer: HashMap<Slot, usize> = HashMap::new();
    let mut changed = false;
    for j in 1..n {
        let kind = &plan.nodes[j].kind;
        let mut moved = false;
        if let Some(vars) = inputs(kind) {
            // The latest stop before `j`: node 0 at the latest.
            let mut stop = last_barrier.unwrap_or(0);
            for v in &vars {
                if let Some(&w) = writer.get(v) {
                    if placed.label[w] > placed.label[stop] {
                        stop = w;
                    }
                }
            }
            let loop_between = last_loop.is_some_and(|l| placed.label[l] > placed.label[stop]);
            if loop_between {
                placed.insert_after(stop, j);
                moved = true;
            }
        }
        if !moved {
            placed.append(j);
        }
        changed |= moved;
        if is_barrier(kind) {
            last_barrier = Some(j);
        }
        if kind.is_loop() {
            last_loop = Some(j);
        }
        for slot in kind.writes() {
            let later = writer
                .get(&slot)
                .is_none_or(|&w| placed.label[w] < placed.label[j]);
            if later {
                writer.insert(slot, j);
            }
        }
    }
    if changed {
        let mut slots: Vec<Option<Node>> = std::mem::take(&mut plan.nodes)
            .into_iter()
            .map(Some)
            .collect();
        let mut at = 0;
        while at != END {
            plan.nodes
                .push(slots[at].take().expect("each node is linked once"));
            at = placed.next[at];
        }
        assert_eq!(plan.nodes.len(), n, "a node was lost while moving nodes up");
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::source::DataSource;

    /// The rule as first written: for each node, walk back to its stop, and move it there
    /// by shifting the vector (quadratic; the reference for the one-pass version).
    fn hoist_by_walking(
        plan: &mut Plan,
        inputs: impl Fn(&NodeKind) -> Option<HashSet<Slot>>,
    ) -> bool {
        let mut changed = false;
        let mut j = 1;
        while j < plan.nodes.len() {
            if let Some(vars) = inputs(&plan.nodes[j].kind) {
                let mut p = j;
                while p > 1 {
                    let prev = &plan.nodes[p - 1].kind;
                    if is_barrier(prev) || prev.writes().iter().any(|w| vars.contains(w)) {
                        break;
                    }
                    p -= 1;
                }
                if p < j && plan.nodes[p..j].iter().any(|n| n.kind.is_loop()) {
                    let node = plan.nodes.remove(j);
                    plan.nodes.insert(p, node);
                    changed = true;
                }
            }
            j += 1;
        }
        changed
    }

    fn calculations(kind: &NodeKind) -> Option<HashSet<Slot>> {
        match kind {
            NodeKind::Calculation { expr, .. } if expr.is_deterministic() => Some(expr.vars()),
            _ => None,
        }
    }

    fn filters(kind: &NodeKind) -> Option<HashSet<Slot>> {
        match kind {
            NodeKind::Filter { input } => Some([*input].into_iter().collect()),
            _ => None,
        }
    }

    fn planned(query: &str) -> Plan {
        let source = crate::source::memory::MemorySource::new();
        source
            .create_collection("_system", "c", false, Vec::new())
            .unwrap();
        let txn = source.begin("_system", &[]).unwrap();
        let ast = crate::parser::parse(query).unwrap();
        let plan =
            crate::plan::build(&ast, &serde_json::Map::new(), &*txn, &Limits::unlimited()).unwrap();
        plan.root
    }

    fn ids(plan: &Plan) -> Vec<usize> {
        plan.nodes.iter().map(|n| n.id).collect()
    }

    #[test]
    fn same_order_as_walking_back_node_by_node() {
        let mut many_constants = String::from("FOR i IN 1..2 ");
        for k in 0..300 {
            many_constants.push_str(&format!("LET v{k} = {k} "));
        }
        many_constants.push_str("RETURN [i, v299]");
        let queries = [
            "FOR i IN 1..3 LET a = 1 LET b = i + a LET c = a * 2 FILTER c > 1 RETURN [b, c]",
            "FOR x IN c FOR y IN c LET k = x.a FILTER k == 1 LET z = 5 FILTER z > 2 RETURN y",
            "FOR i IN 1..3 LIMIT 2 LET a = 1 FOR j IN 1..2 LET b = a + 1 FILTER b > 0 RETURN [i, j, b]",
            "FOR i IN 1..3 COLLECT g = i % 2 INTO grp LET n = LENGTH(grp) FOR j IN 1..2 LET m = n + g RETURN m",
            "LET a = 1 FOR i IN 1..2 LET b = a FOR j IN 1..2 LET c = b FILTER c == 1 LET d = i FILTER d > 0 RETURN [c, d, j]",
            "FOR i IN 1..3 LET a = RAND() LET b = 2 RETURN [a, b]",
            "FOR i IN 1..3 LET s = (FOR j IN 1..2 LET q = 1 RETURN j + q) LET t = 3 RETURN [s, t]",
            many_constants.as_str(),
        ];
        for query in queries {
            for inputs in [calculations, filters] {
                let mut walked = planned(query);
                let mut hoisted = walked.clone();
                let expected = hoist_by_walking(&mut walked, inputs);
                let got = hoist(&mut hoisted, inputs);
                assert_eq!(got, expected, "{query}");
                assert_eq!(ids(&hoisted), ids(&walked), "{query}");
            }
        }
    }
}
