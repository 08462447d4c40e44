//! The revision tree of a collection, as ArangoDB's revision-based replication serializes it
//! (`GET /_api/replication/revisions/tree`): a Merkle tree over the revisions of the
//! collection's documents. Its leaves split the revision range `[rangeMin, rangeMax)` into
//! 8^6 (262,144) equal buckets; each holds the number of documents whose revision falls into
//! it and the XOR of their revisions' hashes (64-bit FNV-1a over the revision's eight bytes,
//! little-endian); the summary node (`count`, `hash`) does the same for all of them. Two
//! collections holding the same revisions have the same tree, so a replica compares trees
//! and fetches only the buckets that differ (`revisions/ranges`, `revisions/documents`).
//!
//! ArangoDB keeps the tree up to date on every write; here it is computed from a snapshot on
//! demand, in one pass and O(leaves) memory. The range is the smallest aligned one that holds
//! every revision: a width of 2^24 (64 revisions per leaf, ArangoDB's initial range) doubled
//! as often as needed, starting at a multiple of the width. It therefore depends only on the
//! revisions, not on the order they are read in or on the collection's history.

/// Levels below the root: ArangoDB's `revisionTreeDepth`.
pub const DEPTH: u32 = 6;
/// Bits of the branching factor (8 children per node).
const BRANCHING_BITS: u32 = 3;
/// Number of leaves: 8^6.
pub const LEAVES: usize = 1 << (BRANCHING_BITS * DEPTH);
/// The narrowest range, 64 revisions per leaf (ArangoDB's `defaultRange`), as a power of two.
const BASE_WIDTH_BITS: u32 = BRANCHING_BITS * DEPTH + 6;
/// The serialization version ArangoDB writes.
const VERSION: u64 = 1;

/// ArangoDB's hash of one revision: 64-bit FNV-1a over its little-endian bytes.
pub fn revision_hash(revision: u64) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    revision
        .to_le_bytes()
        .iter()
        .fold(OFFSET_BASIS, |hash, &byte| {
            (hash ^ u64::from(byte)).wrapping_mul(PRIME)
        })
}

/// One bucket: how many revisions fell into it and the XOR of their hashes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// Number of revisions.
    pub count: u64,
    /// XOR of their [`revision_hash`]es.
    pub hash: u64,
}

impl Node {
    fn add(&mut self, other: Node) {
        self.count += other.count;
        self.hash ^= other.hash;
    }

    fn is_empty(self) -> bool {
        self.count == 0 && self.hash == 0
    }
}

/// A revision tree under construction or complete.
#[derive(Clone, Debug)]
pub struct RevisionTree {
    /// Start of the range (inclusive).
    range_min: u64,
    /// log2 of the range's width (`rangeMax - rangeMin`), at least [`BASE_WIDTH_BITS`], at
    /// most 64.
    width_bits: u32,
    /// The leaves; empty until the first revision arrives.
    leaves: Vec<Node>,
    /// All revisions together.
    summary: Node,
}

impl Default for RevisionTree {
    fn default() -> Self {
        RevisionTree::new()
    }
}

impl RevisionTree {
    /// An empty tree over `[0, 2^24)`.
    pub fn new() -> RevisionTree {
        RevisionTree {
            range_min: 0,
            width_bits: BASE_WIDTH_BITS,
            leaves: Vec::new(),
            summary: Node::default(),
        }
    }

    /// The tree of `revisions` (in any order).
    pub fn of(revisions: impl IntoIterator<Item = u64>) -> RevisionTree {
        let mut tree = RevisionTree::new();
        for revision in revisions {
            tree.insert(revision);
        }
        tree
    }

    /// Start of the range.
    pub fn range_min(&self) -> u64 {
        self.range_min
    }

    /// End of the range (exclusive), saturated at `u64::MAX` for the full 64-bit range.
    pub fn range_max(&self) -> u64 {
        let max = u128::from(self.range_min) + (1u128 << self.width_bits);
        u64::try_from(max).unwrap_or(u64::MAX)
    }

    /// Number of revisions in the tree.
    pub fn count(&self) -> u64 {
        self.summary.count
    }

    /// XOR of all revisions' hashes.
    pub fn hash(&self) -> u64 {
        self.summary.hash
    }

    /// Leaf `index` (`0..LEAVES`).
    pub fn leaf(&self, index: usize) -> Node {
        self.leaves.get(index).copied().unwrap_or_default()
    }

    /// The leaf `revision` falls into, `None` outside the range.
    pub fn leaf_of(&self, revision: u64) -> Option<usize> {
        let offset = revision.checked_sub(self.range_min)?;
        let leaf_bits = self.width_bits - BRANCHING_BITS * DEPTH;
        let index = usize::try_from(u128::from(offset) >> leaf_bits).ok()?;
        (index < LEAVES).then_some(index)
    }

    /// Adds one revision, widening the range first when it falls outside.
    pub fn insert(&mut self, revision: u64) {
        if self.leaves.is_empty() {
            // The first revision: the narrowest aligned range holding it.
            self.leaves = vec![Node::default(); LEAVES];
            self.range_min = revision & !((1u64 << BASE_WIDTH_BITS) - 1);
        }
        while self.leaf_of(revision).is_none() {
            self.widen();
        }
        let node = Node {
            count: 1,
            hash: revision_hash(revision),
        };
        if let Some(index) = self.leaf_of(revision) {
            self.leaves[index].add(node);
        }
        self.summary.add(node);
    }

    /// Doubles the range to the aligned range of twice the width that holds the current one:
    /// neighbouring leaves merge pairwise into one half of the new leaves.
    fn widen(&mut self) {
        assert!(
            self.width_bits < 64,
            "the 64-bit range holds every revision"
        );
        let width_bits = self.width_bits + 1;
        let new_min = if width_bits == 64 {
            0
        } else {
            self.range_min & !((1u64 << width_bits) - 1)
        };
        let upper_half = self.range_min != new_min;
        let mut leaves = vec![Node::default(); LEAVES];
        let base = if upper_half { LEAVES / 2 } else { 0 };
        for (index, node) in self.leaves.iter().enumerate() {
            leaves[base + index / 2].add(*node);
        }
        self.leaves = leaves;
        self.range_min = new_min;
        self.width_bits = width_bits;
    }

    /// ArangoDB's JSON form: `version`, `maxDepth`, `rangeMax`, `rangeMin`, `initialRangeMin`
    /// (revisions in `_rev` encoding), the summary's `count` and `hash`, and `nodes`, the
    /// leaves in order as `{count, hash}`; with `only_populated` an empty leaf is `{}`. Written
    /// straight into bytes: the leaves alone are a few megabytes of text.
    pub fn to_json_bytes(&self, only_populated: bool) -> Vec<u8> {
        use std::fmt::Write as _;
        let mut out = String::with_capacity(if only_populated { 1 << 20 } else { 6 << 20 });
        let _ = write!(
            out,
            "{{\"version\":{VERSION},\"maxDepth\":{DEPTH},\"rangeMax\":\"{}\",\"rangeMin\":\"{}\",\
             \"initialRangeMin\":\"{}\",\"count\":{},\"hash\":{},\"nodes\":[",
            encode_revision(self.range_max()),
            encode_revision(self.range_min),
            encode_revision(self.range_min),
            self.summary.count,
            self.summary.hash,
        );
        for index in 0..LEAVES {
            if index > 0 {
                out.push(',');
            }
            let node = self.leaf(index);
            if only_populated && node.is_empty() {
                out.push_str("{}");
            } else {
                let _ = write!(out, "{{\"count\":{},\"hash\":{}}}", node.count, node.hash);
            }
        }
        out.push_str("]}");
        out.into_bytes()
    }
}

/// A revision in `_rev` encoding; 0 is the single zero digit (`-`).
pub fn encode_revision(revision: u64) -> String {
    if revision == 0 {
        "-".to_string()
    } else {
        quiver_types::Revision(revision).encode()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_fnv1a_over_little_endian_bytes() {
        // FNV-1a 64 of eight zero bytes, and of 01 00 00 00 00 00 00 00.
        assert_eq!(revision_hash(0), 0xa8c7_f832_281a_39c5);
        assert_eq!(revision_hash(1), 0x89cd_3129_1d2a_efa4);
    }

    #[test]
    fn the_range_is_the_narrowest_aligned_one_and_independent_of_order() {
        let base = 1u64 << BASE_WIDTH_BITS;
        let t = RevisionTree::of([5 * base + 10]);
        assert_eq!((t.range_min(), t.range_max()), (5 * base, 6 * base));
        assert_eq!(t.leaf_of(5 * base + 10), Some(0));
        assert_eq!(
            t.leaf(0),
            Node {
                count: 1,
                hash: revision_hash(5 * base + 10)
            }
        );

        let revisions = [5 * base + 10, 6 * base + 3, 5 * base + 64, 7 * base - 1];
        let forward = RevisionTree::of(revisions);
        let backward = RevisionTree::of(revisions.iter().rev().copied());
        // 5·base and 6·base need a range of 4·base starting at 4·base.
        assert_eq!(
            (forward.range_min(), forward.range_max()),
            (4 * base, 8 * base)
        );
        for index in 0..LEAVES {
            assert_eq!(forward.leaf(index), backward.leaf(index), "leaf {index}");
        }
        assert_eq!(forward.count(), 4);
        let xor = revisions.iter().fold(0, |h, r| h ^ revision_hash(*r));
        assert_eq!((forward.hash(), backward.hash()), (xor, xor));
        // Each revision sits in the leaf its offset gives: the width is 4·base, 256 per leaf.
        for r in revisions {
            let index = forward.leaf_of(r).unwrap();
            assert_eq!(index as u64, (r - 4 * base) / 256);
        }
        let leaves: u64 = (0..LEAVES).map(|i| forward.leaf(i).count).sum();
        assert_eq!(leaves, 4);
    }

    #[test]
    fn extreme_revisions_widen_to_the_whole_range() {
        let t = RevisionTree::of([1, u64::MAX - 1]);
        assert_eq!((t.range_min(), t.range_max()), (0, u64::MAX));
        assert_eq!(t.leaf_of(1), Some(0));
        assert_eq!(t.leaf_of(u64::MAX - 1), Some(LEAVES - 1));
        assert_eq!(t.count(), 2);
    }

    use serde_json::{json, Value};

    fn json(tree: &RevisionTree, only_populated: bool) -> Value {
        serde_json::from_slice(&tree.to_json_bytes(only_populated)).unwrap()
    }

    #[test]
    fn json_has_arangodbs_shape() {
        let empty = json(&RevisionTree::new(), true);
        assert_eq!(empty["version"], 1);
        assert_eq!(empty["maxDepth"], 6);
        assert_eq!(empty["rangeMin"], "-");
        assert_eq!(empty["count"], 0);
        assert_eq!(empty["nodes"].as_array().unwrap().len(), LEAVES);
        assert_eq!(empty["nodes"][0], json!({}));

        let rev = (1u64 << 60) + 12345;
        let tree = RevisionTree::of([rev]);
        let full = json(&tree, false);
        let keys: Vec<&str> = full
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "version",
                "maxDepth",
                "rangeMax",
                "rangeMin",
                "initialRangeMin",
                "count",
                "hash",
                "nodes"
            ]
        );
        assert_eq!(full["nodes"][1], json!({ "count": 0, "hash": 0 }));
        let index = tree.leaf_of(rev).unwrap();
        assert_eq!(full["nodes"][index]["count"], 1);
        assert_eq!(full["hash"], revision_hash(rev));
        assert_eq!(full["nodes"].as_array().unwrap().len(), LEAVES);
        assert_eq!(
            quiver_types::Revision::decode(full["rangeMin"].as_str().unwrap()),
            Some(quiver_types::Revision(tree.range_min()))
        );
    }
}
