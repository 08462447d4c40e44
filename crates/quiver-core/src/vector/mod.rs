//! Vector search: the pieces of a `vector` index (ArangoDB 3.12's Faiss `IndexIVFFlat`) that
//! know nothing of documents or snapshots — metrics, the SIMD-friendly kernels, k-means
//! training of the quantizer, the inverted file and the quantizer's file on disk.
//!
//! Hand-written rather than bound to Faiss: Faiss is C++ with a BLAS dependency, and the
//! index must live inside the core's snapshot-correct maintenance protocol (`indexes/maintained.rs`)
//! with entries tagged by key and revision, which an external index cannot hold. The part
//! that is compute-bound and generic — the matrix product of k-means — comes from
//! `matrixmultiply`.

pub mod ivf;
pub mod kernels;
pub mod kmeans;
pub mod quantizer_file;

use serde_json::{Map, Value};

/// How vectors are compared (`params.metric`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Cosine similarity: vectors are normalised when filed and searched.
    Cosine,
    /// Euclidean distance.
    L2,
    /// Inner product of the vectors as stored.
    InnerProduct,
}

impl Metric {
    pub fn parse(name: &str) -> Option<Metric> {
        match name {
            "cosine" => Some(Metric::Cosine),
            "l2" => Some(Metric::L2),
            "innerProduct" => Some(Metric::InnerProduct),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::Cosine => "cosine",
            Metric::L2 => "l2",
            Metric::InnerProduct => "innerProduct",
        }
    }

    /// The AQL function that searches an index of this metric.
    pub fn function(self) -> &'static str {
        match self {
            Metric::Cosine => "APPROX_NEAR_COSINE",
            Metric::L2 => "APPROX_NEAR_L2",
            Metric::InnerProduct => "APPROX_NEAR_INNER_PRODUCT",
        }
    }

    /// The metric an `APPROX_NEAR_*` function searches by.
    pub fn of_function(name: &str) -> Option<Metric> {
        [Metric::Cosine, Metric::L2, Metric::InnerProduct]
            .into_iter()
            .find(|m| m.function() == name)
    }

    /// Whether the best matches have the largest scores (a similarity) rather than the
    /// smallest (a distance): the SORT direction a query must ask for.
    pub fn descending(self) -> bool {
        self != Metric::L2
    }

    /// A vector as it is filed and searched: unit length for cosine.
    pub fn prepare(self, v: &mut [f32]) {
        if self == Metric::Cosine {
            kernels::normalize(v);
        }
    }

    /// Smaller is nearer: how the quantizer ranks centroids against a prepared vector.
    fn centroid_distance(self, centroid: &[f32], v: &[f32]) -> f32 {
        match self {
            Metric::L2 => kernels::l2_squared(centroid, v),
            Metric::Cosine | Metric::InnerProduct => -kernels::dot(centroid, v),
        }
    }

    /// The value the `APPROX_NEAR_*` function reports for two prepared vectors.
    pub fn score(self, v: &[f32], query: &[f32]) -> f64 {
        match self {
            Metric::L2 => f64::from(kernels::l2_squared(v, query)).sqrt(),
            Metric::Cosine | Metric::InnerProduct => f64::from(kernels::dot(v, query)),
        }
    }

    /// `Less` when score `a` is the better match.
    pub fn order(self, a: f64, b: f64) -> std::cmp::Ordering {
        if self.descending() {
            b.total_cmp(&a)
        } else {
            a.total_cmp(&b)
        }
    }

    /// Sorts hits best first; ties by key, so the order does not depend on list layout.
    pub fn rank(self, hits: &mut [ivf::Hit]) {
        hits.sort_by(|a, b| self.order(a.score, b.score).then_with(|| a.key.cmp(&b.key)));
    }
}

/// Why a value is not a vector of the index.
#[derive(Debug, PartialEq)]
pub enum NotAVector {
    /// The attribute is missing or null.
    Missing,
    /// Not an array of finite numbers.
    NotNumeric,
    /// An array of numbers of another length.
    WrongDimension(usize),
}

/// Reads `value` as a vector of `dim` numbers (as `f32`, Faiss's type).
pub fn vector_of(value: Option<&Value>, dim: usize) -> Result<Vec<f32>, NotAVector> {
    let items = match value {
        None | Some(Value::Null) => return Err(NotAVector::Missing),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(NotAVector::NotNumeric),
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match item.as_f64().map(|x| x as f32) {
            Some(x) if x.is_finite() => out.push(x),
            _ => return Err(NotAVector::NotNumeric),
        }
    }
    if out.len() != dim {
        return Err(NotAVector::WrongDimension(out.len()));
    }
    Ok(out)
}

/// The value at dotted attribute `path` of a document.
pub fn attribute<'d>(doc: &'d Map<String, Value>, path: &str) -> Option<&'d Value> {
    let mut parts = path.split('.');
    let mut current = doc.get(parts.next()?)?;
    for part in parts {
        current = current.as_object()?.get(part)?;
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn vectors_are_read_strictly() {
        assert_eq!(vector_of(Some(&json!([1, 2.5])), 2), Ok(vec![1.0, 2.5]));
        assert_eq!(vector_of(None, 2), Err(NotAVector::Missing));
        assert_eq!(vector_of(Some(&json!(null)), 2), Err(NotAVector::Missing));
        assert_eq!(
            vector_of(Some(&json!([1, "2"])), 2),
            Err(NotAVector::NotNumeric)
        );
        assert_eq!(
            vector_of(Some(&json!({"a": 1})), 2),
            Err(NotAVector::NotNumeric)
        );
        assert_eq!(
            vector_of(Some(&json!([1e300, 1])), 2),
            Err(NotAVector::NotNumeric),
            "out of f32 range"
        );
        assert_eq!(
            vector_of(Some(&json!([1, 2, 3])), 2),
            Err(NotAVector::WrongDimension(3))
        );
        let doc = json!({"a": {"b": [1, 2]}});
        let doc = doc.as_object().unwrap();
        assert_eq!(attribute(doc, "a.b"), Some(&json!([1, 2])));
        assert_eq!(attribute(doc, "a.c"), None);
    }

    #[test]
    fn metrics_name_their_functions_and_directions() {
        for m in [Metric::Cosine, Metric::L2, Metric::InnerProduct] {
            assert_eq!(Metric::parse(m.name()), Some(m));
            assert_eq!(Metric::of_function(m.function()), Some(m));
        }
        assert!(Metric::Cosine.descending() && !Metric::L2.descending());
        let mut v = vec![3.0, 4.0];
        Metric::Cosine.prepare(&mut v);
        assert!((Metric::Cosine.score(&v, &[0.0, 1.0]) - 0.8).abs() < 1e-6);
        assert_eq!(Metric::L2.score(&[0.0, 0.0], &[3.0, 4.0]), 5.0);
    }
}
