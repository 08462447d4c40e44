//! TEMP

use crate::CollectionOptions;
use quiver_errors::{Error, ErrorCode, Result};

/// Smallest journal the engine creates (ArangoDB's minimum is 1 MiB; tests go lower).
pub(super) const MIN_JOURNAL_SIZE: u64 = 4096;

pub(super) fn validate_options(o: &CollectionOptions) -> Result<()> {
    if let Some(size) = o.journal_size {
        if !(MIN_JOURNAL_SIZE..=(1 << 31)).contains(&size) {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("journalSize must be between {MIN_JOURNAL_SIZE} bytes and 2 GiB"),
            ));
        }
    }
    Ok(())
}
