//! `/_admin/log/entries` (recent entries with ArangoDB's filters), `/_admin/log` (the same
//! entries in the older column shape) and `/_admin/log/level` (read, change and reset the
//! level of each topic at run time) and `/_admin/log/structured` (the structured
//! parameters of the request log), over [`crate::log::LogControl`].

use http::Method;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::log::{LogEntry, LogLevel};
use crate::{method_not_allowed, not_found, Request, Response, ServerState};

/// Routes `/_admin/log` and below.
pub fn route(state: &ServerState, req: &Request) -> Response {
    let result = match (req.suffix(2).as_slice(), &req.method) {
        (["entries"], &Method::GET | &Method::HEAD) => {
            entries(state, req).map(|v| Response::json(200, &v))
        }
        ([], &Method::GET | &Method::HEAD) => legacy(state, req).map(|v| Response::json(200, &v)),
        (["level"], &Method::GET | &Method::HEAD) => Ok(levels(state, req)),
        (["level"], &Method::PUT) => set_levels(state, req),
        (["structured"], &Method::GET | &Method::HEAD) => Ok(Response::json(
            200,
            &state.config.log.structured().to_json(),
        )),
        (["structured"], &Method::PUT) => set_structured(state, req),
        (["level"], &Method::DELETE) => state
            .config
            .log
            .reset()
            .map(|l| Response::json(200, &l.to_json()))
            .map_err(bad),
        ([] | ["entries" | "level" | "structured"], _) => return method_not_allowed(),
        _ => return not_found(req),
    };
    result.unwrap_or_else(Response::from)
}

/// `PUT /_admin/log/structured`: a JSON object of booleans.
fn set_structured(state: &ServerState, req: &Request) -> Result<Response> {
    let body = super::body_object(
        req,
        ErrorCode::HttpBadParameter,
        "structured log parameters",
    )?;
    let params = state.config.log.structured();
    params.apply(body.as_object().expect("body_object answers an object"));
    Ok(Response::json(200, &params.to_json()))
}

fn bad(message: String) -> Error {
    Error::with_message(ErrorCode::HttpBadParameter, message)
}

/// A level given by name or by its `upto` number (0 = fatal … 5 = trace).
fn level_param(value: &str, what: &str) -> Result<LogLevel> {
    LogLevel::parse(value)
        .or_else(|| {
            value
                .trim()
                .parse::<usize>()
                .ok()
                .and_then(|n| LogLevel::ALL.get(n).copied())
        })
        .ok_or_else(|| bad(format!("unknown '{what}' log level: '{value}'")))
}

fn number_param(req: &Request, name: &str) -> Result<Option<u64>> {
    req.param(name)
        .map(|v| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| bad(format!("invalid value for '{name}': '{v}'")))
        })
        .transpose()
}

/// The entries matching the query's filters, sorted and paginated, and their number before
/// pagination.
fn select(state: &ServerState, req: &Request) -> Result<(Vec<LogEntry>, usize)> {
    if req.param("upto").is_some() && req.param("level").is_some() {
        return Err(bad("'upto' and 'level' are mutually exclusive".into()));
    }
    let exact = req
        .param("level")
        .map(|l| level_param(l, "level"))
        .transpose()?;
    let upto = match req.param("upto") {
        Some(u) => level_param(u, "upto")?,
        None => LogLevel::Info,
    };
    let start = number_param(req, "start")?.unwrap_or(0);
    let offset = number_param(req, "offset")?.unwrap_or(0);
    let size = number_param(req, "size")?;
    let search = req.param("search").map(str::to_lowercase);
    let descending = match req.param("sort") {
        None | Some("asc") => false,
        Some("desc") => true,
        Some(other) => return Err(bad(format!("invalid value for 'sort': '{other}'"))),
    };
    let mut selected: Vec<LogEntry> = state
        .config
        .log
        .ring()
        .entries()
        .into_iter()
        .filter(|e| match exact {
            Some(level) => e.level == level,
            None => e.level <= upto,
        })
        .filter(|e| e.id >= start)
        .filter(|e| {
            search
                .as_ref()
                .is_none_or(|s| e.message.to_lowercase().contains(s))
        })
        .collect();
    if descending {
        selected.reverse();
    }
    let total = selected.len();
    let page = selected
        .into_iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(size.map_or(usize::MAX, |s| usize::try_from(s).unwrap_or(usize::MAX)))
        .collect();
    Ok((page, total))
}

/// `GET /_admin/log/entries`.
fn entries(state: &ServerState, req: &Request) -> Result<Value> {
    let (page, total) = select(state, req)?;
    let messages: Vec<Value> = page
        .iter()
        .map(|e| {
            json!({
                "id": e.id,
                "topic": e.topic,
                "level": e.level.name(),
                "date": e.date,
                "message": e.message,
            })
        })
        .collect();
    Ok(json!({"total": total, "messages": messages}))
}

/// `GET /_admin/log`: the same selection as columns (`lid`, `topic`, `level` as `upto`
/// numbers, `timestamp` in seconds, `text`).
fn legacy(state: &ServerState, req: &Request) -> Result<Value> {
    let (page, total) = select(state, req)?;
    let level_number = |l: LogLevel| LogLevel::ALL.iter().position(|x| *x == l).unwrap_or(3);
    let timestamp =
        |date: &str| chrono::DateTime::parse_from_rfc3339(date).map_or(0, |d| d.timestamp());
    Ok(json!({
        "totalAmount": total,
        "lid": page.iter().map(|e| e.id).collect::<Vec<_>>(),
        "topic": page.iter().map(|e| e.topic).collect::<Vec<_>>(),
        "level": page.iter().map(|e| level_number(e.level)).collect::<Vec<_>>(),
        "timestamp": page.iter().map(|e| timestamp(&e.date)).collect::<Vec<_>>(),
        "text": page.iter().map(|e| e.message.as_str()).collect::<Vec<_>>(),
    }))
}

/// The levels, per output too with `withAppenders=true` (every output has the global
/// levels: QuiverDB has no per-output levels).
fn levels_json(state: &ServerState, req: &Request) -> Value {
    let levels = state.config.log.levels().to_json();
    if !req.bool_param("withAppenders", false) {
        return levels;
    }
    let appenders: serde_json::Map<String, Value> = state
        .config
        .log
        .outputs()
        .iter()
        .map(|o| (o.name(), levels.clone()))
        .collect();
    json!({"global": levels, "appenders": appenders})
}

/// `GET /_admin/log/level`.
fn levels(state: &ServerState, req: &Request) -> Response {
    Response::json(200, &levels_json(state, req))
}

/// `PUT /_admin/log/level`: a string sets topic `general`, an object sets the topics it
/// names (`all` every one; topics QuiverDB does not have are ignored, as ArangoDB ignores
/// unknown ones); a level that is not one is 400. With `withAppenders=true` the body's
/// `global` object is applied.
fn set_levels(state: &ServerState, req: &Request) -> Result<Response> {
    let body = super::body_json(req)?.unwrap_or(Value::Null);
    let body = if req.bool_param("withAppenders", false) {
        body.get("global").cloned().unwrap_or(Value::Null)
    } else {
        body
    };
    let changes: Vec<(String, LogLevel)> = match &body {
        Value::String(level) => vec![("general".into(), level_param(level, "level")?)],
        Value::Object(map) => map
            .iter()
            .map(|(topic, level)| {
                let level = level
                    .as_str()
                    .ok_or_else(|| bad(format!("log level of '{topic}' must be a string")))?;
                Ok((topic.clone(), level_param(level, "level")?))
            })
            .collect::<Result<_>>()?,
        _ => {
            return Err(bad(
                "expecting a log level string or an object of topics and levels".into(),
            ))
        }
    };
    state
        .config
        .log
        .update(|levels| {
            for (topic, level) in &changes {
                levels.set(topic, *level);
            }
            Ok(())
        })
        .map_err(bad)?;
    Ok(Response::json(200, &levels_json(state, req)))
}
