//! Identifier types and naming rules shared by every layer: document revisions (ArangoDB's
//! hybrid-logical-clock `_rev`), document keys, document handles and database/collection names.

pub mod names;
pub mod order;

pub use names::{
    is_system_name, validate_analyzer_name, validate_collection_name, validate_database_name,
    validate_index_name, validate_view_name, NamingConvention, ANALYZER_NAME_LENGTH_MAX,
    COLLECTION_NAME_LENGTH_MAX, DATABASE_NAME_LENGTH_MAX_EXTENDED,
    DATABASE_NAME_LENGTH_MAX_TRADITIONAL, INDEX_NAME_LENGTH_MAX, VIEW_NAME_LENGTH_MAX_EXTENDED,
    VIEW_NAME_LENGTH_MAX_TRADITIONAL,
};

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use quiver_errors::{Error, ErrorCode, Result};

/// ArangoDB's alphabet for encoding revisions: a URL-safe base64 whose order matches the
/// numeric order of the digits ('-' is 0, '_' is 1, then A-Z, a-z, 0-9).
const REVISION_ALPHABET: &[u8; 64] =
    b"-_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// A document revision: a hybrid-logical-clock value (milliseconds since the Unix epoch shifted
/// left by 20 bits plus a 20-bit counter), shown to clients as ArangoDB's `_rev` string such as
/// `_hZk3Ld2---`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Revision(pub u64);

impl Revision {
    /// The `_rev` string: base64 digits, most significant first, without leading zero digits.
    pub fn encode(self) -> String {
        self.encode_into(&mut [0u8; 11]).to_owned()
    }

    /// [`Revision::encode`] into a caller's buffer (eleven digits hold any `u64`), for hot
    /// paths that copy the text on anyway, e.g. into an `ETag` header.
    pub fn encode_into(self, buf: &mut [u8; 11]) -> &str {
        let mut pos = buf.len();
        let mut t = self.0;
        while t > 0 {
            pos -= 1;
            buf[pos] = REVISION_ALPHABET[(t & 0x3f) as usize];
            t >>= 6;
        }
        // Every byte comes from the ASCII alphabet.
        std::str::from_utf8(&buf[pos..]).unwrap_or_default()
    }

    /// Parses a `_rev` string. Accepts ArangoDB's encoding and, as ArangoDB does for old
    /// clients, a plain decimal number.
    pub fn decode(text: &str) -> Option<Revision> {
        if text.is_empty() || text.len() > 20 {
            return None;
        }
        if text.len() <= 11 {
            let mut value: u64 = 0;
            let mut ok = true;
            for &byte in text.as_bytes() {
                match REVISION_ALPHABET.iter().position(|&c| c == byte) {
                    Some(digit) => value = (value << 6) | digit as u64,
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            if ok && !text.bytes().all(|b| b.is_ascii_digit()) {
                return Some(Revision(value));
            }
        }
        text.parse::<u64>().ok().map(Revision)
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

/// The hybrid logical clock that hands out revisions. Revisions strictly increase even when the
/// wall clock goes backwards; recovery raises the clock past every revision found on disk with
/// [`Hlc::observe`].
#[derive(Debug, Default)]
pub struct Hlc {
    last: AtomicU64,
}

impl Hlc {
    /// A clock that has seen nothing yet.
    pub fn new() -> Hlc {
        Hlc::default()
    }

    fn physical_now() -> u64 {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        millis << 20
    }

    /// A new revision, greater than every revision handed out or observed before.
    pub fn next(&self) -> Revision {
        let physical = Self::physical_now();
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let candidate = if physical > last { physical } else { last + 1 };
            match self.last.compare_exchange_weak(
                last,
                candidate,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Revision(candidate),
                Err(actual) => last = actual,
            }
        }
    }

    /// Raises the clock so that later revisions are greater than `seen`.
    pub fn observe(&self, seen: Revision) {
        self.last.fetch_max(seen.0, Ordering::AcqRel);
    }

    /// The largest revision handed out or observed.
    pub fn current(&self) -> Revision {
        Revision(self.last.load(Ordering::Acquire))
    }
}

/// The longest document key ArangoDB accepts, in bytes.
pub const KEY_LENGTH_MAX: usize = 254;

/// Whether `byte` may appear in a document key.
pub fn is_key_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"_-:.@()+,=;$!*'%".contains(&byte)
}

/// Checks a user-supplied `_key` (error 1221 "illegal document key" otherwise).
pub fn validate_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > KEY_LENGTH_MAX || !key.bytes().all(is_key_byte) {
        return Err(Error::new(ErrorCode::DocumentKeyBad));
    }
    Ok(())
}

/// A document handle `collection/key` split into its parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocumentId<'a> {
    /// The collection name (or numeric id, for old clients).
    pub collection: &'a str,
    /// The document key.
    pub key: &'a str,
}

impl<'a> DocumentId<'a> {
    /// Splits `collection/key`; error 1205 "illegal document identifier" if it is not one.
    pub fn parse(handle: &'a str) -> Result<DocumentId<'a>> {
        let bad = || Error::new(ErrorCode::DocumentHandleBad);
        let (collection, key) = handle.split_once('/').ok_or_else(bad)?;
        if collection.is_empty() || validate_key(key).is_err() {
            return Err(bad());
        }
        Ok(DocumentId { collection, key })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn encode_into_agrees_with_encode() {
        for rev in [0, 1, 63, 64, u64::MAX, 0x0123_4567_89ab_cdef] {
            let mut buf = [0u8; 11];
            assert_eq!(Revision(rev).encode_into(&mut buf), Revision(rev).encode());
        }
        assert_eq!(Revision(u64::MAX).encode().len(), 11);
    }

    #[test]
    fn revision_encoding_matches_arangodb_examples() {
        assert_eq!(Revision(0).encode(), "");
        assert_eq!(Revision(1).encode(), "_");
        assert_eq!(Revision(64).encode(), "_-");
        // ArangoDB revisions look like `_hZk3Ld2---`: 11 digits for current clock values.
        let rev = Hlc::new().next();
        assert_eq!(rev.encode().len(), 11);
        assert!(rev.encode().starts_with('_'));
    }

    proptest! {
        #[test]
        fn revision_round_trips(value in 1u64..u64::MAX) {
            let text = Revision(value).encode();
            prop_assert_eq!(Revision::decode(&text), Some(Revision(value)));
        }

        #[test]
        fn revision_order_matches_string_order_for_equal_lengths(a in (1u64 << 60)..u64::MAX, b in (1u64 << 60)..u64::MAX) {
            let (ta, tb) = (Revision(a).encode(), Revision(b).encode());
            prop_assert_eq!(ta.len(), tb.len());
            prop_assert_eq!(a.cmp(&b), ta.as_bytes().iter().map(|c| REVISION_ALPHABET.iter().position(|x| x == c)).cmp(tb.as_bytes().iter().map(|c| REVISION_ALPHABET.iter().position(|x| x == c))));
        }
    }

    #[test]
    fn revision_decode_rejects_garbage() {
        assert_eq!(Revision::decode(""), None);
        assert_eq!(Revision::decode("abc def"), None);
        assert_eq!(Revision::decode("12345"), Some(Revision(12345)));
    }

    #[test]
    fn hlc_is_strictly_monotonic_and_observes() {
        let clock = Hlc::new();
        let mut last = clock.next();
        for _ in 0..10_000 {
            let next = clock.next();
            assert!(next > last);
            last = next;
        }
        let far = Revision(last.0 + (1 << 40));
        clock.observe(far);
        assert!(clock.next() > far);
    }

    #[test]
    fn key_rules() {
        for good in ["a", "A-b_c:1.2@x(y)+z,=;$!*'%", &"k".repeat(254)] {
            assert!(validate_key(good).is_ok(), "{good}");
        }
        for bad in ["", "a/b", "a b", "ä", &"k".repeat(255), "a\u{0}"] {
            assert_eq!(
                validate_key(bad).unwrap_err().code,
                ErrorCode::DocumentKeyBad
            );
        }
    }

    #[test]
    fn document_handles() {
        let id = DocumentId::parse("users/alice").unwrap();
        assert_eq!((id.collection, id.key), ("users", "alice"));
        for bad in ["users", "/alice", "users/", "users/a b"] {
            assert_eq!(
                DocumentId::parse(bad).unwrap_err().code,
                ErrorCode::DocumentHandleBad
            );
        }
    }
}
