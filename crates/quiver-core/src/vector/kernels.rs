//! The arithmetic of vector search: inner products, squared Euclidean distances and
//! normalisation over `f32` slices.
//!
//! Written as eight independent accumulators over 8-wide chunks so that the compiler turns
//! them into SIMD lanes without `unsafe` or target-specific code; the remainder is added
//! afterwards. Summation order therefore differs from a plain left-to-right loop, but it is
//! the same on every call, which is what the index needs (an entry is found again under the
//! list it was filed in).

const LANES: usize = 8;

/// `Σ a[i]·b[i]`.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "vectors of one index share a dimension");
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..LANES {
            acc[l] += x[l] * y[l];
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        sum += x * y;
    }
    sum
}

/// `Σ (a[i]-b[i])²`.
pub fn l2_squared(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "vectors of one index share a dimension");
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..LANES {
            let d = x[l] - y[l];
            acc[l] += d * d;
        }
    }
    let mut sum: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        let d = x - y;
        sum += d * d;
    }
    sum
}

/// Scales `v` to unit length in place; a zero vector stays zero.
pub fn normalize(v: &mut [f32]) {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 && norm.is_finite() {
        for x in v.iter_mut() {
            *x /= norm;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_dot(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum()
    }

    #[test]
    fn kernels_agree_with_a_plain_loop_for_every_length() {
        for len in 0..40 {
            let a: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
            assert!(
                (f64::from(dot(&a, &b)) - naive_dot(&a, &b)).abs() < 1e-4,
                "{len}"
            );
            let l2: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
                .sum();
            assert!((f64::from(l2_squared(&a, &b)) - l2).abs() < 1e-4, "{len}");
        }
    }

    #[test]
    fn normalize_gives_unit_length_and_keeps_zero() {
        let mut v = vec![3.0, 4.0];
        normalize(&mut v);
        assert_eq!(v, vec![0.6, 0.8]);
        let mut zero = vec![0.0; 5];
        normalize(&mut zero);
        assert_eq!(zero, vec![0.0; 5]);
    }
}
