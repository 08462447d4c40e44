//! The recent log entries `/_admin/log/entries` shows: a tracing layer keeps the last
//! [`CAPACITY`] events that passed the level filter, each with an increasing id.

use std::collections::VecDeque;

use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

use super::topics::{topic_of, LogLevel};

/// Entries kept; older ones are dropped.
pub const CAPACITY: usize = 2048;

/// One log entry.
#[derive(Clone, Debug, PartialEq)]
pub struct LogEntry {
    /// Increasing from 1.
    pub id: u64,
    /// The topic.
    pub topic: &'static str,
    /// The level.
    pub level: LogLevel,
    /// ISO 8601 time, UTC.
    pub date: String,
    /// The message with the event's other fields appended as `name=value`.
    pub message: String,
}

/// The event's message and fields as one line.
#[derive(Default)]
pub struct MessageText(pub String);

impl Visit for MessageText {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        if field.name() == "message" {
            let _ = if self.0.is_empty() {
                write!(self.0, "{value:?}")
            } else {
                write!(self.0, " {value:?}")
            };
        } else {
            let space = if self.0.is_empty() { "" } else { " " };
            let _ = write!(self.0, "{space}{}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            if !self.0.is_empty() {
                self.0.push(' ');
            }
            self.0.push_str(value);
        } else {
            self.record_debug(field, &value);
        }
    }
}

/// The bounded ring of entries.
#[derive(Default)]
pub struct LogRing {
    inner: Mutex<(u64, VecDeque<LogEntry>)>,
}

impl LogRing {
    /// Adds an entry, dropping the oldest beyond [`CAPACITY`].
    pub fn push(&self, topic: &'static str, level: LogLevel, message: String) {
        let date = chrono::Utc::now()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string();
        let mut inner = self.inner.lock();
        inner.0 += 1;
        let id = inner.0;
        inner.1.push_back(LogEntry {
            id,
            topic,
            level,
            date,
            message,
        });
        while inner.1.len() > CAPACITY {
            inner.1.pop_front();
        }
        debug_assert!(inner.1.len() <= CAPACITY);
    }

    /// The entries kept, oldest first.
    pub fn entries(&self) -> Vec<LogEntry> {
        self.inner.lock().1.iter().cloned().collect()
    }
}

/// The layer that fills a [`LogRing`].
pub struct RingLayer(pub std::sync::Arc<LogRing>);

impl<S: Subscriber> Layer<S> for RingLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut text = MessageText::default();
        event.record(&mut text);
        let meta = event.metadata();
        self.0
            .push(topic_of(meta.target()), LogLevel::of(meta.level()), text.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_newest_entries() {
        let ring = LogRing::default();
        for i in 0..CAPACITY + 5 {
            ring.push("general", LogLevel::Info, format!("m{i}"));
        }
        let e = ring.entries();
        assert_eq!(e.len(), CAPACITY);
        assert_eq!(e[0].id, 6);
        assert_eq!(e.last().unwrap().message, format!("m{}", CAPACITY + 4));
    }
}
