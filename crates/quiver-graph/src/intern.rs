//! Per-search vertex interning: every vertex `_id` a search touches gets a dense `u32`, so the
//! search state (distances, predecessors, visited flags) lives in flat vectors instead of
//! string-keyed maps.
//!
//! Hand-written because it is on the hot path of every graph query: names are copied into one
//! growing byte arena (no allocation per vertex once the arena has grown) and looked up through
//! a `hashbrown::HashTable` that compares against the arena, so a lookup of an already known
//! vertex never allocates.

use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

/// A vertex as numbered by one search (dense, starting at 0). Only meaningful together with
/// the search that handed it out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VertexId(pub u32);

impl VertexId {
    /// The position in per-vertex vectors.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Maps vertex `_id` strings to dense [`VertexId`]s and back.
#[derive(Default)]
pub struct Interner {
    bytes: Vec<u8>,
    /// `ends[i]` is the end offset of name `i` in `bytes`; its start is `ends[i-1]` (or 0).
    ends: Vec<u32>,
    /// `hashes[i]` is the hash of name `i`: growing the table never re-reads the arena.
    hashes: Vec<u64>,
    table: HashTable<u32>,
    hasher: DefaultHashBuilder,
}

impl Interner {
    /// An empty interner.
    pub fn new() -> Interner {
        Interner::default()
    }

    /// How many distinct vertices were interned.
    #[inline]
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether nothing was interned yet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    #[inline]
    fn slice<'a>(bytes: &'a [u8], ends: &[u32], i: u32) -> &'a [u8] {
        let i = i as usize;
        let start = if i == 0 { 0 } else { ends[i - 1] as usize };
        &bytes[start..ends[i] as usize]
    }

    /// The name of an interned vertex.
    #[inline]
    pub fn name(&self, id: VertexId) -> &str {
        let raw = Self::slice(&self.bytes, &self.ends, id.0);
        // The arena only ever receives whole `&str`s, so every slice is valid UTF-8; the
        // fallback keeps this panic-free without `unsafe`.
        std::str::from_utf8(raw).unwrap_or("")
    }

    /// The id of `name` if it was interned before.
    #[inline]
    pub fn get(&self, name: &str) -> Option<VertexId> {
        let hash = self.hasher.hash_one(name);
        let (bytes, ends) = (&self.bytes, &self.ends);
        self.table
            .find(hash, |&i| Self::slice(bytes, ends, i) == name.as_bytes())
            .map(|&i| VertexId(i))
    }

    /// The id of `name`, interning it on first sight.
    #[inline]
    pub fn intern(&mut self, name: &str) -> VertexId {
        let hash = self.hasher.hash_one(name);
        let (bytes, ends) = (&self.bytes, &self.ends);
        if let Some(&i) = self
            .table
            .find(hash, |&i| Self::slice(bytes, ends, i) == name.as_bytes())
        {
            return VertexId(i);
        }
        let id = self.ends.len() as u32;
        self.bytes.extend_from_slice(name.as_bytes());
        self.ends.push(self.bytes.len() as u32);
        self.hashes.push(hash);
        let hashes = &self.hashes;
        self.table.insert_unique(hash, id, |&i| hashes[i as usize]);
        VertexId(id)
    }

    /// Forgets every name but keeps the allocations, for reuse by the next search.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.hashes.clear();
        self.table.clear();
    }

    /// Approximate heap bytes held, for memory budgets.
    pub fn memory_bytes(&self) -> usize {
        self.bytes.capacity()
            + self.ends.capacity() * 4
            + self.hashes.capacity() * 8
            + self.table.capacity() * 5
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_stable_and_reversible() {
        let mut interner = Interner::new();
        let a = interner.intern("profiles/P1");
        let b = interner.intern("profiles/P2");
        let empty = interner.intern("");
        assert_ne!(a, b);
        assert_eq!(interner.intern("profiles/P1"), a);
        assert_eq!(interner.get("profiles/P2"), Some(b));
        assert_eq!(interner.get("profiles/P3"), None);
        assert_eq!(interner.name(a), "profiles/P1");
        assert_eq!(interner.name(b), "profiles/P2");
        assert_eq!(interner.name(empty), "");
        assert_eq!(interner.len(), 3);
        interner.clear();
        assert!(interner.is_empty());
        assert_eq!(interner.get("profiles/P1"), None);
        assert_eq!(interner.intern("profiles/P2"), VertexId(0));
    }

    #[test]
    fn many_names_survive_table_growth() {
        let mut interner = Interner::new();
        let ids: Vec<_> = (0..5000)
            .map(|i| interner.intern(&format!("v/{i}")))
            .collect();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(interner.name(*id), format!("v/{i}"));
            assert_eq!(interner.get(&format!("v/{i}")), Some(*id));
        }
    }
}
