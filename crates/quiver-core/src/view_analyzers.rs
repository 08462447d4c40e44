//! The analyzers a database's views index and search with, behind the index's
//! `AnalyzerSource`: names as links and `ANALYZER()` give them (`identity` and ArangoDB's other
//! built-ins such as `text_en`). Analyzers are built once per name and kept.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use quiver_search::index::AnalyzerSource;
use quiver_search::Analyzer;

/// At most this many analyzer names are remembered (names are user input).
const MAX_CACHED: usize = 1024;

struct DatabaseAnalyzers {
    cache: RwLock<HashMap<String, Option<Arc<Analyzer>>>>,
}

impl DatabaseAnalyzers {
    fn resolve(&self, name: &str) -> Option<Arc<Analyzer>> {
        if let Some(found) = self.cache.read().get(name) {
            return found.clone();
        }
        let built = Analyzer::builtin(name).map(Arc::new);
        let mut cache = self.cache.write();
        if cache.len() < MAX_CACHED {
            cache.insert(name.to_string(), built.clone());
        }
        built
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
}

/// The analyzers of database `database`.
pub(crate) fn analyzer_source(database: &str) -> Arc<dyn AnalyzerSource> {
    let _ = database;
    Arc::new(DatabaseAnalyzers {
        cache: RwLock::new(HashMap::new()),
    })
}
