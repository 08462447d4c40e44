//! Vector indexes over a real engine: searches against brute-force rankings, snapshots,
//! transactions, truncate, the quantizer file across restarts (kept, lost, damaged) and the
//! files dropped with their index or collection.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::vector::Metric;
use crate::*;

fn options() -> CoreOptions {
    let mut options = CoreOptions::default();
    options.engine.sync_interval = Duration::from_millis(10);
    options.engine.journal_size_default = 1024 * 1024;
    options
}

fn open(dir: &std::path::Path) -> (Core, Arc<Database>) {
    let core = Core::open(dir, options()).unwrap();
    let db = core.database(SYSTEM_DATABASE).unwrap();
    (core, db)
}

fn insert(coll: &Arc<Collection>, doc: Value) {
    coll.insert(doc, &InsertOptions::new())
        .unwrap()
        .wait()
        .unwrap();
}

/// A collection `v` of `n` documents with random 4-dimensional vectors.
fn filled(db: &Database, n: usize, seed: u64) -> (Arc<Collection>, Vec<(String, Vec<f32>)>) {
    let coll = db
        .create_collection(CollectionSpec::from_json(&json!({"name": "v"})).unwrap())
        .unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut docs = Vec::new();
    for i in 0..n {
        let v: Vec<f32> = (0..4).map(|_| rng.gen_range(-10.0f32..10.0)).collect();
        let key = format!("k{i:04}");
        insert(&coll, json!({"_key": key, "v": v}));
        docs.push((key, v));
    }
    (coll, docs)
}

fn create_index(coll: &Collection, body: Value) -> u64 {
    let (desc, _) = coll.create_index(&body).unwrap();
    desc["id"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn search(
    r: &dyn DocumentReader,
    coll: &Collection,
    id: u64,
    q: &[f32],
    probe: usize,
) -> Vec<String> {
    r.vector_lookup(coll, id, q, probe, 10)
        .unwrap()
        .into_iter()
        .map(|(_, d)| d["_key"].as_str().unwrap().to_string())
        .collect()
}

/// The ten nearest keys by Euclidean distance, ties by key.
fn exact(docs: &[(String, Vec<f32>)], q: &[f32]) -> Vec<String> {
    let mut scored: Vec<(f64, &String)> = docs
        .iter()
        .map(|(k, v)| (Metric::L2.score(v, q), k))
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(10)
        .map(|(_, k)| k.clone())
        .collect()
}

fn quantizer_file(dir: &std::path::Path, coll: &Collection, id: u64) -> PathBuf {
    dir.join("vector-indexes")
        .join(coll.id().to_string())
        .join(format!("{id}.ivf"))
}

#[test]
fn searches_rank_like_a_scan_and_follow_snapshots_and_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let (_core, db) = open(dir.path());
    let (coll, mut docs) = filled(&db, 300, 1);
    let id = create_index(
        &coll,
        json!({"type": "vector", "fields": ["v"], "params": {"metric": "l2", "dimension": 4, "nLists": 8}}),
    );
    let q = [1.0f32, -2.0, 3.0, 0.5];
    let view = db.read_view();
    // Every list probed: exactly the brute-force ranking. One list: a subset of the lists'
    // entries, still in distance order.
    assert_eq!(search(&view, &coll, id, &q, 8), exact(&docs, &q));
    let one = view.vector_lookup(&coll, id, &q, 1, usize::MAX).unwrap();
    assert!(!one.is_empty() && one.len() < docs.len(), "{}", one.len());
    assert!(one.windows(2).all(|w| w[0].0 <= w[1].0));
    // Writes: the old snapshot keeps its answer, a new one sees the moved and removed ones.
    let nearest = exact(&docs, &q)[0].clone();
    coll.update(
        &nearest,
        json!({"v": [100, 100, 100, 100]}),
        &ModifyOptions::new(),
    )
    .unwrap()
    .wait()
    .unwrap();
    let second = exact(&docs, &q)[1].clone();
    coll.remove(&second, &RemoveOptions::new())
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(search(&view, &coll, id, &q, 8), exact(&docs, &q));
    docs.retain(|(k, _)| *k != second);
    docs.iter_mut()
        .filter(|(k, _)| *k == nearest)
        .for_each(|(_, v)| *v = vec![100.0; 4]);
    assert_eq!(search(&db.read_view(), &coll, id, &q, 8), exact(&docs, &q));
    drop(view);
    // A transaction finds its own staged documents, ranked with the rest.
    let mut trx = db
        .begin_transaction(TransactionOptions::writing(&["v"]))
        .unwrap();
    trx.insert(
        &coll,
        json!({"_key": "staged", "v": q}),
        &InsertOptions::new(),
    )
    .unwrap();
    let third = exact(&docs, &q)[2].clone();
    trx.update(
        &coll,
        Some(&third),
        json!({"v": [-100, 0, 0, 0]}),
        &ModifyOptions::new(),
    )
    .unwrap();
    let found = search(&trx, &coll, id, &q, 8);
    assert_eq!(found[0], "staged");
    assert!(!found.contains(&third), "{found:?}");
    // A staged document without a vector of the index is refused, as any write.
    let err = trx
        .insert(
            &coll,
            json!({"_key": "bad", "v": [1, 2]}),
            &InsertOptions::new(),
        )
        .unwrap_err();
    assert_eq!(err.code, quiver_errors::ErrorCode::TypeError);
    trx.abort();
    assert_eq!(search(&db.read_view(), &coll, id, &q, 8), exact(&docs, &q));
}

#[test]
fn the_quantizer_file_is_kept_across_restarts_and_rebuilt_when_lost_or_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let (core, db) = open(dir.path());
    let (coll, docs) = filled(&db, 400, 2);
    let body = json!({"type": "vector", "name": "near", "fields": ["v"],
                      "params": {"metric": "cosine", "dimension": 4, "nLists": 10}});
    let id = create_index(&coll, body.clone());
    let file = quantizer_file(dir.path(), &coll, id);
    let trained = std::fs::read(&file).unwrap();
    let q = [0.3f32, 0.1, -0.7, 0.2];
    let before = search(&db.read_view(), &coll, id, &q, 1);
    assert_eq!(before.len(), 10);
    let cid = coll.id();
    drop((coll, db));
    core.shutdown().unwrap();
    drop(core);
    // Restart: the same centroids, so one probe reads the same list.
    let (core, db) = open(dir.path());
    let coll = db.collection("v").unwrap();
    assert!(coll.wait_for_indexes(Duration::from_secs(30)));
    assert_eq!(std::fs::read(&file).unwrap(), trained);
    assert_eq!(search(&db.read_view(), &coll, id, &q, 1), before);
    assert_eq!(coll.index("near").unwrap()["trainingState"], "ready");
    drop((coll, db));
    core.shutdown().unwrap();
    drop(core);
    // Damaged, then lost: trained again from the data and written back.
    for damage in [true, false] {
        if damage {
            let mut bytes = std::fs::read(&file).unwrap();
            bytes[30] ^= 0xff;
            std::fs::write(&file, bytes).unwrap();
        } else {
            std::fs::remove_file(&file).unwrap();
        }
        let (core, db) = open(dir.path());
        let coll = db.collection("v").unwrap();
        assert_eq!(coll.id(), cid);
        assert!(coll.wait_for_indexes(Duration::from_secs(30)));
        let restored = std::fs::read(&file).unwrap();
        assert!(crate::vector::quantizer_file::decode(&restored).is_ok());
        let all: Vec<(String, Vec<f32>)> = docs.clone();
        let exact_cos = {
            let mut qn = q.to_vec();
            Metric::Cosine.prepare(&mut qn);
            let mut scored: Vec<(f64, String)> = all
                .iter()
                .map(|(k, v)| {
                    let mut v = v.clone();
                    Metric::Cosine.prepare(&mut v);
                    (Metric::Cosine.score(&v, &qn), k.clone())
                })
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            scored
                .into_iter()
                .take(10)
                .map(|(_, k)| k)
                .collect::<Vec<_>>()
        };
        assert_eq!(search(&db.read_view(), &coll, id, &q, 10), exact_cos);
        drop((coll, db));
        core.shutdown().unwrap();
        drop(core);
    }
}

#[test]
fn truncate_keeps_the_training_and_drops_take_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let (_core, db) = open(dir.path());
    let (coll, _) = filled(&db, 50, 3);
    let id = create_index(
        &coll,
        json!({"type": "vector", "fields": ["v"], "params": {"metric": "innerProduct", "dimension": 4, "nLists": 4}}),
    );
    let file = quantizer_file(dir.path(), &coll, id);
    assert!(file.exists());
    let before = db.read_view();
    coll.truncate(false).unwrap().wait().unwrap();
    assert!(search(&db.read_view(), &coll, id, &[1.0, 1.0, 1.0, 1.0], 4).is_empty());
    assert_eq!(
        search(&before, &coll, id, &[1.0, 1.0, 1.0, 1.0], 4).len(),
        10
    );
    drop(before);
    insert(&coll, json!({"_key": "new", "v": [1, 2, 3, 4]}));
    assert_eq!(
        search(&db.read_view(), &coll, id, &[1.0, 1.0, 1.0, 1.0], 4),
        ["new"]
    );
    assert!(file.exists(), "truncate keeps the trained quantizer");
    coll.drop_index(&id.to_string()).unwrap();
    assert!(!file.exists());
    // Without the index, documents without vectors are fine again.
    insert(&coll, json!({"_key": "plain"}));
    coll.remove("plain", &RemoveOptions::new())
        .unwrap()
        .wait()
        .unwrap();
    let id = create_index(
        &coll,
        json!({"type": "vector", "fields": ["v"], "params": {"metric": "l2", "dimension": 4, "nLists": 1}}),
    );
    let file = quantizer_file(dir.path(), &coll, id);
    assert!(file.exists());
    db.drop_collection("v", false).unwrap();
    assert!(!file.exists());
    assert!(!file.parent().unwrap().exists());
}

#[test]
fn entries_an_old_snapshot_still_holds_do_not_crowd_out_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (_core, db) = open(dir.path());
    let (coll, mut docs) = filled(&db, 200, 4);
    let id = create_index(
        &coll,
        json!({"type": "vector", "fields": ["v"], "params": {"metric": "l2", "dimension": 4, "nLists": 2}}),
    );
    let q = [0.0f32; 4];
    // An old snapshot keeps the entries of the 40 nearest documents alive; the new versions
    // move far away, so the best-ranked entries are all invisible to a new reader.
    let old = db.read_view();
    let nearest: Vec<String> = {
        let mut all = docs.clone();
        all.sort_by(|a, b| {
            Metric::L2
                .score(&a.1, &q)
                .total_cmp(&Metric::L2.score(&b.1, &q))
        });
        all.into_iter().take(40).map(|(k, _)| k).collect()
    };
    for key in &nearest {
        coll.update(
            key,
            json!({"v": [500, 500, 500, 500]}),
            &ModifyOptions::new(),
        )
        .unwrap()
        .wait()
        .unwrap();
    }
    docs.iter_mut()
        .filter(|(k, _)| nearest.contains(k))
        .for_each(|(_, v)| *v = vec![500.0; 4]);
    assert_eq!(search(&db.read_view(), &coll, id, &q, 2), exact(&docs, &q));
    assert_eq!(search(&old, &coll, id, &q, 2)[..10], nearest[..10]);
}
