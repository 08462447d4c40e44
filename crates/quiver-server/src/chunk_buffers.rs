//! Reusable buffers for large response bodies (dump chunks of tens of MiB). A fresh buffer
//! per chunk costs the kernel a zeroed page for every 4 KiB written (more than half the
//! server's CPU time of a dump went there); a buffer handed back once its response is sent
//! has its pages already. The pool is owned by whoever produces the chunks (a dump batch) and
//! goes with it; a buffer outliving its pool is simply freed.

use std::sync::{Arc, Weak};

use bytes::Bytes;
use parking_lot::Mutex;

/// Free buffers kept at most.
const MAX_FREE: usize = 4;
/// Buffers larger than this are not kept.
const MAX_KEPT_CAPACITY: usize = 160 * 1024 * 1024;

/// A pool of byte buffers; share it as `Arc<ChunkBuffers>`.
#[derive(Default, Debug)]
pub struct ChunkBuffers {
    free: Mutex<Vec<Vec<u8>>>,
}

impl ChunkBuffers {
    /// An empty buffer with room for at least `capacity` bytes: a returned one if any.
    pub fn take(&self, capacity: usize) -> Vec<u8> {
        let mut buffer = self.free.lock().pop().unwrap_or_default();
        buffer.clear();
        buffer.reserve(capacity);
        buffer
    }

    /// `buffer` as response bytes; once the last clone of them is dropped the buffer comes
    /// back to `pool` (if it still exists and has room).
    pub fn freeze(pool: &Arc<ChunkBuffers>, buffer: Vec<u8>) -> Bytes {
        Bytes::from_owner(Returning {
            buffer,
            pool: Arc::downgrade(pool),
        })
    }

    /// Number of free buffers.
    pub fn free_count(&self) -> usize {
        self.free.lock().len()
    }
}

/// A buffer lent out as [`Bytes`], returned to its pool when dropped.
struct Returning {
    buffer: Vec<u8>,
    pool: Weak<ChunkBuffers>,
}

impl AsRef<[u8]> for Returning {
    fn as_ref(&self) -> &[u8] {
        &self.buffer
    }
}

impl Drop for Returning {
    fn drop(&mut self) {
        if self.buffer.capacity() > MAX_KEPT_CAPACITY {
            return;
        }
        if let Some(pool) = self.pool.upgrade() {
            let mut free = pool.free.lock();
            if free.len() < MAX_FREE {
                free.push(std::mem::take(&mut self.buffer));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_comes_back_when_its_last_bytes_are_dropped() {
        let pool = Arc::new(ChunkBuffers::default());
        let mut buffer = pool.take(1000);
        buffer.extend_from_slice(b"abc");
        let address = buffer.as_ptr();
        let bytes = ChunkBuffers::freeze(&pool, buffer);
        let clone = bytes.clone();
        assert_eq!(&bytes[..], b"abc");
        drop(bytes);
        assert_eq!(pool.free_count(), 0);
        drop(clone);
        assert_eq!(pool.free_count(), 1);
        let again = pool.take(10);
        assert!(again.is_empty());
        assert!(again.capacity() >= 1000);
        assert_eq!(again.as_ptr(), address);
        assert_eq!(pool.free_count(), 0);
    }

    #[test]
    fn the_pool_keeps_a_bounded_number_and_a_gone_pool_frees() {
        let pool = Arc::new(ChunkBuffers::default());
        let lent: Vec<Bytes> = (0..MAX_FREE + 2)
            .map(|_| ChunkBuffers::freeze(&pool, pool.take(16)))
            .collect();
        drop(lent);
        assert_eq!(pool.free_count(), MAX_FREE);
        let orphan = ChunkBuffers::freeze(&pool, pool.take(16));
        drop(pool);
        drop(orphan);
    }
}
