//! `quiver backup create|list|restore|delete`: arangobackup's operations, sent to the
//! server's `/_admin/backup/*` API.

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};

use crate::options::BackupOptions;

/// Runs one operation and prints its outcome; returns the ids it created, listed or deleted.
pub fn run(options: &BackupOptions) -> Result<Vec<String>> {
    let client = options.server.connection()?.client();
    let op = options.operation.as_str();
    let mut body = json!({});
    if let Some(label) = &options.label {
        body["label"] = json!(label);
    }
    match (op, &options.identifier) {
        ("restore" | "delete", None) => {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("'{op}' needs --identifier"),
            ))
        }
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
