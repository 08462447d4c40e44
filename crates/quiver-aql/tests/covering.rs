//! Persistent indexes with `storedValues`: a query reading only indexed fields, stored values,
//! `_key` and `_id` builds its documents from the index (`indexCoversProjections` in explain),
//! and answers exactly what reading the documents would.

mod support;

use support::CursorJson;

use std::sync::Arc;

use quiver_aql::QueryService;
use serde_json::{json, Value};

fn setup() -> (tempfile::TempDir, Arc<quiver_core::Core>, QueryService) {
    let dir = tempfile::tempdir().unwrap();
    let mut options = quiver_core::CoreOptions::default();
    options.engine.journal_size_default = 1024 * 1024;
    let core = Arc::new(quiver_core::Core::open(dir.path(), options).unwrap());
    let service = QueryService::over_core(core.clone());
    (dir, core, service)
}

fn run(service: &QueryService, aql: &str, rules: &[&str]) -> Vec<Value> {
    let (_, reply) = service
        .create_cursor_json(
            "_system", support::cursor(&json!({"query": aql, "batchSize": 100000, "options": {"optimizer": {"rules": rules}}})))
        .unwrap_or_else(|e| panic!("{aql}: {e:?}"));
    reply["result"].as_array().cloned().unwrap()
}

fn index_node(service: &QueryService, aql: &str) -> Value {
    let reply = service
        .explain("_system", &support::explain(&json!({"query": aql})))
        .unwrap();
    reply.plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["type"] == "IndexNode")
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn stored_values_cover_projections() {
    let (_dir, core, service) = setup();
    let db = core.database("_system").unwrap();
    let spec = quiver_core::CollectionSpec::from_json(&json!({"name": "people"})).unwrap();
    let coll = db.create_collection(spec).unwrap();
    for i in 0..300 {
        let mut doc = json!({"_key": format!("p{i}"), "age": i % 40, "city": format!("c{}", i % 7), "bio": "x".repeat(200)});
        if i % 11 == 0 {
            doc.as_object_mut().unwrap().remove("city");
        }
        coll.insert(doc, &quiver_core::InsertOptions::new())
            .and_then(|c| c.wait())
            .unwrap();
    }
    coll.create_index(&json!({"type": "persistent", "fields": ["age"], "storedValues": ["city"], "name": "age_city"}))
        .unwrap();
    assert!(coll.wait_for_indexes(std::time::Duration::from_secs(30)));
    for (q, covered) in [
        ("FOR p IN people FILTER p.age == 7 RETURN [p._key, p.city, p._id]", true),
        ("FOR p IN people FILTER p.age >= 30 SORT p.age RETURN {a: p.age, c: p.city}", true),
        ("FOR p IN people FILTER p.age IN [3, 5] COLLECT c = p.city WITH COUNT INTO n RETURN [c, n]", true),
        ("FOR p IN people FILTER p.age == 7 RETURN p.bio", false),
        ("FOR p IN people FILTER p.age == 7 RETURN p", false),
    ] {
        let node = index_node(&service, q);
        assert_eq!(node["indexes"][0]["name"], "age_city", "{q}");
        assert_eq!(node["indexCoversProjections"], covered, "{q}");
        let with = run(&service, q, &[]);
        let without = run(&service, q, &["-reduce-extraction-to-projection"]);
        assert!(!with.is_empty(), "{q}");
        assert_eq!(with, without, "{q}");
    }
    let node = index_node(
        &service,
        "FOR p IN people FILTER p.age == 7 RETURN [p._key, p.city]",
    );
    assert_eq!(node["projections"], json!(["_key", "city"]));
    // Writes are followed: the covered answer equals the document answer afterwards.
    run(
        &service,
        "FOR p IN people FILTER p.age == 7 UPDATE p WITH {city: 'moved'} IN people",
        &[],
    );
    let q = "FOR p IN people FILTER p.age == 7 SORT p._key RETURN [p._key, p.city]";
    let with = run(&service, q, &[]);
    assert!(with.iter().all(|r| r[1] == "moved"), "{with:?}");
    assert_eq!(
        with,
        run(&service, q, &["-reduce-extraction-to-projection"])
    );
}
