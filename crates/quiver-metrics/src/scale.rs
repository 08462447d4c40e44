//! ArangoDB's histogram scales, so that QuiverDB's buckets match the ones ArangoDB's
//! metrics have for the same name.

/// The upper bounds of a logarithmic scale of `n` buckets between `low` and `high`: the
/// `n - 1` finite bounds `low + (high - low) * base^-k` for `k = n-1 … 1` (the last bucket
/// is `+Inf`), as ArangoDB's `LogScale` computes them.
pub fn logarithmic(base: f64, low: f64, high: f64, n: usize) -> Vec<f64> {
    assert!(base > 1.0 && high > low && n >= 2, "bad logarithmic scale");
    (1..n)
        .rev()
        .map(|k| low + (high - low) * base.powi(-(k as i32)))
        .collect()
}

/// `arangodb_client_connection_statistics_bytes_received` / `_bytes_sent`.
pub const BYTES_TRANSFERRED: [f64; 5] = [250.0, 1000.0, 2000.0, 5000.0, 10000.0];
/// `arangodb_client_connection_statistics_connection_time` / `_total_time` (seconds).
pub const CONNECTION_TIME: [f64; 3] = [0.1, 1.0, 60.0];
/// `arangodb_client_connection_statistics_request_time` / `_queue_time` / `_io_time` (seconds).
pub const REQUEST_TIME: [f64; 9] = [0.01, 0.05, 0.1, 0.2, 0.5, 1.0, 5.0, 15.0, 30.0];

/// `arangodb_aql_query_time` (seconds): base 2 from 0 to 50 in 20 buckets.
pub fn aql_query_time() -> Vec<f64> {
    logarithmic(2.0, 0.0, 50.0, 20)
}

/// `arangodb_aql_slow_query_time` (seconds): base 2 from 1 to 2000 in 10 buckets.
pub fn aql_slow_query_time() -> Vec<f64> {
    logarithmic(2.0, 1.0, 2000.0, 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logarithmic_scales_end_half_way_below_high() {
        let q = aql_query_time();
        assert_eq!(q.len(), 19);
        assert_eq!(*q.last().unwrap(), 25.0);
        assert!((q[0] - 50.0 / 524_288.0).abs() < 1e-12);
        let slow = aql_slow_query_time();
        assert_eq!(slow.len(), 9);
        assert_eq!(*slow.last().unwrap(), 1000.5);
        assert!(slow.windows(2).all(|w| w[0] < w[1]));
    }
}
