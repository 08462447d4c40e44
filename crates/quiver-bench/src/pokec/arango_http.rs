//! The adapter for QuiverDB, or any ArangoDB-compatible server, over ArangoDB's HTTP API with
//! the queries of the 2018 ArangoDB adapter (arangojs 5.8): documents by key through
//! `/_api/document`, everything else as AQL through `/_api/cursor`.

use std::time::Duration;

use quiver_errors::{Error, ErrorCode};
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

fn vertex(key: &str) -> Value {
    json!(format!("profiles/{key}"))
}

impl Peer for ArangoHttp {
    type Connection = ArangoConnection;

    fn name(&self) -> String {
        "quiver".to_string()
    }

    async fn connect(&self) -> Result<ArangoConnection, Error> {
        Ok(ArangoConnection {
            client: HttpClient::new(self.settings.clone(), DATABASE),
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
}

impl ArangoConnection {
    async fn query(&mut self, query: &str, bind: Value) -> Result<Answer, Error> {
        let body = json!({"query": query, "bindVars": bind});
        let client = &mut self.client;
        let mut page = call(client, Method::Post, "/_api/cursor", Some(&body), &[201]).await?;
        let mut answer = Answer::default();
        for _ in 0..MAX_BATCHES {
            let result = page["result"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            answer.rows += result.len() as u64;
            answer.amounts += result
                .iter()
                .filter_map(|r| r["amount"].as_u64())
                .sum::<u64>();
            if page["hasMore"] != json!(true) {
                return Ok(answer);
            }
            let id = page["id"].as_str().unwrap_or_default().to_string();
            let path = format!("/_api/cursor/{id}");
            page = call(client, Method::Put, &path, None, &[200]).await?;
        }
        Err(Error::with_message(
            ErrorCode::ResourceLimit,
            "cursor has too many batches",
        ))
    }
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
            Job::Aggregate => self.query(AGGREGATION, json!({})).await,
            Job::Neighbors(key) => self.query(NEIGHBORS, json!({"key": vertex(key)})).await,
            Job::Neighbors2(key) => self.query(NEIGHBORS2, json!({"key": vertex(key)})).await,
            Job::Neighbors2Data(key) => {
                self.query(NEIGHBORS2DATA, json!({"key": vertex(key)}))
                    .await
            }
            Job::Shortest(from, to) => {
                self.query(SHORTEST, json!({"from": vertex(from), "to": vertex(to)}))
                    .await
            }
        }
    }
}
