//! `/_api/cursor`, `/_api/query*`, `/_api/explain`: AQL, answered by quiver-aql's
//! query service once it is wired in.

use quiver_errors::{Error, ErrorCode, Result};

use crate::{Request, Response, ServerState};

/// Routes the AQL endpoints.
pub fn route(_state: &ServerState, _req: &Request) -> Result<Response> {
    Err(Error::with_message(
        ErrorCode::NotImplemented,
        "AQL is not available in this build",
    ))
}
