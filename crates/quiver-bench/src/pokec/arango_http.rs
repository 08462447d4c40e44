//! The adapter for QuiverDB, or any ArangoDB-compatible server, over ArangoDB's HTTP API with
//! the queries of the 2018 ArangoDB adapter (arangojs 5.8): documents by key through
//! `/_api/document`, everything else as AQL through `/_api/cursor`.

use std::sync::OnceLock;
use std::time::Duration;

use quiver_errors::{Error, ErrorCode};
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{json, Value};

use super::client::{call, server_error, settings, DATABASE};
use super::peer::{Answer, Connection, Job, Peer};
use crate::http::{ClientSettings, HttpClient, Method};

pub const NEIGHBORS: &str =
    "FOR v IN OUTBOUND @key relations OPTIONS {bfs: true, uniqueVertices: \"global\"} RETURN v._id";
pub const NEIGHBORS2: &str = "FOR v IN 1..2 OUTBOUND @key relations OPTIONS {bfs: true, uniqueVertices: \"global\"} RETURN v._id";
pub const NEIGHBORS2DATA: &str = "FOR v IN 1..2 OUTBOUND @key relations OPTIONS {bfs: true, uniqueVertices: \"global\"} RETURN v";
pub const SHORTEST: &str = "FOR v IN OUTBOUND SHORTEST_PATH @from TO @to relations RETURN v._id";
pub const AGGREGATION: &str = "FOR x IN profiles COLLECT age = x.AGE WITH COUNT INTO counter RETURN {age: age, amount: counter}";

/// Continuation requests of one cursor are bounded; 100,000 batches of 1,000 rows is far
/// beyond any benchmark query result.
const MAX_BATCHES: usize = 100_000;

/// Write target of the write tests.
const WRITE_COLLECTION: &str = "profiles_temp";

pub struct ArangoHttp {
    settings: ClientSettings,
}

impl ArangoHttp {
    /// `authorization` is the `Authorization` header of every request (None: no header).
    pub fn new(endpoint: &str, authorization: Option<String>) -> Result<ArangoHttp, Error> {
        Ok(ArangoHttp {
            settings: settings(endpoint, authorization, Duration::from_secs(600))?,
        })
    }

    fn control(&self) -> HttpClient {
        let mut client = HttpClient::new(self.settings.clone(), DATABASE);
        client.retry_stale = true;
        client
    }
}

impl Peer for ArangoHttp {
    type Connection = ArangoConnection;

    fn name(&self) -> String {
        "quiver".to_string()
    }

    async fn connect(&self) -> Result<ArangoConnection, Error> {
        // The TCP connection is opened here, before the runner starts its clock, as the
        // PostgreSQL adapter opens its session and the Neo4j pool is open since the warmup.
        let mut client = HttpClient::new(self.settings.clone(), DATABASE);
        client.open().await?;
        Ok(ArangoConnection {
            client,
            body: Vec::with_capacity(256),
        })
    }

    async fn warm_up(&self) -> Result<(), Error> {
        let path = "/_api/collection/relations/loadIndexesIntoMemory";
        call(&mut self.control(), Method::Put, path, None, &[200]).await?;
        Ok(())
    }

    async fn recreate_write_target(&self, sync: bool) -> Result<(), Error> {
        let mut client = self.control();
        let path = format!("/_api/collection/{WRITE_COLLECTION}");
        call(&mut client, Method::Delete, &path, None, &[200, 404]).await?;
        let body = json!({"name": WRITE_COLLECTION, "waitForSync": sync});
        call(
            &mut client,
            Method::Post,
            "/_api/collection",
            Some(&body),
            &[200],
        )
        .await?;
        Ok(())
    }

    async fn count_write_target(&self) -> Result<u64, Error> {
        let path = format!("/_api/collection/{WRITE_COLLECTION}/count");
        let answer = call(&mut self.control(), Method::Get, &path, None, &[200]).await?;
        Ok(answer["count"].as_u64().unwrap_or(0))
    }

    async fn describe(&self) -> Value {
        match call(
            &mut self.control(),
            Method::Get,
            "/_api/version",
            None,
            &[200],
        )
        .await
        {
            Ok(v) => {
                json!({"server": v["server"], "version": v["version"], "protocol": "HTTP/1.1"})
            }
            Err(e) => json!({"error": e.message}),
        }
    }
}

pub struct ArangoConnection {
    client: HttpClient,
    /// The body of the last `POST /_api/cursor`, reused by the next one.
    body: Vec<u8>,
}

/// The benchmark's query texts as JSON strings, escaped once rather than per request.
fn encoded_query(query: &str) -> Option<&'static [u8]> {
    static ENCODED: OnceLock<Vec<(&'static str, Vec<u8>)>> = OnceLock::new();
    let all = ENCODED.get_or_init(|| {
        [NEIGHBORS, NEIGHBORS2, NEIGHBORS2DATA, SHORTEST, AGGREGATION]
            .into_iter()
            .map(|q| (q, serde_json::to_vec(q).unwrap_or_default()))
            .collect()
    });
    all.iter()
        .find(|(q, _)| *q == query)
        .map(|(_, json)| json.as_slice())
}

/// Writes the `POST /_api/cursor` body `{"query":…,"bindVars":{name:"profiles/<key>",…}}`
/// into `out` (cleared first): the query text comes escaped already, each bind value is
/// escaped as it is written.
fn write_cursor_body(out: &mut Vec<u8>, query: &str, vertices: &[(&str, &str)]) {
    out.clear();
    out.extend_from_slice(b"{\"query\":");
    // Writing JSON into a Vec cannot fail.
    match encoded_query(query) {
        Some(json) => out.extend_from_slice(json),
        None => {
            let _ = serde_json::to_writer(&mut *out, query);
        }
    }
    out.extend_from_slice(b",\"bindVars\":{");
    for (i, (name, key)) in vertices.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = serde_json::to_writer(&mut *out, name);
        out.push(b':');
        let _ = serde_json::to_writer(&mut *out, &VertexId(key));
    }
    out.extend_from_slice(b"}}");
}

/// `profiles/<key>` as a JSON string, serialized without building it first.
struct VertexId<'a>(&'a str);

impl serde::Serialize for VertexId<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("profiles/{}", self.0))
    }
}

impl ArangoConnection {
    /// Runs an AQL query through `/_api/cursor` and its continuations. Each batch is decoded
    /// as a typed page ([`CursorPage`]): the whole body is tokenized and validated, the rows
    /// counted and the aggregation's `amount`s summed, without building a document tree —
    /// the counterpart of the PostgreSQL adapter counting rows that tokio-postgres receives
    /// but does not decode. `vertices` are the bind parameters, each a profile's key bound
    /// as its document id.
    async fn query(
        &mut self,
        query: &'static str,
        vertices: &[(&str, &str)],
    ) -> Result<Answer, Error> {
        write_cursor_body(&mut self.body, query, vertices);
        let client = &mut self.client;
        let mut page = cursor_page(client, Method::Post, "/_api/cursor", &self.body, 201).await?;
        let mut answer = Answer::default();
        for _ in 0..MAX_BATCHES {
            answer.rows += page.result.rows;
            answer.amounts += page.result.amounts;
            if !page.has_more {
                return Ok(answer);
            }
            let path = format!("/_api/cursor/{}", page.id.unwrap_or_default());
            page = cursor_page(client, Method::Put, &path, b"", 200).await?;
        }
        Err(Error::with_message(
            ErrorCode::ResourceLimit,
            "cursor has too many batches",
        ))
    }
}

/// One batch of a cursor, as far as the benchmark reads it.
#[derive(Deserialize)]
struct CursorPage {
    result: RowTally,
    #[serde(rename = "hasMore", default)]
    has_more: bool,
    #[serde(default)]
    id: Option<String>,
}

/// The rows of a batch, counted; an object row's numeric `amount` is summed (aggregation).
#[derive(Default)]
struct RowTally {
    rows: u64,
    amounts: u64,
}

impl<'de> Deserialize<'de> for RowTally {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RowTally, D::Error> {
        d.deserialize_seq(RowTallyVisitor)
    }
}

struct RowTallyVisitor;

impl<'de> Visitor<'de> for RowTallyVisitor {
    type Value = RowTally;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of result rows")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RowTally, A::Error> {
        let mut tally = RowTally::default();
        while let Some(row) = seq.next_element::<Row>()? {
            tally.rows += 1;
            tally.amounts += row.amount;
        }
        Ok(tally)
    }
}

/// A result row: anything; an object's `amount` attribute is kept when it is an unsigned
/// integer, every other value is tokenized and dropped.
struct Row {
    amount: u64,
}

impl<'de> Deserialize<'de> for Row {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Row, D::Error> {
        d.deserialize_any(RowVisitor)
    }
}

struct RowVisitor;

impl<'de> Visitor<'de> for RowVisitor {
    type Value = Row;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a result row")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Row, A::Error> {
        let mut amount = 0;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "amount" {
                let value: Value = map.next_value()?;
                amount = value.as_u64().unwrap_or(0);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Row { amount })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Row, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Row { amount: 0 })
    }

    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Row, E> {
        Ok(Row { amount: 0 })
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Row, E> {
        Ok(Row { amount: 0 })
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Row, E> {
        Ok(Row { amount: 0 })
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Row, E> {
        Ok(Row { amount: 0 })
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Row, E> {
        Ok(Row { amount: 0 })
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Row, E> {
        Ok(Row { amount: 0 })
    }
}

/// Sends a cursor request and decodes the answer as a [`CursorPage`].
async fn cursor_page(
    client: &mut HttpClient,
    method: Method,
    path: &str,
    body: &[u8],
    ok: u16,
) -> Result<CursorPage, Error> {
    let response = client.request(method, path, None, body, false).await?;
    if response.status != ok {
        return Err(server_error(
            &format!("{} {path}", method.as_str()),
            &response,
        ));
    }
    serde_json::from_slice(&response.body).map_err(|e| {
        Error::with_message(
            ErrorCode::SimpleClientCouldNotRead,
            format!("malformed cursor answer: {e}"),
        )
    })
}

impl Connection for ArangoConnection {
    async fn run(&mut self, job: &Job, bodies: &[Value], _sync: bool) -> Result<Answer, Error> {
        match job {
            Job::Read(key) => {
                let path = format!("/_api/document/profiles/{key}");
                let response = self.client.get(&path).await?;
                if response.status != 200 {
                    return Err(server_error("read", &response));
                }
                Ok(Answer {
                    rows: 1,
                    amounts: 0,
                })
            }
            Job::Write(i) => {
                // The collection's waitForSync property makes the sync variant durable.
                let path = format!("/_api/document/{WRITE_COLLECTION}");
                let body = bodies.get(*i).map(serde_json::to_vec).transpose();
                let body = body
                    .map_err(|e| Error::with_message(ErrorCode::Internal, e.to_string()))?
                    .unwrap_or_else(|| b"{}".to_vec());
                let response = self
                    .client
                    .request(Method::Post, &path, None, &body, false)
                    .await?;
                if response.status != 201 && response.status != 202 {
                    return Err(server_error("write", &response));
                }
                Ok(Answer {
                    rows: 1,
                    amounts: 0,
                })
            }
            Job::Aggregate => self.query(AGGREGATION, &[]).await,
            Job::Neighbors(key) => self.query(NEIGHBORS, &[("key", key)]).await,
            Job::Neighbors2(key) => self.query(NEIGHBORS2, &[("key", key)]).await,
            Job::Neighbors2Data(key) => self.query(NEIGHBORS2DATA, &[("key", key)]).await,
            Job::Shortest(from, to) => self.query(SHORTEST, &[("from", from), ("to", to)]).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_counts_rows_and_sums_amounts_without_building_documents() {
        let body = br#"{"result":[{"age":1,"amount":3},{"amount":4,"x":[1,{"amount":100}]},
            "s",null,[{"amount":7}],2.5,{"_key":"a","nested":{"amount":9}}],
            "hasMore":true,"id":"42","code":201}"#;
        let page: CursorPage = serde_json::from_slice(body).unwrap();
        assert_eq!(page.result.rows, 7);
        assert_eq!(page.result.amounts, 7);
        assert!(page.has_more);
        assert_eq!(page.id.as_deref(), Some("42"));
        let last: CursorPage = serde_json::from_slice(br#"{"result":[],"hasMore":false}"#).unwrap();
        assert_eq!((last.result.rows, last.has_more), (0, false));
        assert!(serde_json::from_slice::<CursorPage>(br#"{"result":[{"a":}]}"#).is_err());
    }

    #[test]
    fn cursor_bodies_match_the_json_of_the_query_and_its_bind_values() {
        let mut out = b"left over".to_vec();
        write_cursor_body(&mut out, SHORTEST, &[("from", "a\"1"), ("to", "2")]);
        let body: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            body,
            json!({"query": SHORTEST, "bindVars": {"from": "profiles/a\"1", "to": "profiles/2"}})
        );
        write_cursor_body(&mut out, AGGREGATION, &[]);
        let body: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(body, json!({"query": AGGREGATION, "bindVars": {}}));
        // A text that is not one of the benchmark's is escaped as it is written.
        write_cursor_body(&mut out, "RETURN \"é\\n\"", &[("k", "1")]);
        let body: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            body,
            json!({"query": "RETURN \"é\\n\"", "bindVars": {"k": "profiles/1"}})
        );
    }
}
