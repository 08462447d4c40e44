//! The catalog: databases and collections with their options and the core's metadata,
//! persisted as `catalog.json` (atomic rewrite before a DDL call returns) and published as an
//! immutable `Arc<Catalog>` (copy on write under the DDL mutex).
//!
//! Invariants: a collection's MANIFEST exists before the catalog lists it; the catalog
//! records the tick counter as a high-water mark, so ids are never reused; options are
//! validated ([`crate::validate_collection_options`]) before they are stored.

use crate::files;
use crate::format;
use crate::{CollectionEntry, CollectionOptions, DatabaseEntry, FailPoint, JOURNAL_SIZE_MAX};
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::collection::ColFiles;
use super::collection::{new_collection, Collection};
use super::{next_tick, Inner};

#[derive(Clone, Default)]
pub(crate) struct Catalog {
    pub(super) databases: BTreeMap<u64, Value>,
    pub(super) collections: BTreeMap<u64, Arc<Collection>>,
}

fn options_json(o: &CollectionOptions) -> Value {
    json!({"journalSize": o.journal_size, "waitForSync": o.wait_for_sync, "doCompact": o.do_compact})
}

/// The options of collection `cid` as `catalog.json` stores them. A `journalSize` outside
/// today's bounds (an older build accepted up to 2 GiB and clamped at use; a test engine may
/// have stored a small one) is brought to the nearest bound, with a warning: the collection
/// opens, and its options report the size in effect.
pub(super) fn options_from_json(v: &Value, cid: u64, min_journal_size: u64) -> CollectionOptions {
    let journal_size = v.get("journalSize").and_then(Value::as_u64).map(|size| {
        let bounded = size.clamp(min_journal_size, JOURNAL_SIZE_MAX);
        if bounded != size {
            tracing::warn!(
                "collection {cid}: stored journalSize {size} is outside \
                 {min_journal_size}..={JOURNAL_SIZE_MAX}; using {bounded}"
            );
        }
        bounded
    });
    CollectionOptions {
        journal_size,
        wait_for_sync: v
            .get("waitForSync")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        do_compact: v.get("doCompact").and_then(Value::as_bool).unwrap_or(true),
    }
}

impl Inner {
    /// The current catalog.
    pub(super) fn catalog(&self) -> Arc<Catalog> {
        self.catalog.read().clone()
    }

    /// Rewrites `catalog.json` atomically from `cat`.
    pub(super) fn persist_catalog(&self, cat: &Catalog) -> Result<()> {
        let dbs: Vec<Value> = cat
            .databases
            .iter()
            .map(|(id, meta)| json!({"id": id, "meta": meta}))
            .collect();
        let cols: Vec<Value> = cat
            .collections
            .values()
            .map(|c| {
                json!({"id": c.id, "db": c.db, "options": options_json(&c.options.read()), "meta": *c.meta.read()})
            })
            .collect();
        let doc = json!({
            "version": format::FORMAT_VERSION,
            "engine": "quiver-mmfiles",
            "tick": self.tick.load(Ordering::Acquire),
            "databases": dbs,
            "collections": cols,
        });
        let bytes = serde_json::to_vec_pretty(&doc)
            .map_err(|e| Error::with_message(ErrorCode::Internal, e.to_string()))?;
        files::atomic_write(
            &self.dir.join("catalog.json"),
            &bytes,
            &self.options.io_hooks,
            FailPoint::MetaWrite,
        )
        .map_err(|e| files::io_error(e, "writing catalog.json"))
    }

    pub(crate) fn catalog_entries(&self) -> Vec<DatabaseEntry> {
        let cat = self.catalog();
        cat.databases
            .iter()
            .map(|(id, meta)| DatabaseEntry {
                id: *id,
                meta: meta.clone(),
                collections: cat
                    .collections
                    .values()
                    .filter(|c| c.db == *id)
                    .map(|c| CollectionEntry {
                        id: c.id,
                        options: c.options.read().clone(),
                        meta: c.meta.read().clone(),
                        status: c.status.clone(),
                    })
                    .collect(),
            })
            .collect()
    }

    /// One DDL step: `f` edits a copy of the catalog, which is persisted, then published.
    fn ddl_update(&self, f: impl FnOnce(&mut Catalog) -> Result<()>) -> Result<()> {
        self.check_open()?;
        let _g = self.ddl.lock();
        let mut next = (*self.catalog()).clone();
        f(&mut next)?;
        // A catalog change is small and often the way out of a full disk (a drop): it may
        // use the disk reserve.
        self.reserve
            .retry_when_full("writing catalog.json", || self.persist_catalog(&next))?;
        *self.catalog.write() = Arc::new(next);
        Ok(())
    }

    pub(crate) fn create_database(&self, meta: Value) -> Result<u64> {
        let id = next_tick(self);
        self.ddl_update(|cat| {
            cat.databases.insert(id, meta);
            Ok(())
        })?;
        Ok(id)
    }

    pub(crate) fn update_database(&self, db: u64, meta: Value) -> Result<()> {
        self.ddl_update(|cat| match cat.databases.get_mut(&db) {
            Some(m) => {
                *m = meta;
                Ok(())
            }
            None => Err(Error::new(ErrorCode::DatabaseNotFound)),
        })
    }

    pub(crate) fn drop_database(&self, db: u64) -> Result<()> {
        let mut dropped = Vec::new();
        self.ddl_update(|cat| {
            if cat.databases.remove(&db).is_none() {
                return Err(Error::new(ErrorCode::DatabaseNotFound));
            }
            let ids: Vec<u64> = cat
                .collections
                .values()
                .filter(|c| c.db == db)
                .map(|c| c.id)
                .collect();
            for id in ids {
                if let Some(c) = cat.collections.remove(&id) {
                    dropped.push(c);
                }
            }
            Ok(())
        })?;
        for c in dropped {
            self.release_collection(&c);
        }
        let _ = std::fs::remove_dir_all(self.dir.join(format!("db-{db}")));
        self.request_wal_release();
        Ok(())
    }

    /// Forgets a dropped collection's files and removes its directory.
    fn release_collection(&self, col: &Collection) {
        col.dropped.store(true, Ordering::Release);
        let cf = col.files.lock();
        let mut table = self.files.write();
        for f in cf
            .datafiles
            .iter()
            .chain(cf.journal.iter().map(|j| &j.file))
        {
            table.remove(&f.slot);
        }
        drop(table);
        drop(cf);
        let _ = std::fs::remove_dir_all(&col.dir);
    }

    pub(crate) fn create_collection(
        &self,
        db: u64,
        options: CollectionOptions,
        meta: Value,
    ) -> Result<u64> {
        options.validate(self.options.min_journal_size)?;
        let id = next_tick(self);
        let dir = self.dir.clone();
        self.ddl_update(|cat| {
            if !cat.databases.contains_key(&db) {
                return Err(Error::new(ErrorCode::DatabaseNotFound));
            }
            let col = new_collection(&dir, id, db, options, meta);
            col.counts.lock().push_back((0, 0));
            std::fs::create_dir_all(&col.dir)
                .map_err(|e| files::io_error(e, "creating a collection directory"))?;
            // The MANIFEST exists before the catalog lists the collection, so that a missing
            // one always means damage.
            self.write_manifest(&col, &ColFiles::default())?;
            cat.collections.insert(id, Arc::new(col));
            Ok(())
        })?;
        Ok(id)
    }

    pub(crate) fn collection(&self, cid: u64) -> Result<Arc<Collection>> {
        // Under the read lock rather than through a clone of the catalog's `Arc`: this is on
        // every single insert, and that reference count is shared by all cores.
        self.catalog
            .read()
            .collections
            .get(&cid)
            .cloned()
            .ok_or_else(|| Error::new(ErrorCode::DataSourceNotFound))
    }

    pub(crate) fn collection_options(&self, cid: u64) -> Result<CollectionOptions> {
        Ok(self.collection(cid)?.options.read().clone())
    }

    pub(crate) fn update_collection(
        &self,
        cid: u64,
        options: CollectionOptions,
        meta: Value,
    ) -> Result<()> {
        self.check_open()?;
        options.validate(self.options.min_journal_size)?;
        let col = self.collection(cid)?;
        let _g = self.ddl.lock();
        let old = (col.options.read().clone(), col.meta.read().clone());
        *col.options.write() = options;
        *col.meta.write() = meta;
        let persisted = self.reserve.retry_when_full("writing catalog.json", || {
            self.persist_catalog(&self.catalog())
        });
        if let Err(e) = persisted {
            *col.options.write() = old.0;
            *col.meta.write() = old.1;
            return Err(e);
        }
        Ok(())
    }

    pub(crate) fn drop_collection(&self, cid: u64) -> Result<()> {
        let mut dropped = None;
        self.ddl_update(|cat| {
            dropped = cat.collections.remove(&cid);
            match dropped {
                Some(_) => Ok(()),
                None => Err(Error::new(ErrorCode::DataSourceNotFound)),
            }
        })?;
        if let Some(c) = dropped {
            self.release_collection(&c);
        }
        self.request_wal_release();
        Ok(())
    }
}
