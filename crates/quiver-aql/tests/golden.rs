//! Runs every case of the golden corpus (tests/golden/**/*.test, format in
//! tests/golden/README.md) through the query service over the in-memory data source.
//! `UPDATE_GOLDEN=1` rewrites the expectation sections from the actual outcome.

mod support;

use support::CursorJson;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use quiver_aql::source::memory::MemorySource;
use quiver_aql::QueryService;
use serde_json::{json, Value};

#[derive(Clone, Debug)]
struct Case {
    name: String,
    comments: Vec<String>,
    sections: Vec<(String, String)>,
}

impl Case {
    fn get(&self, name: &str) -> Option<&str> {
        self.sections
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.as_str())
    }

    fn set(&mut self, name: &str, body: String) {
        match self.sections.iter_mut().find(|(n, _)| n == name) {
            Some(s) => s.1 = body,
            None => self.sections.push((name.to_string(), body)),
        }
    }

    fn remove(&mut self, name: &str) {
        self.sections.retain(|(n, _)| n != name);
    }
}

fn parse_file(text: &str) -> (String, Vec<Case>) {
    let mut preamble = String::new();
    let mut cases: Vec<Case> = Vec::new();
    let mut current_section: Option<(String, Vec<String>)> = None;
    let flush = |cases: &mut Vec<Case>, section: &mut Option<(String, Vec<String>)>| {
        if let (Some(case), Some((name, lines))) = (cases.last_mut(), section.take()) {
            case.sections
                .push((name, lines.join("\n").trim().to_string()));
        }
    };
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("=== ") {
            flush(&mut cases, &mut current_section);
            cases.push(Case {
                name: name.trim().to_string(),
                comments: Vec::new(),
                sections: Vec::new(),
            });
        } else if let Some(name) = line.strip_prefix("--- ") {
            flush(&mut cases, &mut current_section);
            current_section = Some((name.trim().to_string(), Vec::new()));
        } else if let Some((_, lines)) = &mut current_section {
            lines.push(line.to_string());
        } else if let Some(case) = cases.last_mut() {
            if line.starts_with('#') {
                case.comments.push(line.to_string());
            }
        } else {
            preamble.push_str(line);
            preamble.push('\n');
        }
    }
    flush(&mut cases, &mut current_section);
    (preamble, cases)
}

fn render_file(preamble: &str, cases: &[Case]) -> String {
    let mut out = preamble.to_string();
    for (i, c) in cases.iter().enumerate() {
        if (i > 0 || !out.is_empty()) && !out.ends_with("\n\n") && !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(out, "=== {}", c.name);
        for comment in &c.comments {
            let _ = writeln!(out, "{comment}");
        }
        for (name, body) in &c.sections {
            let _ = writeln!(out, "--- {name}");
            let _ = writeln!(out, "{body}");
        }
    }
    out
}

/// JSON equality where numbers compare numerically (`1` equals `1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn multiset_eq(a: &[Value], b: &[Value]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut used = vec![false; b.len()];
    a.iter().all(|x| {
        if let Some(i) = (0..b.len()).find(|&i| !used[i] && json_eq(x, &b[i])) {
            used[i] = true;
            true
        } else {
            false
        }
    })
}

struct Outcome {
    result: Option<Vec<Value>>,
    error: Option<(u32, String)>,
    warnings: Vec<u64>,
    plan: Option<String>,
    /// Names of the indexes IndexNodes use, in plan order (section `indexes used`).
    indexes_used: Option<String>,
    rules: Vec<String>,
    data_after: Option<Value>,
}

fn strip_revs(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "_rev")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The two data sources every case runs against.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Backend {
    Memory,
    Core,
}

/// Seeds and reads back data on either backend. Core-backed cases share one engine (opening
/// one per case would dominate the run time) and get a fresh database each.
enum Store {
    Memory(Arc<MemorySource>),
    Core(Arc<quiver_core::Core>, String),
}

fn shared_core() -> Result<Arc<quiver_core::Core>, String> {
    static CORE: std::sync::OnceLock<Result<(Arc<quiver_core::Core>, tempfile::TempDir), String>> =
        std::sync::OnceLock::new();
    CORE.get_or_init(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut options = quiver_core::CoreOptions::default();
        options.engine.journal_size_default = 1024 * 1024;
        let core = quiver_core::Core::open(dir.path(), options).map_err(|e| e.to_string())?;
        Ok((Arc::new(core), dir))
    })
    .as_ref()
    .map(|(c, _)| c.clone())
    .map_err(|e| e.clone())
}

impl Store {
    fn new(backend: Backend) -> Result<Store, String> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Ok(match backend {
            Backend::Memory => Store::Memory(Arc::new(MemorySource::new())),
            Backend::Core => {
                let core = shared_core()?;
                let name = format!(
                    "golden{}",
                    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                );
                core.create_database(&name, json!({}))
                    .map_err(|e| e.to_string())?;
                Store::Core(core, name)
            }
        })
    }

    fn db(&self) -> &str {
        match self {
            Store::Memory(_) => "_system",
            Store::Core(_, name) => name,
        }
    }

    fn create(&self, name: &str, is_edge: bool, docs: Vec<Value>) -> Result<(), String> {
        match self {
            Store::Memory(m) => m
                .create_collection("_system", name, is_edge, docs)
                .map_err(|e| e.to_string()),
            Store::Core(core, db) => {
                let db = core.database(db).map_err(|e| e.to_string())?;
                let spec = quiver_core::CollectionSpec::from_json(
                    &json!({"name": name, "type": if is_edge { 3 } else { 2 }}),
                )
                .map_err(|e| e.to_string())?;
                // System collections such as `_graphs` exist in every core database.
                let coll = match db.collection(name) {
                    Ok(existing) => existing,
                    Err(_) => db.create_collection(spec).map_err(|e| e.to_string())?,
                };
                for (i, mut doc) in docs.into_iter().enumerate() {
                    if doc.get("_key").is_none() {
                        doc["_key"] = json!((i + 1).to_string());
                    }
                    coll.insert(doc, &quiver_core::InsertOptions::new())
                        .and_then(|c| c.wait())
                        .map_err(|e| e.to_string())?;
                }
                Ok(())
            }
        }
    }

    fn create_index(&self, name: &str, def: Value) -> Result<(), String> {
        match self {
            Store::Memory(m) => m
                .create_index("_system", name, def)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Store::Core(core, db) => {
                let db = core.database(db).map_err(|e| e.to_string())?;
                let coll = db.collection(name).map_err(|e| e.to_string())?;
                coll.create_index(&def)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        }
    }

    fn documents(&self, name: &str) -> Result<Vec<Value>, String> {
        match self {
            Store::Memory(m) => m.documents("_system", name).map_err(|e| e.to_string()),
            Store::Core(core, db) => {
                let service = QueryService::over_core(core.clone());
                let (_, r) = service
                    .create_cursor_json(db, support::cursor(&json!({"query": "FOR d IN @@c SORT d._key RETURN d", "bindVars": {"@c": name}, "batchSize": 1_000_000})))
                    .map_err(|e| e.to_string())?;
                Ok(r["result"].as_array().cloned().unwrap_or_default())
            }
        }
    }

    fn service(&self) -> QueryService {
        match self {
            Store::Memory(m) => QueryService::new(m.clone()),
            Store::Core(core, _) => QueryService::over_core(core.clone()),
        }
    }
}

/// Whether a case only reads its data, so that cases with the same data can share one core
/// database (creating a database gets slower the more exist; the graph cases have lots of
/// data).
fn read_only(case: &Case) -> bool {
    let query = case.get("query").unwrap_or("").to_ascii_uppercase();
    case.get("data after").is_none()
        && !query
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .any(|w| matches!(w, "INSERT" | "UPDATE" | "REPLACE" | "REMOVE" | "UPSERT"))
}

fn run_case(case: &Case, backend: Backend) -> Result<Outcome, String> {
    static SHARED: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    let shareable = matches!(backend, Backend::Core) && read_only(case);
    // Indexes are part of what a shared database holds.
    let data_text = match case.get("indexes") {
        Some(indexes) => format!("{}\n{indexes}", case.get("data").unwrap_or("")),
        None => case.get("data").unwrap_or("").to_string(),
    };
    let shared = if shareable && !data_text.is_empty() {
        let cache = SHARED.lock().map_err(|e| e.to_string())?;
        cache
            .iter()
            .find(|(d, _)| *d == data_text)
            .map(|(_, db)| db.clone())
    } else {
        None
    };
    let store = match &shared {
        Some(db) => Store::Core(shared_core()?, db.clone()),
        None => Store::new(backend)?,
    };
    if shared.is_none() && shareable && !data_text.is_empty() {
        if let Ok(mut cache) = SHARED.lock() {
            cache.push((data_text.clone(), store.db().to_string()));
        }
    }
    let mut collections = Vec::new();
    if let (Some(data), None) = (case.get("data"), &shared) {
        let data: Value = serde_json::from_str(data).map_err(|e| format!("bad data JSON: {e}"))?;
        let obj = data.as_object().ok_or("data must be an object")?;
        for (name, spec) in obj {
            let (is_edge, docs) = match spec {
                Value::Array(docs) => (false, docs.clone()),
                Value::Object(o) => (
                    o.get("type").and_then(Value::as_str) == Some("edge"),
                    o.get("docs")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default(),
                ),
                _ => return Err(format!("bad data for collection {name}")),
            };
            store.create(name, is_edge, docs)?;
            collections.push(name.clone());
        }
    }
    if let (Some(indexes), None) = (case.get("indexes"), &shared) {
        let indexes: Value =
            serde_json::from_str(indexes).map_err(|e| format!("bad indexes JSON: {e}"))?;
        let obj = indexes.as_object().ok_or("indexes must be an object")?;
        for (name, defs) in obj {
            for def in defs.as_array().ok_or("indexes: arrays of definitions")? {
                store.create_index(name, def.clone())?;
            }
        }
    }
    let service = store.service();
    let query = case.get("query").ok_or("case has no query")?;
    let bind: Value = match case.get("bind") {
        Some(b) => serde_json::from_str(b).map_err(|e| format!("bad bind JSON: {e}"))?,
        None => json!({}),
    };
    let options: Value = match case.get("options") {
        Some(o) => serde_json::from_str(o).map_err(|e| format!("bad options JSON: {e}"))?,
        None => json!({}),
    };
    let body =
        json!({"query": query, "bindVars": bind, "options": options, "batchSize": 1_000_000});
    let mut outcome = Outcome {
        result: None,
        error: None,
        warnings: Vec::new(),
        plan: None,
        indexes_used: None,
        rules: Vec::new(),
        data_after: None,
    };
    match service.create_cursor_json(store.db(), support::cursor(&body)) {
        Ok((_, reply)) => {
            outcome.result = reply["result"].as_array().cloned();
            outcome.warnings = reply["extra"]["warnings"]
                .as_array()
                .map(|w| w.iter().filter_map(|w| w["code"].as_u64()).collect())
                .unwrap_or_default();
        }
        Err(e) => outcome.error = Some((e.number(), e.message.clone())),
    }
    if case.get("plan").is_some()
        || case.get("rules").is_some()
        || case.get("indexes used").is_some()
    {
        if let Ok(explain) = service.explain(
            store.db(),
            &support::explain(&json!({"query": query, "bindVars": bind, "options": options})),
        ) {
            let types: Vec<&str> = explain.plan["nodes"]
                .as_array()
                .map(|n| n.iter().filter_map(|n| n["type"].as_str()).collect())
                .unwrap_or_default();
            outcome.plan = Some(types.join(" "));
            let used: Vec<&str> = explain.plan["nodes"]
                .as_array()
                .map(|n| {
                    n.iter()
                        .filter(|n| n["type"] == "IndexNode")
                        .filter_map(|n| n["indexes"][0]["name"].as_str())
                        .collect()
                })
                .unwrap_or_default();
            outcome.indexes_used = Some(used.join(" "));
            outcome.rules = explain.plan["rules"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .filter_map(|r| r.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
        }
    }
    if backend == Backend::Memory && read_only(case) {
        same_as_planned_per_value(&store, &service, query, &bind, &options)?;
    }
    if case.get("data after").is_some() {
        let mut after = serde_json::Map::new();
        for name in &collections {
            let docs = store.documents(name)?;
            after.insert(
                name.clone(),
                Value::Array(docs.iter().map(strip_revs).collect()),
            );
        }
        outcome.data_after = Some(Value::Object(after));
    }
    Ok(outcome)
}

fn check(case: &Case, o: &Outcome) -> Vec<String> {
    let mut problems = Vec::new();
    let parse = |s: &str| {
        serde_json::from_str::<Value>(s).map_err(|e| format!("bad expectation JSON: {e}"))
    };
    let expected_result = case
        .get("result")
        .map(|r| (r, false))
        .or_else(|| case.get("result unordered").map(|r| (r, true)));
    match (expected_result, case.get("error")) {
        (Some((text, unordered)), _) => match (parse(text), &o.result) {
            (Err(e), _) => problems.push(e),
            (Ok(Value::Array(exp)), Some(actual)) => {
                let ok = if unordered {
                    multiset_eq(&exp, actual)
                } else {
                    json_eq(&Value::Array(exp.clone()), &Value::Array(actual.clone()))
                };
                if !ok {
                    problems.push(format!(
                        "result differs:\n  expected {}\n  actual   {}",
                        text,
                        Value::Array(actual.clone())
                    ));
                }
            }
            (Ok(_), Some(_)) => problems.push("result expectation must be an array".into()),
            (_, None) => problems.push(format!("expected a result, got error {:?}", o.error)),
        },
        (None, Some(err)) => {
            let (num, msg) = err.split_once(' ').unwrap_or((err, ""));
            match &o.error {
                Some((n, m)) if n.to_string() == num && m.contains(msg.trim()) => {}
                other => problems.push(format!(
                    "expected error {err}, got {other:?} / result {:?}",
                    o.result
                )),
            }
        }
        (None, None) => problems.push("case has neither result nor error".into()),
    }
    let expected_warnings: Vec<u64> = case
        .get("warnings")
        .map(|w| serde_json::from_str(w).unwrap_or_default())
        .unwrap_or_default();
    if o.error.is_none() && expected_warnings != o.warnings {
        problems.push(format!(
            "warnings differ: expected {expected_warnings:?}, actual {:?}",
            o.warnings
        ));
    }
    if let Some(plan) = case.get("plan") {
        let plan = plan.split_whitespace().collect::<Vec<_>>().join(" ");
        if o.plan.as_deref() != Some(plan.as_str()) {
            problems.push(format!(
                "plan differs:\n  expected {plan}\n  actual   {:?}",
                o.plan
            ));
        }
    }
    if let Some(used) = case.get("indexes used") {
        let used = used.split_whitespace().collect::<Vec<_>>().join(" ");
        if o.indexes_used.as_deref() != Some(used.as_str()) {
            problems.push(format!(
                "indexes used differ:\n  expected {used}\n  actual   {:?}",
                o.indexes_used
            ));
        }
    }
    if let Some(rules) = case.get("rules") {
        let rules: Vec<String> = serde_json::from_str(rules).unwrap_or_default();
        for r in rules {
            if !o.rules.contains(&r) {
                problems.push(format!("rule {r} not applied (applied: {:?})", o.rules));
            }
        }
    }
    if let Some(after) = case.get("data after") {
        match (parse(after), &o.data_after) {
            (Ok(exp), Some(actual)) => {
                let exp = match exp {
                    Value::Object(m) => Value::Object(
                        m.into_iter()
                            .map(|(k, v)| {
                                (
                                    k,
                                    Value::Array(
                                        v.as_array()
                                            .cloned()
                                            .unwrap_or_default()
                                            .iter()
                                            .map(strip_revs)
                                            .collect(),
                                    ),
                                )
                            })
                            .collect(),
                    ),
                    other => other,
                };
                let actual_subset = Value::Object(
                    actual
                        .as_object()
                        .map(|a| {
                            a.iter()
                                .filter(|(k, _)| exp.get(k.as_str()).is_some())
                                .map(|(k, v)| (k.clone(), v.clone()))
                                .collect()
                        })
                        .unwrap_or_default(),
                );
                if !json_eq(&exp, &actual_subset) {
                    problems.push(format!(
                        "data after differs:\n  expected {exp}\n  actual   {actual_subset}"
                    ));
                }
            }
            (Err(e), _) => problems.push(e),
            (_, None) => problems.push("no data after".into()),
        }
    }
    problems
}

fn update(case: &mut Case, o: &Outcome) {
    let unordered = case.get("result unordered").is_some();
    match (&o.result, &o.error) {
        (Some(r), _) => {
            case.remove("error");
            let text = serde_json::to_string(&Value::Array(r.clone())).unwrap_or_default();
            case.set(
                if unordered {
                    "result unordered"
                } else {
                    "result"
                },
                text,
            );
        }
        (None, Some((n, m))) => {
            case.remove("result");
            case.remove("result unordered");
            // Keep a hand-chosen message fragment if it still matches.
            let keep = case
                .get("error")
                .and_then(|e| e.split_once(' '))
                .map(|(_, frag)| frag.to_string())
                .filter(|f| m.contains(f.as_str()));
            case.set(
                "error",
                format!("{n} {}", keep.unwrap_or_else(|| m.clone()))
                    .trim()
                    .to_string(),
            );
        }
        _ => {}
    }
    if o.error.is_none() {
        if o.warnings.is_empty() {
            case.remove("warnings");
        } else {
            case.set(
                "warnings",
                serde_json::to_string(&o.warnings).unwrap_or_default(),
            );
        }
    }
    if case.get("plan").is_some() {
        if let Some(p) = &o.plan {
            case.set("plan", p.clone());
        }
    }
    if case.get("indexes used").is_some() {
        if let Some(p) = &o.indexes_used {
            case.set("indexes used", p.clone());
        }
    }
}

/// The case's query with other values for each of its bind parameters, of every type (the
/// case's own strings among them): `service` (which has seen the text, its plan cache and
/// plan templates warm) answers and explains each exactly as a fresh service that plans
/// every query for its own values.
fn same_as_planned_per_value(
    store: &Store,
    service: &QueryService,
    query: &str,
    bind: &Value,
    options: &Value,
) -> Result<(), String> {
    let Some(bind) = bind.as_object() else {
        return Ok(());
    };
    let strings: Vec<Value> = bind.values().filter(|v| v.is_string()).cloned().collect();
    let mut variants = vec![
        Value::Null,
        json!(true),
        json!(0),
        json!(-1),
        json!(2.5),
        json!(""),
        json!("circles/A"),
        json!("circles/nope"),
        json!([1, "a"]),
        json!({"_id": "circles/B"}),
    ];
    variants.extend(strings);
    let run = |s: &QueryService, binds: &serde_json::Map<String, Value>| {
        let body =
            json!({"query": query, "bindVars": binds, "options": options, "batchSize": 1_000_000});
        let answer = match s.create_cursor_json(store.db(), support::cursor(&body)) {
            Ok((_, reply)) => format!("{} {}", reply["result"], reply["extra"]["warnings"]),
            Err(e) => format!("error {} {}", e.number(), e.message),
        };
        let explain = json!({"query": query, "bindVars": binds, "options": options});
        let plan = match s.explain(store.db(), &support::explain(&explain)) {
            Ok(e) => format!("{} {}", e.plan, e.cacheable),
            Err(e) => format!("error {} {}", e.number(), e.message),
        };
        format!("{answer}\n{plan}")
    };
    for name in bind.keys().filter(|n| !n.starts_with('@')) {
        for value in &variants {
            let mut binds = bind.clone();
            binds.insert(name.clone(), value.clone());
            let reference = store.service();
            reference.set_plan_templates(false);
            let expected = run(&reference, &binds);
            for _ in 0..2 {
                let got = run(service, &binds);
                if got != expected {
                    return Err(format!(
                        "with bind values {binds:?}: a warm service gave\n{got}\ninstead of\n{expected}"
                    ));
                }
            }
        }
    }
    Ok(())
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "test") {
            out.push(p);
        }
    }
}

#[test]
fn golden_corpus() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut paths = Vec::new();
    files(&root, &mut paths);
    paths.sort();
    assert!(
        !paths.is_empty(),
        "no golden files found under {}",
        root.display()
    );
    let updating = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    let mut total = 0;
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("readable golden file");
        let (preamble, mut cases) = parse_file(&text);
        let mut names = std::collections::HashSet::new();
        let mut changed = false;
        for case in &mut cases {
            total += 1;
            let label = format!(
                "{}: {}",
                path.strip_prefix(&root).unwrap_or(&path).display(),
                case.name
            );
            if !names.insert(case.name.clone()) {
                failures.push(format!("{label}: duplicate case name"));
            }
            // Cases without data exercise expressions only; the storage backend is
            // irrelevant to them.
            let backends: &[Backend] = if case.get("data").is_some() {
                &[Backend::Memory, Backend::Core]
            } else {
                &[Backend::Memory]
            };
            for &backend in backends {
                match run_case(case, backend) {
                    Err(e) => failures.push(format!("{label} [{backend:?}]: {e}")),
                    Ok(o) => {
                        // Expectations are rewritten from the in-memory run (only for
                        // cases that fail, so passing cases keep their hand formatting) and
                        // checked against both backends.
                        if updating && backend == Backend::Memory {
                            if !check(case, &o).is_empty() {
                                update(case, &o);
                                changed = true;
                            }
                        } else if !updating {
                            for p in check(case, &o) {
                                failures.push(format!("{label} [{backend:?}]: {p}"));
                            }
                        }
                    }
                }
            }
        }
        if updating && changed {
            std::fs::write(&path, render_file(&preamble, &cases)).expect("writable golden file");
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} golden cases failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(total > 0);
}
