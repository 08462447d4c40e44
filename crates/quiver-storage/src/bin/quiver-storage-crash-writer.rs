//! Helper process for the kill -9 test (tests/crash.rs): opens an engine in DIR with tiny
//! files (so the collector and compactor are busy), then writes forever from several threads,
//! printing every attempt before and every acknowledgement after it happened:
//!
//! ```text
//! T <key> <value>    about to put (value "-" = remove)
//! A <key> <value>    acknowledged (with waitForSync for odd values)
//! ```
//!
//! A pair batch writes `<t>-pa` and `<t>-pb` with the same value atomically.
//! Usage: quiver-storage-crash-writer DIR FIRST_VALUE

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use quiver_storage::{CollectionOptions, CompactionOptions, Engine, EngineOptions, WriteBatch};

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().expect("DIR"));
    let first: u64 = args
        .next()
        .and_then(|v| v.parse().ok())
        .expect("FIRST_VALUE");
    let options = EngineOptions {
        journal_size_default: 16 * 1024,
        min_journal_size: quiver_storage::JOURNAL_SIZE_FLOOR,
        wal_logfile_size: 32 * 1024,
        sync_interval: Duration::from_millis(20),
        compaction: CompactionOptions {
            db_sleep_time: Duration::from_millis(50),
            min_interval: Duration::from_millis(50),
            ..CompactionOptions::default()
        },
        ..EngineOptions::default()
    };
    let engine = Engine::open(&dir, options).expect("open");
    let cid = match engine.catalog().first().and_then(|d| d.collections.first()) {
        Some(c) => c.id,
        None => {
            let db = engine.create_database(serde_json::json!({})).unwrap();
            engine
                .create_collection(db, CollectionOptions::default(), serde_json::json!({}))
                .unwrap()
        }
    };
    println!("READY {cid}");
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let mut value = first + t * 100_000;
                let mut out = std::io::stdout();
                loop {
                    value += 1;
                    let sync = value % 2 == 1;
                    let mut batch = WriteBatch::new();
                    batch.set_sync(sync);
                    let label;
                    if value % 7 == 0 {
                        label = (format!("t{t}-pa"), value.to_string());
                        for k in ["pa", "pb"] {
                            batch.put(
                                cid,
                                &format!("t{t}-{k}"),
                                engine.hlc().next(),
                                Bytes::from(value.to_string()),
                            );
                        }
                    } else {
                        let key = format!("t{t}-k{}", value % 13);
                        if value % 5 == 0 {
                            batch.remove(cid, &key, engine.hlc().next());
                            label = (key, "-".to_string());
                        } else {
                            batch.put(
                                cid,
                                &key,
                                engine.hlc().next(),
                                Bytes::from(format!(
                                    "{value}{}",
                                    " ".repeat((value % 300) as usize)
                                )),
                            );
                            label = (key, value.to_string());
                        }
                    }
                    let _ = writeln!(out, "T {} {}", label.0, label.1);
                    let ok = engine.commit(batch).and_then(|t| t.wait()).is_ok();
                    if ok {
                        let _ = writeln!(out, "A {} {}", label.0, label.1);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}
