//! Seeded random histories (puts, removals, two-collection batches, collection,
//! compaction, long-lived snapshots, restarts) with a simulated kill -9 after every step:
//! the recovered state must equal the model of acknowledged writes, and every open snapshot
//! must keep seeing its own state.

mod harness;

use std::collections::BTreeMap;

use bytes::Bytes;
use harness::*;
use quiver_storage::{Engine, Snapshot, WriteBatch};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

type Model = BTreeMap<String, String>;

fn snapshot_view(s: &Snapshot, cid: u64) -> Model {
    let mut m = Model::new();
    for item in s.scan(cid).unwrap() {
        let (k, d) = item.unwrap();
        m.insert(k, String::from_utf8(d.body.to_vec()).unwrap());
    }
    m
}

fn run(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let mut e = open(dir.path());
    let db = new_db(&e);
    let cols = [new_col(&e, db), new_col(&e, db)];
    let mut models = [Model::new(), Model::new()];
    let mut snaps: Vec<(Snapshot, [Model; 2])> = Vec::new();
    for step in 0..45 {
        let c = rng.gen_range(0..2);
        let key = format!("k{}", rng.gen_range(0..12));
        match rng.gen_range(0..100) {
            0..=34 => {
                let body = format!("s{step}:{}", "b".repeat(rng.gen_range(10..1500)));
                put(&e, cols[c], &key, &body);
                models[c].insert(key, body);
            }
            35..=49 => {
                remove(&e, cols[c], &key);
                models[c].remove(&key);
            }
            50..=59 => {
                let mut b = WriteBatch::new();
                for (i, cid) in cols.iter().enumerate() {
                    if rng.gen_bool(0.3) {
                        b.remove(*cid, &key, e.hlc().next());
                        models[i].remove(&key);
                    } else {
                        let body = format!("batch{step}");
                        b.put(*cid, &key, e.hlc().next(), Bytes::from(body.clone()));
                        models[i].insert(key.clone(), body);
                    }
                }
                e.commit(b).unwrap().wait().unwrap();
            }
            60..=67 => e.collect().unwrap(),
            68..=77 => {
                e.compact(cols[c]).unwrap();
            }
            78..=85 => {
                if snaps.len() < 3 {
                    snaps.push((e.snapshot(), models.clone()));
                }
            }
            86..=91 => {
                if !snaps.is_empty() {
                    let i = rng.gen_range(0..snaps.len());
                    snaps.remove(i);
                }
            }
            _ => {
                snaps.clear();
                e.shutdown().unwrap();
                drop(e);
                e = open(dir.path());
            }
        }
        for (s, m) in &snaps {
            for (i, cid) in cols.iter().enumerate() {
                assert_eq!(
                    &snapshot_view(s, *cid),
                    &m[i],
                    "seed {seed} step {step}: snapshot"
                );
            }
        }
        if step % 5 == 4 {
            let crashed = tempfile::tempdir().unwrap();
            copy_dir(dir.path(), crashed.path());
            let e2 = open(crashed.path());
            for (i, cid) in cols.iter().enumerate() {
                assert_eq!(
                    contents(&e2, *cid),
                    models[i],
                    "seed {seed} step {step}: crash"
                );
            }
        }
    }
    snaps.clear();
    let _ = Engine::shutdown(&e);
    drop(e);
    let e = open(dir.path());
    for (i, cid) in cols.iter().enumerate() {
        assert_eq!(contents(&e, *cid), models[i], "seed {seed}: final");
    }
}

#[test]
fn seeded_random_histories_survive_crashes_and_keep_snapshots() {
    for seed in 0..3 {
        run(seed);
    }
}
