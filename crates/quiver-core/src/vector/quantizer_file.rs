//! The trained quantizer of a vector index on disk, so that a restart files vectors under
//! the same centroids instead of training again (which would change results and cost the
//! training time at every start). Format (little-endian), described in
//! `docs/storage-format.md`:
//!
//! ```text
//! "QVQZ" | version u32 = 1 | metric u32 | dim u32 | lists u32 | lists·dim f32 | crc32c u32
//! ```
//!
//! The checksum covers every byte before it. Written to a temporary file, synced and renamed
//! over the old one (then the directory synced), so a crash leaves the old file or the new
//! one, never a torn one; a file that fails any check is reported and not used.

use std::io::Write;
use std::path::Path;

use super::ivf::Quantizer;
use super::Metric;

const MAGIC: &[u8; 4] = b"QVQZ";
const VERSION: u32 = 1;
const HEADER: usize = 4 + 4 * 4;

fn metric_code(m: Metric) -> u32 {
    match m {
        Metric::Cosine => 0,
        Metric::L2 => 1,
        Metric::InnerProduct => 2,
    }
}

fn metric_of(code: u32) -> Option<Metric> {
    match code {
        0 => Some(Metric::Cosine),
        1 => Some(Metric::L2),
        2 => Some(Metric::InnerProduct),
        _ => None,
    }
}

/// The bytes of `q`'s file.
pub fn encode(q: &Quantizer) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + q.centroids.len() * 4 + 4);
    out.extend_from_slice(MAGIC);
    for n in [
        VERSION,
        metric_code(q.metric),
        u32::try_from(q.dim).expect("dimension fits u32"),
        u32::try_from(q.lists()).expect("lists fit u32"),
    ] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    for x in &q.centroids {
        out.extend_from_slice(&x.to_le_bytes());
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Reads a quantizer back; the error says what is wrong with the bytes.
pub fn decode(bytes: &[u8]) -> Result<Quantizer, String> {
    if bytes.len() < HEADER + 4 || &bytes[..4] != MAGIC {
        return Err("not a quantizer file".into());
    }
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    let stored = u32::from_le_bytes(tail.try_into().expect("4 bytes"));
    if crc32c::crc32c(body) != stored {
        return Err("checksum mismatch".into());
    }
    let word = |i: usize| u32::from_le_bytes(body[4 + 4 * i..8 + 4 * i].try_into().expect("4"));
    if word(0) != VERSION {
        return Err(format!("unknown version {}", word(0)));
    }
    let metric = metric_of(word(1)).ok_or_else(|| format!("unknown metric {}", word(1)))?;
    let (dim, lists) = (word(2) as usize, word(3) as usize);
    let expected = dim
        .checked_mul(lists)
        .and_then(|n| n.checked_mul(4))
        .map(|n| n + HEADER);
    if dim == 0 || lists == 0 || expected != Some(body.len()) {
        return Err(format!(
            "{} bytes do not hold {lists} centroids of dimension {dim}",
            body.len()
        ));
    }
    let centroids = body[HEADER..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes(b.try_into().expect("4")))
        .collect();
    Ok(Quantizer {
        metric,
        dim,
        centroids,
    })
}

/// Writes `q` to `path` durably (temporary file, fsync, rename, directory fsync).
pub fn write(path: &Path, q: &Quantizer) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("quantizer path has no directory"))?;
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension("tmp");
    {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(&encode(q))?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()
}

/// Reads the quantizer at `path`: `Ok(None)` when there is no file.
pub fn read(path: &Path) -> Result<Option<Quantizer>, String> {
    match std::fs::read(path) {
        Ok(bytes) => decode(&bytes).map(Some),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_damage() {
        let q = Quantizer {
            metric: Metric::InnerProduct,
            dim: 3,
            centroids: vec![1.0, -2.5, 3.25, 0.0, f32::MIN_POSITIVE, 7.0],
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("5.ivf");
        assert_eq!(read(&path), Ok(None));
        write(&path, &q).unwrap();
        assert_eq!(read(&path), Ok(Some(q)));
        let good = encode(&read(&path).unwrap().unwrap());
        // Every single-byte flip and every truncation is refused.
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x10;
            assert!(decode(&bad).is_err(), "flip at {i}");
            assert!(decode(&good[..i]).is_err(), "cut at {i}");
        }
    }
}
