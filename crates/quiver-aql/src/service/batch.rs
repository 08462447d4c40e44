//! What a cursor call answers: one batch of rows and what the client needs to ask for the
//! next, as typed values (the HTTP layer writes the JSON body). A query whose top-level
//! `RETURN` passes a traversal's vertices through unchanged (`plan::Produce::Raw`) never
//! parses them: each row is the document's text in a `Value::String` (or null for a missing
//! vertex), flagged by [`CursorBatch::raw_rows`], to be written into the response verbatim.
//! In-process callers that want values get them from [`CursorBatch::into_values`], which
//! parses those rows.

use std::sync::Arc;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use crate::query_extra::QueryExtra;

/// One batch of `POST /_api/cursor` or of its continuations.
#[derive(Clone, Debug)]
pub struct CursorBatch {
    pub rows: Vec<Value>,
    /// The rows are JSON texts (strings) or null, not values.
    pub raw_rows: bool,
    pub has_more: bool,
    /// The cursor to ask for more, while there is more.
    pub id: Option<String>,
    /// The number of the next batch, while there is more.
    pub next_batch_id: Option<u64>,
    /// The number of rows of the whole result, when `count` was asked for.
    pub count: Option<u64>,
    /// Warnings, statistics and profile: with every batch of a materialized cursor, with the
    /// last one of a streaming cursor.
    pub extra: Option<Arc<QueryExtra>>,
    /// The rows come from the query results cache.
    pub cached: bool,
    /// The plan cache entry the query's plan came from (`usePlanCache`), in the first batch.
    pub plan_cache_key: Option<u64>,
}

impl CursorBatch {
    /// The batch with every row a value (raw rows parsed).
    pub fn into_values(mut self) -> Result<CursorBatch> {
        if self.raw_rows {
            for row in self.rows.iter_mut() {
                if let Value::String(text) = row {
                    *row = serde_json::from_str(text).map_err(|e| {
                        Error::with_message(
                            ErrorCode::Internal,
                            format!("stored document is not JSON: {e}"),
                        )
                    })?;
                }
            }
            self.raw_rows = false;
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn raw_rows_are_parsed_for_value_callers() {
        let batch = |raw_rows| CursorBatch {
            rows: vec![
                json!("{\"_key\":\"a\",\"x\":[1,2]}"),
                Value::Null,
                json!("{\"_key\":\"b\"}"),
            ],
            raw_rows,
            has_more: false,
            id: None,
            next_batch_id: None,
            count: None,
            extra: None,
            cached: false,
            plan_cache_key: None,
        };
        let parsed = batch(true).into_values().unwrap();
        assert!(!parsed.raw_rows);
        assert_eq!(
            parsed.rows,
            vec![
                json!({"_key": "a", "x": [1, 2]}),
                Value::Null,
                json!({"_key": "b"})
            ]
        );
        // Without the flag, strings stay strings.
        assert_eq!(batch(false).into_values().unwrap().rows, batch(false).rows);
        // A stored text that is no JSON is an internal error.
        let mut broken = batch(true);
        broken.rows[0] = json!("{not json");
        assert_eq!(broken.into_values().unwrap_err().code, ErrorCode::Internal);
    }
}
