//! The names of the test cases (`--test-case`), with what each one is and how it splits its
//! work; the command-line options and the cases themselves both read this catalogue.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaseKind {
    Version,
    Document,
    ImportDocument,
    Collection,
    Crud,
    CrudAppend,
    CrudWriteRead,
    EdgeCrud,
    PersistentIndex,
    Shapes,
    ShapesAppend,
    RandomShapes,
    AqlInsert,
    CustomQuery,
    DocumentGet,
    DocumentUpdate,
    DocumentRemove,
}

impl CaseKind {
    pub const ALL: &'static [CaseKind] = &[
        CaseKind::Version,
        CaseKind::Document,
        CaseKind::ImportDocument,
        CaseKind::Collection,
        CaseKind::Crud,
        CaseKind::CrudAppend,
        CaseKind::CrudWriteRead,
        CaseKind::EdgeCrud,
        CaseKind::PersistentIndex,
        CaseKind::Shapes,
        CaseKind::ShapesAppend,
        CaseKind::RandomShapes,
        CaseKind::AqlInsert,
        CaseKind::CustomQuery,
        CaseKind::DocumentGet,
        CaseKind::DocumentUpdate,
        CaseKind::DocumentRemove,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CaseKind::Version => "version",
            CaseKind::Document => "document",
            CaseKind::ImportDocument => "import-document",
            CaseKind::Collection => "collection",
            CaseKind::Crud => "crud",
            CaseKind::CrudAppend => "crud-append",
            CaseKind::CrudWriteRead => "crud-write-read",
            CaseKind::EdgeCrud => "edge-crud",
            CaseKind::PersistentIndex => "persistent-index",
            CaseKind::Shapes => "shapes",
            CaseKind::ShapesAppend => "shapes-append",
            CaseKind::RandomShapes => "random-shapes",
            CaseKind::AqlInsert => "aqlinsert",
            CaseKind::CustomQuery => "custom-query",
            CaseKind::DocumentGet => "document-get",
            CaseKind::DocumentUpdate => "document-update",
            CaseKind::DocumentRemove => "document-remove",
        }
    }

    /// Accepts the current names and the old arangob ones (`edge`, `hash`, `skiplist`).
    pub fn from_name(name: &str) -> Option<CaseKind> {
        match name {
            "edge" => return Some(CaseKind::EdgeCrud),
            "hash" | "skiplist" => return Some(CaseKind::PersistentIndex),
            _ => {}
        }
        CaseKind::ALL.iter().copied().find(|c| c.name() == name)
    }

    /// Operations per key cycle: work is split between connections in whole cycles so that
    /// the insert of a key and the reads, updates and removal that follow it stay in order on
    /// one connection (as arangobench does by giving each thread its own counter range).
    pub fn cycle(self) -> u64 {
        match self {
            CaseKind::Crud => 5,
            CaseKind::CrudAppend | CaseKind::EdgeCrud | CaseKind::PersistentIndex => 4,
            CaseKind::Shapes | CaseKind::RandomShapes => 3,
            CaseKind::CrudWriteRead | CaseKind::ShapesAppend => 2,
            _ => 1,
        }
    }

    /// Whether the test works on `--collection` (drops and recreates it in setup).
    pub fn uses_collection(self) -> bool {
        !matches!(
            self,
            CaseKind::Version | CaseKind::Collection | CaseKind::CustomQuery
        )
    }

    /// QuiverDB additions (not in arangobench), used by the journal-size experiment.
    pub fn is_extension(self) -> bool {
        matches!(
            self,
            CaseKind::DocumentGet | CaseKind::DocumentUpdate | CaseKind::DocumentRemove
        )
    }

    pub fn description(self) -> &'static str {
        match self {
            CaseKind::Version => "GET /_api/version (raw request throughput)",
            CaseKind::Document => "single-document inserts, --complexity string attributes each",
            CaseKind::ImportDocument => "POST /_api/import with --complexity documents per request",
            CaseKind::Collection => "creates one collection per operation",
            CaseKind::Crud => "insert, get, update, get, remove per key (20 % inserts, 40 % reads, 20 % updates, 20 % removals)",
            CaseKind::CrudAppend => "insert, get, update, get per key",
            CaseKind::CrudWriteRead => "insert, get per key",
            CaseKind::EdgeCrud => "edge insert, get, update, get per key",
            CaseKind::PersistentIndex => {
                "insert, get, update, get on a collection with a persistent index on 'value'"
            }
            CaseKind::Shapes => "insert, get, remove with varying but predictable attribute names",
            CaseKind::ShapesAppend => "insert, get with varying attribute names",
            CaseKind::RandomShapes => {
                "insert, get, remove with unique attribute names and random values"
            }
            CaseKind::AqlInsert => "one AQL INSERT per request",
            CaseKind::CustomQuery => "runs --custom-query once per operation",
            CaseKind::DocumentGet => {
                "(QuiverDB) reads --requests preloaded documents one request each"
            }
            CaseKind::DocumentUpdate => {
                "(QuiverDB) updates --requests preloaded documents one request each"
            }
            CaseKind::DocumentRemove => {
                "(QuiverDB) removes --requests preloaded documents one request each"
            }
        }
    }
}
