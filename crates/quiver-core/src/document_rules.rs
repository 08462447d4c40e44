//! ArangoDB's document rules: what insert (with its overwrite modes), replace, update and
//! remove check and produce — keys and key generation, edge attributes, revision
//! preconditions (`If-Match`, `_rev` with `ignoreRevs`), `versionAttribute`, computed values,
//! schema, unique constraints, `returnNew`/`returnOld` — staged into a write set
//! (`staging.rs`). The same functions serve explicit transactions and auto-commit writes
//! (one-operation transactions, `auto_commit.rs`).

use std::sync::Arc;

use bytes::Bytes;
use quiver_errors::{Error, ErrorCode, Result};
use quiver_types::Revision;
use serde_json::{Map, Value};

use crate::collection::Collection;
use crate::computed::ComputeOn;
use crate::document::{
    decode_stored, decode_with_id, encode_stored, encode_stored_with, item_key, key_of,
    merge_patch, revision_conflict, revision_matches, selector_key, stored_rev_offset,
    unique_violation, validate_edge, validate_edge_ends, write_stored_prefix, EncodedDocument,
};
use crate::options::{OpResult, OverwriteMode, WriteKind, WriteOptions};
use crate::staged_version::EdgeEnds;
use crate::staging::{check_unique, transaction_too_large, Staging};

/// `_from`/`_to` of a validated edge body (None for document collections).
fn edge_ends(coll: &Collection, map: &Map<String, Value>) -> Option<EdgeEnds> {
    if !coll.is_edge() {
        return None;
    }
    let from = map.get("_from")?.as_str()?;
    let to = map.get("_to")?.as_str()?;
    Some((Arc::from(from), Arc::from(to)))
}

fn body_object(doc: Value) -> Result<Map<String, Value>> {
    match doc {
        Value::Object(map) => Ok(map),
        _ => Err(Error::new(ErrorCode::DocumentTypeInvalid)),
    }
}

fn document_not_found() -> Error {
    Error::new(ErrorCode::DocumentNotFound)
}

/// The current revision of a document that must exist (1202), and its body when `with_body`
/// (an empty placeholder otherwise, never decoded by the callers).
fn lookup_for_write(
    st: &Staging,
    coll: &Collection,
    key: &str,
    with_body: bool,
) -> Result<(Revision, Bytes)> {
    if with_body {
        st.lookup(coll.id(), key)?.ok_or_else(document_not_found)
    } else {
        let rev = st
            .lookup_rev(coll.id(), key)?
            .ok_or_else(document_not_found)?;
        Ok((rev, Bytes::new()))
    }
}

fn check_revision(
    coll: &Collection,
    key: &str,
    current: Revision,
    if_match: Option<&str>,
    body_rev: Option<&str>,
    ignore_revs: bool,
) -> Result<()> {
    let expected = if_match.or(if ignore_revs { None } else { body_rev });
    match expected {
        Some(expected) if !revision_matches(expected, current) => {
            Err(revision_conflict(&coll.name(), key, current))
        }
        _ => Ok(()),
    }
}

/// Whether `versionAttribute` keeps the stored document: both documents carry a usable
/// version in that top-level attribute and the incoming one is not higher. As ArangoDB 3.12
/// documents it, only a higher version writes, and a version that is missing, non-numeric or
/// negative on either side never blocks (the write then happens as without the option).
fn version_blocks(
    attribute: Option<&str>,
    incoming: &Map<String, Value>,
    old_body: &Bytes,
) -> Result<bool> {
    let Some(attribute) = attribute else {
        return Ok(false);
    };
    if incoming.get(attribute).and_then(external_version).is_none() {
        return Ok(false);
    }
    let old = decode_stored(old_body)?;
    Ok(version_keeps_stored(attribute, incoming, &old))
}

/// The `versionAttribute` rule on two decoded documents: true when both hold a version in
/// `attribute` and the incoming one is not higher, so the stored document stays. Public for
/// other implementations of the rule (the AQL crate's in-memory test source).
pub fn version_keeps_stored(
    attribute: &str,
    incoming: &Map<String, Value>,
    stored: &Map<String, Value>,
) -> bool {
    match (
        incoming.get(attribute).and_then(external_version),
        stored.get(attribute).and_then(external_version),
    ) {
        (Some(new), Some(old)) => new <= old,
        _ => false,
    }
}

/// The version a `versionAttribute` value stands for: a number that is not negative, rounded
/// down to a whole number (so 2.9 and 2 are the same version). Integers are read exactly so
/// versions beyond 2^53 (e.g. nanosecond timestamps) still compare correctly.
pub(crate) fn external_version(value: &Value) -> Option<u64> {
    if let Some(whole) = value.as_u64() {
        return Some(whole);
    }
    let number = value.as_f64()?;
    // Beyond u64 there is no version (ArangoDB's conversion fails there too), so the write
    // happens; below, `as` rounds toward zero, which is down for non-negative numbers.
    const TWO_POW_64: f64 = 18_446_744_073_709_551_616.0;
    (0.0..TWO_POW_64).contains(&number).then_some(number as u64)
}

/// The result of a write `versionAttribute` skipped. ArangoDB treats it as a no-op write: a
/// success whose new revision is the stored one (`_rev == _oldRev`), with the stored document
/// as both `old` and `new` when they are asked for.
fn unchanged(
    coll: &Collection,
    key: String,
    rev: Revision,
    body: &Bytes,
    opts: &WriteOptions,
) -> Result<OpResult> {
    let want_old = opts.return_old && !opts.silent;
    let want_new = opts.return_new && !opts.silent;
    let stored = decode_old(coll, &key, body, want_old || want_new)?;
    let (old, new) = match (want_old, want_new) {
        (true, true) => (stored.clone(), stored),
        (true, false) => (stored, None),
        (false, _) => (None, stored),
    };
    Ok(OpResult {
        id: format!("{}/{key}", coll.name()),
        key,
        rev,
        old_rev: Some(rev),
        kind: WriteKind::Unchanged,
        new,
        old,
    })
}

fn decode_old(coll: &Collection, key: &str, body: &Bytes, wanted: bool) -> Result<Option<Value>> {
    if wanted {
        decode_with_id(body, &coll.name(), key).map(Some)
    } else {
        Ok(None)
    }
}

/// The key of a new document: its legal, allowed `_key` (1221, 1222), else a generated one;
/// edges must have valid `_from`/`_to` (1233). `true` when the key was generated.
fn insert_key(coll: &Arc<Collection>, map: &Map<String, Value>) -> Result<(String, bool)> {
    choose_key(coll, map.get("_key"), map.get("_from"), map.get("_to"))
}

/// [`insert_key`] with the attributes given separately.
fn choose_key(
    coll: &Arc<Collection>,
    key: Option<&Value>,
    from: Option<&Value>,
    to: Option<&Value>,
) -> Result<(String, bool)> {
    let user_key = match key {
        Some(value) => {
            let key = key_of(value)?.to_string();
            if !coll.key_options().allow_user_keys {
                return Err(Error::with_message(
                    ErrorCode::DocumentKeyUnexpected,
                    "collection does not allow using user-defined keys",
                ));
            }
            Some(key)
        }
        None => None,
    };
    if coll.is_edge() {
        validate_edge_ends(from, to)?;
    }
    match user_key {
        Some(key) => Ok((key, false)),
        None => Ok((coll.generate_key()?, true)),
    }
}

/// The length of every revision handed out since 1970 + 2^40 ms / 2^20: 11 characters of
/// six bits. A revision of another length makes [`PreparedInsert::finish`] encode again.
const REV_TEXT_LEN: usize = 11;

/// The body's `_rev` when the write keeps given revisions (restore mode) and it is one.
fn given_revision(map: &Map<String, Value>, opts: &WriteOptions) -> Option<Revision> {
    if !opts.keep_revisions {
        return None;
    }
    map.get("_rev")
        .and_then(Value::as_str)
        .and_then(Revision::decode)
}

/// A plain insert (`overwriteMode` conflict) prepared without the collection's writer lock:
/// everything that depends only on the request and not on what is stored. Only the
/// existence of the key, unique constraints, the revision and the commit are left for the
/// lock ([`Collection::insert`]).
pub(crate) struct PreparedInsert {
    pub key: String,
    /// The document after computed values (unique-index values are read from it); empty
    /// when prepared from an [`EncodedDocument`] (see [`PreparedInsert::attributes`]).
    map: Map<String, Value>,
    has_map: bool,
    /// `map` in the stored format with a placeholder revision of [`REV_TEXT_LEN`] characters.
    body: Vec<u8>,
    pub edge: Option<EdgeEnds>,
    /// An error the insert reports only if the key does not exist (computed values, schema,
    /// size): for an existing key the conflict (1210) comes first, as on the full path.
    pub deferred: Option<Error>,
    /// The body's `_rev` in restore mode ([`WriteOptions::keep_revisions`]).
    pub given_rev: Option<Revision>,
}

impl PreparedInsert {
    /// The document's attributes: the prepared map, or the encoded body parsed (needed only
    /// when a unique index appeared after the caller decided that none needs them).
    pub fn attributes(&mut self) -> Result<&Map<String, Value>> {
        if !self.has_map {
            self.map = decode_stored(&self.body)?;
            // The placeholder is no attribute of the document.
            self.map.shift_remove("_rev");
            self.has_map = true;
        }
        Ok(&self.map)
    }

    /// The document as the value rules see it: its attributes with `_key` and, in restore
    /// mode, the kept `_rev`.
    fn attributes_with_revision(&mut self) -> Result<Map<String, Value>> {
        self.attributes()?;
        let mut map = std::mem::take(&mut self.map);
        self.has_map = false;
        map.insert("_key".into(), Value::String(self.key.clone()));
        if let Some(rev) = self.given_rev {
            map.insert("_rev".into(), Value::String(rev.encode()));
        }
        Ok(map)
    }

    /// The stored body with its revision filled in.
    pub fn finish(&mut self, rev: Revision) -> Result<Bytes> {
        let text = rev.encode();
        let at = stored_rev_offset(&self.key);
        let mut body = std::mem::take(&mut self.body);
        if text.len() == REV_TEXT_LEN && body.len() >= at + REV_TEXT_LEN {
            body[at..at + REV_TEXT_LEN].copy_from_slice(text.as_bytes());
            Ok(Bytes::from(body))
        } else {
            self.body = body;
            self.attributes()?;
            Ok(encode_stored(&self.key, rev, &self.map))
        }
    }
}

/// Prepares a plain insert (see [`PreparedInsert`]): checks the body and key as
/// [`insert`] does (same errors), chooses the key, applies computed values and the schema
/// and encodes the stored body. A user key is tracked by the key generator here, before the
/// document can become visible.
pub(crate) fn prepare_insert(
    coll: &Arc<Collection>,
    doc: Value,
    opts: &WriteOptions,
) -> Result<PreparedInsert> {
    coll.check_usable()?;
    let map = body_object(doc)?;
    let (key, generated) = insert_key(coll, &map)?;
    prepare_parsed(coll, map, key, generated, opts)
}

/// [`prepare_insert`] for a body already taken apart: its attributes and its checked key
/// (`generated` when the key generator chose it).
fn prepare_parsed(
    coll: &Arc<Collection>,
    mut map: Map<String, Value>,
    key: String,
    generated: bool,
    opts: &WriteOptions,
) -> Result<PreparedInsert> {
    let mut prepared = PreparedInsert {
        key,
        map: Map::new(),
        has_map: true,
        body: Vec::new(),
        edge: None,
        deferred: None,
        given_rev: None,
    };
    // A restore stores documents as they were dumped: no computed value runs (ArangoDB).
    let computed = if opts.keep_revisions {
        Ok(())
    } else {
        coll.apply_computed(ComputeOn::Insert, &prepared.key, &mut map)
    };
    let checked = computed
        .and_then(|()| match coll.compiled_schema() {
            Some(schema) if !opts.skip_document_validation => schema.check_insert(&map),
            _ => Ok(()),
        })
        .and_then(|()| coll.check_index_values(&prepared.key, &map));
    prepared.given_rev = given_revision(&map, opts);
    if let Err(err) = checked {
        prepared.deferred = Some(err);
        return Ok(prepared);
    }
    let body = encode_stored_with(&prepared.key, &[b'0'; REV_TEXT_LEN], &map);
    if prepared.key.len() + 32 + body.len() > coll.settings.max_transaction_size {
        prepared.deferred = Some(transaction_too_large());
        return Ok(prepared);
    }
    if !generated {
        coll.track_key(&prepared.key)?;
    }
    prepared.edge = edge_ends(coll, &map);
    prepared.body = body;
    prepared.map = map;
    Ok(prepared)
}

/// [`prepare_insert`] for a body already encoded by the caller. Only for collections without
/// computed values and (unless skipped) schema: the caller checks
/// [`Collection::takes_encoded`](crate::Collection) first. The body's `_rev` is kept in
/// restore mode ([`WriteOptions::keep_revisions`]).
pub(crate) fn prepare_encoded(
    coll: &Arc<Collection>,
    doc: EncodedDocument,
    opts: &WriteOptions,
) -> Result<PreparedInsert> {
    coll.check_usable()?;
    let (key, generated) = choose_key(coll, doc.key.as_ref(), doc.from.as_ref(), doc.to.as_ref())?;
    let at = stored_rev_offset(&key);
    let mut body = Vec::with_capacity(at + REV_TEXT_LEN + doc.members.len() + 2);
    write_stored_prefix(&mut body, &key, &[b'0'; REV_TEXT_LEN]);
    body.extend_from_slice(&doc.members);
    body.push(b'}');
    let given_rev = match &doc.rev {
        Some(Value::String(rev)) if opts.keep_revisions => Revision::decode(rev),
        _ => None,
    };
    let mut prepared = PreparedInsert {
        key,
        map: Map::new(),
        has_map: false,
        body: Vec::new(),
        edge: None,
        deferred: None,
        given_rev,
    };
    let too_large = prepared.key.len() + 32 + body.len() > coll.settings.max_transaction_size;
    // Kept even when too large: an existing document it replaces is written by the value
    // rules ([`stage_prepared`]), which read the attributes from it.
    prepared.body = body;
    if too_large {
        prepared.deferred = Some(transaction_too_large());
        return Ok(prepared);
    }
    if !generated {
        coll.track_key(&prepared.key)?;
    }
    if coll.is_edge() {
        if let (Some(Value::String(from)), Some(Value::String(to))) = (&doc.from, &doc.to) {
            prepared.edge = Some((Arc::from(from.as_str()), Arc::from(to.as_str())));
        }
    }
    Ok(prepared)
}

/// What [`stage_prepared`] staged: a new document (its result is built once the writer lock
/// is released) or, for `overwriteMode` replace over a stored document, the replace's result.
pub(crate) enum StagedInsert {
    Created(String, Revision, Bytes),
    Written(OpResult),
}

/// Stages a prepared insert (`overwriteMode` conflict or replace, the modes of
/// [`Collection::takes_encoded`](crate::Collection)): a new document through [`stage_new`];
/// with replace, a key that is stored (or staged) already is replaced by the value rules of
/// [`insert`], with their checks and errors.
pub(crate) fn stage_prepared(
    st: &mut Staging,
    coll: &Arc<Collection>,
    mut prepared: PreparedInsert,
    opts: &WriteOptions,
) -> Result<StagedInsert> {
    let replace = opts.overwrite_mode == OverwriteMode::Replace;
    if replace && st.lookup_rev(coll.id(), &prepared.key)?.is_some() {
        let Some((old_rev, old_body)) = st.lookup(coll.id(), &prepared.key)? else {
            unreachable!("the key was just seen staged or stored");
        };
        let map = prepared.attributes_with_revision()?;
        let key = std::mem::take(&mut prepared.key);
        if version_blocks(opts.version_attribute.as_deref(), &map, &old_body)? {
            return unchanged(coll, key, old_rev, &old_body, opts).map(StagedInsert::Written);
        }
        return stage_existing(
            st,
            coll,
            key,
            map,
            (old_rev, &old_body),
            opts,
            WriteKind::Replaced,
        )
        .map(StagedInsert::Written);
    }
    let (rev, body) = stage_new(st, coll, &mut prepared, !replace)?;
    Ok(StagedInsert::Created(
        std::mem::take(&mut prepared.key),
        rev,
        body,
    ))
}

/// Stages a prepared insert of a new document over `st`: the existence check (staged
/// documents first; skipped when the caller has just seen the key absent in `st`), the
/// prepared error if any, unique indexes, the revision. Returns the revision and the stored
/// body.
pub(crate) fn stage_new(
    st: &mut Staging,
    coll: &Arc<Collection>,
    prepared: &mut PreparedInsert,
    probe: bool,
) -> Result<(Revision, Bytes)> {
    if probe && st.lookup_rev(coll.id(), &prepared.key)?.is_some() {
        return Err(unique_violation(&prepared.key));
    }
    if let Some(err) = prepared.deferred.take() {
        return Err(err);
    }
    let unique = if coll.has_unique_indexes() {
        let key = prepared.key.clone();
        check_unique(st, coll, &key, prepared.attributes()?)?
    } else {
        Vec::new()
    };
    let rev = coll.revision_for(prepared.given_rev, None);
    let body = prepared.finish(rev)?;
    let edge = prepared.edge.take();
    st.stage(
        coll,
        &prepared.key,
        Some((rev, body.clone())),
        rev,
        None,
        edge,
        unique,
    )?;
    Ok((rev, body))
}

/// The result of an insert of a new document (`new` decoded from the stored body when
/// `returnNew` asks for it).
pub(crate) fn created(
    coll: &Collection,
    key: String,
    rev: Revision,
    body: &Bytes,
    opts: &WriteOptions,
) -> Result<OpResult> {
    let name = coll.name();
    let new = if opts.return_new && !opts.silent {
        Some(decode_with_id(body, &name, &key)?)
    } else {
        None
    };
    Ok(OpResult::created(format!("{name}/{key}"), key, rev, new))
}

/// Inserts one document (with `overwriteMode` handling) into the staging area. A new
/// document goes through [`prepare_insert`] and [`stage_new`], exactly as an auto-commit
/// insert does.
pub(crate) fn insert(
    st: &mut Staging,
    coll: &Arc<Collection>,
    doc: Value,
    opts: &WriteOptions,
) -> Result<OpResult> {
    st.check_write(coll)?;
    if opts.overwrite_mode == OverwriteMode::Conflict {
        let mut prepared = prepare_insert(coll, doc, opts)?;
        let (rev, body) = stage_new(st, coll, &mut prepared, true)?;
        return created(coll, std::mem::take(&mut prepared.key), rev, &body, opts);
    }
    coll.check_usable()?;
    let mut map = body_object(doc)?;
    let (key, generated) = insert_key(coll, &map)?;
    let Some((old_rev, old_body)) = st.lookup(coll.id(), &key)? else {
        let mut prepared = prepare_parsed(coll, map, key, generated, opts)?;
        let (rev, body) = stage_new(st, coll, &mut prepared, false)?;
        return created(coll, std::mem::take(&mut prepared.key), rev, &body, opts);
    };
    if opts.overwrite_mode != OverwriteMode::Ignore
        && version_blocks(opts.version_attribute.as_deref(), &map, &old_body)?
    {
        return unchanged(coll, key, old_rev, &old_body, opts);
    }
    let kind = match opts.overwrite_mode {
        OverwriteMode::Conflict => return Err(unique_violation(&key)),
        OverwriteMode::Ignore => {
            return Ok(OpResult {
                id: format!("{}/{key}", coll.name()),
                key,
                rev: old_rev,
                old_rev: None,
                kind: WriteKind::Ignored,
                new: None,
                old: None,
            })
        }
        OverwriteMode::Replace => WriteKind::Replaced,
        OverwriteMode::Update => {
            let mut merged = decode_stored(&old_body)?;
            merge_patch(&mut merged, map, opts.keep_null, opts.merge_objects, true);
            map = merged;
            WriteKind::Updated
        }
    };
    stage_existing(st, coll, key, map, (old_rev, &old_body), opts, kind)
}

/// Replaces (`merge == false`) or updates (`merge == true`) one document. `url_key` is the key
/// from the URL (single-document calls); otherwise the body's `_key`/`_id` selects it.
/// `if_match` is the revision the caller expects (single-document calls' `If-Match`).
pub(crate) fn modify(
    st: &mut Staging,
    coll: &Arc<Collection>,
    url_key: Option<&str>,
    doc: Value,
    opts: &WriteOptions,
    if_match: Option<&str>,
    merge: bool,
) -> Result<OpResult> {
    st.check_write(coll)?;
    let map = body_object(doc)?;
    let key = match url_key {
        Some(key) => {
            // An illegal key cannot name a stored document (as ArangoDB: not found).
            quiver_types::validate_key(key).map_err(|_| document_not_found())?;
            key.to_string()
        }
        None => selector_key(&map)?,
    };
    let schema = if opts.skip_document_validation {
        None
    } else {
        coll.compiled_schema()
    };
    // The stored body costs a read; a plain replace only needs the revision.
    let needs_body = merge
        || (opts.return_old && !opts.silent)
        || opts.version_attribute.is_some()
        || schema.is_some();
    let (old_rev, old_body) = lookup_for_write(st, coll, &key, needs_body)?;
    let body_rev = map.get("_rev").and_then(Value::as_str);
    check_revision(coll, &key, old_rev, if_match, body_rev, opts.ignore_revs)?;
    if version_blocks(opts.version_attribute.as_deref(), &map, &old_body)? {
        return unchanged(coll, key, old_rev, &old_body, opts);
    }
    let new_map = if merge {
        let mut merged = decode_stored(&old_body)?;
        merge_patch(&mut merged, map, opts.keep_null, opts.merge_objects, true);
        merged
    } else {
        map
    };
    let kind = if merge {
        WriteKind::Updated
    } else {
        WriteKind::Replaced
    };
    stage_existing(st, coll, key, new_map, (old_rev, &old_body), opts, kind)
}

/// Stages `map` as the new version of the stored document `key` (`old`: its revision and
/// body) — a replace, an update, or an insert that overwrites — after computed values, edge
/// attributes, the schema and unique indexes; the result reports `kind`.
fn stage_existing(
    st: &mut Staging,
    coll: &Arc<Collection>,
    key: String,
    mut map: Map<String, Value>,
    (old_rev, old_body): (Revision, &Bytes),
    opts: &WriteOptions,
    kind: WriteKind,
) -> Result<OpResult> {
    let on = if kind == WriteKind::Updated {
        ComputeOn::Update
    } else {
        ComputeOn::Replace
    };
    if !opts.keep_revisions {
        coll.apply_computed(on, &key, &mut map)?;
    }
    if coll.is_edge() {
        validate_edge(&map)?;
    }
    if !opts.skip_document_validation {
        if let Some(schema) = coll.compiled_schema() {
            schema.check_modify(&map, || decode_stored(old_body))?;
        }
    }
    coll.check_index_values(&key, &map)?;
    let unique = check_unique(st, coll, &key, &map)?;
    let rev = coll.revision_for(given_revision(&map, opts), Some(old_rev));
    let body = encode_stored(&key, rev, &map);
    let name = coll.name();
    let old = decode_old(coll, &key, old_body, opts.return_old && !opts.silent)?;
    let new = if opts.return_new && !opts.silent {
        Some(decode_with_id(&body, &name, &key)?)
    } else {
        None
    };
    let edge = edge_ends(coll, &map);
    st.stage(
        coll,
        &key,
        Some((rev, body)),
        rev,
        Some(old_rev),
        edge,
        unique,
    )?;
    Ok(OpResult {
        id: format!("{name}/{key}"),
        key,
        rev,
        old_rev: Some(old_rev),
        kind,
        new,
        old,
    })
}

/// Removes one document addressed by `item` (a key, a handle or an object with `_key`);
/// `if_match` as for [`modify`].
pub(crate) fn remove(
    st: &mut Staging,
    coll: &Arc<Collection>,
    item: &Value,
    opts: &WriteOptions,
    if_match: Option<&str>,
) -> Result<OpResult> {
    st.check_write(coll)?;
    let (key, body_rev) = item_key(item)?;
    let (old_rev, old_body) = lookup_for_write(st, coll, &key, opts.return_old && !opts.silent)?;
    check_revision(
        coll,
        &key,
        old_rev,
        if_match,
        body_rev.as_deref(),
        opts.ignore_revs,
    )?;
    let old = decode_old(coll, &key, &old_body, opts.return_old && !opts.silent)?;
    let removal_rev = coll.next_revision();
    st.stage(
        coll,
        &key,
        None,
        removal_rev,
        Some(old_rev),
        None,
        Vec::new(),
    )?;
    Ok(OpResult {
        id: format!("{}/{key}", coll.name()),
        key,
        rev: old_rev,
        old_rev: None,
        kind: WriteKind::Removed,
        new: None,
        old,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(key: &str, members: &[u8]) -> PreparedInsert {
        let mut body = Vec::new();
        write_stored_prefix(&mut body, key, &[b'0'; REV_TEXT_LEN]);
        body.extend_from_slice(members);
        body.push(b'}');
        PreparedInsert {
            key: key.to_string(),
            map: Map::new(),
            has_map: false,
            body,
            edge: None,
            deferred: None,
            given_rev: None,
        }
    }

    #[test]
    fn finish_writes_the_revision_over_the_placeholder_or_encodes_again() {
        let members = br#","a":[1,"x"],"b":{"c":null}"#;
        let current = Revision(1_763_800_000_000 << 20);
        assert_eq!(current.encode().len(), REV_TEXT_LEN);
        let body = prepared("k1", members).finish(current).unwrap();
        let mut expected = Map::new();
        expected.insert("a".into(), serde_json::json!([1, "x"]));
        expected.insert("b".into(), serde_json::json!({"c": null}));
        assert_eq!(body, encode_stored("k1", current, &expected));
        // A revision of another length (a clock far in the past) cannot be patched in: the
        // body is encoded again from its attributes.
        let short = Revision(12345);
        assert_ne!(short.encode().len(), REV_TEXT_LEN);
        let body = prepared("k2", members).finish(short).unwrap();
        assert_eq!(body, encode_stored("k2", short, &expected));
        // The attributes of an encoded body, for unique checks.
        let mut p = prepared("k3", members);
        assert_eq!(p.attributes().unwrap()["a"], serde_json::json!([1, "x"]));
    }
}
