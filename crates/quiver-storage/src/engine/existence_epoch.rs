//! A collection's existence epoch: a number that changes whenever a commit changes which keys
//! are alive in the collection (a new key inserted, an alive key removed, a truncate), and the
//! tick of that commit. Replacing or updating an alive key changes nothing.
//!
//! Readers use it to remember facts about key existence between queries without a
//! primary-index probe each time: a fact learnt by a snapshot for which epoch `e` was valid
//! holds for every snapshot for which `e` is valid (the edge index's vertex marks,
//! docs/design/core.md "Vertex existence marks").
//!
//! Epochs come from one process-wide counter, so no two collections (a dropped one and a new
//! one under its name included) and no two changes ever share one.
//!
//! Why a snapshot's answer is exact: a change is recorded under the WAL mutex before its batch
//! is published, `since` before `epoch`, both with release ordering, and the visible tick is
//! published after them. A reader whose snapshot tick `t` is at or above `since` and that
//! reads epoch `e` sees every change up to `t` (a change with a tick at or below `t` was
//! published before the snapshot was taken, so its epoch is the one read or older than it);
//! a change still in flight has a tick above `t`. So the keys alive at `t` are those alive
//! right after the change that made `e`.

use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_EPOCH: AtomicU64 = AtomicU64::new(1);

fn fresh() -> u64 {
    NEXT_EPOCH.fetch_add(1, Ordering::Relaxed)
}

pub(crate) struct ExistenceEpoch {
    epoch: AtomicU64,
    /// Tick of the commit that made `epoch` (0 for the epoch a collection starts with: every
    /// snapshot taken after the collection was loaded or created sees its whole history).
    since: AtomicU64,
}

impl ExistenceEpoch {
    pub(crate) fn new() -> ExistenceEpoch {
        ExistenceEpoch {
            epoch: AtomicU64::new(fresh()),
            since: AtomicU64::new(0),
        }
    }

    /// A commit at `tick` changes which keys are alive. Under the WAL mutex, before the
    /// commit's batch is published.
    pub(crate) fn changed(&self, tick: u64) {
        self.since.store(tick, Ordering::Release);
        self.epoch.store(fresh(), Ordering::Release);
    }

    /// The epoch that describes the keys alive at snapshot tick `tick`, or None when the
    /// newest change is not visible at `tick` (an older snapshot: no epoch describes it).
    pub(crate) fn valid_at(&self, tick: u64) -> Option<u64> {
        let epoch = self.epoch.load(Ordering::Acquire);
        let since = self.since.load(Ordering::Acquire);
        (tick >= since).then_some(epoch)
    }
}
