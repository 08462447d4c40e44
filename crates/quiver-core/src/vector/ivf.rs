//! The inverted file of a vector index (Faiss's `IndexIVFFlat`): one list per centroid of
//! the trained quantizer, each holding the full vectors filed under it with the key and
//! revision of the document they came from. A search ranks the centroids against the query,
//! reads the `nProbe` best lists and ranks their vectors exactly.
//!
//! Before the quantizer is known (while it is trained or loaded) entries wait in one
//! unassigned list, which a search reads in full; [`Ivf::install`] files them.

use std::sync::Arc;

use quiver_types::Revision;

use super::Metric;

/// The trained centroids.
#[derive(Debug, PartialEq)]
pub struct Quantizer {
    pub metric: Metric,
    pub dim: usize,
    /// `nLists` centroids, row-major.
    pub centroids: Vec<f32>,
}

impl Quantizer {
    pub fn lists(&self) -> usize {
        self.centroids.len() / self.dim
    }

    fn centroid(&self, list: usize) -> &[f32] {
        &self.centroids[list * self.dim..(list + 1) * self.dim]
    }

    /// The list a (prepared) vector is filed under: its nearest centroid, the first one on
    /// ties. Deterministic, so an entry is found again where it was filed.
    pub fn nearest(&self, v: &[f32]) -> usize {
        let mut best = 0;
        let mut best_distance = f32::INFINITY;
        for list in 0..self.lists() {
            let d = self.metric.centroid_distance(self.centroid(list), v);
            if d < best_distance {
                best_distance = d;
                best = list;
            }
        }
        best
    }

    /// The `n` lists nearest to `query`, nearest first.
    pub fn probe(&self, query: &[f32], n: usize) -> Vec<usize> {
        let mut ranked: Vec<(f32, usize)> = (0..self.lists())
            .map(|list| {
                (
                    self.metric.centroid_distance(self.centroid(list), query),
                    list,
                )
            })
            .collect();
        let n = n.clamp(1, ranked.len().max(1));
        if n < ranked.len() {
            ranked.select_nth_unstable_by(n - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            ranked.truncate(n);
        }
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        ranked.into_iter().map(|(_, list)| list).collect()
    }
}

/// One list: entries and their vectors side by side.
#[derive(Default)]
struct List {
    entries: Vec<(Arc<str>, Revision)>,
    /// `entries.len()` vectors of the index's dimension, row-major.
    vectors: Vec<f32>,
}

impl List {
    fn push(&mut self, key: &Arc<str>, rev: Revision, v: &[f32]) {
        self.entries.push((Arc::clone(key), rev));
        self.vectors.extend_from_slice(v);
    }

    /// Removes the entry of `key` at `rev`; false when it is not here.
    fn remove(&mut self, key: &str, rev: Revision, dim: usize) -> bool {
        let Some(pos) = self
            .entries
            .iter()
            .position(|(k, r)| &**k == key && *r == rev)
        else {
            return false;
        };
        let last = self.entries.len() - 1;
        self.entries.swap_remove(pos);
        if pos != last {
            self.vectors
                .copy_within(last * dim..(last + 1) * dim, pos * dim);
        }
        self.vectors.truncate(last * dim);
        assert_eq!(self.vectors.len(), self.entries.len() * dim);
        true
    }
}

/// One scored entry of a search.
#[derive(Clone, Debug)]
pub struct Hit {
    pub key: Arc<str>,
    pub rev: Revision,
    /// The metric's value: a similarity (cosine, inner product) or a distance (l2).
    pub score: f64,
}

/// The lists of one vector index.
pub struct Ivf {
    metric: Metric,
    dim: usize,
    quantizer: Option<Arc<Quantizer>>,
    lists: Vec<List>,
    unassigned: List,
    len: usize,
}

impl Ivf {
    pub fn new(metric: Metric, dim: usize, quantizer: Option<Arc<Quantizer>>) -> Ivf {
        if let Some(q) = &quantizer {
            assert_eq!((q.metric, q.dim), (metric, dim), "quantizer of this index");
        }
        let lists = quantizer
            .as_ref()
            .map(|q| (0..q.lists()).map(|_| List::default()).collect())
            .unwrap_or_default();
        Ivf {
            metric,
            dim,
            quantizer,
            lists,
            unassigned: List::default(),
            len: 0,
        }
    }

    pub fn quantizer(&self) -> Option<&Arc<Quantizer>> {
        self.quantizer.as_ref()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The vectors waiting for a quantizer (training data when it must be learnt).
    pub fn unassigned_vectors(&self) -> &[f32] {
        &self.unassigned.vectors
    }

    /// Files every waiting entry under `quantizer`'s lists; later entries go there directly.
    /// The waiting vectors are assigned in bulk (matrix products, two threads), which may
    /// break a near-tie differently from [`Quantizer::nearest`]; [`Ivf::remove`] looks in
    /// every list when the nearest one does not hold the entry.
    pub fn install(&mut self, quantizer: Arc<Quantizer>) {
        assert_eq!((quantizer.metric, quantizer.dim), (self.metric, self.dim));
        assert!(self.quantizer.is_none(), "a quantizer is installed once");
        self.lists = (0..quantizer.lists()).map(|_| List::default()).collect();
        let waiting = std::mem::take(&mut self.unassigned);
        let labels = super::kmeans::nearest_centroids(
            &waiting.vectors,
            self.dim,
            &quantizer.centroids,
            self.metric != Metric::L2,
            2,
        );
        assert_eq!(labels.len(), waiting.entries.len());
        // Each list gets exactly the room its entries take: filled by doubling, the lists
        // would hold up to twice the vectors' size while the waiting copy is still alive.
        let mut counts = vec![0usize; self.lists.len()];
        for &label in &labels {
            counts[label as usize] += 1;
        }
        for (list, &n) in self.lists.iter_mut().zip(&counts) {
            list.entries.reserve_exact(n);
            list.vectors.reserve_exact(n * self.dim);
        }
        for (i, (key, rev)) in waiting.entries.iter().enumerate() {
            let v = &waiting.vectors[i * self.dim..(i + 1) * self.dim];
            self.lists[labels[i] as usize].push(key, *rev, v);
        }
        self.quantizer = Some(quantizer);
    }

    /// Adds a prepared vector (see [`Metric::prepare`]) of the index's dimension.
    pub fn insert(&mut self, key: &Arc<str>, rev: Revision, v: &[f32]) {
        assert_eq!(v.len(), self.dim, "vectors of one index share a dimension");
        match &self.quantizer {
            Some(q) => {
                let list = q.nearest(v);
                self.lists[list].push(key, rev, v);
            }
            None => self.unassigned.push(key, rev, v),
        }
        self.len += 1;
    }

    /// Removes the entry that [`Ivf::insert`] filed for the same key, revision and vector.
    pub fn remove(&mut self, key: &str, rev: Revision, v: &[f32]) {
        assert_eq!(v.len(), self.dim, "vectors of one index share a dimension");
        let dim = self.dim;
        let removed = match &self.quantizer {
            Some(q) => {
                let list = q.nearest(v);
                self.lists[list].remove(key, rev, dim)
                    || (0..self.lists.len())
                        .filter(|&l| l != list)
                        .any(|l| self.lists[l].remove(key, rev, dim))
            }
            None => false,
        } || self.unassigned.remove(key, rev, dim);
        if removed {
            self.len -= 1;
        }
    }

    /// The best `want` entries of the `n_probe` lists nearest to the prepared `query`, best
    /// first (ties by key); before a quantizer is installed, of every entry. Every entry of
    /// those lists is scored; only the `want` best become [`Hit`]s.
    pub fn search(&self, query: &[f32], n_probe: usize, want: usize) -> Vec<Hit> {
        assert_eq!(
            query.len(),
            self.dim,
            "the caller checks the query's dimension"
        );
        let mut lists: Vec<&List> = vec![&self.unassigned];
        if let Some(q) = &self.quantizer {
            lists.extend(q.probe(query, n_probe).into_iter().map(|l| &self.lists[l]));
        }
        // (score, list, position): no key is touched until the best are known.
        let mut scored: Vec<(f64, u32, u32)> = Vec::new();
        for (l, list) in lists.iter().enumerate() {
            for (i, v) in list.vectors.chunks_exact(self.dim).enumerate() {
                scored.push((self.metric.score(v, query), l as u32, i as u32));
            }
        }
        let key = |&(_, l, i): &(f64, u32, u32)| &lists[l as usize].entries[i as usize].0;
        let better = |a: &(f64, u32, u32), b: &(f64, u32, u32)| {
            self.metric.order(a.0, b.0).then_with(|| key(a).cmp(key(b)))
        };
        if want == 0 {
            return Vec::new();
        }
        if want < scored.len() {
            scored.select_nth_unstable_by(want - 1, better);
            scored.truncate(want);
        }
        scored.sort_by(better);
        scored
            .into_iter()
            .map(|(score, l, i)| {
                let (key, rev) = &lists[l as usize].entries[i as usize];
                Hit {
                    key: Arc::clone(key),
                    rev: *rev,
                    score,
                }
            })
            .collect()
    }

    /// An empty structure with the same quantizer (truncate).
    pub fn fresh(&self) -> Ivf {
        let mut fresh = Ivf::new(self.metric, self.dim, self.quantizer.clone());
        if self.quantizer.is_none() {
            fresh.unassigned = List::default();
        }
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quantizer() -> Arc<Quantizer> {
        Arc::new(Quantizer {
            metric: Metric::L2,
            dim: 2,
            centroids: vec![0.0, 0.0, 10.0, 0.0, 0.0, 10.0],
        })
    }

    #[test]
    fn entries_are_filed_found_and_removed() {
        let mut ivf = Ivf::new(Metric::L2, 2, Some(quantizer()));
        let keys: Vec<Arc<str>> = (0..6).map(|i| Arc::from(format!("k{i}"))).collect();
        let points = [
            [0.5, 0.0],
            [9.0, 1.0],
            [1.0, 9.0],
            [0.0, 0.5],
            [11.0, 0.0],
            [5.0, 5.1],
        ];
        for (k, p) in keys.iter().zip(points) {
            ivf.insert(k, Revision(1), &p);
        }
        assert_eq!(ivf.len(), 6);
        // One probe near the origin reads the origin's list only.
        let near: Vec<String> = ivf
            .search(&[0.0, 0.0], 1, usize::MAX)
            .iter()
            .map(|h| h.key.to_string())
            .collect();
        assert_eq!(near, vec!["k0", "k3"]);
        // All lists: every entry, nearest first.
        let all = ivf.search(&[10.0, 0.0], 3, usize::MAX);
        assert_eq!(all.len(), 6);
        assert_eq!(&*all[0].key, "k4");
        assert!((all[0].score - 1.0).abs() < 1e-6, "Euclidean, not squared");
        // The best `want` only, in the same order.
        let best: Vec<Arc<str>> = ivf
            .search(&[10.0, 0.0], 3, 2)
            .into_iter()
            .map(|h| h.key)
            .collect();
        assert_eq!(
            best,
            all[..2]
                .iter()
                .map(|h| Arc::clone(&h.key))
                .collect::<Vec<_>>()
        );
        assert!(ivf.search(&[10.0, 0.0], 3, 0).is_empty());
        ivf.remove("k4", Revision(2), &[11.0, 0.0]);
        assert_eq!(ivf.len(), 6, "another revision is another entry");
        ivf.remove("k4", Revision(1), &[11.0, 0.0]);
        ivf.remove("k0", Revision(1), &[0.5, 0.0]);
        assert_eq!(ivf.len(), 4);
        assert_eq!(ivf.search(&[0.0, 0.0], 1, usize::MAX).len(), 1);
        assert_eq!(ivf.fresh().len(), 0);
    }

    #[test]
    fn entries_wait_for_the_quantizer_and_are_filed_when_it_comes() {
        let mut ivf = Ivf::new(Metric::L2, 2, None);
        let a: Arc<str> = Arc::from("a");
        let b: Arc<str> = Arc::from("b");
        ivf.insert(&a, Revision(1), &[10.0, 0.5]);
        ivf.insert(&b, Revision(1), &[0.2, 9.0]);
        assert_eq!(ivf.unassigned_vectors().len(), 4);
        assert_eq!(
            ivf.search(&[0.0, 10.0], 1, usize::MAX).len(),
            2,
            "unassigned: all read"
        );
        ivf.remove("a", Revision(1), &[10.0, 0.5]);
        ivf.install(quantizer());
        assert!(ivf.unassigned_vectors().is_empty());
        let found = ivf.search(&[0.0, 10.0], 1, usize::MAX);
        assert_eq!(found.len(), 1);
        assert_eq!(&*found[0].key, "b");
    }
}
