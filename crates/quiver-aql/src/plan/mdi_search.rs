//! What an mdi `IndexNode` answers (`mdi_select`): equality on the index's prefix fields and
//! bounds on its dimensions, evaluated by `exec/mdi.rs` per input row into a box.

use crate::expr::CExpr;

/// Bounds on one dimension: every lower and every upper bound the filter gives (value,
/// inclusive); the tightest applies. `==` is both.
#[derive(Clone, Debug, Default)]
pub struct DimBounds {
    pub lower: Vec<(CExpr, bool)>,
    pub upper: Vec<(CExpr, bool)>,
}

/// The box an mdi index is searched with.
#[derive(Clone, Debug)]
pub struct MdiSearch {
    /// One value per `prefixFields` entry (mdi-prefixed), compared for equality.
    pub prefix: Vec<CExpr>,
    /// One entry per indexed field, in the index's order.
    pub dims: Vec<DimBounds>,
    /// The index's fields, prefix fields and sparseness (for the exact scan the operator
    /// falls back to when the index cannot answer).
    pub fields: Vec<String>,
    pub prefix_fields: Vec<String>,
    pub sparse: bool,
}

impl MdiSearch {
    /// Every expression the node evaluates, for variable-usage analysis.
    pub fn expressions(&self) -> Vec<&CExpr> {
        let mut out: Vec<&CExpr> = self.prefix.iter().collect();
        for d in &self.dims {
            out.extend(d.lower.iter().chain(d.upper.iter()).map(|(e, _)| e));
        }
        out
    }
}
