//! Asynchronous execution (`x-arango-async: true|store`) and the `/_api/job` store.
//!
//! Queued requests go through a bounded channel to a small pool of OS threads that answer
//! them through their [`JobHost`] (the server, whose host answers with [`crate::handle`]) and
//! block on durability (they are not tokio workers, so blocking is fine). Overflow of the queue or of the result store answers 503/21003 like ArangoDB.
//! Stored jobs, pending or done, are held results ([`quiver_aql::held`]): each counts against
//! the per-user cap on stored jobs, and a finished job's response bytes against the memory
//! caps (`--server.async-results-memory-limit` and `…-per-user`) until it is fetched or
//! deleted. A new stored job is refused with 32 while its user (or everyone) is at a cap; a
//! response that does not fit is replaced by that error, which is what the job then answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Weak};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::{HeaderName, HeaderValue, StatusCode};
use parking_lot::Mutex;
use quiver_aql::held::{HeldResults, Hold, HoldCaps};
use quiver_errors::{Error, ErrorCode};

use crate::auth::Identity;
use crate::{Request, Response};

/// What the job workers run against: the job store and the handler that answers a queued
/// request. The server state is the host (its handler is [`crate::handle`]); the workers hold
/// it weakly and stop once it is gone.
pub trait JobHost: Send + Sync + 'static {
    /// The queue and result store the workers take jobs from and report to.
    fn jobs(&self) -> &JobManager;
    /// Answers one queued request, as if it had just arrived.
    fn answer(&self, request: Request) -> Response;
}

/// A finished job's response, kept until fetched.
#[derive(Clone)]
pub struct StoredResponse {
    /// Status of the original response.
    pub status: StatusCode,
    /// Its content type.
    pub content_type: Option<HeaderValue>,
    /// Its headers.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Its body.
    pub body: Bytes,
}

/// What `PUT /_api/job/{id}` finds.
pub enum Fetch {
    /// The finished job's response (now forgotten).
    Done(StoredResponse),
    /// Still queued or running.
    Pending,
    /// No such job, or its result was already fetched.
    Unknown,
}

enum JobState {
    Pending {
        cancelled: bool,
    },
    Running,
    Done {
        response: StoredResponse,
        finished_at: f64,
    },
}

struct Queued {
    id: Option<u64>,
    request: Request,
}

/// The async job queue and result store.
pub struct JobManager {
    sender: Mutex<Option<SyncSender<Queued>>>,
    receiver: Arc<Mutex<Receiver<Queued>>>,
    /// Stored jobs with the identity that queued them: only it (or the superuser) may see
    /// them.
    jobs: Mutex<HashMap<u64, StoredJob>>,
    next_id: AtomicU64,
    store_capacity: usize,
    /// What stored jobs hold, against the caps.
    held: Arc<HeldResults>,
}

/// One stored job: who queued it, its state, and its place under the caps (dropped with it).
struct StoredJob {
    owner: Option<Identity>,
    state: JobState,
    hold: Hold,
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl JobManager {
    /// Creates the queue (`capacity` requests waiting at most); nothing runs until
    /// [`JobManager::start_workers`].
    pub fn new(capacity: usize) -> JobManager {
        let (sender, receiver) = sync_channel::<Queued>(capacity.max(1));
        JobManager {
            sender: Mutex::new(Some(sender)),
            receiver: Arc::new(Mutex::new(receiver)),
            jobs: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            store_capacity: capacity.max(1) * 4,
            held: HeldResults::new("stored async job results", HoldCaps::default()),
        }
    }

    /// Sets the caps on stored jobs: per user how many, overall and per user how many bytes
    /// of responses (0 = none). How many overall is bounded by the queue's capacity.
    pub fn set_result_caps(&self, caps: HoldCaps) {
        self.held.set_caps(HoldCaps { count: 0, ..caps });
    }

    /// Stored jobs and the bytes of their responses, overall, and of `user`.
    pub fn held(&self, user: Option<&str>) -> (usize, u64) {
        match user {
            Some(u) => self.held.in_use_by(u),
            None => self.held.in_use(),
        }
    }

    /// Starts `workers` threads executing jobs against `host` for as long as it lives.
    pub fn start_workers<H: JobHost>(&self, host: Weak<H>, workers: usize) -> std::io::Result<()> {
        for i in 0..workers.max(1) {
            let receiver = self.receiver.clone();
            let host = host.clone();
            std::thread::Builder::new()
                .name(format!("quiver-job-{i}"))
                .spawn(move || worker(host, receiver))?;
        }
        Ok(())
    }

    /// Stops accepting jobs; the workers finish what is queued and exit.
    pub fn close(&self) {
        self.sender.lock().take();
    }

    /// Queues a request: 202 at once (`store` adds `x-arango-async-id`), 503/21003 when full.
    pub fn submit(&self, request: Request, store: bool) -> Response {
        let queue_full = || Response::from(Error::new(ErrorCode::QueueFull));
        let id = if store {
            let mut jobs = self.jobs.lock();
            if jobs.len() >= self.store_capacity {
                return queue_full();
            }
            let user = request.identity.as_ref().and_then(Identity::user);
            let hold = match self.held.hold(user, 0) {
                Ok(hold) => hold,
                Err(e) => return e.into(),
            };
            let id = self.next_id.fetch_add(1, Ordering::Relaxed);
            jobs.insert(
                id,
                StoredJob {
                    owner: request.identity.clone(),
                    state: JobState::Pending { cancelled: false },
                    hold,
                },
            );
            Some(id)
        } else {
            None
        };
        let sent = match self.sender.lock().as_ref() {
            Some(sender) => sender.try_send(Queued { id, request }),
            None => return Error::new(ErrorCode::Shutdown).into(),
        };
        match sent {
            Ok(()) => {
                let response = Response::empty(202);
                match id {
                    Some(id) => response.with_header(
                        HeaderName::from_static("x-arango-async-id"),
                        &id.to_string(),
                    ),
                    None => response,
                }
            }
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                if let Some(id) = id {
                    self.jobs.lock().remove(&id);
                }
                queue_full()
            }
        }
    }

    fn begin(&self, id: u64) -> bool {
        let mut jobs = self.jobs.lock();
        let Some(StoredJob { state, .. }) = jobs.get_mut(&id) else {
            // Deleted while queued: nobody wants the result.
            return false;
        };
        match state {
            JobState::Pending { cancelled: false } => {
                *state = JobState::Running;
                true
            }
            JobState::Pending { cancelled: true } => {
                let canceled = Response::from(Error::new(ErrorCode::RequestCanceled));
                *state = JobState::Done {
                    response: stored(canceled),
                    finished_at: now_secs(),
                };
                false
            }
            // Deleted while queued: nobody wants the result.
            _ => false,
        }
    }

    fn finish(&self, id: u64, response: Response) {
        let mut jobs = self.jobs.lock();
        if let Some(job) = jobs.get_mut(&id) {
            if !matches!(job.state, JobState::Running) {
                return;
            }
            let mut response = stored(response);
            if let Err(e) = job.hold.grow(response_bytes(&response)) {
                // Too large to keep: the job's answer is the error instead.
                response = stored(Response::from(e));
                let _ = job.hold.grow(response_bytes(&response));
            }
            job.state = JobState::Done {
                response,
                finished_at: now_secs(),
            };
        }
    }

    /// The state of job `id` if `caller` may see it (its owner, or the superuser); other
    /// callers' jobs look unknown.
    fn visible<'a>(
        jobs: &'a mut HashMap<u64, StoredJob>,
        id: u64,
        caller: Option<&Identity>,
    ) -> Option<&'a mut JobState> {
        jobs.get_mut(&id)
            .filter(|job| owns(job.owner.as_ref(), caller))
            .map(|job| &mut job.state)
    }

    /// `GET /_api/job/{id}`: 200 done, 204 pending, 404 unknown.
    pub fn status(&self, id: u64, caller: Option<&Identity>) -> Option<bool> {
        match Self::visible(&mut self.jobs.lock(), id, caller) {
            Some(JobState::Done { .. }) => Some(true),
            Some(_) => Some(false),
            None => None,
        }
    }

    /// `PUT /_api/job/{id}`: the stored response (consumed once).
    pub fn fetch(&self, id: u64, caller: Option<&Identity>) -> Fetch {
        let mut jobs = self.jobs.lock();
        match Self::visible(&mut jobs, id, caller) {
            Some(JobState::Done { .. }) => match jobs.remove(&id) {
                Some(StoredJob {
                    state: JobState::Done { response, .. },
                    ..
                }) => Fetch::Done(response),
                _ => Fetch::Unknown,
            },
            Some(_) => Fetch::Pending,
            None => Fetch::Unknown,
        }
    }

    /// `PUT /_api/job/{id}/cancel`: false when the job is unknown.
    pub fn cancel(&self, id: u64, caller: Option<&Identity>) -> bool {
        match Self::visible(&mut self.jobs.lock(), id, caller) {
            Some(JobState::Pending { cancelled }) => {
                *cancelled = true;
                true
            }
            Some(_) => true,
            None => false,
        }
    }

    /// `DELETE /_api/job/{id}`: false when unknown.
    pub fn delete(&self, id: u64, caller: Option<&Identity>) -> bool {
        let mut jobs = self.jobs.lock();
        Self::visible(&mut jobs, id, caller).is_some() && jobs.remove(&id).is_some()
    }

    /// `DELETE /_api/job/all`: forgets every finished and queued job of the caller.
    pub fn delete_all(&self, caller: Option<&Identity>) {
        self.jobs.lock().retain(|_, job| {
            matches!(job.state, JobState::Running) || !owns(job.owner.as_ref(), caller)
        });
    }

    /// `DELETE /_api/job/expired?stamp=`: forgets the caller's finished jobs older than
    /// `stamp`.
    pub fn delete_expired(&self, stamp: f64, caller: Option<&Identity>) {
        self.jobs.lock().retain(|_, job| match job.state {
            JobState::Done { finished_at, .. } => {
                finished_at >= stamp || !owns(job.owner.as_ref(), caller)
            }
            _ => true,
        });
    }

    /// Ids of the caller's done (`true`) or pending (`false`) jobs, at most `count`.
    pub fn list(&self, done: bool, count: usize, caller: Option<&Identity>) -> Vec<String> {
        let jobs = self.jobs.lock();
        let mut ids: Vec<u64> = jobs
            .iter()
            .filter(|(_, job)| {
                owns(job.owner.as_ref(), caller)
                    && matches!(job.state, JobState::Done { .. }) == done
            })
            .map(|(id, _)| *id)
            .collect();
        ids.sort_unstable();
        ids.into_iter().take(count).map(|i| i.to_string()).collect()
    }
}

/// Whether `caller` may see a job queued by `owner`: the superuser sees every job, a user
/// only their own.
fn owns(owner: Option<&Identity>, caller: Option<&Identity>) -> bool {
    matches!(caller, Some(Identity::Superuser)) || owner == caller
}

/// What a stored response holds: its body and headers.
fn response_bytes(response: &StoredResponse) -> u64 {
    let headers: usize = response
        .headers
        .iter()
        .map(|(n, v)| n.as_str().len() + v.len())
        .sum();
    (response.body.len() + headers) as u64
}

fn stored(response: Response) -> StoredResponse {
    StoredResponse {
        status: response.status,
        content_type: response.content_type,
        headers: response.headers,
        body: response.body,
    }
}

fn worker<H: JobHost>(host: Weak<H>, receiver: Arc<Mutex<Receiver<Queued>>>) {
    loop {
        let job = {
            let receiver = receiver.lock();
            receiver.recv()
        };
        let Ok(job) = job else { return };
        let Some(host) = host.upgrade() else { return };
        if let Some(id) = job.id {
            if !host.jobs().begin(id) {
                continue;
            }
        }
        let response = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            host.answer(job.request).settle_blocking()
        }))
        .unwrap_or_else(|_| {
            Error::with_message(ErrorCode::Internal, "job handler panicked").into()
        });
        if let Some(id) = job.id {
            host.jobs().finish(id, response);
        }
    }
}
