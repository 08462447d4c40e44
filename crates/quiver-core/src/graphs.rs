//! Named graphs (ArangoDB's "gharial"): graph definitions kept as documents of each
//! database's `_graphs` system collection, in ArangoDB's own document format, so that anything
//! reading `_graphs` (AQL `GRAPH 'name'`, dumps) sees what ArangoDB would store:
//!
//! ```json
//! {"_key":"social","numberOfShards":1,"replicationFactor":1,"minReplicationFactor":1,
//!  "writeConcern":1,"isSmart":false,"isDisjoint":false,"isSatellite":false,
//!  "edgeDefinitions":[{"collection":"relation","from":["female","male"],"to":["female","male"]}],
//!  "orphanCollections":[]}
//! ```
//!
//! Edge definitions are kept sorted by edge collection and their `from`/`to` lists sorted and
//! free of duplicates (ArangoDB keeps them in ordered sets). The vertex collections of a graph
//! are every collection named in a `from` or `to` list plus the orphan collections.
//!
//! Definition changes (create, drop, add/replace/remove edge definitions and orphans) are
//! serialized by one process-wide mutex: they are rare, and one lock makes the cross-graph
//! rules (an edge collection used by two graphs must have the same definition in both) race
//! free without touching the database's own DDL lock. Vertex and edge writes through a graph
//! run in a [`Transaction`], so removing a vertex and every edge that points at it is one
//! atomic engine batch.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::Mutex;
use quiver_errors::{Error, ErrorCode, Result};
use serde_json::{json, Map, Value};

use crate::collection::{Collection, CollectionSpec, CollectionType};
use crate::database::Database;
use crate::indexes::edge::{EdgeDirection, EdgeHits};
use crate::options::{Committed, InsertOptions, ModifyOptions, OpResult, RemoveOptions};
use crate::txn::{DocumentReader, Transaction, TransactionOptions};

/// The system collection holding graph definitions (one document per graph, `_key` = name).
pub const GRAPHS_COLLECTION: &str = "_graphs";

/// Serializes graph definition changes in every database (see the module docs).
static GRAPH_DDL: Mutex<()> = parking_lot::const_mutex(());

/// One relation of a graph: edges stored in `collection` lead from a vertex of one of the
/// `from` collections to a vertex of one of the `to` collections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeDefinition {
    /// The edge collection.
    pub collection: String,
    /// Collections `_from` may point into.
    pub from: BTreeSet<String>,
    /// Collections `_to` may point into.
    pub to: BTreeSet<String>,
}

fn malformed_definition(message: impl Into<String>) -> Error {
    Error::with_message(ErrorCode::GraphCreateMalformedEdgeDefinition, message)
}

fn name_set(value: Option<&Value>, attribute: &str) -> Result<BTreeSet<String>> {
    let Some(Value::Array(items)) = value else {
        return Err(malformed_definition(format!(
            "edge definition attribute '{attribute}' must be an array of collection names"
        )));
    };
    let mut out = BTreeSet::new();
    for item in items {
        match item {
            Value::String(name) => {
                out.insert(name.clone());
            }
            _ => {
                return Err(malformed_definition(format!(
                    "edge definition attribute '{attribute}' must only contain strings"
                )))
            }
        }
    }
    if out.is_empty() {
        return Err(malformed_definition(format!(
            "edge definition attribute '{attribute}' must not be empty"
        )));
    }
    Ok(out)
}

impl EdgeDefinition {
    /// Parses `{collection, from: [...], to: [...]}`. Anything else is 400/1923.
    pub fn from_json(value: &Value) -> Result<EdgeDefinition> {
        let Value::Object(object) = value else {
            return Err(malformed_definition("edge definition must be an object"));
        };
        let collection = match object.get("collection") {
            Some(Value::String(name)) => name.clone(),
            _ => {
                return Err(malformed_definition(
                    "edge definition attribute 'collection' must be a string",
                ))
            }
        };
        Ok(EdgeDefinition {
            collection,
            from: name_set(object.get("from"), "from")?,
            to: name_set(object.get("to"), "to")?,
        })
    }

    /// The stored / reported form.
    pub fn to_json(&self) -> Value {
        json!({"collection": self.collection, "from": self.from, "to": self.to})
    }

    /// Whether `name` is one of the vertex collections of this relation.
    pub fn uses_vertex_collection(&self, name: &str) -> bool {
        self.from.contains(name) || self.to.contains(name)
    }
}

/// A named graph as stored in `_graphs`.
#[derive(Clone, Debug, PartialEq)]
pub struct Graph {
    /// The graph name (`_key` of its document).
    pub name: String,
    /// The document revision (empty until stored).
    pub rev: String,
    /// Edge definitions by edge collection.
    pub edge_definitions: BTreeMap<String, EdgeDefinition>,
    /// Vertex collections not used by any edge definition.
    pub orphan_collections: BTreeSet<String>,
    /// Cluster settings ArangoDB keeps in the definition (reported, meaningless on a single
    /// server).
    pub number_of_shards: u64,
    /// See `number_of_shards`.
    pub replication_factor: u64,
    /// See `number_of_shards`.
    pub write_concern: u64,
}

fn positive_number(object: &Map<String, Value>, name: &str, default: u64) -> Result<u64> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Number(n)) => match n.as_u64().or_else(|| n.as_f64().map(|f| f as u64)) {
            Some(v) if v >= 1 => Ok(v),
            _ => Err(Error::with_message(
                ErrorCode::BadParameter,
                format!("{name} must be greater than zero"),
            )),
        },
        Some(_) => Err(Error::with_message(
            ErrorCode::BadParameter,
            format!("{name} must be a number"),
        )),
    }
}

fn corrupt(name: &str) -> Error {
    Error::with_message(
        ErrorCode::GraphInternalDataCorrupt,
        format!("the definition of graph '{name}' in _graphs is corrupt"),
    )
}

impl Graph {
    fn empty(name: &str) -> Graph {
        Graph {
            name: name.to_string(),
            rev: String::new(),
            edge_definitions: BTreeMap::new(),
            orphan_collections: BTreeSet::new(),
            number_of_shards: 1,
            replication_factor: 1,
            write_concern: 1,
        }
    }

    /// Builds a graph from the body of `POST /_api/gharial` (name checked by the caller).
    /// Errors: `edgeDefinitions`/`orphanCollections` not arrays 400/1901, malformed
    /// definitions 400/1923, one edge collection in two definitions 400/1920, orphans that are
    /// not strings 400/1943, SmartGraph/SatelliteGraph options 501/31 (Enterprise features).
    pub fn from_input(name: &str, body: &Map<String, Value>) -> Result<Graph> {
        let mut graph = Graph::empty(name);
        match body.get("edgeDefinitions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(defs)) => {
                for def in defs {
                    graph.add_edge_definition(EdgeDefinition::from_json(def)?)?;
                }
            }
            Some(_) => {
                return Err(Error::with_message(
                    ErrorCode::GraphInvalidGraph,
                    "'edgeDefinitions' are not an array in the graph definition",
                ))
            }
        }
        match body.get("orphanCollections") {
            None | Some(Value::Null) => {}
            Some(Value::Array(names)) => {
                for item in names {
                    let Value::String(orphan) = item else {
                        return Err(Error::with_message(
                            ErrorCode::GraphCreateMalformedOrphanList,
                            "orphan collection is not a string!",
                        ));
                    };
                    // As in ArangoDB, an orphan that an edge definition already uses is
                    // simply a vertex collection of the graph.
                    let _ = graph.add_orphan(orphan);
                }
            }
            Some(_) => {
                return Err(Error::with_message(
                    ErrorCode::GraphInvalidGraph,
                    "'orphanCollections' are not an array in the graph definition",
                ))
            }
        }
        let options = match body.get("options") {
            Some(Value::Object(o)) => o.clone(),
            _ => Map::new(),
        };
        let enterprise = |o: &Map<String, Value>| {
            o.get("isSmart") == Some(&Value::Bool(true))
                || o.get("isDisjoint") == Some(&Value::Bool(true))
                || o.get("replicationFactor").and_then(Value::as_str) == Some("satellite")
        };
        if enterprise(body) || enterprise(&options) {
            return Err(Error::with_message(
                ErrorCode::OnlyEnterprise,
                "SmartGraphs, EnterpriseGraphs and SatelliteGraphs are not available",
            ));
        }
        graph.number_of_shards = positive_number(&options, "numberOfShards", 1)?;
        graph.replication_factor = positive_number(&options, "replicationFactor", 1)?;
        let concern_default = positive_number(&options, "minReplicationFactor", 1)?;
        graph.write_concern = positive_number(&options, "writeConcern", concern_default)?;
        Ok(graph)
    }

    /// Reads a stored `_graphs` document. Errors: 500/1941 when it is not a valid definition.
    pub fn from_stored(doc: &Value) -> Result<Graph> {
        let object = doc.as_object().ok_or_else(|| corrupt("?"))?;
        let name = object
            .get("_key")
            .and_then(Value::as_str)
            .ok_or_else(|| corrupt("?"))?;
        let mut graph = Graph::empty(name);
        graph.rev = object
            .get("_rev")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(defs) = object.get("edgeDefinitions") {
            let defs = defs.as_array().ok_or_else(|| corrupt(name))?;
            for def in defs {
                let def = EdgeDefinition::from_json(def).map_err(|_| corrupt(name))?;
                graph.add_edge_definition(def).map_err(|_| corrupt(name))?;
            }
        }
        if let Some(orphans) = object.get("orphanCollections") {
            for orphan in orphans.as_array().ok_or_else(|| corrupt(name))? {
                let orphan = orphan.as_str().ok_or_else(|| corrupt(name))?;
                let _ = graph.add_orphan(orphan);
            }
        }
        let number = |key: &str| object.get(key).and_then(Value::as_u64).unwrap_or(1);
        graph.number_of_shards = number("numberOfShards");
        graph.replication_factor = number("replicationFactor");
        graph.write_concern = object
            .get("writeConcern")
            .or_else(|| object.get("minReplicationFactor"))
            .and_then(Value::as_u64)
            .unwrap_or(1);
        Ok(graph)
    }

    fn persisted_fields(&self, map: &mut Map<String, Value>) {
        map.insert("numberOfShards".into(), self.number_of_shards.into());
        map.insert("replicationFactor".into(), self.replication_factor.into());
        map.insert("minReplicationFactor".into(), self.write_concern.into());
        map.insert("writeConcern".into(), self.write_concern.into());
        map.insert("isSmart".into(), false.into());
        map.insert("isDisjoint".into(), false.into());
        map.insert("isSatellite".into(), false.into());
        map.insert(
            "edgeDefinitions".into(),
            Value::Array(
                self.edge_definitions
                    .values()
                    .map(EdgeDefinition::to_json)
                    .collect(),
            ),
        );
        map.insert(
            "orphanCollections".into(),
            json!(self.orphan_collections.iter().collect::<Vec<_>>()),
        );
    }

    /// The `_graphs` document (without `_rev`).
    pub fn to_stored(&self) -> Value {
        let mut map = Map::new();
        map.insert("_key".into(), self.name.clone().into());
        self.persisted_fields(&mut map);
        Value::Object(map)
    }

    /// The graph object of the HTTP API: the stored attributes plus `_rev`, `_id`, `name`.
    pub fn to_client(&self) -> Value {
        let mut map = Map::new();
        map.insert("_key".into(), self.name.clone().into());
        self.persisted_fields(&mut map);
        map.insert("_rev".into(), self.rev.clone().into());
        map.insert(
            "_id".into(),
            format!("{GRAPHS_COLLECTION}/{}", self.name).into(),
        );
        map.insert("name".into(), self.name.clone().into());
        Value::Object(map)
    }

    /// Every vertex collection (named by an edge definition or an orphan), sorted.
    pub fn vertex_collections(&self) -> BTreeSet<String> {
        let mut out = self.orphan_collections.clone();
        for def in self.edge_definitions.values() {
            out.extend(def.from.iter().cloned());
            out.extend(def.to.iter().cloned());
        }
        out
    }

    /// Every edge collection, sorted.
    pub fn edge_collections(&self) -> Vec<String> {
        self.edge_definitions.keys().cloned().collect()
    }

    /// Whether `name` is a vertex collection of this graph (orphans included).
    pub fn has_vertex_collection(&self, name: &str) -> bool {
        self.orphan_collections.contains(name)
            || self
                .edge_definitions
                .values()
                .any(|d| d.uses_vertex_collection(name))
    }

    /// Whether `name` is an edge collection of this graph.
    pub fn has_edge_collection(&self, name: &str) -> bool {
        self.edge_definitions.contains_key(name)
    }

    /// Whether the graph names `name` in any role.
    pub fn uses_collection(&self, name: &str) -> bool {
        self.has_edge_collection(name) || self.has_vertex_collection(name)
    }

    /// Adds a definition; its vertex collections stop being orphans. 400/1920 if the edge
    /// collection already has a definition in this graph.
    pub fn add_edge_definition(&mut self, def: EdgeDefinition) -> Result<()> {
        if self.edge_definitions.contains_key(&def.collection) {
            return Err(Error::with_message(
                ErrorCode::GraphCollectionMultiUse,
                format!(
                    "{} {}",
                    def.collection,
                    ErrorCode::GraphCollectionMultiUse.default_message()
                ),
            ));
        }
        for name in def.from.iter().chain(&def.to) {
            self.orphan_collections.remove(name);
        }
        self.edge_definitions.insert(def.collection.clone(), def);
        Ok(())
    }

    /// Removes the definition of edge collection `name`; its vertex collections that no other
    /// definition uses stay in the graph as orphans (as ArangoDB does). False if absent.
    pub fn remove_edge_definition(&mut self, name: &str) -> bool {
        let Some(old) = self.edge_definitions.remove(name) else {
            return false;
        };
        for vertex in old.from.iter().chain(&old.to) {
            if !self
                .edge_definitions
                .values()
                .any(|d| d.uses_vertex_collection(vertex))
            {
                self.orphan_collections.insert(vertex.clone());
            }
        }
        true
    }

    /// Adds an orphan collection. 400/1938 if it is an orphan already, 400/1929 if an edge
    /// definition uses it.
    pub fn add_orphan(&mut self, name: &str) -> Result<()> {
        if self.orphan_collections.contains(name) {
            return Err(Error::new(ErrorCode::GraphCollectionUsedInOrphans));
        }
        if self.has_vertex_collection(name) {
            return Err(Error::with_message(
                ErrorCode::GraphCollectionUsedInEdgeDef,
                format!(
                    "{name} {}",
                    ErrorCode::GraphCollectionUsedInEdgeDef.default_message()
                ),
            ));
        }
        self.orphan_collections.insert(name.to_string());
        Ok(())
    }

    /// 404/1930 unless `name` is an edge collection of the graph.
    pub fn check_edge_collection(&self, name: &str) -> Result<()> {
        if self.has_edge_collection(name) {
            Ok(())
        } else {
            Err(Error::new(ErrorCode::GraphEdgeCollectionNotUsed))
        }
    }

    /// ArangoDB's check before vertex operations: 404/1949 when `name` is not a vertex
    /// collection of the graph, 404/1926 when the collection does not exist.
    pub fn check_vertex_collection(&self, db: &Database, name: &str) -> Result<()> {
        if !self.has_vertex_collection(name) {
            return Err(Error::new(ErrorCode::GraphCollectionNotPartOfTheGraph));
        }
        if db.collection(name).is_err() {
            return Err(Error::with_message(
                ErrorCode::GraphVertexColDoesNotExist,
                format!(
                    "{name} {}",
                    ErrorCode::GraphVertexColDoesNotExist.default_message()
                ),
            ));
        }
        Ok(())
    }

    /// Validates `_from`/`_to` of an edge written through the graph and returns the vertex
    /// handles whose documents must exist. A replace or insert needs both attributes (400/1233
    /// otherwise); an update checks whichever is given and, as ArangoDB 3.12 does, only
    /// requires the vertices to exist when both are given. A vertex collection outside the
    /// graph is 404/1947.
    pub fn check_edge_document(
        &self,
        db: &Database,
        doc: &Value,
        is_update: bool,
    ) -> Result<Vec<String>> {
        let from = doc.get("_from").and_then(Value::as_str);
        let to = doc.get("_to").and_then(Value::as_str);
        let check = |handle: &str, attribute: &str| -> Result<()> {
            let Some((collection, _)) = handle.split_once('/') else {
                return Err(Error::new(ErrorCode::InvalidEdgeAttribute));
            };
            if !self.has_vertex_collection(collection) {
                return Err(Error::with_message(
                    ErrorCode::GraphReferencedVertexCollectionNotUsed,
                    format!(
                        "referenced {attribute} collection '{collection}' is not part of the graph"
                    ),
                ));
            }
            self.check_vertex_collection(db, collection)
        };
        match (from, to) {
            (Some(from), Some(to)) => {
                check(from, "_from")?;
                check(to, "_to")?;
                Ok(vec![from.to_string(), to.to_string()])
            }
            _ if is_update => {
                if let Some(from) = from {
                    check(from, "_from")?;
                }
                if let Some(to) = to {
                    check(to, "_to")?;
                }
                Ok(Vec::new())
            }
            _ => Err(Error::new(ErrorCode::InvalidEdgeAttribute)),
        }
    }
}

/// 404/1202 unless every handle names an existing document for `reader`.
pub fn check_vertices_exist(
    reader: &(impl DocumentReader + ?Sized),
    handles: &[String],
) -> Result<()> {
    for handle in handles {
        let (collection, key) = handle.split_once('/').unwrap_or((handle, ""));
        let coll = reader.collection(collection)?;
        let found = match quiver_types::validate_key(key) {
            Ok(()) => reader.get_raw(&coll, key)?.is_some(),
            Err(_) => false,
        };
        if !found {
            return Err(Error::new(ErrorCode::DocumentNotFound));
        }
    }
    Ok(())
}

fn graphs_collection(db: &Database) -> Result<Arc<Collection>> {
    db.collection(GRAPHS_COLLECTION)
        .map_err(|_| Error::new(ErrorCode::GraphNoGraphCollection))
}

fn not_found(name: &str) -> Error {
    Error::with_message(
        ErrorCode::GraphNotFound,
        format!("graph '{name}' not found"),
    )
}

/// Every graph of the database, sorted by name.
pub fn list(db: &Arc<Database>) -> Result<Vec<Graph>> {
    let coll = graphs_collection(db)?;
    let view = db.read_view();
    let mut out = Vec::new();
    for doc in view.scan(&coll)? {
        out.push(Graph::from_stored(&doc?)?);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// One graph. Errors: 404/1924 "graph '<name>' not found".
pub fn get(db: &Arc<Database>, name: &str) -> Result<Graph> {
    let coll = graphs_collection(db)?;
    if quiver_types::validate_key(name).is_err() {
        return Err(not_found(name));
    }
    match db.read_view().get(&coll, name)? {
        Some(doc) => Graph::from_stored(&doc),
        None => Err(not_found(name)),
    }
}

/// The names of the graphs that use collection `name` in any role (for the 3.12 rule that a
/// graph collection must not be dropped on its own).
pub fn graphs_using(db: &Arc<Database>, name: &str) -> Result<Vec<String>> {
    Ok(list(db)?
        .into_iter()
        .filter(|g| g.uses_collection(name))
        .map(|g| g.name)
        .collect())
}

/// 400/1942 when a graph uses collection `name`: ArangoDB 3.12 refuses to drop collections
/// that are part of a graph definition (drop the graph or change it first).
pub fn check_collection_droppable(db: &Arc<Database>, name: &str) -> Result<()> {
    let Ok(coll) = graphs_collection(db) else {
        return Ok(());
    };
    if coll.is_dropped() {
        return Ok(());
    }
    for graph in list(db)? {
        let role = if graph.orphan_collections.contains(name) {
            "an orphan collection"
        } else if graph.has_edge_collection(name) {
            "an edge collection"
        } else if graph.has_vertex_collection(name) {
            "a vertex collection"
        } else {
            continue;
        };
        return Err(Error::with_message(
            ErrorCode::GraphMustNotDropCollection,
            format!(
                "{}: collection '{name}' is {role} inside graph '{}'",
                ErrorCode::GraphMustNotDropCollection.default_message(),
                graph.name
            ),
        ));
    }
    Ok(())
}

/// 400/1921 when another graph defines edge collection `def.collection` differently.
fn check_conflicts<'a>(
    others: &[Graph],
    graph_name: &str,
    defs: impl Iterator<Item = &'a EdgeDefinition>,
) -> Result<()> {
    for def in defs {
        for other in others.iter().filter(|g| g.name != graph_name) {
            if let Some(existing) = other.edge_definitions.get(&def.collection) {
                if existing != def {
                    return Err(Error::with_message(
                        ErrorCode::GraphCollectionUseInMultiGraphs,
                        format!(
                            "{} {}",
                            def.collection,
                            ErrorCode::GraphCollectionUseInMultiGraphs.default_message()
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Creates the missing collections of a graph (edge collections as edge collections, the
/// rest as document collections) after checking the existing ones: an edge collection that
/// exists as a document collection is 400/1944.
fn ensure_collections(db: &Arc<Database>, graph: &Graph, wait_for_sync: bool) -> Result<()> {
    let edges = graph.edge_collections();
    for name in &edges {
        if let Ok(coll) = db.collection(name) {
            if coll.collection_type() != CollectionType::Edge {
                return Err(Error::with_message(
                    ErrorCode::GraphEdgeDefinitionIsDocument,
                    format!("Collection: '{name}' is not an EdgeCollection"),
                ));
            }
        }
    }
    let mut missing: Vec<(String, CollectionType)> = Vec::new();
    for name in &edges {
        if db.collection(name).is_err() {
            missing.push((name.clone(), CollectionType::Edge));
        }
    }
    for name in graph.vertex_collections() {
        if db.collection(&name).is_err() && !edges.contains(&name) {
            missing.push((name, CollectionType::Document));
        }
    }
    for (name, kind) in missing {
        let mut spec = CollectionSpec::new(name);
        spec.collection_type = kind;
        spec.wait_for_sync = wait_for_sync;
        match db.create_collection(spec) {
            Ok(_) => {}
            // Created concurrently by someone else: it exists now, which is all we need.
            Err(err) if err.code == ErrorCode::DuplicateName => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

fn stored_graph(committed: Committed<OpResult>, mut graph: Graph) -> Committed<Graph> {
    committed.map(|op| {
        graph.rev = op.rev.encode();
        graph
    })
}

fn write_options(wait_for_sync: bool) -> (InsertOptions, ModifyOptions) {
    let mut insert = InsertOptions::new();
    insert.wait_for_sync = wait_for_sync;
    let mut modify = ModifyOptions::new();
    modify.wait_for_sync = wait_for_sync;
    (insert, modify)
}

/// Replaces the stored definition of `graph` (already checked to exist).
fn store(db: &Arc<Database>, graph: Graph, wait_for_sync: bool) -> Result<Committed<Graph>> {
    let coll = graphs_collection(db)?;
    let (_, modify) = write_options(wait_for_sync);
    let committed = coll.replace(&graph.name, graph.to_stored(), &modify)?;
    Ok(stored_graph(committed, graph))
}

/// Drops the collections in `candidates` that no graph uses any more (ArangoDB's
/// `dropCollections`). Returns the first failure after trying all of them.
fn drop_unused(db: &Arc<Database>, candidates: &BTreeSet<String>) -> Result<()> {
    let graphs = list(db)?;
    let mut first_error = None;
    for name in candidates {
        if graphs.iter().any(|g| g.uses_collection(name)) || db.collection(name).is_err() {
            continue;
        }
        if let Err(err) = db.drop_collection(name, false) {
            tracing::warn!(collection = %name, error = %err.message, "dropping a graph collection failed");
            first_error.get_or_insert(err);
        }
    }
    match first_error {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

/// `POST /_api/gharial`: validates the body, creates missing collections and stores the
/// definition. Errors: name missing 400/1922, existing graph 409/1925, see
/// [`Graph::from_input`], conflicting edge definitions 400/1921, collection problems
/// (1944, 1208, ...).
pub fn create(db: &Arc<Database>, body: &Value, wait_for_sync: bool) -> Result<Committed<Graph>> {
    let Value::Object(object) = body else {
        return Err(Error::new(ErrorCode::GraphCreateMissingName));
    };
    let name = match object.get("name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        _ => return Err(Error::new(ErrorCode::GraphCreateMissingName)),
    };
    let _ddl = GRAPH_DDL.lock();
    let coll = graphs_collection(db)?;
    let existing = list(db)?;
    if existing.iter().any(|g| g.name == name) {
        return Err(Error::new(ErrorCode::GraphDuplicate));
    }
    if quiver_types::validate_key(&name).is_err() {
        return Err(Error::with_message(
            ErrorCode::GraphCreateMissingName,
            format!("illegal graph name '{name}'"),
        ));
    }
    let graph = Graph::from_input(&name, object)?;
    check_conflicts(&existing, &name, graph.edge_definitions.values())?;
    ensure_collections(db, &graph, wait_for_sync)?;
    let (insert, _) = write_options(wait_for_sync);
    let committed = coll.insert(graph.to_stored(), &insert)?;
    Ok(stored_graph(committed, graph))
}

/// `DELETE /_api/gharial/{graph}`: removes the definition and, with `drop_collections`, the
/// graph's collections that no other graph uses. Errors: 404/1924.
pub fn drop(
    db: &Arc<Database>,
    name: &str,
    drop_collections: bool,
    wait_for_sync: bool,
) -> Result<Committed<()>> {
    let _ddl = GRAPH_DDL.lock();
    let graph = get(db, name)?;
    let coll = graphs_collection(db)?;
    let mut remove = RemoveOptions::new();
    remove.wait_for_sync = wait_for_sync;
    let committed = coll.remove(name, &remove)?;
    if drop_collections {
        let mut candidates = graph.vertex_collections();
        candidates.extend(graph.edge_collections());
        drop_unused(db, &candidates)?;
    }
    Ok(committed.map(|_| ()))
}

/// `POST /_api/gharial/{graph}/vertex` with `{"collection": name}`: adds an orphan
/// collection, creating it when missing and `create_collection` is set (404/1926 otherwise).
/// Errors: 1938, 1929 (see [`Graph::add_orphan`]), an existing edge collection 400/1927.
pub fn add_vertex_collection(
    db: &Arc<Database>,
    graph_name: &str,
    body: &Value,
    create_collection: bool,
    wait_for_sync: bool,
) -> Result<Committed<Graph>> {
    let name = match body.get("collection") {
        Some(Value::String(name)) => name.clone(),
        _ => {
            return Err(Error::with_message(
                ErrorCode::BadParameter,
                "expecting attribute 'collection' with a collection name",
            ))
        }
    };
    let _ddl = GRAPH_DDL.lock();
    let mut graph = get(db, graph_name)?;
    graph.add_orphan(&name)?;
    match db.collection(&name) {
        Ok(coll) => {
            if coll.collection_type() != CollectionType::Document {
                return Err(Error::new(ErrorCode::GraphWrongCollectionTypeVertex));
            }
        }
        Err(_) if !create_collection => {
            return Err(Error::with_message(
                ErrorCode::GraphVertexColDoesNotExist,
                format!(
                    "{name} {}",
                    ErrorCode::GraphVertexColDoesNotExist.default_message()
                ),
            ))
        }
        Err(_) => {}
    }
    ensure_collections(db, &graph, wait_for_sync)?;
    store(db, graph, wait_for_sync)
}

/// `DELETE /_api/gharial/{graph}/vertex/{collection}`: removes an orphan collection
/// (400/1928 if it is not one) and, with `drop_collection`, drops it unless another graph
/// uses it.
pub fn remove_vertex_collection(
    db: &Arc<Database>,
    graph_name: &str,
    name: &str,
    drop_collection: bool,
    wait_for_sync: bool,
) -> Result<Committed<Graph>> {
    let _ddl = GRAPH_DDL.lock();
    let mut graph = get(db, graph_name)?;
    if !graph.orphan_collections.remove(name) {
        return Err(Error::new(ErrorCode::GraphNotInOrphanCollection));
    }
    let committed = store(db, graph, wait_for_sync)?;
    if drop_collection {
        drop_unused(db, &BTreeSet::from([name.to_string()]))?;
    }
    Ok(committed)
}

/// `POST /_api/gharial/{graph}/edge`: adds an edge definition, creating missing
/// collections. Errors: 1923, 1920, 1921, 1944.
pub fn add_edge_definition(
    db: &Arc<Database>,
    graph_name: &str,
    body: &Value,
    wait_for_sync: bool,
) -> Result<Committed<Graph>> {
    let def = EdgeDefinition::from_json(body)?;
    let _ddl = GRAPH_DDL.lock();
    let mut graph = get(db, graph_name)?;
    graph.add_edge_definition(def.clone())?;
    check_conflicts(&list(db)?, graph_name, std::iter::once(&def))?;
    ensure_collections(db, &graph, wait_for_sync)?;
    store(db, graph, wait_for_sync)
}

/// `PUT /_api/gharial/{graph}/edge/{collection}`: replaces the definition of an edge
/// collection in this graph and in every other graph that uses the same edge collection (the
/// definitions must stay equal). Vertex collections that no definition uses any more become
/// orphans. Errors: 1923, 404/1930 when the URL's or the body's edge collection is not part of
/// the graph, 1944.
pub fn replace_edge_definition(
    db: &Arc<Database>,
    graph_name: &str,
    edge_collection: &str,
    body: &Value,
    wait_for_sync: bool,
) -> Result<Committed<Graph>> {
    let def = EdgeDefinition::from_json(body)?;
    let _ddl = GRAPH_DDL.lock();
    let graph = get(db, graph_name)?;
    graph.check_edge_collection(edge_collection)?;
    graph.check_edge_collection(&def.collection)?;
    let coll = graphs_collection(db)?;
    let mut trx = db.begin_transaction(TransactionOptions {
        write: vec![GRAPHS_COLLECTION.to_string()],
        allow_implicit: true,
        wait_for_sync,
        ..TransactionOptions::default()
    })?;
    let (_, modify) = write_options(wait_for_sync);
    let mut changed = None;
    for mut other in list(db)? {
        if !other.has_edge_collection(&def.collection) {
            continue;
        }
        other.remove_edge_definition(&def.collection);
        other.add_edge_definition(def.clone())?;
        ensure_collections(db, &other, wait_for_sync)?;
        let op = trx.replace(&coll, Some(&other.name), other.to_stored(), &modify)?;
        if other.name == graph_name {
            other.rev = op.rev.encode();
            changed = Some(other);
        }
    }
    let graph = changed.ok_or_else(|| not_found(graph_name))?;
    Ok(trx.commit()?.map(|()| graph))
}

/// `DELETE /_api/gharial/{graph}/edge/{collection}`: removes an edge definition (404/1930 if
/// absent); its vertex collections stay as orphans unless still used. With
/// `drop_collections`, the edge collection is dropped unless another graph uses it.
pub fn remove_edge_definition(
    db: &Arc<Database>,
    graph_name: &str,
    edge_collection: &str,
    drop_collections: bool,
    wait_for_sync: bool,
) -> Result<Committed<Graph>> {
    let _ddl = GRAPH_DDL.lock();
    let mut graph = get(db, graph_name)?;
    if !graph.remove_edge_definition(edge_collection) {
        return Err(Error::new(ErrorCode::GraphEdgeCollectionNotUsed));
    }
    let committed = store(db, graph, wait_for_sync)?;
    if drop_collections {
        drop_unused(db, &BTreeSet::from([edge_collection.to_string()]))?;
    }
    Ok(committed)
}

/// Follows a collection rename in every graph definition that names `old` (ArangoDB
/// renames graph collections along with the collection), in one transaction on `_graphs`.
/// Returns how many graphs changed.
pub fn rename_collection(db: &Arc<Database>, old: &str, new: &str) -> Result<usize> {
    if old == new {
        return Ok(0);
    }
    let _ddl = GRAPH_DDL.lock();
    let Ok(coll) = graphs_collection(db) else {
        return Ok(0);
    };
    let rename = |set: &BTreeSet<String>| -> BTreeSet<String> {
        set.iter()
            .map(|n| if n == old { new.to_string() } else { n.clone() })
            .collect()
    };
    let mut trx = db.begin_transaction(TransactionOptions {
        write: vec![GRAPHS_COLLECTION.to_string()],
        allow_implicit: true,
        ..TransactionOptions::default()
    })?;
    let (_, modify) = write_options(false);
    let mut changed = 0;
    for graph in list(db)? {
        if !graph.uses_collection(old) {
            continue;
        }
        let mut renamed = Graph {
            edge_definitions: BTreeMap::new(),
            orphan_collections: rename(&graph.orphan_collections),
            ..graph.clone()
        };
        for def in graph.edge_definitions.values() {
            let collection = if def.collection == old {
                new.to_string()
            } else {
                def.collection.clone()
            };
            renamed.edge_definitions.insert(
                collection.clone(),
                EdgeDefinition {
                    collection,
                    from: rename(&def.from),
                    to: rename(&def.to),
                },
            );
        }
        trx.replace(&coll, Some(&graph.name), renamed.to_stored(), &modify)?;
        changed += 1;
    }
    if changed > 0 {
        trx.commit()?.wait()?;
    }
    Ok(changed)
}

/// The edge collections whose edges may point at documents of `collection` and must go
/// when such a document is removed through `graph`: every edge collection of `graph` plus
/// the edge collections of any graph whose definitions name `collection` (ArangoDB's rule).
/// Collections that do not exist are left out.
pub fn connected_edge_collections(
    db: &Arc<Database>,
    graph: &Graph,
    collection: &str,
) -> Result<Vec<Arc<Collection>>> {
    let mut names: BTreeSet<String> = graph.edge_collections().into_iter().collect();
    for other in list(db)? {
        for def in other.edge_definitions.values() {
            if def.uses_vertex_collection(collection) {
                names.insert(def.collection.clone());
            }
        }
    }
    Ok(names
        .into_iter()
        .filter_map(|name| db.collection(&name).ok())
        .filter(|c| c.is_edge())
        .collect())
}

/// The collections a transaction removing a document of `collection` through `graph` must
/// declare for writing.
pub fn removal_write_set(
    db: &Arc<Database>,
    graph: &Graph,
    collection: &str,
) -> Result<Vec<String>> {
    let mut names = vec![collection.to_string()];
    for coll in connected_edge_collections(db, graph, collection)? {
        let name = coll.name().to_string();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(names)
}

/// Removes document `key` of `collection` and every edge (in the collections of
/// [`connected_edge_collections`]) whose `_from` or `_to` is that document, inside `trx`, so
/// the commit removes all of them at once or none. The document's own errors (404/1202,
/// 412/1200) come first; nothing is staged then.
pub fn remove_with_edges(
    trx: &mut Transaction,
    db: &Arc<Database>,
    graph: &Graph,
    collection: &Arc<Collection>,
    key: &str,
    opts: &RemoveOptions,
) -> Result<OpResult> {
    let removed = trx.remove(collection, &Value::String(key.to_string()), opts)?;
    let handle = format!("{}/{key}", collection.name());
    let edge_opts = RemoveOptions {
        wait_for_sync: opts.wait_for_sync,
        ..RemoveOptions::new()
    };
    let mut hits = EdgeHits::new();
    for edges in connected_edge_collections(db, graph, &collection.name())? {
        hits.clear();
        trx.edges(&edges, &handle, EdgeDirection::Outbound, &mut hits)?;
        trx.edges(&edges, &handle, EdgeDirection::Inbound, &mut hits)?;
        let mut keys: Vec<&str> = hits.iter().map(|h| h.key).collect();
        keys.sort_unstable();
        keys.dedup();
        for edge_key in keys {
            match trx.remove(&edges, &Value::String(edge_key.to_string()), &edge_opts) {
                // The edge may be the removed document itself (an edge collection used as a
                // vertex collection) or already staged for removal.
                Ok(_) => {}
                Err(err) if err.code == ErrorCode::DocumentNotFound => {}
                Err(err) => return Err(err),
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(c: &str, from: &[&str], to: &[&str]) -> Value {
        json!({"collection": c, "from": from, "to": to})
    }

    #[test]
    fn edge_definitions_are_validated_and_normalized() {
        let d = EdgeDefinition::from_json(&def("e", &["b", "a", "a"], &["c"])).unwrap();
        assert_eq!(
            d.to_json(),
            json!({"collection":"e","from":["a","b"],"to":["c"]})
        );
        for bad in [
            json!(1),
            json!({"from": ["a"], "to": ["b"]}),
            json!({"collection": "e", "from": "a", "to": ["b"]}),
            json!({"collection": "e", "from": [], "to": ["b"]}),
            json!({"collection": "e", "from": ["a"], "to": [1]}),
        ] {
            let err = EdgeDefinition::from_json(&bad).unwrap_err();
            assert_eq!(
                err.code,
                ErrorCode::GraphCreateMalformedEdgeDefinition,
                "{bad}"
            );
        }
    }

    #[test]
    fn orphans_follow_edge_definitions() {
        let body = json!({
            "edgeDefinitions": [def("knows", &["person"], &["person"])],
            "orphanCollections": ["city", "person"]
        });
        let mut g = Graph::from_input("g", body.as_object().unwrap()).unwrap();
        // "person" is used by a definition, so it is no orphan.
        assert_eq!(g.orphan_collections, BTreeSet::from(["city".to_string()]));
        assert_eq!(
            g.add_orphan("city").unwrap_err().code,
            ErrorCode::GraphCollectionUsedInOrphans
        );
        assert_eq!(
            g.add_orphan("person").unwrap_err().code,
            ErrorCode::GraphCollectionUsedInEdgeDef
        );
        let lives = EdgeDefinition::from_json(&def("lives", &["person"], &["city"])).unwrap();
        g.add_edge_definition(lives.clone()).unwrap();
        assert!(g.orphan_collections.is_empty());
        assert_eq!(
            g.add_edge_definition(lives).unwrap_err().code,
            ErrorCode::GraphCollectionMultiUse
        );
        assert!(g.remove_edge_definition("lives"));
        assert_eq!(g.orphan_collections, BTreeSet::from(["city".to_string()]));
        assert!(g.remove_edge_definition("knows"));
        assert_eq!(
            g.orphan_collections,
            BTreeSet::from(["city".to_string(), "person".to_string()])
        );
        assert!(!g.remove_edge_definition("knows"));
    }

    #[test]
    fn input_errors_use_arangodb_numbers() {
        let cases = [
            (json!({"edgeDefinitions": {}}), ErrorCode::GraphInvalidGraph),
            (
                json!({"orphanCollections": "x"}),
                ErrorCode::GraphInvalidGraph,
            ),
            (
                json!({"orphanCollections": [1]}),
                ErrorCode::GraphCreateMalformedOrphanList,
            ),
            (
                json!({"edgeDefinitions": [def("e", &["a"], &["b"]), def("e", &["a"], &["c"])]}),
                ErrorCode::GraphCollectionMultiUse,
            ),
            (json!({"isSmart": true}), ErrorCode::OnlyEnterprise),
            (
                json!({"options": {"replicationFactor": 0}}),
                ErrorCode::BadParameter,
            ),
        ];
        for (body, code) in cases {
            let err = Graph::from_input("g", body.as_object().unwrap()).unwrap_err();
            assert_eq!(err.code, code, "{body}");
        }
    }

    #[test]
    fn stored_form_round_trips() {
        let body = json!({
            "edgeDefinitions": [def("e2", &["b"], &["a"]), def("e1", &["a"], &["b"])],
            "orphanCollections": ["z"],
            "options": {"numberOfShards": 3}
        });
        let g = Graph::from_input("g", body.as_object().unwrap()).unwrap();
        let mut stored = g.to_stored();
        assert_eq!(stored["_key"], "g");
        assert_eq!(stored["edgeDefinitions"][0]["collection"], "e1");
        assert_eq!(stored["numberOfShards"], 3);
        assert_eq!(stored["isSmart"], false);
        stored["_rev"] = json!("_abc");
        let back = Graph::from_stored(&stored).unwrap();
        assert_eq!(back.rev, "_abc");
        assert_eq!(back.edge_definitions, g.edge_definitions);
        assert_eq!(back.orphan_collections, g.orphan_collections);
        let client = back.to_client();
        assert_eq!(client["_id"], "_graphs/g");
        assert_eq!(client["name"], "g");
        assert_eq!(
            Graph::from_stored(&json!({"_key": "x", "edgeDefinitions": 3}))
                .unwrap_err()
                .code,
            ErrorCode::GraphInternalDataCorrupt
        );
    }
}
