//! The options `quiver serve` runs with, as `/_admin/options` and
//! `/_admin/options-description` show them: read from clap's description of the command and
//! the values it parsed (configuration file values included, as they are arguments by then).

use clap::{ArgAction, ArgMatches, Command};
use quiver_server::state::StartupOptions;
use serde_json::{json, Value};

/// A value as JSON: `true`/`false` and numbers typed, everything else a string.
fn typed(text: &str) -> Value {
    match text {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        _ => {}
    }
    if let Ok(n) = text.parse::<i64>() {
        return n.into();
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() => json!(f),
        _ => Value::String(text.to_string()),
    }
}

/// The options of `command` with the values of `matches` (secrets left out by
/// [`StartupOptions::new`]).
pub fn report(command: &Command, matches: &ArgMatches) -> StartupOptions {
    let mut options = Vec::new();
    for arg in command.get_arguments() {
        let Some(name) = arg.get_long() else {
            continue;
        };
        if matches!(name, "help" | "version" | "configuration") {
            continue;
        }
        let id = arg.get_id().as_str();
        let many = matches!(arg.get_action(), ArgAction::Append);
        let raw: Vec<String> = matches
            .get_raw(id)
            .map(|values| values.map(|v| v.to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        let value = if many {
            Value::Array(raw.iter().map(|v| typed(v)).collect())
        } else {
            raw.first().map_or(Value::Null, |v| typed(v))
        };
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        let default = if many {
            Value::Array(defaults.iter().map(|v| typed(v)).collect())
        } else {
            defaults.first().map_or(Value::Null, |v| typed(v))
        };
        let kind = match (&default, many) {
            (_, true) => "string...",
            (Value::Bool(_), _) => "boolean",
            (Value::Number(n), _) if n.is_f64() => "double",
            (Value::Number(_), _) => "uint64",
            _ => "string",
        };
        let description = json!({
            "category": "option",
            "section": name.split_once('.').map_or("", |(s, _)| s),
            "description": arg.get_help().map(|h| h.to_string()).unwrap_or_default(),
            "type": kind,
            "default": default,
            "requiresValue": !matches!(arg.get_action(), ArgAction::SetTrue),
            "dynamic": false,
            "hidden": arg.is_hide_set(),
            "obsolete": false,
            "enterpriseOnly": false,
            "component": ["single"],
            "os": ["linux"],
        });
        options.push((name.to_string(), value, description));
    }
    StartupOptions::new(options)
}
