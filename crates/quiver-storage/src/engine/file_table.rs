//! The file table: every open WAL segment, journal and datafile by its *slot*, the dense
//! 32-bit number this process gave it when it opened or created the file.
//!
//! On disk a file is named by its fid, a tick of the engine's one counter (64 bits, and past
//! 2^32 after 2^32 document operations over a data directory's life). The in-memory index
//! keeps a location in 24 bytes and has 32 bits for the file ([`crate::index::Loc::slot`]),
//! so it names the slot instead; indexes are rebuilt at every start, so slots never reach
//! the disk. Slots are not reused: a reader holding a location of a file the collector or
//! compactor removed finds no file under that slot and looks the key up again, which a
//! reused slot would turn into a read of another file. A process would have to open or
//! create 2^32 - 1 files to run out (asserted), at a new file per second 136 years.

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::files::DataFile;

/// Open files by slot, and the slot counter.
pub(crate) struct FileTable {
    by_slot: RwLock<HashMap<u32, Arc<DataFile>>>,
    /// The last slot handed out (0: none; 0 is never a file's slot, it marks removals).
    last_slot: AtomicU32,
}

impl FileTable {
    pub fn new() -> FileTable {
        FileTable {
            by_slot: RwLock::new(HashMap::new()),
            last_slot: AtomicU32::new(0),
        }
    }

    /// A slot no file of this process had: for a file about to be opened or created.
    pub fn new_slot(&self) -> u32 {
        let before = self
            .last_slot
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |s| s.checked_add(1))
            .expect("fewer than 2^32 files opened or created in one process");
        before + 1
    }

    /// The open file in `slot` (`None` once it left the table).
    pub fn get(&self, slot: u32) -> Option<Arc<DataFile>> {
        self.by_slot.read().get(&slot).cloned()
    }

    /// Enters `file` under its slot, which no other file may hold.
    pub fn insert(&self, file: Arc<DataFile>) {
        Self::insert_into(&mut self.by_slot.write(), file);
    }

    /// [`FileTable::insert`] under a write guard already held.
    pub fn insert_into(table: &mut HashMap<u32, Arc<DataFile>>, file: Arc<DataFile>) {
        let slot = file.slot;
        if let Some(other) = table.insert(slot, file) {
            assert!(
                Arc::ptr_eq(&other, &table[&slot]),
                "file slot {slot} entered twice (files {} and {})",
                other.fid,
                table[&slot].fid
            );
        }
    }

    /// Drops `file` from the table (readers holding it keep it open).
    pub fn remove(&self, file: &DataFile) {
        self.by_slot.write().remove(&file.slot);
    }

    pub fn read(&self) -> RwLockReadGuard<'_, HashMap<u32, Arc<DataFile>>> {
        self.by_slot.read()
    }

    pub fn write(&self) -> RwLockWriteGuard<'_, HashMap<u32, Arc<DataFile>>> {
        self.by_slot.write()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_dense_nonzero_and_never_handed_out_twice() {
        let table = FileTable::new();
        assert_eq!(table.new_slot(), 1);
        assert_eq!(table.new_slot(), 2);
        table.last_slot.store(u32::MAX - 1, Ordering::Release);
        assert_eq!(table.new_slot(), u32::MAX);
        let exhausted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| table.new_slot()));
        assert!(exhausted.is_err(), "slot counter must not wrap to 0");
    }
}
