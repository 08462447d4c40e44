//! Dump batches of the replication API (`/_api/replication/batch`): each batch holds one
//! read view of a database, taken when the batch starts, so every collection dumped through
//! it is a consistent snapshot while writers go on. A batch lives until it is deleted or
//! its time to live passes without a request touching it; the registry is bounded.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use quiver_core::{Database, DocumentIter, DocumentReader, ReadView};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

/// At most this many batches exist at once (each pins old document versions).
pub const MAX_BATCHES: usize = 64;
/// Time to live of a batch when the request names none (ArangoDB's default).
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);
/// The longest time to live a client may ask for.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 3600);

/// The running batches of all databases.
#[derive(Default)]
pub struct DumpBatches {
    inner: Mutex<Registry>,
}

#[derive(Default)]
struct Registry {
    next_id: u64,
    batches: HashMap<u64, Arc<Batch>>,
}

/// One batch: a database's read view and the position of each collection dumped so far.
pub struct Batch {
    database: String,
    view: ReadView,
    expires: Mutex<Instant>,
    cursors: Mutex<HashMap<String, Arc<Mutex<Cursor>>>>,
}

/// Where the dump of one collection stands in a batch.
pub struct Cursor {
    docs: DocumentIter,
    /// Documents handed out before the last chunk (the `from` a retry of it sends).
    last_from: u64,
    /// Documents handed out so far (the `lastincluded` value of the last chunk).
    emitted: u64,
    /// The last chunk, kept so that a retried request gets the same bytes.
    last_chunk: Option<Chunk>,
    exhausted: bool,
}

/// One response's worth of documents.
#[derive(Clone, Debug)]
pub struct Chunk {
    /// JSON lines, each ending in `\n`.
    pub body: Vec<u8>,
    /// Whether documents remain after this chunk.
    pub more: bool,
    /// The position after this chunk (what the client sends as `from` next).
    pub last_included: u64,
}

fn not_found(id: &str) -> Error {
    Error::with_message(
        ErrorCode::CursorNotFound,
        format!("replication batch '{id}' not found"),
    )
}

fn ttl_of(seconds: Option<f64>) -> Duration {
    match seconds {
        Some(s) if s.is_finite() && s > 0.0 => Duration::from_secs_f64(s).min(MAX_TTL),
        _ => DEFAULT_TTL,
    }
}

impl DumpBatches {
    /// Starts a batch over a read view of `db` taken now. Error 10 when [`MAX_BATCHES`] are
    /// running.
    pub fn start(&self, db: &Arc<Database>, ttl_seconds: Option<f64>) -> Result<(u64, u64)> {
        let mut registry = self.inner.lock();
        registry.sweep();
        if registry.batches.len() >= MAX_BATCHES {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("too many replication batches (at most {MAX_BATCHES} may run at once)"),
            ));
        }
        registry.next_id += 1;
        let id = registry.next_id;
        let view = db.read_view();
        let tick = view.snapshot().tick();
        let batch = Batch {
            database: db.name().to_string(),
            view,
            expires: Mutex::new(Instant::now() + ttl_of(ttl_seconds)),
            cursors: Mutex::new(HashMap::new()),
        };
        registry.batches.insert(id, Arc::new(batch));
        assert!(registry.batches.len() <= MAX_BATCHES);
        Ok((id, tick))
    }

    /// The batch `id` of `database`, its lifetime extended by `ttl_seconds` (or its default).
    /// Error 1600 (404) for an unknown or expired batch, or one of another database.
    pub fn get(&self, database: &str, id: &str, ttl_seconds: Option<f64>) -> Result<Arc<Batch>> {
        let mut registry = self.inner.lock();
        registry.sweep();
        let batch = id
            .parse::<u64>()
            .ok()
            .and_then(|n| registry.batches.get(&n))
            .filter(|b| b.database == database)
            .cloned()
            .ok_or_else(|| not_found(id))?;
        *batch.expires.lock() = Instant::now() + ttl_of(ttl_seconds);
        Ok(batch)
    }

    /// Ends the batch `id` of `database`. Error 1600 (404) when there is none.
    pub fn remove(&self, database: &str, id: &str) -> Result<()> {
        let mut registry = self.inner.lock();
        registry.sweep();
        let key = id
            .parse::<u64>()
            .ok()
            .filter(|n| {
                registry
                    .batches
                    .get(n)
                    .is_some_and(|b| b.database == database)
            })
            .ok_or_else(|| not_found(id))?;
        registry.batches.remove(&key);
        Ok(())
    }

    /// Number of running batches.
    pub fn len(&self) -> usize {
        let mut registry = self.inner.lock();
        registry.sweep();
        registry.batches.len()
    }

    /// Whether no batch runs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Registry {
    fn sweep(&mut self) {
        let now = Instant::now();
        self.batches.retain(|_, b| *b.expires.lock() > now);
    }
}

impl Batch {
    /// The tick of the batch's read view.
    pub fn tick(&self) -> u64 {
        self.view.snapshot().tick()
    }

    /// The next chunk of collection `name` as of the batch's read view: documents as JSON
    /// lines (wrapped in `{"type":2300,"data":…}` when `envelope`) until at least
    /// `chunk_size` bytes (one document at least). `from` is the position the client
    /// continues from: the `last_included` of the previous chunk (0 at first); the previous
    /// position again repeats the last chunk; any other position is error 400/10.
    pub fn next_chunk(
        &self,
        name: &str,
        from: u64,
        chunk_size: usize,
        envelope: bool,
    ) -> Result<Chunk> {
        let cursor = {
            let mut cursors = self.cursors.lock();
            match cursors.get(name) {
                Some(cursor) => cursor.clone(),
                None => {
                    let coll = self.view.collection(name)?;
                    let docs = self.view.scan(&coll)?;
                    let cursor = Arc::new(Mutex::new(Cursor {
                        docs,
                        last_from: 0,
                        emitted: 0,
                        last_chunk: None,
                        exhausted: false,
                    }));
                    cursors.insert(name.to_string(), cursor.clone());
                    cursor
                }
            }
        };
        let mut cursor = cursor.lock();
        if let Some(last) = &cursor.last_chunk {
            if from == cursor.last_from && from != cursor.emitted {
                return Ok(last.clone());
            }
        }
        if from != cursor.emitted {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!(
                    "dump of collection '{name}' is at position {}, not {from}",
                    cursor.emitted
                ),
            ));
        }
        let mut body = Vec::new();
        let mut count = 0u64;
        while body.len() < chunk_size.max(1) {
            let Some(doc) = cursor.docs.next() else {
                cursor.exhausted = true;
                break;
            };
            let doc = doc?;
            if envelope {
                serde_json::to_writer(&mut body, &serde_json::json!({ "type": 2300, "data": doc }))
            } else {
                serde_json::to_writer(&mut body, &doc)
            }
            .map_err(|e| Error::with_message(ErrorCode::Internal, e.to_string()))?;
            body.push(b'\n');
            count += 1;
        }
        let chunk = Chunk {
            body,
            more: !cursor.exhausted,
            last_included: cursor.emitted + count,
        };
        cursor.last_from = cursor.emitted;
        cursor.emitted += count;
        cursor.last_chunk = Some(chunk.clone());
        Ok(chunk)
    }
}

/// Parses the `ttl` attribute of a batch request body (`None` when absent).
pub fn ttl_attribute(body: &Value) -> Result<Option<f64>> {
    match body.get("ttl") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(_) => Err(Error::with_message(
            ErrorCode::BadParameter,
            "ttl must be a number",
        )),
    }
}
