//! Counters and histograms that many threads bump at once without sharing a cache line:
//! each thread writes to one of [`SHARDS`] cache-line-aligned slots (picked once per thread,
//! round robin), and a read sums the slots. Recording is one relaxed `fetch_add` (two for a
//! histogram sample: its bucket and its sum), no lock and no allocation.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::HistogramSnapshot;

/// Slots per counter: more than the threads that record at the same time on the machines
/// QuiverDB runs on, few enough that a read stays cheap.
pub const SHARDS: usize = 16;

/// One cache line (two on CPUs that prefetch line pairs) per slot.
#[repr(align(128))]
#[derive(Default)]
struct Slot(AtomicU64);

static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SHARD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// This thread's slot index.
fn shard() -> usize {
    SHARD.with(|s| {
        let mut i = s.get();
        if i == usize::MAX {
            i = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
            s.set(i);
        }
        i
    })
}

/// A monotonically growing count.
pub struct Counter {
    slots: [Slot; SHARDS],
}

impl Default for Counter {
    fn default() -> Counter {
        Counter::new()
    }
}

impl Counter {
    /// A counter at zero.
    pub fn new() -> Counter {
        Counter {
            slots: std::array::from_fn(|_| Slot::default()),
        }
    }

    /// Adds `n`.
    #[inline]
    pub fn add(&self, n: u64) {
        self.slots[shard()].0.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds one.
    #[inline]
    pub fn inc(&self) {
        self.add(1);
    }

    /// The count (a sum over the slots; concurrent additions may or may not be in it).
    pub fn get(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.0.load(Ordering::Relaxed))
            .fold(0u64, u64::wrapping_add)
    }
}

/// Sixteen counters on their own cache lines: a shard's part of a histogram is a run of
/// these, so two shards never share a line.
#[repr(align(128))]
struct Line([AtomicU64; 16]);

/// A distribution of samples over fixed buckets. Samples are recorded as integers in a base
/// unit (nanoseconds, bytes) and shown divided by `unit` (1e9 shows nanoseconds as seconds).
pub struct Histogram {
    /// Upper bounds in the shown unit, ascending.
    bounds: Vec<f64>,
    /// The same bounds in the base unit, for an integer comparison per sample.
    raw_bounds: Vec<u64>,
    unit: f64,
    /// Lines per shard: each shard holds one count per bucket (`+Inf` last, not cumulative)
    /// and then the sum of its samples.
    stride: usize,
    lines: Vec<Line>,
}

impl Histogram {
    /// A histogram over `bounds` (ascending upper bounds, in the shown unit; `+Inf` is
    /// implied) whose samples are base units, `unit` of them per shown unit.
    pub fn new(bounds: Vec<f64>, unit: f64) -> Histogram {
        assert!(
            bounds.windows(2).all(|w| w[0] < w[1]) && bounds.iter().all(|b| b.is_finite()),
            "histogram bounds must be finite and ascending: {bounds:?}"
        );
        assert!(unit > 0.0, "histogram unit must be positive");
        let raw_bounds = bounds.iter().map(|b| (b * unit).floor() as u64).collect();
        // Buckets (bounds + `+Inf`) and the sum.
        let stride = (bounds.len() + 2).div_ceil(16);
        let lines = (0..SHARDS * stride)
            .map(|_| Line(std::array::from_fn(|_| AtomicU64::new(0))))
            .collect();
        Histogram {
            bounds,
            raw_bounds,
            unit,
            stride,
            lines,
        }
    }

    /// Cell `i` (a bucket, or the sum at `bounds.len() + 1`) of shard `shard`.
    #[inline]
    fn cell(&self, shard: usize, i: usize) -> &AtomicU64 {
        &self.lines[shard * self.stride + i / 16].0[i % 16]
    }

    /// Records one sample of `raw` base units.
    #[inline]
    pub fn record(&self, raw: u64) {
        let bucket = self.raw_bounds.partition_point(|b| *b < raw);
        let shard = shard();
        self.cell(shard, bucket).fetch_add(1, Ordering::Relaxed);
        self.cell(shard, self.bounds.len() + 1)
            .fetch_add(raw, Ordering::Relaxed);
    }

    /// Records a duration (for histograms in seconds with `unit` 1e9).
    #[inline]
    pub fn record_duration(&self, took: std::time::Duration) {
        self.record(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
    }

    /// The upper bounds, in the shown unit.
    pub fn bounds(&self) -> &[f64] {
        &self.bounds
    }

    /// The counts per bucket (not cumulative, `+Inf` last), their total and the sum of the
    /// samples in the shown unit.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut counts = vec![0u64; self.bounds.len() + 1];
        let mut sum = 0u64;
        for shard in 0..SHARDS {
            for (i, total) in counts.iter_mut().enumerate() {
                *total = total.wrapping_add(self.cell(shard, i).load(Ordering::Relaxed));
            }
            sum = sum.wrapping_add(
                self.cell(shard, self.bounds.len() + 1)
                    .load(Ordering::Relaxed),
            );
        }
        HistogramSnapshot {
            bounds: self.bounds.clone(),
            count: counts.iter().sum(),
            counts,
            sum: sum as f64 / self.unit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn counters_sum_the_slots_of_every_thread() {
        let counter = Arc::new(Counter::new());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let c = Arc::clone(&counter);
                std::thread::spawn(move || (0..1000).for_each(|_| c.inc()))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(counter.get(), 8000);
    }

    #[test]
    fn samples_land_in_the_first_bucket_whose_bound_holds_them() {
        let h = Histogram::new(vec![0.01, 0.1, 1.0], 1e9);
        h.record(10_000_000); // exactly 0.01 s: le="0.01"
        h.record(50_000_000);
        h.record(2_000_000_000);
        let s = h.snapshot();
        assert_eq!(s.counts, vec![1, 1, 0, 1]);
        // Twenty buckets span two lines per shard.
        let wide = Histogram::new((1..20).map(f64::from).collect(), 1.0);
        wide.record(19);
        wide.record(100);
        assert_eq!(wide.snapshot().counts[18..], [1, 1]);
        assert_eq!(wide.snapshot().sum, 119.0);
        assert_eq!(s.count, 3);
        assert!((s.sum - 2.06).abs() < 1e-9);
    }

    #[test]
    #[should_panic(expected = "ascending")]
    fn unordered_bounds_are_refused() {
        Histogram::new(vec![1.0, 0.5], 1.0);
    }
}
