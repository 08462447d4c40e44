//! The server mode of `/_admin/server/mode`: `default`, or `readonly`, in which users may
//! read but not write (enforced with their rights, `crate::access`). The mode lives in memory:
//! a restart starts in `default`, as ArangoDB does.

use std::sync::atomic::{AtomicBool, Ordering};

/// The current server mode.
#[derive(Default)]
pub struct ServerMode {
    read_only: AtomicBool,
}

impl ServerMode {
    /// Whether writes are refused to users.
    pub fn is_read_only(&self) -> bool {
        self.read_only.load(Ordering::SeqCst)
    }

    /// Switches read-only mode on or off.
    pub fn set_read_only(&self, read_only: bool) {
        self.read_only.store(read_only, Ordering::SeqCst);
    }

    /// The mode's name as ArangoDB reports it.
    pub fn name(&self) -> &'static str {
        if self.is_read_only() {
            "readonly"
        } else {
            "default"
        }
    }
}
