//! The analyzers a database's views index and search with, behind the index's
//! `AnalyzerSource`: names as links and `ANALYZER()` give them — ArangoDB's built-ins
//! (`identity`, `text_en`, …) and the custom analyzers of the analyzer catalog
//! (`analyzer_store.rs`: `name`, `::name`, `db::name`, `_system::name`). Resolved analyzers are
//! kept per name until an analyzer is created or removed anywhere (the catalog's generation
//! moves), so indexing a document costs a map read per analyzer.
//!
//! The same module answers the catalog's question "which views use this analyzer" (so that
//! dropping one a view uses needs `force`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::RwLock;
use quiver_search::index::AnalyzerSource;
use quiver_search::Analyzer;

use crate::analyzer_store as analyzers;
use crate::analyzer_usage::AnalyzerUsage;
use crate::database::Database;

/// At most this many analyzer names are remembered (names are user input).
const MAX_CACHED: usize = 1024;

/// The core's databases by name, shared with the catalog.
pub(crate) type DatabaseMap = Arc<RwLock<BTreeMap<String, Arc<Database>>>>;

struct Resolved {
    generation: u64,
    by_name: HashMap<String, Option<Arc<Analyzer>>>,
}

struct DatabaseAnalyzers {
    database: String,
    databases: DatabaseMap,
    cache: RwLock<Resolved>,
}

impl DatabaseAnalyzers {
    fn resolve(&self, name: &str) -> Option<Arc<Analyzer>> {
        let generation = analyzers::generation();
        {
            let cache = self.cache.read();
            if cache.generation == generation {
                if let Some(found) = cache.by_name.get(name) {
                    return found.clone();
                }
            }
        }
        let found = analyzers::lookup_among(&self.databases, &self.database, name).ok();
        let mut cache = self.cache.write();
        if cache.generation != generation {
            cache.by_name.clear();
            cache.generation = generation;
        }
        // An unknown name is not remembered: its database may still be opening.
        if found.is_some() && cache.by_name.len() < MAX_CACHED {
            cache.by_name.insert(name.to_string(), found.clone());
        }
        found
    }
}

impl AnalyzerSource for DatabaseAnalyzers {
    fn tokens(&self, analyzer: &str, input: &str) -> Option<Vec<(String, u32)>> {
        let analyzer = self.resolve(analyzer)?;
        Some(
            analyzer
                .tokens(input)
                .into_iter()
                .map(|t| (t.term, t.position))
                .collect(),
        )
    }

    fn visit_tokens(&self, analyzer: &str, input: &str, visit: &mut dyn FnMut(&str, u32)) -> bool {
        let Some(analyzer) = self.resolve(analyzer) else {
            return false;
        };
        analyzer.visit_tokens(input, visit);
        true
    }

    fn offset_tokens(&self, analyzer: &str, input: &str) -> Option<Vec<quiver_search::Token>> {
        let analyzer = self.resolve(analyzer)?;
        analyzer
            .features()
            .contains(&quiver_search::Feature::Offset)
            .then(|| analyzer.tokens(input))
    }

    fn return_type(&self, analyzer: &str) -> quiver_search::analyzer::ReturnType {
        self.resolve(analyzer)
            .map_or(quiver_search::analyzer::ReturnType::String, |a| {
                a.return_type()
            })
    }

    fn geo(&self, analyzer: &str) -> Option<quiver_search::analyzer::GeoAnalyzer> {
        self.resolve(analyzer)?.geo()
    }

    fn definition(&self, analyzer: &str) -> Option<serde_json::Value> {
        Some(self.resolve(analyzer)?.definition().to_json())
    }
}

/// The analyzers of database `database`, resolved through the core's `databases`.
pub(crate) fn analyzer_source(database: &str, databases: DatabaseMap) -> Arc<dyn AnalyzerSource> {
    Arc::new(DatabaseAnalyzers {
        database: database.to_string(),
        databases,
        cache: RwLock::new(Resolved {
            generation: analyzers::generation(),
            by_name: HashMap::new(),
        }),
    })
}

/// Which views and inverted indexes use an analyzer: every view of every database whose
/// links name it, every inverted index whose definition does (names normalized from the
/// database).
pub(crate) struct ViewsUsingAnalyzers {
    pub(crate) databases: DatabaseMap,
}

impl AnalyzerUsage for ViewsUsingAnalyzers {
    fn users_of(&self, analyzer: &str) -> Vec<String> {
        let databases: Vec<Arc<Database>> = self.databases.read().values().cloned().collect();
        let mut users = Vec::new();
        for db in databases {
            for view in db.views() {
                let uses = view
                    .analyzer_names()
                    .iter()
                    .any(|name| analyzers::normalize(db.name(), name) == analyzer);
                if uses {
                    users.push(format!("{}::{}", db.name(), view.name()));
                }
            }
            for coll in db.collections() {
                for ix in coll.open_inverted_indexes() {
                    let uses = ix
                        .analyzer_names()
                        .iter()
                        .any(|name| analyzers::normalize(db.name(), name) == analyzer);
                    if uses {
                        users.push(format!("{}::{}/{}", db.name(), coll.name(), ix.name));
                    }
                }
            }
        }
        users
    }
}
