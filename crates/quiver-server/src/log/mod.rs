//! The server's log: where lines go and how they look ([`output`]), the recent entries kept
//! for `/_admin/log/entries` ([`ring`]), and the level of each ArangoDB log topic
//! ([`topics`]), changeable at run time through `/_admin/log/level`: [`LogControl`] owns
//! the levels and reloads the tracing filter (tracing-subscriber's reload layer) whenever
//! they change.

pub mod output;
pub mod request_log;
pub mod ring;
pub mod structured;
pub mod topics;

use std::sync::Arc;

use parking_lot::Mutex;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::EnvFilter;

pub use output::LogOutput;
pub use ring::{LogEntry, LogRing};
pub use structured::{StructuredParams, StructuredSnapshot};
pub use topics::{LogLevel, TopicLevels};

type Reload = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// The log settings of the command line.
#[derive(Clone, Debug)]
pub struct LogOptions {
    /// `--log.level` values (`LEVEL` or `topic=LEVEL`), in order.
    pub levels: Vec<String>,
    /// `--log.output` values; none means stderr.
    pub outputs: Vec<String>,
    /// `--log.use-json-format`.
    pub json: bool,
}

/// The running log: its levels, its recent entries and the filter they drive.
pub struct LogControl {
    ring: Arc<LogRing>,
    levels: Mutex<TopicLevels>,
    startup: TopicLevels,
    outputs: Vec<LogOutput>,
    reload: Option<Reload>,
    structured: StructuredParams,
}

impl std::fmt::Debug for LogControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogControl")
            .field("levels", &*self.levels.lock())
            .field("outputs", &self.outputs)
            .finish_non_exhaustive()
    }
}

impl Default for LogControl {
    fn default() -> LogControl {
        LogControl::detached(TopicLevels::all(LogLevel::Info))
    }
}

impl LogControl {
    /// A log that installs nothing (handler tests): levels are kept and reported, entries
    /// are whatever is pushed into [`LogControl::ring`].
    pub fn detached(levels: TopicLevels) -> LogControl {
        LogControl {
            ring: Arc::default(),
            startup: levels.clone(),
            levels: Mutex::new(levels),
            outputs: Vec::new(),
            reload: None,
            structured: StructuredParams::default(),
        }
    }

    /// Installs the process's tracing subscriber for `options` (once per process).
    pub fn install(options: &LogOptions) -> Result<LogControl, String> {
        let mut levels = TopicLevels::all(LogLevel::Info);
        for value in &options.levels {
            levels.apply_option(value)?;
        }
        let outputs = if options.outputs.is_empty() {
            vec![LogOutput::Stderr]
        } else {
            options
                .outputs
                .iter()
                .map(|o| LogOutput::parse(o))
                .collect::<Result<Vec<_>, String>>()?
        };
        let filter = EnvFilter::try_new(levels.directives()).map_err(|e| e.to_string())?;
        let (filter, handle) = tracing_subscriber::reload::Layer::new(filter);
        let ring = Arc::new(LogRing::default());
        let subscriber = tracing_subscriber::registry()
            .with(filter)
            .with(output::OutputLayer::open(&outputs, options.json)?)
            .with(ring::RingLayer(Arc::clone(&ring)));
        tracing::subscriber::set_global_default(subscriber).map_err(|e| e.to_string())?;
        let reload: Reload = Box::new(move |directives: &str| {
            let filter = EnvFilter::try_new(directives).map_err(|e| e.to_string())?;
            handle.reload(filter).map_err(|e| e.to_string())
        });
        Ok(LogControl {
            ring,
            startup: levels.clone(),
            levels: Mutex::new(levels),
            outputs,
            reload: Some(reload),
            structured: StructuredParams::default(),
        })
    }

    /// The recent entries.
    pub fn ring(&self) -> &LogRing {
        &self.ring
    }

    /// The structured log parameters (`/_admin/log/structured`).
    pub fn structured(&self) -> &StructuredParams {
        &self.structured
    }

    /// The outputs.
    pub fn outputs(&self) -> &[LogOutput] {
        &self.outputs
    }

    /// The levels now.
    pub fn levels(&self) -> TopicLevels {
        self.levels.lock().clone()
    }

    /// Changes levels (`change` edits a copy) and reloads the filter; on failure nothing
    /// changes.
    pub fn update(
        &self,
        change: impl FnOnce(&mut TopicLevels) -> Result<(), String>,
    ) -> Result<TopicLevels, String> {
        let mut levels = self.levels.lock();
        let mut next = levels.clone();
        change(&mut next)?;
        if let Some(reload) = &self.reload {
            reload(&next.directives())?;
        }
        *levels = next;
        Ok(levels.clone())
    }

    /// Back to the levels the server started with.
    pub fn reset(&self) -> Result<TopicLevels, String> {
        let startup = self.startup.clone();
        self.update(|l| {
            *l = startup;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_apply_whole_or_not_at_all_and_reset_restores() {
        let log = LogControl::default();
        let after = log
            .update(|l| {
                l.set("requests", LogLevel::Debug);
                Ok(())
            })
            .unwrap();
        assert_eq!(after.get("requests"), Some(LogLevel::Debug));
        assert!(log
            .update(|l| {
                l.set("aql", LogLevel::Trace);
                Err("refused".into())
            })
            .is_err());
        assert_eq!(log.levels().get("aql"), Some(LogLevel::Info));
        assert_eq!(log.reset().unwrap().get("requests"), Some(LogLevel::Info));
    }
}
