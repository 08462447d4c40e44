//! What an `EnumerateNearVectorNode` answers (rule `use-vector-index`, see `vector_select`):
//! the documents of a collection nearest to a query point through a vector index, best
//! first, with the metric's value in a variable of its own; run by `exec/vector.rs`.

use quiver_core::vector::Metric;
use quiver_core::vector_index::VectorParams;

use crate::expr::{CExpr, Slot};
use crate::source::IndexMeta;

/// A vector search replacing `FOR d IN c [FILTER …] SORT APPROX_NEAR_*(d.v, q) LIMIT o, n`.
#[derive(Clone, Debug)]
pub struct NearVectors {
    /// The document variable of the replaced loop.
    pub out: Slot,
    /// The variable the replaced `APPROX_NEAR_*` call wrote (similarity or distance).
    pub distance_out: Slot,
    pub collection: String,
    pub index: IndexMeta,
    pub params: VectorParams,
    /// The query point.
    pub query: CExpr,
    /// The call's third argument (`{ nProbe }`), when given.
    pub options: Option<CExpr>,
    /// A FILTER pushed into the search (over the document and values known before the
    /// loop): checked on every candidate, so fewer than `limit` documents may come back.
    pub filter: Option<CExpr>,
    /// The LIMIT after the replaced SORT: the search produces at most `offset + limit`
    /// documents per input row; the LIMIT itself stays in the plan.
    pub offset: u64,
    pub limit: u64,
}

impl NearVectors {
    pub fn metric(&self) -> Metric {
        self.params.metric
    }

    /// Every expression the node evaluates, for variable-usage analysis.
    pub fn expressions(&self) -> Vec<&CExpr> {
        let mut out = vec![&self.query];
        out.extend(self.options.iter());
        out.extend(self.filter.iter());
        out
    }
}
