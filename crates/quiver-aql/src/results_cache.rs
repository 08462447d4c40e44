//! The AQL query results cache (`/_api/query-cache`, the cursor option `cache`): complete
//! results of read-only queries, kept per database and handed out again while nothing they
//! were read from has changed.
//!
//! As in ArangoDB:
//! - modes `off` (the default), `on` (every eligible query, unless it says `cache: false`)
//!   and `demand` (only queries that say `cache: true`); changing the mode empties the cache;
//! - a result is kept only if the query wrote nothing, called no uncacheable function, ended
//!   without warnings, is at least [`MIN_QUERY_LENGTH`] bytes long, and read no system
//!   collection (unless `includeSystem`);
//! - an entry is keyed by database, query text, bind values, `count`, `fullCount` and
//!   `optimizer.rules`, and is shared by all users: a hit is served only to a caller who may
//!   read every data source of the entry;
//! - per database at most `maxResults` entries of together `maxResultsSize` bytes, none over
//!   `maxEntrySize`; the oldest entry goes first (first in, first out: a hit does not renew an
//!   entry).
//!
//! Where ArangoDB drops the entries of a collection when it is written, an entry here
//! remembers the [`DataVersion`] of every collection it read and is dropped when it is found
//! stale: at a lookup, and when the entries are listed. Stale entries still count toward the
//! limits until then.

use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::{Mutex, RwLock};
use serde_json::{Map, Value};

use crate::query_extra::QueryExtra;

/// Queries shorter than this are never cached (ArangoDB's threshold: such queries are cheaper
/// to run than to look up).
pub const MIN_QUERY_LENGTH: usize = 8;

/// When queries use the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheMode {
    Off,
    On,
    Demand,
}

impl CacheMode {
    /// ArangoDB's reading of a mode name: anything but `on` and `demand` is `off`.
    pub fn parse(name: &str) -> CacheMode {
        match name {
            "on" => CacheMode::On,
            "demand" => CacheMode::Demand,
            _ => CacheMode::Off,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CacheMode::Off => "off",
            CacheMode::On => "on",
            CacheMode::Demand => "demand",
        }
    }
}

/// The cache's settings (`/_api/query-cache/properties`, `--query.cache-*`).
#[derive(Clone, Debug, PartialEq)]
pub struct CacheProperties {
    pub mode: CacheMode,
    /// Entries per database.
    pub max_results: u64,
    /// Bytes of all entries of a database.
    pub max_results_size: u64,
    /// Bytes of one entry.
    pub max_entry_size: u64,
    /// Whether results read from system collections (`_…`) are kept.
    pub include_system: bool,
}

impl Default for CacheProperties {
    /// ArangoDB 3.12's defaults.
    fn default() -> CacheProperties {
        CacheProperties {
            mode: CacheMode::Off,
            max_results: 128,
            max_results_size: 256 << 20,
            max_entry_size: 16 << 20,
            include_system: false,
        }
    }
}

impl CacheProperties {
    pub fn json(&self) -> Value {
        serde_json::json!({
            "mode": self.mode.name(),
            "maxResults": self.max_results,
            "maxResultsSize": self.max_results_size,
            "maxEntrySize": self.max_entry_size,
            "includeSystem": self.include_system,
        })
    }
}

/// A change of the settings; `None` leaves a setting as it is. Limits are positive (the
/// HTTP layer refuses others).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CacheUpdate {
    pub mode: Option<CacheMode>,
    pub max_results: Option<u64>,
    pub max_results_size: Option<u64>,
    pub max_entry_size: Option<u64>,
    pub include_system: Option<bool>,
}

/// What a collection's contents are at: the collection (its id, so that one dropped and
/// created again under the same name differs) and the commit tick of its newest write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataVersion {
    pub collection: u64,
    pub tick: u64,
}

/// What a result is keyed by within its database.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResultKey {
    pub query: String,
    /// The bind values, serialized.
    pub binds: String,
    pub count: bool,
    pub full_count: bool,
    pub rules: Vec<String>,
}

impl ResultKey {
    /// The number `GET /_api/query-cache/entries` shows as `hash`.
    fn hash_number(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}

/// One kept result.
pub struct CachedResult {
    pub result: NewResult,
    size: u64,
    seq: u64,
    hits: AtomicU64,
}

/// Whether an entry may still be served: the current data version of a collection (`None`
/// when it no longer exists).
pub trait Freshness {
    fn collection_version(&self, name: &str) -> Option<DataVersion>;
}

impl CachedResult {
    fn fresh(&self, now: &dyn Freshness) -> bool {
        self.result
            .sources
            .iter()
            .all(|(name, v)| now.collection_version(name) == Some(*v))
    }

    /// The entry as `GET /_api/query-cache/entries` lists it.
    pub fn json(&self, with_bind_vars: bool) -> Value {
        let started = chrono::DateTime::<chrono::Utc>::from(self.result.started)
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        let mut out = serde_json::json!({
            "hash": self.result.key.hash_number().to_string(),
            "query": self.result.key.query,
            "size": self.size,
            "results": self.result.results.len(),
            "hits": self.hits.load(Ordering::Relaxed),
            "runTime": self.result.run_time,
            "started": started,
            "dataSources": self.result.sources.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        });
        if with_bind_vars {
            out["bindVars"] = Value::Object(self.result.bind_vars.clone());
        }
        out
    }
}

/// A result to keep ([`ResultsCache::store`]), as an entry holds it.
pub struct NewResult {
    pub key: ResultKey,
    pub bind_vars: Map<String, Value>,
    pub results: Vec<Value>,
    /// The rows are documents as stored JSON text (`QueryPlan::raw_result`).
    pub raw_result: bool,
    /// The `extra` of the run that produced the result (its stats, and plan and profile if
    /// it was profiled), answered again with every hit.
    pub extra: Arc<QueryExtra>,
    /// Every collection the query read, with its data version when it ran.
    pub sources: Vec<(String, DataVersion)>,
    /// Seconds the query took.
    pub run_time: f64,
    pub started: SystemTime,
    /// Estimated bytes of `results`.
    pub results_size: u64,
}

/// The entries of one database, oldest first.
#[derive(Default)]
struct DatabaseEntries {
    by_key: HashMap<ResultKey, Arc<CachedResult>>,
    /// Insertion order: `(seq, key)`; a record whose key now maps to a newer entry (the key
    /// was stored again) is skipped when it comes up.
    order: VecDeque<(u64, ResultKey)>,
    bytes: u64,
}

impl DatabaseEntries {
    fn remove(&mut self, key: &ResultKey) {
        if let Some(old) = self.by_key.remove(key) {
            self.bytes -= old.size;
        }
    }

    /// Drops the oldest entries until `count` entries of `bytes` more fit.
    fn make_room(&mut self, props: &CacheProperties, count: u64, bytes: u64) {
        while self.by_key.len() as u64 + count > props.max_results
            || self.bytes + bytes > props.max_results_size
        {
            let Some((seq, key)) = self.order.pop_front() else {
                break;
            };
            if self.by_key.get(&key).is_some_and(|e| e.seq == seq) {
                self.remove(&key);
            }
        }
        // Records of replaced keys are skipped above; keep their number bounded too.
        if self.order.len() > 2 * self.by_key.len() + 64 {
            let by_key = &self.by_key;
            self.order
                .retain(|(seq, key)| by_key.get(key).is_some_and(|e| e.seq == *seq));
        }
        debug_assert!(self.by_key.len() as u64 + count <= props.max_results || count == 0);
    }

    fn retain(&mut self, keep: impl Fn(&CachedResult) -> bool) {
        let gone: Vec<ResultKey> = self
            .by_key
            .iter()
            .filter(|(_, e)| !keep(e))
            .map(|(k, _)| k.clone())
            .collect();
        for key in gone {
            self.remove(&key);
        }
    }
}

/// The query results cache of one server.
#[derive(Default)]
pub struct ResultsCache {
    properties: RwLock<CacheProperties>,
    databases: Mutex<HashMap<String, DatabaseEntries>>,
    next_seq: AtomicU64,
}

impl ResultsCache {
    pub fn properties(&self) -> CacheProperties {
        self.properties.read().clone()
    }

    /// Whether a query with the per-query option `cache` looks the cache up and keeps its
    /// result (before anything is known of its plan).
    pub fn wanted(&self, query: &str, cache: Option<bool>) -> bool {
        if query.len() < MIN_QUERY_LENGTH {
            return false;
        }
        match self.properties.read().mode {
            CacheMode::Off => false,
            CacheMode::On => cache != Some(false),
            CacheMode::Demand => cache == Some(true),
        }
    }

    /// Applies `update`. A new mode empties the cache; lower limits and `includeSystem`
    /// turned off take effect on the entries at once.
    pub fn update(&self, update: &CacheUpdate) -> CacheProperties {
        let mut guard = self.properties.write();
        let props = &mut *guard;
        let before = props.clone();
        if let Some(mode) = update.mode {
            props.mode = mode;
        }
        for (field, value) in [
            (&mut props.max_results, update.max_results),
            (&mut props.max_results_size, update.max_results_size),
            (&mut props.max_entry_size, update.max_entry_size),
        ] {
            if let Some(v) = value {
                assert!(v > 0, "cache limits are positive");
                *field = v;
            }
        }
        if let Some(v) = update.include_system {
            props.include_system = v;
        }
        let mut databases = self.databases.lock();
        if props.mode != before.mode {
            databases.clear();
        } else {
            for entries in databases.values_mut() {
                if !props.include_system {
                    entries.retain(|e| {
                        !reads_system(e.result.sources.iter().map(|(n, _)| n.as_str()))
                    });
                }
                entries.retain(|e| e.size <= props.max_entry_size);
                entries.make_room(props, 0, 0);
            }
        }
        props.clone()
    }

    /// The entry for `key` in `database` if it is still fresh (a stale one is dropped). The
    /// hit is counted; whether the caller may see it is for the caller to check.
    pub fn lookup(
        &self,
        database: &str,
        key: &ResultKey,
        now: &dyn Freshness,
    ) -> Option<Arc<CachedResult>> {
        let mut databases = self.databases.lock();
        let entries = databases.get_mut(database)?;
        let entry = entries.by_key.get(key)?.clone();
        if !entry.fresh(now) {
            entries.remove(key);
            return None;
        }
        entry.hits.fetch_add(1, Ordering::Relaxed);
        Some(entry)
    }

    /// Keeps `result` if the settings allow it; returns whether it was kept.
    pub fn store(&self, database: &str, result: NewResult) -> bool {
        let props = self.properties.read().clone();
        if props.mode == CacheMode::Off {
            return false;
        }
        if !props.include_system && reads_system(result.sources.iter().map(|(n, _)| n.as_str())) {
            return false;
        }
        let size = (result.key.query.len() + result.key.binds.len()) as u64 + result.results_size;
        if size > props.max_entry_size || size > props.max_results_size || props.max_results == 0 {
            return false;
        }
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(CachedResult {
            result,
            size,
            seq,
            hits: AtomicU64::new(0),
        });
        let mut databases = self.databases.lock();
        let entries = databases.entry(database.to_string()).or_default();
        entries.remove(&entry.result.key);
        entries.make_room(&props, 1, size);
        entries.bytes += size;
        entries.order.push_back((seq, entry.result.key.clone()));
        entries.by_key.insert(entry.result.key.clone(), entry);
        debug_assert!(entries.by_key.len() as u64 <= props.max_results);
        debug_assert!(entries.bytes <= props.max_results_size);
        true
    }

    /// The fresh entries of `database` (stale ones are dropped on the way).
    pub fn entries(&self, database: &str, now: &dyn Freshness) -> Vec<Arc<CachedResult>> {
        let mut databases = self.databases.lock();
        let Some(entries) = databases.get_mut(database) else {
            return Vec::new();
        };
        entries.retain(|e| e.fresh(now));
        let mut list: Vec<Arc<CachedResult>> = entries.by_key.values().cloned().collect();
        list.sort_by_key(|e| e.seq);
        list
    }

    /// Forgets every entry of `database`.
    pub fn clear(&self, database: &str) {
        self.databases.lock().remove(database);
    }
}

fn reads_system<'a>(mut names: impl Iterator<Item = &'a str>) -> bool {
    names.any(|n| n.starts_with('_'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Current ticks by collection name; the collection id is 1 unless `recreated`.
    struct Versions(HashMap<String, u64>, bool);

    fn version(tick: u64) -> DataVersion {
        DataVersion {
            collection: 1,
            tick,
        }
    }

    impl Freshness for Versions {
        fn collection_version(&self, name: &str) -> Option<DataVersion> {
            self.0.get(name).map(|t| DataVersion {
                collection: if self.1 { 2 } else { 1 },
                tick: *t,
            })
        }
    }

    fn key(query: &str) -> ResultKey {
        ResultKey {
            query: query.into(),
            binds: String::new(),
            count: false,
            full_count: false,
            rules: Vec::new(),
        }
    }

    fn result(query: &str, sources: &[(&str, u64)], rows: usize) -> NewResult {
        NewResult {
            key: key(query),
            bind_vars: Map::new(),
            results: vec![json!(1); rows],
            raw_result: false,
            extra: Arc::default(),
            sources: sources
                .iter()
                .map(|(n, v)| (n.to_string(), version(*v)))
                .collect(),
            run_time: 0.001,
            started: SystemTime::now(),
            results_size: 10 * rows as u64,
        }
    }

    fn on(cache: &ResultsCache) {
        cache.update(&CacheUpdate {
            mode: Some(CacheMode::On),
            ..CacheUpdate::default()
        });
    }

    #[test]
    fn modes_and_the_per_query_option_decide_who_uses_the_cache() {
        let cache = ResultsCache::default();
        let q = "FOR d IN c RETURN d";
        assert!(!cache.wanted(q, Some(true)), "off ignores cache: true");
        on(&cache);
        assert!(cache.wanted(q, None));
        assert!(!cache.wanted(q, Some(false)));
        assert!(cache.wanted("RETURN 1", None), "8 bytes are enough");
        assert!(!cache.wanted("RETURN", None));
        cache.update(&CacheUpdate {
            mode: Some(CacheMode::Demand),
            ..CacheUpdate::default()
        });
        assert!(!cache.wanted(q, None));
        assert!(cache.wanted(q, Some(true)));
        assert_eq!(CacheMode::parse("bogus"), CacheMode::Off);
    }

    #[test]
    fn a_write_or_a_new_collection_of_the_same_name_makes_an_entry_stale() {
        let cache = ResultsCache::default();
        on(&cache);
        assert!(cache.store("db", result("FOR d IN c RETURN d", &[("c", 5)], 2)));
        let mut now = Versions(HashMap::from([("c".to_string(), 5)]), false);
        let hit = cache
            .lookup("db", &key("FOR d IN c RETURN d"), &now)
            .unwrap();
        assert_eq!(hit.result.results.len(), 2);
        assert!(cache
            .lookup("other", &key("FOR d IN c RETURN d"), &now)
            .is_none());
        now.1 = true;
        assert!(cache
            .lookup("db", &key("FOR d IN c RETURN d"), &now)
            .is_none());
        now.1 = false;
        assert!(
            cache
                .lookup("db", &key("FOR d IN c RETURN d"), &now)
                .is_none(),
            "a stale entry is dropped when found"
        );
        assert!(cache.store("db", result("FOR d IN c RETURN d", &[("c", 5)], 2)));
        now.0.insert("c".into(), 6);
        assert!(cache.entries("db", &now).is_empty());
    }

    #[test]
    fn the_oldest_entries_go_first_within_count_and_size_limits() {
        let cache = ResultsCache::default();
        on(&cache);
        cache.update(&CacheUpdate {
            max_results: Some(2),
            ..CacheUpdate::default()
        });
        let now = Versions(HashMap::from([("c".to_string(), 1)]), false);
        for q in ["RETURN 'aaaa'", "RETURN 'bbbb'", "RETURN 'cccc'"] {
            assert!(cache.store("db", result(q, &[("c", 1)], 1)));
            // A hit does not renew an entry.
            cache.lookup("db", &key("RETURN 'aaaa'"), &now);
        }
        let kept: Vec<String> = cache
            .entries("db", &now)
            .iter()
            .map(|e| e.result.key.query.clone())
            .collect();
        assert_eq!(kept, ["RETURN 'bbbb'", "RETURN 'cccc'"]);
        // Storing a key again replaces it and moves it to the end.
        assert!(cache.store("db", result("RETURN 'bbbb'", &[("c", 1)], 1)));
        assert!(cache.store("db", result("RETURN 'dddd'", &[("c", 1)], 1)));
        let kept: Vec<String> = cache
            .entries("db", &now)
            .iter()
            .map(|e| e.result.key.query.clone())
            .collect();
        assert_eq!(kept, ["RETURN 'bbbb'", "RETURN 'dddd'"]);
        // Too large for one entry: not kept; a lower total size evicts at once.
        cache.update(&CacheUpdate {
            max_entry_size: Some(100),
            ..CacheUpdate::default()
        });
        assert!(!cache.store("db", result("RETURN 'eeee'", &[("c", 1)], 50)));
        cache.update(&CacheUpdate {
            max_results_size: Some(30),
            ..CacheUpdate::default()
        });
        assert_eq!(cache.entries("db", &now).len(), 1);
    }

    #[test]
    fn system_collections_are_kept_only_with_include_system() {
        let cache = ResultsCache::default();
        on(&cache);
        let now = Versions(HashMap::from([("_users".to_string(), 1)]), false);
        assert!(!cache.store(
            "db",
            result("FOR u IN _users RETURN u", &[("_users", 1)], 1)
        ));
        cache.update(&CacheUpdate {
            include_system: Some(true),
            ..CacheUpdate::default()
        });
        assert!(cache.store(
            "db",
            result("FOR u IN _users RETURN u", &[("_users", 1)], 1)
        ));
        assert_eq!(cache.entries("db", &now).len(), 1);
        cache.update(&CacheUpdate {
            include_system: Some(false),
            ..CacheUpdate::default()
        });
        assert!(cache.entries("db", &now).is_empty());
    }

    #[test]
    fn a_new_mode_empties_the_cache_and_clear_empties_one_database() {
        let cache = ResultsCache::default();
        on(&cache);
        let now = Versions(HashMap::from([("c".to_string(), 1)]), false);
        assert!(cache.store("a", result("FOR d IN c RETURN d", &[("c", 1)], 1)));
        assert!(cache.store("b", result("FOR d IN c RETURN d", &[("c", 1)], 1)));
        cache.clear("a");
        assert!(cache.entries("a", &now).is_empty());
        assert_eq!(cache.entries("b", &now).len(), 1);
        cache.update(&CacheUpdate {
            mode: Some(CacheMode::Demand),
            ..CacheUpdate::default()
        });
        assert!(cache.entries("b", &now).is_empty());
        let listed = {
            assert!(cache.store("b", result("FOR d IN c RETURN d", &[("c", 1)], 3)));
            cache.entries("b", &now)[0].json(true)
        };
        assert_eq!(listed["results"], 3);
        assert_eq!(listed["dataSources"], json!(["c"]));
        assert_eq!(listed["bindVars"], json!({}));
        assert!(listed["hash"].as_str().unwrap().parse::<u64>().is_ok());
        assert!(listed["started"].as_str().unwrap().ends_with('Z'));
    }
}
