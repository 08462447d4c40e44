//! The JSON-in/JSON-out query service behind `/_api/cursor`, `/_api/explain`, `/_api/query`.
//!
//! Every method takes the database name and the parsed request body (use `Value::Null` when
//! the request had no body) and returns `(http_status, response_body)` for success or a
//! `quiver_errors::Error` that the HTTP layer turns into ArangoDB's error envelope.

use std::sync::Arc;

use quiver_errors::{Error, ErrorCode, Result};
use serde_json::Value;

use crate::source::DataSource;

/// `(HTTP status, JSON body)` of a successful call.
pub type ServiceReply = (u16, Value);

/// Query execution, cursors and the query registry of one server.
pub struct QueryService {
    #[allow(dead_code)]
    source: Arc<dyn DataSource>,
}

impl QueryService {
    /// A service reading and writing through `source` (quiver-core in the server, the
    /// in-memory source in tests).
    pub fn new(source: Arc<dyn DataSource>) -> QueryService {
        QueryService { source }
    }

    /// `POST /_api/cursor`.
    pub fn create_cursor(&self, _db: &str, _body: Value) -> Result<ServiceReply> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// `POST|PUT /_api/cursor/{id}` (`batch_id` None) and `POST /_api/cursor/{id}/{batchId}`.
    pub fn next_batch(
        &self,
        _db: &str,
        _id: &str,
        _batch_id: Option<&str>,
    ) -> Result<ServiceReply> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// `DELETE /_api/cursor/{id}`.
    pub fn delete_cursor(&self, _db: &str, _id: &str) -> Result<ServiceReply> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// `POST /_api/explain`.
    pub fn explain(&self, _db: &str, _body: Value) -> Result<ServiceReply> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// `POST /_api/query` (parse without executing).
    pub fn parse(&self, _db: &str, _body: Value) -> Result<ServiceReply> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// `GET /_api/query/current`.
    pub fn current(&self, _db: &str) -> Result<ServiceReply> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// `GET /_api/query/slow`.
    pub fn slow(&self, _db: &str) -> Result<ServiceReply> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// `DELETE /_api/query/slow`.
    pub fn clear_slow(&self, _db: &str) -> Result<ServiceReply> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// `DELETE /_api/query/{id}`.
    pub fn kill(&self, _db: &str, _id: &str) -> Result<ServiceReply> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// `GET /_api/query/properties`.
    pub fn properties(&self, _db: &str) -> Result<ServiceReply> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// `PUT /_api/query/properties`.
    pub fn set_properties(&self, _db: &str, _body: Value) -> Result<ServiceReply> {
        Err(Error::new(ErrorCode::NotImplemented))
    }

    /// `GET /_api/query/rules`.
    pub fn rules(&self) -> Result<ServiceReply> {
        Err(Error::new(ErrorCode::NotImplemented))
    }
}
