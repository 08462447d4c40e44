//! A shutdown asked for over HTTP (`DELETE /_admin/shutdown`): the process's serving loop
//! waits for it next to its signals and then stops as it does on SIGTERM.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// Whether a shutdown was requested, and the wake-up of the one waiter.
#[derive(Default)]
pub struct StopRequest {
    requested: AtomicBool,
    notify: Notify,
}

impl StopRequest {
    /// Asks the server to stop. Asking again changes nothing.
    pub fn request(&self) {
        if !self.requested.swap(true, Ordering::SeqCst) {
            // A permit is kept when nobody waits yet, so the request is never lost.
            self.notify.notify_one();
        }
    }

    /// Whether a shutdown was requested.
    pub fn is_requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// Returns once a shutdown was requested (for the one serving loop of the process).
    pub async fn wait(&self) {
        if self.is_requested() {
            return;
        }
        self.notify.notified().await;
        debug_assert!(self.is_requested(), "woken only by a request");
    }
}
