//! Packs a collection's primary index once a bulk load into it has gone quiet.
//!
//! Autoincrement and other increasing decimal keys are in string order only while they keep
//! their number of digits: from the first key with one more digit on, every insert lands
//! between two existing keys, inside a full block, which splits in halves. After a large
//! import the index is therefore about half full (a restart packs it, `open.rs`). The
//! maintenance thread watches each collection's document count; once it has grown by
//! [`PACK_AFTER_GROWTH`] documents since the last pack and then not changed for [`QUIET`],
//! it packs the index span by span, at most [`ROUND_BUDGET`] per maintenance round
//! ([`PrimaryIndex::repack_some`]), and asks the binary to hand the freed pages back
//! ([`crate::EngineOptions::release_freed_memory`]) after each round and once more
//! [`RELEASE_AGAIN_AFTER`] after the pass.
//!
//! Why wait that long: the old blocks were allocated by the request threads, and the
//! allocator (mimalloc) lets only the thread that owns a page reuse or return what another
//! thread freed in it. Packed while those threads were alive but idle, the new blocks came
//! from fresh memory and the old pages stayed resident: at full Pokec scale the heap grew by
//! 0.7 GB above the import's peak during the pack (docs/benchmarks/tools.md, "Memory after
//! a bulk load"). Idle request threads exit after tokio's 10 s keep-alive; their pages are
//! then anyone's, and the pack reuses them.
//!
//! [`PrimaryIndex::repack_some`]: crate::index::PrimaryIndex::repack_some

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::collection::Collection;
use super::Inner;
use crate::index::RepackCursor;
use crate::CollectionId;

/// Documents a collection has to gain before its index is worth packing again.
const PACK_AFTER_GROWTH: u64 = 250_000;
/// How long a collection's count must stay unchanged before its index is packed: past
/// tokio's 10 s keep-alive of idle blocking threads, which is where requests run.
const QUIET: Duration = Duration::from_secs(12);
/// Longest packing per maintenance round (every 200 ms or sooner when woken), so that the
/// collector, the spare WAL segment and the mapped-memory budget keep their turns.
const ROUND_BUDGET: Duration = Duration::from_millis(50);
/// When to release freed memory once more after a pack (threads that served requests
/// during the pack have exited by then).
const RELEASE_AGAIN_AFTER: Duration = Duration::from_secs(12);

/// A collection's count as last seen.
struct Growth {
    /// The count after the last pack (or when first seen).
    packed_at: u64,
    last_count: u64,
    changed: Instant,
}

/// The maintenance thread's state of bulk-load packing.
#[derive(Default)]
pub(super) struct BulkLoadPacking {
    seen: HashMap<CollectionId, Growth>,
    /// The index being packed, where its pass stands, and the count it was started at.
    packing: Option<(Arc<Collection>, RepackCursor, u64)>,
    release_at: Option<Instant>,
}

impl BulkLoadPacking {
    /// One maintenance round: goes on packing, or starts on a collection a bulk load grew
    /// that is quiet now, for at most [`ROUND_BUDGET`]; releases freed memory when due.
    pub(super) fn tick(&mut self, inner: &Inner) {
        let now = Instant::now();
        let release = || {
            if let Some(release) = inner.options.release_freed_memory {
                release();
            }
        };
        if self.packing.is_none() {
            self.packing = self.quiet_grown(inner, now);
        }
        if let Some((col, cursor, count)) = &mut self.packing {
            let done = col.usable().is_err() || col.index.repack_some(cursor, now + ROUND_BUDGET);
            release();
            if done {
                if let Some(growth) = self.seen.get_mut(&col.id) {
                    growth.packed_at = growth.packed_at.max(*count);
                }
                self.packing = None;
                self.release_at = Some(Instant::now() + RELEASE_AGAIN_AFTER);
            }
        } else if self.release_at.is_some_and(|at| now >= at) {
            self.release_at = None;
            release();
        }
    }

    /// Updates the counts seen; returns a collection to pack, if one is due.
    fn quiet_grown(
        &mut self,
        inner: &Inner,
        now: Instant,
    ) -> Option<(Arc<Collection>, RepackCursor, u64)> {
        let catalog = inner.catalog();
        self.seen
            .retain(|id, _| catalog.collections.contains_key(id));
        let mut due = None;
        for (id, col) in &catalog.collections {
            let count = col.latest_count();
            let growth = self.seen.entry(*id).or_insert(Growth {
                packed_at: count,
                last_count: count,
                changed: now,
            });
            if count != growth.last_count {
                growth.last_count = count;
                growth.changed = now;
                // Removals lower the mark, so that regrowth is measured from there.
                growth.packed_at = growth.packed_at.min(count);
                continue;
            }
            if due.is_none()
                && count >= growth.packed_at + PACK_AFTER_GROWTH
                && now.duration_since(growth.changed) >= QUIET
                && col.usable().is_ok()
            {
                due = Some((col.clone(), RepackCursor::default(), count));
            }
        }
        due
    }
}
