//! Scratch vectors reused from one collector pass (or hint-file write) to the next, bounded
//! so that one huge segment does not pin its buffers for the life of the process.

/// Scratch vectors above this many entries are dropped after use instead of kept: a segment
/// sized for one huge batch must not pin its buffers for the life of the process (the
/// default 32 MiB segment needs ~250,000).
pub(super) const SCRATCH_KEEP: usize = 1 << 20;

/// Presizes scratch vectors for a file of `bytes` at one entry per 128 bytes (a ~150-byte
/// document marker each in a typical insert load), so that even the first segment of a process
/// does not regrow them step by step (each step a copy into fresh, kernel-zeroed pages).
/// Reserved but untouched capacity costs address space only.
pub(super) fn presize<T>(v: &mut Vec<T>, bytes: usize) {
    let want = (bytes / 128).min(SCRATCH_KEEP);
    v.reserve(want.saturating_sub(v.len()));
}

/// Keeps `v` (emptied) for the next use unless it grew beyond [`SCRATCH_KEEP`] entries.
pub(super) fn recycle<T>(v: &mut Vec<T>) {
    v.clear();
    if v.capacity() > SCRATCH_KEEP {
        *v = Vec::new();
    }
}
