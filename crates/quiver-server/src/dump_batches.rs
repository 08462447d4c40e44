//! Dump batches of the replication API (`/_api/replication/batch`): each batch holds one
//! read view of a database, taken when the batch starts, so every collection dumped through
//! it is a consistent snapshot while writers go on. A batch lives until it is deleted or
//! its time to live passes without a request touching it; the registry is bounded.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use quiver_core::{Database, DocumentReader, RawScan, ReadView};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use crate::chunk_buffers::ChunkBuffers;

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
    /// The parallel dump protocol (`/_api/dump`): what remains and what was handed out.
    parallel: Mutex<ParallelState>,
    /// Chunk bodies, reused once sent.
    buffers: Arc<ChunkBuffers>,
}

/// State of a parallel dump (`/_api/dump/next`): the collections still to read, in order, and
/// the batches handed out but not yet acknowledged (kept for retries; at most
/// [`MAX_UNACKNOWLEDGED`]).
#[derive(Default)]
struct ParallelState {
    shards: std::collections::VecDeque<String>,
    batch_size: usize,
    delivered: std::collections::BTreeMap<u64, (String, Chunk)>,
}

/// What an enveloped dump line starts with (`{"type":2300,"data":<document>}`, a document
/// marker of ArangoDB's replication format).
const ENVELOPE_START: &[u8] = b"{\"type\":2300,\"data\":";

/// Bytes a chunk's buffer reserves beyond the requested size (it grows further if needed).
const CHUNK_SLACK: usize = 256 * 1024;

/// Batches of a parallel dump a client may leave unacknowledged (its prefetch window).
pub const MAX_UNACKNOWLEDGED: usize = 64;

/// Where the dump of one collection stands in a batch.
pub struct Cursor {
    /// The collection's documents as stored text; `None` once exhausted (its window of
    /// locations is freed then, while the batch may live on).
    docs: Option<RawScan>,
    /// Documents handed out before the last chunk (the `from` a retry of it sends).
    last_from: u64,
    /// Documents handed out so far (the `lastincluded` value of the last chunk).
    emitted: u64,
    /// The last chunk, kept so that a retried request gets the same bytes.
    last_chunk: Option<Chunk>,
}

/// One response's worth of documents.
#[derive(Clone, Debug)]
pub struct Chunk {
    /// JSON lines, each ending in `\n` (shared: the chunk kept for a retry and the response
    /// are the same bytes).
    pub body: Bytes,
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
            parallel: Mutex::new(ParallelState::default()),
            buffers: Arc::new(ChunkBuffers::default()),
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
    /// Makes this batch a parallel dump of the collections `shards` (each must exist), in
    /// batches of about `batch_size` bytes.
    pub fn set_parallel(&self, shards: Vec<String>, batch_size: usize) -> Result<()> {
        for name in &shards {
            self.view.collection(name)?;
        }
        let mut parallel = self.parallel.lock();
        parallel.shards = shards.into_iter().collect();
        parallel.batch_size = batch_size.max(1);
        Ok(())
    }

    /// Batch number `batch_id` of a parallel dump: the collection it belongs to and its
    /// documents (JSON lines), or `None` when every collection is done. `last_batch`
    /// acknowledges the batches up to it, which are forgotten; asking for a batch number
    /// again (a retry) gives the same batch. Error 400/10 when more than
    /// [`MAX_UNACKNOWLEDGED`] batches are outstanding.
    pub fn next_parallel(
        &self,
        batch_id: u64,
        last_batch: Option<u64>,
    ) -> Result<Option<(String, Chunk)>> {
        let mut parallel = self.parallel.lock();
        if let Some(last) = last_batch {
            parallel.delivered.retain(|id, _| *id > last);
        }
        if let Some(found) = parallel.delivered.get(&batch_id) {
            return Ok(Some(found.clone()));
        }
        if parallel.delivered.len() >= MAX_UNACKNOWLEDGED {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("more than {MAX_UNACKNOWLEDGED} dump batches are not acknowledged"),
            ));
        }
        loop {
            let Some(name) = parallel.shards.front().cloned() else {
                return Ok(None);
            };
            let position = self
                .cursors
                .lock()
                .get(&name)
                .map_or(0, |c| c.lock().emitted);
            let chunk = self.next_chunk(&name, position, parallel.batch_size, false)?;
            if !chunk.more {
                parallel.shards.pop_front();
            }
            if chunk.body.is_empty() {
                continue;
            }
            parallel
                .delivered
                .insert(batch_id, (name.clone(), chunk.clone()));
            assert!(parallel.delivered.len() <= MAX_UNACKNOWLEDGED);
            return Ok(Some((name, chunk)));
        }
    }

    /// The batch's read view.
    pub fn view(&self) -> &ReadView {
        &self.view
    }

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
                    let docs = self.view.scan_raw(&coll)?;
                    let cursor = Arc::new(Mutex::new(Cursor {
                        docs: Some(docs),
                        last_from: 0,
                        emitted: 0,
                        last_chunk: None,
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
        // Documents go out as stored (with `_id` spliced in), never parsed: the lines are
        // what serializing the parsed documents would give, at a fraction of the cost.
        let target = chunk_size.max(1);
        // Room for the last document too, so the buffer is not moved while filled.
        let mut body = self.buffers.take(target.saturating_add(CHUNK_SLACK));
        let mut count = 0u64;
        while body.len() < target {
            let Some(docs) = cursor.docs.as_mut() else {
                break;
            };
            let start = body.len();
            if envelope {
                body.extend_from_slice(ENVELOPE_START);
            }
            if !docs.append_next(&mut body)? {
                body.truncate(start);
                cursor.docs = None;
                break;
            }
            if envelope {
                body.push(b'}');
            }
            body.push(b'\n');
            count += 1;
        }
        let body = ChunkBuffers::freeze(&self.buffers, body);
        let chunk = Chunk {
            body,
            more: cursor.docs.is_some(),
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
