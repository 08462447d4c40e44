//! Online backup: a consistent copy of the engine's directory while writers go on.
//!
//! The point in time is frozen by the engine's own locks, in their documented order: the DDL
//! mutex (no catalog change), the collector's lock (no WAL segment is collected or unlinked,
//! no journal appended, no MANIFEST `collectedTick` moves), every collection's file-set mutex
//! (no seal, no compaction swap), and last, briefly, the WAL mutex while the WAL segments are
//! copied (no batch half appended; the state copied is every batch committed before it).
//! Sealed datafiles and their hint files are immutable and are hard-linked; `catalog.json`,
//! each MANIFEST, each journal and the WAL segments are copied. Starting an engine on the copy
//! recovers exactly that state (journals up to `collectedTick`, the rest replayed from the
//! WAL).

use super::{wal_dir, Inner};
use crate::files;
use quiver_errors::Result;
use std::path::Path;
use std::sync::atomic::Ordering;

impl Inner {
    /// Writes a consistent copy of the engine into `target` (created; must not exist) and
    /// returns the tick it reflects.
    pub(super) fn backup_to(&self, target: &Path) -> Result<u64> {
        self.check_open()?;
        let io = |e| files::io_error(e, "writing backup");
        std::fs::create_dir_all(target).map_err(io)?;
        let _ddl = self.ddl.lock();
        let _no_collector = self.collect_lock.lock();
        copy_file(&self.dir.join("catalog.json"), &target.join("catalog.json")).map_err(io)?;
        let catalog = self.catalog.read().clone();
        let mut held = Vec::with_capacity(catalog.collections.len());
        for col in catalog.collections.values() {
            let cf = col.files.lock();
            let rel = col.dir.strip_prefix(&self.dir).unwrap_or(&col.dir);
            let to = target.join(rel);
            std::fs::create_dir_all(&to).map_err(io)?;
            copy_file(&col.dir.join("MANIFEST"), &to.join("MANIFEST")).map_err(io)?;
            for df in &cf.datafiles {
                let from = df.path();
                let name = from.file_name().unwrap_or_default();
                link_or_copy(&from, &to.join(name)).map_err(io)?;
                let hint = from.with_extension("hint");
                if hint.exists() {
                    link_or_copy(&hint, &to.join(hint.file_name().unwrap_or_default()))
                        .map_err(io)?;
                }
            }
            if let Some(journal) = &cf.journal {
                let from = journal.file.path();
                copy_file(&from, &to.join(from.file_name().unwrap_or_default())).map_err(io)?;
            }
            held.push(cf);
        }
        let wal_to = wal_dir(target);
        std::fs::create_dir_all(&wal_to).map_err(io)?;
        let wal = self.wal.lock();
        let tick = self.visible.load(Ordering::Acquire);
        let segments = wal
            .retained
            .iter()
            .chain(wal.sealed.iter())
            .chain(wal.segment.iter());
        for seg in segments {
            let from = seg.path();
            copy_file(&from, &wal_to.join(from.file_name().unwrap_or_default())).map_err(io)?;
        }
        drop(wal);
        drop(held);
        sync_dirs(target).map_err(io)?;
        Ok(tick)
    }
}

/// Copies `from` to `to` and makes the copy durable.
fn copy_file(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::copy(from, to)?;
    std::fs::File::open(to)?.sync_all()
}

/// Hard-links an immutable file, or copies it where links are not possible.
fn link_or_copy(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(from, to) {
        Ok(()) => Ok(()),
        Err(_) => copy_file(from, to),
    }
}

/// Fsyncs `dir` and its subdirectories (two levels: `db-*` and `col-*`, plus `wal`).
fn sync_dirs(dir: &Path) -> std::io::Result<()> {
    let mut stack = vec![(dir.to_path_buf(), 0u8)];
    while let Some((d, depth)) = stack.pop() {
        if depth < 3 {
            for entry in std::fs::read_dir(&d)?.flatten() {
                if entry.file_type()?.is_dir() {
                    stack.push((entry.path(), depth + 1));
                }
            }
        }
        std::fs::File::open(&d)?.sync_all()?;
    }
    Ok(())
}
