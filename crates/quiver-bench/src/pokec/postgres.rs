//! The PostgreSQL adapter, in the two layouts of the 2018 benchmark: tabular (profiles as
//! columns, `AGE` an integer, everything else text) and JSONB (`profiles(_key, data jsonb)`);
//! relations are a two-column table with a B-tree index on each end in both. Driven by
//! tokio-postgres with one prepared statement per query per connection (the driver's best
//! path), queries as the 2018 adapter sent them, with two differences stated in
//! docs/benchmarks/peers.md: neighbours without the adapter's `LIMIT 1000` (it truncated the
//! answers of hubs), and shortest paths, which the benchmark never implemented for
//! PostgreSQL, as a bidirectional breadth-first search in PL/pgSQL.

use bytes::Bytes;
use futures_util::SinkExt;
use quiver_errors::{Error, ErrorCode};
use serde_json::{json, Value};
use tokio_postgres::{types::ToSql, Client, NoTls, Statement};

use super::gen::ATTRIBUTES;
use super::peer::{Answer, Connection, Job, Peer};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Tabular,
    Jsonb,
}

pub struct Postgres {
    config: String,
    layout: Layout,
}

fn pg_error(what: &str, e: tokio_postgres::Error) -> Error {
    Error::with_message(ErrorCode::Internal, format!("postgresql {what}: {e}"))
}

/// Profile columns after `_key`, as unquoted (lower-cased) SQL identifiers.
fn attribute_columns() -> impl Iterator<Item = &'static str> {
    ATTRIBUTES[1..].iter().copied()
}

/// A JSON value as the text a tabular column stores (None: SQL NULL).
fn column_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Escapes a field for COPY's text format.
fn copy_field(out: &mut String, text: Option<&str>) {
    let Some(text) = text else {
        out.push_str("\\N");
        return;
    };
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

/// `profiles/P12` → `P12`.
fn bare_key(id: &str) -> &str {
    id.rsplit('/').next().unwrap_or(id)
}

/// Bidirectional level-synchronous breadth-first search: expands the smaller frontier one
/// whole level at a time and stops at the first level where the two visited sets meet (the
/// shortest length), or when a frontier runs dry (no path), or at depth 15 (Neo4j's bound).
/// Visited sets are session temp tables with primary keys, emptied at commit.
const SHORTEST_FUNCTION: &str = r#"
CREATE OR REPLACE FUNCTION pokec_shortest_path_length(source text, target text)
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  fwd text[] := ARRAY[source];
  bwd text[] := ARRAY[target];
  depth int := 0;
  met boolean := false;
BEGIN
  IF source = target THEN RETURN 0; END IF;
  DELETE FROM pokec_seen_forward;
  DELETE FROM pokec_seen_backward;
  INSERT INTO pokec_seen_forward VALUES (source);
  INSERT INTO pokec_seen_backward VALUES (target);
  WHILE depth < 15 AND cardinality(fwd) > 0 AND cardinality(bwd) > 0 LOOP
    depth := depth + 1;
    IF cardinality(fwd) <= cardinality(bwd) THEN
      WITH n AS (INSERT INTO pokec_seen_forward
                   SELECT DISTINCT r._to FROM relations r WHERE r._from = ANY(fwd)
                 ON CONFLICT DO NOTHING RETURNING v)
      SELECT coalesce(array_agg(v), '{}') INTO fwd FROM n;
      SELECT EXISTS (SELECT 1 FROM unnest(fwd) f(v) JOIN pokec_seen_backward b USING (v)) INTO met;
    ELSE
      WITH n AS (INSERT INTO pokec_seen_backward
                   SELECT DISTINCT r._from FROM relations r WHERE r._to = ANY(bwd)
                 ON CONFLICT DO NOTHING RETURNING v)
      SELECT coalesce(array_agg(v), '{}') INTO bwd FROM n;
      SELECT EXISTS (SELECT 1 FROM unnest(bwd) b(v) JOIN pokec_seen_forward f USING (v)) INTO met;
    END IF;
    IF met THEN RETURN depth; END IF;
  END LOOP;
  RETURN NULL;
END $$"#;

impl Postgres {
    /// `config` is a libpq-style connection string (`host=127.0.0.1 port=5432 user=… dbname=…`).
    pub fn new(config: &str, layout: Layout) -> Postgres {
        Postgres {
            config: config.to_string(),
            layout,
        }
    }

    async fn client(&self) -> Result<Client, Error> {
        let (client, connection) = tokio_postgres::connect(&self.config, NoTls)
            .await
            .map_err(|e| pg_error("connect", e))?;
        tokio::spawn(connection);
        Ok(client)
    }

    /// Creates the schema and bulk-loads the data set with COPY, then builds the indexes
    /// and analyzes (the 2018 import.sh order). Returns what was loaded.
    pub async fn load(&self, dir: &std::path::Path) -> Result<Value, Error> {
        use std::io::BufRead;
        let client = self.client().await?;
        let columns: Vec<String> = match self.layout {
            Layout::Tabular => attribute_columns()
                .map(|c| {
                    if c == "AGE" {
                        format!("{c} integer")
                    } else {
                        format!("{c} text")
                    }
                })
                .collect(),
            Layout::Jsonb => vec!["data jsonb".to_string()],
        };
        let ddl = format!(
            "DROP TABLE IF EXISTS profiles, relations, profiles_temp;
             DROP SEQUENCE IF EXISTS genID;
             CREATE TABLE profiles (_key text PRIMARY KEY, {});
             CREATE TABLE relations (_from text, _to text);
             {SHORTEST_FUNCTION};",
            columns.join(", ")
        );
        client
            .batch_execute(&ddl)
            .await
            .map_err(|e| pg_error("schema", e))?;

        let open = |name: &str| {
            let path = dir.join(name);
            std::fs::File::open(&path)
                .map(|f| std::io::BufReader::with_capacity(1 << 20, f))
                .map_err(|e| {
                    Error::with_message(ErrorCode::IoError, format!("{}: {e}", path.display()))
                })
        };
        let parse = |line: &str| -> Result<Value, Error> {
            serde_json::from_str(line)
                .map_err(|e| Error::with_message(ErrorCode::BadParameter, e.to_string()))
        };
        const CHUNK: usize = 4 << 20;

        let mut profiles = 0u64;
        let sink = client
            .copy_in("COPY profiles FROM STDIN")
            .await
            .map_err(|e| pg_error("copy profiles", e))?;
        futures_util::pin_mut!(sink);
        let mut buf = String::with_capacity(CHUNK + 4096);
        for line in open("profiles.jsonl")?.lines() {
            let line = line.map_err(|e| Error::with_message(ErrorCode::IoError, e.to_string()))?;
            let mut doc = parse(&line)?;
            let key = doc["_key"].as_str().unwrap_or_default().to_string();
            copy_field(&mut buf, Some(&key));
            match self.layout {
                Layout::Tabular => {
                    for c in attribute_columns() {
                        buf.push('\t');
                        copy_field(&mut buf, column_text(&doc[c]).as_deref());
                    }
                }
                Layout::Jsonb => {
                    if let Some(map) = doc.as_object_mut() {
                        map.remove("_key");
                    }
                    buf.push('\t');
                    copy_field(&mut buf, Some(&doc.to_string()));
                }
            }
            buf.push('\n');
            profiles += 1;
            if buf.len() >= CHUNK {
                let chunk = Bytes::from(std::mem::take(&mut buf));
                sink.send(chunk)
                    .await
                    .map_err(|e| pg_error("copy profiles", e))?;
            }
        }
        sink.send(Bytes::from(std::mem::take(&mut buf)))
            .await
            .map_err(|e| pg_error("copy profiles", e))?;
        sink.finish()
            .await
            .map_err(|e| pg_error("copy profiles", e))?;

        let mut relations = 0u64;
        let sink = client
            .copy_in("COPY relations FROM STDIN")
            .await
            .map_err(|e| pg_error("copy relations", e))?;
        futures_util::pin_mut!(sink);
        for line in open("relations.jsonl")?.lines() {
            let line = line.map_err(|e| Error::with_message(ErrorCode::IoError, e.to_string()))?;
            let edge = parse(&line)?;
            copy_field(
                &mut buf,
                Some(bare_key(edge["_from"].as_str().unwrap_or(""))),
            );
            buf.push('\t');
            copy_field(&mut buf, Some(bare_key(edge["_to"].as_str().unwrap_or(""))));
            buf.push('\n');
            relations += 1;
            if buf.len() >= CHUNK {
                let chunk = Bytes::from(std::mem::take(&mut buf));
                sink.send(chunk)
                    .await
                    .map_err(|e| pg_error("copy relations", e))?;
            }
        }
        sink.send(Bytes::from(std::mem::take(&mut buf)))
            .await
            .map_err(|e| pg_error("copy relations", e))?;
        sink.finish()
            .await
            .map_err(|e| pg_error("copy relations", e))?;

        client
            .batch_execute(
                "CREATE INDEX _fromid ON relations (_from);
                 CREATE INDEX _toid ON relations (_to);
                 ANALYZE profiles; ANALYZE relations;",
            )
            .await
            .map_err(|e| pg_error("indexes", e))?;
        Ok(json!({"profiles": profiles, "relations": relations}))
    }
}

impl Peer for Postgres {
    type Connection = PgConnection;

    fn name(&self) -> String {
        match self.layout {
            Layout::Tabular => "postgresql-tabular".into(),
            Layout::Jsonb => "postgresql-jsonb".into(),
        }
    }

    async fn connect(&self) -> Result<PgConnection, Error> {
        let client = self.client().await?;
        // Visited sets of the path search, one pair per session; plain (non-sync) writes
        // commit without waiting for the WAL flush, as the other databases' plain writes.
        client
            .batch_execute(
                "SET synchronous_commit = off;
                 CREATE TEMP TABLE IF NOT EXISTS pokec_seen_forward (v text PRIMARY KEY);
                 CREATE TEMP TABLE IF NOT EXISTS pokec_seen_backward (v text PRIMARY KEY);",
            )
            .await
            .map_err(|e| pg_error("session setup", e))?;
        let aggregate = match self.layout {
            Layout::Tabular => "select AGE, count(*) from profiles group by AGE",
            Layout::Jsonb => "select data->>'AGE', count(*) from profiles group by data->>'AGE'",
        };
        let insert = match self.layout {
            Layout::Tabular => {
                let names: Vec<&str> = attribute_columns().collect();
                let params: Vec<String> = (1..=names.len()).map(|i| format!("${i}")).collect();
                format!(
                    "insert into profiles_temp (id, {}) values (nextval('genID'), {})",
                    names.join(", "),
                    params.join(", ")
                )
            }
            Layout::Jsonb => {
                "insert into profiles_temp (id, structure) values (nextval('genID'), $1::text::json)"
                    .to_string()
            }
        };
        let prepare = |sql: String| {
            let client = &client;
            async move {
                client
                    .prepare(&sql)
                    .await
                    .map_err(|e| pg_error(&format!("prepare {sql}"), e))
            }
        };
        let statements = Statements {
            read: prepare("select * from profiles where _key=$1".into()).await?,
            aggregate: prepare(aggregate.into()).await?,
            neighbors: prepare("select distinct _to from relations where _from=$1".into()).await?,
            neighbors2: prepare(
                "select _to from relations where _from = $1 union distinct \
                 select _to from relations where _to != $1 and _from in \
                 (select _to from relations where _from = $1)"
                    .into(),
            )
            .await?,
            neighbors2data: prepare(
                "select * from profiles where _key in \
                 (select _to from relations where _from = $1 union distinct \
                 select _to from relations where _to != $1 and _from in \
                 (select _to from relations where _from = $1))"
                    .into(),
            )
            .await?,
            shortest: prepare("select pokec_shortest_path_length($1, $2)".into()).await?,
        };
        Ok(PgConnection {
            client,
            statements,
            insert,
            insert_statement: None,
            layout: self.layout,
            synchronous: false,
        })
    }

    async fn warm_up(&self) -> Result<(), Error> {
        let client = self.client().await?;
        client
            .batch_execute(
                "select version();
                 select right(_from, 1) as lastdigit, count(*) from relations group by lastdigit;",
            )
            .await
            .map_err(|e| pg_error("warmup", e))
    }

    async fn recreate_write_target(&self, _sync: bool) -> Result<(), Error> {
        let columns: Vec<String> = match self.layout {
            Layout::Tabular => attribute_columns()
                .map(|c| format!("{c} VARCHAR"))
                .collect(),
            Layout::Jsonb => vec!["structure json".into()],
        };
        let ddl = format!(
            "DROP TABLE IF EXISTS profiles_temp; DROP SEQUENCE IF EXISTS genID;
             CREATE TABLE profiles_temp (id VARCHAR PRIMARY KEY, {});
             CREATE SEQUENCE genID START 1;",
            columns.join(", ")
        );
        let client = self.client().await?;
        client
            .batch_execute(&ddl)
            .await
            .map_err(|e| pg_error("write target", e))
    }

    async fn count_write_target(&self) -> Result<u64, Error> {
        let client = self.client().await?;
        let row = client
            .query_one("select count(*) from profiles_temp", &[])
            .await
            .map_err(|e| pg_error("count", e))?;
        Ok(row.get::<_, i64>(0).max(0) as u64)
    }

    async fn describe(&self) -> Value {
        let Ok(client) = self.client().await else {
            return json!({"error": "cannot connect"});
        };
        let mut info = json!({"layout": self.name(), "driver": "tokio-postgres 0.7"});
        for setting in [
            "server_version",
            "shared_buffers",
            "work_mem",
            "effective_cache_size",
            "synchronous_commit",
            "max_connections",
        ] {
            if let Ok(row) = client.query_one(&format!("show {setting}"), &[]).await {
                info[setting] = json!(row.get::<_, String>(0));
            }
        }
        info
    }
}

struct Statements {
    read: Statement,
    aggregate: Statement,
    neighbors: Statement,
    neighbors2: Statement,
    neighbors2data: Statement,
    shortest: Statement,
}

pub struct PgConnection {
    client: Client,
    statements: Statements,
    insert: String,
    /// Prepared on first use: the write target only exists once a write test recreated it.
    insert_statement: Option<Statement>,
    layout: Layout,
    /// The session's current `synchronous_commit`.
    synchronous: bool,
}

impl PgConnection {
    async fn rows(
        &self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Error> {
        let rows = self
            .client
            .query(statement, params)
            .await
            .map_err(|e| pg_error("query", e))?;
        Ok(rows.len() as u64)
    }

    async fn write(&mut self, body: &Value, sync: bool) -> Result<(), Error> {
        if sync != self.synchronous {
            let sql = if sync {
                "SET synchronous_commit = on"
            } else {
                "SET synchronous_commit = off"
            };
            self.client
                .batch_execute(sql)
                .await
                .map_err(|e| pg_error("synchronous_commit", e))?;
            self.synchronous = sync;
        }
        if self.insert_statement.is_none() {
            let statement = self
                .client
                .prepare(&self.insert)
                .await
                .map_err(|e| pg_error("prepare insert", e))?;
            self.insert_statement = Some(statement);
        }
        let Some(statement) = &self.insert_statement else {
            return Err(Error::with_message(
                ErrorCode::Internal,
                "insert not prepared",
            ));
        };
        let result = match self.layout {
            Layout::Tabular => {
                let values: Vec<Option<String>> =
                    attribute_columns().map(|c| column_text(&body[c])).collect();
                let params: Vec<&(dyn ToSql + Sync)> =
                    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect();
                self.client.execute(statement, &params).await
            }
            Layout::Jsonb => {
                let text = body.to_string();
                self.client.execute(statement, &[&text]).await
            }
        };
        result.map_err(|e| pg_error("insert", e))?;
        Ok(())
    }
}

impl Connection for PgConnection {
    async fn run(&mut self, job: &Job, bodies: &[Value], sync: bool) -> Result<Answer, Error> {
        let s = &self.statements;
        let rows = match job {
            Job::Read(key) => {
                let n = self.rows(&s.read, &[key]).await?;
                if n != 1 {
                    return Err(Error::with_message(
                        ErrorCode::DocumentNotFound,
                        format!("profile {key} not found"),
                    ));
                }
                n
            }
            Job::Write(i) => {
                let body = bodies.get(*i).cloned().unwrap_or_else(|| json!({}));
                self.write(&body, sync).await?;
                1
            }
            Job::Aggregate => {
                let rows = self
                    .client
                    .query(&s.aggregate, &[])
                    .await
                    .map_err(|e| pg_error("aggregate", e))?;
                let amounts = rows.iter().map(|r| r.get::<_, i64>(1).max(0) as u64).sum();
                return Ok(Answer {
                    rows: rows.len() as u64,
                    amounts,
                });
            }
            Job::Neighbors(key) => self.rows(&s.neighbors, &[key]).await?,
            Job::Neighbors2(key) => self.rows(&s.neighbors2, &[key]).await?,
            Job::Neighbors2Data(key) => self.rows(&s.neighbors2data, &[key]).await?,
            Job::Shortest(from, to) => {
                let row = self
                    .client
                    .query_one(&s.shortest, &[from, to])
                    .await
                    .map_err(|e| pg_error("shortest path", e))?;
                match row.get::<_, Option<i32>>(0) {
                    Some(length) => length.max(0) as u64 + 1,
                    None => 0,
                }
            }
        };
        Ok(Answer { rows, amounts: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_fields_escape_the_text_format() {
        let mut out = String::new();
        copy_field(&mut out, Some("a\tb\\c\nd\re"));
        out.push('|');
        copy_field(&mut out, None);
        assert_eq!(out, "a\\tb\\\\c\\nd\\re|\\N");
    }

    #[test]
    fn tabular_columns_hold_text_and_null() {
        assert_eq!(column_text(&json!("x")), Some("x".into()));
        assert_eq!(column_text(&json!(17)), Some("17".into()));
        assert_eq!(column_text(&Value::Null), None);
        assert_eq!(attribute_columns().count(), 58);
        assert_eq!(bare_key("profiles/P12"), "P12");
    }
}
