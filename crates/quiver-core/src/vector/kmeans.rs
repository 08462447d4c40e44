//! k-means training of an inverted-file quantizer: the `nLists` centroids that partition the
//! vector space into Voronoi cells, learnt from the documents present when the index is
//! created, as Faiss's `IndexIVFFlat::train` does for ArangoDB.
//!
//! Like Faiss: at most [`MAX_POINTS_PER_CENTROID`] points per centroid are sampled (seeded,
//! so the same data trains the same quantizer); unlike Faiss's random start, the centroids
//! start from k-means++ seeding (see `seed_centroids`); every iteration assigns each point to its nearest centroid and moves the centroid
//! to the mean of its points, and an empty cell takes over half of the largest one (its
//! centroid split by a small perturbation). For the inner-product metrics (cosine, inner
//! product) the centroids are kept at unit length (spherical k-means), so that a cell is the
//! set of points whose direction is nearest, which is what those metrics rank by.
//!
//! The assignment step, the whole cost of training, is one matrix product per block of
//! points (`matrixmultiply::sgemm`), split over `threads` threads.

use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::kernels;

/// Faiss's default cap on training points per centroid.
pub const MAX_POINTS_PER_CENTROID: usize = 256;

/// Points per matrix product in the assignment step.
const BLOCK: usize = 256;

/// Points per centroid that k-means++ seeding draws from.
const SEEDING_POINTS_PER_CENTROID: usize = 32;

/// Relative perturbation of a split centroid (Faiss's `EPS`).
const SPLIT_EPS: f32 = 1.0 / 1024.0;

/// How to train.
#[derive(Clone, Debug)]
pub struct Training {
    /// Number of centroids (`nLists`).
    pub k: usize,
    /// Iterations (`trainingIterations`).
    pub iterations: usize,
    /// Nearest by inner product on unit centroids, instead of by Euclidean distance.
    pub spherical: bool,
    /// Threads for the assignment step (`parallelism`), at least 1.
    pub threads: usize,
    pub seed: u64,
}

/// Trains `t.k` centroids over `points` (row-major, `dim` values each); returns them
/// row-major. The caller guarantees at least `k` points (ArangoDB refuses fewer).
pub fn train(points: &[f32], dim: usize, t: &Training) -> Vec<f32> {
    assert!(dim > 0 && points.len() % dim == 0, "points are whole rows");
    let n = points.len() / dim;
    assert!(t.k > 0 && n >= t.k, "at least one point per centroid");
    let cap = t.k.saturating_mul(MAX_POINTS_PER_CENTROID);
    let sample = sample_rows(points, dim, cap, t.seed);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(t.seed.wrapping_add(1));
    let m = sample.len() / dim;
    let mut centroids = seed_centroids(&sample, dim, t.k, t.threads, &mut rng);
    if t.spherical {
        centroids.chunks_exact_mut(dim).for_each(kernels::normalize);
    }
    let mut labels = vec![0u32; m];
    for _ in 0..t.iterations.max(1) {
        assign(&sample, dim, &centroids, t, &mut labels);
        update(&sample, dim, &labels, &mut centroids, t);
    }
    centroids
}

/// k-means++ seeding: the first centroid a random point, each next one a point drawn with
/// probability proportional to its squared distance to the nearest centroid so far, which
/// spreads the start over the clusters (plain random starts often put two centroids in one
/// cluster and none in another, a local minimum the iterations do not leave). Drawn from at
/// most [`SEEDING_POINTS_PER_CENTROID`]·k points, so seeding costs a fraction of training.
fn seed_centroids(
    sample: &[f32],
    dim: usize,
    k: usize,
    threads: usize,
    rng: &mut impl rand::Rng,
) -> Vec<f32> {
    let m = sample.len() / dim;
    let pool = sample_rows(
        sample,
        dim,
        k.saturating_mul(SEEDING_POINTS_PER_CENTROID),
        rng.gen(),
    );
    let n = pool.len() / dim;
    assert!(n >= k && m >= k, "at least one point per centroid");
    let mut centroids = Vec::with_capacity(k * dim);
    let mut chosen = vec![false; n];
    let first = rng.gen_range(0..n);
    chosen[first] = true;
    centroids.extend_from_slice(row(&pool, dim, first));
    let mut nearest: Vec<f32> = (0..n)
        .map(|i| kernels::l2_squared(row(&pool, dim, i), row(&pool, dim, first)))
        .collect();
    while centroids.len() < k * dim {
        let total: f64 = nearest.iter().map(|d| f64::from(*d)).sum();
        // Duplicates everywhere (total 0): any point not taken yet.
        let next = if total > 0.0 {
            let mut target = rng.gen_range(0.0..total);
            let mut pick = None;
            for (i, d) in nearest.iter().enumerate() {
                target -= f64::from(*d);
                if target < 0.0 && !chosen[i] {
                    pick = Some(i);
                    break;
                }
            }
            pick.or_else(|| (0..n).rev().find(|&i| !chosen[i] && nearest[i] > 0.0))
        } else {
            None
        }
        .or_else(|| (0..n).find(|&i| !chosen[i]))
        .expect("n >= k leaves a point to take");
        chosen[next] = true;
        let c = row(&pool, dim, next).to_vec();
        // The distance update is the cost of seeding: split over the training threads.
        let per_thread = n.div_ceil(threads.max(1)).max(1);
        std::thread::scope(|scope| {
            for (part, slice) in nearest.chunks_mut(per_thread).enumerate() {
                let (pool, c) = (&pool, &c);
                scope.spawn(move || {
                    for (j, d) in slice.iter_mut().enumerate() {
                        let i = part * per_thread + j;
                        *d = d.min(kernels::l2_squared(row(pool, dim, i), c));
                    }
                });
            }
        });
        centroids.extend_from_slice(&c);
    }
    centroids
}

/// At most `cap` of the rows of `points` (row-major, `dim` values each), chosen by a seeded
/// shuffle and kept in their original order; all of them when there are not more.
pub fn sample_rows(points: &[f32], dim: usize, cap: usize, seed: u64) -> Vec<f32> {
    assert!(dim > 0 && points.len() % dim == 0, "points are whole rows");
    let n = points.len() / dim;
    if n <= cap {
        return points.to_vec();
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut order: Vec<u32> = (0..n as u32).collect();
    let (chosen, _) = order.partial_shuffle(&mut rng, cap);
    let mut chosen = chosen.to_vec();
    chosen.sort_unstable();
    let mut out = Vec::with_capacity(cap * dim);
    for &i in &chosen {
        out.extend_from_slice(row(points, dim, i as usize));
    }
    out
}

fn row(points: &[f32], dim: usize, i: usize) -> &[f32] {
    &points[i * dim..(i + 1) * dim]
}

/// The nearest centroid of every point (row-major), by Euclidean distance or, `spherical`,
/// by inner product: one matrix product per block, on `threads` threads.
pub fn nearest_centroids(
    points: &[f32],
    dim: usize,
    centroids: &[f32],
    spherical: bool,
    threads: usize,
) -> Vec<u32> {
    let t = Training {
        k: centroids.len() / dim,
        iterations: 0,
        spherical,
        threads,
        seed: 0,
    };
    let mut labels = vec![0u32; points.len() / dim];
    assign(points, dim, centroids, &t, &mut labels);
    labels
}

/// The nearest centroid of every point (row-major `points`), in parallel blocks.
fn assign(points: &[f32], dim: usize, centroids: &[f32], t: &Training, labels: &mut [u32]) {
    let k = centroids.len() / dim;
    let norms: Vec<f32> = centroids
        .chunks_exact(dim)
        .map(|c| kernels::dot(c, c))
        .collect();
    let threads = t.threads.max(1);
    let rows_per_thread = labels.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (part, out) in labels.chunks_mut(rows_per_thread).enumerate() {
            let start = part * rows_per_thread;
            let block_points = &points[start * dim..(start + out.len()) * dim];
            let norms = &norms;
            scope.spawn(move || assign_rows(block_points, dim, centroids, k, norms, t, out));
        }
    });
}

// The one unsafe call of the core: matrixmultiply's sgemm takes raw pointers and strides.
#[allow(unsafe_code)]
fn assign_rows(
    points: &[f32],
    dim: usize,
    centroids: &[f32],
    k: usize,
    norms: &[f32],
    t: &Training,
    out: &mut [u32],
) {
    let mut products = vec![0f32; BLOCK * k];
    for (b, labels) in out.chunks_mut(BLOCK).enumerate() {
        let rows = labels.len();
        let x = &points[b * BLOCK * dim..(b * BLOCK + rows) * dim];
        assert!(x.len() == rows * dim && centroids.len() == k * dim);
        assert!(products.len() >= rows * k);
        // SAFETY: `x` is `rows`×`dim` row-major (row stride dim, column stride 1),
        // `centroids` read as its transpose is `dim`×`k` (row stride 1, column stride dim),
        // and `products` holds at least `rows`×`k` values (row stride k); the asserts above
        // check those lengths, so every index sgemm computes is in bounds.
        unsafe {
            matrixmultiply::sgemm(
                rows,
                dim,
                k,
                1.0,
                x.as_ptr(),
                dim as isize,
                1,
                centroids.as_ptr(),
                1,
                dim as isize,
                0.0,
                products.as_mut_ptr(),
                k as isize,
                1,
            );
        }
        for (r, label) in labels.iter_mut().enumerate() {
            let dots = &products[r * k..(r + 1) * k];
            let mut best = 0usize;
            let mut best_score = f32::INFINITY;
            for (j, d) in dots.iter().enumerate() {
                // Smaller is nearer: ‖c‖² − 2x·c for Euclidean (‖x‖² is the same for every
                // centroid), −x·c on the sphere.
                let score = if t.spherical { -d } else { norms[j] - 2.0 * d };
                if score < best_score {
                    best_score = score;
                    best = j;
                }
            }
            *label = best as u32;
        }
    }
}

/// Moves every centroid to the mean of its points; empty cells split the largest one.
fn update(points: &[f32], dim: usize, labels: &[u32], centroids: &mut [f32], t: &Training) {
    let k = centroids.len() / dim;
    let mut sums = vec![0f64; k * dim];
    let mut counts = vec![0usize; k];
    for (i, &l) in labels.iter().enumerate() {
        let l = l as usize;
        counts[l] += 1;
        for (s, x) in sums[l * dim..(l + 1) * dim]
            .iter_mut()
            .zip(row(points, dim, i))
        {
            *s += f64::from(*x);
        }
    }
    for j in 0..k {
        if counts[j] == 0 {
            continue;
        }
        let c = &mut centroids[j * dim..(j + 1) * dim];
        for (c, s) in c.iter_mut().zip(&sums[j * dim..(j + 1) * dim]) {
            *c = (*s / counts[j] as f64) as f32;
        }
    }
    // Empty cells: bounded by k splits per iteration.
    for j in 0..k {
        if counts[j] != 0 {
            continue;
        }
        let (largest, &size) = counts
            .iter()
            .enumerate()
            .max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)))
            .expect("k > 0");
        if size < 2 {
            break;
        }
        let source = centroids[largest * dim..(largest + 1) * dim].to_vec();
        for (d, x) in source.iter().enumerate() {
            let (up, down) = (x * (1.0 + SPLIT_EPS), x * (1.0 - SPLIT_EPS));
            let (mine, theirs) = if d % 2 == 0 { (up, down) } else { (down, up) };
            centroids[j * dim + d] = mine;
            centroids[largest * dim + d] = theirs;
        }
        counts[j] = size / 2;
        counts[largest] = size - size / 2;
    }
    if t.spherical {
        centroids.chunks_exact_mut(dim).for_each(kernels::normalize);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    fn blobs(centres: &[[f32; 2]], per: usize, seed: u64) -> Vec<f32> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut out = Vec::new();
        for c in centres {
            for _ in 0..per {
                out.push(c[0] + rng.gen_range(-0.5..0.5));
                out.push(c[1] + rng.gen_range(-0.5..0.5));
            }
        }
        out
    }

    fn training(k: usize, spherical: bool) -> Training {
        Training {
            k,
            iterations: 20,
            spherical,
            threads: 2,
            seed: 7,
        }
    }

    #[test]
    fn finds_well_separated_clusters() {
        let centres = [[0.0, 0.0], [100.0, 0.0], [0.0, 100.0], [100.0, 100.0]];
        let points = blobs(&centres, 300, 1);
        let found = train(&points, 2, &training(4, false));
        assert_eq!(found.len(), 8);
        for c in centres {
            let nearest = found
                .chunks_exact(2)
                .map(|f| kernels::l2_squared(f, &c))
                .fold(f32::INFINITY, f32::min);
            assert!(nearest < 1.0, "no centroid near {c:?}: {found:?}");
        }
        // Seeded: the same data trains the same centroids.
        assert_eq!(found, train(&points, 2, &training(4, false)));
    }

    #[test]
    fn spherical_centroids_are_unit_length_and_empty_cells_are_refilled() {
        // Eight identical points and two more: k = 4 must still give four centroids.
        let mut points = [1.0f32, 0.0].repeat(8);
        points.extend_from_slice(&[0.0, 1.0, 0.0, 2.0]);
        let found = train(&points, 2, &training(4, true));
        for c in found.chunks_exact(2) {
            assert!((kernels::dot(c, c) - 1.0).abs() < 1e-4, "{c:?}");
        }
        let euclid = train(&points, 2, &training(4, false));
        assert_eq!(euclid.len(), 8);
        assert!(euclid.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn samples_at_most_256_points_per_centroid() {
        let points = blobs(&[[0.0, 0.0], [50.0, 50.0]], 2000, 3);
        let t = Training {
            k: 2,
            iterations: 5,
            spherical: false,
            threads: 1,
            seed: 1,
        };
        let found = train(&points, 2, &t);
        assert_eq!(found.len(), 4);
        let near = |c: [f32; 2]| {
            found
                .chunks_exact(2)
                .any(|f| kernels::l2_squared(f, &c) < 1.0)
        };
        assert!(near([0.0, 0.0]) && near([50.0, 50.0]), "{found:?}");
    }
}
