//! Hot backups, in the shape of ArangoDB's `/_admin/backup/*` API: `create`, `list`,
//! `delete` and `restore`, all `POST`, administrators only (`access.rs`).
//!
//! A backup is a directory `backups/<id>/` under the data directory: the storage engine's
//! consistent online copy (`Engine::backup_to`: hard links of sealed datafiles, copies of the
//! rest) plus `backup.json` describing it. Its id is ArangoDB's `<UTC time>_<label>`
//! (`2026-11-26T19.30.00Z_nightly`). The copy is written under a hidden name and renamed
//! when complete, so a listed backup is always whole. Restoring means starting a server on
//! the copy (`--database.directory <data>/backups/<id>`, or a copy of it made by
//! `quiver backup restore --target-directory`); a running server cannot swap its data under
//! its clients, so `restore` answers 501/9 naming that directory. `upload` and `download`
//! move backups to and from rclone remote repositories, an Enterprise Edition feature in
//! ArangoDB 3.12: they answer 501/31.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use http::Method;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::{method_not_allowed, not_found, Request, Response, ServerState};

const META: &str = "backup.json";

pub fn backup(state: &ServerState, req: &Request, op: &str) -> Response {
    if !matches!(
        op,
        "create" | "list" | "delete" | "restore" | "upload" | "download"
    ) {
        return not_found(req);
    }
    if req.method != Method::POST {
        return method_not_allowed();
    }
    let root = state.core.directory().join("backups");
    match op {
        "upload" | "download" => {
            return Error::with_message(
                ErrorCode::OnlyEnterprise,
                "backup transfer to remote repositories is only available in the Enterprise \
                 Edition of ArangoDB",
            )
            .into()
        }
        "restore" => return refuse_restore(&root, &req.body).into(),
        _ => {}
    }
    let outcome = crate::json::parse_body(&req.body).and_then(|body| {
        let body = body.unwrap_or_else(|| json!({}));
        if !body.is_object() {
            return Err(bad("the body must be an object"));
        }
        match op {
            "create" => create(state, &root, &body),
            "list" => list(&root, &body),
            "delete" => {
                std::fs::remove_dir_all(existing(&root, &body)?)
                    .map_err(|e| internal(format!("cannot delete the backup: {e}")))?;
                Ok(Response::ok_envelope(200, json!({})))
            }
            _ => unreachable!("restore, upload and download are answered above"),
        }
    });
    outcome.unwrap_or_else(Into::into)
}

/// `restore`'s answer, always 501/9: names the backup's directory when the body's `id` is a
/// known backup, so the operator can start a server on it.
fn refuse_restore(root: &Path, body: &[u8]) -> Error {
    let dir = crate::json::parse_body(body)
        .ok()
        .flatten()
        .and_then(|b| existing(root, &b).ok());
    let message = match dir {
        Some(dir) => format!(
            "a running server does not restore in place: stop it and start it with \
             --database.directory {} (or on a copy made by quiver backup restore)",
            dir.display()
        ),
        None => "a running server does not restore in place: start a server on the backup's \
                 directory under <data>/backups/<id>, or on a copy made by quiver backup restore"
            .to_string(),
    };
    Error::with_message(ErrorCode::NotImplemented, message)
}

fn bad(message: &str) -> Error {
    Error::with_message(ErrorCode::HttpBadParameter, message)
}

fn internal(message: String) -> Error {
    Error::with_message(ErrorCode::HttpServerError, message)
}

/// The directory of the backup named by the body's `id`: 400 without one, 404 if unknown.
fn existing(root: &Path, body: &Value) -> Result<PathBuf> {
    let id = body
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("'id' must be a string"))?;
    let dir = root.join(id);
    if !valid_name(id) || !dir.join(META).is_file() {
        return Err(Error::with_message(
            ErrorCode::HttpNotFound,
            format!("backup '{id}' not found"),
        ));
    }
    Ok(dir)
}

/// Labels and ids: letters, digits, `-`, `_`, `.`, not starting with `.`, at most 200 bytes.
fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 200
        && !s.starts_with('.')
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn create(state: &ServerState, root: &Path, body: &Value) -> Result<Response> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let label = match body.get("label") {
        None | Some(Value::Null) => format!("{:x}{:x}", now.as_nanos(), std::process::id()),
        Some(Value::String(l)) if valid_name(l) => l.clone(),
        Some(_) => return Err(bad("'label' may hold letters, digits, '-', '_' and '.'")),
    };
    let datetime = utc(now.as_secs());
    let id = format!("{}_{label}", datetime.replace(':', "."));
    let dir = root.join(&id);
    if dir.exists() {
        return Err(Error::with_message(
            ErrorCode::HttpBadParameter,
            format!("backup '{id}' exists already"),
        ));
    }
    let partial = root.join(format!(".partial-{id}"));
    let _ = std::fs::remove_dir_all(&partial);
    let written = (|| {
        let tick = state.core.engine().backup_to(&partial)?;
        copy_vector_quantizers(state.core.directory(), &partial)
            .map_err(|e| internal(format!("cannot copy the vector index quantizers: {e}")))?;
        let meta = json!({"id": id, "datetime": datetime, "tick": tick.to_string(),
            "version": crate::api::admin::ARANGO_VERSION});
        std::fs::write(partial.join(META), meta.to_string())
            .and_then(|()| std::fs::rename(&partial, &dir))
            .map_err(|e| internal(format!("cannot write the backup: {e}")))
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    let (files, bytes) = usage(&dir);
    Ok(Response::ok_result(
        201,
        json!({"id": id, "datetime": datetime, "potentiallyInconsistent": false,
            "sizeInBytes": bytes, "nrFiles": files, "nrDBServers": 1}),
    ))
}

/// Copies the trained centroids of the vector indexes (`vector-indexes/<collection>/<index>.ivf`,
/// outside the engine's files) into the backup, so a server started on it files vectors under
/// the same centroids; without them it would train the indexes again.
fn copy_vector_quantizers(data: &Path, backup: &Path) -> std::io::Result<()> {
    let from = data.join("vector-indexes");
    let Ok(collections) = std::fs::read_dir(&from) else {
        return Ok(());
    };
    for collection in collections.flatten() {
        if !collection.path().is_dir() {
            continue;
        }
        let to = backup.join("vector-indexes").join(collection.file_name());
        std::fs::create_dir_all(&to)?;
        for file in std::fs::read_dir(collection.path())?.flatten() {
            let path = file.path();
            if path.extension().is_some_and(|e| e == "ivf") {
                std::fs::copy(&path, to.join(file.file_name()))?;
            }
        }
    }
    Ok(())
}

fn list(root: &Path, body: &Value) -> Result<Response> {
    let only = match body.get("id") {
        None | Some(Value::Null) => None,
        Some(_) => Some(existing(root, body)?),
    };
    let mut found = serde_json::Map::new();
    for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let dir = entry.path();
        if only.as_ref().is_some_and(|o| *o != dir) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(dir.join(META)) else {
            continue;
        };
        let Ok(meta) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let Some(id) = meta.get("id").and_then(Value::as_str) else {
            continue;
        };
        let (files, bytes) = usage(&dir);
        found.insert(
            id.to_string(),
            json!({"id": id, "version": meta["version"], "datetime": meta["datetime"],
                "sizeInBytes": bytes, "nrFiles": files, "nrDBServers": 1,
                "available": true, "nrPiecesPresent": 1, "potentiallyInconsistent": false}),
        );
    }
    Ok(Response::ok_result(200, json!({"list": found})))
}

/// Files and bytes under a backup directory (its layout is three levels deep).
fn usage(dir: &Path) -> (u64, u64) {
    let (mut files, mut bytes) = (0, 0);
    let mut stack = vec![(dir.to_path_buf(), 0u8)];
    while let Some((d, depth)) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() && depth < 3 {
                stack.push((entry.path(), depth + 1));
            } else if meta.is_file() {
                files += 1;
                bytes += meta.len();
            }
        }
    }
    (files, bytes)
}

/// `YYYY-MM-DDTHH:MM:SSZ` of seconds since the Unix epoch (proleptic Gregorian calendar).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_795_721_400), "2026-11-26T19:30:00Z");
    }

    #[test]
    fn names_exclude_paths_and_hidden_entries() {
        assert!(valid_name("2026-11-26T19.30.00Z_nightly"));
        assert!(!valid_name("../x"));
        assert!(!valid_name(".partial-x"));
        assert!(!valid_name(""));
    }
}
