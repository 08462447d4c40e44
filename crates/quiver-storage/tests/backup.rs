//! An online backup taken while transactions commit holds a state that existed: every
//! transaction all or nothing, and the transactions present are a prefix of the
//! acknowledged ones.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use common::*;
use quiver_storage::{CollectionOptions, CompactionOptions, Engine, EngineOptions, WriteBatch};

const TRANSACTIONS: u64 = 4000;

fn busy_options() -> EngineOptions {
    EngineOptions {
        background_collector: true,
        compaction: CompactionOptions {
            background: true,
            ..CompactionOptions::default()
        },
        ..small_options()
    }
}

/// Transaction `i` writes `k{i}` into both collections and replaces `last` in the first one.
fn transaction(engine: &Engine, a: u64, b: u64, i: u64) {
    let mut batch = WriteBatch::new();
    let body = Bytes::from(format!("{{\"i\":{i}}}"));
    batch.put(a, &format!("k{i}"), engine.hlc().next(), body.clone());
    batch.put(b, &format!("k{i}"), engine.hlc().next(), body.clone());
    batch.put(a, "last", engine.hlc().next(), body);
    engine.commit(batch).unwrap().wait().unwrap();
}

fn committed(contents: &BTreeMap<String, String>) -> Vec<u64> {
    let mut ids: Vec<u64> = contents
        .keys()
        .filter_map(|k| k.strip_prefix('k').and_then(|n| n.parse().ok()))
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
fn backup_during_writes_restores_a_prefix_of_whole_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(dir.path(), busy_options()).unwrap();
    let (db, a) = setup(&engine);
    let b = engine
        .create_collection(
            db,
            CollectionOptions::default(),
            serde_json::json!({"name": "b"}),
        )
        .unwrap();
    let acknowledged = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (engine, acknowledged, stop) = (engine.clone(), acknowledged.clone(), stop.clone());
        std::thread::spawn(move || {
            for i in 0..TRANSACTIONS {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                transaction(&engine, a, b, i);
                acknowledged.store(i + 1, Ordering::Release);
            }
        })
    };
    let mut copies = Vec::new();
    for round in 0..3u64 {
        while acknowledged.load(Ordering::Acquire) < 500 * (round + 1) {
            std::thread::yield_now();
        }
        let before = acknowledged.load(Ordering::Acquire);
        let target = dir.path().join("backups").join(format!("copy-{round}"));
        engine.backup_to(&target).unwrap();
        let after = acknowledged.load(Ordering::Acquire);
        copies.push((target, before, after));
    }
    stop.store(true, Ordering::Release);
    writer.join().unwrap();
    engine.shutdown().unwrap();
    drop(engine);

    for (target, before, after) in copies {
        let copy = Engine::open(&target, small_options()).unwrap();
        let in_a = contents(&copy, a);
        let in_b = contents(&copy, b);
        let ids = committed(&in_a);
        let n = ids.len() as u64;
        assert_eq!(
            ids,
            (0..n).collect::<Vec<_>>(),
            "a prefix of the transactions"
        );
        assert_eq!(
            committed(&in_b),
            ids,
            "each transaction in both collections or neither"
        );
        assert!(
            (before..=after).contains(&n),
            "{n} transactions, acknowledged {before} before and {after} after the backup"
        );
        let last = in_a.get("last").cloned().unwrap_or_default();
        assert_eq!(
            last,
            format!("{{\"i\":{}}}", n - 1),
            "the newest version of a replaced key"
        );
        let snap = copy.snapshot();
        assert_eq!(snap.count(a).unwrap(), n + 1);
        assert_eq!(snap.count(b).unwrap(), n);
        copy.shutdown().unwrap();
    }
}
