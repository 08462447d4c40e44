//! Options of document operations and their results.

use quiver_errors::{Error, ErrorCode, Result};
use quiver_storage::CommitTicket;
use quiver_types::Revision;
use serde_json::{Map, Value};

/// What an insert does when a document with the same `_key` exists (`overwriteMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OverwriteMode {
    /// Fail with 409/1210 "unique constraint violated" (the default; `overwrite=false`).
    #[default]
    Conflict,
    /// Replace the stored document (`overwrite=true`).
    Replace,
    /// Merge like an update, honouring `keep_null` and `merge_objects`.
    Update,
    /// Keep the stored document and report its meta data; never returns `old`/`new`.
    Ignore,
}

impl OverwriteMode {
    /// Parses `overwriteMode` (`ignore`, `replace`, `update`, `conflict`); error 10 otherwise.
    pub fn parse(text: &str) -> Result<OverwriteMode> {
        match text {
            "conflict" => Ok(OverwriteMode::Conflict),
            "replace" => Ok(OverwriteMode::Replace),
            "update" => Ok(OverwriteMode::Update),
            "ignore" => Ok(OverwriteMode::Ignore),
            _ => Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("invalid overwriteMode '{text}'"),
            )),
        }
    }
}

/// The options of a document write: insert, replace, update and remove alike (ArangoDB's
/// `OperationOptions`). One type, parsed once per layer (the HTTP server's
/// `api::write_options`, AQL's `OPTIONS {…}`) and handed down unchanged; each operation reads
/// the fields that concern it and ignores the others.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// Wait for stable storage. The engine adds the collection's `waitForSync` to every batch
    /// it commits.
    pub wait_for_sync: bool,
    /// Insert: behaviour on an existing `_key`.
    pub overwrite_mode: OverwriteMode,
    /// Update (and insert with `OverwriteMode::Update`): keep attributes set to `null`
    /// (default true).
    pub keep_null: bool,
    /// Update (and insert with `OverwriteMode::Update`): merge nested objects (default true).
    pub merge_objects: bool,
    /// Put the complete new document into the result.
    pub return_new: bool,
    /// Put the previous document into the result (replaced, updated or removed; ignored for
    /// plain inserts).
    pub return_old: bool,
    /// The caller will not look at results; the core skips building `new`/`old`.
    pub silent: bool,
    /// Replace, update, remove: when false, a `_rev` in the body (or in each array item) must
    /// equal the stored revision (412/1200 otherwise). Default true.
    pub ignore_revs: bool,
    /// Replace, update, remove: `If-Match`, the stored revision must equal this (412/1200
    /// otherwise). Accepts the header value as sent (bare, `"…"` or `'…'`). Single-document
    /// calls only; multi-document calls ignore it.
    pub if_match: Option<String>,
    /// `versionAttribute` (external versioning, a top-level attribute name): when the incoming
    /// document and the stored one both hold a non-negative number in this attribute and the
    /// incoming one, rounded down, is not higher than the stored one, rounded down, a
    /// replace/update (or an insert with `overwriteMode` replace/update) keeps the stored
    /// document without an error, as a no-op write: `_rev == _oldRev` (the stored revision),
    /// the stored document as `old`/`new` when asked for, kind [`WriteKind::Unchanged`].
    pub version_attribute: Option<String>,
    /// `skipDocumentValidation`: do not apply the collection's schema.
    pub skip_document_validation: bool,
    /// Multi-document inserts only: fail the whole request with the first item's error and
    /// write nothing (the import API's `complete=true`). Otherwise items are independent.
    pub all_or_nothing: bool,
    /// Restore mode (`restore-data`, ArangoDB's `isRestore`): a valid `_rev` in the body
    /// becomes the written document's revision instead of a new one from the clock; the
    /// clock is raised past it so that later writes get larger revisions.
    pub keep_revisions: bool,
}

impl WriteOptions {
    /// ArangoDB's defaults (`keepNull`, `mergeObjects` and `ignoreRevs` true, everything else
    /// off).
    pub fn new() -> WriteOptions {
        WriteOptions {
            keep_null: true,
            merge_objects: true,
            ignore_revs: true,
            ..WriteOptions::default()
        }
    }
}

/// The options of an insert: [`WriteOptions`] under the name the insert functions use.
pub type InsertOptions = WriteOptions;
/// The options of a replace or update: [`WriteOptions`].
pub type ModifyOptions = WriteOptions;
/// The options of a remove: [`WriteOptions`].
pub type RemoveOptions = WriteOptions;

/// What a successful write did (import counters: created / updated / ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteKind {
    /// A new document was stored.
    Created,
    /// An existing document was replaced (replace, or insert with `overwriteMode=replace`).
    Replaced,
    /// An existing document was merged (update, or insert with `overwriteMode=update`).
    Updated,
    /// Insert with `overwriteMode=ignore` found the key and left the document alone.
    Ignored,
    /// `versionAttribute` kept the stored document (a no-op write: same revision, reported
    /// like a successful replace/update, as ArangoDB does).
    Unchanged,
    /// The document was removed.
    Removed,
}

/// The result of one successful document write.
#[derive(Clone, Debug, PartialEq)]
pub struct OpResult {
    /// `collection/key`, always with the collection's name.
    pub id: String,
    /// The document key.
    pub key: String,
    /// The new revision (for removals and ignored inserts: the stored document's revision).
    pub rev: Revision,
    /// The previous revision when an existing document was replaced or updated.
    pub old_rev: Option<Revision>,
    /// What happened.
    pub kind: WriteKind,
    /// The complete new document when requested (`returnNew`).
    pub new: Option<Value>,
    /// The previous document when requested (`returnOld`) and one existed.
    pub old: Option<Value>,
}

impl OpResult {
    /// The result of inserting a new document (`new` when `returnNew` asked for it).
    pub fn created(id: String, key: String, rev: Revision, new: Option<Value>) -> OpResult {
        OpResult {
            id,
            key,
            rev,
            old_rev: None,
            kind: WriteKind::Created,
            new,
            old: None,
        }
    }

    /// The success object of the HTTP API: `_id`, `_key`, `_rev`, `_oldRev` when set, then
    /// `new` and `old` when present.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("_id".into(), self.id.clone().into());
        map.insert("_key".into(), self.key.clone().into());
        map.insert("_rev".into(), self.rev.encode().into());
        if let Some(old_rev) = self.old_rev {
            map.insert("_oldRev".into(), old_rev.encode().into());
        }
        if let Some(new) = &self.new {
            map.insert("new".into(), new.clone());
        }
        if let Some(old) = &self.old {
            map.insert("old".into(), old.clone());
        }
        Value::Object(map)
    }

    /// Appends [`OpResult::to_json`] serialized to `out`, without building a `Value` for the
    /// common case (no `new`/`old`).
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"_id\":");
        let _ = serde_json::to_writer(&mut *out, &self.id);
        out.extend_from_slice(b",\"_key\":\"");
        out.extend_from_slice(self.key.as_bytes());
        out.extend_from_slice(b"\",\"_rev\":\"");
        out.extend_from_slice(self.rev.encode().as_bytes());
        out.push(b'"');
        if let Some(old_rev) = self.old_rev {
            out.extend_from_slice(b",\"_oldRev\":\"");
            out.extend_from_slice(old_rev.encode().as_bytes());
            out.push(b'"');
        }
        if let Some(new) = &self.new {
            out.extend_from_slice(b",\"new\":");
            let _ = serde_json::to_writer(&mut *out, new);
        }
        if let Some(old) = &self.old {
            out.extend_from_slice(b",\"old\":");
            let _ = serde_json::to_writer(&mut *out, old);
        }
        out.push(b'}');
    }
}

/// A committed write whose durability may still be pending.
///
/// The write is already visible to every reader when this is returned. `wait`/`wait_async`
/// block until it is durable as requested (on stable storage when [`Committed::synced`],
/// handed to the OS otherwise) and then yield the value. Dropping it without waiting is
/// allowed; the write stays committed.
#[must_use = "wait for durability before acknowledging the write"]
pub struct Committed<T> {
    value: T,
    synced: bool,
    ticket: Option<CommitTicket>,
}

impl<T: std::fmt::Debug> std::fmt::Debug for Committed<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Committed")
            .field("value", &self.value)
            .field("synced", &self.synced)
            .finish_non_exhaustive()
    }
}

impl<T> Committed<T> {
    /// The one rule for [`Committed::synced`]: a write that committed a batch is synced when
    /// the engine's ticket says so (the engine joins the written collections' `waitForSync`
    /// to the batch's own flag at commit); a write that stored nothing (an ignored insert, a
    /// `versionAttribute` no-op, an operation staged in a transaction) is synced when
    /// `unwritten` says so.
    pub(crate) fn new(
        value: T,
        ticket: Option<CommitTicket>,
        unwritten: impl FnOnce() -> bool,
    ) -> Committed<T> {
        let synced = match &ticket {
            Some(ticket) => ticket.needs_sync(),
            None => unwritten(),
        };
        Committed {
            value,
            synced,
            ticket,
        }
    }

    /// The same write with its value transformed by `f`, which may fail (the write stays
    /// committed then).
    pub(crate) fn try_map<U>(self, f: impl FnOnce(T) -> Result<U>) -> Result<Committed<U>> {
        Ok(Committed {
            value: f(self.value)?,
            synced: self.synced,
            ticket: self.ticket,
        })
    }

    /// The value without waiting for durability (for writes staged in a transaction, which
    /// have none of their own).
    pub fn into_value(self) -> T {
        self.value
    }

    /// The same write with its value transformed.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Committed<U> {
        Committed {
            value: f(self.value),
            synced: self.synced,
            ticket: self.ticket,
        }
    }

    /// Whether the write waits for stable storage (request `waitForSync` or the collection's
    /// property): the HTTP layer answers 201 (200 for DELETE) instead of 202.
    pub fn synced(&self) -> bool {
        self.synced
    }

    /// The value, before durability is confirmed.
    pub fn value(&self) -> &T {
        &self.value
    }

    /// Blocks until the write is durable; errors are the engine's I/O errors.
    pub fn wait(self) -> Result<T> {
        if let Some(ticket) = self.ticket {
            ticket.wait()?;
        }
        Ok(self.value)
    }

    /// Like [`Committed::wait`] without blocking a tokio worker.
    pub async fn wait_async(self) -> Result<T> {
        if let Some(ticket) = self.ticket {
            ticket.wait_async().await?;
        }
        Ok(self.value)
    }

    /// The value and the engine ticket (None when nothing was written).
    pub fn into_parts(self) -> (T, Option<CommitTicket>) {
        (self.value, self.ticket)
    }
}
