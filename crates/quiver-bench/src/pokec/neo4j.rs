//! The Neo4j adapter: Neo4j Community (bench/peers/neo4j, embedded, Bolt on loopback) with the
//! 2018 benchmark's Cypher, driven over Bolt by neo4rs with a pool as large as the harness's
//! concurrency. The data set goes in through Neo4j's own bulk importer (the benchmark used
//! neo4j-import): [`write_import_files`] turns the generated JSON lines into its TSV input, and
//! [`Neo4j::prepare`] adds the uniqueness constraint on `_key` afterwards.

use std::io::{BufRead, BufWriter, Write};
use std::path::Path;

use neo4rs::{query, BoltType, ConfigBuilder, Graph};
use quiver_errors::{Error, ErrorCode};
use serde_json::{json, Value};

use super::gen::ATTRIBUTES;
use super::peer::{Answer, Connection, Job, Peer};

/// Attributes typed as integers in the 2018 import header; the rest are strings.
const INTEGER_ATTRIBUTES: [&str; 4] = ["public", "completion_percentage", "gender", "AGE"];

fn neo_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::with_message(ErrorCode::Internal, format!("neo4j {what}: {e}"))
}

fn io_error(path: &Path, e: std::io::Error) -> Error {
    Error::with_message(ErrorCode::IoError, format!("{}: {e}", path.display()))
}

/// A TSV field: tabs and line breaks cannot occur in the importer's input, so they become
/// spaces (the generator writes none).
fn tsv_field(out: &mut String, v: &Value) {
    let text = match v {
        Value::Null => return,
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    out.extend(text.chars().map(|c| {
        if matches!(c, '\t' | '\n' | '\r') {
            ' '
        } else {
            c
        }
    }));
}

/// Writes `profiles.tsv` and `relations.tsv` for the importer into `out`; returns the counts.
pub fn write_import_files(dir: &Path, out: &Path) -> Result<Value, Error> {
    std::fs::create_dir_all(out).map_err(|e| io_error(out, e))?;
    let open = |name: &str| {
        let path = dir.join(name);
        std::fs::File::open(&path)
            .map(|f| std::io::BufReader::with_capacity(1 << 20, f))
            .map_err(|e| io_error(&path, e))
    };
    let create = |name: &str| {
        let path = out.join(name);
        std::fs::File::create(&path)
            .map(|f| BufWriter::with_capacity(1 << 20, f))
            .map_err(|e| io_error(&path, e))
    };
    let parse = |line: &str| -> Result<Value, Error> {
        serde_json::from_str(line)
            .map_err(|e| Error::with_message(ErrorCode::BadParameter, e.to_string()))
    };

    let mut nodes = create("profiles.tsv")?;
    let header: Vec<String> = ATTRIBUTES
        .iter()
        .map(|a| match *a {
            "_key" => "_key:ID".to_string(),
            a if INTEGER_ATTRIBUTES.contains(&a) => format!("{a}:int"),
            a => a.to_string(),
        })
        .collect();
    let werr = |e: std::io::Error| io_error(out, e);
    writeln!(nodes, "{}", header.join("\t")).map_err(werr)?;
    let mut profiles = 0u64;
    let mut line_out = String::new();
    for line in open("profiles.jsonl")?.lines() {
        let doc = parse(&line.map_err(werr)?)?;
        line_out.clear();
        for (i, a) in ATTRIBUTES.iter().enumerate() {
            if i > 0 {
                line_out.push('\t');
            }
            tsv_field(&mut line_out, &doc[*a]);
        }
        writeln!(nodes, "{line_out}").map_err(werr)?;
        profiles += 1;
    }
    nodes.flush().map_err(werr)?;

    let mut edges = create("relations.tsv")?;
    writeln!(edges, ":START_ID\t:END_ID").map_err(werr)?;
    let mut relations = 0u64;
    for line in open("relations.jsonl")?.lines() {
        let edge = parse(&line.map_err(werr)?)?;
        let key = |v: &Value| {
            v.as_str()
                .and_then(|s| s.rsplit('/').next())
                .unwrap_or("")
                .to_string()
        };
        writeln!(edges, "{}\t{}", key(&edge["_from"]), key(&edge["_to"])).map_err(werr)?;
        relations += 1;
    }
    edges.flush().map_err(werr)?;
    Ok(json!({"profiles": profiles, "relations": relations}))
}

/// The pool is opened on first use, inside the runtime that runs the workloads (its
/// connections belong to that runtime).
pub struct Neo4j {
    uri: String,
    connections: usize,
    graph: tokio::sync::OnceCell<Graph>,
}

impl Neo4j {
    /// `uri` is `host:port` of the Bolt connector; authentication is off on the server.
    pub fn new(uri: &str, connections: usize) -> Neo4j {
        Neo4j {
            uri: uri.to_string(),
            connections: connections.max(1),
            graph: tokio::sync::OnceCell::new(),
        }
    }

    async fn graph(&self) -> Result<&Graph, Error> {
        self.graph
            .get_or_try_init(|| async {
                let config = ConfigBuilder::default()
                    .uri(self.uri.as_str())
                    .user("neo4j")
                    .password("neo4j")
                    .max_connections(self.connections)
                    .fetch_size(1000)
                    .build()
                    .map_err(|e| neo_error("config", e))?;
                Graph::connect(config)
                    .await
                    .map_err(|e| neo_error("connect", e))
            })
            .await
    }

    /// The index step after the bulk import: a uniqueness constraint on `_key` (its backing
    /// index serves every lookup by key), waited for until online.
    pub async fn prepare(&self) -> Result<(), Error> {
        let graph = self.graph().await?;
        graph
            .run(query(
                "CREATE CONSTRAINT profiles_key IF NOT EXISTS FOR (p:PROFILES) REQUIRE p._key IS UNIQUE",
            ))
            .await
            .map_err(|e| neo_error("constraint", e))?;
        graph
            .run(query("CALL db.awaitIndexes(3600)"))
            .await
            .map_err(|e| neo_error("await indexes", e))
    }

    async fn count(&self, cypher: &str) -> Result<u64, Error> {
        let mut rows = self
            .graph()
            .await?
            .execute(query(cypher))
            .await
            .map_err(|e| neo_error("query", e))?;
        let mut total = 0u64;
        while let Some(row) = rows.next().await.map_err(|e| neo_error("rows", e))? {
            total += row
                .get::<i64>("count")
                .map_err(|e| neo_error("count", e))?
                .max(0) as u64;
        }
        Ok(total)
    }
}

impl Peer for Neo4j {
    type Connection = NeoConnection;

    fn name(&self) -> String {
        "neo4j".into()
    }

    async fn connect(&self) -> Result<NeoConnection, Error> {
        // The pool inside `Graph` holds the connections; each task uses it like a session.
        Ok(NeoConnection {
            graph: self.graph().await?.clone(),
        })
    }

    async fn warm_up(&self) -> Result<(), Error> {
        self.count("MATCH (:PROFILES)--() RETURN count(*) AS count")
            .await?;
        Ok(())
    }

    async fn recreate_write_target(&self, _sync: bool) -> Result<(), Error> {
        self.graph()
            .await?
            .run(query("MATCH (n:PROFILES_TEMP) DELETE n"))
            .await
            .map_err(|e| neo_error("drop write target", e))
    }

    async fn count_write_target(&self) -> Result<u64, Error> {
        self.count("MATCH (n:PROFILES_TEMP) RETURN count(n) AS count")
            .await
    }

    async fn describe(&self) -> Value {
        let mut info = json!({"driver": "neo4rs 0.8 (Bolt)"});
        let Ok(graph) = self.graph().await else {
            return json!({"error": "cannot connect"});
        };
        if let Ok(mut rows) = graph
            .execute(query("CALL dbms.components() YIELD name, versions, edition RETURN name, versions[0] AS version, edition"))
            .await
        {
            if let Ok(Some(row)) = rows.next().await {
                info["version"] = json!(row.get::<String>("version").unwrap_or_default());
                info["edition"] = json!(row.get::<String>("edition").unwrap_or_default());
            }
        }
        info
    }
}

pub struct NeoConnection {
    graph: Graph,
}

impl NeoConnection {
    /// Runs `q` and counts its rows (all fetched); `skip_key` leaves out rows whose `_key`
    /// column equals it (the start vertex of the depth 1..2 neighbours, removed client-side).
    async fn rows(&self, q: neo4rs::Query, skip_key: Option<&str>) -> Result<u64, Error> {
        let mut stream = self
            .graph
            .execute(q)
            .await
            .map_err(|e| neo_error("query", e))?;
        let mut n = 0u64;
        while let Some(row) = stream.next().await.map_err(|e| neo_error("rows", e))? {
            if let Some(skip) = skip_key {
                if row.get::<String>("key").ok().as_deref() == Some(skip) {
                    continue;
                }
            }
            n += 1;
        }
        Ok(n)
    }
}

impl Connection for NeoConnection {
    async fn run(&mut self, job: &Job, bodies: &[Value], sync: bool) -> Result<Answer, Error> {
        let rows = match job {
            Job::Read(key) => {
                let q =
                    query("MATCH (f:PROFILES {_key: $key}) RETURN f").param("key", key.as_str());
                let n = self.rows(q, None).await?;
                if n != 1 {
                    return Err(Error::with_message(
                        ErrorCode::DocumentNotFound,
                        format!("profile {key} not found"),
                    ));
                }
                n
            }
            Job::Write(i) => {
                if !sync {
                    // Every Neo4j commit is durable; the benchmark had no plain write for it.
                    return Err(Error::with_message(
                        ErrorCode::NotImplemented,
                        "Neo4j has no non-durable commit (the 2018 adapter left singleWrite out)",
                    ));
                }
                let body = bodies.get(*i).cloned().unwrap_or_else(|| json!({}));
                let map = BoltType::try_from(body).map_err(|e| neo_error("body", e))?;
                self.graph
                    .run(query("CREATE (f:PROFILES_TEMP $doc)").param("doc", map))
                    .await
                    .map_err(|e| neo_error("insert", e))?;
                1
            }
            Job::Aggregate => {
                let mut stream = self
                    .graph
                    .execute(query(
                        "MATCH (f:PROFILES) RETURN f.AGE AS age, count(*) AS count",
                    ))
                    .await
                    .map_err(|e| neo_error("aggregate", e))?;
                let mut answer = Answer::default();
                while let Some(row) = stream.next().await.map_err(|e| neo_error("rows", e))? {
                    answer.rows += 1;
                    answer.amounts += row
                        .get::<i64>("count")
                        .map_err(|e| neo_error("count", e))?
                        .max(0) as u64;
                }
                return Ok(answer);
            }
            Job::Neighbors(key) => {
                let q =
                    query("MATCH (s:PROFILES {_key: $key})-->(n:PROFILES) RETURN n._key AS key")
                        .param("key", key.as_str());
                self.rows(q, None).await?
            }
            Job::Neighbors2(key) => {
                let q = query(
                    "MATCH (s:PROFILES {_key: $key})-[*1..2]->(n:PROFILES) RETURN DISTINCT n._key AS key",
                )
                .param("key", key.as_str());
                self.rows(q, Some(key)).await?
            }
            Job::Neighbors2Data(key) => {
                let q = query(
                    "MATCH (s:PROFILES {_key: $key})-[*1..2]->(n:PROFILES) RETURN DISTINCT n._key AS key, n",
                )
                .param("key", key.as_str());
                self.rows(q, Some(key)).await?
            }
            Job::Shortest(from, to) => {
                let q = query(
                    "MATCH (s:PROFILES {_key: $from}), (t:PROFILES {_key: $to}), \
                     p = shortestPath((s)-[*..15]->(t)) RETURN [x IN nodes(p) | x._key] AS path",
                )
                .param("from", from.as_str())
                .param("to", to.as_str());
                let mut stream = self
                    .graph
                    .execute(q)
                    .await
                    .map_err(|e| neo_error("shortest path", e))?;
                let mut vertices = 0u64;
                while let Some(row) = stream.next().await.map_err(|e| neo_error("rows", e))? {
                    let path: Vec<String> = row.get("path").map_err(|e| neo_error("path", e))?;
                    vertices = path.len() as u64;
                }
                vertices
            }
        };
        Ok(Answer { rows, amounts: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsv_fields_are_empty_for_null_and_never_break_lines() {
        let mut out = String::new();
        tsv_field(&mut out, &json!("a\tb\nc"));
        out.push('|');
        tsv_field(&mut out, &Value::Null);
        out.push('|');
        tsv_field(&mut out, &json!(42));
        assert_eq!(out, "a b c||42");
    }

    #[test]
    fn import_files_have_typed_headers_and_bare_keys() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path();
        std::fs::write(
            data.join("profiles.jsonl"),
            "{\"_key\":\"P1\",\"public\":1,\"AGE\":20,\"body\":null}\n{\"_key\":\"P2\"}\n",
        )
        .unwrap();
        std::fs::write(
            data.join("relations.jsonl"),
            "{\"_from\":\"profiles/P1\",\"_to\":\"profiles/P2\"}\n",
        )
        .unwrap();
        let out = data.join("neo4j");
        let counts = write_import_files(data, &out).unwrap();
        assert_eq!(counts, json!({"profiles": 2, "relations": 1}));
        let nodes = std::fs::read_to_string(out.join("profiles.tsv")).unwrap();
        let mut lines = nodes.lines();
        let header = lines.next().unwrap();
        assert!(header.starts_with("_key:ID\tpublic:int\tcompletion_percentage:int\tgender:int"));
        assert!(header.contains("\tAGE:int\tbody\t"));
        assert_eq!(header.split('\t').count(), 59);
        let first: Vec<&str> = lines.next().unwrap().split('\t').collect();
        assert_eq!(
            (first[0], first[1], first[7], first[8]),
            ("P1", "1", "20", "")
        );
        let rel = std::fs::read_to_string(out.join("relations.tsv")).unwrap();
        assert_eq!(rel, ":START_ID\t:END_ID\nP1\tP2\n");
    }
}
