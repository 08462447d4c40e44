//! What the query service counts for `/_admin/metrics` and `/_admin/statistics`: queries
//! finished, their execution times (all and slow ones, in ArangoDB's buckets), and the total
//! query time. Sharded counters: the inline path of trivial queries records here too.

use std::time::Duration;

use quiver_metrics::{scale, Counter, Histogram, HistogramSnapshot};

/// The AQL figures of one query service.
pub struct QueryMetrics {
    all: Counter,
    time: Histogram,
    slow_time: Histogram,
    total_msec: Counter,
}

/// A reading of [`QueryMetrics`] plus the gauges of the moment.
#[derive(Clone, Debug)]
pub struct QueryFigures {
    /// Queries finished (`arangodb_aql_all_query_total`).
    pub all_queries: u64,
    /// Execution times of all queries, seconds (`arangodb_aql_query_time`).
    pub query_time: HistogramSnapshot,
    /// Execution times of slow queries, seconds (`arangodb_aql_slow_query_time`).
    pub slow_query_time: HistogramSnapshot,
    /// Total execution time in milliseconds (`arangodb_aql_total_query_time_msec_total`).
    pub total_query_time_msec: u64,
    /// Queries running now (`arangodb_aql_current_query`).
    pub running: u64,
    /// Memory the running queries hold now, in bytes (`arangodb_aql_global_memory_usage`).
    pub running_memory: u64,
    /// Open cursors (`arangodb_aql_cursors_active`).
    pub cursors: u64,
}

impl QueryMetrics {
    pub(super) fn new() -> QueryMetrics {
        QueryMetrics {
            all: Counter::new(),
            time: Histogram::new(scale::aql_query_time(), 1e9),
            slow_time: Histogram::new(scale::aql_slow_query_time(), 1e9),
            total_msec: Counter::new(),
        }
    }

    /// A query finished after `took`; `slow` when it went into the slow-query log.
    pub(super) fn finished(&self, took: Duration, slow: bool) {
        self.all.inc();
        self.time.record_duration(took);
        self.total_msec
            .add(u64::try_from(took.as_millis()).unwrap_or(u64::MAX));
        if slow {
            self.slow_time.record_duration(took);
        }
    }

    pub(super) fn figures(&self, running: u64, running_memory: u64, cursors: u64) -> QueryFigures {
        QueryFigures {
            all_queries: self.all.get(),
            query_time: self.time.snapshot(),
            slow_query_time: self.slow_time.snapshot(),
            total_query_time_msec: self.total_msec.get(),
            running,
            running_memory,
            cursors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_queries_are_counted_in_both_histograms() {
        let m = QueryMetrics::new();
        m.finished(Duration::from_millis(3), false);
        m.finished(Duration::from_secs(12), true);
        let f = m.figures(0, 0, 0);
        assert_eq!(f.all_queries, 2);
        assert_eq!(f.query_time.count, 2);
        assert_eq!(f.slow_query_time.count, 1);
        assert_eq!(f.total_query_time_msec, 12_003);
    }
}
