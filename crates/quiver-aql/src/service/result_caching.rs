//! The query service's side of the query results cache ([`crate::results_cache`]): answering
//! a cursor from a kept result, keeping the result of a query that ran, and the
//! `/_api/query-cache` endpoints.
//!
//! A query that may use the cache records every collection it touches while it runs (through
//! the collection access rule every read and write already passes) and the tick of its
//! snapshot. Its result is kept only if no collection it read was written after that tick
//! (each collection's data version is its id and the commit tick of its newest write), under
//! those versions.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use quiver_errors::Result;
use serde_json::Value;

use super::cursors::{Cursor, CursorData};
use super::{binds_key, CursorBatch, CursorRequest, QueryService};
use crate::plan::QueryPlan;
use crate::query_extra::QueryExtra;
use crate::results_cache::{
    CacheProperties, CacheUpdate, DataVersion, Freshness, NewResult, ResultKey,
};
use crate::source::checked::CollectionAccess;
use crate::source::DataSource;
use crate::value::estimate_size;

/// The versions of one database as its source reports them now.
struct SourceVersions<'a> {
    source: &'a dyn DataSource,
    database: &'a str,
}

impl Freshness for SourceVersions<'_> {
    fn collection_version(&self, name: &str) -> Option<DataVersion> {
        self.source
            .collection_data_version(self.database, name)
            .map(|(collection, tick)| DataVersion { collection, tick })
    }
}

/// What a query that may keep its result notes before it runs.
pub(super) struct Candidate {
    key: ResultKey,
    /// The tick of the query's snapshot, once it has one.
    snapshot: Option<u64>,
    started: SystemTime,
    /// Every collection the query touched while it ran.
    touched: Arc<Mutex<BTreeSet<String>>>,
}

impl Candidate {
    /// What keeping the result of `req` needs; made before the query is planned.
    pub(super) fn for_request(req: &CursorRequest) -> Candidate {
        Candidate {
            key: result_key(req),
            snapshot: None,
            started: SystemTime::now(),
            touched: Arc::default(),
        }
    }

    /// Notes the tick of the snapshot the query reads.
    pub(super) fn reads_snapshot(&mut self, tick: Option<u64>) {
        self.snapshot = tick;
    }

    /// The access rule the query runs under: `access` (or no limit), also recording every
    /// collection asked about.
    pub(super) fn observing(&self, access: Option<CollectionAccess>) -> CollectionAccess {
        let touched = self.touched.clone();
        CollectionAccess::new(move |collection, write| {
            {
                let mut seen = touched.lock();
                if !seen.contains(collection) {
                    seen.insert(collection.to_string());
                }
            }
            access
                .as_ref()
                .is_none_or(|a| a.check(collection, write).is_ok())
        })
    }
}

fn result_key(req: &CursorRequest) -> ResultKey {
    ResultKey {
        query: req.query.clone(),
        binds: binds_key(&req.bind_vars),
        count: req.count,
        full_count: req.full_count,
        rules: req.rules.clone(),
    }
}

impl QueryService {
    /// Whether `req` looks up and may fill the results cache: the mode and the query's
    /// `cache` option ask for it, and it neither streams nor runs inside a caller's
    /// transaction (whose own uncommitted writes it may see).
    pub(super) fn uses_results_cache(&self, req: &CursorRequest, in_transaction: bool) -> bool {
        !req.stream && !in_transaction && self.results.wanted(&req.query, req.cache)
    }

    /// The first batch of a cursor over a kept result, when a fresh one exists and the
    /// caller may read everything it was read from.
    pub(super) fn cached_cursor(&self, db: &str, req: &CursorRequest) -> Option<CursorBatch> {
        let now = SourceVersions {
            source: &*self.source,
            database: db,
        };
        let entry = self.results.lookup(db, &result_key(req), &now)?;
        if let Some(access) = &req.access {
            if !entry
                .result
                .sources
                .iter()
                .all(|(c, _)| access.check(c, false).is_ok())
            {
                return None;
            }
        }
        let mut cursor = Cursor {
            database: db.to_string(),
            batch_size: req.batch_size,
            ttl: Duration::from_secs_f64(req.ttl),
            expires: Instant::now() + Duration::from_secs_f64(req.ttl),
            count: req.count.then_some(entry.result.results.len() as u64),
            data: CursorData::Materialized(entry.result.results.iter().cloned().collect()),
            extra: Some(entry.result.extra.clone()),
            batch_id: 0,
            last_batch: None,
            allow_retry: req.allow_retry,
            exhausted: false,
            raw_result: entry.result.raw_result,
            cached: true,
            hold: None,
        };
        if entry.result.results.len() > req.batch_size {
            let bytes = entry
                .result
                .results
                .iter()
                .skip(req.batch_size)
                .map(crate::value::estimate_size)
                .sum();
            cursor.hold = Some(self.cursors.held().hold(req.user.as_deref(), bytes).ok()?);
        }
        let batch = self.next_batch_of(&mut cursor, None).ok()?;
        self.respond_first(batch, cursor, req.user.as_deref()).ok()
    }

    /// Keeps the result of a query that ran to its end, if it may be kept: the plan is
    /// cacheable, the run raised no warning, and every data source is a collection that was
    /// not written after the query's snapshot.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn keep_result(
        &self,
        db: &str,
        req: &CursorRequest,
        candidate: Candidate,
        plan: &QueryPlan,
        results: &VecDeque<Value>,
        warned: bool,
        extra: &Arc<QueryExtra>,
        run_time: f64,
    ) {
        let Some(snapshot) = candidate.snapshot else {
            return;
        };
        if !plan.cacheable || warned {
            return;
        }
        let mut names = std::mem::take(&mut *candidate.touched.lock());
        names.extend(plan.collections.keys().cloned());
        let mut sources = Vec::with_capacity(names.len());
        for name in names {
            // A view (or anything else that is no collection) has no data version: its
            // results are not kept.
            let Some((collection, tick)) = self.source.collection_data_version(db, &name) else {
                return;
            };
            if tick > snapshot {
                // Written after the snapshot: the result is already older than the data.
                return;
            }
            sources.push((name, DataVersion { collection, tick }));
        }
        let results_size = results.iter().map(estimate_size).sum();
        self.results.store(
            db,
            NewResult {
                key: candidate.key,
                bind_vars: req.bind_vars.clone(),
                results: results.iter().cloned().collect(),
                raw_result: plan.raw_result(),
                extra: extra.clone(),
                sources,
                run_time,
                started: candidate.started,
                results_size,
            },
        );
    }

    /// `GET /_api/query-cache/properties`.
    pub fn results_cache_properties(&self) -> CacheProperties {
        self.results.properties()
    }

    /// `PUT /_api/query-cache/properties`.
    pub fn set_results_cache_properties(&self, update: &CacheUpdate) -> CacheProperties {
        self.results.update(update)
    }

    /// `GET /_api/query-cache/entries`: the fresh results kept for `db` whose every data
    /// source `access` lets the caller read (all of them without an access rule).
    pub fn results_cache_entries(
        &self,
        db: &str,
        access: Option<&CollectionAccess>,
    ) -> Result<Vec<Value>> {
        let now = SourceVersions {
            source: &*self.source,
            database: db,
        };
        let with_binds = self.queries.tracks_bind_vars(db);
        let list: Vec<Value> = self
            .results
            .entries(db, &now)
            .iter()
            .filter(|e| {
                access.is_none_or(|a| {
                    e.result
                        .sources
                        .iter()
                        .all(|(c, _)| a.check(c, false).is_ok())
                })
            })
            .map(|e| e.json(with_binds))
            .collect();
        Ok(list)
    }

    /// `DELETE /_api/query-cache`: forgets the results kept for `db`.
    pub fn clear_results_cache(&self, db: &str) {
        self.results.clear(db);
    }
}
