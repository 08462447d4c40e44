//! Process-wide counts of transactions started, committed and aborted (ArangoDB's
//! `arangodb_transactions_*` metrics). A [`Counted`] travels inside each
//! [`crate::Transaction`]: created when the transaction begins, it counts an abort when it is
//! dropped without having been marked committed, so every way a transaction ends is counted
//! exactly once. Relaxed atomics: one increment per transaction, no lock.

use std::sync::atomic::{AtomicU64, Ordering};

static STARTED: AtomicU64 = AtomicU64::new(0);
static COMMITTED: AtomicU64 = AtomicU64::new(0);
static ABORTED: AtomicU64 = AtomicU64::new(0);

/// Transactions started, committed and aborted since the process started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransactionCounts {
    /// Transactions begun.
    pub started: u64,
    /// Transactions committed.
    pub committed: u64,
    /// Transactions aborted (explicitly, by a failed commit, or dropped unfinished).
    pub aborted: u64,
}

/// The counts so far.
pub fn transaction_counts() -> TransactionCounts {
    TransactionCounts {
        started: STARTED.load(Ordering::Relaxed),
        committed: COMMITTED.load(Ordering::Relaxed),
        aborted: ABORTED.load(Ordering::Relaxed),
    }
}

/// One running transaction's place in the counts.
#[derive(Debug)]
pub(crate) struct Counted {
    committed: bool,
}

impl Counted {
    pub(crate) fn start() -> Counted {
        STARTED.fetch_add(1, Ordering::Relaxed);
        Counted { committed: false }
    }

    pub(crate) fn commit(mut self) {
        self.committed = true;
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let counter = if self.committed { &COMMITTED } else { &ABORTED };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_end_is_counted_once() {
        let before = transaction_counts();
        Counted::start().commit();
        drop(Counted::start());
        let after = transaction_counts();
        // Other tests of the process may run transactions meanwhile: at least ours.
        assert!(after.started >= before.started + 2);
        assert!(after.committed > before.committed);
        assert!(after.aborted > before.aborted);
    }
}
