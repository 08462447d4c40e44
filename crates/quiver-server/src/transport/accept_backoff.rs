//! Waiting after a failed `accept`: when the process is out of file descriptors (EMFILE,
//! ENFILE) or the kernel out of buffers, accepting again at once fails again at once. The
//! wait doubles from [`FIRST_WAIT`] up to [`LONGEST_WAIT`] while failures go on, and a burst
//! of failures is logged twice: when it begins and when accepting works again, with the count.

use std::time::Duration;

/// The wait after the first failure of a burst.
pub(super) const FIRST_WAIT: Duration = Duration::from_millis(10);
/// The longest wait between two attempts.
pub(super) const LONGEST_WAIT: Duration = Duration::from_secs(1);

/// The state of the accept loop's current burst of failures.
#[derive(Debug, Default)]
pub(super) struct AcceptBackoff {
    /// Failures since the last successful accept.
    failures: u64,
}

impl AcceptBackoff {
    /// Records a failure; returns how long to wait before accepting again.
    pub(super) fn failed(&mut self, error: &std::io::Error) -> Duration {
        self.failures += 1;
        if self.failures == 1 {
            tracing::warn!(
                "accept failed: {error}; retrying with back-off (logged again when accepting works)"
            );
        }
        self.wait()
    }

    /// The wait after the failures so far: doubling, at most [`LONGEST_WAIT`].
    fn wait(&self) -> Duration {
        let doublings = self.failures.saturating_sub(1).min(16) as u32;
        FIRST_WAIT.saturating_mul(1 << doublings).min(LONGEST_WAIT)
    }

    /// Records a successful accept, ending a burst of failures.
    pub(super) fn succeeded(&mut self) {
        if self.failures > 0 {
            tracing::warn!(
                "accepting connections again after {} failed attempts",
                self.failures
            );
            self.failures = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_longest_and_reset_on_success() {
        let mut backoff = AcceptBackoff::default();
        let error = std::io::Error::from_raw_os_error(24); // EMFILE
        let waits: Vec<Duration> = (0..12).map(|_| backoff.failed(&error)).collect();
        assert_eq!(waits[0], FIRST_WAIT);
        assert_eq!(waits[1], FIRST_WAIT * 2);
        assert_eq!(waits[2], FIRST_WAIT * 4);
        assert!(waits.windows(2).all(|w| w[1] >= w[0]));
        assert_eq!(*waits.last().unwrap(), LONGEST_WAIT);
        // A burst of 12 failures spends seconds waiting, not 12 × 50 ms of log lines.
        let total: Duration = waits.iter().sum();
        assert!(total > Duration::from_secs(3), "{total:?}");
        backoff.succeeded();
        assert_eq!(backoff.failed(&error), FIRST_WAIT);
        // Many failures never overflow the wait.
        for _ in 0..10_000 {
            assert!(backoff.failed(&error) <= LONGEST_WAIT);
        }
    }
}
