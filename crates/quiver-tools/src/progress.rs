//! Progress of a long-running tool: an indicatif bar with rate and ETA on a terminal,
//! plain log lines otherwise.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Reports documents done out of an expected total.
pub struct Progress {
    bar: Option<ProgressBar>,
    done: AtomicU64,
    total: u64,
    throttle: Throttle,
    what: String,
}

/// Plain progress lines at most this often.
const LINE_INTERVAL: Duration = Duration::from_secs(5);

impl Progress {
    /// A reporter for `total` expected documents of `what`; `enabled` false prints nothing.
    pub fn new(what: &str, total: u64, enabled: bool) -> Progress {
        let bar = (enabled && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(
                    "{msg} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} docs ({per_sec}, ETA {eta})",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.set_message(what.to_string());
            bar
        });
        Progress {
            bar,
            done: AtomicU64::new(0),
            total,
            throttle: Throttle::new(if enabled {
                LINE_INTERVAL
            } else {
                Duration::MAX
            }),
            what: what.to_string(),
        }
    }

    /// Counts `n` more documents.
    pub fn add(&self, n: u64) {
        let done = self.done.fetch_add(n, Ordering::Relaxed) + n;
        match &self.bar {
            Some(bar) => bar.set_position(done),
            None => {
                if self.throttle.due() {
                    eprintln!("{}: {done} of {} documents", self.what, self.total);
                }
            }
        }
    }

    /// A message line that does not disturb the bar.
    pub fn line(&self, text: &str, enabled: bool) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None if enabled => eprintln!("{text}"),
            None => {}
        }
    }

    /// Documents counted so far.
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }

    /// Ends the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// True at most once per interval.
struct Throttle {
    interval: Duration,
    last: Mutex<Option<Instant>>,
}

impl Throttle {
    pub fn new(interval: Duration) -> Throttle {
        Throttle {
            interval,
            last: Mutex::new(None),
        }
    }

    pub fn due(&self) -> bool {
        if self.interval == Duration::MAX {
            return false;
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        match *last {
            Some(t) if now.duration_since(t) < self.interval => false,
            _ => {
                *last = Some(now);
                true
            }
        }
    }
}

/// Elapsed time and rate for the summary line.
pub fn rate(count: u64, started: Instant) -> String {
    let secs = started.elapsed().as_secs_f64().max(1e-3);
    format!("{:.1} s, {:.0} documents/s", secs, count as f64 / secs)
}
