//! Key-order range scans (`Snapshot::key_range`): exactly the snapshot's keys within the
//! bounds, in byte order (ascending and descending), across collection and later writes.

mod harness;

use std::collections::BTreeMap;
use std::ops::Bound;

use harness::*;
use quiver_storage::binary_ordered_key;
use rand::{Rng, SeedableRng};

fn random_key(rng: &mut rand::rngs::StdRng) -> String {
    const ALPHABET: &[u8] = b"abcxyz019-_:ABZ.@";
    let len = rng.gen_range(1..=30);
    (0..len)
        .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())] as char)
        .collect()
}

fn bound(rng: &mut rand::rngs::StdRng, keys: &[String]) -> Bound<String> {
    let k = if rng.gen_bool(0.5) && !keys.is_empty() {
        keys[rng.gen_range(0..keys.len())].clone()
    } else {
        random_key(rng)
    };
    match rng.gen_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(k),
        _ => Bound::Excluded(k),
    }
}

fn in_range(k: &str, (lo, hi): &(Bound<String>, Bound<String>)) -> bool {
    let above = match lo {
        Bound::Included(b) => k >= b.as_str(),
        Bound::Excluded(b) => k > b.as_str(),
        Bound::Unbounded => true,
    };
    let below = match hi {
        Bound::Included(b) => k <= b.as_str(),
        Bound::Excluded(b) => k < b.as_str(),
        Bound::Unbounded => true,
    };
    above && below
}

#[test]
fn key_ranges_match_a_sorted_model_in_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let e = open(dir.path());
    let db = new_db(&e);
    let a = new_col(&e, db);
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut model: BTreeMap<String, String> = BTreeMap::new();
    for round in 0..3 {
        for i in 0..400 {
            let key = random_key(&mut rng);
            if i % 5 == 0 && !model.is_empty() {
                let victim = model
                    .keys()
                    .nth(rng.gen_range(0..model.len()))
                    .unwrap()
                    .clone();
                remove(&e, a, &victim);
                model.remove(&victim);
            } else {
                let body = format!("{round}-{i}");
                put(&e, a, &key, &body);
                model.insert(key, body);
            }
        }
        if round == 1 {
            e.collect().unwrap();
        }
        let snap = e.snapshot();
        let keys: Vec<String> = model.keys().cloned().collect();
        for _ in 0..40 {
            let bounds = (bound(&mut rng, &keys), bound(&mut rng, &keys));
            let mut expected: Vec<(String, String)> = model
                .iter()
                .filter(|(k, _)| in_range(k, &bounds))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for reverse in [false, true] {
                let got: Vec<(String, String)> = snap
                    .key_range(a, bounds.clone(), reverse)
                    .unwrap()
                    .map(|item| {
                        let (k, d) = item.unwrap();
                        (k, String::from_utf8(d.body.to_vec()).unwrap())
                    })
                    .collect();
                if reverse {
                    expected.reverse();
                }
                assert_eq!(got, expected, "bounds {bounds:?} reverse {reverse}");
                if reverse {
                    expected.reverse();
                }
            }
        }
    }
}

#[test]
fn a_snapshot_range_ignores_later_writes_and_stops_early() {
    let dir = tempfile::tempdir().unwrap();
    let e = open(dir.path());
    let db = new_db(&e);
    let a = new_col(&e, db);
    for i in 0..1000 {
        put(&e, a, &format!("{i:04}"), "v");
    }
    let snap = e.snapshot();
    assert!(snap.keys_binary_ordered(a).unwrap());
    put(&e, a, "0500x", "later");
    remove(&e, a, "0501");
    let first: Vec<String> = snap
        .key_range(a, (Bound::Excluded("0499".into()), Bound::Unbounded), false)
        .unwrap()
        .take(3)
        .map(|item| item.unwrap().0)
        .collect();
    assert_eq!(first, ["0500", "0501", "0502"]);
    put(&e, a, "Upper", "v");
    assert!(!e.snapshot().keys_binary_ordered(a).unwrap());
    assert!(binary_ordered_key("0-9az"));
    assert!(!binary_ordered_key("a_b"));
}
