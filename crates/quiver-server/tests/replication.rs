//! Handler tests (no socket) for the replication API as arangodump and arangorestore use it:
//! dump batches and their consistent read views, the inventory, chunked dumps with retries,
//! and `restore-collection`/`restore-indexes`/`restore-data`/`restore-view`.

use std::sync::Arc;

use http::Method;
use quiver_core::{Core, CoreOptions};
use quiver_server::{handle, Request, Response, ServerConfig, ServerState};
use serde_json::{json, Value};

struct Fixture {
    state: Arc<ServerState>,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let config = ServerConfig {
        data_dir: dir.path().to_path_buf(),
        async_queue_capacity: 4,
        async_workers: 1,
        auth: quiver_server::auth::AuthConfig::disabled(),
        ..ServerConfig::default()
    };
    Fixture {
        state: ServerState::new(config, core).unwrap(),
        _dir: dir,
    }
}

impl Fixture {
    fn call(&self, method: Method, target: &str, body: Option<Value>) -> Response {
        let mut req = Request::build(method, target);
        if let Some(b) = body {
            req = req.with_body(serde_json::to_vec(&b).unwrap());
        }
        handle(&self.state, req).settle_blocking()
    }

    fn raw(&self, method: Method, target: &str, body: &str) -> Response {
        let req = Request::build(method, target).with_body(body.as_bytes().to_vec());
        handle(&self.state, req).settle_blocking()
    }

    fn json(&self, method: Method, target: &str, body: Option<Value>) -> (u16, Value) {
        let r = self.call(method, target, body);
        let status = r.status.as_u16();
        (status, r.body_json().unwrap_or(Value::Null))
    }

    fn batch(&self) -> String {
        let (status, body) = self.json(
            Method::POST,
            "/_api/replication/batch",
            Some(json!({"ttl": 60})),
        );
        assert_eq!(status, 200, "{body}");
        body["id"].as_str().unwrap().to_string()
    }

    /// All chunks of a collection's dump, following checkmore/lastincluded.
    fn dump_all(&self, batch: &str, coll: &str, chunk: usize) -> Vec<Value> {
        let mut from = 0u64;
        let mut docs = Vec::new();
        for _ in 0..10_000 {
            let r = self.call(
                Method::GET,
                &format!("/_api/replication/dump?collection={coll}&batchId={batch}&useEnvelope=false&from={from}&chunkSize={chunk}"),
                None,
            );
            assert!(matches!(r.status.as_u16(), 200 | 204), "{r:?}");
            if r.status.as_u16() == 200 {
                assert!(r
                    .content_type
                    .as_ref()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .starts_with("application/x-arango-dump"));
            }
            for line in String::from_utf8(r.body.to_vec()).unwrap().lines() {
                docs.push(serde_json::from_str::<Value>(line).unwrap());
            }
            let more = r.header("x-arango-replication-checkmore").unwrap() == "true";
            let last: u64 = r
                .header("x-arango-replication-lastincluded")
                .unwrap()
                .parse()
                .unwrap();
            if !more {
                return docs;
            }
            assert!(last > from);
            from = last;
        }
        panic!("dump did not end");
    }
}

#[test]
fn a_batch_dumps_the_snapshot_it_started_with() {
    let f = fixture();
    f.json(Method::POST, "/_api/collection", Some(json!({"name": "c"})));
    let docs: Vec<Value> = (0..500)
        .map(|i| json!({"_key": format!("k{i}"), "pad": "x".repeat(100)}))
        .collect();
    assert_eq!(
        f.json(Method::POST, "/_api/document/c", Some(json!(docs)))
            .0,
        202
    );
    let batch = f.batch();
    // Writes after the batch started are not in its dump.
    f.json(
        Method::POST,
        "/_api/document/c",
        Some(json!({"_key": "late"})),
    );
    f.json(Method::DELETE, "/_api/document/c/k0", None);
    let dumped = f.dump_all(&batch, "c", 4096);
    assert_eq!(dumped.len(), 500);
    assert!(dumped.iter().any(|d| d["_key"] == "k0"));
    assert!(!dumped.iter().any(|d| d["_key"] == "late"));
    assert!(dumped
        .iter()
        .all(|d| d["_id"].as_str().unwrap().starts_with("c/") && d["_rev"].is_string()));
    // A new batch sees the writes.
    let again = f.batch();
    let dumped = f.dump_all(&again, "c", 1 << 20);
    assert_eq!(dumped.len(), 500);
    assert!(dumped.iter().any(|d| d["_key"] == "late"));
    assert_eq!(
        f.call(
            Method::DELETE,
            &format!("/_api/replication/batch/{batch}"),
            None
        )
        .status,
        204
    );
    let (status, body) = f.json(
        Method::DELETE,
        &format!("/_api/replication/batch/{batch}"),
        None,
    );
    assert_eq!((status, body["errorNum"].as_u64()), (404, Some(1600)));
}

#[test]
fn a_retried_chunk_repeats_and_a_wrong_position_is_refused() {
    let f = fixture();
    f.json(Method::POST, "/_api/collection", Some(json!({"name": "c"})));
    let docs: Vec<Value> = (0..50)
        .map(|i| json!({"i": i, "pad": "y".repeat(200)}))
        .collect();
    f.json(Method::POST, "/_api/document/c", Some(json!(docs)));
    let batch = f.batch();
    let target = |from: u64| {
        format!("/_api/replication/dump?collection=c&batchId={batch}&useEnvelope=false&from={from}&chunkSize=1000")
    };
    let first = f.call(Method::GET, &target(0), None);
    let last: u64 = first
        .header("x-arango-replication-lastincluded")
        .unwrap()
        .parse()
        .unwrap();
    let second = f.call(Method::GET, &target(last), None);
    let retry = f.call(Method::GET, &target(last), None);
    assert_eq!(second.body, retry.body);
    let (status, body) = f.json(Method::GET, &target(9999), None);
    assert_eq!((status, body["errorNum"].as_u64()), (400, Some(10)));
    // Enveloped lines by default, as ArangoDB's replication dump.
    let other = f.batch();
    let r = f.call(
        Method::GET,
        &format!("/_api/replication/dump?collection=c&batchId={other}"),
        None,
    );
    let line: Value = serde_json::from_str(
        String::from_utf8(r.body.to_vec())
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(line["type"], 2300);
    assert!(line["data"]["_key"].is_string());
    // Without a batch there is no dump.
    let (status, _) = f.json(Method::GET, "/_api/replication/dump?collection=c", None);
    assert_eq!(status, 400);
    let (status, body) = f.json(
        Method::GET,
        "/_api/replication/dump?collection=c&batchId=424242",
        None,
    );
    assert_eq!((status, body["errorNum"].as_u64()), (404, Some(1600)));
}

#[test]
fn inventory_lists_collections_with_indexes_and_key_state() {
    let f = fixture();
    f.json(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "e", "type": 3})),
    );
    f.json(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "a", "keyOptions": {"type": "autoincrement", "offset": 5, "increment": 10}})),
    );
    f.json(Method::POST, "/_api/document/a", Some(json!([{}, {}])));
    f.json(
        Method::POST,
        "/_api/index?collection=a",
        Some(json!({"type": "persistent", "fields": ["x"], "name": "by_x"})),
    );
    let (status, inv) = f.json(
        Method::GET,
        "/_api/replication/inventory?includeSystem=false",
        None,
    );
    assert_eq!(status, 200, "{inv}");
    let names: Vec<&str> = inv["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["parameters"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "e"]);
    let a = &inv["collections"][0];
    assert_eq!(a["parameters"]["keyOptions"]["lastValue"], 15);
    assert_eq!(a["indexes"].as_array().unwrap().len(), 1);
    assert_eq!(a["indexes"][0]["name"], "by_x");
    assert!(!a["indexes"][0]["id"].as_str().unwrap().contains('/'));
    assert_eq!(inv["properties"]["name"], "_system");
    let (_, with_system) = f.json(Method::GET, "/_api/replication/inventory", None);
    assert!(with_system["collections"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["parameters"]["name"] == "_graphs"));
}

#[test]
fn restore_creates_collections_indexes_and_data() {
    let f = fixture();
    let structure = json!({
        "parameters": {"name": "r", "type": 2, "waitForSync": true, "id": "999",
            "keyOptions": {"type": "autoincrement", "allowUserKeys": true, "offset": 100, "increment": 10, "lastValue": 120},
            "numberOfShards": 1, "shardKeys": ["_key"]},
        "indexes": [{"id": "7", "type": "hash", "fields": ["v"], "unique": true, "name": "by_v"}]
    });
    let (status, body) = f.json(
        Method::PUT,
        "/_api/replication/restore-collection",
        Some(structure.clone()),
    );
    assert_eq!(status, 200, "{body}");
    // Exists now: only overwrite replaces it.
    let (status, body) = f.json(
        Method::PUT,
        "/_api/replication/restore-collection",
        Some(structure.clone()),
    );
    assert_eq!((status, body["errorNum"].as_u64()), (409, Some(1207)));
    assert_eq!(
        f.json(
            Method::PUT,
            "/_api/replication/restore-collection?overwrite=true",
            Some(structure.clone())
        )
        .0,
        200
    );
    let data = "{\"_key\":\"100\",\"_id\":\"r/100\",\"_rev\":\"_abc---\",\"v\":1}\n\
                {\"type\":2300,\"data\":{\"_key\":\"110\",\"v\":2}}\n\
                {\"type\":2300,\"data\":{\"_key\":\"gone\",\"v\":3}}\n\
                {\"type\":2302,\"data\":{\"_key\":\"gone\"}}\n";
    let r = f.raw(
        Method::PUT,
        "/_api/replication/restore-data?collection=r",
        data,
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(
        f.json(
            Method::PUT,
            "/_api/replication/restore-indexes?collection=r",
            Some(structure)
        )
        .0,
        200
    );
    let (_, count) = f.json(Method::GET, "/_api/collection/r/count", None);
    assert_eq!(count["count"], 2);
    let (_, props) = f.json(Method::GET, "/_api/collection/r/properties", None);
    assert_eq!(props["waitForSync"], true);
    assert_eq!(props["keyOptions"]["lastValue"], 120);
    let (_, created) = f.json(Method::POST, "/_api/document/r", Some(json!({"v": 9})));
    assert_eq!(created["_key"], "130");
    let (status, body) = f.json(Method::POST, "/_api/document/r", Some(json!({"v": 1})));
    assert_eq!(
        (status, body["errorNum"].as_u64()),
        (409, Some(1210)),
        "the unique index is back"
    );
    // Restored documents keep their dumped revisions; later writes get larger ones.
    let (_, doc) = f.json(Method::GET, "/_api/document/r/100", None);
    assert_eq!(doc["_rev"], "_abc---");
    let dumped = quiver_types::Revision::decode("_abc---").unwrap();
    let (status, replaced) = f.json(Method::PUT, "/_api/document/r/100", Some(json!({"v": 5})));
    assert_eq!(status, 201, "the collection waits for sync: {replaced}");
    let later = quiver_types::Revision::decode(replaced["_rev"].as_str().unwrap()).unwrap();
    assert!(later > dumped, "{replaced}");
    let (_, created_rev) = f.json(Method::GET, "/_api/document/r/130", None);
    assert!(
        quiver_types::Revision::decode(created_rev["_rev"].as_str().unwrap()).unwrap() > dumped
    );
    // The dumped index id is kept; the next index continues past it.
    let (_, indexes) = f.json(Method::GET, "/_api/index?collection=r", None);
    let by_v = indexes["indexes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "by_v")
        .unwrap();
    assert_eq!(by_v["id"], "r/7", "{indexes}");
    let (_, next) = f.json(
        Method::POST,
        "/_api/index?collection=r",
        Some(json!({"type": "persistent", "fields": ["w"]})),
    );
    assert_eq!(next["id"], "r/8", "{next}");
    // Bad data: line numbers in the message, nothing partial reported as success.
    let (status, body) = {
        let r = f.raw(
            Method::PUT,
            "/_api/replication/restore-data?collection=r",
            "{\"_key\":\"x\"}\nnot json\n",
        );
        (r.status.as_u16(), r.body_json().unwrap())
    };
    assert_eq!(status, 400);
    assert!(
        body["errorMessage"].as_str().unwrap().contains("line 2"),
        "{body}"
    );
    // A dumped view comes back with its links; the inventory lists it as it was dumped.
    let view = json!({"name": "v", "type": "arangosearch", "id": "4711",
        "globallyUniqueId": "h1/4711", "links": {"r": {"includeAllFields": true}}});
    let (status, body) = f.json(
        Method::PUT,
        "/_api/replication/restore-view",
        Some(view.clone()),
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = f.json(
        Method::PUT,
        "/_api/replication/restore-view",
        Some(view.clone()),
    );
    assert_eq!((status, body["errorNum"].as_u64()), (409, Some(1207)));
    let (status, body) = f.json(
        Method::PUT,
        "/_api/replication/restore-view?overwrite=true",
        Some(view),
    );
    assert_eq!(status, 200, "{body}");
    let (_, inventory) = f.json(Method::GET, "/_api/replication/inventory", None);
    let views = inventory["views"].as_array().unwrap();
    assert_eq!(views.len(), 1, "{inventory}");
    assert_eq!(views[0]["name"], "v");
    assert_eq!(views[0]["type"], "arangosearch");
    assert_eq!(
        views[0]["links"]["r"]["includeAllFields"], true,
        "{inventory}"
    );
    assert_ne!(views[0]["id"], "4711");
    let (status, body) = f.json(
        Method::PUT,
        "/_api/replication/restore-view",
        Some(json!({"type": "arangosearch"})),
    );
    assert_eq!((status, body["errorNum"].as_u64()), (400, Some(10)));
    let (status, body) = f.json(
        Method::PUT,
        "/_api/replication/restore-view",
        Some(json!({"name": "w", "type": "arangosearch", "links": {"missing": {}}})),
    );
    assert_eq!(
        (status, body["errorNum"].as_u64()),
        (404, Some(1203)),
        "{body}"
    );
    let (status, _) = f.json(
        Method::PUT,
        "/_api/replication/restore-collection",
        Some(json!({"indexes": []})),
    );
    assert_eq!(status, 400);
}

#[test]
fn restoring_a_system_collection_keeps_it_and_replaces_its_content() {
    let f = fixture();
    let (_, inv) = f.json(Method::GET, "/_api/replication/inventory", None);
    let graphs = inv["collections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["parameters"]["name"] == "_graphs")
        .unwrap()
        .clone();
    f.json(
        Method::POST,
        "/_api/gharial",
        Some(json!({"name": "g", "edgeDefinitions": []})),
    );
    assert_eq!(
        f.json(
            Method::PUT,
            "/_api/replication/restore-collection?overwrite=true",
            Some(graphs)
        )
        .0,
        200
    );
    let (_, count) = f.json(Method::GET, "/_api/collection/_graphs/count", None);
    assert_eq!(count["count"], 0);
}

#[test]
fn parallel_dump_hands_out_every_document_once_with_retries() {
    let f = fixture();
    for name in ["p1", "p2", "empty"] {
        f.json(
            Method::POST,
            "/_api/collection",
            Some(json!({ "name": name })),
        );
    }
    for name in ["p1", "p2"] {
        let docs: Vec<Value> = (0..300)
            .map(|i| json!({"_key": format!("{name}-{i}"), "pad": "z".repeat(100)}))
            .collect();
        f.json(
            Method::POST,
            &format!("/_api/document/{name}"),
            Some(json!(docs)),
        );
    }
    let r = f.call(
        Method::POST,
        "/_api/dump/start",
        Some(json!({"batchSize": 4096, "prefetchCount": 2, "parallelism": 2, "shards": ["p1", "p2", "empty"]})),
    );
    assert_eq!(r.status, 201, "{r:?}");
    let id = r.header("x-arango-dump-id").unwrap().to_string();
    // Writes after the start are not part of the dump.
    f.json(
        Method::POST,
        "/_api/document/p1",
        Some(json!({"_key": "late"})),
    );
    let mut seen: std::collections::HashMap<String, String> = Default::default();
    let mut last: Option<u64> = None;
    for batch_id in 1..10_000u64 {
        let ack = last.map(|l| format!("&lastBatch={l}")).unwrap_or_default();
        let target = format!("/_api/dump/next/{id}?batchId={batch_id}{ack}");
        let r = f.call(Method::POST, &target, None);
        if r.status == 204 {
            break;
        }
        assert_eq!(r.status, 200, "{r:?}");
        // A retry of the same batch gives the same bytes.
        let again = f.call(Method::POST, &target, None);
        assert_eq!(again.body, r.body);
        let shard = r.header("x-arango-dump-shard-id").unwrap().to_string();
        for line in String::from_utf8(r.body.to_vec()).unwrap().lines() {
            let doc: Value = serde_json::from_str(line).unwrap();
            let key = doc["_key"].as_str().unwrap().to_string();
            assert!(key.starts_with(&shard), "{key} in a batch of {shard}");
            assert!(
                seen.insert(key, shard.clone()).is_none(),
                "handed out twice"
            );
        }
        last = Some(batch_id);
    }
    assert_eq!(seen.len(), 600);
    assert!(!seen.contains_key("late"));
    assert_eq!(
        f.call(Method::DELETE, &format!("/_api/dump/{id}"), None)
            .status,
        200
    );
    let (status, body) = f.json(
        Method::POST,
        &format!("/_api/dump/next/{id}?batchId=1"),
        None,
    );
    assert_eq!((status, body["errorNum"].as_u64()), (404, Some(1600)));
    let (status, _) = f.json(
        Method::POST,
        "/_api/dump/start",
        Some(json!({"shards": ["nope"]})),
    );
    assert_eq!(status, 404);
    let (status, _) = f.json(Method::POST, "/_api/dump/next/1", None);
    assert_eq!(status, 400);
}

#[test]
fn wal_last_tick_follows_commits_and_tailing_is_refused() {
    let f = fixture();
    let (status, first) = f.json(Method::GET, "/_api/wal/lastTick", None);
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["server"]["version"], "3.12.4");
    let time = first["time"].as_str().unwrap();
    assert!(time.len() == 20 && time.ends_with('Z'), "{time}");
    let before: u64 = first["tick"].as_str().unwrap().parse().unwrap();
    f.json(Method::POST, "/_api/collection", Some(json!({"name": "w"})));
    f.json(Method::POST, "/_api/document/w", Some(json!({"a": 1})));
    let (_, second) = f.json(Method::GET, "/_api/wal/lastTick", None);
    let after: u64 = second["tick"].as_str().unwrap().parse().unwrap();
    assert!(after > before, "{first} {second}");
    let (status, _) = f.json(Method::POST, "/_api/wal/lastTick", None);
    assert_eq!(status, 405);
    for path in ["/_api/wal/range", "/_api/wal/tail?from=0"] {
        let (status, body) = f.json(Method::GET, path, None);
        assert_eq!(
            (status, body["errorNum"].as_u64()),
            (501, Some(9)),
            "{path}: {body}"
        );
    }
}

#[test]
fn logger_state_reports_the_last_tick_and_the_events_since_start() {
    let f = fixture();
    let (status, first) = f.json(Method::GET, "/_api/replication/logger-state", None);
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["state"]["running"], true);
    assert_eq!(first["server"]["version"], "3.12.4");
    assert_eq!(first["clients"], json!([]));
    let server_id = first["server"]["serverId"].as_str().unwrap();
    assert!(server_id.parse::<u64>().unwrap() > 0, "{first}");
    let before: u64 = first["state"]["lastLogTick"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        first["state"]["lastUncommittedLogTick"],
        first["state"]["lastLogTick"]
    );
    let events = first["state"]["totalEvents"].as_u64().unwrap();
    f.json(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "logged"})),
    );
    f.json(Method::POST, "/_api/document/logged", Some(json!({"a": 1})));
    let (_, second) = f.json(Method::GET, "/_api/replication/logger-state", None);
    let after: u64 = second["state"]["lastLogTick"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(after > before, "{first} {second}");
    assert!(second["state"]["totalEvents"].as_u64().unwrap() > events);
    assert_eq!(second["server"]["serverId"], server_id, "the id is kept");
    let (status, _) = f.json(Method::PUT, "/_api/replication/logger-state", None);
    assert_eq!(status, 405);
}

/// `_rev` string to its number (ArangoDB's base64 digits).
fn revision_number(text: &str) -> u64 {
    quiver_core::Revision::decode(text).unwrap().0
}

#[test]
fn revision_tree_ranges_and_documents_follow_the_batch() {
    let f = fixture();
    f.json(Method::POST, "/_api/collection", Some(json!({"name": "t"})));
    let docs: Vec<Value> = (0..300)
        .map(|i| json!({"_key": format!("k{i}"), "n": i}))
        .collect();
    let (status, _) = f.json(Method::POST, "/_api/document/t", Some(Value::Array(docs)));
    assert_eq!(status, 202);
    let batch = f.batch();
    // Writes after the batch change nothing the batch answers.
    f.json(
        Method::POST,
        "/_api/document/t",
        Some(json!({"_key": "late"})),
    );
    f.json(Method::DELETE, "/_api/document/t/k0", None);
    let dumped = f.dump_all(&batch, "t", 1 << 20);
    assert_eq!(dumped.len(), 300);
    let mut revisions: Vec<u64> = dumped
        .iter()
        .map(|d| revision_number(d["_rev"].as_str().unwrap()))
        .collect();
    revisions.sort_unstable();

    let tree_of = |query: &str| {
        let (status, tree) = f.json(
            Method::GET,
            &format!("/_api/replication/revisions/tree?collection=t&batchId={batch}{query}"),
            None,
        );
        assert_eq!(status, 200, "{tree}");
        tree
    };
    let tree = tree_of("");
    assert_eq!(
        (tree["version"].as_u64(), tree["maxDepth"].as_u64()),
        (Some(1), Some(6))
    );
    assert_eq!(tree["count"], 300);
    let nodes = tree["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1 << 18);
    let range_min = revision_number(tree["rangeMin"].as_str().unwrap());
    let range_max = revision_number(tree["rangeMax"].as_str().unwrap());
    assert_eq!(tree["initialRangeMin"], tree["rangeMin"]);
    assert!(range_min <= revisions[0] && *revisions.last().unwrap() < range_max);
    // Each revision counts in the leaf its offset names, with its FNV-1a hash; the summary
    // is the sum and XOR of the leaves.
    let leaf_width = (range_max - range_min) >> 18;
    let mut expected = vec![(0u64, 0u64); 1 << 18];
    for &r in &revisions {
        let leaf = &mut expected[((r - range_min) / leaf_width) as usize];
        leaf.0 += 1;
        leaf.1 ^= quiver_server::revision_tree::revision_hash(r);
    }
    let mut xor = 0;
    for (node, (count, hash)) in nodes.iter().zip(&expected) {
        assert_eq!(
            (node["count"].as_u64(), node["hash"].as_u64()),
            (Some(*count), Some(*hash))
        );
        xor ^= hash;
    }
    assert_eq!(tree["hash"].as_u64(), Some(xor));
    // onlyPopulated: the same tree, empty leaves as {}.
    let populated = tree_of("&onlyPopulated=true");
    assert_eq!(populated["hash"], tree["hash"]);
    for (node, full) in populated["nodes"].as_array().unwrap().iter().zip(nodes) {
        if full["count"] == 0 {
            assert_eq!(node, &json!({}));
        } else {
            assert_eq!(node, full);
        }
    }

    // A copy restored with its revisions has the same tree.
    let structure = json!({"parameters": {"name": "copy", "type": 2}, "indexes": []});
    f.json(
        Method::PUT,
        "/_api/replication/restore-collection",
        Some(structure),
    );
    let lines: String = dumped.iter().map(|d| format!("{d}\n")).collect();
    let r = f.raw(
        Method::PUT,
        "/_api/replication/restore-data?collection=copy",
        &lines,
    );
    assert_eq!(r.status, 200, "{r:?}");
    let copy_batch = f.batch();
    let (_, copy) = f.json(
        Method::GET,
        &format!("/_api/replication/revisions/tree?collection=copy&batchId={copy_batch}"),
        None,
    );
    assert_eq!(copy, tree);

    // ranges: every revision of the batch, ascending, split at the middle revision.
    let encode = |r: u64| quiver_core::Revision(r).encode();
    let middle = revisions[150];
    let body = json!([
        [encode(revisions[0]), encode(middle)],
        [encode(middle + 1), encode(range_max - 1)]
    ]);
    let (status, ranges) = f.json(
        Method::PUT,
        &format!("/_api/replication/revisions/ranges?collection=t&batchId={batch}"),
        Some(body.clone()),
    );
    assert_eq!(status, 200, "{ranges}");
    assert!(ranges.get("resume").is_none(), "{ranges}");
    let listed: Vec<Vec<u64>> = ranges["ranges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|v| revision_number(v.as_str().unwrap()))
                .collect()
        })
        .collect();
    assert_eq!(
        listed,
        vec![revisions[..=150].to_vec(), revisions[151..].to_vec()]
    );
    // Resuming inside the second range lists only what follows.
    let (_, resumed) = f.json(
        Method::PUT,
        &format!(
            "/_api/replication/revisions/ranges?collection=t&batchId={batch}&resume={}",
            encode(revisions[200])
        ),
        Some(body),
    );
    assert_eq!(resumed["ranges"].as_array().unwrap().len(), 1);
    assert_eq!(resumed["ranges"][0].as_array().unwrap().len(), 100);

    // documents: in request order, {} for a revision no document has in the batch.
    let late = f.json(Method::GET, "/_api/document/t/late", None).1;
    let wanted = json!([encode(revisions[0]), late["_rev"], encode(revisions[299])]);
    let (status, found) = f.json(
        Method::PUT,
        &format!("/_api/replication/revisions/documents?collection=t&batchId={batch}"),
        Some(wanted.clone()),
    );
    assert_eq!(status, 200, "{found}");
    let by_rev = |r: u64| {
        dumped
            .iter()
            .find(|d| revision_number(d["_rev"].as_str().unwrap()) == r)
            .unwrap()
            .clone()
    };
    assert_eq!(
        found,
        json!([by_rev(revisions[0]), {}, by_rev(revisions[299])])
    );
    assert!(found[0]["_id"].as_str().unwrap().starts_with("t/"));
    // chunkSize stops before the document that passes it, after at least one.
    let (_, first) = f.json(
        Method::PUT,
        &format!("/_api/replication/revisions/documents?collection=t&batchId={batch}&chunkSize=1"),
        Some(wanted),
    );
    assert_eq!(first.as_array().unwrap().len(), 1);
}

/// restore-data reads plain and enveloped lines in one pass: every document keeps its dumped
/// revision and its attributes' order, a dumped document replaces a stored one, edges reach
/// the edge index, and a refused line stops the request (or is skipped with `force`) with the
/// error of its line.
#[test]
fn restore_data_keeps_revisions_order_and_errors() {
    let f = fixture();
    let (status, body) = f.json(
        Method::POST,
        "/_api/collection",
        Some(json!({"name": "e", "type": 3})),
    );
    assert_eq!(status, 200, "{body}");
    let restore = |query: &str, data: &str| {
        let r = f.raw(
            Method::PUT,
            &format!("/_api/replication/restore-data?collection=e{query}"),
            data,
        );
        (r.status.as_u16(), r.body_json().unwrap_or(Value::Null))
    };
    let data = "{\"_key\":\"a\",\"_id\":\"e/a\",\"_rev\":\"_abc---\",\"_to\":\"v/2\",\"x\":[1.0,{\"y\":2}],\"_from\":\"v/1\"}\n\
                \r\n\
                {\"type\":2301,\"data\":{\"_id\":\"e/b\",\"_key\":\"b\",\"_rev\":\"_abd---\",\"_from\":\"v/1\",\"_to\":\"v/3\"}}\n";
    assert_eq!(restore("", data).0, 200);
    let stored = |key: &str| {
        let r = f.call(Method::GET, &format!("/_api/document/e/{key}"), None);
        String::from_utf8(r.body.to_vec()).unwrap()
    };
    assert_eq!(
        stored("a"),
        r#"{"_key":"a","_id":"e/a","_rev":"_abc---","_to":"v/2","x":[1,{"y":2}],"_from":"v/1"}"#
    );
    assert_eq!(
        stored("b"),
        r#"{"_key":"b","_id":"e/b","_rev":"_abd---","_from":"v/1","_to":"v/3"}"#
    );
    // A dumped document over a stored one replaces it, with its dumped revision.
    let again = "{\"type\":2300,\"data\":{\"_key\":\"a\",\"_rev\":\"_abe---\",\"_from\":\"v/1\",\"_to\":\"v/4\"}}\n";
    assert_eq!(restore("", again).0, 200);
    assert_eq!(
        stored("a"),
        r#"{"_key":"a","_id":"e/a","_rev":"_abe---","_from":"v/1","_to":"v/4"}"#
    );
    let (_, edges) = f.json(Method::GET, "/_api/edges/e?vertex=v/1&direction=out", None);
    let mut to: Vec<&str> = edges["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["_to"].as_str().unwrap())
        .collect();
    to.sort();
    assert_eq!(to, ["v/3", "v/4"]);
    // Refused lines: the error of the line; nothing after it is written.
    let bad_edge = "{\"_key\":\"c\",\"_from\":\"v/1\",\"_to\":\"v/5\"}\n{\"_key\":\"d\",\"_from\":\"v/1\"}\n{\"_key\":\"f\",\"_from\":\"v/1\",\"_to\":\"v/6\"}\n";
    let (status, body) = restore("", bad_edge);
    assert_eq!(
        (status, body["errorNum"].as_u64()),
        (400, Some(1233)),
        "{body}"
    );
    let (status, body) = restore("", "{\"type\":9999,\"data\":{}}\n");
    assert_eq!(
        (status, body["errorNum"].as_u64()),
        (400, Some(10)),
        "{body}"
    );
    assert_eq!(
        body["errorMessage"],
        "unexpected marker type 9999 in line 1 of the restore data"
    );
    let (status, body) = restore("", "{\"type\":2302,\"data\":{\"_key\":7}}\n");
    assert_eq!(
        (status, body["errorMessage"].as_str()),
        (400, Some("remove marker in line 1 has no _key"))
    );
    let (status, body) = restore("", "\n[1]\n");
    assert_eq!(
        (status, body["errorNum"].as_u64()),
        (400, Some(1227)),
        "{body}"
    );
    assert_eq!(
        body["errorMessage"],
        "line 2 of the restore data is not a JSON object"
    );
    let (status, body) = restore("", "{\"a\":1,\"a\":2}\n");
    assert_eq!(status, 400, "{body}");
    assert!(
        body["errorMessage"]
            .as_str()
            .unwrap()
            .starts_with("invalid JSON in line 1 of the restore data: "),
        "{body}"
    );
    // With force the refused lines are skipped.
    assert_eq!(restore("&force=true", bad_edge).0, 200);
    let (_, count) = f.json(Method::GET, "/_api/collection/e/count", None);
    assert_eq!(
        count["count"], 4,
        "a, b, c and f: the refused request wrote nothing"
    );
    // An enveloped removal.
    assert_eq!(
        restore("", "{\"type\":2302,\"data\":{\"_key\":\"c\"}}\n").0,
        200
    );
    assert_eq!(
        f.json(Method::GET, "/_api/collection/e/count", None).1["count"],
        3
    );
}
