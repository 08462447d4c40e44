//! The hand-off of a query that runs on a thread shared with other work (the HTTP worker of
//! its connection) once it has run longer than it was expected to.
//!
//! The caller starts a query on its own thread because the query is expected to be brief, and
//! gives it a [`Handoff`]: a budget and what to do when the budget is spent (the server frees
//! its worker for the worker's other connections, `tokio::task::block_in_place`). The query's
//! limit checks ([`crate::limits::check_limits`], called every few hundred rows by the
//! executor and in the loops of the parser, planner and optimizer) look at the clock; the first
//! check past the budget, on the thread that started the query, runs the hand-off once, and
//! the query goes on where it is. Checks on other threads (the workers of a parallel scan) never
//! run it: the hand-off concerns the thread the caller shares.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// A budget and the action to run once a query has spent it (see the module documentation).
pub struct Handoff {
    due: Instant,
    thread: ThreadId,
    done: AtomicBool,
    action: Box<dyn Fn() + Send + Sync>,
}

impl Handoff {
    /// A hand-off that runs `action` at the first check after `budget` from now, on the calling
    /// thread.
    pub fn new(budget: Duration, action: impl Fn() + Send + Sync + 'static) -> Handoff {
        Handoff {
            due: Instant::now() + budget,
            thread: std::thread::current().id(),
            done: AtomicBool::new(false),
            action: Box::new(action),
        }
    }

    /// Runs the action if the budget is spent, this is the thread that started the query and
    /// the action has not run yet.
    #[inline]
    pub fn check(&self) {
        if self.done.load(Ordering::Relaxed) || Instant::now() < self.due {
            return;
        }
        if std::thread::current().id() != self.thread {
            return;
        }
        if !self.done.swap(true, Ordering::Relaxed) {
            (self.action)();
        }
    }

    /// Whether the action has run.
    pub fn happened(&self) -> bool {
        self.done.load(Ordering::Relaxed)
    }
}

impl fmt::Debug for Handoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handoff")
            .field("due", &self.due)
            .field("done", &self.happened())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    fn counting(budget: Duration) -> (Handoff, Arc<AtomicUsize>) {
        let runs = Arc::new(AtomicUsize::new(0));
        let seen = runs.clone();
        let handoff = Handoff::new(budget, move || {
            seen.fetch_add(1, Ordering::Relaxed);
        });
        (handoff, runs)
    }

    #[test]
    fn runs_once_after_the_budget() {
        let (handoff, runs) = counting(Duration::from_millis(20));
        handoff.check();
        assert_eq!(runs.load(Ordering::Relaxed), 0, "within the budget");
        assert!(!handoff.happened());
        std::thread::sleep(Duration::from_millis(25));
        handoff.check();
        handoff.check();
        assert_eq!(runs.load(Ordering::Relaxed), 1, "once past the budget");
        assert!(handoff.happened());
    }

    #[test]
    fn other_threads_never_run_it() {
        let (handoff, runs) = counting(Duration::ZERO);
        let handoff = Arc::new(handoff);
        let other = handoff.clone();
        std::thread::spawn(move || other.check()).join().unwrap();
        assert_eq!(runs.load(Ordering::Relaxed), 0);
        handoff.check();
        assert_eq!(runs.load(Ordering::Relaxed), 1);
    }
}
