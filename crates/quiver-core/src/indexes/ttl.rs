//! The timestamp a ttl index reads from a document: a number of seconds since the Unix epoch
//! or an ISO 8601 date string (UTC unless it carries an offset); anything else never expires.
//! The expiry itself (`Collection::expire_ttl`, the background rounds of `ttl.rs`) compares it
//! plus `expireAfter` with [`now_seconds`].

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// Parses an expiry timestamp: seconds since the epoch, or an ISO 8601 date (UTC unless it
/// carries an offset).
pub(crate) fn timestamp_seconds(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64().filter(|f| f.is_finite() && *f >= 0.0),
        Value::String(text) => {
            if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(text) {
                return Some(dt.timestamp_millis() as f64 / 1000.0);
            }
            for format in [
                "%Y-%m-%dT%H:%M:%S%.f",
                "%Y-%m-%d %H:%M:%S%.f",
                "%Y-%m-%dT%H:%M:%S%.fZ",
            ] {
                if let Ok(dt) = chrono::NaiveDateTime::parse_from_str(text, format) {
                    return Some(dt.and_utc().timestamp_millis() as f64 / 1000.0);
                }
            }
            chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|dt| dt.and_utc().timestamp() as f64)
        }
        _ => None,
    }
}

/// Seconds since the epoch now.
pub(crate) fn now_seconds() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timestamps() {
        assert_eq!(
            timestamp_seconds(&json!(1_700_000_000)),
            Some(1_700_000_000.0)
        );
        assert_eq!(
            timestamp_seconds(&json!("2023-11-14T22:13:20Z")),
            Some(1_700_000_000.0)
        );
        assert_eq!(
            timestamp_seconds(&json!("2023-11-14T22:13:20.500Z")),
            Some(1_700_000_000.5)
        );
        assert_eq!(
            timestamp_seconds(&json!("2023-11-14T23:13:20+01:00")),
            Some(1_700_000_000.0)
        );
        assert_eq!(
            timestamp_seconds(&json!("2023-11-14 22:13:20")),
            Some(1_700_000_000.0)
        );
        assert_eq!(
            timestamp_seconds(&json!("2023-11-14")),
            Some(1_699_920_000.0)
        );
        for never in [json!("soon"), json!(-5), json!(null), json!([1])] {
            assert_eq!(timestamp_seconds(&never), None, "{never}");
        }
    }
}
