//! Results the server keeps for clients between their requests — the rows of open cursors,
//! the responses of stored async jobs — and the caps on them: how many may be held and how
//! many (estimated) bytes, server-wide and per user.
//!
//! Each held thing is a [`Hold`]: it is counted from the moment it is admitted and its bytes
//! from the moment they are charged, until it is dropped (the cursor was exhausted, deleted
//! or expired; the job's result was fetched or deleted). Holds of the superuser (and of
//! every request when authentication is off) count against the server-wide caps only.
//! Passing a cap fails the request that asked for more with 32 "resource limit exceeded";
//! nothing already held is touched.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use quiver_errors::{Error, ErrorCode, Result};

use crate::limits::GlobalCharge;

/// The caps of one kind of held results; 0 = no cap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HoldCaps {
    /// How many may be held at once, by everyone.
    pub count: usize,
    /// Estimated bytes, by everyone.
    pub bytes: u64,
    /// How many one user may hold.
    pub count_per_user: usize,
    /// Estimated bytes one user may hold.
    pub bytes_per_user: u64,
}

#[derive(Default)]
struct Totals {
    count: usize,
    bytes: u64,
    /// Per user: (count, bytes); a user without holds has no entry.
    users: HashMap<Arc<str>, (usize, u64)>,
}

/// The accountant of one kind of held results (open cursors, stored async results).
pub struct HeldResults {
    /// What is held, for the error messages ("open cursors").
    what: &'static str,
    caps: Mutex<HoldCaps>,
    totals: Mutex<Totals>,
}

fn over(limit: u64, used: u64, adding: u64) -> bool {
    // Adding nothing still needs room: a holder at its limit may not open another.
    limit > 0 && used.saturating_add(adding.max(1)) > limit
}

impl HeldResults {
    pub fn new(what: &'static str, caps: HoldCaps) -> Arc<HeldResults> {
        Arc::new(HeldResults {
            what,
            caps: Mutex::new(caps),
            totals: Mutex::default(),
        })
    }

    pub fn set_caps(&self, caps: HoldCaps) {
        *self.caps.lock() = caps;
    }

    pub fn caps(&self) -> HoldCaps {
        *self.caps.lock()
    }

    /// How many are held and their estimated bytes, by everyone.
    pub fn in_use(&self) -> (usize, u64) {
        let t = self.totals.lock();
        (t.count, t.bytes)
    }

    /// How many `user` holds and their estimated bytes.
    pub fn in_use_by(&self, user: &str) -> (usize, u64) {
        self.totals
            .lock()
            .users
            .get(user)
            .copied()
            .unwrap_or_default()
    }

    fn count_error(&self, user: Option<&str>, limit: usize) -> Error {
        let whose = user.map_or(String::new(), |u| format!(" of user '{u}'"));
        Error::with_message(
            ErrorCode::ResourceLimit,
            format!("too many {}{whose} (limit: {limit})", self.what),
        )
    }

    fn bytes_error(&self, user: Option<&str>, limit: u64) -> Error {
        let whose = user.map_or(String::new(), |u| format!(" of user '{u}'"));
        Error::with_message(
            ErrorCode::ResourceLimit,
            format!(
                "{}{whose} would hold more memory than allowed (limit: {limit} bytes)",
                self.what
            ),
        )
    }

    /// Admits one more held result of `user` (`None`: the superuser) holding `bytes`; 32
    /// when a count or memory cap would be passed.
    pub fn hold(self: &Arc<Self>, user: Option<&str>, bytes: u64) -> Result<Hold> {
        let caps = self.caps();
        let mut t = self.totals.lock();
        if caps.count > 0 && t.count >= caps.count {
            return Err(self.count_error(None, caps.count));
        }
        if over(caps.bytes, t.bytes, bytes) {
            return Err(self.bytes_error(None, caps.bytes));
        }
        let user = user.map(Arc::<str>::from);
        if let Some(u) = &user {
            let (count, held) = t.users.get(u).copied().unwrap_or_default();
            if caps.count_per_user > 0 && count >= caps.count_per_user {
                return Err(self.count_error(Some(u), caps.count_per_user));
            }
            if over(caps.bytes_per_user, held, bytes) {
                return Err(self.bytes_error(Some(u), caps.bytes_per_user));
            }
            let entry = t.users.entry(u.clone()).or_default();
            entry.0 += 1;
            entry.1 += bytes;
        }
        t.count += 1;
        t.bytes += bytes;
        Ok(Hold {
            pool: self.clone(),
            user,
            bytes,
            global: GlobalCharge::default(),
        })
    }

    fn grow(&self, user: Option<&Arc<str>>, bytes: u64) -> Result<()> {
        let caps = self.caps();
        let mut t = self.totals.lock();
        if over(caps.bytes, t.bytes, bytes) {
            return Err(self.bytes_error(None, caps.bytes));
        }
        if let Some(u) = user {
            let held = t.users.get(u).map_or(0, |e| e.1);
            if over(caps.bytes_per_user, held, bytes) {
                return Err(self.bytes_error(Some(u), caps.bytes_per_user));
            }
            if let Some(entry) = t.users.get_mut(u) {
                entry.1 += bytes;
            }
        }
        t.bytes += bytes;
        Ok(())
    }

    fn release(&self, user: Option<&Arc<str>>, count: usize, bytes: u64) {
        let mut t = self.totals.lock();
        t.count -= count;
        t.bytes -= bytes;
        if let Some(u) = user {
            if let Some(entry) = t.users.get_mut(u) {
                entry.0 -= count;
                entry.1 -= bytes;
                if entry.0 == 0 {
                    t.users.remove(u);
                }
            }
        }
    }
}

/// One held result: counted, with its bytes, until dropped.
pub struct Hold {
    pool: Arc<HeldResults>,
    user: Option<Arc<str>>,
    bytes: u64,
    /// The share of `--query.global-memory-limit` the held rows still take (a finished
    /// query's results that its cursor keeps); given back as the rows are, and when dropped.
    global: GlobalCharge,
}

impl Hold {
    /// Estimated bytes charged now.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Charges `bytes` more; 32 (and nothing charged) when a memory cap would be passed.
    pub fn grow(&mut self, bytes: u64) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.pool.grow(self.user.as_ref(), bytes)?;
        self.bytes += bytes;
        Ok(())
    }

    /// Keeps `charge` (split off the query that produced the held rows) until the rows are
    /// given back.
    pub fn keep_global(&mut self, charge: GlobalCharge) {
        debug_assert_eq!(self.global.held(), 0, "a hold keeps one query's charge");
        self.global = charge;
    }

    /// Gives back `bytes` (at most what is charged).
    pub fn shrink(&mut self, bytes: u64) {
        self.global.release(bytes);
        let bytes = bytes.min(self.bytes);
        if bytes > 0 {
            self.pool.release(self.user.as_ref(), 0, bytes);
            self.bytes -= bytes;
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.pool.release(self.user.as_ref(), 1, self.bytes);
    }
}

impl std::fmt::Debug for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hold")
            .field("what", &self.pool.what)
            .field("user", &self.user)
            .field("bytes", &self.bytes)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_per_user_and_overall() {
        let pool = HeldResults::new(
            "open cursors",
            HoldCaps {
                count: 3,
                bytes: 1000,
                count_per_user: 2,
                bytes_per_user: 600,
            },
        );
        let a1 = pool.hold(Some("ann"), 100).unwrap();
        let mut a2 = pool.hold(Some("ann"), 100).unwrap();
        let err = pool.hold(Some("ann"), 0).unwrap_err();
        assert_eq!(err.code, ErrorCode::ResourceLimit);
        assert!(err.message.contains("of user 'ann'"), "{}", err.message);
        // Another user is not blocked by ann's count.
        let mut b = pool.hold(Some("bob"), 0).unwrap();
        // The overall count is.
        assert!(pool.hold(None, 0).is_err());
        assert!(a2.grow(401).is_err(), "ann's bytes would pass 600");
        assert_eq!(pool.in_use_by("ann"), (2, 200));
        a2.grow(400).unwrap();
        assert!(b.grow(401).is_err(), "all bytes would pass 1000");
        b.grow(400).unwrap();
        a2.shrink(300);
        assert_eq!(pool.in_use(), (3, 700));
        drop(a1);
        drop(a2);
        assert_eq!(pool.in_use_by("ann"), (0, 0));
        assert_eq!(pool.in_use(), (1, 400));
        // The superuser counts against the overall caps only.
        let s = pool.hold(None, 600).unwrap();
        assert!(pool.hold(None, 1).is_err());
        drop(s);
        drop(b);
        assert_eq!(pool.in_use(), (0, 0));
    }

    #[test]
    fn zero_means_no_cap() {
        let pool = HeldResults::new("stored async job results", HoldCaps::default());
        let holds: Vec<Hold> = (0..100)
            .map(|_| pool.hold(Some("u"), 1 << 30).unwrap())
            .collect();
        assert_eq!(pool.in_use().0, 100);
        drop(holds);
        assert_eq!(pool.in_use(), (0, 0));
    }
}
