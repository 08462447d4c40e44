//! What a database's view catalog (`views.rs`) and its `search-alias` views
//! (`search_alias.rs`) need from the database that holds them: its collections by name and
//! id, their linked feeds and inverted indexes, and where the view definitions are stored.
//! `Database` implements it (`database.rs`), so the views never name the database type.

use std::sync::Arc;

use quiver_errors::Result;
use quiver_storage::{CollectionId, Engine};
use quiver_types::NamingConvention;
use serde_json::Value;

use crate::indexes::inverted::InvertedIndex;
use crate::view_links::LinkedViews;

/// What the view catalog needs from its database (implemented by `Database`).
pub(crate) trait ViewHost {
    /// The id of collection `name`; 1203 when there is none.
    fn collection_id(&self, name: &str) -> Result<CollectionId>;
    /// The name of collection `id`, if it exists.
    fn collection_name(&self, id: CollectionId) -> Option<String>;
    /// The views linked to collection `id` (its write path feeds them), if it exists.
    fn linked_views(&self, id: CollectionId) -> Option<Arc<LinkedViews>>;
    fn has_collection_named(&self, name: &str) -> bool;
    /// Stores the catalog's JSON in the database's catalog entry.
    fn persist_views(&self, views: Value) -> Result<()>;
    fn engine(&self) -> &Engine;
    fn naming(&self) -> NamingConvention;
    fn database_name(&self) -> &str;
    /// The open inverted index `name_or_id` of collection `cid`, if it exists.
    fn inverted_index(&self, cid: CollectionId, name_or_id: &str) -> Option<Arc<InvertedIndex>>;
    /// The open inverted index `index` of collection `cid`, if it exists.
    fn inverted_index_by_id(&self, cid: CollectionId, index: u64) -> Option<Arc<InvertedIndex>>;
}
