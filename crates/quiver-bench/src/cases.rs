//! The test cases: which request each operation sends, how the collection is prepared, and
//! what is checked afterwards. Names, URLs and bodies follow arangobench's test cases so that
//! figures are comparable.

use std::io::Write;

use quiver_errors::{Error, ErrorCode};
use serde_json::{json, Value};

use crate::case_kind::CaseKind;
use crate::http::{HttpClient, Method};
use crate::options::Config;

/// What an operation does, for checking its response and for the verification afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    Version,
    /// Inserts one document.
    Insert,
    /// Imports documents; the response says how many were created.
    Import(u64),
    Read,
    Update,
    Remove,
    /// Creates the collection `<collection><n>`.
    CreateCollection(u64),
    Query,
}

impl Effect {
    /// Statuses ArangoDB answers a successful operation with (without x-arango-async).
    pub fn expected(self) -> &'static [u16] {
        match self {
            Effect::Version | Effect::Read | Effect::CreateCollection(_) => &[200],
            Effect::Insert | Effect::Update => &[201, 202],
            Effect::Import(_) | Effect::Query => &[201],
            Effect::Remove => &[200, 202],
        }
    }
}

/// One operation, built into reused buffers.
#[derive(Debug, Clone)]
pub struct Op {
    pub method: Method,
    /// Path relative to the database (`/_api/...`).
    pub path: String,
    pub body: Vec<u8>,
    pub effect: Effect,
}

impl Default for Op {
    fn default() -> Op {
        Op {
            method: Method::Get,
            path: String::with_capacity(128),
            body: Vec::with_capacity(256),
            effect: Effect::Version,
        }
    }
}

/// What the server acknowledged, per connection; summed for the verification.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acks {
    pub inserted: u64,
    pub removed: u64,
    pub imported: u64,
    pub collections: Vec<u64>,
}

impl Acks {
    pub fn merge(&mut self, other: &Acks) {
        self.inserted += other.inserted;
        self.removed += other.removed;
        self.imported += other.imported;
        self.collections.extend_from_slice(&other.collections);
    }
}

const SHAPES_VALUE: &str = "some bogus string value to fill up the datafile...";
/// Documents per import request when preloading (bounds the request body).
const PRELOAD_CHUNK: u64 = 10_000;

/// A test case bound to its settings.
#[derive(Debug, Clone)]
pub struct TestCase {
    pub kind: CaseKind,
    pub collection: String,
    pub complexity: u64,
    /// --requests (shapes derives its attribute-name range from it; the document-* extensions
    /// preload this many documents).
    pub requests: u64,
    /// arangobench draws one random value per run for random-shapes.
    pub random_value: u32,
    /// Pre-built constant bodies (import-document, custom-query).
    constant_body: Vec<u8>,
    /// The collection is created by setup with waitForSync (checked afterwards).
    sync_collection: bool,
}

fn push_str(out: &mut Vec<u8>, s: &str) {
    // serde_json escapes exactly as JSON needs; writing to a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

impl TestCase {
    pub fn new(config: &Config, random_value: u32) -> TestCase {
        let mut constant_body = Vec::new();
        match config.case {
            CaseKind::ImportDocument => {
                for i in 0..config.complexity {
                    let _ = writeln!(constant_body, "{{\"key1\":{i},\"key2\":{i}}}");
                }
            }
            CaseKind::CustomQuery => {
                if let Some((query, bind_vars)) = &config.custom_query {
                    constant_body = serde_json::to_vec(&json!({
                        "query": query,
                        "bindVars": bind_vars,
                    }))
                    .unwrap_or_default();
                }
            }
            _ => {}
        }
        TestCase {
            kind: config.case,
            collection: config.collection.clone(),
            complexity: config.complexity,
            requests: config.requests,
            random_value,
            constant_body,
            sync_collection: config.wait_for_sync
                && config.create_collection
                && config.case.uses_collection(),
        }
    }

    fn doc_url(&self, op: &mut Op, key_prefix: &str, key: u64) {
        op.path.clear();
        op.path.push_str("/_api/document/");
        op.path.push_str(&self.collection);
        op.path.push('/');
        op.path.push_str(key_prefix);
        op.path.push_str(&key.to_string());
    }

    fn insert_url(&self, op: &mut Op, silent: bool) {
        op.path.clear();
        op.path.push_str("/_api/document?collection=");
        op.path.push_str(&self.collection);
        if silent {
            op.path.push_str("&silent=true");
        }
    }

    /// `{"_key":"testkey<k>","value1":<flag>,...}` (crud family).
    fn flag_body(&self, out: &mut Vec<u8>, key: u64, flag: bool, edge_counter: Option<u64>) {
        out.clear();
        let _ = write!(out, "{{\"_key\":\"testkey{key}\"");
        if let Some(counter) = edge_counter {
            out.extend_from_slice(b",\"_from\":");
            push_str(out, &format!("{}/testfrom{counter}", self.collection));
            out.extend_from_slice(b",\"_to\":");
            push_str(out, &format!("{}/testto{counter}", self.collection));
        }
        for i in 1..=self.complexity {
            let _ = write!(out, ",\"value{i}\":{flag}");
        }
        out.push(b'}');
    }

    /// Builds operation number `counter` (the global operation counter of arangobench);
    /// `conn_counter` counts the operations of this connection.
    pub fn build(&self, counter: u64, conn: usize, conn_counter: u64, op: &mut Op) {
        op.body.clear();
        match self.kind {
            CaseKind::Version => {
                op.method = Method::Get;
                op.path.clear();
                op.path.push_str("/_api/version");
                op.effect = Effect::Version;
            }
            CaseKind::Document => {
                op.method = Method::Post;
                self.insert_url(op, true);
                op.body.push(b'{');
                for i in 1..=self.complexity {
                    if i > 1 {
                        op.body.push(b',');
                    }
                    let _ = write!(op.body, "\"test{i}\":\"some test value\"");
                }
                op.body.push(b'}');
                op.effect = Effect::Insert;
            }
            CaseKind::ImportDocument => {
                op.method = Method::Post;
                op.path.clear();
                op.path.push_str("/_api/import?collection=");
                op.path.push_str(&self.collection);
                op.path.push_str("&type=documents");
                op.body.extend_from_slice(&self.constant_body);
                op.effect = Effect::Import(self.complexity);
            }
            CaseKind::Collection => {
                op.method = Method::Post;
                op.path.clear();
                op.path.push_str("/_api/collection");
                let number = counter + 1;
                op.body.extend_from_slice(b"{\"name\":");
                push_str(&mut op.body, &format!("{}{number}", self.collection));
                op.body.push(b'}');
                op.effect = Effect::CreateCollection(number);
            }
            CaseKind::Crud
            | CaseKind::CrudAppend
            | CaseKind::CrudWriteRead
            | CaseKind::EdgeCrud => {
                let cycle = self.kind.cycle();
                let key = counter / cycle;
                let edge = self.kind == CaseKind::EdgeCrud;
                match counter % cycle {
                    0 => {
                        op.method = Method::Post;
                        self.insert_url(op, false);
                        self.flag_body(&mut op.body, key, true, edge.then_some(counter));
                        op.effect = Effect::Insert;
                    }
                    2 => {
                        op.method = Method::Patch;
                        self.doc_url(op, "testkey", key);
                        self.flag_body(&mut op.body, key, false, None);
                        op.effect = Effect::Update;
                    }
                    4 => {
                        op.method = Method::Delete;
                        self.doc_url(op, "testkey", key);
                        op.effect = Effect::Remove;
                    }
                    _ => {
                        op.method = Method::Get;
                        self.doc_url(op, "testkey", key);
                        op.effect = Effect::Read;
                    }
                }
            }
            CaseKind::PersistentIndex => {
                let key = counter / 4;
                match counter % 4 {
                    0 | 2 => {
                        let insert = counter % 4 == 0;
                        op.method = if insert { Method::Post } else { Method::Patch };
                        if insert {
                            self.insert_url(op, false);
                        } else {
                            self.doc_url(op, "testkey", key);
                        }
                        let _ = write!(
                            op.body,
                            "{{\"_key\":\"testkey{key}\",\"value\":{}}}",
                            conn_counter as u32
                        );
                        op.effect = if insert {
                            Effect::Insert
                        } else {
                            Effect::Update
                        };
                    }
                    _ => {
                        op.method = Method::Get;
                        self.doc_url(op, "testkey", key);
                        op.effect = Effect::Read;
                    }
                }
            }
            CaseKind::Shapes | CaseKind::ShapesAppend | CaseKind::RandomShapes => {
                let cycle = self.kind.cycle();
                let key = counter / cycle;
                match counter % cycle {
                    0 => {
                        op.method = Method::Post;
                        self.insert_url(op, true);
                        let _ = write!(op.body, "{{\"_key\":\"testkey{key}\"");
                        if self.kind == CaseKind::RandomShapes {
                            let t = self.random_value
                                % ((counter + conn as u64 + 1).min(u64::from(u32::MAX)) as u32);
                            for i in 1..=self.complexity {
                                let _ = write!(op.body, ",\"value{}\":", counter + i);
                                match t % 3 {
                                    0 => op.body.extend_from_slice(b"true"),
                                    1 => op.body.extend_from_slice(b"null"),
                                    _ => push_str(&mut op.body, SHAPES_VALUE),
                                }
                            }
                        } else {
                            // Attribute names cycle through max(requests/10, 100) names;
                            // capping at that many keeps names unique within a document.
                            let modulus = (self.requests / 10).max(100);
                            for i in 1..=self.complexity.min(modulus) {
                                let _ = write!(op.body, ",\"value{}\":", (counter + i) % modulus);
                                push_str(&mut op.body, SHAPES_VALUE);
                            }
                        }
                        op.body.push(b'}');
                        op.effect = Effect::Insert;
                    }
                    1 => {
                        op.method = Method::Get;
                        self.doc_url(op, "testkey", key);
                        op.effect = Effect::Read;
                    }
                    _ => {
                        op.method = Method::Delete;
                        self.doc_url(op, "testkey", key);
                        op.effect = Effect::Remove;
                    }
                }
            }
            CaseKind::AqlInsert => {
                op.method = Method::Post;
                op.path.clear();
                op.path.push_str("/_api/cursor");
                op.body.extend_from_slice(b"{\"query\":");
                push_str(
                    &mut op.body,
                    &format!("INSERT @data INTO `{}`", self.collection),
                );
                let _ = write!(
                    op.body,
                    ",\"bindVars\":{{\"data\":{{\"_key\":\"test{counter}\""
                );
                for i in 1..=self.complexity {
                    let _ = write!(op.body, ",\"value{i}\":true");
                }
                op.body.extend_from_slice(b"}}}");
                op.effect = Effect::Insert;
            }
            CaseKind::CustomQuery => {
                op.method = Method::Post;
                op.path.clear();
                op.path.push_str("/_api/cursor");
                op.body.extend_from_slice(&self.constant_body);
                op.effect = Effect::Query;
            }
            CaseKind::DocumentGet | CaseKind::DocumentUpdate | CaseKind::DocumentRemove => {
                let key = counter % self.requests.max(1);
                self.doc_url(op, "testkey", key);
                match self.kind {
                    CaseKind::DocumentGet => {
                        op.method = Method::Get;
                        op.effect = Effect::Read;
                    }
                    CaseKind::DocumentUpdate => {
                        op.method = Method::Patch;
                        op.body.extend_from_slice(b"{");
                        for i in 1..=self.complexity {
                            if i > 1 {
                                op.body.push(b',');
                            }
                            let _ = write!(op.body, "\"value{i}\":false");
                        }
                        op.body.push(b'}');
                        op.effect = Effect::Update;
                    }
                    _ => {
                        op.method = Method::Delete;
                        op.effect = Effect::Remove;
                    }
                }
            }
        }
    }

    /// Prepares the server for a run: drops and recreates the collection, adds the index,
    /// preloads documents. Returns the document count the run starts from.
    pub async fn setup(&self, client: &mut HttpClient, config: &Config) -> Result<u64, Error> {
        if !self.kind.uses_collection() {
            return Ok(0);
        }
        if config.create_collection {
            let path = format!("/_api/collection/{}", self.collection);
            let response = client
                .request(Method::Delete, &path, None, b"", false)
                .await?;
            if response.status != 200 && response.status != 404 {
                return Err(server_error("dropping the collection", &response));
            }
            let collection_type = if self.kind == CaseKind::EdgeCrud {
                3
            } else {
                2
            };
            let body = json!({
                "name": self.collection,
                "type": collection_type,
                "waitForSync": config.wait_for_sync,
                "replicationFactor": config.replication_factor,
                "numberOfShards": config.number_of_shards,
            });
            let response = client
                .send_json(Method::Post, "/_api/collection", &body)
                .await?;
            if response.status != 200 && response.status != 201 {
                return Err(server_error("creating the collection", &response));
            }
            if self.kind == CaseKind::PersistentIndex {
                let path = format!("/_api/index?collection={}", self.collection);
                let body = json!({"type": "persistent", "fields": ["value"], "unique": false, "sparse": false});
                let response = client.send_json(Method::Post, &path, &body).await?;
                if response.status != 200 && response.status != 201 {
                    return Err(server_error("creating the persistent index", &response));
                }
            }
            if self.kind.is_extension() {
                self.preload(client).await?;
            }
        }
        self.count(client).await
    }

    async fn preload(&self, client: &mut HttpClient) -> Result<(), Error> {
        let path = format!("/_api/import?collection={}&type=documents", self.collection);
        let mut start = 0;
        let mut body = Vec::new();
        let mut line = Vec::new();
        while start < self.requests {
            let end = (start + PRELOAD_CHUNK).min(self.requests);
            body.clear();
            for key in start..end {
                self.flag_body(&mut line, key, true, None);
                body.extend_from_slice(&line);
                body.push(b'\n');
            }
            let response = client
                .request(Method::Post, &path, None, &body, false)
                .await?;
            let created = response
                .json()
                .and_then(|v| v.get("created").and_then(Value::as_u64));
            if response.status != 201 || created != Some(end - start) {
                return Err(server_error("preloading documents", &response));
            }
            start = end;
        }
        Ok(())
    }

    /// The collection's document count.
    pub async fn count(&self, client: &mut HttpClient) -> Result<u64, Error> {
        let path = format!("/_api/collection/{}/count", self.collection);
        let response = client.get(&path).await?;
        match (response.status, response.json()) {
            (200, Some(v)) => v.get("count").and_then(Value::as_u64).ok_or_else(|| {
                Error::with_message(
                    ErrorCode::SimpleClientCouldNotRead,
                    format!("count response without a count: {}", response.body_text()),
                )
            }),
            _ => Err(server_error("counting the collection", &response)),
        }
    }

    /// Checks what can be checked after a run; returns the problems found. With
    /// `async_mode` the server applies the writes after answering, so counts are polled
    /// for a bounded time.
    pub async fn verify(
        &self,
        client: &mut HttpClient,
        acks: &Acks,
        initial_count: u64,
        async_mode: bool,
    ) -> Vec<String> {
        let mut problems = Vec::new();
        match self.kind {
            CaseKind::Version | CaseKind::CustomQuery => {}
            CaseKind::Collection => {
                if let Err(e) = self.verify_collections(client, acks, &mut problems).await {
                    problems.push(format!("verification failed: {}", e.message));
                }
            }
            _ => {
                let expected = match self.kind {
                    CaseKind::ImportDocument => initial_count + acks.imported,
                    _ => (initial_count + acks.inserted).saturating_sub(acks.removed),
                };
                let attempts = if async_mode { 300 } else { 1 };
                let mut last = None;
                for attempt in 0..attempts {
                    if attempt > 0 {
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                    match self.count(client).await {
                        Ok(count) => {
                            last = Some(Ok(count));
                            if count == expected {
                                break;
                            }
                        }
                        Err(e) => last = Some(Err(e)),
                    }
                }
                match last {
                    Some(Ok(count)) if count == expected => {}
                    Some(Ok(count)) => problems.push(format!(
                        "collection '{}' holds {count} documents, expected {expected} \
                         (start {initial_count}, acknowledged inserts {}, imports {}, removals {})",
                        self.collection, acks.inserted, acks.imported, acks.removed
                    )),
                    Some(Err(e)) => problems.push(format!("cannot count documents: {}", e.message)),
                    None => {}
                }
                if self.kind == CaseKind::PersistentIndex {
                    let path = format!("/_api/index?collection={}", self.collection);
                    match client.get(&path).await {
                        Ok(r) if r.status == 200 => {
                            let found = r.json().is_some_and(|v| {
                                v.get("indexes")
                                    .and_then(Value::as_array)
                                    .is_some_and(|list| {
                                        list.iter().any(|i| {
                                            i.get("fields") == Some(&json!(["value"]))
                                                && i.get("type").and_then(Value::as_str)
                                                    != Some("primary")
                                        })
                                    })
                            });
                            if !found {
                                problems.push("the index on 'value' is missing".into());
                            }
                        }
                        Ok(r) => problems.push(format!(
                            "listing indexes answered {}: {}",
                            r.status,
                            r.body_text()
                        )),
                        Err(e) => problems.push(format!("cannot list indexes: {}", e.message)),
                    }
                }
                if self.sync_collection {
                    let path = format!("/_api/collection/{}/properties", self.collection);
                    match client.get(&path).await {
                        Ok(r)
                            if r.json()
                                .and_then(|v| v.get("waitForSync").and_then(Value::as_bool))
                                == Some(true) => {}
                        Ok(r) => problems.push(format!(
                            "collection '{}' was created with waitForSync but reports: {}",
                            self.collection,
                            r.body_text()
                        )),
                        Err(e) => problems.push(format!(
                            "cannot read the collection properties: {}",
                            e.message
                        )),
                    }
                }
                if self.kind == CaseKind::EdgeCrud {
                    let path = format!("/_api/collection/{}", self.collection);
                    match client.get(&path).await {
                        Ok(r)
                            if r.json().and_then(|v| v.get("type").and_then(Value::as_u64))
                                == Some(3) => {}
                        Ok(r) => problems.push(format!(
                            "collection '{}' is not an edge collection: {}",
                            self.collection,
                            r.body_text()
                        )),
                        Err(e) => {
                            problems.push(format!("cannot read the collection: {}", e.message))
                        }
                    }
                }
            }
        }
        problems
    }

    async fn verify_collections(
        &self,
        client: &mut HttpClient,
        acks: &Acks,
        problems: &mut Vec<String>,
    ) -> Result<(), Error> {
        let response = client.get("/_api/collection?excludeSystem=true").await?;
        let names: std::collections::HashSet<String> = response
            .json()
            .and_then(|v| v.get("result").and_then(Value::as_array).cloned())
            .ok_or_else(|| server_error("listing collections", &response))?
            .iter()
            .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
            .collect();
        let missing: Vec<String> = acks
            .collections
            .iter()
            .map(|n| format!("{}{n}", self.collection))
            .filter(|name| !names.contains(name))
            .collect();
        if !missing.is_empty() {
            problems.push(format!(
                "{} acknowledged collections do not exist (first: {})",
                missing.len(),
                missing[0]
            ));
        }
        // arangobench leaves the collections behind; dropping them keeps repeated runs
        // (--runs) and later invocations from colliding on the names.
        for n in &acks.collections {
            let path = format!("/_api/collection/{}{n}", self.collection);
            let response = client
                .request(Method::Delete, &path, None, b"", false)
                .await?;
            if response.status != 200 && response.status != 404 {
                problems.push(format!(
                    "dropping collection {}{n} answered {}",
                    self.collection, response.status
                ));
                break;
            }
        }
        Ok(())
    }
}

/// Checks one (part) response of an operation and records what it acknowledged.
/// Returns `Err` with a description when the response is unexpected; `Ok(false)` when it was
/// expected but incomplete (an import that created fewer documents than sent).
pub fn account(
    effect: Effect,
    status: u16,
    body: &[u8],
    async_mode: bool,
    acks: &mut Acks,
) -> Result<bool, String> {
    let ok = if async_mode {
        status == 202
    } else {
        effect.expected().contains(&status)
    };
    if !ok {
        return Err(format!(
            "unexpected status {status} for {effect:?}: {}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        ));
    }
    match effect {
        Effect::Insert => acks.inserted += 1,
        Effect::Remove => acks.removed += 1,
        Effect::CreateCollection(n) => acks.collections.push(n),
        Effect::Import(sent) => {
            if async_mode {
                acks.imported += sent;
                return Ok(true);
            }
            let created = serde_json::from_slice::<Value>(body)
                .ok()
                .and_then(|v| v.get("created").and_then(Value::as_u64));
            match created {
                Some(created) => {
                    acks.imported += created;
                    return Ok(created == sent);
                }
                None => return Err("import response without 'created'".into()),
            }
        }
        Effect::Version | Effect::Read | Effect::Update | Effect::Query => {}
    }
    Ok(true)
}

fn server_error(what: &str, response: &crate::http::Response) -> Error {
    Error::with_message(
        ErrorCode::SimpleClientUnknownError,
        format!(
            "{what} failed: HTTP {} {}",
            response.status,
            response.body_text()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Options;

    fn case(args: &[&str]) -> TestCase {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let config = Options::parse_args(&args).unwrap().into_config().unwrap();
        TestCase::new(&config, 7)
    }

    fn op(c: &TestCase, counter: u64) -> Op {
        let mut op = Op::default();
        c.build(counter, 0, counter, &mut op);
        op
    }

    fn body(o: &Op) -> Value {
        serde_json::from_slice(&o.body).expect("generated bodies are JSON")
    }

    #[test]
    fn every_name_round_trips() {
        for kind in CaseKind::ALL {
            assert_eq!(CaseKind::from_name(kind.name()), Some(*kind));
        }
        assert_eq!(CaseKind::from_name("edge"), Some(CaseKind::EdgeCrud));
        assert_eq!(
            CaseKind::from_name("skiplist"),
            Some(CaseKind::PersistentIndex)
        );
        assert_eq!(CaseKind::from_name("nope"), None);
    }

    #[test]
    fn document_bodies_follow_complexity() {
        let c = case(&[
            "--test-case",
            "document",
            "--complexity",
            "3",
            "--collection",
            "c",
        ]);
        let o = op(&c, 0);
        assert_eq!(o.method, Method::Post);
        assert_eq!(o.path, "/_api/document?collection=c&silent=true");
        assert_eq!(
            body(&o),
            json!({"test1":"some test value","test2":"some test value","test3":"some test value"})
        );
        let c = case(&["--test-case", "document", "--complexity", "0"]);
        assert_eq!(body(&op(&c, 0)), json!({}));
    }

    #[test]
    fn crud_cycle() {
        let c = case(&[
            "--test-case",
            "crud",
            "--complexity",
            "2",
            "--collection",
            "c",
        ]);
        let ops: Vec<Op> = (10..15).map(|i| op(&c, i)).collect();
        let methods: Vec<Method> = ops.iter().map(|o| o.method).collect();
        assert_eq!(
            methods,
            vec![
                Method::Post,
                Method::Get,
                Method::Patch,
                Method::Get,
                Method::Delete
            ]
        );
        assert_eq!(ops[0].path, "/_api/document?collection=c");
        assert_eq!(
            body(&ops[0]),
            json!({"_key":"testkey2","value1":true,"value2":true})
        );
        assert_eq!(ops[2].path, "/_api/document/c/testkey2");
        assert_eq!(
            body(&ops[2]),
            json!({"_key":"testkey2","value1":false,"value2":false})
        );
        assert_eq!(ops[4].effect, Effect::Remove);
        assert!(ops[1].body.is_empty());
    }

    #[test]
    fn append_and_write_read_cycles() {
        let c = case(&["--test-case", "crud-append"]);
        let m: Vec<Method> = (0..4).map(|i| op(&c, i).method).collect();
        assert_eq!(
            m,
            vec![Method::Post, Method::Get, Method::Patch, Method::Get]
        );
        let c = case(&["--test-case", "crud-write-read"]);
        let m: Vec<Method> = (0..4).map(|i| op(&c, i).method).collect();
        assert_eq!(
            m,
            vec![Method::Post, Method::Get, Method::Post, Method::Get]
        );
        assert_eq!(op(&c, 3).path, "/_api/document/ArangoBenchmark/testkey1");
    }

    #[test]
    fn edge_bodies() {
        let c = case(&["--test-case", "edge-crud", "--collection", "e"]);
        let b = body(&op(&c, 8));
        assert_eq!(b["_key"], "testkey2");
        assert_eq!(b["_from"], "e/testfrom8");
        assert_eq!(b["_to"], "e/testto8");
        assert_eq!(b["value1"], true);
        let update = body(&op(&c, 10));
        assert!(update.get("_from").is_none());
        assert_eq!(update["value1"], false);
    }

    #[test]
    fn persistent_index_bodies() {
        let c = case(&["--test-case", "persistent-index"]);
        let mut o = Op::default();
        c.build(4, 0, 17, &mut o);
        assert_eq!(body(&o), json!({"_key":"testkey1","value":17}));
        c.build(6, 0, 19, &mut o);
        assert_eq!(o.method, Method::Patch);
        assert_eq!(body(&o), json!({"_key":"testkey1","value":19}));
    }

    #[test]
    fn shapes_names_cycle_and_stay_unique() {
        let c = case(&[
            "--test-case",
            "shapes",
            "--complexity",
            "3",
            "--requests",
            "1000",
        ]);
        let b = body(&op(&c, 99));
        let keys: Vec<&String> = b.as_object().unwrap().keys().collect();
        assert_eq!(keys, vec!["_key", "value0", "value1", "value2"]);
        assert_eq!(b["value0"], SHAPES_VALUE);
        assert_eq!(op(&c, 100).method, Method::Get);
        assert_eq!(op(&c, 101).method, Method::Delete);
        let c = case(&["--test-case", "shapes", "--complexity", "500"]);
        assert_eq!(body(&op(&c, 0)).as_object().unwrap().len(), 101);
    }

    #[test]
    fn random_shapes_are_seeded() {
        let c = case(&["--test-case", "random-shapes", "--complexity", "2"]);
        let a = op(&c, 3);
        let b = op(&c, 3);
        assert_eq!(a.body, b.body);
        let v = body(&a);
        assert!(v.get("value4").is_some() && v.get("value5").is_some());
        // t = 7 % (3 + 0 + 1) = 3 -> true
        assert_eq!(v["value4"], true);
    }

    #[test]
    fn import_and_aql_and_collection_bodies() {
        let c = case(&[
            "--test-case",
            "import-document",
            "--complexity",
            "3",
            "--collection",
            "c",
        ]);
        let o = op(&c, 0);
        assert_eq!(o.path, "/_api/import?collection=c&type=documents");
        assert_eq!(
            String::from_utf8(o.body.clone()).unwrap(),
            "{\"key1\":0,\"key2\":0}\n{\"key1\":1,\"key2\":1}\n{\"key1\":2,\"key2\":2}\n"
        );
        assert_eq!(o.effect, Effect::Import(3));

        let c = case(&[
            "--test-case",
            "aqlinsert",
            "--complexity",
            "2",
            "--collection",
            "c",
        ]);
        let o = op(&c, 42);
        assert_eq!(o.path, "/_api/cursor");
        assert_eq!(
            body(&o),
            json!({"query":"INSERT @data INTO `c`","bindVars":{"data":{"_key":"test42","value1":true,"value2":true}}})
        );

        let c = case(&["--test-case", "collection", "--collection", "c"]);
        let o = op(&c, 4);
        assert_eq!(body(&o), json!({"name":"c5"}));
        assert_eq!(o.effect, Effect::CreateCollection(5));

        let c = case(&[
            "--test-case",
            "custom-query",
            "--custom-query",
            "FOR i IN 1..@n RETURN i",
            "--custom-query-bindvars",
            "{\"n\":2}",
        ]);
        assert_eq!(
            body(&op(&c, 0)),
            json!({"query":"FOR i IN 1..@n RETURN i","bindVars":{"n":2}})
        );
    }

    #[test]
    fn extension_cases_address_preloaded_keys() {
        let c = case(&[
            "--test-case",
            "document-update",
            "--requests",
            "10",
            "--collection",
            "c",
        ]);
        let o = op(&c, 13);
        assert_eq!(o.path, "/_api/document/c/testkey3");
        assert_eq!(body(&o), json!({"value1":false}));
        let c = case(&["--test-case", "document-remove", "--requests", "10"]);
        assert_eq!(op(&c, 2).method, Method::Delete);
    }

    #[test]
    fn accounting() {
        let mut acks = Acks::default();
        assert_eq!(
            account(Effect::Insert, 202, b"", false, &mut acks),
            Ok(true)
        );
        assert!(account(Effect::Insert, 409, b"{}", false, &mut acks).is_err());
        assert_eq!(
            account(Effect::Remove, 200, b"", false, &mut acks),
            Ok(true)
        );
        assert_eq!(
            account(Effect::Import(3), 201, b"{\"created\":2}", false, &mut acks),
            Ok(false)
        );
        assert!(account(Effect::Read, 200, b"", true, &mut acks).is_err());
        assert_eq!(account(Effect::Insert, 202, b"", true, &mut acks), Ok(true));
        assert_eq!(
            acks,
            Acks {
                inserted: 2,
                removed: 1,
                imported: 2,
                collections: vec![]
            }
        );
    }
}
