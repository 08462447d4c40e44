//! Cursor API behaviour through the JSON service over the in-memory source: batches, count,
//! fullCount, streaming, retries, deletion, expiry, errors, the query registry.

mod support;

use support::CursorJson;

use std::sync::Arc;

use quiver_aql::source::memory::MemorySource;
use quiver_aql::{CursorRequest, QueryService};
use quiver_errors::ErrorCode;
use serde_json::{json, Value};

fn service_with_docs(n: usize) -> (Arc<MemorySource>, QueryService) {
    let source = Arc::new(MemorySource::new());
    let docs: Vec<Value> = (0..n)
        .map(|i| json!({"_key": format!("k{i:05}"), "v": i}))
        .collect();
    source
        .create_collection("_system", "docs", false, docs)
        .unwrap();
    let service = QueryService::new(source.clone());
    (source, service)
}

fn post(s: &QueryService, body: Value) -> Value {
    let (code, reply) = s
        .create_cursor_json("_system", support::cursor(&body))
        .expect("cursor created");
    assert_eq!(code, 201);
    assert_eq!(reply["code"], 201);
    reply
}

#[test]
fn multi_batch_with_count_and_continuation() {
    let (_, s) = service_with_docs(0);
    let first = post(
        &s,
        json!({"query": "FOR i IN 1..2500 RETURN i", "count": true}),
    );
    assert_eq!(first["result"].as_array().unwrap().len(), 1000);
    assert_eq!(first["hasMore"], true);
    assert_eq!(first["count"], 2500);
    assert_eq!(first["nextBatchId"], "2");
    assert!(first["extra"]["stats"]["executionTime"].as_f64().unwrap() > 0.0);
    assert_eq!(first["extra"]["warnings"], json!([]));
    let id = first["id"].as_str().unwrap().to_string();
    let (code, second) = s.next_batch_json("_system", &id, None).unwrap();
    assert_eq!(code, 200);
    assert_eq!(second["result"][0], 1001);
    assert_eq!(second["id"], id.as_str());
    assert_eq!(second["count"], 2500);
    assert!(
        second["extra"].is_object(),
        "non-streaming batches all carry extra"
    );
    let (_, third) = s.next_batch_json("_system", &id, Some("3")).unwrap();
    assert_eq!(third["hasMore"], false);
    assert_eq!(third["result"].as_array().unwrap().len(), 500);
    assert!(third.get("nextBatchId").is_none());
    let gone = s.next_batch_json("_system", &id, None).unwrap_err();
    assert_eq!(gone.code, ErrorCode::CursorNotFound);
    assert_eq!(s.open_cursors(), 0);
}

#[test]
fn single_batch_results_have_no_cursor() {
    let (_, s) = service_with_docs(0);
    let r = post(&s, json!({"query": "RETURN 1"}));
    assert_eq!(r["result"], json!([1]));
    assert_eq!(r["hasMore"], false);
    assert!(r.get("id").is_none());
    assert!(r.get("count").is_none());
    assert_eq!(r["cached"], false);
    assert_eq!(r["error"], false);
    assert_eq!(s.open_cursors(), 0);
}

#[test]
fn complete_first_batches_keep_no_cursor_whatever_the_options() {
    let (_, s) = service_with_docs(0);
    // batchSize equal to the result size, default batchSize, and a stream whose first pull
    // reaches the end: ArangoDB answers without `id` and keeps nothing.
    for (batch_size, options, counted) in [
        (json!(3), json!({}), false),
        (json!(3), json!({"count": true}), true),
        (json!(3), json!({"allowRetry": true}), false),
        (json!(3), json!({"allowRetry": true, "count": true}), true),
        (json!(1000), json!({"allowRetry": true}), false),
        (json!(3), json!({"stream": true}), false),
        (json!(5), json!({"stream": true, "allowRetry": true}), false),
    ] {
        let mut body = json!({"query": "FOR i IN 1..3 RETURN i", "batchSize": batch_size});
        let count = options.get("count").cloned();
        if let Some(c) = count {
            body["count"] = c;
        }
        let mut opts = options.clone();
        if let Some(o) = opts.as_object_mut() {
            o.remove("count");
        }
        body["options"] = opts;
        let r = post(&s, body.clone());
        assert_eq!(r["result"], json!([1, 2, 3]), "{body}");
        assert_eq!(r["hasMore"], false, "{body}");
        assert!(r.get("id").is_none(), "{body}: {r}");
        assert!(r.get("nextBatchId").is_none(), "{body}: {r}");
        assert_eq!(r.get("count").is_some(), counted, "{body}: {r}");
        assert!(r["extra"]["stats"].is_object(), "{body}: {r}");
        assert_eq!(s.open_cursors(), 0, "{body}");
    }
}

#[test]
fn full_count_reports_rows_before_limit() {
    let (_, s) = service_with_docs(50);
    let r = post(
        &s,
        json!({"query": "FOR d IN docs SORT d.v LIMIT 5, 3 RETURN d.v", "options": {"fullCount": true}}),
    );
    assert_eq!(r["result"], json!([5, 6, 7]));
    assert_eq!(r["extra"]["stats"]["fullCount"], 50);
    assert_eq!(r["extra"]["stats"]["scannedFull"], 50);
}

#[test]
fn streaming_cursor_produces_batches_lazily() {
    let (_, s) = service_with_docs(25);
    let r = post(
        &s,
        json!({"query": "FOR d IN docs SORT d.v RETURN d.v", "batchSize": 10, "options": {"stream": true}}),
    );
    assert_eq!(r["result"].as_array().unwrap().len(), 10);
    assert_eq!(r["hasMore"], true);
    assert!(r.get("count").is_none());
    let id = r["id"].as_str().unwrap().to_string();
    let current = s.current("_system").unwrap();
    assert_eq!(current.len(), 1, "a streaming query stays registered");
    assert_eq!(current[0]["stream"], true);
    let (_, b2) = s.next_batch_json("_system", &id, Some("2")).unwrap();
    assert_eq!(b2["result"][0], 10);
    assert_eq!(b2["hasMore"], true);
    let (_, b3) = s.next_batch_json("_system", &id, Some("3")).unwrap();
    assert_eq!(b3["result"].as_array().unwrap().len(), 5);
    assert_eq!(b3["hasMore"], false);
    assert!(
        b3["extra"]["stats"].is_object(),
        "the last streaming batch carries extra"
    );
    assert_eq!(s.current("_system").unwrap(), Vec::<Value>::new());
}

#[test]
fn streaming_writes_commit_at_the_end_and_abort_on_delete() {
    let (source, s) = service_with_docs(0);
    source
        .create_collection("_system", "out", false, vec![])
        .unwrap();
    let r = post(
        &s,
        json!({"query": "FOR i IN 1..30 INSERT {_key: TO_STRING(i)} INTO out RETURN NEW._key", "batchSize": 10, "options": {"stream": true}}),
    );
    let id = r["id"].as_str().unwrap().to_string();
    assert!(
        source.documents("_system", "out").unwrap().is_empty(),
        "nothing visible before the query ends"
    );
    s.delete_cursor_json("_system", &id).unwrap();
    assert!(
        source.documents("_system", "out").unwrap().is_empty(),
        "deleting the cursor aborts"
    );
    let r = post(
        &s,
        json!({"query": "FOR i IN 1..30 INSERT {_key: TO_STRING(i)} INTO out RETURN NEW._key", "batchSize": 10, "options": {"stream": true}}),
    );
    let id = r["id"].as_str().unwrap().to_string();
    s.next_batch_json("_system", &id, None).unwrap();
    let (_, last) = s.next_batch_json("_system", &id, None).unwrap();
    assert_eq!(last["hasMore"], false);
    assert_eq!(last["extra"]["stats"]["writesExecuted"], 30);
    assert_eq!(source.documents("_system", "out").unwrap().len(), 30);
}

#[test]
fn allow_retry_refetches_last_batch_and_keeps_cursor_deletable() {
    let (_, s) = service_with_docs(0);
    let r = post(
        &s,
        json!({"query": "FOR i IN 1..3 RETURN i", "batchSize": 2, "options": {"allowRetry": true}}),
    );
    let id = r["id"].as_str().unwrap().to_string();
    let (_, again) = s.next_batch_json("_system", &id, Some("1")).unwrap();
    assert_eq!(again["result"], json!([1, 2]));
    let (_, last) = s.next_batch_json("_system", &id, Some("2")).unwrap();
    assert_eq!(last["result"], json!([3]));
    assert_eq!(last["hasMore"], false);
    // The last batch names no cursor (as ArangoDB's), yet the cursor stays for a retry.
    assert!(last.get("id").is_none(), "{last}");
    assert!(last.get("nextBatchId").is_none(), "{last}");
    let (_, retry) = s.next_batch_json("_system", &id, Some("2")).unwrap();
    assert_eq!(retry["result"], json!([3]));
    assert!(retry.get("id").is_none(), "{retry}");
    let (code, del) = s.delete_cursor_json("_system", &id).unwrap();
    assert_eq!(code, 202);
    assert_eq!(del["id"], id.as_str());
    assert_eq!(
        s.delete_cursor_json("_system", &id).unwrap_err().code,
        ErrorCode::CursorNotFound
    );
}

#[test]
fn retry_without_allow_retry_is_refused() {
    let (_, s) = service_with_docs(0);
    let r = post(
        &s,
        json!({"query": "FOR i IN 1..3 RETURN i", "batchSize": 1}),
    );
    let id = r["id"].as_str().unwrap().to_string();
    assert_eq!(
        s.next_batch_json("_system", &id, Some("1"))
            .unwrap_err()
            .code,
        ErrorCode::BadParameter
    );
    assert_eq!(
        s.next_batch_json("_system", &id, Some("2")).unwrap().1["result"],
        json!([2])
    );
}

#[test]
fn cursors_expire_after_ttl() {
    let (_, s) = service_with_docs(0);
    let r = post(
        &s,
        json!({"query": "FOR i IN 1..3 RETURN i", "batchSize": 1, "ttl": 0.05}),
    );
    let id = r["id"].as_str().unwrap().to_string();
    std::thread::sleep(std::time::Duration::from_millis(120));
    assert_eq!(
        s.next_batch_json("_system", &id, None).unwrap_err().code,
        ErrorCode::CursorNotFound
    );
}

#[test]
fn expired_streaming_cursor_leaves_the_registry() {
    let (_, s) = service_with_docs(0);
    post(
        &s,
        json!({"query": "FOR i IN 1..100 RETURN i", "batchSize": 1, "ttl": 0.05, "options": {"stream": true}}),
    );
    assert_eq!(s.current("_system").unwrap().len(), 1);
    std::thread::sleep(std::time::Duration::from_millis(120));
    assert_eq!(s.open_cursors(), 0);
    assert_eq!(s.current("_system").unwrap(), Vec::<Value>::new());
}

#[test]
fn request_validation_errors() {
    // Reading the body (missing query, bad batchSize, bad bindVars, …) is the server's:
    // quiver-server/src/api/cursor/request.rs tests those answers.
    let (_, s) = service_with_docs(0);
    let code = |req: CursorRequest| s.create_cursor_json("_system", req).unwrap_err().code;
    assert_eq!(code(CursorRequest::new("   ")), ErrorCode::QueryParse);
    let mut zero_batch = CursorRequest::new("RETURN 1");
    zero_batch.batch_size = 0;
    assert_eq!(code(zero_batch.clone()), ErrorCode::BadParameter);
    assert!(s
        .create_cursor_inline_json("_system", &zero_batch)
        .is_none());
    assert_eq!(
        s.create_cursor_json("nodb", CursorRequest::new("RETURN 1"))
            .unwrap_err()
            .code,
        ErrorCode::DatabaseNotFound
    );
    assert_eq!(
        s.next_batch_json("_system", "12345", None)
            .unwrap_err()
            .code,
        ErrorCode::CursorNotFound
    );
}

#[test]
fn warnings_limits_and_fail_on_warning() {
    let (_, s) = service_with_docs(0);
    let r = post(&s, json!({"query": "FOR i IN 1..20 RETURN i / 0"}));
    assert_eq!(
        r["extra"]["warnings"].as_array().unwrap().len(),
        10,
        "maxWarningCount defaults to 10"
    );
    assert_eq!(r["extra"]["warnings"][0]["code"], 1562);
    let r = post(
        &s,
        json!({"query": "FOR i IN 1..20 RETURN i / 0", "options": {"maxWarningCount": 2}}),
    );
    assert_eq!(r["extra"]["warnings"].as_array().unwrap().len(), 2);
    let e = s
        .create_cursor_json(
            "_system",
            support::cursor(&json!({"query": "RETURN 1 / 0", "options": {"failOnWarning": true}})),
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::QueryDivisionByZero);
}

#[test]
fn memory_limit_and_max_runtime() {
    let (_, s) = service_with_docs(0);
    let e = s
        .create_cursor_json(
            "_system",
            support::cursor(
                &json!({"query": "FOR i IN 1..100000 SORT i DESC RETURN i", "memoryLimit": 100000}),
            ),
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ResourceLimit);
    let e = s.create_cursor_json("_system", support::cursor(&json!({"query": "FOR i IN 1..100000000 FILTER i < 0 RETURN i", "options": {"maxRuntime": 0.05}}))).unwrap_err();
    assert_eq!(e.code, ErrorCode::QueryKilled);
}

#[test]
fn kill_a_streaming_query() {
    let (_, s) = service_with_docs(0);
    let r = post(
        &s,
        json!({"query": "FOR i IN 1..100000 RETURN i", "batchSize": 10, "options": {"stream": true}}),
    );
    let id = r["id"].as_str().unwrap().to_string();
    let current = s.current("_system").unwrap();
    let qid = current[0]["id"].as_str().unwrap().to_string();
    s.kill("_system", &qid).unwrap();
    assert_eq!(
        s.next_batch_json("_system", &id, None).unwrap_err().code,
        ErrorCode::QueryKilled
    );
    assert_eq!(
        s.kill("_system", "999").unwrap_err().code,
        ErrorCode::QueryNotFound
    );
}

#[test]
fn slow_query_log_and_properties() {
    let (_, s) = service_with_docs(0);
    let props = s
        .set_properties(
            "_system",
            &support::properties(&json!({"slowQueryThreshold": 0})),
        )
        .unwrap();
    assert_eq!(props.slow_query_threshold, 0.0);
    post(&s, json!({"query": "RETURN 42"}));
    let slow = s.slow("_system").unwrap();
    assert_eq!(slow.len(), 1);
    assert_eq!(slow[0]["query"], "RETURN 42");
    s.clear_slow("_system").unwrap();
    assert_eq!(s.slow("_system").unwrap(), Vec::<Value>::new());
    // An update changes the members it names and keeps the others (bad values are answered
    // by the server's body reader: quiver-server/src/api/cursor/request.rs).
    let p = s
        .set_properties(
            "_system",
            &support::properties(&json!({"maxSlowQueries": 1})),
        )
        .unwrap();
    assert_eq!(p.max_slow_queries, 1);
    assert_eq!(p.slow_query_threshold, 0.0);
    assert!(p.track_slow_queries);
    // Each database has its own properties; a dropped database's are forgotten.
    let other = s.properties("other").unwrap();
    assert_eq!(other.max_slow_queries, 64);
    assert_eq!(other.slow_query_threshold, 10.0);
    post(&s, json!({"query": "RETURN 43"}));
    assert_eq!(s.slow("_system").unwrap().len(), 1);
    s.forget_database("_system");
    assert_eq!(s.properties("_system").unwrap(), other);
    assert_eq!(s.slow("_system").unwrap(), Vec::<Value>::new());
}

#[test]
fn profile_reports_timings_plan_and_nodes() {
    let (_, s) = service_with_docs(3);
    let r = post(
        &s,
        json!({"query": "FOR d IN docs RETURN d.v", "options": {"profile": 2}}),
    );
    let extra = &r["extra"];
    assert!(extra["profile"]["initializing"].as_f64().unwrap() > 0.0);
    assert!(extra["profile"]["parsing"].as_f64().unwrap() > 0.0);
    assert!(extra["plan"]["nodes"].is_array());
    let nodes = extra["stats"]["nodes"].as_array().unwrap();
    let scan = nodes.iter().find(|n| n["id"] == 2).unwrap();
    assert_eq!(scan["items"], 3);
}

#[test]
fn explain_and_parse() {
    let (_, s) = service_with_docs(3);
    let e = s.explain("_system", &support::explain(&json!({"query": "FOR d IN docs FILTER d._key == @k RETURN d", "bindVars": {"k": "k00001"}}))).unwrap();
    let types: Vec<&str> = e.plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["SingletonNode", "IndexNode", "ReturnNode"]);
    assert!(e.plan["rules"]
        .as_array()
        .unwrap()
        .contains(&json!("use-indexes")));
    assert_eq!(
        e.plan["collections"],
        json!([{"name": "docs", "type": "read"}])
    );
    assert!(e.plan["estimatedCost"].as_f64().unwrap() > 0.0);
    let all = s
        .explain(
            "_system",
            &support::explain(&json!({"query": "RETURN 1", "options": {"allPlans": true}})),
        )
        .unwrap();
    assert!(all.all_plans);
    assert!(all.plan["nodes"].is_array());
    assert_eq!(
        s.explain(
            "_system",
            &support::explain(&json!({"query": "FOR x IN nope RETURN x"}))
        )
        .unwrap_err()
        .code,
        ErrorCode::DataSourceNotFound
    );
    let p = s
        .parse("_system", "FOR d IN docs FILTER d.v == @v RETURN d")
        .unwrap();
    assert_eq!(p.collections, ["docs"]);
    assert_eq!(p.bind_vars, ["v"]);
    assert_eq!(p.ast[0]["type"], "root");
    assert_eq!(
        s.parse("_system", "FOR").unwrap_err().code,
        ErrorCode::QueryParse
    );
}

#[test]
fn modification_stats_and_atomicity() {
    let (source, s) = service_with_docs(10);
    let r = post(
        &s,
        json!({"query": "FOR d IN docs FILTER d.v < 4 UPDATE d WITH {w: 1} IN docs"}),
    );
    assert_eq!(r["extra"]["stats"]["writesExecuted"], 4);
    let e = s
        .create_cursor_json(
            "_system",
            support::cursor(
                &json!({"query": "FOR d IN docs REMOVE d IN docs LET x = FAIL('stop') RETURN x"}),
            ),
        )
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::QueryFailCalled);
    assert_eq!(
        source.documents("_system", "docs").unwrap().len(),
        10,
        "a failing query leaves nothing behind"
    );
}

/// `OPTIONS { versionAttribute }` on the in-memory source: a lower or equal version is a no-op
/// write (NEW is the stored document, counted as executed), a higher one writes.
#[test]
fn version_attribute_option() {
    let (_source, s) = service_with_docs(3);
    let r = post(
        &s,
        json!({"query": "FOR p IN [{_key: 'k00000', v: 0, w: 'eq'}, {_key: 'k00001', v: 0, w: 'low'}, \
            {_key: 'k00002', v: 3, w: 'high'}] UPDATE p IN docs OPTIONS {versionAttribute: 'v'} \
            RETURN NEW.w"}),
    );
    assert_eq!(r["result"], json!([null, null, "high"]));
    assert_eq!(r["extra"]["stats"]["writesExecuted"], 3);
    let r = post(
        &s,
        json!({"query": "FOR p IN [{_key: 'k00001', v: 1, w: 'eq'}, {_key: 'k00002', v: 4}] \
            REPLACE p IN docs OPTIONS {versionAttribute: 'v'} RETURN [OLD.v, NEW.v, NEW.w]"}),
    );
    assert_eq!(r["result"], json!([[1, 1, null], [3, 4, null]]));
    let r = post(
        &s,
        json!({"query": "INSERT {_key: 'k00002', v: 2, w: 'stale'} INTO docs \
            OPTIONS {overwriteMode: 'update', versionAttribute: 'v'} RETURN NEW"}),
    );
    assert_eq!(r["result"][0]["v"], 4);
    assert!(r["result"][0].get("w").is_none());
}

/// Every `estimatedCost`/`estimatedNrItems` in `v` (plan and nodes, subqueries included).
fn collect_estimates<'a>(v: &'a Value, out: &mut Vec<(&'a str, &'a Value)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "estimatedCost" || k == "estimatedNrItems" {
                    out.push((k.as_str(), x));
                }
                collect_estimates(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_estimates(x, out)),
        _ => {}
    }
}

#[test]
fn explain_estimates_print_integral_values_as_integers() {
    let (_, s) = service_with_docs(3);
    let mut integral_seen = 0;
    for query in [
        r#"FOR d IN docs FILTER d._key == "x" RETURN d"#,
        "FOR d IN docs FILTER d.v > 0 SORT d.v LIMIT 1, 2 RETURN d",
        "LET n = (FOR d IN docs RETURN d.v) FOR i IN 1..3 RETURN [i, n]",
    ] {
        let e = s
            .explain("_system", &support::explain(&json!({"query": query})))
            .unwrap();
        let mut estimates = Vec::new();
        collect_estimates(&e.plan, &mut estimates);
        assert!(estimates.len() >= 4, "{query}: {estimates:?}");
        for (key, v) in estimates {
            let f = v.as_f64().unwrap_or_else(|| panic!("{query}: {key} {v}"));
            if f.fract() == 0.0 {
                integral_seen += 1;
                assert!(v.is_i64() || v.is_u64(), "{query}: {key} printed as {v}");
            }
        }
        // Drivers see the text, so check the text as well as the parsed value.
        let text = serde_json::to_string(&e.plan).unwrap();
        for key in ["\"estimatedCost\":", "\"estimatedNrItems\":"] {
            for (at, _) in text.match_indices(key) {
                let num: String = text[at + key.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == 'e' || *c == '-')
                    .collect();
                assert!(!num.ends_with(".0"), "{query}: {key}{num}");
            }
        }
    }
    assert!(integral_seen > 0, "no integral estimate to check");
    let e = s
        .explain(
            "_system",
            &support::explain(&json!({"query": r#"FOR d IN docs FILTER d._key == "x" RETURN d"#})),
        )
        .unwrap();
    let cost = &e.plan["estimatedCost"];
    if cost.as_f64().is_some_and(|f| f.fract() == 0.0) {
        assert!(cost.is_u64(), "estimatedCost {cost}");
    }
}

#[test]
fn explain_shows_the_secondary_index_node() {
    let (m, s) = service_with_docs(20);
    m.create_index(
        "_system",
        "docs",
        json!({"type": "persistent", "fields": ["v"], "name": "by_v"}),
    )
    .unwrap();
    let e = s
        .explain(
            "_system", &support::explain(&json!({"query": "FOR d IN docs FILTER d.v >= 3 && d.v < 7 SORT d.v DESC RETURN d"})))
        .unwrap();
    let nodes = e.plan["nodes"].as_array().unwrap();
    let node = nodes.iter().find(|n| n["type"] == "IndexNode").unwrap();
    let index = &node["indexes"][0];
    assert_eq!(
        (
            index["id"].clone(),
            index["type"].clone(),
            index["fields"].clone(),
            index["unique"].clone(),
            index["sparse"].clone(),
            index["name"].clone()
        ),
        (
            json!("2"),
            json!("persistent"),
            json!(["v"]),
            json!(false),
            json!(false),
            json!("by_v")
        )
    );
    assert!(index["selectivityEstimate"].as_f64().unwrap() > 0.0);
    assert_eq!(node["reverse"], true);
    assert_eq!(node["collection"], "docs");
    let condition = &node["condition"]["subNodes"][0]["subNodes"];
    assert_eq!(condition.as_array().unwrap().len(), 2);
    assert!(node["estimatedCost"].as_f64().unwrap() > 0.0);
    assert!(node["estimatedNrItems"].as_f64().unwrap() < 20.0);
    assert!(!nodes.iter().any(|n| n["type"] == "SortNode"));
    let rules = e.plan["rules"].as_array().unwrap();
    for r in [
        "use-indexes",
        "remove-filter-covered-by-index",
        "use-index-for-sort",
    ] {
        assert!(rules.contains(&json!(r)), "{r}");
    }
    let r = post(
        &s,
        json!({"query": "FOR d IN docs FILTER d.v >= 3 && d.v < 7 SORT d.v DESC RETURN d.v"}),
    );
    assert_eq!(r["result"], json!([6, 5, 4, 3]));
    assert_eq!(r["extra"]["stats"]["scannedIndex"], 4);
    assert_eq!(r["extra"]["stats"]["scannedFull"], 0);
}
