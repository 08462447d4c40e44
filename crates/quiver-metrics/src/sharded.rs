//! Counters and histograms that many threads bump at once without sharing a cache line:
//! each thread writes to its own cache-line-aligned slot, and a read sums the slots.
//!
//! A thread claims one of [`OWNED_SLOTS`] slots for itself on its first recording and gives
//! it back when it exits; while it holds the slot nobody else writes there, so recording is a
//! relaxed load and store — no locked instruction, no lock, no allocation. Threads that find
//! every owned slot taken (more recording threads than that at once) share the
//! [`SHARED_SLOTS`] others, where recording is one relaxed `fetch_add`. A slot keeps its
//! counts when its thread exits; the next owner goes on from them (the release of the slot
//! and its next claim order the two threads' writes).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::HistogramSnapshot;

/// Slots one thread at a time may own (more than the threads that record at the same time
/// on the machines QuiverDB runs on: the tokio workers and the syncer and compactor threads).
pub const OWNED_SLOTS: usize = 16;
/// Slots for the threads beyond those, shared by atomic additions.
pub const SHARED_SLOTS: usize = 4;
/// Slots per counter: few enough that a read stays cheap.
pub const SHARDS: usize = OWNED_SLOTS + SHARED_SLOTS;

/// One cache line (two on CPUs that prefetch line pairs) per slot.
#[repr(align(128))]
#[derive(Default)]
struct Slot(AtomicU64);

/// Which owned slots a live thread holds.
static TAKEN: [AtomicBool; OWNED_SLOTS] = [const { AtomicBool::new(false) }; OWNED_SLOTS];
static NEXT_SHARED: AtomicUsize = AtomicUsize::new(0);

/// A thread's slot, and whether it is the slot's only writer.
#[derive(Clone, Copy, Debug)]
struct Shard {
    index: usize,
    owned: bool,
}

/// A thread's claim on its slot, given back when the thread exits.
struct Claim(Shard);

impl Drop for Claim {
    fn drop(&mut self) {
        if self.0.owned {
            // Release: the next owner's claim sees every count this thread wrote.
            TAKEN[self.0.index].store(false, Ordering::Release);
        }
    }
}

thread_local! {
    static CLAIM: Claim = Claim(claim());
}

fn claim() -> Shard {
    for (index, taken) in TAKEN.iter().enumerate() {
        if taken
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return Shard { index, owned: true };
        }
    }
    Shard {
        index: OWNED_SLOTS + NEXT_SHARED.fetch_add(1, Ordering::Relaxed) % SHARED_SLOTS,
        owned: false,
    }
}

/// This thread's slot (a shared one while the thread is being torn down).
#[inline]
fn shard() -> Shard {
    CLAIM.try_with(|c| c.0).unwrap_or(Shard {
        index: OWNED_SLOTS,
        owned: false,
    })
}

/// Adds `n` to a cell of `shard`'s slot.
#[inline]
fn bump(cell: &AtomicU64, n: u64, shard: Shard) {
    debug_assert_eq!(shard.owned, shard.index < OWNED_SLOTS);
    if shard.owned {
        // This thread is the cell's only writer: no read-modify-write needed.
        cell.store(
            cell.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    } else {
        cell.fetch_add(n, Ordering::Relaxed);
    }
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
        let shard = shard();
        bump(&self.slots[shard.index].0, n, shard);
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
        // The bounds are ascending, so the bounds below `raw` are the bucket's index; counted
        // without branches (a binary search mispredicts on every sample).
        let bucket = self.raw_bounds.iter().filter(|b| **b < raw).count();
        let shard = shard();
        bump(self.cell(shard.index, bucket), 1, shard);
        bump(self.cell(shard.index, self.bounds.len() + 1), raw, shard);
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
    fn more_threads_than_owned_slots_lose_no_count() {
        let counter = Arc::new(Counter::new());
        let histogram = Arc::new(Histogram::new(vec![10.0, 100.0], 1.0));
        let barrier = Arc::new(std::sync::Barrier::new(OWNED_SLOTS + 8));
        let threads: Vec<_> = (0..OWNED_SLOTS + 8)
            .map(|i| {
                let (c, h, b) = (counter.clone(), histogram.clone(), barrier.clone());
                std::thread::spawn(move || {
                    // All alive at once: some must share.
                    b.wait();
                    for _ in 0..2000 {
                        c.inc();
                        h.record(i as u64 * 10);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(counter.get(), 2000 * (OWNED_SLOTS as u64 + 8));
        assert_eq!(histogram.snapshot().count, 2000 * (OWNED_SLOTS as u64 + 8));
    }

    #[test]
    fn a_slot_given_back_keeps_its_counts_for_the_next_owner() {
        let counter = Arc::new(Counter::new());
        for _ in 0..3 * SHARDS {
            let c = counter.clone();
            std::thread::spawn(move || (0..100).for_each(|_| c.inc()))
                .join()
                .unwrap();
        }
        assert_eq!(counter.get(), 300 * SHARDS as u64);
    }

    #[test]
    fn buckets_match_a_binary_search() {
        let bounds: Vec<f64> = vec![1.0, 5.0, 10.0, 50.0, 100.0];
        let h = Histogram::new(bounds.clone(), 1.0);
        for raw in [0u64, 1, 2, 5, 6, 10, 49, 50, 51, 100, 101, u64::MAX] {
            let expected = bounds.partition_point(|b| (*b as u64) < raw);
            let before = h.snapshot().counts;
            h.record(raw);
            let after = h.snapshot().counts;
            assert_eq!(after[expected], before[expected] + 1, "{raw}");
        }
    }

    #[test]
    #[should_panic(expected = "ascending")]
    fn unordered_bounds_are_refused() {
        Histogram::new(vec![1.0, 0.5], 1.0);
    }
}
