//! The index of one view: a tantivy index in the view's directory with one text field of
//! encoded terms (`encode.rs`), the document's identity (`collection id/key`, stored) and its
//! collection (to drop a link's documents at once). Writes are buffered in tantivy's writer
//! and become searchable at [`ViewIndex::commit`], whose payload records what the commit
//! covers; scores are computed here from the postings (`scoring.rs`, with the fields'
//! statistics cached per segment by `field_stats.rs`), not by tantivy.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use quiver_errors::{Error, ErrorCode, Result};
use tantivy::collector::Count;
use tantivy::directory::MmapDirectory;
use tantivy::indexer::NoMergePolicy;
use tantivy::postings::Postings;
use tantivy::query::{BooleanQuery, EnableScoring, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value as _, FAST, STORED,
};
use tantivy::{
    DocAddress, DocId, DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, Searcher,
    TantivyDocument, Term, TERMINATED,
};

use super::document::{AnalyzerSource, TermAt};
use super::encode;
use super::field_stats::{FieldStatsCache, SegmentFieldStats};
use super::matched_docs::MatchedDocs;
use super::query::SearchQuery;
use super::scoring::{FieldStats, Scorer};
use super::stored_columns::StoredColumns;
use super::term_stream::{self, TermsTokenizer};
use super::tier_merge::{TierMergePolicy, TierOptions};
use super::top_scores::{BestScores, ScoreOrder};

/// Bytes each of tantivy's indexing threads may buffer before it writes a segment on its own
/// (tantivy allocates it as documents arrive; an idle index holds none of it).
const WRITER_MEMORY_PER_THREAD: usize = 64 << 20;

/// Indexing threads of one index at most (each builds its own segments).
const MAX_WRITER_THREADS: usize = 4;

/// Indexing threads of an index: one per core but one (the view's feeder, which analyzes the
/// documents, keeps a core busy while a bulk load runs), at least 1, at most
/// [`MAX_WRITER_THREADS`]. Each thread builds segments of its own, so more threads also mean
/// more, smaller segments to merge.
fn writer_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .saturating_sub(1)
        .clamp(1, MAX_WRITER_THREADS)
}

/// One document found by a search.
#[derive(Clone, Debug, PartialEq)]
pub struct Hit {
    pub collection: u64,
    pub key: String,
    /// One score per requested scorer, in the order requested.
    pub scores: Vec<f64>,
    /// The values of the index's primary sort and stored fields
    /// ([`StoredColumns::value_paths`]), when the search asked for them (empty otherwise).
    pub values: Vec<serde_json::Value>,
}

/// How [`ViewIndex::search_sorted`] orders and cuts its hits and what they carry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SortedRead {
    /// The hits in the order of the first `buckets` primary sort fields (0: index order);
    /// ties keep the index order.
    pub buckets: usize,
    /// Only the first `limit` hits of that order.
    pub limit: Option<usize>,
    /// Each hit carries the values of the primary sort and stored fields.
    pub values: bool,
}

/// Names of the two byte columns (fast fields) of [`StoredColumns`].
const SORT_COLUMN: &str = "sort";
const STORED_COLUMN: &str = "stored";

/// The searchable state of a view's index at one moment ([`ViewIndex::state`]).
pub struct IndexState(Searcher);

/// How segments are merged (`consolidationPolicy` and `consolidationIntervalMsec` of the view).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Consolidation {
    /// No merges (`consolidationIntervalMsec` 0).
    Off,
    /// ArangoDB's tier policy (`tier_merge.rs`).
    Tiered(TierOptions),
}

struct Fields {
    terms: Field,
    id: Field,
    collection: Field,
    /// The revision (`_rev`) of the indexed version, a fast field: what a reopened index
    /// compares with the collection ([`ViewIndex::for_each_identity`]).
    rev: Field,
    /// The shapes geo analyzers read (stored, for the exact check of geo searches).
    geo: Field,
    /// The primary sort values and the stored values (`stored_columns.rs`), columnar.
    sort: Field,
    stored: Field,
}

/// The full-text index of one view.
pub struct ViewIndex {
    dir: PathBuf,
    /// None once [`ViewIndex::close`]d.
    writer: Mutex<Option<IndexWriter>>,
    reader: IndexReader,
    fields: Fields,
    field_stats: FieldStatsCache,
    columns: RwLock<StoredColumns>,
}

impl std::fmt::Debug for ViewIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewIndex")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    // No field keeps tantivy's field norms (a byte per document and field, written with every
    // segment and merged): the scorers read the lengths from the length terms (`scoring.rs`).
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(term_stream::TOKENIZER)
        .set_index_option(IndexRecordOption::WithFreqsAndPositions)
        .set_fieldnorms(false);
    let terms = builder.add_text_field(
        "terms",
        TextOptions::default().set_indexing_options(indexing),
    );
    let id = builder.add_text_field("id", untokenized_without_norms().set_stored());
    let collection = builder.add_text_field("collection", untokenized_without_norms());
    let geo = builder.add_text_field(super::geo_query::GEO_FIELD, STORED);
    let sort = builder.add_bytes_field(SORT_COLUMN, FAST);
    let stored = builder.add_bytes_field(STORED_COLUMN, FAST);
    let rev = builder.add_u64_field(REV_FIELD, FAST);
    (
        builder.build(),
        Fields {
            terms,
            id,
            collection,
            rev,
            geo,
            sort,
            stored,
        },
    )
}

/// A field indexed as one term per value (tantivy's `STRING`), documents only, without field
/// norms.
fn untokenized_without_norms() -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("raw")
            .set_index_option(IndexRecordOption::Basic)
            .set_fieldnorms(false),
    )
}

/// The fast field holding each document's revision.
const REV_FIELD: &str = "rev";

/// The file in an index's directory that names the on-disk format of its term dictionary.
/// tantivy picks that format when it is compiled (its `quickwit` feature: blocks of sorted
/// terms, an sstable, instead of a finite-state transducer), and a segment written in one
/// format cannot be read as the other, while the schema and `meta.json` are the same for both:
/// only this file tells them apart. An index without it (written with the transducer) or with
/// another name in it is rebuilt, never opened.
const DICTIONARY_FILE: &str = "term-dictionary";

/// What [`DICTIONARY_FILE`] holds for the format this build writes.
const DICTIONARY_FORMAT: &str = "sstable\n";

/// The version of what the index holds for a document (terms, their encoding, the fields):
/// recorded with every commit by its users and compared when the index is reopened, so an
/// index written by a build that encoded documents differently is rebuilt, not served.
pub const INDEX_FORMAT: u32 = 1;

/// Writes `bytes` to `path` and syncs the file.
fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn closed() -> Error {
    Error::with_message(ErrorCode::Internal, "view index: closed")
}

fn engine_error(what: &str, err: impl std::fmt::Display) -> Error {
    Error::with_message(ErrorCode::Internal, format!("view index: {what}: {err}"))
}

/// What [`ViewIndex::open`] found in the directory.
#[derive(Debug, PartialEq)]
pub enum Opened {
    /// An index, with the payload of its last commit (None if never committed).
    Existing(Option<String>),
    /// Nothing usable: a new, empty index was created (the directory was missing, or held
    /// something that could not be opened and was removed).
    Created,
}

impl ViewIndex {
    /// Opens the index in `dir`, creating it when missing. A directory that cannot be opened
    /// as this index is removed and replaced by an empty index (reported as
    /// [`Opened::Created`], so the caller rebuilds it), never served.
    pub fn open(dir: &Path) -> Result<(ViewIndex, Opened)> {
        let existed = dir.join("meta.json").exists();
        if existed {
            let opened = match std::fs::read(dir.join(DICTIONARY_FILE)) {
                Ok(format) if format == DICTIONARY_FORMAT.as_bytes() => Self::open_in(dir, false),
                Ok(_) => Err(engine_error(
                    "opening",
                    "its term dictionary has another format",
                )),
                Err(err) => Err(engine_error("reading its term dictionary's format", err)),
            };
            match opened {
                Ok(found) => return Ok(found),
                Err(err) => {
                    tracing::warn!(dir = %dir.display(), error = %err.message,
                        "view index cannot be opened; it is rebuilt from the collections");
                    std::fs::remove_dir_all(dir)
                        .map_err(|e| engine_error("removing a broken index", e))?;
                }
            }
        }
        Self::open_in(dir, true)
    }

    fn open_in(dir: &Path, create: bool) -> Result<(ViewIndex, Opened)> {
        std::fs::create_dir_all(dir).map_err(|e| engine_error("creating its directory", e))?;
        if create {
            // Written before the index: a crash in between leaves no `meta.json`, and the
            // next open creates the index again.
            write_synced(&dir.join(DICTIONARY_FILE), DICTIONARY_FORMAT.as_bytes())
                .map_err(|e| engine_error("recording its term dictionary's format", e))?;
        }
        let (schema, fields) = schema();
        let directory = MmapDirectory::open(dir).map_err(|e| engine_error("opening", e))?;
        let index = if create {
            Index::create(directory, schema.clone(), Default::default())
                .map_err(|e| engine_error("creating", e))?
        } else {
            let index = Index::open(directory).map_err(|e| engine_error("opening", e))?;
            if index.schema() != schema {
                return Err(engine_error("opening", "the schema differs"));
            }
            // Reading every segment's metadata catches truncated or missing files early.
            index
                .searchable_segment_metas()
                .map_err(|e| engine_error("reading segments", e))?;
            index
        };
        index
            .tokenizers()
            .register(term_stream::TOKENIZER, TermsTokenizer::default());
        let payload = index
            .load_metas()
            .map_err(|e| engine_error("reading its commit", e))?
            .payload;
        let writer = index
            .writer_with_num_threads(
                writer_threads(),
                writer_threads() * WRITER_MEMORY_PER_THREAD,
            )
            .map_err(|e| engine_error("opening its writer", e))?;
        Self::step_past_commit(&writer, &fields);
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| engine_error("opening its reader", e))?;
        // A reader over every segment also checks that the segment files open.
        let _ = reader.searcher().num_docs();
        let opened = if create {
            Opened::Created
        } else {
            Opened::Existing(payload)
        };
        Ok((
            ViewIndex {
                dir: dir.to_path_buf(),
                writer: Mutex::new(Some(writer)),
                reader,
                fields,
                field_stats: FieldStatsCache::default(),
                columns: RwLock::new(StoredColumns::default()),
            },
            opened,
        ))
    }

    /// The directory the index lives in.
    pub fn directory(&self) -> &Path {
        &self.dir
    }

    /// Sets how segments are merged.
    pub fn set_consolidation(&self, policy: Consolidation) {
        let writer = self.writer.lock();
        let Some(writer) = writer.as_ref() else {
            return;
        };
        match policy {
            Consolidation::Off => writer.set_merge_policy(Box::new(NoMergePolicy)),
            Consolidation::Tiered(options) => {
                writer.set_merge_policy(Box::new(TierMergePolicy::new(options, &self.dir)));
            }
        }
    }

    /// Sets the primary sort and stored fields every document written from now on keeps
    /// (set before the index is fed: a view's or inverted index's are fixed at creation).
    pub fn set_stored_columns(&self, columns: StoredColumns) {
        *self.columns.write() = columns;
    }

    /// The primary sort and stored fields of the index.
    pub fn stored_columns(&self) -> StoredColumns {
        self.columns.read().clone()
    }

    fn id_term(&self, collection: u64, key: &str) -> Term {
        Term::from_field_text(self.fields.id, &format!("{collection}/{key}"))
    }

    /// Replaces the document `collection/key` with its version of revision `rev` holding
    /// `terms` and the values of `doc` at the stored fields (visible after the next commit).
    pub fn put(
        &self,
        collection: u64,
        key: &str,
        rev: u64,
        terms: Vec<TermAt>,
        doc: &serde_json::Value,
    ) -> Result<()> {
        self.add(collection, key, rev, terms, doc, true)
    }

    /// Adds the document `collection/key` (revision `rev`) holding `terms`, which the index
    /// does not hold (an inserted key): no deletion of an earlier version is queued, which
    /// tantivy would look up in every segment at the next commit.
    pub fn insert(
        &self,
        collection: u64,
        key: &str,
        rev: u64,
        terms: Vec<TermAt>,
        doc: &serde_json::Value,
    ) -> Result<()> {
        self.add(collection, key, rev, terms, doc, false)
    }

    fn add(
        &self,
        collection: u64,
        key: &str,
        rev: u64,
        terms: Vec<TermAt>,
        source: &serde_json::Value,
        replaces: bool,
    ) -> Result<()> {
        let mut doc = TantivyDocument::new();
        {
            let columns = self.columns.read();
            if let Some(bytes) = columns.sort_column(source) {
                doc.add_bytes(self.fields.sort, &bytes);
            }
            if let Some(bytes) = columns.stored_column(source) {
                doc.add_bytes(self.fields.stored, &bytes);
            }
        }
        let id = format!("{collection}/{key}");
        doc.add_text(self.fields.id, &id);
        doc.add_text(self.fields.collection, collection.to_string());
        doc.add_u64(self.fields.rev, rev);
        let mut text = String::with_capacity(terms.iter().map(|t| t.term.len() + 16).sum());
        for t in &terms {
            if t.term.starts_with(encode::GEO_STORED_KIND) {
                // A geo analyzer's shape: stored for the exact check, not indexed.
                doc.add_text(self.fields.geo, &t.term);
                continue;
            }
            term_stream::push_term(&mut text, t.position, &t.term);
        }
        doc.add_text(self.fields.terms, &text);
        let writer = self.writer.lock();
        let writer = writer.as_ref().ok_or_else(closed)?;
        if replaces {
            writer.delete_term(self.id_term(collection, key));
        }
        writer
            .add_document(doc)
            .map_err(|e| engine_error("adding a document", e))?;
        Ok(())
    }

    /// Removes the document `collection/key` (visible after the next commit).
    pub fn remove(&self, collection: u64, key: &str) {
        if let Some(writer) = self.writer.lock().as_ref() {
            writer.delete_term(self.id_term(collection, key));
        }
    }

    /// Removes every document of `collection` (a dropped link or a truncate).
    pub fn remove_collection(&self, collection: u64) {
        if let Some(writer) = self.writer.lock().as_ref() {
            writer.delete_term(Term::from_field_text(
                self.fields.collection,
                &collection.to_string(),
            ));
        }
    }

    /// Removes every document.
    pub fn clear(&self) -> Result<()> {
        self.writer
            .lock()
            .as_mut()
            .ok_or_else(closed)?
            .delete_all_documents()
            .map(|_| ())
            .map_err(|e| engine_error("clearing", e))
    }

    /// Makes everything written so far durable and searchable; `payload` is stored with the
    /// commit and returned by the next [`ViewIndex::open`].
    pub fn commit(&self, payload: &str) -> Result<()> {
        {
            let mut writer = self.writer.lock();
            let writer = writer.as_mut().ok_or_else(closed)?;
            let mut prepared = writer
                .prepare_commit()
                .map_err(|e| engine_error("preparing a commit", e))?;
            prepared.set_payload(payload);
            prepared
                .commit()
                .map_err(|e| engine_error("committing", e))?;
        }
        self.reader
            .reload()
            .map_err(|e| engine_error("reloading its reader", e))
    }

    /// Drops every write since the last commit, and starts tantivy's indexing threads again
    /// (a thread that failed, on an I/O error writing its segment for example, took the
    /// documents it held with it). The index is then its last commit.
    pub fn rollback(&self) -> Result<()> {
        let mut writer = self.writer.lock();
        let writer = writer.as_mut().ok_or_else(closed)?;
        writer
            .rollback()
            .map_err(|e| engine_error("rolling back", e))?;
        Self::step_past_commit(writer, &self.fields);
        Ok(())
    }

    /// Spends the operation number a freshly opened (or rolled back) tantivy writer hands out
    /// first, with a deletion that matches nothing. Tantivy starts such a writer's numbering
    /// at the opstamp of the last commit itself, so the first real operation would share it
    /// with the committed segments' deletions, and a merge started before the next commit
    /// (its target: that commit's opstamp) treats a segment whose deletions carry that number
    /// as up to date while the other segments of the merge consume the operation: a deletion
    /// made then (say a catch-up removing a document that went while the index was closed)
    /// is lost in the merged segment, and the document comes back. Every real operation
    /// numbered above the last commit avoids that.
    fn step_past_commit(writer: &IndexWriter, fields: &Fields) {
        // No document has an empty identity (they are `collection/key`).
        writer.delete_term(Term::from_field_text(fields.id, ""));
    }

    /// Releases the writer and with it the directory's writer lock, after its merges are
    /// done; uncommitted writes are dropped. Later writes fail, searches still answer.
    pub fn close(&self) {
        if let Some(writer) = self.writer.lock().take() {
            if let Err(err) = writer.wait_merging_threads() {
                tracing::warn!(dir = %self.dir.display(), "closing a view index: {err}");
            }
        }
    }

    /// Live documents searchable now.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Calls `f` with the key and revision of every live document of `collection` in the
    /// committed state (what a reopened index holds), segment by segment: the `id` terms
    /// under the collection's prefix are walked in each segment's term dictionary and each
    /// term's live document gives its revision from the fast field. No stored document is
    /// read. A key held twice (which the writes never leave behind) is reported twice.
    pub fn for_each_identity(
        &self,
        collection: u64,
        mut f: impl FnMut(&str, u64) -> Result<()>,
    ) -> Result<()> {
        let searcher = self.reader.searcher();
        let prefix = format!("{collection}/");
        // `0` follows `/` in byte order: every id of the collection lies in [prefix, end).
        let end = format!("{collection}0");
        for segment in searcher.segment_readers() {
            let inverted = segment
                .inverted_index(self.fields.id)
                .map_err(|e| engine_error("reading identities", e))?;
            let revs = segment
                .fast_fields()
                .u64(REV_FIELD)
                .map_err(|e| engine_error("reading revisions", e))?;
            let alive = segment.alive_bitset();
            let mut terms = inverted
                .terms()
                .range()
                .ge(prefix.as_bytes())
                .lt(end.as_bytes())
                .into_stream()
                .map_err(|e| engine_error("reading identities", e))?;
            while terms.advance() {
                let info = terms.value();
                let mut postings = inverted
                    .read_postings_from_terminfo(info, IndexRecordOption::Basic)
                    .map_err(|e| engine_error("reading identities", e))?;
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        let id = std::str::from_utf8(terms.key())
                            .map_err(|e| engine_error("reading identities", e))?;
                        let rev = revs.first(doc).unwrap_or(0);
                        f(&id[prefix.len()..], rev)?;
                    }
                    doc = postings.advance();
                }
            }
        }
        Ok(())
    }

    /// The documents matching `query` (restricted to `collections` when given), each with
    /// one score per scorer.
    pub fn search(
        &self,
        query: &SearchQuery,
        collections: Option<&[u64]>,
        scorers: &[Scorer],
        analyzers: &dyn AnalyzerSource,
    ) -> Result<Vec<Hit>> {
        let searcher = self.reader.searcher();
        let matched = self.matches(&searcher, query, collections, analyzers)?;
        let scores = if scorers.is_empty() {
            Vec::new()
        } else {
            self.score(&searcher, query, &matched, scorers, analyzers)?
        };
        let mut hits = Vec::with_capacity(matched.iter().map(Vec::len).sum());
        for (segment, docs) in matched.iter().enumerate() {
            for (i, doc) in docs.iter().enumerate() {
                let (collection, key) = self.identity(&searcher, segment as u32, *doc)?;
                let scores = match scores.get(segment) {
                    Some(s) => s[i * scorers.len()..(i + 1) * scorers.len()].to_vec(),
                    None => vec![0.0; scorers.len()],
                };
                hits.push(Hit {
                    collection,
                    key,
                    scores,
                    values: Vec::new(),
                });
            }
        }
        Ok(hits)
    }

    /// The first `k` documents [`ViewIndex::search`] would give once sorted (stably) by
    /// `order` over its scorers, in that order: every match is scored, the best `k` are kept
    /// in a bounded heap (`top_scores.rs`), and only their identities are read.
    pub fn search_top(
        &self,
        query: &SearchQuery,
        collections: Option<&[u64]>,
        scorers: &[Scorer],
        order: &ScoreOrder,
        k: usize,
        analyzers: &dyn AnalyzerSource,
    ) -> Result<Vec<Hit>> {
        let searcher = self.reader.searcher();
        let matched = self.matches(&searcher, query, collections, analyzers)?;
        let scores = if scorers.is_empty() {
            Vec::new()
        } else {
            self.score(&searcher, query, &matched, scorers, analyzers)?
        };
        let zeros = vec![0.0; scorers.len()];
        let mut best = BestScores::new(order, k);
        for (segment, docs) in matched.iter().enumerate() {
            for (i, doc) in docs.iter().enumerate() {
                let s = scores.get(segment).map_or(&zeros[..], |s| {
                    &s[i * scorers.len()..(i + 1) * scorers.len()]
                });
                best.offer(s, (segment as u32, *doc));
            }
        }
        let mut hits = Vec::with_capacity(k.min(4096));
        for ((segment, doc), scores) in best.into_sorted() {
            let (collection, key) = self.identity(&searcher, segment, doc)?;
            hits.push(Hit {
                collection,
                key,
                scores,
                values: Vec::new(),
            });
        }
        Ok(hits)
    }

    /// The documents [`ViewIndex::search`] gives, ordered by the first `read.buckets` primary
    /// sort fields (AQL's order of the values, each field in its declared direction; ties keep
    /// the index order, so this is a stable sort of `search`'s hits), the first `read.limit`
    /// of them, each with the primary sort and stored values when `read.values`. The order
    /// reads only the primary sort column of the matches (each distinct value of a segment
    /// decoded once); with a limit the first hits are selected before they are sorted.
    /// Identities and stored values are read for the hits kept only.
    pub fn search_sorted(
        &self,
        query: &SearchQuery,
        collections: Option<&[u64]>,
        scorers: &[Scorer],
        read: &SortedRead,
        analyzers: &dyn AnalyzerSource,
    ) -> Result<Vec<Hit>> {
        let searcher = self.reader.searcher();
        let matched = match read.limit {
            // Only the first `k` matches in index order are kept, and nothing is computed
            // over all of them: stop matching there.
            Some(k) if read.buckets == 0 && scorers.is_empty() => {
                self.first_matches(&searcher, query, collections, analyzers, k)?
            }
            _ => self.matches(&searcher, query, collections, analyzers)?,
        };
        let scores = if scorers.is_empty() {
            Vec::new()
        } else {
            self.score(&searcher, query, &matched, scorers, analyzers)?
        };
        let columns = self.columns.read().clone();
        let buckets = read.buckets.min(columns.sort.len());
        // (segment, position among the segment's matches), in index order.
        let mut order: Vec<(u32, usize)> = matched
            .iter()
            .enumerate()
            .flat_map(|(segment, docs)| (0..docs.len()).map(move |i| (segment as u32, i)))
            .collect();
        let mut sort_values = Vec::new();
        if buckets > 0 || (read.values && !columns.sort.is_empty()) {
            for (segment, docs) in matched.iter().enumerate() {
                sort_values.push(self.column_values(&searcher, segment, SORT_COLUMN, docs)?);
            }
        }
        if buckets > 0 {
            let by_sort = |a: &(u32, usize), b: &(u32, usize)| {
                columns
                    .compare_sort(
                        &sort_values[a.0 as usize][a.1],
                        &sort_values[b.0 as usize][b.1],
                        buckets,
                    )
                    .then(a.cmp(b))
            };
            match read.limit {
                Some(0) => order.clear(),
                Some(k) if k < order.len() => {
                    order.select_nth_unstable_by(k - 1, by_sort);
                    order.truncate(k);
                }
                _ => {}
            }
            order.sort_unstable_by(by_sort);
        } else if let Some(k) = read.limit {
            order.truncate(k);
        }
        // The stored values of the kept hits, per segment.
        let mut stored_values: HashMap<(u32, usize), Arc<Vec<serde_json::Value>>> = HashMap::new();
        if read.values && !columns.stored.is_empty() {
            let mut per_segment: HashMap<u32, Vec<usize>> = HashMap::new();
            for (segment, i) in &order {
                per_segment.entry(*segment).or_default().push(*i);
            }
            for (segment, positions) in per_segment {
                let docs: Vec<DocId> = positions
                    .iter()
                    .map(|i| matched[segment as usize][*i])
                    .collect();
                let values =
                    self.column_values(&searcher, segment as usize, STORED_COLUMN, &docs)?;
                for (i, v) in positions.into_iter().zip(values) {
                    stored_values.insert((segment, i), v);
                }
            }
        }
        let stored_count: usize = columns.stored.iter().map(Vec::len).sum();
        let mut hits = Vec::with_capacity(order.len());
        for (segment, i) in order {
            let doc = matched[segment as usize][i];
            let (collection, key) = self.identity(&searcher, segment, doc)?;
            let scores = match scores.get(segment as usize) {
                Some(s) => s[i * scorers.len()..(i + 1) * scorers.len()].to_vec(),
                None => vec![0.0; scorers.len()],
            };
            let mut values = Vec::new();
            if read.values {
                values.reserve(columns.sort.len() + stored_count);
                let sorted = sort_values
                    .get(segment as usize)
                    .map_or(&[][..], |s| s[i].as_slice());
                let stored = stored_values
                    .get(&(segment, i))
                    .map_or(&[][..], |s| s.as_slice());
                for n in 0..columns.sort.len() {
                    values.push(sorted.get(n).cloned().unwrap_or(serde_json::Value::Null));
                }
                for n in 0..stored_count {
                    values.push(stored.get(n).cloned().unwrap_or(serde_json::Value::Null));
                }
            }
            hits.push(Hit {
                collection,
                key,
                scores,
                values,
            });
        }
        Ok(hits)
    }

    /// The values of column `name` (a JSON array per document; empty where the document has
    /// none) of `docs` of segment `segment`, aligned with `docs`: the distinct values are
    /// decoded once, in the column dictionary's order.
    fn column_values(
        &self,
        searcher: &Searcher,
        segment: usize,
        name: &str,
        docs: &[DocId],
    ) -> Result<Vec<Arc<Vec<serde_json::Value>>>> {
        let empty = Arc::new(Vec::new());
        let reader = searcher.segment_reader(segment as u32);
        let Some(column) = reader
            .fast_fields()
            .bytes(name)
            .map_err(|e| engine_error("reading a value column", e))?
        else {
            return Ok(vec![empty; docs.len()]);
        };
        let ords: Vec<Option<u64>> = docs
            .iter()
            .map(|doc| column.term_ords(*doc).next())
            .collect();
        let mut distinct: Vec<u64> = ords.iter().flatten().copied().collect();
        distinct.sort_unstable();
        distinct.dedup();
        let mut decoded = Vec::with_capacity(distinct.len());
        column
            .dictionary()
            .sorted_ords_to_term_cb(distinct.iter().copied(), |bytes| {
                let values: Vec<serde_json::Value> =
                    serde_json::from_slice(bytes).unwrap_or_default();
                decoded.push(Arc::new(values));
                Ok(())
            })
            .map_err(|e| engine_error("reading a value column", e))?;
        Ok(ords
            .iter()
            .map(|ord| {
                ord.and_then(|o| distinct.binary_search(&o).ok())
                    .and_then(|at| decoded.get(at).cloned())
                    .unwrap_or_else(|| Arc::clone(&empty))
            })
            .collect())
    }

    /// The searchable state of the index now: what [`ViewIndex::count`] counts in, however
    /// the index changes after.
    pub fn state(&self) -> IndexState {
        IndexState(self.reader.searcher())
    }

    /// How many live documents of `state` match `query` (restricted to `collections` when
    /// given), without reading any identity.
    pub fn count(
        &self,
        state: &IndexState,
        query: &SearchQuery,
        collections: Option<&[u64]>,
        analyzers: &dyn AnalyzerSource,
    ) -> Result<u64> {
        let tantivy_query = self.tantivy_query(query, collections, analyzers)?;
        state
            .0
            .search(&*tantivy_query, &Count)
            .map(|n| n as u64)
            .map_err(|e| engine_error("counting", e))
    }

    /// The live documents matching `query`, per segment (by ordinal) in document order.
    fn matches(
        &self,
        searcher: &Searcher,
        query: &SearchQuery,
        collections: Option<&[u64]>,
        analyzers: &dyn AnalyzerSource,
    ) -> Result<Vec<Vec<DocId>>> {
        let tantivy_query = self.tantivy_query(query, collections, analyzers)?;
        searcher
            .search(&*tantivy_query, &MatchedDocs)
            .map_err(|e| engine_error("searching", e))
    }

    /// The first `limit` documents `query` matches in index order (segment by segment,
    /// documents ascending, deleted ones skipped), in the shape of [`Self::matches`]: the same
    /// lists cut after `limit` documents in all, without matching the rest.
    fn first_matches(
        &self,
        searcher: &Searcher,
        query: &SearchQuery,
        collections: Option<&[u64]>,
        analyzers: &dyn AnalyzerSource,
        limit: usize,
    ) -> Result<Vec<Vec<DocId>>> {
        let tantivy_query = self.tantivy_query(query, collections, analyzers)?;
        let weight = tantivy_query
            .weight(EnableScoring::disabled_from_searcher(searcher))
            .map_err(|e| engine_error("searching", e))?;
        let mut out = Vec::with_capacity(searcher.segment_readers().len());
        let mut left = limit;
        for reader in searcher.segment_readers() {
            let mut docs = Vec::new();
            if left > 0 {
                let mut scorer = weight
                    .scorer(reader, 1.0)
                    .map_err(|e| engine_error("searching", e))?;
                let alive = reader.alive_bitset();
                let mut doc = scorer.doc();
                while doc != TERMINATED && docs.len() < left {
                    if docs.last().is_some_and(|last| *last >= doc) {
                        // Not ascending (a document set breaking tantivy's contract): the
                        // first documents in index order are those of the whole match.
                        return self.matches(searcher, query, collections, analyzers);
                    }
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        docs.push(doc);
                    }
                    doc = scorer.advance();
                }
                left -= docs.len();
            }
            out.push(docs);
        }
        Ok(out)
    }

    /// `query` as tantivy's query, restricted to `collections` when given.
    fn tantivy_query(
        &self,
        query: &SearchQuery,
        collections: Option<&[u64]>,
        analyzers: &dyn AnalyzerSource,
    ) -> Result<Box<dyn Query>> {
        let mut tantivy_query = query.to_tantivy(self.fields.terms, analyzers)?;
        if let Some(ids) = collections {
            let any_of: Vec<(Occur, Box<dyn Query>)> = ids
                .iter()
                .map(|id| {
                    let term = Term::from_field_text(self.fields.collection, &id.to_string());
                    (
                        Occur::Should,
                        Box::new(TermQuery::new(term, IndexRecordOption::Basic)) as Box<dyn Query>,
                    )
                })
                .collect();
            tantivy_query = Box::new(BooleanQuery::new(vec![
                (Occur::Must, tantivy_query),
                (
                    Occur::Must,
                    Box::new(BooleanQuery::new(any_of)) as Box<dyn Query>,
                ),
            ]));
        }
        Ok(tantivy_query)
    }

    /// The identity (collection id, key) stored with document `doc` of segment `segment`.
    fn identity(&self, searcher: &Searcher, segment: u32, doc: DocId) -> Result<(u64, String)> {
        let stored: TantivyDocument = searcher
            .doc(DocAddress::new(segment, doc))
            .map_err(|e| engine_error("reading a document's identity", e))?;
        let Some(id) = stored.get_first(self.fields.id).and_then(|v| v.as_str()) else {
            return Err(engine_error("reading a document's identity", "missing"));
        };
        let Some((collection, key)) = id
            .split_once('/')
            .and_then(|(c, k)| Some((c.parse::<u64>().ok()?, k)))
        else {
            return Err(engine_error("reading a document's identity", id));
        };
        Ok((collection, key.to_string()))
    }

    /// The scores of the matched documents: per segment, `scorers.len()` values per matched
    /// document in the order of `matched`. A term's postings are walked once, alongside the
    /// segment's (sorted) matches; document lengths and the field's totals come from the
    /// per-segment statistics cache.
    fn score(
        &self,
        searcher: &Searcher,
        query: &SearchQuery,
        matched: &[Vec<DocId>],
        scorers: &[Scorer],
        analyzers: &dyn AnalyzerSource,
    ) -> Result<Vec<Vec<f64>>> {
        let mut scores: Vec<Vec<f64>> = matched
            .iter()
            .map(|docs| vec![0.0; docs.len() * scorers.len()])
            .collect();
        self.field_stats.retain_searched(searcher);
        type PerSegment = Vec<Arc<SegmentFieldStats>>;
        let mut fields: HashMap<(String, String), (FieldStats, PerSegment)> = HashMap::new();
        for leaf in query.scored_terms(analyzers) {
            let field_key = (leaf.path.clone(), leaf.analyzer.clone());
            if !fields.contains_key(&field_key) {
                let stats = self.field_stats(searcher, &leaf.path, &leaf.analyzer)?;
                fields.insert(field_key.clone(), stats);
            }
            let (stats, per_segment) = &fields[&field_key];
            let term = encode::string_term(&leaf.path, &leaf.analyzer, &leaf.term);
            let postings = self.postings(searcher, &term)?;
            let df = postings.iter().map(Vec::len).sum::<usize>() as u64;
            for (segment, postings) in postings.iter().enumerate() {
                let docs = matched.get(segment).map_or(&[][..], Vec::as_slice);
                let lengths = &per_segment[segment].lengths;
                let mut at = 0;
                for &(doc, tf) in postings {
                    while at < docs.len() && docs[at] < doc {
                        at += 1;
                    }
                    if at == docs.len() {
                        break;
                    }
                    if docs[at] != doc {
                        continue;
                    }
                    let length = lengths.get(doc as usize).copied().unwrap_or(0);
                    let slots = &mut scores[segment][at * scorers.len()..(at + 1) * scorers.len()];
                    for (slot, scorer) in slots.iter_mut().zip(scorers) {
                        *slot += scorer.term_score(tf, df, *stats, length, leaf.boost);
                    }
                }
            }
        }
        Ok(scores)
    }

    /// Live documents holding `term` with its frequency in each, per segment (indexed by the
    /// segment's ordinal) in document order.
    fn postings(&self, searcher: &Searcher, term: &str) -> Result<Vec<Vec<(DocId, u32)>>> {
        let term = Term::from_field_text(self.fields.terms, term);
        let mut out = Vec::with_capacity(searcher.segment_readers().len());
        for segment in searcher.segment_readers() {
            let inverted = segment
                .inverted_index(self.fields.terms)
                .map_err(|e| engine_error("reading postings", e))?;
            let mut found = Vec::new();
            if let Some(mut postings) = inverted
                .read_postings(&term, IndexRecordOption::WithFreqs)
                .map_err(|e| engine_error("reading postings", e))?
            {
                let alive = segment.alive_bitset();
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    if alive.is_none_or(|a| a.is_alive(doc)) {
                        found.push((doc, postings.term_freq()));
                    }
                    doc = postings.advance();
                }
            }
            out.push(found);
        }
        Ok(out)
    }

    /// The statistics of field (path, analyzer) over the live documents, and its per-segment
    /// statistics (indexed by the segment's ordinal) with each document's length.
    fn field_stats(
        &self,
        searcher: &Searcher,
        path: &str,
        analyzer: &str,
    ) -> Result<(FieldStats, Vec<Arc<SegmentFieldStats>>)> {
        let length_prefix = encode::length_prefix(path, analyzer);
        let mut stats = FieldStats {
            docs_with_field: 0,
            total_length: 0,
        };
        let mut per_segment = Vec::with_capacity(searcher.segment_readers().len());
        for segment in searcher.segment_readers() {
            let found = self
                .field_stats
                .segment(segment, self.fields.terms, &length_prefix)?;
            stats.docs_with_field += found.docs_with_field;
            stats.total_length += found.total_length;
            per_segment.push(found);
        }
        Ok((stats, per_segment))
    }
}
