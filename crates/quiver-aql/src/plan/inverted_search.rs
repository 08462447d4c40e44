//! What an `IndexNode` over an inverted index answers (`inverted_select`): the FILTER
//! conjuncts the index serves, as a SEARCH condition over the loop variable's attributes,
//! turned into the index's query per input row by `exec/inverted.rs`.

use super::view_search::{PrimarySortRead, SearchCond};
use crate::expr::Slot;

/// The search an inverted index runs for a `FOR … OPTIONS {indexHint}` loop.
#[derive(Clone, Debug)]
pub struct InvertedSearch {
    /// The served conjuncts, joined by AND; paths are the indexed attributes and conditions
    /// without `ANALYZER()` take the analyzer the index gives the compared field.
    pub condition: SearchCond,
    /// `OPTIONS {waitForSync: true}` of the loop: the index commits what was written before
    /// the search runs.
    pub wait_for_sync: bool,
    /// The loop gives its documents in the order of the index's primary sort (a SORT it
    /// replaced, rule `use-index-for-sort`).
    pub sorted: Option<PrimarySortRead>,
}

impl InvertedSearch {
    /// Calls `f` for every slot an operand of the condition reads.
    pub fn visit_vars(&self, f: &mut dyn FnMut(Slot)) {
        self.condition.visit_vars(f);
    }
}
