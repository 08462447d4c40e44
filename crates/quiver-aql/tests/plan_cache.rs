//! The plan cache and the inline cursor path: cached plans give the same answers, catalog
//! changes invalidate them, and inline answers are byte-for-byte those of the full path
//! (apart from the measured execution time).

mod support;

use support::CursorJson;

use std::sync::Arc;

use quiver_aql::source::memory::MemorySource;
use quiver_aql::QueryService;
use serde_json::{json, Value};

fn service() -> (Arc<MemorySource>, QueryService) {
    let source = Arc::new(MemorySource::new());
    let docs: Vec<Value> = (0..20)
        .map(|i| json!({"_key": format!("k{i:02}"), "v": i}))
        .collect();
    source
        .create_collection("_system", "docs", false, docs)
        .unwrap();
    let service = QueryService::new(source.clone());
    (source, service)
}

/// The body with `extra.stats.executionTime` (measured, so it differs between runs) zeroed,
/// serialized again: member order is compared too.
fn normalized(mut body: Value) -> String {
    if let Some(stats) = body.pointer_mut("/extra/stats") {
        stats["executionTime"] = json!(0);
    }
    serde_json::to_string(&body).unwrap()
}

#[test]
fn inline_answers_equal_the_full_path() {
    let (_, s) = service();
    let cases = [
        json!({"query": "RETURN 1"}),
        json!({"query": "RETURN 1", "count": true}),
        json!({"query": "RETURN { one: 'test', two: 'another-value', three: [ 1, 2, 3 ] }"}),
        json!({"query": "FOR i IN 1..10 RETURN i"}),
        json!({"query": "FOR i IN 1..10 FILTER i % 2 == 0 LIMIT 2 RETURN i", "options": {"fullCount": true}}),
        json!({"query": "FOR x IN [3, 1, 2] SORT x COLLECT y = x % 2 WITH COUNT INTO n RETURN {y, n}"}),
        json!({"query": "RETURN @a + @b", "bindVars": {"a": 1, "b": 2}}),
        json!({"query": "FOR i IN 1..3 RETURN 1 / (i - 2)"}),
        json!({"query": "RETURN LENGTH((FOR i IN 1..5 FOR j IN [1, 2] RETURN i * j))"}),
        json!({"query": "RETURN 'ünïcödé'"}),
    ];
    assert!(
        s.create_cursor_inline_json("_system", &support::cursor(&cases[0]))
            .is_none(),
        "not inline before the plan is cached"
    );
    for body in cases {
        let (code, full) = s
            .create_cursor_json("_system", support::cursor(&body))
            .unwrap();
        let (inline_code, bytes) = s
            .create_cursor_inline_json("_system", &support::cursor(&body))
            .unwrap_or_else(|| panic!("inline once cached: {body}"))
            .unwrap();
        assert_eq!((code, inline_code), (201, 201));
        let inline: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(normalized(inline), normalized(full), "{body}");
    }
}

#[test]
fn inline_errors_and_warnings_match() {
    let (_, s) = service();
    let body = json!({"query": "RETURN FAIL('boom')"});
    let full = s
        .create_cursor_json("_system", support::cursor(&body))
        .unwrap_err();
    let inline = s
        .create_cursor_inline_json("_system", &support::cursor(&body))
        .unwrap()
        .unwrap_err();
    assert_eq!((inline.code, inline.message), (full.code, full.message));
    let body = json!({"query": "FOR i IN [0, 1] RETURN 1 / i", "options": {"failOnWarning": true}});
    let full = s
        .create_cursor_json("_system", support::cursor(&body))
        .unwrap_err();
    let inline = s
        .create_cursor_inline_json("_system", &support::cursor(&body))
        .unwrap()
        .unwrap_err();
    assert_eq!((inline.code, inline.message), (full.code, full.message));
}

#[test]
fn results_beyond_one_batch_still_get_a_cursor() {
    let (_, s) = service();
    let body = json!({"query": "FOR i IN 1..5 RETURN i", "batchSize": 2, "count": true});
    s.create_cursor_json("_system", support::cursor(&body))
        .unwrap();
    let (code, bytes) = s
        .create_cursor_inline_json("_system", &support::cursor(&body))
        .unwrap()
        .unwrap();
    assert_eq!(code, 201);
    let first: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(first["result"], json!([1, 2]));
    assert_eq!(first["hasMore"], true);
    assert_eq!(first["count"], 5);
    let id = first["id"].as_str().unwrap();
    let (_, next) = s.next_batch_json("_system", id, Some("2")).unwrap();
    assert_eq!(next["result"], json!([3, 4]));
    let (_, last) = s.next_batch_json("_system", id, None).unwrap();
    assert_eq!(last["result"], json!([5]));
    assert_eq!(last["hasMore"], false);
}

#[test]
fn only_trivial_plans_run_inline() {
    let (_, s) = service();
    let not_inline = [
        json!({"query": "FOR d IN docs RETURN d.v"}),
        json!({"query": "RETURN DOCUMENT('docs/k01')"}),
        json!({"query": "RETURN COLLECTION_COUNT('docs')"}),
        json!({"query": "RETURN SLEEP(0)"}),
        json!({"query": "RETURN CALL('UPPER', 'a')"}),
        json!({"query": "FOR i IN 1..100000 RETURN i"}),
        json!({"query": "FOR i IN 1..200 FOR j IN 1..200 RETURN i"}),
        json!({"query": "FOR i IN 1..3 RETURN RANGE(1, i)"}),
        json!({"query": "FOR i IN 1..3 RETURN 1..i"}),
        json!({"query": "FOR i IN 1..3 FOR j IN 1..i RETURN j"}),
        json!({"query": "LET n = RAND() * 10 FOR i IN 1..n RETURN i"}),
        json!({"query": "INSERT {} INTO docs"}),
        // Options that need the registered path.
        json!({"query": "RETURN 1", "options": {"stream": true}}),
        json!({"query": "RETURN 1", "options": {"profile": true}}),
        json!({"query": "RETURN 1", "options": {"allowRetry": true}}),
    ];
    for body in not_inline {
        s.create_cursor_json("_system", support::cursor(&body))
            .unwrap();
        assert!(
            s.create_cursor_inline_json("_system", &support::cursor(&body))
                .is_none(),
            "{body}"
        );
    }
    // With a near-zero slow-query threshold every query must be logged, which only the
    // registered path does.
    let body = json!({"query": "RETURN 2"});
    s.create_cursor_json("_system", support::cursor(&body))
        .unwrap();
    assert!(s
        .create_cursor_inline_json("_system", &support::cursor(&body))
        .is_some());
    s.set_properties(
        "_system",
        &support::properties(&json!({"slowQueryThreshold": 0})),
    )
    .unwrap();
    assert!(s
        .create_cursor_inline_json("_system", &support::cursor(&body))
        .is_none());
}

#[test]
fn catalog_changes_invalidate_cached_plans() {
    let (source, s) = service();
    let body = json!({"query": "FOR d IN docs FILTER d.v == 3 RETURN d._key"});
    let explain = |s: &QueryService| {
        let e = s.explain("_system", &support::explain(&body)).unwrap();
        e.plan["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["type"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert!(explain(&s).contains(&"EnumerateCollectionNode".to_string()));
    assert_eq!(
        s.create_cursor_json("_system", support::cursor(&body))
            .unwrap()
            .1["result"],
        json!(["k03"])
    );
    // A new index must be used at once, not after the cached plan happens to be evicted.
    source
        .create_index(
            "_system",
            "docs",
            json!({"type": "persistent", "fields": ["v"]}),
        )
        .unwrap();
    assert!(explain(&s).contains(&"IndexNode".to_string()));
    assert_eq!(
        s.create_cursor_json("_system", support::cursor(&body))
            .unwrap()
            .1["result"],
        json!(["k03"])
    );
    // Recreated with other contents and as an edge collection: planned again.
    source
        .create_collection(
            "_system",
            "docs",
            true,
            vec![json!({"_key": "x", "v": 3, "_from": "a/1", "_to": "a/2"})],
        )
        .unwrap();
    assert_eq!(
        s.create_cursor_json("_system", support::cursor(&body))
            .unwrap()
            .1["result"],
        json!(["x"])
    );
}

#[test]
fn bind_values_are_part_of_the_key() {
    let (_, s) = service();
    for n in [1, 2, 3, 1] {
        let body = json!({"query": "FOR i IN 1..@n RETURN i", "bindVars": {"n": n}});
        let (_, r) = s
            .create_cursor_json("_system", support::cursor(&body))
            .unwrap();
        assert_eq!(r["result"].as_array().unwrap().len(), n as usize);
        let (_, bytes) = s
            .create_cursor_inline_json("_system", &support::cursor(&body))
            .unwrap()
            .unwrap();
        let r: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(r["result"].as_array().unwrap().len(), n as usize);
    }
    // Missing and unused bind parameters are still reported, never served from the cache.
    let err = s
        .create_cursor_json(
            "_system",
            support::cursor(&json!({"query": "FOR i IN 1..@n RETURN i"})),
        )
        .unwrap_err();
    assert_eq!(err.number(), 1551);
}

/// The same over quiver-core, with the catalog changes only it has: dropping an index,
/// renaming and dropping collections.
#[test]
fn core_catalog_changes_invalidate_cached_plans() {
    use quiver_core::{CollectionSpec, Core, CoreOptions, InsertOptions};
    let dir = tempfile::tempdir().unwrap();
    let core = Arc::new(Core::open(dir.path(), CoreOptions::default()).unwrap());
    let db = core.database("_system").unwrap();
    let coll = db.create_collection(CollectionSpec::new("c")).unwrap();
    for i in 0..10 {
        let _ = coll
            .insert(
                json!({"_key": format!("k{i}"), "v": i}),
                &InsertOptions::new(),
            )
            .unwrap();
    }
    let s = QueryService::over_core(core.clone());
    let query = json!({"query": "FOR d IN c FILTER d.v == 4 RETURN d._key"});
    let nodes = |s: &QueryService| {
        let e = s.explain("_system", &support::explain(&query)).unwrap();
        e.plan["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["type"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let run = |s: &QueryService| {
        s.create_cursor_json("_system", support::cursor(&query))
            .map(|r| r.1["result"].clone())
    };
    assert_eq!(run(&s).unwrap(), json!(["k4"]));
    assert!(!nodes(&s).contains(&"IndexNode".to_string()));
    let (index, _) = coll
        .create_index(&json!({"type": "persistent", "fields": ["v"]}))
        .unwrap();
    assert!(nodes(&s).contains(&"IndexNode".to_string()));
    assert_eq!(run(&s).unwrap(), json!(["k4"]));
    coll.drop_index(index["id"].as_str().unwrap()).unwrap();
    assert!(!nodes(&s).contains(&"IndexNode".to_string()));
    assert_eq!(run(&s).unwrap(), json!(["k4"]));
    // Renamed away: the cached plan must not keep reading the collection under its old name.
    db.rename_collection("c", "d").unwrap();
    assert_eq!(run(&s).unwrap_err().number(), 1203);
    // Another collection under the old name is the one read.
    let other = db.create_collection(CollectionSpec::new("c")).unwrap();
    let _ = other
        .insert(json!({"_key": "new", "v": 4}), &InsertOptions::new())
        .unwrap();
    assert_eq!(run(&s).unwrap(), json!(["new"]));
    db.drop_collection("c", false).unwrap();
    assert_eq!(run(&s).unwrap_err().number(), 1203);
}

#[test]
fn trivial_plans_that_keep_running_long_are_demoted() {
    let (_, s) = service();
    // Statically trivial (constant range, no data access) but far over the inline budget.
    let body = json!({"query": "FOR i IN 1..10000 RETURN LENGTH(SHA512(CONCAT(i, SHA512(TO_STRING(i)))))"});
    s.create_cursor_json("_system", support::cursor(&body))
        .unwrap();
    // Three slow runs in a row (the first was the full path's) demote it.
    assert!(s
        .create_cursor_inline_json("_system", &support::cursor(&body))
        .is_some());
    assert!(s
        .create_cursor_inline_json("_system", &support::cursor(&body))
        .is_some());
    assert!(s
        .create_cursor_inline_json("_system", &support::cursor(&body))
        .is_none());
    // The full path still answers.
    let (_, r) = s
        .create_cursor_json("_system", support::cursor(&body))
        .unwrap();
    assert_eq!(r["result"].as_array().map(Vec::len), Some(1000));
}

/// `maxRuntime` also stops a single expensive function call (O(n·m) string distances), at
/// run time and for constant arguments that planning would otherwise fold without limits.
#[test]
fn max_runtime_stops_expensive_function_calls() {
    let (_, s) = service();
    let a = "ab".repeat(20_000);
    let b = "ba".repeat(20_000);
    for query in [
        "RETURN LEVENSHTEIN_DISTANCE(@a, @b)",
        "RETURN LEVENSHTEIN_MATCH(@a, @b, 3, false)",
        "RETURN NGRAM_POSITIONAL_SIMILARITY(@a, @b, 3)",
        "FOR x IN [@a] RETURN NGRAM_SIMILARITY(x, @b, 2)",
    ] {
        let started = std::time::Instant::now();
        let err = s
            .create_cursor_json(
                "_system", support::cursor(&json!({"query": query, "bindVars": {"a": a, "b": b}, "options": {"maxRuntime": 0.05}})))
            .unwrap_err();
        assert_eq!(err.number(), 1500, "{query}");
        // Far less than the seconds the full computation takes (debug build, loaded machine).
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{query}"
        );
    }
}

/// A query text is brief for the caller after brief runs with any bind values; a hand-off
/// given with the request runs from inside the query once its budget is spent (here at
/// once), on the calling thread, and the answer is the same.
#[test]
fn brief_texts_and_the_hand_off() {
    use quiver_aql::handoff::Handoff;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    let (_, s) = service();
    let query = "FOR d IN docs FILTER d.v >= @min SORT d.v RETURN d.v";
    let text = |min: i64| json!({"query": query, "bindVars": {"min": min}});
    assert!(!s.runs_briefly("_system", query), "unknown texts are not");
    // Two brief runs in a row make a text brief; on a loaded machine a run may lose its core
    // for a time slice and count as long, so try a few.
    for min in 0..20 {
        s.create_cursor_json("_system", support::cursor(&text(min)))
            .unwrap();
        if s.runs_briefly("_system", query) {
            break;
        }
    }
    assert!(s.runs_briefly("_system", query), "after brief runs");
    assert!(!s.runs_briefly("other", query), "per database");

    let runs = Arc::new(AtomicUsize::new(0));
    let seen = runs.clone();
    let handoff = Arc::new(Handoff::new(Duration::ZERO, move || {
        seen.fetch_add(1, Ordering::Relaxed);
    }));
    let mut req = support::cursor(&text(15));
    req.handoff = Some(handoff.clone());
    let (code, body) = s.create_cursor_json("_system", req).unwrap();
    assert_eq!(code, 201);
    assert_eq!(body["result"], json!([15, 16, 17, 18, 19]));
    assert!(handoff.happened());
    assert_eq!(runs.load(Ordering::Relaxed), 1, "runs once");
}

/// The answer or error of a query, with measured times zeroed.
fn outcome(s: &QueryService, body: &Value) -> String {
    match s.create_cursor_json("_system", support::cursor(body)) {
        Ok((code, body)) => format!("{code} {}", normalized(body)),
        Err(e) => format!("error {:?} {}", e.code, e.message),
    }
}

/// The explained plan or error of a query.
fn explained(s: &QueryService, body: &Value) -> String {
    match s.explain("_system", &support::explain(body)) {
        Ok(e) => format!("{} {}", e.plan, e.cacheable),
        Err(e) => format!("error {:?} {}", e.code, e.message),
    }
}

/// A bind value of any type, biased towards values the queries below can match.
fn random_value(rng: &mut rand::rngs::StdRng) -> Value {
    use rand::Rng;
    let k = rng.gen_range(0..24);
    match rng.gen_range(0..12) {
        0 | 1 => json!(k),
        2 => json!(format!("k{k:02}")),
        3 | 4 => json!(format!("docs/k{k:02}")),
        5 => Value::Null,
        6 => json!(rng.gen_bool(0.5)),
        7 => json!(k as f64 / 4.0),
        8 => json!([k, k + 1, format!("k{k:02}")]),
        9 => json!({"_id": format!("docs/k{k:02}"), "v": k}),
        10 => json!(["docs", "v", "_key", "rel", ""][k as usize % 5]),
        _ => json!(-(k as i64)),
    }
}

/// Many bind value sets per query text, of every type: a service that has seen the text
/// before (plan cache and plan templates warm) answers and explains exactly as a fresh one
/// that plans every query for its own bind values.
#[test]
fn bind_values_answer_as_a_fresh_service_does() {
    use rand::{Rng, SeedableRng};
    let (source, s) = service();
    let edges: Vec<Value> = (0..20)
        .flat_map(|i| {
            [(i * 3 + 1) % 20, (i * 7 + 2) % 20]
                .map(|j| json!({"_from": format!("docs/k{i:02}"), "_to": format!("docs/k{j:02}")}))
        })
        .collect();
    source
        .create_collection("_system", "rel", true, edges)
        .unwrap();
    source
        .create_index(
            "_system",
            "docs",
            json!({"type": "persistent", "fields": ["v"]}),
        )
        .unwrap();
    let queries: &[(&str, &[&str])] = &[
        ("FOR d IN docs FILTER d._key == @a RETURN d.v", &["a"]),
        ("FOR d IN docs FILTER d.v == @a RETURN d._key", &["a"]),
        ("FOR d IN docs FILTER d.v IN @a SORT d.v RETURN d._key", &["a"]),
        (
            "FOR d IN docs FILTER d.v >= @a && d.v < @b SORT d.v DESC LIMIT @c RETURN d._key",
            &["a", "b", "c"],
        ),
        ("FOR d IN docs SORT d.v LIMIT @a, @b RETURN d._key", &["a", "b"]),
        ("FOR v IN OUTBOUND @a rel RETURN v._key", &["a"]),
        (
            "FOR v IN OUTBOUND @a rel OPTIONS {bfs: true, uniqueVertices: \"global\"} RETURN v._id",
            &["a"],
        ),
        (
            "FOR v, e IN 1..@b ANY @a rel OPTIONS {bfs: true, uniqueVertices: \"global\"} SORT v._key RETURN [v._key, e._to]",
            &["a", "b"],
        ),
        ("FOR v IN OUTBOUND SHORTEST_PATH @a TO @b rel RETURN v._key", &["a", "b"]),
        (
            "FOR p IN 1..3 OUTBOUND K_PATHS @a TO @b rel RETURN p.vertices[*]._key",
            &["a", "b"],
        ),
        // The start vertex is also read elsewhere (folded, compared, filtered on): never a
        // template parameter.
        (
            "FOR v IN OUTBOUND @a rel RETURN [v._key, @a < 'docs/k10', LENGTH(@a)]",
            &["a"],
        ),
        (
            "FOR v IN OUTBOUND @a rel FILTER v._id != @a SORT v._key RETURN v._key",
            &["a"],
        ),
        (
            "FOR d IN docs FILTER d.v < @b LET n = (FOR v IN OUTBOUND @a rel RETURN v._key) SORT d.v RETURN [d._key, n]",
            &["a", "b"],
        ),
        (
            "FOR d IN docs FILTER d.v < 3 FOR v IN INBOUND @a rel SORT d.v, v._key LIMIT @b RETURN [d.v, v._key]",
            &["a", "b"],
        ),
        ("RETURN DOCUMENT(@a)", &["a"]),
        ("RETURN [@a, @a + 1, @a == null, LENGTH(@a), TO_STRING(@b)]", &["a", "b"]),
        ("FOR d IN @@c FILTER d[@a] == @b RETURN d._key", &["a", "b", "@c"]),
        ("FOR x IN @a FILTER x != @b RETURN x", &["a", "b"]),
        ("FOR d IN docs FILTER d._id IN [@a, @b] RETURN d.v", &["a", "b"]),
        (
            "FOR d IN docs COLLECT g = d.v % 3 AGGREGATE n = COUNT(@a) SORT g RETURN [g, n]",
            &["a"],
        ),
    ];
    let mut rng = rand::rngs::StdRng::seed_from_u64(20);
    for (query, names) in queries {
        for _ in 0..40 {
            let mut binds = serde_json::Map::new();
            for name in *names {
                let value = if name.starts_with('@') {
                    [json!("docs"), json!("rel"), json!("missing"), json!(3)][rng.gen_range(0..4)]
                        .clone()
                } else {
                    random_value(&mut rng)
                };
                binds.insert(name.to_string(), value);
            }
            let body = json!({"query": query, "bindVars": binds});
            let fresh = QueryService::new(source.clone());
            fresh.set_plan_templates(false);
            assert_eq!(outcome(&s, &body), outcome(&fresh, &body), "{body}");
            // Twice through the warm service: the second run takes the cached plan.
            assert_eq!(outcome(&s, &body), outcome(&fresh, &body), "{body}");
            let fresh = QueryService::new(source.clone());
            fresh.set_plan_templates(false);
            assert_eq!(explained(&s, &body), explained(&fresh, &body), "{body}");
        }
    }
}

/// A traversal from a string start vertex takes one plan for every start: the plan cache
/// holds one entry for the text, and `planCacheKey` is the same for every start.
#[test]
fn vertex_parameters_share_one_plan() {
    let (source, s) = service();
    let edges: Vec<Value> = (0..20)
        .map(|i| json!({"_from": format!("docs/k{i:02}"), "_to": format!("docs/k{:02}", (i + 1) % 20)}))
        .collect();
    source
        .create_collection("_system", "rel", true, edges)
        .unwrap();
    let query = "FOR v IN OUTBOUND @start rel RETURN v._key";
    let mut keys = std::collections::HashSet::new();
    for i in 0..20 {
        let body = json!({"query": query, "bindVars": {"start": format!("docs/k{i:02}")}});
        let mut req = support::cursor(&body);
        req.use_plan_cache = true;
        let (_, r) = s.create_cursor_json("_system", req).unwrap();
        assert_eq!(r["result"], json!([format!("k{:02}", (i + 1) % 20)]));
        match r.get("planCacheKey") {
            Some(key) => {
                keys.insert(key.to_string());
            }
            None => assert_eq!(i, 0, "only the first query plans"),
        }
    }
    assert_eq!(
        keys.len(),
        1,
        "one cached plan serves every start: {keys:?}"
    );
    assert_eq!(s.plan_cache_entries("_system", None).unwrap().len(), 1);
    // An object start vertex is part of the key as before.
    let body = json!({"query": query, "bindVars": {"start": {"_id": "docs/k03"}}});
    let (_, r) = s
        .create_cursor_json("_system", support::cursor(&body))
        .unwrap();
    assert_eq!(r["result"], json!(["k04"]));
    assert_eq!(s.plan_cache_entries("_system", None).unwrap().len(), 2);
}
