//! Slows password guessing down, boundedly.
//!
//! Failed logins are counted per client address and per user name, in windows of
//! [`WINDOW`]. A client with [`CLIENT_LIMIT`] failures in its window is refused (without a
//! password check) until the window ends. A user with [`USER_LIMIT`] failures in its window is
//! refused too, but only towards clients that have failed themselves in their current window:
//! a client with a clean record may always try, so an attacker cannot lock `root` out from
//! elsewhere, and a distributed attack gets one free guess per address and window. A success
//! clears the client's record. Both maps hold at most [`MAX_TRACKED`] entries: expired ones
//! go first, then the oldest.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Length of a counting window.
pub const WINDOW: Duration = Duration::from_secs(60);
/// Failures of one client per window before it is refused.
pub const CLIENT_LIMIT: u32 = 10;
/// Failures for one user per window before failing clients are refused for it.
pub const USER_LIMIT: u32 = 30;
/// Most clients and most users tracked (each).
pub const MAX_TRACKED: usize = 16_384;

#[derive(Clone, Copy, Debug)]
struct Failures {
    count: u32,
    since: Instant,
}

struct Counter<K> {
    entries: HashMap<K, Failures>,
}

impl<K: Hash + Eq + Clone> Counter<K> {
    fn new() -> Counter<K> {
        Counter {
            entries: HashMap::new(),
        }
    }

    fn current(&self, key: &K, now: Instant) -> u32 {
        match self.entries.get(key) {
            Some(f) if now.duration_since(f.since) < WINDOW => f.count,
            _ => 0,
        }
    }

    fn record(&mut self, key: &K, now: Instant) {
        if !self.entries.contains_key(key) && self.entries.len() >= MAX_TRACKED {
            self.entries
                .retain(|_, f| now.duration_since(f.since) < WINDOW);
            if self.entries.len() >= MAX_TRACKED {
                let oldest = self
                    .entries
                    .iter()
                    .min_by_key(|(_, f)| f.since)
                    .map(|(k, _)| k.clone());
                if let Some(oldest) = oldest {
                    self.entries.remove(&oldest);
                }
            }
        }
        let entry = self.entries.entry(key.clone()).or_insert(Failures {
            count: 0,
            since: now,
        });
        if now.duration_since(entry.since) >= WINDOW {
            *entry = Failures {
                count: 0,
                since: now,
            };
        }
        entry.count = entry.count.saturating_add(1);
        assert!(self.entries.len() <= MAX_TRACKED);
    }

    fn clear(&mut self, key: &K) {
        self.entries.remove(key);
    }
}

/// The failure counters. `client` is `None` when the caller's address is unknown (all such
/// callers share one record).
pub struct Throttle {
    clients: Mutex<Counter<Option<IpAddr>>>,
    users: Mutex<Counter<String>>,
}

impl Default for Throttle {
    fn default() -> Throttle {
        Throttle {
            clients: Mutex::new(Counter::new()),
            users: Mutex::new(Counter::new()),
        }
    }
}

impl Throttle {
    /// Whether a login attempt for `user` from `client` may be checked now.
    pub fn allows(&self, client: Option<IpAddr>, user: &str) -> bool {
        self.allows_at(client, user, Instant::now())
    }

    fn allows_at(&self, client: Option<IpAddr>, user: &str, now: Instant) -> bool {
        let client_failures = self.clients.lock().current(&client, now);
        if client_failures >= CLIENT_LIMIT {
            return false;
        }
        client_failures == 0 || self.users.lock().current(&user.to_owned(), now) < USER_LIMIT
    }

    /// Counts a failed login.
    pub fn failed(&self, client: Option<IpAddr>, user: &str) {
        self.failed_at(client, user, Instant::now());
    }

    fn failed_at(&self, client: Option<IpAddr>, user: &str, now: Instant) {
        self.clients.lock().record(&client, now);
        self.users.lock().record(&user.to_owned(), now);
    }

    /// A successful login clears the client's failures.
    pub fn succeeded(&self, client: Option<IpAddr>) {
        self.clients.lock().clear(&client);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> Option<IpAddr> {
        Some(IpAddr::from([10, 0, 0, n]))
    }

    #[test]
    fn a_failing_client_is_refused_for_a_window() {
        let t = Throttle::default();
        let start = Instant::now();
        for _ in 0..CLIENT_LIMIT {
            assert!(t.allows_at(ip(1), "ann", start));
            t.failed_at(ip(1), "ann", start);
        }
        assert!(!t.allows_at(ip(1), "ann", start));
        assert!(
            !t.allows_at(ip(1), "bob", start),
            "per client, whatever the user"
        );
        assert!(
            t.allows_at(ip(2), "ann", start),
            "other clients are not affected"
        );
        assert!(t.allows_at(ip(1), "ann", start + WINDOW), "the window ends");
    }

    #[test]
    fn a_guessed_user_is_refused_only_towards_failing_clients() {
        let t = Throttle::default();
        let now = Instant::now();
        for i in 0..USER_LIMIT {
            t.failed_at(ip(100 + (i % 50) as u8), "root", now);
        }
        // A client that failed once is refused for root, not for others.
        assert!(!t.allows_at(ip(100), "root", now));
        assert!(t.allows_at(ip(100), "ann", now));
        // Root logging in from a clean address still may.
        assert!(t.allows_at(ip(7), "root", now));
        // A success clears the client's record.
        t.succeeded(ip(100));
        assert!(t.allows_at(ip(100), "root", now));
    }

    #[test]
    fn tracking_is_bounded() {
        let t = Throttle::default();
        let now = Instant::now();
        for i in 0..(MAX_TRACKED as u32 + 100) {
            let addr = Some(IpAddr::from(i.to_be_bytes()));
            t.failed_at(addr, &format!("u{i}"), now);
        }
        assert!(t.clients.lock().entries.len() <= MAX_TRACKED);
        assert!(t.users.lock().entries.len() <= MAX_TRACKED);
    }
}
