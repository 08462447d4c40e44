//! kill -9 test: a writer process (src/bin/quiver-storage-crash-writer.rs) is killed with
//! SIGKILL at random moments while four threads write (half of them with waitForSync, some
//! as atomic two-document batches) and the collector and compactor work in the background.
//! After every kill the directory is recovered and every acknowledged write must be there;
//! the only other acceptable value of a key is the one write that was in flight.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use quiver_storage::{CompactionOptions, Engine, EngineOptions};
use rand::{Rng, SeedableRng};

fn value_of(engine: &Engine, cid: u64, key: &str) -> Option<String> {
    engine.snapshot().get(cid, key).unwrap().map(|d| {
        String::from_utf8(d.body.to_vec())
            .unwrap()
            .trim_end()
            .to_string()
    })
}

#[test]
fn kill_dash_nine_loses_nothing_acknowledged() {
    let seed: u64 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("crash test seed {seed}");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_quiver-storage-crash-writer");
    // key -> acknowledged state (None = absent); key -> state of the write in flight.
    let mut confirmed: HashMap<String, Option<String>> = HashMap::new();
    let mut total_acks = 0usize;
    for round in 0..6u64 {
        let mut child = Command::new(exe)
            .arg(dir.path())
            .arg((round * 1_000_000).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(l).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        });
        let first = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("writer started");
        assert!(first.starts_with("READY"), "{first}");
        let cid: u64 = first[6..].trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(rng.gen_range(100..400)));
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        let mut pending: HashMap<String, Option<String>> = HashMap::new();
        let mut acks = 0;
        for line in rx.try_iter() {
            let mut parts = line.splitn(3, ' ');
            let (kind, key, value) = match (parts.next(), parts.next(), parts.next()) {
                (Some(k), Some(key), Some(v)) => (k, key.to_string(), v.to_string()),
                _ => continue, // a line cut by the kill
            };
            let state = (value != "-").then_some(value);
            match kind {
                "T" => {
                    pending.insert(key, state);
                }
                "A" => {
                    pending.remove(&key);
                    confirmed.insert(key, state);
                    acks += 1;
                }
                _ => {}
            }
        }
        total_acks += acks;
        let engine = Engine::open(
            dir.path(),
            EngineOptions {
                compaction: CompactionOptions {
                    background: false,
                    ..CompactionOptions::default()
                },
                background_collector: false,
                ..EngineOptions::default()
            },
        )
        .unwrap();
        let mut keys: Vec<String> = confirmed.keys().chain(pending.keys()).cloned().collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let actual = value_of(&engine, cid, &key);
            let acked = confirmed.get(&key).cloned().flatten();
            let in_flight = pending.get(&key);
            let ok = actual == acked || in_flight.is_some_and(|p| *p == actual);
            assert!(
                ok,
                "round {round} seed {seed}: {key} is {actual:?}, acknowledged {acked:?}, in flight {in_flight:?}"
            );
            if key.ends_with("-pa") {
                let pb = value_of(&engine, cid, &key.replace("-pa", "-pb"));
                assert_eq!(
                    actual, pb,
                    "round {round} seed {seed}: half a batch of {key}"
                );
            }
            confirmed.insert(key, actual);
        }
        engine.shutdown().unwrap();
    }
    assert!(
        total_acks > 100,
        "the writer must have made progress: {total_acks}"
    );
}
