//! Indexes: their definitions and the in-memory structures that answer index lookups.
//!
//! - [`definition`]: an index definition as stored in the collection's catalog entry and
//!   reported by `/_api/index` (`IndexDef`), its validation, the fixed ids of the primary and
//!   edge indexes.
//! - [`structure`]: the interface every in-memory index type implements; the types are
//!   [`persistent`] (ArangoDB's `persistent` index, also `hash` and `skiplist`: an ordered map
//!   from indexed values to documents), [`geo`], [`fulltext`], [`mdi`] and [`vector`].
//! - [`maintained`]: which type maintains a definition, and the snapshot-correct maintenance
//!   protocol every type shares (entries added before a commit, garbage collected after it).
//! - [`edge`]: the edge index of an edge collection (`_from`/`_to` → edges).
//! - [`unique`]: the claims of unique indexes, checked on every write path.
//! - [`ttl`]: the timestamp a ttl index reads from a document.
//! - [`inverted`]: inverted indexes, kept by the machinery of an arangosearch view's link.
//!
//! Indexes never name a collection: the collection (`collection.rs`) owns its indexes, and a
//! commit (`commit.rs`) hands the written collections' indexes to [`maintained`] and [`edge`].

pub(crate) mod definition;
pub(crate) mod edge;
pub mod fulltext;
pub(crate) mod geo;
pub(crate) mod inverted;
pub(crate) mod maintained;
pub mod mdi;
pub(crate) mod persistent;
pub(crate) mod structure;
pub(crate) mod ttl;
pub(crate) mod unique;
pub mod vector;
