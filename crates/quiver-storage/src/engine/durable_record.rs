//! The durable-tick record `wal/durable-tick`: after every group commit the syncer writes
//! the highest tick its fdatasync covered and the WAL segment holding that tick's batch.
//! Startup compares it with what the WAL still holds: a segment that no longer reaches the
//! recorded tick lost writes that were acknowledged as durable (a truncated or zeroed WAL),
//! which the segment's own bytes cannot show (its intact prefix just ends early).
//!
//! The record is overwritten in place (one 32-byte `pwrite`) and never fsynced: it is only
//! ever written after the fdatasync it describes, so whatever version survives a crash or
//! power loss names a tick that is on stable storage (a lost or stale record only weakens
//! the check, it cannot make startup refuse a sound WAL). A torn or unreadable record is
//! ignored with a warning.
//!
//! Invariant: the recorded tick never exceeds the syncer's durable tick.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Bytes `Q V D T`.
const MAGIC: u32 = 0x5444_5651;
const VERSION: u32 = 1;
/// magic, version, tick, segment fid, CRC-32C of the preceding 24 bytes, zero.
const LEN: usize = 32;

/// What the record says: every tick up to `tick` was on stable storage, and the batch
/// ending at `tick` lies in WAL segment `segment`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct DurableRecord {
    pub(super) tick: u64,
    pub(super) segment: u64,
}

pub(super) fn record_path(wal_dir: &Path) -> PathBuf {
    wal_dir.join("durable-tick")
}

fn encode(r: DurableRecord) -> [u8; LEN] {
    let mut out = [0u8; LEN];
    out[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    out[4..8].copy_from_slice(&VERSION.to_le_bytes());
    out[8..16].copy_from_slice(&r.tick.to_le_bytes());
    out[16..24].copy_from_slice(&r.segment.to_le_bytes());
    let crc = crc32c::crc32c(&out[0..24]);
    out[24..28].copy_from_slice(&crc.to_le_bytes());
    out
}

fn decode(buf: &[u8]) -> Option<DurableRecord> {
    let word = |at: usize| u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes"));
    let long = |at: usize| u64::from_le_bytes(buf[at..at + 8].try_into().expect("8 bytes"));
    if buf.len() != LEN || word(0) != MAGIC || word(4) != VERSION {
        return None;
    }
    if word(24) != crc32c::crc32c(&buf[0..24]) {
        return None;
    }
    Some(DurableRecord {
        tick: long(8),
        segment: long(16),
    })
}

/// The record in `wal_dir`, `None` if there is none or it is unreadable (warned).
pub(super) fn read(wal_dir: &Path) -> Option<DurableRecord> {
    let path = record_path(wal_dir);
    let buf = match std::fs::read(&path) {
        Ok(buf) => buf,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!("cannot read {}: {e}; not checked", path.display());
            return None;
        }
    };
    let record = decode(&buf);
    if record.is_none() {
        tracing::warn!(
            "{} is damaged ({} bytes); the WAL is not checked against it",
            path.display(),
            buf.len()
        );
    }
    record
}

/// Opens (creating) the record for the syncer's in-place writes.
pub(super) fn open_writer(wal_dir: &Path) -> io::Result<File> {
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(record_path(wal_dir))
}

/// Overwrites the record (no fsync, see the module notes).
pub(super) fn write(file: &File, r: DurableRecord) -> io::Result<()> {
    file.write_all_at(&encode(r), 0)
}

/// Removes the record (nothing in the WAL to check against).
pub(super) fn remove(wal_dir: &Path) {
    let _ = std::fs::remove_file(record_path(wal_dir));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_and_any_flipped_bit_is_refused() {
        let r = DurableRecord {
            tick: 0x0123_4567_89ab_cdef,
            segment: 42,
        };
        let bytes = encode(r);
        assert_eq!(decode(&bytes), Some(r));
        for bit in 0..28 * 8 {
            let mut b = bytes;
            b[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(decode(&b), None, "flipped bit {bit} accepted");
        }
        assert_eq!(decode(&bytes[..LEN - 1]), None);
    }

    #[test]
    fn a_missing_record_reads_as_none_and_a_written_one_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), None);
        let f = open_writer(dir.path()).unwrap();
        let r = DurableRecord {
            tick: 7,
            segment: 3,
        };
        write(&f, r).unwrap();
        assert_eq!(read(dir.path()), Some(r));
        write(&f, DurableRecord { tick: 9, ..r }).unwrap();
        assert_eq!(read(dir.path()).map(|r| r.tick), Some(9));
        remove(dir.path());
        assert_eq!(read(dir.path()), None);
    }
}
