//! Where log lines go (`--log.output`: `-` or `stdout`, `+` or `stderr`, `file://PATH` or a
//! plain path) and how they look: ArangoDB's text line (`TIME [PID] LEVEL [topic] message`)
//! or, with `--log.use-json-format`, one JSON object per line with ArangoDB's attributes
//! (`time`, `pid`, `level`, `topic`, `message`). Written here because that line shape is
//! the product: tracing-subscriber's formatters have their own.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;

use parking_lot::Mutex;
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

use super::ring::MessageText;
use super::topics::{topic_of, LogLevel};

/// One log output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogOutput {
    Stdout,
    Stderr,
    File(PathBuf),
}

impl LogOutput {
    /// Parses a `--log.output` value.
    pub fn parse(text: &str) -> Result<LogOutput, String> {
        match text.trim() {
            "-" | "stdout" => Ok(LogOutput::Stdout),
            "+" | "stderr" => Ok(LogOutput::Stderr),
            "" => Err("empty --log.output".into()),
            other if other.starts_with("syslog://") => {
                Err(format!("log output '{other}': syslog is not supported"))
            }
            other => {
                let path = other.strip_prefix("file://").unwrap_or(other);
                if path.is_empty() {
                    return Err(format!("log output '{other}' names no file"));
                }
                Ok(LogOutput::File(PathBuf::from(path)))
            }
        }
    }

    /// How `/_admin/log/level?withAppenders=true` names it.
    pub fn name(&self) -> String {
        match self {
            LogOutput::Stdout => "-".into(),
            LogOutput::Stderr => "+".into(),
            LogOutput::File(p) => format!("file://{}", p.display()),
        }
    }
}

enum Sink {
    Stdout,
    Stderr,
    File(Mutex<File>),
}

/// The layer that writes every event that passed the filter to every output.
pub struct OutputLayer {
    sinks: Vec<Sink>,
    json: bool,
    pid: u32,
}

impl OutputLayer {
    /// Opens the outputs (files are created or appended to).
    pub fn open(outputs: &[LogOutput], json: bool) -> Result<OutputLayer, String> {
        let sinks = outputs
            .iter()
            .map(|o| match o {
                LogOutput::Stdout => Ok(Sink::Stdout),
                LogOutput::Stderr => Ok(Sink::Stderr),
                LogOutput::File(path) => OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map(|f| Sink::File(Mutex::new(f)))
                    .map_err(|e| format!("cannot open log file {}: {e}", path.display())),
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(OutputLayer {
            sinks,
            json,
            pid: std::process::id(),
        })
    }

    /// One line (with its newline) for an event.
    pub fn line(&self, topic: &str, level: LogLevel, message: &str) -> String {
        let time = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        if self.json {
            let mut line = serde_json::json!({
                "time": time.to_string(),
                "pid": self.pid,
                "level": level.name(),
                "topic": topic,
                "message": message,
            })
            .to_string();
            line.push('\n');
            line
        } else {
            format!(
                "{time} [{}] {} [{topic}] {message}\n",
                self.pid,
                level.name()
            )
        }
    }
}

impl<S: Subscriber> Layer<S> for OutputLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut text = MessageText::default();
        event.record(&mut text);
        let meta = event.metadata();
        let line = self.line(topic_of(meta.target()), LogLevel::of(meta.level()), &text.0);
        for sink in &self.sinks {
            // A log line that cannot be written is dropped: logging must not fail a request.
            let _ = match sink {
                Sink::Stdout => std::io::stdout().lock().write_all(line.as_bytes()),
                Sink::Stderr => std::io::stderr().lock().write_all(line.as_bytes()),
                Sink::File(f) => f.lock().write_all(line.as_bytes()),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_parse_as_arangodb_names_them() {
        assert_eq!(LogOutput::parse("-").unwrap(), LogOutput::Stdout);
        assert_eq!(LogOutput::parse("+").unwrap(), LogOutput::Stderr);
        assert_eq!(
            LogOutput::parse("file:///tmp/q.log").unwrap(),
            LogOutput::File("/tmp/q.log".into())
        );
        assert!(LogOutput::parse("syslog://local0").is_err());
        assert!(LogOutput::parse("file://").is_err());
    }

    #[test]
    fn json_lines_carry_arangodb_attributes() {
        let layer = OutputLayer::open(&[], true).unwrap();
        let line = layer.line("queries", LogLevel::Warning, "slow \"q\"");
        let v: serde_json::Value = serde_json::from_str(line.trim_end()).unwrap();
        assert_eq!(v["level"], "WARNING");
        assert_eq!(v["topic"], "queries");
        assert_eq!(v["message"], "slow \"q\"");
        let text = OutputLayer::open(&[], false)
            .unwrap()
            .line("general", LogLevel::Info, "hi");
        assert!(text.ends_with(" INFO [general] hi\n"), "{text}");
    }
}
