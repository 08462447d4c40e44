//! The multi-dimensional index (`mdi`, `mdi-prefixed`, the older name `zkd`): documents'
//! numeric `fields` as a point filed on a Z-order curve, answering "which documents lie in
//! this box" for FILTERs that bound several attributes at once, as ArangoDB's RocksDB
//! implementation does.
//!
//! Each number is mapped to a `u64` whose unsigned order is the numbers' order (sign bit
//! flipped for positives, all bits for negatives; `-0` is `0`), and the bits of the
//! dimensions are interleaved, most significant first, into the Z-value: points close in
//! every dimension get close Z-values, and a box `[lo, hi]` lies between `z(lo)` and `z(hi)`.
//! A search walks that range in order and, at each entry outside the box, jumps to the
//! smallest Z-value after it inside the box (BIGMIN, Tropf and Herzog 1981), so it visits
//! the box's runs of the curve rather than everything between its corners. `mdi-prefixed`
//! indexes put the `prefixFields` values (compared for equality only) in front of the Z-value.
//! Entries carry the document's key and revision, per the maintenance protocol of
//! `maintained.rs`.

use std::any::Any;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use quiver_errors::{Error, ErrorCode, Result};
use quiver_types::Revision;
use serde_json::{Map, Value};

use crate::indexes::definition::IndexDef;
use crate::indexes::structure::{Completion, IndexStructure};

/// The order-preserving image of a number (`-0.0` and `0.0` are one point).
pub fn encode(x: f64) -> u64 {
    let x = if x == 0.0 { 0.0 } else { x };
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// Interleaves the dimensions' bits, most significant level first, dimension 0 first.
fn interleave(values: &[u64]) -> Vec<u8> {
    let n = values.len();
    let mut out = vec![0u8; n * 8];
    for level in 0..64 {
        let bit = 63 - level;
        for (d, v) in values.iter().enumerate() {
            if (v >> bit) & 1 == 1 {
                let pos = level * n + d;
                out[pos / 8] |= 0x80 >> (pos % 8);
            }
        }
    }
    out
}

/// The smallest point after `z` (a point outside the box) whose Z-value lies inside the box
/// `[min, max]`, or None when no later Z-value is inside (BIGMIN over per-dimension values).
fn bigmin(z: &[u64], min: &[u64], max: &[u64]) -> Option<Vec<u64>> {
    let n = z.len();
    let (mut min, mut max) = (min.to_vec(), max.to_vec());
    let mut best: Option<Vec<u64>> = None;
    // Bits `bit` and below of a dimension.
    let low = |bit: u32| -> u64 {
        if bit == 63 {
            u64::MAX
        } else {
            (1u64 << (bit + 1)) - 1
        }
    };
    for level in 0..64u32 {
        let bit = 63 - level;
        for d in 0..n {
            let (zb, lb, hb) = ((z[d] >> bit) & 1, (min[d] >> bit) & 1, (max[d] >> bit) & 1);
            match (zb, lb, hb) {
                (0, 0, 0) | (1, 1, 1) => {}
                (0, 0, 1) => {
                    let mut candidate = min.clone();
                    candidate[d] = (min[d] & !low(bit)) | (1 << bit);
                    best = Some(candidate);
                    max[d] = (max[d] & !low(bit)) | (low(bit) >> 1);
                }
                (0, 1, 1) => return Some(min),
                (1, 0, 0) => return best,
                (1, 0, 1) => {
                    min[d] = (min[d] & !low(bit)) | (1 << bit);
                }
                // min > max in this dimension: an empty box.
                _ => return None,
            }
        }
    }
    best
}

/// Bounds of one search: per dimension an inclusive `[lo, hi]` of encoded values.
#[derive(Clone, Debug, PartialEq)]
pub struct MdiBox {
    /// The `prefixFields` values (mdi-prefixed), compared for equality.
    pub prefix: Vec<Value>,
    pub lo: Vec<u64>,
    pub hi: Vec<u64>,
}

/// Searches visit at most this many entries outside the box between jumps before they give up
/// jumping and walk on (a jump costs a tree descent; a dense run is cheaper to walk).
const WALK_BEFORE_JUMP: usize = 4;

type EntryKey = (Vec<u8>, Arc<str>, Revision);

/// Why `doc` cannot be written to a collection with mdi index `def` (ArangoDB's check,
/// 1561): every dimension must be a number; a sparse index leaves out a document whose
/// dimension or prefix is missing or null, but a value that is there must still be a number.
pub(crate) fn check_document(def: &IndexDef, doc: &Map<String, Value>) -> Result<()> {
    for field in &def.fields {
        match lookup(doc, field) {
            Some(v) if v.as_f64().is_some() => {}
            None | Some(Value::Null) if def.sparse => {}
            Some(other) if def.sparse || !other.is_null() => {
                return Err(Error::with_message(
                    ErrorCode::QueryInvalidArithmeticValue,
                    format!("invalid arithmetic value: '{field}' must be a number"),
                ))
            }
            _ => {
                return Err(Error::with_message(
                    ErrorCode::QueryInvalidArithmeticValue,
                    format!("invalid arithmetic value: '{field}' is missing or null"),
                ))
            }
        }
    }
    Ok(())
}

/// One mdi index's entries.
pub(crate) struct MdiIndex {
    def: IndexDef,
    fields: Vec<String>,
    prefix_fields: Vec<String>,
    sparse: bool,
    /// While the index is created: the first stored document it cannot hold (the creation
    /// fails with it, as ArangoDB's).
    creating: bool,
    refused: Option<Error>,
    entries: BTreeMap<EntryKey, Box<[u64]>>,
}

fn lookup<'d>(doc: &'d Map<String, Value>, path: &str) -> Option<&'d Value> {
    let mut parts = path.split('.');
    let mut current = doc.get(parts.next()?)?;
    for part in parts {
        current = current.as_object()?.get(part)?;
    }
    Some(current)
}

/// A document's prefix values and encoded point for an index over `fields` after
/// `prefix_fields`; None when the index leaves it out.
pub fn point_of(
    fields: &[String],
    prefix_fields: &[String],
    sparse: bool,
    doc: &Map<String, Value>,
) -> Option<(Vec<Value>, Vec<u64>)> {
    let mut values = Vec::with_capacity(fields.len());
    for field in fields {
        values.push(encode(lookup(doc, field)?.as_f64()?));
    }
    let mut prefix = Vec::with_capacity(prefix_fields.len());
    for field in prefix_fields {
        match lookup(doc, field) {
            None | Some(Value::Null) if sparse => return None,
            found => prefix.push(found.cloned().unwrap_or(Value::Null)),
        }
    }
    Some((prefix, values))
}

/// Whether an encoded point lies in `b`'s bounds (the prefix aside).
pub fn in_box(point: &[u64], b: &MdiBox) -> bool {
    point
        .iter()
        .zip(b.lo.iter().zip(&b.hi))
        .all(|(v, (l, h))| l <= v && v <= h)
}

/// The byte prefix of an entry: the canonical JSON of the prefix values, then a 0 byte (JSON
/// text never holds one), so that one prefix's entries are one contiguous range.
fn prefix_bytes(values: &[Value]) -> Vec<u8> {
    let canonical: Vec<Value> = values
        .iter()
        .map(crate::indexes::unique::canonical)
        .collect();
    let mut out = serde_json::to_vec(&canonical).unwrap_or_default();
    out.push(0);
    out
}

impl MdiIndex {
    pub fn new(def: &IndexDef, creating: bool) -> MdiIndex {
        MdiIndex {
            def: def.clone(),
            fields: def.fields.clone(),
            prefix_fields: def.prefix_fields(),
            sparse: def.sparse,
            creating,
            refused: None,
            entries: BTreeMap::new(),
        }
    }

    /// The entry of a document: its prefix bytes and encoded point, or None when it is not in
    /// the index (a dimension not a number; for a sparse index also a prefix missing or null).
    fn point(&self, doc: &Map<String, Value>) -> Option<(Vec<u8>, Vec<u64>)> {
        let (prefix, values) = point_of(&self.fields, &self.prefix_fields, self.sparse, doc)?;
        Some((prefix_bytes(&prefix), values))
    }

    /// Key and revision of every entry inside `b`, in Z order.
    pub fn search(&self, b: &MdiBox) -> Vec<(Arc<str>, Revision)> {
        self.search_visiting(b).0
    }

    /// [`MdiIndex::search`] and the number of entries it looked at.
    fn search_visiting(&self, b: &MdiBox) -> (Vec<(Arc<str>, Revision)>, usize) {
        assert_eq!(b.lo.len(), self.fields.len(), "one bound per dimension");
        assert_eq!(b.hi.len(), self.fields.len(), "one bound per dimension");
        if b.lo.iter().zip(&b.hi).any(|(l, h)| l > h) {
            return (Vec::new(), 0);
        }
        let prefix = prefix_bytes(&b.prefix);
        let with_prefix = |z: Vec<u8>| {
            let mut k = prefix.clone();
            k.extend_from_slice(&z);
            k
        };
        let end = with_prefix(interleave(&b.hi));
        let inside = |p: &[u64]| in_box(p, b);
        let mut out = Vec::new();
        let mut visited = 0;
        let mut from = with_prefix(interleave(&b.lo));
        // Each round either ends or moves `from` strictly forward: bounded by the entries.
        'seek: loop {
            let start: Bound<EntryKey> =
                Bound::Included((from.clone(), Arc::from(""), Revision(0)));
            let mut outside = 0;
            for ((z, key, rev), point) in self.entries.range((start, Bound::Unbounded)) {
                visited += 1;
                if *z > end {
                    break 'seek;
                }
                if inside(point) {
                    out.push((Arc::clone(key), *rev));
                    outside = 0;
                    continue;
                }
                outside += 1;
                if outside > WALK_BEFORE_JUMP {
                    match bigmin(point, &b.lo, &b.hi) {
                        Some(next) => {
                            let next = with_prefix(interleave(&next));
                            assert!(next > *z, "BIGMIN moves forward");
                            from = next;
                            continue 'seek;
                        }
                        None => break 'seek,
                    }
                }
            }
            break;
        }
        (out, visited)
    }
}

impl IndexStructure for MdiIndex {
    fn insert(&mut self, key: &Arc<str>, rev: Revision, doc: &Map<String, Value>) {
        match self.point(doc) {
            Some((prefix, point)) => {
                let mut z = prefix;
                z.extend_from_slice(&interleave(&point));
                self.entries
                    .insert((z, Arc::clone(key), rev), point.into_boxed_slice());
            }
            // Writes are checked before they reach the index; only the creation scan meets
            // documents stored before the index existed.
            None if self.creating && self.refused.is_none() => {
                self.refused = check_document(&self.def, doc).err();
            }
            None => {}
        }
    }

    fn remove(&mut self, key: &str, rev: Revision, doc: &Map<String, Value>) {
        if let Some((prefix, point)) = self.point(doc) {
            let mut z = prefix;
            z.extend_from_slice(&interleave(&point));
            self.entries.remove(&(z, Arc::from(key), rev));
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn selectivity(&self) -> Option<f64> {
        None
    }

    fn fresh(&self) -> Box<dyn IndexStructure> {
        Box::new(MdiIndex::new(&self.def, false))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn completion(&self, _name: &str) -> Option<Completion> {
        let err = self.refused.clone()?;
        Some(Box::new(move || Err(err)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use serde_json::json;

    #[test]
    fn the_encoding_keeps_the_order_of_numbers() {
        let xs = [
            f64::MIN,
            -1e300,
            -2.5,
            -1.0,
            -1e-300,
            0.0,
            1e-300,
            1.0,
            2.5,
            1e300,
            f64::MAX,
        ];
        for w in xs.windows(2) {
            assert!(encode(w[0]) < encode(w[1]), "{} {}", w[0], w[1]);
        }
        assert_eq!(encode(-0.0), encode(0.0));
    }

    #[test]
    fn bigmin_finds_the_next_point_inside() {
        // Brute force over a small grid: the next Z-value inside the box after each point.
        let grid: Vec<Vec<u64>> = (0..16u64)
            .flat_map(|x| (0..16u64).map(move |y| vec![x, y]))
            .collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for _ in 0..40 {
            let (x1, x2) = (rng.gen_range(0..16u64), rng.gen_range(0..16u64));
            let (y1, y2) = (rng.gen_range(0..16u64), rng.gen_range(0..16u64));
            let lo = vec![x1.min(x2), y1.min(y2)];
            let hi = vec![x1.max(x2), y1.max(y2)];
            let inside = |p: &Vec<u64>| (0..2).all(|d| lo[d] <= p[d] && p[d] <= hi[d]);
            for p in &grid {
                if inside(p) {
                    continue;
                }
                let expected = grid
                    .iter()
                    .filter(|q| inside(q) && interleave(q) > interleave(p))
                    .min_by_key(|q| interleave(q))
                    .cloned();
                assert_eq!(bigmin(p, &lo, &hi), expected, "{p:?} in {lo:?}..{hi:?}");
            }
        }
    }

    fn def(body: Value) -> IndexDef {
        IndexDef::parse(&body, 3).unwrap()
    }

    #[test]
    fn searches_find_exactly_the_points_in_the_box() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let mut ix = MdiIndex::new(
            &def(json!({"type": "mdi", "fields": ["x", "y", "z"], "fieldValueTypes": "double"})),
            false,
        );
        let mut points = Vec::new();
        for i in 0..3000 {
            let p: Vec<f64> = (0..3)
                .map(|_| rng.gen_range(-100.0..100.0f64).round() / 4.0)
                .collect();
            let key: Arc<str> = Arc::from(format!("k{i}"));
            ix.insert(
                &key,
                Revision(1),
                json!({"x": p[0], "y": p[1], "z": p[2]})
                    .as_object()
                    .unwrap(),
            );
            points.push((key, p));
        }
        ix.insert(
            &Arc::from("none"),
            Revision(1),
            json!({"x": "a", "y": 1, "z": 1}).as_object().unwrap(),
        );
        assert_eq!(ix.len(), 3000);
        for _ in 0..100 {
            let mut lo = Vec::new();
            let mut hi = Vec::new();
            for _ in 0..3 {
                let (a, b) = (rng.gen_range(-30.0..30.0f64), rng.gen_range(-30.0..30.0f64));
                lo.push(a.min(b));
                hi.push(a.max(b));
            }
            let b = MdiBox {
                prefix: Vec::new(),
                lo: lo.iter().map(|x| encode(*x)).collect(),
                hi: hi.iter().map(|x| encode(*x)).collect(),
            };
            let mut found: Vec<Arc<str>> = ix.search(&b).into_iter().map(|(k, _)| k).collect();
            found.sort();
            let mut expected: Vec<Arc<str>> = points
                .iter()
                .filter(|(_, p)| (0..3).all(|d| lo[d] <= p[d] && p[d] <= hi[d]))
                .map(|(k, _)| Arc::clone(k))
                .collect();
            expected.sort();
            assert_eq!(found, expected);
        }
    }

    #[test]
    fn a_small_box_visits_a_small_part_of_the_index() {
        let mut ix = MdiIndex::new(
            &def(json!({"type": "mdi", "fields": ["x", "y"], "fieldValueTypes": "double"})),
            false,
        );
        for x in 0..200 {
            for y in 0..200 {
                let doc = json!({"x": x, "y": y});
                ix.insert(
                    &Arc::from(format!("{x}-{y}")),
                    Revision(1),
                    doc.as_object().unwrap(),
                );
            }
        }
        let b = MdiBox {
            prefix: Vec::new(),
            lo: vec![encode(50.0), encode(120.0)],
            hi: vec![encode(59.0), encode(129.0)],
        };
        let (found, visited) = ix.search_visiting(&b);
        assert_eq!(found.len(), 100);
        assert!(visited < 2_000, "visited {visited} of 40000 entries");
    }

    #[test]
    fn prefixes_separate_entries_and_removal_finds_them() {
        let mut ix = MdiIndex::new(
            &def(
                json!({"type": "mdi-prefixed", "fields": ["x"], "prefixFields": ["c"], "fieldValueTypes": "double"}),
            ),
            false,
        );
        let doc = |c: Value, x: f64| json!({"c": c, "x": x}).as_object().cloned().unwrap();
        ix.insert(&Arc::from("a"), Revision(1), &doc(json!("red"), 1.0));
        ix.insert(&Arc::from("b"), Revision(1), &doc(json!("red"), 5.0));
        ix.insert(&Arc::from("c"), Revision(1), &doc(json!("blue"), 1.0));
        ix.insert(&Arc::from("d"), Revision(1), &doc(json!(1.0), 1.0));
        let all = |prefix: Value| MdiBox {
            prefix: vec![prefix],
            lo: vec![encode(f64::MIN)],
            hi: vec![encode(f64::MAX)],
        };
        let keys = |ix: &MdiIndex, b: MdiBox| -> Vec<String> {
            ix.search(&b)
                .into_iter()
                .map(|(k, _)| k.to_string())
                .collect()
        };
        assert_eq!(keys(&ix, all(json!("red"))), ["a", "b"]);
        assert_eq!(keys(&ix, all(json!("blue"))), ["c"]);
        // 1 and 1.0 are one value.
        assert_eq!(keys(&ix, all(json!(1))), ["d"]);
        ix.remove("a", Revision(1), &doc(json!("red"), 1.0));
        assert_eq!(keys(&ix, all(json!("red"))), ["b"]);
        assert_eq!(ix.len(), 3);
    }
}
