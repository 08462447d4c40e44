//! ArangoDB's log levels and the log topics QuiverDB has, each mapped to the tracing
//! targets whose events belong to it; [`TopicLevels`] turns a level per topic into the
//! tracing filter directives that enforce them.

use std::collections::BTreeMap;
use std::fmt;

/// ArangoDB's log levels, most severe first (`upto` numbers are the positions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Fatal,
    Error,
    Warning,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    /// Every level, in `upto` order (0 = fatal … 5 = trace).
    pub const ALL: [LogLevel; 6] = [
        LogLevel::Fatal,
        LogLevel::Error,
        LogLevel::Warning,
        LogLevel::Info,
        LogLevel::Debug,
        LogLevel::Trace,
    ];

    /// A level by ArangoDB's name (any case; `warn` and `err` too).
    pub fn parse(name: &str) -> Option<LogLevel> {
        Some(match name.trim().to_ascii_lowercase().as_str() {
            "fatal" => LogLevel::Fatal,
            "error" | "err" => LogLevel::Error,
            "warning" | "warn" => LogLevel::Warning,
            "info" => LogLevel::Info,
            "debug" => LogLevel::Debug,
            "trace" => LogLevel::Trace,
            _ => return None,
        })
    }

    /// ArangoDB's name (`WARNING`).
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Fatal => "FATAL",
            LogLevel::Error => "ERROR",
            LogLevel::Warning => "WARNING",
            LogLevel::Info => "INFO",
            LogLevel::Debug => "DEBUG",
            LogLevel::Trace => "TRACE",
        }
    }

    /// The level of a tracing event (tracing has no fatal: its errors are errors).
    pub fn of(level: &tracing::Level) -> LogLevel {
        match *level {
            tracing::Level::ERROR => LogLevel::Error,
            tracing::Level::WARN => LogLevel::Warning,
            tracing::Level::INFO => LogLevel::Info,
            tracing::Level::DEBUG => LogLevel::Debug,
            _ => LogLevel::Trace,
        }
    }

    /// The tracing filter level that lets this level and the more severe ones through.
    fn directive(self) -> &'static str {
        match self {
            LogLevel::Fatal | LogLevel::Error => "error",
            LogLevel::Warning => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The topics, with the tracing targets (prefixes) of each; `general` takes every event no
/// other topic claims.
pub const TOPICS: &[(&str, &[&str])] = &[
    ("aql", &["quiver_aql"]),
    ("authentication", &["quiver_server::auth"]),
    ("communication", &["quiver_server::transport", "hyper"]),
    ("engines", &["quiver_storage"]),
    ("general", &[]),
    ("queries", &["quiver::queries"]),
    ("requests", &["quiver::requests"]),
    ("ssl", &["quiver_server::transport::tls", "rustls"]),
    ("startup", &["quiver::startup"]),
    ("trx", &["quiver_core::streams", "quiver_core::txn"]),
    ("ttl", &["quiver_core::ttl"]),
    (
        "views",
        &[
            "quiver_search",
            "quiver_core::view_feed",
            "quiver_core::views",
        ],
    ),
];

/// The topic of an event with `target` (the longest matching prefix wins, as in the filter).
pub fn topic_of(target: &str) -> &'static str {
    let mut best: (&'static str, usize) = ("general", 0);
    for (topic, prefixes) in TOPICS {
        for prefix in *prefixes {
            if target.starts_with(prefix) && prefix.len() > best.1 {
                best = (topic, prefix.len());
            }
        }
    }
    best.0
}

/// A level for every topic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicLevels(BTreeMap<&'static str, LogLevel>);

impl TopicLevels {
    /// Every topic at `level`.
    pub fn all(level: LogLevel) -> TopicLevels {
        TopicLevels(TOPICS.iter().map(|(t, _)| (*t, level)).collect())
    }

    /// Sets a topic (`all` sets every one). Returns false for a topic QuiverDB does not
    /// have (ArangoDB ignores those too).
    pub fn set(&mut self, topic: &str, level: LogLevel) -> bool {
        let topic = topic.trim().to_ascii_lowercase();
        if topic == "all" {
            self.0.values_mut().for_each(|l| *l = level);
            return true;
        }
        match self.0.iter_mut().find(|(t, _)| **t == topic) {
            Some((_, l)) => {
                *l = level;
                true
            }
            None => false,
        }
    }

    /// The level of `topic`.
    pub fn get(&self, topic: &str) -> Option<LogLevel> {
        self.0.get(topic).copied()
    }

    /// `{topic: LEVEL}` as `GET /_admin/log/level` shows it.
    pub fn to_json(&self) -> serde_json::Value {
        self.0
            .iter()
            .map(|(t, l)| (t.to_string(), serde_json::Value::from(l.name())))
            .collect::<serde_json::Map<_, _>>()
            .into()
    }

    /// The tracing filter directives (`EnvFilter` syntax) for these levels.
    pub fn directives(&self) -> String {
        let general = self.get("general").unwrap_or(LogLevel::Info);
        let mut out = general.directive().to_string();
        for (topic, prefixes) in TOPICS {
            let level = self.get(topic).unwrap_or(general);
            for prefix in *prefixes {
                out.push(',');
                out.push_str(prefix);
                out.push('=');
                out.push_str(level.directive());
            }
        }
        out
    }

    /// Applies ArangoDB's `--log.level` values: `LEVEL` (topic general) or `topic=LEVEL`.
    pub fn apply_option(&mut self, value: &str) -> Result<(), String> {
        let (topic, level) = value.split_once('=').unwrap_or(("general", value));
        let level = LogLevel::parse(level).ok_or_else(|| {
            format!("invalid log level '{level}' (expected fatal, error, warning, info, debug or trace)")
        })?;
        if self.set(topic, level) {
            Ok(())
        } else {
            Err(format!("unknown log topic '{topic}'"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_map_targets_and_levels_become_directives() {
        assert_eq!(topic_of("quiver_aql::exec"), "aql");
        assert_eq!(topic_of("quiver::queries"), "queries");
        assert_eq!(topic_of("quiver_server::transport::tls"), "ssl");
        assert_eq!(topic_of("quiver_server::transport"), "communication");
        assert_eq!(topic_of("quiver_core::catalog"), "general");
        let mut levels = TopicLevels::all(LogLevel::Info);
        levels.apply_option("requests=debug").unwrap();
        levels.apply_option("warning").unwrap();
        assert!(levels.apply_option("nosuch=info").is_err());
        assert!(levels.apply_option("general=loud").is_err());
        let d = levels.directives();
        assert!(d.starts_with("warn,"), "{d}");
        assert!(d.contains("quiver::requests=debug"), "{d}");
        assert_eq!(levels.to_json()["requests"], "DEBUG");
        assert!(levels.set("all", LogLevel::Trace));
        assert_eq!(levels.get("aql"), Some(LogLevel::Trace));
        assert!(!levels.set("agency", LogLevel::Trace));
    }
}
