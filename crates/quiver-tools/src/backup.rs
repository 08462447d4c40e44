//! `quiver backup create|list|restore|delete`: arangobackup's operations, sent to the
//! server's `/_admin/backup/*` API. A running server does not restore in place, so
//! `restore --database.directory D --target-directory T` copies the backup `D/backups/<id>`
//! into the empty directory `T` without contacting the server; starting a server on `T`
//! restores the backed-up state and leaves the backup itself untouched.

use std::path::Path;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::options::BackupOptions;

/// Runs one operation and prints its outcome; returns the ids it created, listed or deleted.
pub fn run(options: &BackupOptions) -> Result<Vec<String>> {
    if let ("restore", Some(data), Some(target), Some(id)) = (
        options.operation.as_str(),
        &options.database_directory,
        &options.target_directory,
        &options.identifier,
    ) {
        // An id names a directory under backups/, never a path elsewhere.
        if id.is_empty() || id.starts_with('.') || id.contains(['/', '\\']) {
            return Err(bad(&format!("'{id}' is not a backup id")));
        }
        let files = restore_copy(&data.join("backups").join(id), target)?;
        println!(
            "restored backup {id} into {} ({files} files)",
            target.display()
        );
        return Ok(vec![id.clone()]);
    }
    if options.database_directory.is_some() || options.target_directory.is_some() {
        return Err(bad(
            "--database.directory and --target-directory go together, with --identifier, for restore",
        ));
    }
    let client = options.server.connection()?.client();
    let op = options.operation.as_str();
    let mut body = json!({});
    if let Some(label) = &options.label {
        body["label"] = json!(label);
    }
    match (op, &options.identifier) {
        ("restore" | "delete", None) => return Err(bad(&format!("'{op}' needs --identifier"))),
        (_, Some(id)) => body["id"] = json!(id),
        _ => {}
    }
    let reply = client.json("POST", None, &format!("/_admin/backup/{op}"), &body)?;
    let result = reply.get("result").cloned().unwrap_or(Value::Null);
    let ids: Vec<String> = match op {
        "create" => vec![result["id"].as_str().unwrap_or_default().to_string()],
        "list" => result["list"]
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default(),
        _ => options.identifier.iter().cloned().collect(),
    };
    match op {
        "create" => println!("created backup {}", ids[0]),
        "list" => {
            for id in &ids {
                let entry = &result["list"][id];
                println!(
                    "{id} {} {} bytes {} files",
                    entry["datetime"].as_str().unwrap_or(""),
                    entry["sizeInBytes"],
                    entry["nrFiles"]
                );
            }
        }
        _ => println!("{op}d backup {}", ids.join(", ")),
    }
    Ok(ids)
}

fn bad(message: &str) -> Error {
    Error::with_message(ErrorCode::BadParameter, message)
}

/// Copies the backup directory `source` (it must hold `backup.json`) into `target`, which must
/// be missing or empty; returns the number of files copied. Copies, never hard links: the
/// restored server writes to its files and the backup must stay as it was. Hand-written
/// because it is a plain walk of a directory tree a few levels deep; no link or special file
/// is followed (the engine writes none).
pub fn restore_copy(source: &Path, target: &Path) -> Result<u64> {
    if !source.join("backup.json").is_file() {
        return Err(Error::with_message(
            ErrorCode::HttpNotFound,
            format!("no backup at {}", source.display()),
        ));
    }
    if target.exists() {
        let mut entries = std::fs::read_dir(target).map_err(|e| io(target, e))?;
        if entries.next().is_some() {
            return Err(bad(&format!(
                "the target directory {} is not empty",
                target.display()
            )));
        }
    }
    copy_tree(source, target)
}

fn copy_tree(source: &Path, target: &Path) -> Result<u64> {
    std::fs::create_dir_all(target).map_err(|e| io(target, e))?;
    let mut files = 0;
    for entry in std::fs::read_dir(source).map_err(|e| io(source, e))? {
        let entry = entry.map_err(|e| io(source, e))?;
        let kind = entry.file_type().map_err(|e| io(&entry.path(), e))?;
        let to = target.join(entry.file_name());
        if kind.is_dir() {
            files += copy_tree(&entry.path(), &to)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &to).map_err(|e| io(&entry.path(), e))?;
            files += 1;
        } else {
            return Err(bad(&format!(
                "{} is neither a file nor a directory",
                entry.path().display()
            )));
        }
    }
    Ok(files)
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::with_message(ErrorCode::IoError, format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backup_is_copied_into_an_empty_directory_only() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("backups").join("b1");
        std::fs::create_dir_all(source.join("engine")).unwrap();
        std::fs::write(source.join("backup.json"), b"{}").unwrap();
        std::fs::write(source.join("engine").join("000001.data"), b"rows").unwrap();

        let target = dir.path().join("restored");
        assert_eq!(restore_copy(&source, &target).unwrap(), 2);
        let copied = std::fs::read(target.join("engine").join("000001.data")).unwrap();
        assert_eq!(copied, b"rows");
        // A copy, not a link: writing the restored file leaves the backup as taken.
        std::fs::write(target.join("engine").join("000001.data"), b"changed").unwrap();
        let kept = std::fs::read(source.join("engine").join("000001.data")).unwrap();
        assert_eq!(kept, b"rows");

        let again = restore_copy(&source, &target).unwrap_err();
        assert_eq!(again.code, ErrorCode::BadParameter, "{}", again.message);
        let empty = dir.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        assert_eq!(restore_copy(&source, &empty).unwrap(), 2);
        let missing = restore_copy(
            &dir.path().join("backups").join("nope"),
            &dir.path().join("x"),
        );
        assert_eq!(missing.unwrap_err().code, ErrorCode::HttpNotFound);
    }
}
