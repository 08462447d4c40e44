//! A collection's storage options (`journalSize`, `waitForSync`, `doCompact`) and the bounds
//! of `journalSize`. The engine alone owns them: [`CollectionOptions::validate`] is the one
//! check, used by the engine on every create and update and by the layers above before they
//! store or report a value ([`crate::Engine::validate_collection_options`]). A value out of
//! range is refused with error 10 (400) naming the bound; a value in range is used as given.
//!
//! Bounds: ArangoDB's minimum of 1 MiB (`journalSize is too small`, error 10), and 1 GiB at
//! most: markers are addressed by 32-bit file offsets, and a compaction result may be several
//! journals long. The lower bound is [`crate::EngineOptions::min_journal_size`], 1 MiB unless
//! an embedding program (the engine's own tests, to seal journals after a few documents)
//! lowers it, never below [`JOURNAL_SIZE_FLOOR`].

use quiver_errors::{Error, ErrorCode, Result};

/// ArangoDB's smallest `journalSize` (1 MiB), the default lower bound.
pub const JOURNAL_SIZE_MIN: u64 = 1 << 20;
/// The largest `journalSize` (1 GiB).
pub const JOURNAL_SIZE_MAX: u64 = 1 << 30;
/// The smallest lower bound an engine may be opened with (4 KiB, one page): below it a
/// journal could not hold its header, one small marker and its footer.
pub const JOURNAL_SIZE_FLOOR: u64 = 4096;

/// Storage options of one collection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionOptions {
    /// Journal size in bytes; `None` = engine default. Affects new journals only.
    pub journal_size: Option<u64>,
    /// Every write to this collection waits for stable storage.
    pub wait_for_sync: bool,
    /// Whether the compactor may rewrite this collection's datafiles.
    pub do_compact: bool,
}

impl Default for CollectionOptions {
    fn default() -> CollectionOptions {
        CollectionOptions {
            journal_size: None,
            wait_for_sync: false,
            do_compact: true,
        }
    }
}

impl CollectionOptions {
    /// Checks the options against their bounds, `min_journal_size` being the lower bound of
    /// `journalSize` ([`JOURNAL_SIZE_MIN`] in a server).
    pub fn validate(&self, min_journal_size: u64) -> Result<()> {
        match self.journal_size {
            Some(size) => check_journal_size(size, min_journal_size),
            None => Ok(()),
        }
    }
}

/// Checks one journal size against `min..=`[`JOURNAL_SIZE_MAX`] (error 10 naming the bound).
pub fn check_journal_size(size: u64, min: u64) -> Result<()> {
    if size < min {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            format!("journalSize is too small (at least {min} bytes)"),
        ));
    }
    if size > JOURNAL_SIZE_MAX {
        return Err(Error::with_message(
            ErrorCode::BadParameter,
            format!("journalSize is too large (at most {JOURNAL_SIZE_MAX} bytes)"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_size(size: u64) -> CollectionOptions {
        CollectionOptions {
            journal_size: Some(size),
            ..CollectionOptions::default()
        }
    }

    #[test]
    fn journal_size_bounds_are_inclusive_and_refused_outside() {
        assert!(with_size(JOURNAL_SIZE_MIN)
            .validate(JOURNAL_SIZE_MIN)
            .is_ok());
        assert!(with_size(JOURNAL_SIZE_MAX)
            .validate(JOURNAL_SIZE_MIN)
            .is_ok());
        for bad in [0, 10, JOURNAL_SIZE_MIN - 1, JOURNAL_SIZE_MAX + 1, u64::MAX] {
            let err = with_size(bad).validate(JOURNAL_SIZE_MIN).unwrap_err();
            assert_eq!(err.code, ErrorCode::BadParameter, "{bad}");
            assert!(
                err.message.starts_with("journalSize is too"),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn a_lowered_minimum_admits_small_journals_and_no_size_means_the_default() {
        assert!(with_size(8192).validate(JOURNAL_SIZE_FLOOR).is_ok());
        assert!(with_size(8192).validate(JOURNAL_SIZE_MIN).is_err());
        assert!(CollectionOptions::default()
            .validate(JOURNAL_SIZE_MIN)
            .is_ok());
    }
}
